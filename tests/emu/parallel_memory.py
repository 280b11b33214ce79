#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""parallel_memory.py - `weft emu -j N`'s memory does not grow with the trace.

A generated 4-loom trace (2 threads on 2 CPUs per loom, each thread pausing and
resuming TURNS times: 1.6 M events) is emulated with -j 1
and with -j 4 (WEFT_EMU_TIMING=1), each in a child whose peak RSS is read from
wait4(): -j 4 must be made by the workers ("weft emu: -j 4: 4 workers, "), its
files byte-identical to -j 1's, and its peak RSS under BOUND_KB (the streaming
merge: the workers' queues and the merge hold a few MiB each, whatever the
trace's size). The same run with WEFT_EMU_PAR_COLLECT=1 (par_run: every record
kept until the workers end, then merged, as -j did before the streaming merge)
must exceed the bound, so that the bound tells the two apart on this trace
(measured: about 220 MB collected, 42 MB streamed, 32 MB with -j 1; a child's
peak counts this process's memory at the fork, which is kept small). A second -j 4 run with a queue of 1 KiB
(WEFT_EMU_PAR_QUEUE=1: every worker waits for the merge after each packet) and
--perfetto gives the same files as -j 1's. Last, a trace whose looms' first
threads end at one clock (records of two workers at one time, found by the
merge at the very end, after batches were handed to the outputs): -j 4 says
"serial run (records of two workers at one time)", and its files (Paraver,
Perfetto) are those of -j 1, with nothing else in the directory. SIGINT sent
to -j 4 once its temporaries exist: exit 130, its message, no file left.
Under a sanitizer (WEFT_PAR_MEMORY_SANITIZED=1: the shadow memory makes RSS
meaningless) the trace is a tenth as long and the RSS is not asserted.
Environment: WEFT_BIN.
"""
import hashlib
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "cli"))
import tracegen  # noqa: E402

WEFT = os.environ["WEFT_BIN"]
SANITIZED = os.environ.get("WEFT_PAR_MEMORY_SANITIZED") == "1"
TURNS = 20000 if SANITIZED else 200000  # pauses and resumes of each thread
BOUND_KB = 120 * 1024
TIMEOUT = 240 if SANITIZED else 60

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def gen(root, nlooms=4, turns=TURNS, tie_end=False):
    """nlooms looms of one process with 2 threads on CPUs 0 and 1, each thread
    pausing and resuming `turns` times; no two streams share a clock, but with
    tie_end the first thread of every loom ends (OHe) at one clock, after
    every other event."""
    ev = struct.Struct("<B3sQ")
    for L in range(nlooms):
        pid = 1000 + L
        for k in range(2):
            tid = pid * 10 + k
            clock = 1_000_000 + L * 2 + k
            body = bytearray(ev.size * (turns + 2))
            for i in range(turns):
                ev.pack_into(body, ev.size * i, 0, b"OHr" if i & 1 else b"OHp",
                             clock + 16 * (i + 1))
            n = turns
            if turns & 1:
                ev.pack_into(body, ev.size * n, 0, b"OHr", clock + 16 * (n + 1))
                n += 1
            end = 1_000_000 + 16 * (turns + 8) if tie_end and k == 0 else clock + 16 * (n + 1)
            ev.pack_into(body, ev.size * n, 0, b"OHe", end)
            n += 1
            obs = (tracegen.HEADER + ev.pack(15, b"OHx", clock) + struct.pack("<iiQ", k, -1, 0)
                   + bytes(body[:ev.size * n]))
            m = tracegen.meta(tid, pid, loom=f"node{L:02d}", cpus=((0, 2 * L), (1, 2 * L + 1)))
            tracegen.write_stream(root, tracegen.thread_rel(f"node{L:02d}", pid, tid), m,
                                  obs=obs)


def run(args, out, tmp, env=None):
    """weft emu ARGS -o OUT in a child: (exit status, stderr, peak RSS in KiB);
    killed after TIMEOUT s."""
    errf = tmp / "stderr"
    with open(errf, "wb") as e:
        # reaped by wait4 below, which gives its rusage
        p = subprocess.Popen([WEFT, "emu", "-o", str(out)] + args, stdout=subprocess.DEVNULL,
                             stderr=e, env=dict(os.environ, WEFT_EMU_TIMING="1", **(env or {})))
    pid = p.pid
    deadline = time.monotonic() + TIMEOUT
    while True:
        wpid, status, ru = os.wait4(pid, os.WNOHANG)
        if wpid == pid:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            wpid, status, ru = os.wait4(pid, 0)
            check(False, f"{args}: killed after {TIMEOUT} s")
            break
        time.sleep(0.02)
    rc = os.waitstatus_to_exitcode(status)
    return rc, errf.read_text(errors="replace"), ru.ru_maxrss


def files(d):
    """{relative path: (size, SHA-256)}: the contents are not kept, so that this
    process stays small (a child's peak RSS counts its parent's memory at the
    fork)."""
    got = {}
    for p in sorted(d.rglob("*")):
        if p.is_file():
            h = hashlib.sha256()
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            got[p.relative_to(d).as_posix()] = (p.stat().st_size, h.hexdigest())
    return got


def main():
    with tempfile.TemporaryDirectory(prefix="weft-parmem-") as td:
        tmp = Path(td)
        trace = tmp / "trace"
        gen(str(trace))
        rc, err, rss1 = run(["-j", "1", "-q", "--paraver", str(trace)], tmp / "j1", tmp)
        check(rc == 0, f"-j 1: exit {rc} {err!r}")
        want = files(tmp / "j1")
        size = want.get("thread.prv", (0, ""))[0]
        check(size > (2 if SANITIZED else 20) * 2**20, f"-j 1: thread.prv of {size} bytes")
        for name, env, extra in (("streaming", None, []),
                                 ("collect", {"WEFT_EMU_PAR_COLLECT": "1"}, []),
                                 ("queue 1 KiB", {"WEFT_EMU_PAR_QUEUE": "1"}, ["--perfetto"])):
            out = tmp / name.replace(" ", "-")
            if extra:
                rc, err, _ = run(["-j", "1", "-q", "--paraver"] + extra + [str(trace)],
                                 tmp / "j1p", tmp)
                check(rc == 0, f"-j 1 {extra}: exit {rc} {err!r}")
            rc, err, rss = run(["-j", "4", "-q", "--paraver"] + extra + [str(trace)], out, tmp,
                               env)
            check(rc == 0, f"-j 4 {name}: exit {rc} {err!r}")
            lines = err.splitlines()
            check(any(ln.startswith("weft emu: -j 4: 4 workers, ") for ln in lines),
                  f"-j 4 {name}: not made by 4 workers: {err!r}")
            ref = files(tmp / "j1p") if extra else want
            got = files(out)
            check(sorted(got) == sorted(ref), f"-j 4 {name}: files {sorted(got)}")
            for f in sorted(ref):
                check(got.get(f) == ref[f], f"-j 4 {name}: {f} differs from -j 1's")
            print(f"-j 4 {name}: peak RSS {rss} KiB (-j 1: {rss1} KiB)")
            if not SANITIZED and name == "streaming":
                check(rss < BOUND_KB, f"-j 4: peak RSS {rss} KiB, over {BOUND_KB} KiB")
            if not SANITIZED and name == "collect":
                check(rss > BOUND_KB, f"-j 4 collect: peak RSS {rss} KiB, not over {BOUND_KB}"
                      " KiB: the trace does not tell the designs apart")
            for d in (out, tmp / "j1p"):
                if d.exists():
                    for p in sorted(d.rglob("*"), reverse=True):
                        p.rmdir() if p.is_dir() else p.unlink()
        # SIGINT once -j 4's temporaries exist (the workers running, the merge
        # writing): exit 130, its message, every thread joined, nothing left
        out = tmp / "int"
        p = subprocess.Popen([WEFT, "emu", "-j", "4", "-q", "--paraver", "-o", str(out),
                              str(trace)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
        seen = False
        end = time.monotonic() + TIMEOUT
        while time.monotonic() < end and p.poll() is None:
            if out.is_dir() and any(x.name.startswith(".thread.prv.weft-")
                                    for x in out.iterdir()):
                seen = True
                p.send_signal(signal.SIGINT)
                break
            time.sleep(0.002)
        try:
            _, err = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        check(seen, f"SIGINT: the run ended before its temporaries were seen ({p.returncode})")
        check(p.returncode == 130 and err == "weft emu: interrupted by SIGINT; nothing written "
              "(the files of an earlier run are left as they were)\n",
              f"SIGINT: exit {p.returncode}: {err!r}")
        check(files(out) == {}, f"SIGINT: left {sorted(files(out))}")
        # records of two workers at one time at the very end, found after
        # batches were written (the queues hold far less than the trace): the
        # run is made serially, its files those of -j 1, nothing else left
        shutil.rmtree(trace)
        shutil.rmtree(tmp / "j1")
        tie = tmp / "tie"
        gen(str(tie), turns=TURNS // 4, tie_end=True)
        rc, err, _ = run(["-j", "1", "-q", "--paraver", "--perfetto", str(tie)], tmp / "t1", tmp)
        check(rc == 0, f"tie -j 1: exit {rc} {err!r}")
        rc, err, _ = run(["-j", "4", "-q", "--paraver", "--perfetto", str(tie)], tmp / "t4", tmp)
        check(rc == 0, f"tie -j 4: exit {rc} {err!r}")
        check("weft emu: -j 4: serial run (records of two workers at one time)" in
              err.splitlines(), f"tie -j 4: not made serially for the tie: {err!r}")
        ref, got = files(tmp / "t1"), files(tmp / "t4")
        check(sorted(got) == sorted(ref), f"tie -j 4: files {sorted(got)}")
        for f in sorted(ref):
            check(got.get(f) == ref[f], f"tie -j 4: {f} differs from -j 1's")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("parallel_memory: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
