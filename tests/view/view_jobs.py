#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""view_jobs.py - `weft view -j N`: the page made by -j's workers (docs/emu.md,
PARALLEL; docs/view.md), byte for byte the page of -j 1.

Each trace is viewed with -j 1, 2, 3 and 16 (more workers than cores, and
than looms); every page must equal -j 1's byte for byte, the exit status and
stderr be the same (WEFT_EMU_TIMING's lines aside), and WEFT_EMU_TIMING=1's
line say who made it: `weft emu: -j N: K workers, ...` (K = min(N, looms)) or
`weft emu: -j N: serial run (why)`:
  - every multi-loom case of the conformance corpus (v1/ and v3/; those
    weft emu refuses: the same message), and with --from 1ms --to 30ms: by
    workers, but for the cases whose events tie (their reason asserted);
  - the generated 16-loom trace of tests/emu/parallel_emu.py (its user model
    zeta): by workers; with a window; with -a;
  - that trace 30 times longer (each worker's records cut into batches of
    the merge at other places than the serial engine's), under a budget
    that the intervals pass many times (the tracks dropped, their summaries
    built as their intervals arrive): the same page, its "beyond the budget"
    line printed, by workers;
  - a 2-loom trace whose CPU row has two tracks of one size (cpu.running.pid
    and cpu.running.tid: each thread's running spans) that pass the budget
    together near the end: which of the two is dropped, and so which one's
    intervals the page holds, followed the batches while the collection
    looked at the budget after each interval (-j 2's page differed from
    -j 1's); the same page now that it looks when the time moves on;
  - --serve --budget 1 (every track read from its temporary file) on the
    16-loom trace and the 2-loom one: the port line, the page, /tile of every
    channel over every row (the whole run; the first tiles of levels 0 and
    4) and /at of every row at 7 times the same as -j 1's, by workers.
Environment: WEFT_BIN, WEFT_SOURCE_DIR, WEFT_CONFORMANCE_DIR(_DEFAULT).
"""
import json
import os
import re
import struct
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "cli"))
sys.path.insert(0, str(HERE.parent / "emu"))
from jobs_compare import JOBS, compare_jobs, corpus_cases  # noqa: E402
from parallel_emu import gen_trace, SERIAL  # noqa: E402
from serve_util import Server  # noqa: E402
from tracegen import ev, meta, thread_rel, write_stream  # noqa: E402
from wefttest import Checker, weft_bin  # noqa: E402

SRC = Path(os.environ.get("WEFT_SOURCE_DIR", HERE.parents[1]))
ZETA = ["--model", str(SRC / "examples" / "zeta" / "zeta.yaml")]
c = Checker()


def view(args, out):
    """(exit, stderr without the timing lines, the timing lines, stdout,
    {"page": the page} or {} where none was written)."""
    if out.exists():
        out.unlink()
    env = dict(os.environ, WEFT_EMU_TIMING="1")
    p = subprocess.run([weft_bin(), "view", "-o", str(out)] + args, capture_output=True,
                       text=True, timeout=300, env=env)
    lines = p.stderr.splitlines()
    timing = [ln for ln in lines if ln.startswith("weft emu: ") and
              (" CPU " in ln or re.match(r"weft emu: (-j \d+: |\d+ events in )", ln))]
    rest = "\n".join(ln for ln in lines if ln not in timing)
    page = {"page": out.read_bytes()} if out.exists() else {}
    return (p.returncode, rest.replace(str(out), "OUT"), "\n".join(timing),
            p.stdout.replace(str(out), "OUT"), page)


def compare(name, trace, args, tmp, expect, ok=True):
    """expect: ("workers", looms) or ("serial", a regular expression of the
    reason) for every -j > 1; ok: -j 1 must succeed."""
    r1 = compare_jobs(name, lambda j: view(["-j", str(j)] + args + [str(trace)],
                                           tmp / f"j{j}.html"), expect, c.expect, ok)
    c.expect(r1.rc != 0 or len(r1.files.get("page", b"")) > 1000,
             f"{name}: -j 1 wrote no page")
    return r1.out


def gen_tied(root, n=20000, every=20):
    """Loom node0: thread 1111 paused and resumed n times on CPU 0 (100 ns
    apart), thread 2222 running there in one pause of `every`; loom node1:
    one thread, its start and end. pid 1000 and tids of 4 digits: the CPU's
    pid and tid tracks take the same bytes."""
    base = 1_000_000
    t1 = [ev("OHx", base, struct.pack("<iiQ", 0, -1, 0))]
    t2 = [ev("OHx", base + 60, struct.pack("<iiQ", 0, -1, 0)), ev("OHp", base + 80)]
    for i in range(n):
        t1 += [ev("OHp", base + 100 * i + 50), ev("OHr", base + 100 * i + 100)]
        if i % every == 0 and i > 0:
            t2 += [ev("OHr", base + 100 * i + 60), ev("OHp", base + 100 * i + 80)]
    t1.append(ev("OHe", base + 100 * n + 70))
    t2 += [ev("OHr", base + 100 * n + 75), ev("OHe", base + 100 * n + 76)]
    for tid, evs in ((1111, t1), (2222, t2)):
        write_stream(root, thread_rel("node0", 1000, tid),
                     meta(tid, 1000, loom="node0", cpus=((0, 0),), require={"ovni": "1.1.0"}),
                     evs)
    write_stream(root, thread_rel("node1", 1001, 7),
                 meta(7, 1001, loom="node1", cpus=((0, 1),), require={"ovni": "1.1.0"}),
                 [ev("OHx", base + 3, struct.pack("<iiQ", 0, -1, 0)),
                  ev("OHe", base + 100 * n + 77)])


def serve_answers(j, trace, args):
    """--serve -j j --budget 1 (every track from the temporary file): its port
    line (the port left out), GET /, and /tile of every channel over all the
    rows (the whole run at the level of 1024 buckets, its first tiles at
    levels 0 and 4) and /at of every row at times across the run; and
    WEFT_EMU_TIMING's lines."""
    os.environ["WEFT_EMU_TIMING"] = "1"
    try:
        s = Server(weft_bin(), ["--no-cache", "-j", str(j), "--port", "0", "--budget", "1"]
                   + args + [str(trace)])
    finally:
        del os.environ["WEFT_EMU_TIMING"]
    got = {"line": re.sub(r"127\.0\.0\.1:\d+", "PORT", s.line)}
    try:
        st, body = s.request("GET", "/")
        got["/"] = (st, body)
        data = json.loads(body.split(b'type="application/json">')[1].split(b"</script>")[0])
        nrows, dur = len(data["rows"]), data["duration"]
        top = max(0, (dur - 1).bit_length() - 10)
        for ch in range(len(data["chans"])):
            for lv, tiles in ((top, 1), (0, 3), (4, 2)):
                for i in range(tiles):
                    q = f"/tile?c={ch}&r0=0&r1={nrows - 1}&l={lv}&i={i}"
                    got[q] = s.request("GET", q)
            for r in range(nrows):
                for k in range(1, 8):
                    q = f"/at?c={ch}&r={r}&t={dur * k // 8}"
                    got[q] = s.request("GET", q)
    finally:
        rc, err = s.stop()
    got["exit"] = rc
    return got, err


def serve_same(name, trace, args, nlooms):
    """--serve: the same answers whatever -j, made by the workers."""
    ref, _ = serve_answers(1, trace, args)
    c.expect(ref["exit"] == 0 and ref["/"][0] == 200 and len(ref) > 100,
             f"{name} --serve -j 1: {ref['exit']}, {len(ref)} answers")
    c.expect("tracks beyond the budget, read from a temporary file" in ref["line"],
             f"{name} --serve -j 1: the tracks from the file: {ref['line']!r}")
    for j in JOBS:
        got, err = serve_answers(j, trace, args)
        c.eq(sorted(got), sorted(ref), f"{name} --serve -j {j}: the requests")
        bad = [q for q in ref if got.get(q) != ref[q]]
        c.eq(bad[:5], [], f"{name} --serve -j {j}: answers that differ from -j 1's")
        k = min(j, nlooms)
        c.expect(re.search(rf"^weft emu: -j {j}: {k} workers, \d+ events in ", err, re.M),
                 f"{name} --serve -j {j}: not made by {k} workers: {err!r}")


def main():
    with tempfile.TemporaryDirectory(prefix="weft-view-jobs-") as td:
        tmp = Path(td)
        for case, trace, expect in corpus_cases(c.expect, SERIAL):
            compare(case.name, trace, ["-q"], tmp, expect, ok=False)
            compare(case.name + " window", trace, ["-q", "--from", "1ms", "--to", "30ms"], tmp,
                    expect, ok=False)
        gen16 = tmp / "gen16"
        gen_trace(str(gen16), 16)
        compare("gen16", gen16, ["-q"] + ZETA, tmp, ("workers", 16))
        compare("gen16 window", gen16, ["-q", "--from", "1010000", "--to", "1200000"] + ZETA,
                tmp, ("workers", 16))
        compare("gen16 -a", gen16, ["-q", "-a"] + ZETA, tmp, ("workers", 16))
        big = tmp / "big16"
        gen_trace(str(big), 16, iters=1200)
        out = compare("big16 budget", big, ["--budget", "48KiB"] + ZETA, tmp, ("workers", 16))
        c.expect("beyond the budget the page holds the summary" in out,
                 f"big16 budget: the budget is passed: {out!r}")
        shutil.rmtree(big)
        tied = tmp / "tied"
        gen_tied(str(tied))
        out = compare("tied budget", tied, ["--budget", "876kB"], tmp, ("workers", 2))
        c.expect("beyond the budget the page holds the summary" in out,
                 f"tied budget: the budget is passed: {out!r}")
        serve_same("gen16", gen16, ZETA, 16)
        serve_same("tied", tied, [], 2)
    c.done()


if __name__ == "__main__":
    main()
