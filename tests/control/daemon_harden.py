#!/usr/bin/python3
"""daemon_harden.py - the running daemon is confined (control/cp_harden.c).
Needs root (exit 77 otherwise).

1. fanogate --no-dataplane with an alert command, once ready: every thread
   in /proc/PID/task (io_uring's workers aside: they run no user code) shows
   CapEff = CapPrm = CapInh = CapAmb = CapBnd = 0, NoNewPrivs 1, Seccomp 2
   (filter mode) with at least one filter, uid 0; the log says so.
2. A request over the operator socket carrying SCM_RIGHTS fds (a pipe's
   write end and a file) is refused with "fd_passing_refused"; the daemon
   closed its copies (the pipe reads EOF once our own copy is closed, and
   no /proc/PID/fd link names the file); with more fds than fit (MSG_CTRUNC)
   the same; and a plain request afterwards is answered ok.
3. Still under the filter: a divergent canonical report makes the daemon
   run its alert command (posix_spawn + exec under the filter), the audit
   log verifies, no system call was refused (no "seccomp:" warning), the
   threads are checked again, and the daemon stops cleanly.
4. With the dataplane (drivers-config ring profile, as daemon_lanes starts it;
   skipped when the EAL cannot start): the lcores and EAL's threads are
   confined the same (capabilities are per thread: each dropped its own),
   and a slot resolves through the lcore under the filter.
0. An unknown [daemon] user stops the daemon at once (and --check-config).
5. [daemon] user = fanogate-test (a system user made here and removed
   after, unless it existed): every thread has that uid/gid and no
   capabilities, the state directory and audit files are the user's, the
   audit log rotates (rotate_bytes = 1K) as that user, the alert command runs
   as that user, the operator socket answers root, and the stop is clean;
   and with the dataplane (ring profile) every thread, lcores included,
   has that uid/gid.
FANOGATE = the daemon binary (daemon_harness)."""
import array
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.wait import until  # noqa: E402
from fgtest.harness import SKIP, Daemon, canonical, check, http, reduce_pair_x, seed

CAPS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")
TEST_USER = "fanogate-test"
V = {1: [1.5, 2.0, -1.0, 0.5, 3.0, 4.0, 5.0, 6.0], 3: [0.25] * 8, 5: [-2.0, 1e-3, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0]}
REF = reduce_pair_x([(V[1], 0), (V[3], 0), (V[5], 0)])


def status_fields(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def stat_present(path, timeout=10):
    """os.stat(path) once the file exists (None after timeout): the audit
    log is briefly absent while it rotates (renamed to audit.log.N, then
    created anew), and a stat in that window means nothing."""
    def once():
        try:
            return os.stat(path)
        except FileNotFoundError:
            return None
    return until(once, timeout)


def owned_by(path, uid):
    st = stat_present(path)
    return st is not None and st.st_uid == uid


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


def is_io_worker(pid, tid):
    """PF_IO_WORKER (0x10) in /proc/PID/task/TID/stat flags: io_uring's own
    threads, which run no user code (each request runs with the submitter's
    credentials)."""
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return True  # gone
    return int(rest[6]) & 0x10 != 0


def check_threads(pid, what, uid=0, gid=0, min_threads=1):
    """Every thread of pid: no capability (bounding set too), no_new_privs,
    the seccomp filter, uid/gid as configured. Returns the thread names."""
    names = []
    for t in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        if is_io_worker(pid, t):
            continue
        try:
            ts = status_fields(f"/proc/{pid}/task/{t}/status")
        except OSError:
            continue
        bad = [k for k in CAPS if int(ts[k], 16) != 0]
        if ts.get("NoNewPrivs") != "1":
            bad.append("NoNewPrivs=" + ts.get("NoNewPrivs", "?"))
        if ts.get("Seccomp") != "2" or int(ts.get("Seccomp_filters", "0")) < 1:
            bad.append(f"Seccomp={ts.get('Seccomp')} filters={ts.get('Seccomp_filters')}")
        if ts["Uid"].split() != [str(uid)] * 4 or ts["Gid"].split() != [str(gid)] * 4:
            bad.append(f"Uid={ts['Uid']} Gid={ts['Gid']}")
        check(not bad, f"{what}: thread {t} ({ts.get('Name')}) confined {bad or ''}")
        names.append(ts.get("Name"))
    check(len(names) >= min_threads, f"{what}: {len(names)} threads checked (at least {min_threads})")
    return names


def resolve(d, tok, canon_values):
    last = None
    for ln in (1, 3, 5):
        st, h, b = http(d, "POST", "/residual-seed", seed(0, tok, ln, V[ln]))
        last = json.loads(b)
    st, h, b = http(d, "POST", "/canonical", canonical(0, tok, canon_values))
    return last, st


def divergence_runs_alert(d, alerts, what):
    """A divergent canonical report on a shadow line: the audit diverges and
    the daemon runs its alert command (exec under the filter)."""
    a, st = resolve(d, 7, [x + 1.0 for x in REF])
    check(st == 200 and a and a.get("fully_resolved"), f"{what}: slot resolved, divergent canonical acked")
    check(until(lambda: os.path.exists(alerts) and "divergence" in open(alerts).read(), 10),
          f"{what}: the alert command ran under the filter ({alerts})")


def no_refusals(d, what):
    check("system calls refused" not in d.log(), f"{what}: no system call refused by the filter")
    check(d.proc.poll() is None, f"{what}: daemon still running")


def stop_clean(d, what):
    """SIGTERM under the filter: exit 0, and no call refused during the
    shutdown either (cp_harden_report logs them at exit)."""
    d.proc.send_signal(signal.SIGTERM)
    d.proc.wait(timeout=15)
    check(d.proc.returncode == 0, f"{what}: clean stop under the filter (exit {d.proc.returncode})")
    check("system calls refused" not in d.log(), f"{what}: no system call refused, shutdown included")


def part_dataplane():
    with Daemon(dp_profile="ring", expect_start=False, deadline_ms=2000) as d:
        if d.proc.poll() is not None:
            # only the EAL may be missing here; a refusal by the hardening is a failure
            check("hardening:" not in d.log() and "dataplane: init failed" in d.log(),
                  "the daemon with the dataplane exited before ready only because the EAL could not start:\n"
                  + d.log()[-600:])
            print("note: dataplane part skipped (the EAL could not start here)")
            return
        names = check_threads(d.proc.pid, "dataplane", min_threads=2)
        check(any(n.startswith("lcore") or n.startswith("rte") or n.startswith("eal") for n in names),
              f"DPDK's threads are among them: {names}")
        last = None
        for ln in (1, 3, 5):
            st, h, b = http(d, "POST", "/residual-seed", seed(1, 9, ln, V[ln]))
            last = json.loads(b)
        check(st == 200 and last["fully_resolved"], f"a slot resolves through the lcore under the filter: {last}")
        check("in %d threads" % len(names) in d.log() or "hardening: capabilities kept 0 (none)" in d.log(),
              "the log says every thread dropped")
        no_refusals(d, "dataplane")
        check_threads(d.proc.pid, "dataplane, after traffic", min_threads=2)
        stop_clean(d, "dataplane")


def part_user(fanoctl):
    created = False
    try:
        pw = pwd.getpwnam(TEST_USER)
    except KeyError:
        r = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group",
                            TEST_USER], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"note: user part skipped: useradd failed: {r.stderr.strip()}")
            return
        created = True
        pw = pwd.getpwnam(TEST_USER)
    adir = tempfile.mkdtemp(prefix="l-harden-alerts-")
    try:
        os.chown(adir, pw.pw_uid, pw.pw_gid)
        alerts = f"{adir}/alerts.log"
        extra = (f"[daemon]\nuser = {TEST_USER}\n[audit]\nrotate_bytes = 1K\n"
                 f"alert_command = echo \"$FG_EVENT uid=$(id -u)\" >> {alerts}\n")
        with Daemon(extra=extra, deadline_ms=30000) as d:
            pid = d.proc.pid
            check_threads(pid, "user", uid=pw.pw_uid, gid=pw.pw_gid)
            check(f"user {TEST_USER} uid {pw.pw_uid} gid {pw.pw_gid}" in d.log(), "the log names the user")
            for p in (d.dir, f"{d.dir}/audit.log"):
                check(owned_by(p, pw.pw_uid), f"{p} belongs to {TEST_USER}")
            rep = op_request(f"{d.dir}/fanoctl.sock", b'{"cmd":"status"}\n')
            check(rep and rep.get("ok") is True, "the operator socket answers root")
            divergence_runs_alert(d, alerts, "user")
            check(f"uid={pw.pw_uid}" in open(alerts).read(), "the alert command ran as the user")
            for tok in range(20, 30):
                resolve(d, tok, REF)
            check(until(lambda: os.path.exists(f"{d.dir}/audit.log.1"), 10), "the audit log rotated (rotate_bytes 1K)")
            check(owned_by(f"{d.dir}/audit.log", pw.pw_uid), "the new audit file was made by the user")
            no_refusals(d, "user")
            check_threads(pid, "user, at the end", uid=pw.pw_uid, gid=pw.pw_gid)
            if fanoctl:
                def verify():  # the log may rotate again between the listing and the read: list anew
                    files = sorted((f for f in os.listdir(d.dir) if f.startswith("audit.log.") and f.rsplit(".", 1)[1].isdigit()),
                                   key=lambda f: int(f.rsplit(".", 1)[1]))
                    return subprocess.run([fanoctl, "audit", "verify", *[f"{d.dir}/{f}" for f in files],
                                           f"{d.dir}/audit.log"], capture_output=True, text=True, timeout=30)
                p = until(lambda: (lambda r: r if r.returncode == 0 else None)(verify()), 10) or verify()
                check(p.returncode == 0, "the rotated audit log verifies: " + (p.stdout + p.stderr).strip()[-160:])
            stop_clean(d, "user")
        # the same with the dataplane: glibc's setresuid reaches the lcores too
        with Daemon(dp_profile="ring", expect_start=False, deadline_ms=2000,
                    extra=f"[daemon]\nuser = {TEST_USER}\n") as d:
            if d.proc.poll() is None:
                check_threads(d.proc.pid, "user with the dataplane", uid=pw.pw_uid, gid=pw.pw_gid, min_threads=2)
                stop_clean(d, "user with the dataplane")
            else:
                check("hardening:" not in d.log(), "user with the dataplane: not stopped by the hardening:\n"
                      + d.log()[-600:])
    finally:
        shutil.rmtree(adir, ignore_errors=True)
        if created:
            subprocess.run(["userdel", TEST_USER], capture_output=True)


def unknown_user_refused():
    """An unknown [daemon] user stops the daemon before anything else, and
    --check-config (systemd's ExecStartPre) says so."""
    extra = "[daemon]\nuser = fanogate-no-such-user\n"
    with Daemon(extra=extra, expect_start=False) as d:
        d.proc.wait(timeout=15)
        check(d.proc.returncode == 1 and "[daemon] user fanogate-no-such-user: no such user" in d.log(),
              f"an unknown user stops the daemon at start (exit {d.proc.returncode})")
        check("audit: shadow audit running" not in d.log(), "before the audit log or any listener")
        p = subprocess.run([os.environ["FANOGATE"], "--check-config", d.cfg], capture_output=True, text=True,
                           timeout=20)
        check(p.returncode == 1 and "no such user" in p.stderr, "--check-config refuses the unknown user")


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (the capability checks start from a full set)")
        sys.exit(SKIP)
    fanoctl = os.environ.get("FANOCTL")
    unknown_user_refused()
    adir = tempfile.mkdtemp(prefix="l-harden-alerts-")
    alerts = f"{adir}/alerts.log"
    extra = f"[audit]\nalert_command = echo \"$FG_EVENT\" >> {alerts}\n"
    with Daemon(extra=extra, deadline_ms=30000) as d:
        pid = d.proc.pid
        st = status_fields(f"/proc/{pid}/status")
        for k in CAPS:
            check(int(st[k], 16) == 0, f"{k} = {st[k]} (want 0)")
        check(st.get("NoNewPrivs") == "1", f"NoNewPrivs = {st.get('NoNewPrivs')}")
        check(st.get("Seccomp") == "2", f"Seccomp = {st.get('Seccomp')} (filter)")
        check_threads(pid, "local")
        check("hardening: capabilities kept 0 (none) in " in d.log() and
              "seccomp on (EPERM) with exec for the alert command" in d.log(), "the log says what was kept")

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

        divergence_runs_alert(d, alerts, "local")
        if fanoctl:
            # the audit thread's last records: verify until it passes (bounded)
            until(lambda: subprocess.run([fanoctl, "audit", "verify", f"{d.dir}/audit.log"],
                                         capture_output=True).returncode == 0, 5)
            p = subprocess.run([fanoctl, "audit", "verify", f"{d.dir}/audit.log"], capture_output=True, text=True,
                               timeout=30)
            check(p.returncode == 0, "the audit log verifies: " + (p.stdout + p.stderr).strip()[-120:])
        no_refusals(d, "local")
        check_threads(pid, "local, at the end")
        stop_clean(d, "local")
    shutil.rmtree(adir, ignore_errors=True)
    part_dataplane()
    part_user(fanoctl)
    print("daemon_harden: ok")


if __name__ == "__main__":
    main()
