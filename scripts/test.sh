#!/usr/bin/env bash
# test.sh - on a fresh Debian 12 machine: install what the tests need, build
# (normal and ASan/UBSan), run the whole suite, replay the fuzz corpora.
# Tests that need root, hugepages or a network namespace skip (exit 77) and
# say so when they cannot have them.
# Usage: scripts/test.sh [--quick]   (--quick: skip the sanitizer build and fuzzing)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1

scripts/deps.sh
if [ -f tests/package.json ] && [ ! -d tests/node_modules ]; then
  (cd tests && npm ci --no-audit --no-fund --silent)
fi

meson setup build --reconfigure >/dev/null 2>&1 || meson setup build
ninja -C build
# Every build type README tells users to run compiles with -Werror, under
# both compilers it supports (gcc 12 and clang 14): the release build's -O3
# finds warnings (maybe-uninitialized) the default -O2 does not.
build_only() { # dir, then meson setup options
  local dir=$1; shift
  meson setup "$dir" "$@" --reconfigure >/dev/null 2>&1 || meson setup "$dir" "$@" >/dev/null
  ninja -C "$dir" >/dev/null || { ninja -C "$dir"; exit 1; }
  echo "test.sh: $dir ($*) compiles"
}
build_only build-release --buildtype=release
CC=clang-14 build_only build-release-clang --buildtype=release
# The full setup (tests/meson.build): the default one plus the network
# faults, the extended suite (testssl), the hostile peers. The soak runs
# once, in the sanitizer build below (with --quick: here).
soak_here=(--no-suite soak)
[ $quick -eq 1 ] && soak_here=()
meson test -C build --setup full --print-errorlogs --num-processes 2 "${soak_here[@]}"

if [ $quick -eq 0 ]; then
  # Sanitizer build: ASan + UBSan over the same full suite and the soak
  # (tests/lsan.supp names the leaks that are the system libraries'), all
  # but the package test, which builds the .debs with Debian's own flags.
  meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false --reconfigure >/dev/null 2>&1 ||
    meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
  ninja -C build-asan
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    LSAN_OPTIONS=suppressions="$PWD/tests/lsan.supp":print_suppressions=0 \
    meson test -C build-asan --setup full --print-errorlogs --num-processes 2 --no-suite package
  if [ -x scripts/fuzz.sh ]; then
    scripts/fuzz.sh --ci
  fi
fi
echo "test.sh: all suites passed"
