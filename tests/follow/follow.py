# SPDX-License-Identifier: MIT
"""Following a live trace: `weft dump --follow`, `weft top --follow`.

follow.py: followgen (libovni, WEFT_FLUSH_MS=50) writes a trace for 2.5 s
(threads and a process starting later) while three followers read it:
`weft dump --follow` (its output equals the final `weft dump` byte for byte,
lines arrived within a bounded delay of their clock, the first ones while
the program was still running, exit 0 by itself), `weft top --follow` (one
block per refresh separated by a blank line, counts never going down, the
last block equal to the final `weft top`) and a `weft dump --follow` sent
SIGINT after 1 s (exit 0, its output a prefix of the final dump).
follow.py killed: followgen runs until it is killed (SIGKILL) after 1.5 s;
`weft dump --follow --follow-timeout 1s` ends by itself with exit 1, a
message that the trace stopped growing naming the unfinished streams, and
printed every whole event of the killed trace (the final `weft dump`).
Every process is bounded by a timeout and killed in every path.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import Checker, run, weft_bin  # noqa: E402

LIMIT = 60  # seconds any process may take


class Reader:
    """Reads a process's stdout in a thread, each line with its arrival time
    (CLOCK_MONOTONIC ns, the clock of the trace)."""

    def __init__(self, proc):
        self.lines = []
        self.t = threading.Thread(target=self._run, args=(proc.stdout,), daemon=True)
        self.t.start()

    def _run(self, f):
        for line in iter(f.readline, b""):
            self.lines.append((time.monotonic_ns(), line))

    def data(self):
        self.t.join(LIMIT)
        return b"".join(line for _, line in self.lines)


def start(args, env, errfile):
    """Starts args in its own process group, stderr into errfile."""
    with open(errfile, "wb") as err:
        return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=err,
                                start_new_session=True)


def text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def wait(p):
    try:
        p.wait(LIMIT)
    except subprocess.TimeoutExpired:
        return None
    return p.returncode


def kill(procs):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            pass


def top_blocks(data):
    text = data.decode()
    blocks = [b for b in text.split("\n\n") if b.strip() != ""]
    out = []
    for b in blocks:
        counts = {}
        for line in b.strip("\n").split("\n"):
            mcv, n = line.rsplit(None, 1)
            counts[mcv] = int(n)
        out.append((b.strip("\n") + "\n", counts))
    return out


def live(c, tmp, gen, env):
    trace = os.path.join(tmp, "trace")
    weft = weft_bin()
    procs = []
    try:
        g = start([gen, "2500"], env, os.path.join(tmp, "gen.err"))
        procs.append(g)
        f = start([weft, "dump", "--follow", trace], env, os.path.join(tmp, "f.err"))
        procs.append(f)
        t = start([weft, "top", "--follow", trace], env, os.path.join(tmp, "t.err"))
        procs.append(t)
        s = start([weft, "dump", "--follow", trace], env, os.path.join(tmp, "s.err"))
        procs.append(s)
        rf, rt, rs = Reader(f), Reader(t), Reader(s)
        time.sleep(1.0)
        s.send_signal(signal.SIGINT)
        c.eq(wait(s), 0, "dump --follow after SIGINT: exit status")
        c.eq(wait(g), 0, "followgen: exit status")
        gen_end = time.monotonic_ns()
        code_f, code_t = wait(f), wait(t)
        c.eq(code_f, 0, "dump --follow ended by itself: exit status")
        c.eq(code_t, 0, "top --follow ended by itself: exit status")
        follow_out, top_out, sig_out = rf.data(), rt.data(), rs.data()
    finally:
        kill(procs)
    code, full, err = run(["dump", trace])
    c.eq(code, 0, "final dump: exit status")
    nlines = full.count(b"\n")
    c.expect(nlines > 3000, f"final dump: {nlines} events, more than 3000")
    nf = follow_out.count(b"\n")
    c.expect(follow_out == full, f"dump --follow output equals the final dump ({nf} lines against {nlines})")
    ferr = text(os.path.join(tmp, "f.err"))
    c.eq(ferr, "", "dump --follow: nothing on stderr")
    ns = sig_out.count(b"\n")
    c.expect(len(sig_out) > 0 and full.startswith(sig_out),
             f"dump --follow after SIGINT: a prefix of the final dump ({ns} lines)")
    # Each line arrived within a bounded delay of its clock (the clocks are
    # this machine's CLOCK_MONOTONIC): the buffer ages 50 ms, then the
    # other streams' flushes and a 20 ms poll. Loosely: 3 s.
    delays = [(at - int(line.split(None, 1)[0])) / 1e9 for at, line in rf.lines]
    worst = max(delays) if delays else 1e9
    median = sorted(delays)[len(delays) // 2] if delays else 1e9
    c.expect(0 <= min(delays) and worst < 3.0, f"dump --follow: delays between {min(delays):.3f} "
             f"and {worst:.3f} s (at most 3 s)")
    # Without the timed flushes, half the events would wait a second or more.
    c.expect(median < 0.6, f"dump --follow: median delay {median:.3f} s (less than 0.6 s)")
    print(f"dump --follow: {nf} lines, delays {min(delays):.3f} .. {worst:.3f} s, "
          f"median {median:.3f} s; SIGINT follower: {ns} lines")
    first = rf.lines[0][0] if rf.lines else gen_end
    c.expect(first < gen_end - 1e9, "dump --follow: the first lines came at least 1 s before the "
             f"program ended ({(gen_end - first) / 1e9:.2f} s)")
    code, ftop, err = run(["top", trace])
    c.eq(code, 0, "final top: exit status")
    blocks = top_blocks(top_out)
    print(f"top --follow: {len(blocks)} blocks")
    c.expect(len(blocks) >= 2, f"top --follow: {len(blocks)} blocks, at least 2")
    if blocks:
        c.eq(blocks[-1][0].encode(), ftop, "top --follow: the last block is the final top")
        ok = all(blocks[i][1].get(k, 0) >= v for i in range(1, len(blocks))
                 for k, v in blocks[i - 1][1].items())
        c.expect(ok, "top --follow: no count goes down from one block to the next")
        c.expect(top_out.endswith(b"\n") and not top_out.endswith(b"\n\n"),
                 "top --follow: blocks separated by one blank line, none after the last")


def killed(c, tmp, gen, env):
    trace = os.path.join(tmp, "trace")
    procs = []
    try:
        g = start([gen, "2500", "forever"], env, os.path.join(tmp, "gen.err"))
        procs.append(g)
        f = start([weft_bin(), "dump", "--follow", "--follow-timeout", "1s", trace], env,
                  os.path.join(tmp, "f.err"))
        procs.append(f)
        rf = Reader(f)
        time.sleep(1.5)
        os.killpg(g.pid, signal.SIGKILL)
        g.wait(10)
        t0 = time.monotonic()
        code = wait(f)
        took = time.monotonic() - t0
        out = rf.data()
    finally:
        kill(procs)
    err = text(os.path.join(tmp, "f.err"))
    nout = out.count(b"\n")
    print(f"killed: {nout} lines, ended {took:.2f} s after the kill")
    c.eq(code, 1, "dump --follow on a killed program: exit status")
    c.expect(took < 30, f"dump --follow ended {took:.1f} s after the kill (a 1 s timeout)")
    last = err.strip().split("\n")[-1]
    c.expect(last.startswith("weft dump: the trace stopped growing: nothing new for 1 s with ")
             and "unfinished stream" in last and "loom.follow/proc." in last
             and last.endswith("); every whole event read was printed"),
             f"dump --follow: the message names the unfinished streams: {last}")
    code, full, _ = run(["dump", trace])
    c.expect(code in (0, 1), f"final dump of the killed trace: exit status {code}")
    no, nfull = out.count(b"\n"), full.count(b"\n")
    # Every whole event, in the final dump's order; docs/reader.md
    # ("Following a live trace") allows two differences only: events of
    # two streams at one clock (the follower breaks ties by stream, the
    # final read by the merge's heap), and, after its one warning that the
    # order is not exact from there, an event older than one yielded.
    same = out == full
    if not same and len(out) > 0:
        ol, fl = out.split(b"\n"), full.split(b"\n")
        first = next((i for i in range(min(len(ol), len(fl))) if ol[i] != fl[i]), None)
        clocks = [x.split(None, 1)[:1] for x in ol] == [x.split(None, 1)[:1] for x in fl]
        warned = "the order is not exact from here" in err
        same = sorted(ol) == sorted(fl) and (clocks or warned)
        print(f"killed: dump --follow differs from the final dump from line {first} "
              f"({ol[first] if first is not None else b''!r} against "
              f"{fl[first] if first is not None else b''!r}); the same events: "
              f"{sorted(ol) == sorted(fl)}, the same clocks in order: {clocks}, "
              f"the order warning: {warned}; stderr: {err!r}")
    c.expect(len(out) > 0 and same, "dump --follow printed every whole event of the killed "
             f"trace ({no} lines against {nfull}), in its order but for ties of clocks and "
             "after the warning that the order is not exact")


def main():
    gen = os.environ.get("FOLLOWGEN")
    if not gen or not os.path.exists(gen):
        print(f"FOLLOWGEN not set or missing: '{gen}'", file=sys.stderr)
        return 1
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-follow-")
    try:
        env = dict(os.environ)
        env["OVNI_TRACEDIR"] = os.path.join(tmp, "trace")
        env["WEFT_FLUSH_MS"] = "50"
        env.pop("OVNI_TMPDIR", None)
        env.pop("WEFT_BUFSIZE", None)
        if len(sys.argv) > 1 and sys.argv[1] == "killed":
            killed(c, tmp, gen, env)
        else:
            live(c, tmp, gen, env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return c.done()


if __name__ == "__main__":
    sys.exit(main())
