#!/usr/bin/python3
"""cluster_tls.py - [cluster] over https: a one-member etcd that requires
client certificates (--client-cert-auth), a node with [cluster] ca, cert and
key reaches it (etcd "up", its lease granted, an operator change lands in
etcd as the node wrote it), and a node without a client certificate never
does (etcd "waiting", every line held in shadow, request failures counted).
Skips (77) when etcd/etcdctl are not installed."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest import wait  # noqa: E402
from fgtest.wait import within  # noqa: E402
from fgtest.harness import Daemon, check, etcd_or_skip, fanoctl_or_skip  # noqa: E402

FANOCTL = os.environ.get("FANOCTL", "")
PREFIX = "/fg-tls-%d/" % os.getpid()


def cluster(d):
    return d.ctl_json("cluster", fanoctl=FANOCTL)


def main():
    etcd_or_skip()
    fanoctl_or_skip()  # the FANOCTL above
    wait.private_net()  # the fixed etcd ports below are this run's own
    # fixed ports in a network namespace of this run's own (wait.private_net)
    cport, pport = 2379, 2380
    url = f"https://127.0.0.1:{cport}"
    a = Daemon(deadline_ms=30000)  # its PKI (CA, server cert for 127.0.0.1, client cert) serves etcd too
    pki = a.dir
    keyf = f"{pki}/fleet.key"
    fd = os.open(keyf, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"cluster-tls-test-fleet-key-0123456789abcdef\n")
    os.close(fd)
    with open(a.cfg, "a") as f:
        f.write(f"[cluster]\nnode = tls-a\nendpoints = {url}\nprefix = {PREFIX}\nca = {pki}/ca.pem\n"
                f"cert = {pki}/client.pem\nkey = {pki}/client.key\nkey_file = {keyf}\nlease_ttl_s = 2\ntimeout_ms = 500\n")
    b = Daemon(deadline_ms=30000)
    with open(b.cfg, "a") as f:
        f.write(f"[cluster]\nnode = tls-b\nendpoints = {url}\nprefix = {PREFIX}\nca = {pki}/ca.pem\n"
                f"key_file = {keyf}\nlease_ttl_s = 2\ntimeout_ms = 500\n")
    data = tempfile.mkdtemp(prefix="fg-etcd-tls-")
    etcd = subprocess.Popen(
        ["etcd", "--name", "t0", "--data-dir", f"{data}/t0", "--listen-client-urls", url,
         "--advertise-client-urls", url, "--listen-peer-urls", f"http://127.0.0.1:{pport}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{pport}",
         "--initial-cluster", f"t0=http://127.0.0.1:{pport}", "--cert-file", f"{pki}/server.pem",
         "--key-file", f"{pki}/server.key", "--client-cert-auth", "--trusted-ca-file", f"{pki}/ca.pem",
         "--log-level", "warn"], stdout=open(f"{data}/etcd.log", "wb"), stderr=subprocess.STDOUT)
    ctl = ["etcdctl", "--endpoints", url, "--cacert", f"{pki}/ca.pem", "--cert", f"{pki}/client.pem",
           "--key", f"{pki}/client.key", "--command-timeout=1s"]
    env = dict(os.environ, ETCDCTL_API="3")
    try:
        t0 = time.time()
        while subprocess.run([*ctl, "endpoint", "health"], capture_output=True, env=env).returncode != 0:
            if etcd.poll() is not None or time.time() - t0 > 30:
                check(False, "etcd (https, client certs) healthy:\n" + open(f"{data}/etcd.log").read()[-2000:])
        check(True, "etcd (https, client certs) healthy")
        with a, b:
            within(lambda: cluster(a)["etcd"] == "up", 10, "node with a client certificate reaches etcd")
            c = cluster(a)
            check(c["lease"] != 0 and c["endpoint"] == url, f"lease granted over https: {c['lease']}")
            envop = dict(os.environ, FANOCTL_SOCKET=f"{a.dir}/fanoctl.sock")
            check(subprocess.run([FANOCTL, "line", "disable", "2"], env=envop, capture_output=True).returncode == 0,
                  "operator change on the TLS node")
            got = {}

            def in_etcd():
                p = subprocess.run([*ctl, "get", f"{PREFIX}lines/2", "--print-value-only"], capture_output=True,
                                   text=True, env=env)
                try:
                    head, payload = p.stdout.rstrip("\n").split("\n", 1)
                    got.update(json.loads(payload), writer=head.split(" ")[2])
                except ValueError:
                    return False
                return got.get("state") == "disabled"
            within(in_etcd, 2, "the change is in etcd")
            check(got["writer"] == "tls-a" and got["event"] == "op_disable", f"as the node wrote it: {got}")
            # its first request may not have been tried yet (it started beside
            # A, which reached etcd in ~20 ms): wait for a refused one
            within(lambda: cluster(b)["counters"]["request_failures"] > 0, 10,
                   "the node without a client certificate tried etcd")
            cb = cluster(b)
            check(cb["etcd"] != "up" and cb["counters"]["request_failures"] > 0,
                  f"node without a client certificate refused: {cb['etcd']}, {cb['counters']['request_failures']}")
            check(all(x["local"] in ("shadow", "disabled") for x in cb["lines"]), "its lines held in shadow")
    finally:
        etcd.kill()
        etcd.wait()
        shutil.rmtree(data, ignore_errors=True)
    print("ok: cluster_tls")


if __name__ == "__main__":
    main()
