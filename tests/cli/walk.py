# SPDX-License-Identifier: MIT
"""The reader's walk and the rules of the whole trace, through weft dump, check
and emu: directory loops (each stream read once, a warning naming the link),
app_id per process and ovni.lib.* per stream (refused when strict, warned when
lenient), refusals that name the files, clock offsets that would overflow, and
paths inside a trace (a loom, process or thread directory) whose system comes
from the whole trace. Exact exit codes, stdout and stderr; every temporary
directory is removed."""
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tracegen import ev, meta, simple_events, thread_rel, write_stream  # noqa: E402
from wefttest import Checker, conformance_dir, run  # noqa: E402

T1 = thread_rel("vm", 1, 1)
J1 = "t/" + T1 + "/stream.json"
DUMP1 = ("       100  OHx  loom.vm/proc.1/thread.1  starts running on CPU 0; "
         "created by thread -1 with tag 0x0\n"
         "       110  OHe  loom.vm/proc.1/thread.1  finishes: the thread ends\n")
VALID1 = ("weft check: t: valid: 1 stream, 1 loom, 1 process, 1 thread, 2 events, "
          "from 100 to 110 ns (span 10 ns); the models' rules were not checked (use --models)\n")


def one(**over):
    def build(root):
        write_stream(root, T1, meta(1, 1, **over), simple_events(100))
    return build


def loop_in_proc(root):
    one()(root)
    os.symlink("..", os.path.join(root, "loom.vm/proc.1/loop"))


def loop_at_root(root):
    one()(root)
    os.symlink(".", os.path.join(root, "loop"))


def alias(root):
    one()(root)
    os.symlink("loom.vm", os.path.join(root, "alias"))


def five(**over):
    """Five threads of process 1."""
    def build(root):
        for tid in range(1, 6):
            write_stream(root, thread_rel("vm", 1, tid), meta(tid, 1, **over),
                         simple_events(100 + tid))
    return build


def app_id_elsewhere(root):
    """Only thread 1 gives app_id: enough for the process, also from thread 2's dir."""
    write_stream(root, T1, meta(1, 1), simple_events(100))
    write_stream(root, thread_rel("vm", 1, 2), meta(2, 1, app_id=None, cpus=None),
                 simple_events(105))


BIG = 9000000000000000000


def clock_overflow(root):
    write_stream(root, T1, meta(1, 1), [ev("OHx", BIG, b"\0" * 16), ev("OHe", BIG + 10)])
    with open(os.path.join(root, "clock-offsets.txt"), "w", encoding="utf-8") as f:
        f.write("rank hostname offset_median offset_mean offset_std\n"
                "0 vm 500000000000000000 0 0\n")


def clock_overflow_later(root):
    """The first clock fits with the offset, a later one does not."""
    write_stream(root, T1, meta(1, 1), [ev("OHx", BIG, b"\0" * 16), ev("OHe", BIG + 10 ** 17)])
    with open(os.path.join(root, "clock-offsets.txt"), "w", encoding="utf-8") as f:
        f.write("rank hostname offset_median offset_mean offset_std\n"
                "0 vm 200000000000000000 0 0\n")


def w(tool, msg):
    return f"weft {tool}: warning: {msg}\n"


def e(tool, msg):
    return f"weft {tool}: {msg}\n"


LOOP_PROC = "t/loom.vm/proc.1/loop: a link loop: it leads back to t/loom.vm, which contains it; not followed"
LOOP_ROOT = "t/loop: a link loop: it leads back to t, which contains it; not followed"
ALIAS = "t/loom.vm: leads to t/alias, which was read already; not followed"
FIVE = ", ".join(f"t/loom.vm/proc.1/thread.{i}/stream.json" for i in (1, 2, 3)) + " and 2 more"
NO_APP = f"process 1 of loom 'vm': none of its streams gives ovni.app_id ({J1})"
NO_APP5 = f"process 1 of loom 'vm': none of its streams gives ovni.app_id ({FIVE})"
NO_CPU5 = f"loom 'vm' has no CPUs: none of its streams gives ovni.loom_cpus ({FIVE})"
OVF2 = ("t/loom.vm/proc.1/thread.1/stream.obs: offset 36: clock 9100000000000000000 with the "
        "clock offset 200000000000000000 of its loom is outside the signed 64-bit range")
OVF = ("t/clock-offsets.txt: line 2: the offset 500000000000000000 of host 'vm' takes the first "
       "clock of t/loom.vm/proc.1/thread.1/stream.obs, 9000000000000000000, outside the signed "
       "64-bit range")

# (name, builder, argv, (exit code, stdout, stderr))
CASES = [
    ("loop-in-proc-dump", loop_in_proc, ["dump", "t"], (0, DUMP1, w("dump", LOOP_PROC))),
    ("loop-in-proc-check", loop_in_proc, ["check", "t"], (0, VALID1, w("check", LOOP_PROC))),
    ("loop-at-root-dump", loop_at_root, ["dump", "t"], (0, DUMP1, w("dump", LOOP_ROOT))),
    ("loop-at-root-check", loop_at_root, ["check", "t"], (0, VALID1, w("check", LOOP_ROOT))),
    ("alias-dump", alias, ["dump", "t"],
     (0, DUMP1.replace("loom.vm/", "alias/"), w("dump", ALIAS))),
    ("no-app-id-check", one(app_id=None), ["check", "t"], (1, "", e("check", NO_APP))),
    ("no-app-id-emu", one(app_id=None), ["emu", "-q", "-o", "out", "t"],
     (1, "", e("emu", NO_APP))),
    ("no-app-id-dump", one(app_id=None), ["dump", "t"], (0, DUMP1, w("dump", NO_APP))),
    ("no-app-id-five-check", five(app_id=None), ["check", "t"], (1, "", e("check", NO_APP5))),
    ("app-id-elsewhere-check", app_id_elsewhere, ["check", "t/loom.vm/proc.1/thread.2"],
     (0, "weft check: t/loom.vm/proc.1/thread.2: valid: 1 stream, 1 loom, 1 process, 1 thread, "
         "2 events, from 105 to 115 ns (span 10 ns); the models' rules were not checked (use --models)\n", "")),
    ("no-lib-version-check", one(lib={"commit": "x"}), ["check", "t"],
     (1, "", e("check", f"{J1}: ovni.lib.version is missing"))),
    ("no-lib-version-emu", one(lib={"commit": "x"}), ["emu", "-q", "-o", "out", "t"],
     (1, "", e("emu", f"{J1}: ovni.lib.version is missing"))),
    ("no-lib-version-dump", one(lib={"commit": "x"}), ["dump", "t"],
     (0, DUMP1, w("dump", f"{J1}: ovni.lib.version is missing"))),
    ("no-lib-commit-check", one(lib={"version": "1.14.0"}), ["check", "t"],
     (1, "", e("check", f"{J1}: ovni.lib.commit is missing"))),
    ("no-lib-commit-emu", one(lib={"version": "1.14.0"}), ["emu", "-q", "-o", "out", "t"],
     (1, "", e("emu", f"{J1}: ovni.lib.commit is missing"))),
    ("no-lib-commit-dump", one(lib={"version": "1.14.0"}), ["dump", "t"],
     (0, DUMP1, w("dump", f"{J1}: ovni.lib.commit is missing"))),
    ("no-lib-dump", one(lib=None), ["dump", "t"],
     (0, DUMP1, w("dump", f"{J1}: ovni.lib.version is missing")
      + w("dump", f"{J1}: ovni.lib.commit is missing"))),
    ("lib-not-object-check", one(lib=3), ["check", "t"],
     (1, "", e("check", f"{J1}: ovni.lib is an integer, expected an object"))),
    ("no-cpus-five-check", five(cpus=None), ["check", "t"], (1, "", e("check", NO_CPU5))),
    ("clock-overflow-check", clock_overflow, ["check", "t"], (1, "", e("check", OVF))),
    ("clock-overflow-emu", clock_overflow, ["emu", "-q", "-o", "out", "t"],
     (1, "", e("emu", OVF))),
    ("clock-overflow-later-check", clock_overflow_later, ["check", "t"], (1, "", e("check", OVF2))),
    ("clock-overflow-later-emu", clock_overflow_later, ["emu", "-q", "-o", "out", "t"],
     (1, "", e("emu", OVF2))),
    ("clock-overflow-dump", clock_overflow, ["dump", "t"],
     (0, "9000000000000000000  OHx  loom.vm/proc.1/thread.1  starts running on CPU 0; "
         "created by thread 0 with tag 0x0\n"
         "9000000000000000010  OHe  loom.vm/proc.1/thread.1  finishes: the thread ends\n",
      w("dump", OVF + "; clock offsets not applied"))),
]


def synthetic(c):
    for name, build, argv, want in CASES:
        tmp = tempfile.mkdtemp(prefix="weft-walk-")
        try:
            root = os.path.join(tmp, "t")
            os.mkdir(root)
            build(root)
            rc, out, err = run(argv, cwd=tmp)
            c.eq((rc, out.decode("utf-8", "replace"), err), want, f"{name}: weft {' '.join(argv)}")
        finally:
            shutil.rmtree(tmp)


def rows(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def corpus(c, conf):
    two = os.path.join(conf, "v3", "two-procs")
    # check on a thread dir and a process dir: the CPUs come from the other process
    for sub, want in [
        ("ovni/loom.vm/proc.17372/thread.17373",
         "1 stream, 1 loom, 1 process, 1 thread, 8 events, from 484644256502 to 484644984313 ns "
         "(span 727811 ns)"),
        ("ovni/loom.vm/proc.17372",
         "2 streams, 1 loom, 1 process, 2 threads, 13 events, from 484644181233 to 484645240117 ns "
         "(span 1058884 ns)"),
    ]:
        c.eq(run(["check", sub], cwd=two), (0, f"weft check: {sub}: valid: {want}; the models' rules were not checked (use --models)\n".encode(), ""),
             f"two-procs: weft check {sub}")
    # dump on a thread dir: the whole trace's lines of that stream, relpath '.'
    rc, whole, err = run(["dump", "ovni"], cwd=two)
    c.eq((rc, err), (0, ""), "two-procs: weft dump ovni")
    rel = "loom.vm/proc.17372/thread.17373"
    mine = [ln.replace(f"  {rel}  ", "  .  ") for ln in whole.decode().splitlines(True)
            if f"  {rel}  " in ln]
    c.eq(len(mine), 8, "two-procs: 8 events of thread 17373")
    c.eq(run(["dump", "ovni/" + rel], cwd=two), (0, "".join(mine).encode(), ""),
         "two-procs: weft dump on a thread dir")
    # emu on a process dir: every CPU of the trace, the given threads only
    tmp = tempfile.mkdtemp(prefix="weft-walk-")
    try:
        out = os.path.join(tmp, "out")
        rc, o, err = run(["emu", "--paraver", "-q", "-o", out, "ovni/loom.vm/proc.17372"], cwd=two)
        c.eq((rc, o, err), (0, b"", ""), "two-procs: weft emu on a process dir")
        c.eq(sorted(os.listdir(out)), ["cfg", "cpu.pcf", "cpu.prv", "cpu.row", "thread.pcf",
                                       "thread.prv", "thread.row"], "two-procs: emu files")
        c.eq(rows(os.path.join(out, "cpu.row")), rows(os.path.join(two, "emu", "cpu.row")),
             "two-procs: cpu.row of a process dir = the whole trace's")
        c.eq(rows(os.path.join(out, "thread.row")),
             "LEVEL NODE SIZE 1\nhostname\n\nLEVEL THREAD SIZE 2\nTH 2.17372\nTH 2.17373\n",
             "two-procs: thread.row of a process dir")
        with open(os.path.join(out, "thread.prv"), encoding="utf-8") as f:
            head = f.readline()
            objs = sorted({ln.split(":")[4] for ln in f if ln.startswith("2:")})
        c.eq(head, "#Paraver (19/01/38 at 03:14):00000000000001058884_ns:0:1:1(2:1)\n",
             "two-procs: thread.prv header (2 threads, span of the process)")
        c.eq(objs, ["1", "2"], "two-procs: thread.prv records of threads 1 and 2 only")
    finally:
        shutil.rmtree(tmp)
    # the offsets file of the trace dir applies on a loom dir (+5 ms on hostB)
    edited = os.path.join(conf, "v3", "clock-offsets-edited")
    c.eq(run(["check", "ovni/loom.hostB.1"], cwd=edited),
         (0, b"weft check: ovni/loom.hostB.1: valid: 2 streams, 2 looms, 1 process, 2 threads, "
             b"13 events, from 485014586043 to 485015884930 ns (span 1298887 ns); the models' rules were not checked (use --models)\n", ""),
         "clock-offsets-edited: weft check on a loom dir")
    # v1: the second process has no cpus in its metadata.json
    v1 = os.path.join(conf, "v1", "two-procs")
    c.eq(run(["check", "ovni/loom.vm/proc.21807"], cwd=v1),
         (0, b"weft check: ovni/loom.vm/proc.21807: valid: 2 streams, 1 loom, 1 process, "
             b"2 threads, 12 events, from 535147906411 to 535148738140 ns (span 831729 ns); the models' rules were not checked (use --models)\n", ""),
         "v1/two-procs: weft check on a process dir")


def main():
    c = Checker()
    synthetic(c)
    corpus(c, conformance_dir())
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
