"""fgtest.relay - fanorelay's counters while it runs: it prints them as one
JSON line on SIGUSR1 when started with --json (tools/relay/relay_main.c
print_stats), so a test can wait for "nothing left in flight" instead of
pausing. Callers: tests/faults/test_ack_liar.py; main thread."""
import json
import signal

from fgtest.wait import until


def _usr1_lines(path):
    out = []
    with open(path) as f:
        for ln in f:
            ln = ln.strip()
            if ln.startswith("{"):
                try:
                    j = json.loads(ln)
                except ValueError:
                    continue  # a line still being written
                if j.get("when") == "usr1":
                    out.append(j)
    return out


def stats_now(p, path, timeout=5):
    """The counters of the fanorelay process p (a Popen started with --json
    and its stdout to the file path) as of now: SIGUSR1, then its next
    dump. None when no dump came within timeout s (the relay exited)."""
    n = len(_usr1_lines(path))
    p.send_signal(signal.SIGUSR1)
    got = until(lambda: _usr1_lines(path)[n:] or p.poll() is not None, timeout)
    return got[0] if isinstance(got, list) else None


def idle(st, up_in):
    """True when the relay took in up_in datagrams upward and holds nothing
    either way (every one sent on or counted lost)."""
    return (st is not None and st["up"]["in"] >= up_in and st["up"]["queued"] == 0
            and st["down"]["queued"] == 0)
