# SPDX-License-Identifier: MIT
"""Text from a trace is printed with its control characters escaped (docs/cli.md,
"Text from the trace"): loom names (in stream paths), mark titles and labels,
task type labels (jumbo string payloads) and metadata strings, through weft
dump, top, check and emu (stdout, warnings, errors, the .pcf and .row files).
Each check compares the exact output; none may hold a raw control byte
(below 0x20 but the newline ending a line, or 0x7f)."""
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

BAD = "x\ny\rz\x1b[2J\x7f"
ESC = r"x\ny\rz\e[2J\x7f"
LOOM = "L" + BAD
ELOOM = "L" + ESC
REL = thread_rel(LOOM, 1, 1)
EREL = thread_rel(ELOOM, 1, 1)


def weft(args, cwd):
    p = subprocess.run([weft_bin()] + args, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    return p.returncode, p.stdout, p.stderr


def raw_controls(data):
    """The control bytes of data other than newlines."""
    return sorted({b for b in data if (b < 0x20 and b != 0x0a) or b == 0x7f})


def ohx(clock):
    return ev("OHx", clock, struct.pack("<iiQ", 0, -1, 0))


def unrequired(root):
    """A loom with control characters; an MPI event no stream requires."""
    write_stream(root, REL, meta(1, 1, loom=LOOM),
                 [ohx(100), ev("MT[", 110, struct.pack("<q", 5)), ev("OHe", 130)])


# a task type label: control characters, a backslash, UTF-8 (kept), a C1
# control and a byte that is not UTF-8 (escaped)
LABEL = ("lab" + BAD).encode() + b" u\\v \xc3\xa9\xe2\x86\x92 \xc2\x9b \xff\t"
ELABEL = "lab" + ESC + " u\\v \u00e9\u2192 \\xc2\\x9b \\xff\\t"


def labels(root):
    """Mark titles and labels and a task type label with control characters."""
    m = meta(1, 1, loom=LOOM)
    m["ovni"]["require"] = {"ovni": "1.1.0", "nanos6": "1.0.0"}
    m["ovni"]["mark"] = {"5": {"title": "M" + BAD, "chan_type": "single",
                               "labels": {"2": "two" + BAD}}}
    write_stream(root, REL, m, [
        ohx(100),
        ev("6Yc", 105, jumbo=struct.pack("<I", 7) + LABEL + b"\0"),
        ev("OM=", 110, struct.pack("<qi", 2, 5)),
        ev("OHe", 130)])


def bad_part(root):
    """A metadata string with control characters."""
    write_stream(root, thread_rel("vm", 1, 1), meta(1, 1, part="p" + BAD), simple_events(100))


def bad_mcv(root):
    """An event whose MCV bytes are a newline, ESC and 0x7f (of no model)."""
    write_stream(root, thread_rel("vm", 1, 1), meta(1, 1),
                 [ohx(100), ev("\n\x1b\x7f", 110), ev("OHe", 130)])


def lines(*ls):
    return "".join(x + "\n" for x in ls).encode()


def run_case(c, tmp, name, build, cmds):
    root = os.path.join(tmp, name)
    os.mkdir(root)
    build(root)
    for argv, want in cmds:
        rc, out, err = weft(argv, tmp)
        what = f"{name}: weft {' '.join(argv)}"
        c.eq(raw_controls(out) + raw_controls(err), [], f"{what}: no raw control byte")
        if want is None:
            continue
        got = (rc, out, err.decode("utf-8", "replace"))
        # None: not compared
        c.eq(tuple(g for g, w in zip(got, want) if w is not None),
             tuple(w for w in want if w is not None), what)


def main():
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-esc-")
    try:
        obs = f"unrequired/{EREL}/stream.obs"
        mt = "event MT[ of model 'M', which no stream requires in ovni.require"
        warn_mt = f"{obs}: offset 36: {mt} (not reported again for this model)"
        run_case(c, tmp, "unrequired", unrequired, [
            (["dump", "unrequired"], (0, lines(
                f"       100  OHx  {EREL}  starts running on CPU 0; created by thread -1 "
                "with tag 0x0",
                f"       110  MT[  {EREL}  enters MPI_Test",
                f"       130  OHe  {EREL}  finishes: the thread ends"),
                f"weft dump: warning: {warn_mt}\n")),
            (["top", "unrequired"], (0, lines("MT[          1", "OHe          1",
                                              "OHx          1"),
                                     f"weft top: warning: {warn_mt}\n")),
            (["check", "unrequired"], (1, b"", f"weft check: {obs}: offset 36: {mt}\n")),
            (["emu", "-o", "out-u", "unrequired"], (1, b"",
             f"weft emu: {EREL}: event MT[ at clock 110 (offset 36): the mpi model is not "
             "enabled (no stream requires it; -a enables every model)\n")),
        ])
        run_case(c, tmp, "labels", labels, [
            (["dump", "labels"], (0, lines(
                f"       100  OHx  {EREL}  starts running on CPU 0; created by thread -1 "
                "with tag 0x0",
                f"       105  6Yc  {EREL}  defines task type 7 named {ELABEL}",
                f"       110  OM=  {EREL}  sets mark type 5 (M{ESC}) to 2 (two{ESC})",
                f"       130  OHe  {EREL}  finishes: the thread ends"), "")),
            (["top", "labels"], (0, lines("6Yc          1", "OHe          1", "OHx          1",
                                          "OM=          1"), "")),
            (["check", "labels"], (0, lines(
                "weft check: labels: valid: 1 stream, 1 loom, 1 process, 1 thread, 4 events, "
                "from 100 to 130 ns (span 30 ns); the models' rules were not checked (use --models)"),
                "")),
            (["emu", "-q", "-o", "out-l", "labels"], (0, b"", "")),
        ])
        for f in ("thread.pcf", "cpu.pcf", "thread.row", "cpu.row"):
            with open(os.path.join(tmp, "out-l", f), "rb") as fh:
                data = fh.read()
            c.eq(raw_controls(data), [], f"labels: {f}: no raw control byte")
            if f.endswith(".pcf"):
                text = data.decode("utf-8")
                want = f"\n0 105        M{ESC}\nVALUES\n2    two{ESC}\n"
                c.expect(want in text, f"labels: {f} has {want!r}")
                # the task type's value is a hash of its label
                typ = [x for x in text.split("\n") if x.endswith(" " + ELABEL)]
                c.eq([x.split(" ")[0].isdigit() for x in typ], [True],
                     f"labels: {f}: one line 'VALUE {ELABEL}'")
        run_case(c, tmp, "part", bad_part, [
            (["dump", "part"], (0, None, None)),
            (["check", "part"], (1, b"",
             f"weft check: part/loom.vm/proc.1/thread.1/stream.json: ovni.part is 'p{ESC}'; "
             "weft only knows 'thread' streams\n")),
            (["emu", "-o", "out-p", "part"], (1, b"", None)),
        ])
        # the MCV bytes themselves (the reference prints them raw)
        mrel = thread_rel("vm", 1, 1)
        # (the reader's messages write an MCV byte that is not printable as \\xHH)
        mwarn = (f"mcv/{mrel}/stream.obs: offset 36: event \\x0a\\x1b\\x7f of model '\\x0a', which no "
                 "stream requires in ovni.require (not reported again for this model)")
        run_case(c, tmp, "mcv", bad_mcv, [
            (["dump", "-x", "mcv"], (0, lines(
                f"       100  OHx  {mrel}  :00:00:00:00:ff:ff:ff:ff:00:00:00:00:00:00:00:00",
                f"       110  \\n\\e\\x7f  {mrel}  ",
                f"       130  OHe  {mrel}  "), f"weft dump: warning: {mwarn}\n")),
            (["top", "mcv"], (0, lines("\\n\\e\\x7f          1", "OHe          1", "OHx          1"),
                              f"weft top: warning: {mwarn}\n")),
        ])
        # dump and emu: the exact warning and error of the metadata string
        rc, out, err = weft(["dump", "part"], tmp)
        c.eq(err.decode(), "weft dump: warning: part/loom.vm/proc.1/thread.1/stream.json: "
             f"ovni.part is 'p{ESC}'; weft only knows 'thread' streams\n", "part: dump warning")
        rc, out, err = weft(["emu", "-o", "out-p", "part"], tmp)
        c.eq((rc, raw_controls(err), f"'p{ESC}'" in err.decode()), (1, [], True),
             "part: emu error quotes the escaped string")
    finally:
        shutil.rmtree(tmp)
    c.done()


if __name__ == "__main__":
    main()
