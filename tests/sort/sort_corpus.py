#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""sort_corpus.py - `weft sort`, `ovnisort` and sorting on read on the corpus.

The corpus's sort cases (v3/suite-ovni-sort, suite-ovni-empty-sort,
suite-ovni-sort-into-previous-region: ovni/ as libovni wrote it, ovni-sorted/
as the reference's ovnisort left it, tools.log with `ovnisort -c` and
`ovnisort`). Each is copied to a temporary directory and the commands run
there with the relative argument `ovni`, as the reference tools were run:
  - `weft sort --check ovni` and `ovnisort -c ovni` exit 1 as the reference's
    `ovnisort -c`, naming its stream and the clocks of its first backwards jump;
  - `weft sort ovni` and `ovnisort ovni` exit 0 and leave every file of the
    trace byte for byte as in ovni-sorted/ (stream.json untouched, no other
    file; ovnisort prints nothing on stdout, as the reference); `--check` then
    exits 0; a second sort writes nothing;
  - `weft emu` on the unsorted trace writes the same files (Paraver and
    Perfetto) as on ovni-sorted/, and its summary is the same plus the line
    "unordered regions were sorted on read: N events moved" (N as `weft sort`
    says); without the sort the reference's ovniemu refused the trace;
  - `weft dump -x --sort` of the unsorted trace prints what `weft dump -x`
    prints for ovni-sorted/, and `weft dump --sort` the clock, MCV and stream
    of sorted-dump.txt (the reference's ovnidump of the sorted trace) line by line;
  - short look-backs: the result is the model's (sortmodel.py), and a region
    that reaches back too far is an error naming the stream and the offset of
    its OU], with the stream untouched and no temporary file left.
Every other v3 case: `weft sort` changes no file.
Exit 77 when the corpus is absent (1 under CI=true).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
import sortmodel  # noqa: E402
from wefttest import Checker, conformance_dir, weft_bin  # noqa: E402

CASES = ["suite-ovni-sort", "suite-ovni-empty-sort", "suite-ovni-sort-into-previous-region"]


def snapshot(root):
    files = {}
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                files[os.path.relpath(p, root)] = fh.read()
    return files


def run(args, cwd, argv0=None):
    p = subprocess.run([argv0 or weft_bin()] + args, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def tool_section(log, name):
    m = re.search(r"^### " + re.escape(name) + r"\n(.*?)(?=^### |\Z)", log, re.S | re.M)
    return m.group(1) if m else ""


def fresh(tmp, src, name="ovni"):
    d = os.path.join(tmp, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    return d


def check_case(chk, corpus, case, tmp):
    cdir = os.path.join(corpus, "v3", case)
    log = open(os.path.join(cdir, "tools.log"), encoding="utf-8").read()
    sec = tool_section(log, "ovnisort-check")
    m = re.search(r"ERROR: stream_check: backwards jump in time (-?\d+) -> (-?\d+) for stream (\S+)",
                  sec)
    chk.expect(m is not None and "exit: 1" in sec, f"{case}: tools.log has ovnisort -c")
    ref_from, ref_to, ref_stream = m.groups() if m else ("?", "?", "?")
    chk.expect("exit: 0" in tool_section(log, "ovnisort"), f"{case}: tools.log ovnisort exit 0")
    unsorted = os.path.join(cdir, "ovni")
    want = snapshot(os.path.join(cdir, "ovni-sorted"))
    ovnisort = os.path.join(os.path.dirname(weft_bin()), "ovnisort")

    for argv0, args in ((None, ["sort", "--check"]), (ovnisort, ["-c"])):
        who = " ".join(([os.path.basename(argv0)] if argv0 else ["weft"]) + args)
        fresh(tmp, unsorted)
        rc, out, err = run(args + ["ovni"], tmp, argv0)
        chk.eq(rc, 1, f"{case}: {who}: exit status")
        chk.expect(f"from {ref_from} to {ref_to}" in err and f"stream '{ref_stream}' is not sorted"
                   in err, f"{case}: {who}: names the stream and the jump of ovnisort -c: {err!r}")
        chk.eq(snapshot(os.path.join(tmp, "ovni")), snapshot(unsorted), f"{case}: {who} changes nothing")

    moved = None
    for argv0, args in ((None, ["sort"]), (ovnisort, [])):
        who = " ".join(([os.path.basename(argv0)] if argv0 else ["weft"]) + args)
        d = fresh(tmp, unsorted)
        rc, out, err = run(args + ["ovni"], tmp, argv0)
        chk.eq(rc, 0, f"{case}: {who}: exit status ({err.strip()})")
        got = snapshot(d)
        chk.eq(sorted(got), sorted(want), f"{case}: {who}: the files")
        chk.expect(got == want, f"{case}: {who}: every file byte for byte as ovni-sorted/")
        if argv0:
            chk.eq(out, "", f"{case}: {who}: nothing on stdout, as the reference")
            continue
        m2 = re.search(r"(\d+) events? moved", out)
        chk.expect(m2 is not None, f"{case}: {who}: says how many events moved: {out!r}")
        if m2:
            moved = int(m2.group(1))
    rc, out, err = run(["sort", "--check", "ovni"], tmp)
    chk.eq(rc, 0, f"{case}: --check of the sorted trace ({err.strip()})")
    ino = {k: os.stat(os.path.join(tmp, "ovni", k)).st_ino for k in want}
    rc, out, err = run(["sort", "ovni"], tmp)
    chk.eq((rc, out.strip()), (0, "weft sort: ovni: nothing to sort (1 stream)"), f"{case}: sort again")
    chk.eq({k: os.stat(os.path.join(tmp, "ovni", k)).st_ino for k in want}, ino,
           f"{case}: sorting again writes nothing")

    # emulation: sorted on read = the sorted copy
    fresh(tmp, unsorted)
    fresh(tmp, os.path.join(cdir, "ovni-sorted"), "sorted")
    o1, o2 = os.path.join(tmp, "emu-u"), os.path.join(tmp, "emu-s")
    for o in (o1, o2):
        shutil.rmtree(o, ignore_errors=True)
    rc1, out1, err1 = run(["emu", "-o", "emu-u", "ovni"], tmp)
    rc2, out2, err2 = run(["emu", "-o", "emu-s", "sorted"], tmp)
    chk.eq((rc1, rc2), (0, 0), f"{case}: weft emu on both ({err1.strip()} | {err2.strip()})")
    e1, e2 = snapshot(o1) if rc1 == 0 else {}, snapshot(o2) if rc2 == 0 else {}
    chk.expect(len(e2) >= 7, f"{case}: emu files {sorted(e2)}")
    chk.eq(sorted(e1), sorted(e2), f"{case}: the same emu files")
    for k in e2:
        chk.expect(e1.get(k) == e2[k], f"{case}: emu {k} identical")
    line = f"unordered regions were sorted on read: {moved} events moved"
    chk.eq(out1.replace("emu-u/", "X/").replace(line + "\n", ""), out2.replace("emu-s/", "X/"),
           f"{case}: the same summary")
    chk.expect(line in out1, f"{case}: the summary says: {line!r}: {out1!r}")
    chk.expect("sorted on read" not in out2, f"{case}: nothing sorted on read in the sorted copy")
    chk.expect("exit: 1" in tool_section(log, "ovniemu"), f"{case}: the reference's ovniemu "
               "refused the unsorted trace")

    # dump
    rc1, out1, _ = run(["dump", "-x", "--sort", "ovni"], tmp)
    rc2, out2, _ = run(["dump", "-x", "sorted"], tmp)
    chk.eq((rc1, out1), (rc2, out2), f"{case}: dump -x --sort = dump -x of ovni-sorted/")
    rc, out, err = run(["dump", "--sort", "ovni"], tmp)
    ref = open(os.path.join(cdir, "sorted-dump.txt"), encoding="utf-8").read().splitlines()
    cols = [ln.split()[:3] for ln in out.splitlines()]
    chk.eq(cols, [ln.split()[:3] for ln in ref], f"{case}: dump --sort = sorted-dump.txt "
           "(clock, MCV, stream)")
    chk.eq(err, "", f"{case}: dump --sort says nothing on stderr")

    # short look-backs against the model
    obs = [k for k in want if k.endswith("stream.obs")]
    data = snapshot(unsorted)
    for lb in (1, 2, 3, 5, 8, 13, 50, 99, 100, 101, 102, 103, 104):
        try:
            exp = {k: (sortmodel.sort_file(v, lb) if k in obs else v) for k, v in data.items()}
            far = None
        except sortmodel.TooFar:
            exp, far = data, obs[0]
        d = fresh(tmp, unsorted)
        rc, out, err = run(["sort", "--look-back", str(lb), "ovni"], tmp)
        chk.eq(rc, 0 if far is None else 1, f"{case}: look-back {lb}: exit status ({err.strip()})")
        chk.expect(snapshot(d) == exp, f"{case}: look-back {lb}: the model's result")
        if far:
            chk.expect(re.search(r"ovni/" + re.escape(far) + r": offset \d+: event OU\]: .*"
                                 r"look-back of " + str(lb) + " events", err) is not None,
                       f"{case}: look-back {lb}: the error: {err!r}")


def main():
    corpus = conformance_dir()
    chk = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-sort-corpus-")
    try:
        for case in CASES:
            check_case(chk, corpus, case, tmp)
        # the other v3 cases: nothing changes
        for case in sorted(os.listdir(os.path.join(corpus, "v3"))):
            src = os.path.join(corpus, "v3", case, "ovni")
            if case in CASES or not os.path.isdir(src):
                continue
            d = fresh(tmp, src)
            rc, out, err = run(["sort", "ovni"], tmp)
            chk.eq(rc, 0, f"{case}: weft sort ({err.strip()})")
            chk.expect(snapshot(d) == snapshot(src), f"{case}: weft sort changes nothing")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    chk.done()


if __name__ == "__main__":
    main()
