#!/usr/bin/python3
"""l_harden.py - the running daemon is confined (control/cp_harden.c).
Owner: helper L. Needs root (exit 77 otherwise).

1. fanogate --no-dataplane, once ready: /proc/PID/status of the loop thread
   shows CapEff = CapPrm = CapInh = CapAmb = CapBnd = 0 and NoNewPrivs 1,
   and every thread of the process the same (no thread keeps a capability);
   the log says what was kept.
2. A request over the operator socket carrying SCM_RIGHTS fds (a pipe's
   write end and a file) is refused with "fd_passing_refused"; the daemon
   closed its copies (the pipe reads EOF once our own copy is closed, and
   no /proc/PID/fd link names the file); with more fds than fit (MSG_CTRUNC)
   the same; and a plain request afterwards is answered ok.
FANOGATE = the daemon binary (d1_harness)."""
import array
import json
import os
import socket
import sys
import tempfile

from d1_harness import SKIP, Daemon, check

CAPS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


def status_fields(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def op_request(sock_path, payload, fds=()):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock_path)
    if fds:
        s.sendmsg([payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        s.sendall(payload)
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf) if buf.strip() else None


def daemon_fd_targets(pid):
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return out


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (the capability checks start from a full set)")
        sys.exit(SKIP)
    with Daemon() as d:
        pid = d.proc.pid
        st = status_fields(f"/proc/{pid}/status")
        for k in CAPS:
            check(int(st[k], 16) == 0, f"{k} = {st[k]} (want 0 with --no-dataplane)")
        check(st.get("NoNewPrivs") == "1", f"NoNewPrivs = {st.get('NoNewPrivs')}")
        tasks = os.listdir(f"/proc/{pid}/task")
        for t in tasks:
            ts = status_fields(f"/proc/{pid}/task/{t}/status")
            check(all(int(ts[k], 16) == 0 for k in CAPS) and ts.get("NoNewPrivs") == "1",
                  f"thread {t} ({ts.get('Name')}) confined too")
        check("hardening: capabilities kept 0 (none), no_new_privs" in d.log(), "the log says what was kept")

        sock = f"{d.dir}/fanoctl.sock"
        rep = op_request(sock, b'{"cmd":"status"}\n')
        check(rep and rep.get("ok") is True, "plain operator request answered before")

        rfd, wfd = os.pipe()
        tmp = tempfile.NamedTemporaryFile(prefix="l-harden-passed-", dir=d.dir, delete=False)
        tmp.close()
        ffd = os.open(tmp.name, os.O_RDONLY)
        rep = op_request(sock, b'{"cmd":"status"}\n', fds=(wfd, ffd))
        check(rep == {"ok": False, "error": "fd_passing_refused"}, f"SCM_RIGHTS request refused: {rep}")
        os.close(wfd)
        os.close(ffd)
        os.set_blocking(rfd, False)
        try:
            eof = os.read(rfd, 1) == b""
        except BlockingIOError:
            eof = False  # somebody (the daemon) still holds the write end
        check(eof, "the daemon closed the passed pipe end")
        check(not any(t == tmp.name for t in daemon_fd_targets(pid)), "the daemon holds no fd of the passed file")
        os.close(rfd)

        # more fds than the control buffer holds: MSG_CTRUNC, still refused
        many = [os.open("/dev/null", os.O_RDONLY) for _ in range(40)]
        nulls_before = daemon_fd_targets(pid).count("/dev/null")
        rep = op_request(sock, b'{"cmd":"status"}\n', fds=many)
        check(rep == {"ok": False, "error": "fd_passing_refused"}, f"40 fds (truncated) refused: {rep}")
        for fd in many:
            os.close(fd)
        nulls = daemon_fd_targets(pid).count("/dev/null")
        check(nulls == nulls_before, f"no passed fd left open in the daemon (/dev/null: {nulls_before} -> {nulls})")

        rep = op_request(sock, b'{"cmd":"status"}\n')
        check(rep and rep.get("ok") is True, "plain operator request answered after the refusals")
        check(d.log().count("operator: request carrying control data refused") == 2, "each refusal logged")
        rep = op_request(sock, b'{"cmd":"stats"}\n')
        opst = (rep or {}).get("operator", {})
        check(opst.get("fd_requests_refused") == 2 and opst.get("fds_closed", 0) >= 2,
              f"fanoctl stats counts the refusals: {opst}")
        check(d.proc.poll() is None, "daemon still running")
    print("l_harden: ok")


if __name__ == "__main__":
    main()
