#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""payload.py - the payload view of `weft sql` against an independent decode.

The view decodes the integer fields from event_data's payloads in plain SQL
(docs/sql.md, Schema). Here every event's payload is decoded again with
Python's struct, the fields laid out from the models' descriptions
(src/model/*/*.yaml, and the model file given to weft: the args in order,
from byte 0, from byte 4 in a jumbo payload; an exact MCV before one whose
value byte is '*'), and the view's rows must be exactly those fields (the
same event ids, entries, places, names, types, values and value types: an
integer, a u64 above 2^63 - 1 as its decimal text, a string as weft dump
escapes it; no row for a field the payload is too short for), in the order
(event, field), on:
  - corpus cases with strings (models/mix-0, v3/jumbo-nosv), 64-bit marks
    (v3/marks), task types (v3/suite-nosv-task-types);
  - a trace written here with a model of its own (every integer type, at
    their limits: i8 -128, i16 -32768, i64 -2^63, u64 2^63 - 1, 2^63 and
    2^64 - 1, payloads too short for the last fields, a string with control
    bytes in a jumbo event) and ovni's OHx (a negative tid, a u64 tag above
    2^63), which also asserts that each of these values is met.
The view is also read by the sqlite3 program, when installed: the same rows.
The files are written into a temporary directory, removed at the end.
"""
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
from wefttest import Checker, conformance_dir, run  # noqa: E402
import tracegen  # noqa: E402

SRC = os.path.normpath(os.path.join(HERE, "..", ".."))
FMT = {"i8": "<b", "i16": "<h", "i32": "<i", "i64": "<q",
       "u8": "<B", "u16": "<H", "u32": "<I", "u64": "<Q"}

MODEL = """weft-model: 1
name: psi
byte: Y
version: 1.0.0
title: payload field types
events:
  - mcv: YAa
    name: all signed and small
    args: [i8 a, i16 b, u8 c, u16 d, i64 e]
    desc: "a %{a} b %{b} c %{c} d %{d} e %{e}"
  - mcv: YB*
    name: wide
    args: [u64 x, i32 y, u16 z]
    desc: "x %{x} y %{y} z %{z}"
  - mcv: YSs
    name: a string
    jumbo: true
    args: [u32 id, str s]
    desc: "id %{id} s %{s}"
"""


def models(paths):
    """mcv -> (jumbo, [(name, type)]) of the events of the model files."""
    out = {}
    for p in paths:
        with open(p, encoding="utf-8") as f:
            text = f.read()
        if "\nevents:" not in text:
            continue  # a model whose events have no args (mpi.yaml)
        text = text[text.index("\nevents:"):]
        for block in re.split(r"\n  - (?=mcv:)", text)[1:]:
            mcv = re.match(r'mcv:\s*"?([^"\s]+)"?', block).group(1)
            m = re.search(r"\n\s+args:\s*\[([^\]]*)\]", block)
            args = [tuple(a.split()[::-1]) for a in m.group(1).split(",")] if m else []
            jumbo = re.search(r"\n\s+jumbo:\s*true", block) is not None
            if re.search(r"\n\s+desc:", block):
                out[mcv] = (jumbo, [(n, t) for n, t in args])
    return out


def escape(b):
    """A string field as weft dump prints it (ASCII; None: other bytes)."""
    out = []
    for c in b:
        if 0x20 <= c < 0x7F:
            out.append(chr(c))
        elif c >= 0x80:
            return None
        else:
            out.append({10: "\\n", 9: "\\t", 13: "\\r", 27: "\\e"}.get(c, "\\x%02x" % c))
    return "".join(out)


def decode(specs, eid, mcv, payload):
    """The rows the view must give for one event."""
    key = mcv if mcv in specs else mcv[:2] + "*"
    if key not in specs or payload is None:
        return []
    jumbo, args = specs[key]
    off, rows = (4 if jumbo else 0), []
    for idx, (name, typ) in enumerate(args):
        if typ == "str":
            if off + 1 > len(payload):
                break
            s = payload[off:]
            s = s[:s.index(0)] if 0 in s else s
            rows.append((eid, key, idx, name, typ, escape(s), "text"))
            continue
        size = struct.calcsize(FMT[typ])
        if off + size <= len(payload):
            v = struct.unpack_from(FMT[typ], payload, off)[0]
            if typ == "u64" and v > (1 << 63) - 1:
                rows.append((eid, key, idx, name, typ, str(v), "text"))
            else:
                rows.append((eid, key, idx, name, typ, v, "integer"))
        off += size
    return rows


def view_rows(db):
    return [tuple(r) for r in db.execute(
        "SELECT event_id, mcv, idx, name, type, value, typeof(value) FROM payload")]


def compare(c, what, dbpath, specs):
    db = sqlite3.connect(dbpath)
    try:
        got = view_rows(db)
        want = []
        for eid, mcv, payload in db.execute(
                "SELECT id, mcv, payload FROM event ORDER BY id"):
            want += decode(specs, eid, mcv, payload)
    finally:
        db.close()
    # a string with bytes outside ASCII: its text is not checked here
    got = [g if w[5] is not None else g[:5] + (None,) + g[6:] for g, w in zip(got, want)] + \
        got[len(want):]
    c.eq(len(got), len(want), f"{what}: rows of the payload view")
    bad = [(g, w) for g, w in zip(got, want) if g != w]
    c.eq(bad[:3], [], f"{what}: rows of the payload view that the payloads do not decode to")
    c.expect(len(want) > 0, f"{what}: no payload field at all")
    return got


def build(c, what, args, db):
    r = run(["sql"] + args + ["-o", db])
    c.eq(r[0], 0, f"{what}: weft sql exit ({r[2]})")
    return r[0] == 0


def write_trace(root):
    """One thread: OHx, then the model's events, then OHe."""
    pk = struct.pack
    t = 100
    evs = [tracegen.ev("OHx", t, pk("<iiQ", 0, -7, (1 << 64) - 1))]

    def add(mcv, payload=b"", jumbo=None):
        nonlocal t
        t += 10
        evs.append(tracegen.ev(mcv, t, payload, jumbo=jumbo))

    add("YAa", pk("<bhBHq", -128, -32768, 255, 65535, -(1 << 63)))
    add("YAa", pk("<bhBHq", 127, 32767, 0, 1, (1 << 63) - 1))
    add("YAa", pk("<bhBHq", -1, -2, 128, 32768, -2))
    add("YAa", pk("<bhBH", -3, 258, 7, 9))        # too short for e
    add("YAa", pk("<bh", 5, -300))                   # too short for c, d, e
    add("YBq", pk("<QiH", (1 << 63) - 1, -(1 << 31), 65535))
    add("YBr", pk("<QiH", 1 << 63, (1 << 31) - 1, 0))
    add("YBs", pk("<QiH", (1 << 64) - 1, -1, 1))
    add("YBt", pk("<QiH", 0x0102030405060708, 0x0a0b0c0d, 0x0e0f))
    add("YSs", jumbo=pk("<I", 77) + b"tab\there\x01\x7f;" + b"\x00junk")
    add("YSs", jumbo=pk("<I", 78))                   # no byte for the string
    add("OHe")
    meta = tracegen.meta(10, 10, require={"ovni": "1.1.0", "psi": "1.0.0"})
    tracegen.write_stream(root, tracegen.thread_rel("vm", 10, 10), meta, evs)


def main():
    c = Checker()
    conf = conformance_dir()
    builtin = sorted(os.path.join(SRC, "src", "model", d, f)
                     for d in os.listdir(os.path.join(SRC, "src", "model"))
                     if os.path.isdir(os.path.join(SRC, "src", "model", d))
                     for f in os.listdir(os.path.join(SRC, "src", "model", d))
                     if f.endswith(".yaml"))
    specs = models(builtin)
    with tempfile.TemporaryDirectory(prefix="weft-sql-payload-") as tmp:
        if conf is not None:
            for case in ["models/mix-0", "v3/jumbo-nosv", "v3/marks",
                         "v3/suite-nosv-task-types"]:
                db = os.path.join(tmp, case.replace("/", "_") + ".db")
                if build(c, case, ["-a", os.path.join(conf, case)], db):
                    compare(c, case, db, specs)
        trace = os.path.join(tmp, "trace")
        write_trace(trace)
        model = os.path.join(tmp, "psi.yaml")
        with open(model, "w", encoding="utf-8") as f:
            f.write(MODEL)
        db = os.path.join(tmp, "psi.db")
        if build(c, "psi", ["--model", model, trace], db):
            got = compare(c, "psi", db, dict(specs, **models([model])))
            vals = {(r[3], r[5]) for r in got}
            for name, v in [("tid", -7), ("tag", str((1 << 64) - 1)), ("a", -128),
                            ("b", -32768), ("c", 255), ("d", 65535), ("e", -(1 << 63)),
                            ("e", (1 << 63) - 1), ("x", (1 << 63) - 1), ("x", str(1 << 63)),
                            ("x", str((1 << 64) - 1)), ("x", 0x0102030405060708),
                            ("y", -(1 << 31)), ("z", 0x0e0f), ("s", "tab\\there\\x01\\x7f;")]:
                c.expect((name, v) in vals, f"psi: no field {name} = {v!r} in the view")
            c.eq(sum(1 for r in got if r[3] == "s"), 1, "psi: string fields (one has no byte)")
            c.eq(sum(1 for r in got if r[3] == "e"), 3, "psi: e fields (two payloads too short)")
            sh = shutil.which("sqlite3")
            if sh is not None:
                p = subprocess.run([sh, "-readonly", "-separator", "|", db,
                                    "SELECT event_id, idx, value FROM payload"],
                                   capture_output=True, text=True, timeout=60)
                c.eq(p.stdout, "".join(f"{r[0]}|{r[2]}|{r[5]}\n" for r in got),
                     "psi: the view in the sqlite3 program")
    c.done()


if __name__ == "__main__":
    main()
