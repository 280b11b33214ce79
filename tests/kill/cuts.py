# SPDX-License-Identifier: MIT
"""Streams cut at chosen offsets (copies of conformance traces): mid event
header, mid payload, mid jumbo, mid stream header; exact messages and outputs
of weft dump, top, check and emu. Also a trace whose clocks include INT64_MIN
(no clock is a sentinel)."""
import json
import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import obsparse  # noqa: E402
import tracegen  # noqa: E402
from wefttest import Checker, conformance_dir, run  # noqa: E402


def copy_case(conf, case, dst):
    shutil.copytree(os.path.join(conf, case, "ovni"), os.path.join(dst, "ovni"))
    for d, _, files in os.walk(dst):
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)


def rels_of(root):
    out = []
    for d, _, files in os.walk(os.path.join(root, "ovni")):
        if "stream.json" in files:
            out.append(os.path.relpath(d, os.path.join(root, "ovni")))
    return sorted(out)


def cut(root, rel, size):
    os.truncate(os.path.join(root, "ovni", rel, "stream.obs"), size)


def stream_events(root, rel):
    with open(os.path.join(root, "ovni", rel, "stream.obs"), "rb") as f:
        return obsparse.parse(f.read())[0]


def prv_lines(root, path):
    with open(os.path.join(root, path)) as f:
        return [x.rstrip("\n") for x in f if x[0] == "2"]


def prv_at(root, path, at):
    """The state records (2:cpu:app:task:row:time:type:value) at time at."""
    return [x for x in prv_lines(root, path) if int(x.split(":")[5]) == at]


def prv_rows_after(root, path, at, pick):
    return [x for x in prv_lines(root, path)
            if int(x.split(":")[5]) > at and pick(x.split(":"))]


def expected(root):
    lines, counts, warns, check = [], {}, [], []
    for rel in rels_of(root):
        obs = "ovni/%s/stream.obs" % rel
        with open(os.path.join(root, obs), "rb") as f:
            evs, ct = obsparse.parse(f.read())
        for _, clk, m, pl in evs:
            lines.append((clk, obsparse.dump_x_line(clk, m, rel, pl)))
            counts[m] = counts.get(m, 0) + 1
        if ct is not None:
            warns.append(ct)
            check.append("weft check: %s: offset %d: %s" % (obs, ct[0], ct[2]))
    return lines, counts, warns, check


def check_case(c, name, root, want_warn_dump, want_check):
    lines, counts, _, check = expected(root)
    ncut = len(want_check)
    s = "" if ncut == 1 else "s"
    for ra in ("on", "off"):  # the read-ahead thread and without: the same
        os.environ["WEFT_READAHEAD"] = ra
        code, out, err = run(["dump", "-x", "ovni"], cwd=root)
        c.eq(code, 1, "%s: dump exit (%s)" % (name, ra))
        got = out.decode("latin-1").split("\n")[:-1]
        c.eq(sorted(got), sorted(x[1] for x in lines), "%s: dump lines (%s)" % (name, ra))
        c.eq(err, "".join(w + "\n" for w in want_warn_dump)
             + "weft dump: %d stream%s cut short: every whole event was printed\n" % (ncut, s),
             "%s: dump stderr (%s)" % (name, ra))
        code, out, err = run(["top", "ovni"], cwd=root)
        c.eq((code, out.decode().split("\n")[:-1]), (1, obsparse.top_lines(counts)),
             "%s: top (%s)" % (name, ra))
        code, out, err = run(["check", "ovni"], cwd=root)
        c.eq((code, out, err), (1, b"", "".join(x + "\n" for x in want_check)),
             "%s: check (%s)" % (name, ra))
        c.eq(check, want_check, "%s: the independent reader agrees" % name)
    del os.environ["WEFT_READAHEAD"]


def main():
    conf = conformance_dir()
    c = Checker()
    top = tempfile.mkdtemp(prefix="weft-cuts-")
    try:
        # two streams of four cut: mid event header, mid payload
        r = os.path.join(top, "mt")
        copy_case(conf, "v3/multi-thread", r)
        rels = rels_of(r)
        cut(r, rels[1], 8 + 12 + 5)       # OHx whole? no: its payload is cut
        cut(r, rels[3], 8 + 28 + 7)       # after OHx (28 bytes), 7 bytes of a header
        obs1 = "ovni/%s/stream.obs" % rels[1]
        obs3 = "ovni/%s/stream.obs" % rels[3]
        check_case(c, "multi-thread", r, [
            "weft dump: warning: %s: offset 8: stream cut: a partial event of 17 bytes at the "
            "end of the file (event OHx: payload of 16 bytes runs past the end of the file "
            "(5 bytes left)); read up to its last whole event" % obs1,
            "weft dump: warning: %s: offset 36: stream cut: a partial event of 7 bytes at the "
            "end of the file (event header cut short: 7 of 12 bytes before the end of the "
            "file); read up to its last whole event" % obs3,
        ], [
            "weft check: %s: offset 8: event OHx: payload of 16 bytes runs past the end of "
            "the file (5 bytes left)" % obs1,
            "weft check: %s: offset 36: event header cut short: 7 of 12 bytes before the end "
            "of the file" % obs3,
        ])
        # emu: refused (naming the first cut stream), --salvage emulates
        code, out, err = run(["emu", "--paraver", "-o", "o1", "ovni"], cwd=r)
        c.eq((code, err), (1, "weft emu: %s: offset 8: the stream is cut short (event OHx: "
                              "payload of 16 bytes runs past the end of the file (5 bytes "
                              "left)); `weft emu --salvage` emulates every stream up to its "
                              "last whole event\n" % obs1), "multi-thread: emu refuses")
        code, out, err = run(["emu", "--paraver", "--salvage", "-o", "o2", "ovni"], cwd=r)
        c.eq(code, 0, "multi-thread: emu --salvage exit (%s)" % err)
        text = out.decode()
        c.expect("cut short (--salvage): 2 threads, each closed at its last event; the end "
                 "checks were waived for them\n" in text, "salvage summary head: %r" % text)
        c.expect(("%s: no events; stream cut at offset 8 (a partial event of 17 bytes)\n"
                  % rels[1]) in text, "salvage summary: the thread with no events")
        c.expect(("%s: last event at clock " % rels[3]) in text and
                 "; stream cut at offset 36 (a partial event of 7 bytes)\n" in text,
                 "salvage summary: the thread cut after its first event")
        for f in ("thread.prv", "thread.pcf", "thread.row", "cpu.prv", "cpu.pcf", "cpu.row"):
            c.expect(os.path.exists(os.path.join(r, "o2", f)), "salvage wrote " + f)
        # the thread cut after its OHx is closed at that clock, as OHe would:
        # state Dead (4:3), no tid (2:0), no affinity (6:0); it leaves CPU 0.3,
        # whose running tid, pid and count go to none (after the OHx's own)
        first = min(ev[0][1] for ev in (stream_events(r, x) for x in rels) if ev)
        at = stream_events(r, rels[3])[-1][1] - first
        c.eq(prv_at(r, "o2/thread.prv", at), ["2:0:1:1:4:%d:%s" % (at, x) for x in (
            "6:4", "4:1", "2:17344", "4:3", "2:0", "6:0")], "closed thread: thread.prv")
        c.eq(prv_at(r, "o2/cpu.prv", at), ["2:0:1:1:4:%d:%s" % (at, x) for x in (
            "2:17344", "1:17341", "3:1", "7:0", "2:0", "1:0", "3:0")], "closed thread: cpu.prv")
        c.eq(prv_rows_after(r, "o2/thread.prv", at, lambda f: f[4] == "4"), [],
             "closed thread: no thread.prv record of it follows")
        c.eq(prv_rows_after(r, "o2/cpu.prv", at, lambda f: f[7] == "17344"), [],
             "closed thread: no cpu.prv record shows it running")
        c.eq(prv_rows_after(r, "o2/thread.prv", -1, lambda f: f[4] == "2"), [],
             "the thread with no events has no records")
        # a thread cut when Paused: Dead and no affinity at its last clock
        # (its tid and its CPU's rows went with the OHp itself)
        r = os.path.join(top, "paused")
        copy_case(conf, "v3/multi-thread", r)
        cut(r, rels[2], 8 + 28 + 12 + 1)  # after OHx OHp, one byte of OHr
        code, out, err = run(["emu", "--paraver", "--salvage", "-q", "-o", "o", "ovni"], cwd=r)
        c.eq(code, 0, "paused: emu --salvage exit (%s)" % err)
        at = stream_events(r, rels[2])[-1][1] - stream_events(r, rels[0])[0][1]
        c.eq(prv_at(r, "o/thread.prv", at), ["2:0:1:1:3:%d:%s" % (at, x) for x in (
            "4:2", "2:0", "4:3", "6:0")], "paused thread: thread.prv")
        c.eq(prv_at(r, "o/cpu.prv", at), ["2:0:1:1:3:%d:%s" % (at, x) for x in (
            "2:0", "1:0", "3:0")], "paused thread: cpu.prv")
        c.eq(prv_rows_after(r, "o/thread.prv", at, lambda f: f[4] == "3"), [],
             "paused thread: no thread.prv record of it follows")
        # a trace without cuts: --salvage writes the same bytes
        r = os.path.join(top, "whole")
        copy_case(conf, "v3/multi-thread", r)
        outs = []
        for flags in ([], ["--salvage"]):
            code, out, err = run(["emu", "-o", "o"] + flags + ["ovni"], cwd=r)
            c.eq((code, err), (0, ""), "whole: emu %s" % flags)
            files = {"stdout": out}
            for d, _, names in os.walk(os.path.join(r, "o")):
                for f in names:
                    with open(os.path.join(d, f), "rb") as fh:
                        files[os.path.relpath(os.path.join(d, f), os.path.join(r, "o"))] = \
                            fh.read()
            shutil.rmtree(os.path.join(r, "o"))
            outs.append(files)
        c.eq(sorted(f for f in outs[0] if not f.startswith("cfg/")),
             ["cpu.pcf", "cpu.prv", "cpu.row", "perfetto.pftrace", "stdout", "thread.pcf",
              "thread.prv", "thread.row"], "whole: the timelines were written")
        c.expect("cfg/thread/ovni.thread.state.cfg" in outs[0], "whole: the view files too")
        for f in sorted(outs[0]):
            c.expect(outs[1].get(f) == outs[0][f],
                     "whole: %s is the same with and without --salvage" % f)

        # a thread killed before it flushed its metadata: no ovni.finished and no
        # ovni.require in its stream.json (libovni writes them at
        # ovni_thread_free or ovni_attr_flush)
        r = os.path.join(top, "noreq")
        copy_case(conf, "v3/multi-thread", r)
        rel = rels_of(r)[1]
        jpath = os.path.join(r, "ovni", rel, "stream.json")
        with open(jpath, encoding="utf-8") as f:
            doc = json.load(f)
        del doc["ovni"]["require"], doc["ovni"]["finished"]
        with open(jpath, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        js = "ovni/%s/stream.json" % rel
        code, out, err = run(["emu", "-q", "--salvage", "-o", "o", "ovni"], cwd=r)
        c.eq((code, err), (0, "weft emu: warning: %s: ovni.finished is missing (the thread did "
                              "not end with ovni_thread_free): accepted as a thread cut short\n"
                              "weft emu: warning: %s: ovni.require is missing too: the thread is "
                              "taken to require no model (its events of other models than ovni "
                              "are refused; -a enables every model)\n" % (js, js)),
             "no require, no finished: emu --salvage")
        code, out, err = run(["check", "ovni"], cwd=r)
        c.eq((code, out, err), (1, b"", "weft check: %s: ovni.finished is missing (the thread did "
                                       "not end with ovni_thread_free)\n" % js),
             "no require, no finished: check names the thread")

        # mid jumbo (the 102400-byte jumbo of v3/jumbo), and a stream header cut
        r = os.path.join(top, "jumbo")
        copy_case(conf, "v3/jumbo", r)
        rel = rels_of(r)[0]
        with open(os.path.join(r, "ovni", rel, "stream.obs"), "rb") as f:
            evs, _ = obsparse.parse(f.read())
        big = [e for e in evs if len(e[3]) == 4 + 102400][0]
        cut(r, rel, big[0] + 16 + 50000)
        obs = "ovni/%s/stream.obs" % rel
        check_case(c, "jumbo", r, [
            "weft dump: warning: %s: offset %d: stream cut: a partial event of 50016 bytes at "
            "the end of the file (jumbo event OU[: size 102400 runs past the end of the file "
            "(50000 bytes left after the size field)); read up to its last whole event"
            % (obs, big[0])], [
            "weft check: %s: offset %d: jumbo event OU[: size 102400 runs past the end of "
            "the file (50000 bytes left after the size field)" % (obs, big[0])])
        cut(r, rel, big[0] + 14)
        check_case(c, "jumbo size field", r, [
            "weft dump: warning: %s: offset %d: stream cut: a partial event of 14 bytes at "
            "the end of the file (jumbo event OU[: size field cut short by the end of the "
            "file); read up to its last whole event" % (obs, big[0])], [
            "weft check: %s: offset %d: jumbo event OU[: size field cut short by the end of "
            "the file" % (obs, big[0])])
        cut(r, rel, 6)
        check_case(c, "stream header", r, [
            "weft dump: warning: %s: offset 0: stream cut: a partial stream header of 6 "
            "bytes (truncated stream header: 6 of 8 bytes); the stream has no events" % obs], [
            "weft check: %s: offset 0: truncated stream header: 6 of 8 bytes" % obs])
        # a partial header that is not the start of one: not a cut, an error
        with open(os.path.join(r, "ovni", rel, "stream.obs"), "wb") as f:
            f.write(b"ovnj")
        code, out, err = run(["dump", "ovni"], cwd=r)
        c.eq((code, err), (1, "weft dump: %s: offset 0: truncated stream header: 4 of 8 "
                              "bytes\n" % obs), "a bad partial header is an error")

        # INT64_MIN is a clock like any other
        r = os.path.join(top, "min")
        m = -(1 << 63)
        u = 1 << 63  # the same 8 bytes, as tracegen packs them (unsigned)
        a = tracegen.thread_rel("vm", 1, 1)
        b = tracegen.thread_rel("vm", 1, 2)
        tracegen.write_stream(r, "ovni/" + a, tracegen.meta(1, 1),
                              [tracegen.ev("OU[", u), tracegen.ev("OU]", u),
                               tracegen.ev("OB.", u + 5)])
        tracegen.write_stream(r, "ovni/" + b, tracegen.meta(2, 1),
                              [tracegen.ev("OB.", u)])
        code, out, err = run(["dump", "-x", "ovni"], cwd=r)
        # equal clocks: in the merge heap's order, as the reference's
        c.eq((code, out.decode(), err), (0, "".join(
            "%d  %s  %s  \n" % (clk, mcv, rel) for clk, mcv, rel in
            [(m, "OU[", a), (m, "OB.", b), (m, "OU]", a), (m + 5, "OB.", a)]), ""),
            "INT64_MIN: dump")
        code, out, err = run(["check", "ovni"], cwd=r)
        c.eq((code, out.decode(), err), (0, "weft check: ovni: valid: 2 streams, 1 loom, 1 "
                                            "process, 2 threads, 4 events, from %d to %d ns "
                                            "(span 5 ns); the models' rules were not checked (use --models)\n" % (m, m + 5), ""),
             "INT64_MIN: check")
        tracegen.write_stream(r, "ovni/" + a, tracegen.meta(1, 1), [tracegen.ev("OB.", u)])
        os.remove(os.path.join(r, "ovni", b, "stream.obs"))
        shutil.rmtree(os.path.join(r, "ovni", b))
        code, out, err = run(["check", "ovni"], cwd=r)
        c.eq((code, out.decode(), err), (0, "weft check: ovni: valid: 1 stream, 1 loom, 1 "
                                            "process, 1 thread, 1 event, from %d to %d ns "
                                            "(span 0 ns); the models' rules were not checked (use --models)\n" % (m, m), ""),
             "INT64_MIN: the only clock")
        # the widest span: INT64_MIN to INT64_MAX (2^64 - 1 ns, printed unsigned)
        tracegen.write_stream(r, "ovni/" + a, tracegen.meta(1, 1),
                              [tracegen.ev("OB.", u), tracegen.ev("OB.", (1 << 63) - 1)])
        code, out, err = run(["check", "ovni"], cwd=r)
        c.eq((code, out.decode(), err), (0, "weft check: ovni: valid: 1 stream, 1 loom, 1 "
                                            "process, 1 thread, 2 events, from %d to %d ns "
                                            "(span %d ns); the models' rules were not checked (use --models)\n" % (m, (1 << 63) - 1, (1 << 64) - 1),
                                            ""),
             "INT64_MIN to INT64_MAX: the span does not overflow")
    finally:
        shutil.rmtree(top, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
