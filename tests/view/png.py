# SPDX-License-Identifier: MIT
"""png.py - a PNG decoder with the standard library only (zlib): 8-bit RGB
or RGBA, not interlaced (what cairo and Chromium write); the pictures'
test (picture.py) and the page's screenshots (view_page.py) read theirs
with it."""
import struct
import zlib


def decode(data):
    """(width, height, rows of (r, g, b) tuples) of a PNG's bytes."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w, h, bpp = 8, b"", None, None, None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace != 0:
                raise ValueError(f"PNG depth {depth} type {ctype} interlace {interlace}")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    if w is None:
        raise ValueError("PNG without IHDR")
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 2:
            line = bytearray((x + p) & 255 for x, p in zip(line, prev))
        elif f != 0:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                if f == 1:
                    line[i] = (line[i] + a) & 255
                elif f == 3:
                    line[i] = (line[i] + (a + b) // 2) & 255
                elif f == 4:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                    line[i] = (line[i] + pr) & 255
        prev = line
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
    return w, h, rows
