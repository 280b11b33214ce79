# SPDX-License-Identifier: MIT
"""The clock drift in the tools that compute clocks themselves (docs/sync.md,
"Drift"): weft check -r's rate table, weft sql's clock and rclock columns and
weft dump --time rel's origin, on sync_drift's two-loom trace (drift_read.py's
generator) with t0 100 s before the run, so that the drift moves the clocks
by about 5 ms at its start (+-50 ppm): each output is computed here from the
raw clocks with the documented arithmetic, sclock = rclock + offset +
floor(ppb * (rclock - t0) / 10^9), and compared exactly. With the offset
alone (the tools before the fix) each differs.
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import drift_read  # noqa: E402
from wefttest import Checker, weft_bin  # noqa: E402

TIMEOUT = 60
EARLY = 100_000_000_000  # t0 this long before each host's first clock
HOSTS = {h: (loom, off, ppb, t0 - EARLY)
         for h, (loom, off, ppb, t0) in drift_read.HOSTS.items()}
PER_HOST = {loom: (off, ppb, t0) for loom, off, ppb, t0 in HOSTS.values()}
TABLE = drift_read.TABLE
DRIFT = (" \n"
         "drift      hostname             t0                   drift_ppb           \n"
         + "".join("drift      %-20s %-20d %-20d\n" % (h, t0, ppb)
                   for h, (_, _, ppb, t0) in sorted(HOSTS.items())))


def sclock(raw, off, ppb, t0):
    return raw + off + (ppb * (raw - t0)) // 10**9  # Python's // is floor


def rclock_of(s, off, ppb, t0):
    """docs/sql.md: the least raw clock whose sclock is s."""
    S = s - off - t0
    k = 10**9 + ppb
    return t0 + -((-S * 10**9) // k)  # ceil(S * 10^9 / k)


def rates(clocks, last):
    """weft check -r's table (cmd_check.c's binning), as its lines."""
    first = clocks[0]
    d_all = max(c - first for c in clocks)
    width = 1
    while d_all // width >= 4096:
        width *= 2
    d = last - first
    nshow = d + 1 if d < 19 else 20
    part = d // nshow + 1
    counts = [0] * nshow
    for c in clocks:
        k = max(c - first, 0) // width
        counts[min(k * width // part, nshow - 1)] += 1
    most = max(counts)
    span = d + 1

    def dur(ns):
        for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
            if span >= scale:
                return "%.3f %s" % (ns / scale, unit)
        return "%.0f ns" % ns
    lines = ["events over the run (%d parts of %s, from the first event at clock %d):"
             % (nshow, dur(part), first),
             "  %12s    %12s  %12s  %14s" % ("from", "to", "events", "events/s")]
    for k in range(nshow):
        bar = "#" * ((counts[k] * 40 + most - 1) // most)
        lines.append("  %12s to %12s  %12d  %14.0f  %s" % (dur(k * part), dur((k + 1) * part),
                                                           counts[k], counts[k] / (part * 1e-9),
                                                           bar))
    return lines


def main():
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-drift-tools-")
    try:
        root = os.path.join(tmp, "ovni")
        truth = drift_read.build(root, HOSTS)
        drift_read.write_offsets(root, TABLE + DRIFT)
        evs = []  # (raw, sclock, loom)
        for _, mcv, rel, raw in truth:
            loom = rel.split("/")[0][len("loom."):]
            evs.append((raw, sclock(raw, *PER_HOST[loom]), loom, mcv))
        offset_only = [raw + PER_HOST[loom][0] for raw, _, loom, _ in evs]

        def weft(args):
            p = subprocess.run([weft_bin()] + args, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=TIMEOUT)
            return p.returncode, p.stdout.decode(), p.stderr.decode()

        # weft check -r: the rate table of the corrected clocks
        sc = sorted(s for _, s, _, _ in evs)
        rc, out, err = weft(["check", "-r", root])
        c.eq((rc, err), (0, ""), "weft check -r exit and stderr")
        got = out.splitlines()[1:]
        c.eq(got, rates(sc, sc[-1]), "weft check -r's table from the drifted clocks")
        c.expect(got != rates(sorted(offset_only), max(offset_only)),
                 "the table with the offsets alone differs (the check can fail)")

        # weft sql: clock is the sclock, rclock its least raw clock
        db = os.path.join(tmp, "t.db")
        rc, out, err = weft(["sql", "-o", db, root])
        c.eq((rc, err), (0, ""), "weft sql exit and stderr")
        con = sqlite3.connect(db)
        try:
            rows = con.execute("SELECT e.clock, e.rclock, e.mcv, s.path FROM event e"
                               " JOIN stream s ON s.id = e.stream ORDER BY e.id").fetchall()
        finally:
            con.close()
        want = sorted(((s, raw, mcv, loom) for raw, s, loom, mcv in evs))
        got = [(clk, rcl, mcv, path.split("/")[0][len("loom."):])
               for clk, rcl, mcv, path in rows]
        c.eq(sorted(g[0] for g in got), [w[0] for w in want], "weft sql's clocks")
        exp = sorted((s, rclock_of(s, *PER_HOST[loom]), mcv, loom) for s, _, mcv, loom in
                     [(w[0], w[1], w[2], w[3]) for w in want])
        c.eq(sorted(got), exp, "weft sql's rclocks: the least raw clock of each clock")
        amb = [w for w in want if rclock_of(w[0], *PER_HOST[w[3]]) != w[1]]
        c.expect(all(PER_HOST[w[3]][1] < 0 and sclock(w[1] - 1, *PER_HOST[w[3]]) == w[0]
                     for w in amb), "rclock differs only where two raw clocks share a clock")
        c.expect(len(amb) < 10, f"rclock is the raw clock but for {len(amb)} events")
        c.expect(sorted(g[1] for g in got) != sorted(s - PER_HOST[lm][0] for s, _, _, lm in want),
                 "rclock is not clock - offset for a drifted host")

        # weft dump --time rel: the origin is the first raw clock
        rc, out, err = weft(["dump", "--time", "rel", root])
        c.eq((rc, err), (0, ""), "weft dump --time rel exit and stderr")
        raws = sorted(raw for raw, _, _, _ in evs)
        got = [int(line.split()[0]) for line in out.splitlines()]
        c.eq(got, [r - raws[0] for r in raws], "weft dump --time rel's times")
        print(f"{len(evs)} events; {len(amb)} with two raw clocks for one clock")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
