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
        if DUMP:
            print(f"== {c['name']} exit {p.returncode}\n   stderr {p.stderr!r}")
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
