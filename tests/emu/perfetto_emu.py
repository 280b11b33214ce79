#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""perfetto_emu.py - read weft emu's perfetto.pftrace back with an independent decoder.

For a few corpus cases, run `weft emu --perfetto -o TMP`, decode the protobuf
file with the small decoder below (wire format only: Trace.packet, TracePacket,
TrackDescriptor, TrackEvent, InternedData) and check, against numbers derived
from the reference outputs (emu/thread.prv, emu/cpu.prv) and dump-x.txt:
  - tracks: one per process, one per thread, one per CPU (vCPUs included), and
    one per (thread, channel) the thread uses (flush if it has OF[ events, each
    mark type it sets or pushes);
  - slices per thread track = thread.prv state records other than Dead;
  - slices per CPU track = cpu.prv records of type 2 with a tid (a thread runs);
  - flush slices = thread.prv type 7 records of value 1;
  - mark slices = OM[ events (stack types) and OM= events of single types
    with value labels;
  - a single mark type without value labels (numbers: "Progress") is a
    counter track (a CounterDescriptor) under its thread named by the type's
    title, whose samples are exactly (time, value) of the thread's OM=
    events of that type, in order (time = clock - the trace's first clock);
  - every SLICE_BEGIN is ended on its track, slice names resolve;
and run ../shared/tools/perfetto_check.py (if present) on the same file,
which must report it valid with the same track and slice counts.
Exit 77 when the corpus is absent (unless CI=true).
"""
import collections
import gzip
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

CASES = ["multi-thread", "marks", "flush-auto", "two-looms", "suite-ovni-libovni-mark"]


# ------------------------------------------------------------ a protobuf decoder
from protobuf_wire import checker_path, fields, signed, text  # noqa: E402
sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import skip_note  # noqa: E402


def decode(data):
    tracks = {}   # uuid -> dict(kind, name, parent, pid, tid)
    events = []   # (ts, type, track, name, counter value or None)
    names = {}
    for fno, wt, span in fields(data, 0, len(data)):
        assert fno == 1 and wt == 2, "Trace has only packets"
        pkt = {}
        for f2, w2, v2 in fields(data, *span):
            pkt.setdefault(f2, v2)
            if f2 == 12:  # interned_data
                for f3, _, v3 in fields(data, *v2):
                    if f3 == 2:  # event_names
                        ent = {f4: v4 for f4, _, v4 in fields(data, *v3)}
                        names[ent[1]] = text(data, ent[2])
        if 60 in pkt:
            d = {f: v for f, _, v in fields(data, *pkt[60])}
            t = {"parent": d.get(5, 0), "kind": "counter" if 8 in d else "track",
                 "name": text(data, d[2]) if 2 in d else ""}
            if 3 in d:
                p = {f: v for f, _, v in fields(data, *d[3])}
                t.update(kind="process", pid=p[1], name=text(data, p[6]))
            if 4 in d:
                p = {f: v for f, _, v in fields(data, *d[4])}
                t.update(kind="thread", pid=p[1], tid=p[2], name=text(data, p[5]))
            assert d[1] not in tracks, f"track {d[1]} declared twice"
            tracks[d[1]] = t
        if 11 in pkt:
            e = {f: v for f, _, v in fields(data, *pkt[11])}
            name = names.get(e[10]) if 10 in e else (text(data, e[23]) if 23 in e else None)
            assert e[11] in tracks, f"event on undeclared track {e[11]}"
            events.append((pkt.get(8, 0), e[9], e[11], name,
                           signed(e[30]) if 30 in e else None))
    return tracks, events


def slices_per_track(events):
    per = collections.Counter()
    open_ = collections.defaultdict(list)
    for ts, typ, trk, name, _ in sorted(events, key=lambda x: x[0]):  # stable
        if typ == 1:
            assert name, f"slice without a name on track {trk}"
            open_[trk].append(name)
        elif typ == 2:
            assert open_[trk], f"SLICE_END without a begin on track {trk} at {ts}"
            open_[trk].pop()
            per[trk] += 1
    for trk, st in open_.items():
        assert not st, f"unterminated slices on track {trk}: {st}"
    return per


# ------------------------------------------------------------ expectations
def prv_records(path):
    recs = []
    for line in path.read_text().splitlines()[1:]:
        f = line.split(":")
        recs.append((int(f[4]), int(f[5]), int(f[6]), int(f[7])))  # row, time, type, value
    return recs


def expected(case):
    th = prv_records(case / "emu" / "thread.prv")
    cpu = prv_records(case / "emu" / "cpu.prv")
    nthreads = len((case / "emu" / "thread.row").read_text().splitlines()) - 4
    ncpus = len((case / "emu" / "cpu.row").read_text().splitlines()) - 4
    chans = set()
    mark_slices = 0
    # the mark types: {type: (title, numbers)}, numbers = single without labels
    mtypes = {}
    for sj in (case / "ovni").rglob("stream.json"):
        for k, m in json.loads(sj.read_text()).get("ovni", {}).get("mark", {}).items():
            mtypes[int(k)] = (m["title"], m.get("chan_type") == "single" and not m.get("labels"))
    numbers = collections.defaultdict(list)  # (thread, title) -> [(time, value)]
    dump = case / "dump-x.txt"
    raw = dump.read_bytes() if dump.exists() else gzip.decompress((case / "dump-x.txt.gz").read_bytes())
    t0 = None
    for line in raw.decode(errors="replace").splitlines():
        f = line.split()
        if len(f) < 3:
            continue
        mcv, rel = f[1], f[2]
        t0 = int(f[0]) if t0 is None else t0
        if mcv == "OF[":
            chans.add((rel, "flush"))
        if mcv in ("OM[", "OM="):
            payload = bytes(int(x, 16) for x in f[3].strip(":").split(":"))
            value, mtype = struct.unpack_from("<qi", payload, 0)
            chans.add((rel, f"mark{mtype}"))
            if mcv == "OM=" and mtypes[mtype][1]:
                numbers[(rel.split("/")[-1], mtypes[mtype][0])].append((int(f[0]) - t0, value))
            else:
                mark_slices += 1
    # processes: count stream dirs' parents
    nprocs = len({sj.parent.parent for sj in (case / "ovni").rglob("stream.json")})
    return {
        "tracks": nprocs + nthreads + ncpus + len(chans),
        "state": sum(1 for r in th if r[2] == 4 and r[3] != 3),
        "cpu": sum(1 for r in cpu if r[2] == 2 and r[3] != 0),
        "flush": sum(1 for r in th if r[2] == 7 and r[3] == 1),
        "marks": mark_slices,
        "nthreads": nthreads,
        "ncpus": ncpus,
        "nprocs": nprocs,
        "numbers": dict(numbers),
    }


def main():
    corpus = os.environ.get("WEFT_CONFORMANCE_DIR") or os.environ.get("WEFT_CONFORMANCE_DIR_DEFAULT")
    if not corpus or not Path(corpus).is_dir():
        if os.environ.get("CI") == "true":
            print("conformance corpus missing (CI=true)", file=sys.stderr)
            return 1
        why = f"conformance corpus not found at {corpus!r}: skipped"
        print(why, file=sys.stderr)
        skip_note(why)  # tests/ctest_skipped.py lists it
        return 77
    weft = os.environ["WEFT_BIN"]
    checker = checker_path()
    corpus = Path(corpus)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="weft-emu-pf-") as tmp:
        for name in CASES:
            case = corpus / "v3" / name
            out = Path(tmp) / name
            p = subprocess.run([weft, "emu", "--perfetto", "-q", "-o", str(out), str(case / "ovni")],
                               capture_output=True, text=True)
            if p.returncode != 0:
                print(f"FAIL {name}: weft emu exit {p.returncode}: {p.stderr.strip()}")
                failures += 1
                continue
            pf = out / "perfetto.pftrace"
            if (out / "thread.prv").exists():
                print(f"FAIL {name}: --perfetto alone wrote Paraver files")
                failures += 1
            data = pf.read_bytes()
            try:
                tracks, events = decode(data)
                per = slices_per_track(events)
            except (AssertionError, ValueError, KeyError, IndexError) as e:
                print(f"FAIL {name}: decoding: {e}")
                failures += 1
                continue
            want = expected(case)
            kinds = collections.Counter(t["kind"] for t in tracks.values())
            thread_uuids = {u for u, t in tracks.items() if t["kind"] == "thread"}
            cpu_uuids = {u for u, t in tracks.items() if t["kind"] == "track" and t["parent"] == 0}
            chan_uuids = {u for u, t in tracks.items()
                          if t["kind"] in ("track", "counter") and t["parent"] != 0}
            flush_uuids = {u for u in chan_uuids if tracks[u]["name"].startswith("Flushing")}
            # the counter tracks of numeric marks: (thread track's tid, title) -> samples
            numbers = collections.defaultdict(list)
            for ts, typ, trk, _, val in events:
                if typ == 4:
                    th = tracks[tracks[trk]["parent"]]
                    numbers[(f"thread.{th['tid']}", tracks[trk]["name"])].append((ts, val))
            got = {
                "tracks": len(tracks),
                "state": sum(per[u] for u in thread_uuids),
                "cpu": sum(per[u] for u in cpu_uuids),
                "flush": sum(per[u] for u in flush_uuids),
                "marks": sum(per[u] for u in chan_uuids - flush_uuids),
                "nthreads": kinds["thread"],
                "ncpus": len(cpu_uuids),
                "nprocs": kinds["process"],
                "numbers": dict(numbers),
            }
            bad = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
            if bad:
                print(f"FAIL {name}: (got, expected) {bad}")
                failures += 1
                continue
            total = sum(per.values())
            nsamples = sum(len(v) for v in numbers.values())
            del got["numbers"]
            msg = (f"ok   {name}: {len(data)} bytes, {got['tracks']} tracks, {total} slices, "
                   f"{nsamples} counter samples on {len(numbers)} numeric mark tracks {got}")
            if checker is not None:
                c = subprocess.run([sys.executable, str(checker), str(pf)], capture_output=True,
                                   text=True)
                m1 = re.search(r"^tracks: (\d+)", c.stdout, re.M)
                m2 = re.search(r"^slices: (\d+) complete", c.stdout, re.M)
                if c.returncode != 0 or not m1 or not m2 or int(m1.group(1)) != len(tracks) \
                        or int(m2.group(1)) != total:
                    print(f"FAIL {name}: perfetto_check.py exit {c.returncode}:\n{c.stdout}{c.stderr}")
                    failures += 1
                    continue
                msg += "; perfetto_check.py: valid, same counts"
            print(msg)
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
