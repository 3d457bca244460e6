"""fgtest.dlv - the verdict side of tests/lib/delivery.sh: the run's JSON
files (fanofleet's, the relays' --stats, fanogate-dp's report) loaded into
one place, the checks every delivery run makes, and the closing lines.
Callers: the verdict scripts of tests/faults/run_faults.sh, run_delivery.sh
and tests/hostile/run_*.sh (run as `PYTHONPATH=tests/lib python3 -`);
main thread."""
import json
import sys


class Run:
    """v = Run(tmp); v.fleet, v.dp, v.c (counters), v.x (extra counters);
    v.fail(msg) collects; v.finish(result, out) prints and exits."""

    def __init__(self, tmp, dp=True):
        self.tmp, self.fails = tmp, []
        self.fleet = self.load("fleet.json")
        self.dp = self.load("dp.json") if dp else {}
        self.c, self.x = self.dp.get("counters", {}), self.dp.get("x", {})

    def load(self, name):
        """tmp/name as JSON, {} (and a failure) when missing or bad."""
        try:
            with open(f"{self.tmp}/{name}") as f:
                return json.load(f)
        except Exception as e:  # noqa: BLE001 - any unreadable file is the test's failure
            self.fails.append(f"{name}: {e}")
            return {}

    def fail(self, msg):
        self.fails.append(msg)

    def no_wrong_seed(self, frc):
        """fanofleet exits 1 (or counts) on a wrong resolved seed."""
        if int(frc) == 1 or self.fleet.get("wrong", 1) != 0:
            self.fail(f"fanofleet saw {self.fleet.get('wrong')} WRONG resolved seeds (exit {frc})")

    def dp_exit(self, dprc):
        if int(dprc) != 0:
            self.fail(f"fanogate-dp exit {dprc}")

    def clean_path(self, frc, dprc):
        """the checks of a run on a clean path: no wrong seed, the dataplane
        exited 0, no seed missing, seeds were sent; returns (sent, acked,
        given_up) from the dataplane's counters."""
        self.no_wrong_seed(frc)
        self.dp_exit(dprc)
        if self.fleet.get("missing", -1) != 0:
            self.fail(f"{self.fleet.get('missing')} seeds missing on a clean path")
        sent = self.c.get("seeds_sent", -1)
        if sent <= 0:
            self.fail(f"seeds_sent = {sent}")
        return sent, self.c.get("delivery_acked", -1), self.c.get("delivery_given_up", -1)

    def relays_clean(self, names=("r1", "r2")):
        """every ACK a relay saw was proven (the frame went through whole),
        no queue overflow or send failure either way; returns the stats."""
        out = []
        for i, n in enumerate(names):
            r = self.load(f"{n}.json")
            a = r.get("acks", {})
            if a.get("ack_unproven", 1) != 0:
                self.fail(f"relay{i + 1}: {a.get('ack_unproven')} ACKed sequences never went through whole")
            for d in ("up", "down"):
                if r.get(d, {}).get("queue_full", 1) or r.get(d, {}).get("send_failed", 1):
                    self.fail(f"relay{i + 1} {d}: queue overflow or send failure")
            out.append(r)
        return out

    def finish(self, result=None, out=None):
        """RESULT line (result dict, with "result" pass/fail added; appended
        to the file out when set), a FAIL line each, exit 1 if any."""
        if result is not None:
            result["result"] = "pass" if not self.fails else "fail"
            line = json.dumps(result, sort_keys=True)
            print("RESULT " + line)
            if out:
                with open(out, "a") as f:
                    f.write(line + "\n")
        for f in self.fails:
            print("FAIL: " + f)
        sys.exit(1 if self.fails else 0)
