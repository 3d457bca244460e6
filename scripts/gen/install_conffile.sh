#!/bin/sh
# install_conffile.sh - meson's install step for the configuration file and,
# on a live host, the daemon's user and directories (what the package's
# postinst does).
#
# Into a staging tree ($DESTDIR set, as the package build does): the
# generated file is installed, nothing else. On the host itself ($DESTDIR
# empty): an existing configuration is never overwritten (it is the
# operator's), and as root the sysusers.d and tmpfiles.d entries are applied
# so the packaged [daemon] user exists before the daemon starts.
#
# Usage (meson.add_install_script): install_conffile.sh GENERATED_INI
#   CONFDIR SYSUSERS_CONF TMPFILES_CONF   (the last three absolute, unprefixed)
set -eu
src=$1 confdir=$2 sysusers=$3 tmpfiles=$4
dest="${DESTDIR:-}$confdir/fanogate.ini"

if [ -n "${DESTDIR:-}" ] || [ ! -e "$dest" ]; then
	install -D -m 0644 "$src" "$dest"
	echo "Installing $src to $dest"
else
	echo "Keeping $dest (the operator's; fanoctl config check $dest shows every key)"
fi
[ -z "${DESTDIR:-}" ] || exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "Not root: run systemd-sysusers $sysusers and systemd-tmpfiles --create $tmpfiles before starting fanogate"
	exit 0
fi
if command -v systemd-sysusers >/dev/null; then
	systemd-sysusers "$sysusers"
else
	echo "No systemd-sysusers: create the system user of $sysusers by hand (useradd --system fanogate)"
fi
if command -v systemd-tmpfiles >/dev/null; then
	systemd-tmpfiles --create "$tmpfiles"
fi
