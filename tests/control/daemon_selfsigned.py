#!/usr/bin/python3
"""daemon_selfsigned.py - the self-signed certificate of the embedded default:
with [tls] cert and key unset the daemon generates an EC P-256 key and a
self-signed certificate in the state directory (the directory of [audit]
path: files 0600), logs its path and SHA-256 fingerprint, and serves it
(openssl s_client sees the same fingerprint, SAN holds the listen address);
a restart reuses the same pair; cert/key set but missing is refused with a
clear message."""
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest import daemon as fgdaemon  # noqa: E402
from fgtest.harness import TOKEN, _live, binary, check, fail  # noqa: E402

FP_RE = re.compile(r"self-signed certificate (\S+) \(key (\S+)\), SHA-256 fingerprint ([0-9A-F:]+)")


def config(d, extra=""):
    """listen on port 0: the daemon reports the port it bound"""
    tok = f"{d}/tokens"
    with open(tok, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(tok, 0o600)
    cfg = f"{d}/fanogate.ini"
    with open(cfg, "w") as f:
        f.write(f"[tls]\nlisten = 127.0.0.1:0\ntokens_file = {tok}\n{extra}[audit]\npath = {d}/state/audit.log\n"
                f"[operator]\nsocket = {d}/op.sock\n[metrics]\nlisten = off\n")
    return cfg


def start(cfg, logpath):
    """(process, log so far, TLS port or None when it exited first)"""
    with open(logpath, "wb") as logf:
        try:
            p, ready = fgdaemon.start([binary(), "--config", cfg, "--no-dataplane"], stdout=logf,
                                      stderr=subprocess.STDOUT, timeout=15)
        except fgdaemon.NotReady as e:
            fail("daemon did not become ready (%s):\n%s" % (e, open(logpath, errors="replace").read()))
    _live.append(p)
    return p, open(logpath, errors="replace").read(), ready and ready["tls"]


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=10)
    check(p.returncode == 0, "daemon stopped cleanly")


def presented(port):
    """SHA-256 fingerprint and SAN of the certificate the server presents."""
    s = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost"],
                       input=b"", capture_output=True, timeout=20)
    pem = re.search(rb"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", s.stdout, re.S)
    check(pem is not None, "openssl s_client got a certificate")
    x = subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-ext", "subjectAltName"],
                       input=pem.group(0), capture_output=True, timeout=20, text=False).stdout.decode()
    fp = re.search(r"Fingerprint=([0-9A-F:]+)", x).group(1)
    return fp, x


def main():
    d = tempfile.mkdtemp(prefix="fg-k-ss-")
    try:
        cfg = config(d)
        p, log, port = start(cfg, f"{d}/run1.log")
        check(p.poll() is None, "daemon starts without [tls] cert/key:\n" + log)
        m = FP_RE.search(log)
        check(m is not None and "generated self-signed" in log, "generation logged with path and fingerprint")
        cert, key, fp1 = m.group(1), m.group(2), m.group(3)
        check(os.path.dirname(cert) == f"{d}/state" and os.path.dirname(key) == f"{d}/state",
              "pair written into the state directory (the directory of [audit] path)")
        check(stat.S_IMODE(os.stat(key).st_mode) == 0o600 and stat.S_IMODE(os.stat(cert).st_mode) == 0o600,
              "key and certificate files are 0600")
        got, text = presented(port)
        check(got == fp1, f"fingerprint presented {got} equals the one logged {fp1}")
        check("IP Address:127.0.0.1" in text, "SAN holds the listen address")
        k = subprocess.run(["openssl", "pkey", "-in", key, "-noout", "-text"], capture_output=True, text=True)
        check("prime256v1" in k.stdout or "P-256" in k.stdout, "EC P-256 key")
        stop(p)

        p, log, port = start(cfg, f"{d}/run2.log")
        check(p.poll() is None, "restart with the generated pair")
        m = FP_RE.search(log)
        check(m is not None and "reusing self-signed" in log and m.group(3) == fp1,
              "restart reuses the same certificate (same fingerprint logged)")
        got, _ = presented(port)
        check(got == fp1, "restart presents the same certificate")
        stop(p)

        cfg2 = config(d, extra=f"cert = {d}/missing.pem\nkey = {d}/missing.key\n")
        p, log, _ = start(cfg2, f"{d}/run3.log")
        p.wait(timeout=10)
        check(p.returncode != 0 and f"{d}/missing.pem" in log and "No such file" in log,
              "cert/key set but missing: refused with a clear message: " + log.strip().splitlines()[-1])
        print("ok")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
