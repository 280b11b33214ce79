# SPDX-License-Identifier: MIT
"""weft.emulate() against `weft emu --paraver`, on the corpus's v3 and models
cases: each view's interval table equals the intervals the .prv holds (read
here line by line: a value from its record to the next record of the same
row and type, or the end; 0 is null), with the row labels of the .row and
the type and value labels of the .pcf; a trace weft emu refuses raises
weft.Error with weft emu's message; a window as --from/--to."""
import os
import shutil
import sys
import tempfile

from pycommon import Checker, cases, conformance_dir, need_module, run

weft = need_module()
root = conformance_dir()
c = Checker()


def prv_intervals(path):
    recs = {}
    order = []
    duration = None
    with open(path, encoding="ascii") as f:
        for line in f:
            if line.startswith("#"):
                duration = int(line.split("):", 1)[1].split("_ns", 1)[0])
                continue
            p = line.rstrip("\n").split(":")
            if p[0] != "2":
                continue
            row, t = int(p[4]) - 1, int(p[5])
            for k in range(6, len(p), 2):
                key = (row, int(p[k]))
                recs.setdefault(key, []).append((t, int(p[k + 1])))
                order.append(key)
    out = []
    for (row, ty), lst in recs.items():
        for i, (t, v) in enumerate(lst):
            end = lst[i + 1][0] if i + 1 < len(lst) else duration
            if v != 0:
                out.append((row, ty, t, end, v))
    return sorted(out), duration


def table(tl):
    cols = tl.columns
    return sorted(zip(*(cols[k].tolist() for k in ("row", "type", "start", "end", "value"))))


def row_labels(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines):
        if line.startswith("LEVEL THREAD SIZE"):
            return lines[i + 1:i + 1 + int(line.split()[3])]
    return []


ncases = nemu = 0
tmp = tempfile.mkdtemp(prefix="weft-pytest-emu-")
try:
    for case in cases(root, ("v3", "models")):
        name = os.path.relpath(case, root)
        ncases += 1
        out = os.path.join(tmp, "out")
        rc, _, err = run(["emu", "--paraver", "-q", "-o", out, "ovni"], cwd=case)
        os.chdir(case)
        try:
            em = weft.emulate("ovni")
            perr = None
        except weft.Error as e:
            perr = str(e)
        if rc != 0:
            c.expect(perr is not None and ("weft emu: " + perr) in err,
                     f"{name}: error {perr!r} is weft emu's ({err.strip()!r})")
        else:
            c.eq(perr, None, f"{name}: no error")
            if perr is None:
                nemu += 1
                stems = sorted(x[:-4] for x in os.listdir(out) if x.endswith(".prv"))
                c.eq(sorted(em.views), stems, f"{name}: views")
                for v in stems:
                    want, dur = prv_intervals(os.path.join(out, v + ".prv"))
                    tl = em[v]
                    c.eq(table(tl), want, f"{name}: {v}: intervals")
                    c.eq(tl.duration, dur, f"{name}: {v}: duration")
                    c.eq(tl.row_labels, row_labels(os.path.join(out, v + ".row")),
                         f"{name}: {v}: row labels")
                    # named by the .pcf (the reference's: some CPU types have no entry)
                    if len(tl):
                        ty = int(tl["type"][0])
                        c.eq(tl.channel(0), tl.channels.get(ty), f"{name}: {v}: channel")
        shutil.rmtree(out, ignore_errors=True)
    # a window, as weft emu --from/--to
    case = os.path.join(root, "v3", "two-looms")
    if os.path.isdir(case):
        out = os.path.join(tmp, "out")
        rc, _, err = run(["emu", "--paraver", "-q", "-o", out, "--from", "1ms",
                          "--to", "2ms", "ovni"], cwd=case)
        c.eq(rc, 0, "window: weft emu exits 0")
        em = weft.emulate(os.path.join(case, "ovni"), window=("+1000000", "+2000000"))
        for v in ("thread", "cpu"):
            want, dur = prv_intervals(os.path.join(out, v + ".prv"))
            c.eq(table(em[v]), want, f"window: {v}: intervals")
            c.eq(em[v].duration, dur, f"window: {v}: duration")
        shutil.rmtree(out, ignore_errors=True)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
c.expect(nemu >= 40, f"cases emulated ({nemu} of {ncases})")
print(f"{nemu} of {ncases} cases emulated")
c.done()
