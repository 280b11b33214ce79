#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""user_model.py - a model added with `weft emu --model FILE`, and malformed model files.

The example program examples/zeta (built as $WEFT_BINARY_DIR/bin/zeta) writes a
trace with events of its own model byte 'Z', described by examples/zeta/zeta.yaml.
This test runs it with 2 workers and 25 work items each (into a temporary
OVNI_TRACEDIR), then checks:
  - `weft dump --model zeta.yaml`: every thread's events in the order the program
    emits them, the Z events decoded by the descriptions of the model file (then
    the catalogue name of the channel each writes, "  [zeta.phase]"); and
    `weft dump` without the model: the Z events undecoded (payload bytes);
  - `weft emu --model zeta.yaml --paraver --perfetto -q -o OUT`: the exact
    records of the zeta channels (types 700 phase, 701 region, 702 work item
    size) in thread.prv and cpu.prv, computed from the events by the rules of
    docs/models.md (views run/act, policies skipdup/emitdup), at the clocks
    `weft dump` prints; the .pcf blocks of the three types (labels with the
    " of the RUNNING thread" / " of the ACTIVE thread" suffixes, value labels);
    and, in perfetto.pftrace, one track per (thread, zeta channel used) with
    the slices of the channel (set: a slice until the next set, push/pop:
    nested slices) at the same times;
  - `weft emu --list-models --model ...` lists the model; the same model given
    twice is refused; the trace emulated without the model stops at its first
    Z event; a model whose major version differs from the requirement is
    refused with nothing written;
  - the example of docs/models.md is examples/zeta/zeta.yaml;
  - every file of tests/emu/bad_models/: `weft emu --model FILE TRACE` and
    `weft dump --model FILE TRACE` exit 1 with exactly `weft emu: FILE:LINE:
    reason` (`weft dump: ...`), and nothing is written (neither into the trace
    directory nor into an -o directory).
perfetto.pftrace is also given to /work/shared/tools/perfetto_check.py (or
$WEFT_PERFETTO_CHECK) when it exists, which must find it valid.
Environment: WEFT_BIN, WEFT_SOURCE_DIR, WEFT_BINARY_DIR.
"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ next to the sources
sys.path.insert(0, str(Path(__file__).resolve().parent))
import perfetto_emu  # noqa: E402  (the protobuf decoder)

WEFT = os.environ["WEFT_BIN"]
SRC = Path(os.environ.get("WEFT_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN = Path(os.environ.get("WEFT_BINARY_DIR", SRC / "build"))
ZETA = BIN / "bin" / "zeta"
MODEL = SRC / "examples" / "zeta" / "zeta.yaml"
BAD = Path(__file__).resolve().parent / "bad_models"

NWORKERS, ITEMS, BATCH = 2, 25, 10

# The malformed model files: file -> (line or None, reason). The line is the
# one of the construct at fault; None: the error is not about a line.
BAD_MODELS = {
    "not_yaml.yaml": (9, "not valid YAML: did not find expected ',' or ']' while parsing a "
                         "flow sequence (begun at line 7)"),
    "empty.yaml": (1, "the file is empty (a model needs weft-model, name, byte, version and "
                      "events)"),
    "two_documents.yaml": (10, "a second YAML document; a model file holds one"),
    "missing_format.yaml": (3, "missing 'weft-model: 1' (the format version)"),
    "missing_name.yaml": (3, "the model has no 'name:'"),
    "format_version.yaml": (3, "format version 2: this weft reads model files of format 1"),
    "byte_two_chars.yaml": (5, "byte must be one printable character, not 'ZZ'"),
    "byte_builtin.yaml": (5, "model 'zeta' (byte 'V') clashes with model 'nosv' (byte 'V') "
                             "of built-in nosv.yaml: its byte is taken"),
    "name_builtin.yaml": (4, "model 'mpi' (byte 'Z') clashes with model 'mpi' (byte 'M') "
                             "of built-in mpi.yaml: its name is taken"),
    "bad_version.yaml": (6, "version must be major.minor.patch, not '1.0'"),
    "unknown_top_key.yaml": (7, "model: unknown key 'colour'"),
    "unknown_channel_key.yaml": (10, "channel: unknown key 'type'"),
    "key_twice.yaml": (10, "event: key 'desc' given twice"),
    "bad_kind.yaml": (9, "kind must be one of single, stack, not 'heap'"),
    "prv_no_label.yaml": (9, "channel 'phase' has a Paraver type (prv) but no label"),
    "lint_empty_single.yaml": (11, "lint-empty needs a stack channel ('phase' is single)"),
    "duplicate_value_label.yaml": (14, "value 1 is labelled twice"),
    "unknown_channel.yaml": (17, "no channel named 'stage' in this model"),
    "unknown_action.yaml": (14, "unknown action 'assign' (set, push, pop, flag, type-create, "
                                "task-create, task, counters, thread-start, thread-state, "
                                "affinity, affinity-remote, hook)"),
    "set_on_stack.yaml": (16, "channel 'region' is a stack: use push and pop"),
    "pop_null.yaml": (19, "pop needs the value expected on top, not null"),
    "bad_payload_field.yaml": (16, "'u64:0' is not a value: use an integer, null or a payload "
                                   "field (u32@N, i32@N, u64@N, i64@N, type-gid@N, task-gid)"),
    "mcv_wrong_byte.yaml": (10, "MCV 'YPe' does not start with the model byte 'Z'"),
    "mcv_length.yaml": (10, "MCV 'ZPcc' must be three characters"),
    "duplicate_mcv.yaml": (12, "event ZPs is described twice"),
    "thread_end_unknown.yaml": (7, "thread-end: ZHe is not an event of the model"),
    "thread_end_not_dead.yaml": (7, "thread-end: event ZHp does not end the thread "
                                    "(no thread-state: {to: dead})"),
    "bad_arg_type.yaml": (9, "arg type 'u24' is not one of u8 u16 u32 u64 i8 i16 i32 i64 str"),
    "str_not_last.yaml": (11, "a str arg can only be the last one"),
    "desc_no_field.yaml": (10, "desc: no field named 'size' in args"),
    "bad_size_rule.yaml": (11, "size must be \"== N\" or \">= N\" (N bytes of payload), not '= 8'"),
    "jumbo_no_args.yaml": (10, "a jumbo event needs args"),
    "pair_no_label.yaml": (17, "value 3 has no label in channel 'region'"),
    "tasks_no_section.yaml": (13, "event ZTc uses tasks or task types, but the model has no "
                                  "tasks: section"),
    "no_events.yaml": (3, "the model has no events (events: or pairs:)"),
}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}")
    return cond


def weft(*args, cwd=None):
    return subprocess.run([WEFT, *map(str, args)], capture_output=True, text=True, cwd=cwd)


# ------------------------------------------------------------ what zeta emits
PHASE_DESC = {"ZPs": "enters the setup phase", "ZPc": "enters the compute phase",
              "ZPt": "enters the teardown phase", "ZPe": "leaves its phase"}
PHASE_VALUE = {"ZPs": 1, "ZPc": 2, "ZPt": 3, "ZPe": None}
PHASE_LABEL = {1: "Setup", 2: "Compute", 3: "Teardown"}
REGION_LABEL = {1: "Main", 2: "Worker", 3: "Batch"}


def program_events(k):
    """The events thread k emits (0: main, 1..NWORKERS: worker k), flushes aside:
    a list of (mcv, value) with value the payload of ZR[, ZR] and ZWi."""
    if k == 0:
        return ([("OHx", None), ("ZPs", None), ("ZR[", 1)] + [("OHC", None)] * NWORKERS +
                [("ZPe", None), ("OHp", None), ("OHr", None), ("ZPt", None), ("ZR]", 1),
                 ("ZPe", None), ("OHe", None)])
    ev = [("OHx", None), ("ZPs", None), ("ZR[", 2), ("ZPc", None)]
    for i in range(ITEMS):
        if i % BATCH == 0:
            ev.append(("ZR[", 3))
        ev.append(("ZWi", 64 * (1 + (i + k) % 8)))
        if i % BATCH == BATCH - 1 or i == ITEMS - 1:
            ev.append(("ZR]", 3))
    return ev + [("ZPt", None), ("ZR]", 2), ("ZPe", None), ("OHe", None)]


def z_desc(mcv, value):
    """What `weft dump --model zeta.yaml` prints for a Z event: its
    description, then the catalogue name of the channel it writes."""
    if mcv in PHASE_DESC:
        return PHASE_DESC[mcv] + "  [zeta.phase]"
    if mcv == "ZR[":
        return f"enters region {value}  [zeta.region]"
    if mcv == "ZR]":
        return f"leaves region {value}  [zeta.region]"
    return f"processes a work item of {value} bytes  [zeta.item]"


def z_raw(mcv, value):
    """What `weft dump` without the model prints: the payload bytes."""
    if value is None:
        return ""
    size = 8 if mcv == "ZWi" else 4
    return "".join(f":{b:02x}" for b in value.to_bytes(size, "little"))


# ------------------------------------------------------------ expected timelines
# type -> (channel, view, policy) as zeta.yaml declares them.
CHANS = {700: ("phase", "run", "skipdup"), 701: ("region", "act", "skipdup"),
         702: ("item", "run", "emitdup")}
STATE = {"OHx": "running", "OHp": "paused", "OHr": "running", "OHe": "dead"}


def simulate(events):
    """events: [(time, mcv, value)] of one thread. Returns the Paraver records
    [(time, type, value)] of its zeta channels (the thread view, also what the
    CPU shows while the thread runs on it: no other thread shares its CPU), and
    per channel the Perfetto slice events [(time, 'B', name) | (time, 'E')]."""
    raw = {"phase": None, "region": [], "item": None}
    slices = {"phase": [], "region": [], "item": []}
    state = None
    last = {}
    recs = []

    def value(t):
        name, view, _ = CHANS[t]
        v = raw[name][-1] if name == "region" and raw[name] else (
            None if name == "region" else raw[name])
        shown = state == "running" if view == "run" else state in ("running", "cooling", "warming")
        return v if shown and v is not None else 0

    def reeval(time, t):
        v = value(t)
        if t not in last or CHANS[t][2] == "emitdup" or last[t] != v:
            recs.append((time, t, v))
            last[t] = v

    for time, mcv, val in events:
        if mcv in STATE:
            state = STATE[mcv]
            for t in CHANS:
                reeval(time, t)
        elif mcv in PHASE_VALUE:
            v = PHASE_VALUE[mcv]
            if raw["phase"] is not None:
                slices["phase"].append((time, "E"))
            if v is not None:
                slices["phase"].append((time, "B", PHASE_LABEL[v]))
            raw["phase"] = v
            reeval(time, 700)
        elif mcv == "ZR[":
            raw["region"].append(val)
            slices["region"].append((time, "B", REGION_LABEL[val]))
            reeval(time, 701)
        elif mcv == "ZR]":
            assert raw["region"][-1] == val
            raw["region"].pop()
            slices["region"].append((time, "E"))
            reeval(time, 701)
        elif mcv == "ZWi":
            if raw["item"] is not None:
                slices["item"].append((time, "E"))
            slices["item"].append((time, "B", str(val)))
            raw["item"] = val
            reeval(time, 702)
    return recs, slices


def prv_records(path):
    """{row: [(time, type, value)]} of the zeta types, in file order."""
    rows = {}
    lines = path.read_text().splitlines()
    for line in lines[1:]:
        f = line.split(":")
        if f[0] != "2":
            continue
        row, time = int(f[4]), int(f[5])
        for i in range(6, len(f), 2):
            typ, val = int(f[i]), int(f[i + 1])
            if typ in CHANS:
                rows.setdefault(row, []).append((time, typ, val))
    return rows


def pcf_blocks(path):
    return {int(b.split("\n")[1].split()[1]): b.rstrip("\n") + "\n"
            for b in path.read_text().split("\n\n\n") if b.startswith("EVENT_TYPE\n0 ")}


def row_names(path):
    """The names of the rows of the timeline (after the LEVEL THREAD line)."""
    lines = path.read_text().splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.startswith("LEVEL THREAD")) + 1
    return [ln.strip() for ln in lines[first:] if ln.strip()]


def prv_duration(path):
    head = path.read_text().split("\n", 1)[0]
    return int(re.search(r":(\d+)_ns:", head).group(1))


# ------------------------------------------------------------ the checks
def dump_threads(trace, with_model):
    """{tid: [(clock, mcv, desc)]} from `weft dump`, flush events left out."""
    args = ["dump"] + (["--model", MODEL] if with_model else []) + [trace]
    p = weft(*args)
    check(p.returncode == 0, f"dump (model: {with_model}): exit {p.returncode}: {p.stderr}")
    th = {}
    for line in p.stdout.splitlines():
        f = line.split(None, 3)
        if len(f) < 3 or f[1] in ("OF[", "OF]"):
            continue
        tid = int(re.search(r"thread\.(\d+)$", f[2]).group(1))
        th.setdefault(tid, []).append((int(f[0]), f[1], f[3] if len(f) > 3 else ""))
    return th


def check_dump(trace):
    """Checks `weft dump` with and without the model; returns {k: (tid, [(clock, mcv, value)])}."""
    decoded = dump_threads(trace, True)
    raw = dump_threads(trace, False)
    check(len(decoded) == NWORKERS + 1, f"dump: {len(decoded)} threads, not {NWORKERS + 1}")
    threads = {}
    for tid, evs in decoded.items():
        m = re.match(r"starts running on CPU (\d+);", evs[0][2]) if evs else None
        if not check(m is not None, f"dump: thread {tid} does not start with OHx: {evs[:1]}"):
            continue
        k = int(m.group(1))
        want = program_events(k)
        check([e[1] for e in evs] == [w[0] for w in want],
              f"dump: thread {tid} (k={k}): MCVs {[e[1] for e in evs]} != {[w[0] for w in want]}")
        for (clock, mcv, desc), (_, val) in zip(evs, want):
            if mcv[0] == "Z":
                check(desc == z_desc(mcv, val),
                      f"dump --model: {mcv} of thread {tid} printed '{desc}', not "
                      f"'{z_desc(mcv, val)}'")
        for (clock, mcv, desc), (_, val) in zip(raw.get(tid, []), want):
            if mcv[0] == "Z":
                check(desc.strip() == z_raw(mcv, val),
                      f"dump without the model: {mcv} of thread {tid} printed '{desc}', not "
                      f"'{z_raw(mcv, val)}'")
        threads[k] = (tid, [(c, w[0], w[1]) for (c, _, _), w in zip(evs, want)])
    return threads


def check_emu(trace, out, threads):
    p = weft("emu", "--model", MODEL, "--paraver", "--perfetto", "-q", "-o", out, trace)
    if not check(p.returncode == 0, f"emu: exit {p.returncode}: {p.stderr}"):
        return
    check(p.stdout == "" and p.stderr == "", f"emu -q printed: {p.stdout!r} {p.stderr!r}")
    t0 = min(evs[0][0] for _, evs in threads.values())
    sim = {k: simulate([(c - t0, m, v) for c, m, v in evs]) for k, (_, evs) in threads.items()}

    # thread.prv: row i+1 is the i-th "TH app.tid" line of thread.row
    trows = row_names(out / "thread.row")
    th_recs = prv_records(out / "thread.prv")
    want_th = {}
    for k, (tid, _) in threads.items():
        name = f"TH 1.{tid}"
        if check(name in trows, f"thread.row: no row {name}: {trows}"):
            want_th[trows.index(name) + 1] = sim[k][0]
    check(th_recs == want_th, f"thread.prv zeta records:\n  got  {th_recs}\n  want {want_th}")

    # cpu.prv: CPU k (row k+1) runs thread k only; the vCPU row shows nothing of zeta
    crows = row_names(out / "cpu.row")
    want_rows = [f"CPU 0.{i}" for i in range(NWORKERS + 1)] + ["vCPU 0.*"]
    check(crows == want_rows, f"cpu.row: {crows} != {want_rows}")
    cpu_recs = prv_records(out / "cpu.prv")
    want_cpu = {k + 1: sim[k][0] for k in threads}
    check(cpu_recs == want_cpu, f"cpu.prv zeta records:\n  got  {cpu_recs}\n  want {want_cpu}")

    # .pcf blocks
    phases = "VALUES\n1    Setup\n2    Compute\n3    Teardown\n"
    regions = "VALUES\n1    Main\n2    Worker\n3    Batch\n"
    for pcf, act in (("thread.pcf", "ACTIVE"), ("cpu.pcf", "RUNNING")):
        blocks = pcf_blocks(out / pcf)
        want = {
            700: "EVENT_TYPE\n0 700        Zeta phase of the RUNNING thread\n" + phases,
            701: f"EVENT_TYPE\n0 701        Zeta region of the {act} thread\n" + regions,
            702: "EVENT_TYPE\n0 702        Zeta work item size of the RUNNING thread\nVALUES\n",
        }
        for t, text in want.items():
            check(blocks.get(t) == text, f"{pcf}: block {t} is {blocks.get(t)!r}, not {text!r}")

    # perfetto.pftrace: under each thread track, one track "zeta CHANNEL" per
    # channel the thread writes: phase and region (labelled values) as slices
    # named by the labels, item (numbers without labels) as a counter track.
    end = prv_duration(out / "thread.prv")
    try:
        tracks, events = perfetto_emu.decode((out / "perfetto.pftrace").read_bytes())
    except (AssertionError, ValueError, KeyError, IndexError) as e:
        check(False, f"perfetto: cannot decode: {e}")
        return
    by_tid = {t["tid"]: u for u, t in tracks.items() if t["kind"] == "thread"}
    zeta_tracks = {u: t for u, t in tracks.items() if t["name"].startswith("zeta ")}
    for u, t in zeta_tracks.items():
        check(t["parent"] in by_tid.values(),
              f"perfetto: track {t['name']} is not under a thread track")
    for k, (tid, _) in threads.items():
        if not check(tid in by_tid, f"perfetto: no track of thread {tid}"):
            continue
        slices = sim[k][1]
        mine = {t["name"]: u for u, t in zeta_tracks.items() if t["parent"] == by_tid[tid]}
        want_names = {f"zeta {c}" for c in ("phase", "region", "item") if slices[c]}
        got_names = set(mine)
        check(got_names == want_names and len(mine) == sum(
              1 for u, t in zeta_tracks.items() if t["parent"] == by_tid[tid]),
              f"perfetto: thread {tid}: zeta tracks {sorted(mine)}, want {sorted(want_names)}")
        # The work item sizes have no labels: a counter track with each size.
        if "zeta item" in mine:
            want_items = [(e[0], int(e[2])) for e in slices["item"] if e[1] == "B"]
            got_items = counter_samples(out / "perfetto.pftrace", mine["zeta item"])
            check(got_items == want_items,
                  f"perfetto: thread {tid} item counter:\n  got  {got_items}\n  want {want_items}")
        for c, want in slices.items():
            if f"zeta {c}" not in mine or c == "item":
                continue
            depth = sum(1 if e[1] == "B" else -1 for e in want)
            want = want + [(end, "E")] * depth  # still open at the end of the trace
            got = [(ts, "B", n) if typ == 1 else (ts, "E")
                   for ts, typ, trk, n, _ in events if trk == mine[f"zeta {c}"] and typ in (1, 2)]
            check(got == want, f"perfetto: thread {tid} {c} slices:\n  got  {got}\n  want {want}")
    checker = perfetto_emu.checker_path()
    if checker is not None:
        c = subprocess.run([sys.executable, str(checker), str(out / "perfetto.pftrace")],
                           capture_output=True, text=True)
        m = re.search(r"^tracks: (\d+)", c.stdout, re.M)
        check(c.returncode == 0 and m is not None and int(m.group(1)) == len(tracks),
              f"perfetto_check.py: exit {c.returncode}:\n{c.stdout}{c.stderr}")


def counter_samples(path, track):
    """[(ts, value)] of the COUNTER events of one track, in file order."""
    data = path.read_bytes()
    out = []
    for _, _, span in perfetto_emu.fields(data, 0, len(data)):
        pkt = {}
        for f, _, v in perfetto_emu.fields(data, *span):
            pkt.setdefault(f, v)
        if 11 not in pkt:
            continue
        e = {f: v for f, _, v in perfetto_emu.fields(data, *pkt[11])}
        if e.get(9) == 4 and e.get(11) == track:
            v = e.get(30, 0)
            out.append((pkt.get(8, 0), v - (1 << 64) if v >= 1 << 63 else v))
    return out


def check_docs():
    """The example of docs/models.md is examples/zeta/zeta.yaml (its header comments aside)."""
    doc = (SRC / "docs" / "models.md").read_text()
    m = re.search(r"```yaml\n(.*?)```", doc, re.S)
    lines = MODEL.read_text().splitlines(True)
    while lines and lines[0].startswith("#"):  # the header comments
        lines.pop(0)
    body = "".join(lines)
    check(m is not None and m.group(1) == body,
          "docs/models.md: the first yaml example is not examples/zeta/zeta.yaml")


def check_cli(tmp, trace):
    # --list-models lists the model (and a second one: --model is repeatable)
    other = tmp / "eta.yaml"
    other.write_text("weft-model: 1\nname: eta\nbyte: Y\nversion: 0.1.0\ntitle: another one\n"
                     "events:\n  - mcv: YYy\n    desc: does nothing\n")
    p = weft("emu", "--model", MODEL, "--model", other, "--list-models")
    check(p.returncode == 0, f"--list-models: exit {p.returncode}: {p.stderr}")
    want = [f"zeta     Z    1.0.0    the zeta work queue ({MODEL})",
            f"eta      Y    0.1.0    another one ({other})"]
    for w in want:
        check(w in p.stdout.splitlines(), f"--list-models: no line {w!r} in:\n{p.stdout}")
    # the same model twice: byte and name clash
    p = weft("emu", "--model", MODEL, "--model", MODEL, trace)
    msg = (f"weft emu: {MODEL}:5: model 'zeta' (byte 'Z') clashes with model 'zeta' (byte 'Z') "
           f"of {MODEL}: its byte is taken\n")
    check(p.returncode == 1 and p.stderr == msg,
          f"model twice: exit {p.returncode}, stderr {p.stderr!r}, not {msg!r}")
    # without the model, the first Z event stops the emulation
    out = tmp / "no-model"
    p = weft("emu", "-q", "-o", out, trace)
    check(p.returncode == 1 and "no model is registered for the model byte of this event"
          in p.stderr and " event ZPs at clock " in p.stderr,
          f"without --model: exit {p.returncode}, stderr {p.stderr!r}")
    # a model 2.0.0 cannot emulate a trace requiring zeta 1.0.0
    v2 = tmp / "zeta2.yaml"
    v2.write_text(MODEL.read_text().replace("version: 1.0.0", "version: 2.0.0"))
    out = tmp / "v2"
    p = weft("emu", "-q", "-o", out, "--model", v2, trace)
    check(p.returncode == 1 and p.stderr.endswith(
          "unsupported zeta model version (want 1.0.0, have 2.0.0)\n"),
          f"zeta 2.0.0: exit {p.returncode}, stderr {p.stderr!r}")
    check(not out.exists(), "zeta 2.0.0: the output directory was created")


def check_bad_models(tmp, trace):
    files = sorted(p.name for p in BAD.glob("*.yaml"))
    check(set(files) == set(BAD_MODELS), f"bad_models/: files {files} != table "
          f"{sorted(BAD_MODELS)}")
    before = sorted(str(p.relative_to(trace)) for p in trace.rglob("*"))
    for name in files:
        if name not in BAD_MODELS:
            continue
        line, reason = BAD_MODELS[name]
        where = f"{name}:{line}" if line is not None else name
        for cmd in ("emu", "dump"):
            out = tmp / f"bad-{cmd}-{name}"
            p = weft(cmd, "--model", name, trace, cwd=BAD)
            want = f"weft {cmd}: {where}: {reason}\n"
            check(p.returncode == 1, f"{cmd} {name}: exit {p.returncode}, not 1")
            check(p.stderr == want, f"{cmd} {name}: stderr\n  got  {p.stderr!r}\n  want {want!r}")
            check(p.stdout == "", f"{cmd} {name}: stdout {p.stdout[:200]!r}")
            if cmd == "emu":
                p = weft("emu", "-o", out, "--model", name, trace, cwd=BAD)
                check(p.returncode == 1 and p.stderr == want,
                      f"emu -o {name}: exit {p.returncode}, stderr {p.stderr!r}")
                check(not out.exists(), f"emu -o {name}: {out} was created")
        after = sorted(str(p.relative_to(trace)) for p in trace.rglob("*"))
        check(after == before, f"{name}: the trace directory changed: {set(after) - set(before)}")
    # refused before the trace is even looked at: a missing trace does not matter
    p = weft("emu", "--model", "bad_version.yaml", tmp / "no-such-trace", cwd=BAD)
    want = "weft emu: bad_version.yaml:6: version must be major.minor.patch, not '1.0'\n"
    check(p.returncode == 1 and p.stderr == want,
          f"bad model, missing trace: exit {p.returncode}, stderr {p.stderr!r}")


def main():
    if not check(ZETA.is_file(), f"{ZETA} is missing (build the examples)"):
        return 1
    with tempfile.TemporaryDirectory(prefix="weft-user-model-") as tmp:
        tmp = Path(tmp)
        trace = tmp / "trace"
        env = dict(os.environ, OVNI_TRACEDIR=str(trace))
        p = subprocess.run([str(ZETA), str(NWORKERS), str(ITEMS)], capture_output=True,
                           text=True, env=env, cwd=tmp)
        if not check(p.returncode == 0 and trace.is_dir(),
                     f"zeta: exit {p.returncode}: {p.stderr}"):
            return 1
        check(p.stdout == f"zeta: trace of {NWORKERS} workers written to {trace}\n",
              f"zeta printed {p.stdout!r}")
        threads = check_dump(trace)
        if len(threads) == NWORKERS + 1:
            check_emu(trace, tmp / "out", threads)
        check_cli(tmp, trace)
        check_docs()
        check_bad_models(tmp, trace)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print(f"ok: zeta emulated ({NWORKERS} workers, {ITEMS} items), "
          f"{len(BAD_MODELS)} malformed models refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
