# SPDX-License-Identifier: MIT
"""weft.emulate() against `weft emu --paraver`, on the corpus's v3 and models
cases: each view's interval table equals the intervals the .prv holds (read
here line by line: a value from its record to the next record of the same
row and type, or the end; 0 is null), with the row labels of the .row and
the type and value labels of the .pcf; a trace weft emu refuses raises
weft.Error with weft emu's message; a window as --from/--to (their units and
forms, the same intervals; a refused window with weft emu's message, naming the
bound; bad bounds refused with the reason); jobs= (weft emu -j) gives the
same views and raw layer (every column, in order) on two-looms and on the
generated 16-loom trace (with breakdown=True too), made by the workers
(WEFT_EMU_TIMING's line), a window made serially (its reason), a bad jobs
refused."""
import os
import shutil
import subprocess
import sys
import tempfile

from pycommon import Checker, cases, conformance_dir, need_module, run, weft_bin

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
                    # the .row's labels without Paraver's leading space
                    c.eq(tl.row_labels, [x.lstrip(" ") for x in
                                         row_labels(os.path.join(out, v + ".row"))],
                         f"{name}: {v}: row labels")
                    # every interval's channel is named (the catalogue's
                    # names: the CPU's built-in types too)
                    if len(tl):
                        ty = int(tl["type"][0])
                        c.eq(tl.channel(0), tl.channels.get(ty), f"{name}: {v}: channel")
                        unnamed = sorted({int(x) for x in tl["type"]} - tl.channels.keys())
                        c.eq(unnamed, [], f"{name}: {v}: types without a channel")
                    if v == "thread":
                        c.eq((tl.channels.get(4), tl.value_labels.get(4, {}).get(1)),
                             ("ovni.thread.state", "Running"), f"{name}: thread state")
                    if v == "cpu":
                        c.eq((tl.channels.get(1), tl.channels.get(2), tl.channels.get(3)),
                             ("cpu.running.pid", "cpu.running.tid", "cpu.running.count"),
                             f"{name}: the CPU's built-in channels")
        shutil.rmtree(out, ignore_errors=True)
    # a window, as weft emu --from/--to
    case = os.path.join(root, "v3", "two-looms")
    if os.path.isdir(case):
        out = os.path.join(tmp, "out")
        rc, _, err = run(["emu", "--paraver", "-q", "-o", out, "--from", "1ms",
                          "--to", "2ms", "ovni"], cwd=case)
        c.eq(rc, 0, "window: weft emu exits 0")
        # the units and forms of --from/--to (docs/cli.md), and this module's "+N"
        for w in (("1ms", "2ms"), ("1000us", "0.002s"), ("+1000000", "+2000000"),
                  (("rel", 1000000), ("rel", 2000000))):
            em = weft.emulate(os.path.join(case, "ovni"), window=w)
            for v in ("thread", "cpu"):
                want, dur = prv_intervals(os.path.join(out, v + ".prv"))
                c.eq(table(em[v]), want, f"window {w}: {v}: intervals")
                c.eq(em[v].duration, dur, f"window {w}: {v}: duration")
        shutil.rmtree(out, ignore_errors=True)
        # a window the driver refuses: weft emu's message, the bound as given
        for w, args in ((("1min", None), ["--from", "1min"]), ((None, 1), ["--to", "1"]),
                        (("+60000000000", None), ["--from", "1min"])):
            p = subprocess.run([weft_bin(), "emu", "-q", "-o", out] + args + ["ovni"],
                               cwd=case, capture_output=True, text=True, timeout=120)
            c.eq(p.returncode, 1, f"window {w}: weft emu exits 1")
            try:
                weft.emulate(os.path.join(case, "ovni"), window=w)
                c.expect(False, f"window {w}: raises")
            except weft.Error as e:
                c.eq("weft emu: " + str(e) + "\n", p.stderr, f"window {w}: weft emu's message")
            shutil.rmtree(out, ignore_errors=True)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
# bounds refused as weft emu refuses them (ValueError/TypeError, the reason)
NOT_A_TIME = ("is not a time: give a clock in nanoseconds (e.g. 1500000) or a time after the "
              "trace's first event with a unit ns, us, ms, s or min (e.g. '2.5s')")
for w, exc, msg in (
        (("1x", None), ValueError, "window start '1x' " + NOT_A_TIME),
        ((None, "2 ms"), ValueError, "window end '2 ms' " + NOT_A_TIME),
        ((".5ms", None), ValueError, "window start '.5ms' " + NOT_A_TIME),
        (("-1ms", None), ValueError, "window start '-1ms': a time cannot be negative"),
        (("1.5", None), ValueError, "window start '1.5': a clock (a number without a unit) is "
         "whole nanoseconds; give a unit for a time after the trace's first event (e.g. '1.5s')"),
        (("1.5ns", None), ValueError, "window start '1.5ns': finer than a nanosecond"),
        (("9223372036854775808", None), ValueError, "window start '9223372036854775808': out of "
         "range (at most 9223372036854775807 ns)"),
        (("1ms", 2000000), ValueError, "window '1ms' to 2000000: the two are of different "
         "kinds: give both as clocks (nanoseconds, no unit) or both after the trace's first "
         "event (with a unit, '+N' or ('rel', N))"),
        (("2ms", "1ms"), ValueError, "window '2ms' to '1ms': the end is not after the start: "
         "the window would be empty"),
        ((1.5, None), TypeError, "window start 1.5: give a clock (int), a str such as "
         "'1500000' or '2.5s', or None")):
    try:
        weft.emulate(os.path.join(root, "v3", "two-looms", "ovni"), window=w)
        c.expect(False, f"window {w}: raises")
    except exc as e:
        c.eq(str(e), msg, f"window {w}: {exc.__name__}")
# jobs= (weft emu -j): the same views whatever it is, made by the workers
# (the module's output follows each view's records and each thread's raw
# records in time order, not the batches: docs/emu.md, PARALLEL): every
# column of every view and of the raw layer, in order, and their names


def timeline(tl):
    """Everything of a Timeline: its columns in order, duration and names."""
    return ({k: v.tolist() for k, v in tl.columns.items()}, tl.duration, tl.row_labels,
            tl.channels, tl.channel_labels, tl.value_labels)


def same_emulation(em, ref, what):
    c.eq(sorted(em.views), sorted(ref.views), f"{what}: the views")
    for name in ref.views:
        if name in em.views:
            c.eq(timeline(em.views[name]), timeline(ref.views[name]), f"{what}: view {name}")
    c.eq(timeline(em.raw), timeline(ref.raw), f"{what}: the raw layer")
    c.eq(em.duration, ref.duration, f"{what}: duration")


def timing_line(code, *args):
    """WEFT_EMU_TIMING's stderr of weft.emulate(*args, jobs=3) in a child."""
    p = subprocess.run([sys.executable, "-c", "import sys, weft; " + code] + list(args),
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, WEFT_EMU_TIMING="1"))
    c.eq(p.returncode, 0, f"{code} under WEFT_EMU_TIMING: exit ({p.stderr!r})")
    return p.stderr


two = os.path.join(root, "v3", "two-looms", "ovni")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "emu"))
from parallel_emu import gen_trace  # noqa: E402
zeta = os.path.join(os.environ.get("WEFT_SOURCE_DIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "examples", "zeta", "zeta.yaml")
with tempfile.TemporaryDirectory(prefix="weft-py-jobs-") as td:
    gen16 = os.path.join(td, "gen16")
    gen_trace(gen16, 16)
    for tr, kw, nlooms in ((two, {}, 2), (gen16, {"model": [zeta]}, 16),
                           (gen16, {"model": [zeta], "breakdown": True}, 16)):
        ref = weft.emulate(tr, jobs=1, **kw)
        what = f"{os.path.basename(os.path.dirname(tr)) if tr == two else 'gen16'} {kw}"
        c.expect(len(ref.views["thread"]) > 0 and (tr == two or len(ref.raw) > 100),
                 f"{what}: jobs=1 has intervals ({len(ref.views['thread'])}, raw {len(ref.raw)})")
        for j in (2, 3, 16, None):
            same_emulation(weft.emulate(tr, jobs=j, **kw), ref, f"{what} jobs={j}")
        err = timing_line("weft.emulate(sys.argv[1], jobs=3, model=sys.argv[2:] or None)", tr,
                          *kw.get("model", []))
        c.expect(f"weft emu: -j 3: {min(3, nlooms)} workers, " in err,
                 f"{what} jobs=3: made by the workers: {err!r}")
    # a window: the raw channels' state at T0 holds records of every loom at
    # time 0, merged in the serial run's order (the CPUs' rows, then the
    # threads'): made by the workers, the same
    win = ("1010000", "1200000")
    ref = weft.emulate(gen16, jobs=1, model=[zeta], window=win)
    c.expect(len(ref.raw) > 0, f"window jobs=1: a raw layer ({len(ref.raw)})")
    for j in (2, 3, 16):
        same_emulation(weft.emulate(gen16, jobs=j, model=[zeta], window=win), ref,
                       f"window jobs={j}")
    err = timing_line("weft.emulate(sys.argv[1], jobs=3, model=[sys.argv[2]], "
                      "window=('1010000', '1200000'))", gen16, zeta)
    c.expect("weft emu: -j 3: 3 workers, " in err,
             f"window jobs=3: made by the workers: {err!r}")
for j in (0, 4097, True, "2", 2.0):
    try:
        weft.emulate(two, jobs=j)
        c.expect(False, f"jobs={j!r}: raises")
    except ValueError as e:
        c.eq(str(e), f"jobs {j!r}: give a number of workers from 1 to 4096, or None",
             f"jobs={j!r}: ValueError")
c.expect(nemu >= 40, f"cases emulated ({nemu} of {ncases})")
print(f"{nemu} of {ncases} cases emulated")
c.done()
