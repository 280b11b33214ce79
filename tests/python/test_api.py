# SPDX-License-Identifier: MIT
"""The module's API on bad input: weft.Error with weft's message (file,
offset, reason) for bad traces and missing paths (e.file also for names with
spaces, ": " or no dot), ValueError/TypeError for bad arguments, a
closed trace; batches of every size give the same events; decoded fields
equal weft dump's description; the DataFrame view when pandas is there."""
import os
import shutil
import tempfile

from pycommon import Checker, conformance_dir, need_module, run

weft = need_module()
root = conformance_dir()
c = Checker()

# a bad trace: weft's message, split into its parts
bad = os.path.join(root, "bad", "clock-backwards", "ovni")
rc, out, err = run(["check", bad])
try:
    weft.open(bad, backwards="regions").read_all()
    c.expect(False, "clock-backwards raises")
except weft.Error as e:
    c.eq("weft check: " + str(e) + "\n", err, "the message is weft check's")
    c.eq(e.file, os.path.join(bad, "loom.vm/proc.17323/thread.17323/stream.obs"), "file")
    c.eq(e.offset, 48, "offset")
    c.expect(e.reason.startswith("event OHp: clock goes backwards"), "reason")
try:
    weft.open(os.path.join(root, "no-such-dir"))
    c.expect(False, "a missing path raises")
except weft.Error as e:
    c.expect("no-such-dir" in str(e), "a missing path is named")
try:
    weft.emulate(bad)
    c.expect(False, "emulate of a bad trace raises")
except weft.Error as e:
    c.expect("clock goes backwards" in str(e), "emulate: weft's message")
# e.file names the path of a failed open or emulation whatever the name
# holds: no dot nor slash, spaces, ": " (the message's own separator)
tmp = tempfile.mkdtemp(prefix="weft-pytest-api-")
try:
    for name in ("no-such-trace", "a dir: x/ovni", os.path.join(tmp, "nope")):
        for what, fn in (("open", weft.open), ("emulate", weft.emulate)):
            try:
                fn(name)
                c.expect(False, f"{what} {name!r}: raises")
            except weft.Error as e:
                c.eq(str(e), name + ": No such file or directory", f"{what} {name!r}: message")
                c.eq(e.file, name, f"{what} {name!r}: e.file")
                c.eq(e.offset, None, f"{what} {name!r}: e.offset")
                c.eq(e.reason, "No such file or directory", f"{what} {name!r}: e.reason")
    # a stream named without an offset, in a trace whose path has ": "
    case = os.path.join(tmp, "a dir: 1", "ovni")
    shutil.copytree(os.path.join(root, "bad", "finished-missing", "ovni"), case)
    json = os.path.join(case, "loom.vm/proc.17323/thread.17323/stream.json")
    for what, fn in (("open", weft.open), ("emulate", weft.emulate)):
        try:
            fn(case)
            c.expect(False, f"{what} finished-missing: raises")
        except weft.Error as e:
            c.eq(e.file, json, f"{what} finished-missing: e.file")
            c.eq(e.offset, None, f"{what} finished-missing: e.offset")
            c.expect(e.reason.startswith("ovni.finished is missing"),
                     f"{what} finished-missing: e.reason {e.reason!r}")
    # ... and one with an offset
    case = os.path.join(tmp, "b: 2", "ovni")
    shutil.copytree(bad, case)
    try:
        weft.open(case, backwards="regions").read_all()
        c.expect(False, "clock-backwards in 'b: 2': raises")
    except weft.Error as e:
        c.eq(e.file, os.path.join(case, "loom.vm/proc.17323/thread.17323/stream.obs"),
             "clock-backwards in 'b: 2': e.file")
        c.eq(e.offset, 48, "clock-backwards in 'b: 2': e.offset")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
for kw in ({"mode": "sloppy"}, {"clock": 3}, {"cut": None}):
    try:
        weft.open(bad, **kw)
        c.expect(False, f"{kw} raises")
    except ValueError:
        c.checks += 1
try:
    weft.open(12)
    c.expect(False, "a path of a wrong type raises")
except TypeError:
    c.checks += 1
good = os.path.join(root, "v3", "two-looms", "ovni")
t = weft.open(good)
for m in (0, -5):
    try:
        t.read(m)
        c.expect(False, f"read({m}) raises")
    except ValueError:
        c.checks += 1
t.close()
try:
    t.read()
    c.expect(False, "a closed trace raises")
except ValueError:
    c.checks += 1
t.close()  # twice is fine

# batches of any size: the same events
with weft.open(good) as t:
    whole = t.read_all(offsets=True)
for size in (1, 3, 7, 1000):
    with weft.open(good) as t:
        parts = weft.concat(list(t.batches(size, offsets=True)))
    for k in whole.columns:
        c.eq(parts[k].tolist(), whole[k].tolist(), f"batch size {size}: column {k}")
c.eq(whole["offset"][:2].tolist(), [8, 36], "offsets of the first events (OHx: 12 + 16 bytes)")
# select keeps the payloads with their events
sub = whole.select(whole.mcv == b"OHx")
c.eq([sub.payload(i) for i in range(len(sub))],
     [whole.payload(i) for i in range(len(whole)) if whole.mcv[i] == b"OHx"], "select")

# decoded fields against weft dump's descriptions (every event with a model)
case = os.path.join(root, "v3", "jumbo-nosv")
rc, out, err = run(["dump", os.path.join(case, "ovni")])
lines = out.decode().split("\n")
with weft.open(os.path.join(case, "ovni"), clock="raw") as t:
    ev = t.read_all()
c.eq(len(ev), len(lines) - 1, "jumbo-nosv: events")
for i in range(len(ev)):
    d = ev.describe(i)
    c.expect(d is not None and lines[i].endswith("  " + d), f"event {i}: {d!r} in {lines[i]!r}")
    for k, v in ev.decode(i).items():
        c.expect(isinstance(v, (int, str)), f"event {i}: field {k}")
c.eq(weft.event_fields("OHx")[1], [("cpu", "i32", 0), ("tid", "i32", 4), ("tag", "u64", 8)],
     "the OHx fields")
f = whole.fields("OHx")
c.eq(f["cpu"].tolist(), [0, 0, 1, 1], "OHx cpu column")
c.eq([whole.decode(int(i))["tid"] for i in f["index"]], f["tid"].tolist(), "decode = fields")
try:
    whole.fields("Q!!")
    c.expect(False, "fields of an unknown MCV raise")
except KeyError:
    c.checks += 1

# DataFrames only when pandas is installed (it is optional)
try:
    import pandas  # noqa: F401
    df = whole.to_pandas()
    c.eq(len(df), len(whole), "DataFrame rows")
    c.eq(list(df["mcv"][:2]), ["OHx", "OHp"], "DataFrame mcv")
    em = weft.emulate(good)
    c.eq(len(em["thread"].to_pandas()), len(em["thread"]), "interval DataFrame rows")
except ImportError:
    print("pandas not installed: DataFrame checks not made")
c.done()
