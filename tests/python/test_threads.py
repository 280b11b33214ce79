# SPDX-License-Identifier: MIT
"""weft.emulate() in several Python threads at once (the module releases the
GIL), and the model= files of weft.emulate() and weft.open().

Four calls run at once, started together by a barrier, in three rounds,
while the C test tests/driver/test_driver_mt runs its own four weft_emulate()
calls in four threads in another process (eight emulations at once; it
compares each of its results with its serial run, and must still be running
when the first round starts): two
runtime-model traces of the corpus (models/mix-4, models/rand-nanos6-0), the
second again with the breakdown views, and a trace of the example program
examples/zeta (bin/zeta, into a temporary directory) with model=[zeta.yaml].
Each result must equal the call's serial run: the same views, and each
view's interval table (row, type, start, end, value), duration, row labels,
channel names and value labels. The zeta result names the model's channels
by their catalogue names (zeta.phase, zeta.region, zeta.item). Also: model= as one str is the same run as a list; the zeta
trace without the model is refused at its first Z event (no model has the
byte); a malformed model file raises weft.Error with the loader's message
(FILE:LINE: reason) in weft.emulate() and weft.open(); weft.open(...,
model=...) decodes the Z events as `weft dump --model` does (the first
lines, compared), and without it does not."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

from pycommon import Checker, conformance_dir, need_module, run

weft = need_module()
root = conformance_dir()
c = Checker()
SRC = os.environ["WEFT_SOURCE_DIR"]
BIN = os.environ["WEFT_BINARY_DIR"]
ZETA = os.path.join(BIN, "bin", "zeta")
MODEL = os.path.join(SRC, "examples", "zeta", "zeta.yaml")
BAD = os.path.join(SRC, "tests", "emu", "bad_models")
ROUNDS = 3


def summary(em):
    """An Emulation as plain values, for comparison."""
    out = {}
    for name, tl in em.views.items():
        cols = {k: tl.columns[k].tolist() for k in ("row", "type", "start", "end", "value")}
        out[name] = (cols, tl.duration, tl.row_labels, tl.channels, tl.value_labels)
    return out


def emulate(kw):
    return summary(weft.emulate(**kw))


tmp = tempfile.mkdtemp(prefix="weft-pytest-threads-")
try:
    zeta_trace = os.path.join(tmp, "zeta-trace")
    p = subprocess.run([ZETA, "2", "20"], env=dict(os.environ, OVNI_TRACEDIR=zeta_trace),
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        print(f"{ZETA}: exit {p.returncode}: {p.stderr}", file=sys.stderr)
        sys.exit(1)
    mix = os.path.join(root, "models", "mix-4", "ovni")
    nanos6 = os.path.join(root, "models", "rand-nanos6-0", "ovni")
    calls = [dict(path=mix), dict(path=nanos6), dict(path=nanos6, breakdown=True),
             dict(path=zeta_trace, model=[MODEL])]

    results = [[None] * len(calls) for _ in range(ROUNDS)]
    errors = []
    # four C threads in another process, during the Python rounds
    cmt = subprocess.Popen([os.path.join(BIN, "tests", "driver", "test_driver_mt")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    c.expect(cmt.poll() is None, "test_driver_mt runs while the Python threads start")
    for r in range(ROUNDS):
        barrier = threading.Barrier(len(calls))

        def work(i, r=r, barrier=barrier):
            barrier.wait(timeout=60)
            try:
                results[r][i] = emulate(calls[i])
            except Exception as e:  # noqa: BLE001  (reported below)
                errors.append(f"round {r}, call {i}: {type(e).__name__}: {e}")

        ths = [threading.Thread(target=work, args=(i,)) for i in range(len(calls))]
        for t in ths:
            t.start()
        for t in ths:
            t.join(timeout=300)
            c.expect(not t.is_alive(), f"round {r}: a thread did not end in 300 s")
    c.eq(errors, [], "no call failed")
    try:
        out, _ = cmt.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        cmt.kill()
        out, _ = cmt.communicate()
    c.eq(cmt.returncode, 0, f"test_driver_mt, beside the Python threads: {out[-2000:]}")
    serial = [emulate(kw) for kw in calls]
    for r in range(ROUNDS):
        for i, kw in enumerate(calls):
            got = results[r][i]
            c.expect(got is not None and got == serial[i],
                     f"round {r}, call {i} ({kw}): equals the serial run")
    for i in range(len(calls)):
        c.expect(len(serial[i]["thread"][0]["row"]) > 0, f"call {i}: intervals")
    c.eq(sorted(serial[2].keys() - serial[1].keys()), ["nanos6-breakdown"],
         "breakdown views added")
    c.eq(sorted(n for n in serial[3]["thread"][3].values() if n.startswith("zeta.")),
         ["zeta.item", "zeta.phase", "zeta.region"], "zeta channels named")
    c.expect(all(not n.startswith("zeta.") for n in serial[0]["thread"][3].values()),
             "no zeta channel without the model")

    # model= as one path
    c.expect(emulate(dict(path=zeta_trace, model=MODEL)) == serial[3], "model=str")
    # without the model: its byte belongs to no model of the run
    try:
        weft.emulate(zeta_trace)
        c.expect(False, "zeta trace without its model: refused")
    except weft.Error as e:
        c.expect("no model is registered for the model byte of this event" in str(e),
                 f"zeta trace without its model: {e}")
    # a malformed model file: the loader's message, before the trace is read
    bad = os.path.join(BAD, "bad_version.yaml")
    want = f"{bad}:6: version must be major.minor.patch, not '1.0'"
    for what, fn in (("emulate", lambda: weft.emulate(zeta_trace, model=[MODEL, bad])),
                     ("open", lambda: weft.open(os.path.join(tmp, "no-such-trace"),
                                                model=bad))):
        try:
            fn()
            c.expect(False, f"{what}: a malformed model is refused")
        except weft.Error as e:
            c.eq(str(e), want, f"{what}: a malformed model's message")

    # weft.open(model=...): the Z events described as weft dump --model does
    rc, out, err = run(["dump", "--model", MODEL, zeta_trace])
    c.eq((rc, err), (0, ""), "weft dump --model")
    zdumped = []
    for ln in out.decode().splitlines():
        m = re.match(r"^ *-?\d+  (...)  \S+  (.*)$", ln)
        c.expect(m is not None, f"weft dump line {ln!r}")
        if m and m.group(1).startswith("Z"):
            # the description, without the channels dump --model names after it
            zdumped.append(re.sub(r"  \[zeta\.[a-z.]+\]$", "", m.group(2)))
    with weft.open(zeta_trace, clock="raw", model=[MODEL]) as t:
        ev = t.read_all()
        got = [ev.describe(i) for i in range(len(ev))]
        zi = [i for i in range(len(ev)) if ev["model"][i] == ord("Z")]
    c.expect(len(zi) > 0, "the trace has Z events")
    c.eq(sorted(got[i] for i in zi), sorted(zdumped), "Z events described as weft dump --model")
    c.expect("enters region 1" in got, "a region event described")
    with weft.open(zeta_trace, clock="raw") as t:
        ev = t.read_all()
        c.eq([ev.describe(i) for i in zi], [None] * len(zi), "no model: not described")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
c.done()
