# SPDX-License-Identifier: MIT
"""examples/busy_time on conformance traces: its exact output.

clock-ties has synthetic clocks, so its expected output can be checked by
hand: each thread runs from OHx at 1000 to OHe at 5000 (alive 4000 ns) and is
paused from OHp at 3000 to OHr at 4000 + i (paused 1000 + i ns).
usage: example_busy_time.py BUSY_TIME_BINARY EXAMPLE_SOURCE_DIR"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wefttest import Checker, conformance_dir  # noqa: E402


def expected(srcdir, case):
    """The expected output, without the SPDX line at the top of the file."""
    text = open(os.path.join(srcdir, "expected", case + ".txt"), encoding="utf-8").read()
    first, rest = text.split("\n", 1)
    assert first.startswith("# SPDX-License-Identifier:")
    return rest


def main():
    binary, srcdir = sys.argv[1], sys.argv[2]
    root = conformance_dir()
    c = Checker()
    for case in ("clock-ties", "two-procs"):
        want = expected(srcdir, case)
        p = subprocess.run([binary, os.path.join(root, "v3", case, "ovni")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        c.eq((p.returncode, p.stderr), (0, ""), f"busy_time {case}: exit code and stderr")
        c.eq(p.stdout, want, f"busy_time {case}: output")
    lines = expected(srcdir, "clock-ties").split("\n")
    for i, line in enumerate(lines[1:5]):
        f = line.split()
        c.eq((f[3], f[4]), ("4000", str(1000 + i)), f"clock-ties thread {i}: alive and paused by hand")
    p = subprocess.run([binary, os.path.join(root, "bad", "bad-magic", "ovni")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    c.eq(p.returncode, 1, "busy_time on a corrupt trace fails")
    c.expect(p.stderr.startswith("busy_time: ") and "bad magic" in p.stderr, "busy_time error message")
    c.done()


main()
