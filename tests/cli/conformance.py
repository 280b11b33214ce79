# SPDX-License-Identifier: MIT
"""weft dump/top against the reference outputs of the conformance corpus.

v3: for every case whose tools.log shows no backwards clock, `weft dump -x`
is byte-identical to dump-x.txt, `weft top` to top.txt, and `weft dump` has
the same first three columns (clock, MCV, stream) as dump.txt. For the cases
with a backwards clock, weft stops with an error: its output is a prefix of
the reference's, ending right before the offending event.
v1: the same events (clock, MCV, payload bytes) as the release's own dump.
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wefttest import Checker, conformance_dir, read_maybe_gz, run  # noqa: E402


# "%10ld  MCV  relpath  rest" (the MCV may hold any byte but a newline).
DUMP_LINE = re.compile(rb"^( *-?\d+)  (...)  (.*?)  (.*)$", re.S)


def split_dump(line):
    m = DUMP_LINE.match(line)
    if m is None:
        raise ValueError(f"unparsed dump line {line!r}")
    return m.groups()


def first3(line):
    return split_dump(line)[:3]


def check_v3(c, root):
    cases = sorted(os.listdir(os.path.join(root, "v3")))
    c.expect(len(cases) > 40, "v3 has its cases")
    for case in cases:
        d = os.path.join(root, "v3", case)
        log = open(os.path.join(d, "tools.log"), encoding="utf-8").read()
        backwards = "backwards jump" in log
        ref_x = read_maybe_gz(os.path.join(d, "dump-x.txt"))
        ref_top = read_maybe_gz(os.path.join(d, "top.txt"))
        ref_d = read_maybe_gz(os.path.join(d, "dump.txt"))
        rc, out, err = run(["dump", "-x", "ovni"], cwd=d)
        if not backwards:
            c.eq(rc, 0, f"v3/{case}: dump -x exit code ({err.strip()})")
            c.expect(out == ref_x, f"v3/{case}: dump -x differs from dump-x.txt")
            rc, out, err = run(["top", "ovni"], cwd=d)
            c.eq(rc, 0, f"v3/{case}: top exit code")
            c.expect(out == ref_top, f"v3/{case}: top differs from top.txt")
            rc, out, err = run(["dump", "ovni"], cwd=d)
            c.eq(rc, 0, f"v3/{case}: dump exit code")
            got = [first3(x) for x in out.split(b"\n") if x]
            want = [first3(x) for x in ref_d.split(b"\n") if x]
            c.eq(len(got), len(want), f"v3/{case}: dump line count")
            c.expect(got == want, f"v3/{case}: dump first three columns differ")
        else:
            c.eq(rc, 1, f"v3/{case}: dump -x stops with an error on the backwards clock")
            c.expect(re.search(r"^weft dump: ovni/.*/stream\.obs: offset \d+: event \S+: clock goes "
                               r"backwards from \d+ to \d+ within the stream$", err, re.M)
                     is not None, f"v3/{case}: backwards clock message: {err!r}")
            c.expect(len(out) > 0 and ref_x.startswith(out),
                     f"v3/{case}: dump -x is a prefix of the reference")
            rc, out, err = run(["top", "ovni"], cwd=d)
            c.eq((rc, out), (1, b""), f"v3/{case}: top fails and prints nothing")


V1_LINE = re.compile(rb"^\S+\s+(\d+)\s+(?:\+\d+\s+)?(...)( :[0-9a-f:]*)?$")


def parse_v1_ref(data):
    evs = []
    for line in data.split(b"\n"):
        if not line:
            continue
        m = V1_LINE.match(line)
        if m is None:
            raise ValueError(f"unparsed v1 line {line!r}")
        payload = (m.group(3) or b"").strip()
        evs.append((int(m.group(1)), m.group(2), payload))
    return evs


def parse_weft_x(data):
    evs = []
    for line in data.split(b"\n"):
        if not line:
            continue
        clock, mcv, _, payload = split_dump(line)
        evs.append((int(clock), mcv, payload.strip()))
    return evs


def check_v1(c, root):
    cases = sorted(os.listdir(os.path.join(root, "v1")))
    c.expect(len(cases) == 4, "v1 has its 4 cases")
    for case in cases:
        d = os.path.join(root, "v1", case)
        want = parse_v1_ref(read_maybe_gz(os.path.join(d, "dump.txt")))
        rc, out, err = run(["dump", "-x", "ovni"], cwd=d)
        c.eq(rc, 0, f"v1/{case}: dump -x exit code ({err.strip()})")
        got = parse_weft_x(out)
        c.eq(len(got), len(want), f"v1/{case}: number of events")
        c.expect(got == want, f"v1/{case}: events differ from the reference dump")
        rc, out, err = run(["check", "ovni"], cwd=d)
        c.eq(rc, 0, f"v1/{case}: check accepts it ({err.strip()})")


def main():
    root = conformance_dir()
    c = Checker()
    check_v3(c, root)
    check_v1(c, root)
    c.done()


main()
