#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_rt_outside: install libovni into a temporary prefix, build a program
# against it with pkg-config only (no project include path), run it with
# the installed library and check its trace and the library's ABI with an
# independent reader (check.py).
# usage: run.sh CMAKE BUILD_DIR SOURCE_DIR PYTHON WEFT_VERSION
set -euo pipefail
CMAKE=$1 BUILD=$2 SRC=$3 PYTHON=$4 WEFT_VERSION=$5
CC=${CC:-cc}

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-outside-XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

"$CMAKE" --install "$BUILD" --prefix "$prefix" --component ovni >"$work/install.log" ||
	{ cat "$work/install.log"; echo "run.sh: cmake --install failed" >&2; exit 1; }

flags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs ovni)
echo "run.sh: pkg-config flags: $flags"
case "$flags" in *"$SRC"*) echo "run.sh: pkg-config points into the source tree" >&2; exit 1;; esac
# shellcheck disable=SC2086
"$CC" -std=c11 -O2 -Wall -Wextra -Werror -pthread "$SRC/tests/rt/outside/user_prog.c" $flags -o "$work/user_prog"

# weft's own API (weft/rt.h, WEFT_RT_1) from the installed header: a
# setting by call wins over the environment (a 256-byte buffer, so that the
# 64 events below need automatic flushes: OF[ events in the stream).
cat >"$work/rt_prog.c" <<'PROG'
#include <weft/rt.h>
#include <unistd.h>
int main(void)
{
	weft_rt_set("WEFT_BUFSIZE", "256");
	ovni_proc_init(1, "outside", getpid());
	ovni_thread_init(getpid());
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "OB.");
	for (int i = 0; i < 64; i++) {
		ovni_ev_set_clock(&ev, ovni_clock_now());
		ovni_ev_emit(&ev);
	}
	ovni_thread_free();
	ovni_proc_fini();
	return 0;
}
PROG
# shellcheck disable=SC2086
"$CC" -std=c11 -O2 -Wall -Wextra -Werror "$work/rt_prog.c" $flags -o "$work/rt_prog"
(cd "$work" && env -u OVNI_TMPDIR LD_LIBRARY_PATH="$prefix/lib" OVNI_TRACEDIR="$work/trace-rt" WEFT_BUFSIZE=65536 ./rt_prog)
rt_obs=$(find "$work/trace-rt" -name stream.obs)
if ! LC_ALL=C grep -q 'OF\[' "$rt_obs"; then
	echo "run.sh: rt_prog's weft_rt_set(\"WEFT_BUFSIZE\", \"256\") did not win over WEFT_BUFSIZE=65536 (no flush in $rt_obs)" >&2
	exit 1
fi
echo "run.sh: weft/rt.h: weft_rt_set won over the environment"

# The same program linked with the static libovni.a (and the rest as
# pkg-config --static says): it must not load any libovni.so.
sflags=$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --static --libs ovni)
echo "run.sh: pkg-config --static flags: $sflags"
# shellcheck disable=SC2086
"$CC" -std=c11 -O2 -Wall -Wextra -Werror -pthread "$SRC/tests/rt/outside/user_prog.c" \
	$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags ovni) \
	-Wl,-Bstatic -lovni -Wl,-Bdynamic ${sflags//-lovni/} -o "$work/user_prog_static"
if ldd "$work/user_prog_static" | grep -q libovni; then
	echo "run.sh: user_prog_static loads a libovni.so" >&2
	ldd "$work/user_prog_static" >&2
	exit 1
fi
# (nm into a file: grep -q stops reading at the match, and nm writing on
# into the closed pipe would fail the pipeline under pipefail)
nm "$work/user_prog_static" >"$work/nm.txt"
grep -q ' T ovni_proc_init$' "$work/nm.txt" ||
	{ echo "run.sh: ovni_proc_init is not in user_prog_static" >&2; exit 1; }

# The program must load the installed library, not the build tree's.
resolved=$(LD_LIBRARY_PATH=$prefix/lib ldd "$work/user_prog" | awk '/libovni.so.1/ {print $3}')
if [ "$resolved" != "$prefix/lib/libovni.so.1" ]; then
	echo "run.sh: user_prog loads libovni.so.1 from '$resolved', not $prefix/lib" >&2
	exit 1
fi

# A 64 KiB buffer so that automatic flushes happen many times.
(cd "$work" && env -u OVNI_TMPDIR LD_LIBRARY_PATH="$prefix/lib" OVNI_TRACEDIR="$work/trace" WEFT_BUFSIZE=65536 ./user_prog)

"$PYTHON" "$SRC/tests/rt/outside/check.py" "$work/trace" "$prefix" "$WEFT_VERSION"

# The statically linked program writes the same kind of trace.
(cd "$work" && env -u OVNI_TMPDIR OVNI_TRACEDIR="$work/trace-static" WEFT_BUFSIZE=65536 ./user_prog_static)
"$PYTHON" "$SRC/tests/rt/outside/check.py" "$work/trace-static" "$prefix" "$WEFT_VERSION"
