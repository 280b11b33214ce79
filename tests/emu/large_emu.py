#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""large_emu.py - `weft emu --paraver` on a trace large enough to cycle the
emulator's record batches and its writer thread many times (label mt: also run
under ThreadSanitizer in CI).

A thread alternates OHp/OHr K times (with a mark push/pop and a flush pair
inside each round). The records a round writes do not depend on K, so the
number of lines of thread.prv and cpu.prv is a + b*K: a and b are measured on
K = 10 and K = 20, and the large run (K = 60000, ~360000 events) must match the
prediction exactly, with record times non-decreasing and the last record and
header duration equal to the OHe time. A lost, repeated or reordered batch
breaks one of these.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from cli_emu import rounds_trace  # noqa: E402

WEFT = os.environ["WEFT_BIN"]


def trace(root, k):
    return rounds_trace(root, k, flush=True)


def emulate(tmp, k):
    root = tmp / f"k{k}"
    end = trace(root / "ovni", k)
    out = root / "out"
    r = subprocess.run([WEFT, "emu", "--paraver", "-q", "-o", str(out), str(root / "ovni")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL k={k}: weft emu exited {r.returncode}: {r.stderr}")
    files = {}
    for name in ("thread.prv", "cpu.prv"):
        lines = (out / name).read_text().splitlines()
        files[name] = lines
    return end, files


def record_time(line):
    return int(line.split(":")[5])


def main():
    with tempfile.TemporaryDirectory(prefix="weft-emu-large-") as tmp:
        tmp = Path(tmp)
        _, f10 = emulate(tmp, 10)
        _, f20 = emulate(tmp, 20)
        K = 60000
        end, big = emulate(tmp, K)
        bad = 0
        for name in ("thread.prv", "cpu.prv"):
            n10, n20 = len(f10[name]), len(f20[name])
            b = (n20 - n10) // 10
            a = n10 - 10 * b
            want, got = a + b * K, len(big[name])
            if got != want or b <= 0:
                print(f"FAIL {name}: {got} lines, expected {want} (a={a}, b={b})")
                bad += 1
            recs = [line for line in big[name][1:] if line and line[0] in "12"]
            times = [record_time(x) for x in recs]
            if any(t1 > t2 for t1, t2 in zip(times, times[1:])):
                print(f"FAIL {name}: record times go backwards")
                bad += 1
            if times and times[-1] != end:
                print(f"FAIL {name}: last record at {times[-1]}, OHe at {end}")
                bad += 1
            head = big[name][0]
            dur = head.split("):", 1)[1].split("_ns", 1)[0] if "):" in head else ""
            if not head.startswith("#Paraver") or not dur.isdigit() or int(dur) != end:
                print(f"FAIL {name}: header {big[name][0]!r} lacks duration {end}_ns")
                bad += 1
        if bad:
            return 1
        print(f"ok: {K} rounds, thread.prv {len(big['thread.prv'])} lines, "
              f"cpu.prv {len(big['cpu.prv'])} lines")
        return 0


if __name__ == "__main__":
    sys.exit(main())
