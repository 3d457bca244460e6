"""fgtest.harness - the daemon fixture the Python tests share: a temp dir
with a CA, a server certificate, client certificates (trusted and
untrusted), a 0600 tokens file and a config; the fanogate daemon started on
loopback port 0 (the bound ports come back on its --ready-fd,
fgtest.daemon) in --no-dataplane mode (or a dataplane profile) and always
killed (context manager + atexit + SIGTERM handler); raw HTTP over TLS.
The aeon-flow codec is fgtest.flow, re-exported here for the tests that
take both from one import; check/fail are fgtest.checks.
Callers: tests/control, cluster, hostile, soak Python tests; main thread.
Run as a script (serve_main) it starts a daemon around another command.

Environment: FANOGATE = path of the daemon binary (meson passes it).
Run with /usr/bin/python3 (Debian's python3-websockets 10.4)."""
import atexit
import json
import re
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # run as a script
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest import daemon as fgdaemon  # noqa: E402
from fgtest import ws as fgws  # noqa: E402
from fgtest.checks import SKIP, check, fail, skip  # noqa: E402,F401
from fgtest.flow import (CANON_BASE, OUTCOMES, RESOLVED_BASE, SEED_BASE, STATUS_STREAM, canonical, f32,  # noqa: E402,F401
                         hdr, parse_frames, parse_status, reduce_pair_x, resolved_frame, seed)

TOKEN = "d1-test-token-0123456789abcdef"
TOKEN_CONSUMER = "d1-consumer-token-0123456789"

_live = []


def _kill_all():
    for p in _live:
        if p.poll() is None:
            p.kill()
            p.wait()


atexit.register(_kill_all)
signal.signal(signal.SIGTERM, lambda *_: (_kill_all(), sys.exit(1)))


def binary():
    b = os.environ.get("FANOGATE")
    if not b or not os.access(b, os.X_OK):
        print("SKIP: FANOGATE not set to the daemon binary", flush=True)
        sys.exit(SKIP)
    return b


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


def make_pki(d):
    """CA, server cert (CN=localhost, SAN 127.0.0.1), client cert signed by
    the CA (CN=fleet-worker-1), and a self-signed client (untrusted)."""
    if not shutil.which("openssl"):
        print("SKIP: openssl CLI missing", flush=True)
        sys.exit(SKIP)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run(["openssl", "req", "-x509", *ec, "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem", "-days", "2",
         "-subj", "/CN=fanogate-test-ca"])
    for name, cn in (("server", "localhost"), ("client", "fleet-worker-1"), ("consumer", "consumer-1")):
        run(["openssl", "req", *ec, "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.csr", "-subj", f"/CN={cn}"])
        ext = f"{d}/{name}.ext"
        with open(ext, "w") as f:
            if name == "server":
                f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
            else:
                f.write("extendedKeyUsage=clientAuth\n")
        run(["openssl", "x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
             "-CAcreateserial", "-out", f"{d}/{name}.pem", "-days", "2", "-extfile", ext])
    run(["openssl", "req", "-x509", *ec, "-keyout", f"{d}/rogue.key", "-out", f"{d}/rogue.pem", "-days", "2",
         "-subj", "/CN=fleet-worker-1"])


class Daemon:
    """with Daemon(**overrides) as d: d.port, d.dir, d.log()"""

    def __init__(self, mtls=False, require_cert=False, tokens_mode=0o600, extra="", hidden=8, layers=4,
                 deadline_ms=400, send_queue_max="4M", handshake_ms=3000, idle_ms=20000, max_conns=64,
                 expect_start=True, dp_profile=None, capacity=4096, listen="127.0.0.1:0"):
        self.dir = tempfile.mkdtemp(prefix="fg-d1-")
        # port 0: the daemon reports what it bound (set by __enter__)
        self.port = None
        self.metrics_port = None
        self.hidden, self.layers, self.deadline_ms = hidden, layers, deadline_ms
        make_pki(self.dir)
        tok = f"{self.dir}/tokens"
        with open(tok, "w") as f:
            # TOKEN: the coordinator role, so its canonical reports are believed
            # (control/cp_epoch_guard.h); it may send seeds like any role but consumer
            f.write(f"# test tokens\n{TOKEN} coordinator\n{TOKEN_CONSUMER} consumer\ncn:consumer-1 consumer\n")
        os.chmod(tok, tokens_mode)
        cfg = f"""[model]
hidden = {hidden}
layers = {layers}
max_seq_len = 4
[slots]
capacity = {capacity}
deadline_ms = {deadline_ms}
[tls]
listen = {listen}
cert = {self.dir}/server.pem
key = {self.dir}/server.key
tokens_file = {tok}
handshake_timeout_ms = {handshake_ms}
idle_timeout_ms = {idle_ms}
send_queue_max = {send_queue_max}
max_connections = {max_conns}
{"ca = " + self.dir + "/ca.pem" if mtls else ""}
{"require_client_cert = true" if require_cert else ""}
[audit]
path = {self.dir}/audit.log
[operator]
socket = {self.dir}/fanoctl.sock
[metrics]
listen = 127.0.0.1:0
{extra}
"""
        self.cfg = f"{self.dir}/fanogate.ini"
        with open(self.cfg, "w") as f:
            f.write(cfg)
        self.expect_start = expect_start
        self.dp_profile = dp_profile
        self.proc = None

    def __enter__(self):
        self.logf = open(f"{self.dir}/daemon.log", "wb")
        mode = ["--dp-profile", self.dp_profile] if self.dp_profile else ["--no-dataplane"]
        try:
            self.proc, ready = fgdaemon.start([binary(), "--config", self.cfg, *mode], stdout=self.logf,
                                              stderr=subprocess.STDOUT)
        except fgdaemon.NotReady as e:
            fail("daemon did not become ready (%s):\n%s" % (e, self.log()))
        _live.append(self.proc)
        if ready is None:
            if not self.expect_start:
                return self
            fail("daemon exited early:\n" + self.log())
        self.port, self.metrics_port = ready["tls"], ready["metrics"]
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()
        log = self.log()
        if exc[0] is None and self.expect_start:
            # SIGTERM is a clean stop: exit 0, and nothing from the sanitizers.
            if self.proc.returncode != 0 or "Sanitizer" in log or "runtime error" in log:
                sys.stdout.write("---- daemon log ----\n" + log)
                fail("daemon did not stop cleanly on SIGTERM (status %s)" % self.proc.returncode)
        if exc[0] is not None or os.environ.get("D1_KEEP"):
            sys.stdout.write("---- daemon log ----\n" + self.log())
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def log(self):
        try:
            with open(f"{self.dir}/daemon.log", "r", errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def lanes_up(self, why):
        """A daemon started with dp_profile (expect_start=False): True when it
        runs its dataplane (logged "mode dataplane"); otherwise prints why,
        stops it and returns False (the caller skips or carries on)."""
        if self.proc.poll() is None and "mode dataplane" in self.log():
            return True
        print(why if "log" not in why else why.replace("{log}", self.log()), flush=True)
        self.proc.kill()
        self.proc.wait()
        self.expect_start = False
        return False

    def ctl(self, *args, fanoctl=None):
        """fanoctl ARGS against this daemon's operator socket (FANOCTL from
        the environment unless given): the CompletedProcess, text."""
        env = dict(os.environ, FANOCTL_SOCKET=f"{self.dir}/fanoctl.sock")
        return subprocess.run([fanoctl or os.environ.get("FANOCTL", "fanoctl"), *args], env=env,
                              capture_output=True, text=True, timeout=20)

    def ctl_json(self, *args, fanoctl=None):
        """fanoctl ARGS --json parsed; a failed command fails the test."""
        p = self.ctl(*args, "--json", fanoctl=fanoctl)
        if p.returncode != 0:
            fail(f"fanoctl {' '.join(args)}: {p.stdout} {p.stderr}")
        return json.loads(p.stdout)

    def ssl_ctx(self, cert=None):
        ctx = ssl.create_default_context(cafile=f"{self.dir}/ca.pem")
        if cert:
            ctx.load_cert_chain(f"{self.dir}/{cert}.pem", f"{self.dir}/{cert}.key")
        return ctx

    def tls_socket(self, cert=None, timeout=10, rcvbuf=None, sndbuf=None):
        """A TLS connection to the listener. rcvbuf / sndbuf (bytes) are set
        before the connect, so the TCP window is negotiated that small (a
        peer that does not read)."""
        raw = socket.socket()
        for opt, v in ((socket.SO_RCVBUF, rcvbuf), (socket.SO_SNDBUF, sndbuf)):
            if v:
                raw.setsockopt(socket.SOL_SOCKET, opt, v)
        raw.settimeout(timeout)
        raw.connect(("127.0.0.1", self.port))
        return self.ssl_ctx(cert).wrap_socket(raw, server_hostname="localhost")

    def ws_raw(self, path, token=TOKEN, **kw):
        """A WebSocket upgrade of `path` written by hand on tls_socket(**kw):
        (the socket, the response head, the bytes read after it)."""
        s = self.tls_socket(**kw)
        s.sendall(fgws.upgrade_request(path, token))
        head = b""
        while b"\r\n\r\n" not in head:
            c = s.recv(1)
            if not c:
                fail(f"connection closed during the upgrade of {path}: {head!r}")
            head += c
        head, rest = head.split(b"\r\n\r\n", 1)
        return s, head, rest


def fanoctl_or_skip():
    """The fanoctl binary meson passes in FANOCTL; skips (77) when unset."""
    f = os.environ.get("FANOCTL")
    if not f or not os.access(f, os.X_OK):
        skip("FANOCTL not set to the fanoctl binary")
    return f


def etcd_or_skip():
    """Skips (77) when etcd or etcdctl is not installed."""
    if not shutil.which("etcd") or not shutil.which("etcdctl"):
        skip("etcd/etcdctl not installed (Debian etcd-server, etcd-client; scripts/deps.sh)")


def mode_daemon(mode, extra="", **kw):
    """A Daemon(extra=extra, **kw) without a dataplane (mode "local"), or
    running the ring dataplane on 2 lcores ("lanes"; started with
    expect_start=False: check lanes_up() inside the with)."""
    if mode == "local":
        return Daemon(extra=extra, **kw)
    return Daemon(dp_profile="ring", expect_start=False, extra="[dataplane]\nlcores = 2\n" + extra, **kw)


LANES_SKIP = "lanes mode not available here (no DPDK or the EAL refused): local mode only"


def local_then_lanes(scenario, extra="", **kw):
    """scenario(d, "local") on a Daemon(extra=extra, **kw) without a
    dataplane, then scenario(d, "lanes") on one running the ring dataplane
    on 2 lcores; the second is left out, and said why, where the dataplane
    cannot start here."""
    with mode_daemon("local", extra, **kw) as d:
        scenario(d, "local")
    with mode_daemon("lanes", extra, **kw) as d:
        if not d.lanes_up(LANES_SKIP):
            return
        scenario(d, "lanes")


def metrics_text(d):
    """The daemon's /metrics exposition, as text."""
    with urllib.request.urlopen(f"http://127.0.0.1:{d.metrics_port}/metrics", timeout=10) as r:
        return r.read().decode()


def metric(text, name):
    """The integer value of the sample `name` (with its labels, if any, as
    rendered) in an exposition; a missing sample fails the test."""
    m = re.search(r"^" + re.escape(name) + r" (\d+)$", text, re.M)
    check(m is not None, f"metric {name} present")
    return int(m.group(1))


def metrics(d):
    """The daemon's /metrics as {"name{labels}": value}."""
    out = {}
    for ln in metrics_text(d).splitlines():
        m = re.match(r"^(fanogate_[a-z_]+)(\{[^}]*\})? (\S+)$", ln)
        if m:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def audit_records(fanoctl, log):
    """Every record of the audit log at log, parsed (fanoctl audit tail --json)."""
    p = subprocess.run([fanoctl, "audit", "tail", "--json", "-n", "1000", log], capture_output=True, text=True,
                       timeout=20)
    check(p.returncode == 0, "fanoctl audit tail: " + (p.stdout + p.stderr)[-200:])
    return [json.loads(x) for x in p.stdout.splitlines() if x.strip().startswith("{")]


def closed_by_peer(s):
    """Whether the daemon closed s (EOF or reset), without waiting."""
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


# ---- HTTP over TLS (raw, so malformed requests can be sent) ------------------

def http_read_response(s, head=False, buf=b""):
    """Read one response: (status, headers dict lower-case, body bytes, rest).
    head: the response to a HEAD request (Content-Length but no body);
    buf: bytes already read (the previous response's rest, pipelining)."""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed before a response head: %r" % buf)
        buf += chunk
    top, _, rest = buf.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    n = 0 if head else int(hdrs.get("content-length", "0"))
    while len(rest) < n:
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError("closed inside a body")
        rest += chunk
    return status, hdrs, rest[:n], rest[n:]


def http(d, method, path, body=b"", token=TOKEN, headers=None, cert=None, sock=None):
    s = sock or d.tls_socket(cert)
    h = [f"{method} {path} HTTP/1.1", "Host: localhost"]
    if token:
        h.append(f"Authorization: Bearer {token}")
    if body or method == "POST":
        h.append("Content-Type: application/octet-stream")
        h.append(f"Content-Length: {len(body)}")
    for k, v in (headers or {}).items():
        h.append(f"{k}: {v}")
    s.sendall(("\r\n".join(h) + "\r\n\r\n").encode() + body)
    st, hd, bd, _ = http_read_response(s, head=method == "HEAD")
    if not sock:
        s.close()
    return st, hd, bd


def serve_main(argv):
    """daemon_harness.py [--mtls] [--hidden N] -- CMD ARGS...: start the daemon,
    run CMD with FG_PORT, FG_DIR (certs: ca.pem, client.pem/key), FG_TOKEN,
    FG_HIDDEN, FG_LAYERS in its environment, stop the daemon, exit with CMD's
    status (77 passes through as a skip)."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--mtls", action="store_true")
    ap.add_argument("--hidden", type=int, default=8)
    ap.add_argument("--send-queue-max", default="4M")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        fail("no command")
    if not shutil.which(cmd[0]):
        print("SKIP: %s not installed" % cmd[0], flush=True)
        sys.exit(SKIP)
    with Daemon(mtls=a.mtls, hidden=a.hidden, send_queue_max=a.send_queue_max) as d:
        env = dict(os.environ, FG_PORT=str(d.port), FG_DIR=d.dir, FG_TOKEN=TOKEN, FG_HIDDEN=str(d.hidden),
                   FG_LAYERS=str(d.layers))
        rc = subprocess.run(cmd, env=env).returncode
        if rc not in (0, SKIP):
            print("command failed with status %d" % rc, flush=True)
            raise SystemExit(rc)
    sys.exit(rc)


if __name__ == "__main__":
    serve_main(sys.argv[1:])
