#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""format_params.py - weft emu -f FORMAT[:KEY=VALUE,...]: the output formats
and their parameters, from the registry (src/out/out.c), on a small trace written
here (one thread; three rounds of a mark pushed, a pause, a resume, the mark
popped: cli_emu.rounds_trace).

Checks:
  - -f paraver / -f perfetto write exactly what --paraver / --perfetto write, and
    with no format both are written, as before;
  - paraver:aux=no writes thread.prv and cpu.prv only (byte-identical to the
    default's), no .pcf or .row;
  - perfetto:layer=raw is the default, byte for byte; layer=shown draws the mark
    from the thread view: one slice per Running stretch (three per round's pause
    cut), where the raw layer has one slice per round across the pause;
  - sqlite:file=NAME writes NAME (its interval table holds the thread state
    intervals) and no timeline.db;
  - bad -f values exit 2 with the exact message (did-you-mean for a misspelt
    format or key), and write nothing;
  - `weft emu --help` lists every format and parameter of the registry.
"""
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_emu import rounds_trace  # noqa: E402
from perfetto_models import decode, slices  # noqa: E402

WEFT = os.environ["WEFT_BIN"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}")


def emu(*args):
    return subprocess.run([WEFT, "emu", "-q", *map(str, args)], capture_output=True, text=True,
                          timeout=60)


def files(d):
    """Every regular file under d (cfg/ included) by its path relative to d."""
    d = Path(d)
    return ({str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()}
            if d.is_dir() else {})


def mark_slices(pftrace):
    """The slices (name, start, end) of the mark's track ("Round")."""
    tracks, events = decode(Path(pftrace).read_bytes())
    per, _, _ = slices(events)
    uu = [u for u, t in tracks.items() if t["name"] == "Round"]
    check(len(uu) == 1, f"one Round track in {pftrace}: {uu}")
    return [(n, s, e) for n, s, e, _ in per.get(uu[0], [])] if uu else []


def main():
    with tempfile.TemporaryDirectory(prefix="weft-emu-fmt-") as tmp:
        tmp = Path(tmp)
        tr = tmp / "t"
        rounds_trace(tr, 3)
        runs = {
            "both": [],
            "paraver": ["--paraver"], "f-paraver": ["-f", "paraver"],
            "perfetto": ["--perfetto"], "f-perfetto": ["-f", "perfetto"],
            "raw": ["-f", "perfetto:layer=raw"], "shown": ["--format=perfetto:layer=shown"],
            "noaux": ["-f", "paraver:aux=no"], "aux": ["-f", "paraver:aux=yes"],
            "db": ["-f", "sqlite:file=my.db"],
        }
        out = {}
        for name, args in runs.items():
            p = emu(*args, "-o", tmp / name, tr)
            check((p.returncode, p.stderr) == (0, ""), f"{name}: exit {p.returncode}: {p.stderr}")
            out[name] = files(tmp / name)
        paraver = {f"{v}.{x}" for v in ("thread", "cpu") for x in ("prv", "pcf", "row")}
        check({f for f in out["paraver"] if not f.startswith("cfg/")} == paraver,
              f"--paraver files: {sorted(out['paraver'])}")
        check("cfg/thread/ovni.thread.state.cfg" in out["paraver"],
              "--paraver: the view files of cfg/ too")
        check(out["f-paraver"] == out["paraver"] == out["aux"], "-f paraver = --paraver = aux=yes")
        check(set(out["perfetto"]) == {"perfetto.pftrace"}, "--perfetto: perfetto.pftrace only")
        check(out["f-perfetto"] == out["perfetto"] == out["raw"],
              "-f perfetto = --perfetto = layer=raw")
        check(out["both"] == {**out["paraver"], **out["perfetto"]}, "no format: both, as before")
        check(set(out["noaux"]) == {"thread.prv", "cpu.prv"}, f"aux=no: {sorted(out['noaux'])}")
        check(all(out["noaux"][f] == out["paraver"][f] for f in out["noaux"]),
              "aux=no: the .prv files as with aux=yes")
        # the raw layer: one slice per round across its pause (1 to 6 ns after
        # the round's start); the shown one: the mark while the thread runs
        raw = mark_slices(tmp / "raw" / "perfetto.pftrace")
        check(raw == [("1", 10 * k + 1, 10 * k + 6) for k in range(3)], f"raw slices: {raw}")
        shown = mark_slices(tmp / "shown" / "perfetto.pftrace")
        want = [("1", 10 * k + d0, 10 * k + d1) for k in range(3) for d0, d1 in ((1, 2), (5, 6))]
        check(shown == want,
              f"shown slices: {shown}")
        check(set(out["db"]) == {"my.db"}, f"sqlite:file=my.db: {sorted(out['db'])}")
        if "my.db" in out["db"]:
            con = sqlite3.connect(tmp / "db" / "my.db")
            n = con.execute("SELECT count(*) FROM interval i JOIN channel c ON "
                            "i.channel = c.id WHERE c.name = 'ovni.thread.state'").fetchone()[0]
            con.close()
            check(n == 7, f"my.db: {n} thread state intervals (want 7: Running and "
                  "Paused of each round, then Running to the end)")

        # errors: exit 2, the exact message, nothing written
        def err(what):
            return f"weft emu: {what}; run `weft emu --help`\n"
        bad = [
            (["-f", "paravr"], "unknown output format 'paravr' for -f (did you mean 'paraver'?)"),
            (["--format", "json"], "unknown output format 'json' for --format"),
            (["-f", "paraver:axu=no"],
             "unknown parameter 'axu' of format 'paraver' (did you mean 'aux'?)"),
            (["-f", "sqlite:colour=red"], "unknown parameter 'colour' of format 'sqlite' (it "
             "takes file)"),
            (["-f", "paraver:aux=maybe"],
             "parameter 'aux' of format 'paraver' takes yes or no, not 'maybe'"),
            (["-f", "perfetto:layer=rae"],
             "parameter 'layer' of format 'perfetto' takes raw or shown, not 'rae'"),
            (["-f", "sqlite:file=a/b.db"], "parameter 'file' of format 'sqlite' takes a file "
             "name (no '/'; the file goes into the output directory), not 'a/b.db'"),
            (["-f", "paraver:aux"],
             "parameter 'aux' of format 'paraver' needs a value (aux=VALUE)"),
            (["-f", "paraver:aux=no,aux=yes"],
             "parameter 'aux' of format 'paraver' is given twice"),
            (["--paraver", "-f", "paraver:aux=no"],
             "output format 'paraver' given twice (-f once per format)"),
        ]
        for args, what in bad:
            d = tmp / "bad"
            p = emu(*args, "-o", d, tr)
            check((p.returncode, p.stdout, p.stderr) == (2, "", err(what)),
                  f"{args}: exit {p.returncode}: {p.stderr!r}")
            check(not d.exists(), f"{args}: nothing written")

        # --help: the registry's formats and parameters
        h = subprocess.run([WEFT, "emu", "--help"], capture_output=True, text=True,
                           timeout=60).stdout
        for line in ["  paraver       <view>.prv/.pcf/.row for each view (thread, cpu, breakdowns)",
                     "      aux=yes|no (default yes)",
                     "      layer=raw|shown (default raw)",
                     "      file=NAME (default timeline.db)"]:
            check(line + "\n" in h, f"--help lists {line.strip()!r}")
    print(f"format_params: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
