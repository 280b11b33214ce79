#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_view - `weft view` on a runtime-shaped trace (docs/view.md, "Cost").

Writes with bench_emu -g (same bin directory) a trace of N events (8 threads
on 4 CPUs, nosv and mpi: bench_emu's runtime trace) into a temporary
directory it removes, then prints, in one run:
  - the trace's events and bytes;
  - the best of R runs of `weft emu --paraver -q` and of `weft view -q` (wall
    and CPU time, user + system, and the peak resident memory: wait4's
    ru_maxrss), and `view/emu time: X` (target at most 1.5);
  - the page's size against the budget (--budget, default 64 MiB);
  - headless Chromium (tests/view/cdp.py): the time from navigation to
    data-weft-state="ready" against the time a blank page of the same size
    takes to load, and `ready/blank: X` (target at most 3);
  - `weft view --serve`: the time to the port line (the emulation), the time
    of the first tile (the whole run on 1024 px) and of each zoom step (the
    window halved around its middle down to 1 us: the tiles a 1024 px
    window needs, every channel the page shows first), `first tile: X ms`,
    `zoom step: median X ms, max Y ms` (target at most 100 ms), and the
    server's peak resident memory (it keeps the intervals up to the budget,
    the others in a temporary file), and what that file holds: its
    intervals, bytes and bytes per interval (target at most 8);
  - `weft view --serve` started again on the same trace: the time to its
    port line (the cache the first start kept beside the trace read back,
    no emulation) against the first start's, its first tile, and the
    cache's size;
  - with --cold, the server started again under WEFT_VIEW_EVICT=1 (it drops
    its temporary file's pages from the page cache and empties its own
    cache before each request: every lookup reads from the disk, as when the
    file does not fit in the memory) and its first tile and zoom steps timed
    again, without its read-ahead (WEFT_VIEW_READAHEAD=0: `zoom step, cold,
    no read-ahead: median X ms, max Y ms`) and with it (`zoom step, cold:
    ...`), each with the load average. The warm line's server reads ahead
    unless WEFT_VIEW_READAHEAD=0 is in the environment.
Usage: bench_view [-n EVENTS] [-r RUNS] [--budget SIZE] [--no-emu] [--no-serve] [--cold] [-k]
  (10^8 events by default; --no-emu skips weft emu --paraver, whose .prv
  files take about 83 bytes an event; --no-serve skips the server, whose
  temporary file takes about 3.3 bytes an interval beyond the budget; -k
  keeps the directory)
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.path.dirname(os.path.abspath(__file__))
SRC = "@WEFT_SOURCE_DIR@"
sys.path.insert(0, os.path.join(SRC, "tests", "view"))
sys.dont_write_bytecode = True


def measured(argv, timeout=7200, stdout=subprocess.DEVNULL):
    """(wall s, CPU s: user + system, peak resident KiB) of one run, from
    wait4 (Linux counts in ru_maxrss the resident size of this process at
    the fork too: this script's, about 10 MB, while it is small)."""
    t = time.monotonic()
    p = subprocess.Popen(argv, stdout=stdout)
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    try:
        _, st, ru = os.wait4(p.pid, 0)
    finally:
        timer.cancel()
    wall = time.monotonic() - t
    p.returncode = os.waitstatus_to_exitcode(st)
    if p.returncode != 0:
        raise SystemExit(f"bench_view: {' '.join(argv)}: exit {p.returncode}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def best_of(runs, argv, after=None, stdout=subprocess.DEVNULL):
    """(best wall time, median wall time, least CPU time, largest peak RSS KiB);
    after() runs after each run (removing what it wrote)."""
    times, cpus, rss = [], [], []
    for _ in range(runs):
        w, c, m = measured(argv, stdout=stdout)
        times.append(w)
        cpus.append(c)
        rss.append(m)
        if after is not None:
            after()
    return min(times), statistics.median(times), min(cpus), max(rss)


def mib(kib):
    return f"{kib / 1024:.0f} MiB"


def tree_bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def browser_times(page, size, tmp):
    import cdp
    blank = os.path.join(tmp, "blank.html")
    head = b'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><script type="application/json">'
    tail = b"</script></body></html>"
    with open(blank, "wb") as f:
        f.write(head + b"0" * max(0, size - len(head) - len(tail)) + tail)
    out = {}
    with cdp.Browser(timeout=600) as b:
        for what, path, attr, want in (("blank", blank, None, None),
                                       ("view", page, "data-weft-state", "ready"),
                                       ("blank", blank, None, None),
                                       ("view", page, "data-weft-state", "ready")):
            p = b.page()
            t = time.monotonic()
            p.navigate("file://" + path)
            if attr is None:
                while p.eval("document.readyState") != "complete":
                    time.sleep(0.005)
            else:
                st = p.wait_attr(attr, (want, "error"), timeout=600)
                if st != want:
                    raise SystemExit(f"bench_view: the page did not reach {want}: {st}")
            dt = time.monotonic() - t
            out[what] = min(out.get(what, dt), dt)
            p.close()
    return out["view"], out["blank"]


def page_data(srv):
    """The page's channels shown first, its rows and its duration."""
    st, body = srv.request("GET", "/")
    data = json.loads(body.split(b'type="application/json">')[1].split(b"</script>")[0])
    names = [c["name"] for c in data["chans"]]
    chans = [names.index(n) for n in ("ovni.thread.state", "cpu.running.tid") if n in names]
    return chans, len(data["rows"]), max(1, data["duration"])


def window_time(srv, chans, nrows, dur, t0, t1):
    """The time of the tiles a 1024 px window [t0, t1] needs."""
    px = max(1.0, (t1 - t0) / 1024)
    lv = max(0, int(px).bit_length() - 1)
    span = 1024 << lv
    t = time.monotonic()
    for c in chans:
        i = max(0, int(t0) // span)
        while i * span < min(t1, dur):
            st, _ = srv.request("GET", f"/tile?c={c}&r0=0&r1={nrows - 1}&l={lv}&i={i}")
            if st != 200:
                raise SystemExit(f"bench_view: tile refused: {st}")
            i += 1
    return time.monotonic() - t


def reopen_times(weft, trace, budget):
    """--serve started again on the same trace (its cache kept beside it by
    the first start): the time to its port line, then its first tile."""
    from serve_util import Server
    t = time.monotonic()
    srv = Server(weft, ["--budget", budget, trace], timeout=3600)
    started = time.monotonic() - t
    try:
        chans, nrows, dur = page_data(srv)
        first = window_time(srv, chans, nrows, dur, 0, dur)
    finally:
        srv.stop()
    return started, first


def serve_times(weft, trace, budget, env=None):
    """The server started with env added to the environment: (time to its
    port line, first tile, zoom steps, peak RSS KiB, its file's line)."""
    from serve_util import Server
    t = time.monotonic()
    # WEFT_EMU_TIMING: the server says on stderr what its temporary file holds
    env = dict(env or {}, WEFT_EMU_TIMING="1")
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        srv = Server(weft, ["--budget", budget, trace], timeout=3600)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    started = time.monotonic() - t
    try:
        chans, nrows, dur = page_data(srv)

        def window(t0, t1):
            return window_time(srv, chans, nrows, dur, t0, t1)

        first = window(0, dur)
        steps = []
        t0, t1 = 0.0, float(dur)
        while t1 - t0 > 1000:
            mid = (t0 + t1) / 2
            half = (t1 - t0) / 4
            t0, t1 = mid - half, mid + half
            steps.append(window(t0, t1))
        hwm = 0
        with open(f"/proc/{srv.proc.pid}/status") as f:
            for ln in f:
                if ln.startswith("VmHWM:"):
                    hwm = int(ln.split()[1])
    finally:
        _, err = srv.stop()
    spill = [ln.split("temporary file: ")[1] for ln in err.splitlines()
             if ln.startswith("weft view: temporary file: ")]
    return started, first, steps, hwm, spill[0] if spill else "?"


def main():
    ap = argparse.ArgumentParser(prog="bench_view")
    ap.add_argument("-n", type=int, default=100_000_000, help="events (10^8)")
    ap.add_argument("-r", type=int, default=3, help="runs of each timing (3)")
    ap.add_argument("--budget", default="64MiB")
    ap.add_argument("--no-emu", action="store_true", help="no weft emu --paraver run")
    ap.add_argument("--no-serve", action="store_true", help="no weft view --serve run")
    ap.add_argument("--cold", action="store_true",
                    help="the server's tiles timed again with its file out of the page cache")
    ap.add_argument("-k", action="store_true", help="keep the directory")
    a = ap.parse_args()
    weft = os.path.join(BIN, "weft")
    tmp = tempfile.mkdtemp(prefix="bench-view-")
    try:
        t = time.monotonic()
        gen = subprocess.run([os.path.join(BIN, "bench_emu"), "-g", os.path.join(tmp, "g"), "-n",
                              str(a.n)], check=True, timeout=14400, capture_output=True,
                             text=True).stdout
        shutil.rmtree(os.path.join(tmp, "g", "trace"))
        trace = os.path.join(tmp, "g", "rt-trace")
        page = os.path.join(tmp, "view.html")
        events = [ln.split(": ")[1].split(" ")[0] for ln in gen.splitlines() if "rt-trace:" in ln]
        print(f"trace: {events[0] if events else '?'} events ({a.n} asked; bench_emu's runtime "
              f"trace: 8 threads, 4 CPUs, nosv and mpi), {tree_bytes(trace)} bytes, written in "
              f"{time.monotonic() - t:.0f} s")
        sys.stdout.flush()
        out = os.path.join(tmp, "out")
        with open(os.path.join(tmp, "view.out"), "w+") as vo:
            view_b, view_m, view_c, view_rss = best_of(a.r, [weft, "view", "--budget", a.budget,
                                                       "-o", page, trace], stdout=vo)
            vo.seek(0)
            line = vo.read().splitlines()[-1]
        print(f"weft view: best {view_b:.3f} s, median {view_m:.3f} s, CPU {view_c:.3f} s, "
              f"peak RSS {mib(view_rss)}")
        if not a.no_emu:
            emu_b, emu_m, emu_c, emu_rss = best_of(
                a.r, [weft, "emu", "--paraver", "-q", "-o", out, trace],
                after=lambda: shutil.rmtree(out, ignore_errors=True))
            print(f"weft emu --paraver: best {emu_b:.3f} s, median {emu_m:.3f} s, CPU "
                  f"{emu_c:.3f} s, peak RSS {mib(emu_rss)}")
            print(f"view/emu time: {view_b / emu_b:.2f} (target at most 1.5); CPU time: "
                  f"{view_c / emu_c:.2f}")
        sys.stdout.flush()
        size = os.path.getsize(page)
        print(f"page: {size} bytes, budget {a.budget} ({line.strip()})")
        sys.stdout.flush()
        ready, blank = browser_times(page, size, tmp)
        print(f"chromium: ready in {ready:.3f} s, a blank page of the same size loads in "
              f"{blank:.3f} s: ready/blank: {ready / blank:.2f} (target at most 3)")
        sys.stdout.flush()
        if not a.no_serve:
            started, first, steps, srss, spill = serve_times(weft, trace, a.budget)
            print(f"serve: listening after {started:.3f} s (the emulation); first tile: "
                  f"{first * 1000:.1f} ms; zoom step ({len(steps)} steps to 1 us): median "
                  f"{statistics.median(steps) * 1000:.1f} ms, max {max(steps) * 1000:.1f} ms "
                  f"(target at most 100 ms); peak RSS {mib(srss)}")
            print(f"serve: temporary file: {spill} (target at most 8)")
            sys.stdout.flush()
            cache = os.path.join(trace, "weft-view.cache")
            again, rfirst = reopen_times(weft, trace, a.budget)
            print(f"--serve reopened: port line after {again * 1000:.0f} ms (first open "
                  f"{started:.1f} s); first tile: {rfirst * 1000:.1f} ms; the cache "
                  f"{os.path.getsize(cache) if os.path.exists(cache) else 0} bytes")
        if not a.no_serve and a.cold:
            for what, env in (("cold, no read-ahead", {"WEFT_VIEW_EVICT": "1",
                                                        "WEFT_VIEW_READAHEAD": "0"}),
                              ("cold", {"WEFT_VIEW_EVICT": "1", "WEFT_VIEW_READAHEAD": "1"})):
                _, first, steps, _, _ = serve_times(weft, trace, a.budget, env)
                load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
                print(f"serve: first tile, {what}: {first * 1000:.1f} ms; zoom step, {what}: "
                      f"median {statistics.median(steps) * 1000:.1f} ms, max "
                      f"{max(steps) * 1000:.1f} ms ({len(steps)} steps; load average {load})")
                sys.stdout.flush()
    finally:
        if a.k:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
