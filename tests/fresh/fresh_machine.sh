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
# /dev and /sys, and runs there, as root and in /work/weft, exactly the
# README's two commands (its first two indented lines): the first must install
# what is missing (scripts/install-deps.sh) and build and run the main job, the
# second runs the tests. Prints PASS or FAIL; exits 0 only on PASS.
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
# with apt-get when it is missing. Takes a few minutes (about one here; more on
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

start=$SECONDS
elapsed() { local s=$((SECONDS - start)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
say() { echo "== $me [$(elapsed)] $*"; }

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap (apt-get)"
  if ! { apt-get -qq update && DEBIAN_FRONTEND=noninteractive \
      apt-get -y -qq --no-install-recommends install debootstrap; } >/dev/null 2>&1; then
    echo "$me: cannot install debootstrap (apt-get failed)" >&2
    exit 1
  fi
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
for i in 0 1; do
  say "README command $((i + 1)) in the chroot: ${cmds[i]}"
  t0=$SECONDS
  if run_in "${cmds[i]}"; then
    say "README command $((i + 1)): ok ($((SECONDS - t0)) s)"
  else
    say "README command $((i + 1)): failed ($((SECONDS - t0)) s)"
    result=FAIL
    break
  fi
done
size=$(du -sx "$root" 2>/dev/null | awk '{ printf "%.1f GB", $1 / 1048576 }') || true
say "chroot size: ${size:-?}"
reported=1
say "$result: the README's two commands on a fresh Debian 12 (bookworm) chroot"
[ "$result" = PASS ]
