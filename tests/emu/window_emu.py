#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""window_emu.py - `weft emu --from T0 --to T1` (a time window) against the full
emulation of the same trace.

For each trace, the full emulation (Paraver and Perfetto) and a window are run
and, with T0 and T1 as ns after the first event:
  - every .prv: its header duration is T1 - T0 (up to the last event when the
    trace ends first) and the rest of the header is the full run's; its
    records at times > 0 are exactly the full run's records at times in
    (T0, T1], in order, shifted by -T0; its records at time 0 are, as a
    multiset, one (row, type, value) per (row, type) whose last value in the
    full run's records at times <= T0 is not 0 (the state at T0);
  - every .row is the full run's;
  - perfetto.pftrace: per track (same uuids and names), the slices are the full
    run's slices that end after T0 and start at or before T1, each clipped
    to [T0, T1] and shifted by -T0; counter tracks hold the last value at or
    before T0 (at 0) and the values in (T0, T1].
Modes:
  --synthetic (no corpus): a trace written by the test (K rounds of a thread
    pausing, flushing and pushing a mark, ~120 000 events, a few MB of output)
    with windows relative and absolute; a run not ended (no OHe) whose
    window stops before the end (the end checks are not made: exit 0, and
    the summary says so); the exact usage errors (exit 2) and the windows
    outside the trace (exit 1).
  default: the corpus's models/ cases the reference accepted (with their -b/-a
    flags) and a few v3 cases (two looms with a clock offset among them), each
    with a window in its middle whose bounds are record times (records exactly
    at T0 and T1); exit 77 when the corpus is absent (unless CI=true).
"""
import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from protobuf_wire import fields, text  # noqa: E402
sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import skip_note  # noqa: E402

WEFT = os.environ["WEFT_BIN"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}")
    return cond


def emu(*args):
    return subprocess.run([WEFT, "emu", *map(str, args)], capture_output=True, text=True,
                          timeout=600)


# ---------------------------------------------------------------- Paraver

def read_prv(path):
    """(header without the duration, duration, [(time, row, type, value)])."""
    lines = path.read_text().splitlines()
    m = re.match(r"^(#Paraver \([^)]*\):)(\d+)_ns(:.*)$", lines[0])
    assert m, f"{path}: header {lines[0]!r}"
    recs = []
    for ln in lines[1:]:
        f = ln.split(":")
        assert f[0] == "2", f"{path}: {ln!r}"
        row, time = tuple(f[1:5]), int(f[5])
        for i in range(6, len(f), 2):
            recs.append((time, row, int(f[i]), int(f[i + 1])))
    return m.group(1) + m.group(3), int(m.group(2)), recs


def check_prv(name, full, win, t0, t1, has_from):
    fh, fdur, frecs = read_prv(full)
    wh, wdur, wrecs = read_prv(win)
    check(wh == fh, f"{name}: header {wh!r}, the full run's {fh!r}")
    want_dur = min(t1, fdur) - t0
    check(wdur == want_dur, f"{name}: duration {wdur}, want {want_dur}")
    if not has_from:
        # --to alone: the full run's records up to T1, as they are
        want = [x for x in frecs if x[0] <= t1]
        check(wrecs == want, f"{name}: {len(wrecs)} records, the full run has {len(want)} "
                             f"up to T1")
        return len(wrecs), 0
    inside = [(t - t0, r, ty, v) for t, r, ty, v in frecs if t0 < t <= t1]
    got = [x for x in wrecs if x[0] > 0]
    if not check(got == inside, f"{name}: {len(got)} records after T0, the full run has "
                                f"{len(inside)} in (T0, T1]"):
        for a, b in zip(got, inside):
            if a != b:
                print(f"  first difference: window {a}, full {b}")
                break
    last = {}
    for t, r, ty, v in frecs:
        if t <= t0:
            last[(r, ty)] = v
    state = collections.Counter((r, ty, v) for (r, ty), v in last.items() if v != 0)
    at0 = collections.Counter((r, ty, v) for t, r, ty, v in wrecs if t == 0)
    if not check(at0 == state, f"{name}: {sum(at0.values())} records at T0, the state at T0 "
                               f"has {sum(state.values())} values"):
        print(f"  only in the window: {sorted((at0 - state).elements())[:5]}")
        print(f"  only in the state: {sorted((state - at0).elements())[:5]}")
    check(all(x[0] >= 0 for x in wrecs) and [x[0] for x in wrecs] == sorted(x[0] for x in wrecs),
          f"{name}: record times not in order")
    return len(got), sum(at0.values())


# ---------------------------------------------------------------- Perfetto

def pf_read(path):
    """tracks {uuid: name}, slices {uuid: [(start, end, name)]},
    counters {uuid: [(ts, value)]}; slices paired per track in file order."""
    data = path.read_bytes()
    tracks, names, events = {}, {}, []
    for fno, wt, span in fields(data, 0, len(data)):
        pkt = {}
        for f2, w2, v2 in fields(data, *span):
            pkt.setdefault(f2, v2)
            if f2 == 12:
                for f3, _, v3 in fields(data, *v2):
                    if f3 == 2:
                        ent = {f4: v4 for f4, _, v4 in fields(data, *v3)}
                        names[ent[1]] = text(data, ent[2])
        if 60 in pkt:
            d = {f: v for f, _, v in fields(data, *pkt[60])}
            nm = text(data, d[2]) if 2 in d else ""
            for sub in (3, 4):
                if sub in d:
                    p = {f: v for f, _, v in fields(data, *d[sub])}
                    nm = text(data, p[6 if sub == 3 else 5])
            tracks[d[1]] = nm
        if 11 in pkt:
            e = {f: v for f, _, v in fields(data, *pkt[11])}
            name = names.get(e[10]) if 10 in e else (text(data, e[23]) if 23 in e else None)
            events.append((pkt.get(8, 0), e[9], e[11], name, e.get(30)))
    slices, counters = collections.defaultdict(list), collections.defaultdict(list)
    stacks = collections.defaultdict(list)
    for ts, typ, trk, name, cv in events:
        if typ == 1:
            stacks[trk].append((ts, name))
        elif typ == 2:
            s, n = stacks[trk].pop()
            slices[trk].append((s, ts, n))
        elif typ == 4:
            counters[trk].append((ts, cv))
    for trk, st in stacks.items():
        assert not st, f"{path}: track {trk} has slices never ended"
    return tracks, slices, counters


def check_pf(name, full, win, t0, t1):
    ftr, fsl, fct = pf_read(full)
    wtr, wsl, wct = pf_read(win)
    for u, n in wtr.items():
        check(ftr.get(u) == n, f"{name}: track {u} {n!r}, the full run's {ftr.get(u)!r}")
    nsl = 0
    for u in set(fsl) | set(wsl):
        want = sorted((max(s, t0) - t0, min(e, t1) - t0, n) for s, e, n in fsl.get(u, [])
                      if e > t0 and s <= t1)
        got = sorted(wsl.get(u, []))
        nsl += len(got)
        if not check(got == want, f"{name}: track {u} ({ftr.get(u)!r}): {len(got)} slices, "
                                  f"want {len(want)}"):
            print(f"  window {got[:4]}\n  want   {want[:4]}")
    for u in set(fct) | set(wct):
        before = [(0, v) for t, v in fct.get(u, []) if t <= t0][-1:]
        want = before + [(t - t0, v) for t, v in fct.get(u, []) if t0 < t <= t1]
        check(wct.get(u, []) == want, f"{name}: counter track {u}: {wct.get(u)} want {want}")
    return nsl


# ---------------------------------------------------------------- a window run

def compare(name, trace, flags, t0, t1, tmp, args=None, both=True):
    """Full run and window run (T0, T1 in ns after the first event; args: the
    --from/--to arguments, else T0ns and T1ns)."""
    full, win = Path(tmp) / (name + "-full"), Path(tmp) / (name + "-win")
    r = emu(*flags, "-q", "-o", full, trace)
    if not check(r.returncode == 0, f"{name}: full run exited {r.returncode}: {r.stderr}"):
        return
    args = args or ["--from", f"{t0}ns", "--to", f"{t1}ns"]
    r = emu(*flags, "-q", "-o", win, *args, trace)
    if not check(r.returncode == 0, f"{name}: window {args} exited {r.returncode}: {r.stderr}"):
        return
    nrec = nstate = 0
    for prv in sorted(full.glob("*.prv")):
        a, b = check_prv(f"{name} {prv.name}", prv, win / prv.name, t0, t1,
                         "--from" in args)
        nrec, nstate = nrec + a, nstate + b
        row = prv.with_suffix(".row").name
        check((full / row).read_text() == (win / row).read_text(), f"{name}: {row} differs")
    nsl = check_pf(name, full / "perfetto.pftrace", win / "perfetto.pftrace", t0, t1) if both \
        else 0
    print(f"ok {name} {' '.join(args)}: {nrec} records in the window, {nstate} at T0, "
          f"{nsl} Perfetto slices")


def prv_times(path):
    return sorted({t for t, _, _, _ in read_prv(path)[2]})


# ---------------------------------------------------------------- synthetic

def synthetic(tmp):
    from cli_emu import ev, ohx, mark, write_thread
    tmp = Path(tmp)

    def trace(root, k, end=True):
        evs, clock = [ohx(0, 1000)], 1000
        for i in range(k):
            evs.append(mark("OM[", 1 + i % 3, 1, clock + 1))
            evs.append(ev("OHp", clock + 2))
            evs.append(ev("OF[", clock + 3))
            evs.append(ev("OF]", clock + 4))
            evs.append(ev("OHr", clock + 5))
            evs.append(mark("OM]", 1 + i % 3, 1, clock + 6))
            clock += 10
        if end:
            evs.append(ev("OHe", clock + 1))
        write_thread(root, 1, 1, evs, mark_meta={"1": {"title": "Round", "chan_type": "stack"}})

    big = tmp / "big"
    trace(big, 20000)
    # rounds start at 1000 + 10 i: T0 inside a round (the mark pushed, Paused)
    compare("synthetic-rel", big, [], 71233, 152347, tmp)
    # clocks (the first event at clock 1000), T0 and T1 on event clocks
    compare("synthetic-clock", big, [], 50002, 120005, tmp,
            args=["--from", "51002", "--to", "121005"])
    # units, --from alone (to the end) and --to alone (from the start)
    compare("synthetic-us", big, [], 150000, 170000, tmp, args=["--from", "150us", "--to",
                                                                "0.17ms"])
    compare("synthetic-from", big, [], 199000, 1 << 62, tmp, args=["--from", "199000ns"])
    compare("synthetic-to", big, [], 0, 2500, tmp, args=["--to", "2500ns"])
    # T0 before the first event (clock 1000): times shifted by 1000, no state at T0
    compare("synthetic-before", big, [], -1000, 1000, tmp, args=["--from", "0", "--to", "2000"])

    # the summary says the window; a run stopped after T1 makes no end checks
    open_run = tmp / "open"
    trace(open_run, 100, end=False)
    r = emu("--paraver", "-o", tmp / "open-full", open_run)
    check(r.returncode == 1 and r.stderr == "weft emu: loom.vm/proc.1/thread.1: thread 1 is "
          "Running at the end of the trace; every thread must end with OHe (Dead)\n",
          f"open run, full: {r.returncode} {r.stderr!r}")
    r = emu("--paraver", "-o", tmp / "open-win", "--from", "300ns", "--to", "505ns", open_run)
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and r.stderr == "", f"open run, window: {r.returncode} {r.stderr!r}")
    check(lines[:3] == [
        "duration: 505 ns, 306 events",
        "window: 300 to 505 ns into the run (clocks 1300 to 1505): the timelines hold 205 ns; "
        "181 events before it emulated without records, 125 in it",
        "the run stopped at the first event after the window: the rest of the trace was not read "
        "and the models' end checks were not made"], f"summary {lines[:3]}")
    prv = (tmp / "open-win" / "thread.prv").read_text().splitlines()
    check(prv[0].endswith("00000000000000000205_ns:0:1:1(1:1)")
          and prv[1:5] == ["2:0:1:1:1:0:2:1", "2:0:1:1:1:0:4:1", "2:0:1:1:1:0:6:1",
                           "2:0:1:1:1:1:101:1"], f"open run, window thread.prv {prv[:5]}")

    # usage errors: exit 2, exact messages
    hint = ("give a clock in nanoseconds (e.g. 1500000) or a time after the trace's first "
            "event with a unit ns, us, ms, s or min (e.g. 2.5s); run `weft emu --help`")
    usage = [
        (["--from", "abc"], f"weft emu: --from 'abc' is not a time: {hint}"),
        (["--to", ""], f"weft emu: --to '' is not a time: {hint}"),
        (["--from", "2.5 s"], f"weft emu: --from '2.5 s' is not a time: {hint}"),
        (["--from", "2.s"], f"weft emu: --from '2.s' is not a time: {hint}"),
        (["--from", "3h"], f"weft emu: --from '3h' is not a time: {hint}"),
        (["--from", "+5"], f"weft emu: --from '+5' is not a time: {hint}"),
        (["--from", "-1s"], "weft emu: --from '-1s': a time cannot be negative"),
        (["--to", "-5"], "weft emu: --to '-5': a time cannot be negative"),
        (["--from", "2.5"], "weft emu: --from '2.5': a clock (a number without a unit) is whole "
         "nanoseconds; give a unit for a time after the trace's first event (e.g. 2.5s)"),
        (["--from", "1.5ns"], "weft emu: --from '1.5ns': finer than a nanosecond"),
        (["--from", "0.0000000001s"], "weft emu: --from '0.0000000001s': finer than a nanosecond"),
        (["--from", "9223372036854775808"], "weft emu: --from '9223372036854775808': out of "
         "range (at most 9223372036854775807 ns)"),
        (["--to", "153722868min"], "weft emu: --to '153722868min': out of range (at most "
         "9223372036854775807 ns)"),
        (["--to", "99999999999999999999999s"], "weft emu: --to '99999999999999999999999s': out "
         "of range (at most 9223372036854775807 ns)"),
        (["--from", "2s", "--to", "1500"], "weft emu: --from '2s' and --to '1500' are of "
         "different kinds: give both as clocks (nanoseconds, no unit) or both with a unit (after "
         "the trace's first event)"),
        (["--from", "2.5s", "--to", "2500ms"], "weft emu: --to '2500ms' is not after --from "
         "'2.5s': the window would be empty"),
        (["--from", "200", "--to", "100"], "weft emu: --to '100' is not after --from '200': the "
         "window would be empty"),
        (["--from"], "weft emu: option '--from' needs an argument (a time); run "
         "`weft emu --help`"),
    ]
    for args, msg in usage:
        out = tmp / "usage"
        r = emu("-o", out, *args, big) if args != ["--from"] else emu(big, "--from")
        check(r.returncode == 2 and r.stderr == msg + "\n" and r.stdout == "",
              f"usage {args}: {r.returncode} {r.stderr!r}")
        check(not out.exists(), f"usage {args}: wrote {out}")
    # accepted spellings (the window of each: its duration in the header)
    for args, dur in [(["--from", "1min"], None), (["--from", "0.5us", "--to", "1.25us"], 750),
                      (["--from", "0s", "--to", "0.000001s"], 1000),
                      (["--from", "1000", "--to", "1001"], 1)]:
        out = tmp / "spell"
        r = emu("--paraver", "-q", "-o", out, *args, big)
        if dur is None:
            check(r.returncode == 1 and r.stderr == "weft emu: --from 1min is at or after the "
                  "last event of the trace (200001 ns into the run); the window holds nothing\n",
                  f"{args}: {r.returncode} {r.stderr!r}")
            continue
        head = (out / "thread.prv").read_text().split("\n", 1)[0]
        check(r.returncode == 0 and f":{dur:020d}_ns:" in head, f"{args}: {r.returncode} "
              f"{r.stderr!r} {head!r}")
    r = emu("--paraver", "-q", "-o", tmp / "early", "--from", "10", "--to", "999", big)
    check(r.returncode == 1 and r.stderr == "weft emu: --to 999 is before the first event of "
          "the trace; the window holds nothing\n", f"--to before the start: {r.stderr!r}")
    # --help names the options
    r = emu("--help")
    check("--from T0, --to T1" in r.stdout, "--help has no --from/--to")


# ---------------------------------------------------------------- corpus

def corpus_cases(corpus, tmp):
    models = corpus / "models"
    n = 0
    for line in (models / "INDEX.txt").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        case, flags, rc = f[0], [x for x in f[1:-1] if x in ("-b", "-a")], f[-1]
        if rc != "0":
            continue
        thread = models / case / "emu" / "thread.prv"
        times = prv_times(thread)
        # T0 and T1: record times (records exactly at T0 and at T1)
        t0, t1 = times[len(times) // 3], times[2 * len(times) // 3]
        if t1 <= t0:
            continue
        compare(f"models/{case}", models / case / "ovni", flags, t0, t1, tmp)
        n += 1
    check(n >= 30, f"only {n} models/ cases")
    for case in ["two-looms", "multi-thread", "marks", "flush-auto"]:
        d = corpus / "v3" / case
        if not check(d.is_dir(), f"v3/{case} missing"):
            continue
        times = prv_times(d / "emu" / "thread.prv")
        t0, t1 = times[len(times) // 2], times[-2]
        compare(f"v3/{case}", d / "ovni", [], t0, t1, tmp)


def main():
    with tempfile.TemporaryDirectory(prefix="weft-emu-window-") as tmp:
        if "--synthetic" in sys.argv:
            synthetic(tmp)
        else:
            corpus = (os.environ.get("WEFT_CONFORMANCE_DIR")
                      or os.environ.get("WEFT_CONFORMANCE_DIR_DEFAULT"))
            if not corpus or not Path(corpus).is_dir():
                if os.environ.get("CI") == "true":
                    print("conformance corpus missing (CI=true)", file=sys.stderr)
                    return 1
                why = f"conformance corpus not found at {corpus!r}: skipped"
                print(why, file=sys.stderr)
                skip_note(why)  # tests/ctest_skipped.py lists it
                return 77
            corpus_cases(Path(corpus), tmp)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
