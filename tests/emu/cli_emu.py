#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cli_emu.py - `weft emu` on small traces written by this test (no corpus needed).

Checks:
  - mark types and labels are ordered as the reference orders them: types by first
    appearance over the threads in row order (JSON key order within a thread), labels
    by first appearance (facts note §8.1: thread 0 defines 5, thread 1 defines 3 and 5
    -> PCF blocks 105 then 103);
  - the records of that trace (exact thread.prv and cpu.prv lines);
  - --paraver alone writes no perfetto.pftrace, --perfetto alone no .prv;
  - a trace requiring nosv 2.7.0 is emulated; nosv 3.0.0 is refused, with nothing written;
  - an illegal sequence (OHp before OHx) exits 1 with the exact message and
    writes nothing (the output directory holds no file); with --partial the
    .prv files are still complete (header duration = the refused event's time);
  - usage errors exit 2, --help exits 0.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

WEFT = os.environ["WEFT_BIN"]


def ev(mcv, clock, payload=b""):
    flags = len(payload) - 1 if payload else 0
    return struct.pack("<B3sQ", flags, mcv.encode(), clock) + payload


def ohx(cpu, clock):
    return ev("OHx", clock, struct.pack("<iiQ", cpu, -1, 0))


def mark(mcv, value, mtype, clock):
    return ev(mcv, clock, struct.pack("<qi", value, mtype))


def write_thread(root, pid, tid, events, mark_meta=None, require=None):
    d = Path(root) / "loom.vm" / f"proc.{pid}" / f"thread.{tid}"
    d.mkdir(parents=True)
    meta = {"version": 3, "ovni": {
        "lib": {"version": "1.14.0", "commit": "test"}, "part": "thread", "tid": tid, "pid": pid,
        "loom": "vm", "app_id": 1, "require": require or {"ovni": "1.1.0"},
        "loom_cpus": [{"index": 0, "phyid": 0}], "finished": 1}}
    if mark_meta is not None:
        meta["ovni"]["mark"] = mark_meta
    (d / "stream.json").write_text(json.dumps(meta))
    (d / "stream.obs").write_bytes(b"ovni" + struct.pack("<I", 1) + b"".join(events))


def rounds_trace(root, k, flush=False):
    """One thread: OHx, then k rounds of 10 ns (a mark pushed, a pause, with a
    flush in it when `flush`, a resume, the mark popped), then OHe. Returns
    the run's duration (ns from the first event)."""
    evs, clock = [ohx(0, 1000)], 1000
    for _ in range(k):
        evs.append(mark("OM[", 1, 1, clock + 1))
        evs.append(ev("OHp", clock + 2))
        if flush:
            evs.append(ev("OF[", clock + 3))
            evs.append(ev("OF]", clock + 4))
        evs.append(ev("OHr", clock + 5))
        evs.append(mark("OM]", 1, 1, clock + 6))
        clock += 10
    evs.append(ev("OHe", clock + 1))
    write_thread(root, 1, 1, evs,
                 mark_meta={"1": {"title": "Round", "chan_type": "stack"}})
    return clock + 1 - 1000


def run(*args):
    return subprocess.run([WEFT, "emu", *map(str, args)], capture_output=True, text=True)


failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}")


def main():
    with tempfile.TemporaryDirectory(prefix="weft-emu-cli-") as tmp:
        tmp = Path(tmp)
        # ---- mark order ----
        tr = tmp / "order"
        write_thread(tr, 1, 1, [ohx(0, 100), mark("OM=", 2, 5, 110), ev("OHe", 120)],
                     {"5": {"title": "Five", "chan_type": "single",
                            "labels": {"2": "two", "1": "one"}}})
        write_thread(tr, 1, 2, [ohx(-1, 105), mark("OM[", 7, 3, 115), ev("OHe", 125)],
                     {"3": {"title": "Three", "chan_type": "stack"},
                      "5": {"title": "Five", "chan_type": "single", "labels": {"3": "three"}}})
        out = tmp / "order-out"
        p = run("--paraver", "-q", "-o", out, tr)
        check(p.returncode == 0, f"order: exit {p.returncode}: {p.stderr}")
        pcf = (out / "thread.pcf").read_text()
        i105, i103 = pcf.find("0 105        Five"), pcf.find("0 103        Three")
        check(0 < i105 < i103, "order: PCF block 105 must come before 103")
        check("VALUES\n2    two\n1    one\n3    three\n" in pcf, "order: labels in first-seen order")
        cpcf = (out / "cpu.pcf").read_text()
        check(0 < cpcf.find("0 105") < cpcf.find("0 103"), "order: cpu.pcf 105 before 103")
        want_thread = """2:0:1:1:1:0:6:1
2:0:1:1:1:0:4:1
2:0:1:1:1:0:2:1
2:0:1:1:1:0:105:0
2:0:1:1:1:0:103:0
2:0:1:1:2:5:6:2
2:0:1:1:2:5:4:1
2:0:1:1:2:5:2:2
2:0:1:1:2:5:105:0
2:0:1:1:2:5:103:0
2:0:1:1:1:10:105:2
2:0:1:1:2:15:103:7
2:0:1:1:1:20:4:3
2:0:1:1:1:20:2:0
2:0:1:1:1:20:6:0
2:0:1:1:1:20:105:0
2:0:1:1:2:25:4:3
2:0:1:1:2:25:2:0
2:0:1:1:2:25:6:0
2:0:1:1:2:25:103:0
"""
        got = (out / "thread.prv").read_text()
        check(got == "#Paraver (19/01/38 at 03:14):00000000000000000025_ns:0:1:1(2:1)\n"
              + want_thread, f"order: thread.prv\n{got}")
        want_cpu = """2:0:1:1:1:0:2:1
2:0:1:1:1:0:1:1
2:0:1:1:1:0:3:1
2:0:1:1:1:0:7:0
2:0:1:1:1:0:105:0
2:0:1:1:1:0:103:0
2:0:1:1:2:5:2:2
2:0:1:1:2:5:1:1
2:0:1:1:2:5:3:1
2:0:1:1:2:5:7:0
2:0:1:1:2:5:105:0
2:0:1:1:2:5:103:0
2:0:1:1:1:10:105:2
2:0:1:1:2:15:103:7
2:0:1:1:1:20:2:0
2:0:1:1:1:20:1:0
2:0:1:1:1:20:3:0
2:0:1:1:1:20:105:0
2:0:1:1:2:25:2:0
2:0:1:1:2:25:1:0
2:0:1:1:2:25:3:0
2:0:1:1:2:25:103:0
"""
        got = (out / "cpu.prv").read_text()
        check(got == "#Paraver (19/01/38 at 03:14):00000000000000000025_ns:0:1:1(2:1)\n"
              + want_cpu, f"order: cpu.prv\n{got}")
        check(not (out / "perfetto.pftrace").exists(), "--paraver alone wrote perfetto.pftrace")
        out2 = tmp / "order-pf"
        p = run("--perfetto", "-q", "-o", out2, tr)
        check(p.returncode == 0 and (out2 / "perfetto.pftrace").exists()
              and not (out2 / "thread.prv").exists(), "--perfetto alone")
        p = run("-o", tmp / "order-both", tr)
        check(p.returncode == 0 and "thread (time in ns)" in p.stdout
              and (tmp / "order-both" / "perfetto.pftrace").exists()
              and (tmp / "order-both" / "cpu.row").exists(), "no format flag: both + summary")

        # ---- a runtime model: accepted; a version weft does not provide: refused ----
        tr = tmp / "nosv"
        write_thread(tr, 1, 1, [ohx(0, 100), ev("OHe", 120)],
                     require={"ovni": "1.1.0", "nosv": "2.7.0"})
        p = run("-q", "--paraver", "-o", tmp / "nosv-ok", tr)
        check(p.returncode == 0 and p.stderr == "", f"nosv 2.7.0: exit {p.returncode}: {p.stderr!r}")
        check("16:100" in (tmp / "nosv-ok" / "thread.prv").read_text(),
              "nosv 2.7.0: the idle state is shown at OHx")
        tr = tmp / "nosv3"
        write_thread(tr, 1, 1, [ohx(0, 100), ev("OHe", 120)],
                     require={"ovni": "1.1.0", "nosv": "3.0.0"})
        p = run("-q", "-o", tmp / "nosv-out", tr)
        check(p.returncode == 1 and p.stderr == "weft emu: loom.vm/proc.1/thread.1: unsupported "
              "nosv model version (want 3.0.0, have 2.7.0)\n",
              f"nosv 3.0.0: exit {p.returncode}: {p.stderr!r}")
        check(not (tmp / "nosv-out").exists(), "nosv 3.0.0: nothing must be written")

        # ---- where the timelines go: -o '' is a usage error; a trace directory
        # that cannot be written suggests -o DIR ----
        tr = tmp / "ro"
        write_thread(tr, 1, 1, [ohx(0, 100), ev("OHe", 120)])
        p = run("-o", "", tr)
        check(p.returncode == 2 and p.stderr == "weft emu: -o needs a directory, not an empty "
              "name; run `weft emu --help`\n", f"-o '': exit {p.returncode}: {p.stderr!r}")
        tmp.chmod(0o755)  # nobody (below) reaches the trace
        for d in [tr, *tr.rglob("*")]:
            if d.is_dir():
                d.chmod(0o555)
        cmd = [WEFT, "emu", "-q", str(tr)]
        if os.geteuid() == 0:  # root writes anywhere: run as nobody
            cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 1 and p.stderr == f"weft emu: {tr}: cannot write the timelines "
              "into the trace directory (Permission denied); give a directory to write them "
              "into with -o DIR\n", f"read-only trace: exit {p.returncode}: {p.stderr!r}")
        for d in [tr, *tr.rglob("*")]:
            if d.is_dir():
                d.chmod(0o755)

        # ---- illegal sequence ----
        tr = tmp / "bad"
        write_thread(tr, 1, 1, [ev("OHp", 100), ohx(0, 110), ev("OHe", 120)])
        for lint in ([], ["--lint"]):
            out = tmp / ("bad-out" + ("-lint" if lint else ""))
            p = run(*lint, "--paraver", "-q", "-o", out, tr)
            check(p.returncode == 1 and p.stderr == "weft emu: loom.vm/proc.1/thread.1: event OHp "
                  "at clock 100 (offset 8): thread TH 1.1 is Unknown, but OHp (pause) needs it "
                  "Running or Cooling\n", f"bad {lint}: exit {p.returncode}: {p.stderr!r}")
            check(sorted(out.iterdir()) == [], f"bad {lint}: nothing written: "
                  f"{sorted(x.name for x in out.iterdir())}")
            p = run(*lint, "--paraver", "--partial", "-q", "-o", out, tr)
            check(p.returncode == 1 and p.stderr.startswith("weft emu: loom.vm/proc.1/thread.1: "
                  "event OHp at clock 100"), f"bad --partial: exit {p.returncode}: {p.stderr!r}")
            check((out / "thread.prv").read_text() == "#Paraver (19/01/38 at 03:14):"
                  "00000000000000000000_ns:0:1:1(1:1)\n", "bad: thread.prv must be the header")
            check((out / "cpu.row").exists(), "bad: the .row files are still written")

        # ---- a refusal in the middle, --partial: earlier records kept, none of the
        # refused event ----
        tr = tmp / "mid"
        write_thread(tr, 1, 1, [ohx(0, 100), ev("OHc", 110), ohx(0, 120), ev("OHe", 130)])
        out = tmp / "mid-out"
        p = run("--paraver", "-q", "-o", out, tr)
        check(p.returncode == 1 and p.stderr == "weft emu: loom.vm/proc.1/thread.1: event OHx at "
              "clock 120 (offset 48): thread TH 1.1 is Cooling and already has CPU 0.0\n",
              f"mid: exit {p.returncode}: {p.stderr!r}")
        check(sorted(out.iterdir()) == [], "mid: nothing written without --partial")
        p = run("--paraver", "--partial", "-q", "-o", out, tr)
        check(p.returncode == 1 and p.stderr == "weft emu: loom.vm/proc.1/thread.1: event OHx at "
              "clock 120 (offset 48): thread TH 1.1 is Cooling and already has CPU 0.0\n",
              f"mid --partial: exit {p.returncode}: {p.stderr!r}")
        hdr = "#Paraver (19/01/38 at 03:14):00000000000000000020_ns:0:1:1({}:1)\n"
        got = (out / "thread.prv").read_text()
        check(got == hdr.format(1) + "2:0:1:1:1:0:6:1\n2:0:1:1:1:0:4:1\n2:0:1:1:1:0:2:1\n"
              "2:0:1:1:1:10:4:4\n", f"mid: thread.prv\n{got}")
        got = (out / "cpu.prv").read_text()
        check(got == hdr.format(2) + "2:0:1:1:1:0:2:1\n2:0:1:1:1:0:1:1\n2:0:1:1:1:0:3:1\n"
              "2:0:1:1:1:0:7:0\n2:0:1:1:1:10:2:0\n2:0:1:1:1:10:1:0\n2:0:1:1:1:10:3:0\n",
              f"mid: cpu.prv\n{got}")

        # ---- usage ----
        check(run().returncode == 2, "no PATH: exit 2")
        check(run("--nope", tmp).returncode == 2, "unknown option: exit 2")
        p = run("--help")
        check(p.returncode == 0 and p.stdout.startswith("Usage: weft emu"), "--help")
        p = run("-q", tmp / "does-not-exist")
        check(p.returncode == 1 and p.stderr.startswith("weft emu: "), "missing trace: exit 1")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
