# SPDX-License-Identifier: MIT
"""weft.emulate()'s raw layer (em.raw) row by row and in its order: by start,
then row, then Paraver type (docs/python.md). The module places each raw
interval when it opens and puts the intervals of one start in order once a
later start comes (python/_weft.c, raw_group_done); this checks what that
must give. A synthetic trace of 20 threads, each on its CPU, with three mark
types: at one clock every thread pushes type 3 then type 1 and sets type 2
(their types come in the order written); the even threads change type 1 at
1200 (an end and a start at one time), thread 1 pushes and pops type 1 at
1250 (the pushed value held for no time: no interval; the value under it
goes on from 1250), the odd threads pop type 3 at 1300, thread 3 sets type 2
to 8 at 1400 and thread 2 pushes type 3 at the trace's last clock (no
interval; the trace is written with and without that push, which makes the
module drop at the close what it had placed). The full run's raw layer is
exactly `weft sql`'s raw_interval (joined to its thread and channel), sorted
by start, row and type; with window=("+150", None) (T0 at clock 1150: every
held value starts at 0, 60 intervals of one start) it is the full run's
clipped to the window, in the same order; no interval is of no length."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from pycommon import Checker, need_module, weft_bin

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.dont_write_bytecode = True
from tracegen import ev, meta, thread_rel, write_stream  # noqa: E402

NTH = 20
weft = need_module()
c = Checker()


def run(args):
    """weft with args, bounded: (exit code, stdout text, stderr text)."""
    p = subprocess.run([weft_bin()] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def mark(mcv, value, mtype, clock):
    return ev(mcv, clock, struct.pack("<qi", value, mtype))


def make_trace(root, last_push):
    cpus = tuple((i, i) for i in range(NTH))
    for t in range(1, NTH + 1):
        m = meta(t, 1, cpus=cpus)
        m["ovni"]["mark"] = {"1": {"title": "One", "chan_type": "stack"},
                             "2": {"title": "Two", "chan_type": "single"},
                             "3": {"title": "Three", "chan_type": "stack"}}
        evs = [ev("OHx", 1000, struct.pack("<iiQ", t - 1, -1, 0)),
               mark("OM[", t, 3, 1100), mark("OM[", 10 + t, 1, 1100), mark("OM=", 7, 2, 1100)]
        if t % 2 == 0:
            evs += [mark("OM]", 10 + t, 1, 1200), mark("OM[", 99, 1, 1200)]
        if t == 1:
            evs += [mark("OM[", 5, 1, 1250), mark("OM]", 5, 1, 1250)]
        if t % 2 == 1:
            evs += [mark("OM]", t, 3, 1300)]
        if t == 3:
            evs += [mark("OM=", 8, 2, 1400)]
        if t == 2 and last_push:
            evs += [mark("OM[", 42, 3, 2000)]
        evs.append(ev("OHe", 2000))
        write_stream(os.path.join(root, "ovni"), thread_rel("vm", 1, t), m, evs)
    return os.path.join(root, "ovni")


def rows(tl):
    """(start, row, type, end, value) of each interval, in tl's order."""
    col = tl.columns
    return list(zip(*(col[k].tolist() for k in ("start", "row", "type", "end", "value"))))


def sql_raw(trace, row_of):
    rc, out, err = run(["sql", "--csv", trace,
                        "SELECT t.label, c.type, r.start, r.end, r.value FROM raw_interval r "
                        "JOIN thread t ON t.id = r.thread JOIN channel c ON c.id = r.channel"])
    c.eq((rc, err), (0, ""), "sql: exit status")
    got = []
    for line in out.splitlines()[1:]:
        label, ty, start, end, value = line.split(",")
        got.append((int(start), row_of[label.strip()], int(ty), int(end), int(value)))
    return sorted(got)


def check(trace, what):
    em = weft.emulate(trace)
    raw = rows(em.raw)
    row_of = {label: i for i, label in enumerate(em.raw.row_labels)}
    c.eq(len(row_of), NTH, f"{what}: one row per thread")
    c.eq(raw, sql_raw(trace, row_of), f"{what}: weft sql's raw_interval, by start, row, type")
    c.eq(len(raw), 3 * NTH + NTH // 2 + 2, f"{what}: the intervals")
    c.eq(sum(1 for r in raw if r[0] == 100), 3 * NTH, f"{what}: 60 intervals start at 100")
    c.eq(raw[3 * NTH:3 * NTH + NTH // 2], [(200, r, 101, 1000, 99) for r in range(1, NTH, 2)],
         f"{what}: the even threads' type 1 from 1200")
    c.eq(raw[-2:], [(250, 0, 101, 1000, 11), (400, 2, 102, 1000, 8)],
         f"{what}: 1250 (only the value under the push of no length), 1400")
    c.expect(all(r[3] > r[0] for r in raw), f"{what}: no interval of no length")

    win = weft.emulate(trace, window=("+150", None))
    wraw = rows(win.raw)
    clipped = sorted((max(s - 150, 0), r, t, e - 150, v) for s, r, t, e, v in raw if e > 150)
    c.eq(wraw, clipped, f"{what}, window +150: the full run's clipped, by start, row, type")
    c.eq(sum(1 for r in wraw if r[0] == 0), 3 * NTH, f"{what}, window +150: 60 start at T0")
    c.expect(all(r[3] > r[0] for r in wraw), f"{what}, window +150: no interval of no length")


tmp = tempfile.mkdtemp(prefix="weft-pytest-raw-")
try:
    check(make_trace(os.path.join(tmp, "a"), False), "trace")
    check(make_trace(os.path.join(tmp, "b"), True), "trace with a push at its last clock")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
c.done()
