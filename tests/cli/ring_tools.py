# SPDX-License-Identifier: MIT
"""A flight-recorded trace through the tools: the bundled workers example run
with WEFT_RING=1K (far more events than a ring of 1 KiB holds), then `weft
check` must list, for every stream whose ring overwrote events, the exact
counts and each run's clock range from its stream.json, and `weft dump` must
print one line per run, placed before the stream's first event written after
the run (its offset in weft.ring.lost), and nothing else new; `weft emu`
warns, emulates the lossy threads leniently, counts the loss in its summary
and marks each run in thread.prv (type 90)."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wefttest import Checker, run  # noqa: E402


def main():
    c = Checker()
    workers = os.path.join(os.environ["WEFT_BINARY_DIR"], "bin", "workers")
    tmp = tempfile.mkdtemp(prefix="weft-ring-")
    try:
        env = dict(os.environ, WEFT_RING="1K")
        env.pop("OVNI_TMPDIR", None)
        p = subprocess.run([workers], cwd=tmp, env=env, capture_output=True, timeout=120)
        c.eq(p.returncode, 0, "workers with WEFT_RING=1K")
        streams = {}
        for js in sorted(glob.glob(os.path.join(tmp, "ovni", "loom.*", "proc.*", "thread.*",
                                                "stream.json"))):
            ring = json.load(open(js))["weft"]["ring"]
            streams[os.path.relpath(js, tmp)] = ring
        lossy = {k: v for k, v in streams.items() if v["lost_events"] > 0}
        c.eq(len(streams), 5, "five streams")
        c.expect(len(lossy) >= 4, f"the workers' rings overwrote events ({len(lossy)} streams)")

        rc, out, err = run(["check", "ovni"], cwd=tmp)
        want = []
        for js, r in sorted(lossy.items()):
            n, b, runs = r["lost_events"], r["lost_bytes"], r["lost"]
            want.append(f"weft check: {js}: {n} event{'s' if n != 1 else ''} ({b} bytes) lost: "
                        f"overwritten by the flight recorder (WEFT_RING, 1024 bytes) in "
                        f"{len(runs)} run{'s' if len(runs) != 1 else ''}:\n")
            for c0, c1, rn, rb, _ in runs:
                want.append(f"  clock {c0} to {c1}: {rn} event{'s' if rn != 1 else ''} "
                            f"({rb} bytes)\n")
        check_out = out.decode()
        lines = check_out.splitlines(True)
        c.eq((rc, err), (0, ""), "weft check: exit 0, no warning")
        c.expect(lines and re.match(r"weft check: ovni: valid: 5 streams", lines[0]),
                 "weft check: the verdict first")
        c.eq(lines[1:], want, "weft check: every loss, per stream and per run")

        rc, out, err = run(["dump", "ovni"], cwd=tmp)
        c.eq((rc, err), (0, ""), "weft dump: exit 0, no warning")
        lines = out.decode().splitlines()
        notes = [i for i, x in enumerate(lines) if x.startswith("# ")]
        c.eq(len(notes), sum(len(r["lost"]) for r in lossy.values()),
             "weft dump: one line per run")
        for js, r in lossy.items():
            rel = os.path.relpath(os.path.dirname(js), "ovni")
            for c0, c1, rn, rb, off in r["lost"]:
                line = (f"# {rel}: {rn} event{'s' if rn != 1 else ''} ({rb} bytes) lost here: "
                        f"overwritten by the flight recorder, clocks {c0} to {c1}")
                c.eq(lines.count(line), 1, f"weft dump: {line}")
                if line not in lines:
                    continue
                i = lines.index(line)
                nxt = [x for x in lines[i + 1:] if not x.startswith("# ")
                       and x.split()[2] == rel]
                obs = os.path.join(tmp, os.path.dirname(js), "stream.obs")
                if off < os.path.getsize(obs):
                    clock = int.from_bytes(open(obs, "rb").read()[off + 4:off + 12], "little")
                    c.expect(nxt and int(nxt[0].split()[0]) == clock,
                             f"weft dump: {rel}: the event after the run is the one at "
                             f"offset {off} (clock {clock})")
        nev = int(re.search(r"(\d+) events", check_out).group(1))
        c.eq(len([x for x in lines if not x.startswith("# ")]), nev,
             "weft dump: every event once, besides the loss lines")

        # weft emu: lenient on the lossy threads, the counts in its summary,
        # a lost-events interval (type 90: set, then cleared) per run
        rc, out, err = run(["emu", "ovni"], cwd=tmp)
        nl = sum(r["lost_events"] for r in lossy.values())
        nr = sum(len(r["lost"]) for r in lossy.values())
        c.eq(rc, 0, "weft emu: exit 0")
        c.expect(f"weft emu: warning: {len(lossy)} threads lost events ({nl} overwritten by the "
                 "flight recorder (WEFT_RING)): they are emulated leniently" in err,
                 "weft emu: the warning names the loss")
        c.expect(f"lost events: {nl} events overwritten by the flight recorder before they were "
                 f"written, in {nr} runs on {len(lossy)} threads" in out.decode(),
                 "weft emu: the summary counts the loss")
        prv = open(os.path.join(tmp, "ovni", "thread.prv")).read().splitlines()
        lost = [x for x in prv if re.search(r":90:[01]$", x)]
        c.eq(len(lost), 2 * nr, "weft emu: thread.prv sets and clears type 90 once per run")
    finally:
        shutil.rmtree(tmp)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
