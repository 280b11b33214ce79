#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_models.py - `weft check --models` agrees with `weft emu` on every case
of the conformance corpus.

Cases: every directory named `ovni` (the trace as libovni wrote it) one or two
levels below v1/, v3/, bad/ and models/ of the corpus (../shared/conformance;
WEFT_CONFORMANCE_DIR), including the cases whose reference emulation refused.

Each case is copied (writable) to TMP/trace; `weft emu -q --paraver -o
TMP/out TMP/trace` and then `weft check --models TMP/trace` (timeout 120 s
each) run from an empty working directory with HOME and TMPDIR pointing into
it:
  - the verdicts agree: check exits 0 iff emu exits 0, else both exit 1;
  - emu refused: check's stderr is emu's, line for line, with "weft emu: "
    replaced by "weft check: " (the same refusal text, the same warnings),
    and check's stdout is empty;
  - emu accepted: check's stdout is one summary line "weft check: PATH: valid:
    ..." and its stderr is emu's warnings, reworded as above;
  - check wrote nothing: the working directory is still empty after it, and
    the copy's files (names, sizes, modification times) are unchanged.
The corpus is only read; TMP is always removed. Prints the counts of cases.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
sys.dont_write_bytecode = True  # keep the source tree clean
from wefttest import Checker, conformance_dir, weft_bin  # noqa: E402

TIMEOUT = 120


def cases(corpus):
    found = []
    for top in ("v1", "v3", "bad", "models"):
        base = corpus / top
        if not base.is_dir():
            continue
        for d in sorted(base.iterdir()):
            if (d / "ovni").is_dir():
                found.append(d / "ovni")
    return found


def snapshot(root):
    """Every path under root with its size and modification time."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            snap[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return snap


def run(args, cwd, env):
    try:
        p = subprocess.run([weft_bin()] + args, cwd=cwd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {TIMEOUT} s"
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def main():
    corpus = Path(conformance_dir()).resolve()
    c = Checker()
    tmp = Path(tempfile.mkdtemp(prefix="weft-check-models-"))
    nvalid = nrefused = 0
    try:
        work = tmp / "cwd"
        work.mkdir()
        env = dict(os.environ, HOME=str(work), TMPDIR=str(work))
        all_cases = cases(corpus)
        c.expect(len(all_cases) >= 100, f"the corpus has {len(all_cases)} cases (>= 100)")
        for case in all_cases:
            name = str(case.relative_to(corpus))
            trace = tmp / "trace"
            shutil.rmtree(trace, ignore_errors=True)
            shutil.copytree(case, trace)
            out = tmp / "out"
            erc, _, eerr = run(["emu", "-q", "--paraver", "-o", str(out), str(trace)], tmp, env)
            shutil.rmtree(out, ignore_errors=True)
            before = snapshot(trace)
            crc, cout, cerr = run(["check", "--models", str(trace)], work, env)
            c.eq(sorted(os.listdir(work)), [], f"{name}: check --models wrote nothing in its cwd")
            c.eq(snapshot(trace), before, f"{name}: check --models left the trace as it was")
            want_err = "".join(
                ("weft check: " + line[len("weft emu: "):]) if line.startswith("weft emu: ")
                else line for line in eerr.splitlines(keepends=True))
            c.expect(erc in (0, 1), f"{name}: weft emu exits 0 or 1 (got {erc}: {eerr!r})")
            if erc == 0:
                nvalid += 1
                c.eq((crc, cerr), (0, want_err), f"{name}: emu accepts it: check --models too")
                c.expect(cout.startswith(f"weft check: {trace}: valid: ") and cout.count("\n") == 1,
                         f"{name}: one summary line (got {cout!r})")
            else:
                nrefused += 1
                c.eq((crc, cout, cerr), (1, "", want_err),
                     f"{name}: emu refuses it: check --models with the same message")
        print(f"check --models: {nvalid} cases valid, {nrefused} refused, as weft emu")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
