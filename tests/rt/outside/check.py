#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check.py - an independent reader (stdlib only, no weft code) for the
trace written by user_prog.c, and the ABI checks of the installed libovni.

usage: check.py TRACEDIR PREFIX WEFT_VERSION
"""
import json
import os
import re
import struct
import subprocess
import sys

NWORKERS = 8
NEV_WORKER = 200000
NEV_MAIN = 20000
SIZES = [0] + list(range(2, 17))
HDR = struct.Struct("<BBBBQ")
# weft.index_after under WEFT_BUFSIZE=65536: the buffer, what an automatic
# flush may hold back (an eighth of it) and its slack (rt/index.c)
INDEX_AFTER = 65536 + 8192 + 28

errors = []


def err(msg):
    errors.append(msg)
    if len(errors) > 20:
        report()


def report():
    for e in errors:
        print("FAIL:", e, file=sys.stderr)
    sys.exit(1 if errors else 0)


def parse_stream(path):
    """Yields (mcv, clock, flags, payload bytes) for every event."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"ovni" or struct.unpack_from("<I", data, 4)[0] != 1:
        err(f"{path}: bad stream header {data[:8]!r}")
        return
    off, n = 8, len(data)
    while off < n:
        if n - off < 12:
            err(f"{path}: truncated event header at offset {off}")
            return
        flags, m, c, v, clock = HDR.unpack_from(data, off)
        mcv = bytes((m, c, v)).decode("ascii", "replace")
        if flags & 0x10:
            size = struct.unpack_from("<I", data, off + 12)[0]
            start, end = off + 16, off + 16 + size
        else:
            code = flags & 0x0F
            size = 0 if code == 0 else code + 1
            start, end = off + 12, off + 12 + size
        if end > n:
            err(f"{path}: truncated event at offset {off}")
            return
        yield mcv, clock, flags, data[start:end]
        off = end


def mark(op, value, mtype):
    return ("OM" + op, 0x0B, struct.pack("<qi", value, mtype))


def expected(t, n):
    """The non-OF events of stream t, as (mcv, flags, payload)."""
    yield mark("[", 1, 1)
    base = (t * 37) & 0xFF
    for i in range(n):
        if i % 20000 == 0:
            yield mark("=", i, 2)
        s = SIZES[i % 16]
        b = (base + i * 13) & 0xFF
        payload = bytes((b + j) & 0xFF for j in range(s))
        yield ("Utp", 0 if s == 0 else s - 1, payload)
        if i % 5000 == 4999:
            length = (i * 7) % 1000
            jb = (t + i) & 0xFF
            yield ("Uj.", 0x13, bytes((jb + 3 * k) & 0xFF for k in range(length)))
    yield mark("]", 1, 1)


def check_index(tdir):
    """stream.idx: its 16-byte header, then (offset, clock) of the first
    event and of every OF[ of stream.obs (docs/reader.md)."""
    with open(os.path.join(tdir, "stream.obs"), "rb") as f:
        data = f.read()
    want = [b"ovix" + struct.pack("<III", 1, 16, 0)]
    off = 8
    while off < len(data):
        flags = data[off]
        mcv = data[off + 1:off + 4]
        if off == 8 or mcv == b"OF[":
            want.append(struct.pack("<QQ", off, struct.unpack_from("<Q", data, off + 4)[0]))
        if flags & 0x10:
            off += 16 + struct.unpack_from("<I", data, off + 12)[0]
        else:
            off += 12 + ((flags & 0x0F) + 1 if flags & 0x0F else 0)
    with open(os.path.join(tdir, "stream.idx"), "rb") as f:
        got = f.read()
    if got != b"".join(want):
        err(f"{tdir}/stream.idx: {len(got)} bytes, not the {len(b''.join(want))} of the "
            "first event and every OF[")


def check_stream(tdir, meta, t, n):
    path = os.path.join(tdir, "stream.obs")
    exp = expected(t, n)
    last_clock = -1
    nflush = 0
    count = 0
    prev = None
    pending_of = None
    for mcv, clock, flags, payload in parse_stream(path):
        if clock < last_clock:
            err(f"{path}: clock goes backwards at {mcv} ({last_clock} -> {clock})")
            return
        last_clock = clock
        if pending_of is not None:
            if mcv != "OF]":
                err(f"{path}: OF[ not followed by OF] but by {mcv}")
                return
            pending_of = None
            nflush += 1
            prev = mcv
            continue
        if mcv == "OF[":
            if flags != 0 or payload:
                err(f"{path}: OF[ with flags {flags:#x}")
            pending_of = clock
            prev = mcv
            continue
        if mcv == "OF]":
            err(f"{path}: OF] without OF[")
            return
        want = next(exp, None)
        if want is None:
            err(f"{path}: extra event {mcv}")
            return
        if (mcv, flags, payload) != want:
            err(f"{path}: event #{count}: got {(mcv, flags, payload.hex())} want {(want[0], want[1], want[2].hex())}")
            return
        count += 1
        prev = mcv
    if next(exp, None) is not None:
        err(f"{path}: only {count} events, more expected")
    if pending_of is not None:
        err(f"{path}: ends inside an OF[/OF] pair")
    # The stream ends "OM] ovni_flush() ovni_thread_free()": as with the
    # reference, the pair of that last ovni_flush is not written.
    if prev != "OM]":
        err(f"{path}: ends with {prev}, not OM] (the pair of the last ovni_flush must not be written)")
    explicit = n // 50000
    if nflush < explicit:
        err(f"{path}: {nflush} OF pairs, fewer than the {explicit} explicit flushes")
    want_count = 2 + n + n // 20000 + (1 if n % 20000 else 0) + n // 5000
    if count != want_count:
        err(f"{path}: {count} events, want {want_count}")
    return nflush


def check_meta(tdir, meta, loom, pid, tid, weft_version, is_main):
    where = os.path.join(tdir, "stream.json")
    ov = meta.get("ovni", {})
    want_ovni = {
        "lib": {"version": "1.14.0", "commit": "weft"},
        "part": "thread",
        "tid": tid,
        "pid": pid,
        "loom": loom,
        "app_id": 3,
        "require": {"ovni": "1.1.0", "mymodel": "2.0.1"},
        "rank": 1,
        "nranks": 4,
        "finished": 1,
        "mark": {
            "1": {"title": "Phase", "chan_type": "stack", "labels": {"1": "compute"}},
            "2": {"title": "Counter", "chan_type": "single"},
        },
    }
    if is_main:
        want_ovni["loom_cpus"] = [{"index": i, "phyid": 2 * i} for i in range(4)]
    if ov != want_ovni:
        err(f"{where}: ovni = {json.dumps(ov, sort_keys=True)}\n  want {json.dumps(want_ovni, sort_keys=True)}")
    t = meta.get("user", {}).get("index")
    n = NEV_MAIN if is_main else NEV_WORKER
    want_user = {
        "index": t,
        "nev": n,
        "name": f"worker-{t}",
        "flag": True,
        "obj": {"t": t, "list": [1, 2, 3]},
    }
    if meta.get("user") != want_user:
        err(f"{where}: user = {meta.get('user')} want {want_user}")
    if meta.get("version") != 3:
        err(f"{where}: version = {meta.get('version')}")
    if meta.get("weft") != {"version": weft_version, "index_after": INDEX_AFTER}:
        err(f"{where}: weft = {meta.get('weft')}")
    if set(meta) != {"version", "ovni", "weft", "user"}:
        err(f"{where}: top-level keys {sorted(meta)}")
    return t, n


def check_trace(trace, weft_version):
    looms = os.listdir(trace)
    if looms != ["loom.outside.loom"]:
        err(f"{trace}: looms {looms}")
        return
    ldir = os.path.join(trace, looms[0])
    procs = os.listdir(ldir)
    if len(procs) != 1 or not re.fullmatch(r"proc\.\d+", procs[0]):
        err(f"{ldir}: processes {procs}")
        return
    pid = int(procs[0][5:])
    pdir = os.path.join(ldir, procs[0])
    seen = {}
    total_flush = 0
    for name in sorted(os.listdir(pdir)):
        if not re.fullmatch(r"thread\.\d+", name):
            err(f"{pdir}: unexpected entry {name}")
            continue
        tdir = os.path.join(pdir, name)
        files = sorted(os.listdir(tdir))
        # stream.idx: due beyond weft.index_after bytes of events
        big = os.path.getsize(os.path.join(tdir, "stream.obs")) - 8 > INDEX_AFTER
        if files == ["stream.idx", "stream.json", "stream.obs"]:
            check_index(tdir)
        elif files != ["stream.json", "stream.obs"] or big:
            err(f"{tdir}: files {files}")
        tid = int(name[7:])
        with open(os.path.join(tdir, "stream.json")) as f:
            meta = json.load(f)
        is_main = tid == pid
        t, n = check_meta(tdir, meta, "outside.loom", pid, tid, weft_version, is_main)
        if not isinstance(t, (int, float)) or t in seen:
            err(f"{tdir}: bad or repeated user.index {t}")
            continue
        seen[t] = tid
        total_flush += check_stream(tdir, meta, int(t), n) or 0
    if sorted(seen) != list(range(NWORKERS + 1)):
        err(f"{pdir}: streams for indexes {sorted(seen)}, want 0..{NWORKERS}")
    if seen.get(NWORKERS) != pid:
        err(f"{pdir}: the main thread stream is not thread.{pid}")
    if not errors:
        print(f"check.py: {len(seen)} streams, {total_flush} OF[/OF] pairs, all events as expected")


def header_functions(header, prefix="ovni_"):
    names = set()
    with open(header) as f:
        for line in f:
            if line.lstrip().startswith("#"):
                continue
            m = re.match(r"^[A-Za-z_][\w\s\*]*?\b(" + prefix + r"\w+)\s*\(", line)
            if m:
                names.add(m.group(1))
    return names


def check_abi(prefix):
    lib = os.path.join(prefix, "lib")
    so = os.path.join(lib, "libovni.so.1")
    for p in ("lib/libovni.so.1", "lib/libovni.so", "lib/libovni.a", "include/ovni.h", "include/weft/rt.h",
              "lib/pkgconfig/ovni.pc"):
        if not os.path.exists(os.path.join(prefix, p)):
            err(f"{prefix}/{p} is not installed")
    want = header_functions(os.path.join(prefix, "include", "ovni.h"))
    if len(want) < 30:
        err(f"only {len(want)} functions found in ovni.h: {sorted(want)}")
    # The ovni API unversioned, as the reference's; weft's own (weft/rt.h)
    # under the version node WEFT_RT_1 (which nm lists as an absolute symbol).
    want_rt = header_functions(os.path.join(prefix, "include", "weft", "rt.h"), "weft_rt_")
    if len(want_rt) < 2:
        err(f"only {len(want_rt)} functions found in weft/rt.h: {sorted(want_rt)}")
    want |= {f"{n}@@WEFT_RT_1" for n in want_rt} | {"WEFT_RT_1"}
    out = subprocess.run(["nm", "-D", "--defined-only", "--with-symbol-versions", so], check=True,
                         capture_output=True, text=True).stdout
    got = {line.split()[-1] for line in out.splitlines() if line.strip()}
    if got != want:
        err(f"{so} exports {sorted(got - want)} beyond ovni.h and weft/rt.h and lacks {sorted(want - got)}")
    dyn = subprocess.run(["readelf", "-d", so], check=True, capture_output=True, text=True).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dyn)
    if not m or m.group(1) != "libovni.so.1":
        err(f"{so}: SONAME is {m.group(1) if m else None}, want libovni.so.1")
    ar = subprocess.run(["nm", "--defined-only", os.path.join(lib, "libovni.a")], check=True,
                        capture_output=True, text=True).stdout
    if not re.search(r"\bT ovni_ev_emit\b", ar):
        err("libovni.a does not define ovni_ev_emit")
    if not errors:
        print(f"check.py: libovni.so.1 exports exactly the {len(want) - len(want_rt) - 1} functions of ovni.h "
              f"unversioned and the {len(want_rt)} of weft/rt.h as WEFT_RT_1, SONAME libovni.so.1")


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    trace, prefix, weft_version = sys.argv[1:]
    check_abi(prefix)
    check_trace(trace, weft_version)
    report()


if __name__ == "__main__":
    main()
