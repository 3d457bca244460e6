"""fgtest.daemon - start fanogate and wait for it to be ready.

fanogate --ready-fd N writes one line, "READY=1 pid=P tls=PORT
metrics=PORT", to fd N once it serves (listeners bound, dataplane started,
confined), then closes it; if it exits first, the fd closes with nothing
written. start() waits for that line or that EOF: readiness without a
sleep, and the bound ports of listeners configured on port 0.
Caller: any test, from its main thread."""
import os
import select
import subprocess
import time


class NotReady(Exception):
    """The daemon closed its ready fd without the line (it exited), or the
    timeout passed."""


def parse_ready(line):
    """'READY=1 pid=12 tls=443 metrics=0' -> {'READY': 1, 'pid': 12, ...}.
    Raises ValueError on anything else."""
    out = {}
    for tok in line.split():
        k, sep, v = tok.partition("=")
        if not sep or not k:
            raise ValueError("bad ready line %r" % line)
        out[k] = int(v)
    if out.get("READY") != 1 or "tls" not in out or "pid" not in out:
        raise ValueError("bad ready line %r" % line)
    return out


def start(argv, stdout=None, stderr=None, timeout=30.0, env=None):
    """Run argv (the daemon and its options; --ready-fd is added) and wait
    for its readiness. Returns (proc, ready) where ready is parse_ready's
    dict, or (proc, None) when the daemon exited before it was ready (the
    caller decides whether that is the expected outcome). Raises NotReady
    when neither happens within timeout seconds (the process is left
    running for the caller to stop)."""
    r, w = os.pipe()
    try:
        proc = subprocess.Popen([*argv, "--ready-fd", str(w)], pass_fds=(w,), stdout=stdout, stderr=stderr,
                                env=env)
    finally:
        os.close(w)
    buf = b""
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise NotReady("no readiness within %.0f s" % timeout)
            rd, _, _ = select.select([r], [], [], left)
            if not rd:
                continue
            chunk = os.read(r, 256)
            if not chunk:
                break
            buf += chunk
    finally:
        os.close(r)
    if not buf:
        proc.wait(timeout=timeout)
        return proc, None
    return proc, parse_ready(buf.decode())
