# SPDX-License-Identifier: MIT
"""The counters of the sample model through Python (docs/runtime.md,
"Sampling"): test_rt_sample writes its weft_rt_sample_now trace (two
samples, registered counters alpha = 7 then 8 and beta = 123456789012) and
weft.emulate must hold the values exactly, in order, in the thread view:
sample.events 4 then 4 + one sample + 1, sample.registered0 7 then 8,
sample.registered1 123456789012 (once: the second sample repeats it)."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("WEFT_SOURCE_DIR", ""), "tests", "python"))
from pycommon import need_module  # noqa: E402

weft = need_module()
prog = sys.argv[1]
tmp = tempfile.mkdtemp(prefix="weft-sample-py-")
try:
    p = subprocess.run([prog, "keep", tmp], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit(f"{prog} keep failed ({p.returncode}): {p.stderr}")
    hw = p.stdout.strip() == "hardware"
    per = 12 if hw else 10
    em = weft.emulate(tmp)
    th = em["thread"]
    got = {}
    for ty in (1300, 1310, 1311):
        m = th["type"] == ty
        got[th.channels[ty]] = [int(v) for v in th["value"][m]]
        starts = list(th["start"][m])
        if starts != sorted(starts):
            sys.exit(f"type {ty}: intervals out of order: {starts}")
    want = {"sample.events": [4, 4 + per + 1], "sample.registered0": [7, 8],
            "sample.registered1": [123456789012]}
    if got != want:
        sys.exit(f"weft.emulate: got {got}, want {want}")
    raw = {ty: [int(v) for v in em.raw["value"][em.raw["type"] == ty]] for ty in (1300, 1310, 1311)}
    if raw != {1300: want["sample.events"], 1310: [7, 8], 1311: [123456789012]}:
        sys.exit(f"weft.emulate raw: got {raw}")
    print("sample counters through weft.emulate: ok", got)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
