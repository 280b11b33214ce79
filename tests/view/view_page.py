#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""view_page.py - `weft view`'s page in a real headless Chromium (cdp.py),
against `weft sql`'s interval table of the same trace.

Traces: corpus cases (ovni: v3/multi-thread, two-looms; runtime models:
models/rand-nosv-0, mix-0, nosv-hwc with counters), a flight-recorded
trace with lost intervals (tests/emu/loss_emu.py's), and a user model
(examples/zeta with --model). For each page:
  - <html> reaches data-weft-state="ready" with data-weft-rows = threads +
    CPUs and data-weft-intervals = the intervals of the shown channels
    (ovni.thread.state on thread rows, cpu.running.tid on CPU rows);
  - the only request is the page's own file (the browser runs behind a
    proxy that does not exist, and Network events are recorded), and no
    JavaScript exception is raised;
  - the hover text at the middle of given intervals (first, middle, last
    of every row) is exactly "LABEL: begin S ns, end E ns, duration D ns"
    of that interval in the table;
  - a 1 us window (weft.setWindow) shows exactly the intervals the table
    holds overlapping it, for the thread state and for the busiest other
    channel (weft.setChannel);
  - with a small --budget: the page says so, is at most the budget, and
    still reaches ready with the same counts.
Against `weft view --serve --budget 1` (the page holds the pyramids only):
the same checks, the intervals coming from the server's tiles.
The attacker's trace: a mark type whose labels hold <script>, quotes and
</, in a directory whose path holds </script><script>: the page is ready,
no script of the trace ran, the texts show as text (the title element,
the hover text), and the file holds none of them unescaped.
Skips (77) when Chromium is absent, unless CI=true.
"""
import json
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "emu"))
sys.dont_write_bytecode = True
import cdp  # noqa: E402
from serve_util import Server  # noqa: E402
from wefttest import SKIP, Checker, conformance_dir, skip_note, weft_bin  # noqa: E402
from tracegen import ev, meta, thread_rel, write_stream  # noqa: E402

c = Checker()


def need_chromium():
    if cdp.find_chromium() is not None:
        return
    why = "chromium not found (Debian: apt-get install chromium): skipped"
    if os.environ.get("CI") == "true":
        print("chromium not found (CI=true: this is a failure)", file=sys.stderr)
        sys.exit(1)
    print(why, file=sys.stderr)
    skip_note(why)
    sys.exit(SKIP)


def weft(args, timeout=300):
    p = subprocess.run([weft_bin()] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


class Table:
    """weft sql's database of a trace: rows and intervals."""

    def __init__(self, trace, tmp, models=()):
        db = os.path.join(tmp, "timeline.db")
        rc, _, err = weft(["sql", *sum((["--model", m] for m in models), []), "-o", db, trace])
        if rc != 0:
            raise RuntimeError(f"weft sql {trace}: {rc} {err}")
        con = sqlite3.connect(db)
        self.nthreads = con.execute("SELECT count(*) FROM thread").fetchone()[0]
        self.ncpus = con.execute("SELECT count(*) FROM cpu").fetchone()[0]
        self.chans = {n: (i, tl is not None, cl is not None) for i, n, tl, cl in
                      con.execute("SELECT id, name, thread_label, cpu_label FROM channel")}
        self.ivs = {}  # channel name -> [(global row, start, end, value, label)]
        names = {i: n for n, (i, _, _) in self.chans.items()}
        for view, row, ch, s, e, v, lab in con.execute(
                "SELECT view, row, channel, start, end, value, label FROM interval "
                "ORDER BY view DESC, row, start"):
            g = row if view == "thread" else self.nthreads + row
            self.ivs.setdefault(names[ch], []).append((g, s, e, v, lab))
        con.close()
        os.unlink(db)

    def shown(self, chan):
        """The (row, channel) pairs a page shows with chan chosen: chan on
        the rows of its views, cpu.running.tid on the CPU rows otherwise."""
        _, th, cp = self.chans[chan]
        out = []
        for r, s, e, v, lab in self.ivs.get(chan, []):
            if (r < self.nthreads and th) or (r >= self.nthreads and cp):
                out.append((r, chan, s, e, v, lab))
        if not cp:
            out += [(r, "cpu.running.tid", s, e, v, lab)
                    for r, s, e, v, lab in self.ivs.get("cpu.running.tid", [])]
        return sorted(out, key=lambda x: (x[0], x[2]))


def hover_text(iv):
    _, _, s, e, v, lab = iv
    return f"{lab if lab is not None else v}: begin {s} ns, end {e} ns, duration {e - s} ns"


def open_page(browser, url, what):
    p = browser.page()
    p.navigate(url)
    st = p.wait_attr("data-weft-state", ("ready", "error"))
    if st != "ready":
        err = p.eval("document.documentElement.getAttribute('data-weft-error')")
        c.eq(st, "ready", f"{what}: state ({err})")
        return None
    return p


def attr(p, name):
    return p.eval(f"document.documentElement.getAttribute('{name}')")


def check_page(p, tab, what, url_ok):
    c.eq(attr(p, "data-weft-rows"), str(tab.nthreads + tab.ncpus), f"{what}: rows")
    shown = tab.shown("ovni.thread.state")
    c.eq(attr(p, "data-weft-intervals"), str(len(shown)), f"{what}: intervals")
    # hover: the first, middle and last interval of every row
    byrow = {}
    for iv in shown:
        byrow.setdefault(iv[0], []).append(iv)
    n = 0
    for r, ivs in sorted(byrow.items()):
        for iv in {ivs[0], ivs[len(ivs) // 2], ivs[-1]}:
            got = p.eval(f"weft.hoverAt({r}, {(iv[2] + iv[3]) // 2})")
            c.eq(got, hover_text(iv), f"{what}: hover row {r} at {(iv[2] + iv[3]) // 2}")
            n += 1
    c.expect(n > 0, f"{what}: some intervals hovered")
    # a 1 us window where the most intervals are, per shown channel
    chans = ["ovni.thread.state"]
    other = [(len(v), k) for k, v in tab.ivs.items()
             if k not in ("ovni.thread.state", "cpu.running.tid") and tab.chans[k][1]]
    if other:
        chans.append(max(other)[1])
    for ch in chans:
        p.eval(f"weft.setChannel({json.dumps(ch)})")
        ivs = tab.shown(ch)
        starts = sorted(iv[2] for iv in ivs)
        # the window starting at the interval start with the most starts in 1 us after it
        best, t0 = -1, 0
        j = 0
        for i, s in enumerate(starts):
            while j < len(starts) and starts[j] < s + 1000:
                j += 1
            if j - i > best:
                best, t0 = j - i, s - 100
        t1 = t0 + 1000
        p.eval(f"weft.setWindow({t0}, {t1})")
        got = [tuple(x) for x in p.eval("weft.visibleIntervals()")]
        want = [(r, chn, s, e, v) for r, chn, s, e, v, _ in ivs if s < t1 and e > t0]
        got.sort(key=lambda x: (x[0], x[2]))
        c.eq(got, want, f"{what}: the 1 us window [{t0}, {t1}) of {ch}")
        c.expect(len(want) > 0, f"{what}: the window of {ch} holds intervals")
    p.eval("weft.setChannel('ovni.thread.state')")
    p.eval("weft.setWindow(0, 1e18)")
    p.pump(0.2)
    bad = [u for u in p.requests if not url_ok(u)]
    c.eq(bad, [], f"{what}: no request but the page's own")
    c.eq(p.exceptions, [], f"{what}: no JavaScript exception")


def case(browser, tmp, name, trace, models=()):
    tab = Table(trace, tmp, models)
    out = os.path.join(tmp, name + ".html")
    rc, so, err = weft(["view", *sum((["--model", m] for m in models), []), "-o", out, trace])
    c.eq(rc, 0, f"{name}: weft view exit status ({err})")
    # the only message: the warning of a trace that lost events
    c.expect(err == "" or (name == "lost" and err.startswith("weft view: warning: 2 threads "
                                                               "lost events")),
             f"{name}: stderr {err!r}")
    c.expect(so.startswith(f"{out}: {tab.nthreads + tab.ncpus} rows, "), f"{name}: line {so!r}")
    url = "file://" + out
    p = open_page(browser, url, name)
    if p is not None:
        check_page(p, tab, name, lambda u: u == url)
        p.close()
    return tab


def budget_case(browser, tmp, trace):
    out = os.path.join(tmp, "budget.html")
    rc, _, err = weft(["view", "-o", out, trace])
    full = os.path.getsize(out)
    # --budget 1: the pyramids only
    rc, so, err = weft(["view", "--budget", "1", "-o", out, trace])
    c.eq((rc, err), (0, ""), "budget 1: exit status")
    c.expect("beyond the budget the page holds the summary" in so, f"budget: the line says so: {so!r}")
    base = os.path.getsize(out)
    tab = Table(trace, tmp)
    p = open_page(browser, "file://" + out, "budget 1")
    if p is not None:
        c.eq(attr(p, "data-weft-intervals"), str(len(tab.shown("ovni.thread.state"))),
             "budget 1: intervals")
        c.expect("--serve" in p.eval("document.getElementById('note').textContent"),
                 "budget 1: the page says where the rest is")
        iv = tab.shown("ovni.thread.state")[0]
        h = p.eval(f"weft.hoverAt({iv[0]}, {(iv[2] + iv[3]) // 2})")
        c.expect(h.endswith("(summary; the intervals are beyond the budget)"),
                 f"budget 1: the hover says it is the summary: {h!r}")
        c.eq(p.exceptions, [], "budget 1: no JavaScript exception")
        p.close()
    budget = (base + full) // 2
    rc, so, err = weft(["view", "--budget", str(budget), "-o", out, trace])
    c.eq((rc, err), (0, ""), "budget: exit status")
    c.expect("beyond the budget" in so, f"budget: the line says so: {so!r}")
    c.expect(base < os.path.getsize(out) <= budget,
             f"budget: {base} < {os.path.getsize(out)} <= {budget}")
    rc, _, err = weft(["view", "--budget", "12X", "-o", out, trace])
    c.eq((rc, err), (2, "weft view: --budget '12X' is not a size (bytes, or a number with K, "
                        "M, G, KiB, MiB, GiB, kB, MB or GB); run `weft view --help`\n"),
         "budget: a bad size")


def serve_case(browser, tmp, name, trace):
    """The same checks against weft view --serve with --budget 1: every
    interval the page shows or hovers comes from the server's tiles."""
    tab = Table(trace, tmp)
    srv = Server(weft_bin(), ["--budget", "1", trace])
    try:
        base = f"http://127.0.0.1:{srv.port}/"
        p = open_page(browser, base, "serve " + name)
        if p is not None:
            c.expect(not p.eval("weft.complete"), f"serve {name}: the page lacks intervals")
            check_page(p, tab, "serve " + name, lambda u: u.startswith(base))
            c.expect(any("/tile?" in u for u in p.requests), f"serve {name}: tiles asked for")
            p.close()
    finally:
        rc, err = srv.stop()
    c.eq((rc, err), (0, ""), f"serve {name}: SIGINT ends it, exit 0")


EVIL = "<script>window.pwned=1</script>\"'</"


def attacker(browser, tmp):
    root = os.path.join(tmp, "x</script><script>window.pwned=2</script>\"'", "ovni")
    loom = "<img src=x onerror=window.pwned=3><script>\"'"  # no '/': a directory name
    m = meta(1, 1, loom=loom)
    m["ovni"]["mark"] = {"7": {"title": EVIL + "title", "chan_type": "single",
                               "labels": {"5": EVIL + "label"}}}
    write_stream(root, thread_rel(loom, 1, 1), m, [
        ev("OHx", 1000, struct.pack("<iiQ", 0, -1, 0)),
        ev("OM=", 1100, struct.pack("<qi", 5, 7)),
        ev("OHe", 2000),
    ])
    out = os.path.join(tmp, "evil.html")
    rc, _, err = weft(["view", "-o", out, root])
    c.eq((rc, err), (0, ""), "attacker: weft view")
    with open(out, "rb") as f:
        body = f.read()
    c.expect(b"pwned" in body, "attacker: the text is in the file")
    c.eq(body.count(b"<script"), 2, "attacker: the file holds the page's two script elements only")
    c.expect(b"</script><script>window" not in body, "attacker: nothing unescaped")
    p = open_page(browser, "file://" + out, "attacker")
    if p is None:
        return
    c.eq(p.eval("typeof window.pwned"), "undefined", "attacker: no script of the trace ran")
    c.eq(p.eval("document.scripts.length"), 2, "attacker: two script elements")
    c.eq(p.eval("document.getElementById('title').textContent"), root,
         "attacker: the title shows the path as text")
    c.eq(p.eval("JSON.parse(document.getElementById('weft-data').textContent).rows[0].loom"),
         loom, "attacker: the loom's name reaches the page as it is")
    p.eval("weft.setChannel('ovni.mark.7')")
    c.eq(p.eval("weft.hoverAt(0, 500)"),
         f"{EVIL}label: begin 100 ns, end 1000 ns, duration 900 ns",
         "attacker: the label as text in the hover")
    c.eq(p.exceptions, [], "attacker: no JavaScript exception")
    p.close()


def lost_trace(tmp):
    import loss_emu
    root = os.path.join(tmp, "ring")
    loss_emu.write_ring_trace(root)
    return root


def zeta_trace(tmp):
    zeta = os.path.join(os.environ.get("WEFT_BINARY_DIR", ""), "bin", "zeta")
    src = os.environ.get("WEFT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
    model = os.path.join(src, "examples", "zeta", "zeta.yaml")
    if not os.path.exists(zeta):
        return None, None
    root = os.path.join(tmp, "zeta")
    subprocess.run([zeta, "2", "20"], env=dict(os.environ, OVNI_TRACEDIR=root),
                   stdout=subprocess.DEVNULL, check=True, timeout=60)
    return root, model


def main():
    need_chromium()
    corpus = conformance_dir()
    tmp = tempfile.mkdtemp(prefix="weft-view-")
    try:
        with cdp.Browser() as b:
            for name, rel in (("multi-thread", "v3/multi-thread/ovni"),
                              ("two-looms", "v3/two-looms/ovni"),
                              ("rand-nosv-0", "models/rand-nosv-0/ovni"),
                              ("mix-0", "models/mix-0/ovni"),
                              ("nosv-hwc", "models/nosv-hwc/ovni")):
                case(b, tmp, name, os.path.join(corpus, rel))
            tab = case(b, tmp, "lost", lost_trace(tmp))
            c.expect("ovni.lost" in tab.ivs, "lost: the trace has lost intervals")
            ztrace, zmodel = zeta_trace(tmp)
            c.expect(ztrace is not None, "zeta: bin/zeta built")
            if ztrace:
                tab = case(b, tmp, "zeta", ztrace, [zmodel])
                c.expect(any(k.startswith("zeta.") for k in tab.ivs), "zeta: its channels")
            budget_case(b, tmp, os.path.join(corpus, "models/mix-0/ovni"))
            serve_case(b, tmp, "mix-0", os.path.join(corpus, "models/mix-0/ovni"))
            serve_case(b, tmp, "multi-thread", os.path.join(corpus, "v3/multi-thread/ovni"))
            attacker(b, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
