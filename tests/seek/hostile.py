# SPDX-License-Identifier: MIT
"""Hostile indexes under `weft dump --from` (issue 21, findings 1 and 7).

hostile.py: seekgen (libovni) writes a trace; `weft index` writes its
stream indexes and merge.idx (a checkpoint every 2000 bytes of events).
The corruptions that lost events silently on the merge index of version 1
(a checkpoint's heap count 2 -> 0, two heap slots swapped, a key lowered
below the one before it, a key lowered between its neighbours' while the
seek clock is between the lowered and the true key), each with its exact warning (file, byte offset,
what was wrong) and the output the full dump filtered to >= T; a stream.idx
that is a FIFO and a merge.idx that is a FIFO: one warning each, the index
passed over, the same output, no hang.
hostile.py fuzz: 500 random corruptions of the merge.idx (bits flipped,
bytes overwritten, truncations, key and count fields changed, slots and
keys swapped; seeded),
each with a seek clock that uses the corrupted checkpoint when there is one:
the dump --from T equals the filtered full dump, or the difference comes
with a warning or an error (then the same events, equal clocks of several
streams maybe in another order); prints the trials and differences; none
silent, no crash, no hang. Bounded to 45 s (fewer trials then, said).
Every subprocess has a time limit.
"""
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import Checker, weft_bin  # noqa: E402

LIMIT = 30  # seconds any command may take
MTAIL = ("; seeking without it (equal clocks of several streams may come in another order "
         "than in a full read)\n")


def run(args, cwd):
    try:
        p = subprocess.run([weft_bin()] + args, cwd=cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=LIMIT)
    except subprocess.TimeoutExpired:
        return "timeout", b"", f"timed out after {LIMIT} s"
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def clock_of(line):
    return int(line.split(None, 1)[0])


def filtered(lines, x):
    return b"".join(line for line in lines if clock_of(line) >= x)


def nlines(data):
    return data.count(b"\n")


def tie_groups(data):
    """The lines by clock, each clock's lines sorted: the same events, equal
    clocks of several streams in any order."""
    groups = {}
    for line in data.splitlines(True):
        groups.setdefault(clock_of(line), []).append(line)
    return sorted((k, sorted(v)) for k, v in groups.items())


class Layout:
    """The merge index's fields (src/format/idx_format.h, version 2)."""

    def __init__(self, m):
        self.ns = struct.unpack_from("=I", m, 8)[0]
        at, self.rels = 16, []
        for _ in range(self.ns):
            n = struct.unpack_from("=I", m, at + 8)[0]
            self.rels.append(m[at + 16:at + 16 + n].decode())
            at += 16 + (n + 7) // 8 * 8
        self.sec = at
        self.nent = struct.unpack_from("=Q", m, at + 8)[0]
        # version 1 had 24-byte slots (the heap's only): the test reads it
        # too, to show what it did
        self.esize = 24 + (24 if struct.unpack_from("=I", m, 4)[0] == 1 else 32) * self.ns
        self.ent0 = at + 16
        self.keys = [struct.unpack_from("=q", m, self.ent(k))[0] for k in range(self.nent)]

    def ent(self, k):
        return self.ent0 + k * self.esize


def make_trace(tmp):
    gen = os.environ.get("SEEKGEN")
    if not gen or not os.path.exists(gen):
        print(f"SEEKGEN not set or missing: '{gen}'", file=sys.stderr)
        sys.exit(1)
    env = dict(os.environ, WEFT_BUFSIZE="1024", OVNI_TRACEDIR=os.path.join(tmp, "ovni"))
    env.pop("OVNI_TMPDIR", None)
    subprocess.run([gen], cwd=tmp, env=env, check=True, timeout=LIMIT)
    env = dict(os.environ, WEFT_MIDX_SPACING="2000")
    p = subprocess.run([weft_bin(), "index", "ovni"], cwd=tmp, env=env, capture_output=True,
                       timeout=LIMIT)
    assert p.returncode == 0, p.stderr
    rc, full, err = run(["dump", "ovni"], tmp)
    assert rc == 0 and err == "", err
    with open(os.path.join(tmp, "ovni", "merge.idx"), "rb") as f:
        midx = f.read()
    return full.splitlines(True), midx


def put(path, data):
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)


def targeted(c, tmp, lines, midx):
    mpath = os.path.join(tmp, "ovni", "merge.idx")
    lay = Layout(midx)
    c.expect(lay.nent > 20, f"weft index wrote {lay.nent} checkpoints")

    def dump_from(what, data, x, warn):
        put(mpath, data)
        rc, out, err = run(["dump", "--from", str(x), "ovni"], tmp)
        c.eq((rc, err), (0, warn), f"{what}: dump --from {x}: exit and stderr")
        want = filtered(lines, x)
        c.expect(out == want, f"{what}: dump --from {x} equals the filtered full dump "
                 f"({nlines(out)} lines, want {nlines(want)})")

    # a checkpoint with a heap of two or more, and a seek clock just after it
    ck = next(k for k in range(lay.nent // 2, lay.nent - 1)
              if struct.unpack_from("=I", midx, lay.ent(k) + 12)[0] >= 2
              and struct.unpack_from("=q", midx, lay.ent(k) + 40)[0]
              < struct.unpack_from("=q", midx, lay.ent(k) + 72)[0]
              and lay.keys[k + 1] > lay.keys[k] + 1 and lay.keys[k] > lay.keys[k - 1] + 1)
    e = lay.ent(ck)
    x = lay.keys[ck] + 1
    cur = struct.unpack_from("=I", midx, e + 8)[0]
    nxt = struct.unpack_from("=Q", midx, e + 16)[0]
    s0, off0 = struct.unpack_from("=IxxxxQ", midx, e + 24)
    dump_from("the merge index as written", midx, x, "")
    bad = bytearray(midx)
    struct.pack_into("=I", bad, e + 12, 0)
    dump_from("a checkpoint's heap count 2 -> 0", bytes(bad), x,
              f"weft dump: warning: ovni/merge.idx: offset {e + 24}: checkpoint {ck}: slot 0 "
              f"(after the 0 of the heap) holds stream {s0} at offset {off0}, not the stream "
              f"that yielded last ({cur}) at its next event ({nxt}){MTAIL}")
    # the heap's first two slots swapped: each stream at its event, but the
    # root no longer the smallest
    bad = bytearray(midx)
    bad[e + 24:e + 56], bad[e + 56:e + 88] = midx[e + 56:e + 88], midx[e + 24:e + 56]
    k0, k1 = struct.unpack_from("=q", midx, e + 40)[0], struct.unpack_from("=q", midx, e + 72)[0]
    c.expect(k0 < k1, f"the heap's root key {k0} is below slot 1's {k1}")
    dump_from("two heap slots swapped", bytes(bad), x,
              f"weft dump: warning: ovni/merge.idx: offset {e + 56}: checkpoint {ck}: heap slot "
              f"1 has a key below its parent's (not a heap){MTAIL}")
    # the key lowered below the one before it
    bad = bytearray(midx)
    low = lay.keys[ck - 1] - 1
    struct.pack_into("=q", bad, e, low)
    dump_from("a key below the one before it", bytes(bad), x,
              f"weft dump: warning: ovni/merge.idx: offset {e}: checkpoint {ck}: key {low} is "
              f"below the key of the one before it ({lay.keys[ck - 1]}){MTAIL}")
    # the key of the next checkpoint lowered to just above this one: a seek
    # between the two would resume from the next one, past its events
    bad = bytearray(midx)
    e1 = lay.ent(ck + 1)
    struct.pack_into("=q", bad, e1, lay.keys[ck] + 1)
    x1 = lay.keys[ck + 1]
    dump_from("a key lowered between its neighbours'", bytes(bad), x1,
              f"weft dump: warning: ovni/merge.idx: offset {e1}: checkpoint {ck + 1}: key "
              f"{lay.keys[ck] + 1}, but the largest key its streams yielded is "
              f"{lay.keys[ck + 1]}{MTAIL}")
    put(mpath, midx)

    # a merge.idx that is a FIFO: passed over with a warning, no hang
    os.unlink(mpath)
    os.mkfifo(mpath)
    t0 = time.monotonic()
    rc, out, err = run(["dump", "--from", str(x), "ovni"], tmp)
    c.eq((rc, err), (0, f"weft dump: warning: ovni/merge.idx: not a regular file{MTAIL}"),
         "a merge.idx that is a FIFO: exit and the warning")
    c.expect(tie_groups(out) == tie_groups(filtered(lines, x)),
             f"a merge.idx that is a FIFO: the filtered events ({nlines(out)} lines, want "
             f"{nlines(filtered(lines, x))})")
    c.expect(time.monotonic() - t0 < 10, "a merge.idx that is a FIFO: no hang")
    os.unlink(mpath)
    # a stream.idx that is a FIFO: the stream is read from its start
    rel = os.path.join("ovni", lay.rels[0], "stream.idx")
    sidx = os.path.join(tmp, rel)
    os.unlink(sidx)
    os.mkfifo(sidx)
    t0 = time.monotonic()
    rc, out, err = run(["dump", "--from", str(x), "ovni"], tmp)
    c.eq((rc, err), (0, f"weft dump: warning: {rel}: not a regular file; seeking by reading "
                        "the stream from its start\n"),
         "a stream.idx that is a FIFO: exit and the warning")
    c.expect(tie_groups(out) == tie_groups(filtered(lines, x)),
             f"a stream.idx that is a FIFO: the filtered events ({nlines(out)} lines, want "
             f"{nlines(filtered(lines, x))})")
    c.expect(time.monotonic() - t0 < 10, "a stream.idx that is a FIFO: no hang")
    os.unlink(sidx)
    p = subprocess.run([weft_bin(), "index", "ovni"], cwd=tmp, capture_output=True,
                       timeout=LIMIT, env=dict(os.environ, WEFT_MIDX_SPACING="2000"))
    c.eq(p.returncode, 0, "weft index writes the indexes again")


def corrupt(rng, midx, lay):
    """A corrupted copy of midx and the checkpoint it aims at (or None)."""
    bad = bytearray(midx)
    kind = rng.randrange(8)
    k = rng.randrange(lay.nent)
    e = lay.ent(k)
    if kind == 0:  # bits flipped anywhere
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(bad))
            bad[at] ^= 1 << rng.randrange(8)
    elif kind == 1:  # a run of bytes overwritten, inside a checkpoint
        at = rng.randrange(e, e + lay.esize)
        n = rng.randint(1, 16)
        bad[at:at + n] = bytes(rng.randrange(256) for _ in range(len(bad[at:at + n])))
    elif kind == 2:  # truncated
        return bytes(bad[:rng.randrange(len(bad))]), k
    elif kind == 3:  # a key changed: a little, or anything
        old = lay.keys[k]
        new = old + rng.choice([-1, 1, -1000, rng.randint(-10 ** 6, 10 ** 6)]) \
            if rng.random() < 0.7 else rng.randint(-2 ** 63, 2 ** 63 - 1)
        struct.pack_into("=q", bad, e, max(-2 ** 63, min(2 ** 63 - 1, new)))
    elif kind == 4:  # a count: nheap, cur, nentries, nsections, nstreams
        which = rng.randrange(5)
        at, v = [(e + 12, 4), (e + 8, 4), (lay.sec + 8, 8), (12, 4), (8, 4)][which]
        fmt = "=I" if v == 4 else "=Q"
        old = struct.unpack_from(fmt, bad, at)[0]
        new = rng.choice([0, 1, 2, old - 1, old + 1, rng.randrange(2 ** (8 * v))])
        struct.pack_into(fmt, bad, at, new % 2 ** (8 * v))
    elif kind == 5:  # a field of a slot: stream, offset, key or top
        j = rng.randrange(lay.ns)
        at = e + 24 + 32 * j + rng.choice([0, 8, 16, 24])
        fmt = "=I" if (at - e - 24) % 32 == 0 else "=q"
        old = struct.unpack_from(fmt, bad, at)[0]
        new = old + rng.choice([-1, 1, -16, 16]) if rng.random() < 0.6 \
            else rng.randrange(2 ** 31)
        struct.pack_into("=q" if fmt == "=q" else "=I", bad, at,
                         max(-2 ** 63, min(2 ** 63 - 1, new)) if fmt == "=q" else new % 2 ** 32)
    elif kind == 6:  # two slots of a checkpoint swapped
        i, j = rng.sample(range(lay.ns), 2)
        a, b = e + 24 + 32 * i, e + 24 + 32 * j
        bad[a:a + 32], bad[b:b + 32] = midx[b:b + 32], midx[a:a + 32]
    else:  # two checkpoints' keys swapped
        k2 = min(k + 1, lay.nent - 1)
        struct.pack_into("=q", bad, e, lay.keys[k2])
        struct.pack_into("=q", bad, lay.ent(k2), lay.keys[k])
    return bytes(bad), k


def fuzz(c, tmp, lines, midx):
    mpath = os.path.join(tmp, "ovni", "merge.idx")
    lay = Layout(midx)
    clocks = sorted(set(clock_of(line) for line in lines))
    rng = random.Random(21)
    trials = same = same_warned = warned = silent = 0
    t0 = time.monotonic()
    while trials < 500 and time.monotonic() - t0 < 45:
        data, k = corrupt(rng, midx, lay)
        # a seek clock that resumes from checkpoint k (as its key says),
        # or anywhere
        if rng.random() < 0.8:
            hi = lay.keys[k + 1] if k + 1 < lay.nent else clocks[-1] + 1
            x = rng.randint(lay.keys[k] + 1, max(lay.keys[k] + 1, hi))
        else:
            x = rng.choice(clocks)
        put(mpath, data)
        rc, out, err = run(["dump", "--from", str(x), "ovni"], tmp)
        trials += 1
        want = filtered(lines, x)
        what = f"trial {trials} (checkpoint {k}, --from {x})"
        if rc == "timeout" or not isinstance(rc, int) or rc < 0 or rc > 1:
            c.expect(False, f"{what}: exit {rc}, {err!r}")
            continue
        if out == want:
            same += 1
            same_warned += err != "" or rc != 0
            continue
        if err == "" and rc == 0:
            silent += 1
            with open(os.path.join(tmp, f"silent-{trials}.idx"), "wb") as f:
                f.write(data)
            c.expect(False, f"{what}: {nlines(out)} lines without a warning, want "
                     f"{nlines(want)}")
            continue
        warned += 1
        if rc == 0:
            c.expect(tie_groups(out) == tie_groups(want),
                     f"{what}: with a warning, the same events ({nlines(out)} lines, want "
                     f"{nlines(want)}; {err.strip()})")
    put(mpath, midx)
    took = time.monotonic() - t0
    print(f"merge.idx fuzz: {trials} trials in {took:.1f} s: {same} equal to the filtered "
          f"full dump ({same_warned} of them with a warning), {warned} different with a "
          f"warning or an error (equal clocks of several streams in another order), {silent} "
          "silent differences")
    c.expect(trials >= 100, f"at least 100 trials ran ({trials})")
    c.eq(silent, 0, "no silent difference")


def main():
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-hostile-seek-")
    try:
        lines, midx = make_trace(tmp)
        if len(sys.argv) > 1 and sys.argv[1] == "fuzz":
            fuzz(c, tmp, lines, midx)
        else:
            targeted(c, tmp, lines, midx)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
