# SPDX-License-Identifier: MIT
"""A notebook-style tour of the weft Python module (docs/python.md), one
cell per step. Run: python3 examples/python/tour.py TRACE_DIR
(with the module importable: PYTHONPATH=build/python)."""
import sys

import numpy as np
import weft

path = sys.argv[1] if len(sys.argv) > 1 else "ovni"

# %% Open the trace and look at its system
t = weft.open(path)
print("looms:", [(lm.name, len(lm.cpus)) for lm in t.looms])
for p in t.processes:
    print("process", p.pid, "rank", p.rank, "threads", [th.tid for th in p.threads])
print("streams:", len(t.streams), "libovni", t.streams[0].attr("ovni.lib.version"))

# %% Every event as NumPy columns
ev = t.read_all()
print("events:", len(ev), "from", ev["sclock"].min(), "to", ev["sclock"].max())

# %% Events per MCV, most frequent first (as weft top)
mcv, count = np.unique(ev.mcv, return_counts=True)
for m, n in sorted(zip(mcv.tolist(), count.tolist()), key=lambda x: (-x[1], x[0]))[:5]:
    print(m.decode(), n)

# %% Events per thread
per = np.bincount(ev["thread"][ev["thread"] >= 0], minlength=len(t.threads))
for th, n in zip(t.threads, per):
    print("thread", th.tid, n)

# %% Payload fields by name: the CPU each thread started on (OHx)
ohx = ev.fields("OHx")
for i, cpu in zip(ohx["index"], ohx["cpu"]):
    print("thread", t.threads[ev["thread"][i]].tid, "starts on CPU", cpu,
          "-", ev.describe(i))
t.close()

# %% The emulation: time each thread spent in each state
em = weft.emulate(path)
th = em["thread"]
state = [ty for ty, name in th.channels.items() if name == "ovni.thread.state"][0]
sel = th["type"] == state
for row, value, dur in zip(th["row"][sel], th["value"][sel], (th["end"] - th["start"])[sel]):
    print(th.row_labels[row], th.value_labels[state].get(int(value)), dur, "ns")

# %% As DataFrames, when pandas is installed
try:
    import pandas  # noqa: F401
    print(th.to_pandas().head())
except ImportError:
    print("pandas is not installed: the columns above are NumPy arrays")
