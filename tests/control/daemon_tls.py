#!/usr/bin/python3
"""daemon_tls.py - TLS policy of the fanogate daemon with real peers:
openssl s_client refused on TLS 1.1 and on a TLS 1.2 renegotiation, accepted
on TLS 1.2 and 1.3; mutual TLS accepted (CA-signed client certificate, no
bearer needed; CN mapped to a role) and refused (untrusted certificate; no
certificate when require_client_cert); session resumption re-checks
identity (a resumed session must present the bearer again)."""
import json
import socket
import ssl
import subprocess

import os
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import TOKEN, Daemon, check, http, seed


def s_client(d, *args, stdin=b"", timeout=10):
    p = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{d.port}", "-servername", "localhost",
                        "-CAfile", f"{d.dir}/ca.pem", *args], input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace")


def handshake_ok(d, cert=None):
    try:
        s = d.tls_socket(cert)
        # TLS 1.3: a refused client certificate shows up on the first read
        st, h, b = http(d, "GET", "/healthz", token=None, sock=s)
        s.close()
        return st == 200
    except (ssl.SSLError, ConnectionError, OSError):
        return False


def main():
    with Daemon(mtls=True) as d:
        rc, out = s_client(d, "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0")
        check(rc != 0 and "alert protocol version" in out, "TLS 1.1 ClientHello refused (protocol_version alert)")
        rc, out = s_client(d, "-tls1_2", stdin=b"")
        check("Protocol  : TLSv1.2" in out and "Verify return code: 0" in out, "TLS 1.2 accepted")
        check("ECDHE" in out and ("GCM" in out or "CHACHA20" in out), "TLS 1.2 cipher is ECDHE + AEAD")
        rc, out = s_client(d, "-tls1_3", stdin=b"")
        check("TLSv1.3" in out, "TLS 1.3 accepted")
        rc, out = s_client(d, "-tls1_2", "-cipher", "AES128-SHA", stdin=b"")
        check(rc != 0 and ("Cipher is (NONE)" in out or "handshake failure" in out),
              "TLS 1.2 with a non-forward-secret CBC suite refused")
        rc, out = s_client(d, "-tls1_2", stdin=b"R\n")
        check("RENEGOTIATING" in out and "no renegotiation" in out, "TLS 1.2 renegotiation refused (no_renegotiation)")

        # mTLS: a CA-signed client certificate authenticates without a bearer
        st, h, b = http(d, "POST", "/residual-seed", seed(1, 1, 1, [0.0] * d.hidden), token=None, cert="client")
        check(st == 200 and json.loads(b)["ack"], "mTLS client certificate (CN=fleet-worker-1) authenticates a POST")
        st, h, b = http(d, "POST", "/residual-seed", seed(1, 2, 1, [0.0] * d.hidden), token=None, cert="consumer")
        check(st == 403, "CN=consumer-1 mapped to role consumer: POST refused 403")
        st, h, b = http(d, "POST", "/residual-seed", seed(1, 3, 1, [0.0] * d.hidden), token=None)
        check(st == 401, "no certificate and no token: 401")
        st, h, b = http(d, "POST", "/residual-seed", seed(1, 4, 1, [0.0] * d.hidden), token="y" * 20, cert="client")
        check(st == 401, "a wrong bearer is refused even with a valid certificate")
        check(not handshake_ok(d, cert="rogue"), "self-signed client certificate (same CN) refused at the handshake")
        check(handshake_ok(d), "no client certificate is fine when not required")

        # resumption: identity is re-checked, the bearer must come again
        ctx = d.ssl_ctx()
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", d.port)), server_hostname="localhost")
        st, _, _ = http(d, "POST", "/residual-seed", seed(1, 5, 1, [0.0] * d.hidden), sock=s)
        sess = s.session
        s.close()
        s2 = ctx.wrap_socket(socket.create_connection(("127.0.0.1", d.port)), server_hostname="localhost",
                             session=sess)
        resumed = s2.session_reused
        st2, _, _ = http(d, "POST", "/residual-seed", seed(1, 6, 1, [0.0] * d.hidden), token=None, sock=s2)
        s2.close()
        check(st == 200 and resumed and st2 == 401, "resumed TLS session without a bearer: 401")

    with Daemon(mtls=True, require_cert=True) as d:
        check(not handshake_ok(d), "require_client_cert: a client without a certificate is refused")
        check(handshake_ok(d, cert="client"), "require_client_cert: CA-signed certificate accepted")
        check("TLS handshake refused" in d.log(), "refused handshakes logged")


if __name__ == "__main__":
    main()
