# SPDX-License-Identifier: MIT
"""test_channels.py - the channels of a user model under the same catalogue
names in every consumer (docs/emu.md, THE CHANNEL CATALOGUE; issue 20).

A trace of examples/zeta (bin/zeta with 2 workers and 20 work items, into a
temporary directory; model examples/zeta/zeta.yaml: channels phase, region,
item) is read by five consumers, each given the model:
  - `weft sql --model`: the channel table's names of model zeta, and those
    with thread intervals;
  - `weft.emulate(model=...)`: the thread view's channel names of the zeta
    types, and those with intervals; the raw layer's too;
  - `weft dump --model`: the names in brackets after each Z event, and per
    MCV the channel it writes (ZPs/ZPc/ZPt/ZPe: zeta.phase, ZR[/ZR]:
    zeta.region, ZWi: zeta.item), exactly;
  - `weft top --model`: the channel section's names, each count the sum of
    the counts of the MCVs that dump says write it;
  - `weft emu --perfetto --model`: the thread channel tracks "<model>
    <channel>" ("zeta phase"), read back with tests/emu/protobuf_wire.py,
    named as the catalogue names with the first "." a space: one per thread
    that writes the channel (the threads of Python's raw layer), slices for
    a channel with value labels (Python's value_labels), a counter track
    (CounterDescriptor) for the other (zeta.item: numbers).
Every set is exactly {zeta.item, zeta.phase, zeta.region}. Every subprocess
has a timeout; the directory is removed.
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

from pycommon import Checker, need_module, weft_bin

weft = need_module()
c = Checker()
SRC = os.environ["WEFT_SOURCE_DIR"]
BIN = os.environ["WEFT_BINARY_DIR"]
sys.path.insert(0, os.path.join(SRC, "tests", "emu"))
sys.dont_write_bytecode = True  # keep the source tree clean
from protobuf_wire import fields, text  # noqa: E402

ZETA = os.path.join(BIN, "bin", "zeta")
MODEL = os.path.join(SRC, "examples", "zeta", "zeta.yaml")
NAMES = ["zeta.item", "zeta.phase", "zeta.region"]
WRITES = {"ZPs": "zeta.phase", "ZPc": "zeta.phase", "ZPt": "zeta.phase", "ZPe": "zeta.phase",
          "ZR[": "zeta.region", "ZR]": "zeta.region", "ZWi": "zeta.item"}


def cli(*args):
    p = subprocess.run([weft_bin(), *args], capture_output=True, text=True, timeout=120)
    c.eq((p.returncode, p.stderr), (0, ""), f"weft {args[0]} --model: exit status, stderr")
    return p.stdout


def perfetto_tracks(path):
    """{thread track uuid: its descriptor}, {uuid: (name, parent, counter)} of
    the other tracks but the processes'."""
    data = open(path, "rb").read()
    threads, others = {}, {}
    for _, _, span in fields(data, 0, len(data)):
        for f2, _, v2 in fields(data, *span):
            if f2 != 60:  # track_descriptor
                continue
            d = {f: v for f, _, v in fields(data, *v2)}
            if 4 in d:
                threads[d[1]] = d
            elif 3 not in d:
                others[d[1]] = (text(data, d[2]) if 2 in d else "", d.get(5, 0), 8 in d)
    return threads, others


tmp = tempfile.mkdtemp(prefix="weft-pytest-channels-")
try:
    trace = os.path.join(tmp, "trace")
    p = subprocess.run([ZETA, "2", "20"], env=dict(os.environ, OVNI_TRACEDIR=trace),
                       capture_output=True, text=True, timeout=60)
    c.eq(p.returncode, 0, f"zeta ran: {p.stderr}")

    # weft sql
    out = cli("sql", "--model", MODEL, trace, "--csv",
              "SELECT c.name, count(i.start) FROM channel c LEFT JOIN interval i ON "
              "i.channel = c.id AND i.view = 'thread' WHERE c.model = 'zeta' GROUP BY c.id "
              "ORDER BY c.name")
    rows = [ln.split(",") for ln in out.splitlines()[1:]]
    sql = [r[0] for r in rows]
    c.eq(sql, NAMES, "weft sql: the zeta channels")
    c.eq([r[0] for r in rows if int(r[1]) > 0], NAMES, "weft sql: each has thread intervals")

    # weft.emulate(model=...)
    em = weft.emulate(trace, model=[MODEL])
    th = em["thread"]
    py = sorted(n for n in th.channels.values() if n.startswith("zeta."))
    c.eq(py, NAMES, "weft.emulate: the zeta channels")
    used = sorted({th.channel(i) for i in range(len(th))} & set(NAMES))
    c.eq(used, NAMES, "weft.emulate: each has thread intervals")
    c.eq(sorted({em.raw.channel(i) for i in range(len(em.raw))} & set(NAMES)), NAMES,
         "weft.emulate: each has raw intervals")
    labelled = sorted(n for t, n in th.channels.items()
                      if n in NAMES and th.value_labels.get(t))

    # weft dump --model
    per_mcv = collections.defaultdict(set)
    for ln in cli("dump", "--model", MODEL, trace).splitlines():
        m = re.match(r"^ *\d+  (...)  \S+  .*?(?:  \[([a-z.,_ -]+)\])?$", ln)
        c.expect(m is not None, f"a dump line: {ln!r}")
        if m and m.group(1).startswith("Z"):
            per_mcv[m.group(1)].add(m.group(2))
        elif m:
            c.eq(m.group(2), None, f"a built-in event names no channel: {ln!r}")
    c.eq({k: sorted(v) for k, v in per_mcv.items()}, {k: [v] for k, v in WRITES.items()},
         "weft dump --model: the channel each Z event writes")
    c.eq(sorted({n for v in per_mcv.values() for n in v}), NAMES, "weft dump: the zeta channels")

    # weft top --model
    lines = cli("top", "--model", MODEL, trace).splitlines()
    counts = {ln.split()[0]: int(ln.split()[1]) for ln in lines[:lines.index("")]}
    c.eq(lines[lines.index("") + 1], "channels of the --model models (events that write each):",
         "weft top --model: the channel section's title")
    top = {ln.split()[0]: int(ln.split()[1]) for ln in lines[lines.index("") + 2:]}
    want = collections.Counter()
    for mcv, name in WRITES.items():
        want[name] += counts[mcv]
    c.eq(sorted(top), NAMES, "weft top --model: the zeta channels")
    c.eq(top, dict(want), "weft top --model: events per channel")

    # Perfetto
    out_dir = os.path.join(tmp, "out")
    cli("emu", "--model", MODEL, "--perfetto", "-q", "-o", out_dir, trace)
    threads, others = perfetto_tracks(os.path.join(out_dir, "perfetto.pftrace"))
    pf = collections.Counter()
    kinds = collections.defaultdict(set)
    for name, parent, counter in others.values():
        if parent in threads and name.startswith("zeta "):
            pf[name.replace(" ", ".", 1)] += 1
            kinds[name.replace(" ", ".", 1)].add("counter" if counter else "slices")
    c.eq(sorted(pf), NAMES, "Perfetto: the zeta tracks")
    # a track per thread that writes the channel: the threads with raw intervals
    rawth = collections.Counter()
    for name, row in {(em.raw.channel(i), int(em.raw["row"][i])) for i in range(len(em.raw))}:
        rawth[name] += 1
    c.eq(dict(pf), {n: rawth[n] for n in NAMES}, "Perfetto: a track per thread writing it")
    c.eq({n: sorted(k) for n, k in kinds.items()},
         {n: ["slices" if n in labelled else "counter"] for n in NAMES},
         "Perfetto: slices for the channels with value labels, a counter for the others")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(c.done())
