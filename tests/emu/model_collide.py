#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""model_collide.py - models that take what another owns, and hostile model files.

On a trace of the example program examples/zeta (built as $WEFT_BINARY_DIR/bin/zeta)
emulated once with examples/zeta/zeta.yaml into OUT:
  - every file of tests/emu/bad_models/collide/ (and the byte and name clashes of
    tests/emu/bad_models/), alone or after zeta.yaml: `weft emu --model ... -o OUT
    TRACE`, `weft emu --model ... TRACE` (which would write into TRACE) and `weft
    dump --model ... TRACE` exit 1 with exactly `weft emu: FILE:LINE: reason`, print
    nothing on stdout, and leave OUT and TRACE as they were (a hash of every path,
    mode and content before and after);
  - the built-in models pass the checks (--list-models lists the nine of them) and
    the trace is emulated with zeta.yaml and a model whose types are its neighbours'
    (699, 703) into an empty directory;
  - hostile files written into a temporary directory, each run within 10 s of CPU:
    100000 nested brackets and 40 nested mappings (refused at the 33rd level, at its
    line), 300000 value labels (accepted; refused at its line with a value labelled
    again at the end), 100000 channels with the first name again at the end, every
    MCV of a byte plus one again, 200000 labels read by 4000 pairs (accepted),
    1000001 YAML nodes (refused at the node past the limit), anchors and aliases,
    a second document that is not valid YAML.
Environment: WEFT_BIN, WEFT_SOURCE_DIR, WEFT_BINARY_DIR.
"""
import hashlib
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

WEFT = os.environ["WEFT_BIN"]
SRC = Path(os.environ.get("WEFT_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN = Path(os.environ.get("WEFT_BINARY_DIR", SRC / "build"))
ZETA_BIN = BIN / "bin" / "zeta"
ZETA = SRC / "examples" / "zeta" / "zeta.yaml"
BAD = Path(__file__).resolve().parent / "bad_models"
COLLIDE = BAD / "collide"
# Every weft run of this test must take less than CPU_S seconds of CPU (user and
# system: the machine may be loaded, the wall clock says little) and is killed
# after WALL_S seconds (a hang).
CPU_S = 10
WALL_S = 60

# file (relative to bad_models/) -> (models before it, line, reason)
CASES = {
    # with the built-in models
    "byte_builtin.yaml": ([], 5, "model 'zeta' (byte 'V') clashes with model 'nosv' (byte 'V') "
                                 "of built-in nosv.yaml: its byte is taken"),
    "name_builtin.yaml": ([], 4, "model 'mpi' (byte 'Z') clashes with model 'mpi' (byte 'M') of "
                                 "built-in mpi.yaml: its name is taken"),
    "collide/type_thread_state.yaml": ([], 9, "Paraver type 4 of channel 'phase' is taken by the "
                                              "built-in thread state"),
    "collide/type_lost_events.yaml": ([], 9, "Paraver type 90 of channel 'phase' is taken by the "
                                             "built-in lost events"),
    "collide/type_cpu_nrunning.yaml": ([], 9, "Paraver type 3 of channel 'phase' is taken by the "
                                              "built-in CPU channel 'number of RUNNING threads'"),
    "collide/type_nosv_channel.yaml": ([], 9, "Paraver type 15 of channel 'phase' is taken by "
                                              "channel 'body' of model 'nosv' (built-in "
                                              "nosv.yaml:19)"),
    "collide/type_ovni_marks.yaml": ([], 9, "Paraver type 150 of channel 'phase' is taken by "
                                            "channel 'mark' (types 100 to 199, one per mark type) "
                                            "of model 'ovni' (built-in ovni.yaml:31)"),
    "collide/counters_nanos6.yaml": ([], 13, "Paraver type 35 of the counters (types 35 to 134, "
                                             "one per counter) is taken by channel 'taskid' of "
                                             "model 'nanos6' (built-in nanos6.yaml:18)"),
    "collide/counters_builtin.yaml": ([], 13, "Paraver type 1 of the counters (types 1 to 100, one "
                                              "per counter) is taken by the built-in CPU channel "
                                              "'PID of the RUNNING thread'"),
    "collide/breakdown_nosv.yaml": ([], 16, "Paraver type 17 of the breakdown view is taken by the "
                                            "breakdown view of model 'nosv' (built-in "
                                            "nosv.yaml:221)"),
    "collide/marks_family.yaml": ([], 12, "channel 'mark' (types 700 to 799, one per mark type) is "
                                          "a family of mark types, and so is channel 'mark' (types "
                                          "100 to 199, one per mark type) of model 'ovni' "
                                          "(built-in ovni.yaml:31): a trace's mark types have one "
                                          "family"),
    # after a user model
    "collide/type_user_model.yaml": ([ZETA], 9, "Paraver type 701 of channel 'phase' is taken by "
                                                f"channel 'region' of model 'zeta' ({ZETA}:25)"),
    "collide/byte_user_model.yaml": ([ZETA], 5, "model 'eta' (byte 'Z') clashes with model 'zeta' "
                                                f"(byte 'Z') of {ZETA}: its byte is taken"),
    # within one model
    "collide/type_twice.yaml": ([], 13, "Paraver type 700 of channel 'region' is taken by channel "
                                        "'phase' (line 9)"),
    "collide/counters_own_channel.yaml": ([], 11, "Paraver type 700 of the counters (types 650 to "
                                                  "749, one per counter) is taken by channel "
                                                  "'phase' (line 9)"),
    "collide/channel_twice.yaml": ([], 15, "channel 'phase' is declared twice"),
    "collide/channel_twice_first.yaml": ([], 12, "channel 'phase' is declared twice"),
    "collide/channel_named_counters.yaml": ([], 11, "the counters family is the channel named "
                                                    "'counters', and so is channel 'counters' "
                                                    "(line 8)"),
    "collide/counters_set.yaml": ([], 11, "channel 'counters' is the counters family: only the "
                                          "counters action writes it"),
    "collide/marks_twice.yaml": ([], 12, "channel 'note' is a second family of mark types "
                                         "(channel 'mark', line 9, is the first): a trace's mark "
                                         "types have one family"),
    "collide/mcv_pair_and_event.yaml": ([], 18, "event ZR[ is described twice"),
    "collide/label_twice_first.yaml": ([], 16, "value 2 is labelled twice"),
}

BUILTINS = ["nanos6", "nodes", "kernel", "laplace", "mpi", "ovni", "openmp", "tampi", "nosv", "sample"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL {what}")
    return cond


def weft(*args, cwd=None):
    """Runs weft with the time limits; returns (CompletedProcess, or None when it ran
    past them, and the seconds of CPU it took)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        p = subprocess.run([WEFT, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                           timeout=WALL_S)
    except subprocess.TimeoutExpired:
        p = None
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    return (p if cpu < CPU_S else None), cpu


def tree_hash(root):
    """A hash of every path under root, with its mode and content."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        h.update(f"{p.relative_to(root)}\0{st.st_mode:o}\0".encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def refused(name, args, want, cwd=None):
    """weft ARGS exits 1 with exactly `want` on stderr and nothing on stdout."""
    p, secs = weft(*args, cwd=cwd)
    if not check(p is not None, f"{name}: weft {' '.join(map(str, args))} took {secs:.1f} s "
                 f"of CPU or ran past {WALL_S} s"):
        return secs
    check(p.returncode == 1, f"{name}: exit {p.returncode}, not 1")
    check(p.stderr == want, f"{name}: stderr\n  got  {p.stderr!r}\n  want {want!r}")
    check(p.stdout == "", f"{name}: stdout {p.stdout[:200]!r}")
    return secs


def check_cases(trace, out):
    files = sorted(f"collide/{p.name}" for p in COLLIDE.glob("*.yaml"))
    check(set(files) <= set(CASES) and all(c in files or "/" not in c for c in CASES),
          f"bad_models/collide/: files {files} != the table")
    before = (tree_hash(trace), tree_hash(out))
    for name, (models, line, reason) in CASES.items():
        args = []
        for m in models:
            args += ["--model", m]
        args += ["--model", name]
        for cmd, extra in (("emu", ["-o", out]), ("emu", []), ("dump", [])):
            want = f"weft {cmd}: {name}:{line}: {reason}\n"
            refused(f"{cmd} {' '.join(extra[:1])} {name}", [cmd, *args, *extra, trace], want,
                    cwd=BAD)
        after = (tree_hash(trace), tree_hash(out))
        check(after == before, f"{name}: the trace or the output directory changed")


def check_builtins(trace, tmp):
    p, _ = weft("emu", "--list-models")
    if check(p is not None and p.returncode == 0 and p.stderr == "",
             f"--list-models: {p and p.returncode} {p and p.stderr!r}"):
        got = [ln.split()[0] for ln in p.stdout.splitlines()[1:]]
        check(got == BUILTINS, f"--list-models: {got} != {BUILTINS}")
    # neighbours of zeta's types and of the built-in ones are free
    eta = tmp / "eta.yaml"
    eta.write_text("weft-model: 1\nname: eta\nbyte: E\nversion: 1.0.0\nchannels:\n"
                   "  - name: a\n    prv: 699\n    label: A\n  - name: b\n    prv: 703\n"
                   "    label: B\n  - name: c\n    prv: 5\n    label: C\n"
                   "  - name: d\n    prv: 89\n    label: D\n"
                   "counters: {metadata: eta.hwc, prv: 300}\n"
                   "events:\n  - mcv: EEe\n    do:\n      - set: [a, 1]\n")
    out = tmp / "ok-out"
    p, _ = weft("emu", "--model", ZETA, "--model", eta, "-q", "-o", out, trace)
    check(p is not None and p.returncode == 0 and p.stderr == "",
          f"emu with zeta and eta: {p and p.returncode} {p and p.stderr!r}")
    check((out / "thread.prv").is_file(), "emu with zeta and eta: no thread.prv")


# ------------------------------------------------------------ hostile files
HEAD = "weft-model: 1\nname: zz\nbyte: Z\nversion: 1.0.0\n"
EVENT = "events:\n  - mcv: ZPs\n    do:\n      - set: [phase, 1]\n"


def yq(s):
    """s as a double-quoted YAML scalar."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def labels_file(n, again=None):
    """A channel with n labelled values (and value `again` labelled again at the
    end); returns (text, line of the last label)."""
    lines = HEAD + "channels:\n  - name: phase\n    prv: 700\n    label: P\n    values:\n"
    body = "".join(f"      - [{i}, L{i}]\n" for i in range(n))
    last = 9 + n
    if again is not None:
        body += f"      - [{again}, again]\n"
        last += 1
    return lines + body + EVENT, last


def hostile(tmp):
    """[(name, file text, args before the file, want stderr or None, want stdout line)]."""
    cases = []
    # 100000 nested brackets: the 33rd opens on line 5
    cases.append(("nested brackets", HEAD + "events: " + "[" * 100000 + "]" * 100000 + "\n",
                  5, "lists and mappings nested deeper than 32 levels"))
    # 40 nested mappings: the root is level 1, k1 (line 6) level 2, ..., level 33 on line 37
    text = HEAD + "events:\n" + "".join(f"{'  ' * d}k{d}:\n" for d in range(1, 41))
    cases.append(("nested mappings", text, 37, "lists and mappings nested deeper than 32 levels"))
    # 300000 value labels: accepted; again with value 0 labelled at the end
    text, _ = labels_file(300000)
    cases.append(("300000 labels", text, None, None))
    text, last = labels_file(300000, again=0)
    cases.append(("300000 labels, one twice", text, last, "value 0 is labelled twice"))
    # 100000 channels, c0 again at the end (each channel is 3 lines from line 6)
    n = 100000
    text = (HEAD + "channels:\n" + "".join(f"  - name: c{i}\n    prv: {1000 + i}\n    label: C\n"
                                           for i in range(n)) +
            "  - name: c0\n" + "events:\n  - mcv: ZPs\n    do:\n      - set: [c99999, 1]\n")
    cases.append(("100000 channels", text, 6 + 3 * n, "channel 'c0' is declared twice"))
    # every MCV of the byte (the category is any printable but '*'), then ZAA again
    chars = [chr(c) for c in range(0x21, 0x7f)]
    mcvs = [f"Z{c}{v}" for c in chars if c != "*" for v in chars]
    body = "".join(f"  - mcv: {yq(m)}\n" for m in mcvs)
    text = HEAD + "events:\n" + body + "  - mcv: ZAA\n"
    cases.append(("every MCV", text, 6 + len(mcvs), "event ZAA is described twice"))
    # 200000 labels of a stack read by 4000 pairs (the last labels): accepted
    lines = HEAD + "channels:\n  - name: region\n    kind: stack\n    prv: 700\n    label: R\n" \
        "    values:\n" + "".join(f"      - [{i}, R{i}]\n" for i in range(200000))
    cats = [c for c in chars if c != "*"]
    pairs = "pairs:\n" + "".join(
        f"  - [{yq('Z' + cats[2 * (i // 94)] + chars[i % 94])}, "
        f"{yq('Z' + cats[2 * (i // 94) + 1] + chars[i % 94])}, region, {199999 - i}]\n"
        for i in range(4000))
    cases.append(("4000 pairs", lines + pairs, None, None))
    # 1000001 nodes: the lines of labels hold 3 nodes each; line 9 ends at node 19,
    # line 10 holds the values list and its first label (nodes 20 to 23), line
    # 11 + k nodes 24 + 3k to 26 + 3k
    text, _ = labels_file(333400)
    cases.append(("too many nodes", text, 11 + (1000001 - 24) // 3,
                  "more than 1000000 YAML nodes (values, lists and mappings) in one model"))
    # anchors and aliases
    text = (HEAD + "channels:\n  - name: phase\n    prv: 700\n    label: P\n"
            "    values: &v\n      - [1, One]\n  - name: other\n    values: *v\n" + EVENT)
    cases.append(("anchor", text, 9, "a YAML anchor (&v): a model file has no anchors or aliases"))
    text = HEAD + "channels:\n  - name: phase\n    label: *p\n" + EVENT
    cases.append(("alias", text, 7, "a YAML alias (*p): a model file has no anchors or aliases"))
    # a second document, not even valid YAML
    text = HEAD + EVENT.replace("    do:\n      - set: [phase, 1]\n", "") + "---\n[[[\n"
    cases.append(("second document", text, 7, "a second YAML document; a model file holds one"))
    return cases


def check_hostile(tmp, trace, out):
    before = (tree_hash(trace), tree_hash(out))
    for i, (name, text, line, reason) in enumerate(hostile(tmp)):
        f = tmp / f"hostile-{i}.yaml"
        f.write_text(text)
        if line is None:
            p, secs = weft("emu", "--model", f, "--list-models")
            if check(p is not None, f"{name}: took {secs:.1f} s of CPU or ran past {WALL_S} s"):
                want = f"zz       Z    1.0.0     ({f})"
                check(p.returncode == 0 and p.stderr == "" and want in p.stdout.splitlines(),
                      f"{name}: exit {p.returncode}, stderr {p.stderr[:300]!r}")
        else:
            secs = refused(name, ["emu", "--model", f, "-o", out, trace],
                           f"weft emu: {f}:{line}: {reason}\n")
        print(f"{name}: {secs:.2f} s of CPU ({len(text) >> 10} KiB)")
        f.unlink()
    check((tree_hash(trace), tree_hash(out)) == before,
          "hostile files: the trace or the output directory changed")


def main():
    if not check(ZETA_BIN.is_file(), f"{ZETA_BIN} is missing (build the examples)"):
        return 1
    with tempfile.TemporaryDirectory(prefix="weft-model-collide-") as tmp:
        tmp = Path(tmp)
        trace, out = tmp / "trace", tmp / "out"
        env = dict(os.environ, OVNI_TRACEDIR=str(trace))
        p = subprocess.run([str(ZETA_BIN), "2", "20"], capture_output=True, text=True, env=env,
                           cwd=tmp, timeout=60)
        if not check(p.returncode == 0 and trace.is_dir(), f"zeta: exit {p.returncode}: {p.stderr}"):
            return 1
        p, _ = weft("emu", "--model", ZETA, "-q", "-o", out, trace)
        if not check(p is not None and p.returncode == 0 and (out / "thread.prv").is_file(),
                     f"emu with zeta.yaml: {p and p.returncode} {p and p.stderr!r}"):
            return 1
        check_cases(trace, out)
        check_builtins(trace, tmp)
        check_hostile(tmp, trace, out)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print(f"ok: {len(CASES)} collisions refused, hostile files bounded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
