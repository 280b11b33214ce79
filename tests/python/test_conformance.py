# SPDX-License-Identifier: MIT
"""The Python module against `weft dump -x` and `weft check`, on every case
of the conformance corpus: the events (clock, MCV, stream, payload bytes) in
dump's order, the warnings, the errors (weft.Error carries weft's message),
the system (streams, threads, processes, looms, every stream.json key the
module types) and check's summary (counts, first and last clock)."""
import json
import os
import re
import sys

from pycommon import Checker, cases, conformance_dir, need_module, run
import wefttest

weft = need_module()
root = conformance_dir()
c = Checker()

CHECK = re.compile(r"valid: (\d+) streams?, (\d+) looms?, (\d+) process(?:es)?, (\d+) threads?, "
                   r"(\d+) events?(?:, from (-?\d+) to (-?\d+) ns)?")


def dump_text(ev, trace):
    rel = [s.relpath.encode() for s in trace.streams]
    mcv = ev.mcv
    rc, st, po, pay = ev["rclock"], ev["stream"], ev["payload_offset"], ev["payload"]
    out = []
    for i in range(len(ev)):
        hexes = "".join(":%02x" % b for b in pay[po[i]:po[i + 1]])
        out.append(b"%10d  %s  %s  %s\n" % (rc[i], wefttest.esc_mcv(mcv[i]), rel[st[i]],
                                              hexes.encode()))
    return b"".join(out)


def py_dump(case):
    """(stdout as weft dump -x prints it, warnings, error message or None)."""
    text, err, warns, ncut = b"", None, [], 0
    try:
        with weft.open("ovni", mode="lenient", clock="raw", backwards="warn", cut="warn") as t:
            parts = []
            try:
                for b in t.batches(size=1000):  # several batches per case
                    parts.append(b)
            except weft.Error as e:
                err = str(e)
            text = dump_text(weft.concat(parts, t), t)
            warns = list(t.warnings)
            ncut = sum(t.cut(s) is not None for s in t.streams)
    except weft.Error as e:
        err = str(e)
    return text, warns, err, ncut


def check_system(case, t):
    """The system against the stream.json files (v3) and the thread counts."""
    for s in t.streams:
        c.expect(os.path.isfile(s.obs_path), f"{case}: {s.relpath}: obs_path exists")
        if s.meta_version != 3:
            continue
        with open(s.json_path, encoding="utf-8") as f:
            meta = json.load(f)
        o = meta.get("ovni", {})
        c.eq(s.attr("ovni"), o, f"{case}: {s.relpath}: attr('ovni')")
        c.eq(s.attr("no.such.key", 7), 7, f"{case}: a missing key")
        if s.thread is not None:
            c.eq(s.thread.tid, o.get("tid"), f"{case}: {s.relpath}: tid")
            c.eq(s.thread.process.pid, o.get("pid"), f"{case}: {s.relpath}: pid")
            c.eq(s.thread.process.loom.name, o.get("loom"), f"{case}: {s.relpath}: loom")
            c.eq(t.threads[s.thread.index] is s.thread, True, f"{case}: thread index")
        c.eq(s.lib_version, o.get("lib", {}).get("version"), f"{case}: lib version")
        c.eq(dict(s.requires), o.get("require", {}), f"{case}: {s.relpath}: require")
        c.eq(s.finished, o.get("finished") == 1, f"{case}: {s.relpath}: finished")
    c.eq(sum(len(p.threads) for p in t.processes), len(t.threads), f"{case}: threads")
    c.eq(sum(len(lm.processes) for lm in t.looms), len(t.processes), f"{case}: processes")
    c.eq(sum(len(lm.cpus) for lm in t.looms), len(t.cpus), f"{case}: cpus")


def py_check(case):
    """(exit code, the line weft check prints: summary or first error,
    warnings)."""
    warns = []
    try:
        with weft.open("ovni", backwards="regions", cut="quiet", accept_unfinished=2) as t:
            check_system(case, t)
            n, err = 0, None
            try:
                for b in t.batches(size=4096):
                    n += len(b)
            except weft.Error as e:
                err = str(e)
            warns = t.warnings
            bad = []
            for s in t.streams:
                if t.unfinished(s):
                    bad.append(f"{s.json_path}: ovni.finished is missing (the thread did not "
                               "end with ovni_thread_free)")
                cut = t.cut(s)
                if cut is not None:
                    bad.append(f"{s.obs_path}: offset {cut[1]}: {cut[3]}")
            if err is not None:
                return 1, bad + [err], warns
            if bad:
                return 1, bad, warns
            c.eq(t.nevents, n, f"{case}: nevents")
            line = (len(t.streams), len(t.looms), len(t.processes), len(t.threads), n)
            if n:
                line += (t.first_clock, t.last_clock)
            return 0, line, warns
    except weft.Error as e:
        return 1, [str(e)], list(e.warnings)


ncases = 0
for case in cases(root):
    name = os.path.relpath(case, root)
    os.chdir(case)
    ncases += 1
    rc, out, err = run(["dump", "-x", "ovni"], cwd=case)
    text, warns, perr, ncut = py_dump(case)
    c.eq(text, out, f"{name}: events against weft dump -x")
    for w in warns:
        c.expect(("weft dump: warning: " + w) in err, f"{name}: warning {w!r} in dump's stderr")
    if rc == 0:
        c.eq(perr, None, f"{name}: no error (weft dump exits 0)")
    elif perr is None:
        # streams cut short: every whole event read, dump exits 1 saying so
        c.expect(ncut > 0 and f"weft dump: {ncut} stream{'s' if ncut > 1 else ''} cut short"
                 in err, f"{name}: {ncut} streams cut, as dump says ({err.strip()!r})")
    else:
        c.expect(perr is not None and ("weft dump: " + perr) in err,
                 f"{name}: error {perr!r} is dump's ({err.strip()!r})")
    rc, out, err = run(["check", "ovni"], cwd=case)
    prc, pres, pwarns = py_check(case)
    lines = err.strip().split("\n") if err.strip() else []
    c.eq(["weft check: warning: " + w for w in pwarns],
         [x for x in lines if x.startswith("weft check: warning: ")], f"{name}: check's warnings")
    lines = [x for x in lines if not x.startswith("weft check: warning: ")]
    c.eq(prc, rc, f"{name}: check's exit status")
    if rc == 0 and prc == 0:
        m = CHECK.search(out.decode())
        want = tuple(int(x) for x in m.groups() if x is not None)
        c.eq(pres, want, f"{name}: check's summary")
    elif prc == rc:
        c.eq(["weft check: " + x for x in pres], lines, f"{name}: check's errors")
c.expect(ncases >= 100, f"the corpus has its cases ({ncases})")
print(f"{ncases} cases")
c.done()
