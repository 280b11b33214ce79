# SPDX-License-Identifier: MIT
"""weft dump/top against the reference outputs of the conformance corpus.

v3: for every case, `weft dump -x` is byte-identical to dump-x.txt, `weft top`
to top.txt, and `weft dump` has the same first three columns (clock, MCV,
stream) as dump.txt, with exit status 0; unsorted traces too (the
suite-ovni-*sort* cases, whose clocks go back inside unordered regions:
the reference warned about each jump and went on, and so do dump and top,
silently inside a region). Every backwards jump the reference reported is
either inside a region (counted in `weft check`'s summary line) or warned
by dump (then check refuses it); the sort cases have them all inside.
bad/: where the reference's ovnidump went on past a backwards clock
(clock-backwards, outside any region), dump -x and top match its outputs
and dump warns about the same jumps.
v1: the same events (clock, MCV, payload bytes) as the release's own dump.
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wefttest import Checker, conformance_dir, esc_ref_dump, esc_ref_top, read_maybe_gz, run  # noqa: E402


# "%10ld  MCV  relpath  rest" (the MCV may hold any byte but a newline).
DUMP_LINE = re.compile(rb"^( *-?\d+)  (...)  (.*?)  (.*)$", re.S)


# The same as weft prints it: an MCV byte may be escaped (\\xHH, \\n, ...).
DUMP_LINE_ESC = re.compile(rb"^( *-?\d+)  ((?:\\x[0-9a-f]{2}|\\[ntre]|.){3})  (.*?)  (.*)$", re.S)


def split_dump(line, weft=False):
    """The columns of a dump line: the reference's (raw MCV) or weft's."""
    m = (DUMP_LINE_ESC if weft else DUMP_LINE).match(line)
    if m is None:
        raise ValueError(f"unparsed dump line {line!r}")
    return m.groups()


def first3(line, weft=False):
    return split_dump(line, weft)[:3]


# ovnidump's report of a backwards jump (tools.log), weft's warning, and the
# count in weft check's summary line.
REF_JUMP = re.compile(r"update_clocks: backwards jump in time (-?\d+) -> (-?\d+) in stream '([^']*)'")
WEFT_JUMP = re.compile(r"^weft (?:dump|top): warning: ovni/(.*)/stream\.obs: offset \d+: event \S+: "
                       r"clock goes backwards from (-?\d+) to (-?\d+) within the stream, "
                       r"outside an unordered region$", re.M)
CHECK_NOTE = re.compile(r"; (\d+) clocks? go(?:es)? backwards inside (?:an unordered region|unordered "
                        r"regions) \(allowed; weft emu sorts (?:it|them) on read\); the models' rules were "
                        r"not checked \(use --models\)$")


def ref_jumps(log, tool="ovnidump-x"):
    """(stream, from, to) of each jump the reference's tool reported."""
    sect = log.split(f"### {tool}\n", 1)[1].split("\n### ", 1)[0]
    return [(m.group(3), int(m.group(1)), int(m.group(2))) for m in REF_JUMP.finditer(sect)]


def weft_jumps(err):
    return [(m.group(1), int(m.group(2)), int(m.group(3))) for m in WEFT_JUMP.finditer(err)]


def compare_outputs(c, where, d):
    """dump -x, top and dump against the reference (its MCVs escaped as weft
    prints them); returns dump -x's stderr."""
    ref_x = esc_ref_dump(read_maybe_gz(os.path.join(d, "dump-x.txt")))
    ref_top = esc_ref_top(read_maybe_gz(os.path.join(d, "top.txt")))
    ref_d = esc_ref_dump(read_maybe_gz(os.path.join(d, "dump.txt")))
    rc, out, err_x = run(["dump", "-x", "ovni"], cwd=d)
    c.eq(rc, 0, f"{where}: dump -x exit code ({err_x.strip()})")
    c.expect(out == ref_x, f"{where}: dump -x differs from dump-x.txt")
    rc, out, err = run(["top", "ovni"], cwd=d)
    c.eq(rc, 0, f"{where}: top exit code")
    c.expect(out == ref_top, f"{where}: top differs from top.txt")
    c.eq(weft_jumps(err), weft_jumps(err_x), f"{where}: top warns as dump does")
    rc, out, err = run(["dump", "ovni"], cwd=d)
    c.eq(rc, 0, f"{where}: dump exit code")
    got = [first3(x, weft=True) for x in out.split(b"\n") if x]
    want = [first3(x, weft=True) for x in ref_d.split(b"\n") if x]
    c.eq(len(got), len(want), f"{where}: dump line count")
    c.expect(got == want, f"{where}: dump first three columns differ")
    return err_x


def check_v3(c, root):
    cases = sorted(os.listdir(os.path.join(root, "v3")))
    c.expect(len(cases) > 40, "v3 has its cases")
    nsort = 0
    for case in cases:
        d = os.path.join(root, "v3", case)
        log = open(os.path.join(d, "tools.log"), encoding="utf-8").read()
        jumps = ref_jumps(log)
        err = compare_outputs(c, f"v3/{case}", d)
        warned = weft_jumps(err)
        c.expect(all(j in jumps for j in warned), f"v3/{case}: dump warns only about the "
                 f"reference's jumps: {warned} of {jumps}")
        if not jumps:
            c.eq(warned, [], f"v3/{case}: no backwards clock")
            continue
        rc, out, err = run(["check", "ovni"], cwd=d)
        if warned:
            c.eq(rc, 1, f"v3/{case}: check refuses a jump outside a region")
            continue
        m = CHECK_NOTE.search(out.decode().rstrip("\n"))
        c.expect(rc == 0 and m is not None, f"v3/{case}: check accepts it with a note: {out!r} {err!r}")
        if m is not None:
            c.eq(int(m.group(1)) + len(warned), len(jumps),
                 f"v3/{case}: every jump of the reference is in a region or warned")
        if "sort" in case:
            nsort += 1
    c.eq(nsort, 3, "the three unsorted cases (suite-ovni-sort, -into-previous-region, "
         "-empty-sort) are read through")


def check_bad(c, root):
    """The bad/ cases the reference's ovnidump read through a backwards clock."""
    n = 0
    for case in sorted(os.listdir(os.path.join(root, "bad"))):
        d = os.path.join(root, "bad", case)
        log = open(os.path.join(d, "tools.log"), encoding="utf-8", errors="replace").read()
        jumps = ref_jumps(log, "ovnidump")
        if not jumps or "### ovnidump\ncommand: ovnidump ovni\nexit: 0\n" not in log:
            continue
        n += 1
        err = compare_outputs(c, f"bad/{case}", d)
        c.eq(weft_jumps(err), jumps, f"bad/{case}: dump warns about the reference's jumps")
    c.expect(n >= 1, "bad/ has a backwards clock outside any region (clock-backwards)")


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
        clock, mcv, _, payload = split_dump(line, weft=True)
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
    check_bad(c, root)
    check_v1(c, root)
    c.done()


main()
