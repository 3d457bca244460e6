#!/usr/bin/env bash
# deps.sh - install every Debian 12 package fanogate needs to build, test,
# run the demo and the benchmarks. Idempotent; --no-upgrade because this
# machine's image pins openssl and an upgrade attempt would fail.
# Usage: scripts/deps.sh [--quiet]
set -euo pipefail

PKGS=(
  # build
  meson ninja-build pkg-config gcc
  # libraries (see README, "Dependencies")
  dpdk dpdk-dev libdpdk-dev liburing-dev libxxhash-dev libcmocka-dev
  libinih-dev libjansson-dev libseccomp-dev libssl-dev openssl libpcap-dev libbpf-dev libxdp-dev
  # fuzzing and sanitizers
  clang-14 libclang-rt-14-dev
  # test peers and tools
  python3 python3-websockets python3-pytest iproute2 tshark xxd procps util-linux strace ethtool
  # benchmarks
  gnuplot-nox hyperfine
  # TLS scan in the extended test suite
  testssl.sh bsdmainutils dnsutils
  # metrics check (promtool)
  prometheus
  # [cluster]: the etcd v3 JSON gateway client (libcurl) and a real etcd
  # cluster in tests/cluster
  libcurl4-openssl-dev etcd-server etcd-client
  # the Debian packages (debian/) and their test (tests/install/package_deb.sh):
  # dpkg-buildpackage, debhelper with its meson support, lintian, the unit's
  # systemd-analyze verify, man to find the installed pages
  debhelper dpkg-dev fakeroot lintian man-db systemd
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#PKGS[@]} packages present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing packages: ${missing[*]}; run as root or install them" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends --no-upgrade "${missing[@]}" >/dev/null
echo "deps: done"
