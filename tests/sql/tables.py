#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tables.py - every table of `weft sql TRACE -o FILE` against the trace.

For each case of the corpus that emulates (the runtime-model cases of
models/ whose reference run succeeded, with -a where the reference had it,
a set of v3 cases and the v1 cases):
  - event: as many rows as `weft check` counts events, and per MCV exactly
    the counts of `weft top` (the same lines, formatted as top prints them);
    the raw clock, MCV, stream and payload of every event as `weft dump -x`
    prints them;
    ids 0..n-1 in time order, time = clock - the first clock, clock =
    rclock + the stream's clock offset, the trace table's first clock and
    duration as `weft check` prints them;
  - stream, loom, process, thread: the counts of `weft check`'s summary;
  - thread and cpu: the labels of the reference's thread.row and cpu.row,
    in row order (the CPUs with one vCPU per loom; for v1, their number);
  - no index; an interval of both the raw layer and the thread view is
    one row of interval_data (the raw_interval and interval views agree),
    or, its layers too far apart to be merged (at most 1 in 100), two;
  - interval (models/ and v3 cases): exactly the intervals the reference's
    thread.prv and cpu.prv make under the documented rule (docs/sql.md),
    per view, row, Paraver type, start, end and value, and the label of each
    value as the reference's .pcf labels it.
The databases are written into a temporary directory, removed at the end.
"""
import os
import re
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import Checker, conformance_dir, run  # noqa: E402

V3_CASES = ["attrs", "clock-offsets-edited", "clock-ties", "flush-auto", "jumbo", "marks",
            "multi-thread", "payload-sizes", "single-basic", "split-cpus", "two-looms",
            "two-procs", "suite-nosv-task-types", "suite-nanos6-task-types",
            "suite-mpi-func", "suite-ovni-sort", "suite-ovni-libovni-mark",
            "suite-tampi-ss-comm"]

V1_CASES = ["single", "single-1.4.1", "two-looms", "two-procs"]

CHECK = re.compile(r"valid: (\d+) streams?, (\d+) looms?, (\d+) process(?:es)?, (\d+) threads?, "
                   r"(\d+) events?(?:, from (-?\d+) to (-?\d+) ns \(span (\d+) ns\))?")


def row_labels(path):
    """The labels of a .row file's THREAD level."""
    out, on = [], False
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("LEVEL THREAD"):
                on = True
                continue
            if on:
                if line == "" or line.startswith("LEVEL"):
                    break
                out.append(line)
    return out


def prv_intervals(path, view):
    """The intervals of a .prv under the rule of docs/sql.md: per (row,
    type), a value holds from its record to the next change; 0 ends it;
    intervals of no length are dropped, and touching intervals of the same
    value are one; what is open ends at the duration."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    dur = int(re.search(r"\):(\d+)_ns:", lines[0]).group(1))
    cur = {}
    done = {}
    for line in lines[1:]:
        if not line.startswith("2:"):
            continue
        f = line.split(":")
        row, t = int(f[4]) - 1, int(f[5])
        for k in range(6, len(f) - 1, 2):
            key = (row, int(f[k]))
            v = int(f[k + 1])
            s, cv = cur.get(key, (0, 0))
            if v == cv:
                continue
            if cv != 0:
                done.setdefault(key, []).append([s, t, cv])
            cur[key] = (t, v)
    for key, (s, v) in cur.items():
        if v != 0:
            done.setdefault(key, []).append([s, dur, v])
    out = set()
    for key, ivs in done.items():
        merged = []
        for iv in ivs:
            if iv[1] <= iv[0]:
                continue
            if merged and merged[-1][1] == iv[0] and merged[-1][2] == iv[2]:
                merged[-1][1] = iv[1]
            else:
                merged.append(iv)
        for s, e, v in merged:
            out.add((view, key[0], key[1], s, e, v))
    return out


def pcf_labels(path):
    """(type, value) -> label of a .pcf."""
    out = {}
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i, types = 0, []
    while i < len(lines):
        if lines[i] == "EVENT_TYPE":
            types = []
            i += 1
            while i < len(lines) and lines[i].strip() and lines[i] != "VALUES":
                types.append(int(lines[i].split()[1]))
                i += 1
            continue
        if lines[i] == "VALUES":
            i += 1
            while i < len(lines) and lines[i].strip():
                v, _, lab = lines[i].partition(" ")
                for ty in types:
                    out[(ty, int(v))] = lab.strip()
                i += 1
            continue
        i += 1
    return out


def top_lines(db):
    rows = db.execute("SELECT mcv, count(*) AS n FROM event GROUP BY mcv "
                      "ORDER BY n DESC, mcv").fetchall()
    return "".join(f"{m} {n:>10}\n" for m, n in rows)


def check_case(c, name, case_dir, tmp, models, flags):
    trace = os.path.join(case_dir, "ovni")
    out = os.path.join(tmp, name.replace("/", "_") + ".db")
    code, so, se = run(["sql"] + flags + [trace, "-o", out])
    # the emulator's warnings (as weft emu's), and nothing else
    c.eq((code, so, [x for x in se.splitlines() if not x.startswith("weft sql: warning: ")]),
         (0, b"", []), f"{name}: weft sql -o")
    if code != 0:
        return
    db = sqlite3.connect(out)
    try:
        count = lambda t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # noqa: E731
        code, top, _ = run(["top", trace])
        c.eq(top_lines(db), top.decode(), f"{name}: events per MCV as weft top counts them")
        ne = sum(int(x.split()[-1]) for x in top.decode().splitlines())
        c.eq(count("event"), ne, f"{name}: event rows as weft top counts")
        # every event as weft dump -x prints it (clock, MCV, stream, payload bytes)
        code, dump, _ = run(["dump", "-x", trace])
        want = sorted(tuple(x.lstrip().split("  ", 3)) for x in dump.decode().splitlines())
        got = sorted((str(rc), mcv, path, "".join(":" + b[k:k + 2].lower()
                                                  for k in range(0, len(b), 2)))
                     for rc, mcv, path, b in db.execute(
                         "SELECT e.rclock, e.mcv, s.path, hex(e.payload) FROM event e "
                         "JOIN stream s ON s.id = e.stream"))
        c.eq(got == want, True, f"{name}: events as weft dump -x prints them")
        code, so, _ = run(["check", trace])
        m = CHECK.search(so.decode() if code == 0 else "")
        # weft check refuses events of models no stream requires (-a cases)
        c.expect(m is not None or flags == ["-a"], f"{name}: weft check summary")
        if m is not None:
            ns, nl, np_, nt, ne = (int(m.group(k)) for k in range(1, 6))
            c.eq([count(t) for t in ("stream", "loom", "process", "thread", "event")],
                 [ns, nl, np_, nt, ne], f"{name}: stream, loom, process, thread, event rows")
        c.eq(db.execute("SELECT min(id), max(id) FROM event").fetchone(),
             (0, ne - 1) if ne else (None, None), f"{name}: event ids")
        if m is not None and m.group(6) is not None:
            c.eq(db.execute("SELECT first_clock, duration, nevents FROM trace").fetchone(),
                 (int(m.group(6)), int(m.group(8)), ne), f"{name}: trace table")
        c.eq(db.execute("SELECT count(*) FROM event e JOIN trace t JOIN stream s ON "
                        "s.id = e.stream WHERE e.time != e.clock - t.first_clock OR "
                        "e.clock != e.rclock + s.clock_offset").fetchone()[0], 0,
             f"{name}: event time and clocks")
        c.eq(db.execute("SELECT count(*) FROM event e JOIN stream s ON s.id = e.stream "
                        "WHERE e.thread IS NOT s.thread").fetchone()[0], 0,
             f"{name}: event thread = its stream's thread")
        c.eq(db.execute("SELECT count(*) FROM (SELECT time, lag(time) OVER (ORDER BY id) "
                        "AS prev FROM event) WHERE time < prev").fetchone()[0],
             0, f"{name}: events in time order")
        emu = os.path.join(case_dir, "emu")
        # (the v1 cases' emu/ is ovniemu 1.0.0's, whose labels differ: its counts)
        mine = [r[0] for r in db.execute("SELECT label FROM thread ORDER BY id")]
        want = row_labels(os.path.join(emu, "thread.row"))
        v1 = name.startswith("v1/")
        c.eq(len(mine) if v1 else mine, len(want) if v1 else want, f"{name}: thread labels")
        mine = [r[0] for r in db.execute("SELECT label FROM cpu ORDER BY id")]
        want = row_labels(os.path.join(emu, "cpu.row"))
        c.eq(len(mine) if v1 else mine, len(want) if v1 else want, f"{name}: cpu labels")
        c.eq(db.execute("SELECT count(*) FROM cpu WHERE NOT virtual").fetchone()[0],
             db.execute("SELECT sum(ncpus) FROM loom").fetchone()[0], f"{name}: physical CPUs")
        c.eq(db.execute("SELECT name FROM sqlite_schema WHERE type = 'index' AND name NOT "
                        "LIKE 'sqlite_autoindex_%'").fetchall(), [], f"{name}: no index")
        if not models:
            return
        # an interval of the raw layer and the thread view is one row of
        # interval_data, and each row is at least one interval of a layer
        both = db.execute("SELECT count(*) FROM (SELECT thread, channel, start, dur, value "
                          "FROM raw_interval INTERSECT SELECT row, channel, start, dur, value "
                          "FROM interval WHERE view = 'thread')").fetchone()[0]
        # the flags: dur_flags % F, F = 4 * (the CPUs + 1) (docs/sql.md);
        # an interval whose layers came too far apart to be merged is a row
        # of the raw layer only and one of the thread view only
        f = 4 * (db.execute("SELECT count(*) FROM cpu").fetchone()[0] + 1)
        once = db.execute(f"SELECT count(*) FROM interval_data WHERE dur_flags % {f} & 3 = 0"
                          ).fetchone()[0]
        apart = db.execute(
            f"SELECT count(*) FROM interval_data a JOIN interval_data b ON b.track = a.track "
            f"AND b.start = a.start AND b.dur_flags / {f} = a.dur_flags / {f} "
            f"AND b.value = a.value WHERE a.dur_flags % {f} & 3 = 2 "
            f"AND b.dur_flags % {f} & 3 = 1").fetchone()[0]
        c.eq((once + apart, apart * 100 <= both), (both, True),
             f"{name}: an interval of the raw layer and the thread view stored once "
             f"(two rows for {apart})")
        c.eq(db.execute(f"SELECT count(*) FROM interval_data WHERE dur_flags % {f} = 3"
                        ).fetchone()[0], 0, f"{name}: no row of no layer")
        stored = db.execute("SELECT count(*) FROM interval_data").fetchone()[0]
        shown = db.execute("SELECT (SELECT count(*) FROM interval) + "
                           "(SELECT count(*) FROM raw_interval)").fetchone()[0]
        c.eq(stored + both <= shown, True, f"{name}: rows stored {stored}, intervals {shown}")
        got = set(db.execute("SELECT i.view, i.row, c.type, i.start, i.end, i.value FROM "
                             "interval i JOIN channel c ON c.id = i.channel"))
        for view in ("thread", "cpu"):
            want = prv_intervals(os.path.join(emu, f"{view}.prv"), view)
            mine = {x for x in got if x[0] == view}
            c.eq(sorted(mine - want)[:5], [], f"{name}: {view} intervals not in the reference")
            c.eq(sorted(want - mine)[:5], [], f"{name}: {view} intervals missing")
            labels = pcf_labels(os.path.join(emu, f"{view}.pcf"))
            bad = [(ty, v, lab, labels.get((ty, v))) for ty, v, lab in db.execute(
                "SELECT DISTINCT c.type, i.value, i.label FROM interval i JOIN channel c "
                "ON c.id = i.channel WHERE i.view = ?", (view,))
                if (ty, v) in labels and labels[(ty, v)] != (lab or "").strip()]
            c.eq(bad[:5], [], f"{name}: {view} interval labels as the reference's .pcf")
    finally:
        db.close()


def main():
    corpus = conformance_dir()
    c = Checker()
    cases = []
    with open(os.path.join(corpus, "models", "INDEX.txt"), encoding="utf-8") as f:
        for line in f:
            p = line.split()
            if not p or p[0].startswith("#") or p[-1] != "0":
                continue
            cases.append(("models/" + p[0], os.path.join(corpus, "models", p[0]), True,
                          ["-a"] if "-a" in p else []))
    for v in V3_CASES:
        # suite-ovni-sort: ovniemu emulated the unsorted trace; weft sorts on read
        cases.append(("v3/" + v, os.path.join(corpus, "v3", v), v != "suite-ovni-sort", []))
    for v in V1_CASES:
        cases.append(("v1/" + v, os.path.join(corpus, "v1", v), False, []))
    with tempfile.TemporaryDirectory(prefix="weft-sql-tables-") as tmp:
        for name, d, models, flags in cases:
            check_case(c, name, d, tmp, models, flags)
            for fn in os.listdir(tmp):
                os.unlink(os.path.join(tmp, fn))
    c.done()


if __name__ == "__main__":
    main()
