# SPDX-License-Identifier: MIT
"""Seeking by the stream index: `weft index`, `weft dump/top --from/--to`.

seek.py: seekgen (libovni) writes a trace with its stream.idx files, with a
1024-byte buffer (many flushes). `weft index` rewrites every index byte for
byte, atomically and idempotently; weft check does not report the index
files. For every position class (before the first event, between streams'
ranges, on clocks equal across streams, after the last event, at a jumbo
event, inside unordered regions, every 40th clock), `weft dump --from X` is
exactly the full dump's lines with a clock >= X, without a warning; --to
stops at the first line past it; a time with a unit is after the first
event; `weft top --from` counts what the dump prints. A stream whose index
is missing, corrupted, truncated or stale gives the same lines, with one
exact warning.
seek.py corpus: `weft index` on a copy of every conformance case (v3, v1,
models) writes, per stream, the first event and every OF[ event (an
independent reading of stream.obs), and dump --from the middle clock uses
the indexes (no fallback warning) and equals the filtered full dump.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import Checker, conformance_dir, run, weft_bin  # noqa: E402

HDR = b"ovix" + struct.pack("=III", 1, 16, 0)


def idx_files(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            if f.endswith(".idx") and f != "merge.idx":
                p = os.path.join(d, f)
                out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def all_files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root)
                  for d, _, fs in os.walk(root) for f in fs)


def clock_of(line):
    return int(line.split(None, 1)[0])


def filtered(full, x, y=None):
    out = []
    for line in full:
        c = clock_of(line)
        if y is not None and c > y:
            break
        if c >= x:
            out.append(line)
    return b"".join(out)


def top_of(lines):
    n = {}
    for line in lines:
        m = line.split(None, 2)[1]
        n[m] = n.get(m, 0) + 1
    rows = sorted(n.items(), key=lambda kv: (-kv[1], kv[0]))
    return b"".join(m + b" " + b"%10d" % k + b"\n" for m, k in rows)


def tie_groups(lines):
    """The lines by clock group, each group sorted; and each stream's lines
    in order: equal but for the order of equal clocks across streams."""
    groups, per = [], {}
    for line in lines:
        k = clock_of(line)
        if groups and groups[-1][0] == k:
            groups[-1][1].append(line)
        else:
            groups.append((k, [line]))
        per.setdefault(line.split()[2], []).append(line)
    return [(k, sorted(g)) for k, g in groups], per


def dump_from(c, cwd, x, full, what, warn=""):
    rc, out, err = run(["dump", "--from", str(x), "ovni"], cwd=cwd)
    c.eq((rc, err), (0, warn), f"{what}: dump --from {x}: exit and stderr")
    c.expect(out == filtered(full, x), f"{what}: dump --from {x} equals the filtered full dump "
             f"({len(out)} bytes, want {len(filtered(full, x))})")


def stream_entries(obs):
    """First event and every OF[: (offset, clock), read independently."""
    ents = []
    off = 8
    while off + 12 <= len(obs):
        flags = obs[off]
        clock = struct.unpack_from("=Q", obs, off + 4)[0]
        if flags & 0x10:
            if off + 16 > len(obs):
                break
            size = 16 + struct.unpack_from("=I", obs, off + 12)[0]
        else:
            code = flags & 0x0f
            size = 12 + (code + 1 if code else 0)
        if off + size > len(obs):
            break
        if off == 8 or obs[off + 1:off + 4] == b"OF[":
            ents.append((off, clock))
        off += size
    return ents


def gen_checks(c, tmp):
    gen = os.environ.get("SEEKGEN")
    if not gen or not os.path.exists(gen):
        print(f"SEEKGEN not set or missing: '{gen}'", file=sys.stderr)
        sys.exit(1)
    env = dict(os.environ, WEFT_BUFSIZE="1024", OVNI_TRACEDIR=os.path.join(tmp, "ovni"))
    env.pop("OVNI_TMPDIR", None)
    subprocess.run([gen], cwd=tmp, env=env, check=True)
    lib = idx_files(tmp)
    c.eq(len(lib), 4, "libovni wrote one stream.idx per stream")
    for k, v in lib.items():
        c.eq(v[:16], HDR, f"{k}: index header")
        c.eq((len(v) - 16) % 16, 0, f"{k}: whole entries")
    files_before = all_files(tmp)

    # weft index: the same bytes, atomically, again and again
    rc, out, err = run(["index", "ovni"], cwd=tmp)
    want = "".join(f"{k}  {(len(v) - 16) // 16} entries\n" for k, v in sorted(lib.items()))
    want += "ovni/merge.idx  0 checkpoints\n"  # less than 1 MiB of events
    c.eq((rc, out.decode(), err), (0, want, ""), "weft index: exit, lines, stderr")
    c.eq(idx_files(tmp), lib, "weft index writes libovni's indexes byte for byte")
    rc, out, err = run(["index", "-q", "ovni"], cwd=tmp)
    c.eq((rc, out, err), (0, b"", ""), "weft index -q again")
    c.eq(idx_files(tmp), lib, "weft index is idempotent")
    c.eq(all_files(tmp), sorted(files_before + ["ovni/merge.idx"]),
         "no temporary file left beside the indexes")
    rc, out, err = run(["index", "--help"])
    c.eq((rc, out.decode().startswith("Usage: weft index [-q] [--model FILE]... PATH\n"), err), (0, True, ""),
         "weft index --help")
    rc, out, err = run(["index"])
    c.eq((rc, err), (2, "weft index: missing PATH (a trace directory); run `weft index "
                        "--help`\n"), "weft index without PATH")
    rc, out, err = run(["check", "ovni"], cwd=tmp)
    c.eq((rc, err), (0, ""), "weft check: no warning about the index files")

    rc, out, err = run(["dump", "ovni"], cwd=tmp)
    c.eq((rc, err), (0, ""), "full dump")
    full = out.splitlines(True)
    clocks = [clock_of(x) for x in full]
    by = {}
    for line in full:
        f = line.split()
        by.setdefault(f[2].rsplit(b".", 1)[1], []).append((clock_of(line), f[1]))
    first, last = min(clocks), max(clocks)
    c.expect(len(lib[[k for k in lib if "thread.101" in k][0]]) > 16 * 20,
             "stream 101 has many buffers")

    xs = {"before the first event": [first - 1000, first],
          "after the last event": [last, last + 1]}
    early = max(cl for t in (b"101", b"102", b"103") for cl, _ in by[t])
    late = min(cl for cl, _ in by[b"104"])
    c.expect(early < late, "a gap before stream 104")
    xs["between streams' ranges"] = [early + 1, (early + late) // 2, late]
    eq = sorted(set(cl for cl, _ in by[b"101"]) & set(cl for cl, _ in by[b"102"]))
    c.eq(len(eq), 40, "clocks equal across streams 101 and 102")
    xs["on clocks equal across streams"] = eq
    xs["at the jumbo event"] = [cl for cl, m in by[b"101"] if m == b"OJj"]
    c.eq(len(xs["at the jumbo event"]), 1, "one jumbo event")
    xs["at the jumbo event"] += [xs["at the jumbo event"][0] + 1]
    inreg, inside = [], False
    for cl, m in by[b"103"]:
        if m == b"OU[":
            inside = True
        elif m == b"OU]":
            inside = False
        elif inside:
            inreg.append(cl)
    xs["inside unordered regions"] = inreg[::7]
    xs["every 40th clock"] = sorted(set(clocks))[::40]
    # every position class: with the merge index (checkpoints every 2000
    # bytes of events), then with the stream indexes alone (as libovni
    # leaves a trace)
    menv = dict(os.environ, WEFT_MIDX_SPACING="2000")
    p = subprocess.run([weft_bin(), "index", "ovni"], cwd=tmp, env=menv, capture_output=True)
    nck = int(re.search(rb"merge.idx  (\d+) checkpoints", p.stdout).group(1))
    c.expect(p.returncode == 0 and nck > 20, f"weft index with checkpoints: {nck}")
    for what, vals in xs.items():
        for x in vals:
            dump_from(c, tmp, x, full, what + " (merge index)")
    midx = open(os.path.join(tmp, "ovni", "merge.idx"), "rb").read()
    mpath = os.path.join(tmp, "ovni", "merge.idx")
    mtail = ("; seeking without it (equal clocks of several streams may come in another "
             "order than in a full read)\n")
    x0 = sorted(set(clocks))[len(set(clocks)) // 2]
    with open(mpath, "wb") as f:
        f.write(b"ovmX" + midx[4:])
    dump_from(c, tmp, x0, full, "a merge index with a bad magic",
              f"weft dump: warning: ovni/merge.idx: offset 0: bad magic (expected 'ovmx'){mtail}")
    bad = bytearray(midx)
    struct.pack_into("=Q", bad, 16, struct.unpack_from("=Q", midx, 16)[0] - 12)
    with open(mpath, "wb") as f:
        f.write(bytes(bad))
    obs0 = [k for k in lib if "thread.101" in k][0].replace("stream.idx", "stream.obs")
    size0 = os.path.getsize(os.path.join(tmp, obs0))
    dump_from(c, tmp, x0, full, "a stale merge index",
              f"weft dump: warning: ovni/merge.idx: stale: {obs0} has {size0} bytes, "
              f"{size0 - 12} when indexed (run `weft index` again){mtail}")
    with open(mpath, "wb") as f:
        f.write(midx)
    os.utime(mpath, ns=(1, 1))
    dump_from(c, tmp, x0, full, "a merge index older than a stream",
              f"weft dump: warning: ovni/merge.idx: stale: older than {obs0} (run `weft index` "
              f"again){mtail}")
    with open(mpath, "wb") as f:
        f.write(midx[:20])
    dump_from(c, tmp, x0, full, "a truncated merge index",
              f"weft dump: warning: ovni/merge.idx: offset 16: truncated stream record{mtail}")
    # the layout (idx_format.h): header, stream records, then the section
    ns = struct.unpack_from("=I", midx, 8)[0]
    at, rels = 16, []
    for _ in range(ns):
        n = struct.unpack_from("=I", midx, at + 8)[0]
        rels.append(midx[at + 16:at + 16 + n].decode())
        at += 16 + (n + 7) // 8 * 8
    sec = at
    nent = struct.unpack_from("=Q", midx, sec + 8)[0]
    esize = 24 + 32 * ns  # version 2: 32-byte slots, one per stream
    ent0 = sec + 16
    keys = [struct.unpack_from("=q", midx, ent0 + k * esize)[0] for k in range(nent)]
    ck = max(k for k in range(nent) if keys[k] < x0)
    used = ent0 + ck * esize
    nheap = struct.unpack_from("=I", midx, used + 12)[0]
    c.expect(nheap >= 2, f"the checkpoint before {x0} has {nheap} heap slots")
    slot0 = used + 24
    s0, off0 = struct.unpack_from("=I", midx, slot0)[0], struct.unpack_from("=Q", midx, slot0 + 8)[0]
    obs_s0 = f"ovni/{rels[s0]}/stream.obs"
    cur = struct.unpack_from("=I", midx, used + 8)[0]
    obs_cur = f"ovni/{rels[cur]}/stream.obs"
    size_cur = os.path.getsize(os.path.join(tmp, obs_cur))

    def edited(what, fmt, off, value, warn, more=()):
        bad = bytearray(midx)
        struct.pack_into(fmt, bad, off, value)
        for f2, o2, v2 in more:
            struct.pack_into(f2, bad, o2, v2)
        with open(mpath, "wb") as f:
            f.write(bytes(bad))
        dump_from(c, tmp, x0, full, what, f"weft dump: warning: ovni/merge.idx: {warn}{mtail}")

    edited("a merge index of another version", "=I", 4, 1,
           "offset 4: unknown version 1 (expected 2; run `weft index` again)")
    edited("a merge index of another stream count", "=I", 8, ns + 1,
           f"stale: it has {ns + 1} streams, the trace {ns} (run `weft index` again)")
    edited("a merge index of another stream", "=B", 32, ord("X"),
           f"stale: stream 0 is not {rels[0]} (run `weft index` again)")
    edited("a merge index with too many checkpoints", "=Q", sec + 8, nent + 1,
           f"offset {sec}: {nent + 1} checkpoints do not fit the file")
    edited("a merge index without this clock order", "=I", sec, 0,
           f"offset {sec}: section 0 is for clock orders 0 (reserved 0), expected 3 (0)")
    edited("a checkpoint's event that is not there", "=q", slot0 + 16,
           struct.unpack_from("=q", midx, slot0 + 16)[0] + 1,
           f"{obs_s0}: offset {off0}: not the event of the checkpoint")
    edited("a checkpoint naming a stream twice", "=I", slot0 + 32, s0,
           f"offset {slot0 + 32}: checkpoint {ck}: slot 1 names stream {s0}, which another "
           "slot holds")
    curslot = used + 24 + 32 * nheap  # the slot of the stream that yielded last
    next_cur = struct.unpack_from("=Q", midx, used + 16)[0]
    edited("a checkpoint past a stream's end", "=Q", used + 16, size_cur + 1,
           f"{obs_cur}: offset {size_cur + 1} is past its end",
           [("=Q", curslot + 8, size_cur + 1)])
    edited("a checkpoint whose cursor is not its slot's", "=Q", used + 16, size_cur,
           f"offset {curslot}: checkpoint {ck}: slot {nheap} (after the {nheap} of the heap) "
           f"holds stream {cur} at offset {next_cur}, not the stream that yielded last ({cur}) "
           f"at its next event ({size_cur})")
    os.unlink(mpath)
    for what, vals in xs.items():
        for x in vals:
            dump_from(c, tmp, x, full, what)

    # --to, a unit, top
    mid = sorted(set(clocks))[len(set(clocks)) // 2]
    for x, y in ((first, first), (mid, mid + 20000), (mid, last + 5), (last + 1, last + 9)):
        rc, out, err = run(["dump", "--from", str(x), "--to", str(y), "ovni"], cwd=tmp)
        c.eq((rc, err, out), (0, "", filtered(full, x, y)), f"dump --from {x} --to {y}")
    rc, out, err = run(["dump", "--from", "1ms", "--to=2.5ms", "ovni"], cwd=tmp)
    c.eq((rc, err, out), (0, "", filtered(full, first + 1000000, first + 2500000)),
         "dump --from 1ms --to=2.5ms: after the first event")
    rc, out, err = run(["dump", "--to", "0", "ovni"], cwd=tmp)
    c.eq((rc, err, out), (0, "", b""), "dump --to 0: nothing")
    rc, out, err = run(["dump", "--from", "5", "--to", "4", "ovni"], cwd=tmp)
    c.eq((rc, err), (2, "weft dump: --to '4' is before --from '5'\n"), "--to before --from")
    rc, out, err = run(["dump", "--from", "2.5", "ovni"], cwd=tmp)
    c.eq((rc, err), (2, "weft dump: --from '2.5': a clock (a number without a unit) is whole "
                        "nanoseconds; give a unit for a time after the trace's first event "
                        "(e.g. 2.5s)\n"), "--from without a unit must be whole")
    rc, out, err = run(["top", "--from", "x", "ovni"], cwd=tmp)
    c.eq((rc, err), (2, "weft top: --from 'x' is not a time: give a clock in nanoseconds "
                        "(e.g. 1500000) or a time after the trace's first event with a unit "
                        "ns, us, ms, s or min (e.g. 2.5s); run `weft top --help`\n"),
         "top --from x")
    for x, y in ((mid, None), (mid, mid + 50000), (first, None)):
        args = ["top", "--from", str(x)] + (["--to", str(y)] if y is not None else []) + ["ovni"]
        rc, out, err = run(args, cwd=tmp)
        lines = filtered(full, x, y).splitlines(True)
        c.eq((rc, err, out), (0, "", top_of(lines)), f"top --from {x} --to {y}")

    # a bad index: the same lines, one warning
    s101 = os.path.join(tmp, [k for k in lib if "thread.101" in k][0])
    rel101 = os.path.relpath(s101, tmp)
    obs101 = os.path.join(os.path.dirname(s101), "stream.obs")
    good = lib[os.path.relpath(s101, tmp)]
    tail = "; seeking by reading the stream from its start\n"
    x101 = sorted(cl for cl, _ in by[b"101"])[2000]

    def put(data, mtime=None):
        with open(s101, "wb") as f:
            f.write(data)
        if mtime is not None:
            os.utime(s101, ns=(mtime, mtime))

    os.unlink(s101)
    dump_from(c, tmp, x101, full, "a stream without index",
              f"weft dump: warning: {rel101}: missing (`weft index` writes one){tail}")
    put(b"ovnx" + good[4:])
    dump_from(c, tmp, x101, full, "a corrupted magic",
              f"weft dump: warning: {rel101}: offset 0: bad magic (expected 'ovix'){tail}")
    put(good[:-5])
    dump_from(c, tmp, x101, full, "a truncated index",
              f"weft dump: warning: {rel101}: offset {len(good) - 16}: truncated: a partial "
              f"entry of 11 bytes at the end{tail}")
    put(good[:10])
    dump_from(c, tmp, x101, full, "a truncated header",
              f"weft dump: warning: {rel101}: offset 0: truncated header: 10 of 16 bytes{tail}")
    # every entry after the first one nanosecond late
    ents = [struct.unpack_from("=QQ", good, 16 + 16 * i) for i in range((len(good) - 16) // 16)]
    bad = bytearray(good)
    for i in range(1, len(ents)):
        struct.pack_into("=QQ", bad, 16 + 16 * i, ents[i][0], ents[i][1] + 1)
    k = max(i for i in range(1, len(ents)) if ents[i][1] + 1 < x101)
    put(bytes(bad))
    dump_from(c, tmp, x101, full, "a corrupted entry",
              f"weft dump: warning: {rel101}: offset {16 + 16 * k}: entry {k} names an OF[ at "
              f"stream offset {ents[k][0]} with clock {ents[k][1] + 1}, but the stream has OF[ "
              f"with clock {ents[k][1]} there (stale or corrupted){tail}")
    obs_m = os.stat(obs101).st_mtime_ns
    put(good, obs_m - 10 ** 9)
    dump_from(c, tmp, x101, full, "a stale index (older than its stream)",
              f"weft dump: warning: {rel101}: stale: older than its stream{tail}")
    put(good)
    dump_from(c, tmp, x101, full, "the index restored")
    rc, out, err = run(["index", "ovni"], cwd=tmp)
    c.eq((rc, idx_files(tmp)), (0, lib), "weft index repairs a stale index")
    os.unlink(mpath)


def corpus_checks(c, tmp):
    corpus = conformance_dir()
    cases = []
    for group in ("v3", "v1", "models"):
        gd = os.path.join(corpus, group)
        for name in sorted(os.listdir(gd)):
            if os.path.isdir(os.path.join(gd, name, "ovni")):
                cases.append((f"{group}/{name}", os.path.join(gd, name, "ovni")))
    c.expect(len(cases) > 50, "the corpus has its cases")
    ties = []
    nseeks = 0
    for name, src in cases:
        wd = os.path.join(tmp, "case")
        shutil.rmtree(wd, ignore_errors=True)
        os.makedirs(wd)
        shutil.copytree(src, os.path.join(wd, "ovni"), symlinks=True)
        rc0, full, err0 = run(["dump", "ovni"], cwd=wd)
        # checkpoints close together, so that seeks resume from them
        p = subprocess.run([weft_bin(), "index", "ovni"], cwd=wd, capture_output=True,
                           env=dict(os.environ, WEFT_MIDX_SPACING="64"))
        rc, out, err = p.returncode, p.stdout, p.stderr.decode()
        if rc0 != 0 and rc != 0:
            continue  # a trace weft cannot open: nothing to index
        c.eq((rc, "seeking" in err), (0, False), f"{name}: weft index exit 0")
        nidx = 0
        for d, _, fs in os.walk(os.path.join(wd, "ovni")):
            for f in fs:
                if f.endswith(".idx"):
                    continue
                if not (f == "stream.obs" or re.fullmatch(r"thread\.\d+(\.obs)?", f)):
                    continue
                obs = open(os.path.join(d, f), "rb").read()
                ip = os.path.join(d, "stream.idx" if f == "stream.obs"
                                  else re.sub(r"(\.obs)?$", ".idx", f, count=1))
                if not os.path.exists(ip):
                    continue  # not a stream weft opened (a stray file)
                nidx += 1
                want = HDR + b"".join(struct.pack("=QQ", o, k) for o, k in stream_entries(obs))
                c.expect(open(ip, "rb").read() == want,
                         f"{name}: {os.path.relpath(ip, wd)}: the first event and every OF[")
        c.expect(nidx > 0 or rc0 != 0, f"{name}: indexes written")
        lines = full.splitlines(True)
        if rc0 != 0 or not lines:
            continue
        cl = sorted(set(clock_of(x) for x in lines))
        for x in (cl[len(cl) // 2], cl[len(cl) // 3] + 1):
            rc, out, err = run(["dump", "--from", str(x), "ovni"], cwd=wd)
            c.eq((rc, "seeking by reading" in err, "not part of any stream" in err),
                 (0, False, False),
                 f"{name}: dump --from {x}: exit 0, the indexes used, none a stray file")
            # the merge index resumes the heap as the full read has it:
            # equal clocks of several streams in the same order too
            c.expect(out == filtered(lines, x),
                     f"{name}: dump --from {x} equals the filtered full dump")
            nseeks += 1
            # and without it, the stream indexes alone: the same events
            os.rename(os.path.join(wd, "ovni", "merge.idx"), os.path.join(wd, "m.idx"))
            rc, out2, err = run(["dump", "--from", str(x), "ovni"], cwd=wd)
            os.rename(os.path.join(wd, "m.idx"), os.path.join(wd, "ovni", "merge.idx"))
            c.eq(tie_groups(out2.splitlines(True)), tie_groups(filtered(lines, x).splitlines(True)),
                 f"{name}: dump --from {x} without the merge index: the same events")
            if out2 != out:
                ties.append(f"{name} --from {x}")
    shutil.rmtree(os.path.join(tmp, "case"), ignore_errors=True)
    print(f"{nseeks} seeks into corpus traces equal the filtered full dump with the merge index; "
          f"without it, {len(ties)} gave equal clocks of several streams in another order: "
          + ", ".join(ties))


def main():
    c = Checker()
    corpus = len(sys.argv) > 1 and sys.argv[1] == "corpus"
    tmp = tempfile.mkdtemp(prefix="weft-seek-")
    try:
        if corpus:
            corpus_checks(c, tmp)
        else:
            gen_checks(c, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
