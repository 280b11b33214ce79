#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""otf2_read.py - `weft export otf2` read back by otf2-print and python3-otf2
(docs/export.md).

Every runtime-model case of the corpus (models/: nosv, nanos6, openmp, mpi,
tampi, nodes, kernel, hardware counters, -a) that the emulator accepts is
exported to OTF2 and `weft sql` builds its database (same flags). Then, from
both `otf2-print -A` and the python3-otf2 reader:
  - the locations are the database's threads (id, label as the name, its
    process as the location group, its loom as the system tree node);
  - the clock properties: 1 ns resolution, the trace's first clock as the
    global offset, its duration as the length;
  - every region is one (channel, value) of the thread view: canonical name
    CHANNEL=VALUE, name the value's label (the number without one);
  - per location, the Enter and Leave events are properly nested, never go
    back in time, and the intervals they make (a region's Leave and Enter
    again at one time continue it) are exactly the rows of `interval`
    (view 'thread') of the region channels: every channel but the tid, the
    affinity and the counters;
  - the counters' Metric events are the changes of their intervals.
Also the output rules: a non-empty DIR refused, --force replacing an
export of weft's and refusing a CTF export, no temporary left behind.
Without otf2-print or python3-otf2 the test skips (exit 77), or fails under
CI=true.
"""
import glob
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import SKIP, Checker, conformance_dir, skip_note, weft_bin  # noqa: E402

c = Checker()


def expect(cond, what):
    c.expect(cond, what)
    return cond

# The python3-otf2 reader, run by a Python that imports otf2 (Debian's module
# is for its /usr/bin/python3): one JSON document per archive.
READER = r"""
import json, sys, otf2
out = {"locations": [], "regions": {}, "events": {}, "metrics": {}}
with otf2.reader.open(sys.argv[1]) as tr:
    d = tr.definitions
    cp = d.clock_properties
    out["clock"] = [cp.timer_resolution, cp.global_offset, cp.trace_length]
    for l in d.locations:
        out["locations"].append([l._ref, l.name, l.group.name, l.group.system_tree_parent.name,
                                 l.number_of_events])
    for r in d.regions:
        out["regions"][r._ref] = [r.name, r.canonical_name]
    for loc, ev in tr.events:
        k = type(ev).__name__
        if k in ("Enter", "Leave"):
            out["events"].setdefault(loc._ref, []).append([k, ev.time, ev.region._ref])
        elif k == "Metric":
            out["metrics"].setdefault(loc._ref, []).append(
                [ev.time, ev.metric.members[0].name, ev.values[0]])
        else:
            out["events"].setdefault(loc._ref, []).append([k, ev.time, -1])
json.dump(out, sys.stdout)
"""


def need_tools():
    printer = shutil.which("otf2-print")
    py = None
    for cand in (sys.executable, "/usr/bin/python3"):
        if cand and os.path.exists(cand) and subprocess.run(
                [cand, "-c", "import otf2"], capture_output=True, timeout=60).returncode == 0:
            py = cand
            break
    if printer is not None and py is not None:
        return printer, py
    why = ("otf2-print or python3-otf2 not found (Debian: apt-get install otf2-tools "
           "python3-otf2): skipped")
    if os.environ.get("CI") == "true":
        print(why.replace("skipped", "CI=true: this is a failure"), file=sys.stderr)
        sys.exit(1)
    print(why, file=sys.stderr)
    skip_note(why)
    sys.exit(SKIP)


def weft(args, timeout=300):
    p = subprocess.run([weft_bin()] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def built_with_otf2():
    rc, so, err = weft(["export", "otf2", "/nonexistent", "-o", "/nonexistent-out"])
    return "built without the OTF2 library" not in err


def print_events(printer, anchor):
    """otf2-print's events: {location: [(kind, time, region)]}, and its
    regions {id: (name, canonical name)} from -A's definitions."""
    p = subprocess.run([printer, "-A", anchor], capture_output=True, text=True, timeout=300)
    c.eq(p.returncode, 0, f"otf2-print {anchor}: exit status ({p.stderr[-300:]!r})")
    c.eq(p.stderr, "", f"otf2-print {anchor}: no warnings")
    evs, regions, metrics = {}, {}, {}
    ev_re = re.compile(r'^(ENTER|LEAVE|METRIC) +(\d+) +(\d+)  (.*)$')
    reg_re = re.compile(r'^REGION +(\d+)  Name: "(.*)" <\d+> \(Aka\. "(.*)" <\d+>\)')
    for line in p.stdout.splitlines():
        m = ev_re.match(line)
        if m:
            kind, loc, t, rest = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
            if kind == "METRIC":
                mv = re.search(r'Values?: \("(.*)" <\d+>; INT64; (-?\d+)\)', rest)
                metrics.setdefault(loc, []).append(
                    (t, mv.group(1) if mv else None, int(mv.group(2)) if mv else None))
                continue
            r = re.search(r'Region: ".*" <(\d+)>$', rest)
            evs.setdefault(loc, []).append((kind.capitalize(), t, int(r.group(1)) if r else -1))
            continue
        m = reg_re.match(line)
        if m:
            regions[int(m.group(1))] = (m.group(2), m.group(3))
    return evs, regions, metrics


def intervals_of(events, where):
    """Per region, the intervals the Enter/Leave sequence makes: nesting
    checked, a Leave then Enter of one region at one time continued."""
    stack, out, last = [], [], None
    ok = True
    for kind, t, r in events:
        if last is not None and t < last:
            ok = c.expect(False, f"{where}: time goes back at {t}") and ok
        last = t
        if kind == "Enter":
            stack.append((r, t))
        elif kind == "Leave":
            if not stack or stack[-1][0] != r:
                c.expect(False, f"{where}: Leave of region {r} at {t} not the innermost "
                         f"({stack[-1:]})")
                return None
            r0, t0 = stack.pop()
            out.append((r0, t0, t))
        else:
            c.expect(False, f"{where}: an event of kind {kind}")
    c.eq(stack, [], f"{where}: every region left")
    merged = {}
    for r, t0, t1 in sorted(out, key=lambda x: (x[0], x[1], x[2])):
        if t0 == t1:
            continue  # a region left and entered again at one time (never alone)
        lst = merged.setdefault(r, [])
        if lst and lst[-1][1] == t0:
            lst[-1][1] = t1
        else:
            lst.append([t0, t1])
    return merged


# The thread view's channels an export leaves out (docs/export.md): the
# thread's tid and CPU, and the ids (tasks, bodies, apps, ranks), which
# Perfetto draws no track for either. The counters are metrics; every other
# channel is regions.
NOT_WRITTEN = re.compile(r"ovni\.thread\.(tid|affinity)|[a-z0-9]+\.(taskid|body|appid|rank)")


def want_of(db, origin):
    """The database's side: threads, region intervals, counter changes."""
    con = sqlite3.connect(db)
    q = con.execute
    threads = q("SELECT t.id, t.label, p.pid, p.rank, l.name FROM thread t JOIN process p "
                "ON p.id = t.process JOIN loom l ON l.id = t.loom ORDER BY t.id").fetchall()
    chans = {cid: name for cid, name in q("SELECT id, name FROM channel")}
    ivs, counters = {}, {}
    for row, ch, start, end, value in q(
            "SELECT row, channel, start, end, value FROM interval WHERE view = 'thread' "
            "ORDER BY row, channel, start"):
        name = chans[ch]
        if NOT_WRITTEN.fullmatch(name):
            continue
        if ".counter." in name:
            counters.setdefault((row, name), []).append((start + origin, end + origin, value))
            continue
        ivs.setdefault(row, {}).setdefault(f"{name}={value}", []).append(
            [start + origin, end + origin])
    trace = q("SELECT first_clock, duration FROM trace").fetchone()
    con.close()
    return threads, ivs, counters, trace


def compare(name, got_ivs, regions, want_ivs, threads):
    for tid, label, *_ in threads:
        got = {}
        for r, lst in (got_ivs.get(tid) or {}).items():
            got[regions[r][1] if r in regions else f"?{r}"] = lst
        want = want_ivs.get(tid, {})
        if got != want:
            diff = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
            k = diff[0]
            c.expect(False, f"{name}: {label}: the intervals of {len(diff)} regions differ, "
                     f"first {k}: otf2 {got.get(k, [])[:4]} sql {want.get(k, [])[:4]}")
        else:
            c.expect(True, "")


def one(printer, py, case, tmp, flags):
    name = os.path.basename(os.path.dirname(case))
    out = os.path.join(tmp, "otf2")
    db = os.path.join(tmp, "db.sqlite")
    rc, so, err = weft(["export", "otf2"] + flags + [case, "-o", out])
    # the models' warnings only, as weft emu gives them
    if not expect(rc == 0 and all(ln.startswith("weft export: warning: ")
                                  for ln in err.splitlines()),
                  f"{name}: export ({rc}, {err[-300:]!r})"):
        return
    m = re.match(rf"weft export: {re.escape(out)}: (\d+) locations?, (\d+) regions?, "
                 r"(\d+) metrics?, (\d+) events \((\d+) enter, (\d+) leave, (\d+) metric\)\n$", so)
    c.expect(m is not None, f"{name}: the summary line ({so!r})")
    rc, so, err = weft(["sql"] + flags + [case, "-o", db])
    if not expect(rc == 0, f"{name}: weft sql ({rc}, {err[-300:]!r})"):
        return
    con = sqlite3.connect(db)
    first, duration = con.execute("SELECT first_clock, duration FROM trace").fetchone()
    con.close()
    threads, want_ivs, counters, _ = want_of(db, first)
    anchor = os.path.join(out, "traces.otf2")
    c.eq(sorted(os.listdir(out)), ["traces", "traces.def", "traces.otf2"],
         f"{name}: the archive's files")

    # python3-otf2
    import json
    p = subprocess.run([py, "-c", READER, anchor], capture_output=True, text=True, timeout=300)
    if not expect(p.returncode == 0, f"{name}: python3-otf2 reads it ({p.stderr[-400:]!r})"):
        return
    doc = json.loads(p.stdout)
    c.eq(doc["clock"], [1000000000, first, duration], f"{name}: clock properties")
    want_locs = [[tid, label, f"rank {rank} (pid {pid})" if rank is not None and rank >= 0
                  else f"pid {pid}", loom] for tid, label, pid, rank, loom in threads]
    c.eq([l[:4] for l in doc["locations"]], want_locs, f"{name}: locations")
    py_regions = {int(k): tuple(v) for k, v in doc["regions"].items()}
    py_evs = {int(k): [tuple(e) for e in v] for k, v in doc["events"].items()}
    for l in doc["locations"]:
        n = len(py_evs.get(l[0], [])) + len(doc["metrics"].get(str(l[0]), []))
        c.eq(l[4], n, f"{name}: {l[1]}: number_of_events")
    for rid, (rname, canon) in py_regions.items():
        mm = re.fullmatch(r"(.+)=(-?\d+)", canon)
        c.expect(mm is not None and rname != "" and not NOT_WRITTEN.fullmatch(mm.group(1))
                 and ".counter." not in canon, f"{name}: region {rid} named {canon!r}")
    got = {loc: intervals_of(evs, f"{name}: python3-otf2: location {loc}")
           for loc, evs in py_evs.items()}
    compare(f"{name} (python3-otf2)", got, py_regions, want_ivs, threads)
    # the counters: a Metric per change of value, at its interval's start
    c.eq(sorted({n for ms in doc["metrics"].values() for _, n, _ in ms}),
         sorted({n for _, n in counters}), f"{name}: the metrics are the counters")
    for (row, cname), lst in counters.items():
        samples = [(t, v) for t, n, v in doc["metrics"].get(str(row), []) if n == cname]
        nonzero = [(t, v) for t, v in samples if v != 0]
        c.eq(nonzero, [(s, v) for s, e, v in lst], f"{name}: thread {row}: {cname} metrics")

    # otf2-print
    pr_evs, pr_regions, pr_metrics = print_events(printer, anchor)
    c.eq(pr_regions, py_regions, f"{name}: otf2-print's regions")
    got = {loc: intervals_of(evs, f"{name}: otf2-print: location {loc}")
           for loc, evs in pr_evs.items()}
    compare(f"{name} (otf2-print)", got, pr_regions, want_ivs, threads)
    c.eq(pr_evs, py_evs, f"{name}: otf2-print's events are python3-otf2's")
    c.eq(pr_metrics, {int(k): [tuple(m) for m in v] for k, v in doc["metrics"].items()},
         f"{name}: otf2-print's metrics are python3-otf2's")
    shutil.rmtree(out, ignore_errors=True)
    os.unlink(db)


def rules(printer, tmp, trace):
    out = os.path.join(tmp, "rules")
    os.mkdir(out)
    open(os.path.join(out, "notes.txt"), "w").write("mine\n")
    rc, so, err = weft(["export", "otf2", trace, "-o", out])
    c.eq((rc, so, err), (1, "", f"weft export: {out}: exists and is not empty: not replaced "
                         "(--force replaces an OTF2 archive weft wrote)\n"), "a non-empty DIR")
    rc, so, err = weft(["export", "otf2", "--force", trace, "-o", out])
    c.eq((rc, err), (1, f"weft export: {out}: exists and is not an OTF2 archive weft wrote: "
                     "not replaced (even with --force)\n"), "--force and a DIR of another's")
    c.eq(os.listdir(out), ["notes.txt"], "the DIR refused is untouched")
    shutil.rmtree(out)
    rc, so, err = weft(["export", "otf2", "-q", trace, "-o", out])
    c.eq((rc, so, err), (0, "", ""), "an absent DIR, -q")

    def files(d):
        """The archive's files; the anchor file as otf2-print -I shows it,
        without the trace identifier (random: the library's)."""
        fs = {os.path.relpath(f, d): open(f, "rb").read()
              for f in glob.glob(os.path.join(d, "**"), recursive=True) if os.path.isfile(f)}
        p = subprocess.run([printer, "-I", os.path.join(d, "traces.otf2")], capture_output=True,
                           text=True, timeout=60)
        fs["traces.otf2"] = [ln for ln in p.stdout.splitlines()
                             if not ln.startswith("Trace identifier")]
        return fs
    first = files(out)
    rc, so, err = weft(["export", "otf2", "-q", "--force", trace, "-o", out])
    c.eq((rc, err), (0, ""), "--force replaces an export of weft's")
    c.expect(files(out) == first and "Creator                        weft export otf2" in
             first["traces.otf2"] and "traces/0.evt" in first,
             "an export again gives the same files (but the trace identifier)")
    ctf = os.path.join(tmp, "ctf")
    rc, so, err = weft(["export", "ctf", "-q", trace, "-o", ctf])
    c.eq(rc, 0, "a CTF export")
    rc, so, err = weft(["export", "otf2", "--force", trace, "-o", ctf])
    c.eq((rc, err), (1, f"weft export: {ctf}: exists and is not an OTF2 archive weft wrote: "
                     "not replaced (even with --force)\n"), "--force does not replace a CTF export")
    rc, so, err = weft(["export", "ctf", "--force", trace, "-o", out])
    c.eq((rc, err), (1, f"weft export: {out}: exists and is not a CTF trace weft wrote: "
                     "not replaced (even with --force)\n"), "nor ctf --force an OTF2 one")
    rc, so, err = weft(["export", "otf2", "--packet-size", "4096", trace, "-o", out])
    c.eq((rc, err), (2, "weft export: --packet-size is an option of ctf only; run "
                     "`weft export --help`\n"), "--packet-size with otf2")
    rc, so, err = weft(["export", "otf2", "--follow-links", trace, "-o", out])
    c.eq((rc, err), (2, "weft export: --follow-links is an option of ctf only; run "
                     "`weft export --help`\n"), "--follow-links with otf2")
    # a trace the emulator refuses: its message, exit 1, nothing written
    soup = os.path.join(os.path.dirname(os.path.dirname(trace)), "soup-1", "ovni")
    new = os.path.join(tmp, "soup")
    rc, so, err = weft(["export", "otf2", soup, "-o", new])
    rc2, so2, err2 = weft(["emu", soup, "-o", os.path.join(tmp, "soup-emu")])
    c.expect(rc == 1 and rc2 == 1 and err.startswith("weft export: ") and
             err.replace("weft export: ", "") == err2.replace("weft emu: ", ""),
             f"soup-1: refused as weft emu refuses it ({err!r} {err2!r})")
    c.expect(not os.path.exists(new), "soup-1: nothing written")
    c.eq(glob.glob(os.path.join(tmp, "*.weft-otf2-*")), [], "no temporary left behind")


def main():
    if not built_with_otf2():
        why = "weft was built without the OTF2 library (libotf2-trace-dev): skipped"
        if os.environ.get("CI") == "true":
            print(why.replace("skipped", "CI=true: this is a failure"), file=sys.stderr)
            sys.exit(1)
        print(why, file=sys.stderr)
        skip_note(why)
        sys.exit(SKIP)
    printer, py = need_tools()
    corpus = conformance_dir()
    index = {}
    for line in open(os.path.join(corpus, "models", "INDEX.txt")):
        f = line.split()
        if f and not f[0].startswith("#"):
            index[f[0]] = (f[1:-1], f[-1])
    tmp = tempfile.mkdtemp(prefix="weft-otf2-")
    try:
        n = 0
        for case, (flags, code) in sorted(index.items()):
            if code != "0":
                continue  # refused by the emulator (soup-*): nothing to export
            work = os.path.join(tmp, "c")
            os.mkdir(work)
            one(printer, py, os.path.join(corpus, "models", case, "ovni"), work,
                ["-a"] if "-a" in flags else [])
            shutil.rmtree(work, ignore_errors=True)
            n += 1
        c.expect(n >= 30, f"the runtime-model cases exported ({n})")
        rules(printer, tmp, os.path.join(corpus, "models", "mix-3", "ovni"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
