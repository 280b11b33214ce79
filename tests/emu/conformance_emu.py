#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""conformance_emu.py - `weft emu` against the reference outputs of the corpus.

Usage: conformance_emu.py [--lint] [--verbose] [--case NAME]

Environment: WEFT_BIN (the weft binary), WEFT_CONFORMANCE_DIR or
WEFT_CONFORMANCE_DIR_DEFAULT (the corpus; exit 77 when absent unless CI=true).

For every v3 case that needs only the ovni model and has no backwards clock:
  - reference accepted (tools.log: ovniemu exit 0): weft emu must exit 0 and
    thread.prv, cpu.prv must be byte-identical to emu/*.prv; .pcf and .row are
    compared too (reported, and required).
  - reference refused: weft emu must exit non-zero with a message starting
    "weft emu: " that names a stream or file of the trace.
Cases that need a runtime model (nosv, nanos6, ...) are skipped here: they are
covered by models_conformance.py.
For bad/ cases the verdict is VERDICTS.txt's `emu` column (reject: non-zero
exit and a message naming the stream or file; accept: exit 0 and, where the
reference also accepted, the same .prv bytes).
Outputs go to a temporary directory (-o); the corpus is read-only.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import skip_note  # noqa: E402

OTHER_MODELS = {"nanos6", "nosv", "nodes", "tampi", "mpi", "kernel", "openmp"}
RUNTIME_MODEL_SKIP = "(runtime model: covered by models_conformance.py)"
FILES = ["thread.prv", "cpu.prv", "thread.pcf", "cpu.pcf", "thread.row", "cpu.row"]


def corpus_dir():
    d = os.environ.get("WEFT_CONFORMANCE_DIR") or os.environ.get("WEFT_CONFORMANCE_DIR_DEFAULT")
    if d and Path(d).is_dir():
        return Path(d)
    if os.environ.get("CI") == "true":
        print(f"conformance corpus not found at {d!r} (CI=true: failure)", file=sys.stderr)
        sys.exit(1)
    why = f"conformance corpus not found at {d!r}: skipped"
    print(why, file=sys.stderr)
    skip_note(why)  # tests/ctest_skipped.py lists it
    sys.exit(77)


def ref_emu(case):
    """(exit code, stderr text) of ovniemu from tools.log."""
    text = (case / "tools.log").read_text(errors="replace")
    m = re.search(r"^### ovniemu\n(.*?)(?=^### |\Z)", text, re.S | re.M)
    if not m:
        return None, ""
    sect = m.group(1)
    ex = re.search(r"^exit: (\d+)", sect, re.M)
    return (int(ex.group(1)) if ex else None), sect


def required_models(case):
    models = set()
    for sj in (case / "ovni").rglob("stream.json"):
        try:
            d = json.loads(sj.read_text())
            models |= set(d.get("ovni", {}).get("require", {}).keys())
        except (ValueError, AttributeError):
            pass
    return models


def names_stream_or_file(msg):
    return bool(re.search(r"loom\.|loom '|proc\.|thread\.|stream\.(json|obs)|clock-offsets|\.txt|/", msg))


def run(weft, case_dir, out, lint):
    cmd = [weft, "emu", "--paraver", "-q", "-o", str(out), str(case_dir)]
    if lint:
        cmd.insert(2, "--lint")
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=300)
    return p.returncode, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lint", action="store_true")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--case", action="append")
    args = ap.parse_args()
    weft = os.environ.get("WEFT_BIN")
    if not weft or not Path(weft).exists():
        print(f"WEFT_BIN {weft!r} not found", file=sys.stderr)
        return 1
    corpus = corpus_dir()
    tmp = Path(tempfile.mkdtemp(prefix="weft-emu-conf-"))
    failures, summary = [], {"identical": [], "refused": [], "skipped": []}
    partial = []

    def fail(name, why):
        failures.append(f"{name}: {why}")

    verdicts = {}
    for line in (corpus / "VERDICTS.txt").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        verdicts[f[0]] = f[2]

    cases = [("v3", c) for c in sorted((corpus / "v3").iterdir()) if c.is_dir()]
    cases += [("bad", c) for c in sorted((corpus / "bad").iterdir()) if c.is_dir()]
    try:
        for group, case in cases:
            name = f"{group}/{case.name}"
            if args.case and case.name not in args.case and name not in args.case:
                continue
            rc_ref, ref_log = ref_emu(case)
            out = tmp / group / case.name
            out.mkdir(parents=True)
            if group == "v3":
                if "clock goes backwards" in ref_log:
                    summary["skipped"].append(name + " (backwards clock)")
                    continue
                if required_models(case) & OTHER_MODELS:
                    summary["skipped"].append(name + " " + RUNTIME_MODEL_SKIP)
                    continue
                expect = "accept" if rc_ref == 0 else "reject"
            else:
                expect = verdicts.get(case.name, "either")
                if expect == "either":
                    summary["skipped"].append(name + " (verdict: either)")
                    continue
            rc, err = run(weft, case / "ovni", out, args.lint)
            if args.verbose:
                print(f"{name}: exit {rc} {err.strip()[:200]}")
            if expect == "reject":
                if rc == 0:
                    fail(name, "the reference refuses it, weft emu accepted it")
                elif rc != 1 or not err.startswith("weft emu: ") or not names_stream_or_file(err):
                    fail(name, f"refusal must exit 1 with 'weft emu: ' and name the stream or "
                         f"file; got exit {rc}: {err.strip()[:300]}")
                else:
                    summary["refused"].append(name)
                continue
            if rc != 0:
                fail(name, f"expected success, got exit {rc}: {err.strip()[:300]}")
                continue
            if rc_ref != 0:
                summary["identical"].append(name + " (accepted; reference refused)")
                continue
            diff = [f for f in FILES if not (out / f).exists() or
                    (out / f).read_bytes() != (case / "emu" / f).read_bytes()]
            prv_diff = [f for f in diff if f.endswith(".prv")]
            if prv_diff:
                fail(name, f"differs from the reference: {', '.join(diff)}")
            elif diff:
                partial.append(f"{name}: prv identical, differs: {', '.join(diff)}")
                fail(name, f"differs from the reference: {', '.join(diff)}")
            else:
                summary["identical"].append(name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    mode = "--lint" if args.lint else "default"
    print(f"weft emu conformance ({mode}):")
    for k, v in summary.items():
        n_model = sum(1 for x in v if x.endswith(RUNTIME_MODEL_SKIP))
        if k == "skipped" and n_model:
            print(f"  {k}: {len(v)} ({n_model} {RUNTIME_MODEL_SKIP[1:-1]})")
        else:
            print(f"  {k}: {len(v)}")
        if args.verbose:
            for x in v:
                print(f"    {x}")
    for p in partial:
        print(f"  partial: {p}")
    for f in failures:
        print(f"FAIL {f}")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
