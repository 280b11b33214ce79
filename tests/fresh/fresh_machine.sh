#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/fresh/fresh_machine.sh [-k] [--head] [--shared DIR] [WORKDIR]
#
# The "fresh machine" check (manual or CI; not a ctest test): builds a Debian 12
# (bookworm) chroot that has only the compiler, make, CMake and Python
# (debootstrap --variant=minbase --include=build-essential,cmake,python3),
# copies this repository into it at /work/weft with the conformance corpus
# beside it (/work/shared/conformance and /work/shared/tools, copied from
# --shared DIR, by default ../shared next to the repository), mounts /proc,
# /dev and /sys, and runs there, as root and in /work/weft:
#   1. scripts/install-deps.sh (what README command 1 starts with): the
#      dependencies, timed on their own;
#   2. README command 1 (its first indented line): must build and run the main
#      job within WEFT_FRESH_CMD1_MAX seconds (default 90) now that the
#      dependencies are there (on a machine loaded by other work, a 1-minute
#      load average above its CPU count, its CPU time must be within that);
#   3. README command 2 (its second indented line): the tests;
#   4. the README's Installing commands (the indented lines after
#      '## Installing'), then, with nothing set: `python3 -c 'import weft'`
#      finds the module under /usr/local, a program built with
#      `cc app.c $(pkg-config --cflags --libs ovni)` runs, `weft version` says
#      the loader finds /usr/local/lib/libovni.so.1, and `man weft-emu` shows
#      the page (man-db is installed for that check only).
# Each step prints its wall and CPU time. Prints PASS or FAIL; exits 0 only
# on PASS.
#
#   -k            keep the chroot (it is removed at the end otherwise)
#   --head        copy the committed HEAD (git archive) instead of the working
#                 tree's files (tracked and untracked, less what .gitignore
#                 names: build*/, ovni/)
#   --shared DIR  where conformance/ and tools/ are (default: REPO/../shared)
#   WORKDIR       where to make the chroot (a new directory inside it; the
#                 default is ${TMPDIR:-/tmp}); it needs about 2 GB
#
# Needs root (re-runs itself through sudo otherwise) and installs debootstrap
# with apt-get when it is missing (apt-get's output is shown if that fails). Takes a few minutes (about one here; more on
# a slow mirror or machine). CI=true is not set inside: the README's commands
# are for users (the corpus is there anyway).
set -euo pipefail

me=fresh_machine.sh
args=("$@")
repo=$(cd "$(dirname "$0")/../.." && pwd)
keep=0
head=0
shared=
base=${TMPDIR:-/tmp}
while [ $# -gt 0 ]; do
  case $1 in
    -k|--keep) keep=1 ;;
    --head) head=1 ;;
    --shared) shared=${2:?--shared needs a directory}; shift ;;
    -h|--help) awk 'NR < 3 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 0 ;;
    -*) echo "$me: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) base=$1 ;;
  esac
  shift
done
shared=${shared:-$repo/../shared}
mirror=http://deb.debian.org/debian
suite=bookworm

if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "$me: needs root (or sudo)" >&2; exit 1; }
  exec sudo "$0" "${args[@]}"
fi

# The README's two commands, as .ci/run takes them.
mapfile -t cmds < <(awk '/^---/ { exit } /^    [^ ]/ { sub(/^    /, ""); print; if (++n == 2) exit }' "$repo/README.md")
if [ ${#cmds[@]} -ne 2 ] || [ -z "${cmds[0]}" ] || [ -z "${cmds[1]}" ]; then
  echo "$me: cannot find the README's two commands (its first two indented lines)" >&2
  exit 1
fi
# The Installing section's commands: the first indented block after its title.
mapfile -t install_cmds < <(awk '/^## Installing/ { on = 1; next } on && /^    [^ ]/ { sub(/^    /, ""); print; got = 1; next } on && got { exit } on && /^## / { exit }' "$repo/README.md")
if [ ${#install_cmds[@]} -eq 0 ] || ! printf '%s\n' "${install_cmds[@]}" | grep -q 'cmake --install'; then
  echo "$me: cannot find the README's Installing commands (an indented block with cmake --install after '## Installing')" >&2
  exit 1
fi
cmd1_max=${WEFT_FRESH_CMD1_MAX:-90}

start=$SECONDS
elapsed() { local s=$((SECONDS - start)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
say() { echo "== $me [$(elapsed)] $*"; }

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap (apt-get)"
  aptlog=$(mktemp "${TMPDIR:-/tmp}/weft-fresh-apt-XXXXXX.log")
  if ! { apt-get -q update && DEBIAN_FRONTEND=noninteractive \
      apt-get -y -q --no-install-recommends install debootstrap; } >"$aptlog" 2>&1; then
    tail -n 30 "$aptlog" >&2
    echo "$me: cannot install debootstrap: apt-get failed (its output above; all of it in $aptlog)" >&2
    exit 1
  fi
  rm -f "$aptlog"
fi

mkdir -p "$base"
work=$(mktemp -d "$base/weft-fresh-XXXXXX")
root=$work/root
mounts=()
reported=0

cleanup() {
  local rc=$? i ok=1
  [ "$reported" = 1 ] || [ "$rc" = 0 ] || echo "== $me [$(elapsed)] FAIL (stopped, exit $rc)"
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" 2>/dev/null \
      || { echo "$me: cannot unmount ${mounts[i]}" >&2; ok=0; }
  done
  mounts=()
  # Never remove through a mount point that is still there.
  if awk -v r="$root/" 'index($2 "/", r) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
    echo "$me: something is still mounted under $root: not removing $work" >&2
    ok=0
  fi
  if [ "$keep" = 1 ] || [ "$ok" = 0 ]; then
    echo "$me: the chroot is kept in $root"
  else
    rm -rf --one-file-system "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "$me: interrupted" >&2; exit 130' INT
trap 'echo "$me: terminated" >&2; exit 143' TERM

say "debootstrap $suite (minbase + build-essential cmake python3) from $mirror into $root"
if ! debootstrap --variant=minbase --include=build-essential,cmake,python3 "$suite" "$root" "$mirror" \
    >"$work/debootstrap.log" 2>&1; then
  tail -n 30 "$work/debootstrap.log" >&2
  cp "$work/debootstrap.log" "$work.debootstrap.log"
  echo "$me: FAIL: debootstrap failed (log: $work.debootstrap.log)" >&2
  exit 1
fi
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true

# The machine is fresh: none of weft's own dependencies is there.
for p in pkg-config libjansson-dev libyaml-dev libcmocka-dev libopenmpi-dev; do
  if chroot "$root" dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed; then
    echo "$me: FAIL: $p is already in the fresh chroot" >&2
    exit 1
  fi
done

mkdir -p "$root/work/weft" "$root/work/shared"
if [ "$head" = 1 ]; then
  say "copying the committed HEAD of $repo (git archive)"
  git -C "$repo" archive --format=tar HEAD | tar -x -C "$root/work/weft"
elif git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
  say "copying the working tree of $repo (tracked and untracked files, less .gitignore's)"
  (cd "$repo" && git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
    | tar -c --null -T - -f -) | tar -x -C "$root/work/weft"
else
  say "copying $repo (less build*/ and ovni/)"
  tar -c -C "$repo" --exclude='./build*' --exclude=./ovni --exclude=./.git -f - . | tar -x -C "$root/work/weft"
fi
for d in conformance tools; do
  if [ -d "$shared/$d" ]; then
    cp -a "$shared/$d" "$root/work/shared/"
  else
    echo "$me: warning: no $shared/$d: the tests that read it will skip" >&2
  fi
done

mnt() { mount "$@" && mounts+=("${@: -1}"); }
mnt -t proc proc "$root/proc" 2>/dev/null || mnt --bind /proc "$root/proc"
mnt --bind /sys "$root/sys"
mnt --bind /dev "$root/dev"
[ -d /dev/pts ] && mnt --bind /dev/pts "$root/dev/pts"
mkdir -p "$root/dev/shm" && mnt -t tmpfs -o mode=1777,size=512m tmpfs "$root/dev/shm"

run_in() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c 'cd /work/weft && exec bash -c "$1"' bash "$1" </dev/null
}

result=PASS
times=()
# step NAME COMMAND: runs COMMAND in the chroot, timed (wall and CPU: user +
# system of everything it ran); a failure fails the run. Sets last (wall
# seconds), last_cpu (CPU seconds) and last_load (the highest 1-minute load
# average seen, at its start or end).
load1() { awk '{ print $1 }' /proc/loadavg; }
step() {
  local name=$1 cmd=$2 t0=$SECONDS tf rc=0 l0 l1 wall user sys
  tf=$(mktemp "${TMPDIR:-/tmp}/weft-fresh-time-XXXXXX")
  say "$name: $cmd"
  l0=$(load1)
  { TIMEFORMAT='%R %U %S'; time run_in "$cmd" 2>&3; } 3>&2 2>"$tf" || rc=$?
  l1=$(load1)
  read -r wall user sys <"$tf" || true
  rm -f "$tf"
  last=$((SECONDS - t0))
  last_cpu=$(awk -v u="${user:-0}" -v s="${sys:-0}" 'BEGIN { printf "%.0f", u + s }')
  last_load=$(awk -v a="$l0" -v b="$l1" 'BEGIN { print (a > b ? a : b) }')
  local what="$last s (CPU $last_cpu s, load average $l0 -> $l1)"
  if [ "$rc" = 0 ]; then
    say "$name: ok, $what"
    times+=("$name: $what")
    return 0
  fi
  say "$name: FAILED (exit $rc), $what"
  times+=("$name: failed after $what")
  result=FAIL
  return 1
}

# The program of README's "Tracing a program", built with pkg-config: it
# traces one thread and says which libovni it runs on.
app='cat > /tmp/app.c <<"EOC"
#define _GNU_SOURCE
#include <ovni.h>
#include <stdio.h>
#include <unistd.h>
int main(void)
{
	const char *v, *c;
	ovni_version_get(&v, &c);
	ovni_proc_init(1, "fresh", getpid());
	ovni_thread_init(gettid());
	ovni_thread_free();
	ovni_proc_fini();
	printf("app: traced with libovni %s (commit %s)\n", v, c);
	return 0;
}
EOC
cd /tmp && rm -rf ovni && cc app.c $(pkg-config --cflags --libs ovni) -o app && ./app && test -d ovni'

checks() {
  step "dependencies (scripts/install-deps.sh)" scripts/install-deps.sh || return
  step "README command 1" "${cmds[0]}" || return
  # Within cmd1_max seconds. On a machine that other work loads (a 1-minute
  # load average above its CPU count), the wall time is not the build's:
  # then its CPU time must be within the limit (what one idle core would
  # take at most; two take less).
  local ncpu
  ncpu=$(nproc 2>/dev/null || echo 1)
  if [ "$last" -le "$cmd1_max" ]; then
    say "README command 1: $last s, within $cmd1_max s"
  elif awk -v l="$last_load" -v n="$ncpu" 'BEGIN { exit !(l > n) }' && [ "$last_cpu" -le "$cmd1_max" ]; then
    say "README command 1: $last s, but the machine was loaded (load average $last_load on $ncpu CPUs):" \
        "its CPU time, $last_cpu s, is within $cmd1_max s"
  else
    say "README command 1: FAILED: $last s (CPU $last_cpu s), more than $cmd1_max s (WEFT_FRESH_CMD1_MAX)"
    result=FAIL
    return
  fi
  step "README command 2" "${cmds[1]}" || return
  local joined
  joined=$(printf '%s && ' "${install_cmds[@]}")
  step "README Installing" "${joined% && }" || return
  step "python3 -c 'import weft'" \
    "cd / && python3 -c 'import weft, sys; print(weft.__file__); sys.exit(not weft.__file__.startswith(\"/usr/local/\"))'" \
    || return
  step "a program built with pkg-config ovni" "$app" || return
  step "weft version (the loader finds libovni)" \
    "weft version && weft version | grep -qx 'loader: a program linked with -lovni (no RUNPATH) loads /usr/local/lib/libovni.so.1'" \
    || return
  step "man-db (for the next check only)" \
    "DEBIAN_FRONTEND=noninteractive apt-get -y -q --no-install-recommends install man-db >/tmp/man-db.log 2>&1 || { tail -n 30 /tmp/man-db.log; exit 1; }" \
    || return
  step "man weft-emu" \
    "MANPAGER=cat MANWIDTH=80 man weft-emu > /tmp/man.txt && head -n 8 /tmp/man.txt && grep -q 'emulate the trace into Paraver and Perfetto timelines' /tmp/man.txt && MANPAGER=cat man ovniemu | grep -q 'SYNOPSIS'" \
    || return
}
checks || true
for t in "${times[@]}"; do
  say "time: $t"
done
size=$(du -sx "$root" 2>/dev/null | awk '{ printf "%.1f GB", $1 / 1048576 }') || true
say "chroot size: ${size:-?}"
reported=1
say "$result: the README's commands and install on a fresh Debian 12 (bookworm) chroot"
[ "$result" = PASS ]
