#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""model_rules.py - every rule of the runtime-models facts note, model by model.

PLACEHOLDER
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli"))
import tracegen  # noqa: E402

WEFT = os.environ.get("WEFT_BIN", "weft")
DUMP = "--dump" in sys.argv


# ---------------------------------------------------------------- events

def u32(*v):
    return struct.pack(f"<{len(v)}I", *v)


def i64(*v):
    return struct.pack(f"<{len(v)}q", *v)


class J:
    """A jumbo event (data = the jumbo bytes after the u32 size)."""

    def __init__(self, mcv, data):
        self.mcv, self.data = mcv, data


class At:
    """Sets the clock of the next event."""

    def __init__(self, clock):
        self.clock = clock


def ohx(cpu=0):
    return ("OHx", struct.pack("<iiQ", cpu, -1, 0))


def oas(cpu):
    return ("OAs", struct.pack("<i", cpu))


def ty(mcv, tid, label):
    """Task-type creation (VYc, 6Yc, POc): u32 id, NUL-terminated label."""
    if isinstance(label, str):
        label = label.encode()
    return J(mcv, u32(tid) + label + b"\0")


def build(items, start=100, step=10):
    """Events of one stream: items are MCV strings, (mcv, payload) pairs, J or At."""
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


# ---------------------------------------------------------------- cases

CASES = []


def case(name, events=None, *, threads=None, models=None, cpus=1, rank=None, top=None,
         flags=(), exit=0, stderr="", thread=None, cpu=None, check=None, meta_over=None):
    """One case.

    events: the events of thread 1 (or threads: [(tid, items, start, top_extra)]).
    models: {"nosv": "2.7.0", ...} added to ovni.require (ovni 1.1.0 always).
    top: top-level metadata keys (e.g. {"nosv": {...}}) for every thread.
    exit / stderr: the expected exit status and the exact stderr.
    thread / cpu: the exact records of thread.prv / cpu.prv (the lines after the
    header), as one whitespace-separated string of "row:time:type:value" items.
    check: a function(outdir) -> error string or None, for the PCF and other files.
    """
    CASES.append(dict(name=name, events=events, threads=threads, models=models or {},
                      cpus=cpus, rank=rank, top=top, flags=list(flags), exit=exit,
                      stderr=stderr, thread=thread, cpu=cpu, check=check,
                      meta_over=meta_over or {}))


def write_trace(root, c):
    req = {"ovni": "1.1.0"}
    req.update(c["models"])
    threads = c["threads"] or [(1, c["events"], 100, None)]
    for tid, items, start, extra in threads:
        over = {"require": req}
        if c["rank"] is not None:
            over["rank"], over["nranks"] = c["rank"], c["rank"] + 1
        over.update(c["meta_over"])
        m = tracegen.meta(tid, 1, loom="vm", cpus=tuple((i, i) for i in range(c["cpus"])),
                          **over)
        for k, v in (c["top"] or {}).items():
            m[k] = v
        for k, v in (extra or {}).items():
            m[k] = v
        tracegen.write_stream(root, tracegen.thread_rel("vm", 1, tid), m,
                              build(items, start))


def records(path):
    """thread.prv / cpu.prv records as "row:time:type:value" items (header dropped)."""
    out = []
    for line in path.read_text().splitlines()[1:]:
        f = line.split(":")
        row, time, rest = f[4], f[5], f[6:]
        for i in range(0, len(rest), 2):
            out.append(f"{row}:{time}:{rest[i]}:{rest[i + 1]}")
    return out


def run_case(c):
    """Returns a list of failure reasons (empty: ok)."""
    with tempfile.TemporaryDirectory(prefix="weft-model-rules-") as tmp:
        tr, out = Path(tmp) / "trace", Path(tmp) / "out"
        write_trace(tr, c)
        try:
            p = subprocess.run([WEFT, "emu", "--paraver", "-q", *c["flags"], "-o", str(out),
                                str(tr)], capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return ["timeout"]
        p.stderr = p.stderr.replace(str(tr), "TRACE")
        if DUMP:
            print(f"== {c['name']} exit {p.returncode}\n   stderr {p.stderr!r}")
            for f in sorted(out.glob("*-breakdown.prv")):
                print(f"   {f.name}: {' '.join(records(f))}")
            for f in ("thread.prv", "cpu.prv"):
                if (out / f).exists():
                    print(f"   {f}: {' '.join(records(out / f))}")
        why = []
        if p.returncode != c["exit"]:
            why.append(f"exit {p.returncode}, want {c['exit']}")
        if c["stderr"] is not None and p.stderr != c["stderr"]:
            why.append(f"stderr {p.stderr!r}, want {c['stderr']!r}")
        for f in ("thread", "cpu"):
            want = c[f]
            if want is None:
                continue
            path = out / f"{f}.prv"
            got = records(path) if path.exists() else ["<missing>"]
            if got != want.split():
                why.append(f"{f}.prv records\n      got  {' '.join(got)}\n      want {want}")
        if c["check"] is not None and out.exists():
            r = c["check"](out)
            if r:
                why.append(r)
        return why



# ================================================================ exploration
NV = {"nosv": "2.7.0"}
T1 = [ohx(), ty("VYc", 1, "testtype1"), ("VTc", u32(1, 1))]
X = dict(stderr=None, exit=1)
case("nv-vpp-first", [ohx(), "VPp", "OHe"], models=NV, **X)
case("nv-idle-dup", [ohx(), "VPr", "VPr", "OHe"], models=NV, **X)
case("nv-taskid0", [ohx(), ty("VYc", 1, "a"), ("VTc", u32(0, 1)), ("VTx", u32(0, 0)), "OHe"], models=NV, **X)
case("nv-bodyid-nonpar", T1 + [("VTx", u32(1, 1)), "OHe"], models=NV, **X)
case("nv-bodyid-par0", [ohx(), ty("VYc", 1, "a"), ("VTC", u32(1, 1)), ("VTx", u32(1, 0)), "OHe"], models=NV, **X)
case("nv-nest-nopause", T1 + [("VTc", u32(2, 1)), ("VTx", u32(1, 0)), ("VTx", u32(2, 0)), "OHe"], models=NV, **X)
case("nv-pause-par", [ohx(), ty("VYc", 1, "a"), ("VTC", u32(1, 1)), ("VTx", u32(1, 3)), ("VTp", u32(1, 3)), "OHe"], models=NV, **X)
case("nv-pause-notrun", T1 + [("VTp", u32(1, 0)), "OHe"], models=NV, **X)
case("nv-resume-notrun", T1 + [("VTr", u32(1, 0)), "OHe"], models=NV, **X)
case("nv-end-notrun", T1 + [("VTe", u32(1, 0)), "OHe"], models=NV, **X)
case("nv-resume-running", T1 + [("VTx", u32(1, 0)), ("VTr", u32(1, 0)), "OHe"], models=NV, **X)
case("nv-end-paused", T1 + [("VTx", u32(1, 0)), ("VTp", u32(1, 0)), ("VTe", u32(1, 0)), "OHe"], models=NV, **X)
case("nv-exec-paused", T1 + [("VTx", u32(1, 0)), ("VTp", u32(1, 0)), ("VTx", u32(1, 0)), "OHe"], models=NV, **X)
case("nv-par-rerun", [ohx(), ty("VYc", 1, "a"), ("VTC", u32(1, 1)), ("VTx", u32(1, 2)), ("VTe", u32(1, 2)), ("VTx", u32(1, 2)), "OHe"], models=NV, **X)
case("nv-type-dup", [ohx(), ty("VYc", 1, "a"), ty("VYc", 1, "b"), "OHe"], models=NV, **X)
case("nv-typeid0", [ohx(), ty("VYc", 0, "a"), "OHe"], models=NV, **X)
case("nv-label-512", [ohx(), ty("VYc", 1, "x" * 512), "OHe"], models=NV, **X)
case("nv-label-511", [ohx(), ty("VYc", 1, "x" * 511), "OHe"], models=NV, **X)
case("nv-unknown-type", [ohx(), ty("VYc", 1, "a"), ("VTc", u32(1, 2)), "OHe"], models=NV, **X)
case("nv-task-dup", T1 + [("VTc", u32(1, 1)), "OHe"], models=NV, **X)
case("nv-task-unknown", T1 + [("VTx", u32(2, 0)), "OHe"], models=NV, **X)
case("nv-Yc-notjumbo", [ohx(), ("VYc", u32(1, 0)), "OHe"], models=NV, **X)
case("nv-Yx", [ohx(), J("VYx", u32(1) + b"a\0"), "OHe"], models=NV, **X)
case("nv-exec-short", T1 + [("VTx", b"\1\0"), "OHe"], models=NV, **X)
case("nv-exec-4", T1 + [("VTx", u32(1)), "OHe"], models=NV, **X)
case("nv-create-short", [ohx(), ty("VYc", 1, "a"), ("VTc", u32(1)), "OHe"], models=NV, **X)
case("nv-hwc-none", [ohx(), J("VWC", i64(1)), "OHe"], models=NV, **X)
HWC2 = {"nosv": {"hwc": {"0": {"name": "cycles"}, "1": {"name": "instr"}}}}
case("nv-hwc-notjumbo", [ohx(), ("VWC", i64(1, 2)), "OHe"], models=NV, top=HWC2, **X)
case("nv-hwc-size", [ohx(), J("VWC", i64(1)), "OHe"], models=NV, top=HWC2, **X)
case("nv-hwc-Wx", [ohx(), J("VWx", i64(1, 2)), "OHe"], models=NV, top=HWC2, **X)
case("nv-hwc-badindex", [ohx(), "OHe"], models=NV, top={"nosv": {"hwc": {"0": {"name": "a"}, "2": {"name": "b"}}}}, **X)
case("nv-hwc-namemismatch", threads=[(1, [ohx(), "OHe"], 100, {"nosv": {"hwc": {"0": {"name": "a"}}}}), (2, [ohx(1), "OHe"], 105, {"nosv": {"hwc": {"0": {"name": "b"}}}})], cpus=2, models=NV, **X)
case("nv-bd-missing", [ohx(), "OHe"], models=NV, flags=["-b"], **X)
case("nv-bd-notbool", [ohx(), "OHe"], models=NV, flags=["-b"], top={"nosv": {"can_breakdown": "yes"}}, **X)
case("nv-bd-false", [ohx(), "OHe"], models=NV, flags=["-b"], top={"nosv": {"can_breakdown": False}}, stderr=None, exit=0)
case("nv-out-of-cpu", [ohx(), "KCO", "VS[", "VS]", "KCI", "OHe"], models=dict(NV, kernel="1.0.0"), **X)
case("nv-paused", [ohx(), "OHp", "VS[", "VS]", "OHr", "OHe"], models=NV, **X)
case("nv-type-before-ohx", [ty("VYc", 1, "a"), ohx(), "OHe"], models=NV, **X)
case("nv-not-enabled", [ohx(), "VS[", "VS]", "OHe"], **X)
case("nv-unknown-cat", [ohx(), "VZz", "OHe"], models=NV, **X)
case("nv-unknown-val", [ohx(), "VSz", "OHe"], models=NV, **X)
case("nv-leftover", [ohx(), "VS[", "OHe"], models=NV, **X)
case("nv-end-nottop11", T1 + [("VTx", u32(1, 0)), "VS[", ("VTe", u32(1, 0)), "OHe"], models=NV, **X)



OK = dict(stderr=None, exit=0)
N6 = {"nanos6": "1.1.0"}
case("nv-nested-ex", T1 + [("VTx", u32(1, 0)), ("VTp", u32(1, 0)), "VAs", "VAS", ("VTr", u32(1, 0)), ("VTe", u32(1, 0)), "OHe"], models=NV, rank=0, **OK)
case("nv-ssdup", [ohx(), "VS[", "VS[", "VS]", "VSN", "VSn", "VS]", "OHe"], models=NV, **OK)
case("nv-resurrect", [ohx(), ty("VYc", 5, "mytype"), ("VTc", u32(1, 5)), ("VTx", u32(1, 0)), ("VTe", u32(1, 0)), ("VTx", u32(1, 0)), ("VTe", u32(1, 0)), "OHe"], models=NV, **OK)
case("nv-cooling", [ohx(), "OHc", "VAs", "VAS", "OHp", "OHw", "OHr", "OHe"], models=NV, **OK)
case("nv-hwc-ok2", [ohx(), J("VWC", i64(5, -5)), J("VWC", i64(0, -5)), "OHc", "OHp", "OHw", "OHr", J("VWC", i64(3, 3)), "OHe"], models=NV, top=HWC2, **OK)
case("n6-relaxed", [ohx(), ty("6Yc", 5, "mytype"), ty("6Yc", 6, "other"), ("6Tc", u32(1, 5)), ("6Tc", u32(2, 6)), ("6Tx", u32(1)), "6U[", ("6Tx", u32(2)), ("6Te", u32(2)), "6U]", ("6Te", u32(1)), "OHe"], models=N6, rank=0, **OK)
case("n6-thtype", [ohx(), "6Hw", "OHp", "OHr", "6Hl", "6HL", "6HW", "OHe"], models=N6, **OK)
case("k-basic", [ohx(), "KCO", "KCI", "OHp", "KCO", "KCI", "OHr", "OHe"], models={"kernel": "1.0.0"}, **OK)
case("mpi-pause", [ohx(), "MUi", "OHp", "OHr", "MUI", "OHe"], models={"mpi": "1.0.0"}, **OK)
case("tampi-act", [ohx(), "TCi", "OHc", "OHp", "OHw", "OHr", "TCI", "OHe"], models={"tampi": "1.0.0"}, **OK)
case("nodes-act", [ohx(), "DR[", "OHc", "OHp", "OHw", "OHr", "DR]", "OHe"], models={"nodes": "1.0.0"}, **OK)
case("omp-nest-resurrect", [ohx(), ty("POc", 5, "mytask"), ty("POc", 6, "myfor"), ("PPc", u32(1, 5)), ("PPc", u32(2, 5)), "PT[", ("PPx", u32(1)), ("PQx", u32(6)), ("PPx", u32(2)), ("PPe", u32(2)), ("PQe", u32(6)), ("PPe", u32(1)), ("PPx", u32(1)), ("PPe", u32(1)), "PT]", "OHe"], models={"openmp": "1.2.1"}, **OK)


VERS = [("nanos6", "1.0.0", 0), ("nanos6", "1.1.5", 0), ("nanos6", "1.2.0", 1),
        ("nodes", "1.0.0", 0), ("nodes", "1.1.0", 1), ("kernel", "1.0.0", 0), ("kernel", "0.9.0", 1),
        ("mpi", "1.0.3", 0), ("mpi", "1.1.0", 1), ("openmp", "1.0.0", 0), ("openmp", "1.1.0", 0),
        ("openmp", "1.2.9", 0), ("openmp", "1.3.0", 1), ("tampi", "1.0.0", 0), ("tampi", "2.0.0", 1),
        ("nosv", "2.0.0", 0), ("nosv", "2.7.9", 0), ("nosv", "1.0.0", 1), ("nosv", "1.1.0", 1),
        ("nosv", "2.8.0", 1), ("nosv", "3.0.0", 1)]
for mod, ver, ex in VERS:
    case(f"ver-{mod}-{ver}", [ohx(), "OHe"], models={mod: ver}, stderr=None, exit=ex)
TY6 = [ohx(), ty("6Yc", 1, "a"), ("6Tc", u32(1, 1))]
case("n6-create-12", [ohx(), ty("6Yc", 1, "a"), ("6Tc", u32(1, 1, 0)), "OHe"], models=N6, **X)
case("n6-create-4", [ohx(), ty("6Yc", 1, "a"), ("6Tc", u32(1)), "OHe"], models=N6, **X)
case("n6-ss-dup", [ohx(), "6U[", "6U[", "6U]", "6U]", "OHe"], models=N6, **X)
case("n6-thtype-dup", [ohx(), "6Hw", "6Hw", "OHe"], models=N6, **X)
case("n6-pp-first", [ohx(), "6Pp", "OHe"], models=N6, **X)
case("n6-resume-other-thread", threads=[(1, TY6 + [("6Tx", u32(1)), ("6Tp", u32(1)), At(300), "OHe"], 100, None), (2, [ohx(1), At(200), ("6Tr", u32(1)), "OHe"], 105, None)], cpus=2, models=N6, **X)
case("n6-rerun", TY6 + [("6Tx", u32(1)), ("6Te", u32(1)), ("6Tx", u32(1)), "OHe"], models=N6, **X)
case("n6-oldTC", [ohx(), ("6TC", u32(1, 1)), ("6TC", u32(2, 1)), "OHe"], models=N6, **OK)
case("n6-relaxed-samess", TY6 + [("6Tc", u32(2, 1)), ("6Tx", u32(1)), ("6Tx", u32(2)), "OHe"], models=N6, **X)
case("n6-paused", [ohx(), "OHp", "6U[", "6U]", "OHr", "OHe"], models=N6, **X)
case("n6-cooling", [ohx(), "OHc", "6U[", "6U]", "OHp", "OHr", "OHe"], models=N6, **OK)
case("n6-Yc-notjumbo", [ohx(), ("6Yc", u32(1, 0)), "OHe"], models=N6, **X)
case("n6-Yx", [ohx(), J("6Yx", u32(1) + b"a\0"), "OHe"], models=N6, **X)
case("n6-leftover", [ohx(), "6U[", "OHe"], models=N6, **X)
case("n6-task0", [ohx(), ty("6Yc", 1, "a"), ("6Tc", u32(0, 1)), ("6Tx", u32(0)), "OHe"], models=N6, **X)
case("n6-exec-short", TY6 + [("6Tx", b"\1\0"), "OHe"], models=N6, **X)
case("n6-exec-long", TY6 + [("6Tx", u32(1, 7)), ("6Te", u32(1, 7)), "OHe"], models=N6, **OK)
case("n6-ignored", [ohx(), "6W*", "6t[", "6t]", "6S@", "6Sr", "6Ss", "OHe"], models=N6, **OK)
case("n6-while-out", [ohx(), "KCO", "6U[", "6U]", "KCI", "OHe"], models=dict(N6, kernel="1.0.0"), **OK)
case("n6-types-after-abort", [ohx(), ty("6Yc", 1, "testtype666"), "6U[", "6U[", "OHe"], models=N6, **X)
case("n6-thtype-leftover", [ohx(), "6Hw", "OHe"], models=N6, **OK)
OMP = {"openmp": "1.2.1"}
TYP = [ohx(), ty("POc", 5, "mytask"), ty("POc", 6, "myfor")]
case("omp-task0", TYP + [("PPc", u32(0, 5)), "OHe"], models=OMP, **X)
case("omp-type0", TYP + [("PPc", u32(1, 0)), "OHe"], models=OMP, **X)
case("omp-typeunknown", TYP + [("PPc", u32(1, 9)), "OHe"], models=OMP, **X)
case("omp-create-12", TYP + [("PPc", u32(1, 5, 0)), "OHe"], models=OMP, **X)
case("omp-ws-unknown", TYP + [("PQx", u32(9)), "OHe"], models=OMP, **X)
case("omp-ws-type0", TYP + [("PQx", u32(0)), "OHe"], models=OMP, **X)
case("omp-ws-popmismatch", TYP + [("PQx", u32(5)), ("PQe", u32(6)), "OHe"], models=OMP, **X)
case("omp-end-nottop", TYP + [("PPc", u32(1, 5)), ("PPc", u32(2, 5)), ("PPx", u32(1)), ("PPx", u32(2)), ("PPe", u32(1)), "OHe"], models=OMP, **X)
case("omp-double-exec", TYP + [("PPc", u32(1, 5)), ("PPx", u32(1)), ("PPx", u32(1)), "OHe"], models=OMP, **X)
case("omp-exec-task0", TYP + [("PPx", u32(0)), "OHe"], models=OMP, **X)
case("omp-cooling", [ohx(), "OHc", "PBb", "PBB", "OHp", "OHr", "OHe"], models=OMP, **X)
case("omp-type-while-paused", [ohx(), "OHp", ty("POc", 1, "a"), "OHr", "OHe"], models=OMP, **X)
case("omp-spin", [ohx(), "PBs", "PBS", "OHe"], models=OMP, **OK)
case("omp-ws-samelabel", TYP + [("PQx", u32(6)), ("PQx", u32(6)), ("PQe", u32(6)), ("PQe", u32(6)), "OHe"], models=OMP, **OK)
case("omp-leftover", [ohx(), "PBb", "OHe"], models=OMP, **X)
case("omp-unknown", [ohx(), "PZz", "OHe"], models=OMP, **X)
case("omp-unknown-val", [ohx(), "PBz", "OHe"], models=OMP, **X)
case("omp-types", [ohx(), ty("POc", 1, "main task.1"), ty("POc", 2, "alpha"), "OHe"], models=OMP, **OK)
MPI = {"mpi": "1.0.0"}
case("mpi-nest-same", [ohx(), "MUi", "MUi", "MUI", "MUI", "OHe"], models=MPI, **X)
case("mpi-nest", [ohx(), "MRs", "MR[", "MR]", "MRS", "OHe"], models=MPI, **OK)
case("mpi-unknown-val", [ohx(), "MUx", "OHe"], models=MPI, **X)
case("mpi-unknown-cat", [ohx(), "MZz", "OHe"], models=MPI, **X)
case("mpi-paused", [ohx(), "OHp", "MUi", "MUI", "OHr", "OHe"], models=MPI, **X)
case("mpi-cooling", [ohx(), "OHc", "MUi", "MUI", "OHp", "OHr", "OHe"], models=MPI, **X)
case("mpi-popmismatch", [ohx(), "MUi", "MUT", "OHe"], models=MPI, **X)
case("mpi-leftover", [ohx(), "MUi", "OHe"], models=MPI, **X)
case("mpi-while-out", [ohx(), "KCO", "MUi", "MUI", "KCI", "OHe"], models=dict(MPI, kernel="1.0.0"), **OK)
TA = {"tampi": "1.0.0"}
case("tampi-dup", [ohx(), "TCi", "TCi", "OHe"], models=TA, **X)
case("tampi-unknown-val", [ohx(), "TCx", "OHe"], models=TA, **X)
case("tampi-unknown-cat", [ohx(), "TZz", "OHe"], models=TA, **X)
case("tampi-paused", [ohx(), "OHp", "TCi", "OHr", "OHe"], models=TA, **X)
case("tampi-popmismatch", [ohx(), "TCi", "TLI", "OHe"], models=TA, **X)
case("tampi-leftover", [ohx(), "TCi", "OHe"], models=TA, **X)
ND = {"nodes": "1.0.0"}
case("nodes-unknownc", [ohx(), "DZ[", "OHe"], models=ND, **X)
case("nodes-unknownv", [ohx(), "DRx", "OHe"], models=ND, **X)
case("nodes-popmismatch", [ohx(), "DR[", "DU]", "OHe"], models=ND, **X)
case("nodes-cooling", [ohx(), "OHc", "DR[", "OHp", "OHr", "OHe"], models=ND, **X)
case("nodes-paused", [ohx(), "OHp", "DR[", "OHr", "OHe"], models=ND, **X)
case("nodes-dup", [ohx(), "DR[", "DR[", "OHe"], models=ND, **X)
case("nodes-leftover", [ohx(), "DR[", "OHe"], models=ND, **X)
case("nodes-nest", [ohx(), "DR[", "DU[", "DU]", "DR]", "OHe"], models=ND, **OK)
KE = {"kernel": "1.0.0"}
case("k-double-out", [ohx(), "KCO", "KCO", "OHe"], models=KE, **X)
case("k-in-first", [ohx(), "KCI", "OHe"], models=KE, **X)
case("k-unknown-val", [ohx(), "KCx", "OHe"], models=KE, **X)
case("k-unknown-cat", [ohx(), "KZz", "OHe"], models=KE, **X)
case("k-outside-lifetime", ["KCO", "KCI", ohx(), "OHe", "KCO"], models=KE, **OK)
case("k-ovni-while-out", [ohx(), "KCO", "OHp", "OHe"], models=KE, **X)
case("k-leftover-after-end", [ohx(), "KCO", "KCI", "OHe", "KCO"], models=KE, **OK)
case("n6-not-enabled", [ohx(), "6U[", "6U]", "OHe"], **X)
case("nv-all-models", [ohx(), "VS[", "VS]", "OHe"], flags=["-a"], **OK)
case("nv-coll", [ohx(), ty("VYc", 1, "L83328"), ty("VYc", 2, "L93662"), ty("VYc", 3, "L83328"), "OHe"], models=NV, **X)
case("nv-par-bodies", [ohx(), ty("VYc", 1, "a"), ("VTC", u32(1, 1)), ("VTx", u32(1, 1)), ("VTe", u32(1, 1)), ("VTx", u32(1, 2)), ("VTe", u32(1, 2)), "OHe"], models=NV, **OK)
case("nv-nest-to-par", T1 + [("VTC", u32(2, 1)), ("VTx", u32(1, 0)), ("VTp", u32(1, 0)), ("VTx", u32(2, 5)), ("VTe", u32(2, 5)), ("VTr", u32(1, 0)), ("VTe", u32(1, 0)), "OHe"], models=NV, rank=2, **OK)
case("nv-ignored", [ohx(), "VHa", "VHA", "VSr", "VSs", "VS@", "OHe"], models=NV, **OK)
case("nv-types-after-abort", T1 + [("VTx", u32(1, 0)), ("VTx", u32(1, 0)), "OHe"], models=NV, **X)


case("x-hwc-count", threads=[(1, [ohx(), "OHe"], 100, {"nosv": {"hwc": {"0": {"name": "a"}}}}), (2, [ohx(1), "OHe"], 105, {"nosv": {"hwc": {"0": {"name": "a"}, "1": {"name": "b"}}}})], cpus=2, models=NV, **X)
case("x-hwc-0x", [ohx(), "OHe"], models=NV, top={"nosv": {"hwc": {"0x": {"name": "a"}}}}, **X)
case("x-hwc-empty-other", threads=[(1, [ohx(), J("VWC", i64(4)), "OHe"], 100, {"nosv": {"hwc": {"0": {"name": "a"}}}}), (2, [ohx(1), "OHe"], 105, {"nosv": {"hwc": {}}})], cpus=2, models=NV, **OK)
case("x-appid", T1 + [("VTx", u32(1, 0)), ("VTe", u32(1, 0)), "OHe"], models=NV, meta_over={"app_id": 7}, **OK)
case("x-vs-empty-pop", [ohx(), "VS]", "OHe"], models=NV, **X)
case("x-n6-coll", [ohx(), ty("6Yc", 1, "L83328"), ty("6Yc", 2, "L93662"), "OHe"], models=N6, **X)
case("x-nv-bd", [ohx(), "VS[", "VS]", "OHe"], models=NV, cpus=3, flags=["-b"], top={"nosv": {"can_breakdown": True}}, **OK)
case("x-n6-bd", [ohx(), "6U[", "6U]", "OHe"], models=N6, cpus=3, flags=["-b"], **OK)
case("x-omp-bd", [ohx(), "PH[", "PH]", "OHe"], models=OMP, cpus=2, flags=["-b"], **OK)
case("x-bd-false-ls", [ohx(), "OHe"], models=NV, flags=["-b"], top={"nosv": {"can_breakdown": False}}, check=lambda o: str(sorted(p.name for p in o.iterdir())), **OK)
case("x-ver-refused-ls", [ohx(), "OHe"], models={"nosv": "3.0.0"}, check=lambda o: str(sorted(p.name for p in o.iterdir())), **X)
case("x-hwc-badindex-ls", [ohx(), "OHe"], models=NV, top={"nosv": {"hwc": {"0": {"name": "a"}, "2": {"name": "b"}}}}, check=lambda o: str(sorted(p.name for p in o.iterdir())), **X)


def lspcf(o):
    return (o / "thread.pcf").read_text().split("nOS-V task type")[1][:200] if (o / "thread.pcf").exists() else "nopcf"
case("y-stack512", [ohx()] + ["VS["] * 512 + ["VS]"] * 512 + ["OHe"], models=NV, stderr=None, exit=0, thread="x")
case("y-stack513", [ohx()] + ["VS["] * 513 + ["VS]"] * 513 + ["OHe"], models=NV, stderr=None, exit=1, thread="x")
case("y-coll-pcf", [ohx(), ty("VYc", 1, "L83328"), ty("VYc", 2, "L93662"), ty("VYc", 3, "L83328"), "OHe"], models=NV, check=lspcf, **X)
case("y-nul", [ohx(), J("VYc", u32(1) + b"abc\0junk\0"), ty("VYc", 2, "abc"), ty("VYc", 3, "zeta"), ty("VYc", 4, ""), "OHe"], models=NV, check=lspcf, **OK)
case("y-types-threads", threads=[(1, [ohx(), ty("VYc", 1, "alpha"), ("VTc", u32(1, 1)), At(200), "OHe"], 100, None), (2, [ohx(1), At(150), ("VTc", u32(2, 1)), ("VTx", u32(1, 0)), ("VTe", u32(1, 0)), "OHe"], 105, None)], cpus=2, models=NV, **OK)
case("y-par-conc", threads=[(1, [ohx(), ty("VYc", 1, "alpha"), ("VTC", u32(1, 1)), ("VTx", u32(1, 1)), At(200), ("VTe", u32(1, 1)), "OHe"], 100, None), (2, [ohx(1), At(150), ("VTx", u32(1, 2)), ("VTe", u32(1, 2)), "OHe"], 105, None)], cpus=2, models=NV, **OK)
case("y-nv-idle", [ohx(), "VPr", "VPa", "VPp", "OHp", "OHr", "OHe"], models=NV, **OK)
case("y-nv-exec-long", T1 + [("VTx", u32(1, 0, 9)), ("VTe", u32(1, 0, 9, 9)), "OHe"], models=NV, **OK)
case("y-omp-ws-short", TYP + [("PQx", b"\5\0"), "OHe"], models=OMP, **X)
case("y-omp-abort-pcf", TYP + ["PBb", "PBb", "PBB", "PQe", "OHe"], models=OMP, check=lambda o: (o / "thread.pcf").read_text().split("OpenMP label")[1][:200], **X)
case("y-n6-pcf-dedup", [ohx(), ty("6Yc", 1, "same"), ty("6Yc", 2, "same"), ty("6Yc", 3, "alpha"), "OHe"], models=N6, check=lambda o: (o / "thread.pcf").read_text().split("Nanos6 task type")[1][:200], **OK)


case("z-oas", [ohx(), "VS[", oas(1), "VS]", "OHe"], models=NV, cpus=2, **OK)
case("z-bd-one-missing", threads=[(1, [ohx(), "OHe"], 100, {"nosv": {"can_breakdown": True}}), (2, [ohx(1), "OHe"], 105, None)], cpus=2, flags=["-b"], models=NV, **X)
case("z-ver-mixed", threads=[(1, [ohx(), "OHe"], 100, None), (2, [ohx(1), "OHe"], 105, None)], cpus=2, models=NV, meta_over={}, **OK)
case("z-ver-unparsable", [ohx(), "OHe"], models={"nosv": "2.x"}, **X)
case("z-n6-pause-resume", TY6 + [("6Tx", u32(1)), ("6Tp", u32(1)), "6Bb", "6BB", ("6Tr", u32(1)), ("6Te", u32(1)), "OHe"], models=N6, rank=1, **OK)
case("z-bd-2cpus", threads=[(1, [ohx(), "6U[", At(200), "6U]", "OHe"], 100, None), (2, [ohx(1), At(150), "6C[", "6C]", "OHe"], 105, None)], cpus=2, flags=["-b"], models=N6, **OK)


case("z-bd-quirk", T1 + ["VHw", ("VTx", u32(1, 0)), ("VTp", u32(1, 0)), "VSh", "VSf", ("VTr", u32(1, 0)), ("VTe", u32(1, 0)), "VHW", "OHe"], models=NV, cpus=2, flags=["-b"], top={"nosv": {"can_breakdown": True}}, **OK)
case("z-nv-resume-nottop", T1 + [("VTc", u32(2, 1)), ("VTx", u32(1, 0)), ("VTp", u32(1, 0)), ("VTx", u32(2, 0)), ("VTp", u32(2, 0)), ("VTr", u32(1, 0)), "OHe"], models=NV, **X)
case("z-omp-ppe-label", TYP + [("PPc", u32(1, 5)), ("PPx", u32(1)), ("PQx", u32(6)), ("PPe", u32(1)), "OHe"], models=OMP, **X)
case("z-bd-notbool-nob", [ohx(), "OHe"], models=NV, top={"nosv": {"can_breakdown": "yes"}}, **OK)
case("z-others-while-out", [ohx(), "KCO", "PBb", "PBB", "TCi", "TCI", "DR[", "DR]", "KCI", "OHe"], models={"kernel": "1.0.0", "openmp": "1.2.1", "tampi": "1.0.0", "nodes": "1.0.0"}, **OK)
case("z-hwc-size24", [ohx(), J("VWC", i64(1, 2, 3)), "OHe"], models=NV, top=HWC2, **X)
case("z-tampi-cooling", [ohx(), "OHc", "TCi", "OHp", "OHr", "OHe"], models=TA, **X)


def order(o):
    t = (o / "thread.pcf").read_text()
    return " ".join(b.split()[1] for b in t.split("EVENT_TYPE\n")[1:])
case("z-marks-order", [ohx(), ("OM[", struct.pack("<qi", 7, 3)), ("OM]", struct.pack("<qi", 7, 3)), "OHe"], models=dict(NV, nanos6="1.1.0"), meta_over={"mark": {"3": {"title": "Three", "chan_type": "stack"}}}, check=order, **OK)

def main():
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    failures = 0
    for c in CASES:
        if only and c["name"] not in only:
            continue
        why = run_case(c)
        if why:
            failures += 1
            print(f"FAIL {c['name']}: " + "; ".join(why))
        else:
            print(f"ok {c['name']}")
    print(f"{len(CASES)} cases, {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
