# SPDX-License-Identifier: MIT
"""The raw and shown layers agree across the outputs (docs/emu.md, THE
CHANNEL CATALOGUE). A synthetic trace: thread 1 on CPU 0 pushes value 5
(label "Queue") on mark type 7 ("Wait", a stack, view act) at 1100, is
Paused from 1200 to 1400 and from 1500 to 1700, and pops it at 1800. The
time the mark held the value, raw (the model's write, paused or not), is
700 ns from `weft sql` (raw_interval), weft.emulate() (.raw), the Perfetto
slices of the mark's track (perfetto.pftrace decoded) and the summary line
of `weft emu`; the time shown (masked while the thread is Paused) is 300 ns
from `weft sql` (interval), weft.emulate() (["thread"]) and the Paraver
thread view (thread.prv). All of them name the channel ovni.mark.7."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from pycommon import Checker, need_module, weft_bin

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "emu"))
sys.dont_write_bytecode = True
from tracegen import ev, meta, thread_rel, write_stream  # noqa: E402
from protobuf_wire import fields, text  # noqa: E402

RAW, SHOWN = 700, 300

weft = need_module()
c = Checker()


def run(args):
    """weft with args, bounded: (exit code, stdout text, stderr text)."""
    p = subprocess.run([weft_bin()] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def mark(mcv, value, mtype, clock):
    return ev(mcv, clock, struct.pack("<qi", value, mtype))


def make_trace(root):
    m = meta(1, 1)
    m["ovni"]["mark"] = {"7": {"title": "Wait", "chan_type": "stack",
                               "labels": {"5": "Queue"}}}
    write_stream(os.path.join(root, "ovni"), thread_rel("vm", 1, 1), m, [
        ev("OHx", 1000, struct.pack("<iiQ", 0, -1, 0)),
        mark("OM[", 5, 7, 1100),
        ev("OHp", 1200), ev("OHr", 1400),
        ev("OHp", 1500), ev("OHr", 1700),
        mark("OM]", 5, 7, 1800),
        ev("OHe", 2000),
    ])
    return os.path.join(root, "ovni")


def sql_sum(trace, table, where=""):
    rc, out, err = run(["sql", "--csv", trace,
                        f"SELECT c.name, sum(i.dur) FROM {table} i JOIN channel c "
                        "ON c.id = i.channel WHERE c.name = 'ovni.mark.7' AND i.value = 5 "
                        "AND i.label = 'Queue'" + where])
    c.eq((rc, err), (0, ""), f"sql {table}: exit status")
    return out


def py_sum(tl):
    ty = [t for t, n in tl.channels.items() if n == "ovni.mark.7"]
    c.eq(len(ty), 1, f"python {tl.name}: one type named ovni.mark.7")
    cols = tl.columns
    return sum(int(e) - int(s) for s, e, t, v in zip(cols["start"], cols["end"], cols["type"],
                                                        cols["value"])
               if ty and int(t) == ty[0] and int(v) == 5
               and tl.value_labels.get(int(t), {}).get(int(v)) == "Queue")


def perfetto_sum(path):
    with open(path, "rb") as f:
        data = f.read()
    tracks, names, begins, total = {}, {}, {}, 0
    for _, _, span in fields(data, 0, len(data)):
        pkt = {}
        for f2, _, v2 in fields(data, *span):
            pkt.setdefault(f2, v2)
            if f2 == 12:
                for f3, _, v3 in fields(data, *v2):
                    if f3 == 2:
                        e = {f4: v4 for f4, _, v4 in fields(data, *v3)}
                        names[e[1]] = text(data, e[2])
        if 60 in pkt:
            d = {f: v for f, _, v in fields(data, *pkt[60])}
            tracks[d[1]] = text(data, d[2]) if 2 in d else ""
        if 11 in pkt:
            e = {f: v for f, _, v in fields(data, *pkt[11])}
            if tracks.get(e[11]) != "Wait":
                continue
            ts = pkt.get(8, 0)
            if e[9] == 1:
                begins[e[11]] = (ts, names.get(e.get(10)))
            elif e[9] == 2 and e[11] in begins:
                t0, name = begins.pop(e[11])
                if name == "Queue":
                    total += ts - t0
    return total


def prv_shown(path, mark_type):
    """The time thread row 1 holds value 5 of Paraver type mark_type."""
    recs = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    dur = int(lines[0].split(":")[2].split("_")[0])
    for line in lines[1:]:
        p = line.split(":")
        if p[0] == "2" and int(p[6]) == mark_type:
            recs.append((int(p[5]), int(p[7])))
    total = 0
    for i, (t, v) in enumerate(recs):
        end = recs[i + 1][0] if i + 1 < len(recs) else dur
        if v == 5:
            total += end - t
    return total


tmp = tempfile.mkdtemp(prefix="weft-agree-")
try:
    trace = make_trace(tmp)
    # SQL, both layers
    c.eq(sql_sum(trace, "raw_interval"), f"name,sum(i.dur)\r\novni.mark.7,{RAW}\r\n",
         "sql: raw time")
    c.eq(sql_sum(trace, "interval", " AND i.view = 'thread'"),
         f"name,sum(i.dur)\r\novni.mark.7,{SHOWN}\r\n", "sql: shown time")
    # Python, both layers
    em = weft.emulate(trace)
    c.eq(py_sum(em.raw), RAW, "python: raw time")
    c.eq(py_sum(em["thread"]), SHOWN, "python: shown time")
    # Perfetto (raw) and the summary (raw)
    out = os.path.join(tmp, "out")
    rc, sout, err = run(["emu", "-o", out, trace])
    c.eq(rc, 0, f"emu: exit status ({err!r})")
    c.eq(perfetto_sum(os.path.join(out, "perfetto.pftrace")), RAW, "perfetto: raw time")
    head = ("ovni.mark.7: share of the run per thread (raw: the value the model wrote, "
            "whether or not the thread ran)\n")
    line = [x for x in sout.split(head, 1)[-1].splitlines()[:1]]
    c.expect(head in sout, f"summary: the mark's header in {sout!r}")
    c.eq([x.split("Queue", 1)[-1] for x in line], [f" 70.0% ({RAW} ns)"],
         "summary: raw time")
    # the Paraver view (shown): the mark's type, from the catalogue's name
    ty = [t for t, n in em["thread"].channels.items() if n == "ovni.mark.7"][0]
    c.eq(prv_shown(os.path.join(out, "thread.prv"), ty), SHOWN, "paraver: shown time")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
c.done()
