#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""parallel_emu.py - `weft emu -j N`: the same files whatever N.

Each trace is emulated with -j 1 (the serial run) and with -j 2, 3 and 16 (more
workers than cores, and than looms), into temporary directories; every file
written must be byte-identical to the serial run's, and the exit status and
stderr the same (WEFT_EMU_TIMING's lines aside). WEFT_EMU_TIMING=1 makes the
driver say whether the workers made the run ("weft emu: -j N: K workers, ...",
K = min(N, looms)) or why it was made serially ("-j N: serial run (why)"),
which is asserted too:
  - every multi-loom case of the conformance corpus (v1/ and v3/, the ones the
    reference refuses included: the same message), with --paraver --perfetto
    -q (perfetto.pftrace byte for byte too) and with --paraver (the summary on
    stdout), and the nosv and nanos6 ones with -b (the breakdown, sorted over
    every loom's CPUs after the merge), also with windows (--from with
    Perfetto, --from/--to with the summary: the breakdown's state at T0 at
    time 0 of several slots, the sorted values of every loom's CPUs at T0):
    by workers, except the cases listed in SERIAL (their reason asserted);
  - a generated 16-loom trace (2 threads on 2 CPUs per loom, a user model's
    events: --model examples/zeta/zeta.yaml), with --paraver -q, with -a,
    with -b, with --from/--to (-q, and without -q: the summary's window line,
    the events before T0 and whether reading stopped), with -f paraver:aux=no, with --perfetto (and
    layer=shown, and -a, and no format: Paraver and Perfetto; and with -b),
    and without -q (the summary on stdout, the same lines), with -f sqlite,
    a window with the Perfetto output (the internal records of the state at T0
    merged by row, the CPUs' before the threads', as the serial run writes
    them: --from/--to, and --from with the default formats) and a window with
    -b, and with --salvage (nothing cut): by workers;
  - a 6-loom trace cut short in five looms (gen_cut: partial events, streams
    with no whole event, a partial header, no ovni.finished, a crash cut)
    with --salvage: by workers, with Perfetto, the summary, -b, SQLite and a
    window; stderr (the opening's warnings, then each cut as the serial
    reader finds it) the serial run's; without --salvage refused alike; with
    --to, two threads closed at one cut clock, and two workers' streams cut
    after events at one clock: serial (the reason asserted);
  - a 4-loom trace with runs of lost events (weft.ring): serial (the reason
    asserted); one whose threads only dropped events (weft.lost_events): by
    workers (the warning once, the summary's lost lines), and with an event
    skipped after them: serial (the reason asserted);
  - a warning of the trace's opening (a link out of it): by workers, said
    once;
  - a 6-loom trace whose odd looms end early, with windows after their end
    (their rows' state at T0 written after their last event), inside, and
    holding nothing (serial: the message), with -q (Paraver and Perfetto)
    and with the summary;
  - every multi-loom corpus case with --from 1ms --to 30ms (-q, Paraver and
    Perfetto);
  - a 2-loom trace with 8400 records at one clock, 4200 a view (more than
    a batch of the merge, which then holds them all): by workers;
  - the same trace with every loom's events at the same clocks: serial
    (events of two streams at one clock cannot be ordered as the serial
    run's heap orders them), the same files.
weft sql -j N: the same database (its dump) as with -j 1, made by the
workers (weft view -j N: tests/view/view_jobs.py); -j 0, 4097 and x refused by
weft emu, weft sql and weft view (exit 2, the message).
Environment: WEFT_BIN, WEFT_SOURCE_DIR, WEFT_CONFORMANCE_DIR(_DEFAULT).
"""
import json
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "cli"))
sys.path.insert(0, str(HERE))
import tracegen  # noqa: E402
from jobs_compare import compare_jobs, corpus, corpus_cases  # noqa: E402,F401 (corpus: mpi_emu's)

WEFT = os.environ["WEFT_BIN"]
SRC = Path(os.environ.get("WEFT_SOURCE_DIR", HERE.parents[1]))
ZETA = SRC / "examples" / "zeta" / "zeta.yaml"
# multi-loom cases run serially, and why (which of the two depends on how the
# looms are grouped)
TIES = "events of two streams at one clock|records of two workers at one time"
SERIAL = {"suite-tampi-ss-comm": TIES}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def emu(args, out, extra_env=None):
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, WEFT_EMU_TIMING="1", **(extra_env or {}))
    p = subprocess.run([WEFT, "emu", "-o", str(out)] + args, capture_output=True, text=True,
                       timeout=120, env=env)
    timing = [ln for ln in p.stderr.splitlines() if ln.startswith("weft emu: ") and
              (" CPU " in ln or re.match(r"weft emu: (-j \d+: |\d+ events in )", ln))]
    rest = [ln.replace(str(out), "OUT") for ln in p.stderr.splitlines() if ln not in timing]
    return p.returncode, "\n".join(rest), "\n".join(timing), p.stdout.replace(str(out), "OUT")


def files(d):
    """{relative path: bytes}, a SQLite database as its dump."""
    got = {}
    if not d.is_dir():
        return got
    for f in sorted(d.rglob("*")):
        if not f.is_file():
            continue
        rel = str(f.relative_to(d))
        if f.suffix == ".db":
            con = sqlite3.connect(str(f))
            got[rel] = "\n".join(con.iterdump()).encode()
            con.close()
        else:
            got[rel] = f.read_bytes()
    return got


def compare(name, trace, args, tmp, expect, ok=True, extra_env=None, bd=False):
    """expect: ("workers", nlooms) or ("serial", reason) for every -j > 1;
    ok: -j 1 must succeed (the generated traces); bd: -j 1 must write a
    breakdown view with records of several slots."""
    def run(j):
        rc, err, timing, out = emu(["-j", str(j)] + args + [str(trace)], tmp / f"j{j}",
                                   extra_env if j > 1 else None)
        return rc, err, timing, out, files(tmp / f"j{j}")
    r1 = compare_jobs(name, run, expect, check, ok)
    rc1, ref = r1.rc, r1.files
    if bd:
        prv = [v for k, v in ref.items() if k.endswith("-breakdown.prv")]
        rows = {ln.split(b":")[4] for v in prv for ln in v.splitlines()[1:]
                if ln.startswith(b"2:")}
        check(len(prv) >= 1 and len(rows) >= 2, f"{name}: -j 1 wrote no breakdown "
              f"({sorted(ref)}, rows {sorted(rows)})")
        if "--from" in args:
            # the breakdown's state at T0: records at time 0 of several slots
            at0 = {ln.split(b":")[4] for v in prv for ln in v.splitlines()[1:]
                   if ln.startswith(b"2:") and ln.split(b":")[5] == b"0"}
            check(len(at0) >= 2, f"{name}: -j 1 wrote no breakdown state at T0 ({at0})")
    check(rc1 != 0 or any(k.endswith(".prv") or k.endswith(".db") or k.endswith(".pftrace")
                          for k in ref), f"{name}: -j 1 wrote nothing")


def gen_trace(root, nlooms, ties=False, iters=40, uneven=False):
    """nlooms looms, each a process of 2 threads on CPUs 0 and 1, requiring
    zeta; clocks distinct across streams unless ties; uneven: the odd looms
    end after a quarter of the iterations."""
    full = iters
    for L in range(nlooms):
        iters = full // 4 if uneven and L % 2 else full
        pid = 1000 + L
        for k in range(2):
            tid = pid * 10 + k
            s = L * 2 + k
            off = 0 if ties else 3 * s

            def c(step):
                return 1_000_000 + step * 1000 + off
            evs = [tracegen.ev("OHx", c(0), struct.pack("<iiQ", k, -1, 0))]
            step = 1
            for it in range(iters):
                evs.append(tracegen.ev("ZPs", c(step)))
                evs.append(tracegen.ev("ZR[", c(step + 1), struct.pack("<I", 1 + it % 3)))
                evs.append(tracegen.ev("ZWi", c(step + 2), struct.pack("<Q", 64 * (it + L + 1))))
                evs.append(tracegen.ev("ZPc", c(step + 3)))
                evs.append(tracegen.ev("OHp", c(step + 4)))
                evs.append(tracegen.ev("OHr", c(step + 5 + (it + L) % 4)))
                evs.append(tracegen.ev("ZR]", c(step + 9), struct.pack("<I", 1 + it % 3)))
                evs.append(tracegen.ev("ZPe", c(step + 10)))
                step += 11
            evs.append(tracegen.ev("OHe", c(step)))
            m = tracegen.meta(tid, pid, loom=f"node{L:02d}", cpus=((0, 2 * L), (1, 2 * L + 1)),
                              require={"ovni": "1.1.0", "zeta": "1.0.0"})
            tracegen.write_stream(root, tracegen.thread_rel(f"node{L:02d}", pid, tid), m, evs)


def gen_burst(root, n=2100):
    """2 looms as gen_trace's, one thread pushing and popping zeta's region n
    times at one clock: more records at one time than a batch of the merge."""
    for L in range(2):
        pid = 1000 + L
        for k in range(2):
            tid = pid * 10 + k
            off = 3 * (L * 2 + k)

            def c(step):
                return 1_000_000 + step * 1000 + off
            evs = [tracegen.ev("OHx", c(0), struct.pack("<iiQ", k, -1, 0)),
                   tracegen.ev("ZPs", c(1))]
            for i in range(n if L == 0 and k == 0 else 0):
                evs.append(tracegen.ev("ZR[", c(2), struct.pack("<I", 1 + i % 3)))
                evs.append(tracegen.ev("ZR]", c(2), struct.pack("<I", 1 + i % 3)))
            evs += [tracegen.ev("ZPe", c(3)), tracegen.ev("OHe", c(4))]
            m = tracegen.meta(tid, pid, loom=f"node{L:02d}", cpus=((0, 2 * L), (1, 2 * L + 1)),
                              require={"ovni": "1.1.0", "zeta": "1.0.0"})
            tracegen.write_stream(root, tracegen.thread_rel(f"node{L:02d}", pid, tid), m, evs)


def gen_cut(root, shared_cut=False, same_last=False):
    """A 6-loom trace as gen_trace's, cut short as a crash leaves it
    (--salvage): streams ending inside an event in five looms, two with no
    whole event (looms 1 and 3), one with a partial stream header (loom 2),
    threads without ovni.finished (loom 4: its stream cut too; loom 5: whole
    but without OHe), and a thread killed by a signal (weft.cut) whose cut
    clock is after its last event (loom 1). shared_cut: loom 1's other thread
    is cut by the same signal at the same clock (a crashed process); same_last:
    instead, two threads of looms 0 and 2 have their last whole events at one
    clock."""
    gen_trace(root, 6)

    def rel(L, k):
        return Path(root) / tracegen.thread_rel(f"node{L:02d}", 1000 + L, (1000 + L) * 10 + k)

    def cut(L, k, nbytes, keep=None):
        p = rel(L, k) / "stream.obs"
        b = p.read_bytes()
        p.write_bytes(b[:keep] if keep is not None else b[:len(b) - nbytes])

    def meta(L, k, fn):
        p = rel(L, k) / "stream.json"
        m = json.loads(p.read_text())
        fn(m)
        p.write_text(json.dumps(m))
    # events are 12 bytes (no payload), 16 (4 bytes), 20 (8 bytes), 28 (OHx)
    cut(0, 0, 20)       # ends inside ZPe (12 bytes) after OHe
    cut(2, 1, 37)
    cut(3, 0, 5)
    cut(5, 1, 401)
    if not shared_cut:
        cut(1, 1, 0, keep=8 + 10)   # a partial first event: no whole event
    cut(3, 1, 0, keep=8 + 5)
    cut(2, 0, 0, keep=6)        # a partial stream header
    meta(4, 0, lambda m: m["ovni"].pop("finished"))
    cut(4, 0, 16)
    meta(5, 0, lambda m: m["ovni"].pop("finished"))
    cut(5, 0, 12)               # without its OHe (whole events)
    # loom 1, thread 0: killed by SIGSEGV at a clock after its last event
    crash = {"cut": {"by": "signal", "signal": 11, "clock": 1_300_002}}

    def killed(m):
        m["ovni"].pop("finished")
        m["weft"] = crash
    meta(1, 0, killed)
    cut(1, 0, 0, keep=1400)
    if shared_cut:
        meta(1, 1, killed)
        cut(1, 1, 0, keep=1100)
    if same_last:
        # loom 0 thread 1 and loom 2 thread 1 end at one clock: their
        # streams rewritten with the same clocks (a step apart from the
        # other threads')
        for L in (0, 2):
            evs = [tracegen.ev("OHx", 1_000_001, struct.pack("<iiQ", 1, -1, 0)),
                   tracegen.ev("OHp", 1_000_501), tracegen.ev("OHr", 1_001_501),
                   tracegen.ev("OHp", 1_002_501)]
            p = rel(L, 1) / "stream.obs"
            p.write_bytes(tracegen.HEADER + b"".join(evs) + b"\x00\x4f")


def gen_lost(root):
    """gen_trace's 4 looms, two threads of looms 1 and 3 with runs of events
    overwritten by the flight recorder (weft.ring) and one of loom 2 with
    events dropped by a signal handler (weft.lost_events)."""
    gen_trace(root, 4)
    for L, k, w in ((1, 0, {"ring": {"size": 64, "lost_events": 3, "lost_bytes": 36,
                                     "lost": [[1_050_000, 1_060_000, 3, 36]]}}),
                    (3, 1, {"ring": {"size": 64, "lost_events": 2, "lost_bytes": 24,
                                     "lost": [[1_200_000, 1_210_000, 2, 24]]}}),
                    (2, 0, {"lost_events": 4})):
        p = Path(root) / tracegen.thread_rel(f"node{L:02d}", 1000 + L,
                                             (1000 + L) * 10 + k) / "stream.json"
        m = json.loads(p.read_text())
        m["weft"] = w
        p.write_text(json.dumps(m))


def gen_dropped(root, refuse=False):
    """gen_trace's 4 looms, a thread of loom 1 and one of loom 3 with events
    dropped by signal handlers (weft.lost_events: no run to place); refuse:
    loom 1's thread has an OHr after its OHe, which the models refuse (the
    thread lost events: skipped and counted by rule)."""
    gen_trace(root, 4)
    for L, k, n in ((1, 0, 3), (3, 1, 2)):
        d = Path(root) / tracegen.thread_rel(f"node{L:02d}", 1000 + L, (1000 + L) * 10 + k)
        meta = json.loads((d / "stream.json").read_text())
        meta["weft"] = {"lost_events": n}
        (d / "stream.json").write_text(json.dumps(meta))
        if refuse and L == 1:
            with open(d / "stream.obs", "ab") as f:
                f.write(tracegen.ev("OHr", 1_441_106))


def salvage_cases(tmp, m):
    """--salvage by workers: streams cut short in several looms; the
    warnings (the opening's, then each stream's cut as the serial reader
    finds them), the threads closed at their last event or cut clock, the
    summary's cut lines and every file the serial run's."""
    cut = tmp / "cut"
    gen_cut(str(cut))
    six = ("workers", 6)
    rc, err, _, out = emu(["-j", "1", "--paraver"] + m + ["--salvage", str(cut)], tmp / "cj1")
    # the trace is what the cases say: 12 warnings, 10 threads cut short
    check(rc == 0 and err.count("weft emu: warning: ") == 12 and
          "stream cut: a partial event" in err and "a partial stream header" in err and
          "ovni.finished is missing" in err and "cut by signal 11" in err,
          f"cut: -j 1: {rc} {err!r}")
    check("cut short (--salvage): 10 threads, each closed at its last event or the clock "
          "of its cut;" in out and out.count(": no events; stream cut at offset") == 3,
          f"cut: -j 1 summary: {out!r}")
    # without --salvage: refused, the same message whatever -j
    compare("cut refused", cut, m + ["--paraver", "-q"], tmp, None, ok=False)
    compare("cut --salvage", cut, m + ["--paraver", "--perfetto", "-q", "--salvage"], tmp, six)
    compare("cut --salvage summary", cut, m + ["--paraver", "--salvage"], tmp, six)
    compare("cut --salvage -b", cut, m + ["--paraver", "-q", "-b", "--salvage"], tmp, six)
    compare("cut --salvage sqlite", cut, m + ["-f", "sqlite", "-q", "--salvage"], tmp, six)
    compare("cut --salvage window", cut, m + ["--paraver", "--perfetto", "--salvage",
                                              "--from", "1100000"], tmp, six)
    # --to: reading stops after T1, at a place that depends on every loom
    compare("cut --salvage --to", cut, m + ["--paraver", "-q", "--salvage", "--to", "1300000"],
            tmp, ("serial", "--salvage with --to"))
    # two threads of a crashed process closed at its cut clock: their
    # order is where the serial reader's batches found their ends
    gen_cut(str(cut), shared_cut=True)
    compare("cut shared clock", cut, m + ["--paraver", "--salvage"], tmp,
            ("serial", "two threads cut short to close at one clock"))
    # two workers' streams cut after events at one clock: the order of
    # their warnings is the serial reader's heap's
    gen_cut(str(cut), same_last=True)
    compare("cut same last clock", cut, m + ["--paraver", "-q", "--salvage"], tmp,
            ("serial", "streams of two workers cut short after events at one clock|"
             "events of two streams at one clock|records of two workers at one time"))
    rc, _, timing, _ = emu(["-j", "16", "--paraver", "-q", "--salvage"] + m + [str(cut)],
                           tmp / "cj16")
    # (the streaming merge meets the two workers' records of the threads
    # closed at that clock before the workers end, where the warnings are
    # put in order: either reason, never the workers' run)
    check(rc == 0 and ("serial run (streams of two workers cut short after events at one "
                       "clock)" in timing or "serial run (records of two workers at one "
                       "time)" in timing), f"cut same last clock: {rc} {timing!r}")
    shutil.rmtree(cut)
    # runs of lost events (weft.ring): emulated by the serial run only
    lost = tmp / "lost"
    gen_lost(str(lost))
    rc, err, _, out = emu(["-j", "1", "--paraver"] + m + [str(lost)], tmp / "lj1")
    check(rc == 0 and "3 threads lost events" in err and
          out.count("lost events:") == 2, f"lost: -j 1: {rc} {err!r} {out!r}")
    why = ("serial", "runs of lost events, which only the serial run emulates")
    compare("lost", lost, m + ["--paraver", "--perfetto", "-q"], tmp, why)
    compare("lost summary", lost, m + ["--paraver"], tmp, why)
    # events dropped by signal handlers (no run): each worker emulates its
    # looms' threads leniently; the warning said once, the summary's lost
    # lines summed over the workers
    gen_dropped(str(lost))
    rc, err, _, out = emu(["-j", "1", "--paraver"] + m + [str(lost)], tmp / "lj1")
    check(rc == 0 and err.count("weft emu: warning: 2 threads lost events (5 dropped by "
                                "signal handlers)") == 1 and
          "lost events: 5 dropped by signal handlers on 2 threads; the 2 threads" in out and
          "lost events: every event after them could be emulated" in out,
          f"dropped: -j 1: {rc} {err!r} {out!r}")
    four = ("workers", 4)
    compare("dropped", lost, m + ["--paraver", "--perfetto", "-q"], tmp, four)
    compare("dropped summary", lost, m + ["--paraver"], tmp, four)
    compare("dropped sqlite", lost, m + ["-f", "sqlite", "-q"], tmp, four)
    # an event skipped after them: the summary's rules, in the order first
    # met over the whole trace, are the serial run's to say
    gen_dropped(str(lost), refuse=True)
    rc, _, _, out = emu(["-j", "1", "--paraver"] + m + [str(lost)], tmp / "lj1")
    check(rc == 0 and "lost events: 1 event after them could not be emulated" in out,
          f"dropped refused: -j 1: {rc} {out!r}")
    compare("dropped refused", lost, m + ["--paraver"], tmp,
            ("serial", "events skipped after lost events"))
    shutil.rmtree(lost)


def main():
    with tempfile.TemporaryDirectory(prefix="weft-par-") as td:
        tmp = Path(td)
        c = corpus()
        nbd = 0
        for case, trace, expect in corpus_cases(check, SERIAL):
            compare(case.name, trace, ["--paraver", "--perfetto", "-q"], tmp, expect, ok=False)
            # the summary (stdout) too: the workers' figures, put together
            compare(case.name + " summary", trace, ["--paraver"], tmp, expect, ok=False)
            # a window: each row's state at T0, merged by row at time 0 (a window
            # that holds nothing: the serial run's message)
            # (perfetto.pftrace: the internal records of the state at T0 merged too)
            compare(case.name + " window", trace, ["--paraver", "--perfetto", "-q", "--from",
                                                   "1ms", "--to", "30ms"], tmp, expect, ok=False)
            if "nosv" in case.name or "nanos6" in case.name:
                # the breakdown: every loom's CPUs sorted after the merge
                compare(case.name + " -b", trace, ["--paraver", "-q", "-b"], tmp, expect,
                        bd=True)
                # with a window: the breakdown's state at T0, the sorted slots of
                # every loom's CPUs' values at T0, set in the merge's sorter
                compare(case.name + " -b window", trace, ["--paraver", "--perfetto", "-q", "-b",
                                                          "--from", "10ms"], tmp, expect, bd=True)
                # and with the summary (the window line)
                compare(case.name + " -b window summary", trace,
                        ["--paraver", "-b", "--from", "1ms", "--to", "30ms"], tmp, expect,
                        bd=True)
                nbd += 1
        if c:
            check(nbd >= 3, f"only {nbd} multi-loom nosv/nanos6 corpus cases found")
        trace = tmp / "gen16"
        gen_trace(str(trace), 16)
        m = ["--model", str(ZETA)]
        work = ("workers", 16)
        compare("gen16", trace, m + ["--paraver", "-q"], tmp, work)
        compare("gen16 -a", trace, m + ["--paraver", "-q", "-a"], tmp, work)
        compare("gen16 aux=no", trace, m + ["-f", "paraver:aux=no", "-q", "--no-cfg"], tmp, work)
        # Perfetto: its file is a function of the merged records, whatever the
        # batches (the workers' internal records merged too)
        compare("gen16 --perfetto", trace, m + ["--paraver", "--perfetto", "-q"], tmp, work)
        compare("gen16 perfetto alone", trace, m + ["--perfetto", "-q"], tmp, work)
        compare("gen16 layer=shown", trace, m + ["-f", "perfetto:layer=shown", "-q"], tmp, work)
        compare("gen16 perfetto -a", trace, m + ["--perfetto", "-q", "-a"], tmp, work)
        compare("gen16 default formats", trace, m + ["-q"], tmp, work)
        # SQLite: its file is a function of the events in order and the
        # records in time order (tests/sql/parallel.py compares its bytes)
        compare("gen16 sqlite", trace, m + ["-f", "sqlite", "-q"], tmp, work)
        compare("gen16 -b", trace, m + ["--paraver", "-q", "-b"], tmp, work)
        compare("gen16 window", trace, m + ["--paraver", "-q", "--from", "1010000",
                                            "--to", "1200000"], tmp, work)
        # Perfetto with the breakdown and with a window
        compare("gen16 -b perfetto", trace, m + ["--paraver", "--perfetto", "-q", "-b"], tmp,
                work)
        # a window's state at T0 in perfetto.pftrace: the internal records at
        # time 0 (each CPU's running thread, then each thread's raw channels)
        # merged in the serial run's order (CPUs row by row, then threads)
        compare("gen16 window perfetto", trace, m + ["--perfetto", "-q", "--from", "1010000",
                                                     "--to", "1200000"], tmp, work)
        compare("gen16 window default formats", trace, m + ["--from", "1010000"], tmp, work)
        # the summary's window line: the events before T0 and whether reading
        # stopped, over every worker
        compare("gen16 window summary", trace, m + ["--paraver", "--from", "1010000"], tmp,
                work)
        compare("gen16 window summary --to", trace, m + ["--paraver", "--from", "1010000",
                                                         "--to", "1200000"], tmp, work)
        compare("gen16 window -b", trace, m + ["--paraver", "-q", "-b", "--to", "1200000"], tmp,
                work)
        compare("gen16 window -b --from", trace, m + ["--paraver", "-q", "-b", "--from",
                                                      "1010000", "--to", "1200000"], tmp, work)
        # looms of two lengths: the workers whose looms end before T0 write
        # their rows' state at T0 after their last event; windows that hold
        # nothing are left to the serial run (its message)
        uneven = tmp / "uneven"
        gen_trace(str(uneven), 6, uneven=True)
        six = ("workers", 6)
        for win in (["--from", "1200000", "--to", "1300000"], ["--from", "1200000"],
                    ["--to", "1300000"], ["--from", "1050000", "--to", "1100000"],
                    ["--from", "1100000", "--to", "1100001"]):
            compare("uneven " + " ".join(win), uneven, m + ["--paraver", "--perfetto", "-q"] +
                    win, tmp, six)
            compare("uneven summary " + " ".join(win), uneven, m + ["--paraver"] + win, tmp,
                    six)
        for win in (["--from", "5000000"], ["--to", "10"]):
            compare("uneven " + " ".join(win), uneven, m + ["--paraver", "-q"] + win, tmp,
                    ("serial", "a window that holds nothing"), ok=False)
        # --salvage: nothing cut here; the traces cut short: salvage_cases
        compare("gen16 --salvage", trace, m + ["--paraver", "-q", "--salvage"], tmp, work)
        salvage_cases(tmp, m)
        compare("gen16 summary", trace, m + ["--paraver"], tmp, work)
        compare("gen16 summary -a", trace, m + ["--paraver", "-a"], tmp, work)
        # more records than the memory given to them (here 10 KiB): serial
        compare("gen16 budget", trace, m + ["--paraver", "-q"], tmp,
                ("serial", "the records would exceed the memory given to them"),
                extra_env={"WEFT_EMU_PAR_BUDGET": "0.01"})
        compare("gen16 budget perfetto", trace, m + ["--perfetto", "-q"], tmp,
                ("serial", "the records would exceed the memory given to them"),
                extra_env={"WEFT_EMU_PAR_BUDGET": "0.01"})
        # more records than a worker's first chunks of them (2730 a view, then twice as many)
        big = tmp / "big"
        gen_trace(str(big), 16, iters=1200)
        compare("big", big, m + ["--paraver", "-q", "--no-cfg"], tmp, work)
        # many batches of the serial run's, cut elsewhere than the merge's
        compare("big --perfetto", big, m + ["--perfetto", "-q"], tmp, work)
        compare("big layer=shown", big, m + ["-f", "perfetto:layer=shown", "-q"], tmp, work)
        shutil.rmtree(big)
        # 8400 records at one time, 4200 a view (more than a batch of the merge)
        burst = tmp / "burst"
        gen_burst(str(burst))
        compare("burst", burst, m + ["--paraver", "--perfetto", "-q"], tmp, ("workers", 2))
        ties = tmp / "ties"
        gen_trace(str(ties), 16, ties=True)
        compare("ties", ties, m + ["--paraver", "-q"], tmp,
                ("serial", TIES))
        compare("ties --perfetto", ties, m + ["--perfetto", "-q"], tmp, ("serial", TIES))
        # a warning of the trace's opening (a link out of the trace, passed
        # over): said once, before the workers' run, as the serial run says it
        warn = tmp / "warn"
        gen_trace(str(warn), 2)
        outside = tmp / "outside"
        outside.mkdir()
        (warn / "loom.link").symlink_to(outside)
        compare("warning", warn, m + ["--paraver", "-q"], tmp, ("workers", 2))
        rc, err, _, _ = emu(["-j", "2", "--paraver", "-q"] + m + [str(warn)], tmp / "w")
        check(rc == 0 and err.count("loom.link") == 1, f"warning: {rc} {err!r}")
        # -j's value is checked
        for cmd in ("emu", "sql", "view"):
            for bad in ("0", "4097", "x"):
                p = subprocess.run([WEFT, cmd, "-j", bad, str(trace)], capture_output=True,
                                   text=True, timeout=60)
                check(p.returncode == 2 and p.stderr == f"weft {cmd}: -j takes a number of "
                      f"workers from 1 to 4096, not '{bad}'\n",
                      f"{cmd} -j {bad}: {p.returncode} {p.stderr!r}")
        # weft sql takes -j: the same database whatever N, made by the workers
        # (weft view -j, made by the workers too: tests/view/view_jobs.py)
        fronts = (("sql", "db", None),)
        for cmd, ext, why in fronts:
            for name, tr in (("gen16", trace), ("two-looms", c / "v3" / "two-looms" / "ovni"
                                                 if c else None)):
                if tr is None:
                    continue
                outs = {}
                for j in (1, 2, 3, 16):
                    f = tmp / f"{cmd}-{name}-j{j}.{ext}"
                    args = [WEFT, cmd, "-j", str(j), "-o", str(f)]
                    args += (["-q"] if cmd == "view" else [])
                    args += (m if name == "gen16" else []) + [str(tr)]
                    p = subprocess.run(args, capture_output=True, text=True, timeout=120,
                                       env=dict(os.environ, WEFT_EMU_TIMING="1"))
                    check(p.returncode == 0, f"{cmd} -j {j} {name}: exit {p.returncode} "
                          f"{p.stderr!r}")
                    if why is None:
                        k = min(j, 16 if name == "gen16" else 2)
                        check((re.search(rf"^weft emu: -j {j}: {k} workers, ", p.stderr, re.M)
                               is not None) == (j > 1), f"{cmd} -j {j} {name}: {k} workers "
                              f"expected {j > 1}: {p.stderr!r}")
                    else:
                        serial = f"weft emu: -j {j}: serial run ({why})"
                        check((serial in p.stderr.splitlines()) == (j > 1),
                              f"{cmd} -j {j} {name}: {serial!r} expected {j > 1}: "
                              f"{p.stderr!r}")
                    d = tmp / f"{cmd}-{j}"
                    d.mkdir()
                    if f.exists():
                        f.rename(d / f.name)
                    outs[j] = files(d).get(f.name)
                    shutil.rmtree(d)
                check(outs[1] is not None and len(outs[1]) > 1000, f"{cmd} {name}: -j 1 output")
                for j in (2, 3, 16):
                    check(outs[j] == outs[1], f"{cmd} -j {j} {name}: differs from -j 1's")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("parallel_emu: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
