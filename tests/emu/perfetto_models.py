#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""perfetto_models.py - weft emu's perfetto.pftrace for runtime-model traces.

Part 1, no corpus needed: a small nosv trace written here (tests/cli/tracegen.py;
two threads of one process on two CPUs, two task types defined by jumbo VYc, tasks
created (VTc), run and ended (VTx/VTe), nested subsystems (VS[ VMa VMA VS], VAs VAS
inside a task body) and two hardware counters declared in stream.json "nosv.hwc"
and reported by jumbo VWC events, one of them negative and one past 2^32). The file
is decoded by the small protobuf decoder below (independent of weft) and checked
exactly:
  - per thread, a "nosv type" track with the running task as a slice named by its
    type's label (the labels are only known at the end of the run), with the right
    start and end;
  - per CPU, a "nosv type" track under the CPU track with the task of the CPU's
    running thread;
  - per thread, a "nosv subsystem" track with the subsystem stack as nested slices
    (names, start, end and depth);
  - per thread that reports them, counter tracks "nosv cycles" and "nosv instr"
    (CounterDescriptor) with exactly the reported values at their times;
and ../shared/tools/perfetto_check.py must find it valid, with the same track,
slice and counter sample counts.

Part 2, on the runtime-model conformance cases (WEFT_CONFORMANCE_DIR/models,
every case the reference emulated with exit 0): perfetto_check.py must pass with
the same counts, and against the reference outputs and the trace itself:
  - the CPU task tracks: the slice begins on each CPU's "<model> type" track are
    exactly the non-null task type records (time, label) of cpu.prv (nosv 11,
    nanos6 36; labels from cpu.pcf);
  - the nosv/nanos6 subsystem tracks: after each begin or end, the top of the
    stack (or null) is a thread.prv record of the subsystem type at that time;
  - nosv task tracks: every VTx/VTr of the trace begins a slice at its time named
    by the label of its task's type (VYc, VTc);
  - nosv counters: each counter track holds exactly the VWC values of its thread.
The soup-* cases (refused by the reference) must still give a valid file.
Exit 77 when the corpus is absent (unless CI=true); part 1 runs anyway.
"""
import collections
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import tracegen  # noqa: E402
from protobuf_wire import checker_path, fields, signed, text  # noqa: E402
sys.dont_write_bytecode = True  # keep the source tree clean
from wefttest import skip_note  # noqa: E402

WEFT = os.environ["WEFT_BIN"]
CHECKER = checker_path()
TASK_PRV = {"nosv": 11, "nanos6": 36}
SUBSYS_PRV = {"nosv": 13, "nanos6": 37}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}")
    return cond


# ------------------------------------------------------------ a protobuf decoder


def decode(data):
    """Returns (tracks, events): tracks[uuid] = dict(kind, name, parent, pid, tid),
    kind in process/thread/counter/track; events in file order as
    (ts, type, track, name, counter value)."""
    tracks, events, names = {}, [], {}
    for fno, wt, span in fields(data, 0, len(data)):
        assert fno == 1 and wt == 2, "Trace has only packets"
        pkt = {}
        for f2, _, v2 in fields(data, *span):
            pkt.setdefault(f2, v2)
            if f2 == 12:  # interned_data
                for f3, _, v3 in fields(data, *v2):
                    if f3 == 2:  # event_names
                        ent = {f4: v4 for f4, _, v4 in fields(data, *v3)}
                        assert ent[1] not in names, f"iid {ent[1]} defined twice"
                        names[ent[1]] = text(data, ent[2])
        if 60 in pkt:
            d = {f: v for f, _, v in fields(data, *pkt[60])}
            t = {"parent": d.get(5, 0), "kind": "track", "name": text(data, d[2]) if 2 in d else ""}
            if 3 in d:
                p = {f: v for f, _, v in fields(data, *d[3])}
                t.update(kind="process", pid=p[1], name=text(data, p[6]))
            if 4 in d:
                p = {f: v for f, _, v in fields(data, *d[4])}
                t.update(kind="thread", pid=p[1], tid=p[2], name=text(data, p[5]))
            if 8 in d:
                t["kind"] = "counter"
            assert d[1] not in tracks, f"track {d[1]} declared twice"
            tracks[d[1]] = t
        if 11 in pkt:
            e = {f: v for f, _, v in fields(data, *pkt[11])}
            if 10 in e:
                assert e[10] in names, f"name_iid {e[10]} used before it is defined"
                name = names[e[10]]
            else:
                name = text(data, e[23]) if 23 in e else None
            assert e[11] in tracks, f"event on undeclared track {e[11]}"
            value = signed(e[30]) if 30 in e else None
            events.append((pkt.get(8, 0), e[9], e[11], name, value))
    return tracks, events


def slices(events):
    """Per track: [(name, start, end, depth)] in begin order, the counter samples
    [(ts, value)] and the slice operations [(ts, type)] in time order; each begin is
    ended on its track."""
    per, samples = collections.defaultdict(list), collections.defaultdict(list)
    open_, ops = collections.defaultdict(list), collections.defaultdict(list)
    for ts, typ, trk, name, value in sorted(events, key=lambda x: x[0]):  # stable
        if typ in (1, 2):
            ops[trk].append((ts, typ, name))
        if typ == 1:
            assert name, f"slice without a name on track {trk}"
            open_[trk].append(len(per[trk]))
            per[trk].append([name, ts, None, len(open_[trk]) - 1])
        elif typ == 2:
            assert open_[trk], f"SLICE_END without a begin on track {trk} at {ts}"
            per[trk][open_[trk].pop()][2] = ts
        elif typ == 4:
            assert value is not None, f"counter event without a value on track {trk}"
            samples[trk].append((ts, value))
    for trk, st in open_.items():
        assert not st, f"unterminated slices on track {trk}"
    return {k: [tuple(s) for s in v] for k, v in per.items()}, samples, ops


def children(tracks, parent, name):
    return [u for u, t in tracks.items() if t["parent"] == parent and t["name"] == name]


def run_checker(pf, tracks, per, samples):
    """perfetto_check.py must find the file valid with the same counts."""
    if CHECKER is None:
        return None  # no checker (no corpus beside us): main() reports the skip
    c = subprocess.run([sys.executable, str(CHECKER), str(pf)], capture_output=True, text=True)
    m1 = re.search(r"^tracks: (\d+) \(processes \d+, threads \d+, counters (\d+)", c.stdout, re.M)
    m2 = re.search(r"^slices: (\d+) complete", c.stdout, re.M)
    m3 = re.search(r"counters: (\d+) samples", c.stdout, re.M)
    nslices = sum(len(v) for v in per.values())
    ncounters = sum(1 for t in tracks.values() if t["kind"] == "counter")
    nsamples = sum(len(v) for v in samples.values())
    ok = c.returncode == 0 and m1 and m2 and m3 and int(m1.group(1)) == len(tracks) \
        and int(m1.group(2)) == ncounters and int(m2.group(1)) == nslices \
        and int(m3.group(1)) == nsamples
    if not ok:
        return f"perfetto_check.py exit {c.returncode}:\n{c.stdout}{c.stderr}"
    return None


def emulate(trace, out, *flags):
    # --partial: a refused trace still writes its slices up to the refusal
    p = subprocess.run([WEFT, "emu", "--perfetto", "--partial", "-q", *flags, "-o", str(out),
                        str(trace)], capture_output=True, text=True)
    return p


# ------------------------------------------------------------ part 1: a trace of ours
def u32(*v):
    return struct.pack("<" + "I" * len(v), *v)


def synthetic(tmp):
    ev = tracegen.ev
    hwc = {"0": {"name": "cycles"}, "1": {"name": "instr"}}

    def meta(tid, cpu):
        m = tracegen.meta(tid, 1, cpus=((0, 0), (1, 1)), require={"ovni": "1.1.0", "nosv": "2.7.0"})
        m["nosv"] = {"hwc": hwc}
        return m

    def ohx(cpu, clock):
        return ev("OHx", clock, struct.pack("<iiQ", cpu, -1, 0))

    def vwc(clock, a, b):
        return ev("VWC", clock, jumbo=struct.pack("<qq", a, b))

    t1 = [ohx(0, 1000),
          ev("VYc", 1010, jumbo=u32(1) + b"alpha\0"),
          ev("VYc", 1020, jumbo=u32(2) + b"beta\0"),
          ev("VTc", 1030, u32(1, 1)),
          ev("VS[", 1040), ev("VMa", 1050), ev("VMA", 1060), ev("VS]", 1070),
          vwc(1080, 100, 200),
          ev("VTx", 1100, u32(1, 0)),
          vwc(1110, -5, 300),
          ev("VAs", 1120), ev("VAS", 1130),
          ev("VTe", 1150, u32(1, 0)),
          vwc(1160, 1500, 1 << 40),
          ev("OHe", 1170)]
    t2 = [ohx(1, 1005),
          ev("VTc", 1035, u32(2, 2)),
          ev("VTx", 1045, u32(2, 0)),
          ev("VTe", 1095, u32(2, 0)),
          ev("OHe", 1175)]
    trace = tmp / "nosv-trace"
    tracegen.write_stream(str(trace), tracegen.thread_rel("vm", 1, 1), meta(1, 0), t1)
    tracegen.write_stream(str(trace), tracegen.thread_rel("vm", 1, 2), meta(2, 1), t2)
    out = tmp / "nosv-out"
    p = emulate(trace, out)
    if not check(p.returncode == 0, f"synthetic: weft emu exit {p.returncode}: {p.stderr.strip()}"):
        return
    pf = out / "perfetto.pftrace"
    check(not list(out.glob("*.tmp")), "synthetic: the side file of the task slices was left")
    data = pf.read_bytes()
    try:
        tracks, events = decode(data)
        per, samples, ops = slices(events)
    except (AssertionError, ValueError, KeyError, IndexError) as e:
        check(False, f"synthetic: decoding: {e}")
        return
    # Times are relative to the first event (clock 1000).
    th = {t["tid"]: u for u, t in tracks.items() if t["kind"] == "thread"}
    cpu = {t["name"]: u for u, t in tracks.items() if t["kind"] == "track" and t["parent"] == 0}
    check(sorted(th) == [1, 2], f"synthetic: thread tracks {sorted(th)}")
    check(sorted(cpu) == ["CPU 0.0", "CPU 0.1", "vCPU 0.*"], f"synthetic: CPU tracks {sorted(cpu)}")

    def track_slices(parent, name):
        us = children(tracks, parent, name)
        if not check(len(us) == 1, f"synthetic: {len(us)} tracks {name!r} under {tracks[parent]['name']}"):
            return None
        return per.get(us[0], [])

    want = {
        (th[1], "nosv type"): [("alpha", 100, 150, 0)],
        (th[2], "nosv type"): [("beta", 45, 95, 0)],
        (cpu["CPU 0.0"], "nosv type"): [("alpha", 100, 150, 0)],
        (cpu["CPU 0.1"], "nosv type"): [("beta", 45, 95, 0)],
        (th[1], "nosv subsystem"): [("Scheduler: Serving", 40, 70, 0),
                                    ("Memory: Allocating", 50, 60, 1),
                                    ("Task: In body", 100, 150, 0),
                                    ("API: Submit", 120, 130, 1)],
        (th[2], "nosv subsystem"): [("Task: In body", 45, 95, 0)],
        (th[1], None): [("Running", 0, 170, 0)],
    }
    for (parent, name), exp in want.items():
        got = per.get(parent, []) if name is None else track_slices(parent, name)
        if got is not None:
            check(got == exp, f"synthetic: {tracks[parent]['name']} {name}: {got}, expected {exp}")
    check(not children(tracks, cpu["vCPU 0.*"], "nosv type"), "synthetic: a task track on the vCPU")
    # The counters: thread 1 only, exact values (negative, past 2^32).
    counters = {(tracks[u]["parent"], tracks[u]["name"]): u for u, t in tracks.items()
                if t["kind"] == "counter"}
    check(set(counters) == {(th[1], "nosv cycles"), (th[1], "nosv instr")},
          f"synthetic: counter tracks {sorted(counters)}")
    exp_c = {"nosv cycles": [(80, 100), (110, -5), (160, 1500)],
             "nosv instr": [(80, 200), (110, 300), (160, 1 << 40)]}
    for name, exp in exp_c.items():
        u = counters.get((th[1], name))
        if u is not None:
            check(samples[u] == exp, f"synthetic: {name}: {samples[u]}, expected {exp}")
    check(not any(per.get(u) for u in counters.values()), "synthetic: slices on a counter track")
    # Channels with unlabelled values (task id, body id, app id) have no track.
    names = {t["name"] for t in tracks.values()}
    check(not names & {"nosv taskid", "nosv body", "nosv appid"}, f"synthetic: tracks {sorted(names)}")
    bad = run_checker(pf, tracks, per, samples)
    check(bad is None, f"synthetic: {bad}")
    if not failures:
        print(f"ok   synthetic nosv trace: {len(data)} bytes, {len(tracks)} tracks, "
              f"{sum(len(v) for v in per.values())} slices, "
              f"{sum(len(v) for v in samples.values())} counter samples; perfetto_check.py: valid")


# ------------------------------------------------------------ part 2: the corpus
def prv_records(path):
    recs = []
    for line in path.read_text().splitlines()[1:]:
        f = line.split(":")
        if f[0] != "2":
            continue
        row, time = int(f[4]) - 1, int(f[5])
        for i in range(6, len(f) - 1, 2):
            recs.append((row, time, int(f[i]), int(f[i + 1])))
    return recs


def pcf_values(path):
    """{type: {value: label}}."""
    out, types, in_values = {}, [], False
    for line in path.read_text().splitlines():
        if line.startswith("EVENT_TYPE"):
            types, in_values = [], False
        elif line.startswith("VALUES"):
            in_values = True
        elif not line.strip():
            in_values = False
        elif in_values:
            v, label = line.split(None, 1)
            for t in types:
                out.setdefault(t, {})[int(v)] = label
        else:
            f = line.split(None, 2)
            if len(f) >= 2 and f[0].lstrip("-").isdigit() and f[1].isdigit():
                types.append(int(f[1]))
    return out


def row_labels(path):
    lines = path.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("LEVEL THREAD"))
    n = int(lines[i].split()[-1])
    return [lines[i + 1 + k].strip() for k in range(n)]


def stream_events(obs):
    """(mcv, clock, payload, jumbo data) of a v3 stream.obs."""
    d = obs.read_bytes()
    p = 8
    while p < len(d):
        fl, mcv, clk = struct.unpack_from("<B3sQ", d, p)
        p += 12
        n = (fl & 0xF) + 1 if fl & 0xF else 0
        pay = d[p:p + n]
        p += n
        jd = None
        if fl & 0x10:
            js = struct.unpack_from("<I", pay)[0]
            jd = d[p:p + js]
            p += js
        yield mcv.decode("latin-1"), clk, pay, jd


def corpus_case(case, tmp, flags):
    name = case.name
    out = tmp / name
    p = emulate(case / "ovni", out, *flags)
    pf = out / "perfetto.pftrace"
    if not check(pf.exists(), f"{name}: no perfetto.pftrace (exit {p.returncode}: {p.stderr.strip()})"):
        return
    data = pf.read_bytes()
    try:
        tracks, events = decode(data)
        per, samples, ops = slices(events)
    except (AssertionError, ValueError, KeyError, IndexError) as e:
        check(False, f"{name}: decoding: {e}")
        return
    bad = run_checker(pf, tracks, per, samples)
    if not check(bad is None, f"{name}: {bad}"):
        return
    nsl = sum(len(v) for v in per.values())
    nsa = sum(len(v) for v in samples.values())
    if name.startswith("soup-"):
        print(f"ok   {name}: refused (exit {p.returncode}); {len(tracks)} tracks, {nsl} slices, "
              "perfetto_check.py: valid")
        return
    if not check(p.returncode == 0, f"{name}: weft emu exit {p.returncode}: {p.stderr.strip()}"):
        return
    emu = case / "emu"
    threc, cpurec = prv_records(emu / "thread.prv"), prv_records(emu / "cpu.prv")
    tpcf, cpcf = pcf_values(emu / "thread.pcf"), pcf_values(emu / "cpu.pcf")
    cpu_rows = row_labels(emu / "cpu.row")
    cpu_uuid = {t["name"]: u for u, t in tracks.items() if t["kind"] == "track" and t["parent"] == 0}
    threads = sorted((u for u, t in tracks.items() if t["kind"] == "thread"),
                     key=lambda u: (tracks[u]["pid"], tracks[u]["tid"]))
    thread_rows = row_labels(emu / "thread.row")
    th_of_row = {}
    for row, label in enumerate(thread_rows):  # "TH <app>.<tid>"
        us = [u for u in threads if tracks[u]["name"] == label]
        if check(len(us) == 1, f"{name}: thread track for {label!r}"):
            th_of_row[row] = us[0]
    what = []
    # CPU task tracks against cpu.prv.
    for model, typ in TASK_PRV.items():
        labels = cpcf.get(typ)
        if labels is None:
            continue
        for row, label in enumerate(cpu_rows):
            exp = [(t, labels.get(v, str(v))) for r, t, ty, v in cpurec if r == row and ty == typ and v]
            us = children(tracks, cpu_uuid.get(label), f"{model} type")
            got = [(s[1], s[0]) for s in per.get(us[0], [])] if us else []
            check(got == exp, f"{name}: {label} {model} type: {got}, cpu.prv: {exp}")
            if exp:
                what.append(f"{label} {model} tasks {len(exp)}")
    # Subsystem stacks against thread.prv.
    for model, typ in SUBSYS_PRV.items():
        labels = tpcf.get(typ)
        if labels is None:
            continue
        n = 0
        for row, u in th_of_row.items():
            us = children(tracks, u, f"{model} subsystem")
            if not us:
                continue
            recs = collections.Counter((t, labels.get(v, str(v)) if v else None)
                                       for r, t, ty, v in threc if r == row and ty == typ)
            # The top of the stack after each operation.
            stack, tops = [], collections.Counter()
            for t, kind, sname in ops[us[0]]:
                if kind == 1:
                    stack.append(sname)
                else:
                    stack.pop()
                tops[(t, stack[-1] if stack else None)] += 1
            missing = tops - recs
            check(not missing, f"{name}: {thread_rows[row]} {model} subsystem: tops not in "
                  f"thread.prv: {sorted(missing.items(), key=str)[:5]}")
            n += len(per[us[0]])
        if n:
            what.append(f"{model} subsystem slices {n}")
    # nosv: task slices and counters against the trace itself.
    obs = sorted((case / "ovni").rglob("stream.obs"))
    evs = {o: list(stream_events(o)) for o in obs}
    t0 = min((e[0][1] for e in evs.values() if e), default=0)
    types, tasks = collections.defaultdict(dict), collections.defaultdict(dict)
    for o, el in evs.items():
        proc = o.parent.parent
        for mcv, clk, pay, jd in el:
            if mcv == "VYc":
                lab = jd[4:].split(b"\0")[0].decode()
                types[proc][struct.unpack_from("<I", jd)[0]] = lab or \
                    f"(unlabeled task type {struct.unpack_from('<I', jd)[0]})"
            elif mcv in ("VTc", "VTC"):
                tid_, typ_ = struct.unpack_from("<II", pay)
                tasks[proc][tid_] = typ_
    ntask = nsamp = 0
    for o, el in evs.items():
        meta = json.loads((o.parent / "stream.json").read_text())
        tid = meta["ovni"]["tid"]
        pid = meta["ovni"]["pid"]
        us = [u for u in threads if tracks[u]["tid"] == tid and tracks[u]["pid"] == pid]
        if not us:
            continue
        proc = o.parent.parent
        begins = collections.Counter()
        for u in children(tracks, us[0], "nosv type"):
            begins.update((s[1], s[0]) for s in per.get(u, []))
        exp = collections.Counter()
        hwc = {}
        for mcv, clk, pay, jd in el:
            if mcv in ("VTx", "VTr"):
                task = struct.unpack_from("<I", pay)[0]
                exp[(clk - t0, types[proc][tasks[proc][task]])] += 1
            elif mcv == "VWC":
                for i in range(len(jd) // 8):
                    hwc.setdefault(i, []).append((clk - t0, struct.unpack_from("<q", jd, 8 * i)[0]))
        missing = exp - begins
        check(not missing, f"{name}: TH {tid}: task starts without a slice: {sorted(missing)[:5]}")
        ntask += sum(exp.values())
        names = meta.get("nosv", {}).get("hwc", {})
        for i, vals in hwc.items():
            cn = f"nosv {names[str(i)]['name']}"
            cu = [u for u in children(tracks, us[0], cn) if tracks[u]["kind"] == "counter"]
            if check(len(cu) == 1, f"{name}: TH {tid}: counter track {cn!r}"):
                check(samples[cu[0]] == vals, f"{name}: TH {tid} {cn}: {samples[cu[0]]}, "
                      f"VWC: {vals}")
                nsamp += len(vals)
    if ntask:
        what.append(f"nosv task starts {ntask}")
    if nsamp:
        what.append(f"counter samples {nsamp}")
    print(f"ok   {name}: {len(data)} bytes, {len(tracks)} tracks, {nsl} slices, {nsa} samples; "
          f"perfetto_check.py: valid; checked: {', '.join(what) or 'counts only'}")


def corpus(tmp):
    root = os.environ.get("WEFT_CONFORMANCE_DIR") or os.environ.get("WEFT_CONFORMANCE_DIR_DEFAULT")
    if not root or not (Path(root) / "models").is_dir():
        return False
    models = Path(root) / "models"
    for line in (models / "INDEX.txt").read_text().splitlines():
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        name, flags = f[0], [x for x in f[1:-1] if x in ("-a", "-b")]
        nfail = len(failures)
        corpus_case(models / name, tmp, flags)
        if len(failures) > nfail:
            print(f"FAIL {name}")
    return True


def main():
    with tempfile.TemporaryDirectory(prefix="weft-emu-pfm-") as tmp:
        tmp = Path(tmp)
        synthetic(tmp)
        have = corpus(tmp)
    print(f"{len(failures)} failure(s)")
    if failures:
        return 1
    if not have or CHECKER is None:
        if os.environ.get("CI") == "true":
            print("conformance corpus missing (CI=true)", file=sys.stderr)
            return 1
        why = ("conformance corpus (models/ and tools/perfetto_check.py) not found: "
               "part 1 ran without perfetto_check.py, part 2 skipped")
        print(why, file=sys.stderr)
        skip_note(why)  # tests/ctest_skipped.py lists it
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
