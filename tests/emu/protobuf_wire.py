# SPDX-License-Identifier: MIT
"""protobuf_wire.py - the protobuf wire format, read back for the Perfetto tests
(an independent decoder: no library), and where perfetto_check.py is."""
import os
import struct
from pathlib import Path


def varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def fields(buf, start, end):
    """Yields (field number, wire type, value) of the message buf[start:end]; a
    length-delimited value is its (start, end) span."""
    pos = start
    while pos < end:
        key, pos = varint(buf, pos)
        fno, wt = key >> 3, key & 7
        if wt == 0:
            val, pos = varint(buf, pos)
        elif wt == 2:
            n, pos = varint(buf, pos)
            val = (pos, pos + n)
            pos += n
        elif wt == 1:
            val = struct.unpack_from("<Q", buf, pos)[0]
            pos += 8
        elif wt == 5:
            val = struct.unpack_from("<I", buf, pos)[0]
            pos += 4
        else:
            raise ValueError(f"wire type {wt}")
        if pos > end:
            raise ValueError("field past the end of its message")
        yield fno, wt, val


def text(buf, span):
    return bytes(buf[span[0]:span[1]]).decode("utf-8")


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def checker_path():
    """perfetto_check.py: $WEFT_PERFETTO_CHECK, else tools/ beside the corpus
    (../shared/tools). Under CI=true it must exist."""
    p = os.environ.get("WEFT_PERFETTO_CHECK")
    if not p:
        corpus = (os.environ.get("WEFT_CONFORMANCE_DIR")
                  or os.environ.get("WEFT_CONFORMANCE_DIR_DEFAULT") or "")
        p = str(Path(corpus).parent / "tools" / "perfetto_check.py") if corpus else ""
    path = Path(p) if p else None
    if path is None or not path.exists():
        if os.environ.get("CI") == "true":
            raise SystemExit(f"perfetto_check.py not found at {p!r} (CI=true: failure)")
        return None
    return path
