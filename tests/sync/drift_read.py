# SPDX-License-Identifier: MIT
"""The clock drift of clock-offsets.txt, end to end (docs/sync.md, "Drift").

Two looms on hosts nodeA and nodeB record 10 s of events (2000 each, 4000 in
all, written with tests/cli/tracegen.py). Host A's clock is 3 ms behind the
true time and runs 50 ppm slow, host B's is 5 ms ahead and runs 50 ppm fast;
every event of B comes 100 us before the next one of A. clock-offsets.txt gives the
offsets at t0 and the drifts (+50000 and -50000 ppb). Asserts:
- the merged order by synchronized clock (drift_print: weft_next with
  WEFT_CLOCK_OFFSET) is the true order, and every corrected clock is within
  1 us of the true one; with the offsets alone (the drift section removed)
  the order is wrong and the clocks are off by hundreds of us, so the check
  can fail;
- weft dump (raw order, as ovnidump) lists the same 4000 events, and weft
  emu emulates the trace (exit 0);
- a malformed drift column and an overflowing one: exact errors from weft
  check, exit 1.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from fractions import Fraction

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from tracegen import ev, meta, thread_rel, write_stream  # noqa: E402
from wefttest import Checker, weft_bin  # noqa: E402

TIMEOUT = 60
N = 2000                  # events per loom
STEP = 5_000_000          # ns between two events of A (10 s in all)
LAG = STEP - 100_000      # B's event comes 100 us before A's next one
T_START = 2_000_000_000_000
# host: (loom, offset at t0 in ns, drift in ppb, t0 in the host's clock)
HOSTS = {
    "nodeA": ("nodeA.0", 3_000_000, 50_000, 1_999_997_000_000),
    "nodeB": ("nodeB.0", -5_000_000, -50_000, 2_000_005_000_000),
}
TABLE = ("rank       hostname             offset_median        offset_mean          offset_std          \n"
         "0          nodeA                3000000              3000000.000000       0.000000            \n"
         "1          nodeB                -5000000             -5000000.000000      0.000000            \n")
DRIFT = (" \n"
         "drift      hostname             t0                   drift_ppb           \n"
         "drift      nodeA                1999997000000        50000               \n"
         "drift      nodeB                2000005000000        -50000              \n")


def raw_of(true, off, ppb, t0):
    """The host's clock reading at true time `true`: the clock runs at
    1 / (1 + ppb / 10^9) of the true rate and read t0 when the true time
    was t0 + off (rounded to the ns, as a clock reads)."""
    r = t0 + Fraction(true - t0 - off) / (1 + Fraction(ppb, 10**9))
    return round(r)


def build(root, hosts=None):
    truth = []  # (true time, mcv, relpath, raw)
    for i, (host, (loom, off, ppb, t0)) in enumerate(sorted((hosts or HOSTS).items())):
        rel = thread_rel(loom, 10 + i, 10 + i)
        evs = []
        for k in range(N):
            true = T_START + k * STEP + i * LAG
            mcv = "OHx" if k == 0 else "OHe" if k == N - 1 else ("OHp" if k % 2 else "OHr")
            raw = raw_of(true, off, ppb, t0)
            pay = struct.pack("<iiQ", 0, -1, 0) if mcv == "OHx" else b""
            evs.append(ev(mcv, raw, pay))
            truth.append((true, mcv, rel, raw))
        write_stream(root, rel, meta(10 + i, 10 + i, loom=loom), evs)
    truth.sort()
    return truth


def write_offsets(root, text):
    with open(os.path.join(root, "clock-offsets.txt"), "w", encoding="utf-8") as f:
        f.write(text)


def merged(printer, root):
    p = subprocess.run([printer, root], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT)
    rows = []
    for line in p.stdout.decode().splitlines():
        s, r, mcv, rel = line.split(" ")
        rows.append((int(s), int(r), mcv, rel))
    return p.returncode, rows, p.stderr.decode()


def weft(args):
    p = subprocess.run([weft_bin()] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT)
    return p.returncode, p.stdout, p.stderr.decode()


def main():
    c = Checker()
    printer = os.path.join(os.environ["WEFT_BINARY_DIR"], "tests", "sync", "drift_print")
    tmp = tempfile.mkdtemp(prefix="weft-drift-")
    try:
        root = os.path.join(tmp, "ovni")
        truth = build(root)
        want = [(mcv, rel, raw) for _, mcv, rel, raw in truth]

        write_offsets(root, TABLE + DRIFT)
        rc, rows, err = merged(printer, root)
        c.eq((rc, err), (0, ""), "drift_print with the drift")
        c.eq(len(rows), 2 * N, "events merged")
        c.eq([(m, rel, r) for _, r, m, rel in rows], want, "merged order is the true order")
        worst = max((abs(s - t[0]) for (s, _, _, _), t in zip(rows, truth)), default=None)
        c.expect(worst is not None and worst <= 1000,
                 f"corrected clocks within 1 us of the true ones (worst {worst} ns)")
        print(f"with the drift: worst error {worst} ns")

        # weft dump: every event, in raw order; weft emu: runs on it
        rc, out, err = weft(["dump", root])
        c.eq((rc, err), (0, ""), "weft dump exit and stderr")
        c.eq(out.count(b"\n"), 2 * N, "weft dump lines")
        out_dir = os.path.join(tmp, "emu")
        rc, out, err = weft(["emu", "-o", out_dir, root])
        c.eq(rc, 0, f"weft emu exit ({err.strip()})")

        # the offsets alone: the order breaks and the clocks drift apart
        write_offsets(root, TABLE)
        rc, rows, err = merged(printer, root)
        c.eq((rc, err), (0, ""), "drift_print without the drift")
        c.expect([(m, rel, r) for _, r, m, rel in rows] != want,
                 "without the drift the merged order is wrong")
        worst0 = max(abs(s - t) for s, t in zip(sorted(r[0] for r in rows),
                                                 sorted(t[0] for t in truth)))
        c.expect(worst0 > 400_000, f"without the drift the clocks are off ({worst0} ns)")
        print(f"offsets alone: worst error {worst0} ns")

        # a malformed drift column, an out-of-range one, an overflowing clock
        cases = [
            (DRIFT.replace("-50000  ", "-50ppm  "),
             "ovni/clock-offsets.txt: line 7: drift_ppb '-50ppm' is not an integer from "
             "-999999999 to 999999999"),
            (DRIFT.replace("-50000  ", "99999999999999999999"),
             "ovni/clock-offsets.txt: line 7: drift_ppb '99999999999999999999' is not an "
             "integer from -999999999 to 999999999"),
            (DRIFT.replace("2000005000000        -50000",
                           "-9223372036854775808 999999999"),
             "ovni/clock-offsets.txt: line 7: the offset -5000000 and drift 999999999 ppb "
             "from t0 -9223372036854775808 of host 'nodeB' take the first clock of "
             "ovni/loom.nodeB.0/proc.11/thread.11/stream.obs, %d, outside the "
             "signed 64-bit range" % min(t[3] for t in truth if "nodeB" in t[2])),
        ]
        for drift, msg in cases:
            write_offsets(root, TABLE + drift)
            p = subprocess.run([weft_bin(), "check", "ovni"], cwd=tmp, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=TIMEOUT)
            c.eq((p.returncode, p.stderr.decode()), (1, f"weft check: {msg}\n"),
                 f"weft check on {drift.splitlines()[-1]!r}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
