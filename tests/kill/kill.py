# SPDX-License-Identifier: MIT
"""Runs killed with SIGKILL: starts kill_writer (4 threads writing normal and
jumbo events through 1 MiB buffers), kills it once the files have grown, and
repeats (at most MAX_ATTEMPTS runs, each writing at most CAP bytes a thread)
until a run leaves at least one stream cut inside an event. Then checks,
against an independent reading of the stream.obs files (obsparse.py):
weft dump -x (every whole event of every stream, the warnings, exit 1),
weft top (exact counts), weft check (names every cut stream and unfinished
thread, exit 1), weft emu (refuses, exit 1) and weft emu --salvage (the
Paraver files, the summary naming the cut threads, exit 0).
Usage: kill.py KILL_WRITER"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import obsparse  # noqa: E402
from wefttest import Checker, run  # noqa: E402

MAX_ATTEMPTS = 40
NTHREADS = 4
CAP = 24 << 20          # bytes of events per thread, at most
GROWN = 3 << 20         # kill once the streams hold this much


def streams(root):
    out = []
    for d, _, files in os.walk(os.path.join(root, "ovni")):
        if "stream.obs" in files:
            out.append(os.path.relpath(d, os.path.join(root, "ovni")))
    return sorted(out)


def total(root):
    n = 0
    for rel in streams(root):
        try:
            n += os.path.getsize(os.path.join(root, "ovni", rel, "stream.obs"))
        except OSError:
            pass
    return n


def one_run(writer, root):
    env = dict(os.environ, WEFT_BUFSIZE=str(1 << 20))
    env.pop("OVNI_TRACEDIR", None)
    p = subprocess.Popen([writer, str(NTHREADS), str(CAP)], cwd=root, env=env,
                         stdout=subprocess.PIPE)
    try:
        p.stdout.readline()  # "ready": every thread has its stream
        while total(root) < GROWN and p.poll() is None:
            os.sched_yield()
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
    return p.returncode


def main():
    writer = sys.argv[1]
    c = Checker()
    top = tempfile.mkdtemp(prefix="weft-kill-")
    try:
        root = None
        for attempt in range(MAX_ATTEMPTS):
            d = os.path.join(top, "run%d" % attempt)
            os.mkdir(d)
            rc = one_run(writer, d)
            cuts = 0
            for rel in streams(d):
                with open(os.path.join(d, "ovni", rel, "stream.obs"), "rb") as f:
                    if obsparse.parse(f.read())[1] is not None:
                        cuts += 1
            if rc == -signal.SIGKILL and cuts > 0:
                root = d
                print("attempt %d: %d of %d streams cut" % (attempt + 1, cuts, NTHREADS))
                break
            shutil.rmtree(d)
        c.expect(root is not None, "no stream cut inside an event in %d killed runs"
                 % MAX_ATTEMPTS)
        if root is None:
            c.done()
        check_trace(c, root)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    c.done()


def check_trace(c, root):
    rels = streams(root)
    want_dump = {}
    counts = {}
    warns_dump, warns_top, check_lines = [], [], []
    cut_rels = []
    zero = []  # streams that hold only their header: a warning of their own
    nev = 0
    for rel in rels:
        obs = "ovni/%s/stream.obs" % rel
        with open(os.path.join(root, obs), "rb") as f:
            data = f.read()
        evs, cut = obsparse.parse(data)
        if len(data) == 8:
            zero.append("stream '%s' has zero events" % rel)
        want_dump[rel] = [obsparse.dump_x_line(clk, m, rel, pl) for _, clk, m, pl in evs]
        nev += len(evs)
        for _, _, m, _ in evs:
            counts[m] = counts.get(m, 0) + 1
        check_lines.append("weft check: ovni/%s/stream.json: ovni.finished is missing (the "
                           "thread did not end with ovni_thread_free)" % rel)
        if cut is not None:
            cut_rels.append(rel)
            warns_dump.append(obsparse.cut_warning("dump", obs, cut))
            warns_top.append(obsparse.cut_warning("top", obs, cut))
            check_lines.append("weft check: %s: offset %d: %s" % (obs, cut[0], cut[2]))
    ncut = len(cut_rels)
    plural = "" if ncut == 1 else "s"

    # weft dump -x: the lines of each stream, in its order; all of them
    code, out, err = run(["dump", "-x", "ovni"], cwd=root)
    c.eq(code, 1, "dump exit status")
    lines = out.decode("latin-1").split("\n")
    c.eq(lines[-1], "", "dump ends with a newline")
    lines = lines[:-1]
    c.eq(len(lines), nev, "dump: number of lines = whole events")
    got = {rel: [] for rel in rels}
    for ln in lines:
        rel = ln.split("  ")[2] if ln.count("  ") >= 3 else "?"
        got.setdefault(rel, []).append(ln)
    for rel in rels:
        c.eq(got[rel] == want_dump[rel], True, "dump: the whole events of %s, in order" % rel)
    errl = [x for x in err.split("\n") if x and "ovni.finished is missing" not in x]
    c.eq(sorted(errl), sorted(warns_dump + ["weft dump: warning: " + z for z in zero] + ["weft dump: %d stream%s cut short: every whole "
                                            "event was printed" % (ncut, plural)]),
         "dump: the warnings")

    # weft top
    code, out, err = run(["top", "ovni"], cwd=root)
    c.eq(code, 1, "top exit status")
    c.eq(out.decode("latin-1").split("\n")[:-1], obsparse.top_lines(counts), "top: counts")
    errl = [x for x in err.split("\n") if x and "ovni.finished is missing" not in x]
    c.eq(sorted(errl), sorted(warns_top + ["weft top: warning: " + z for z in zero] + ["weft top: %d stream%s cut short: every whole "
                                           "event was counted" % (ncut, plural)]),
         "top: the warnings")

    # weft check: every cut stream (and every unfinished thread), in stream order
    code, out, err = run(["check", "ovni"], cwd=root)
    c.eq(code, 1, "check exit status")
    c.eq(out, b"", "check: nothing on stdout")
    c.eq(err.split("\n")[:-1], ["weft check: warning: " + z for z in zero] + check_lines,
         "check: every cut stream named")

    # weft emu refuses; --salvage emulates
    code, out, err = run(["emu", "--paraver", "-o", "out-refused", "ovni"], cwd=root)
    c.eq(code, 1, "emu without --salvage: exit status")
    err = "".join(x + "\n" for x in err.split("\n")[:-1] if "has zero events" not in x)
    c.expect(err.startswith("weft emu: ovni/%s/stream.json: ovni.finished is missing" % rels[0])
             and err.endswith("`weft emu --salvage` emulates a run cut short\n"),
             "emu without --salvage: the message suggests --salvage: %r" % err)
    code, out, err = run(["emu", "--paraver", "--salvage", "-o", "out", "ovni"], cwd=root)
    c.eq(code, 0, "emu --salvage: exit status (stderr: %s)" % err[-2000:])
    for f in ("thread.prv", "thread.pcf", "thread.row", "cpu.prv", "cpu.pcf", "cpu.row"):
        c.expect(os.path.getsize(os.path.join(root, "out", f)) > 0, "emu --salvage wrote " + f)
    text = out.decode()
    c.expect(("cut short (--salvage): %d threads," % len(rels)) in text,
             "emu --salvage: the summary counts the cut threads: %r" % text)
    for rel in cut_rels:
        c.expect(("%s: last event at clock" % rel) in text and "stream cut at offset" in text,
                 "emu --salvage: the summary names %s" % rel)

    # every thread is closed at its last event: its last thread.prv state
    # record is Dead (4:3) at that clock, nothing of it follows, and no CPU
    # shows it running afterwards
    def prv(name):
        with open(os.path.join(root, "out", name)) as f:
            return [x.rstrip("\n").split(":") for x in f if x[0] == "2"]
    with open(os.path.join(root, "out", "thread.row")) as f:
        labels = [x.strip() for x in f if x.startswith("TH ")]
    tprv, cprv = prv("thread.prv"), prv("cpu.prv")
    lasts = {}
    for rel in rels:
        with open(os.path.join(root, "ovni", rel, "stream.obs"), "rb") as f:
            evs, _ = obsparse.parse(f.read())
        if evs:
            lasts[rel] = (min(e[1] for e in evs), max(e[1] for e in evs))
    first = min(v[0] for v in lasts.values())
    for rel in rels:
        tid = rel.split("thread.")[-1]
        row = str(labels.index("TH 1.%s" % tid) + 1)
        mine = [x for x in tprv if x[4] == row]
        if rel not in lasts:
            c.eq(mine, [], "emu --salvage: %s has no events and no records" % rel)
            continue
        at = lasts[rel][1] - first
        c.eq([x[5:] for x in mine if x[6] == "4"][-1:], [[str(at), "4", "3"]],
             "emu --salvage: %s ends Dead at its last clock" % rel)
        c.eq([x for x in mine if int(x[5]) > at], [],
             "emu --salvage: no record of %s after its last clock" % rel)
        c.eq([x for x in cprv if x[6] == "2" and x[7] == tid and int(x[5]) > at], [],
             "emu --salvage: no CPU shows %s running after its last clock" % rel)
        # a CPU it ran on at its last clock shows no running thread then
        for crow in {x[4] for x in cprv if x[6] == "2" and x[7] == tid and int(x[5]) == at}:
            c.eq([x[7] for x in cprv if x[4] == crow and x[6] == "2" and int(x[5]) == at][-1],
                 "0", "emu --salvage: the CPU of %s has no running thread at its last "
                 "clock" % rel)


if __name__ == "__main__":
    main()
