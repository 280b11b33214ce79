# SPDX-License-Identifier: MIT
"""The counters of the sample model through Perfetto and Python
(docs/runtime.md, "Sampling"): test_rt_sample writes its weft_rt_sample_now
trace (two samples, registered counters alpha = 7 then 8 and beta =
123456789012); weft emu's perfetto.pftrace (decoded by
tests/emu/perfetto_models.py's decoder) must have the counter tracks
"sample events", "sample registered0" and "sample registered1" of the
thread with exactly those values (a sample per write: beta twice), and weft.emulate must hold them, in
order, in the thread view: sample.events 4 then 4 + one sample + 1,
sample.registered0 7 then 8, sample.registered1 123456789012 (once: the
second sample repeats it). Without the Python module, the Perfetto part
runs and the test then skips (77)."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("WEFT_SOURCE_DIR", ""), "tests", "python"))
sys.path.insert(0, os.path.join(os.environ.get("WEFT_SOURCE_DIR", ""), "tests", "emu"))
from pycommon import need_module  # noqa: E402
from perfetto_models import decode  # noqa: E402

prog = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="weft-sample-py-")
try:
    p = subprocess.run([prog, "keep", tmp], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit(f"{prog} keep failed ({p.returncode}): {p.stderr}")
    hw = p.stdout.strip() == "hardware"
    per = 12 if hw else 10
    want = {"sample.events": [4, 4 + per + 1], "sample.registered0": [7, 8],
            "sample.registered1": [123456789012]}
    # Perfetto
    pf = os.path.join(tmp, "pf")
    p = subprocess.run([os.environ["WEFT_BIN"], "emu", "--perfetto", "-q", "-o", pf, tmp],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit(f"weft emu --perfetto failed ({p.returncode}): {p.stderr}")
    with open(os.path.join(pf, "perfetto.pftrace"), "rb") as f:
        tracks, events = decode(f.read())
    got = {}
    for u, t in tracks.items():
        if t["kind"] == "counter" and t["name"] in ("sample events", "sample registered0",
                                                    "sample registered1"):
            got[t["name"].replace(" ", ".")] = [v for _, _, tr, _, v in events if tr == u]
    # a counter track has a sample per write, the repeated value too
    want_pf = dict(want, **{"sample.registered1": [123456789012] * 2})
    if got != want_pf:
        sys.exit(f"perfetto.pftrace: got {got}, want {want_pf}")
    print("sample counters through Perfetto: ok", got)
    weft = need_module()
    em = weft.emulate(tmp)
    th = em["thread"]
    got = {}
    for ty in (1300, 1310, 1311):
        m = th["type"] == ty
        got[th.channels[ty]] = [int(v) for v in th["value"][m]]
        starts = list(th["start"][m])
        if starts != sorted(starts):
            sys.exit(f"type {ty}: intervals out of order: {starts}")
    if got != want:
        sys.exit(f"weft.emulate: got {got}, want {want}")
    raw = {ty: [int(v) for v in em.raw["value"][em.raw["type"] == ty]] for ty in (1300, 1310, 1311)}
    if raw != {1300: want["sample.events"], 1310: [7, 8], 1311: [123456789012]}:
        sys.exit(f"weft.emulate raw: got {raw}")
    print("sample counters through weft.emulate: ok", got)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
