#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fuzz/run.sh BUILD_DIR SECONDS: runs each fuzz target for SECONDS, seeded
# with the conformance traces (stream.obs files for fuzz_stream; stream.json,
# metadata.json and clock-offsets.txt files for fuzz_meta) and the model
# descriptions (fuzz_model); then fuzz_rt_signal (libovni under signal
# handlers) if it was built. Fails if a target
# finds a crash (or cannot run). Crash inputs are left in BUILD_DIR/fuzz-out.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: fuzz/run.sh BUILD_DIR SECONDS" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
secs=$2
here=$(cd "$(dirname "$0")" && pwd)
corpus_src=${WEFT_CONFORMANCE_DIR:-$here/../../shared/conformance}
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz-run-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/stream" "$work/meta" "$work/model" "$build/fuzz-out"
# the model descriptions seed fuzz_model
cp "$here"/../src/model/*/*.yaml "$work/model/"
if [ -d "$corpus_src" ]; then
  i=0
  while IFS= read -r -d '' f; do
    i=$((i + 1))
    # inputs over 1 MiB slow the fuzzer down; the decoder sees their starts
    head -c 1048576 "$f" > "$work/stream/obs-$i"
  done < <(find "$corpus_src" \( -name stream.obs -o -name 'thread.*' \) -type f -print0)
  while IFS= read -r -d '' f; do
    i=$((i + 1))
    cp "$f" "$work/meta/meta-$i"
  done < <(find "$corpus_src" \( -name stream.json -o -name metadata.json -o -name clock-offsets.txt \) -type f -print0)
else
  echo "fuzz/run.sh: no conformance corpus at $corpus_src; starting from empty corpora" >&2
fi
status=0
for t in fuzz_stream fuzz_meta fuzz_model; do
  bin="$build/fuzz/$t"
  [ -x "$bin" ] || { echo "fuzz/run.sh: missing $bin (configure with CC=clang -DWEFT_FUZZ=ON)" >&2; exit 1; }
  case $t in fuzz_stream) dir=$work/stream ;; fuzz_model) dir=$work/model ;; *) dir=$work/meta ;; esac
  echo "== $t for ${secs}s ($(ls "$dir" | wc -l) seeds)"
  if ! (cd "$build/fuzz-out" && ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$secs" \
        -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 "$dir" 2>&1 | tail -n 25); then
    echo "fuzz/run.sh: $t FAILED (crash inputs in $build/fuzz-out)" >&2
    status=1
  fi
done
# fuzz_rt_signal: libovni with signal handlers emitting inside emits and
# flushes (x86-64); seeded with a few small programs (4-byte steps).
bin="$build/fuzz/fuzz_rt_signal"
if [ -x "$bin" ] && [ "$(uname -m)" = x86_64 ]; then
  mkdir -p "$work/rt"
  printf '\000\005\020\000\001\000\040\003\004\100\000\000' > "$work/rt/seed-1"
  printf '\004\200\000\000\000\000\030\003\003\000\050\004' > "$work/rt/seed-2"
  printf '\004\377\000\000\002\100\060\002\001\000\200\003' > "$work/rt/seed-3"
  echo "== fuzz_rt_signal for ${secs}s"
  if ! (cd "$build/fuzz-out" && ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$secs" \
        -rss_limit_mb=2048 -max_len=256 -print_final_stats=1 "$work/rt" 2>&1 | tail -n 25); then
    echo "fuzz/run.sh: fuzz_rt_signal FAILED (crash inputs in $build/fuzz-out)" >&2
    status=1
  fi
fi
exit $status
