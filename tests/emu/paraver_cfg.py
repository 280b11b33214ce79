#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""paraver_cfg.py - the Paraver view files weft emu writes in cfg/.

A checker written from Paraver's configuration file format (the kernel's
loader: a "#ParaverCFG" line or the ConfigFile.Version/ConfigFile.NumWindows
pair, an optional ConfigFile.BeginDescription ... ConfigFile.EndDescription
block, then per window a "< NEW DISPLAYING WINDOW name >" line and
"tag value" lines; window_name comes before window_type, which makes the
window) parses every file of several emulations, with -b: an ovni case of the
corpus with marks, a nosv case with counters and its breakdown, a nanos6 case
and a user model (the zeta example). For each file it asserts:
  - the file parses: known tags only, each value of its tag's form (levels,
    colour modes, units, booleans, the selected and compose functions with
    their counts, the event type filter with its count), NumWindows windows;
  - its window filters one Paraver type, and that type is one the view's
    .pcf lists, with no exception: the CPU's running thread pid, tid and
    count (types 1 to 3, with records in cpu.prv) have no file, since
    cpu.pcf does not list them (as the reference's does not);
  - the window's level (thread) is the level of the rows of the .prv it
    names, which is the one of its directory (cfg/thread: thread.prv,
    cfg/cpu: cpu.prv, cfg/breakdown: <view>.prv): the .prv header's
    thread count equals its .row's "LEVEL THREAD SIZE";
  - the semantic is the thread's last event value, the colour mode code
    colour, a gradient for the counters;
  - every type of each view's .pcf has its file and no other type has one
    (cfg/thread: exactly the thread .pcf's types, cfg/cpu: the cpu .pcf's),
    and the exact file list of the nosv case.
Then: a run that fails (in the emulation, or in cfg/ itself) leaves an
earlier cfg/ byte for byte and no temporary; --no-cfg writes none.
"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from wefttest import BIN, SRC, Checker, conformance_dir, weft_bin  # noqa: E402
from wefttest import weft_text as weft  # noqa: E402

C = Checker()
check = C.expect


# ---------------------------------------------------------------- the format

LEVELS = {"workload", "appl", "ptask", "task", "thread", "system", "node", "cpu",
          "topcompose", "topcompose1", "topcompose2", "compose_workload", "compose_appl",
          "compose_task", "compose_thread", "compose_cpu", "compose_node", "compose_system",
          "compose1", "compose2"}
COLOR_MODES = {"window_in_code_mode", "window_in_gradient_mode",
               "window_in_null_gradient_mode", "window_in_alternative_gradient_mode",
               "window_in_punctual_mode", "window_in_fused_lines_mode"}
UNITS = {"Nanoseconds", "Microseconds", "Milliseconds", "Seconds", "Minutes", "Hours", "Days"}
DRAW = {"draw_last", "draw_maximum", "draw_minnotzero", "draw_random", "draw_randnotzero",
        "draw_average", "draw_averagenotzero", "draw_mode", "draw_absolute_maximum",
        "draw_absolute_minimum"}
BOOL = {"true", "false", "True", "False"}
# The semantic functions of a thread window the checker knows (of Paraver's kernel).
THREAD_FUNCS = {"Last Evt Val", "Next Evt Val", "State As Is", "Last Evt Type", "Int. Between Evt"}
FILTER_KEYS = {"from_obj", "to_obj", "tag_msg", "size_msg", "bw_msg", "evt_type", "evt_value"}
COMPOSE_KEYS = {"compose_cpu", "compose_appl", "compose_task", "compose_thread", "compose_node",
                "compose_system", "compose_workload", "topcompose1", "topcompose2"}

NUM = r"-?[0-9]+(\.[0-9]+)?"
SIMPLE = {
    "window_type": lambda v: v in ("single", "composed"),
    "window_id": lambda v: re.fullmatch(r"[0-9]+", v),
    "window_position_x": lambda v: re.fullmatch(r"-?[0-9]+", v),
    "window_position_y": lambda v: re.fullmatch(r"-?[0-9]+", v),
    "window_width": lambda v: re.fullmatch(r"[0-9]+", v),
    "window_height": lambda v: re.fullmatch(r"[0-9]+", v),
    "window_comm_lines_enabled": lambda v: v in BOOL,
    "window_flags_enabled": lambda v: v in BOOL,
    "window_noncolor_mode": lambda v: v in BOOL,
    "window_color_mode": lambda v: v in COLOR_MODES,
    "window_logical_filtered": lambda v: v in BOOL,
    "window_physical_filtered": lambda v: v in BOOL,
    "window_comm_fromto": lambda v: v in BOOL,
    "window_comm_tagsize": lambda v: v in BOOL,
    "window_comm_typeval": lambda v: v in BOOL,
    "window_units": lambda v: v in UNITS,
    "window_maximum_y": lambda v: re.fullmatch(NUM, v),
    "window_minimum_y": lambda v: re.fullmatch(NUM, v),
    "window_compute_y_max": lambda v: v in BOOL,
    "window_level": lambda v: v in LEVELS,
    "window_scale_relative": lambda v: re.fullmatch(NUM, v),
    "window_end_time_relative": lambda v: re.fullmatch(NUM, v),
    "window_begin_time_relative": lambda v: re.fullmatch(NUM, v),
    "window_open": lambda v: v in BOOL,
    "window_drawmode": lambda v: v in DRAW,
    "window_drawmode_rows": lambda v: v in DRAW,
    "window_pixel_size": lambda v: re.fullmatch(r"[0-9]+", v),
    "window_labels_to_draw": lambda v: re.fullmatch(r"[0-9]+", v),
    "window_object": lambda v: re.fullmatch(r"(appl|task|thread|node|cpu) \{.*\}", v),
}


def parse_pairs(v):
    """'{ N, { {k, f}, {k, f} } }' -> N, [(k, f)]; None if malformed."""
    m = re.fullmatch(r"\{ ([0-9]+), \{ (.*) \} \}", v)
    if not m:
        return None
    pairs = re.findall(r"\{([a-z_0-9]+), ([^{}]+)\}", m.group(2))
    if ", ".join(f"{{{k}, {f}}}" for k, f in pairs) != m.group(2).strip():
        return None
    return int(m.group(1)), pairs


def parse_cfg(text):
    """The windows of a configuration file: [{tag: value}] (window_filter_module: a list of
    (key, [values]) ; window_selected_functions / _compose_functions: {key: func}). Raises
    ValueError naming the line at fault."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    header = {}
    windows = []
    cur = None
    in_desc = False
    shebang = False
    for no, line in enumerate(lines, 1):
        where = f"line {no}: {line!r}"
        if in_desc:
            if line == "ConfigFile.EndDescription":
                in_desc = False
            continue
        if line == "":
            continue
        if line.startswith("#"):
            shebang |= no == 1 and line == "#ParaverCFG"
            continue
        if line.startswith("ConfigFile."):
            if line == "ConfigFile.BeginDescription":
                in_desc = True
                continue
            tag, _, val = line.partition(" ")
            if tag not in ("ConfigFile.Version:", "ConfigFile.NumWindows:") or tag in header:
                raise ValueError(f"{where}: not a header line")
            header[tag] = val
            continue
        if line.startswith("<"):
            m = re.fullmatch(r"< NEW DISPLAYING WINDOW (.*) >", line)
            if not m:
                raise ValueError(f"{where}: not a window's opening line")
            cur = {"_title": m.group(1)}
            windows.append(cur)
            continue
        tag, sp, val = line.partition(" ")
        if cur is None or not sp:
            raise ValueError(f"{where}: a tag outside a window, or without a value")
        if tag == "window_name":
            if "window_type" in cur:
                raise ValueError(f"{where}: window_name after window_type")
            cur[tag] = val
        elif tag in SIMPLE:
            if "window_name" not in cur:
                raise ValueError(f"{where}: before window_name")
            if not SIMPLE[tag](val):
                raise ValueError(f"{where}: not a value of {tag}")
            cur[tag] = val
        elif tag in ("window_selected_functions", "window_compose_functions"):
            p = parse_pairs(val)
            keys = (LEVELS | FILTER_KEYS) if tag == "window_selected_functions" else COMPOSE_KEYS
            if p is None or p[0] != len(p[1]) or any(k not in keys for k, _ in p[1]):
                raise ValueError(f"{where}: malformed {tag}")
            cur[tag] = dict(p[1])
        elif tag == "window_filter_module":
            parts = val.split(" ")
            if parts[0] not in FILTER_KEYS or len(parts) < 2 or \
                    not re.fullmatch(r"[0-9]+", parts[1]) or len(parts) != 2 + int(parts[1]):
                raise ValueError(f"{where}: malformed filter")
            cur.setdefault(tag, []).append((parts[0], [int(x) for x in parts[2:]]))
        else:
            raise ValueError(f"{where}: unknown tag {tag!r}")
    if in_desc:
        raise ValueError("the description is not ended")
    if not shebang and not header:
        raise ValueError("no #ParaverCFG line and no ConfigFile header")
    if header.get("ConfigFile.Version:") is None or \
            not re.fullmatch(r"[0-9]+\.[0-9]+", header["ConfigFile.Version:"]):
        raise ValueError("no ConfigFile.Version: N.M")
    if header.get("ConfigFile.NumWindows:") != str(len(windows)):
        raise ValueError(f"ConfigFile.NumWindows: {header.get('ConfigFile.NumWindows:')} "
                         f"but {len(windows)} windows")
    for w in windows:
        if "window_type" not in w:
            raise ValueError(f"window {w['_title']!r} has no window_type")
        if w.get("window_name") != w["_title"]:
            raise ValueError(f"window {w['_title']!r}: window_name differs")
    return windows


def description(text):
    m = re.search(r"^ConfigFile.BeginDescription\n(.*?)\nConfigFile.EndDescription$", text,
                  re.S | re.M)
    return m.group(1) if m else ""


# ---------------------------------------------------------------- the trace's files

def pcf_types(path):
    """{type: label} of a .pcf's EVENT_TYPE blocks."""
    out = {}
    lines = path.read_text(errors="replace").split("\n")
    for i, l in enumerate(lines):
        if l == "EVENT_TYPE" and i + 1 < len(lines):
            m = re.match(r"0 +([0-9]+) +(.*)$", lines[i + 1])
            if m:
                out[int(m.group(1))] = m.group(2)
    return out


def prv_rows_and_types(path):
    """(threads of the header's one task, {types of the records})."""
    types = set()
    with open(path, errors="replace") as f:
        head = f.readline()
        m = re.search(r":0:1:1\(([0-9]+):1\)$", head.rstrip("\n"))
        rows = int(m.group(1)) if m else None
        for line in f:
            p = line.split(":")
            if p[0] == "2":
                for k in range(6, len(p) - 1, 2):
                    types.add(int(p[k]))
    return rows, types


def row_level_size(path):
    m = re.search(r"^LEVEL THREAD SIZE ([0-9]+)$", path.read_text(errors="replace"), re.M)
    return int(m.group(1)) if m else None


def check_out(name, out, counters=()):
    """Every cfg file of an emulation's output dir; returns the relative file list."""
    cfg = out / "cfg"
    if not check(cfg.is_dir(), f"{name}: no cfg/ directory"):
        return []
    files = sorted(str(p.relative_to(cfg)) for p in cfg.rglob("*") if p.is_file())
    check(not any(".weft-" in f for f in files), f"{name}: temporaries left: {files}")
    seen = {"thread": set(), "cpu": set()}
    prv_cache = {}
    for rel in files:
        path = cfg / rel
        text = path.read_text()
        try:
            wins = parse_cfg(text)
        except ValueError as e:
            check(False, f"{name}: cfg/{rel} does not parse: {e}")
            continue
        if not check(len(wins) == 1, f"{name}: cfg/{rel}: {len(wins)} windows"):
            continue
        w = wins[0]
        d = rel.split("/")[0]
        m = re.search(r"as a timeline of ([A-Za-z0-9._-]+\.prv)$", description(text))
        prv = m.group(1) if m else None
        want_prv = {"thread": "thread.prv", "cpu": "cpu.prv"}.get(d)
        if d == "breakdown":
            want_prv = rel.split("/")[1][:-4] + ".prv"
        check(prv == want_prv, f"{name}: cfg/{rel} names {prv}, not {want_prv}")
        if prv is None or not (out / prv).is_file():
            check(False, f"{name}: cfg/{rel}: {prv} is not there")
            continue
        if prv not in prv_cache:
            prv_cache[prv] = prv_rows_and_types(out / prv)
        rows, _ = prv_cache[prv]
        # the level: the .prv's rows are threads of one task, as many as the .row says
        check(w.get("window_level") == "thread", f"{name}: cfg/{rel}: level "
              f"{w.get('window_level')}")
        check(rows is not None and rows == row_level_size(out / (prv[:-4] + ".row")),
              f"{name}: {prv}: header rows {rows} vs .row")
        filt = w.get("window_filter_module", [])
        types = [t for k, v in filt if k == "evt_type" for t in v]
        if not check(len(types) == 1, f"{name}: cfg/{rel}: types {types}"):
            continue
        t = types[0]
        pcf = pcf_types(out / (prv[:-4] + ".pcf"))
        in_pcf = t in pcf
        check(in_pcf, f"{name}: cfg/{rel}: type {t} is not in {prv[:-4]}.pcf ({sorted(pcf)})")
        if in_pcf:
            check(w.get("window_name") == pcf[t], f"{name}: cfg/{rel}: name "
                  f"{w.get('window_name')!r} vs the .pcf's {pcf[t]!r}")
        sel = w.get("window_selected_functions", {})
        check(sel.get("thread") in THREAD_FUNCS and sel.get("thread") == "Last Evt Val",
              f"{name}: cfg/{rel}: thread function {sel.get('thread')!r}")
        check(sel.get("evt_type") == "=", f"{name}: cfg/{rel}: evt_type function")
        counter = any(c in rel for c in counters)
        want_mode = "window_in_gradient_mode" if counter else "window_in_code_mode"
        check(w.get("window_color_mode") == want_mode,
              f"{name}: cfg/{rel}: colour {w.get('window_color_mode')} not {want_mode}")
        if d in seen:
            seen[d].add(t)
    # every type of the thread .pcf has its file, and only those
    tp = set(pcf_types(out / "thread.pcf"))
    check(seen["thread"] == tp, f"{name}: cfg/thread types {sorted(seen['thread'])} vs "
          f"thread.pcf {sorted(tp)}")
    cp = set(pcf_types(out / "cpu.pcf"))
    check(seen["cpu"] == cp, f"{name}: cfg/cpu types {sorted(seen['cpu'])} vs cpu.pcf "
          f"{sorted(cp)}")
    return files


NOSV_FILES = [
    "breakdown/nosv-breakdown.cfg",
    "cpu/nosv.appid.cfg", "cpu/nosv.body.cfg", "cpu/nosv.counter.papi_tot_cyc.cfg",
    "cpu/nosv.counter.papi_tot_ins.cfg", "cpu/nosv.idle.cfg", "cpu/nosv.rank.cfg",
    "cpu/nosv.subsystem.cfg", "cpu/nosv.taskid.cfg", "cpu/nosv.type.cfg", "cpu/ovni.flush.cfg",
    "thread/nosv.appid.cfg", "thread/nosv.body.cfg", "thread/nosv.counter.papi_tot_cyc.cfg",
    "thread/nosv.counter.papi_tot_ins.cfg", "thread/nosv.idle.cfg", "thread/nosv.rank.cfg",
    "thread/nosv.subsystem.cfg", "thread/nosv.taskid.cfg", "thread/nosv.type.cfg",
    "thread/ovni.flush.cfg", "thread/ovni.thread.affinity.cfg", "thread/ovni.thread.state.cfg",
    "thread/ovni.thread.tid.cfg",
]


def snapshot(d):
    return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() else "dir")
            for p in sorted(Path(d).rglob("*"))}


def emu(name, trace, out, *extra):
    p = weft("emu", "-q", "-b", "--paraver", *extra, "-o", out, trace)
    return check(p.returncode == 0 and p.stderr == "",
                 f"{name}: weft emu: exit {p.returncode}: {p.stderr}")


def main():
    weft_bin()
    corpus = Path(conformance_dir())
    with tempfile.TemporaryDirectory(prefix="weft-cfg-") as tmp:
        tmp = Path(tmp)
        cases = [
            ("marks", corpus / "v3" / "marks" / "ovni", ()),
            ("nosv", corpus / "models" / "nosv-hwc-breakdown" / "ovni", (".counter.",)),
            ("nanos6", corpus / "models" / "rand-nanos6-0" / "ovni", ()),
        ]
        for name, trace, counters in cases:
            out = tmp / name
            if emu(name, trace, out):
                files = check_out(name, out, counters)
                check(len(files) > 4, f"{name}: only {files}")
                if name == "nosv":
                    check(files == NOSV_FILES, f"nosv: cfg files\n  got  {files}\n  "
                          f"want {NOSV_FILES}")
                if name == "marks":
                    check(any(f.startswith("thread/ovni.mark.") for f in files),
                          f"marks: no mark channel's file in {files}")
        # a user model: the zeta example's trace
        zeta = BIN / "bin" / "zeta"
        if check(zeta.is_file(), f"{zeta} is missing (build the examples)"):
            ztrace = tmp / "zeta-trace"
            p = subprocess.run([str(zeta), "2", "10"], capture_output=True, text=True,
                               timeout=60, cwd=tmp, env=dict(os.environ, OVNI_TRACEDIR=str(ztrace)))
            if check(p.returncode == 0, f"zeta: {p.stderr}"):
                out = tmp / "zeta"
                if emu("zeta", ztrace, out, "--model", SRC / "examples" / "zeta" / "zeta.yaml"):
                    files = check_out("zeta", out)
                    check("thread/zeta.phase.cfg" in files and "cpu/zeta.phase.cfg" in files,
                          f"zeta: no zeta.phase views in {files}")

        # ---- a failed run leaves the earlier cfg/ as it was ----
        out = tmp / "nosv"
        before = snapshot(out)
        check(any(k.startswith("cfg/") for k in before), "no cfg/ to keep")
        bad = corpus / "v3" / "suite-nosv-bad-double-execute" / "ovni"
        p = weft("emu", "-q", "-b", "--paraver", "-o", out, bad)
        check(p.returncode == 1 and p.stderr != "", f"bad trace: exit {p.returncode}")
        check(snapshot(out) == before, "a run failing in the emulation changed the output dir")
        # a failure in cfg/ itself: a channel's file name taken by a directory
        blocker = out / "cfg" / "cpu" / "nosv.type.cfg"
        (out / "cfg" / "cpu" / "nosv.type.cfg").unlink()
        blocker.mkdir()
        before = snapshot(out)
        p = weft("emu", "-q", "-b", "--paraver", "-o", out, corpus / "models" / "rand-nosv-0" / "ovni")
        check((p.returncode, p.stderr) == (1, f"weft emu: {blocker}: is a directory: not replaced "
                                              f"(weft replaces only regular files)\n"),
              f"cfg blocked: exit {p.returncode}: {p.stderr!r}")
        check(snapshot(out) == before, "a run failing in cfg/ changed the output dir")
        # cfg itself a file: refused, nothing written, the file kept
        out2 = tmp / "cfgfile"
        out2.mkdir()
        (out2 / "cfg").write_text("mine\n")
        p = weft("emu", "-q", "--paraver", "-o", out2, corpus / "v3" / "marks" / "ovni")
        check((p.returncode, p.stderr) == (1, f"weft emu: {out2}/cfg: is a file, not a "
                                              f"directory: the Paraver view files are not written "
                                              f"(weft does not write through links)\n"),
              f"cfg a file: exit {p.returncode}: {p.stderr!r}")
        check(sorted(x.name for x in out2.iterdir()) == ["cfg"], "cfg a file: files written")
        check((out2 / "cfg").read_text() == "mine\n", "cfg a file: changed")

        # ---- --no-cfg ----
        out3 = tmp / "nocfg"
        if emu("no-cfg", corpus / "v3" / "marks" / "ovni", out3, "--no-cfg"):
            check(sorted(x.name for x in out3.iterdir()) ==
                  ["cpu.pcf", "cpu.prv", "cpu.row", "thread.pcf", "thread.prv", "thread.row"],
                  f"--no-cfg wrote {sorted(x.name for x in out3.iterdir())}")
        # --perfetto alone: no Paraver files, no cfg/
        out4 = tmp / "pf"
        p = weft("emu", "-q", "--perfetto", "-o", out4, corpus / "v3" / "marks" / "ovni")
        check(p.returncode == 0 and sorted(x.name for x in out4.iterdir()) == ["perfetto.pftrace"],
              f"--perfetto: {p.returncode} {p.stderr}")

        # ---- the checker catches what it must (a check that cannot fail is a defect) ----
        good = (tmp / "marks" / "cfg" / "thread" / "ovni.thread.state.cfg").read_text()
        for what, bad_text in [
                ("unknown tag", good.replace("window_units", "window_unitz")),
                ("count", good.replace("evt_type 1 ", "evt_type 2 ")),
                ("level", good.replace("window_level thread", "window_level threads")),
                ("windows", good.replace("NumWindows: 1", "NumWindows: 2")),
                ("order", good.replace("window_type single\n", "").replace(
                    "window_name", "window_type single\nwindow_name")),
                ("functions", good.replace("{ 14,", "{ 13,"))]:
            try:
                parse_cfg(bad_text)
                check(False, f"checker: a bad file ({what}) parses")
            except ValueError:
                check(True, "")
    return C.status()


if __name__ == "__main__":
    sys.exit(main())
