#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""view_budget.py - `weft view`'s collection beyond its budget (docs/view.md,
"Level of detail and the budget"): the intervals are kept while their JSON
fits the budget, beyond it the largest tracks' are dropped and their
summary pyramids built as the intervals arrive.

Checked, on bench_emu's runtime trace (300000 events: cycles the engine's
batches; 60000 in a sanitizer's build) and the corpus's nosv-hwc (hardware
counters: min, max, mean):
  - with --budget 1 (every track beyond it) the page holds no interval and
    says it is incomplete, and every track's pyramid, level and interval
    count are those of the page that holds every interval (the pyramids
    built as the intervals arrive equal the ones built from them at the
    end), the line's interval count the same;
  - with a budget between the two pages' sizes, the page is at most the
    budget, some tracks hold their intervals (each exactly the full page's)
    and some do not, every pyramid the full page's;
  - the peak resident memory (wait4's ru_maxrss) of `weft view --budget 1`
    on a trace 4 times larger (1.2 M events) grows by less than a quarter
    of what it grows by with the default budget, which keeps every interval
    of these traces (and grows by more than 20 MB); not in a sanitizer's
    build.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.dont_write_bytecode = True
from wefttest import Checker, conformance_dir, weft_bin  # noqa: E402

c = Checker()
# a sanitizer's build (tests/view/CMakeLists.txt): its resident sizes are the
# sanitizer's, so the memory is not measured, and the trace is smaller
SANITIZED = os.environ.get("WEFT_VIEW_BUDGET_SANITIZED") == "1"


def view(args, timeout=300):
    """(exit status, stdout, stderr) of weft view ARGS."""
    p = subprocess.run([weft_bin(), "view"] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def rss(args, timeout=300):
    """The peak resident memory (KiB, wait4's ru_maxrss) of weft view ARGS."""
    p = subprocess.Popen([weft_bin(), "view", "-q"] + args, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    timer = threading.Timer(timeout, p.kill)
    timer.start()
    try:
        _, st, ru = os.wait4(p.pid, 0)
    finally:
        timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(st)
    c.eq(p.returncode, 0, f"weft view {' '.join(args)}: exit status")
    return ru.ru_maxrss


def page_data(path):
    with open(path, "rb") as f:
        body = f.read()
    return json.loads(body.split(b'type="application/json">')[1].split(b"</script>")[0])


def tracks(data):
    return {(t["r"], t["c"]): (t["n"], t["k"], t["pyr"]) for t in data["tracks"]}


def case(tmp, name, trace):
    full = os.path.join(tmp, f"{name}-full.html")
    rc, so, err = view(["-o", full, trace])
    c.eq((rc, err), (0, ""), f"{name}: the full page")
    dfull = page_data(full)
    c.expect(dfull["complete"] and len(dfull["detail"]) == len(dfull["tracks"]) > 0,
             f"{name}: the full page holds every track's intervals")
    nfull = so.split(" rows, ")[1].split(" ")[0]

    one = os.path.join(tmp, f"{name}-1.html")
    rc, so, err = view(["--budget", "1", "-o", one, trace])
    c.eq((rc, err), (0, ""), f"{name}: --budget 1")
    c.expect("beyond the budget the page holds the summary" in so, f"{name}: the line says so")
    c.eq(so.split(" rows, ")[1].split(" ")[0], nfull, f"{name}: --budget 1: as many intervals")
    d1 = page_data(one)
    c.eq((d1["complete"], d1["detail"]), (False, {}), f"{name}: --budget 1: no interval")
    c.eq(tracks(d1), tracks(dfull), f"{name}: --budget 1: the pyramids of the full page")
    base = os.path.getsize(one)

    mid = os.path.join(tmp, f"{name}-mid.html")
    budget = base + (os.path.getsize(full) - base) // 3
    rc, so, err = view(["--budget", str(budget), "-o", mid, trace])
    c.eq((rc, err), (0, ""), f"{name}: --budget {budget}")
    dm = page_data(mid)
    c.expect(os.path.getsize(mid) <= budget, f"{name}: at most the budget: "
             f"{os.path.getsize(mid)} <= {budget}")
    c.expect(0 < len(dm["detail"]) < len(dm["tracks"]),
             f"{name}: some tracks' intervals ({len(dm['detail'])} of {len(dm['tracks'])})")
    for key, ivs in dm["detail"].items():
        c.eq(ivs, dfull["detail"][key], f"{name}: track {key}: the full page's intervals")
    c.eq(tracks(dm), tracks(dfull), f"{name}: --budget {budget}: the pyramids of the full page")


def memory(tmp):
    gen = os.path.join(os.environ.get("WEFT_BINARY_DIR", ""), "bin", "bench_emu")
    small, large = os.path.join(tmp, "s"), os.path.join(tmp, "l")
    subprocess.run([gen, "-g", small, "-n", "300000"], check=True, stdout=subprocess.DEVNULL,
                   timeout=300)
    subprocess.run([gen, "-g", large, "-n", "1200000"], check=True, stdout=subprocess.DEVNULL,
                   timeout=300)
    out = os.path.join(tmp, "m.html")
    got = {}
    for what, b in (("default", []), ("budget 1", ["--budget", "1"])):
        a = rss(b + ["-o", out, os.path.join(small, "rt-trace")])
        z = rss(b + ["-o", out, os.path.join(large, "rt-trace")])
        got[what] = z - a
        print(f"peak RSS, {what}: {a} KiB at 300000 events, {z} KiB at 1200000")
    c.expect(got["default"] > 20000,
             f"every interval kept: the peak grows with the trace ({got['default']} KiB)")
    c.expect(got["budget 1"] < got["default"] / 4,
             f"--budget 1: the peak grows by {got['budget 1']} KiB, every interval kept by "
             f"{got['default']} KiB")
    shutil.rmtree(small)
    shutil.rmtree(large)


def main():
    corpus = conformance_dir()
    gen = os.path.join(os.environ.get("WEFT_BINARY_DIR", ""), "bin", "bench_emu")
    c.expect(os.path.exists(gen), "bench_emu built")
    if not os.path.exists(gen):
        c.done()
    tmp = tempfile.mkdtemp(prefix="weft-view-budget-")
    try:
        # first, while this process is small: Linux counts in a child's
        # ru_maxrss the resident size of its parent at the fork
        if not SANITIZED:
            memory(tmp)
        subprocess.run([gen, "-g", os.path.join(tmp, "g"), "-n",
                        "60000" if SANITIZED else "300000"], check=True,
                       stdout=subprocess.DEVNULL, timeout=300)
        case(tmp, "runtime", os.path.join(tmp, "g", "rt-trace"))
        case(tmp, "nosv-hwc", os.path.join(corpus, "models/nosv-hwc/ovni"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
