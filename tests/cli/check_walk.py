#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_walk.py - `weft check` on a path that does not look like a trace, and
on a trace still being written.

  - a loom.* directory at most 3 levels under PATH (or PATH inside a loom):
    no warning; deeper: one warning line, the walk goes on and finds it;
  - a trace whose unfinished threads belong to a process alive on this host
    (the loom named after this host, the pid of a running `sleep`): one line
    for the process instead of one per thread, exit 1; the same trace once
    the process has exited, or in a loom of another host: one line per
    thread, as before.
Every subprocess has a timeout; the temporary directory is removed.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
sys.dont_write_bytecode = True  # keep the source tree clean
from tracegen import meta, simple_events, thread_rel, write_stream  # noqa: E402
from wefttest import Checker, weft_bin  # noqa: E402

TIMEOUT = 60
WARN = ("weft check: warning: {p} does not look like a trace: no loom.* directory in its first "
        "3 levels (a trace's streams are in loom.*/proc.*/thread.*); every directory under it "
        "is read, looking for stream.json files\n")
NOTE = "; the models' rules were not checked (use --models)\n"
UNFINISHED = ("weft check: {j}: ovni.finished is missing (the thread did not end with "
              "ovni_thread_free)\n")


def run(args, cwd):
    p = subprocess.run([weft_bin()] + args, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def one_trace(root):
    write_stream(root, thread_rel("vm", 1, 1), meta(1, 1), simple_events(100))


def main():
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-check-walk-")
    try:
        valid = ("weft check: {p}: valid: 1 stream, 1 loom, 1 process, 1 thread, 2 events, "
                 "from 100 to 110 ns (span 10 ns)" + NOTE)
        # loom.vm 3 levels under the path: a trace, no warning
        one_trace(os.path.join(tmp, "s", "a", "b"))
        c.eq(run(["check", "s"], tmp), (0, valid.format(p="s"), ""), "loom at level 3")
        # 4 levels: warned, then found by the walk
        one_trace(os.path.join(tmp, "d", "a", "b", "c"))
        c.eq(run(["check", "d"], tmp), (0, valid.format(p="d"), WARN.format(p="d")),
             "loom at level 4: warned, then valid")
        # with --models too: warned before the emulation reads it
        c.eq(run(["check", "--models", "d"], tmp),
             (0, valid.format(p="d").replace(NOTE, "; the models' rules were checked "
                                                   "(--models)\n"), WARN.format(p="d")),
             "loom at level 4, --models: warned once, then valid")
        # inside a loom: a sub-trace path, no warning
        c.eq(run(["check", "d/a/b/c/loom.vm/proc.1"], tmp)[2], "", "inside a loom: no warning")
        # a directory of directories without any stream: the warning, then the error
        os.makedirs(os.path.join(tmp, "h", "Documents", "x"))
        c.eq(run(["check", "h"], tmp),
             (1, "", WARN.format(p="h") + "weft check: no streams found under 'h': it holds "
              "no files\n"), "no trace at all")

        # a trace being written by a live process of this host
        host = socket.gethostname().split(".")[0]
        live = os.path.join(tmp, "live")
        w = subprocess.Popen(["sleep", str(TIMEOUT)])
        try:
            for tid in (w.pid, w.pid + 1):
                write_stream(live, thread_rel(host, w.pid, tid),
                             meta(tid, w.pid, loom=host, finished=None), simple_events(100))
            write_stream(live, thread_rel("zzzz", w.pid, w.pid),
                         meta(w.pid, w.pid, loom="zzzz", finished=None), simple_events(100))
            other = UNFINISHED.format(j=f"live/loom.zzzz/proc.{w.pid}/thread.{w.pid}/"
                                        "stream.json")
            # (the streams in path order: this host's loom before loom.zzzz)
            c.eq(run(["check", "live"], tmp),
                 (1, "", f"weft check: live: the process {w.pid} that writes it is still "
                  "running on this host; use weft dump --follow to read it as it grows\n" + other),
                 "a live writer: one line for it")
        finally:
            w.kill()
            w.wait(timeout=TIMEOUT)
        per_thread = "".join(
            UNFINISHED.format(j=f"live/loom.{h}/proc.{w.pid}/thread.{t}/stream.json")
            for h, t in sorted([("zzzz", w.pid), (host, w.pid), (host, w.pid + 1)],
                               key=lambda ht: (ht[0], f"thread.{ht[1]}")))
        c.eq(run(["check", "live"], tmp), (1, "", per_thread),
             "the writer exited: each thread named")

    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
