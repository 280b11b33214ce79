# SPDX-License-Identifier: MIT
"""weft dump's time columns (--time), the names of mark types and values
from the metadata (ovni.mark), and weft top -d (each MCV's description):
the exact lines, the exact refusals of a bad --time (exit 2), and the
default lines left as they were (ovnidump's columns)."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import ev, meta, thread_rel, write_stream  # noqa: E402
from wefttest import Checker, run, weft_bin  # noqa: E402

R1 = thread_rel("vm", 1, 1)
R2 = thread_rel("vm", 1, 2)


def ohx(clock, cpu=0):
    return ev("OHx", clock, struct.pack("<iiQ", cpu, -1, 0x2a))


def mark(mcv, clock, value, mtype):
    return ev(mcv, clock, struct.pack("<qi", value, mtype))


def marks_trace(root):
    """Two threads; mark type 2 with labels, 7 with a title only, 9 not in
    the metadata; values with and without a label."""
    m1 = meta(1, 1, cpus=((0, 0), (1, 1)))
    m1["ovni"]["mark"] = {
        "2": {"title": "Colors", "chan_type": "stack",
              "labels": {"1": "Blue", "3": "Red"}},
        "7": {"title": "Progress", "chan_type": "single"},
    }
    m2 = meta(2, 1, cpus=None)
    m2["ovni"]["mark"] = {"2": {"title": "Colors", "chan_type": "stack",
                                "labels": {"-4": "Minus four"}}}
    write_stream(root, R1, m1, [
        ohx(1000), mark("OM[", 1010, 1, 2), mark("OM[", 1500, 5, 2),
        mark("OM=", 1600, 42, 7), mark("OM=", 1700, 3, 9), mark("OM]", 1800, 5, 2),
        ev("OHe", 2000)])
    write_stream(root, R2, m2, [
        ohx(1005, 1), mark("OM[", 1505, -4, 2), mark("OM]", 1750, -4, 2), ev("OHe", 2100)])


def lines(*ls):
    return "".join(x + "\n" for x in ls).encode()


def main():
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-dumpview-")
    try:
        root = os.path.join(tmp, "t")
        marks_trace(root)
        x1 = f"{R1}  starts running on CPU 0; created by thread -1 with tag 0x2a"
        x2 = f"{R2}  starts running on CPU 1; created by thread -1 with tag 0x2a"
        body = [
            ("      1000", f"OHx  {x1}"),
            ("      1005", f"OHx  {x2}"),
            ("      1010", f"OM[  {R1}  pushes 1 (Blue) on mark type 2 (Colors)"),
            ("      1500", f"OM[  {R1}  pushes 5 on mark type 2 (Colors)"),
            ("      1505", f"OM[  {R2}  pushes -4 (Minus four) on mark type 2 (Colors)"),
            ("      1600", f"OM=  {R1}  sets mark type 7 (Progress) to 42"),
            ("      1700", f"OM=  {R1}  sets mark type 9 to 3"),
            ("      1750", f"OM]  {R2}  pops -4 (Minus four) from mark type 2 (Colors)"),
            ("      1800", f"OM]  {R1}  pops 5 from mark type 2 (Colors)"),
            ("      2000", f"OHe  {R1}  finishes: the thread ends"),
            ("      2100", f"OHe  {R2}  finishes: the thread ends"),
        ]
        default = lines(*(f"{t}  {r}" for t, r in body))
        rc, out, err = run(["dump", "t"], cwd=tmp)
        c.eq((rc, out, err), (0, default, ""), "dump: mark names from the metadata")
        rc, out, err = run(["dump", "--time=abs", "t"], cwd=tmp)
        c.eq((rc, out, err), (0, default, ""), "dump --time=abs: the default lines")

        rel = ["0", "5", "10", "500", "505", "600", "700", "750", "800", "1000", "1100"]
        delta = ["+0", "+5", "+5", "+490", "+5", "+95", "+100", "+50", "+50", "+200", "+100"]
        want = lines(*(f"{r:>10}  {d:>10}  {t}  {b}" for r, d, (t, b) in zip(rel, delta, body)))
        rc, out, err = run(["dump", "--time", "rel,delta,abs", "t"], cwd=tmp)
        c.eq((rc, out, err), (0, want, ""), "dump --time rel,delta,abs")

        # --from: rel from the trace's first event, delta +0 on the first line
        want = lines(*(f"{d:>10}  {r:>10}  {b}" for r, d, (_, b) in
                       zip(rel[7:], ["+0", "+50", "+200", "+100"], body[7:])))
        rc, out, err = run(["dump", "--from=750ns", "--time=delta,rel", "t"], cwd=tmp)
        idx = "weft dump: warning: t/{}/stream.idx: missing (`weft index` writes one); " \
              "seeking by reading the stream from its start\n"
        c.eq((rc, out, err), (0, want, idx.format(R1) + idx.format(R2)),
             "dump --from=750ns --time=delta,rel")

        # -x: the payload bytes (no names), the time columns all the same
        rc, out, err = run(["dump", "-x", "--time=delta", "t"], cwd=tmp)
        got = [ln[:10] for ln in out.split(b"\n")[:4]]
        third = (out.split(b"\n") + [b""] * 3)[2]
        c.eq((rc, got, third),
             (0, [b"        +0", b"        +5", b"        +5", b"      +490"],
              b"        +5  OM[  " + R1.encode() + b"  :01:00:00:00:00:00:00:00:02:00:00:00"),
             "dump -x --time=delta")

        # a negative delta: a clock going back (warned, printed)
        neg = os.path.join(tmp, "neg")
        write_stream(neg, R1, meta(1, 1), [ohx(100), ev("OB.", 90), ev("OHe", 110)])
        rc, out, err = run(["dump", "--time=delta", "neg"], cwd=tmp)
        c.eq((rc, [ln[:10] for ln in out.split(b"\n")]),
             (0, [b"        +0", b"       -10", b"       +20", b""]), "dump --time=delta: -10")

        # --follow on a finished trace: the same columns, no mark names (the
        # metadata of a running program may not be written yet)
        p = subprocess.run([weft_bin(), "dump", "--follow", "--time=rel,delta", "t"], cwd=tmp,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        plain = [
            f"OHx  {x1}", f"OHx  {x2}", f"OM[  {R1}  pushes 1 on mark type 2",
            f"OM[  {R1}  pushes 5 on mark type 2", f"OM[  {R2}  pushes -4 on mark type 2",
            f"OM=  {R1}  sets mark type 7 to 42", f"OM=  {R1}  sets mark type 9 to 3",
            f"OM]  {R2}  pops -4 from mark type 2", f"OM]  {R1}  pops 5 from mark type 2",
            f"OHe  {R1}  finishes: the thread ends", f"OHe  {R2}  finishes: the thread ends"]
        want = lines(*(f"{r:>10}  {d:>10}  {b}" for r, d, b in zip(rel, delta, plain)))
        c.eq((p.returncode, p.stdout, p.stderr), (0, want, b""), "dump --follow --time=rel,delta")

        bad = "give columns among abs, rel and delta, each at most once, separated by " \
              "commas (e.g. --time=rel,delta)\n"
        for args, why in ((["--time=rel,rel"], "'rel,rel': a column is named twice"),
                          (["--time=clock"], "'clock': not a list of columns"),
                          (["--time="], "'': not a list of columns"),
                          (["--time", "rel,"], "'rel,': not a list of columns")):
            rc, out, err = run(["dump"] + args + ["t"], cwd=tmp)
            c.eq((rc, out, err), (2, b"", f"weft dump: --time {why}; {bad}"),
                 f"dump {' '.join(args)}")
        rc, out, err = run(["dump", "t", "--time"], cwd=tmp)
        c.eq((rc, out, err), (2, b"", "weft dump: option '--time' needs an argument (a list of "
                              "columns); run `weft dump --help`\n"), "dump --time (no list)")

        # weft top -d: the description after the count, fields as <name>
        top = [("OM[", 3), ("OHe", 2), ("OHx", 2), ("OM=", 2), ("OM]", 2)]
        rc, out, err = run(["top", "t"], cwd=tmp)
        c.eq((rc, out, err), (0, lines(*(f"{m} {n:10d}" for m, n in top)), ""), "top")
        desc = {"OM[": "pushes <value> on mark type <type>",
                "OHe": "finishes: the thread ends",
                "OHx": "starts running on CPU <cpu>; created by thread <tid> with tag <tag>",
                "OM]": "pops <value> from mark type <type>",
                "OM=": "sets mark type <type> to <value>"}
        want = lines(*(f"{m} {n:10d}  {desc[m]}" for m, n in top))
        for flag in ("-d", "--describe"):
            rc, out, err = run(["top", flag, "t"], cwd=tmp)
            c.eq((rc, out, err), (0, want, ""), f"top {flag}")
        # an MCV no model describes: the line as without -d
        unk = os.path.join(tmp, "unk")
        write_stream(unk, R1, meta(1, 1), [ohx(100), ev("OZz", 105), ev("OHe", 110)])
        rc, out, err = run(["top", "unk", "-d"], cwd=tmp)
        c.eq((rc, out), (0, lines(
            "OHe          1  finishes: the thread ends",
            "OHx          1  starts running on CPU <cpu>; created by thread <tid> with tag <tag>",
            "OZz          1")), "top -d: an MCV no model describes")
    finally:
        shutil.rmtree(tmp)
    c.done()


if __name__ == "__main__":
    main()
