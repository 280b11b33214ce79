# SPDX-License-Identifier: MIT
"""weft split --by task on the runtime-model cases of the corpus (nosv, nanos6,
openmp): every event of the trace is in exactly one file, each file in clock
order, and each runtime task's events in its own file.

The expected files are computed here, independently of weft's task code: from
`weft split --by thread` (each thread's events in stream order, as e records),
the task events (creation, execute/resume, end/pause) of each model, listed
below by MCV, with each thread's stack of running tasks: an event naming a task
goes to task.MODEL.ID; another one to the innermost task its thread runs, else
to its thread's file; the kernel model's events to `kernel`. Each actual file
must hold exactly the expected records (as a multiset: events of several
threads with equal clocks may come in either order), in nondecreasing clock
order, and the records of all files must be as many as `weft dump` prints
events.
"""
import collections
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import Checker, conformance_dir, weft_bin  # noqa: E402

MODELS = {"V": "nosv", "6": "nanos6", "P": "openmp"}
CREATE = {"VTc", "VTC", "6Tc", "PPc"}
TASK_IN = {"VTx", "VTr", "6Tx", "6Tr", "PPx"}
TASK_OUT = {"VTe", "VTp", "6Te", "6Tp", "PPe"}
CASES = ([f"rand-nosv-{i}" for i in range(8)] + [f"rand-nanos6-{i}" for i in range(8)]
         + ["mix-0", "mix-3", "mix-6", "mix-7", "mix-8", "mix-10", "mix-11"])
TIMEOUT = 60


def weft(*args):
    return subprocess.run([weft_bin()] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=TIMEOUT)


def read_tree(d):
    """{'proc/file': [lines]} of a split output (index left out)."""
    out = {}
    for p in sorted(os.listdir(d)):
        if p == "index":
            continue
        for f in sorted(os.listdir(os.path.join(d, p))):
            with open(os.path.join(d, p, f), "rb") as fh:
                out[f"{p}/{f}"] = fh.read().decode().splitlines()
    return out


def expected(by_thread):
    """The files --by task must write, from the thread files."""
    files = collections.defaultdict(list)
    for path, lines in by_thread.items():
        proc, name = path.split("/")
        stack = []
        for line in lines:
            tag, _clk, mcv, _fl, pay = line.split(" ")
            assert tag == "e", line
            if mcv[0] == "K":
                files[f"{proc}/kernel"].append(line)
                continue
            if mcv in CREATE or mcv in TASK_IN or mcv in TASK_OUT:
                tid = int.from_bytes(bytes.fromhex(pay[:8]), "little")
                f = f"{proc}/task.{MODELS[mcv[0]]}.{tid}"
                files[f].append(line)
                if mcv in TASK_IN:
                    stack.append(f)
                elif mcv in TASK_OUT and f in stack:
                    del stack[len(stack) - 1 - stack[::-1].index(f)]
                continue
            files[stack[-1] if stack else f"{proc}/{name}"].append(line)
    return files


def main():
    corpus = os.path.join(conformance_dir(), "models")
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-split-")
    seen_models = set()
    try:
        for case in CASES:
            trace = os.path.join(corpus, case, "ovni")
            th, tk = os.path.join(tmp, case + ".thread"), os.path.join(tmp, case + ".task")
            p = weft("split", "--by", "thread", "-q", trace, "-o", th)
            c.eq((p.returncode, p.stderr), (0, b""), f"{case}: split --by thread")
            p = weft("split", "--by", "task", trace, "-o", tk)
            c.eq(p.returncode, 0, f"{case}: split --by task: {p.stderr!r}")
            if p.returncode != 0:
                continue
            got, want = read_tree(tk), expected(read_tree(th))
            dump = weft("dump", trace)
            nev = len(dump.stdout.splitlines())
            c.eq(sum(len(v) for v in got.values()), nev,
                 f"{case}: records of all files = events of weft dump")
            c.eq(sorted(got), sorted(want), f"{case}: the files")
            for f in sorted(got):
                c.eq(collections.Counter(got[f]), collections.Counter(want.get(f, [])),
                     f"{case}: {f}: its records")
                clocks = [int(line.split(" ")[1], 16) for line in got[f]]
                c.expect(clocks == sorted(clocks), f"{case}: {f}: clock order")
                if "/task." in f:
                    seen_models.add(f.split("/task.")[1].split(".")[0])
            c.eq(p.stdout.decode(), f"{tk}: 1 process, {len(got)} file{'s' if len(got) != 1 else ''}, "
                 f"{nev} records\n",
                 f"{case}: summary line")
            with open(os.path.join(tk, "index"), encoding="utf-8") as fh:
                idx = fh.read().splitlines()
            c.eq(idx[1], "# by: task", f"{case}: index: by")
            c.eq([x for x in idx if not x.startswith("#")],
                 [f"{f} {len(got[f])}" for f in sorted(got)], f"{case}: index: files")
        c.eq(sorted(seen_models), ["nanos6", "nosv", "openmp"], "task files of every model")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
