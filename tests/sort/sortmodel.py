# SPDX-License-Identifier: MIT
"""sortmodel.py - an independent model of the reference's ovnisort, for the tests.

Written from the rule as docs/reader.md states it (learnt from the corpus),
with Python lists and Python's stable sort, not from libweft's code:

  - events in file order; OU[ opens a region; the event right after it is the
    region's first one unless it is an OU] (then the region is empty); the next
    OU] closes it (an OU[ inside a region is one of its events);
  - at the closing OU]: c = the smallest clock among the region's events; the
    events before the OU] are searched from the last one back, at most
    look_back of them, for one whose clock is below c; all events after it (up
    to the OU], excluded) are sorted by clock, stably;
  - none found among the last look_back: if the stream has fewer than
    look_back events before the OU], everything from the first event on is
    sorted; else the sort fails (the region reaches back too far);
  - a region the stream ends inside stays as it is.
"""
import struct

OPEN, CLOSE = b"OU[", b"OU]"


def parse(data):
    """The events of a stream file: [(mcv bytes, clock, raw bytes)]; None if
    the file ends inside an event (the sort refuses such a stream)."""
    assert data[:4] == b"ovni"
    off, out = 8, []
    while off < len(data):
        if len(data) - off < 12:
            return None
        flags = data[off]
        if flags & 0x10:
            if len(data) - off < 16:
                return None
            size = 16 + struct.unpack_from("<I", data, off + 12)[0]
        else:
            n = flags & 15
            size = 12 + (n + 1 if n else 0)
        if off + size > len(data):
            return None
        clock = struct.unpack_from("<q", data, off + 4)[0]
        out.append((bytes(data[off + 1:off + 4]), clock, bytes(data[off:off + size])))
        off += size
    return out


class TooFar(Exception):
    """A region reaches back further than the look-back."""


def sort_events(events, look_back):
    """The events after the sort; raises TooFar."""
    out = []
    state, first = "S", None
    for e in events:
        mcv = e[0]
        if state == "S":
            if mcv == OPEN:
                state = "U"
        elif state == "U":
            if mcv == CLOSE:
                state = "S"
            else:
                state, first = "X", len(out)
        elif mcv == CLOSE:
            c = min(x[1] for x in out[first:])
            lo = max(0, len(out) - look_back)
            keep = None
            for i in range(len(out) - 1, lo - 1, -1):
                if out[i][1] < c:
                    keep = i
                    break
            if keep is None:
                if len(out) >= look_back:
                    raise TooFar()
                keep = -1
            out[keep + 1:] = sorted(out[keep + 1:], key=lambda x: x[1])
            state = "S"
        out.append(e)
    return out


def sort_file(data, look_back=1000000):
    """The sorted stream file's bytes; raises TooFar; None if the stream
    cannot be read (ends inside an event)."""
    evs = parse(data)
    if evs is None:
        return None
    return data[:8] + b"".join(e[2] for e in sort_events(evs, look_back))


def regions(data):
    """The number of regions with events (the ones a sort sorts)."""
    n, state = 0, "S"
    for e in parse(data) or []:
        if state == "S":
            state = "U" if e[0] == OPEN else "S"
        elif state == "U":
            state = "S" if e[0] == CLOSE else "X"
        elif e[0] == CLOSE:
            n, state = n + 1, "S"
    return n


def backwards(data):
    """Whether a clock goes back against the previous event in the file."""
    evs = parse(data) or []
    return any(b[1] < a[1] for a, b in zip(evs, evs[1:]))
