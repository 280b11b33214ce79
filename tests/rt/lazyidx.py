# SPDX-License-Identifier: MIT
"""The lazy stream index (src/rt/index.c): libovni creates stream.idx at a
stream's second write, and stream.json's weft.index_after says up to which
size a stream may have none (src/format/obs_format.h).

lazyidx_gen (1024-byte buffers) writes a thread of a few events (one
buffer: no stream.idx) and one of many (a stream.idx equal, byte for byte,
to what `weft index` builds). weft dump --from, weft check and weft index
read both without a warning, the same before and after `weft index`
(which builds the short stream's one-entry index too). A removed
stream.idx of the long stream, or of the short one whose stream.json does
not say it may have none (no weft.index_after: the reference's libovni;
one smaller than the stream), is still reported, with its exact warning.
A weft.index_after that is not a non-negative integer (a string, -1, 1.5)
makes weft check refuse the trace (exit 1), naming the stream.json.
A symbolic link planted where the long stream's stream.idx goes is not
written through: libovni stops with its message, the link's target intact.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import Checker, run  # noqa: E402

HDR = b"ovix" + struct.pack("=III", 1, 16, 0)
AFTER = 1024 + 512 + 28  # the buffer, the smallest hold-back, its slack
TAIL = "; seeking by reading the stream from its start\n"


def clock_of(line):
    return int(line.split(None, 1)[0])


def filtered(full, x):
    return b"".join(line for line in full if clock_of(line) >= x)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def main():
    c = Checker()
    gen = os.environ.get("LAZYIDX_GEN")
    if not gen or not os.path.exists(gen):
        print(f"LAZYIDX_GEN not set or missing: '{gen}'", file=sys.stderr)
        sys.exit(1)
    tmp = tempfile.mkdtemp(prefix="weft-lazyidx-")
    try:
        checks(c, gen, tmp)
        planted(c, gen, os.path.join(tmp, "plant"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


def planted(c, gen, tmp):
    """A symbolic link where a stream.idx goes: libovni does not write
    through it (O_NOFOLLOW), it stops with its message; the file the link
    names is left as it was."""
    os.makedirs(tmp)
    victim = os.path.join(tmp, "victim")
    with open(victim, "wb") as f:
        f.write(b"keep me\n")
    env = dict(os.environ, WEFT_BUFSIZE="1024", OVNI_TRACEDIR=os.path.join(tmp, "ovni"),
               LAZY_PLANT=victim)
    env.pop("OVNI_TMPDIR", None)
    p = subprocess.run([gen], cwd=tmp, env=env, capture_output=True, text=True, timeout=60)
    loom = os.path.join(tmp, "ovni", "loom.vm")
    idx = os.path.join(loom, os.listdir(loom)[0], "thread.202", "stream.idx")
    c.expect(p.returncode != 0, f"a planted stream.idx link: exit {p.returncode}")
    c.expect(f"cannot create the stream index '{idx}': Too many levels of symbolic links\n"
             in p.stderr, f"a planted stream.idx link: the message ({p.stderr!r})")
    c.eq(read(victim), b"keep me\n", "a planted stream.idx link: its target unchanged")
    c.expect(os.path.islink(idx), "a planted stream.idx link: still the link")


def checks(c, gen, tmp):
    env = dict(os.environ, WEFT_BUFSIZE="1024", OVNI_TRACEDIR=os.path.join(tmp, "ovni"))
    env.pop("OVNI_TMPDIR", None)
    subprocess.run([gen], cwd=tmp, env=env, check=True, timeout=60)
    loom = os.path.join(tmp, "ovni", "loom.vm")
    proc = os.path.join(loom, os.listdir(loom)[0])
    short, long_ = os.path.join(proc, "thread.201"), os.path.join(proc, "thread.202")
    c.eq(sorted(os.listdir(short)), ["stream.json", "stream.obs"], "one buffer: no stream.idx")
    c.eq(sorted(os.listdir(long_)), ["stream.idx", "stream.json", "stream.obs"],
         "many buffers: a stream.idx")
    for d in (short, long_):
        with open(os.path.join(d, "stream.json")) as f:
            meta = json.load(f)
        c.eq(meta["weft"].get("index_after"), AFTER, f"{d}: weft.index_after")
    c.expect(os.path.getsize(os.path.join(short, "stream.obs")) - 8 <= AFTER,
             "the short stream is within weft.index_after")
    lib = read(os.path.join(long_, "stream.idx"))
    c.eq(lib[:16], HDR, "the long stream's index header")
    c.expect(len(lib) > 16 + 3 * 16, f"the long stream's index has entries ({len(lib)} bytes)")

    rc, full, err = run(["dump", "ovni"], cwd=tmp, timeout=60)
    c.eq((rc, err), (0, ""), "dump: exit and stderr")
    full = full.splitlines(keepends=True)
    by = {}
    for line in full:
        by.setdefault(line.split()[2].split(b"/")[-1], []).append(clock_of(line))
    s201 = sorted(by.get(b"thread.201", by.get(b"201", [])))
    s202 = sorted(by.get(b"thread.202", by.get(b"202", [])))
    c.expect(len(s201) >= 20 and len(s202) >= 2000, f"both streams dumped ({len(s201)}, {len(s202)})")
    xs = [clock_of(full[0]), s201[len(s201) // 2], s202[len(s202) // 2], s202[-5]] if s201 and s202 else []

    def dumps(what, warn=""):
        for x in xs:
            rc, out, err = run(["dump", "--from", str(x), "ovni"], cwd=tmp, timeout=60)
            c.eq((rc, err), (0, warn), f"{what}: dump --from {x}: exit and stderr")
            c.expect(out == filtered(full, x), f"{what}: dump --from {x} equals the filtered "
                     f"full dump ({len(out)} bytes, want {len(filtered(full, x))})")

    dumps("as written")
    rc, out, err = run(["check", "ovni"], cwd=tmp, timeout=60)
    c.eq((rc, err), (0, ""), "weft check: exit and no warning")
    check_out = out

    # weft index: the long stream's bytes again, the short one's one entry
    rc, out, err = run(["index", "ovni"], cwd=tmp, timeout=60)
    rel = os.path.relpath(proc, tmp)
    c.eq((rc, err), (0, ""), "weft index: exit and stderr")
    c.eq(out.decode().splitlines()[:2], [f"{rel}/thread.201/stream.idx  1 entry",
                                         f"{rel}/thread.202/stream.idx  {(len(lib) - 16) // 16} entries"],
         "weft index: both streams")
    c.eq(read(os.path.join(long_, "stream.idx")), lib, "weft index builds libovni's index")
    obs201 = read(os.path.join(short, "stream.obs"))
    c.eq(read(os.path.join(short, "stream.idx")), HDR + struct.pack("=QQ", 8, struct.unpack_from("=Q", obs201, 12)[0]),
         "weft index builds the short stream's one entry")
    dumps("indexed")
    rc, out, err = run(["check", "ovni"], cwd=tmp, timeout=60)
    c.eq((rc, out, err), (0, check_out, ""), "weft check once indexed: the same")
    os.unlink(os.path.join(short, "stream.idx"))
    # without merge.idx (with it, a seek of this small trace replays from
    # the start and reads no stream index)
    os.unlink(os.path.join(tmp, "ovni", "merge.idx"))
    dumps("as written, again")

    # a removed index of the long stream is still reported
    lp = os.path.join(long_, "stream.idx")
    os.unlink(lp)
    x = s202[len(s202) // 2] if s202 else 0
    rc, out, err = run(["dump", "--from", str(x), "ovni"], cwd=tmp, timeout=60)
    c.eq((rc, err), (0, f"weft dump: warning: {os.path.relpath(lp, tmp)}: missing (`weft index` "
                        f"writes one){TAIL}"), "a removed index of the long stream: warned")
    c.expect(out == filtered(full, x), "a removed index of the long stream: the same lines")
    with open(lp, "wb") as f:
        f.write(lib)

    # the short stream without the writer's word: reported as before
    jp = os.path.join(short, "stream.json")
    orig = read(jp)
    sp = os.path.join(short, "stream.idx")
    x = s201[len(s201) // 2] if s201 else 0
    for what, value in (("no weft.index_after", None), ("a weft.index_after below its size", 10)):
        meta = json.loads(orig)
        if value is None:
            del meta["weft"]["index_after"]
        else:
            meta["weft"]["index_after"] = value
        with open(jp, "w") as f:
            json.dump(meta, f, indent=4)
        os.utime(jp, ns=(os.stat(os.path.join(short, "stream.obs")).st_mtime_ns,) * 2)
        rc, out, err = run(["dump", "--from", str(x), "ovni"], cwd=tmp, timeout=60)
        c.eq((rc, err), (0, f"weft dump: warning: {os.path.relpath(sp, tmp)}: missing (`weft "
                            f"index` writes one){TAIL}"), f"the short stream with {what}: warned")
        c.expect(out == filtered(full, x), f"the short stream with {what}: the same lines")

    # a weft.index_after that is not a count: refused, naming the file
    for value in ("2113564", -1, 1.5):
        meta = json.loads(orig)
        meta["weft"]["index_after"] = value
        with open(jp, "w") as f:
            json.dump(meta, f, indent=4)
        rc, out, err = run(["check", "ovni"], cwd=tmp, timeout=60)
        c.eq((rc, err), (1, f"weft check: {os.path.relpath(jp, tmp)}: weft.index_after is not a "
                            "non-negative integer\n"), f"weft.index_after {value!r}: refused")
    with open(jp, "wb") as f:
        f.write(orig)


if __name__ == "__main__":
    main()
