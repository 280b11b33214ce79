#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""atomic_emu.py - a failed `weft emu` or `weft sql -o` loses nothing, and no output
is written through a link (docs/emu.md, "How the files are written"; docs/sql.md).

On traces written by the test (cli_emu.rounds_trace; no corpus):
  - `weft emu` (Paraver and Perfetto, into the trace directory) and `weft sql -o DB`
    succeed; every file of the directory is hashed (its names listed);
  - then runs fail in four ways, each with its exact stderr line and exit status,
    and afterwards every file is byte-identical and no other name is there (no
    temporary `.NAME.weft-XXXXXX`, no `DB.weft-sql-XXXXXX`):
      a refused event (a trace with OHp before OHx, emulated into the same
      directory / into DB), a window past the end (--from 5s), RLIMIT_FSIZE hit
      (64 KiB, SIGXFSZ ignored: EFBIG), and SIGINT sent while the run writes
      (once its temporaries exist: exit 130; SIGTERM: 143);
  - a `thread.prv` symbolic link in a trace directory is refused (weft emu and its
    ovniemu name), its target untouched; `weft sql -o` onto a FIFO, a symbolic link
    and a directory is refused, each left as it was.
Every subprocess has a timeout.
"""
import hashlib
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, str(Path(__file__).resolve().parent))
from cli_emu import ev, ohx, rounds_trace, write_thread  # noqa: E402

WEFT = os.environ["WEFT_BIN"]
TIMEOUT = 120
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}")
    return cond


def weft(*args, limit=None):
    def pre():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([WEFT, *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT, preexec_fn=pre if limit else None)


def snapshot(*paths):
    """{path: sha256} of every file under paths (a file or a directory), and
    the names of everything there (links and directories too)."""
    out = {}
    for p in paths:
        p = Path(p)
        items = [p] + (sorted(p.rglob("*")) if p.is_dir() and not p.is_symlink() else [])
        for x in items:
            if x.is_symlink():
                out[str(x)] = "link -> " + os.readlink(x)
            elif x.is_file():
                out[str(x)] = hashlib.sha256(x.read_bytes()).hexdigest()
            else:
                out[str(x)] = "dir" if x.is_dir() else "other"
    return out


def same(before, after, what):
    if before == after:
        return True
    extra = sorted(set(after) - set(before))
    gone = sorted(set(before) - set(after))
    changed = sorted(k for k in before if k in after and before[k] != after[k])
    return check(False, f"{what}: files changed: new {extra}, gone {gone}, changed {changed}")


def interrupt(args, ready, what, sig=signal.SIGINT):
    """Runs weft with args, sends sig once ready() is true (the run's
    temporaries exist), returns the finished process (stderr as text)."""
    p = subprocess.Popen([WEFT, *map(str, args)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    seen = False
    end = time.monotonic() + TIMEOUT
    while time.monotonic() < end and p.poll() is None:
        if ready():
            seen = True
            p.send_signal(sig)
            break
        time.sleep(0.002)
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    check(seen, f"{what}: the run ended before its temporaries were seen (exit {p.returncode})")
    p.stderr_text = err
    return p


def main():
    with tempfile.TemporaryDirectory(prefix="weft-emu-atomic-") as tmp:
        tmp = Path(tmp)
        good = tmp / "good"
        rounds_trace(good, 2000, flush=True)
        bad = tmp / "bad"
        write_thread(bad, 1, 1, [ev("OHp", 100), ohx(0, 110), ev("OHe", 120)])
        refusal = ("loom.vm/proc.1/thread.1: event OHp at clock 100 (offset 8): thread TH 1.1 "
                   "is Unknown, but OHp (pause) needs it Running or Cooling\n")
        db = tmp / "db" / "timeline.sqlite"
        db.parent.mkdir()

        # ---- the earlier outputs ----
        p = weft("emu", "-q", good)
        check(p.returncode == 0 and p.stderr == "", f"emu: exit {p.returncode}: {p.stderr!r}")
        p = weft("sql", good, "-o", db)
        check(p.returncode == 0 and p.stderr == "", f"sql: exit {p.returncode}: {p.stderr!r}")
        names = sorted(x.name for x in good.iterdir())
        check(names == ["cfg", "cpu.pcf", "cpu.prv", "cpu.row", "loom.vm", "perfetto.pftrace",
                        "thread.pcf", "thread.prv", "thread.row"], f"emu wrote {names}")
        check(sorted(x.name for x in db.parent.iterdir()) == [db.name], "sql -o: one file")
        before = snapshot(good, db.parent)

        # ---- a refused event ----
        p = weft("emu", "-q", "-o", good, bad)
        check(p.returncode == 1 and p.stderr == "weft emu: " + refusal,
              f"emu refused: exit {p.returncode}: {p.stderr!r}")
        same(before, snapshot(good, db.parent), "emu refused")
        p = weft("sql", bad, "-o", db)
        check(p.returncode == 1 and p.stderr == "weft sql: " + refusal,
              f"sql refused: exit {p.returncode}: {p.stderr!r}")
        same(before, snapshot(good, db.parent), "sql refused")

        # ---- a window past the end (the run of issue 20: the files were truncated) ----
        p = weft("emu", "-q", "--from", "5s", good)
        check(p.returncode == 1 and p.stderr == "weft emu: --from 5s is at or after the last "
              "event of the trace (20001 ns into the run); the window holds nothing\n",
              f"emu --from 5s: exit {p.returncode}: {p.stderr!r}")
        same(before, snapshot(good, db.parent), "emu --from 5s")

        # ---- RLIMIT_FSIZE (SIGXFSZ ignored): EFBIG ----
        lim = 64 << 10
        p = weft("emu", "-q", "--perfetto", good, limit=lim)
        check(p.returncode == 1 and p.stderr == f"weft emu: cannot write {good}/perfetto.pftrace: "
              "File too large\n", f"emu --perfetto RLIMIT_FSIZE: exit {p.returncode}: {p.stderr!r}")
        same(before, snapshot(good, db.parent), "emu --perfetto RLIMIT_FSIZE")
        p = weft("emu", "-q", good, limit=lim)
        # the writer thread and the emulation write both .prv files: either is first
        check(p.returncode == 1 and p.stderr in (
              f"weft emu: cannot write {good}/{f}: File too large\n"
              for f in ("thread.prv", "cpu.prv")),
              f"emu RLIMIT_FSIZE: exit {p.returncode}: {p.stderr!r}")
        same(before, snapshot(good, db.parent), "emu RLIMIT_FSIZE")
        p = weft("sql", good, "-o", db, limit=lim)
        check(p.returncode == 1 and p.stderr.startswith(f"weft sql: {db}: cannot write ")
              and p.stderr.endswith(": disk I/O error (a write failed: no space left on the "
                                    "device, or the file size limit reached)\n"),
              f"sql RLIMIT_FSIZE: exit {p.returncode}: {p.stderr!r}")
        same(before, snapshot(good, db.parent), "sql RLIMIT_FSIZE")

        # ---- SIGINT while the outputs are written ----
        big = tmp / "big"
        rounds_trace(big, 150000, flush=True)  # ~900 000 events
        p = weft("emu", "-q", big)
        check(p.returncode == 0, f"emu big: exit {p.returncode}: {p.stderr!r}")
        big_before = snapshot(big, db.parent)
        p = interrupt(["emu", "-q", big], lambda: any(
            x.name.startswith(".thread.prv.weft-") for x in big.iterdir()), "emu SIGINT")
        check(p.returncode == 130 and p.stderr_text == "weft emu: interrupted by SIGINT; nothing "
              "written (the files of an earlier run are left as they were)\n",
              f"emu SIGINT: exit {p.returncode}: {p.stderr_text!r}")
        same(big_before, snapshot(big, db.parent), "emu SIGINT")
        p = interrupt(["emu", "-q", "--perfetto", big], lambda: any(
            x.name.startswith(".perfetto.pftrace.weft-") for x in big.iterdir()), "emu SIGTERM",
            signal.SIGTERM)
        check(p.returncode == 143 and p.stderr_text == "weft emu: interrupted by SIGTERM; "
              "nothing written (the files of an earlier run are left as they were)\n",
              f"emu SIGTERM: exit {p.returncode}: {p.stderr_text!r}")
        same(big_before, snapshot(big, db.parent), "emu SIGTERM")

        def sql_tmp():
            return any(t.name.startswith(".timeline.db.weft-")
                       for d in db.parent.glob(db.name + ".weft-sql-*") for t in d.iterdir())
        p = interrupt(["sql", big, "-o", db], sql_tmp, "sql SIGINT")
        check(p.returncode == 130 and p.stderr_text == "weft sql: interrupted by SIGINT; nothing "
              "written\n", f"sql SIGINT: exit {p.returncode}: {p.stderr_text!r}")
        same(big_before, snapshot(big, db.parent), "sql SIGINT")
        same(before, snapshot(good, db.parent), "after all the failures")

        # ---- links and other files are never written through or replaced ----
        victim = tmp / "victim"
        victim.write_bytes(b"not a timeline\n")
        lnk = tmp / "lnk"
        write_thread(lnk, 1, 1, [ohx(0, 100), ev("OHe", 120)])
        (lnk / "thread.prv").symlink_to(victim)
        lnk_before = snapshot(lnk, victim)
        ovniemu = Path(WEFT).parent / "ovniemu"
        for cmd in [["emu", "-q"], ["emu", "--perfetto", "-q"]] + (
                [[str(ovniemu)]] if ovniemu.exists() else []):
            if cmd == [str(ovniemu)]:
                p = subprocess.run([str(ovniemu), str(lnk)], capture_output=True, text=True,
                                   timeout=TIMEOUT)
            else:
                p = weft(*cmd, lnk)
            want = (f"weft emu: {lnk}/thread.prv: is a symbolic link: not replaced (weft "
                    "replaces only regular files)\n")
            if cmd == ["emu", "--perfetto", "-q"]:
                check(p.returncode == 0, f"--perfetto ignores thread.prv: {p.stderr!r}")
                (lnk / "perfetto.pftrace").unlink()
            else:
                check(p.returncode == 1 and p.stderr == want,
                      f"{cmd} thread.prv link: exit {p.returncode}: {p.stderr!r}")
            same(lnk_before, snapshot(lnk, victim), f"{cmd} thread.prv link")

        fifo = tmp / "fifo"
        os.mkfifo(fifo)
        slink = tmp / "db-link"
        slink.symlink_to(victim)
        adir = tmp / "adir"
        adir.mkdir()
        def around():
            return snapshot(fifo, slink, adir, victim), sorted(x.name for x in tmp.iterdir())
        for target, kind in ((fifo, "a FIFO"), (slink, "a symbolic link"), (adir, "a directory")):
            t_before = around()
            p = weft("sql", good, "-o", target)
            check(p.returncode == 1 and p.stderr == f"weft sql: {target}: is {kind}: not "
                  "replaced (weft replaces only regular files)\n",
                  f"sql -o {kind}: exit {p.returncode}: {p.stderr!r}")
            check(os.path.islink(slink) and Path(fifo).is_fifo() and adir.is_dir(),
                  f"sql -o {kind}: the targets are what they were")
            check(t_before == around(), f"sql -o {kind}: files changed: {around()}")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
