# SPDX-License-Identifier: MIT
"""The DataFrame views (needs pandas; skips, 77, when it is not installed):
Events.to_pandas() and Timeline.to_pandas() have exactly the documented
columns and dtypes (docs/python.md) and the values of the conformance trace
v3/clock-ties, event by event and interval by interval; `tid` is the tid of
each event's thread (Trace.threads[thread].tid); payload="offsets" (the
default) and payload="bytes" give each event's payload."""
import os
import sys

from pycommon import Checker, conformance_dir, need_module, SKIP
import wefttest

weft = need_module()
try:
    import pandas  # noqa: F401
except ImportError:
    why = "pandas is not installed (Debian: python3-pandas, scripts/install-deps.sh)"
    print(why + ": skipped", file=sys.stderr)
    wefttest.skip_note(why)
    sys.exit(SKIP)

root = conformance_dir()
c = Checker()
path = os.path.join(root, "v3", "clock-ties", "ovni")

with weft.open(path) as t:
    ev = t.read_all()
    threads = t.threads
    df = ev.to_pandas()
    c.eq([(k, str(v)) for k, v in df.dtypes.items()],
         [("rclock", "int64"), ("sclock", "int64"), ("flags", "uint8"), ("model", "uint8"),
          ("category", "uint8"), ("value", "uint8"), ("stream", "int32"), ("thread", "int32"),
          ("tid", "int64"), ("mcv", "category"), ("payload_offset", "int64"),
          ("payload_size", "int64")], "Events DataFrame columns and dtypes")
    c.eq(len(df), 24, "one row per event")
    c.eq(df["tid"].tolist()[:4], [17360, 17363, 17361, 17362], "the first four tids")
    c.eq(df["tid"].tolist(), [threads[i].tid for i in ev["thread"]],
         "tid is the tid of the thread that `thread` indexes")
    c.eq(df["thread"].tolist(), ev["thread"].tolist(), "thread stays the index")
    c.eq(df["mcv"].astype(str).tolist()[:6], ["OHx", "OHx", "OHx", "OHx", "OB.", "OB."],
         "the first MCVs")
    c.eq(df["mcv"].astype(str).tolist(), ev.mcv.astype("U3").tolist(), "every MCV")
    c.eq(df["sclock"].tolist()[:6], [1000, 1000, 1000, 1000, 2000, 2000], "the first clocks")
    buf = df.attrs["payload"].tobytes()
    got = [buf[o:o + s] for o, s in zip(df["payload_offset"], df["payload_size"])]
    c.eq(got, [ev.payload(i) for i in range(len(ev))], "payload_offset/size give each payload")
    c.eq(got[0], bytes([0, 0, 0, 0, 255, 255, 255, 255]) + bytes(8), "event 0's payload")
    db = ev.to_pandas(payload="bytes")
    c.eq(list(db.columns), list(df.columns[:-2]) + ["payload"], "payload='bytes' columns")
    c.eq(db["payload"].tolist(), got, "payload='bytes': the same payloads as bytes")
    c.eq(ev.to_pandas(payload="bytes")["payload"].tolist()[4], b"", "an empty payload")
    try:
        ev.to_pandas(payload="list")
        c.expect(False, "an unknown payload form raises")
    except ValueError:
        c.checks += 1
with weft.open(path) as t:
    off = t.read_all(offsets=True).to_pandas()
    c.eq(list(off.columns)[8:10], ["tid", "offset"], "offsets=True adds an offset column")
    c.eq(str(off["offset"].dtype), "uint64", "offset dtype")
    c.eq(off["offset"].tolist()[:2], [8, 8], "the first offsets (after each stream header)")

em = weft.emulate(path)
tl = em["thread"]
tp = tl.to_pandas()
c.eq([(k, str(v)) for k, v in tp.dtypes.items()],
     [("row", "int32"), ("row_label", "object"), ("type", "int32"), ("channel", "object"),
      ("start", "int64"), ("end", "int64"), ("value", "int64"), ("label", "object")],
     "interval DataFrame columns and dtypes")
c.eq(len(tp), len(tl), "one row per interval")
c.eq(tp.iloc[0].tolist(), [0, "TH 1.17360", 6, "ovni.thread.affinity", 0, 4000, 1, " CPU 0.0"],
     "the first interval")
c.eq(tp.iloc[2].tolist(), [0, "TH 1.17360", 2, "ovni.thread.tid", 0, 2000,
                           17360, None], "an interval without a value label")
c.eq(tp["label"].tolist(), [tl.label(i) for i in range(len(tl))], "every label")
c.eq(tp["channel"].tolist(), [tl.channel(i) for i in range(len(tl))], "every channel")
c.eq(tp["row_label"].tolist(), [tl.row_labels[r] for r in tl["row"]], "every row label")
c.done()
