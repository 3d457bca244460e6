#!/usr/bin/python3
"""hostile_operator_dir.py - the operator directory: a member of [operator] group
reaches the operator socket.

The socket lives in a run directory under a world-searchable base, with
[operator] group = nogroup. A client running as nobody:nogroup (setpriv,
no supplementary groups) asks `fanoctl status`; it must be answered, in two
layouts:
  1. the run directory does not exist: the daemon creates it;
  2. the run directory exists as systemd's RuntimeDirectory makes it
     (root:root, 0750) before the daemon starts.
Before the fix the daemon made (or kept) the directory 0750 root:root, so
the group could not reach the socket (EACCES). Others still get no access
to the directory.
Needs root (setpriv to another uid) and a nogroup group: exit 77 otherwise."""
import grp
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "control"))
from daemon_harness import SKIP, Daemon, check, fanoctl_or_skip as fanoctl  # noqa: E402


def as_nobody(sock, gid):
    """fanoctl status as uid 65534 with primary group gid and no others."""
    return subprocess.run(["setpriv", "--reuid=65534", "--regid=%d" % gid, "--clear-groups", fanoctl(),
                           "--socket", sock, "status", "--json"], capture_output=True, text=True, timeout=30)


def run(base, precreate):
    rundir = os.path.join(base, "run-pre" if precreate else "run-new")
    if precreate:
        os.mkdir(rundir, 0o750)
        os.chown(rundir, 0, 0)
        os.chmod(rundir, 0o750)
    sock = os.path.join(rundir, "fanoctl.sock")
    gid = grp.getgrnam("nogroup").gr_gid
    dm = Daemon(extra="[operator]\ngroup = nogroup\n")
    with open(dm.cfg) as f:  # the socket moves out of the harness's private 0700 directory
        text = f.read()
    with open(dm.cfg, "w") as f:
        f.write(text.replace(f"socket = {dm.dir}/fanoctl.sock", f"socket = {sock}"))
    with dm:
        what = "an existing 0750 root:root run directory" if precreate else "a run directory the daemon creates"
        r = as_nobody(sock, gid)
        check(r.returncode == 0 and '"ok": true' in r.stdout.replace('"ok":true', '"ok": true'),
              "a member of the operator group is answered through %s (exit %d: %s)"
              % (what, r.returncode, (r.stderr or r.stdout).strip()[:160]))
        st = os.stat(rundir)
        check(st.st_mode & 0o007 == 0, "the run directory stays closed to others (mode %04o)" % (st.st_mode & 0o7777))


def main():
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("SKIP: needs root and setpriv", flush=True)
        sys.exit(SKIP)
    try:
        grp.getgrnam("nogroup")
    except KeyError:
        print("SKIP: no group nogroup", flush=True)
        sys.exit(SKIP)
    fanoctl()
    base = tempfile.mkdtemp(prefix="fg-opdir-")
    try:
        os.chmod(base, 0o755)
        run(base, False)
        run(base, True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
