# SPDX-License-Identifier: MIT
"""The synthetic cases of errors.py: (name, builder, argv)."""
import os
import struct

from tracegen import HEADER, ev, meta, simple_events, thread_rel, write_stream

T1 = thread_rel("vm", 1, 1)


def one(m, events=None, **kw):
    def build(root):
        write_stream(root, T1, m, simple_events(100) if events is None else events, **kw)
    return build


def two(m1, m2, rel2=thread_rel("vm", 1, 2)):
    def build(root):
        write_stream(root, T1, m1, simple_events(100))
        write_stream(root, rel2, m2, simple_events(105))
    return build


def clkoff(text, looms=("hostA.0", "hostB.1")):
    def build(root):
        for i, loom in enumerate(looms):
            write_stream(root, thread_rel(loom, 10 + i, 10 + i), meta(10 + i, 10 + i, loom=loom),
                         simple_events(1000 + i))
        with open(os.path.join(root, "clock-offsets.txt"), "w", encoding="utf-8") as f:
            f.write(text)
    return build


HDR = "rank hostname offset_median offset_mean offset_std\n"


def v1(meta_text, files=("thread.1",), procdir="loom.vm/proc.1"):
    def build(root):
        d = os.path.join(root, procdir)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "metadata.json"), "w", encoding="utf-8") as f:
            f.write(meta_text)
        for name in files:
            with open(os.path.join(d, name), "wb") as f:
                f.write(HEADER + b"".join(simple_events(100)))
    return build


def nothing(root):
    pass


def readme_only(root):
    with open(os.path.join(root, "README"), "w", encoding="utf-8") as f:
        f.write("hello\n")


def a_file(root):
    with open(os.path.join(root, "file"), "w", encoding="utf-8") as f:
        f.write("x")


def offsets_order(root):
    # hostB's raw clocks are earlier, but its offset puts it after hostA.
    write_stream(root, thread_rel("hostA.0", 10, 10), meta(10, 10, loom="hostA.0"),
                 simple_events(1000))
    write_stream(root, thread_rel("hostB.1", 11, 11), meta(11, 11, loom="hostB.1"),
                 simple_events(500))
    with open(os.path.join(root, "clock-offsets.txt"), "w", encoding="utf-8") as f:
        f.write(HDR + "0 hostA 0 0 0\n1 hostB 1000.9 0 0\n")


def ties(root):
    for tid in (1, 2, 3):
        write_stream(root, thread_rel("vm", 1, tid), meta(tid, 1),
                     [ev("OB.", 5), ev("OB.", 5), ev("OHe", 7)])


def deep(root):
    d = root
    for i in range(70):
        d = os.path.join(d, "d")
    os.makedirs(d)


def big_json(root):
    one(m())(root)
    with open(os.path.join(root, T1, "stream.json"), "r+b") as f:
        f.truncate(17 << 20)  # sparse


def obs_dir(root):
    write_stream(root, T1, m(), obs=False)
    os.mkdir(os.path.join(root, T1, "stream.obs"))


def mark_order(root):
    """Mark type 1 (a stack): 2 and 3 pushed, then 2 popped before 3, which the
    mark model refuses (weft emu; weft check --models)."""
    d = meta(1, 1)
    d["ovni"]["mark"] = {"1": {"title": "phase", "chan_type": "stack"}}
    write_stream(root, T1, d, [simple_events(100)[0],
                               ev("OM[", 101, struct.pack("<qi", 2, 1)),
                               ev("OM[", 102, struct.pack("<qi", 3, 1)),
                               ev("OM]", 103, struct.pack("<qi", 2, 1)),
                               ev("OHe", 110)])


def m(cpus=((0, 0),), **kw):
    """meta(1, 1) with keys of "ovni" replaced (None: removed)."""
    d = meta(1, 1, cpus=cpus)
    for k, v in kw.items():
        if v is None:
            d["ovni"].pop(k, None)
        else:
            d["ovni"][k] = v
    return d


CPU2 = ((0, 0), (1, 1))


def mw(weft, **kw):
    """m(**kw) with weft's own object (the loss keys of obs_format.h)."""
    d = m(**kw)
    d["weft"] = weft
    return d


# simple_events(100): OHx at offset 8 (28 bytes), OHe at offset 36; the file
# is 48 bytes. Three runs: before OHx, before OHe, after the last event.
RING = {"ring": {"size": 4096, "lost_events": 5, "lost_bytes": 72,
                 "lost": [[10, 50, 3, 48, 8], [101, 104, 1, 12, 36], [120, 130, 1, 12, 48]]},
        "lost_events": 2}
RING_NO_OFFSETS = {"ring": {"size": 64, "lost_events": 2, "lost_bytes": 24,
                            "lost": [[10, 50, 1, 12], [105, 110, 1, 12]]}}


def with_files(names):
    """A valid one-stream trace plus extra files at its top."""
    def build(root):
        write_stream(root, T1, meta(1, 1), simple_events(100))
        for n in names:
            with open(os.path.join(root, n), "w", encoding="utf-8") as f:
                f.write("x\n")
    return build

def reference_emu_dir(extra=()):
    """A valid trace into which the reference's ovniemu wrote: Paraver files
    at the top and its cfg/ tree of Paraver configurations (plus extra)."""
    def build(root):
        write_stream(root, T1, meta(1, 1), simple_events(100))
        names = ["cpu.prv", "cpu.pcf", "cpu.row", "thread.prv", "thread.pcf", "thread.row",
                 "breakdown.prv", "cfg/cpu/ovni/pid.cfg", "cfg/cpu/ovni/tid.cfg",
                 "cfg/thread/ovni/state.cfg", "cfg/thread/nosv/subsystem.cfg",
                 "cfg/cpu/nosv/breakdown/subsystem.cfg"] + list(extra)
        for n in names:
            path = os.path.join(root, n)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write("x\n")
    return build


def clocks(*evs):
    """One stream of the given (MCV, clock) events."""
    return one(m(), events=[ev(mcv, c) for mcv, c in evs])


# a clock going back inside an unordered region (twice), as nOS-V writes them
UNORDERED = clocks(("OHx", 100), ("OU[", 110), ("OB.", 105), ("OB.", 106), ("OU]", 120),
                   ("OU[", 130), ("OB.", 125), ("OU]", 131), ("OHe", 140))
# a clock going back outside any region
BACKWARDS = clocks(("OHx", 100), ("OB.", 110), ("OB.", 105), ("OU[", 111), ("OU]", 112),
                   ("OHe", 120))
# the OU] that closes a region goes back: outside (the region has ended)
BACK_AT_CLOSE = clocks(("OHx", 100), ("OU[", 110), ("OB.", 115), ("OU]", 112), ("OHe", 120))
# 13 clocks going back outside regions: 10 warned, then a count
MANY_BACK = clocks(*([("OHx", 100)] + [("OB.", 200 - 5 * (i % 2)) for i in range(26)]
                     + [("OHe", 300)]))


def unordered_two(root):
    """Two streams whose regions interleave: the merge orders by the clocks
    as they are (the reference's heap)."""
    write_stream(root, T1, m(), [ev("OHx", 100), ev("OU[", 120), ev("OB.", 103),
                                 ev("OB.", 108), ev("OU]", 121), ev("OHe", 130)])
    write_stream(root, thread_rel("vm", 1, 2), meta(2, 1),
                 [ev("OHx", 101), ev("OB.", 104), ev("OU[", 110), ev("OB.", 102),
                  ev("OU]", 111), ev("OHe", 131)])


CASES = [
    # unordered regions, backwards clocks
    ("unordered-dump", UNORDERED, ["dump", "-x", "t"]),
    ("unordered-top", UNORDERED, ["top", "t"]),
    ("unordered-check", UNORDERED, ["check", "t"]),
    ("unordered-two-dump", unordered_two, ["dump", "-x", "t"]),
    ("unordered-two-check", unordered_two, ["check", "t"]),
    ("backwards-dump", BACKWARDS, ["dump", "-x", "t"]),
    ("backwards-top", BACKWARDS, ["top", "t"]),
    ("backwards-check", BACKWARDS, ["check", "t"]),
    ("backwards-at-close-check", BACK_AT_CLOSE, ["check", "t"]),
    ("backwards-at-close-dump", BACK_AT_CLOSE, ["dump", "-x", "t"]),
    ("backwards-many-top", MANY_BACK, ["top", "t"]),
    # a trace dir the reference emulator wrote into
    ("emu-cfg-check", reference_emu_dir(), ["check", "t"]),
    ("emu-cfg-dump", reference_emu_dir(), ["dump", "t"]),
    ("emu-cfg-top", reference_emu_dir(), ["top", "t"]),
    ("emu-cfg-strays", reference_emu_dir(["cfg/README", "x.cfg", "loom.vm/cfg/a.cfg",
                                          "sub/cpu.prv", "cfg.prv.txt"]), ["check", "t"]),
    # usage
    ("help-dump", nothing, ["dump", "--help"]),
    ("dump-model-no-file", nothing, ["dump", "--model"]),
    ("emu-outputs-quiet", with_files(["thread.prv", "thread.pcf", "thread.row", "cpu.prv",
                                      "cpu.pcf", "cpu.row", "perfetto.pftrace"]), ["check", "t"]),
    ("emu-outputs-and-readme", with_files(["cpu.prv", "README"]), ["check", "t"]),
    ("help-top", nothing, ["top", "-h"]),
    # --follow on traces that are not growing (tests/follow has the live ones)
    ("dump-follow-finished", two(meta(1, 1), meta(2, 1)), ["dump", "--follow", "t"]),
    ("top-follow-finished", two(meta(1, 1), meta(2, 1)), ["top", "--follow", "t"]),
    ("dump-follow-unfinished", two(meta(1, 1), meta(2, 1, finished=None)),
     ["dump", "--follow", "--follow-timeout", "100", "t"]),
    ("dump-follow-cut", one(meta(1, 1), obs=HEADER + b"".join(simple_events(100)) + b"\x00OH"),
     ["dump", "--follow", "t"]),
    ("dump-follow-nothing", nothing, ["dump", "--follow", "--follow-timeout=50ms", "t"]),
    ("dump-follow-sort", nothing, ["dump", "--follow", "--sort", "t"]),
    ("dump-follow-timeout-bad", nothing, ["dump", "--follow", "--follow-timeout", "0", "t"]),
    ("top-follow-timeout-alone", nothing, ["top", "--follow-timeout", "1s", "t"]),
    ("help-check", nothing, ["check", "--help", "t"]),
    ("help-emu", nothing, ["emu", "--help"]),
    # --models: the emulation's rules, its refusal worded as weft emu's
    ("check-mark-order", mark_order, ["check", "t"]),
    ("check-models-mark-order", mark_order, ["check", "--models", "t"]),
    ("emu-mark-order", mark_order, ["emu", "-q", "-o", "out", "t"]),
    ("check-models-valid", one(meta(1, 1)), ["check", "-m", "t"]),
    ("check-models-unfinished", one(meta(1, 1, finished=None)), ["check", "--models", "t"]),
    # what streams lack (weft.lost_events, weft.ring, weft.cut)
    ("loss-ring-check", one(mw(RING)), ["check", "t"]),
    ("loss-ring-dump", one(mw(RING)), ["dump", "t"]),
    ("loss-ring-dump-from", one(mw(RING)), ["dump", "--from", "110", "t"]),
    ("loss-ring-no-offsets-dump", two(mw(RING_NO_OFFSETS), meta(2, 1)), ["dump", "t"]),
    ("loss-ring-empty-check", one(mw({"ring": {"size": 64, "lost_events": 0,
                                              "lost_bytes": 0, "lost": []}})), ["check", "t"]),
    ("loss-cut-signal-check", two(mw({"cut": {"by": "signal", "signal": 11, "clock": 110}},
                                     finished=None), meta(2, 1)), ["check", "t"]),
    ("loss-cut-exit-check", one(mw({"cut": {"by": "exit", "clock": 110}}, finished=None)),
     ["check", "t"]),
    ("loss-cut-dump", one(mw({"cut": {"by": "signal", "signal": 6, "clock": 110}},
                            finished=None)), ["dump", "t"]),
    ("loss-ring-sum-bad", one(mw({"ring": {"size": 64, "lost_events": 3, "lost_bytes": 24,
                                           "lost": [[10, 50, 2, 24]]}})), ["check", "t"]),
    ("loss-ring-run-short", one(mw({"ring": {"size": 64, "lost_events": 1, "lost_bytes": 12,
                                             "lost": [[10, 50, 1]]}})), ["check", "t"]),
    ("loss-ring-run-backwards", one(mw({"ring": {"size": 64, "lost_events": 1,
                                                 "lost_bytes": 12, "lost": [[50, 10, 1, 12]]}})),
     ["check", "t"]),
    ("loss-ring-run-bytes", one(mw({"ring": {"size": 64, "lost_events": 2, "lost_bytes": 12,
                                             "lost": [[10, 50, 2, 12]]}})), ["check", "t"]),
    ("loss-ring-offset-back", one(mw({"ring": {"size": 64, "lost_events": 2, "lost_bytes": 24,
                                               "lost": [[10, 50, 1, 12, 36],
                                                        [60, 70, 1, 12, 8]]}})), ["check", "t"]),
    ("loss-ring-size-zero", one(mw({"ring": {"size": 0, "lost_events": 0, "lost_bytes": 0,
                                             "lost": []}})), ["check", "t"]),
    ("loss-ring-bad-lenient", one(mw({"ring": {"size": 0}})), ["dump", "t"]),
    ("loss-cut-by-bad", one(mw({"cut": {"by": "crash", "clock": 1}}, finished=None)),
     ["check", "t"]),
    ("loss-cut-signal-missing", one(mw({"cut": {"by": "signal", "clock": 1}}, finished=None)),
     ["check", "t"]),
    ("loss-cut-exit-signal", one(mw({"cut": {"by": "exit", "signal": 9, "clock": 1}},
                                    finished=None)), ["check", "t"]),
    ("loss-cut-clock-string", one(mw({"cut": {"by": "exit", "clock": "1"}}, finished=None)),
     ["check", "t"]),
    ("loss-dropped-negative", one(mw({"lost_events": -1})), ["check", "t"]),
    ("loss-weft-array", one(mw([1])), ["check", "t"]),
    ("check-rates", ties, ["check", "-r", "t"]),
    ("check-rates-long", two(meta(1, 1), meta(2, 1)), ["check", "--rates", "t"]),
    ("no-args", nothing, ["dump"]),
    ("two-paths", nothing, ["check", "t", "u"]),
    ("unknown-option", nothing, ["top", "-z", "t"]),
    ("dump-unknown-long", nothing, ["dump", "--hexx", "t"]),
    ("missing-path", nothing, ["check", "nope"]),
    ("file-path", a_file, ["check", "t/file"]),
    ("empty-dir", nothing, ["check", "t"]),
    ("readme-only", readme_only, ["check", "t"]),
    ("v1-meta-no-threads", v1('{"version": 1}', files=()), ["check", "t"]),
    # stream.json content
    ("version-real", one(None, raw_json='{"version": 3.5, "ovni": {}}'), ["check", "t"]),
    ("ovni-missing", one({"version": 3}), ["check", "t"]),
    ("ovni-not-object", one({"version": 3, "ovni": 7}), ["check", "t"]),
    ("part-missing", one(m(part=None)), ["check", "t"]),
    ("tid-string", one(m(tid="1")), ["check", "t"]),
    ("tid-zero", one(m(tid=0)), ["check", "t"]),
    ("pid-missing", one(m(pid=None)), ["check", "t"]),
    ("loom-missing", one(m(loom=None)), ["check", "t"]),
    ("loom-slash", one(m(loom="a/b")), ["check", "t"]),
    ("finished-string", one(m(finished="1")), ["check", "t"]),
    ("require-not-object", one(m(require=["ovni"])), ["check", "t"]),
    ("require-value-number", one(m(require={"ovni": 1})), ["check", "t"]),
    ("app-id-zero", one(m(app_id=0)), ["check", "t"]),
    ("cpus-not-array", one(m(loom_cpus={"index": 0})), ["check", "t"]),
    ("cpu-not-object", one(m(loom_cpus=[3])), ["check", "t"]),
    ("cpu-index-missing", one(m(loom_cpus=[{"phyid": 0}])), ["check", "t"]),
    ("cpu-phyid-negative", one(m(loom_cpus=[{"index": 0, "phyid": -1}])), ["check", "t"]),
    ("cpu-index-range", one(m(cpus=((0, 0), (5, 1)))), ["check", "t"]),
    ("cpu-index-duplicate", one(m(cpus=((0, 0), (0, 1)))), ["check", "t"]),
    ("no-cpus", one(m(cpus=None)), ["check", "t"]),
    ("rank-too-big", one(m(rank=2, nranks=2)), ["check", "t"]),
    ("rank-mismatch", two(meta(1, 1, rank=0, nranks=2), meta(2, 1, rank=1, nranks=2)), ["check", "t"]),
    ("rank-partial-loom", two(meta(1, 1, rank=0, nranks=2), meta(2, 2),
                              rel2=thread_rel("vm", 2, 2)), ["check", "t"]),
    ("mark-type-range", one(m(mark={"100": {"title": "x", "chan_type": "single"}})), ["check", "t"]),
    ("mark-chan-type", one(m(mark={"1": {"title": "x", "chan_type": "queue"}})), ["check", "t"]),
    ("mark-title-missing", one(m(mark={"1": {"chan_type": "stack"}})), ["check", "t"]),
    ("mark-label-key", one(m(mark={"1": {"title": "x", "chan_type": "single",
                                         "labels": {"1x": "a"}}})), ["check", "t"]),
    ("mark-label-value", one(m(mark={"1": {"title": "x", "chan_type": "single",
                                           "labels": {"1": 2}}})), ["check", "t"]),
    ("mark-title-conflict", two(meta(1, 1, mark={"1": {"title": "A", "chan_type": "single"}}),
                                meta(2, 1, mark={"1": {"title": "B", "chan_type": "single"}})),
     ["check", "t"]),
    ("mark-label-conflict", two(meta(1, 1, mark={"1": {"title": "A", "chan_type": "stack",
                                                       "labels": {"5": "red"}}}),
                                meta(2, 1, mark={"1": {"title": "A", "chan_type": "stack",
                                                       "labels": {"5": "blue"}}})),
     ["check", "t"]),
    ("dump-lenient-metadata", one(m(tid="x", finished=None)), ["dump", "t"]),
    # binary
    ("model-not-required", one(m(), events=[ev("VTx", 5, b"\x01\x00\x00\x00")]), ["check", "t"]),
    ("model-required", one(m(require={"ovni": "1.1.0", "nosv": "2.0.0"}),
                           events=[ev("VTx", 5, b"\x01\x00\x00\x00")]), ["check", "t"]),
    ("model-not-required-dump", one(m(), events=[ev("VTx", 5), ev("VTy", 6), ev("OHe", 7)]),
     ["dump", "-x", "t"]),
    ("bad-magic-escape", one(m(), obs=b"\x00vn\\" + HEADER[4:]), ["check", "t"]),
    ("jumbo-size-cut", one(m(), obs=HEADER + ev("OU[", 5, jumbo=b"")[:14]), ["check", "t"]),
    ("dump-stops-at-corruption", one(m(), obs=HEADER + ev("OB.", 5) + ev("OB.", 6) + b"\x0f"),
     ["dump", "t"]),
    # clock offsets
    ("clkoff-fields", clkoff(HDR + "0 hostA 0 0 0 9\n"), ["check", "t"]),
    ("clkoff-rank", clkoff(HDR + "zero hostA 0 0 0\n"), ["check", "t"]),
    ("clkoff-number", clkoff(HDR + "0 hostA zero 0 0\n"), ["check", "t"]),
    ("clkoff-duplicate", clkoff(HDR + "0 hostA 0 0 0\n1 hostA 5 0 0\n"), ["check", "t"]),
    ("clkoff-empty", clkoff(""), ["check", "t"]),
    ("clkoff-blank-ends", clkoff(HDR + "0 hostA 7 0 0\n   \ngarbage\n"), ["check", "t"]),
    ("clkoff-order-check", offsets_order, ["check", "t"]),
    ("clkoff-order-dump", offsets_order, ["dump", "t"]),
    ("ties-dump", ties, ["dump", "t"]),
    ("too-deep", deep, ["check", "t"]),
    ("json-too-large", big_json, ["check", "t"]),
    ("obs-is-dir", obs_dir, ["check", "t"]),
    ("clkoff-long-line", clkoff(HDR + "0 " + "h" * 600 + " 0 0 0\n"), ["check", "t"]),
    ("mark-not-object", one(m(mark=[1])), ["check", "t"]),
    ("mark-type-not-object", one(m(mark={"1": "x"})), ["check", "t"]),
    ("mark-labels-not-object", one(m(mark={"1": {"title": "x", "chan_type": "single",
                                                 "labels": [1]}})), ["check", "t"]),
    ("lib-version-number", one(m(lib={"version": 1, "commit": "x"})), ["check", "t"]),
    ("v1-tid-zero", v1('{"version": 1, "cpus": [{"index": 0, "phyid": 0}]}',
                       files=("thread.0",)), ["check", "t"]),
    # v1
    ("v1-version", v1('{"version": 3}'), ["check", "t"]),
    ("v1-proc-name", v1('{"version": 1, "cpus": [{"index": 0, "phyid": 0}]}',
                        procdir="loom.vm/proc.x1"), ["check", "t"]),
    ("v1-no-loom", v1('{"version": 1, "cpus": [{"index": 0, "phyid": 0}]}',
                      procdir="vm/proc.1"), ["check", "t"]),
    ("v1-ok", v1('{"version": 1, "app_id": 3, "cpus": [{"index": 0, "phyid": 4}]}',
                 files=("thread.1", "thread.2.obs", "thread.x")), ["check", "t"]),
]
