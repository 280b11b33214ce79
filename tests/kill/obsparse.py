# SPDX-License-Identifier: MIT
"""An independent reader of stream.obs files (src/format/obs_format.h): the
whole events of a stream, and where and why it is cut short, as weft says."""
import struct

HEADER = 8


def mcv_show(b):
    out = ""
    for c in b:
        if 0x20 < c < 0x7f and c != 0x5c:
            out += chr(c)
        else:
            out += "\\x%02x" % c
    return out


def parse(data):
    """Returns (events, cut): events = [(offset, clock, mcv bytes, payload bytes)],
    cut = None or (offset, nbytes, why, header)."""
    n = len(data)
    if n < HEADER:
        why = ("the file is empty (no stream header)" if n == 0
               else "truncated stream header: %d of 8 bytes" % n)
        return [], (0, n, why, True)
    assert data[:4] == b"ovni" and struct.unpack("<I", data[4:8])[0] == 1
    evs = []
    off = HEADER
    while off < n:
        avail = n - off
        if avail < 12:
            return evs, (off, avail, "event header cut short: %d of 12 bytes before the end "
                         "of the file" % avail, False)
        flags = data[off]
        mcv = mcv_show(data[off + 1:off + 4])
        clock = struct.unpack("<q", data[off + 4:off + 12])[0]
        if flags & 0x10:
            if avail < 16:
                return evs, (off, avail, "jumbo event %s: size field cut short by the end "
                             "of the file" % mcv, False)
            size = struct.unpack("<I", data[off + 12:off + 16])[0]
            need = 16 + size
            if need > avail:
                return evs, (off, avail, "jumbo event %s: size %d runs past the end of the "
                             "file (%d bytes left after the size field)" % (mcv, size, avail - 16),
                             False)
        else:
            code = flags & 0x0f
            psize = 0 if code == 0 else code + 1
            need = 12 + psize
            if need > avail:
                return evs, (off, avail, "event %s: payload of %d bytes runs past the end of "
                             "the file (%d bytes left)" % (mcv, psize, avail - 12), False)
        evs.append((off, clock, data[off + 1:off + 4], data[off + 12:off + need]))
        off += need
    return evs, None


def dump_x_line(clock, mcv, relpath, payload):
    """A `weft dump -x` line (without the newline)."""
    return "%10d  %s  %s  %s" % (clock, mcv.decode("latin-1"), relpath,
                                 "".join(":%02x" % b for b in payload))


def cut_warning(cmd, obs, cut):
    off, nb, why, header = cut
    if header:
        return ("weft %s: warning: %s: offset 0: stream cut: a partial stream header of %d "
                "bytes (%s); the stream has no events" % (cmd, obs, nb, why))
    return ("weft %s: warning: %s: offset %d: stream cut: a partial event of %d bytes at the "
            "end of the file (%s); read up to its last whole event" % (cmd, obs, off, nb, why))


def top_lines(counts):
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ["%s %10d" % (k.decode("latin-1"), v) for k, v in items]
