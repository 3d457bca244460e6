#!/usr/bin/python3
"""cluster_auth.py - [cluster] user and password_file against an etcd with
RBAC (docs/hardening.md "etcd"): a one-member etcd with auth enabled, a
role fanogate-node granted readwrite on the fleet's prefix only, and a user
holding it (the commands an operator runs, as the docs give them).

  1. a node with that user and its password reaches etcd (etcd "up", its
     lease granted) and an operator change lands in etcd as it wrote it;
  2. etcd restarted (its auth tokens die with it): the node renews its
     token and is up again, nothing logged as an auth refusal;
  3. a node with a wrong password never joins: etcd "waiting", lines held
     in shadow, auth failures counted, and its log says etcd's reason
     ("authentication failed") once, not once per retry;
  4. a node whose user lacks the permission on its prefix: "permission
     denied" in its log, never up;
  5. the fleet key file refused when others may read it (mode 0640): the
     daemon does not start, and says why.
Skips (77) when etcd/etcdctl are not installed."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest import wait  # noqa: E402
from fgtest.harness import Daemon, check, etcd_or_skip, fanoctl_or_skip  # noqa: E402
from fgtest.wait import within  # noqa: E402

FANOCTL = os.environ.get("FANOCTL", "")
PREFIX = "/fg-auth-%d/" % os.getpid()
URL = "http://127.0.0.1:2379"
ENV = dict(os.environ, ETCDCTL_API="3")


def etcdctl(*args, user=None):
    cmd = ["etcdctl", "--endpoints", URL, "--command-timeout=5s"]
    if user:
        cmd += ["--user", user]
    p = subprocess.run([*cmd, *args], capture_output=True, text=True, env=ENV, timeout=30)
    check(p.returncode == 0, f"etcdctl {' '.join(args)}: {p.stdout} {p.stderr}")
    return p.stdout


class Etcd:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="fg-etcd-auth-")
        self.proc = None

    def start(self, user=None):
        self.proc = subprocess.Popen(
            ["etcd", "--name", "m0", "--data-dir", f"{self.dir}/m0", "--listen-client-urls", URL,
             "--advertise-client-urls", URL, "--listen-peer-urls", "http://127.0.0.1:2380",
             "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
             "--initial-cluster", "m0=http://127.0.0.1:2380", "--log-level", "warn"],
            stdout=open(f"{self.dir}/etcd.log", "ab"), stderr=subprocess.STDOUT)
        t0 = time.time()
        auth = ["--user", user] if user else []
        while subprocess.run(["etcdctl", "--endpoints", URL, "--command-timeout=1s", *auth, "endpoint", "health"],
                             capture_output=True, env=ENV).returncode != 0:
            check(self.proc.poll() is None and time.time() - t0 < 30,
                  "etcd healthy:\n" + open(f"{self.dir}/etcd.log").read()[-2000:])

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def secret(d, name, text, mode=0o600):
    path = f"{d}/{name}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    os.write(fd, text.encode())
    os.close(fd)
    os.chmod(path, mode)
    return path


def node(name, user, password, key_mode=0o600, expect_start=True):
    d = Daemon(deadline_ms=30000, expect_start=expect_start)
    keyf = secret(d.dir, "fleet.key", "cluster-auth-test-fleet-key-0123456789abcdef\n", key_mode)
    pwf = secret(d.dir, "etcd.pw", password + "\n")
    with open(d.cfg, "a") as f:
        f.write(f"[cluster]\nnode = {name}\nendpoints = {URL}\nprefix = {PREFIX}\nkey_file = {keyf}\n"
                f"user = {user}\npassword_file = {pwf}\nlease_ttl_s = 2\ntimeout_ms = 500\n")
    return d


def cluster(d):
    return d.ctl_json("cluster", fanoctl=FANOCTL)


def main():
    etcd_or_skip()
    fanoctl_or_skip()
    wait.private_net()  # the fixed etcd port is this run's own
    etcd = Etcd()
    try:
        etcd.start()
        # what docs/hardening.md tells the operator to run
        etcdctl("user", "add", "root:root-pw")
        etcdctl("role", "add", "fanogate-node")
        etcdctl("role", "grant-permission", "fanogate-node", "--prefix=true", "readwrite", PREFIX)
        etcdctl("user", "add", "fg-node:node-pw")
        etcdctl("user", "grant-role", "fg-node", "fanogate-node")
        etcdctl("role", "add", "elsewhere")
        etcdctl("role", "grant-permission", "elsewhere", "--prefix=true", "readwrite", "/other/")
        etcdctl("user", "add", "fg-other:other-pw")
        etcdctl("user", "grant-role", "fg-other", "elsewhere")
        etcdctl("auth", "enable")
        scenario(etcd)
    finally:
        etcd.stop()
        shutil.rmtree(etcd.dir, ignore_errors=True)
    print("ok: cluster_auth")


def scenario(etcd):
    a = node("auth-a", "fg-node", "node-pw")
    bad = node("auth-bad", "fg-node", "wrong-pw")
    other = node("auth-other", "fg-other", "other-pw")
    with a, bad, other:
        within(lambda: cluster(a)["etcd"] == "up", 10, "a node with the user and its password reaches etcd")
        check(cluster(a)["lease"] != 0, "its lease granted")
        envop = dict(os.environ, FANOCTL_SOCKET=f"{a.dir}/fanoctl.sock")
        check(subprocess.run([FANOCTL, "line", "disable", "2"], env=envop, capture_output=True).returncode == 0,
              "operator change on the node")

        def in_etcd():
            p = subprocess.run(["etcdctl", "--endpoints", URL, "--user", "root:root-pw", "get", f"{PREFIX}lines/2",
                                "--print-value-only"], capture_output=True, text=True, env=ENV)
            return '"state":"disabled"' in p.stdout and p.stdout.startswith("fg1 ")
        within(in_etcd, 3, "the change is in etcd, authenticated")
        print("1. a node with an etcd user and password: up, its change in etcd")

        fails0 = cluster(a)["counters"]["auth_failures"]
        etcd.stop()
        within(lambda: cluster(a)["etcd"] == "lost", 5, "etcd gone: lost")
        etcd.start(user="root:root-pw")
        t = within(lambda: cluster(a)["etcd"] == "up", 10, "up again after etcd restarted (a new token)")
        check(cluster(a)["counters"]["auth_failures"] == fails0,
              f"the dead token renewed, no auth failure: {cluster(a)['counters']['auth_failures']} (was {fails0})")
        print(f"2. etcd restarted: the node renewed its token and was up {t * 1000:.0f} ms after etcd answered")

        within(lambda: cluster(bad)["counters"]["auth_failures"] >= 2, 10, "the wrong password refused, counted")
        cb = cluster(bad)
        check(cb["etcd"] != "up" and all(x["local"] in ("shadow", "disabled") for x in cb["lines"]),
              f"the node with a wrong password never joined: {cb['etcd']}")
        log = bad.log()
        n = log.count(f"etcd {URL}: refused /v3/auth/authenticate: HTTP 400: etcdserver: authentication failed")
        check(n == 1, f"etcd's reason logged once (not per retry): {n} lines\n{log[-1500:]}")
        print("3. a wrong password: never up, etcd's reason logged once, failures counted")

        within(lambda: "permission denied" in other.log(), 10, "a user without the prefix: 'permission denied' logged")
        check(cluster(other)["etcd"] != "up", "and never up")
        print("4. a user without permission on the prefix: 'permission denied' logged, never up")

    loose = node("auth-loose", "fg-node", "node-pw", key_mode=0o640, expect_start=False)
    with loose:
        within(lambda: loose.proc.poll() is not None, 10, "the daemon refuses a fleet key others may read")
        check(loose.proc.returncode != 0 and "group- or world-accessible" in loose.log(),
              f"and says why: {loose.log()[-600:]}")
        loose.expect_start = False
    print("5. a fleet key file of mode 0640: the daemon does not start, and says why")


if __name__ == "__main__":
    main()
