#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""models_conformance.py - `weft emu` runtime models against the reference outputs.

Usage: models_conformance.py [--verbose] [--case NAME]... [--update-xfail]

Environment: WEFT_BIN (the weft binary), WEFT_CONFORMANCE_DIR or
WEFT_CONFORMANCE_DIR_DEFAULT (the corpus; exit 77 when absent unless CI=true).

Cases:
  - every case directory of corpus/models/ (synthetic traces of the nosv, nanos6,
    openmp, mpi, tampi, nodes and kernel models, the breakdown views, hardware
    counters and -a), named "models/<case>";
  - every corpus/v3/ case whose streams' ovni.require names one of those models,
    named "v3/<case>", except those whose reference emulation stopped on a
    backwards clock ("clock goes backwards" in tools.log).

Each case runs `$WEFT_BIN emu --paraver --partial -q -o OUTDIR [flags] CASE/ovni` (timeout
300 s), where the flags are those the reference ran with (the `ovniemu` command of
tools.log, else INDEX.txt): -l, -b and -a are passed through. OUTDIR is in a
temporary directory that is always removed; the corpus is only read.

Verdict, by the reference's exit status (the `exit:` line of the ovniemu section
of tools.log):
  - 0: weft must exit 0, and every file of the case's emu/ must exist in OUTDIR
    and match;
  - 1: weft must exit with a positive status and a stderr starting "weft emu: ",
    and every file of emu/ must still exist and match (the reference closes its
    partial files, and so does weft with --partial, so matching partial .prv
    files show the refusal happened at the same event).
In both, OUTDIR must not hold a `*-breakdown.*` file the reference did not write.

Matching: .pcf and .row byte for byte; .prv: the header line identical, then
the records compared run by run, a run being consecutive records with the same
time (field 6 of `2:cpu:appl:task:thread:TIME:type:value...`); the records of
one run may come in any order (compared as multisets). A mismatch reports the
first differing line of each file.

Expected failures: models_xfail.txt next to this script, one case name per line
(`#` comments). A listed case that fails is XFAIL; a listed case that passes is
a failure (XPASS: remove it from the list), as is an unlisted failing case.
--update-xfail rewrites the list with the currently failing cases (of the cases
run; entries for cases not run are kept), keeping the header comment.

Prints "models conformance: N identical, M refused at the same event, X xfail,
F failures" and exits 0 when F is 0, else 1.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import skip_note  # noqa: E402

RUNTIME_MODELS = {"nosv", "nanos6", "openmp", "mpi", "tampi", "nodes", "kernel"}
# ovniemu flag -> weft emu flag
FLAG_MAP = {"-l": "-l", "-b": "-b", "-a": "-a"}
TIMEOUT = 300
XFAIL_FILE = Path(__file__).resolve().parent / "models_xfail.txt"
DEFAULT_HEADER = """\
# SPDX-License-Identifier: MIT
# Expected failures of models_conformance.py: one case name per line
# (models/<case> or v3/<case>), `#` starts a comment.
#
# A listed case that fails is reported as XFAIL and does not fail the test; a
# listed case that passes fails the test (XPASS) until its line is removed, so
# this list always names exactly the cases weft does not get right yet. Remove
# the lines of a runtime model as it is implemented, or regenerate the list with
#   WEFT_BIN=build/bin/weft python3 tests/emu/models_conformance.py --update-xfail
"""


def corpus_dir():
    d = os.environ.get("WEFT_CONFORMANCE_DIR") or os.environ.get("WEFT_CONFORMANCE_DIR_DEFAULT")
    if d and (Path(d) / "models").is_dir() and (Path(d) / "v3").is_dir():
        return Path(d)
    if os.environ.get("CI") == "true":
        print(f"conformance corpus (with models/ and v3/) not found at {d!r} (CI=true: failure)",
              file=sys.stderr)
        sys.exit(1)
    why = f"conformance corpus (with models/ and v3/) not found at {d!r}: skipped"
    print(why, file=sys.stderr)
    skip_note(why)  # tests/ctest_skipped.py lists it
    sys.exit(77)


def natural_key(s):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def ref_emu(case):
    """(exit code or None, ovniemu command or None, ovniemu section of tools.log)."""
    try:
        text = (case / "tools.log").read_text(errors="replace")
    except OSError:
        return None, None, ""
    m = re.search(r"^### ovniemu\n(.*?)(?=^### |\Z)", text, re.S | re.M)
    if not m:
        return None, None, ""
    sect = m.group(1)
    ex = re.search(r"^exit: (\d+)", sect, re.M)
    cmd = re.search(r"^command: (.*)$", sect, re.M)
    return (int(ex.group(1)) if ex else None), (cmd.group(1).split() if cmd else None), sect


def read_index(models):
    """INDEX.txt of models/: case -> list of ovniemu flags."""
    index = {}
    try:
        lines = (models / "INDEX.txt").read_text().splitlines()
    except OSError:
        return index
    for line in lines:
        line = line.split("#", 1)[0].split()
        if len(line) >= 2:
            # case, flags..., reference exit
            index[line[0]] = line[1:-1]
    return index


def required_models(case):
    models = set()
    for sj in (case / "ovni").rglob("stream.json"):
        try:
            d = json.loads(sj.read_text())
            models |= set(d.get("ovni", {}).get("require", {}).keys())
        except (ValueError, AttributeError, OSError):
            pass
    return models


class Case:
    def __init__(self, name, path, ref_exit, ref_flags, problem=None):
        self.name = name          # "models/mix-0" or "v3/suite-..."
        self.path = path
        self.ref_exit = ref_exit
        self.ref_flags = ref_flags  # ovniemu flags, e.g. ["-l", "-b"]
        self.problem = problem      # the case cannot be run as described


def discover(corpus):
    """(cases, skipped) of the corpus, in a stable order."""
    cases, skipped = [], []
    models = corpus / "models"
    index = read_index(models)
    for d in sorted((p for p in models.iterdir() if p.is_dir()), key=lambda p: natural_key(p.name)):
        if not (d / "ovni").is_dir():
            continue
        rc, cmd, _ = ref_emu(d)
        flags = cmd[1:-1] if cmd and len(cmd) >= 2 else index.get(d.name)
        problem = None
        if rc is None:
            problem = "no `exit:` line in the ovniemu section of tools.log"
        elif flags is None:
            problem = "no ovniemu flags in tools.log nor INDEX.txt"
        cases.append(Case(f"models/{d.name}", d, rc, flags or [], problem))
    for d in sorted((p for p in (corpus / "v3").iterdir() if p.is_dir()),
                    key=lambda p: natural_key(p.name)):
        if not (d / "ovni").is_dir() or not (required_models(d) & RUNTIME_MODELS):
            continue
        rc, cmd, sect = ref_emu(d)
        name = f"v3/{d.name}"
        if "clock goes backwards" in sect:
            skipped.append(name + " (backwards clock)")
            continue
        flags = cmd[1:-1] if cmd and len(cmd) >= 2 else ["-l"]
        problem = None if rc is not None else "no `exit:` line in the ovniemu section of tools.log"
        cases.append(Case(name, d, rc, flags, problem))
    return cases, skipped


# ---------------------------------------------------------------- comparison

def prv_runs(lines):
    """Split the record lines (all but the header) into runs of equal time.

    Returns a list of (first line number (1-based), key, [(line number, line)]).
    Record lines (at least 6 colon-separated fields) with the same time field in
    a row form one run; any other line is a run of its own, compared in place."""
    runs = []
    for no, line in enumerate(lines[1:], start=2):
        f = line.split(b":")
        key = (b"t", f[5]) if len(f) >= 6 else None
        if key is not None and runs and runs[-1][1] == key:
            runs[-1][2].append((no, line))
        else:
            runs.append((no, key if key is not None else (b"other", no), [(no, line)]))
    return runs


def show(line):
    s = line.decode("utf-8", "replace")
    return s if len(s) <= 200 else s[:200] + "..."


def compare_prv(ref, out):
    """None when equal, else a description of the first difference."""
    rl, ol = ref.split(b"\n"), out.split(b"\n")
    if rl[0] != ol[0]:
        return f"line 1 (header): reference {show(rl[0])!r}, weft {show(ol[0])!r}"
    rr, orr = prv_runs(rl), prv_runs(ol)
    for i in range(max(len(rr), len(orr))):
        if i >= len(rr):
            no, line = orr[i][2][0]
            return f"line {no}: reference has ended, weft {show(line)!r}"
        if i >= len(orr):
            no, line = rr[i][2][0]
            return f"line {no}: reference {show(line)!r}, weft has ended"
        a, b = rr[i][2], orr[i][2]
        if [x[1] for x in a] == [x[1] for x in b]:
            continue
        ca, cb = Counter(x[1] for x in a), Counter(x[1] for x in b)
        if ca == cb:
            continue  # same records of one time, in another order
        missing, extra = ca - cb, cb - ca
        ra = next(((no, l) for no, l in a if missing[l] > 0), None)
        rb = next(((no, l) for no, l in b if extra[l] > 0), None)
        # A run with fewer records: its file's line after the run is the first that differs.
        if ra is None:
            ra = (a[-1][0] + 1, rl[a[-1][0]] if a[-1][0] < len(rl) else None)
        if rb is None:
            rb = (b[-1][0] + 1, ol[b[-1][0]] if b[-1][0] < len(ol) else None)
        rs = show(ra[1]) if ra[1] is not None else "(end of file)"
        ws = show(rb[1]) if rb[1] is not None else "(end of file)"
        where = f"line {ra[0]}" if ra[0] == rb[0] else f"reference line {ra[0]} / weft line {rb[0]}"
        return f"{where}: reference {rs!r}, weft {ws!r}"
    return None


def compare_bytes(ref, out):
    if ref == out:
        return None
    rl, ol = ref.split(b"\n"), out.split(b"\n")
    for i in range(max(len(rl), len(ol))):
        a = rl[i] if i < len(rl) else None
        b = ol[i] if i < len(ol) else None
        if a != b:
            rs = show(a) if a is not None else "(end of file)"
            ws = show(b) if b is not None else "(end of file)"
            return f"line {i + 1}: reference {rs!r}, weft {ws!r}"
    return "differs"  # not reached


def compare_outputs(emu_dir, out):
    """List of problems of OUTDIR against the reference's emu/ directory."""
    problems, missing = [], []
    ref_files = sorted(p.name for p in emu_dir.iterdir() if p.is_file())
    if not ref_files:
        return [f"the reference wrote no files ({emu_dir})"]
    for f in ref_files:
        o = out / f
        if not o.is_file():
            missing.append(f)
            continue
        ref, got = (emu_dir / f).read_bytes(), o.read_bytes()
        why = compare_prv(ref, got) if f.endswith(".prv") else compare_bytes(ref, got)
        if why:
            problems.append(f"{f}: {why}")
    if missing:
        problems.insert(0, f"not written by weft: {', '.join(missing)}")
    extra = sorted(p.name for p in out.iterdir()
                   if "-breakdown." in p.name and p.name not in ref_files) if out.is_dir() else []
    if extra:
        problems.append(f"breakdown files the reference did not write: {', '.join(extra)}")
    return problems


# ---------------------------------------------------------------- running

def run_case(weft, case, out):
    """(passed, list of problems) of one case."""
    if case.problem:
        return False, [f"corpus: {case.problem}"]
    flags = []
    for fl in case.ref_flags:
        if fl not in FLAG_MAP:
            return False, [f"corpus: ovniemu flag {fl!r} has no weft equivalent"]
        flags.append(FLAG_MAP[fl])
    if case.ref_exit not in (0, 1):
        return False, [f"corpus: unexpected reference exit {case.ref_exit}"]
    cmd = [weft, "emu", "--paraver", "--partial", "-q", "-o", str(out)] + flags + [str(case.path / "ovni")]
    try:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return False, [f"timed out after {TIMEOUT} s"]
    rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
    first = err.strip().splitlines()[0][:300] if err.strip() else "(no stderr)"
    problems = []
    if case.ref_exit == 0:
        if rc != 0:
            problems.append(f"the reference accepts it, weft exited {rc}: {first}")
    else:
        if rc == 0:
            problems.append("the reference refuses it, weft exited 0")
        elif rc < 0:
            problems.append(f"the reference refuses it, weft died of signal {-rc}: {first}")
        elif not err.startswith("weft emu: "):
            problems.append(f"refusal without a 'weft emu: ' message (exit {rc}): {first}")
    problems += compare_outputs(case.path / "emu", out)
    return not problems, problems


def read_xfail(path):
    """(header lines, list of names) of the expected-failures file."""
    if not path.exists():
        return DEFAULT_HEADER.splitlines(), []
    header, names, in_header = [], [], True
    for line in path.read_text().splitlines():
        body = line.split("#", 1)[0].strip()
        if in_header and not body:
            header.append(line)
            continue
        in_header = False
        if body:
            names.append(body)
    while header and not header[-1].strip():
        header.pop()
    return header or DEFAULT_HEADER.splitlines(), names


def write_xfail(path, header, names):
    text = "\n".join(header) + "\n\n" + "".join(n + "\n" for n in names)
    path.write_text(text)


def main():
    ap = argparse.ArgumentParser(description="weft emu runtime models against the reference")
    ap.add_argument("--verbose", "-v", action="store_true", help="print per-case results")
    ap.add_argument("--case", action="append", metavar="NAME",
                    help="run only this case (models/X, v3/X or X); repeatable")
    ap.add_argument("--update-xfail", action="store_true",
                    help=f"rewrite {XFAIL_FILE.name} with the currently failing cases")
    args = ap.parse_args()
    weft = os.environ.get("WEFT_BIN")
    if not weft or not Path(weft).exists():
        print(f"WEFT_BIN {weft!r} not found", file=sys.stderr)
        return 1
    corpus = corpus_dir()
    cases, skipped = discover(corpus)
    all_names = [c.name for c in cases]
    if args.case:
        wanted = set(args.case)
        unknown = [w for w in args.case
                   if not any(w in (c.name, c.name.split("/", 1)[1]) for c in cases)]
        if unknown:
            print(f"unknown case(s): {', '.join(unknown)}", file=sys.stderr)
            return 1
        cases = [c for c in cases if c.name in wanted or c.name.split("/", 1)[1] in wanted]

    header, xfail_names = read_xfail(XFAIL_FILE)
    results = {}  # name -> (passed, problems)
    tmp = Path(tempfile.mkdtemp(prefix="weft-models-conf-"))
    try:
        for case in cases:
            out = tmp / case.name
            out.mkdir(parents=True)
            try:
                results[case.name] = run_case(weft, case, out)
            finally:
                shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    if args.update_xfail:
        run_names = set(results)
        keep = [n for n in xfail_names if n not in run_names and n in all_names]
        failing = [n for n in results if not results[n][0]]
        new = sorted(set(keep) | set(failing), key=lambda n: all_names.index(n))
        write_xfail(XFAIL_FILE, header, new)
        print(f"{XFAIL_FILE}: {len(new)} expected failure(s)")
        xfail_names = new

    xfail = set(xfail_names)
    failures = []
    counts = {"identical": 0, "refused": 0, "xfail": 0}
    if not args.case:
        for n in sorted(xfail - set(all_names)):
            failures.append(f"{n}: listed in {XFAIL_FILE.name} but not a case of the corpus")
    for case in cases:
        passed, problems = results[case.name]
        kind = "identical" if case.ref_exit == 0 else "refused at the same event"
        if passed and case.name in xfail:
            failures.append(f"{case.name}: XPASS: remove it from {XFAIL_FILE.name}")
            verdict = "XPASS"
        elif passed:
            counts["identical" if case.ref_exit == 0 else "refused"] += 1
            verdict = f"ok ({kind})"
        elif case.name in xfail:
            counts["xfail"] += 1
            verdict = "XFAIL"
        else:
            failures.append(f"{case.name}: " + "; ".join(problems))
            verdict = "FAIL"
        if args.verbose:
            print(f"{case.name}: {verdict}")
            if not passed:
                for pr in problems:
                    print(f"    {pr}")
    if args.verbose:
        for s in skipped:
            print(f"skipped {s}")
    for f in failures:
        print(f"FAIL {f}")
    print(f"models conformance: {counts['identical']} identical, {counts['refused']} refused at "
          f"the same event, {counts['xfail']} xfail, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
