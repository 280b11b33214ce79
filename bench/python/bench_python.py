# SPDX-License-Identifier: MIT
"""bench_python: how fast the Python module reads events into NumPy columns,
against weft_next_batch in C, in one run on one trace.

Writes a synthetic trace (bench_python_c write: 8 streams, 20,000,000 events
by default) into a temporary directory (removed at the end), then takes the
best of 3 runs of each, in turns, over a warm page cache:
  - C: open + weft_next_batch over every event (bench_python_c batch, a
    child process), touching each event's clock, MCV and payload size;
  - Python: weft.open + Trace.batches() (1M-event batches of NumPy columns:
    clocks, MCV bytes, stream, thread, payload bytes and offsets) over
    every event, summing each batch's clocks with NumPy;
and, for scale, a per-event Python loop over the first 1,000,000 events of
the columns (a plain `for` over the clock column), and the line
`python/c ratio: R`, the Python events/s over the C events/s. Then, best
of 3 each:
  - Events.to_pandas() of the first --pandas events (5,800,000) against
    NumPy alone copying the same columns (the event columns and payload
    offsets): `to_pandas/numpy-copy ratio: R` (bar: at most 3);
  - weft.emulate() against `weft emu --paraver -q -o TMP` (a subprocess,
    its output removed before each run) on the ovni trace that
    `bench_emu -g` writes (--emu-events events, 2,000,000), in turns (a
    command line run, then a Python one: a machine shared with other work
    slows both alike), the best of 5 of each: `emulate/CLI ratio: R` (bar:
    at most 1.2), and of their CPU time (user + system, all threads):
    `emulate/CLI CPU ratio: R`.
Usage: bench_python [EVENTS]  (run by the bin/bench_python wrapper)
"""
import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import weft

ap = argparse.ArgumentParser()
ap.add_argument("--c", required=True)
ap.add_argument("--weft", required=True)
ap.add_argument("--bench-emu", required=True)
ap.add_argument("--pandas", type=int, default=5_800_000)
ap.add_argument("--emu-events", type=int, default=2_000_000)
ap.add_argument("events", nargs="?", type=int, default=20_000_000)
a = ap.parse_args()


def c_pass(root):
    out = subprocess.run([a.c, "batch", root], check=True, stdout=subprocess.PIPE).stdout.split()
    return float(out[0]), int(out[1])


def py_pass(root):
    t0 = time.perf_counter()
    n = 0
    s = 0
    with weft.open(root) as t:
        for b in t.batches(1 << 20):
            n += len(b)
            s += int(b["rclock"].sum() & 1)
    return time.perf_counter() - t0, n


def best(f, runs=3):
    out = None
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        t = time.perf_counter() - t0
        out = t if out is None else min(out, t)
    return out


def pandas_ratio(root):
    with weft.open(root) as t:
        ev = t.read(a.pandas)
    keep = [k for k in ev.columns if k != "payload"]
    copy = best(lambda: {k: ev.columns[k].copy() for k in keep})
    pdt = best(ev.to_pandas)
    print(f"Events.to_pandas(), {len(ev)} events: {pdt:.3f} s; NumPy copy of the columns: "
          f"{copy:.3f} s")
    print(f"to_pandas/numpy-copy ratio: {pdt / copy:.2f}")


def emulate_ratio(root):
    gen = os.path.join(root, "emu")
    subprocess.run([a.bench_emu, "-g", gen, "-n", str(a.emu_events)], check=True,
                   stdout=subprocess.DEVNULL)
    trace = os.path.join(gen, "trace")
    out = os.path.join(root, "emu-out")

    def cli():
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([a.weft, "emu", "--paraver", "-q", "-o", out, trace], check=True,
                       timeout=600)

    # the CPU time (user + system, every thread) of the runs too: what the
    # wall ratio is where other processes share the CPUs
    def cpu(who):
        r = resource.getrusage(who)
        return r.ru_utime + r.ru_stime

    def timed(f, who):
        c0, t0 = cpu(who), time.perf_counter()
        f()
        return time.perf_counter() - t0, cpu(who) - c0

    clit = clic = pyt = pyc = float("inf")
    for _ in range(5):
        t, c = timed(cli, resource.RUSAGE_CHILDREN)
        clit, clic = min(clit, t), min(clic, c)
        t, c = timed(lambda: weft.emulate(trace), resource.RUSAGE_SELF)
        pyt, pyc = min(pyt, t), min(pyc, c)
    print(f"weft.emulate(), {a.emu_events} events: {pyt:.3f} s; weft emu --paraver: {clit:.3f} s")
    print(f"emulate/CLI ratio: {pyt / clit:.2f}")
    print(f"CPU time: weft.emulate() {pyc:.3f} s; weft emu --paraver {clic:.3f} s; "
          f"emulate/CLI CPU ratio: {pyc / clic:.2f}")


tmp = tempfile.mkdtemp(prefix="weft-bench-python-")
try:
    subprocess.run([a.c, "write", tmp, str(a.events)], check=True)
    c_best = py_best = None
    for _ in range(3):
        ct, cn = c_pass(tmp)
        pt, pn = py_pass(tmp)
        if cn != a.events or pn != a.events:
            sys.exit(f"bench_python: read {cn} (C) and {pn} (Python) events, wrote {a.events}")
        c_best = ct if c_best is None else min(c_best, ct)
        py_best = pt if py_best is None else min(py_best, pt)
    with weft.open(tmp) as t:
        b = t.read(1_000_000)
    t0 = time.perf_counter()
    s = 0
    for x in b["rclock"]:  # the per-event Python loop
        s += int(x)
    loop = len(b) / (time.perf_counter() - t0)
    c_rate, py_rate = a.events / c_best, a.events / py_best
    print(f"trace: {a.events} events, 8 streams")
    print(f"C weft_next_batch:             {c_rate / 1e6:8.2f} Mevents/s ({c_best:.3f} s)")
    print(f"Python weft batches (NumPy):   {py_rate / 1e6:8.2f} Mevents/s ({py_best:.3f} s)")
    print(f"Python per-event loop (scale): {loop / 1e6:8.2f} Mevents/s")
    print(f"python/c ratio: {py_rate / c_rate:.2f}")
    pandas_ratio(tmp)
    emulate_ratio(tmp)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
