#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fuzz/run.sh BUILD_DIR SECONDS: runs each fuzz target for SECONDS, seeded
# with the conformance traces (stream.obs files for fuzz_stream; stream.json,
# metadata.json and clock-offsets.txt files for fuzz_meta) and the model
# descriptions (fuzz_model); then fuzz_view_cache (`weft view --serve`'s
# cache reader) seeded with the bodies of caches that BUILD_DIR/bin/weft
# builds from four corpus traces (view_seed below, and one whole cache);
# then fuzz_rt_signal
# (libovni under signal handlers) if it was built. Fails if a target
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
# view_seed NAME TRACE BUDGET [SAMPLES]: a copy of TRACE served by weft
# view --serve (its cache built before the port line; then SIGINT), the
# cache as fuzz_view_cache takes it (view_cache_seed.py: the body after the
# key's and the chunks' lengths; SAMPLES: each spilled track's samples cut
# to that many); NAME hwc's whole file too.
view_seed() {
  local t=$work/vtrace-$1 out=$work/vtrace-$1.out pid n=0
  cp -r "$2" "$t"
  chmod -R u+w "$t" # else the cache goes to $XDG_CACHE_HOME (the corpus is read-only)
  # bounded: timeout passes the SIGINT on, and ends it after 60 s anyway
  XDG_CACHE_HOME=$work/xdg timeout -k 5 -s INT 60 "$build/bin/weft" view --serve --port 0 \
    --budget "$3" "$t" > "$out" 2>&1 < /dev/null &
  pid=$!
  while [ $n -lt 300 ] && ! grep -q 'http://' "$out" && kill -0 "$pid" 2>/dev/null; do
    sleep 0.1
    n=$((n + 1))
  done
  kill -INT "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ -f "$t/weft-view.cache" ]; then
    python3 "$here/view_cache_seed.py" "$t/weft-view.cache" "$work/view/$1" ${4:-} ||
      echo "fuzz/run.sh: cannot read $t/weft-view.cache" >&2
    # the smallest also whole (the header's checks; the key: its own)
    [ "$1" != hwc ] || cp "$t/weft-view.cache" "$work/view/$1-file"
  else
    echo "fuzz/run.sh: no cache from $2 ($(head -c 300 "$out"))" >&2
  fi
}
mkdir -p "$work/view"
if [ -x "$build/bin/weft" ] && [ -d "$corpus_src/models" ] && command -v python3 > /dev/null; then
  # bodies of 80, 16 and 14 KB (traces of a few µs): 6 tracks from one chunk (their
  # samples), every track kept, counters (hardware counters) kept
  view_seed mix5 "$corpus_src/models/mix-5/ovni" 2000
  view_seed mix1 "$corpus_src/models/mix-1/ovni" 2000
  view_seed hwc "$corpus_src/models/nosv-hwc/ovni" 2000
  # 4 ms: tracks of several chunks, samples 2^9 ns apart (cut to 16)
  view_seed flush "$corpus_src/v3/flush-auto" 1000 16
else
  echo "fuzz/run.sh: no $build/bin/weft, corpus or python3: fuzz_view_cache starts from nothing" >&2
fi
status=0
for t in fuzz_stream fuzz_meta fuzz_model fuzz_view_cache; do
  bin="$build/fuzz/$t"
  [ -x "$bin" ] || { echo "fuzz/run.sh: missing $bin (configure with CC=clang -DWEFT_FUZZ=ON)" >&2; exit 1; }
  max=65536
  case $t in
    fuzz_stream) dir=$work/stream ;;
    fuzz_model) dir=$work/model ;;
    fuzz_view_cache) dir=$work/view; max=131072 ;; # mix-0's cache: about 60 KB
    *) dir=$work/meta ;;
  esac
  echo "== $t for ${secs}s ($(ls "$dir" | wc -l) seeds)"
  if ! (cd "$build/fuzz-out" && ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$secs" \
        -rss_limit_mb=2048 -max_len=$max -print_final_stats=1 "$dir" 2>&1 | tail -n 25); then
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
