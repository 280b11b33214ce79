# SPDX-License-Identifier: MIT
"""Hostile traces for the reader and the CLI (issue 21, findings 5 and 6).

extremes: `weft check -r` on a trace whose clocks go from INT64_MIN to
INT64_MAX (a span of 2^64 ns, which wraps to 0 in 64 bits): the exact
verdict and the 20 parts of the run, exit 0, no SIGFPE.
links: symbolic links in a trace (docs/reader.md, "Symbolic links"): a link
that leaves the trace (to a directory outside it, to /) is warned about,
naming the link and its target, and not followed; --follow-links follows
it; a link to a directory inside the trace is followed once (the walk reads
every directory once); `weft index` writes nothing outside the trace.
Every subprocess has a time limit.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import ev, meta, simple_events, thread_rel, write_stream  # noqa: E402
from wefttest import Checker, weft_bin  # noqa: E402

LIMIT = 60  # seconds any weft command may take


def run(args, cwd):
    """weft with args: (exit code, stdout bytes, stderr text); a time limit."""
    try:
        p = subprocess.run([weft_bin()] + args, cwd=cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=LIMIT)
    except subprocess.TimeoutExpired:
        return None, b"", f"timed out after {LIMIT} s"
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def extremes(c, tmp):
    root = os.path.join(tmp, "t")
    write_stream(root, thread_rel("vm", 1, 1), meta(1, 1),
                 [ev("OHx", 1 << 63, struct.pack("<iiQ", 0, -1, 0)), ev("OHe", (1 << 63) - 1)])
    rc, out, err = run(["check", "-r", "t"], tmp)
    # 2^64 ns in 20 parts of ceil(2^64 / 20) ns = 922337203.685477581 s
    part = (1 << 64) // 20 + 1
    rows = []
    for k in range(20):
        a, b = f"{k * part / 1e9:.3f} s", f"{(k + 1) * part / 1e9:.3f} s"
        n = 1 if k in (0, 19) else 0
        rows.append(f"  {a:>12} to {b:>12}  {n:12d}  {0:14d}  {'#' * 40 if n else ''}\n")
    want = ("weft check: t: valid: 1 stream, 1 loom, 1 process, 1 thread, 2 events, from "
            "-9223372036854775808 to 9223372036854775807 ns (span 18446744073709551615 ns); the models' rules were not checked (use --models)\n"
            f"events over the run (20 parts of {part / 1e9:.3f} s, from the first event at "
            "clock -9223372036854775808):\n"
            f"  {'from':>12}    {'to':>12}  {'events':>12}  {'events/s':>14}\n" + "".join(rows))
    c.eq((rc, err, out.decode()), (0, "", want), "check -r, clocks INT64_MIN..INT64_MAX")
    shutil.rmtree(root)


def files_under(d):
    return sorted(os.path.relpath(os.path.join(a, f), d) for a, _, fs in os.walk(d) for f in fs)


def links(c, tmp):
    root, out = os.path.join(tmp, "t"), os.path.join(tmp, "out")
    write_stream(root, thread_rel("vm", 1, 1), meta(1, 1), simple_events(100))
    write_stream(out, thread_rel("vm", 1, 2), meta(2, 1), simple_events(105))
    os.symlink(os.path.join(out, "loom.vm"), os.path.join(root, "loom.x"))
    os.symlink("/", os.path.join(root, "loom.root"))
    before = files_under(out)
    warn = [f"t/loom.root: a symbolic link to /, outside t; not followed (--follow-links "
            "follows it)",
            f"t/loom.x: a symbolic link to {os.path.realpath(out)}/loom.vm, outside t; not "
            "followed (--follow-links follows it)"]
    one = (b"       100  OHx  loom.vm/proc.1/thread.1  starts running on CPU 0; created by "
           b"thread -1 with tag 0x0\n"
           b"       110  OHe  loom.vm/proc.1/thread.1  finishes: the thread ends\n")
    rc, o, err = run(["dump", "t"], tmp)
    c.eq((rc, err, o), (0, "".join(f"weft dump: warning: {w}\n" for w in warn), one),
         "dump: the links out of the trace named, not followed")
    rc, o, err = run(["check", "t"], tmp)
    c.eq((rc, err), (0, "".join(f"weft check: warning: {w}\n" for w in warn)),
         "check: the links out of the trace named, not followed")
    rc, o, err = run(["index", "t"], tmp)
    c.eq((rc, err, o.decode()), (0, "".join(f"weft index: warning: {w}\n" for w in warn),
                                 "t/loom.vm/proc.1/thread.1/stream.idx  1 entry\n"
                                 "t/merge.idx  0 checkpoints\n"),
         "index: the links out of the trace not followed")
    rc, o, err = run(["sort", "t"], tmp)
    c.eq((rc, err), (0, "".join(f"weft sort: warning: {w}\n" for w in warn)),
         "sort: the links out of the trace not followed")
    c.eq(files_under(out), before, "nothing written out of the trace")
    # followed when asked (the link to / taken away first)
    os.unlink(os.path.join(root, "loom.root"))
    rc, o, err = run(["dump", "--follow-links", "t"], tmp)
    both = (b"       100  OHx  loom.vm/proc.1/thread.1  starts running on CPU 0; created by "
            b"thread -1 with tag 0x0\n"
            b"       105  OHx  loom.x/proc.1/thread.2  starts running on CPU 0; created by "
            b"thread -1 with tag 0x0\n"
            b"       110  OHe  loom.vm/proc.1/thread.1  finishes: the thread ends\n"
            b"       115  OHe  loom.x/proc.1/thread.2  finishes: the thread ends\n")
    c.eq((rc, err, o), (0, "", both),
         "dump --follow-links: the stream out of the trace read through the link")
    rc, o, err = run(["index", "-q", "--follow-links", "t"], tmp)
    c.eq((rc, err, files_under(out)),
         (0, "", sorted(before + ["loom.vm/proc.1/thread.2/stream.idx"])),
         "index --follow-links: writes the index where the link leads")
    shutil.rmtree(root)
    shutil.rmtree(out)


def main():
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-hostile-")
    try:
        extremes(c, tmp)
        links(c, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
