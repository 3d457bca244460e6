#!/usr/bin/python3
"""testssl_scan.py - a testssl.sh scan of the daemon's TLS listener (extended
suite). Checks what the control plane promises (docs/control-plane.md):
SSLv2, SSLv3, TLS 1.0 and TLS 1.1 not offered; TLS 1.2 and 1.3 offered; no
NULL, export, anonymous, RC4, 3DES or CBC-only weak cipher categories;
secure renegotiation without client-initiated renegotiation; none of the
vulnerability checks testssl runs is reported VULNERABLE. Skips (77) when
testssl.sh (Debian package testssl.sh) is not installed."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import SKIP, Daemon, check, fail

TESTSSL = shutil.which("testssl") or shutil.which("testssl.sh")
if not TESTSSL:
    print("SKIP: testssl.sh not installed (apt-get install testssl.sh)", flush=True)
    sys.exit(SKIP)

with Daemon() as d:
    out = os.path.join(d.dir, "testssl.json")
    cmd = [TESTSSL, "--quiet", "--color", "0", "--warnings", "batch", "--sneaky",
           "--protocols", "--std", "--renegotiation", "--heartbleed", "--ccs", "--robot",
           "--crime", "--breach", "--poodle", "--sweet32", "--beast", "--lucky13", "--freak",
           "--logjam", "--drown", "--rc4",
           "--jsonfile", out, f"127.0.0.1:{d.port}"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600, text=True)
    if not os.path.exists(out):
        fail("testssl wrote no JSON (exit %d):\n%s" % (r.returncode, r.stdout[-3000:]))
    findings = json.load(open(out))
    by_id = {f["id"]: f for f in findings}

    def finding(fid):
        f = by_id.get(fid)
        if f is None:
            fail("testssl reported no '%s' (ids: %s)" % (fid, sorted(by_id)[:60]))
        return f["finding"]

    for p in ("SSLv2", "SSLv3", "TLS1", "TLS1_1"):
        check(finding(p).startswith("not offered"), "%s not offered (%s)" % (p, finding(p)))
    check(finding("TLS1_2").startswith("offered"), "TLS 1.2 offered (%s)" % finding("TLS1_2"))
    check(finding("TLS1_3").startswith("offered"), "TLS 1.3 offered (%s)" % finding("TLS1_3"))
    for c in ("cipherlist_NULL", "cipherlist_aNULL", "cipherlist_EXPORT", "cipherlist_LOW",
              "cipherlist_3DES_IDEA"):
        check(finding(c).startswith("not offered"), "%s not offered (%s)" % (c, finding(c)))
    check("not vulnerable" in finding("secure_client_renego").lower(),
          "client-initiated renegotiation refused (%s)" % finding("secure_client_renego"))
    vulnerable = [f"{f['id']}: {f['finding']}" for f in findings
                  if "VULNERABLE" in f.get("finding", "") and "not vulnerable" not in f["finding"].lower()]
    check(not vulnerable, "no check reported VULNERABLE: %s" % vulnerable)
    severe = [f"{f['id']}: {f['finding']}" for f in findings if f.get("severity") in ("HIGH", "CRITICAL")]
    check(not severe, "no HIGH/CRITICAL finding: %s" % severe)
print("testssl_scan: all checks passed")
