#!/usr/bin/python3
"""daemon_config_paths.py - no configuration path can block or fool the
checks (core/config.c fg_file_open, control/cp_check.h).

1. With the daemon running, its config path is made a FIFO (no writer), a
   directory and /dev/zero in turn: `fanoctl config reload`, SIGHUP and
   `fanoctl config check` each answer within a second with a reason that
   names what the path is ("is a FIFO", "is a directory", "is a character
   device"), and the daemon keeps serving (fanoctl status, GET /healthz).
   Before, open() of the FIFO blocked the whole control plane and a reload
   of /dev/zero read forever.
2. The same with the config intact but [tls] cert naming a FIFO, a
   directory and /dev/zero.
3. `fanogate --check-config` and `fanoctl config check` check what a start
   checks: each refuses (exit 1, the key and path named) a missing
   certificate, a certificate that is a directory or /dev/zero or a FIFO, a
   key that does not match the certificate, a missing tokens file, a
   malformed tokens file, an unwritable state directory; and accepts the
   valid configuration."""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from fgtest.harness import Daemon, binary, check, fail, fanoctl_or_skip, http  # noqa: E402
from fgtest.wait import until  # noqa: E402

KINDS = (("fifo", "is a FIFO"), ("dir", "is a directory"), ("zero", "is a character device"))
ANSWER_S = 1.0  # "within a second"; a blocked open never answers (the 10 s timeout below)
TRIES = 3  # an answer slower than ANSWER_S is asked again: the load of a shared machine, not a block


def make(kind, path):
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        os.mkdir(path)
    else:
        os.symlink("/dev/zero", path)


def remove(kind, path):
    (os.rmdir if kind == "dir" else os.unlink)(path)


def timed(argv, env=None):
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10, env=env)
    except subprocess.TimeoutExpired:
        fail(f"{' '.join(argv)}: no answer within 10 s (blocked)")
    return p, time.monotonic() - t0


def serving(d, what):
    st = d.ctl_json("status")
    code, _, _ = http(d, "GET", "/healthz", token=None)
    check(st.get("pid") == d.proc.pid and code == 200, f"{what}: the daemon keeps serving (status, /healthz {code})")


def fastest(ask):
    """ask() -> (ok, seconds, text), up to TRIES times until an answer comes
    within ANSWER_S: the fastest answer."""
    best = None
    for _ in range(TRIES):
        ok, dt, text = ask()
        if best is None or (ok and dt < best[1]) or not best[0]:
            best = (ok, dt, text)
        if not ok or dt < ANSWER_S:
            break
    return best


def refused_three_ways(d, fanoctl, want, what):
    """reload, SIGHUP and config check of d.cfg answer in time with want."""
    env = dict(os.environ, FANOCTL_SOCKET=f"{d.dir}/fanoctl.sock")

    def cli(argv, e=None):
        def ask():
            p, dt = timed(argv, e)
            out = (p.stdout + p.stderr).strip()
            return p.returncode == 1 and want in out, dt, out[:200]
        return ask

    def sighup():
        mark = len(d.log())
        t0 = time.monotonic()
        os.kill(d.proc.pid, signal.SIGHUP)
        line = until(lambda: [ln for ln in d.log()[mark:].splitlines() if "(SIGHUP) refused" in ln], timeout=10)
        dt = time.monotonic() - t0
        return bool(line) and want in line[0], dt, line[0][-200:] if line else "no log line within 10 s"

    for name, ask in (("fanoctl config reload", cli([fanoctl, "config", "reload"], env)), ("SIGHUP", sighup),
                      ("fanoctl config check", cli([fanoctl, "config", "check", d.cfg]))):
        ok, dt, text = fastest(ask)
        check(ok and dt < ANSWER_S, f"{what}: {name} refused in {dt:.2f} s: {text}")
    serving(d, what)


def config_path(d, fanoctl):
    aside = d.cfg + ".good"
    os.rename(d.cfg, aside)
    try:
        for kind, want in KINDS:
            make(kind, d.cfg)
            try:
                refused_three_ways(d, fanoctl, want, f"config path {kind}")
            finally:
                remove(kind, d.cfg)
    finally:
        os.rename(aside, d.cfg)


def with_key(text, key, value):
    out = []
    for ln in text.splitlines():
        if ln.startswith(key + " ="):
            ln = f"{key} = {value}"
        out.append(ln)
    return "\n".join(out) + "\n"


def cert_path(d, fanoctl):
    with open(d.cfg) as f:
        good = f.read()
    bad = f"{d.dir}/bad-cert"
    try:
        for kind, want in KINDS:
            make(kind, bad)
            with open(d.cfg, "w") as f:
                f.write(with_key(good, "cert", bad))
            try:
                refused_three_ways(d, fanoctl, f"[tls] cert {bad} {want}", f"cert {kind}")
            finally:
                remove(kind, bad)
    finally:
        with open(d.cfg, "w") as f:
            f.write(good)
    p, _ = timed([fanoctl, "config", "reload"], dict(os.environ, FANOCTL_SOCKET=f"{d.dir}/fanoctl.sock"))
    check(p.returncode == 0, f"the intact config reloads again: {(p.stdout + p.stderr).strip()[:200]}")


def check_config(d, fanoctl):
    with open(d.cfg) as f:
        good = f.read()
    cfg = f"{d.dir}/check.ini"
    fifo = f"{d.dir}/check-fifo"
    os.mkfifo(fifo)
    os.mkdir(f"{d.dir}/ro")
    short = f"{d.dir}/short-tokens"
    with open(short, "w") as f:
        f.write("short\n")
    os.chmod(short, 0o600)
    cases = [
        ("valid", good, None),
        ("missing cert", with_key(good, "cert", f"{d.dir}/nope.pem"),
         f"[tls] cert {d.dir}/nope.pem: No such file or directory"),
        ("cert directory", with_key(good, "cert", d.dir), f"[tls] cert {d.dir} is a directory"),
        ("cert /dev/zero", with_key(good, "cert", "/dev/zero"), "[tls] cert /dev/zero is a character device"),
        ("cert FIFO", with_key(good, "cert", fifo), f"[tls] cert {fifo} is a FIFO"),
        ("key of another certificate", with_key(good, "key", f"{d.dir}/rogue.key"),
         f"[tls] key {d.dir}/rogue.key: does not match the certificate"),
        ("missing tokens file", with_key(good, "tokens_file", f"{d.dir}/nope-tokens"),
         f"[tls] tokens_file {d.dir}/nope-tokens: No such file or directory"),
        ("malformed tokens file", with_key(good, "tokens_file", short), "token shorter than 16 characters"),
        ("state directory under a file", with_key(good, "path", f"{d.dir}/server.pem/audit.log"),
         f"[audit] path {d.dir}/server.pem/audit.log: {d.dir}/server.pem is a regular file, not a directory"),
    ]
    for what, text, want in cases:
        with open(cfg, "w") as f:
            f.write(text)
        for argv in ([binary(), "--check-config", cfg], [fanoctl, "config", "check", cfg]):
            p, dt = timed(argv)
            out = p.stdout + p.stderr
            tool = os.path.basename(argv[0])
            if want is None:
                check(p.returncode == 0, f"{tool}: {what}: accepted ({out.strip()[-200:]})")
            else:
                check(p.returncode == 1 and want in out,
                      f"{tool}: {what}: refused, naming it ({p.returncode}: {out.strip()[-200:]})")


def main():
    fanoctl = fanoctl_or_skip()
    with Daemon() as d:
        config_path(d, fanoctl)
        cert_path(d, fanoctl)
        check_config(d, fanoctl)
        serving(d, "at the end")


if __name__ == "__main__":
    main()
