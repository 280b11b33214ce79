#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pgo_train.py - the training workload of the profile-guided build.

cmake/pgo_train.cmake runs `bench_emu -g DIR -n N -c CPUS` to write its
traces, then weft on them. Checked here: the traces of -g have the layout -c
asks for and weft emu --lint accepts them; the bad arguments of -c and -g get
their exact message and exit code; the training script refuses to run
without its variables and stops, naming the command, its scratch directory
removed, when a step fails.
"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

WEFT = os.environ["WEFT_BIN"]
BENCH = os.environ["BENCH_EMU"]
CMAKE = os.environ["CMAKE_COMMAND"]
SCRIPT = os.environ["PGO_TRAIN_SCRIPT"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}")


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=120)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "gen"
        r = run(BENCH, "-g", str(d), "-n", "20000", "-c", "2")
        check(r.returncode == 0, f"bench_emu -g: exit {r.returncode}: {r.stderr}")
        lines = r.stdout.splitlines()
        check(len(lines) == 2 and
              re.fullmatch(re.escape(f"{d}/trace") + r": \d+ events, 4 threads on 2 CPUs",
                           lines[0]) is not None and
              re.fullmatch(re.escape(f"{d}/rt-trace") +
                           r": \d+ events \(\d+ tasks\), 4 threads on 2 CPUs", lines[1])
              is not None, f"bench_emu -g output: {lines}")
        for name in ("trace", "rt-trace"):
            threads = sorted(p.name for p in (d / name / "loom.bench" / "proc.1000").iterdir())
            check(threads == [f"thread.{1000 + t}" for t in range(4)],
                  f"{name}: threads {threads}")
            out = Path(tmp) / f"out-{name}"
            r = run(WEFT, "emu", "--paraver", "-q", "--lint", "-o", str(out), str(d / name))
            check(r.returncode == 0, f"weft emu --lint {name}: exit {r.returncode}: {r.stderr}")
            check((out / "thread.prv").stat().st_size > 0 if r.returncode == 0 else False,
                  f"{name}: no thread.prv")
        # -g into a directory that has its traces already
        r = run(BENCH, "-g", str(d), "-n", "100")
        check(r.returncode == 1 and r.stderr == f"bench_emu: {d}/trace: File exists\n",
              f"bench_emu -g twice: exit {r.returncode}, {r.stderr!r}")
        r = run(BENCH, "-g", str(Path(tmp) / "no" / "such"), "-n", "100")
        check(r.returncode == 1 and
              r.stderr == f"bench_emu: {tmp}/no/such: No such file or directory\n",
              f"bench_emu -g in a missing parent: exit {r.returncode}, {r.stderr!r}")
        for c in ("0", "33", "x"):
            r = run(BENCH, "-c", c, "-g", str(Path(tmp) / "c"))
            check(r.returncode == 2 and r.stderr == "bench_emu: -c takes 1 to 32 CPUs\n",
                  f"bench_emu -c {c}: exit {r.returncode}, {r.stderr!r}")
        check(not (Path(tmp) / "c").exists(), "bench_emu wrote a trace after a bad -c")

        # the training script
        work = Path(tmp) / "work"
        prof = Path(tmp) / "prof"
        r = run(CMAKE, f"-DPROFILE={prof}", f"-DWORK={work}", "-P", SCRIPT)
        # (CMake wraps its messages: compared with the white space folded)
        msg = " ".join(r.stderr.split())
        check(r.returncode != 0 and "pgo_train.cmake: -DGEN=... is required" in msg,
              f"training without GEN: exit {r.returncode}, {msg!r}")
        gen = Path(tmp) / "nogen"
        r = run(CMAKE, f"-DGEN={gen}", f"-DPROFILE={prof}", f"-DWORK={work}", "-P", SCRIPT)
        msg = " ".join(r.stderr.split())
        check(r.returncode != 0 and
              "profile-guided build: the training step failed (No such file or directory): "
              f"{gen}/bin/bench_emu -g {work} -n 2000000 -c 3 (configure with -DWEFT_PGO=OFF "
              "to build without a profile)" in msg,
              f"training with a missing build: exit {r.returncode}, {msg!r}")
        check(not work.exists(), "the training left its scratch directory")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok: bench_emu -g traces accepted by weft emu --lint, bad -c/-g refused, "
          "the training script's refusals")
    return 0


if __name__ == "__main__":
    sys.exit(main())
