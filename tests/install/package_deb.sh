#!/usr/bin/env bash
# package_deb.sh - the Debian packages as an operator gets them: build them
# with Debian's tooling from a copy of the tree (dpkg-buildpackage -b, so
# build/ is untouched), lint them (lintian: no error or warning), install
# them on this machine with apt as a user would, then:
#   - systemd-analyze verify passes on the installed unit, and every file
#     the unit names exists;
#   - the conffile is a conffile, the system user and the directories exist,
#     the manual pages are found by man;
#   - the unit's ExecStartPre (check-config) passes and its ExecStart, read
#     from the installed unit, plus --no-dataplane, starts the daemon with
#     the packaged configuration in a network namespace of its own; it
#     reports READY=1 over NOTIFY_SOCKET (Type=notify) and the installed
#     fanoctl status answers over the packaged operator socket;
#   - SIGTERM stops it with exit 0 and STOPPING=1;
# and purge them: nothing of the packages is left but the system user
# (Debian keeps system users), which this test then removes if it made it.
# The machine is left as it was; a machine that already has fanogate
# installed, or its directories, is skipped (77) rather than touched.
#
# Usage: package_deb.sh SOURCE_ROOT
# FG_PKG_DEBS=DIR: test the packages already built in DIR (a previous
# dpkg-buildpackage's ..) instead of building them.
set -uo pipefail
ROOT=$1
. "$ROOT/tests/lib/proc.sh" # wait_exit
SKIP=77
say() { echo "package_deb: $*"; }
skip() { echo "SKIP: $*"; exit $SKIP; }
fails=0 passed=0
ok() { echo "ok - $1"; passed=$((passed + 1)); }
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }

[ "$(id -u)" -eq 0 ] || skip "needs root (installs and purges packages)"
for t in dpkg-buildpackage dh lintian fakeroot systemd-analyze apt-get unshare python3; do
	command -v $t >/dev/null || skip "$t missing (scripts/deps.sh installs the packaging tools)"
done
if dpkg-query -W -f='${Status}' fanogate 2>/dev/null | grep -q installed ||
	dpkg-query -W -f='${Status}' fanogate-tools 2>/dev/null | grep -q installed; then
	skip "fanogate is installed on this machine: not replacing it"
fi
for d in /etc/fanogate /var/lib/fanogate /run/fanogate; do
	[ -e $d ] && skip "$d exists: this test would not know what to leave behind"
done
user_before=0
getent passwd fanogate >/dev/null && user_before=1
group_before=0
getent group fanogate >/dev/null && group_before=1

T=$(mktemp -d /tmp/fg-pkg-XXXXXX)
chmod 755 "$T" # the daemon, once it is the fanogate user, sends to $T/notify
installed=0 pid=
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	if [ $installed -eq 1 ]; then
		apt-get purge -y -q -o DPkg::Lock::Timeout=300 fanogate fanogate-tools >/dev/null 2>&1 ||
			dpkg --purge fanogate fanogate-tools >/dev/null 2>&1
		rm -rf /var/lib/fanogate /run/fanogate
	fi
	if [ $user_before -eq 0 ] && getent passwd fanogate >/dev/null; then userdel fanogate 2>/dev/null; fi
	if [ $group_before -eq 0 ] && getent group fanogate >/dev/null; then groupdel fanogate 2>/dev/null; fi
	rm -rf "$T"
}
trap cleanup EXIT

# ---- build --------------------------------------------------------------
if [ -n "${FG_PKG_DEBS:-}" ]; then
	cp "$FG_PKG_DEBS"/fanogate_*.deb "$FG_PKG_DEBS"/fanogate-tools_*.deb "$FG_PKG_DEBS"/fanogate_*.changes \
		"$FG_PKG_DEBS"/fanogate_*.buildinfo "$FG_PKG_DEBS"/*dbgsym*.deb "$T"/ || skip "no packages in $FG_PKG_DEBS"
	say "testing the packages built in $FG_PKG_DEBS"
else
	mkdir "$T/src"
	if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
		(cd "$ROOT" && git ls-files -co --exclude-standard | grep -Ev '^(build|obj-)' | tar -cf - -T -) | tar -xf - -C "$T/src"
	else
		tar -C "$ROOT" --exclude='./build*' --exclude='./obj-*' -cf - . | tar -xf - -C "$T/src"
	fi
	(cd "$T/src" && dpkg-checkbuilddeps) >"$T/builddeps.log" 2>&1 || skip "build dependencies: $(tail -1 "$T/builddeps.log")"
	t0=$(date +%s)
	if (cd "$T/src" && DEB_BUILD_OPTIONS="parallel=2" dpkg-buildpackage -b -us -uc) >"$T/build.log" 2>&1; then
		ok "dpkg-buildpackage -b built the packages in $(( $(date +%s) - t0 )) s"
	else
		tail -40 "$T/build.log"
		bad "dpkg-buildpackage failed"
		echo "$passed passed, $fails failed"; exit 1
	fi
fi
DEB=$(ls "$T"/fanogate_*.deb) TOOLS=$(ls "$T"/fanogate-tools_*.deb)
CHANGES=$(ls "$T"/fanogate_*.changes)
dpkg -c "$DEB" >"$T/fanogate.list" && dpkg -c "$TOOLS" >"$T/tools.list"
for f in ./usr/sbin/fanogate ./usr/bin/fanoctl ./lib/systemd/system/fanogate.service ./etc/fanogate/fanogate.ini \
	./usr/share/fanogate/drivers-config/af_xdp.ini ./usr/share/fanogate/monitoring/fanogate.rules.yml \
	./usr/share/fanogate/monitoring/fanogate.dashboard.json ./usr/share/man/man5/fanogate.ini.5.gz ./usr/share/man/man8/fanogate.8.gz \
	./usr/share/man/man8/fanoctl.8.gz ./usr/share/bash-completion/completions/fanoctl ./usr/lib/sysusers.d/fanogate.conf \
	./usr/lib/tmpfiles.d/fanogate.conf ./usr/share/doc/fanogate/config.md; do
	grep -q " $f\$" "$T/fanogate.list" || bad "fanogate lacks $f"
done
for f in ./usr/bin/fanofleet ./usr/bin/fanorelay ./usr/share/man/man1/fanofleet.1.gz; do
	grep -q " $f\$" "$T/tools.list" || bad "fanogate-tools lacks $f"
done
grep -q "wireshark/plugins/fanogate.lua\$" "$T/tools.list" || bad "fanogate-tools lacks the dissector"
grep -Eq "fanofleet|fanorelay|\.lua" "$T/fanogate.list" && bad "fanogate carries a test tool"
[ $fails -eq 0 ] && ok "the daemon's files in fanogate, the test tools in fanogate-tools"

# ---- lintian --------------------------------------------------------------
if lintian --fail-on error,warning --no-tag-display-limit "$CHANGES" >"$T/lintian.log" 2>&1; then
	ok "lintian: no error or warning ($(grep -c '^[EWIPX]:' "$T/lintian.log") tags below warning)"
else
	cat "$T/lintian.log"
	bad "lintian"
fi

# ---- install --------------------------------------------------------------
find /etc /lib/systemd /usr /var/lib /run -name '*fanogate*' -not -path "$T/*" 2>/dev/null | sort >"$T/before"
# only these two packages: anything else would change this machine
apt-get -s install --no-install-recommends "$DEB" "$TOOLS" >"$T/sim.log" 2>&1
others=$(grep '^Inst ' "$T/sim.log" | awk '{print $2}' | grep -Ev '^fanogate(-tools)?$' | tr '\n' ' ')
[ -z "$others" ] || skip "installing would also bring in: $others (scripts/deps.sh installs them)"
installed=1
if apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300 "$DEB" "$TOOLS" \
	>"$T/install.log" 2>&1; then
	ok "apt-get install ./fanogate_*.deb ./fanogate-tools_*.deb"
else
	cat "$T/install.log"; bad "install"; echo "$passed passed, $fails failed"; exit 1
fi

UNIT=/lib/systemd/system/fanogate.service
if systemd-analyze verify "$UNIT" >"$T/verify.log" 2>&1 && ! grep -q '^fanogate.service:' "$T/verify.log"; then
	ok "systemd-analyze verify $UNIT"
else
	cat "$T/verify.log"; bad "systemd-analyze verify"
fi
missing=
# the installed paths it names (/usr, /etc, /lib), in comments too; not the
# runtime ones the daemon or systemd make (/var/lib/fanogate, /run/fanogate)
for p in $(grep -oE '(^|[ =:])/(usr|etc|lib)/[^ ;,)]*' "$UNIT" | sed 's/^[ =:]//' | sort -u); do
	[ -e "$p" ] || missing="$missing $p"
done
[ -z "$missing" ] && ok "every file the unit names exists" || bad "the unit names missing files:$missing"
grep -q '^Type=notify$' "$UNIT" && ok "the unit is Type=notify" || bad "the unit is not Type=notify"
dpkg-query -W -f='${Conffiles}\n' fanogate | grep -q '/etc/fanogate/fanogate.ini' &&
	ok "/etc/fanogate/fanogate.ini is a conffile" || bad "the configuration is not a conffile"
getent passwd fanogate >/dev/null && ok "the system user fanogate exists" || bad "no fanogate user"
[ "$(stat -c %a /var/lib/fanogate 2>/dev/null)" = 700 ] && [ "$(stat -c %a /run/fanogate 2>/dev/null)" = 750 ] &&
	ok "/var/lib/fanogate (0700) and /run/fanogate (0750)" || bad "the directories are missing or open"
for m in fanogate.8 fanoctl.8 fanogate.ini.5 fanofleet.1; do
	man -w -s "${m##*.}" "${m%.*}" >/dev/null 2>&1 || bad "man ${m##*.} ${m%.*} not found"
done
zcat /usr/share/man/man5/fanogate.ini.5.gz | grep -q '^\\fBport\\fR' && ok "the manual pages are installed; fanogate.ini(5) has [dataplane] port" ||
	bad "fanogate.ini(5) lacks the key table"

# ---- run the installed daemon as the unit would ---------------------------
PRE=$(sed -n 's/^ExecStartPre=//p' "$UNIT")
START=$(sed -n 's/^ExecStart=//p' "$UNIT")
$PRE >"$T/pre.log" 2>&1 && ok "ExecStartPre passes: $PRE" || { cat "$T/pre.log"; bad "ExecStartPre: $PRE"; }
# NOTIFY_SOCKET as systemd gives it: a datagram socket anyone may send to
python3 - "$T/notify" >"$T/notify.log" 2>&1 <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o777)
s.settimeout(120)
try:
    while True:
        msg = s.recv(4096).decode()
        print(msg.replace("\n", " "), flush=True)
        if "STOPPING=1" in msg:
            break
except socket.timeout:
    print("TIMEOUT", flush=True)
PY
listener=$!
for _ in $(seq 100); do [ -S "$T/notify" ] && break; sleep 0.05; done
# its own network namespace: the packaged listeners (8443, 9464) cannot
# collide with anything on this machine; the operator socket is a path
NOTIFY_SOCKET=$T/notify unshare --net sh -c 'ip link set lo up && exec "$@"' sh $START --no-dataplane \
	>"$T/daemon.log" 2>&1 &
pid=$!
python3 - "$T/notify.log" "$pid" <<'PY'
import os, sys, time
log, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    if "READY=1" in open(log).read():
        sys.exit(0)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(2)
    time.sleep(0.05)
sys.exit(1)
PY
rc=$?
if [ $rc -eq 0 ]; then
	ok "the installed daemon (ExecStart + --no-dataplane) reported READY=1 over NOTIFY_SOCKET"
else
	cat "$T/daemon.log"; bad "the daemon did not become ready (rc $rc)"
fi
if [ $rc -eq 0 ]; then
	if /usr/bin/fanoctl status >"$T/status.log" 2>&1; then
		ok "the installed fanoctl status answers: $(head -1 "$T/status.log")"
	else
		cat "$T/status.log"; bad "fanoctl status"
	fi
	grep -q "user fanogate" "$T/daemon.log" && ok "the daemon runs as the packaged user" ||
		bad "the daemon did not switch to [daemon] user = fanogate"
fi
kill -TERM $pid 2>/dev/null
if wait_exit $pid 60; then # bounded: a daemon that does not stop shows its stacks
	wait $pid; rc=$?
	pid=
else
	rc=124
fi
[ $rc -eq 0 ] && ok "SIGTERM: the daemon stopped, exit 0" || { tail -5 "$T/daemon.log"; bad "the daemon exited $rc"; }
wait $listener
grep -q "STOPPING=1" "$T/notify.log" && ok "it sent STOPPING=1" || bad "no STOPPING=1: $(cat "$T/notify.log")"

# ---- purge -----------------------------------------------------------------
if apt-get purge -y -q -o DPkg::Lock::Timeout=300 fanogate fanogate-tools >"$T/purge.log" 2>&1; then
	installed=0
	ok "apt-get purge fanogate fanogate-tools"
else
	cat "$T/purge.log"; bad "purge"
fi
find /etc /lib/systemd /usr /var/lib /run -name '*fanogate*' -not -path "$T/*" 2>/dev/null | sort >"$T/after"
left=$(comm -13 "$T/before" "$T/after" | tr '\n' ' ')
[ -z "$left" ] && ok "purge left no file behind" || bad "purge left: $left"
for f in $(awk '{print $6}' "$T/fanogate.list" "$T/tools.list" | sed 's|^\.||' | grep -v '/$'); do
	[ -e "$f" ] && { bad "purge left $f"; break; }
done
if [ $user_before -eq 0 ] && getent passwd fanogate >/dev/null; then
	say "the system user fanogate stays after purge (Debian keeps system users); removing the one this test made"
fi

echo "$passed passed, $fails failed"
[ $fails -eq 0 ]
