#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""model_option.py - `--model FILE` of weft dump, top, check, index and sql (as
weft emu's: the file adds a model to the run's models).

A trace of the example program examples/zeta (bin/zeta with 2 workers and 20
work items each, into a temporary OVNI_TRACEDIR; model byte 'Z', described by
examples/zeta/zeta.yaml) is read by each command with the model:
  - dump --model (and --model=FILE): every line is the line of `weft dump -x`
    (clock, MCV, stream) with, for a Z event, the description zeta.yaml gives
    its payload ("enters region 2", "processes a work item of 128 bytes")
    and the catalogue name of the channel it writes ("  [zeta.region]"),
    exactly; without the model the Z lines are the payload bytes;
  - top --model: the exact lines of weft top without it (counts by MCV: the
    40 ZWi, the 7 ZR[ of the program), then a blank line, the title and the
    events per zeta channel (zeta.item 40, zeta.phase, zeta.region);
  - check --model: the exact verdict line of check without it (3 streams, 3
    threads, the events);
  - index --model: the exact lines of index without it (one stream.idx per
    stream, merge.idx);
  - sql --model: the channel table names the model's channels by their
    catalogue names (zeta.phase, zeta.region, zeta.item; types 700-702,
    their labels) with their intervals, exact lines; without the model, the
    trace is refused at its first Z event (exit 1, the message);
  - emu --model --perfetto: the zeta tracks are those of the same catalogue
    names, named "<model> <channel>" (docs/emu.md, THE CHANNEL CATALOGUE);
and, for each of dump, top, check, index, sql and emu:
  - a malformed model file (tests/emu/bad_models/bad_version.yaml) exits 1
    with exactly "weft CMD: bad_version.yaml:6: version must be
    major.minor.patch, not '1.0'", nothing on stdout, the trace directory
    unchanged and nothing written (sql -o FILE not created);
  - a model whose byte is taken (byte_builtin.yaml) likewise;
  - --model without a FILE exits 2 with "weft CMD: option '--model' needs an
    argument (FILE); run `weft CMD --help`";
  - --help lists --model FILE.
Environment: WEFT_BIN, WEFT_SOURCE_DIR, WEFT_BINARY_DIR.
"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

WEFT = os.environ["WEFT_BIN"]
SRC = Path(os.environ.get("WEFT_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN = Path(os.environ.get("WEFT_BINARY_DIR", SRC / "build"))
ZETA = BIN / "bin" / "zeta"
MODEL = SRC / "examples" / "zeta" / "zeta.yaml"
BAD = SRC / "tests" / "emu" / "bad_models"
NWORKERS, ITEMS = 2, 20
CMDS = ("dump", "top", "check", "index", "sql", "emu")

failures = []
checks = 0


def check(cond, what):
    global checks
    checks += 1
    if not cond:
        failures.append(what)
        print(f"FAIL {what}", file=sys.stderr)
    return cond


def eq(got, want, what):
    return check(got == want, f"{what}\n  got:  {got!r}\n  want: {want!r}")


def weft(*args, cwd=None):
    return subprocess.run([WEFT, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def snapshot(d):
    return sorted((str(p.relative_to(d)), p.stat().st_size) for p in Path(d).rglob("*"))


DUMP_LINE = re.compile(r"^( *-?\d+  (...)  \S+  )(.*)$")
PHASE = {"ZPs": "enters the setup phase", "ZPc": "enters the compute phase",
         "ZPt": "enters the teardown phase", "ZPe": "leaves its phase"}


def z_desc(mcv, hexpay):
    """zeta.yaml's description of a Z event with these payload bytes (:xx...),
    then the catalogue name of the channel it writes, as weft dump --model
    prints them."""
    if mcv in PHASE:
        return PHASE[mcv] + "  [zeta.phase]"
    value = int.from_bytes(bytes(int(b, 16) for b in hexpay.split(":")[1:]), "little")
    if mcv == "ZR[":
        return f"enters region {value}  [zeta.region]"
    if mcv == "ZR]":
        return f"leaves region {value}  [zeta.region]"
    return f"processes a work item of {value} bytes  [zeta.item]"


def check_dump(trace):
    raw = weft("dump", "-x", trace)
    eq((raw.returncode, raw.stderr), (0, ""), "dump -x")
    want, nz = [], 0
    for ln in raw.stdout.splitlines():
        m = DUMP_LINE.match(ln)
        if not check(m is not None, f"dump -x line {ln!r}"):
            return
        if m.group(2).startswith("Z"):
            nz += 1
            want.append(m.group(1) + z_desc(m.group(2), m.group(3)))
        else:
            want.append(None)  # an ovni event: its description is ovni's
    # main: ZPs ZR[ ZPe ZPt ZR] ZPe; a worker: its items and 10 more (2 batches)
    check(nz == 6 + NWORKERS * (ITEMS + 10), f"Z events in the trace: {nz}")
    for args in (["--model", MODEL], [f"--model={MODEL}"]):
        p = weft("dump", *args, trace)
        eq((p.returncode, p.stderr), (0, ""), f"dump {args[0][:8]}")
        got = p.stdout.splitlines()
        eq(len(got), len(want), "dump --model: lines")
        for g, w in zip(got, want):
            if w is not None:
                eq(g, w, "dump --model: a Z event's line")
    # without the model: the payload bytes
    p = weft("dump", trace)
    lines = [ln for ln in p.stdout.splitlines() if DUMP_LINE.match(ln).group(2) == "ZWi"]
    check(len(lines) == NWORKERS * ITEMS and all(re.search(r"  (:[0-9a-f]{2}){8}$", ln)
                                                  for ln in lines), "dump: ZWi undecoded")


def check_same(trace, cmd):
    """cmd with --model prints what it prints without (exact lines)."""
    plain = weft(cmd, trace)
    eq(plain.returncode, 0, f"{cmd}: exit status")
    p = weft(cmd, "--model", MODEL, trace)
    eq((p.returncode, p.stdout, p.stderr), (0, plain.stdout, plain.stderr),
       f"{cmd} --model: as without it")
    return p.stdout.splitlines()


def check_sql(trace, tmp):
    q = ("SELECT c.name, c.type, c.thread_label, count(i.start) AS n FROM channel c "
         "LEFT JOIN interval i ON i.channel = c.id AND i.view = 'thread' "
         "WHERE c.model = 'zeta' GROUP BY c.id ORDER BY c.type")
    p = weft("sql", "--model", MODEL, trace, q)
    eq((p.returncode, p.stderr), (0, ""), "sql --model")
    eq(p.stdout.splitlines(), [
        "name         type  thread_label                                n",
        "-----------  ----  -----------------------------------------  --",
        "zeta.phase    700  Zeta phase of the RUNNING thread            8",
        "zeta.region   701  Zeta region of the ACTIVE thread           12",
        "zeta.item     702  Zeta work item size of the RUNNING thread  40",
    ], "sql --model: the zeta channels")
    p = weft("sql", "--model", MODEL, trace,
             "SELECT value, label FROM value_label WHERE channel = "
             "(SELECT id FROM channel WHERE name = 'zeta.region') ORDER BY value")
    eq(p.stdout.splitlines(), ["value  label", "-----  ------", "    1  Main",
                               "    2  Worker", "    3  Batch"], "sql --model: region labels")
    db = tmp / "z.db"
    p = weft("sql", f"--model={MODEL}", trace, "-o", db)
    eq((p.returncode, p.stderr, db.is_file()), (0, "", True), "sql --model= -o")
    p = weft("sql", trace, "SELECT 1")
    eq(p.returncode, 1, "sql without the model: exit status")
    check(re.fullmatch(r"weft sql: loom\.vm/proc\.\d+/thread\.\d+: event ZPs at clock \d+ "
                       r"\(offset \d+\): no model is registered for the model byte of "
                       r"this event\n", p.stderr), f"sql without the model: {p.stderr!r}")


def check_perfetto(trace, tmp):
    sys.path.insert(0, str(SRC / "tests" / "emu"))
    sys.dont_write_bytecode = True
    from protobuf_wire import fields, text
    q = "SELECT name FROM channel WHERE model = 'zeta' ORDER BY id"
    p = weft("sql", "--csv", "--model", MODEL, trace, q)
    names = p.stdout.splitlines()[1:]
    eq(names, ["zeta.phase", "zeta.region", "zeta.item"], "sql --model: the catalogue names")
    out = tmp / "pf"
    p = weft("emu", "--perfetto", "-q", "--model", MODEL, "-o", out, trace)
    eq((p.returncode, p.stderr), (0, ""), "emu --perfetto --model")
    data = (out / "perfetto.pftrace").read_bytes()
    tracks = set()
    for _, _, span in fields(data, 0, len(data)):
        for f2, _, v2 in fields(data, *span):
            if f2 == 60:
                d = {f: v for f, _, v in fields(data, *v2)}
                if 2 in d and text(data, d[2]).startswith("zeta "):
                    tracks.add(text(data, d[2]))
    # the catalogue's name "<model>.<channel>" is the track "<model> <channel>"
    eq(sorted(tracks), sorted(n.replace(".", " ", 1) for n in names),
       "emu --perfetto --model: the zeta tracks")


def check_refusals(trace, tmp):
    bad = {"bad_version.yaml": "bad_version.yaml:6: version must be major.minor.patch, "
                               "not '1.0'",
           "byte_builtin.yaml": "byte_builtin.yaml:5: model 'zeta' (byte 'V') clashes with "
                                "model 'nosv' (byte 'V') of built-in nosv.yaml: its byte "
                                "is taken"}
    before = snapshot(trace)
    for cmd in CMDS:
        for f, msg in bad.items():
            extra = {"sql": ["-o", tmp / "bad.db"], "emu": ["-o", tmp / "bad-out"]}.get(cmd, [])
            p = weft(cmd, "--model", f, *extra, trace, cwd=BAD)
            eq((p.returncode, p.stdout, p.stderr), (1, "", f"weft {cmd}: {msg}\n"),
               f"{cmd} --model {f}")
            check(not (tmp / "bad.db").exists() and not (tmp / "bad-out").exists(),
                  f"{cmd} --model {f}: nothing written")
        eq(snapshot(trace), before, f"{cmd}: the trace directory unchanged")
        p = weft(cmd, trace, "--model")
        eq((p.returncode, p.stdout, p.stderr),
           (2, "", f"weft {cmd}: option '--model' needs an argument (FILE); "
                   f"run `weft {cmd} --help`\n"),
           f"{cmd}: --model without a FILE")
        p = weft(cmd, "--help")
        check(p.returncode == 0 and "--model FILE" in p.stdout, f"{cmd} --help: --model FILE")


def main():
    if not check(ZETA.is_file(), f"{ZETA} is missing (build the examples)"):
        return 1
    with tempfile.TemporaryDirectory(prefix="weft-model-option-") as tmp:
        tmp = Path(tmp)
        trace = tmp / "trace"
        p = subprocess.run([str(ZETA), str(NWORKERS), str(ITEMS)], capture_output=True,
                           text=True, env=dict(os.environ, OVNI_TRACEDIR=str(trace)),
                           timeout=60)
        if not check(p.returncode == 0 and trace.is_dir(), f"zeta: {p.stderr}"):
            return 1
        check_refusals(trace, tmp)
        check_dump(trace)
        plain = weft("top", trace).stdout.splitlines()
        p = weft("top", "--model", MODEL, trace)
        eq((p.returncode, p.stderr), (0, ""), "top --model")
        top = p.stdout.splitlines()
        # the counts by MCV as without the model, then the zeta channels
        # phase: ZPs ZPc ZPt ZPe; region: the 7 ZR[ and 7 ZR]; item: ZWi
        nchan = [(NWORKERS + 1) + NWORKERS + (NWORKERS + 1) + (NWORKERS + 2), 2 * 7,
                 NWORKERS * ITEMS]
        eq(top, plain + ["", "channels of the --model models (events that write each):",
                         f"zeta.item   {nchan[2]:10d}", f"zeta.phase  {nchan[0]:10d}",
                         f"zeta.region {nchan[1]:10d}"], "top --model: MCVs, then channels")
        eq([ln for ln in top if ln.startswith("Z")],
           [f"ZWi {NWORKERS * ITEMS:10d}", f"ZR[ {7:10d}", f"ZR] {7:10d}",
            f"ZPe {NWORKERS + 2:10d}", f"ZPs {NWORKERS + 1:10d}", f"ZPt {NWORKERS + 1:10d}",
            f"ZPc {NWORKERS:10d}"], "top --model: the Z lines")
        lines = check_same(trace, "check")
        check(len(lines) == 1 and lines[0].startswith(
            f"weft check: {trace}: valid: 3 streams, 1 loom, 1 process, 3 threads, "),
            f"check --model: {lines}")
        lines = check_same(trace, "index")
        eq(len(lines), 4, "index --model: a line per stream, and merge.idx")
        check_sql(trace, tmp)
        check_perfetto(trace, tmp)
    print(f"{checks} checks, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
