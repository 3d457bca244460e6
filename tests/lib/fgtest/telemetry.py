"""fgtest.telemetry - the DPDK telemetry socket of a running fanogate-dp or
fanogate (dataplane in process): /fanogate/counters (the registry's names,
fg/counters.h), /fanogate/pools, /mempool/list and /mempool/info.
The EAL runs each of them with the file prefix fgdp<pid>
(dataplane/dp.c build_eal_args), so the socket is found by pid.

As a command (from shell tests, tests/lib/delivery.sh fg_dlv_drain):
  PYTHONPATH=tests/lib python3 -m fgtest.telemetry ledger-closed PID SECONDS
waits until every resolved seed sent was ACKed or given up
(seeds_sent = delivery_acked + delivery_given_up: the delivery ledger of
fg/boundary.h with nothing pending); exit 0 when it closed, 1 when it
did not within SECONDS or the socket could not be read (said on stderr);
  PYTHONPATH=tests/lib python3 -m fgtest.telemetry at-least PID SECONDS NAME=N...
waits until every counter NAME is at least N (the same exits).
Callers: tests/soak/soak_mixed.py, tests/faults/test_reasm_exhaust.py,
tests/lib/delivery.sh, tests/dataplane/run_veth.sh; main thread."""
import json
import socket
import sys

from fgtest.wait import until


def socket_path(pid):
    """The telemetry socket of the dataplane running as process pid."""
    return "/var/run/dpdk/fgdp%d/dpdk_telemetry.v2" % pid


def query(path, cmd, timeout=10):
    """The answer to cmd ("/fanogate/counters", "/mempool/info,NAME") on the
    telemetry socket at path: the value under the command's name."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(timeout)
    try:
        s.connect(path)
        s.recv(16384)  # the greeting: version, pid, max_output_len
        s.send(cmd.encode())
        return json.loads(s.recv(1 << 20).decode()).get(cmd.split(",")[0])
    finally:
        s.close()


def counters(path):
    """/fanogate/counters: every dataplane counter summed over the lcores."""
    return query(path, "/fanogate/counters")


def mempools(path):
    """name -> (size, in use) of every DPDK mempool: in use = size - the
    common pool - the per-lcore caches."""
    out = {}
    for name in query(path, "/mempool/list") or []:
        i = query(path, "/mempool/info," + name)
        free = i.get("common_pool_count", 0) + i.get("total_cache_count", 0)
        out[name] = (i["size"], i["size"] - free)
    return out


def ledger_open(c):
    """Deliveries neither ACKed nor given up yet (the pending ones), from a
    counters() answer. The counters are read one by one, not as a
    snapshot: exact once no new seed is being sent (the senders stopped),
    which is when the tests ask."""
    return c["seeds_sent"] - c["delivery_acked"] - c["delivery_given_up"]


def _main(argv):
    usage = ("usage: python3 -m fgtest.telemetry ledger-closed PID SECONDS\n"
             "       python3 -m fgtest.telemetry at-least PID SECONDS NAME=N...")
    if not ((argv[1:2] == ["at-least"] and len(argv) > 4) or (argv[1:2] == ["ledger-closed"] and len(argv) == 4)):
        print(usage, file=sys.stderr)
        return 2
    want = {}
    for a in argv[4:]:
        k, _, v = a.partition("=")
        want[k] = int(v)
    path, last = socket_path(int(argv[2])), {}

    def short(c):
        """what is still missing: {name: (got, wanted)} ({} when met)"""
        if argv[1] == "ledger-closed":
            return {"pending": (ledger_open(c), 0)} if ledger_open(c) else {}
        return {k: (c.get(k, 0), v) for k, v in want.items() if c.get(k, 0) < v}

    def met():
        try:
            last["short"] = short(counters(path))
        except (OSError, ValueError, KeyError) as e:
            last["err"] = e
            return False
        return not last["short"]
    if until(met, float(argv[3])):
        return 0
    if "short" in last:
        print("telemetry: not within %s s: %s" % (argv[3], ", ".join(
            "%s %d (wanted %d)" % (k, g, w) for k, (g, w) in last["short"].items())), file=sys.stderr)
    else:
        print("telemetry: cannot read %s: %s" % (path, last.get("err")), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
