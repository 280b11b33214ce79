#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""model_rules.py - `weft emu` against each rule of the runtime-models facts note.

Usage: model_rules.py [--dump] [CASE]...   (environment: WEFT_BIN, the weft binary)

One small synthetic trace per case, written by this script with tests/cli/tracegen.py
into a temporary directory that is always removed: one process (pid 1, app_id 1,
loom "vm", with `rank` where the case says so), `loom_cpus` {index i, phyid i},
ovni.require = ovni 1.1.0 plus the models of the case, `finished: 1`; the first
event is OHx and the last OHe (except where a rule needs otherwise), clocks from 100
in steps of 10 (so the dclock of the i-th event is 10*i). Each case runs
`$WEFT_BIN emu --paraver -q [-b|-a] -o OUT TRACE` and checks, exactly:
  - the exit status;
  - stderr, byte for byte (refusals name the stream, the event, its clock and
    offset, then the rule broken; the trace directory is shown as TRACE);
  - for accepted sequences, the records of thread.prv / cpu.prv (and of the
    <model>-breakdown.prv files with -b), written below as one line per
    (row, time) group: "ROW:TIME type:value type:value ...";
  - where given, the .pcf blocks (labels, value lists, block order) and the
    files written.

The rules and the expected records come from the facts note
(shared/notes/runtime-models-facts.md, §1-§10, evidence index §11, experiments
§13); each case names the section it covers. Task-type values are computed here
with the note's hash (Jenkins lookup2 + 666, §2.1), checked first against the
note's check values.

EXPECTED_DIFFERENCES lists the cases where weft does not do what the note says
(name -> one-line reason): such a case failing is reported as XFAIL, passing
as XPASS (a failure: remove it from the list).

Prints "ok NAME", "FAIL NAME: why", "XFAIL NAME: reason" per case and a summary;
exits 1 on any FAIL or XPASS. --dump also prints what weft wrote for each case.
"""
import os
import re
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli"))
import tracegen  # noqa: E402

WEFT = os.environ.get("WEFT_BIN", "weft")
DUMP = "--dump" in sys.argv

# Cases where weft contradicts the facts note: name -> one-line reason. (None:
# where weft differs on purpose, the case asserts weft's behaviour and says why.)
EXPECTED_DIFFERENCES = {}


# ================================================================ trace building

def u32(*v):
    return struct.pack(f"<{len(v)}I", *v)


def i64(*v):
    return struct.pack(f"<{len(v)}q", *v)


class J:
    """A jumbo event: data = the jumbo bytes after the u32 size."""

    def __init__(self, mcv, data):
        self.mcv, self.data = mcv, data


class At:
    """Sets the clock of the next event of the stream."""

    def __init__(self, clock):
        self.clock = clock


def ohx(cpu=0):
    return ("OHx", struct.pack("<iiQ", cpu, -1, 0))


def oas(cpu):
    return ("OAs", struct.pack("<i", cpu))


def ty(mcv, tid, label):
    """A task-type creation (VYc, 6Yc, POc): u32 type id, NUL-terminated label."""
    if isinstance(label, str):
        label = label.encode()
    return J(mcv, u32(tid) + label + b"\0")


def build(items, start=100, step=10):
    """The events of one stream: MCV strings, (mcv, payload) pairs, J or At items."""
    out, clock = [], start
    for it in items:
        if isinstance(it, At):
            clock = it.clock
            continue
        if isinstance(it, J):
            out.append(tracegen.ev(it.mcv, clock, jumbo=it.data))
        elif isinstance(it, str):
            out.append(tracegen.ev(it, clock))
        else:
            out.append(tracegen.ev(it[0], clock, it[1]))
        clock += step
    return out


# ================================================================ task-type values (§2.1)

MASK = 0xffffffff


def _mix(a, b, c):
    a = (a - b - c) & MASK
    a ^= c >> 13
    b = (b - c - a) & MASK
    b ^= (a << 8) & MASK
    c = (c - a - b) & MASK
    c ^= b >> 13
    a = (a - b - c) & MASK
    a ^= c >> 12
    b = (b - c - a) & MASK
    b ^= (a << 16) & MASK
    c = (c - a - b) & MASK
    c ^= b >> 5
    a = (a - b - c) & MASK
    a ^= c >> 3
    b = (b - c - a) & MASK
    b ^= (a << 10) & MASK
    c = (c - a - b) & MASK
    c ^= b >> 15
    return a, b, c


def gid(label):
    """The Paraver value of a task type: HASH_JEN (lookup2) of the label, + 666,
    masked to 31 bits, + 1000 when below 1000."""
    k = label.encode()
    a = b = 0x9e3779b9
    c = 0xfeedbeef
    i, n = 0, len(k)
    while n - i >= 12:
        a = (a + int.from_bytes(k[i:i + 4], "little")) & MASK
        b = (b + int.from_bytes(k[i + 4:i + 8], "little")) & MASK
        c = (c + int.from_bytes(k[i + 8:i + 12], "little")) & MASK
        a, b, c = _mix(a, b, c)
        i += 12
    c = (c + n) & MASK
    for j, byte in enumerate(k[i:]):
        if j < 4:
            a = (a + (byte << (8 * j))) & MASK
        elif j < 8:
            b = (b + (byte << (8 * (j - 4)))) & MASK
        else:
            c = (c + (byte << (8 * (j - 7)))) & MASK  # bytes 8-10 at shifts 8, 16, 24
    a, b, c = _mix(a, b, c)
    g = ((c + 666) & MASK) & 0x7fffffff
    return g + 1000 if g < 1000 else g


# The note's check values (§2.1).
GID_CHECK = {"testtype1": 1690940984, "(unlabeled task type 2)": 77997064,
             "alpha": 660719635, "mytype": 2004224627, "main task.1": 1541689984}


# ================================================================ output readers

def group_records(path):
    """A .prv file's records as "ROW:TIME:TYPE:VALUE" items (header dropped)."""
    out = []
    for line in path.read_text().splitlines()[1:]:
        f = line.split(":")
        for i in range(6, len(f), 2):
            out.append(f"{f[4]}:{f[5]}:{f[i]}:{f[i + 1]}")
    return out


def expand(text):
    """Expected records "ROW:TIME type:value ..." (one group a line) as items."""
    out = []
    for line in text.strip().splitlines():
        head, *items = line.split()
        out.extend(f"{head}:{it}" for it in items)
    return out


def compact(items):
    """Items back into the grouped form, for messages."""
    lines = []
    for it in items:
        f = it.split(":")
        key, item = (":".join(f[:2]), ":".join(f[2:])) if len(f) == 4 else (it, "")
        if lines and lines[-1][0] == key:
            lines[-1][1].append(item)
        else:
            lines.append((key, [item]))
    return " | ".join(f"{k} {' '.join(v)}" for k, v in lines)


def pcf_blocks(path):
    """[(type, label, [value lines])] of the EVENT_TYPE blocks of a .pcf file."""
    out = []
    for block in path.read_text().split("EVENT_TYPE\n")[1:]:
        lines = block.split("\n")
        m = re.match(r"0 (\d+)\s+(.*)$", lines[0])
        values = []
        if len(lines) > 1 and lines[1] == "VALUES":
            for v in lines[2:]:
                if v == "":
                    break
                values.append(v)
        out.append((int(m.group(1)), m.group(2), values))
    return out


def val(v, label):
    """A PCF value line as weft writes it (%-4d %s)."""
    return f"{v:<4d} {label}"


# Checks on the output directory: each returns an error string or None.

def pcf_order(fname, types):
    def chk(out):
        got = [b[0] for b in pcf_blocks(out / fname)]
        return None if got == types else f"{fname} block order {got}, want {types}"
    return chk


def pcf_block(fname, typ, label=None, values=None):
    def chk(out):
        for t, lab, vals in pcf_blocks(out / fname):
            if t != typ:
                continue
            if label is not None and lab != label:
                return f"{fname} type {typ}: label {lab!r}, want {label!r}"
            if values is not None and vals != values:
                return f"{fname} type {typ}: values {vals}, want {values}"
            return None
        return f"{fname}: no block for type {typ}"
    return chk


def files_are(names):
    def chk(out):
        got = sorted(p.name for p in out.iterdir())
        return None if got == sorted(names) else f"files {got}, want {sorted(names)}"
    return chk


def records_between(fname, t0, t1, want):
    """The records of fname with t0 <= time <= t1 are exactly want (items)."""
    def chk(out):
        got = [r for r in group_records(out / fname) if t0 <= int(r.split(":")[1]) <= t1]
        return None if got == want else \
            f"{fname} records {t0}..{t1}\n      got  {compact(got)}\n      want {compact(want)}"
    return chk


PRV_FILES = ["thread.prv", "thread.pcf", "thread.row", "cpu.prv", "cpu.pcf", "cpu.row"]


# ================================================================ the case table

CASES = []


def case(name, events=None, *, threads=None, models=None, cpus=1, rank=None, top=None,
         meta=None, flags=(), exit=0, stderr="", thread=None, cpu=None, files=None,
         checks=()):
    """One case.

    events: the items of thread 1; or threads: [(tid, items, start, extra)], extra
    being top-level metadata keys of that stream ({"nosv": {...}}), or
    {"ovni": {...}} merged into its ovni object.
    models: {"nosv": "2.7.0", ...} added to ovni.require (ovni 1.1.0 always).
    top: top-level metadata keys of every stream; meta: keys of every ovni object.
    exit, stderr: the exact exit status and stderr.
    thread, cpu, files: the exact records of thread.prv, cpu.prv and other .prv
    files ({"nosv-breakdown.prv": text}).
    checks: functions(outdir) -> error or None.
    """
    assert name not in (c["name"] for c in CASES), name
    CASES.append(dict(name=name, events=events, threads=threads, models=models or {},
                      cpus=cpus, rank=rank, top=top or {}, meta=meta or {}, flags=list(flags),
                      exit=exit, stderr=stderr, thread=thread, cpu=cpu, files=files or {},
                      checks=list(checks)))


def R(mcv, clock, offset, rule, thread=1):
    """The exact stderr of an event refused by the emulator."""
    return (f"weft emu: loom.vm/proc.1/thread.{thread}: event {mcv} at clock {clock} "
            f"(offset {offset}): {rule}\n")


def S(rule, thread=1):
    """The exact stderr of a refusal that names a stream but no event."""
    return f"weft emu: loom.vm/proc.1/thread.{thread}: {rule}\n"


def W(text, thread=1):
    """A warning line about a stream."""
    return f"weft emu: warning: loom.vm/proc.1/thread.{thread}: {text}\n"


def leftover(model, chan, top):
    return S(f"thread TH 1.1 ends with 1 value left on the {model} {chan} stack (top {top}); "
             "it must be empty at the end")


RELAX_WARN = W("body 1 of task 2 runs over body 1 of task 1 (nested without a pause; "
               "warned once)")

NV = {"nosv": "2.7.0"}
N6 = {"nanos6": "1.1.0"}
OMP = {"openmp": "1.2.1"}
MPI = {"mpi": "1.0.0"}
TA = {"tampi": "1.0.0"}
ND = {"nodes": "1.0.0"}
KE = {"kernel": "1.0.0"}
BD_TRUE = {"nosv": {"can_breakdown": True}}
HWC2 = {"nosv": {"hwc": {"0": {"name": "cycles"}, "1": {"name": "instr"}}}}

# first records of a thread / CPU on OHx @0, per enabled model (§1.4: the first
# re-evaluation writes null as 0; nosv and nanos6 idle start at 100)
NV_T0 = "1:0 6:1 4:1 2:1 15:0 10:0 11:0 12:0 13:0 14:0 16:100"
NV_C0 = "1:0 2:1 1:1 3:1 7:0 15:0 10:0 11:0 12:0 13:0 14:0 16:100"
N6_T0 = "1:0 6:1 4:1 2:1 35:0 36:0 37:0 38:0 40:100"
N6_C0 = "1:0 2:1 1:1 3:1 35:0 36:0 37:0 38:0 39:0 40:100 7:0"
OMP_T0 = "1:0 6:1 4:1 2:1 50:0 51:0 52:0"
OMP_C0 = "1:0 2:1 1:1 3:1 7:0 50:0 51:0 52:0"

# ---------------------------------------------------------------- §1.1 enabling, versions
VERSIONS = [("nanos6", "1.0.0", "1.1.0", True), ("nanos6", "1.1.5", "1.1.0", True),
            ("nanos6", "1.2.0", "1.1.0", False),
            ("nodes", "1.0.0", "1.0.0", True), ("nodes", "1.1.0", "1.0.0", False),
            ("kernel", "1.0.0", "1.0.0", True), ("kernel", "0.9.0", "1.0.0", False),
            ("mpi", "1.0.3", "1.0.0", True), ("mpi", "1.1.0", "1.0.0", False),
            ("openmp", "1.0.0", "1.2.1", True), ("openmp", "1.1.0", "1.2.1", True),
            ("openmp", "1.2.9", "1.2.1", True), ("openmp", "1.3.0", "1.2.1", False),
            ("tampi", "1.0.0", "1.0.0", True), ("tampi", "2.0.0", "1.0.0", False),
            ("nosv", "2.0.0", "2.7.0", True), ("nosv", "2.7.9", "2.7.0", True),
            ("nosv", "1.0.0", "2.7.0", False), ("nosv", "1.1.0", "2.7.0", False),
            ("nosv", "2.8.0", "2.7.0", False), ("nosv", "3.0.0", "2.7.0", False)]
FIRST_TYPE = {"nanos6": 35, "nodes": 30, "kernel": 45, "mpi": 25, "openmp": 50, "tampi": 20,
              "nosv": 15}
for _mod, _want, _have, _ok in VERSIONS:
    if _ok:
        case(f"ver-{_mod}-{_want}-accepted", [ohx(), "OHe"], models={_mod: _want},
             checks=[pcf_block("thread.pcf", FIRST_TYPE[_mod])])
    else:
        case(f"ver-{_mod}-{_want}-refused", [ohx(), "OHe"], models={_mod: _want}, exit=1,
             stderr=S(f"unsupported {_mod} model version (want {_want}, have {_have})"))
case("ver-nosv-unparsable-refused", [ohx(), "OHe"], models={"nosv": "2.x"}, exit=1,
     stderr=S("unsupported nosv model version (want 2.x, have 2.7.0)"))
# A start-up refusal: the reference leaves header-only PRVs and empty PCF/ROW
# files (§1.1, §3.5); weft refuses before it creates any file, on purpose
# (docs/emu.md, BUGS AND DIFFERENCES): nothing half-written to mistake for a
# timeline.
def no_files(out):
    made = sorted(p.name for p in out.iterdir()) if out.exists() else []
    return f"files written: {made}" if made else None


def header_only(out):
    for f in PRV_FILES:
        path = out / f
        if not path.exists():
            return f"{f} missing"
        text = path.read_text()
        if f.endswith(".prv") and not (text.startswith("#Paraver") and text.count("\n") == 1):
            return f"{f} is not header-only: {text!r}"
        if not f.endswith(".prv") and text != "":
            return f"{f} is not empty"
    return None


case("ver-refused-files", [ohx(), "OHe"], models={"nosv": "3.0.0"}, exit=1,
     stderr=S("unsupported nosv model version (want 3.0.0, have 2.7.0)"), checks=[no_files])
case("hwc-bad-index-files", [ohx(), "OHe"], models=NV,
     top={"nosv": {"hwc": {"0": {"name": "a"}, "2": {"name": "b"}}}}, exit=1,
     stderr=S("nosv.hwc: counter index '2' must be an integer from 0 to 1 (the number of counters "
              "less one, below 100)"), checks=[no_files])
# a model byte that is registered but not enabled: refused at that event
case("enable-nosv-not-required", [ohx(), "VS[", "VS]", "OHe"], exit=1,
     stderr="weft emu: loom.vm/proc.1/thread.1: event VS[ at clock 110 (offset 36): the nosv "
            "model is not enabled (no stream requires it; -a enables every model)\n",
     thread="1:0 6:1 4:1 2:1", cpu="1:0 2:1 1:1 3:1 7:0")
case("enable-nanos6-not-required", [ohx(), "6U[", "6U]", "OHe"], exit=1,
     stderr="weft emu: loom.vm/proc.1/thread.1: event 6U[ at clock 110 (offset 36): the nanos6 "
            "model is not enabled (no stream requires it; -a enables every model)\n",
     thread="1:0 6:1 4:1 2:1", cpu="1:0 2:1 1:1 3:1 7:0")
# -a enables every model: records of all of them, in global order 6 D K M O P T V (§1.3, §1.4)
case("enable-all-models-a", [ohx(), "VS[", "VS]", "OHe"], flags=["-a"],
     thread="""
1:0 6:1 4:1 2:1 35:0 36:0 37:0 38:0 40:100 30:0 25:0 50:0 51:0 52:0 20:0 15:0 10:0 11:0 12:0 13:0 14:0 16:100
1:10 13:7
1:20 13:0
1:30 4:3 2:0 6:0 36:0 38:0 40:0 16:0""",
     cpu="""
1:0 2:1 1:1 3:1 35:0 36:0 37:0 38:0 39:0 40:100 30:0 45:0 25:0 7:0 50:0 51:0 52:0 20:0 15:0 10:0 11:0 12:0 13:0 14:0 16:100
1:10 13:7
1:20 13:0
1:30 2:0 1:0 3:0 36:0 38:0 40:101 16:101""",
     checks=[pcf_order("thread.pcf", [6, 2, 4, 35, 36, 37, 38, 39, 40, 30, 45, 25, 7, 50, 51, 52,
                                      20, 15, 10, 11, 12, 13, 14, 16]),
             pcf_order("cpu.pcf", [35, 36, 37, 38, 39, 40, 30, 45, 25, 7, 50, 51, 52, 20,
                                   15, 10, 11, 12, 13, 14, 16]),
             # PCF label suffixes: RUN / ACT / ANY (empty: the label ends with a space)
             pcf_block("thread.pcf", 35, "Nanos6 task ID of the RUNNING thread"),
             pcf_block("thread.pcf", 37, "Nanos6 subsystem of the ACTIVE thread"),
             pcf_block("thread.pcf", 39, "Nanos6 thread type "),
             pcf_block("thread.pcf", 45, "Kernel context switch "),
             pcf_block("thread.pcf", 25, "MPI function of the RUNNING thread"),
             pcf_block("thread.pcf", 30, "NODES subsystem of the ACTIVE thread"),
             pcf_block("thread.pcf", 50, "OpenMP subsystem of the ACTIVE thread"),
             pcf_block("thread.pcf", 51, "OpenMP label of the ACTIVE thread"),
             pcf_block("thread.pcf", 52, "OpenMP task ID of the ACTIVE thread"),
             pcf_block("thread.pcf", 20, "TAMPI subsystem of the ACTIVE thread"),
             pcf_block("thread.pcf", 15, "nOS-V task body ID of the RUNNING thread"),
             pcf_block("thread.pcf", 13, "nOS-V subsystem of the ACTIVE thread"),
             pcf_block("thread.pcf", 16, "nOS-V idle state of the RUNNING thread"),
             # the CPU blocks always use the RUN suffix
             pcf_block("cpu.pcf", 37, "Nanos6 subsystem of the RUNNING thread"),
             pcf_block("cpu.pcf", 39, "Nanos6 thread type of the RUNNING thread"),
             pcf_block("cpu.pcf", 45, "Kernel context switch of the RUNNING thread"),
             pcf_block("cpu.pcf", 30, "NODES subsystem of the RUNNING thread"),
             pcf_block("cpu.pcf", 13, "nOS-V subsystem of the RUNNING thread")])
# an enabled model with no events: PCF blocks and first records (§1.1, corpus attrs)
case("enable-no-events", [ohx(), "OHe"], models=NV,
     thread=NV_T0 + "\n1:10 4:3 2:0 6:0 16:0", cpu=NV_C0 + "\n1:10 2:0 1:0 3:0 16:101",
     checks=[pcf_order("thread.pcf", [6, 2, 4, 7, 15, 10, 11, 12, 13, 14, 16])])

# ---------------------------------------------------------------- §1.3 global order with marks
case("order-marks-between-mpi-and-openmp",
     [ohx(), ("OM[", struct.pack("<qi", 7, 3)), ("OM]", struct.pack("<qi", 7, 3)), "OHe"],
     models=dict(NV, nanos6="1.1.0"), meta={"mark": {"3": {"title": "Three", "chan_type": "stack"}}},
     thread="""
1:0 6:1 4:1 2:1 35:0 36:0 37:0 38:0 40:100 103:0 15:0 10:0 11:0 12:0 13:0 14:0 16:100
1:10 103:7
1:20 103:0
1:30 4:3 2:0 6:0 36:0 38:0 40:0 16:0""",
     checks=[pcf_order("thread.pcf", [6, 2, 4, 35, 36, 37, 38, 39, 40, 7, 103,
                                      15, 10, 11, 12, 13, 14, 16])])

# ---------------------------------------------------------------- §1.3 stack depth
case("engine-stack-512-accepted", [ohx()] + ["VS["] * 512 + ["VS]"] * 512 + ["OHe"], models=NV)
case("engine-stack-513-refused", [ohx()] + ["VS["] * 513 + ["VS]"] * 513 + ["OHe"], models=NV,
     exit=1, stderr=R("VS[", 5230, 6180, "nosv subsystem of thread TH 1.1: stack full (512 values)"))

# ---------------------------------------------------------------- §1.4 worked example (suite-nosv-nested-tasks)
T1 = [ohx(), ty("VYc", 1, "testtype1"), ("VTc", u32(1, 1))]
case("order-nosv-nested-tasks-example",
     T1 + [("VTx", u32(1, 0)), ("VTp", u32(1, 0)), "VAs", "VAS", ("VTr", u32(1, 0)),
           ("VTe", u32(1, 0)), "OHe"], models=NV, rank=0,
     thread=NV_T0 + """
1:30 13:11 15:1 10:1 11:1690940984 12:1 14:1
1:40 15:0 10:0 11:0 12:0 14:0
1:50 13:14
1:60 13:11
1:70 15:1 10:1 11:1690940984 12:1 14:1
1:80 13:0 15:0 10:0 11:0 12:0 14:0
1:90 4:3 2:0 6:0 16:0""",
     cpu=NV_C0 + """
1:30 13:11 15:1 10:1 11:1690940984 12:1 14:1
1:40 15:0 10:0 11:0 12:0 14:0
1:50 13:14
1:60 13:11
1:70 15:1 10:1 11:1690940984 12:1 14:1
1:80 13:0 15:0 10:0 11:0 12:0 14:0
1:90 2:0 1:0 3:0 16:101""")
# OAs: system records of both CPUs first, then the old CPU's views, then the new CPU's
case("order-oas-two-cpus", [ohx(), "VS[", oas(1), "VS]", "OHe"], models=NV, cpus=2,
     thread=NV_T0 + """
1:10 13:7
1:20 6:2
1:30 13:0
1:40 4:3 2:0 6:0 16:0""",
     cpu=NV_C0 + """
1:10 13:7
1:20 2:0 1:0 3:0
2:20 2:1 1:1 3:1
1:20 13:0 16:101
2:20 7:0 15:0 10:0 11:0 12:0 13:7 14:0 16:100
2:30 13:0
2:40 2:0 1:0 3:0 16:101""")

# ---------------------------------------------------------------- §2.1 task types
case("types-gid-check-values",
     [ohx(), ty("VYc", 1, "testtype1"), ty("VYc", 2, ""), ty("VYc", 3, "alpha"),
      ty("VYc", 4, "mytype"), "OHe"], models=NV,
     checks=[pcf_block("thread.pcf", 11, "nOS-V task type of the RUNNING thread",
                       ["1690940984 testtype1", "77997064 (unlabeled task type 2)",
                        "660719635 alpha", "2004224627 mytype"]),
             pcf_block("cpu.pcf", 11, "nOS-V task type of the RUNNING thread",
                       ["1690940984 testtype1", "77997064 (unlabeled task type 2)",
                        "660719635 alpha", "2004224627 mytype"])])
case("types-gid-openmp-main-task", [ohx(), ty("POc", 1, "main task.1"), ty("POc", 2, "alpha"), "OHe"],
     models=OMP, checks=[pcf_block("thread.pcf", 51, "OpenMP label of the ACTIVE thread",
                                   ["1541689984 main task.1", "660719635 alpha"])])
case("types-label-nul-dedup-unlabeled",
     [ohx(), J("VYc", u32(1) + b"abc\0junk\0"), ty("VYc", 2, "abc"), ty("VYc", 3, "zeta"),
      ty("VYc", 4, ""), "OHe"], models=NV,
     checks=[pcf_block("thread.pcf", 11, values=[
         f"{gid('abc')} abc", f"{gid('zeta')} zeta",
         f"{gid('(unlabeled task type 4)')} (unlabeled task type 4)"])])
case("types-nanos6-pcf-dedup",
     [ohx(), ty("6Yc", 1, "same"), ty("6Yc", 2, "same"), ty("6Yc", 3, "alpha"), "OHe"], models=N6,
     checks=[pcf_block("thread.pcf", 36, "Nanos6 task type of the RUNNING thread",
                       [f"{gid('same')} same", f"{gid('alpha')} alpha"])])
case("types-dup-id", [ohx(), ty("VYc", 1, "a"), ty("VYc", 1, "b"), "OHe"], models=NV, exit=1,
     stderr=R("VYc", 120, 58, "task type 1 is already defined in process 1"))
case("types-id-0", [ohx(), ty("VYc", 0, "a"), "OHe"], models=NV, exit=1,
     stderr=R("VYc", 110, 36, "task type id 0 is not allowed"))
case("types-label-512-refused", [ohx(), ty("VYc", 1, "x" * 512), "OHe"], models=NV, exit=1,
     stderr=R("VYc", 110, 36, "task type 1: its label of 512 bytes is too long (at most 511)"))
case("types-label-511-accepted", [ohx(), ty("VYc", 1, "x" * 511), "OHe"], models=NV)
case("types-VYc-not-jumbo", [ohx(), ("VYc", u32(1, 0)), "OHe"], models=NV, exit=1,
     stderr=R("VYc", 110, 36, "VYc must be a jumbo event"))
case("types-6Yc-not-jumbo", [ohx(), ("6Yc", u32(1, 0)), "OHe"], models=N6, exit=1,
     stderr=R("6Yc", 110, 36, "6Yc must be a jumbo event"))
case("types-6Yx-unknown", [ohx(), J("6Yx", u32(1) + b"a\0"), "OHe"], models=N6, exit=1,
     stderr=R("6Yx", 110, 36, "unknown event of the nanos6 model"))
case("types-VYx-unknown", [ohx(), J("VYx", u32(1) + b"a\0"), "OHe"], models=NV, exit=1,
     stderr=R("VYx", 110, 36, "unknown event of the nosv model"))
COLL = ("weft emu: {} task types 'L83328' and 'L93662' have the same Paraver value 1796454952 "
        "(a hash collision of their labels); rename one of them\n")
case("types-collision-nosv",
     [ohx(), ty("VYc", 1, "L83328"), ty("VYc", 2, "L93662"), ty("VYc", 3, "L83328"), "OHe"],
     models=NV, exit=1, stderr=COLL.format("nosv"),
     checks=[pcf_block("thread.pcf", 11, values=["1796454952 L83328"])])
case("types-collision-nanos6", [ohx(), ty("6Yc", 1, "L83328"), ty("6Yc", 2, "L93662"), "OHe"],
     models=N6, exit=1, stderr=COLL.format("nanos6"))
# types are per process: created on thread 1, used on thread 2
case("types-shared-by-threads",
     threads=[(1, [ohx(), ty("VYc", 1, "alpha"), ("VTc", u32(1, 1)), At(200), "OHe"], 100, None),
              (2, [ohx(1), At(150), ("VTc", u32(2, 1)), ("VTx", u32(1, 0)), ("VTe", u32(1, 0)),
                   "OHe"], 105, None)], cpus=2, models=NV,
     thread=NV_T0 + """
2:5 6:2 4:1 2:2 15:0 10:0 11:0 12:0 13:0 14:0 16:100
2:60 13:11 15:1 10:1 11:660719635 12:1
2:70 13:0 15:0 10:0 11:0 12:0
2:80 4:3 2:0 6:0 16:0
1:100 4:3 2:0 6:0 16:0""")
# §1.6: nosv lists its types only after a complete run; nanos6 and openmp always
case("types-nosv-pcf-empty-after-abort", T1 + [("VTx", u32(1, 0)), ("VTx", u32(1, 0)), "OHe"],
     models=NV, exit=1, stderr=R("VTx", 140, 106, "cannot execute body 1 of task 1: it is Running"),
     checks=[pcf_block("thread.pcf", 11, values=[])])
case("types-nanos6-pcf-after-abort", [ohx(), ty("6Yc", 1, "testtype666"), "6U[", "6U[", "OHe"],
     models=N6, exit=1, stderr=R("6U[", 130, 80, "nanos6 subsystem of thread TH 1.1 already has 4 on top"),
     checks=[pcf_block("thread.pcf", 36, values=[f"{gid('testtype666')} testtype666"])])
TYP = [ohx(), ty("POc", 5, "mytask"), ty("POc", 6, "myfor")]
case("types-openmp-pcf-after-abort", TYP + ["PZz", "OHe"], models=OMP, exit=1,
     stderr=R("PZz", 130, 89, "unknown event category of the openmp model"),
     checks=[pcf_block("thread.pcf", 51, values=["80608079 mytask", "1100150826 myfor"])])

# ---------------------------------------------------------------- §2.2 tasks and bodies
case("tasks-unknown-type", [ohx(), ty("VYc", 1, "a"), ("VTc", u32(1, 2)), "OHe"], models=NV,
     exit=1, stderr=R("VTc", 120, 58, "task 1: task type 2 does not exist in process 1"))
case("tasks-duplicate", T1 + [("VTc", u32(1, 1)), "OHe"], models=NV, exit=1,
     stderr=R("VTc", 130, 86, "task 1 already exists in process 1"))
case("tasks-unknown-task", T1 + [("VTx", u32(2, 0)), "OHe"], models=NV, exit=1,
     stderr=R("VTx", 130, 86, "task 2 does not exist in process 1"))
case("tasks-nest-without-pause", T1 + [("VTc", u32(2, 1)), ("VTx", u32(1, 0)), ("VTx", u32(2, 0)),
                                       "OHe"], models=NV, exit=1,
     stderr=R("VTx", 150, 126, "cannot execute body 1 of task 2 over body 1 of task 1, which is "
              "running on thread TH 1.1"))
case("tasks-pause-parallel", [ohx(), ty("VYc", 1, "a"), ("VTC", u32(1, 1)), ("VTx", u32(1, 3)),
                              ("VTp", u32(1, 3)), "OHe"], models=NV, exit=1,
     stderr=R("VTp", 140, 98, "cannot pause body 3 of task 1: the task cannot be paused"))
case("tasks-pause-never-run", T1 + [("VTp", u32(1, 0)), "OHe"], models=NV, exit=1,
     stderr=R("VTp", 130, 86, "cannot pause body 1 of task 1: it never ran"))
case("tasks-resume-never-run", T1 + [("VTr", u32(1, 0)), "OHe"], models=NV, exit=1,
     stderr=R("VTr", 130, 86, "cannot resume body 1 of task 1: it never ran"))
case("tasks-end-never-run", T1 + [("VTe", u32(1, 0)), "OHe"], models=NV, exit=1,
     stderr=R("VTe", 130, 86, "cannot end body 1 of task 1: it never ran"))
case("tasks-resume-running", T1 + [("VTx", u32(1, 0)), ("VTr", u32(1, 0)), "OHe"], models=NV,
     exit=1, stderr=R("VTr", 140, 106, "cannot resume body 1 of task 1: it is Running"))
case("tasks-end-paused", T1 + [("VTx", u32(1, 0)), ("VTp", u32(1, 0)), ("VTe", u32(1, 0)), "OHe"],
     models=NV, exit=1, stderr=R("VTe", 150, 126, "cannot end body 1 of task 1: it is Paused"))
case("tasks-execute-paused", T1 + [("VTx", u32(1, 0)), ("VTp", u32(1, 0)), ("VTx", u32(1, 0)),
                                   "OHe"], models=NV, exit=1,
     stderr=R("VTx", 150, 126, "cannot execute body 1 of task 1: it is Paused"))
case("tasks-parallel-body-rerun",
     [ohx(), ty("VYc", 1, "a"), ("VTC", u32(1, 1)), ("VTx", u32(1, 2)), ("VTe", u32(1, 2)),
      ("VTx", u32(1, 2)), "OHe"], models=NV, exit=1,
     stderr=R("VTx", 150, 118, "cannot execute body 2 of task 1: it has ended and the task cannot "
              "run again"))
case("tasks-resume-not-innermost",
     T1 + [("VTc", u32(2, 1)), ("VTx", u32(1, 0)), ("VTp", u32(1, 0)), ("VTx", u32(2, 0)),
           ("VTp", u32(2, 0)), ("VTr", u32(1, 0)), "OHe"], models=NV, exit=1,
     stderr=R("VTr", 180, 186, "cannot resume body 1 of task 1: it is not the innermost body of "
              "thread TH 1.1"))

# ---------------------------------------------------------------- §3 nosv
case("nosv-VPp-first", [ohx(), "VPp", "OHe"], models=NV, exit=1,
     stderr=R("VPp", 110, 36, "nosv idle of thread TH 1.1 already holds 100"))
case("nosv-idle-same-twice", [ohx(), "VPr", "VPr", "OHe"], models=NV, exit=1,
     stderr=R("VPr", 120, 48, "nosv idle of thread TH 1.1 already holds 101"),
     thread=NV_T0 + "\n1:10 16:101", cpu=NV_C0 + "\n1:10 16:101")
case("nosv-idle-states", [ohx(), "VPr", "VPa", "VPp", "OHp", "OHr", "OHe"], models=NV,
     thread=NV_T0 + """
1:10 16:101
1:20 16:102
1:30 16:100
1:40 4:2 2:0 16:0
1:50 4:1 2:1 16:100
1:60 4:3 2:0 6:0 16:0""",
     cpu=NV_C0 + """
1:10 16:101
1:20 16:102
1:30 16:100
1:40 2:0 1:0 3:0 16:101
1:50 2:1 1:1 3:1 16:100
1:60 2:0 1:0 3:0 16:101""")
case("nosv-task-id-0", [ohx(), ty("VYc", 1, "a"), ("VTc", u32(0, 1)), ("VTx", u32(0, 0)), "OHe"],
     models=NV, exit=1, stderr=R("VTx", 130, 78, "task id 0 cannot run"))
case("nosv-bodyid-nonpar", T1 + [("VTx", u32(1, 1)), "OHe"], models=NV, exit=1,
     stderr=R("VTx", 130, 86, "task 1 is not parallel: its body id must be 0, not 1"))
case("nosv-bodyid-par0", [ohx(), ty("VYc", 1, "a"), ("VTC", u32(1, 1)), ("VTx", u32(1, 0)), "OHe"],
     models=NV, exit=1, stderr=R("VTx", 130, 78, "task 1 is parallel: its body id must not be 0"))
case("nosv-exec-2-bytes", T1 + [("VTx", b"\1\0"), "OHe"], models=NV, exit=1,
     stderr=R("VTx", 130, 86, "VTx needs at least 8 payload bytes, it has 2"))
case("nosv-exec-4-bytes", T1 + [("VTx", u32(1)), "OHe"], models=NV, exit=1,
     stderr=R("VTx", 130, 86, "VTx needs at least 8 payload bytes, it has 4"))
case("nosv-create-4-bytes", [ohx(), ty("VYc", 1, "a"), ("VTc", u32(1)), "OHe"], models=NV, exit=1,
     stderr=R("VTc", 120, 58, "VTc needs at least 8 payload bytes, it has 4"))
case("nosv-exec-extra-bytes-ignored",
     T1 + [("VTx", u32(1, 0, 9)), ("VTe", u32(1, 0, 9, 9)), "OHe"], models=NV, meta={"app_id": 7},
     thread=NV_T0 + """
1:30 13:11 15:1 10:1 11:1690940984 12:7
1:40 13:0 15:0 10:0 11:0 12:0
1:50 4:3 2:0 6:0 16:0""")
case("nosv-end-pops-11", T1 + [("VTx", u32(1, 0)), "VS[", ("VTe", u32(1, 0)), "OHe"], models=NV,
     exit=1, stderr=R("VTe", 150, 118, "nosv subsystem of thread TH 1.1: pop of 11 but the top is 7"))
case("nosv-pop-empty", [ohx(), "VS]", "OHe"], models=NV, exit=1,
     stderr=R("VS]", 110, 36, "nosv subsystem of thread TH 1.1: pop of 7 from an empty stack"))
case("nosv-unknown-category", [ohx(), "VZz", "OHe"], models=NV, exit=1,
     stderr=R("VZz", 110, 36, "unknown event category of the nosv model"))
case("nosv-unknown-value", [ohx(), "VSz", "OHe"], models=NV, exit=1,
     stderr=R("VSz", 110, 36, "unknown event of the nosv model"))
case("nosv-ssdup", [ohx(), "VS[", "VS[", "VS]", "VSN", "VSn", "VS]", "OHe"], models=NV,
     thread=NV_T0 + """
1:10 13:7
1:20 13:7
1:30 13:7
1:40 13:7
1:50 13:7
1:60 13:0
1:70 4:3 2:0 6:0 16:0""",
     cpu=NV_C0 + """
1:10 13:7
1:20 13:7
1:30 13:7
1:40 13:7
1:50 13:7
1:60 13:0
1:70 2:0 1:0 3:0 16:101""")
case("nosv-resurrect", [ohx(), ty("VYc", 5, "mytype"), ("VTc", u32(1, 5)), ("VTx", u32(1, 0)),
                        ("VTe", u32(1, 0)), ("VTx", u32(1, 0)), ("VTe", u32(1, 0)), "OHe"], models=NV,
     thread=NV_T0 + """
1:30 13:11 15:1 10:1 11:2004224627 12:1
1:40 13:0 15:0 10:0 11:0 12:0
1:50 13:11 15:1 10:1 11:2004224627 12:1
1:60 13:0 15:0 10:0 11:0 12:0
1:70 4:3 2:0 6:0 16:0""",
     cpu=NV_C0 + """
1:30 13:11 15:1 10:1 11:2004224627 12:1
1:40 13:0 15:0 10:0 11:0 12:0
1:50 13:11 15:1 10:1 11:2004224627 12:1
1:60 13:0 15:0 10:0 11:0 12:0
1:70 2:0 1:0 3:0 16:101""")
case("nosv-cooling", [ohx(), "OHc", "VAs", "VAS", "OHp", "OHw", "OHr", "OHe"], models=NV,
     thread=NV_T0 + """
1:10 4:4 16:0
1:20 13:14
1:30 13:0
1:40 4:2 2:0
1:50 4:5 2:1
1:60 4:1 16:100
1:70 4:3 2:0 6:0 16:0""",
     cpu=NV_C0 + """
1:10 2:0 1:0 3:0 16:101
1:60 2:1 1:1 3:1 16:100
1:70 2:0 1:0 3:0 16:101""")
case("nosv-parallel-bodies", [ohx(), ty("VYc", 1, "a"), ("VTC", u32(1, 1)), ("VTx", u32(1, 1)),
                              ("VTe", u32(1, 1)), ("VTx", u32(1, 2)), ("VTe", u32(1, 2)), "OHe"],
     models=NV, thread=NV_T0 + f"""
1:30 13:11 15:1 10:1 11:{gid('a')} 12:1
1:40 13:0 15:0 10:0 11:0 12:0
1:50 13:11 15:2 10:1 11:{gid('a')} 12:1
1:60 13:0 15:0 10:0 11:0 12:0
1:70 4:3 2:0 6:0 16:0""")
case("nosv-parallel-bodies-concurrent",
     threads=[(1, [ohx(), ty("VYc", 1, "alpha"), ("VTC", u32(1, 1)), ("VTx", u32(1, 1)), At(200),
                   ("VTe", u32(1, 1)), "OHe"], 100, None),
              (2, [ohx(1), At(150), ("VTx", u32(1, 2)), ("VTe", u32(1, 2)), "OHe"], 105, None)],
     cpus=2, models=NV,
     thread=NV_T0 + """
2:5 6:2 4:1 2:2 15:0 10:0 11:0 12:0 13:0 14:0 16:100
1:30 13:11 15:1 10:1 11:660719635 12:1
2:50 13:11 15:2 10:1 11:660719635 12:1
2:60 13:0 15:0 10:0 11:0 12:0
2:70 4:3 2:0 6:0 16:0
1:100 13:0 15:0 10:0 11:0 12:0
1:110 4:3 2:0 6:0 16:0""")
case("nosv-nest-to-parallel-rank",
     T1 + [("VTC", u32(2, 1)), ("VTx", u32(1, 0)), ("VTp", u32(1, 0)), ("VTx", u32(2, 5)),
           ("VTe", u32(2, 5)), ("VTr", u32(1, 0)), ("VTe", u32(1, 0)), "OHe"], models=NV, rank=2,
     thread=NV_T0 + """
1:40 13:11 15:1 10:1 11:1690940984 12:1 14:3
1:50 15:0 10:0 11:0 12:0 14:0
1:60 13:11 15:5 10:2 11:1690940984 12:1 14:3
1:70 13:11 15:0 10:0 11:0 12:0 14:0
1:80 15:1 10:1 11:1690940984 12:1 14:3
1:90 13:0 15:0 10:0 11:0 12:0 14:0
1:100 4:3 2:0 6:0 16:0""",
     cpu=NV_C0 + """
1:40 13:11 15:1 10:1 11:1690940984 12:1 14:3
1:50 15:0 10:0 11:0 12:0 14:0
1:60 13:11 15:5 10:2 11:1690940984 12:1 14:3
1:70 13:11 15:0 10:0 11:0 12:0 14:0
1:80 15:1 10:1 11:1690940984 12:1 14:3
1:90 13:0 15:0 10:0 11:0 12:0 14:0
1:100 2:0 1:0 3:0 16:101""")
case("nosv-ignored-events", [ohx(), "VHa", "VHA", "VSr", "VSs", "VS@", "OHe"], models=NV,
     thread=NV_T0 + "\n1:60 4:3 2:0 6:0 16:0", cpu=NV_C0 + "\n1:60 2:0 1:0 3:0 16:101")
NV_PAIRS = [("VSh", "VSf", 6), ("VS[", "VS]", 7), ("VSN", "VSn", 7), ("VU[", "VU]", 8),
            ("VMa", "VMA", 9), ("VMf", "VMF", 10)] + \
    [("VA" + c, "VA" + c.upper(), 12 + i) for i, c in enumerate("rdspywcaeltubogkjmin")] + \
    [("VHw", "VHW", 32), ("VHd", "VHD", 33)]
case("nosv-subsystem-values", [ohx()] + [e for p in NV_PAIRS for e in p[:2]] + ["OHe"], models=NV,
     checks=[records_between("thread.prv", 10, 10 * 2 * len(NV_PAIRS), [
         f"1:{10 * (2 * i + 1 + j)}:13:{p[2] if j == 0 else 0}"
         for i, p in enumerate(NV_PAIRS) for j in (0, 1)]),
         pcf_block("thread.pcf", 13, values=[val(v, lab) for v, lab in [
             (2, "Unknown subsystem"), (6, "Scheduler: Hungry"), (7, "Scheduler: Serving"),
             (8, "Scheduler: Submitting"), (9, "Memory: Allocating"), (10, "Memory: Freeing"),
             (11, "Task: In body"), (12, "API: Create"), (13, "API: Destroy"), (14, "API: Submit"),
             (15, "API: Pause"), (16, "API: Yield"), (17, "API: Waitfor"),
             (18, "API: Scheduling point"), (19, "API: Attach"), (20, "API: Detach"),
             (21, "API: Mutex lock"), (22, "API: Mutex trylock"), (23, "API: Mutex unlock"),
             (24, "API: Barrier wait"), (25, "API: Cond wait"), (26, "API: Cond signal"),
             (27, "API: Cond broadcast"), (28, "API: Join"), (29, "API: Join all"),
             (30, "API: Wait"), (31, "API: Wait all"), (32, "Thread: Worker"),
             (33, "Thread: Delegate"), (35, "EV Scheduler: Send task"),
             (34, "EV Scheduler: Recv task"), (36, "EV Scheduler: Self-assign task")]]),
         pcf_block("thread.pcf", 16, values=[val(100, "Progressing"), val(101, "Resting"),
                                             val(102, "Absorbing noise")])])
# §1.5 preconditions: Active and not out of CPU
case("nosv-while-paused", [ohx(), "OHp", "VS[", "VS]", "OHr", "OHe"], models=NV, exit=1,
     stderr=R("VS[", 120, 48, "thread TH 1.1 is Paused, but events of the nosv model need it "
              "Running, Cooling or Warming"))
case("nosv-while-out-of-cpu", [ohx(), "KCO", "VS[", "VS]", "KCI", "OHe"],
     models=dict(NV, kernel="1.0.0"), exit=1,
     stderr=R("VS[", 120, 48, "thread TH 1.1 is out of its CPU (flag out-of-cpu), and events of "
              "the nosv model are refused then"))
case("nosv-type-before-OHx", [ty("VYc", 1, "a"), ohx(), "OHe"], models=NV, exit=1,
     stderr=R("VYc", 100, 8, "thread TH 1.1 is Unknown, but events of the nosv model need it "
              "Running, Cooling or Warming"))
case("nosv-leftover-subsystem", [ohx(), "VS[", "OHe"], models=NV, exit=1,
     stderr=leftover("nosv", "subsystem", 7))

# ---------------------------------------------------------------- §3.5 hardware counters
case("hwc-ok2", [ohx(), J("VWC", i64(5, -5)), J("VWC", i64(0, -5)), "OHc", "OHp", "OHw", "OHr",
                 J("VWC", i64(3, 3)), "OHe"], models=NV, top=HWC2,
     thread="""
1:0 6:1 4:1 2:1 15:0 10:0 11:0 12:0 13:0 14:0 16:100 200:0 201:0
1:10 200:5 201:-5
1:20 200:0 201:-5
1:30 4:4 16:0 200:0 201:-5
1:40 4:2 2:0 200:0 201:0
1:50 4:5 2:1 200:0 201:-5
1:60 4:1 16:100 200:0 201:-5
1:70 200:3 201:3
1:80 4:3 2:0 6:0 16:0 200:0 201:0""",
     cpu="""
1:0 2:1 1:1 3:1 7:0 15:0 10:0 11:0 12:0 13:0 14:0 16:100 200:0 201:0
1:10 200:5 201:-5
1:20 200:0 201:-5
1:30 2:0 1:0 3:0 16:101 200:0 201:0
1:60 2:1 1:1 3:1 16:100 200:0 201:-5
1:70 200:3 201:3
1:80 2:0 1:0 3:0 16:101 200:0 201:0""",
     checks=[pcf_order("thread.pcf", [6, 2, 4, 7, 15, 10, 11, 12, 13, 14, 16, 200, 201]),
             pcf_block("thread.pcf", 200, "cycles", []), pcf_block("thread.pcf", 201, "instr", []),
             pcf_block("cpu.pcf", 200, "cycles", []), pcf_block("cpu.pcf", 201, "instr", [])])
# a stream with an empty nosv.hwc object is ignored
case("hwc-empty-object-ignored",
     threads=[(1, [ohx(), J("VWC", i64(4)), "OHe"], 100, {"nosv": {"hwc": {"0": {"name": "a"}}}}),
              (2, [ohx(1), "OHe"], 105, {"nosv": {"hwc": {}}})], cpus=2, models=NV,
     thread="""
1:0 6:1 4:1 2:1 15:0 10:0 11:0 12:0 13:0 14:0 16:100 200:0
2:5 6:2 4:1 2:2 15:0 10:0 11:0 12:0 13:0 14:0 16:100 200:0
1:10 200:4
2:15 4:3 2:0 6:0 16:0
1:20 4:3 2:0 6:0 16:0 200:0""")
case("hwc-none-declared", [ohx(), J("VWC", i64(1)), "OHe"], models=NV, exit=1,
     stderr=R("VWC", 110, 36, "no counters are declared (nosv.hwc in the metadata)"))
case("hwc-not-jumbo", [ohx(), ("VWC", i64(1, 2)), "OHe"], models=NV, top=HWC2, exit=1,
     stderr=R("VWC", 110, 36, "VWC must be a jumbo event"))
case("hwc-size-8-of-16", [ohx(), J("VWC", i64(1)), "OHe"], models=NV, top=HWC2, exit=1,
     stderr=R("VWC", 110, 36, "8 bytes of counters, but 2 counters are declared (16 bytes)"))
case("hwc-size-24-of-16", [ohx(), J("VWC", i64(1, 2, 3)), "OHe"], models=NV, top=HWC2, exit=1,
     stderr=R("VWC", 110, 36, "24 bytes of counters, but 2 counters are declared (16 bytes)"))
case("hwc-VWx-unknown", [ohx(), J("VWx", i64(1, 2)), "OHe"], models=NV, top=HWC2, exit=1,
     stderr=R("VWx", 110, 36, "unknown event of the nosv model"))
# start-up refusals
case("hwc-bad-index", [ohx(), "OHe"], models=NV,
     top={"nosv": {"hwc": {"0": {"name": "a"}, "2": {"name": "b"}}}}, exit=1,
     stderr=S("nosv.hwc: counter index '2' must be an integer from 0 to 1 (the number of counters "
              "less one, below 100)"))
case("hwc-index-not-integer", [ohx(), "OHe"], models=NV, top={"nosv": {"hwc": {"0x": {"name": "a"}}}},
     exit=1, stderr=S("nosv.hwc: counter index '0x' must be an integer from 0 to 0 (the number of "
                      "counters less one, below 100)"))
case("hwc-name-mismatch",
     threads=[(1, [ohx(), "OHe"], 100, {"nosv": {"hwc": {"0": {"name": "a"}}}}),
              (2, [ohx(1), "OHe"], 105, {"nosv": {"hwc": {"0": {"name": "b"}}}})],
     cpus=2, models=NV, exit=1, stderr=S('nosv.hwc.0 is named "b", but "a" elsewhere', thread=2))
case("hwc-count-mismatch",
     threads=[(1, [ohx(), "OHe"], 100, {"nosv": {"hwc": {"0": {"name": "a"}}}}),
              (2, [ohx(1), "OHe"], 105, {"nosv": {"hwc": {"0": {"name": "a"}, "1": {"name": "b"}}}})],
     cpus=2, models=NV, exit=1,
     stderr=S("nosv.hwc declares 2 counters, but loom.vm/proc.1/thread.1 declares 1", thread=2))

# ---------------------------------------------------------------- §3.6 nosv breakdown availability
case("nosv-bd-missing", [ohx(), "OHe"], models=NV, flags=["-b"], exit=1,
     stderr=S("nosv.can_breakdown is missing (-b needs it as true or false in every stream)"))
case("nosv-bd-missing-one-stream",
     threads=[(1, [ohx(), "OHe"], 100, BD_TRUE), (2, [ohx(1), "OHe"], 105, None)], cpus=2,
     flags=["-b"], models=NV, exit=1,
     stderr=S("nosv.can_breakdown is missing (-b needs it as true or false in every stream)",
              thread=2))
case("nosv-bd-not-boolean", [ohx(), "OHe"], models=NV, flags=["-b"],
     top={"nosv": {"can_breakdown": "yes"}}, exit=1,
     stderr=S("nosv.can_breakdown is not a boolean (-b needs it as true or false in every stream)"))
case("nosv-bd-not-boolean-without-b", [ohx(), "OHe"], models=NV,
     top={"nosv": {"can_breakdown": "yes"}})
case("nosv-bd-false", [ohx(), "OHe"], models=NV, flags=["-b"], top={"nosv": {"can_breakdown": False}},
     stderr="weft emu: warning: no nosv breakdown: nosv.can_breakdown is false in some stream\n",
     checks=[files_are(PRV_FILES + ["cfg"])])

# ---------------------------------------------------------------- §4 nanos6
TY6 = [ohx(), ty("6Yc", 1, "a"), ("6Tc", u32(1, 1))]
case("nanos6-6Tc-12-bytes", [ohx(), ty("6Yc", 1, "a"), ("6Tc", u32(1, 1, 0)), "OHe"], models=N6,
     exit=1, stderr=R("6Tc", 120, 58, "6Tc needs exactly 8 payload bytes, it has 12"))
case("nanos6-6Tc-4-bytes", [ohx(), ty("6Yc", 1, "a"), ("6Tc", u32(1)), "OHe"], models=N6, exit=1,
     stderr=R("6Tc", 120, 58, "6Tc needs exactly 8 payload bytes, it has 4"))
case("nanos6-6Tx-2-bytes", TY6 + [("6Tx", b"\1\0"), "OHe"], models=N6, exit=1,
     stderr=R("6Tx", 130, 78, "6Tx needs at least 4 payload bytes, it has 2"))
case("nanos6-6Tx-extra-bytes-ignored", TY6 + [("6Tx", u32(1, 7)), ("6Te", u32(1, 7)), "OHe"],
     models=N6, thread=N6_T0 + f"""
1:30 37:1 35:1 36:{gid('a')}
1:40 37:0 35:0 36:0
1:50 4:3 2:0 6:0 36:0 38:0 40:0""")
case("nanos6-subsystem-dup", [ohx(), "6U[", "6U[", "6U]", "6U]", "OHe"], models=N6, exit=1,
     stderr=R("6U[", 120, 48, "nanos6 subsystem of thread TH 1.1 already has 4 on top"))
case("nanos6-thread-type-dup", [ohx(), "6Hw", "6Hw", "OHe"], models=N6, exit=1,
     stderr=R("6Hw", 120, 48, "nanos6 thread-type of thread TH 1.1 already has 3 on top"))
case("nanos6-6Pp-first", [ohx(), "6Pp", "OHe"], models=N6, exit=1,
     stderr=R("6Pp", 110, 36, "nanos6 idle of thread TH 1.1 already holds 100"))
case("nanos6-resume-other-thread",
     threads=[(1, TY6 + [("6Tx", u32(1)), ("6Tp", u32(1)), At(300), "OHe"], 100, None),
              (2, [ohx(1), At(200), ("6Tr", u32(1)), "OHe"], 105, None)], cpus=2, models=N6, exit=1,
     stderr=R("6Tr", 200, 36, "cannot resume body 1 of task 1: it is not the innermost body of "
              "thread TH 1.2", thread=2))
case("nanos6-run-again-after-end", TY6 + [("6Tx", u32(1)), ("6Te", u32(1)), ("6Tx", u32(1)), "OHe"],
     models=N6, exit=1,
     stderr=R("6Tx", 150, 110, "cannot execute body 1 of task 1: it has ended and the task cannot "
              "run again"))
case("nanos6-task-id-0", [ohx(), ty("6Yc", 1, "a"), ("6Tc", u32(0, 1)), ("6Tx", u32(0)), "OHe"],
     models=N6, exit=1, stderr=R("6Tx", 130, 78, "task id 0 cannot run"))
case("nanos6-6TC-accepted-with-warning", [ohx(), ("6TC", u32(1, 1)), ("6TC", u32(2, 1)), "OHe"],
     models=N6, stderr=W("6TC is an old task creation event and is ignored (nanos6 event at clock "
                         "110; warned once)"),
     thread=N6_T0 + "\n1:30 4:3 2:0 6:0 36:0 38:0 40:0",
     cpu=N6_C0 + "\n1:30 2:0 1:0 3:0 36:0 38:0 40:101")
case("nanos6-relaxed", [ohx(), ty("6Yc", 5, "mytype"), ty("6Yc", 6, "other"), ("6Tc", u32(1, 5)),
                        ("6Tc", u32(2, 6)), ("6Tx", u32(1)), "6U[", ("6Tx", u32(2)), ("6Te", u32(2)),
                        "6U]", ("6Te", u32(1)), "OHe"], models=N6, rank=0, stderr=RELAX_WARN,
     thread=N6_T0 + f"""
1:50 37:1 35:1 36:2004224627 38:1
1:60 37:4
1:70 37:1 35:2 36:{gid('other')} 38:1
1:80 37:4 35:1 36:2004224627 38:1
1:90 37:1
1:100 37:0 35:0 36:0 38:0
1:110 4:3 2:0 6:0 36:0 38:0 40:0""",
     cpu=N6_C0 + f"""
1:50 37:1 35:1 36:2004224627 38:1
1:60 37:4
1:70 37:1 35:2 36:{gid('other')} 38:1
1:80 37:4 35:1 36:2004224627 38:1
1:90 37:1
1:100 37:0 35:0 36:0 38:0
1:110 2:0 1:0 3:0 36:0 38:0 40:101""")
case("nanos6-relaxed-same-subsystem",
     TY6 + [("6Tc", u32(2, 1)), ("6Tx", u32(1)), ("6Tx", u32(2)), "OHe"], models=N6, exit=1,
     stderr=RELAX_WARN + R("6Tx", 150, 114, "nanos6 subsystem of thread TH 1.1 already has 1 on top"),
     thread=N6_T0 + f"\n1:40 37:1 35:1 36:{gid('a')}")
case("nanos6-pause-resume-rank",
     TY6 + [("6Tx", u32(1)), ("6Tp", u32(1)), "6Bb", "6BB", ("6Tr", u32(1)), ("6Te", u32(1)), "OHe"],
     models=N6, rank=1, thread=N6_T0 + f"""
1:30 37:1 35:1 36:{gid('a')} 38:2
1:40 35:0 36:0 38:0
1:50 37:14
1:60 37:1
1:70 35:1 36:{gid('a')} 38:2
1:80 37:0 35:0 36:0 38:0
1:90 4:3 2:0 6:0 36:0 38:0 40:0""")
case("nanos6-thread-type-any-emitdup", [ohx(), "6Hw", "OHp", "OHr", "6Hl", "6HL", "6HW", "OHe"],
     models=N6,
     thread=N6_T0 + """
1:10 39:3
1:20 4:2 2:0 36:0 38:0 40:0
1:30 4:1 2:1 36:0 38:0 40:100
1:40 39:1
1:50 39:3
1:60 39:0
1:70 4:3 2:0 6:0 36:0 38:0 40:0""",
     cpu=N6_C0 + """
1:10 39:3
1:20 2:0 1:0 3:0 36:0 38:0 39:0 40:101
1:30 2:1 1:1 3:1 36:0 38:0 39:3 40:100
1:40 39:1
1:50 39:3
1:60 39:0
1:70 2:0 1:0 3:0 36:0 38:0 40:101""")
case("nanos6-thread-type-left-accepted", [ohx(), "6Hw", "OHe"], models=N6)
case("nanos6-while-cooling", [ohx(), "OHc", "6U[", "6U]", "OHp", "OHr", "OHe"], models=N6,
     thread=N6_T0 + """
1:10 4:4 36:0 38:0 40:0
1:20 37:4
1:30 37:0
1:40 4:2 2:0 36:0 38:0
1:50 4:1 2:1 36:0 38:0 40:100
1:60 4:3 2:0 6:0 36:0 38:0 40:0""",
     cpu=N6_C0 + """
1:10 2:0 1:0 3:0 36:0 38:0 40:101
1:50 2:1 1:1 3:1 36:0 38:0 40:100
1:60 2:0 1:0 3:0 36:0 38:0 40:101""")
case("nanos6-while-paused", [ohx(), "OHp", "6U[", "6U]", "OHr", "OHe"], models=N6, exit=1,
     stderr=R("6U[", 120, 48, "thread TH 1.1 is Paused, but events of the nanos6 model need it "
              "Running, Cooling or Warming"))
case("nanos6-ignored-events", [ohx(), "6W*", "6t[", "6t]", "6S@", "6Sr", "6Ss", "OHe"], models=N6,
     thread=N6_T0 + "\n1:70 4:3 2:0 6:0 36:0 38:0 40:0")
case("nanos6-leftover-subsystem", [ohx(), "6U[", "OHe"], models=N6, exit=1,
     stderr=leftover("nanos6", "subsystem", 4))
N6_PAIRS = [("6W[", "6W]", 19), ("6Wt", "6WT", 18), ("6Ww", "6WW", 20), ("6Wm", "6WM", 21),
            ("6Ws", "6WS", 22), ("6Wr", "6WR", 23), ("6Wg", "6WG", 24), ("6C[", "6C]", 3),
            ("6U[", "6U]", 4), ("6F[", "6F]", 5), ("6O[", "6O]", 6), ("6Ma", "6MA", 16),
            ("6Mf", "6MF", 17), ("6Dr", "6DR", 10), ("6Du", "6DU", 11), ("6S[", "6S]", 9),
            ("6Sa", "6SA", 7), ("6Sp", "6SP", 8), ("6Bb", "6BB", 14), ("6Bu", "6BU", 15),
            ("6Bw", "6BW", 12), ("6Bf", "6BF", 13)]
N6_TT = [("6He", "6HE", 4), ("6Hw", "6HW", 3), ("6Hl", "6HL", 1), ("6Hm", "6HM", 2)]
case("nanos6-subsystem-and-thread-type-values",
     [ohx()] + [e for p in N6_PAIRS + N6_TT for e in p[:2]] + ["OHe"], models=N6,
     checks=[records_between("thread.prv", 10, 10 * 2 * len(N6_PAIRS + N6_TT), [
         f"1:{10 * (2 * i + 1 + j)}:{37 if i < len(N6_PAIRS) else 39}:{p[2] if j == 0 else 0}"
         for i, p in enumerate(N6_PAIRS + N6_TT) for j in (0, 1)]),
         pcf_block("thread.pcf", 37, values=[val(v, lab) for v, lab in [
             (2, "Unknown subsystem"), (1, "Task: Running body"), (3, "Task: Creating"),
             (4, "Task: Submitting"), (5, "Task: Spawning function"), (6, "Task: Running task for"),
             (9, "Scheduler: Serving tasks"), (7, "Scheduler: Adding ready tasks"),
             (8, "Scheduler: Processing ready tasks"), (10, "Dependency: Registering"),
             (11, "Dependency: Unregistering"), (12, "Blocking: Taskwait"),
             (14, "Blocking: Blocking current task"), (15, "Blocking: Unblocking remote task"),
             (13, "Blocking: Wait for deadline"), (18, "Worker: Handling task"),
             (19, "Worker: Looking for work"), (20, "Worker: Switching to another thread"),
             (21, "Worker: Migrating CPU"), (22, "Worker: Suspending thread"),
             (23, "Worker: Resuming another thread"), (24, "Worker: Sponge mode"),
             (16, "Memory: Allocating"), (17, "Memory: Freeing"), (61, "EV Scheduler: Send task"),
             (60, "EV Scheduler: Recv task"), (62, "EV Scheduler: Self-assign task"),
             (63, "EV CPU: Becomes idle"), (64, "EV CPU: Becomes active"),
             (65, "EV Worker: Waking another thread")]]),
         pcf_block("thread.pcf", 39, values=[val(4, "External"), val(3, "Worker"),
                                             val(1, "Leader"), val(2, "Main")]),
         pcf_block("thread.pcf", 40, values=[val(100, "Progressing"), val(101, "Resting"),
                                             val(102, "Absorbing noise")])])

# ---------------------------------------------------------------- §5 openmp
case("openmp-PPc-task-0", TYP + [("PPc", u32(0, 5)), "OHe"], models=OMP, exit=1,
     stderr=R("PPc", 130, 89, "task id 0 is not allowed"))
case("openmp-PPc-type-0", TYP + [("PPc", u32(1, 0)), "OHe"], models=OMP, exit=1,
     stderr=R("PPc", 130, 89, "task type id 0 is not allowed"))
case("openmp-PPc-unknown-type", TYP + [("PPc", u32(1, 9)), "OHe"], models=OMP, exit=1,
     stderr=R("PPc", 130, 89, "task 1: task type 9 does not exist in process 1"))
case("openmp-PPc-12-bytes", TYP + [("PPc", u32(1, 5, 0)), "OHe"], models=OMP, exit=1,
     stderr=R("PPc", 130, 89, "PPc needs exactly 8 payload bytes, it has 12"))
case("openmp-PPx-task-0", TYP + [("PPx", u32(0)), "OHe"], models=OMP, exit=1,
     stderr=R("PPx", 130, 89, "task 0 does not exist in process 1"))
case("openmp-PQx-unknown-type", TYP + [("PQx", u32(9)), "OHe"], models=OMP, exit=1,
     stderr=R("PQx", 130, 89, "task type 9 does not exist in process 1"))
case("openmp-PQx-type-0", TYP + [("PQx", u32(0)), "OHe"], models=OMP, exit=1,
     stderr=R("PQx", 130, 89, "task type 0 does not exist in process 1"))
case("openmp-PQx-2-bytes", TYP + [("PQx", b"\5\0"), "OHe"], models=OMP, exit=1,
     stderr=R("PQx", 130, 89, "PQx needs at least 4 payload bytes, it has 2"))
case("openmp-PQe-pop-mismatch", TYP + [("PQx", u32(5)), ("PQe", u32(6)), "OHe"], models=OMP, exit=1,
     stderr=R("PQe", 140, 105, "openmp label of thread TH 1.1: pop of 1100150826 but the top is "
              "80608079"))
case("openmp-PPe-label-not-on-top",
     TYP + [("PPc", u32(1, 5)), ("PPx", u32(1)), ("PQx", u32(6)), ("PPe", u32(1)), "OHe"],
     models=OMP, exit=1,
     stderr=R("PPe", 160, 141, "openmp label of thread TH 1.1: pop of 80608079 but the top is "
              "1100150826"))
case("openmp-end-not-on-top",
     TYP + [("PPc", u32(1, 5)), ("PPc", u32(2, 5)), ("PPx", u32(1)), ("PPx", u32(2)),
            ("PPe", u32(1)), "OHe"], models=OMP, exit=1,
     stderr=RELAX_WARN + R("PPe", 170, 161, "cannot end body 1 of task 1: it is not the innermost "
                           "body of thread TH 1.1"))
case("openmp-double-execute", TYP + [("PPc", u32(1, 5)), ("PPx", u32(1)), ("PPx", u32(1)), "OHe"],
     models=OMP, exit=1, stderr=R("PPx", 150, 125, "cannot execute body 1 of task 1: it is Running"))
case("openmp-while-cooling", [ohx(), "OHc", "PBb", "PBB", "OHp", "OHr", "OHe"], models=OMP, exit=1,
     stderr=R("PBb", 120, 48, "thread TH 1.1 is Cooling, but events of the openmp model need it "
              "Running"))
case("openmp-POc-while-paused", [ohx(), "OHp", ty("POc", 1, "a"), "OHr", "OHe"], models=OMP, exit=1,
     stderr=R("POc", 120, 48, "thread TH 1.1 is Paused, but events of the openmp model need it "
              "Running"))
case("openmp-unknown-category", [ohx(), "PZz", "OHe"], models=OMP, exit=1,
     stderr=R("PZz", 110, 36, "unknown event category of the openmp model"))
case("openmp-unknown-value", [ohx(), "PBz", "OHe"], models=OMP, exit=1,
     stderr=R("PBz", 110, 36, "unknown event of the openmp model"))
case("openmp-leftover-subsystem", [ohx(), "PBb", "OHe"], models=OMP, exit=1,
     stderr=leftover("openmp", "subsystem", 3))
case("openmp-spin-ignored", [ohx(), "PBs", "PBS", "OHe"], models=OMP,
     thread=OMP_T0 + "\n1:30 4:3 2:0 6:0", cpu=OMP_C0 + "\n1:30 2:0 1:0 3:0")
case("openmp-nest-resurrect",
     [ohx(), ty("POc", 5, "mytask"), ty("POc", 6, "myfor"), ("PPc", u32(1, 5)), ("PPc", u32(2, 5)),
      "PT[", ("PPx", u32(1)), ("PQx", u32(6)), ("PPx", u32(2)), ("PPe", u32(2)), ("PQe", u32(6)),
      ("PPe", u32(1)), ("PPx", u32(1)), ("PPe", u32(1)), "PT]", "OHe"], models=OMP,
     stderr=RELAX_WARN,
     thread=OMP_T0 + """
1:50 50:19
1:60 52:1 51:80608079
1:70 51:1100150826
1:80 52:2 51:80608079
1:90 52:1 51:1100150826
1:100 51:80608079
1:110 52:0 51:0
1:120 52:1 51:80608079
1:130 52:0 51:0
1:140 50:0
1:150 4:3 2:0 6:0""",
     cpu=OMP_C0 + """
1:50 50:19
1:60 52:1 51:80608079
1:70 51:1100150826
1:80 52:2 51:80608079
1:90 52:1 51:1100150826
1:100 51:80608079
1:110 52:0 51:0
1:120 52:1 51:80608079
1:130 52:0 51:0
1:140 50:0
1:150 2:0 1:0 3:0""")
case("openmp-ws-same-label", TYP + [("PQx", u32(6)), ("PQx", u32(6)), ("PQe", u32(6)),
                                     ("PQe", u32(6)), "OHe"], models=OMP,
     thread=OMP_T0 + """
1:30 51:1100150826
1:40 51:1100150826
1:50 51:1100150826
1:60 51:0
1:70 4:3 2:0 6:0""")
OMP_PAIRS = [("PBb", "PBB", 3), ("PBj", "PBJ", 2), ("PBf", "PBF", 1), ("PBt", "PBT", 5),
             ("PIa", "PIA", 6), ("PIr", "PIR", 7), ("PI[", "PI]", 8), ("PWd", "PWD", 9),
             ("PWy", "PWY", 11), ("PWc", "PWC", 10), ("PWs", "PWS", 12), ("PWe", "PWE", 13),
             ("PWi", "PWI", 14), ("PTa", "PTA", 15), ("PTc", "PTC", 16), ("PTd", "PTD", 17),
             ("PTr", "PTR", 18), ("PT[", "PT]", 19), ("PTi", "PTI", 20), ("PTs", "PTS", 21),
             ("PTg", "PTG", 22), ("PTt", "PTT", 23), ("PTw", "PTW", 24), ("PTy", "PTY", 25),
             ("PA[", "PA]", 26), ("PCf", "PCF", 27), ("PCi", "PCI", 28), ("PMi", "PMI", 29),
             ("PMu", "PMU", 30), ("PH[", "PH]", 31)]
case("openmp-subsystem-values", [ohx()] + [e for p in OMP_PAIRS for e in p[:2]] + ["OHe"], models=OMP,
     checks=[records_between("thread.prv", 10, 10 * 2 * len(OMP_PAIRS), [
         f"1:{10 * (2 * i + 1 + j)}:50:{p[2] if j == 0 else 0}"
         for i, p in enumerate(OMP_PAIRS) for j in (0, 1)]),
         pcf_block("thread.pcf", 50, values=[val(v, lab) for v, lab in [
             (9, "Work-distribution: Distribute"), (10, "Work-distribution: Dynamic for chunk"),
             (11, "Work-distribution: Dynamic for initialization"),
             (12, "Work-distribution: Static for chunk"), (13, "Work-distribution: Section"),
             (14, "Work-distribution: Single"), (15, "Task: Allocation"), (16, "Task: Check deps"),
             (17, "Task: Duplicating"), (18, "Task: Releasing deps"), (19, "Task: Running task"),
             (20, "Task: Running task if0"), (21, "Task: Scheduling"), (22, "Task: Taskgroup"),
             (23, "Task: Taskwait"), (24, "Task: Taskwait deps"), (25, "Task: Taskyield"),
             (6, "Critical: Acquiring"), (7, "Critical: Releasing"), (8, "Critical: Section"),
             (1, "Barrier: Fork"), (2, "Barrier: Join"), (3, "Barrier: Plain"), (5, "Barrier: Task"),
             (4, "Barrier: Spin wait"), (26, "Runtime: Attached"), (27, "Runtime: Fork call"),
             (28, "Runtime: Initialization"), (29, "Runtime: Internal microtask"),
             (30, "Runtime: User microtask"), (31, "Runtime: Worker main loop")]]),
         pcf_block("thread.pcf", 52, values=[])])

# ---------------------------------------------------------------- §6 mpi
case("mpi-same-function-nested", [ohx(), "MUi", "MUi", "MUI", "MUI", "OHe"], models=MPI, exit=1,
     stderr=R("MUi", 120, 48, "mpi function of thread TH 1.1 already has 1 on top"))
case("mpi-different-functions-nest", [ohx(), "MRs", "MR[", "MR]", "MRS", "OHe"], models=MPI,
     thread="""
1:0 6:1 4:1 2:1 25:0
1:10 25:17
1:20 25:12
1:30 25:17
1:40 25:0
1:50 4:3 2:0 6:0""",
     cpu="""
1:0 2:1 1:1 3:1 25:0 7:0
1:10 25:17
1:20 25:12
1:30 25:17
1:40 25:0
1:50 2:0 1:0 3:0""")
case("mpi-unknown-value", [ohx(), "MUx", "OHe"], models=MPI, exit=1,
     stderr=R("MUx", 110, 36, "unknown event of the mpi model"))
case("mpi-unknown-category", [ohx(), "MZz", "OHe"], models=MPI, exit=1,
     stderr=R("MZz", 110, 36, "unknown event category of the mpi model"))
case("mpi-while-paused", [ohx(), "OHp", "MUi", "MUI", "OHr", "OHe"], models=MPI, exit=1,
     stderr=R("MUi", 120, 48, "thread TH 1.1 is Paused, but events of the mpi model need it Running"))
case("mpi-while-cooling", [ohx(), "OHc", "MUi", "MUI", "OHp", "OHr", "OHe"], models=MPI, exit=1,
     stderr=R("MUi", 120, 48, "thread TH 1.1 is Cooling, but events of the mpi model need it Running"))
case("mpi-pop-mismatch", [ohx(), "MUi", "MUT", "OHe"], models=MPI, exit=1,
     stderr=R("MUT", 120, 48, "mpi function of thread TH 1.1: pop of 2 but the top is 1"))
case("mpi-leftover-function", [ohx(), "MUi", "OHe"], models=MPI, exit=1,
     stderr=leftover("mpi", "function", 1))
case("mpi-pause-run-view", [ohx(), "MUi", "OHp", "OHr", "MUI", "OHe"], models=MPI,
     thread="""
1:0 6:1 4:1 2:1 25:0
1:10 25:1
1:20 4:2 2:0 25:0
1:30 4:1 2:1 25:1
1:40 25:0
1:50 4:3 2:0 6:0""",
     cpu="""
1:0 2:1 1:1 3:1 25:0 7:0
1:10 25:1
1:20 2:0 1:0 3:0 25:0
1:30 2:1 1:1 3:1 25:1
1:40 25:0
1:50 2:0 1:0 3:0""")
MPI_NAMES = ["Init", "Init_thread", "Finalize", "Wait", "Waitall", "Waitany", "Waitsome", "Test",
             "Testall", "Testany", "Testsome", "Recv", "Send", "Bsend", "Rsend", "Ssend", "Sendrecv",
             "Sendrecv_replace", "Irecv", "Isend", "Ibsend", "Irsend", "Issend", "Isendrecv",
             "Isendrecv_replace", "Allgather", "Allreduce", "Alltoall", "Barrier", "Bcast", "Gather",
             "Reduce", "Reduce_scatter", "Reduce_scatter_block", "Scatter", "Scan", "Exscan",
             "Iallgather", "Iallreduce", "Ialltoall", "Ibarrier", "Ibcast", "Igather", "Ireduce",
             "Ireduce_scatter", "Ireduce_scatter_block", "Iscatter", "Iscan", "Iexscan"]
MPI_PAIRS = [(cat + v, cat + ("]" if v == "[" else v.upper()), n) for cat, vals in [
    ("U", [("i", 1), ("t", 2), ("f", 3)]), ("W", [("[", 4), ("a", 5), ("y", 6), ("s", 7)]),
    ("T", [("[", 8), ("a", 9), ("y", 10), ("s", 11)]), ("R", [("[", 12), ("s", 17), ("o", 18)]),
    ("S", [("[", 13), ("b", 14), ("r", 15), ("s", 16)]), ("r", [("[", 19), ("s", 24), ("o", 25)]),
    ("s", [("[", 20), ("b", 21), ("r", 22), ("s", 23)]), ("A", [("g", 26), ("r", 27), ("a", 28)]),
    ("C", [("b", 29), ("s", 36), ("e", 37)]), ("D", [("b", 30), ("g", 31), ("s", 35)]),
    ("E", [("[", 32), ("s", 33), ("b", 34)]), ("a", [("g", 38), ("r", 39), ("a", 40)]),
    ("c", [("b", 41), ("s", 48), ("e", 49)]), ("d", [("b", 42), ("g", 43), ("s", 47)]),
    ("e", [("[", 44), ("s", 45), ("b", 46)])] for v, n in vals]
MPI_PAIRS = [("M" + a, "M" + b, n) for a, b, n in MPI_PAIRS]
case("mpi-function-values", [ohx()] + [e for p in MPI_PAIRS for e in p[:2]] + ["OHe"], models=MPI,
     checks=[records_between("thread.prv", 10, 10 * 2 * len(MPI_PAIRS), [
         f"1:{10 * (2 * i + 1 + j)}:25:{p[2] if j == 0 else 0}"
         for i, p in enumerate(MPI_PAIRS) for j in (0, 1)]),
         pcf_block("thread.pcf", 25, values=[val(i + 1, "MPI_" + n) for i, n in enumerate(MPI_NAMES)])])

# ---------------------------------------------------------------- §7 tampi
case("tampi-duplicate-push", [ohx(), "TCi", "TCi", "OHe"], models=TA, exit=1,
     stderr=R("TCi", 120, 48, "tampi subsystem of thread TH 1.1 already has 1 on top"))
case("tampi-unknown-value", [ohx(), "TCx", "OHe"], models=TA, exit=1,
     stderr=R("TCx", 110, 36, "unknown event of the tampi model"))
case("tampi-unknown-category", [ohx(), "TZz", "OHe"], models=TA, exit=1,
     stderr=R("TZz", 110, 36, "unknown event category of the tampi model"))
case("tampi-while-paused", [ohx(), "OHp", "TCi", "OHr", "OHe"], models=TA, exit=1,
     stderr=R("TCi", 120, 48, "thread TH 1.1 is Paused, but events of the tampi model need it Running"))
case("tampi-while-cooling", [ohx(), "OHc", "TCi", "OHp", "OHr", "OHe"], models=TA, exit=1,
     stderr=R("TCi", 120, 48, "thread TH 1.1 is Cooling, but events of the tampi model need it "
              "Running"))
case("tampi-pop-mismatch", [ohx(), "TCi", "TLI", "OHe"], models=TA, exit=1,
     stderr=R("TLI", 120, 48, "tampi subsystem of thread TH 1.1: pop of 3 but the top is 1"))
case("tampi-leftover-subsystem", [ohx(), "TCi", "OHe"], models=TA, exit=1,
     stderr=leftover("tampi", "subsystem", 1))
case("tampi-act-view", [ohx(), "TCi", "OHc", "OHp", "OHw", "OHr", "TCI", "OHe"], models=TA,
     thread="""
1:0 6:1 4:1 2:1 20:0
1:10 20:1
1:20 4:4
1:30 4:2 2:0 20:0
1:40 4:5 2:1 20:1
1:50 4:1
1:60 20:0
1:70 4:3 2:0 6:0""",
     cpu="""
1:0 2:1 1:1 3:1 7:0 20:0
1:10 20:1
1:20 2:0 1:0 3:0 20:0
1:50 2:1 1:1 3:1 20:1
1:60 20:0
1:70 2:0 1:0 3:0""")
TA_PAIRS = [("TCi", "TCI", 1), ("TGc", "TGC", 2), ("TLi", "TLI", 3), ("TLp", "TLP", 4),
            ("TQa", "TQA", 5), ("TQt", "TQT", 6), ("TRc", "TRC", 7), ("TRt", "TRT", 8),
            ("TRa", "TRA", 9), ("TRs", "TRS", 10), ("TTc", "TTC", 11), ("TTw", "TTW", 12)]
case("tampi-subsystem-values", [ohx()] + [e for p in TA_PAIRS for e in p[:2]] + ["OHe"], models=TA,
     checks=[records_between("thread.prv", 10, 10 * 2 * len(TA_PAIRS), [
         f"1:{10 * (2 * i + 1 + j)}:20:{p[2] if j == 0 else 0}"
         for i, p in enumerate(TA_PAIRS) for j in (0, 1)]),
         pcf_block("thread.pcf", 20, values=[val(v, lab) for v, lab in [
             (1, "Communication: Issuing a non-blocking operation"),
             (2, "Global array: Checking pending requests"), (3, "Library code: Interface function"),
             (4, "Library code: Polling function"), (5, "Queue: Adding to a queue"),
             (6, "Queue: Transfering to global array"), (8, "Request: Testing a request"),
             (7, "Request: Processing a completed request"), (9, "Request: Testing all requests"),
             (10, "Request: Testing some requests"), (11, "Ticket: Creating a ticket"),
             (12, "Ticket: Waiting a ticket")]])])

# ---------------------------------------------------------------- §8 nodes
case("nodes-unknown-category", [ohx(), "DZ[", "OHe"], models=ND, exit=1,
     stderr=R("DZ[", 110, 36, "unknown event category of the nodes model"))
case("nodes-unknown-value", [ohx(), "DRx", "OHe"], models=ND, exit=1,
     stderr=R("DRx", 110, 36, "unknown event of the nodes model"))
case("nodes-pop-mismatch", [ohx(), "DR[", "DU]", "OHe"], models=ND, exit=1,
     stderr=R("DU]", 120, 48, "nodes subsystem of thread TH 1.1: pop of 2 but the top is 1"))
case("nodes-duplicate-push", [ohx(), "DR[", "DR[", "OHe"], models=ND, exit=1,
     stderr=R("DR[", 120, 48, "nodes subsystem of thread TH 1.1 already has 1 on top"))
case("nodes-while-cooling", [ohx(), "OHc", "DR[", "OHp", "OHr", "OHe"], models=ND, exit=1,
     stderr=R("DR[", 120, 48, "thread TH 1.1 is Cooling, but events of the nodes model need it "
              "Running"))
case("nodes-while-paused", [ohx(), "OHp", "DR[", "OHr", "OHe"], models=ND, exit=1,
     stderr=R("DR[", 120, 48, "thread TH 1.1 is Paused, but events of the nodes model need it "
              "Running"))
# weft always makes the end-of-run checks of `ovniemu -l`
case("nodes-leftover-subsystem", [ohx(), "DR[", "OHe"], models=ND, exit=1,
     stderr=leftover("nodes", "subsystem", 1))
case("nodes-act", [ohx(), "DR[", "OHc", "OHp", "OHw", "OHr", "DR]", "OHe"], models=ND,
     thread="""
1:0 6:1 4:1 2:1 30:0
1:10 30:1
1:20 4:4
1:30 4:2 2:0 30:0
1:40 4:5 2:1 30:1
1:50 4:1
1:60 30:0
1:70 4:3 2:0 6:0""",
     cpu="""
1:0 2:1 1:1 3:1 30:0 7:0
1:10 30:1
1:20 2:0 1:0 3:0 30:0
1:50 2:1 1:1 3:1 30:1
1:60 30:0
1:70 2:0 1:0 3:0""")
ND_PAIRS = [(f"D{c}[", f"D{c}]", i + 1) for i, c in enumerate("RUWITCSP")]
case("nodes-subsystem-values", [ohx()] + [e for p in ND_PAIRS for e in p[:2]] + ["OHe"], models=ND,
     checks=[records_between("thread.prv", 10, 10 * 2 * len(ND_PAIRS), [
         f"1:{10 * (2 * i + 1 + j)}:30:{p[2] if j == 0 else 0}"
         for i, p in enumerate(ND_PAIRS) for j in (0, 1)]),
         pcf_block("thread.pcf", 30, values=[val(v, lab) for v, lab in [
             (1, "Dependencies: Registering task accesses"),
             (2, "Dependencies: Unregistering task accesses"), (3, "If0: Waiting for an If0 task"),
             (4, "If0: Executing an If0 task inline"), (5, "Taskwait: Taskwait"),
             (6, "Add Task: Creating a task"), (7, "Add Task: Submitting a task"),
             (8, "Spawn Function: Spawning a function")]])])

# ---------------------------------------------------------------- §9 kernel
case("kernel-KCO-KCO", [ohx(), "KCO", "KCO", "OHe"], models=KE, exit=1,
     stderr=R("KCO", 120, 48, "kernel cs of thread TH 1.1 already has 3 on top"))
case("kernel-KCI-first", [ohx(), "KCI", "OHe"], models=KE, exit=1,
     stderr=R("KCI", 110, 36, "kernel cs of thread TH 1.1: pop of 3 from an empty stack"))
case("kernel-unknown-value", [ohx(), "KCx", "OHe"], models=KE, exit=1,
     stderr=R("KCx", 110, 36, "unknown event of the kernel model"))
case("kernel-unknown-category", [ohx(), "KZz", "OHe"], models=KE, exit=1,
     stderr=R("KZz", 110, 36, "unknown event category of the kernel model"))
case("kernel-ovni-event-while-out", [ohx(), "KCO", "OHp", "OHe"], models=KE, exit=1,
     stderr=R("OHp", 120, 48, "thread TH 1.1 is out of its CPU (flag out-of-cpu), and events of "
              "the ovni model are refused then"))
case("kernel-basic", [ohx(), "KCO", "KCI", "OHp", "KCO", "KCI", "OHr", "OHe"], models=KE,
     thread="""
1:0 6:1 4:1 2:1
1:10 45:3
1:20 45:0
1:30 4:2 2:0
1:40 45:3
1:50 45:0
1:60 4:1 2:1
1:70 4:3 2:0 6:0""",
     cpu="""
1:0 2:1 1:1 3:1 45:0 7:0
1:10 45:3
1:20 45:0
1:30 2:0 1:0 3:0
1:60 2:1 1:1 3:1
1:70 2:0 1:0 3:0""",
     checks=[pcf_block("thread.pcf", 45, "Kernel context switch ",
                       [val(3, "Context switch: Out of the CPU")])])
# KCO before OHx and after OHe; a KCO left at the end is accepted (no end check)
case("kernel-outside-lifetime", ["KCO", "KCI", ohx(), "OHe", "KCO"], models=KE,
     thread="""
1:0 45:3
1:10 45:0
1:20 6:1 4:1 2:1
1:30 4:3 2:0 6:0
1:40 45:3""",
     cpu="""
1:20 2:1 1:1 3:1 45:0 7:0
1:30 2:0 1:0 3:0""")
case("kernel-leftover-after-end", [ohx(), "KCO", "KCI", "OHe", "KCO"], models=KE,
     thread="""
1:0 6:1 4:1 2:1
1:10 45:3
1:20 45:0
1:30 4:3 2:0 6:0
1:40 45:3""")
# nanos6, mpi, openmp, tampi, nodes events are accepted while out of CPU
case("kernel-nanos6-while-out", [ohx(), "KCO", "6U[", "6U]", "KCI", "OHe"],
     models=dict(N6, kernel="1.0.0"),
     thread=N6_T0 + """
1:10 45:3
1:20 37:4
1:30 37:0
1:40 45:0
1:50 4:3 2:0 6:0 36:0 38:0 40:0""",
     cpu="""
1:0 2:1 1:1 3:1 35:0 36:0 37:0 38:0 39:0 40:100 45:0 7:0
1:10 45:3
1:20 37:4
1:30 37:0
1:40 45:0
1:50 2:0 1:0 3:0 36:0 38:0 40:101""")
case("kernel-mpi-while-out", [ohx(), "KCO", "MUi", "MUI", "KCI", "OHe"],
     models=dict(MPI, kernel="1.0.0"),
     thread="""
1:0 6:1 4:1 2:1 25:0
1:10 45:3
1:20 25:1
1:30 25:0
1:40 45:0
1:50 4:3 2:0 6:0""",
     cpu="""
1:0 2:1 1:1 3:1 45:0 25:0 7:0
1:10 45:3
1:20 25:1
1:30 25:0
1:40 45:0
1:50 2:0 1:0 3:0""")
case("kernel-others-while-out", [ohx(), "KCO", "PBb", "PBB", "TCi", "TCI", "DR[", "DR]", "KCI", "OHe"],
     models={"kernel": "1.0.0", "openmp": "1.2.1", "tampi": "1.0.0", "nodes": "1.0.0"},
     thread="""
1:0 6:1 4:1 2:1 30:0 50:0 51:0 52:0 20:0
1:10 45:3
1:20 50:3
1:30 50:0
1:40 20:1
1:50 20:0
1:60 30:1
1:70 30:0
1:80 45:0
1:90 4:3 2:0 6:0""")

# ---------------------------------------------------------------- §10 breakdown views
case("breakdown-nosv", [ohx(), "VS[", "VS]", "OHe"], models=NV, cpus=3, flags=["-b"], top=BD_TRUE,
     files={"nosv-breakdown.prv": """
1:0 17:0
2:0 17:0
3:0 17:2
3:10 17:7
3:20 17:2
3:30 17:101"""},
     checks=[pcf_block("nosv-breakdown.pcf", 17, "CPU: nOS-V Runtime/Idle/Task breakdown")])
case("breakdown-nosv-quirk",
     T1 + ["VHw", ("VTx", u32(1, 0)), ("VTp", u32(1, 0)), "VSh", "VSf", ("VTr", u32(1, 0)),
           ("VTe", u32(1, 0)), "VHW", "OHe"], models=NV, cpus=2, flags=["-b"], top=BD_TRUE,
     files={"nosv-breakdown.prv": """
1:0 17:0
2:0 17:2
2:30 17:32
2:40 17:1690940984
2:50 17:0
2:60 17:6
2:70 17:11
2:90 17:32
2:100 17:2
2:110 17:101"""})
case("breakdown-nanos6", [ohx(), "6U[", "6U]", "OHe"], models=N6, cpus=3, flags=["-b"],
     files={"nanos6-breakdown.prv": """
1:0 41:0
2:0 41:0
3:0 41:2
3:10 41:4
3:20 41:2
3:30 41:101"""},
     checks=[pcf_block("nanos6-breakdown.pcf", 41, "CPU: Nanos6 Runtime/Idle/Task breakdown")])
case("breakdown-nanos6-two-cpus",
     threads=[(1, [ohx(), "6U[", At(200), "6U]", "OHe"], 100, None),
              (2, [ohx(1), At(150), "6C[", "6C]", "OHe"], 105, None)], cpus=2, flags=["-b"], models=N6,
     files={"nanos6-breakdown.prv": """
1:0 41:0
2:0 41:2
1:5 41:2
2:10 41:4
1:50 41:3
1:60 41:2
1:70 41:4
2:70 41:101
1:100 41:2
1:110 41:101"""})
case("breakdown-openmp", [ohx(), "PH[", "PH]", "OHe"], models=OMP, cpus=2, flags=["-b"],
     files={"openmp-breakdown.prv": """
1:10 53:0
2:10 53:31
2:20 53:0"""},
     checks=[pcf_block("openmp-breakdown.pcf", 53, "CPU: OpenMP Runtime/Label breakdown")])


# ================================================================ runner

def write_trace(root, c):
    req = {"ovni": "1.1.0"}
    req.update(c["models"])
    threads = c["threads"] or [(1, c["events"], 100, None)]
    for tid, items, start, extra in threads:
        over = {"require": req}
        if c["rank"] is not None:
            over["rank"], over["nranks"] = c["rank"], c["rank"] + 1
        over.update(c["meta"])
        m = tracegen.meta(tid, 1, loom="vm", cpus=tuple((i, i) for i in range(c["cpus"])), **over)
        for k, v in list(c["top"].items()) + list((extra or {}).items()):
            if k == "ovni":
                m["ovni"].update(v)
            else:
                m[k] = v
        tracegen.write_stream(root, tracegen.thread_rel("vm", 1, tid), m, build(items, start))


def run_case(c):
    """(name, list of failure reasons, dump text)."""
    dump = []
    with tempfile.TemporaryDirectory(prefix="weft-model-rules-") as tmp:
        tr, out = Path(tmp) / "trace", Path(tmp) / "out"
        write_trace(tr, c)
        try:
            # --partial: a refusal's records up to the refused event are checked
            p = subprocess.run([WEFT, "emu", "--paraver", "--partial", "-q", *c["flags"], "-o",
                                str(out), str(tr)], capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return c["name"], ["timeout"], ""
        stderr = p.stderr.replace(str(tr), "TRACE")
        if DUMP:
            dump.append(f"== {c['name']} exit {p.returncode}\n   stderr {stderr!r}")
            for f in sorted(out.glob("*.prv")) if out.exists() else []:
                dump.append(f"   {f.name}: {compact(group_records(f))}")
        why = []
        if p.returncode != c["exit"]:
            why.append(f"exit {p.returncode}, want {c['exit']}")
        if c["stderr"] is not None and stderr != c["stderr"]:
            why.append(f"stderr {stderr!r}, want {c['stderr']!r}")
        want_files = dict(c["files"])
        if c["thread"] is not None:
            want_files["thread.prv"] = c["thread"]
        if c["cpu"] is not None:
            want_files["cpu.prv"] = c["cpu"]
        for fname, text in want_files.items():
            path = out / fname
            got = group_records(path) if path.exists() else ["<missing>"]
            want = expand(text)
            if got != want:
                why.append(f"{fname} records\n      got  {compact(got)}\n      want {compact(want)}")
        # §1.6: the files are written after an accepted run and after a refused event
        if c["exit"] == 0 or " at clock " in (c["stderr"] or ""):
            missing = [f for f in PRV_FILES if not (out / f).exists()]
            if missing:
                why.append(f"missing {missing}")
        for chk in c["checks"]:
            if not out.exists() and chk is not no_files:
                why.append("no output directory")
                break
            try:
                r = chk(out)
            except (OSError, ValueError, AttributeError) as exc:
                r = f"check failed: {exc!r}"
            if r:
                why.append(r)
        return c["name"], why, "\n".join(dump)


def main():
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    bad_gids = {k: (gid(k), v) for k, v in GID_CHECK.items() if gid(k) != v}
    if bad_gids:
        print(f"FAIL the test's task-type hash disagrees with the note: {bad_gids}")
        return 1
    for name in EXPECTED_DIFFERENCES:
        if name not in (c["name"] for c in CASES):
            print(f"FAIL EXPECTED_DIFFERENCES names an unknown case: {name}")
            return 1
    cases = [c for c in CASES if not only or c["name"] in only]
    failures, xfails = 0, 0
    with ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as pool:
        for name, why, dump in pool.map(run_case, cases):
            if dump:
                print(dump)
            if name in EXPECTED_DIFFERENCES:
                if why:
                    xfails += 1
                    print(f"XFAIL {name}: {EXPECTED_DIFFERENCES[name]}")
                else:
                    failures += 1
                    print(f"FAIL {name}: XPASS (weft now does what the note says: remove it "
                          "from EXPECTED_DIFFERENCES)")
            elif why:
                failures += 1
                print(f"FAIL {name}: " + "; ".join(why))
            else:
                print(f"ok {name}")
    print(f"model rules: {len(cases)} cases, {failures} failure(s), {xfails} expected "
          f"difference(s) from the facts note")
    for name, reason in EXPECTED_DIFFERENCES.items():
        print(f"  expected difference: {name}: {reason}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
