#!/usr/bin/python3
"""hostile_canonical_role.py - canonical reports over TLS: a canonical report
is a verdict (and, when it disagrees, a demotion and a page), so only the
coordinator may send one.

The daemon (--no-dataplane) starts with the Pair X lines (1, 3, 5) active,
every seed audited (shadow_sample = 1) and an alert command that appends
$FG_EVENT to a file. Its tokens file has the harness's coordinator token
and one more token of role "fleet" (authenticated, not the coordinator).
A slot resolves (seeds over HTTPS, coordinator token). Then the fleet
token
  1. POSTs /canonical with a divergent body: 403 "canonical_role";
  2. sends the same divergent report on a wss /flow session: closed 1008.
Checks: no verdict, no line change, no alert; every line still active;
fanogate_canonical_refused_total{reason="role"} 2. Then the coordinator
POSTs the true report: 200, and the audit counts one clean verdict (so the
refusal is the role's, not a broken path).
Before this change step 1 was answered 200, the verdict was divergent,
lines 1, 3, 5 were demoted and the on-call was paged."""
import asyncio
import json
import os
import re
import sys

import websockets

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import (SKIP, TOKEN, Daemon, canonical, check, http, metric, metrics_text,  # noqa: E402
                            reduce_pair_x, seed)
from fgtest.wait import within  # noqa: E402

FLEET_TOKEN = "hostile-fleet-token-0123456789abcdef"
V = {1: [1.5, 2.0, -1.0, 0.5, 3.0, 4.0, 5.0, 6.0], 3: [0.25] * 8, 5: [-2.0, 1e-3, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0]}
REF = reduce_pair_x([(V[1], 0), (V[3], 0), (V[5], 0)])
WRONG = [x + 1.0 for x in REF]


def states(text):
    return dict(re.findall(r'^fanogate_line_info\{line="(\d)",[^}]*,state="([a-z]+)"', text, re.M))


async def wss_report(d, token, frame):
    """Send one binary message on /flow; return the close code (None: still open)."""
    async with websockets.connect(f"wss://localhost:{d.port}/flow", ssl=d.ssl_ctx(),
                                  extra_headers={"Authorization": "Bearer " + token}) as ws:
        await ws.send(frame)
        try:
            while True:
                await asyncio.wait_for(ws.recv(), timeout=5)
        except websockets.ConnectionClosed as e:
            return e.code
        except asyncio.TimeoutError:
            return None


def main():
    extra = "[lines]\nshadow_sample = 1\nline.1 = active\nline.3 = active\nline.5 = active\n"
    d = Daemon(deadline_ms=30000, extra=extra)
    alerts = f"{d.dir}/alerts"
    with open(f"{d.dir}/tokens", "a") as f:
        f.write(f"{FLEET_TOKEN} fleet\n")
    with open(d.cfg, "a") as f:
        f.write(f"[audit]\nalert_command = echo \"$FG_EVENT\" >> {alerts}\nalert_min_interval_ms = 0\n")
    with d:
        for ln in (1, 3, 5):
            st, _, b = http(d, "POST", "/residual-seed", seed(0, 9, ln, V[ln]))
            check(st == 200, f"seed line {ln}: {st} {b[:100]}")
        check(json.loads(b)["outcome"] == "resolved", "slot 0/9 resolved")
        before = states(metrics_text(d))
        check([before.get(str(i)) for i in (1, 3, 5)] == ["active"] * 3, f"lines 1, 3, 5 active: {before}")

        st, _, b = http(d, "POST", "/canonical", canonical(0, 9, WRONG), token=FLEET_TOKEN)
        check(st == 403 and json.loads(b).get("error") == "canonical_role",
              f"a divergent report from role fleet over HTTPS: 403 canonical_role ({st} {b[:120]})")
        code = asyncio.run(wss_report(d, FLEET_TOKEN, canonical(0, 9, WRONG)))
        check(code == 1008, f"the same report on a wss session of role fleet: closed 1008 ({code})")

        m = metrics_text(d)
        check(metric(m, 'fanogate_canonical_refused_total{reason="role"}') == 2, "both refusals counted")
        check(metric(m, 'fanogate_audit_verdicts_total{kind="divergent"}') == 0, "no divergent verdict")
        check(states(m) == before, f"no line changed: {states(m)}")

        st, _, b = http(d, "POST", "/canonical", canonical(0, 9, REF), token=TOKEN)
        check(st == 200, f"the coordinator's true report is taken: {st} {b[:120]}")
        within(lambda: metric(metrics_text(d), 'fanogate_audit_verdicts_total{kind="clean"}') == 1, 10,
               "the coordinator's report judged clean")
        m = metrics_text(d)
        check(states(m) == before, "still no line changed")
        raised = metric(m, "fanogate_alerts_raised_total")
        check(raised == 0 and not os.path.exists(alerts), f"nobody was paged ({raised} alerts)")
    print("ok")


if __name__ == "__main__":
    main()
