# SPDX-License-Identifier: MIT
"""A stream that shrinks under `weft dump --follow` (issue 21, finding 10).

A synthetic trace of two unfinished streams (tracegen); `weft dump --follow
--follow-timeout 3s` prints the events of both; then one stream.obs is cut
to its header and first event: the follower must fail (exit 1) with the
exact message naming the file and both sizes, not end with exit 0 and an
output the final dump no longer has. A stream cut while done (finished and
read to its end, the other one still unfinished) is caught the same way
when the follow ends. Every process
is bounded by a timeout and killed in every path.
"""
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from tracegen import HEADER, ev, meta, thread_rel, write_stream  # noqa: E402
from wefttest import Checker, weft_bin  # noqa: E402

LIMIT = 30  # seconds any process may take


def events(t0, n):
    out = [ev("OHx", t0, struct.pack("<iiQ", 0, -1, 0))]
    out += [ev("OHp", t0 + 10 * k) for k in range(1, n)]
    return out


def follow_then_cut(c, tmp, finished):
    root = os.path.join(tmp, "t")
    shutil.rmtree(root, ignore_errors=True)
    fin = {} if finished else {"finished": None}
    rel1, rel2 = thread_rel("vm", 1, 1), thread_rel("vm", 1, 2)
    write_stream(root, rel1, meta(1, 1, **fin), events(100, 50))
    # the other stream unfinished: the follow goes on until its timeout
    write_stream(root, rel2, meta(2, 1, finished=None), events(105, 50))
    obs1 = os.path.join(root, rel1, "stream.obs")
    size1 = os.path.getsize(obs1)
    what = "a finished stream" if finished else "an unfinished stream"
    errf = os.path.join(tmp, "err")
    with open(errf, "wb") as err:
        p = subprocess.Popen([weft_bin(), "dump", "--follow", "--follow-timeout", "3s", "t"],
                             cwd=tmp, stdout=subprocess.PIPE, stderr=err,
                             start_new_session=True)
    try:
        # the first line out: the follower has read the streams
        first = p.stdout.readline()
        c.expect(first.startswith(b"       100  OHx"), f"{what}: the follower printed "
                 f"the first event ({first!r})")
        cut = len(HEADER) + len(events(100, 1)[0])
        with open(obs1, "r+b") as f:
            f.truncate(cut)
        t0 = time.monotonic()
        try:
            out, _ = p.communicate(timeout=LIMIT)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc, out = None, b""
        took = time.monotonic() - t0
        with open(errf, "rb") as f:
            err = f.read().decode()
        c.eq((rc, err), (1, f"weft dump: t/{rel1}/stream.obs: the stream shrank from {size1} "
                            f"to {cut} bytes while it was followed\n"),
             f"{what} cut under --follow: exit and message")
        c.expect(took < 15, f"{what}: the follower ended {took:.1f} s after the cut")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait(10)
        p.stdout.close()


def main():
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-shrink-")
    try:
        follow_then_cut(c, tmp, False)
        follow_then_cut(c, tmp, True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
