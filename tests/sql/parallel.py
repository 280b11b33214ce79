#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""parallel.py - the SQLite output made by `-j N`'s workers (docs/emu.md,
PARALLEL; docs/sql.md): `weft sql -j N -o DB` and `weft emu -f sqlite -j N`
write the same database file, byte for byte, whatever N (1, 2, 3, 16: more
workers than cores, and than looms), and WEFT_EMU_TIMING=1's line says the
workers made it (`weft emu: -j N: K workers, ...`, K = min(N, looms)), not
`serial run`:
  - every multi-loom case of the conformance corpus (v1/, v3/) with
    `weft emu -f sqlite -q`, and v3/two-looms with `weft sql` (a case whose
    streams have events at one clock: serial, the reason asserted);
  - the generated 16-loom trace of tests/emu/parallel_emu.py (zeta's model)
    with `weft sql`, `weft sql -a`, `weft emu -f sqlite` with the Paraver
    output beside it (its files the same too), with -b (the breakdown, not
    stored: the database the same), and with the summary (stdout the same);
  - the same trace with 400 iterations a thread (many batches of the serial
    run's records and events, cut elsewhere than the merge's);
  - 2 looms of 200 threads, each on a CPU of its own: more tracks than a
    page holds (where their rows go among the events' pages shows);
  - 8400 records at one time (more than a batch of the merge);
  - a window from T0 (--from, with and without -b): by the workers (the
    state at T0's records merged in the serial run's order); with --to:
    serial (`--to with the SQLite output`), the same file; every loom's events at the same clocks: serial (ties).
The database is checked to hold events and intervals (a comparison of two
empty files would prove nothing). Every subprocess has a time limit; the
temporary directory is removed at the end.
Environment: WEFT_BIN, WEFT_SOURCE_DIR, WEFT_CONFORMANCE_DIR(_DEFAULT).
"""
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "cli"))
sys.path.insert(0, str(HERE.parent / "emu"))
from wefttest import Checker, weft_bin  # noqa: E402
import parallel_emu  # noqa: E402  (its trace generators)
from jobs_compare import compare_jobs, corpus, corpus_cases  # noqa: E402
import tracegen  # noqa: E402

TIMEOUT = 120
SRC = Path(os.environ.get("WEFT_SOURCE_DIR", HERE.parents[1]))
ZETA = SRC / "examples" / "zeta" / "zeta.yaml"
TIES = "events of two streams at one clock|records of two workers at one time"
SERIAL = {"suite-tampi-ss-comm": TIES}
TIMING = re.compile(r"weft emu: (-j \d+: |worker \d+ CPU |\d+ events in )")

ck = Checker()


def build(kind, trace, j, args, out):
    """weft sql -o out/timeline.db (kind "sql") or weft emu -o out -f sqlite
    (kind "emu"), with -j j: (exit, stderr without the timing lines, the
    timing lines, stdout, {file name: bytes})."""
    shutil.rmtree(out, ignore_errors=True)
    if kind == "sql":
        out.mkdir(parents=True)
        cmd = [weft_bin(), "sql", "-j", str(j), "-o", str(out / "timeline.db")]
    else:
        cmd = [weft_bin(), "emu", "-j", str(j), "-o", str(out), "-f", "sqlite"]
    p = subprocess.run(cmd + args + [str(trace)], capture_output=True, text=True,
                       timeout=TIMEOUT, env=dict(os.environ, WEFT_EMU_TIMING="1"),
                       stdin=subprocess.DEVNULL)
    lines = p.stderr.splitlines()
    timing = [ln for ln in lines if TIMING.match(ln)]
    rest = [ln.replace(str(out), "OUT") for ln in lines if ln not in timing]
    files = {}
    if out.is_dir():
        for f in sorted(out.rglob("*")):
            if f.is_file():
                files[str(f.relative_to(out))] = f.read_bytes()
    return (p.returncode, "\n".join(rest), "\n".join(timing),
            p.stdout.replace(str(out), "OUT"), files)


def counts(db):
    """(events, interval rows, tracks) of a database file."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return tuple(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                     for t in ("event_data", "interval_data", "track"))
    finally:
        con.close()


def compare(name, kind, trace, args, tmp, expect, ok=True, tracks=1):
    """expect: ("workers", nlooms) or ("serial", reason) for every -j > 1;
    tracks: the least number of tracks -j 1's database must hold."""
    r1 = compare_jobs(name, lambda j: build(kind, trace, j, args, tmp / f"j{j}"), expect,
                      ck.expect, ok)
    if r1.rc == 0:
        ck.expect("timeline.db" in r1.files, f"{name}: -j 1 wrote no database: "
                  f"{sorted(r1.files)}")
        if "timeline.db" in r1.files:
            ev, iv, tr = counts(tmp / "j1" / "timeline.db")
            ck.expect(ev > 0 and iv > 0 and tr >= tracks, f"{name}: -j 1's database holds "
                      f"{ev} events, {iv} intervals, {tr} tracks")


def gen_wide(root, nlooms=2, nthreads=200, iters=6):
    """nlooms looms of nthreads threads, each on a CPU of its own, with
    zeta's events (as parallel_emu.gen_trace's): more tracks than a page of
    the database holds, so that where their rows go among the events' pages
    shows in the file; clocks distinct across streams."""
    for L in range(nlooms):
        pid = 1000 + L
        cpus = tuple((k, L * nthreads + k) for k in range(nthreads))
        for k in range(nthreads):
            tid = pid * 1000 + k
            s = L * nthreads + k

            def c(step):
                return 1_000_000 + step * 10_000 + s
            evs = [tracegen.ev("OHx", c(0), struct.pack("<iiQ", k, -1, 0)),
                   tracegen.ev("ZPs", c(1))]
            step = 2
            for it in range(iters):
                evs.append(tracegen.ev("ZR[", c(step), struct.pack("<I", 1 + (it + k) % 3)))
                evs.append(tracegen.ev("ZWi", c(step + 1), struct.pack("<Q", 64 * (it + k + 1))))
                evs.append(tracegen.ev("OHp", c(step + 2)))
                evs.append(tracegen.ev("OHr", c(step + 3 + (it + k) % 3)))
                evs.append(tracegen.ev("ZR]", c(step + 6), struct.pack("<I", 1 + (it + k) % 3)))
                step += 7
            evs += [tracegen.ev("ZPe", c(step)), tracegen.ev("OHe", c(step + 1))]
            m = tracegen.meta(tid, pid, loom=f"node{L:02d}", cpus=cpus,
                              require={"ovni": "1.1.0", "zeta": "1.0.0"})
            tracegen.write_stream(root, tracegen.thread_rel(f"node{L:02d}", pid, tid), m, evs)


def main():
    with tempfile.TemporaryDirectory(prefix="weft-sqlpar-") as td:
        tmp = Path(td)
        c = corpus()
        for case, trace, expect in corpus_cases(ck.expect, SERIAL):
            compare(case.name, "emu", trace, ["-q"], tmp, expect, ok=False)
        if c:
            compare("two-looms sql", "sql", c / "v3" / "two-looms" / "ovni", [], tmp,
                    ("workers", 2))
        m = ["--model", str(ZETA)]
        work = ("workers", 16)
        trace = tmp / "gen16"
        parallel_emu.gen_trace(str(trace), 16)
        compare("gen16 sql", "sql", trace, m, tmp, work)
        compare("gen16 sql -a", "sql", trace, m + ["-a"], tmp, work)
        compare("gen16 emu", "emu", trace, m + ["-q"], tmp, work)
        compare("gen16 emu paraver", "emu", trace, m + ["--paraver", "-q"], tmp, work)
        compare("gen16 emu -b", "emu", trace, m + ["-q", "-b"], tmp, work)
        compare("gen16 emu summary", "emu", trace, m, tmp, work)
        compare("gen16 window", "emu", trace, m + ["-q", "--from", "1010000", "--to",
                                                   "1200000"], tmp,
                ("serial", "--to with the SQLite output"))
        compare("gen16 window --from", "emu", trace, m + ["-q", "--from", "1010000"], tmp, work)
        compare("gen16 window --from -b", "emu", trace, m + ["-q", "-b", "--from", "1010000"],
                tmp, work)
        big = tmp / "big"
        parallel_emu.gen_trace(str(big), 16, iters=400)
        compare("big sql", "sql", big, m, tmp, work)
        shutil.rmtree(big)
        # more tracks than a page: their rows written among the events'
        # pages in the serial run would show in the file
        wide = tmp / "wide"
        gen_wide(str(wide))
        compare("wide sql", "sql", wide, m, tmp, ("workers", 2), tracks=2000)
        compare("wide emu -b", "emu", wide, m + ["-q", "-b"], tmp, ("workers", 2), tracks=2000)
        shutil.rmtree(wide)
        burst = tmp / "burst"
        parallel_emu.gen_burst(str(burst))
        compare("burst", "sql", burst, m, tmp, ("workers", 2))
        ties = tmp / "ties"
        parallel_emu.gen_trace(str(ties), 16, ties=True)
        compare("ties", "sql", ties, m, tmp, ("serial", TIES))
    ck.done()


if __name__ == "__main__":
    main()
