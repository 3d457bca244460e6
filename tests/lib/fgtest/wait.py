"""fgtest.wait - waiting for a condition with a deadline (never for a
fixed time): until() polls a predicate; private_net() gives a test a
network namespace of its own so that fixed loopback ports cannot collide
with tests running in parallel (no port picked by bind-and-close).
Callers: the Python tests; main thread."""
import os
import subprocess
import sys
import time

from fgtest.checks import fail, skip

POLL_S = 0.02


def until(pred, timeout=5, interval=POLL_S):
    """Call pred() every interval seconds until it returns a true value
    (returned) or timeout seconds pass (returns the last false value).
    The poll of a condition with a bound, not a wait for a time."""
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= end:
            return v
        time.sleep(interval)  # the poll interval; what is waited for is pred


def private_net():
    """Re-run this script (same interpreter, same arguments) inside a new
    network namespace (unshare --net as root, a user namespace otherwise)
    with loopback up, once; inside it, return. Skips (77) when this
    machine cannot make one."""
    if os.environ.get("FG_PRIVATE_NET"):
        if subprocess.run(["ip", "link", "set", "lo", "up"]).returncode != 0:
            skip("cannot bring lo up in the private network namespace")
        return
    u = ["--net"] if os.geteuid() == 0 else ["-rn"]
    if subprocess.run(["unshare", *u, "true"], capture_output=True).returncode != 0:
        skip("cannot create a network namespace (unshare %s)" % " ".join(u))
    sys.stdout.flush()
    os.execvpe("unshare", ["unshare", *u, "--", sys.executable, os.path.abspath(sys.argv[0]), *sys.argv[1:]],
               dict(os.environ, FG_PRIVATE_NET="1"))


def within(pred, secs, what):
    """until(pred, secs), or fail "not within secs s: what"; returns the
    seconds it took."""
    t0 = time.monotonic()
    if not until(pred, secs):
        fail(f"not within {secs} s: {what}")
    return time.monotonic() - t0


async def until_async(pred, timeout=5, interval=POLL_S):
    """until() for asyncio code: the event loop keeps running between polls."""
    import asyncio
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= end:
            return v
        await asyncio.sleep(interval)  # the poll interval; what is waited for is pred
