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
the same checks, the intervals coming from the server's tiles, at
127.0.0.1 and at localhost, with no console error (the server's
Content-Security-Policy let the page's requests through); at a name
rebound to 127.0.0.1 the page is the server's 403, and that origin's
fetch of a tile 403 too.
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
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.path.insert(0, os.path.join(HERE, "..", "emu"))
sys.dont_write_bytecode = True
import cdp  # noqa: E402
import png  # noqa: E402
from serve_util import Server  # noqa: E402
from wefttest import SKIP, Checker, conformance_dir, skip_note, weft_bin  # noqa: E402
from tracegen import ev, meta, thread_rel, write_stream  # noqa: E402

c = Checker()
# an attacker's name that the browser resolves to 127.0.0.1 (rebinding)
REBIND = "rebind.example"


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
        self.ntracks = con.execute("SELECT count(*) FROM (SELECT DISTINCT view, row, channel "
                                   "FROM interval)").fetchone()[0]
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
    interval the page shows or hovers comes from the server's tiles, read
    from its temporary file."""
    tab = Table(trace, tmp)
    srv = Server(weft_bin(), ["--no-cache", "--budget", "1", trace])
    try:
        # every track with intervals is served from the server's temporary file
        c.expect(srv.line.endswith(f"; {tab.ntracks} tracks beyond the budget, read from a "
                                   "temporary file)\n"), f"serve {name}: {srv.line!r}")
        for host in ("127.0.0.1", "localhost"):
            base = f"http://{host}:{srv.port}/"
            what = f"serve {name} at {host}"
            p = open_page(browser, base, what)
            if p is not None:
                p.pump(0.2)
                c.eq(p.console_errors, [], f"{what}: no console error once ready")
                c.expect(not p.eval("weft.complete"), f"{what}: the page lacks intervals")
                check_page(p, tab, what, lambda u: u.startswith(base))
                c.expect(any("/tile?" in u for u in p.requests), f"{what}: tiles asked for")
                c.eq(p.console_errors, [], f"{what}: no console error")
                p.close()
        rebinding(browser, srv.port, name)
    finally:
        rc, err = srv.stop()
    c.eq((rc, err), (0, ""), f"serve {name}: SIGINT ends it, exit 0")


def rebinding(browser, port, name):
    """DNS rebinding: a name of the attacker's resolving to 127.0.0.1 (the
    browser's --host-resolver-rules): its page at the server's port is the
    server's 403, and its fetch of a tile, same-origin to the browser, is
    403 with the refusal's text."""
    what = f"serve {name}, the rebinding name"
    p = browser.page()
    try:
        p.navigate(f"http://{REBIND}:{port}/")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and p.eval("document.readyState") != "complete":
            p.pump(0.05)
        refusal = (f"refused: the Host header must be 127.0.0.1:{port} or localhost:{port}, "
                   "once\n")
        c.eq((p.eval("document.documentElement.getAttribute('data-weft-state')"),
              p.eval("document.body ? document.body.innerText : null")),
             (None, refusal), f"{what}: the page is the server's 403")
        try:
            got = p.eval("fetch('/tile?c=0&r0=0&r1=0&l=0&i=0').then(function (r) { return "
                         "r.text().then(function (t) { return [r.status, t]; }); })")
        except cdp.CDPError as e:
            got = str(e)
        c.eq(got, [403, refusal], f"{what}: its fetch of a tile: 403, no data")
    finally:
        p.close()


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



# ------------------------------------------------------------------ the page's features

def fresh(browser, url, what, width=1200, height=1600):
    """A new tab of the given size on url (a fragment loads with the page)."""
    p = browser.page()
    p.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
           deviceScaleFactor=1, mobile=False)
    p.navigate(url)
    st = p.wait_attr("data-weft-state", ("ready", "error"))
    if st != "ready":
        c.eq(st, "ready", f"{what}: state")
        p.close()
        return None
    return p


def wait_hash(p, want, seconds=5.0):
    """location.hash once it is want (the page writes it 200 ms after a draw)."""
    got = None
    for _ in range(int(seconds / 0.05)):
        got = p.eval("location.hash")
        if got == want:
            break
        p.pump(0.05)
    return got


def frag(t0, t1, ch, rows, sel):
    f = f"#t0={t0}&t1={t1}&c={ch}"
    if rows:
        f += "&rows=" + ",".join(str(r) for r in rows)
    if sel:
        f += f"&sel={sel[0]}:{sel[1]}"
    return f


def label_of(iv):
    return iv[5] if iv[5] is not None else str(iv[4])


def panel_want(tab, ch, rows, t0, t1):
    """{(channel, value): ns} of the rows' shown intervals in [t0, t1)."""
    want = {}
    for r, chn, s, e, v, _ in tab.shown(ch):
        if r in rows and s < t1 and e > t0:
            want[(chn, v)] = want.get((chn, v), 0) + min(e, t1) - max(s, t0)
    return want


def features(browser, tmp, trace):
    """The fragment, the search, the groups, the panel and a 1 ns window."""
    tab = Table(trace, tmp)
    out = os.path.join(tmp, "features.html")
    rc, _, err = weft(["view", "-o", out, trace])
    c.eq((rc, err), (0, ""), "features: weft view")
    url = "file://" + out
    nrows = tab.nthreads + tab.ncpus
    ch = "nosv.subsystem"
    c.expect(ch in tab.chans, "features: the trace has nosv.subsystem")
    shown = tab.shown(ch)
    byrow = {}
    for iv in shown:
        byrow.setdefault(iv[0], []).append(iv)
    rs = sorted(byrow, key=lambda r: -len(byrow[r]))
    r1, r2 = rs[0], rs[1]
    iv = byrow[r1][len(byrow[r1]) // 2]

    # the URL fragment: a link restores the window, the channel, the rows
    # and the selected interval, and the page writes it back as it is
    t0, t1 = iv[2] - 500, iv[3] + 500
    f = frag(t0, t1, ch, [r2, r1], (r1, iv[2]))
    p = fresh(browser, url + f, "fragment")
    if p is None:
        return
    c.eq(p.eval("weft.window()"), [t0, t1], "fragment: the window restored")
    c.eq(p.eval("weft.channel()"), ch, "fragment: the channel restored")
    c.eq(p.eval("document.getElementById('chan').selectedOptions[0].textContent"), ch,
         "fragment: the channel's list shows it")
    c.eq(p.eval("weft.selectedRows()"), [r2, r1], "fragment: the rows restored")
    c.eq(p.eval("weft.selection()"), {"r": r1, "s": iv[2], "e": iv[3]},
         "fragment: the selected interval restored")
    c.eq(wait_hash(p, f), f, "fragment: written back unchanged")
    # changing the window and the selection changes the fragment
    iv3 = byrow[r2][0]
    p.eval(f"weft.setWindow({iv3[2] - 100}, {iv3[3] + 100})")
    c.eq(p.eval(f"weft.select({r2}, {(iv3[2] + iv3[3]) // 2})"),
         {"r": r2, "s": iv3[2], "e": iv3[3]}, "fragment: select")
    f2 = frag(iv3[2] - 100, iv3[3] + 100, ch, [r2, r1], (r2, iv3[2]))
    c.eq(wait_hash(p, f2), f2, "fragment: follows the window and the selection")
    p.eval("weft.setChannel('ovni.thread.state')")
    p.eval(f"weft.toggleRow({r1})")
    f3 = frag(iv3[2] - 100, iv3[3] + 100, "ovni.thread.state", [r2], (r2, iv3[2]))
    c.eq(wait_hash(p, f3), f3, "fragment: follows the channel and the rows")
    # a fragment changed by hand (a pasted link) moves the page
    p.eval(f"location.hash = {json.dumps(f[1:])}")
    for _ in range(40):
        if p.eval("weft.window()") == [t0, t1]:
            break
        p.pump(0.05)
    c.eq([p.eval("weft.window()"), p.eval("weft.channel()"), p.eval("weft.selectedRows()"),
          p.eval("weft.selection()")], [[t0, t1], ch, [r2, r1], {"r": r1, "s": iv[2], "e": iv[3]}],
         "fragment: a link pasted into the open page")
    c.eq(p.exceptions, [], "fragment: no JavaScript exception")
    p.close()
    # a fragment that names nothing known: the whole run, no selection
    p = fresh(browser, url + "#t0=x&t1=5&c=nope&rows=999&sel=abc", "bad fragment")
    if p is not None:
        dur = p.eval("weft.window()")[1]
        c.expect(dur > 0, "bad fragment: the whole run")
        c.eq([p.eval("weft.window()")[0], p.eval("weft.channel()"), p.eval("weft.selectedRows()"),
              p.eval("weft.selection()")], [0, "ovni.thread.state", [], None],
             "bad fragment: ignored")
        c.eq(p.exceptions, [], "bad fragment: no JavaScript exception")
        p.close()

    p = fresh(browser, url, "features")
    if p is None:
        return
    dur = p.eval("weft.window()")[1]
    # search by value label: the intervals whose label holds the text
    for chn in ("ovni.thread.state", ch):
        p.eval(f"weft.setChannel({json.dumps(chn)})")
        ivs = tab.shown(chn)
        labels = sorted({label_of(x) for x in ivs if x[1] == chn})
        c.expect(len(labels) >= 2, f"search {chn}: several labels")
        for text in labels + [labels[0][1:3].upper(), "no such label"]:
            want = sum(1 for x in ivs if text.lower() in label_of(x).lower())
            c.eq(p.eval(f"weft.search({json.dumps(text)})"), want, f"search {chn}: {text!r}")
        # Enter: the first match after the window's middle, selected
        text = labels[-1]
        p.eval(f"weft.search({json.dumps(text)})")
        p.eval(f"weft.setWindow(0, {dur})")
        mid = dur / 2
        after = sorted((x[2], x[0], x[3]) for x in ivs
                       if x[2] > mid and text.lower() in label_of(x).lower())
        got = p.eval("weft.searchNext()")
        want = {"r": after[0][1], "s": after[0][0], "e": after[0][2]} if after else None
        c.eq(got, want, f"search {chn}: Enter selects the next {text!r} after the middle")
        if want:
            w = p.eval("weft.window()")
            c.expect(w[0] <= want["s"] and want["e"] <= w[1], f"search {chn}: the window shows it")
    p.eval("weft.search('')")
    p.eval("weft.setChannel('ovni.thread.state')")

    # groups: a folded loom/process draws none of its rows
    groups = p.eval("weft.groups()")
    c.eq(sum(g["rows"] for g in groups), nrows, "groups: every row in one")
    c.expect(len(groups) >= 2, "groups: a process and the CPUs at least")
    c.eq(p.eval("weft.drawnRows()"), nrows, "groups: all rows drawn")
    c.eq(p.eval(f"weft.fold({json.dumps(groups[0]['key'])})"), nrows - groups[0]["rows"],
         "groups: the first folded")
    c.eq(p.eval(f"weft.fold({json.dumps(groups[-1]['key'])})"),
         nrows - groups[0]["rows"] - groups[-1]["rows"], "groups: the last folded too")
    c.eq([g["folded"] for g in p.eval("weft.groups()")],
         [True] + [False] * (len(groups) - 2) + [True], "groups: folded ones")
    c.eq(p.eval(f"weft.fold({json.dumps(groups[0]['key'])})"), nrows - groups[-1]["rows"],
         "groups: the first unfolded")
    # a real click on the last group's bar unfolds it
    lay = p.eval("weft.layout()")
    bars = [y for r, y, h in lay["rows"] if r < 0]
    top = p.eval("document.getElementById('tl').getBoundingClientRect().top")
    for kind in ("mousePressed", "mouseReleased"):
        p.call("Input.dispatchMouseEvent", type=kind, x=30, y=top + bars[-1] + 6,
               button="left", clickCount=1)
    c.eq(p.eval("weft.drawnRows()"), nrows, "groups: a click on the bar unfolds it")
    c.eq(p.eval("document.getElementById('tl').height"),
         24 + 16 * len(groups) + 18 * nrows, "groups: the canvas holds every row")

    # the time per value in the window, for the selected rows
    for chn in ("ovni.thread.state", ch):
        p.eval(f"weft.setChannel({json.dumps(chn)})")
        for a, b in ((0, dur), (iv[2] - 33, iv[3] + 77), (dur // 3, dur // 3 + 100)):
            a, b = p.eval(f"weft.setWindow({a}, {b})")
            for rows in ([], [r1], list(dict.fromkeys([r1, r2, nrows - 1]))):
                for r in p.eval("weft.selectedRows()"):
                    p.eval(f"weft.toggleRow({r})")
                for r in rows:
                    p.eval(f"weft.toggleRow({r})")
                got = p.eval("weft.panel()")
                want = panel_want(tab, chn, set(rows) if rows else set(range(nrows)), a, b)
                c.eq(got["exact"], True, f"panel {chn} [{a}, {b}) rows {rows}: exact")
                c.eq({(x[0], x[1]): x[2] for x in got["values"]}, want,
                     f"panel {chn} [{a}, {b}) rows {rows}: time per value")
                c.expect(len(want) > 0, f"panel {chn} [{a}, {b}): values")
    for r in p.eval("weft.selectedRows()"):
        p.eval(f"weft.toggleRow({r})")
    p.eval("weft.setChannel('ovni.thread.state')")

    # zoom down to 1 ns: no narrower, a ruler without NaN
    p.eval(f"weft.setWindow(0, {dur})")
    w = None
    for _ in range(80):
        w = p.eval("weft.zoom(0.5)")
    c.eq(w[1] - w[0], 1, "zoom: the window reaches 1 ns and stays there")
    t = iv[2] + 7
    c.eq(p.eval(f"weft.setWindow({t}, {t} + 0.25)"), [t, t + 1], "zoom: a narrower window is 1 ns")
    ticks = p.eval("weft.ruler()")
    c.expect(len(ticks) >= 1 and not any("NaN" in x or "Infinity" in x for x in ticks),
             f"zoom: the ruler at 1 ns {ticks}")
    c.eq(len(set(ticks)), len(ticks), f"zoom: ruler ticks differ at 1 ns {ticks}")
    win = p.eval("document.getElementById('win').textContent")
    c.expect("NaN" not in win and win.endswith("(1 ns)"), f"zoom: the window's text {win!r}")
    got = sorted(tuple(x) for x in p.eval("weft.visibleIntervals()"))
    want = sorted((r, chn, s, e, v) for r, chn, s, e, v, _ in tab.shown("ovni.thread.state")
                  if s < t + 1 and e > t)
    c.eq(got, want, "zoom: the 1 ns window shows the intervals there")
    c.eq(p.eval("weft.setWindow(NaN, 5)"), [t, t + 1], "zoom: NaN refused")
    c.eq(p.exceptions, [], "features: no JavaScript exception")
    p.close()


def screenshot(browser, tmp, name, trace, chan):
    """A screenshot of the page (Page.captureScreenshot, decoded by png.py):
    every row with intervals in the window has pixels drawn in its band, a
    row without is blank, the middle pixel of every interval at least 4
    pixels wide is its value's colour, and the colours of the panel's bars
    (its legend) are in the picture."""
    tab = Table(trace, tmp)
    out = os.path.join(tmp, name + "-shot.html")
    rc, _, err = weft(["view", "--channel", chan, "-o", out, trace])
    c.eq((rc, err), (0, ""), f"shot {name}: weft view")
    p = fresh(browser, "file://" + out, "shot " + name)
    if p is None:
        return
    p.pump(0.3)
    dur = p.eval("weft.window()")[1]
    lay = p.eval("weft.layout()")
    box = p.eval("(() => { const r = document.getElementById('tl').getBoundingClientRect(); "
                 "return [r.left, r.top, r.width, r.height]; })()")
    shot = p.call("Page.captureScreenshot", format="png",
                  clip={"x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1},
                  captureBeyondViewport=True)
    import base64
    w, h, px = png.decode(base64.b64decode(shot["data"]))
    c.eq((w, h), (lay["width"], box[3]), f"shot {name}: the canvas's size")
    bg = (250, 250, 250)
    L, W = lay["labelWidth"], lay["width"] - lay["labelWidth"]
    ivs = tab.shown(chan)
    rgb = {}

    def css_rgb(chn, v):
        if (chn, v) not in rgb:
            s = p.eval("(() => { const d = document.createElement('div'); d.style.color = "
                       f"weft.colour({json.dumps(chn)}, {v}); document.body.appendChild(d); "
                       "const c = getComputedStyle(d).color; d.remove(); return c; })()")
            rgb[(chn, v)] = tuple(int(x) for x in s[s.index("(") + 1:s.index(")")].split(","))
        return rgb[(chn, v)]

    nrows = drawn = checked = 0
    for r, y, hh in lay["rows"]:
        if r < 0:
            continue
        nrows += 1
        band = [px[yy][L:L + W] for yy in range(y + 2, y + hh - 2)]
        inked = sum(1 for line in band for q in line if q != bg)
        mine = [x for x in ivs if x[0] == r and x[2] < dur and x[3] > 0]
        if mine:
            drawn += 1
            c.expect(inked > 0, f"shot {name}: row {r} drawn")
        else:
            c.eq(inked, 0, f"shot {name}: row {r} without intervals is blank")
        for _, chn, s, e, v, _ in mine:
            x0, x1 = (s / dur) * W, (e / dur) * W
            if x1 - x0 < 4:
                continue
            xm = L + int((x0 + x1) / 2)
            c.eq(px[y + hh // 2][xm], css_rgb(chn, v), f"shot {name}: row {r} at {(s + e) // 2}")
            checked += 1
    c.eq(nrows, tab.nthreads + tab.ncpus, f"shot {name}: every row laid out")
    c.expect(drawn > 0 and checked > 0, f"shot {name}: {drawn} rows, {checked} intervals checked")
    colours = {q for line in px for q in line}
    legend = p.eval("Array.from(document.querySelectorAll('#bars .sw')).map("
                    "function (e) { return getComputedStyle(e).backgroundColor; })")
    c.expect(len(legend) > 1, f"shot {name}: the panel has bars")
    for s in legend:
        q = tuple(int(x) for x in s[s.index("(") + 1:s.index(")")].split(",")[:3])
        c.expect(q in colours, f"shot {name}: the legend's colour {s} in the timeline")
    c.eq(p.exceptions, [], f"shot {name}: no JavaScript exception")
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
        with cdp.Browser(extra_args=(f"--host-resolver-rules=MAP {REBIND} 127.0.0.1",
                                     f"--proxy-bypass-list={REBIND}")) as b:
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
            features(b, tmp, os.path.join(corpus, "models/mix-0/ovni"))
            screenshot(b, tmp, "mix-0", os.path.join(corpus, "models/mix-0/ovni"), "nosv.subsystem")
            screenshot(b, tmp, "multi-thread", os.path.join(corpus, "v3/multi-thread/ovni"),
                       "ovni.thread.state")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
