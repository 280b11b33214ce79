#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""sort_kill.py - an interrupted `weft sort` leaves every stream untouched or sorted.

A trace of 7 streams: 5 need sorting (regions reaching back, payloads and
jumbo events of many sizes), 1 has a region already in order, 1 has none.
For N = 0 .. 5, `weft sort` runs with WEFT_SORT_DIE_AFTER=N (the testing
hook: SIGKILL halfway through writing the stream after the N-th replaced):
  - it dies by SIGKILL;
  - every stream file is byte for byte either the original or the fully
    sorted one (sortmodel.py); exactly the first N streams to sort are sorted;
    the next one with a region (the one it was writing) is untouched and its
    half-written STREAM.sorting is there; the stream.json files are untouched;
then `weft sort` again: exit 0, it says it removed the leftover, and the
trace is the fully sorted one with no temporary file left. Also: a second
sort of a sorted trace changes nothing (not even the files' inodes), and
WEFT_SORT_DIE_AFTER=5 (no sixth stream to write) lets the sort finish.
Usage: sort_kill.py   (WEFT_BIN, WEFT_SOURCE_DIR)
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
import sortmodel  # noqa: E402
from tracegen import ev, meta, thread_rel, write_stream  # noqa: E402
from wefttest import Checker, weft_bin  # noqa: E402


def events(rng, kind, n=3000):
    out, t = [], 10000
    for i in range(n):
        t += rng.randrange(0, 3)
        if i % 500 == 250 and kind != "none":
            out.append(ev("OU[", t))
            back = 0 if kind == "ordered" else rng.randrange(50, 400)
            for k in range(rng.randrange(5, 40)):
                c = t - back + k * 3 if kind != "ordered" else t + k
                if k % 7 == 3:
                    out.append(ev("OJj", c, jumbo=bytes(rng.randrange(256)
                                                        for _ in range(rng.randrange(0, 3000)))))
                else:
                    out.append(ev("KCO", c, bytes(range(rng.choice([0, 2, 8, 16])))))
            t += 40 * 3
            out.append(ev("OU]", t))
        else:
            out.append(ev("OB.", t, bytes(range(rng.choice([0, 0, 4, 16])))))
    return out


def snapshot(root):
    files = {}
    for d, _, fs in os.walk(root):
        for f in fs:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                files[os.path.relpath(p, root)] = fh.read()
    return files


def run(args, env=None):
    e = dict(os.environ)
    e.pop("WEFT_SORT_DIE_AFTER", None)
    e.update(env or {})
    p = subprocess.run([weft_bin()] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=e)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def main():
    rng = random.Random(7)
    chk = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-sort-kill-")
    try:
        base = os.path.join(tmp, "orig")
        kinds = ["sort", "none", "sort", "sort", "ordered", "sort", "sort"]
        rels = []
        for i, kind in enumerate(kinds):
            rel = thread_rel("vm", 1, i + 1)
            write_stream(base, rel, meta(i + 1, 1), events(rng, kind))
            rels.append(rel)
        orig = snapshot(base)
        sorted_ = {k: (sortmodel.sort_file(v) if k.endswith(".obs") else v)
                   for k, v in orig.items()}
        to_sort = [r for r in rels if sorted_[r + "/stream.obs"] != orig[r + "/stream.obs"]]
        chk.eq(len(to_sort), 5, "streams the model sorts")
        work = os.path.join(tmp, "w")
        for n in range(len(to_sort)):
            shutil.rmtree(work, ignore_errors=True)
            shutil.copytree(base, work)
            rc, out, err = run(["sort", work], {"WEFT_SORT_DIE_AFTER": str(n)})
            chk.eq(rc, -signal.SIGKILL, f"die after {n}: killed ({err.strip()})")
            got = snapshot(work)
            for r in rels:
                k = r + "/stream.obs"
                if r in to_sort[:n]:
                    chk.expect(got[k] == sorted_[k], f"die after {n}: {r} is sorted")
                else:
                    chk.expect(got[k] == orig[k], f"die after {n}: {r} is untouched")
                chk.eq(got[r + "/stream.json"], orig[r + "/stream.json"],
                       f"die after {n}: {r}/stream.json")
            # the stream it dies writing: the next one with a region after
            # the n-th sorted (one whose region is in order is written too)
            after = rels.index(to_sort[n - 1]) + 1 if n > 0 else 0
            doomed = next(r for r in rels[after:]
                          if sortmodel.regions(orig[r + "/stream.obs"]) > 0)
            tmpname = doomed + "/stream.obs.sorting"
            extra = sorted(set(got) - set(orig))
            chk.eq(extra, [tmpname], f"die after {n}: the half-written file left")
            if tmpname in got:
                full = sorted_[doomed + "/stream.obs"]
                chk.expect(0 < len(got[tmpname]) < len(full),
                           f"die after {n}: {tmpname} is half written")
            rc, out, err = run(["sort", work])
            chk.eq(rc, 0, f"after die {n}: the next sort ({err.strip()})")
            chk.expect(f"removed {os.path.join(work, tmpname)}, left by an interrupted sort"
                       in err, f"after die {n}: says it removed the leftover: {err!r}")
            chk.expect(got is not None and snapshot(work) == sorted_,
                       f"after die {n}: fully sorted, nothing left over")
        # nothing to write after the 5th: the hook does not fire
        shutil.rmtree(work)
        shutil.copytree(base, work)
        rc, out, err = run(["sort", work], {"WEFT_SORT_DIE_AFTER": "5"})
        chk.eq((rc, snapshot(work) == sorted_), (0, True), "die after 5: the sort finishes")
        chk.expect("5 of 7 streams sorted" in out, f"the summary: {out!r}")
        # a sorted trace: nothing is written
        inodes = {r: os.stat(os.path.join(work, r, "stream.obs")).st_ino for r in rels}
        rc, out, err = run(["sort", work])
        chk.eq((rc, out.strip()), (0, f"weft sort: {work}: nothing to sort (7 streams)"),
               "a second sort")
        chk.eq({r: os.stat(os.path.join(work, r, "stream.obs")).st_ino for r in rels}, inodes,
               "a second sort writes no file")
        rc, out, err = run(["sort", "--check", work])
        chk.eq(rc, 0, f"--check after the sort ({err.strip()})")
        # a bad hook value
        rc, out, err = run(["sort", work], {"WEFT_SORT_DIE_AFTER": "x"})
        chk.eq(rc, 1, "WEFT_SORT_DIE_AFTER=x is refused")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    chk.done()


if __name__ == "__main__":
    main()
