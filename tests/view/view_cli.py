#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""view_cli.py - `weft view`'s command line and `--serve`'s HTTP API, with no
browser (a synthetic trace written by the test: no corpus needed).

Checked: the usage errors' exact messages and exit 2 (--bind other than the
loopback refused, a bad --port, --serve with -o, --size without a picture,
--channel misspelt with its suggestion); the page written aside and
renamed (no temporary left; a symbolic link at -o refused, exit 1, nothing
written); the server: listening on 127.0.0.1 only (/proc/net/tcp), GET /
the page, GET /tile and /at the intervals of weft sql's table, any other
path (../, /etc/passwd, /tile/x) 404, any method but GET 405, bad
parameters 400, and SIGINT ends it with exit 0; with --budget 1 its port
line counts every track with intervals as read from its temporary file
(the tiles then read from there), with the default budget none. The
temporary file at the edges of its encoding (a trace of mark values near
2^63 and -2^63, intervals of 2^50 ns, gaps, events at equal clocks, three
chunks a track): /at about every sub-block's and chunk's boundary and the
tiles give weft sql's intervals, WEFT_EMU_TIMING's line counts them and
gives the file's size, the file cut short answers 500, a write that fails
(RLIMIT_FSIZE) ends the run with its message (at the end and, on the
runtime trace, during the run); on the runtime trace the file takes at
most 8 bytes an interval. Those servers, and one of a burst of short
intervals in a long run (tiles sampled finer than the samples' spacing,
their buckets looked up in the chunks), are run three times: with the
read-ahead, under WEFT_VIEW_EVICT=1 and with WEFT_VIEW_READAHEAD=0, each
with the same checks, the three replies equal byte for byte, and the
read-ahead's WEFT_EMU_TIMING line saying that it asked for every chunk the
tiles read. The collection's thread
gives the page it gives inline, on a trace that cycles the engine's batches;
on that trace, a tile of the whole run holds, for rows of more than 4096
intervals, the interval at each of its 1024 buckets' start, and a tile at
level 0 exactly the table's intervals. A trace with events of a model that
no stream requires: refused without -a with the emulator's message (once
prefixed; the run in file order given up and the sorted run collecting
afresh, not "one collection per run"), and with -a its page holds the
rows and intervals of `weft sql -a`'s table.
"""
import bisect
import json
import os
import re
import resource
import sqlite3
import struct
import subprocess
import sys
import tempfile
import shutil
import signal

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.dont_write_bytecode = True
from serve_util import Server, tile_decode, tile_intervals  # noqa: E402
from tracegen import ev, meta, thread_rel, write_stream  # noqa: E402
from wefttest import Checker, weft_bin  # noqa: E402

c = Checker()


def weft(args, timeout=120):
    p = subprocess.run([weft_bin()] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def trace(root):
    for tid, cpu in ((1, 0), (2, 1)):
        write_stream(root, thread_rel("vm", 1, tid), meta(tid, 1, cpus=((0, 0), (1, 1))), [
            ev("OHx", 1000 + tid, struct.pack("<iiQ", cpu, -1, 0)),
            ev("OHp", 1200 + tid), ev("OHr", 1400 + tid), ev("OHe", 2000 + tid)])
    return root


def usage(tmp, t):
    cases = [
        (["--serve", "--bind", "0.0.0.0", t],
         "weft view: --bind '0.0.0.0' refused: the server listens on the loopback only "
         "(127.0.0.1)\n"),
        (["--serve", "--port", "70000", t],
         "weft view: --port '70000' is not a port number (0 to 65535); run `weft view --help`\n"),
        (["--serve", "-o", "x.html", t],
         "weft view: --serve serves the page instead of writing it: give either --serve or -o; "
         "run `weft view --help`\n"),
        (["--size", "10x10", t],
         "weft view: --size is the size of a picture: give it with --png, --svg or --pdf; run "
         "`weft view --help`\n"),
        (["--port", "8000", t],
         "weft view: --port and --bind are options of --serve; run `weft view --help`\n"),
        (["--png", "a.png", "--size", "10y10", t],
         "weft view: --size '10y10' is not a size: give WIDTHxHEIGHT in pixels (e.g. "
         "1600x900)\n"),
        ([t, t], "weft view: expected one TRACE; run `weft view --help`\n"),
        (["--from", "1us", "--to", "5", t],
         "weft view: --from '1us' and --to '5' are of different kinds: give both as clocks "
         "(nanoseconds, no unit) or both with a unit (after the trace's first event)\n"),
        (["--channel", "ovni.thread.stat", "-o", os.path.join(tmp, "c.html"), t],
         "weft view: --channel 'ovni.thread.stat' is not a channel of this trace (did you mean "
         "'ovni.thread.state'?); `weft sql TRACE \"SELECT name FROM channel\"` lists them\n"),
    ]
    for args, want in cases:
        c.eq(weft(["view", *args]), (2, "", want), f"weft view {' '.join(args)}")
    c.expect(not os.path.exists(os.path.join(tmp, "c.html")), "a bad --channel writes nothing")


def writing(tmp, t):
    out = os.path.join(tmp, "out", "v.html")
    os.mkdir(os.path.dirname(out))
    rc, so, err = weft(["view", "-o", out, t])
    c.eq((rc, err), (0, ""), "weft view -o")
    size = os.path.getsize(out)
    c.expect(so.startswith(f"{out}: 5 rows, "), f"the line names the page and its rows: {so!r}")
    c.eq(os.listdir(os.path.dirname(out)), ["v.html"], "no temporary left")
    c.expect(size > 1000, "the page has a size")
    rc, so, err = weft(["view", "-q", "-o", out, t])
    c.eq((rc, so, err), (0, "", ""), "-q: no line")
    link = os.path.join(tmp, "out", "link.html")
    os.symlink(out, link)
    rc, so, err = weft(["view", "-o", link, t])
    c.eq(rc, 1, "-o a symbolic link: exit 1")
    c.expect(err.startswith(f"weft view: {link}: is a symbolic link"), f"its message: {err!r}")
    c.eq(sorted(os.listdir(os.path.dirname(out))), ["link.html", "v.html"], "nothing else written")
    c.eq(os.path.getsize(out), size, "the link's target untouched")


def all_models(tmp):
    t = os.path.join(tmp, "mpi")
    write_stream(t, thread_rel("vm", 1, 1), meta(1, 1), [
        ev("OHx", 100, struct.pack("<iiQ", 0, -1, 0)), ev("MUi", 122), ev("MUI", 125),
        ev("OHe", 130)])
    out = os.path.join(tmp, "mpi.html")
    c.eq(weft(["view", "-o", out, t]), (
        1, "", "weft view: loom.vm/proc.1/thread.1: event MUi at clock 122 (offset 36): the mpi "
        "model is not enabled (no stream requires it; -a enables every model)\n"),
        "an event of a model not enabled: the emulator's message, once prefixed")
    c.expect(not os.path.exists(out), "refused: no page")
    db = os.path.join(tmp, "mpi.sqlite")
    rc, _, err = weft(["sql", "-a", "-o", db, t])
    c.eq((rc, err), (0, ""), "weft sql -a")
    con = sqlite3.connect(db)
    nrows = con.execute("SELECT (SELECT count(*) FROM thread) + (SELECT count(*) FROM cpu)"
                        ).fetchone()[0]
    nint = con.execute("SELECT count(*) FROM interval").fetchone()[0]
    con.close()
    c.expect(nint > 0, f"the table has intervals ({nint})")
    rc, so, err = weft(["view", "-a", "-o", out, t])
    c.eq((rc, err), (0, ""), "weft view -a: exit 0")
    c.expect(so.startswith(f"{out}: {nrows} rows, {nint} intervals, "),
             f"weft view -a: the table's rows ({nrows}) and intervals ({nint}): {so!r}")
    with open(out, encoding="utf-8") as f:
        page = f.read()
    c.expect("mpi.function" in page, "the page has the mpi model's channel")


def listening_addrs(port):
    addrs = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                for line in f.readlines()[1:]:
                    parts = line.split()
                    local, state = parts[1], parts[3]
                    a, p = local.split(":")
                    if int(p, 16) == port and state == "0A":
                        addrs.append(a)
        except OSError:
            pass
    return addrs


def serving(tmp, t):
    db = os.path.join(tmp, "t.db")
    rc, _, err = weft(["sql", "-o", db, t])
    con = sqlite3.connect(db)
    ivs = con.execute("SELECT i.row, c.id, i.start, i.end, i.value FROM interval i JOIN channel c "
                      "ON c.id = i.channel WHERE i.view = 'thread' AND c.name = "
                      "'ovni.thread.state' ORDER BY i.row, i.start").fetchall()
    names = [n for (n,) in con.execute("SELECT name FROM channel ORDER BY id")]
    ntracks = con.execute("SELECT count(*) FROM (SELECT DISTINCT view, row, channel FROM "
                          "interval)").fetchone()[0]
    con.close()
    srv = Server(weft_bin(), ["--no-cache", "--budget", "1", t])
    try:
        # --budget 1: every track's intervals beyond it, served from the file
        c.eq(srv.line, f"weft view: serving {t} at http://127.0.0.1:{srv.port}/ (Ctrl-C to "
             f"stop; {ntracks} tracks beyond the budget, read from a temporary file)\n",
             "the port line: every track with intervals read from the temporary file")
        c.eq(listening_addrs(srv.port), ["0100007F"], "listens on 127.0.0.1 only")
        st, body = srv.request("GET", "/")
        c.expect(st == 200 and body.startswith(b"<!DOCTYPE html>") and b'"serve":true' in body,
                 f"GET /: the page ({st})")
        st, body = srv.request("GET", "/index.html")
        c.eq(st, 200, "GET /index.html")
        # the page's channel index of ovni.thread.state
        data = json.loads(body.split(b'type="application/json">')[1].split(b"</script>")[0])
        ch = [x["name"] for x in data["chans"]].index("ovni.thread.state")
        c.expect(set(x["name"] for x in data["chans"]) <= set(names), "the page's channels")
        st, body = srv.request("GET", f"/tile?c={ch}&r0=0&r1=1&l=0&i=0")
        c.eq(st, 200, "GET /tile")
        got = tile_intervals(body)
        c.eq(got, [(r, s, e, v) for r, _, s, e, v in ivs], "the tile: weft sql's intervals")
        r, _, s, e, v = ivs[1]
        c.eq(srv.request("GET", f"/at?c={ch}&r={r}&t={s}"),
             (200, json.dumps({"iv": [s, e, v]}, separators=(",", ":")).encode()), "GET /at")
        c.eq(srv.request("GET", f"/at?c={ch}&r=0&t=99999999"), (200, b'{"iv":null}'),
             "GET /at after the end")
        for path in ("/../../etc/passwd", "/etc/passwd", "/tile/x", "/%2e%2e/", "//", "/ti"):
            c.eq(srv.request("GET", path)[0], 404, f"GET {path}: 404")
        for q in ("c=999&r0=0&r1=0&l=0&i=0", "c=0&r0=1&r1=0&l=0&i=0", "c=0&r0=0&r1=99&l=0&i=0",
                  "c=0&r0=0&r1=0&l=-1&i=0", "c=0&r0=0&r1=0&l=0&i=-1", "c=x", ""):
            c.eq(srv.request("GET", "/tile?" + q)[0], 400, f"GET /tile?{q}: 400")
        for m in ("POST", "PUT", "DELETE", "HEAD", "OPTIONS"):
            c.eq(srv.request(m, "/", body=b"x" if m in ("POST", "PUT") else None)[0], 405,
                 f"{m} /: 405")
    finally:
        rc, err = srv.stop()
    c.eq((rc, err), (0, ""), "SIGINT: exit 0")
    bad = os.path.join(tmp, "no-such-dir")
    p = subprocess.run([weft_bin(), "view", "--serve", "--no-cache", t], capture_output=True,
                       text=True, timeout=60, env=dict(os.environ, TMPDIR=bad))
    c.eq((p.returncode, p.stdout, p.stderr), (
        1, "", f"weft view: {bad}: cannot create the temporary file of the intervals beyond the "
        "budget: No such file or directory\n"), "--serve: $TMPDIR missing: exit 1, its message")
    srv = Server(weft_bin(), ["--no-cache", t])
    try:
        c.expect(srv.line.endswith("(Ctrl-C to stop; 0 tracks beyond the budget, read from a "
                                   "temporary file)\n"), f"the default budget: {srv.line!r}")
        st, body = srv.request("GET", f"/tile?c={ch}&r0=0&r1=1&l=0&i=0")
        c.eq((st, body_ivs(body)), (200, [(r, s, e, v) for r, _, s, e, v in ivs]),
             "the default budget: the tile from memory, weft sql's intervals")
    finally:
        rc, err = srv.stop()
    c.eq((rc, err), (0, ""), "the default budget: SIGINT: exit 0")


def body_ivs(body):
    got = []
    for r, sampled, flat in json.loads(body)["rows"]:
        got.extend((r, s, e, v) for s, e, v in tile_decode(flat))
    return got


def threaded(tmp):
    """The collection on its thread (batches queued while the emulation goes
    on) and inline (WEFT_VIEW_THREAD=off) give the same page, on a trace
    large enough to cycle the engine's batches (bench_emu's runtime trace),
    and as many intervals as weft sql's table."""
    gen = os.path.join(os.environ.get("WEFT_BINARY_DIR", ""), "bin", "bench_emu")
    c.expect(os.path.exists(gen), "bench_emu built")
    if not os.path.exists(gen):
        return
    subprocess.run([gen, "-g", os.path.join(tmp, "g"), "-n", "300000"], check=True,
                   stdout=subprocess.DEVNULL, timeout=300)
    t = os.path.join(tmp, "g", "rt-trace")
    pages = []
    for env in ("on", "off"):
        out = os.path.join(tmp, f"thr-{env}.html")
        p = subprocess.run([weft_bin(), "view", "-o", out, t], capture_output=True, text=True,
                           timeout=300, env=dict(os.environ, WEFT_VIEW_THREAD=env))
        c.eq((p.returncode, p.stderr), (0, ""), f"WEFT_VIEW_THREAD={env}")
        with open(out, "rb") as f:
            pages.append((f.read(), p.stdout.split(" rows, ")[1].split(" ")[0]))
    c.expect(pages[0][0] == pages[1][0], "the same page with and without the thread")
    rc, so, err = weft(["sql", "--csv", t, "SELECT count(*) FROM interval"])
    c.eq(pages[0][1], so.splitlines()[-1], "as many intervals as weft sql's table")
    sampled_tiles(tmp, t)


# The server's three ways of reading its temporary file, whose answers must
# be the same byte for byte: with its read-ahead (the default), with every
# request's lookups read from the disk (WEFT_VIEW_EVICT=1: its cache and the
# file's pages dropped before each), and without its read-ahead.
MODES = (("read-ahead", {}), ("evicted", {"WEFT_VIEW_EVICT": "1"}),
         ("no read-ahead", {"WEFT_VIEW_READAHEAD": "0"}))


def want_tile(ivs, ends, r0, r1, lv, i):
    """The rows of /tile?r0&r1&l=lv&i (ivs: per row its intervals, ends their
    ends) as (row, sampled, intervals): every interval ending after the
    tile's start and starting before its end, or, over 4096 of them, the
    interval at each of the 1024 buckets' start (once each)."""
    w = 1 << lv
    t0, t1 = i * 1024 * w, (i + 1) * 1024 * w
    out = []
    for r in range(r0, r1 + 1):
        want, e = ivs.get(r, []), ends.get(r, [])
        a, b = bisect.bisect_right(e, t0), bisect.bisect_right(e, t1)
        if b < len(want) and want[b][0] < t1:
            b += 1
        if b - a <= 4096:
            out.append((r, 0, want[a:b]))
            continue
        pick = []
        for k in range(1024):
            b0 = t0 + k * w
            x = bisect.bisect_right(e, b0)
            if x < len(want) and want[x][0] < b0 + w and (not pick or pick[-1] != want[x]):
                pick.append(want[x])
        out.append((r, 1, pick))
    return out


def got_tile(body):
    return [(r, sampled, tile_decode(flat)) for r, sampled, flat in json.loads(body)["rows"]]


def same_replies(replies, what):
    """Each mode's replies (MODES' names: [reply]) equal the first mode's, byte
    for byte."""
    first, base = next(iter(replies.items()))
    for name, got in replies.items():
        diff = [k for k in range(min(len(got), len(base))) if got[k] != base[k]]
        c.eq((len(got), diff[:3]), (len(base), []),
             f"{what}: the replies {name} are those {first}, byte for byte ({len(base)})")


def thread_intervals(con, channel):
    """The thread rows' intervals of a channel in weft sql's table, by row:
    {row: [(start, end, value), ...]} in time order."""
    ivs = {}
    for r, s, e, v in con.execute("SELECT i.row, i.start, i.end, i.value FROM interval i JOIN "
                                  "channel c ON c.id = i.channel WHERE i.view = 'thread' AND "
                                  "c.name = ? ORDER BY i.row, i.start", (channel,)):
        ivs.setdefault(r, []).append((s, e, v))
    return ivs


def sampled_tiles(tmp, t):
    """A tile of the whole run, whose rows hold more than 4096 intervals:
    per row at most one interval per bucket (1024), each one of weft sql's,
    the one at the bucket's start; a tile at level 0: exactly the table's;
    tiles at finer levels than the samples' spacing, where the buckets'
    intervals are looked up in the file's chunks; in each of MODES, with
    the same replies byte for byte, the read-ahead asking for every chunk
    the tiles read."""
    db = os.path.join(tmp, "big.db")
    weft(["sql", "-o", db, t])
    con = sqlite3.connect(db)
    ivs = thread_intervals(con, "ovni.thread.state")
    dur = max(e for r in ivs.values() for _, e, _ in r)
    ntracks = con.execute("SELECT count(*) FROM (SELECT DISTINCT view, row, channel FROM "
                          "interval)").fetchone()[0]
    nall = con.execute("SELECT count(*) FROM interval").fetchone()[0]
    con.close()
    ends = {r: [e for _, e, _ in x] for r, x in ivs.items()}
    replies = {}
    for name, env in MODES:
        replies[name] = sampled_serve(t, ivs, ends, dur, ntracks, nall, name, env)
    same_replies(replies, "the runtime trace")
    write_fails(t, "the runtime trace (a write during the run)")


def sampled_serve(t, ivs, ends, dur, ntracks, nall, mode, env):
    """sampled_tiles' checks of one server (MODES: mode, env); its replies."""
    out = []

    def get(path):
        st, body = srv.request("GET", path)
        out.append((st, body))
        return st, body
    srv = server_with(["--budget", "1", t], WEFT_EMU_TIMING="1", **env)
    try:
        c.expect(srv.line.endswith(f"; {ntracks} tracks beyond the budget, read from a "
                                   "temporary file)\n"),
                 f"{mode}: the big trace: its {ntracks} tracks read from the file: {srv.line!r}")
        st, body = srv.request("GET", "/")
        data = json.loads(body.split(b'type="application/json">')[1].split(b"</script>")[0])
        ch = [x["name"] for x in data["chans"]].index("ovni.thread.state")
        lv = max(0, (dur - 1).bit_length() - 10)
        st, body = get(f"/tile?c={ch}&r0=0&r1={len(ivs) - 1}&l={lv}&i=0")
        c.eq(st, 200, f"{mode}: the tile of the whole run")
        nsampled = 0
        for r, sampled, flat in json.loads(body)["rows"]:
            got = tile_decode(flat)
            want = ivs.get(r, [])
            c.eq(sampled, int(len(want) > 4096), f"{mode}: row {r}: sampled when over 4096 "
                 "intervals")
            nsampled += sampled
            if sampled:
                c.expect(len(got) <= 1024, f"{mode}: row {r}: at most one interval per bucket")
                pick, ends_r = [], ends[r]
                for k in range(1024):
                    b0 = k << lv
                    i = bisect.bisect_right(ends_r, b0)
                    x = want[i] if i < len(want) else None
                    if x is not None and x[0] < b0 + (1 << lv) and (not pick or pick[-1] != x):
                        pick.append(x)
                c.eq(got, pick, f"{mode}: row {r}: the interval at each bucket's start")
            else:
                c.eq(got, want, f"{mode}: row {r}: every interval")
        c.expect(nsampled > 0, f"{mode}: some rows sampled")
        st, body = get(f"/tile?c={ch}&r0=0&r1={len(ivs) - 1}&l=0&i=7")
        for r, sampled, flat in json.loads(body)["rows"]:
            c.eq((sampled, tile_decode(flat)),
                 (0, [iv for iv in ivs.get(r, []) if iv[0] < 8 * 1024 and iv[1] > 7 * 1024]),
                 f"{mode}: row {r}: the tile [7168, 8192) at level 0, exactly")
        # the levels under the whole run's, about the largest row's middle
        big = max(ivs, key=lambda r: len(ivs[r]))
        mid = ivs[big][len(ivs[big]) // 2][0]
        for lf in range(lv - 1, -1, -1):
            i = mid // (1024 << lf)
            st, body = get(f"/tile?c={ch}&r0=0&r1={len(ivs) - 1}&l={lf}&i={i}")
            c.eq((st, got_tile(body) if st == 200 else body),
                 (200, want_tile(ivs, ends, 0, len(ivs) - 1, lf, i)),
                 f"{mode}: the tile at level {lf} about row {big}'s middle")
        # across the file's chunks (1024 intervals): tiles at level 0 and
        # the interval at a time, about the largest row's 1024th and 5000th
        for n in (1023, 1024, 5000):
            s0, e0, v0 = ivs[big][n]
            k = s0 // 1024
            st, body = get(f"/tile?c={ch}&r0={big}&r1={big}&l=0&i={k}")
            c.eq(body_ivs(body), [(big, s, e, v) for s, e, v in ivs[big]
                                  if s < (k + 1) * 1024 and e > k * 1024],
                 f"{mode}: row {big}: the tile at level 0 about its interval {n}, exactly")
            c.eq(get(f"/at?c={ch}&r={big}&t={(s0 + e0) // 2}"),
                 (200, json.dumps({"iv": [s0, e0, v0]}, separators=(",", ":")).encode()),
                 f"{mode}: row {big}: /at inside its interval {n}")
    finally:
        rc, err = srv.stop()
    c.eq(rc, 0, f"{mode}: SIGINT: exit 0")
    nint, nbytes, _ = file_line(err)
    c.eq(nint, nall, f"{mode}: the file's line: every interval of the trace (--budget 1)")
    c.expect(0 < nbytes <= 8 * nint, f"{mode}: the file: at most 8 bytes an interval ({nbytes} "
             f"bytes, {nint} intervals)")
    read_ahead_line(err, mode)
    return out


def read_ahead_line(err, mode):
    """WEFT_EMU_TIMING's line of the read-ahead: the tiles read the file, and
    every read was of bytes asked for ahead (none without the read-ahead)."""
    m = [re.fullmatch(r"weft view: read-ahead: (\d+) reads of the temporary file in tiles, "
                      r"(\d+) outside the ranges read ahead\n", ln)
         for ln in err.splitlines(keepends=True) if ln.startswith("weft view: read-ahead: ")]
    c.expect(len(m) == 1 and m[0] is not None, f"{mode}: one line of the read-ahead: {err!r}")
    if len(m) != 1 or m[0] is None:
        return
    reads, unasked = int(m[0].group(1)), int(m[0].group(2))
    c.expect(reads > 0, f"{mode}: the tiles read the file ({reads})")
    c.eq(unasked, reads if mode == "no read-ahead" else 0,
         f"{mode}: the reads outside the ranges read ahead (of {reads})")


def server_with(args, **env):
    """A server started with env added to the environment."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return Server(weft_bin(), ["--no-cache"] + args)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def spill_fd(srv, tmp):
    """The path in /proc of the server's temporary file (unlinked, in tmp)."""
    d = f"/proc/{srv.proc.pid}/fd"
    for n in os.listdir(d):
        try:
            target = os.readlink(os.path.join(d, n))
        except OSError:
            continue
        if target.startswith(os.path.join(tmp, "weft-view-")) and target.endswith(" (deleted)"):
            return os.path.join(d, n)
    return None


def file_line(err):
    """WEFT_EMU_TIMING's line of the temporary file: (intervals, bytes, the
    line), the other lines of err the emulator's."""
    lines = err.splitlines(keepends=True)
    mine = [ln for ln in lines if ln.startswith("weft view: temporary file: ")]
    c.eq([ln for ln in lines if ln not in mine and not ln.startswith("weft emu: ")
          and not ln.startswith("weft view: read-ahead: ")], [],
         "stderr: the emulator's timing lines, the file's and the read-ahead's")
    c.eq(len(mine), 1, f"one line of the temporary file: {err!r}")
    m = re.fullmatch(r"weft view: temporary file: (\d+) intervals in (\d+) bytes "
                     r"\((\d+\.\d\d) bytes an interval\)\n", mine[0] if mine else "")
    if m is None:
        c.expect(False, f"the line of the temporary file: {mine!r}")
        return 0, 0, ""
    return int(m.group(1)), int(m.group(2)), mine[0]


def write_fails(t, what):
    """--serve whose temporary file cannot grow past 4 KiB (RLIMIT_FSIZE,
    SIGXFSZ ignored: the write fails with EFBIG): exit 1, the message."""
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    p = subprocess.run([weft_bin(), "view", "--serve", "--no-cache", "--budget", "1", t],
                       capture_output=True, text=True, timeout=300, preexec_fn=limit)
    c.eq((p.returncode, p.stdout, p.stderr), (
        1, "", "weft view: cannot write the temporary file of the intervals beyond the budget: "
        "File too large\n"), f"{what}: a failed write of the temporary file: exit 1, its message")


def marks_trace(root):
    """One thread on one CPU: mark 1 (single) set 4400 times to values near
    2^63 and -2^63 (changes near 2^64), some at the clock of the one before
    (an empty interval, dropped, between equal values: merged), some 2^50 ns
    after it; mark 2 (a stack) pushed twice and popped twice in turn (a gap
    after each second pop), at the same clocks."""
    m = meta(1, 1, cpus=((0, 0),), mark={"1": {"title": "Big", "chan_type": "single"},
                                         "2": {"title": "Stack", "chan_type": "stack"}})
    evs = [ev("OHx", 1000, struct.pack("<iiQ", 0, -1, 0))]
    clock = 1000
    big = (2**63 - 1, -2**63, 2**63 - 2, 1, -1, -2**63 + 1, 2**62 + 12345, 7)
    stack = []
    for i in range(4400):
        clock += 2**50 - i if i % 613 == 5 else (1, 3, 0, 1000, 17)[i % 5]
        v = big[i % len(big)] if i % 7 else (i * 0x9E3779B97F4A7C15) % 2**64 - 2**63 or 5
        evs.append(ev("OM=", clock, struct.pack("<qi", v, 1)))
        if i % 4 < 2:
            stack.append(2**63 - 1 - i if i % 8 < 4 else -2**63 + i)
            evs.append(ev("OM[", clock, struct.pack("<qi", stack[-1], 2)))
        else:
            evs.append(ev("OM]", clock, struct.pack("<qi", stack.pop(), 2)))
    evs.append(ev("OHe", clock + 5))
    write_stream(root, thread_rel("vm", 1, 1), m, evs)
    return root


def spill_edges(tmp):
    """The temporary file at the edges of its encoding: every track of a
    trace of large values, long intervals, gaps and equal clocks served from
    it (--budget 1): /at at the first and last nanosecond of the intervals
    about every 32-interval sub-block's and 1024-interval chunk's boundary,
    the tile of the whole run (every interval: under 4096 a row) and tiles
    at level 0 about the chunks' boundaries give weft sql's intervals; the
    file's line under WEFT_EMU_TIMING counts them all and says its size;
    the file cut short, a lookup that reads it answers 500 and the server
    goes on; a write that fails ends the run with its message."""
    t = marks_trace(os.path.join(tmp, "marks"))
    db = os.path.join(tmp, "marks.db")
    rc, _, err = weft(["sql", "-o", db, t])
    c.eq((rc, err), (0, ""), "weft sql of the marks' trace")
    con = sqlite3.connect(db)
    nthreads = con.execute("SELECT count(*) FROM thread").fetchone()[0]
    ivs = {}
    for name, view, row, s, e, v in con.execute(
            "SELECT c.name, i.view, i.row, i.start, i.end, i.value FROM interval i JOIN channel "
            "c ON c.id = i.channel ORDER BY c.name, i.view, i.row, i.start"):
        ivs.setdefault((name, row if view == "thread" else nthreads + row), []).append((s, e, v))
    con.close()
    total = sum(len(x) for x in ivs.values())
    for name in ("ovni.mark.1", "ovni.mark.2"):
        n = len(ivs.get((name, 0), []))
        c.expect(2048 < n <= 4096, f"{name}: three chunks, under 4096 intervals ({n})")
        vals = [v for _, _, v in ivs.get((name, 0), [])]
        c.expect(max(vals, default=0) > 2**62 and min(vals, default=0) < -2**62,
                 f"{name}: values near 2^63 and -2^63")
    c.expect(any(e - s > 2**49 for s, e, _ in ivs[("ovni.mark.1", 0)]), "intervals over 2^49 ns")
    c.expect(any(ivs[("ovni.mark.2", 0)][k][0] > ivs[("ovni.mark.2", 0)][k - 1][1]
                 for k in range(1, len(ivs[("ovni.mark.2", 0)]))), "gaps in mark 2")
    replies = {}
    for name, env in MODES:
        replies[name] = spill_serve(tmp, t, ivs, total, name, env)
    same_replies(replies, "the marks' trace")
    write_fails(t, "the marks' trace")


def spill_serve(tmp, t, ivs, total, mode, env):
    """spill_edges' checks of one server (MODES: mode, env); its replies."""
    out = []

    def get(path):
        st, body = srv.request("GET", path)
        out.append((st, body))
        return st, body
    srv = server_with(["--budget", "1", t], WEFT_EMU_TIMING="1", TMPDIR=tmp, **env)
    try:
        st, body = srv.request("GET", "/")
        data = json.loads(body.split(b'type="application/json">')[1].split(b"</script>")[0])
        chans = [x["name"] for x in data["chans"]]
        nrows, dur = len(data["rows"]), data["duration"]
        path = spill_fd(srv, tmp)
        c.expect(path is not None, f"{mode}: the server's temporary file, unlinked, in $TMPDIR")
        size = os.stat(path).st_size if path else -1
        for name in ("ovni.mark.1", "ovni.mark.2"):
            ch = chans.index(name)
            for r in range(nrows):
                want = ivs.get((name, r), [])
                picks = sorted({k for k in range(len(want)) if k % 32 in (0, 1, 31)}
                               | set(range(max(0, len(want) - 2), len(want))))
                got, exp = [], []
                for k in picks:
                    s, e, v = want[k]
                    for x in (s, e - 1):
                        exp.append((200, json.dumps({"iv": [s, e, v]},
                                                    separators=(",", ":")).encode()))
                        got.append(get(f"/at?c={ch}&r={r}&t={x}"))
                c.eq(got, exp, f"{mode}: {name}, row {r}: /at at the first and last ns of the "
                     f"intervals about the sub-blocks' and chunks' boundaries ({len(picks)})")
            lv = max(0, (dur - 1).bit_length() - 10)
            st, body = get(f"/tile?c={ch}&r0=0&r1={nrows - 1}&l={lv}&i=0")
            rows = json.loads(body)["rows"] if st == 200 else []
            c.eq((st, [(r, sampled, tile_decode(flat)) for r, sampled, flat in rows]),
                 (200, [(r, 0, ivs.get((name, r), [])) for r in range(nrows)]),
                 f"{mode}: {name}: the tile of the whole run, every interval exactly")
            want = ivs[(name, 0)]
            for n in (1023, 1024, 2047, 2048):
                s0, e0, _ = want[n]
                k = s0 // 1024
                st, body = get(f"/tile?c={ch}&r0=0&r1=0&l=0&i={k}")
                exp = [(0, s, e, v) for s, e, v in want if s < (k + 1) * 1024 and e > k * 1024]
                c.eq((st, body_ivs(body) if st == 200 else body), (200, exp),
                     f"{mode}: {name}: the tile at level 0 about interval {n}, exactly")
        # the file cut short: the lookups that read it fail (a track of one
        # interval, at a time no sample holds, neither cached nor read last)
        if path is not None:
            with open(path, "r+b") as f:
                os.ftruncate(f.fileno(), 0)
        ch = chans.index("ovni.thread.state")
        for _ in range(2):
            c.eq(get(f"/at?c={ch}&r=0&t=5"),
                 (500, b"cannot read the intervals' temporary file\n"),
                 f"{mode}: the file cut short: /at answers 500")
        c.eq(srv.request("GET", "/")[0], 200, f"{mode}: the server goes on after a 500")
    finally:
        rc, err = srv.stop()
    c.eq(rc, 0, f"{mode}: SIGINT: exit 0")
    nint, nbytes, line = file_line(err)
    c.eq((nint, nbytes), (total, size), f"{mode}: the file's line: every interval of the trace "
         "(--budget 1), the file's size")
    c.eq(line, f"weft view: temporary file: {total} intervals in {size} bytes "
         f"({size / max(1, total):.2f} bytes an interval)\n", f"{mode}: the file's line")
    read_ahead_line(err, mode)
    return out


def burst_trace(root):
    """One thread on one CPU: mark 1 set 20000 times 3 ns apart, each value
    the next of 1 to 5 (20000 intervals of 3 ns), then nothing for 2^32 ns:
    the track's samples are 2^19 ns apart, and its tiles of the burst at
    the levels from 4 to 6 hold over 4096 intervals (sampled) whose
    buckets are looked up in the file's chunks."""
    m = meta(1, 1, cpus=((0, 0),), mark={"1": {"title": "Burst", "chan_type": "single"}})
    evs = [ev("OHx", 1000, struct.pack("<iiQ", 0, -1, 0))]
    for i in range(20000):
        evs.append(ev("OM=", 2000 + 3 * i, struct.pack("<qi", i % 5 + 1, 1)))
    evs.append(ev("OHe", 2000 + 2**32))
    write_stream(root, thread_rel("vm", 1, 1), m, evs)
    return root


def burst_tiles(tmp):
    """Tiles of a burst of short intervals in a long run (burst_trace),
    every track read from the file (--budget 1), at every level from the
    whole run's down to 0 about the burst: weft sql's intervals, or the one
    at each bucket's start where over 4096; rows sampled finer than their
    samples' spacing (buckets looked up in the chunks); in each of MODES,
    the same replies byte for byte, every read asked for ahead."""
    t = burst_trace(os.path.join(tmp, "burst"))
    db = os.path.join(tmp, "burst.db")
    rc, _, err = weft(["sql", "-o", db, t])
    c.eq((rc, err), (0, ""), "weft sql of the burst's trace")
    con = sqlite3.connect(db)
    ivs = thread_intervals(con, "ovni.mark.1")
    con.close()
    c.expect(len(ivs.get(0, [])) > 20000 - 5, f"the burst: {len(ivs.get(0, []))} intervals")
    ends = {r: [e for _, e, _ in x] for r, x in ivs.items()}
    dur = max(x[-1] for x in ends.values())
    sk = next(k for k in range(64) if (8192 << k) >= dur)
    mid = ivs[0][len(ivs[0]) // 2][0]
    replies = {}
    for mode, env in MODES:
        out = []
        srv = server_with(["--budget", "1", t], WEFT_EMU_TIMING="1", **env)
        try:
            st, body = srv.request("GET", "/")
            data = json.loads(body.split(b'type="application/json">')[1]
                              .split(b"</script>")[0])
            ch = [x["name"] for x in data["chans"]].index("ovni.mark.1")
            below = 0
            for lv in range(max(0, (dur - 1).bit_length() - 10), -1, -1):
                i = mid // (1024 << lv)
                st, body = srv.request("GET", f"/tile?c={ch}&r0=0&r1=0&l={lv}&i={i}")
                out.append((st, body))
                want = want_tile(ivs, ends, 0, 0, lv, i)
                c.eq((st, got_tile(body) if st == 200 else body), (200, want),
                     f"{mode}: the burst: the tile at level {lv} about its middle")
                below += want[0][1] if lv < sk else 0
            c.expect(below >= 3, f"{mode}: the burst: tiles sampled finer than the samples' "
                     f"spacing (2^{sk} ns): {below}")
        finally:
            rc, err = srv.stop()
        c.eq(rc, 0, f"{mode}: the burst: SIGINT: exit 0")
        read_ahead_line(err, mode)
        replies[mode] = out
    same_replies(replies, "the burst's trace")


def main():
    tmp = tempfile.mkdtemp(prefix="weft-view-cli-")
    try:
        t = trace(os.path.join(tmp, "ovni"))
        usage(tmp, t)
        writing(tmp, t)
        serving(tmp, t)
        spill_edges(tmp)
        burst_tiles(tmp)
        threaded(tmp)
        all_models(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
