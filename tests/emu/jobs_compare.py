# SPDX-License-Identifier: MIT
"""jobs_compare.py - what the tests of -j N's workers share
(tests/emu/parallel_emu.py, tests/sql/parallel.py, tests/view/view_jobs.py):
the multi-loom cases of the conformance corpus, and the comparison of a run
with -j 2, 3 and 16 (more workers than cores, and than looms) against -j 1's.

A test gives compare_jobs a function run(j) that runs its command with -j j
and returns (exit status, stderr without WEFT_EMU_TIMING's lines, those
lines, stdout, {file name: bytes}), and the function that records a check,
check(cond, what): wefttest.Checker.expect, or a function of the test's own.
"""
import os
import re
from collections import namedtuple
from pathlib import Path

JOBS = (2, 3, 16)

Run = namedtuple("Run", "rc err timing out files")


def corpus():
    """The conformance corpus's directory, or None where it is absent."""
    d = os.environ.get("WEFT_CONFORMANCE_DIR") or os.environ.get("WEFT_CONFORMANCE_DIR_DEFAULT")
    return Path(d) if d and Path(d).is_dir() else None


def corpus_cases(check, serial, least=15):
    """Yields (case directory, trace, expect) for every case of the corpus (v1/
    and v3/) whose trace has two looms or more, in name order; expect is
    ("serial", serial[name]) for the cases named in serial (a regular
    expression of the reason), ("workers", the number of looms) otherwise.
    Once they are all taken (a loop over them that does not break), checks
    that there were at least `least`; without the corpus, yields none and
    says so."""
    c = corpus()
    if c is None:
        print("conformance corpus not found: the generated traces only")
        return
    n = 0
    for case in sorted(c.glob("v*/*")):
        trace = case / "ovni"
        looms = list(trace.glob("loom.*"))
        if len(looms) < 2:
            continue
        why = serial.get(case.name)
        yield case, trace, ("serial", why) if why else ("workers", len(looms))
        n += 1
    check(n >= least, f"only {n} multi-loom corpus cases found")


def _size(data):
    return None if data is None else len(data)


def compare_jobs(name, run, expect, check, ok=True, jobs=JOBS):
    """Runs run(1), then run(j) for every j of jobs, and checks that each
    gives -j 1's exit status, stderr, stdout and files (the same names, each
    byte for byte); where -j 1 succeeded, that WEFT_EMU_TIMING's lines say
    who made each run: expect ("workers", looms) wants `weft emu: -j J: K
    workers, E events in ...` (K = min(J, looms)) and no serial run,
    ("serial", a regular expression of the reason) wants `weft emu: -j J:
    serial run (reason)`, None nothing. ok: -j 1 must succeed. Returns -j
    1's Run."""
    ref = Run(*run(1))
    check(ref.rc == 0 or not ok, f"{name}: -j 1 exit {ref.rc}: {ref.err!r}")
    for j in jobs:
        got = Run(*run(j))
        check(got.rc == ref.rc, f"{name} -j {j}: exit {got.rc}, -j 1 exit {ref.rc}")
        check(got.err == ref.err, f"{name} -j {j}: stderr {got.err!r}, -j 1 {ref.err!r}")
        check(got.out == ref.out, f"{name} -j {j}: stdout {got.out!r}, -j 1 {ref.out!r}")
        check(sorted(got.files) == sorted(ref.files),
              f"{name} -j {j}: files {sorted(got.files)} vs {sorted(ref.files)}")
        for k, data in ref.files.items():
            check(got.files.get(k) == data, f"{name} -j {j}: {k} differs from -j 1's (byte "
                  f"for byte: {_size(got.files.get(k))} bytes, -j 1 {_size(data)})")
        if expect is None or ref.rc != 0:
            continue  # a trace refused: the serial run says why
        if expect[0] == "workers":
            k = min(j, expect[1])
            check(re.search(rf"^weft emu: -j {j}: {k} workers, \d+ events in ", got.timing,
                            re.M) is not None and "serial run" not in got.timing,
                  f"{name} -j {j}: not made by {k} workers: {got.timing!r}")
        else:
            check(re.search(rf"^weft emu: -j {j}: serial run \(({expect[1]})\)$", got.timing,
                            re.M) is not None,
                  f"{name} -j {j}: not serial ({expect[1]}): {got.timing!r}")
    return ref
