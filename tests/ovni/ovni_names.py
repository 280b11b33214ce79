#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ovni_names.py - weft under the reference's command names, against the corpus.

Usage: ovni_names.py [--verbose] [--case NAME]...

Environment: WEFT_BIN (the weft binary; the ovni names are symlinks next to it,
built with WEFT_OVNI_COMMANDS=ON), WEFT_CONFORMANCE_DIR or
WEFT_CONFORMANCE_DIR_DEFAULT (the corpus; exit 77 when absent unless CI=true).

Each case is copied to a temporary directory and the commands run there with the
relative argument `ovni`, as the reference tools were run (tools.log):
  - every v3 case whose ovnidump exited 0 without a backwards clock:
    `ovnidump -x ovni` must print dump-x.txt byte for byte, `ovnitop ovni`
    top.txt (where ovnitop exited 0), and `ovnidump ovni` must exit 0 and print
    one line per event (weft's descriptions differ from the reference's);
  - the v3 cases that need only the ovni model and have no backwards clock:
    `ovniemu -l ovni` prints nothing on stdout and, where the reference exited 0,
    exits 0 with thread/cpu .prv/.pcf/.row in ovni/ identical to emu/; where it
    exited non-zero, exits non-zero. clock-offsets-edited runs once more with
    `-c ovni/clock-offsets.txt`;
  - the models/ cases the reference emulated with -b or -a (exit 0): `ovniemu`
    with those flags; .pcf/.row identical, .prv identical up to the order of the
    records that have the same time (as tests/emu/models_conformance.py);
  - `ovniver` and `weft version`: their lines, with and without LD_LIBRARY_PATH,
    from a copy of weft without a library directory, and a libovni.so.1 that
    cannot be loaded;
  - `ovnisort` (weft sort) and `ovnisync` (weft-sync) take the reference's flags;
    usage errors exit 2, -h exits 0.
Temporary directories are always removed; the corpus is only read.
"""
import argparse
import gzip
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "cli"))
from wefttest import esc_ref_dump, esc_ref_top, skip_note  # noqa: E402

TIMEOUT = 300
OTHER_MODELS = {"nanos6", "nosv", "nodes", "tampi", "mpi", "kernel", "openmp"}
EMU_FILES = ["thread.prv", "cpu.prv", "thread.pcf", "cpu.pcf", "thread.row", "cpu.row"]
# ovnisync is built only where Open MPI is found (tests/sync).
NAMES = ["ovnidump", "ovnitop", "ovniemu", "ovnisort", "ovniver"]


def corpus_dir():
    d = os.environ.get("WEFT_CONFORMANCE_DIR") or os.environ.get("WEFT_CONFORMANCE_DIR_DEFAULT")
    if d and (Path(d) / "v3").is_dir():
        return Path(d)
    if os.environ.get("CI") == "true":
        print(f"conformance corpus not found at {d!r} (CI=true: failure)", file=sys.stderr)
        sys.exit(1)
    why = f"conformance corpus not found at {d!r}: skipped"
    print(why, file=sys.stderr)
    skip_note(why)  # tests/ctest_skipped.py lists it
    sys.exit(77)


def section(case, tool):
    """(exit code or None, text) of the `### tool` section of tools.log."""
    try:
        text = (case / "tools.log").read_text(errors="replace")
    except OSError:
        return None, ""
    m = re.search(r"^### " + re.escape(tool) + r"\n(.*?)(?=^### |\Z)", text, re.S | re.M)
    if not m:
        return None, ""
    ex = re.search(r"^exit: (\d+)", m.group(1), re.M)
    return (int(ex.group(1)) if ex else None), m.group(1)


def required_models(case):
    models = set()
    for sj in (case / "ovni").rglob("stream.json"):
        try:
            d = json.loads(sj.read_text())
            models |= set(d.get("ovni", {}).get("require", {}).keys())
        except (ValueError, AttributeError, OSError):
            pass
    return models


def reference_output(case, name):
    """The bytes of case/name or case/name.gz, or None."""
    p = case / name
    if p.exists():
        return p.read_bytes()
    if (case / (name + ".gz")).exists():
        with gzip.open(case / (name + ".gz")) as f:
            return f.read()
    return None


def make_writable(root):
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR | stat.S_IRUSR
                         | (stat.S_IXUSR if n in dirnames else 0))


def copy_case(case, tmp):
    """A writable copy of case/ovni in a fresh directory under tmp; returns that directory."""
    work = Path(tempfile.mkdtemp(prefix=case.name + "-", dir=tmp))
    shutil.copytree(case / "ovni", work / "ovni", symlinks=True)
    make_writable(work / "ovni")
    return work


def run(cmd, cwd=None, env=None):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, timeout=TIMEOUT)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def first_diff(ref, out):
    rl, ol = ref.split(b"\n"), out.split(b"\n")
    for i, (a, b) in enumerate(zip(rl, ol), start=1):
        if a != b:
            return f"line {i}: reference {a[:160]!r}, weft {b[:160]!r}"
    return f"{len(rl)} lines in the reference, {len(ol)} from weft"


def prv_equivalent(ref, out):
    """Same header and, run by run of equal times, the same records (any order)."""
    if ref == out:
        return True
    rl, ol = ref.split(b"\n"), out.split(b"\n")
    if len(rl) != len(ol) or rl[:1] != ol[:1]:
        return False

    def runs(lines):
        res, key = [], object()
        for line in lines[1:]:
            f = line.split(b":")
            k = f[5] if len(f) >= 6 else None
            if k is not None and res and key == k:
                res[-1][1][line] += 1
            else:
                res.append((k, Counter([line])))
                key = k if k is not None else object()
        return res
    return runs(rl) == runs(ol)


class Checker:
    def __init__(self, verbose):
        self.failures = []
        self.passed = 0
        self.verbose = verbose

    def check(self, ok, name, why):
        if ok:
            self.passed += 1
            if self.verbose:
                print(f"ok   {name}")
        else:
            self.failures.append(f"{name}: {why}")
            print(f"FAIL {name}: {why}")
        return ok


def test_dump_top(chk, bindir, case, tmp):
    rc_dump, log_dump = section(case, "ovnidump")
    rc_x, log_x = section(case, "ovnidump-x")
    if rc_dump != 0 or rc_x != 0 or "backwards" in log_dump + log_x:
        return False
    ref_x = reference_output(case, "dump-x.txt")
    if ref_x is None:
        return False
    ref_x = esc_ref_dump(ref_x)  # weft escapes MCV bytes that are not printable
    work = copy_case(case, tmp)
    try:
        name = f"v3/{case.name}"
        rc, out, err = run([str(bindir / "ovnidump"), "-x", "ovni"], cwd=work)
        if chk.check(rc == 0, f"{name}: ovnidump -x ovni", f"exit {rc}: {err.strip()[:300]}"):
            chk.check(out == ref_x, f"{name}: ovnidump -x ovni = dump-x.txt", first_diff(ref_x, out))
        rc, out, err = run([str(bindir / "ovnidump"), "ovni"], cwd=work)
        nref, nout = ref_x.count(b"\n"), out.count(b"\n")
        chk.check(rc == 0 and nout == nref and (not out or out.endswith(b"\n")),
                  f"{name}: ovnidump ovni", f"exit {rc}, {nout} lines "
                  f"(expected 0 and {nref}): {err.strip()[:300]}")
        rc_top, _ = section(case, "ovnitop")
        ref_top = reference_output(case, "top.txt")
        if rc_top == 0 and ref_top is not None:
            ref_top = esc_ref_top(ref_top)
            rc, out, err = run([str(bindir / "ovnitop"), "ovni"], cwd=work)
            if chk.check(rc == 0, f"{name}: ovnitop ovni", f"exit {rc}: {err.strip()[:300]}"):
                chk.check(out == ref_top, f"{name}: ovnitop ovni = top.txt",
                          first_diff(ref_top, out))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return True


def test_emu(chk, bindir, case, tmp, flags, name, prv_exact=True, files=None):
    """ovniemu FLAGS ovni on a copy of case; compares the files of emu/."""
    rc_ref, log = section(case, "ovniemu")
    work = copy_case(case, tmp)
    try:
        cmd = [str(bindir / "ovniemu")] + flags + ["ovni"]
        label = f"{name}: {' '.join(['ovniemu'] + flags + ['ovni'])}"
        rc, out, err = run(cmd, cwd=work)
        chk.check(out == b"", label + " prints nothing on stdout", f"stdout {out[:200]!r}")
        if rc_ref != 0:
            chk.check(rc != 0, label, f"the reference exited {rc_ref}, weft exited 0")
            return
        if not chk.check(rc == 0, label, f"exit {rc}: {err.strip()[:300]}"):
            return
        if files is None:
            files = sorted(p.name for p in (case / "emu").iterdir() if p.is_file())
        bad = []
        for f in files:
            got = work / "ovni" / f
            ref = (case / "emu" / f).read_bytes()
            if not got.exists():
                bad.append(f + " (missing)")
                continue
            data = got.read_bytes()
            same = data == ref if prv_exact or not f.endswith(".prv") else prv_equivalent(ref, data)
            if not same:
                bad.append(f)
        chk.check(not bad, label + " = emu/", "differs: " + ", ".join(bad))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def lines_of(out):
    return out.decode("utf-8", "replace").splitlines()


def test_version(chk, weft, bindir, build_dir, tmp):
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    own = build_dir / "lib" / "libovni.so.1" if build_dir else None
    head = re.compile(r"^weft \S+ \(ovni API 1\.14\.0, trace format v3\)$")
    found = re.compile(r"^libovni: (/\S*libovni\.so\.1) \((\d+\.\d+\.\d+), commit (\S+)\)$")

    rc, out, err = run([weft, "version"], env=env)
    ls = lines_of(out)
    ok = rc == 0 and len(ls) >= 3 and head.match(ls[0]) and found.match(ls[1])
    if chk.check(ok, "weft version", f"exit {rc}: {ls!r} {err.strip()[:200]}"):
        m = found.match(ls[1])
        if own is not None and own.exists():
            chk.check(os.path.realpath(m.group(1)) == os.path.realpath(own)
                      and m.group(2) == "1.14.0" and m.group(3) == "weft"
                      and "libovni found by: weft's library directory" in ls,
                      "weft version finds the build's libovni", f"{ls!r}")

    rc, out, err = run([str(bindir / "ovniver")], env=env)
    ls = lines_of(out)
    chk.check(rc == 0 and len(ls) == 3 and ls[0] == "LD_LIBRARY_PATH not set"
              and re.match(r"^libovni: build v1\.14\.0 \(weft\), dynamic v\d+\.\d+\.\d+ \(\S+\)$", ls[1])
              and re.match(r"^libovni: loaded from /\S*libovni\.so\.1 \(found by .+\)$", ls[2]),
              "ovniver", f"exit {rc}: {ls!r} {err.strip()[:200]}")

    # LD_LIBRARY_PATH first: a copy of libovni in a directory of its own.
    if own is not None and own.exists():
        d = Path(tempfile.mkdtemp(prefix="ldpath-", dir=tmp))
        shutil.copy(os.path.realpath(own), d / "libovni.so.1")
        env2 = dict(env, LD_LIBRARY_PATH=f"/nonexistent-dir:{d}")
        rc, out, err = run([weft, "version"], env=env2)
        ls = lines_of(out)
        chk.check(rc == 0 and len(ls) >= 3 and ls[1] == f"libovni: {d}/libovni.so.1 (1.14.0, commit weft)"
                  and ls[2] == "libovni found by: LD_LIBRARY_PATH",
                  "weft version with LD_LIBRARY_PATH", f"{ls!r}")
        rc, out, err = run([str(bindir / "ovniver")], env=env2)
        ls = lines_of(out)
        chk.check(rc == 0 and len(ls) == 3 and ls[0] == f"LD_LIBRARY_PATH set to /nonexistent-dir:{d}"
                  and ls[1] == "libovni: build v1.14.0 (weft), dynamic v1.14.0 (weft)"
                  and ls[2] == f"libovni: loaded from {d}/libovni.so.1 (found by LD_LIBRARY_PATH)",
                  "ovniver with LD_LIBRARY_PATH", f"{ls!r}")
        # A libovni.so.1 that is not a shared library.
        bad = Path(tempfile.mkdtemp(prefix="badlib-", dir=tmp))
        (bad / "libovni.so.1").write_text("not an ELF file\n")
        env3 = dict(env, LD_LIBRARY_PATH=str(bad))
        rc, out, err = run([weft, "version"], env=env3)
        ls = lines_of(out)
        chk.check(rc == 0 and len(ls) >= 2
                  and ls[1].startswith(f"libovni: {bad}/libovni.so.1 (cannot load it: "),
                  "weft version with a broken libovni.so.1", f"exit {rc}: {ls!r}")
        rc, out, err = run([str(bindir / "ovniver")], env=env3)
        ls = lines_of(out)
        chk.check(rc == 1 and len(ls) == 2
                  and ls[1].startswith(f"libovni: build v1.14.0 (weft), dynamic unknown ({bad}/libovni.so.1: "),
                  "ovniver with a broken libovni.so.1", f"exit {rc}: {ls!r}")

    # A copy of weft with no library directory next to it: the system's libovni, or none.
    prefix = Path(tempfile.mkdtemp(prefix="prefix-", dir=tmp))
    (prefix / "bin").mkdir()
    shutil.copy(os.path.realpath(weft), prefix / "bin" / "weft")
    os.symlink("weft", prefix / "bin" / "ovniver")
    rc, out, err = run([str(prefix / "bin" / "weft"), "version"], env=env)
    ls = lines_of(out)
    ok = rc == 0 and len(ls) >= 2 and head.match(ls[0]) and (
        re.match(r"^libovni: not found \(searched LD_LIBRARY_PATH, " + re.escape(str(prefix))
                 + r"/\S+, ldconfig's cache and the default directories\)$", ls[1])
        or (found.match(ls[1]) and "libovni found by: the system's library search "
            "(ldconfig's cache, default directories)" in ls))
    chk.check(ok, "weft version without weft's library directory", f"exit {rc}: {ls!r}")
    rc, out, err = run([str(prefix / "bin" / "ovniver")], env=env)
    ls = lines_of(out)
    chk.check((rc == 1 and len(ls) == 2 and ls[1].startswith("libovni: build v1.14.0 (weft), dynamic not found ("))
              or (rc == 0 and len(ls) == 3), "ovniver without weft's library directory",
              f"exit {rc}: {ls!r}")


def test_misc(chk, bindir, tmp):
    # ovnisort runs `weft sort` (tests/sort checks the sorting itself); ovnisync is
    # weft-sync, an MPI program (tests/sync), whose flags are the reference's.
    rc, out, err = run([str(bindir / "ovnisort")], cwd=tmp)
    chk.check(rc == 2 and out == b"" and err.startswith("ovnisort: missing trace directory\n"
                                                       "Usage: ovnisort [-c]"),
              "ovnisort (usage error)", f"exit {rc}, stderr {err[:200]!r}")
    for args in (["ovni"], ["-c", "ovni"]):
        rc, out, err = run([str(bindir / "ovnisort")] + args, cwd=tmp)
        chk.check(rc == 1 and out == b"" and err == "weft sort: ovni: No such file or directory\n",
                  f"ovnisort {' '.join(args)} (no trace)", f"exit {rc}, stderr {err[:200]!r}")
    if (bindir / "ovnisync").exists():
        for args, want in ((["ovni"], "ovnisync: unexpected argument 'ovni' (the output file is "
                                      "given with -o FILE); run `ovnisync -h`\n"),
                           (["-c", "ovni"], "ovnisync: unknown option '-c'; run `ovnisync -h`\n")):
            rc, out, err = run([str(bindir / "ovnisync")] + args, cwd=tmp)
            chk.check(rc == 2 and out == b"" and err == want, f"ovnisync {' '.join(args)}",
                      f"exit {rc}, stderr {err[:200]!r}")
    for name, args in (("ovnidump", ["-z", "ovni"]), ("ovnidump", []), ("ovnitop", ["-x", "ovni"]),
                       ("ovniemu", ["-c"]), ("ovniemu", ["ovni", "other"]),
                       ("ovnidump", ["--hex", "ovni"])):
        rc, out, err = run([str(bindir / name)] + args, cwd=tmp)
        chk.check(rc == 2 and out == b"" and err.startswith(f"{name}: ") and "Usage: " + name in err,
                  f"{' '.join([name] + args)} (usage error)", f"exit {rc}, stderr {err[:200]!r}")
    for name in ("ovnidump", "ovnitop", "ovniemu"):
        rc, out, err = run([str(bindir / name), "-h"], cwd=tmp)
        chk.check(rc == 0 and out.startswith(f"Usage: {name}".encode()), f"{name} -h",
                  f"exit {rc}, stdout {out[:100]!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--case", action="append")
    args = ap.parse_args()
    weft = os.environ.get("WEFT_BIN")
    if not weft or not Path(weft).exists():
        print(f"WEFT_BIN {weft!r} not found", file=sys.stderr)
        return 1
    weft = os.path.abspath(weft)
    bindir = Path(weft).parent
    missing = [n for n in NAMES if not (bindir / n).exists()]
    if missing:
        print(f"not in {bindir}: {', '.join(missing)} (build with WEFT_OVNI_COMMANDS=ON)",
              file=sys.stderr)
        return 1
    build_dir = Path(os.environ["WEFT_BINARY_DIR"]) if os.environ.get("WEFT_BINARY_DIR") else None
    corpus = corpus_dir()
    chk = Checker(args.verbose)
    tmp = Path(tempfile.mkdtemp(prefix="weft-ovni-names-"))
    counts = Counter()

    def wanted(name):
        return not args.case or name in args.case or name.split("/", 1)[1] in args.case

    try:
        for case in sorted(p for p in (corpus / "v3").iterdir() if p.is_dir()):
            name = f"v3/{case.name}"
            if not wanted(name) or not (case / "ovni").is_dir():
                continue
            if test_dump_top(chk, bindir, case, tmp):
                counts["dump/top"] += 1
            rc_ref, log = section(case, "ovniemu")
            if rc_ref is None or "backwards" in log or required_models(case) & OTHER_MODELS:
                continue
            test_emu(chk, bindir, case, tmp, ["-l"], name, files=EMU_FILES)
            counts["emu"] += 1
            if case.name == "clock-offsets-edited":
                test_emu(chk, bindir, case, tmp, ["-l", "-c", "ovni/clock-offsets.txt"], name,
                         files=EMU_FILES)
        models = corpus / "models"
        if models.is_dir():
            for case in sorted(p for p in models.iterdir() if p.is_dir()):
                name = f"models/{case.name}"
                rc_ref, log = section(case, "ovniemu")
                cmd = re.search(r"^command: (.*)$", log, re.M)
                if not wanted(name) or rc_ref != 0 or not cmd or not (case / "ovni").is_dir():
                    continue
                flags = cmd.group(1).split()[1:-1]
                if "-b" not in flags and "-a" not in flags:
                    continue
                test_emu(chk, bindir, case, tmp, flags, name, prv_exact=False)
                counts["emu (models, -b/-a)"] += 1
        if not args.case:
            test_version(chk, weft, bindir, build_dir, tmp)
            test_misc(chk, bindir, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("ovni command names: " + ", ".join(f"{k}: {v} cases" for k, v in counts.items()))
    print(f"{chk.passed} checks passed, {len(chk.failures)} failure(s)")
    return 1 if chk.failures else 0


if __name__ == "__main__":
    sys.exit(main())
