#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# scripts/install-deps.sh [--ci] [--dry-run]
#
# Installs, with apt-get, the Debian packages weft needs to build, run and
# test that are not installed yet, after saying which; does nothing (and says
# so) when all are there. Runs apt-get through sudo when not root.
#
#   (default)   build-essential cmake pkg-config libjansson-dev libyaml-dev
#               libcmocka-dev python3 python3-dev python3-numpy python3-pandas
#               libsqlite3-dev libcairo2-dev poppler-utils
#               libopenmpi-dev openmpi-bin, and the tools
#               the tests call: util-linux (unshare, setpriv), gzip, diffutils,
#               binutils (nm, readelf)
#   --ci        also clang libclang-rt-14-dev (sanitizer and fuzz builds),
#               chromium chromium-driver (weft view's page tests, tests/view)
#               babeltrace2 (weft export ctf's test, tests/export), and
#               libotf2-trace-dev otf2-tools python3-otf2 (weft export
#               otf2, an optional part, and its test); the same as
#               WEFT_DEPS_CI=1
#   --dry-run   only say what is missing (exit 0), install nothing
#
# Exits non-zero, with a message, when apt-get fails or a package is still
# missing afterwards.
set -euo pipefail

me=install-deps.sh
ci=${WEFT_DEPS_CI:-0}
dry=0
for a in "$@"; do
  case $a in
    --ci) ci=1 ;;
    -n|--dry-run) dry=1 ;;
    -h|--help) awk 'NR < 3 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"; exit 0 ;;
    *) echo "$me: unknown option '$a' (try --help)" >&2; exit 2 ;;
  esac
done

pkgs=(
  build-essential cmake pkg-config       # compiler, make, CMake, pkg-config
  libjansson-dev libyaml-dev             # libweft/weft: JSON metadata, model descriptions
  libcmocka-dev python3                  # the tests
  python3-dev python3-numpy              # the Python module weft (python/, docs/python.md)
  python3-pandas                         # its to_pandas() tests (tests/python/test_pandas.py)
  libsqlite3-dev                         # weft sql: the trace as a SQLite database
  libcairo2-dev poppler-utils            # weft view's pictures (cairo); their tests (pdftoppm)
  libopenmpi-dev openmpi-bin             # MPI clock-sync tool; its tests need mpirun
  util-linux gzip diffutils binutils     # tools the tests call (unshare, setpriv, nm, readelf)
)
[ "$ci" = 1 ] && pkgs+=(clang libclang-rt-14-dev  # sanitizer and fuzz builds
                        chromium chromium-driver   # weft view's page tests (tests/view)
                        babeltrace2                # weft export ctf read back (tests/export)
                        libotf2-trace-dev          # weft export otf2 (optional: built when found)
                        otf2-tools python3-otf2)   # its archives read back (tests/export)

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "$me: needs a Debian-like system (dpkg-query, apt-get); install by hand: ${pkgs[*]}" >&2
  exit 1
fi

installed() {
  [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}

missing=()
for p in "${pkgs[@]}"; do
  installed "$p" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "$me: nothing to install: all ${#pkgs[@]} packages weft needs are installed (${pkgs[*]})"
  exit 0
fi

if [ "$dry" = 1 ]; then
  echo "$me: would install (apt-get): ${missing[*]}"
  exit 0
fi

if [ "$(id -u)" = 0 ]; then
  as_root=(env)
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo env)
else
  echo "$me: not root and no sudo: as root, run: apt-get install ${missing[*]}" >&2
  exit 1
fi

echo "$me: installing (apt-get): ${missing[*]}"
log=$(mktemp "${TMPDIR:-/tmp}/weft-install-deps-XXXXXX.log")
apt() {
  if ! "${as_root[@]}" DEBIAN_FRONTEND=noninteractive apt-get "$@" >>"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "$me: 'apt-get $*' failed (full output: $log)" >&2
    exit 1
  fi
}
apt -q update
apt -q -y --no-install-recommends install "${missing[@]}"

still=()
for p in "${missing[@]}"; do
  installed "$p" || still+=("$p")
done
if [ ${#still[@]} -ne 0 ]; then
  echo "$me: still not installed after apt-get: ${still[*]} (apt-get output: $log)" >&2
  exit 1
fi
rm -f "$log"
echo "$me: installed ${#missing[@]} package(s): ${missing[*]}"
