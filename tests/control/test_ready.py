"""test_ready.py - the daemon says when it is ready (control/cp_ready.c),
run with pytest (FANOGATE = the daemon binary).

1. --ready-fd: one line "READY=1 pid=P tls=PORT metrics=PORT", then EOF;
   with both listeners on port 0 the ports are the bound ones (a TLS
   handshake and GET /metrics succeed on them) and differ from each other.
2. sd_notify: with NOTIFY_SOCKET (a path, and an abstract "@name") the
   daemon sends READY=1, STATUS= (the log's ready line) and MAINPID=, and
   STOPPING=1 on SIGTERM.
3. A daemon that cannot start (its TLS port is taken) closes the ready fd
   with nothing written.
4. --ready-fd naming a closed fd stops the daemon at once with a reason.
5. Port 0 only where the daemon listens: a consumer on port 0 is refused."""
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest import daemon as fgdaemon  # noqa: E402

FANOGATE = os.environ.get("FANOGATE", "")
pytestmark = pytest.mark.skipif(not os.access(FANOGATE, os.X_OK), reason="FANOGATE not set to the daemon binary")


def config(d, extra="", tls="127.0.0.1:0"):
    path = os.path.join(d, "fanogate.ini")
    with open(path, "w") as f:
        f.write(f"""[model]
hidden = 8
layers = 4
[tls]
listen = {tls}
[audit]
path = {d}/audit.log
[operator]
socket = {d}/op.sock
[metrics]
listen = 127.0.0.1:0
[daemon]
seccomp = on
{extra}
""")
    return path


@pytest.fixture
def tmp():
    with tempfile.TemporaryDirectory(prefix="fg-ready-") as d:
        yield d


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=20)


def test_ready_fd_reports_bound_ports(tmp):
    log = open(os.path.join(tmp, "log"), "wb")
    proc, ready = fgdaemon.start([FANOGATE, "--config", config(tmp), "--no-dataplane"], stdout=log,
                                 stderr=subprocess.STDOUT)
    try:
        assert ready is not None, open(os.path.join(tmp, "log")).read()
        assert ready["pid"] == proc.pid
        assert ready["tls"] > 0 and ready["metrics"] > 0 and ready["tls"] != ready["metrics"]
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with socket.create_connection(("127.0.0.1", ready["tls"]), timeout=10) as raw:
            with ctx.wrap_socket(raw) as s:
                assert s.version() is not None
        body = urllib.request.urlopen(f"http://127.0.0.1:{ready['metrics']}/metrics", timeout=10).read()
        assert b"fanogate_" in body
        assert f"ready: tls listening on port {ready['tls']}" in open(os.path.join(tmp, "log")).read()
    finally:
        assert stop(proc) == 0


@pytest.mark.parametrize("abstract", [False, True])
def test_sd_notify(tmp, abstract):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    name = f"@fgtest-ready-{os.getpid()}" if abstract else os.path.join(tmp, "notify")
    sock.bind("\0" + name[1:] if abstract else name)
    sock.settimeout(30)
    env = dict(os.environ, NOTIFY_SOCKET=name)
    log = open(os.path.join(tmp, "log"), "wb")
    proc = subprocess.Popen([FANOGATE, "--config", config(tmp), "--no-dataplane"], stdout=log,
                            stderr=subprocess.STDOUT, env=env)
    try:
        msg = sock.recv(4096).decode()
        fields = dict(line.split("=", 1) for line in msg.strip().split("\n"))
        assert fields["READY"] == "1"
        assert fields["MAINPID"] == str(proc.pid)
        assert fields["STATUS"].startswith("ready: tls listening on port ")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert sock.recv(4096) == b"STOPPING=1\n"
        assert proc.wait(timeout=20) == 0
        sock.close()


def test_not_ready_closes_fd_empty(tmp):
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen(1)
    cfg = config(tmp, tls="127.0.0.1:%d" % held.getsockname()[1])
    log = open(os.path.join(tmp, "log"), "wb")
    proc, ready = fgdaemon.start([FANOGATE, "--config", cfg, "--no-dataplane"], stdout=log,
                                 stderr=subprocess.STDOUT)
    held.close()
    assert ready is None
    assert proc.returncode != 0


def test_ready_fd_closed_refused(tmp):
    p = subprocess.run([FANOGATE, "--config", config(tmp), "--no-dataplane", "--ready-fd", "97"],
                       capture_output=True, timeout=30)
    assert p.returncode == 1
    assert b"readiness: --ready-fd 97" in p.stdout + p.stderr


def test_port0_only_for_listeners(tmp):
    ok = subprocess.run([FANOGATE, "--check-config", config(tmp)], capture_output=True, timeout=30)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = subprocess.run([FANOGATE, "--check-config", config(tmp, extra="[consumers]\ndefault = 127.0.0.1:0\n")],
                         capture_output=True, timeout=30)
    assert bad.returncode == 1
    assert b"port 0 is not allowed" in bad.stdout + bad.stderr
