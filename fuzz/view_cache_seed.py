#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""view_cache_seed.py CACHE OUT [SAMPLES]: a cache `weft view --serve` kept
(src/view/cache.c) as fuzz_view_cache's input: its key's and its chunks'
lengths (4 bytes each, little-endian), then the file after its header (the
key, the chunks, the metadata). With SAMPLES, each track read from the
chunks keeps at most its first SAMPLES samples (a long trace's take 256 KiB
a track: beyond the fuzzer's -max_len), and each track its pyramid's
coarsest level alone, so that the seed stays small and the times past the
samples are looked up in the chunks; the cache stays valid (its checksum
is the target's)."""
import struct
import sys


def main():
    d = open(sys.argv[1], "rb").read()
    keep = int(sys.argv[3]) if len(sys.argv) > 3 else None
    klen, moff = struct.unpack_from("<IQ", d, 12)
    meta = d[moff:]
    if keep is not None:
        meta = cut_samples(meta, keep)
    out = struct.pack("<II", klen, moff - 48 - klen) + d[48:moff] + meta
    with open(sys.argv[2], "wb") as f:
        f.write(out)


def cut_samples(m, keep):
    """The metadata with each spilled track's samples cut to keep and each
    pyramid to its coarsest level (its words read in vc_write_meta's
    order)."""
    out = bytearray()
    p = 0

    def take(n):
        nonlocal p
        out.extend(m[p:p + n])
        p += n

    def u(copy=True):
        nonlocal p
        v = struct.unpack_from("<Q", m, p)[0]
        if copy:
            out.extend(m[p:p + 8])
        p += 8
        return v

    def s():
        take(u())
    nrows, nchans = u(), u()
    take(24)
    for _ in range(nrows):
        take(24)
        s()
        s()
    for _ in range(nchans):
        s()
        s()
        take(24)
        for _ in range(u()):
            take(8)
            s()
    for _ in range(nrows * nchans):
        n = u()
        take(32)
        spilled, kmin, nlev = u(), u(False), u(False)
        if nlev:
            # the coarsest level alone (the finest are the large ones)
            offs = [u(False) for _ in range(nlev + 1)]
            a, b = offs[-2], offs[-1]
            out.extend(struct.pack("<qqQQ", kmin + nlev - 1, 1, 0, b - a))
            out.extend(m[p + 8 * a:p + 8 * b])
            p += 8 * b
        else:
            out.extend(struct.pack("<qq", kmin, nlev))
        if spilled:
            take(24 * u())  # the chunk table
            take(8)         # the intervals spilled
            nsmp, slast = u(False), u(False)
            k = min(nsmp, keep)
            out.extend(struct.pack("<QQ", k, min(slast, k)))
            take(8)         # sk
            take(32 * k)
            p += 32 * (nsmp - k)
        for _ in range(0, n, 32):
            take(2 + struct.unpack_from("<H", m, p)[0])
    take(8)  # the end mark
    if p != len(m):
        raise SystemExit(f"{sys.argv[1]}: {len(m) - p} bytes of metadata not read")
    return bytes(out)


main()
