#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""progress.py - the progress line of every command (docs/cli.md), read
through a pseudo-terminal on stderr:

  - `weft emu` on a generated trace that takes over a second:
    every frame is "\\r" + "weft CMD: P% (D MB of 72.0 MB), R M events/s,
    N s left" + "\\033[K" (the total: the .obs sizes), and one newline ends it;
  - `weft sql`: the same line through the emulation (which writes every
    table), then "committing the database, N s" while the last intervals
    are written and the database committed (when that takes over a second);
  - a warning printed while the line is shown (a second stream cut short,
    --salvage) clears the line first, stands on its own line, and the line
    is drawn again after it;
  - stderr not a terminal: nothing of it (emu, dump, sql), only the warning.
(`weft dump` shares the line's code; with stdout discarded it reads the trace
in under a second, so its line is not looked at here.)
Every subprocess has a timeout; the temporary directory is removed.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
sys.dont_write_bytecode = True  # keep the source tree clean
from tracegen import ev, meta, thread_rel, write_stream  # noqa: E402
from wefttest import Checker, run_pty, weft_bin  # noqa: E402

TIMEOUT = 300
CPUS = ((0, 0), (1, 1))


def big_trace(root, n, cut):
    """One thread of n flush events (12 bytes each, equal clocks: the trace
    is written at once); with cut, a second thread on CPU 1 whose stream
    ends with 3 bytes of an event, its events after all of the first's."""
    pair = ev("OF[", 1000) + ev("OF]", 1000)
    write_stream(root, thread_rel("vm", 1, 1), meta(1, 1, cpus=CPUS),
                 [ev("OHx", 100, struct.pack("<iiQ", 0, -1, 0)), pair * (n // 2),
                  ev("OHe", 2000)])
    if cut:
        write_stream(root, thread_rel("vm", 1, 2), meta(2, 1, cpus=CPUS),
                     [ev("OHx", 1500, struct.pack("<iiQ", 1, -1, 0)), ev("OHe", 1600),
                      b"\x00OF"])


def tty_run(args, cwd):
    """Runs weft with stderr on a pseudo-terminal (stdout discarded); returns
    (exit code, the terminal's text, seconds)."""
    t0 = time.monotonic()
    # the line after 0.05 s and every 0.05 s (WEFT_PROGRESS_SECONDS): the
    # runs here are short in a Release build
    env = dict(os.environ, WEFT_PROGRESS_SECONDS="0.05")
    rc, _, term = run_pty(args, env=env, cwd=cwd, stdout=subprocess.DEVNULL, timeout=TIMEOUT)
    return rc, term, time.monotonic() - t0


def run_pipe(args, cwd):
    p = subprocess.run([weft_bin()] + args, cwd=cwd, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=TIMEOUT)
    return p.returncode, p.stderr.decode()


def frame_re(cmd, total):
    return (rf"\rweft {cmd}: (\d+)% \((\d+\.\d (?:kB|MB)) of {re.escape(total)}\), "
            rf"\d+\.\d M events/s, \d+ s left\x1b\[K")


def check_frames(c, cmd, term, total, what):
    """term: frames then one newline; each frame exact, its figures agreeing."""
    fr = frame_re(cmd, total)
    m = re.fullmatch(rf"((?:{fr})+)\n", term)
    c.expect(m is not None, f"{what}: frames of the exact format, one newline at the end: "
             f"{term[:300]!r}")
    for f in re.finditer(fr, term):
        num, unit = f.group(2).split()
        pct, done = int(f.group(1)), float(num) / (1000.0 if unit == "kB" else 1.0)
        c.expect(pct <= 99 and abs(pct - done / float(total.split()[0]) * 100) <= 1.0,
                 f"{what}: the percentage agrees with the sizes: {f.group(0)!r}")


def main():
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-progress-")
    try:
        # 6 M events, 72.0 MB of .obs: the emulation takes several times
        # the 0.05 s of WEFT_PROGRESS_SECONDS, even in a Release build
        big_trace(os.path.join(tmp, "big"), 6000000, False)
        rc, term, secs = tty_run(["emu", "-o", "out", "big"], tmp)
        c.eq(rc, 0, "weft emu: exit 0")
        c.expect(secs > 0.15, f"weft emu took several progress periods ({secs:.2f} s)")
        check_frames(c, "emu", term, "72.0 MB", "weft emu")
        shutil.rmtree(os.path.join(tmp, "out"), ignore_errors=True)

        c.eq(run_pipe(["emu", "-o", "out", "big"], tmp), (0, ""),
             "weft emu, stderr not a terminal: no progress")
        shutil.rmtree(os.path.join(tmp, "out"), ignore_errors=True)
        c.eq(run_pipe(["dump", "big"], tmp), (0, ""),
             "weft dump, stderr not a terminal: no progress")
        shutil.rmtree(os.path.join(tmp, "big"))

        # a warning near the end, while the line is shown
        big_trace(os.path.join(tmp, "cut"), 6000000, True)
        obs = os.path.join(tmp, "cut", thread_rel("vm", 1, 2), "stream.obs")
        warn = (f"weft emu: warning: {obs}: offset 48: stream cut: a partial event of 3 bytes "
                "at the end of the file (event header cut short: 3 of 12 bytes before the end "
                "of the file); read up to its last whole event\n")
        rc, term, _ = tty_run(["emu", "--salvage", "-o", "out", os.path.join(tmp, "cut")], tmp)
        c.eq(rc, 0, "weft emu --salvage: exit 0")
        fr = frame_re("emu", "72.0 MB")
        m = re.fullmatch(rf"((?:{fr})+)\r\x1b\[K{re.escape(warn)}({fr})\n", term)
        c.expect(m is not None, "the warning: the line cleared, the warning on its own line, "
                 f"the line drawn again: {term[-400:]!r}")
        if m is not None:
            before = [f.group(0) for f in re.finditer(fr, m.group(1))]
            after = re.search(fr + r"\n$", term).group(0)[:-1]
            c.eq(after, before[-1], "the line drawn again is the one cleared")
        shutil.rmtree(os.path.join(tmp, "out"), ignore_errors=True)
        c.eq(run_pipe(["emu", "--salvage", "-o", "out", os.path.join(tmp, "cut")], tmp),
             (0, warn), "stderr not a terminal: the warning alone")
        shutil.rmtree(os.path.join(tmp, "out"), ignore_errors=True)
        shutil.rmtree(os.path.join(tmp, "cut"))

        # weft sql: the events' table, then the commit
        big_trace(os.path.join(tmp, "sql"), 1500000, False)
        args = ["sql", "sql", "select count(*) from event"]
        rc, term, _ = tty_run(args, tmp)
        c.eq(rc, 0, "weft sql: exit 0")
        fr = frame_re("sql", "18.0 MB")
        idx = r"\rweft sql: committing the database, \d+ s\x1b\[K"
        # (the commit line when it takes more than a second: no index is
        # built, so often not)
        c.expect(re.fullmatch(rf"(?:{fr})*(?:{fr})(?:{idx})*\n", term) is not None,
                 f"weft sql: the line through the events, then the commit: {term[:400]!r}")
        c.eq(run_pipe(args, tmp), (0, ""), "weft sql, stderr not a terminal: no progress")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
