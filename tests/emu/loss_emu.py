#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""loss_emu.py - `weft emu` on traces that lack events (no corpus needed).

Traces written by this test (tests/cli/tracegen.py):
  - a flight-recorded trace (weft.ring): thread 1 lost two runs (its history begins
    after the first, the second in the middle: offsets given), starts with OHp, repeats
    an OHp (refused: skipped), pops an empty mark stack (skipped), gets its CPU from OAs
    (so the second loss marks that CPU too);
    thread 3 (nosv) lost one run without offsets (placed by clock), ends a task it never
    created (skipped) and makes progress; thread 2 is clean. Checked: exit 0, the
    warning, the exact .prv records of both views (the lost events type 90 and the
    emulation of the kept events), the .pcf block, the summary lines, and the Perfetto
    "lost events" slices (decoded, and perfetto_check.py when present);
  - the same trace without weft.ring: refused exactly as before (the message);
  - a trace cut by a crash (weft.cut): refused without --salvage with the cut named,
    and with --salvage the thread closed at its cut clock (its records there);
  - a thread whose only loss is weft.lost_events (events its signal handlers dropped,
    no ring): emulated leniently, exit 0, the warning, its .prv records and summary
    lines (under ASan+UBSan too: no run to schedule, no qsort of nothing).
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "cli"))
from tracegen import HEADER, ev, meta, thread_rel, write_stream  # noqa: E402
from perfetto_emu import decode  # noqa: E402
from protobuf_wire import checker_path  # noqa: E402

WEFT = os.environ["WEFT_BIN"]
CPUS = ((0, 0), (1, 1))
failures = []


def check(name, got, want):
    if got != want:
        failures.append(name)
        print(f"FAIL {name}:\n--- got\n{got}\n--- want\n{want}")
    else:
        print(f"ok   {name}")


def offsets(evs):
    o, out = len(HEADER), []
    for e in evs:
        out.append(o)
        o += len(e)
    return out


def write_ring_trace(root, ring=True):
    # thread 1: lost [50, 90] before its first event, [130, 150] before OHp@160
    t1 = [ev("OHp", 100), ev("OHp", 105), ev("OHr", 110),
          ev("OM]", 112, struct.pack("<qi", 7, 1)), ev("OAs", 115, struct.pack("<i", 1)),
          ev("OHc", 120), ev("OHp", 160), ev("OHr", 170), ev("OHe", 180)]
    o = offsets(t1)
    m1 = meta(1, 1, cpus=CPUS)
    m1["ovni"]["mark"] = {"1": {"title": "M", "chan_type": "stack"}}
    if ring:
        m1["weft"] = {"ring": {"size": 64, "lost_events": 5, "lost_bytes": 60,
                               "lost": [[50, 90, 3, 36, o[0]], [130, 150, 2, 24, o[6]]]}}
    write_stream(root, thread_rel("vm", 1, 1), m1, t1)
    write_stream(root, thread_rel("vm", 1, 2), meta(2, 1, cpus=CPUS),
                 [ev("OHx", 10, struct.pack("<iiQ", 0, -1, 0)), ev("OHe", 200)])
    # thread 3 (nosv): lost [20, 95] (no offset: before its first event at clock >= 95)
    m3 = meta(3, 1, cpus=CPUS, require={"ovni": "1.1.0", "nosv": "2.7.0"})
    if ring:
        m3["weft"] = {"ring": {"size": 64, "lost_events": 4, "lost_bytes": 64,
                               "lost": [[20, 95, 4, 64]]}, "lost_events": 2}
    write_stream(root, thread_rel("vm", 1, 3), m3,
                 [ev("VTe", 100, struct.pack("<II", 5, 1)), ev("VPp", 102),
                  ev("OHr", 104), ev("OHe", 115)])


def emu(*args):
    return subprocess.run([WEFT, "emu", *map(str, args)], capture_output=True, text=True)


def prv(path):
    return "\n".join(path.read_text().splitlines()[1:])


RING_THREAD_PRV = """\
2:0:1:1:2:0:6:1
2:0:1:1:2:0:4:1
2:0:1:1:2:0:2:2
2:0:1:1:2:0:101:0
2:0:1:1:2:0:15:0
2:0:1:1:2:0:10:0
2:0:1:1:2:0:11:0
2:0:1:1:2:0:12:0
2:0:1:1:2:0:13:0
2:0:1:1:2:0:14:0
2:0:1:1:2:0:16:100
2:0:1:1:3:10:90:1
2:0:1:1:1:40:90:1
2:0:1:1:3:90:90:0
2:0:1:1:1:90:90:0
2:0:1:1:1:90:4:2
2:0:1:1:1:90:101:0
2:0:1:1:1:90:15:0
2:0:1:1:1:90:10:0
2:0:1:1:1:90:11:0
2:0:1:1:1:90:12:0
2:0:1:1:1:90:13:0
2:0:1:1:1:90:14:0
2:0:1:1:1:90:16:0
2:0:1:1:3:94:4:1
2:0:1:1:3:94:2:3
2:0:1:1:3:94:101:0
2:0:1:1:3:94:15:0
2:0:1:1:3:94:10:0
2:0:1:1:3:94:11:0
2:0:1:1:3:94:12:0
2:0:1:1:3:94:13:0
2:0:1:1:3:94:14:0
2:0:1:1:3:94:16:100
2:0:1:1:1:100:4:1
2:0:1:1:1:100:2:1
2:0:1:1:1:100:16:100
2:0:1:1:3:105:4:3
2:0:1:1:3:105:2:0
2:0:1:1:3:105:16:0
2:0:1:1:1:105:6:2
2:0:1:1:1:110:4:4
2:0:1:1:1:110:16:0
2:0:1:1:1:120:4:0
2:0:1:1:1:120:2:0
2:0:1:1:1:120:6:0
2:0:1:1:1:120:90:1
2:0:1:1:1:150:90:0
2:0:1:1:1:150:4:2
2:0:1:1:1:160:4:1
2:0:1:1:1:160:2:1
2:0:1:1:1:160:16:100
2:0:1:1:1:170:4:3
2:0:1:1:1:170:2:0
2:0:1:1:1:170:16:0
2:0:1:1:2:190:4:3
2:0:1:1:2:190:2:0
2:0:1:1:2:190:6:0
2:0:1:1:2:190:16:0"""

RING_CPU_PRV = """\
2:0:1:1:1:0:2:2
2:0:1:1:1:0:1:1
2:0:1:1:1:0:3:1
2:0:1:1:1:0:7:0
2:0:1:1:1:0:101:0
2:0:1:1:1:0:15:0
2:0:1:1:1:0:10:0
2:0:1:1:1:0:11:0
2:0:1:1:1:0:12:0
2:0:1:1:1:0:13:0
2:0:1:1:1:0:14:0
2:0:1:1:1:0:16:100
2:0:1:1:2:105:2:1
2:0:1:1:2:105:1:1
2:0:1:1:2:105:3:1
2:0:1:1:2:105:7:0
2:0:1:1:2:105:101:0
2:0:1:1:2:105:15:0
2:0:1:1:2:105:10:0
2:0:1:1:2:105:11:0
2:0:1:1:2:105:12:0
2:0:1:1:2:105:13:0
2:0:1:1:2:105:14:0
2:0:1:1:2:105:16:100
2:0:1:1:2:110:2:0
2:0:1:1:2:110:1:0
2:0:1:1:2:110:3:0
2:0:1:1:2:110:16:101
2:0:1:1:2:120:90:1
2:0:1:1:2:150:90:0
2:0:1:1:1:190:2:0
2:0:1:1:1:190:1:0
2:0:1:1:1:190:3:0
2:0:1:1:1:190:16:101"""

RING_SUMMARY_LOSS = """\
lost events: 9 events overwritten by the flight recorder before they were written, \
in 3 runs on 2 threads; 2 dropped by signal handlers on 1 thread; the 2 threads that \
lost events were emulated leniently (each in an unknown state after a loss) and the \
end checks were waived for them
lost events: 4 events after them could not be emulated (the models refuse them without \
what was lost) and were skipped:
       1  VTe: task N does not exist in process N
       1  VPp: nosv idle of the thread already holds N
       1  OHp: the thread is Paused, but OHp (pause) needs it Running or Cooling
       1  OM]: mark type N of the thread: pop of N from an empty stack"""

RING_WARNING = """\
weft emu: warning: 2 threads lost events (9 overwritten by the flight recorder \
(WEFT_RING), 2 dropped by signal handlers): they are emulated leniently: after a loss a \
thread starts again in an unknown state, the events the models refuse then are skipped \
and counted in the summary, and its end checks are waived (docs/emu.md, "Traces with lost \
events")"""

PCF_THREAD_LOST = """\
EVENT_TYPE
0 90         Lost events (overwritten by the flight recorder)
VALUES
1    Events lost (overwritten before they were written)"""


def test_ring(tmp):
    t = tmp / "ring"
    write_ring_trace(t)
    out = tmp / "ring-out"
    r = emu("-o", out, t)
    check("ring: exit status", r.returncode, 0)
    check("ring: warning", r.stderr.strip(), RING_WARNING)
    check("ring: thread.prv", prv(out / "thread.prv"), RING_THREAD_PRV)
    check("ring: cpu.prv", prv(out / "cpu.prv"), RING_CPU_PRV)
    check("ring: thread.pcf lost block", (out / "thread.pcf").read_text().rstrip()
          .split("\n\n\n")[-1], PCF_THREAD_LOST)
    check("ring: cpu.pcf lost label", "0 90         Lost events of a thread on this CPU"
          in (out / "cpu.pcf").read_text(), True)
    lines = r.stdout.splitlines()
    loss = [i for i, x in enumerate(lines) if x.startswith("lost events:")]
    end = loss[0] + 1 if loss else 0
    while loss and end < len(lines) and lines[end].startswith(("lost events:", "  ")):
        end += 1
    check("ring: summary", "\n".join(lines[loss[0]:end]) if loss else r.stdout,
          RING_SUMMARY_LOSS)
    # Perfetto: a "lost events" slice over each lost interval, on the thread's track
    tracks, events = decode((out / "perfetto.pftrace").read_bytes())
    tid_of = {u: t["tid"] for u, t in tracks.items() if t["kind"] == "thread"}
    lost, open_ = [], {}
    for ts, typ, trk, name, _ in events:
        if trk not in tid_of:
            continue
        if typ == 1:
            open_.setdefault(trk, []).append((ts, name))
        elif typ == 2:
            b, n = open_[trk].pop()
            if n == "lost events":
                lost.append((tid_of[trk], b, ts))
    check("ring: perfetto lost slices", sorted(lost), [(1, 40, 90), (1, 120, 150), (3, 10, 90)])
    checker = checker_path()
    if checker is not None:
        c = subprocess.run([sys.executable, str(checker), str(out / "perfetto.pftrace")],
                           capture_output=True, text=True)
        check("ring: perfetto_check.py", c.returncode, 0)
    # The same trace without weft.ring: refused as before (thread 3's first event
    # comes first: the nosv model's guard).
    t2 = tmp / "noring"
    write_ring_trace(t2, ring=False)
    r = emu("-o", tmp / "noring-out", t2)
    check("no ring: exit status", r.returncode, 1)
    check("no ring: message", r.stderr.strip(),
          "weft emu: loom.vm/proc.1/thread.3: event VTe at clock 100 (offset 8): thread "
          "TH 1.3 is Unknown, but events of the nosv model need it Running, Cooling or "
          "Warming")


def write_cut_trace(root):
    m1 = meta(1, 1, cpus=CPUS, finished=None)
    m1["weft"] = {"cut": {"by": "signal", "signal": 11, "clock": 150}}
    write_stream(root, thread_rel("vm", 1, 1), m1,
                 [ev("OHx", 10, struct.pack("<iiQ", 0, -1, 0)), ev("OHp", 20), ev("OHr", 30)])
    write_stream(root, thread_rel("vm", 1, 2), meta(2, 1, cpus=CPUS),
                 [ev("OHx", 100, struct.pack("<iiQ", 1, -1, 0)), ev("OHe", 300)])


CUT_THREAD_PRV = """\
2:0:1:1:1:0:6:1
2:0:1:1:1:0:4:1
2:0:1:1:1:0:2:1
2:0:1:1:1:10:4:2
2:0:1:1:1:10:2:0
2:0:1:1:1:20:4:1
2:0:1:1:1:20:2:1
2:0:1:1:2:90:6:2
2:0:1:1:2:90:4:1
2:0:1:1:2:90:2:2
2:0:1:1:1:140:4:3
2:0:1:1:1:140:2:0
2:0:1:1:1:140:6:0
2:0:1:1:2:290:4:3
2:0:1:1:2:290:2:0
2:0:1:1:2:290:6:0"""


def test_cut(tmp):
    t = tmp / "cut"
    write_cut_trace(t)
    r = emu("-o", tmp / "cut-out", t)
    check("cut: exit status", r.returncode, 1)
    check("cut: message", r.stderr.strip(),
          f"weft emu: {t}/loom.vm/proc.1/thread.1/stream.json: cut by signal 11 (SIGSEGV) at "
          "clock 150 (the process died; WEFT_CRASH=flush wrote the events buffered before "
          "it), so ovni.finished is missing; `weft emu --salvage` emulates a run cut short")
    out = tmp / "cut-salvage"
    r = emu("--salvage", "-o", out, t)
    check("cut --salvage: exit status", r.returncode, 0)
    check("cut --salvage: thread.prv", prv(out / "thread.prv"),
          CUT_THREAD_PRV)
    lines = r.stdout.splitlines()
    cut = [i for i, x in enumerate(lines) if x.startswith("cut short")]
    check("cut --salvage: summary", "\n".join(lines[cut[0]:cut[0] + 2]) if cut else r.stdout,
          "cut short (--salvage): 1 thread, each closed at the clock of its cut; the end "
          "checks were waived for it\n"
          "  TH 1.1                 loom.vm/proc.1/thread.1: closed at clock 150 (140 ns into "
          "the run); cut by signal 11 (SIGSEGV) at clock 150 (the process died; "
          "WEFT_CRASH=flush wrote the events buffered before it), so ovni.finished is missing")


def write_dropped_trace(root):
    # thread 1: only weft.lost_events (events its signal handlers dropped), no ring
    m1 = meta(1, 1, cpus=CPUS)
    m1["weft"] = {"lost_events": 3}
    write_stream(root, thread_rel("vm", 1, 1), m1,
                 [ev("OHx", 10, struct.pack("<iiQ", 0, -1, 0)), ev("OHp", 20), ev("OHr", 30),
                  ev("OHe", 40)])
    write_stream(root, thread_rel("vm", 1, 2), meta(2, 1, cpus=CPUS),
                 [ev("OHx", 100, struct.pack("<iiQ", 1, -1, 0)), ev("OHe", 300)])


DROPPED_THREAD_PRV = """\
2:0:1:1:1:0:6:1
2:0:1:1:1:0:4:1
2:0:1:1:1:0:2:1
2:0:1:1:1:10:4:2
2:0:1:1:1:10:2:0
2:0:1:1:1:20:4:1
2:0:1:1:1:20:2:1
2:0:1:1:1:30:4:3
2:0:1:1:1:30:2:0
2:0:1:1:1:30:6:0
2:0:1:1:2:90:6:2
2:0:1:1:2:90:4:1
2:0:1:1:2:90:2:2
2:0:1:1:2:290:4:3
2:0:1:1:2:290:2:0
2:0:1:1:2:290:6:0"""


def test_dropped_only(tmp):
    # no run of lost events to place (the loss schedule is empty: an empty sort,
    # which UBSan refused as qsort(NULL, 0, ...) in the sanitizer build)
    t = tmp / "dropped"
    write_dropped_trace(t)
    out = tmp / "dropped-out"
    r = emu("-o", out, t)
    check("dropped only: exit status", r.returncode, 0)
    check("dropped only: stderr", r.stderr.strip(),
          "weft emu: warning: 1 thread lost events (3 dropped by signal handlers): it is "
          "emulated leniently: after a loss a thread starts again in an unknown state, the "
          "events the models refuse then are skipped and counted in the summary, and its "
          "end checks are waived (docs/emu.md, \"Traces with lost events\")")
    check("dropped only: thread.prv", prv(out / "thread.prv"), DROPPED_THREAD_PRV)
    lines = r.stdout.splitlines()
    check("dropped only: summary", [x for x in lines if x.startswith("lost events:")],
          ["lost events: 3 dropped by signal handlers on 1 thread; the thread that lost "
           "events was emulated leniently (in an unknown state after a loss) and the end "
           "checks were waived for it",
           "lost events: every event after them could be emulated"])


def main():
    tmp = Path(tempfile.mkdtemp(prefix="weft-loss-"))
    try:
        test_ring(tmp)
        test_cut(tmp)
        test_dropped_only(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
