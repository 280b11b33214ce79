#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/nosv/run.sh - the whole-program cost of weft's libovni against the
# reference ovni's, on a real runtime: nOS-V's own test programs at
# instrumentation level 3, the same binaries run with LD_LIBRARY_PATH
# pointing at one libovni.so.1 or the other, in turns (A B A B ...).
#
#   bench/nosv/run.sh NOSV_BUILD WEFT_PREFIX REF_PREFIX [RUNS [TEST ...]]
#
#   NOSV_BUILD   a built nOS-V tree, configured with --with-ovni (either
#                library) and its tests built (`make check TESTS=`): its
#                .libs/libnosv.so and tests/.libs/TEST.test are used
#   WEFT_PREFIX  an install prefix of weft's libovni
#                (`cmake --install BUILD --component ovni --prefix P`)
#   REF_PREFIX   an install prefix of the reference ovni 1.14
#   RUNS         runs of each library per test (default 10)
#   TEST         nOS-V tests, without .test (default: the thread-heavy ones,
#                basic-join basic-multi-pause basic-mutex basic-init-procs)
#
# Environment: BENCH_DIR, where the traces are written (default: a new
# directory under /var/tmp; the file system matters: give one on the disk you
# care about, not a tmpfs, unless that is what you measure; its type is
# printed). BENCH_TIMEOUT, seconds per run (default 120).
#
# Each run: a fresh trace directory, nOS-V's shared memory under a name of
# its own (shared_memory.name, so that runs never share a nOS-V instance,
# nor with anything else on the machine), NOSV_CONFIG_OVERRIDE
# "instrumentation.version=ovni,ovni.level=3"; timed by /usr/bin/time
# (user, system, wall). Then the trace's streams are counted (nOS-V starts a
# varying number of threads) and it is deleted: at most one trace is on disk
# at any time. Output: one line per test with the median user, system and
# wall seconds of each library, then the ratios weft/reference taken pair by
# pair (CPU = user + system, and wall) as min / median / max, and the load
# average before and after: 6 lines per test and 4 more whatever RUNS is,
# plus a line for each run that failed.
#
# Do not run two of these (or any other nOS-V program with the same
# shared_memory.name) at once. A run that times out is killed; the
# processes it forked (basic-init-procs forks 512) may outlive it: the
# script says so and names them by the test's path.
set -u

usage() {
	echo "usage: $0 NOSV_BUILD WEFT_PREFIX REF_PREFIX [RUNS [TEST ...]]" >&2
	exit 2
}
[ $# -ge 3 ] || usage
NOSV=$(cd "$1" 2>/dev/null && pwd) || { echo "$0: no directory '$1'" >&2; exit 2; }
WEFT=$(cd "$2" 2>/dev/null && pwd) || { echo "$0: no directory '$2'" >&2; exit 2; }
REF=$(cd "$3" 2>/dev/null && pwd) || { echo "$0: no directory '$3'" >&2; exit 2; }
RUNS=${4:-10}
shift 3
[ $# -gt 0 ] && shift
case $RUNS in '' | *[!0-9]*) echo "$0: RUNS '$RUNS' is not a number" >&2; exit 2 ;; esac
[ "$RUNS" -ge 1 ] && [ "$RUNS" -le 100 ] || { echo "$0: RUNS must be 1 to 100" >&2; exit 2; }
TESTS=("$@")
[ ${#TESTS[@]} -gt 0 ] || TESTS=(basic-join basic-multi-pause basic-mutex basic-init-procs)
TIMEOUT=${BENCH_TIMEOUT:-120}

for p in "$WEFT" "$REF"; do
	[ -e "$p/lib/libovni.so.1" ] || { echo "$0: no $p/lib/libovni.so.1" >&2; exit 2; }
done
[ -e "$NOSV/.libs/libnosv.so" ] || { echo "$0: no $NOSV/.libs/libnosv.so (build nOS-V first)" >&2; exit 2; }
for t in "${TESTS[@]}"; do
	[ -x "$NOSV/tests/.libs/$t.test" ] || { echo "$0: no $NOSV/tests/.libs/$t.test (make check TESTS=)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "$0: needs /usr/bin/time (GNU time)" >&2; exit 2; }

WORK=$(mktemp -d "${BENCH_DIR:-/var/tmp}/weft-nosv.XXXXXX") || exit 1
SHM=weftbench$$
cleanup() {
	rm -rf "$WORK"
	rm -f /dev/shm/"$SHM"*
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "trace directory: $WORK ($(df -T "$WORK" | awk 'NR == 2 {print $2}') file system)"
echo "weft: $WEFT/lib/libovni.so.1; reference: $REF/lib/libovni.so.1; $RUNS runs each, in turns"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# one LIB TEST: appends "user sys wall streams rc" to $WORK/TEST.LIB.
one() {
	local lib=$1 t=$2 prefix
	[ "$lib" = weft ] && prefix=$WEFT || prefix=$REF
	local dir=$WORK/trace
	rm -rf "$dir"
	mkdir -p "$dir"
	(
		cd "$dir" || exit 1
		NOSV_CONFIG=$NOSV/nosv.toml \
		NOSV_CONFIG_OVERRIDE="shared_memory.name=$SHM,shared_memory.isolation_level=user,instrumentation.version=ovni,ovni.level=3" \
		LD_LIBRARY_PATH=$prefix/lib:$NOSV/.libs OVNI_TRACEDIR=$dir/ovni \
		/usr/bin/time -f '%U %S %e' -o "$WORK/time" \
			timeout -k 5 "$TIMEOUT" "$NOSV/tests/.libs/$t.test" >/dev/null 2>&1
	)
	local rc=$?
	local n
	n=$(find "$dir" -name stream.obs 2>/dev/null | wc -l)
	echo "$(tail -n 1 "$WORK/time") $n $rc" >>"$WORK/$t.$lib"
	rm -rf "$dir"
	rm -f /dev/shm/"$SHM"*
	if [ "$rc" -ne 0 ]; then
		echo "  $t with $lib: exit status $rc"
		if pgrep -f "$NOSV/tests/.libs/$t.test" >/dev/null 2>&1; then
			echo "  processes of $NOSV/tests/.libs/$t.test are left running"
		fi
	fi
}

for t in "${TESTS[@]}"; do
	: >"$WORK/$t.weft"
	: >"$WORK/$t.ref"
	one weft "$t" # warm-up, not counted
	one ref "$t"
	: >"$WORK/$t.weft"
	: >"$WORK/$t.ref"
	for ((i = 0; i < RUNS; i++)); do
		one weft "$t"
		one ref "$t"
	done
	# Medians of each library; ratios pair by pair (run i of weft over run
	# i of the reference).
	paste -d' ' "$WORK/$t.weft" "$WORK/$t.ref" | awk -v t="$t" '
		function med(a, n,   i, j, x) {
			for (i = 2; i <= n; i++) {
				x = a[i]
				for (j = i - 1; j >= 1 && a[j] > x; j--)
					a[j + 1] = a[j]
				a[j + 1] = x
			}
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		function mm(a, n,   i, lo, hi) {
			lo = hi = a[1]
			for (i = 2; i <= n; i++) {
				if (a[i] < lo) lo = a[i]
				if (a[i] > hi) hi = a[i]
			}
			return sprintf("%.3f / %.3f / %.3f", lo, med(a, n), hi)
		}
		{
			n++
			wu[n] = $1; ws[n] = $2; ww[n] = $3; wn[n] = $4
			ru[n] = $6; rs[n] = $7; rw[n] = $8; rn[n] = $9
			cpu[n] = (ru[n] + rs[n] > 0) ? ($1 + $2) / (ru[n] + rs[n]) : 0
			wall[n] = $8 > 0 ? $3 / $8 : 0
			if ($5 != 0 || $10 != 0) bad++
		}
		END {
			printf "%s (%d pairs%s)\n", t, n, bad ? sprintf(", %d with a failed run", bad) : ""
			printf "  weft:      user %.3f  sys %.3f  wall %.3f  streams %d (medians)\n", med(wu, n), med(ws, n), med(ww, n), med(wn, n)
			printf "  reference: user %.3f  sys %.3f  wall %.3f  streams %d (medians)\n", med(ru, n), med(rs, n), med(rw, n), med(rn, n)
			printf "  weft/reference CPU (user+sys) min / median / max: %s\n", mm(cpu, n)
			printf "  weft/reference wall           min / median / max: %s\n", mm(wall, n)
		}'
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
