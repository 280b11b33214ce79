#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""sort_random.py - `weft sort` on random unordered regions against sortmodel.py.

Random traces of 1 to 4 streams: regions whose events reach back before the
region (by 0 to 1000 ns), equal clocks everywhere, jumbo events (0 to 5000
bytes of data) inside and outside regions, payloads of every size (so that
moved events change offsets), empty regions, an OU[ inside a region, stray
OU], a region the stream ends inside, clocks going back outside regions.
For each trace and look-back (the default, and small ones that make regions
reach too far and sorts start at the stream's first event):
  - `weft sort --look-back N` leaves exactly the model's bytes in every stream
    (the streams before one whose region reaches too far sorted, it and the
    ones after it untouched; exit 1 naming it), stream.json untouched, no
    temporary file left;
  - `weft sort --check` exits 1 exactly when a clock goes back in some stream
    (naming the first such stream), else 0;
  - `weft dump -x --sort` of the unsorted trace prints what `weft dump -x`
    prints for the sorted copy (sorting on read = sorting the files);
  - `ovnisort -n N+1` (the reference's ring of N+1) does what `weft sort
    --look-back N` does.
Usage: sort_random.py [SEED] [NTRACES]   (WEFT_BIN, WEFT_SOURCE_DIR)
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
import sortmodel  # noqa: E402
from tracegen import HEADER, ev, meta, thread_rel, write_stream  # noqa: E402
from wefttest import Checker, weft_bin  # noqa: E402

MCVS = ["OB.", "OHp", "KCO", "OJj", "VTx"]


def rnd_event(rng, clock, mcv=None):
    mcv = mcv or rng.choice(MCVS)
    if rng.random() < 0.06:
        return ev(mcv, clock, jumbo=bytes(rng.randrange(256)
                                          for _ in range(rng.choice([0, 1, 14, 300, 5000]))))
    n = rng.choice([0, 0, 0, 2, 3, 4, 8, 16])
    return ev(mcv, clock, bytes(rng.randrange(256) for _ in range(n)))


def gen_stream(rng, nev):
    out = []
    t = rng.randrange(2000, 3000)
    while len(out) < nev:
        r = rng.random()
        if r < 0.07:
            t += rng.randrange(0, 3)
            out.append(ev("OU[", t))
            k = rng.choice([0, 0, 1, 2, 3, 5, 10, 30])
            reach = rng.choice([0, 3, 20, 100, 1000])
            top = t
            for _ in range(k):
                c = max(0, t - rng.randrange(0, reach + 1) + rng.randrange(0, 4))
                if rng.random() < 0.04:
                    out.append(ev("OU[", c))  # one of the region's events
                else:
                    out.append(rnd_event(rng, c))
                top = max(top, c)
            tc = top + rng.randrange(0, 3) if rng.random() < 0.9 else t - rng.randrange(0, 5)
            out.append(ev("OU]", max(0, tc)))
            t = max(t, tc)
        elif r < 0.08:
            out.append(ev("OU]", t))  # a stray one
        elif r < 0.085:
            out.append(rnd_event(rng, max(0, t - rng.randrange(1, 50))))  # back, outside
        else:
            t += rng.choice([0, 0, 1, 2, 3])
            out.append(rnd_event(rng, t))
    if rng.random() < 0.15:  # the stream ends inside a region
        out.append(ev("OU[", t + 1))
        out.extend(rnd_event(rng, t - rng.randrange(0, 30)) for _ in range(rng.randrange(0, 4)))
    return out


def make_trace(rng, root):
    ns = rng.randrange(1, 5)
    rels = []
    for i in range(ns):
        rel = thread_rel("vm", 1, i + 1)
        nev = rng.choice([0, 1, 5, 40, 200, 600])
        write_stream(root, rel, meta(i + 1, 1), gen_stream(rng, nev))
        rels.append(rel)
    return sorted(rels)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def snapshot(root):
    files = {}
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            files[os.path.relpath(p, root)] = read(p)
    return files


def run(args, cwd=None, argv0=None):
    b = weft_bin()
    cmd = [argv0 or b] + args
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def expected(orig, rels, look_back):
    """(files after weft sort, the stream it stops at or None)."""
    want = dict(orig)
    for rel in rels:
        key = rel + "/stream.obs"
        try:
            s = sortmodel.sort_file(orig[key], look_back)
        except sortmodel.TooFar:
            return want, rel
        if s is not None:
            want[key] = s
    return want, None


def one(chk, rng, tmp, n):
    base = os.path.join(tmp, f"t{n}")
    rels = make_trace(rng, base)
    orig = snapshot(base)
    for look_back in (None, 1, 4, 25, 200):
        lb = look_back or 1000000
        want, stop = expected(orig, rels, lb)
        work = os.path.join(tmp, "w")
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base, work)
        args = ["sort"] + (["--look-back", str(look_back)] if look_back else []) + [work]
        rc, out, err = run(args)
        what = f"trace {n} ({len(rels)} streams), look-back {lb}"
        if stop is None:
            chk.eq(rc, 0, f"{what}: exit status ({err.strip()})")
        else:
            chk.eq(rc, 1, f"{what}: exit status when {stop} reaches too far")
            chk.expect(f"{stop}/stream.obs: offset " in err and "look-back" in err,
                       f"{what}: the error names the stream and the look-back: {err!r}")
        got = snapshot(work)
        chk.eq(sorted(got), sorted(want), f"{what}: the files (no temporary left)")
        for k in want:
            if got.get(k) != want[k]:
                chk.expect(False, f"{what}: {k} differs from the model")
        # the reference's name and ring size
        if look_back and look_back > 1 and n % 4 == 0:
            ovnisort = os.path.join(os.path.dirname(weft_bin()), "ovnisort")
            shutil.rmtree(work)
            shutil.copytree(base, work)
            rc2, _, _ = run(["-n", str(look_back + 1), work], argv0=ovnisort)
            chk.eq((rc2, snapshot(work) == got), (rc, True), f"{what}: ovnisort -n {lb + 1}")
    # --check
    back = [r for r in rels if sortmodel.backwards(orig[r + "/stream.obs"])]
    rc, out, err = run(["sort", "--check", base])
    if back:
        chk.eq(rc, 1, f"trace {n}: --check exit status")
        chk.expect(f"stream '{back[0]}' is not sorted" in err, f"trace {n}: --check names "
                   f"{back[0]}: {err!r}")
    else:
        errs = [ln for ln in err.splitlines() if ": warning: " not in ln]
        chk.eq((rc, errs), (0, []), f"trace {n}: --check of a sorted trace")
    chk.eq(snapshot(base), orig, f"trace {n}: --check changes nothing")
    # sorting on read
    want, stop = expected(orig, rels, 65536)
    if stop is None:
        work = os.path.join(tmp, "s")
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(base, work)
        for k, v in want.items():
            with open(os.path.join(work, k), "wb") as f:
                f.write(v)
        rc1, out1, err1 = run(["dump", "-x", "--sort", base])
        rc2, out2, err2 = run(["dump", "-x", work])
        chk.eq((rc1, out1), (rc2, out2), f"trace {n}: dump -x --sort = dump -x of the sorted copy")
        chk.eq(err1.replace(base, "T"), err2.replace(work, "T"), f"trace {n}: the same warnings")
    shutil.rmtree(base)


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 20261124
    ntraces = int(sys.argv[2]) if len(sys.argv) > 2 else 150
    rng = random.Random(seed)
    chk = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-sort-random-")
    try:
        for n in range(ntraces):
            one(chk, rng, tmp, n)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"seed {seed}, {ntraces} traces")
    chk.done()


if __name__ == "__main__":
    main()
