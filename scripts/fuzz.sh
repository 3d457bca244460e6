#!/usr/bin/env bash
# fuzz.sh - build and run fanogate's libFuzzer targets (fuzz/meson.build).
#
#   scripts/fuzz.sh --ci              replay every corpus, then fuzz every target
#                                     for FUZZ_SECONDS (default 15) seconds
#   scripts/fuzz.sh --long SECONDS    a campaign: every target SECONDS seconds
#   scripts/fuzz.sh --replay          replay the corpora only
#   add --target NAME to restrict to one target (repeatable)
#
# Build: build-fuzz/ (or $FUZZ_BUILD_DIR) with CC=clang-14 -Dfuzz=true -Ddataplane=disabled
# -Dtests=disabled; only the fuzz targets are compiled.
# Corpora: fuzz/corpus/<target>/ (committed seeds and kept crashers, replayed
# every time); new inputs found while fuzzing go to build-fuzz/corpus-work/
# so the committed corpus stays small. A crasher is written to
# fuzz/corpus/<target>/crash-<sha1> (commit it with the fix) and fails the run.
# Dictionary: fuzz/dict/<target>.dict when present.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=""
seconds="${FUZZ_SECONDS:-15}"
only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ci) mode=ci ;;
    --replay) mode=replay ;;
    --long) mode=long; seconds="${2:?--long needs SECONDS}"; shift ;;
    --target) only+=("${2:?--target needs NAME}"); shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$mode" ] || { echo "usage: scripts/fuzz.sh --ci | --replay | --long SECONDS [--target NAME]" >&2; exit 2; }

command -v clang-14 >/dev/null || { echo "fuzz.sh: clang-14 not installed (scripts/deps.sh)" >&2; exit 1; }

bdir="${FUZZ_BUILD_DIR:-build-fuzz}"
if [ -f "$bdir/build.ninja" ]; then
  meson setup "$bdir" --reconfigure >/dev/null
else
  CC=clang-14 meson setup "$bdir" -Dfuzz=true -Ddataplane=disabled -Dtests=disabled >/dev/null
fi

# Target names from the build definition, so adding a line to
# fuzz/meson.build is all it takes.
mapfile -t targets < <(meson introspect "$bdir" --targets | /usr/bin/python3 -c '
import json, sys
for t in json.load(sys.stdin):
    if t["type"] == "executable" and "/fuzz/" in t["defined_in"] and t["name"].startswith("fuzz_"):
        print(t["name"])' | sort)
if [ ${#only[@]} -gt 0 ]; then
  targets=("${only[@]}")
fi
[ ${#targets[@]} -gt 0 ] || { echo "fuzz.sh: no fuzz targets defined" >&2; exit 1; }

ninja -C "$bdir" -j2 $(printf 'fuzz/%s ' "${targets[@]}")

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
failed=()
for t in "${targets[@]}"; do
  bin="$bdir/fuzz/$t"
  corpus="fuzz/corpus/$t"
  mkdir -p "$corpus"
  dict=()
  [ -f "fuzz/dict/$t.dict" ] && dict=("-dict=fuzz/dict/$t.dict")

  # 1. replay: every seed and every kept crasher, once
  n=$(find "$corpus" -type f | wc -l)
  if [ "$n" -gt 0 ]; then
    if ! "$bin" -runs=0 -artifact_prefix="$bdir/replay-" "$corpus" >"$bdir/$t.replay.log" 2>&1; then
      echo "fuzz.sh: $t: replay of $corpus FAILED (log: $bdir/$t.replay.log)" >&2
      tail -30 "$bdir/$t.replay.log" >&2
      failed+=("$t:replay")
      continue
    fi
    echo "fuzz.sh: $t: replayed $n inputs"
  fi
  [ "$mode" = replay ] && continue

  # 2. fuzz
  work="$bdir/corpus-work/$t"
  mkdir -p "$work"
  if ! "$bin" "${dict[@]}" -max_total_time="$seconds" -print_final_stats=1 \
       -artifact_prefix="$corpus/" "$work" "$corpus" >"$bdir/$t.fuzz.log" 2>&1; then
    echo "fuzz.sh: $t: CRASH (artifact in $corpus/, log: $bdir/$t.fuzz.log)" >&2
    grep -E 'ERROR|property failed|SUMMARY|Test unit written' "$bdir/$t.fuzz.log" | head -10 >&2
    failed+=("$t:fuzz")
    continue
  fi
  runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$bdir/$t.fuzz.log" | grep -Eo '[0-9]+$' || echo "?")
  cov=$(grep -E '^#[0-9]+' "$bdir/$t.fuzz.log" | tail -1 | grep -Eo 'cov: [0-9]+' || true)
  echo "fuzz.sh: $t: ${seconds}s, $runs executions, $cov, no crash"
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: all ${#targets[@]} targets clean"
