#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""mpi_emu.py - `mpirun -n R weft emu --mpi` (docs/emu.md, MPI): the serial files.

A generated 6-loom trace (parallel_emu.py's: 2 threads on 2 CPUs per loom, a user
model's events) is emulated serially (`weft emu -j 1 -q`: the default formats,
Paraver and Perfetto), then by `mpirun --oversubscribe -n R weft emu --mpi` with
R = 1, 2 and 4:
  - shared: every rank given the whole trace; each run writes exactly the serial
    files, byte for byte (the .prv files and perfetto.pftrace: the ranks' internal
    records merged by rank 0 with the views'), and WEFT_EMU_TIMING's line says
    the R ranks made it;
  - --local: the looms spread round-robin over R directories (rank r gets
    .../rK/ovni with K = r), each rank given its own; the same files, and no
    shadow trace left in TMPDIR;
  - without -q: the job's stdout is the serial run's (the summary, printed by
    rank 0 from every rank's figures, and where the files are, once), shared
    and --local, R = 1, 2, 4; the same with -b on the corpus's 4-loom
    suite-nosv-task-types (the breakdown sorted by rank 0 after the merge),
    and with -b and a window (the breakdown's state at T0, records of
    several slots at time 0, set in rank 0's sorter; the summary's window
    line);
  - windows (--from/--to and --to with --paraver, --from and --from/--to
    with the default formats, perfetto.pftrace; --from and --to with the
    summary, reading stopped after T1 in the second) on a 6-loom trace whose
    odd looms end early, shared and --local, R = 1, 2, 4: the serial files and stdout (the
    window line: the events before T0, the span, whether reading stopped),
    made by the ranks; a window that holds nothing: rank 0's serial run, its
    message, exit 1;
  - the collectives in rounds of 1000 bytes (WEFT_MPI_ROUND, as beyond 2 GiB):
    the same files, shared and --local;
  - the trace with every loom's events at the same clocks: shared, rank 0 makes
    the serial run (the same files); --local refuses it (exit 1, the reason);
  - sync_drift's two-host trace with clock offsets and drift, the file in rank
    0's directory only (--local, 2 ranks): the serial files;
  - --local with no loom under rank 0's directory: exit 1, the reason;
  - a corrupted stream (a clock going backwards, in loom node03): every rank
    exits 1, the job's stderr has one weft line, `weft emu: rank K: MSG` with
    MSG the serial run's message (with --local, naming the file in the directory
    of the rank that holds the loom, and K that rank), and nothing is written.
Skipped (77) without weft-mpi (no MPI at build time) or mpirun, a failure under
CI=true. Every subprocess has a timeout.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "cli"))
import parallel_emu  # noqa: E402

WEFT = os.environ["WEFT_BIN"]
MPI_BIN = Path(WEFT).parent / "weft-mpi"
SRC = Path(os.environ.get("WEFT_SOURCE_DIR", HERE.parents[1]))
ZETA = SRC / "examples" / "zeta" / "zeta.yaml"
TIMEOUT = 120
NLOOMS = 6
ARGS = ["--model", str(ZETA), "-q"]  # the default formats: Paraver and Perfetto

failures = []
nchecks = 0


def check(cond, what):
    global nchecks
    nchecks += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def skip_or_fail(why):
    if os.environ.get("CI") == "true":
        print(f"{why} (CI=true: failure)", file=sys.stderr)
        sys.exit(1)
    print(f"{why}: skipped", file=sys.stderr)
    sys.exit(77)


def find_mpirun():
    m = os.environ.get("WEFT_MPIEXEC")
    if m and os.path.isfile(m):
        return m
    return shutil.which("mpirun") or shutil.which("mpiexec")


def mpi_env(tmpdir):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", WEFT_EMU_TIMING="1", TMPDIR=str(tmpdir))
    # sanitizer builds: what Open MPI keeps at exit is its own (tests/sync/lsan.supp)
    env.update(OMPI_MCA_mca_base_component_disable_dlclose="1",
               PMIX_MCA_mca_base_component_disable_dlclose="1")
    supp = HERE.parent / "sync" / "lsan.supp"
    for var, opt in (("ASAN_OPTIONS", "fast_unwind_on_malloc=0"),
                     ("LSAN_OPTIONS", f"suppressions={supp}")):
        env[var] = ":".join(x for x in (os.environ.get(var), opt) if x)
    return env


def files(d):
    return parallel_emu.files(Path(d))


def weft_lines(err):
    return [ln for ln in err.splitlines() if ln.startswith("weft emu: ")
            and " CPU " not in ln and not ln.startswith("weft emu: --mpi: ")]


class Job:
    def __init__(self, mpirun, tmp):
        self.mpirun = mpirun
        self.shadow_tmp = tmp / "shadow-tmp"
        self.shadow_tmp.mkdir()

    def run(self, n, extra, out, trace=None, local_root=None, env=None, args=None):
        """mpirun -n n weft emu --mpi [extra] ARGS -o out TRACE, or with
        local_root each rank given local_root/r<rank>/ovni (--local); the
        job's stdout in self.stdout."""
        shutil.rmtree(out, ignore_errors=True)
        cmd = [self.mpirun, "--oversubscribe", "--bind-to", "none", "-n", str(n)]
        weft = [WEFT, "emu", "--mpi"] + extra + (ARGS if args is None else args) + [
            "-o", str(out)]
        if local_root is None:
            cmd += weft + [str(trace)]
        else:
            q = " ".join("'" + a.replace("'", "'\\''") + "'" for a in weft + ["--local"])
            rank = "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}"
            cmd += ["sh", "-c", f"exec {q} '{local_root}'/r{rank}/ovni"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                           env=dict(mpi_env(self.shadow_tmp), **(env or {})))
        self.stdout = p.stdout.replace(str(out), "OUT")
        return p.returncode, p.stderr

    def no_shadow(self, what):
        left = sorted(os.listdir(self.shadow_tmp))
        check(left == [], f"{what}: shadow traces left in TMPDIR: {left}")


def spread(trace, root, n):
    """The looms of trace copied round-robin (name order) into root/rK/ovni;
    {loom dir name: K}."""
    shutil.rmtree(root, ignore_errors=True)
    where = {}
    for k in range(n):
        (root / f"r{k}" / "ovni").mkdir(parents=True)
    for i, loom in enumerate(sorted(p.name for p in trace.glob("loom.*"))):
        shutil.copytree(trace / loom, root / f"r{i % n}" / "ovni" / loom)
        where[loom] = i % n
    return where


def serial(trace, out, args=None, stdout=None):
    """The serial run (-j 1); its stdout (OUT for out) appended to the list
    stdout when given."""
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([WEFT, "emu", "-j", "1"] + (ARGS if args is None else args) +
                       ["-o", str(out), str(trace)], capture_output=True, text=True,
                       timeout=TIMEOUT)
    if stdout is not None:
        stdout.append(p.stdout.replace(str(out), "OUT"))
    return p.returncode, p.stderr


def corrupt(obs):
    """A clock going backwards in the middle of the stream (its 40th event's
    clock set below the first event's)."""
    data = bytearray(obs.read_bytes())
    at = 8
    for _ in range(40):  # 8-byte header; events: 12 bytes + payload (flags' low nibble)
        size = data[at] & 0x0F
        at += 12 + (size + 1 if size else 0)
    data[at + 4:at + 12] = (1).to_bytes(8, "little")
    obs.write_bytes(bytes(data))


def main():
    if not MPI_BIN.is_file():
        skip_or_fail(f"{MPI_BIN} not built (no MPI at build time)")
    mpirun = find_mpirun()
    if mpirun is None:
        skip_or_fail("mpirun not found")
    with tempfile.TemporaryDirectory(prefix="weft-mpi-test-") as td:
        tmp = Path(td)
        job = Job(mpirun, tmp)
        trace = tmp / "gen6" / "ovni"
        parallel_emu.gen_trace(str(trace), NLOOMS)
        rc, err = serial(trace, tmp / "serial")
        check((rc, err) == (0, ""), f"serial run: exit {rc}, {err!r}")
        ref = files(tmp / "serial")
        check(any(k.endswith(".prv") for k in ref) and "perfetto.pftrace" in ref,
              f"serial run wrote the .prv files and perfetto.pftrace: {sorted(ref)}")
        made = re.compile(r"^weft emu: --mpi: (\d+) ranks, (\d+) events in ", re.M)
        for n in (1, 2, 4):
            for local in (False, True):
                what = f"-n {n}" + (" --local" if local else "")
                out = tmp / f"out{n}{'l' if local else ''}"
                if local:
                    spread(trace, tmp / "local", n)
                    rc, err = job.run(n, [], out, local_root=tmp / "local")
                else:
                    rc, err = job.run(n, [], out, trace=trace)
                check(rc == 0, f"{what}: exit {rc}: {err!r}")
                check(weft_lines(err) == [], f"{what}: messages {weft_lines(err)}")
                m = made.search(err)
                check(m is not None and m.group(1) == str(n),
                      f"{what}: made by {n} ranks: {err!r}")
                got = files(out)
                check(sorted(got) == sorted(ref), f"{what}: files {sorted(got)}")
                for k in ref:
                    check(got.get(k) == ref[k], f"{what}: {k} differs from the serial run's")
                job.no_shadow(what)

        # the summary (without -q): rank 0 prints the serial run's, once, from
        # every rank's figures of its looms' rows; and -b (the breakdown: the
        # ranks' per-CPU values sorted by rank 0 after the merge) on a 4-loom
        # nosv case of the corpus, with the summary
        noq = [a for a in ARGS if a != "-q"]
        cases = [("summary", trace, noq)]
        c = parallel_emu.corpus()
        if c is not None and (c / "v3" / "suite-nosv-task-types" / "ovni").is_dir():
            cases.append(("-b", c / "v3" / "suite-nosv-task-types" / "ovni", ["-b"]))
        elif os.environ.get("CI") == "true":
            check(False, "the conformance corpus (suite-nosv-task-types) not found")
        # a window with -b (the breakdown's state at T0 set in rank 0's sorter
        # from the ranks' CPUs' values at T0; the default formats, Perfetto too)
        # and with the summary (its window line from every rank's parts)
        if len(cases) > 1:
            cases.append(("-b window summary", cases[1][1], ["-b", "--from", "10ms", "--to",
                                                             "40ms"]))
        for name, tr, args in cases:
            sout = []
            rc, err = serial(tr, tmp / "serial-s", args, sout)
            check(rc == 0 and ("-q" in args or sout[0].startswith("duration: ") and
                               "\nCPU " in sout[0]),
                  f"{name}: the serial run's summary: {rc} {err!r} {sout!r}")
            sref = files(tmp / "serial-s")
            check("window" not in name or "-q" in args or "\nwindow: " in sout[0],
                  f"{name}: the serial run's window line: {sout!r}")
            if name.startswith("-b window"):
                at0 = [ln for ln in sref.get("nosv-breakdown.prv", b"").splitlines()
                       if ln.startswith(b"2:") and ln.split(b":")[5] == b"0"]
                check(len(at0) >= 2, f"-b window: the breakdown's state at T0: {at0}")
            if name.startswith("-b"):
                check(any(k.endswith("-breakdown.prv") for k in sref) and
                      "perfetto.pftrace" in sref, f"-b: serial breakdown, Perfetto: {sorted(sref)}")
            for n in (1, 2, 4):
                for local in (False, True):
                    what = f"{name} -n {n}" + (" --local" if local else "")
                    out = tmp / "out-s"
                    if local:
                        spread(tr, tmp / "local-s", n)
                    rc, err = job.run(n, [], out, trace=tr, args=args,
                                      local_root=tmp / "local-s" if local else None)
                    m = made.search(err)
                    check(rc == 0 and m is not None and m.group(1) == str(n),
                          f"{what}: made by {n} ranks: {rc} {err!r}")
                    check(job.stdout == sout[0], f"{what}: stdout {job.stdout!r} vs the "
                          f"serial run's {sout[0]!r}")
                    check(files(out) == sref, f"{what}: the serial files")
                    job.no_shadow(what)

        # the collectives in rounds of at most 1000 bytes in all (as beyond 2 GiB)
        for local in (False, True):
            what = "rounds of 1000 bytes" + (" --local" if local else "")
            out = tmp / "out-rounds"
            if local:
                spread(trace, tmp / "local", 4)
            rc, err = job.run(4, [], out, trace=trace, local_root=tmp / "local" if local else None,
                              env={"WEFT_MPI_ROUND": "1000"})
            check(rc == 0 and made.search(err), f"{what}: made by the ranks: {rc} {err!r}")
            check(files(out) == ref, f"{what}: the serial files")

        # windows (--from/--to, -q): the ranks' rows' state at T0 merged by row by
        # rank 0; a 6-loom trace whose odd looms end early (with --local on 2 or
        # 4 ranks, some ranks have no event after T0: they write their state at
        # T0 after their last event, as another rank found one)
        uneven = tmp / "uneven" / "ovni"
        parallel_emu.gen_trace(str(uneven), NLOOMS, uneven=True)
        pv = ["--model", str(ZETA), "-q", "--paraver"]
        # two with Perfetto (the default formats: the internal records of the
        # state at T0 merged by rank 0 in the serial run's order), two with the
        # summary (its window line put together by rank 0 from every rank's
        # parts, as -j's from its workers: the events before T0 summed, reading
        # stopped when a rank met an event after T1, the span to the last event
        # over every rank), the second stopping after T1
        noq = ["--model", str(ZETA)]
        wins = [(pv, ["--from", "1200000", "--to", "1300000"]), (noq, ["--from", "1200000"]),
                (noq + ["--paraver"], ["--to", "1300000"]),
                (ARGS, ["--from", "1050000", "--to", "1100000"])]
        stopped = 0
        for fmt, win in wins:
            sout = []
            rc, err = serial(uneven, tmp / "serial-w", fmt + win, sout)
            wref = files(tmp / "serial-w")
            check(rc == 0 and any(k.endswith(".prv") for k in wref) and
                  ("--paraver" in fmt or "perfetto.pftrace" in wref) and
                  ("-q" in fmt or "\nwindow: " in sout[0]),
                  f"window {win}: serial: {rc} {err!r} {sout!r}")
            stopped += "\nthe run stopped at the first event after the window" in sout[0]
            for n in (1, 2, 4):
                for local in (False, True):
                    what = (f"window {' '.join(fmt[2:] + win)} -n {n}" +
                            (" --local" if local else ""))
                    out = tmp / "out-w"
                    if local:
                        spread(uneven, tmp / "local-w", n)
                    rc, err = job.run(n, [], out, trace=uneven, args=fmt + win,
                                      local_root=tmp / "local-w" if local else None)
                    m = made.search(err)
                    check(rc == 0 and m is not None and m.group(1) == str(n),
                          f"{what}: made by {n} ranks: {rc} {err!r}")
                    check(files(out) == wref, f"{what}: the serial files")
                    check(job.stdout == sout[0], f"{what}: stdout {job.stdout!r} vs the "
                          f"serial run's {sout[0]!r}")
                    job.no_shadow(what)
        check(stopped == 1, f"windows: {stopped} serial runs stopped after T1, not 1")
        # a window that holds nothing: rank 0's serial run refuses it (its message)
        rc, err = serial(uneven, tmp / "serial-w", pv + ["--from", "5000000"])
        check(rc == 1 and err.startswith("weft emu: --from 5000000 ") and
              err.endswith("the window holds nothing\n"), f"empty window: serial {rc} {err!r}")
        rc2, err2 = job.run(2, [], tmp / "out-w0", trace=uneven, args=pv + ["--from", "5000000"])
        check((rc2, weft_lines(err2)) == (1, ["weft emu: rank 0: " + err.strip()[10:]]) and
              "--mpi: serial run on rank 0 (a window that holds nothing)\n" in err2,
              f"empty window: {rc2} {err2!r}")
        check(not (tmp / "out-w0").exists() or not any((tmp / "out-w0").iterdir()),
              "empty window: nothing written (the directory made, empty, as serially)")

        # events of every loom at the same clocks: serial order unknown to the ranks
        ties = tmp / "ties" / "ovni"
        parallel_emu.gen_trace(str(ties), NLOOMS, ties=True)
        serial(ties, tmp / "serial-ties")
        ref_ties = files(tmp / "serial-ties")
        rc, err = job.run(4, [], tmp / "out-ties", trace=ties)
        check(rc == 0, f"ties: exit {rc}: {err!r}")
        check(re.search(r"^weft emu: --mpi: serial run on rank 0 \((events of two streams at "
                        r"one clock|records of two ranks at one time)\)$", err, re.M),
              f"ties: rank 0 made the serial run: {err!r}")
        check(files(tmp / "out-ties") == ref_ties, "ties: the serial files")
        spread(ties, tmp / "local-ties", 2)
        rc, err = job.run(2, [], tmp / "out-ties-l", local_root=tmp / "local-ties")
        lines = weft_lines(err)
        check(rc == 1 and len(lines) == 1 and re.fullmatch(
            r"weft emu: rank \d: the ranks cannot emulate this trace apart as the serial run "
            r"would \((events of two streams at one clock|records of two ranks at one "
            r"time)\): emulate the whole trace with weft emu", lines[0]),
            f"ties --local: refused: exit {rc}, {lines}")
        check(not (tmp / "out-ties-l").exists(), "ties --local: nothing written")
        job.no_shadow("ties --local")

        # clock offsets with drift (sync_drift's two hosts), the file in rank 0's
        # directory only: the ranks' clocks are corrected as the serial run's
        sys.path.insert(0, str(HERE.parent / "sync"))
        import drift_read
        drift = tmp / "drift" / "ovni"
        drift_read.build(str(drift))
        drift_read.write_offsets(str(drift), drift_read.TABLE + drift_read.DRIFT)
        serial(drift, tmp / "serial-drift")
        ref_drift = files(tmp / "serial-drift")
        check(any(k.endswith(".prv") for k in ref_drift), "drift: serial files")
        spread(drift, tmp / "local-drift", 2)
        shutil.copy(drift / "clock-offsets.txt", tmp / "local-drift" / "r0" / "ovni")
        rc, err = job.run(2, [], tmp / "out-drift", local_root=tmp / "local-drift")
        check(rc == 0 and made.search(err), f"drift --local: made by the ranks: {rc} {err!r}")
        check(files(tmp / "out-drift") == ref_drift, "drift --local: the serial files")
        job.no_shadow("drift --local")

        # --local: rank 0 must find a loom (it writes the catalogue it emulates)
        spread(trace, tmp / "local-none", 1)
        (tmp / "local-none" / "r0").rename(tmp / "local-none" / "r1")
        (tmp / "local-none" / "r0" / "ovni").mkdir(parents=True)
        rc, err = job.run(2, [], tmp / "out-none", local_root=tmp / "local-none")
        want = (f"weft emu: rank 0: {tmp / 'local-none' / 'r0' / 'ovni'}: rank 0 finds no loom "
                "there: it writes the outputs, and emulates a share to know their catalogue")
        check((rc, weft_lines(err)) == (1, [want]), f"rank 0 without a loom: {rc} {err!r}")
        check(not (tmp / "out-none").exists(), "rank 0 without a loom: nothing written")
        job.no_shadow("rank 0 without a loom")

        # a corrupted stream
        bad = tmp / "bad" / "ovni"
        shutil.copytree(trace, bad)
        obs = sorted(bad.glob("loom.node03/proc.*/thread.*/stream.obs"))[0]
        corrupt(obs)
        rc, err = serial(bad, tmp / "serial-bad")
        check(rc == 1 and err.startswith("weft emu: ") and "clock goes backwards" in err,
              f"corrupted: the serial run refuses it: {err!r}")
        msg = err.strip()[len("weft emu: "):]
        rc, err2 = job.run(4, [], tmp / "out-bad", trace=bad)
        lines = weft_lines(err2)
        check(rc == 1, f"corrupted, shared: exit {rc}")
        check(len(lines) == 1 and re.fullmatch(r"weft emu: rank \d: " + re.escape(msg),
                                               lines[0] if lines else ""),
              f"corrupted, shared: one line with the stream's message: {lines}")
        check(not (tmp / "out-bad").exists(), "corrupted, shared: nothing written")
        where = spread(bad, tmp / "local-bad", 4)
        k = where["loom.node03"]
        rc, err2 = job.run(4, [], tmp / "out-bad-l", local_root=tmp / "local-bad")
        lines = weft_lines(err2)
        want = f"weft emu: rank {k}: " + msg.replace(str(bad), str(tmp / "local-bad" / f"r{k}"
                                                                    / "ovni"))
        check(rc == 1, f"corrupted, --local: exit {rc}")
        check(lines == [want], f"corrupted, --local: {lines} vs {[want]}")
        check(not (tmp / "out-bad-l").exists(), "corrupted, --local: nothing written")
        job.no_shadow("corrupted --local")
    print(f"{nchecks} checks, {len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
