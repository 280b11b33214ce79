#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""view_cache.py - the cache `weft view --serve` keeps beside the trace
(docs/view.md, "The cache"), on a copy of the corpus case models/mix-0 in a
temporary directory, with --budget 1000 (21 tracks served from the file's
chunks, the others kept in its metadata):
  - the first start builds TRACE/weft-view.cache (there once the port line
    is, which says the tracks are read from the cache);
  - a second start reuses it without reading the events: every stream.obs
    overwritten with zeros after its header, its size and modification
    time kept (--no-cache then refuses the trace), its answers are the
    first's; on a terminal, the one line saying so; the
    file's inode and modification time unchanged;
  - the page, tiles of every channel at four levels and /at of every row at
    five times answer, byte for byte, as the first server, the reopened one
    and a --no-cache one (which writes nothing beside the trace);
  - a stream touched (its modification time), another --budget and
    --rebuild each build it again (a new inode), their answers those of
    --no-cache with the same options;
  - a cache cut short, one with a bad magic, one whose metadata was changed
    (its checksum), and one whose chunk table points past the chunks (the
    checksum made again): the exact warning (the file, the byte, what was
    wrong), answers equal to the first's, and the cache built again;
  - a symbolic link or a FIFO at TRACE/weft-view.cache: refused with weft
    sql's message, exit 1, left as it was;
  - the trace directory read-only: the cache in $XDG_CACHE_HOME/weft,
    nothing written into the trace, reused by a second start;
  - SIGINT while the first start emulates (bench_emu's runtime trace, the
    cache's O_TMPFILE open): exit 130, no file left anywhere;
  - weft dump says nothing of weft-view.cache.
  - --rebuild or --no-cache without --serve, and the two together: usage
    errors (exit 2, their messages), nothing written.
Every subprocess has a time limit; the directory is removed at the end."""
import json
import os
import pty
import select
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.dont_write_bytecode = True
from serve_util import Server  # noqa: E402
from wefttest import Checker, conformance_dir, run, weft_bin, writable_copy  # noqa: E402

c = Checker()
TIMEOUT = 120
BUDGET = "1000"


def ident(path):
    st = os.lstat(path)
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def answers(srv):
    """GET /, tiles of every channel over all the rows (the whole run's
    level, two below it, level 0 and 4's first tiles) and /at of every row
    at five times: {request: (status, body)}."""
    got = {"/": srv.request("GET", "/")}
    body = got["/"][1]
    data = json.loads(body.split(b'type="application/json">')[1].split(b"</script>")[0])
    nrows, dur = len(data["rows"]), data["duration"]
    top = max(0, (dur - 1).bit_length() - 10)
    for ch in range(len(data["chans"])):
        for lv, tiles in ((top, 1), (max(0, top - 3), 8), (4, 2), (0, 2)):
            for i in range(tiles):
                q = f"/tile?c={ch}&r0=0&r1={nrows - 1}&l={lv}&i={i}"
                got[q] = srv.request("GET", q)
        for r in range(nrows):
            for t in (0, dur // 5, dur // 3, dur // 2, dur - 1):
                q = f"/at?c={ch}&r={r}&t={t}"
                got[q] = srv.request("GET", q)
    return got


def check_answers(got, want, what):
    bad = [q for q in want if got.get(q) != want[q]]
    c.eq(len(got), len(want), f"{what}: as many answers")
    c.eq(bad[:3], [], f"{what}: every answer the first server's, byte for byte")
    c.expect(all(st == 200 for st, _ in got.values()), f"{what}: every answer 200")


def serve(args, what, tty=False):
    """Starts --serve with args, takes its answers, stops it: (port line
    without the port, answers, stderr). tty: stderr on a terminal."""
    if tty:
        return serve_tty(args, what)
    srv = Server(weft_bin(), args, timeout=TIMEOUT)
    try:
        got = answers(srv)
    finally:
        rc, err = srv.stop()
    c.eq(rc, 0, f"{what}: SIGINT: exit 0")
    return srv.line.replace(f":{srv.port}/", ":PORT/"), got, err


def serve_tty(args, what):
    master, slave = pty.openpty()
    p = subprocess.Popen([weft_bin(), "view", "--serve"] + args, stdout=subprocess.PIPE,
                         stderr=slave, stdin=subprocess.DEVNULL, start_new_session=True)
    os.close(slave)
    term, line = b"", b""
    try:
        deadline = time.monotonic() + TIMEOUT
        while b"\n" not in line and time.monotonic() < deadline:
            r, _, _ = select.select([p.stdout, master], [], [], 0.5)
            if p.stdout in r:
                b = os.read(p.stdout.fileno(), 1)
                if not b:
                    break
                line += b
            if master in r:
                term += os.read(master, 65536)
        line = line.decode()
        if not c.expect(" at http://127.0.0.1:" in line, f"{what}: the port line: {line!r}"):
            return line, {}, term.decode("utf-8", "replace")
        srv = Server.__new__(Server)
        srv.proc = p
        srv.port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        got = answers(srv)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=20)
        while select.select([master], [], [], 0.2)[0]:
            try:
                d = os.read(master, 65536)
            except OSError:
                break
            if not d:
                break
            term += d
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)
        p.stdout.close()
        os.close(master)
    c.eq(p.returncode, 0, f"{what}: SIGINT: exit 0")
    return (line.replace(f":{srv.port}/", ":PORT/"), got,
            term.decode("utf-8", "replace").replace("\r\n", "\n"))


def streams(trace):
    return [os.path.join(d, f) for d, _, fs in os.walk(trace) for f in fs if f == "stream.obs"]


def vc_hash(b):
    """The metadata's checksum (src/view/cache.c): FNV-1a over its 8-byte
    words, the last one padded with zeros."""
    h = 0xcbf29ce484222325
    for (w,) in struct.iter_unpack("<Q", b + b"\0" * (-len(b) % 8)):
        h = ((h ^ w) * 0x100000001b3) & 0xffffffffffffffff
    return h


def header(data):
    _, _, klen, moff, mlen, _, size = struct.unpack_from("<8sIIQQQQ", data, 0)
    return klen, moff, mlen, size


def first_chunk(data):
    """The offset of the first spilled track's chunk 0 in the cache's bytes
    (data), and that chunk's pos word (offset << 16 | length)."""
    klen, p, _, _ = header(data)

    def u():
        nonlocal p
        v = struct.unpack_from("<Q", data, p)[0]
        p += 8
        return v

    def s():
        nonlocal p
        n = u()
        p += n
    nrows, nchans = u(), u()
    p += 3 * 8
    for _ in range(nrows):
        p += 3 * 8
        s()
        s()
    for _ in range(nchans):
        s()
        s()
        p += 3 * 8
        for _ in range(u()):
            p += 8
            s()
    for _ in range(nrows * nchans):
        n = u()
        p += 4 * 8
        spilled = u()
        p += 8
        nlev = u()
        if nlev > 0:
            offs = [u() for _ in range(nlev + 1)]
            p += 8 * offs[-1]
        if spilled:
            nchunks = u()
            if nchunks > 0:
                return p, struct.unpack_from("<Q", data, p + 16)[0]
            p += 8  # nspilled
            nsmp = u()
            p += 16 + 32 * nsmp
        for _ in range(0, n, 32):  # the kept intervals: sub-blocks of 32
            p += 2 + struct.unpack_from("<H", data, p)[0]
    raise AssertionError("no spilled track")


def corrupt(trace, cpath, want, what, change, warning):
    """The cache changed by change(bytes) -> bytes: the warning, the
    first server's answers, the cache built again."""
    with open(cpath, "rb") as f:
        data = f.read()
    with open(cpath, "wb") as f:
        f.write(change(data))
    line, got, err = serve(["--budget", BUDGET, trace], what)
    c.eq(err, f"weft view: warning: {cpath}: {warning}: built again\n", f"{what}: the warning")
    check_answers(got, want, what)
    with open(cpath, "rb") as f:
        c.eq(f.read()[:8], b"weftvwc\n", f"{what}: the cache built again")
    c.eq(os.path.getsize(cpath), len(data), f"{what}: the cache built again, its size")


def main():
    corpus = conformance_dir()
    tmp = tempfile.mkdtemp(prefix="weft-view-cache-")
    try:
        trace = os.path.join(tmp, "trace")
        writable_copy(os.path.join(corpus, "models", "mix-0", "ovni"), trace)
        xdg = os.path.join(tmp, "xdg")
        os.environ["XDG_CACHE_HOME"] = xdg
        cpath = os.path.join(trace, "weft-view.cache")
        args = ["--budget", BUDGET, trace]

        for bad, msg in ((["--rebuild", trace], "--rebuild and --no-cache are options of "
                          "--serve (its cache)"),
                         (["--no-cache", "-o", os.path.join(tmp, "x.html"), trace],
                          "--rebuild and --no-cache are options of --serve (its cache)"),
                         (["--serve", "--rebuild", "--no-cache", trace], "--rebuild builds "
                          "the cache that --no-cache leaves alone: give one of them")):
            c.eq(run(["view"] + bad, timeout=TIMEOUT),
                 (2, b"", f"weft view: {msg}; run `weft view --help`\n"),
                 f"usage: {' '.join(bad[:-1])}")
        c.eq(os.listdir(tmp), ["trace"], "the usage errors wrote nothing")

        line, first, err = serve(args, "first start")
        c.eq(line, f"weft view: serving {trace} at http://127.0.0.1:PORT/ (Ctrl-C to stop; 21 "
             "tracks beyond the budget, read from the cache)\n", "first start: the port line")
        c.eq(err, "", "first start: nothing on stderr")
        c.expect(os.path.isfile(cpath), "the cache kept as TRACE/weft-view.cache")
        one = ident(cpath)

        # the events made unreadable: zeros after each stream's 8-byte header
        # (which the key's opening of the trace reads), size and mtime kept
        saved = {}
        for obs in streams(trace):
            st = os.stat(obs)
            with open(obs, "rb") as f:
                saved[obs] = (f.read(), st.st_atime_ns, st.st_mtime_ns)
            with open(obs, "r+b") as f:
                f.seek(8)
                f.write(b"\0" * (st.st_size - 8))
            os.utime(obs, ns=(st.st_atime_ns, st.st_mtime_ns))
        p = subprocess.run([weft_bin(), "view", "--serve", "--no-cache"] + args,
                           capture_output=True, text=True, timeout=TIMEOUT,
                           stdin=subprocess.DEVNULL)
        c.expect(p.returncode == 1 and "no model is registered" in p.stderr,
                 f"the zeroed events cannot be emulated: {p.returncode} {p.stderr!r}")
        line2, got, term = serve(args, "reopened", tty=True)
        c.eq(term, f"weft view: {cpath}: built before, the trace unchanged: reused (--rebuild "
             "builds it again)\n", "reopened: the one line on a terminal")
        c.eq(line2, line, "reopened: the port line")
        check_answers(got, first, "reopened (the events zeroed)")
        c.eq(ident(cpath), one, "reopened: the cache unchanged")
        for obs, (data, at, mt) in saved.items():
            with open(obs, "wb") as f:
                f.write(data)
            os.utime(obs, ns=(at, mt))

        before = sorted(os.listdir(trace))
        line3, got, err = serve(["--no-cache"] + args, "--no-cache")
        c.eq(line3, line.replace("read from the cache", "read from a temporary file"),
             "--no-cache: the port line")
        c.eq(err, "", "--no-cache: nothing on stderr")
        check_answers(got, first, "--no-cache")
        c.eq((ident(cpath), sorted(os.listdir(trace))), (one, before),
             "--no-cache: the cache neither read nor written")

        # rebuilt: a stream touched, another budget, --rebuild
        obs = streams(trace)[0]
        st = os.stat(obs)
        os.utime(obs, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
        _, got, err = serve(args, "a stream touched")
        c.eq(err, "", "a stream touched: nothing on stderr")
        check_answers(got, first, "a stream touched")
        two = ident(cpath)
        c.expect(two[0] != one[0], "a stream touched: the cache built again (a new inode)")
        other = ["--budget", "300", trace]
        lo, want_other, _ = serve(["--no-cache"] + other, "--budget 300 --no-cache")
        lb, got, _ = serve(other, "--budget 300")
        c.eq(lb, lo.replace("read from a temporary file", "read from the cache"),
             "--budget 300: its port line")
        c.expect("; 48 tracks beyond" in lb, f"--budget 300: 48 tracks beyond it: {lb!r}")
        check_answers(got, want_other, "--budget 300 (against --no-cache)")
        three = ident(cpath)
        c.expect(three[0] != two[0], "another --budget: the cache built again")
        _, got, _ = serve(other, "--budget 300 again")
        c.eq(ident(cpath), three, "--budget 300 again: reused")
        _, got, _ = serve(["--rebuild"] + args, "--rebuild")
        check_answers(got, first, "--rebuild")
        four = ident(cpath)
        c.expect(four[0] != three[0], "--rebuild: the cache built again")
        _, got, _ = serve(["--rebuild"] + args, "--rebuild again")
        c.expect(ident(cpath)[0] != four[0], "--rebuild: built again, the key the same")

        # a cache not to trust
        size = os.path.getsize(cpath)
        corrupt(trace, cpath, first, "cut short", lambda d: d[:-100],
                f"byte 40: the header says {size} bytes, the file holds {size - 100} (cut "
                "short)")
        corrupt(trace, cpath, first, "a bad magic", lambda d: b"WEFTVWC\n" + d[8:],
                "byte 0: not a weft view cache (its magic is wrong)")
        with open(cpath, "rb") as f:
            data = f.read()
        klen, moff, mlen, _ = header(data)
        at, pos = first_chunk(data)

        def flip(d):
            b = bytearray(d)
            b[moff + 20] ^= 1  # the duration
            return bytes(b)
        corrupt(trace, cpath, first, "the metadata changed", flip,
                "byte 32: the metadata's checksum does not match (the file was changed)")

        def past(d):
            b = bytearray(d)
            struct.pack_into("<Q", b, at + 16, moff << 16 | (pos & 0xffff))
            struct.pack_into("<Q", b, 32, vc_hash(bytes(b[moff:])))
            return bytes(b)
        corrupt(trace, cpath, first, "a chunk past the chunks", past,
                f"byte {at}: chunk 0: {pos & 0xffff} bytes at byte {moff}, outside the chunks "
                f"(bytes {48 + klen} to {moff})")

        # not a regular file: neither read nor replaced
        kept = ident(cpath)
        os.rename(cpath, cpath + ".real")
        for kind, make in (("a symbolic link", lambda: os.symlink("weft-view.cache.real",
                                                                   cpath)),
                           ("a FIFO", lambda: os.mkfifo(cpath))):
            make()
            was = ident(cpath)
            p = subprocess.run([weft_bin(), "view", "--serve"] + args, capture_output=True,
                               text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
            c.eq((p.returncode, p.stdout, p.stderr), (
                1, "", f"weft view: {cpath}: is {kind}: not replaced (weft replaces only "
                "regular files)\n"), f"{kind} at TRACE/weft-view.cache: refused")
            c.eq(ident(cpath), was, f"{kind}: left as it was")
            os.unlink(cpath)
        c.eq(ident(cpath + ".real"), kept, "the link's target untouched")
        os.rename(cpath + ".real", cpath)

        # a read-only trace: the cache in $XDG_CACHE_HOME/weft
        os.unlink(cpath)
        before = sorted(os.listdir(trace))
        dirs = [d for d, _, _ in os.walk(trace)]
        try:
            for d in dirs:
                os.chmod(d, 0o555)
            _, got, err = serve(args, "read-only trace")
            check_answers(got, first, "read-only trace")
            c.eq(sorted(os.listdir(trace)), before, "read-only trace: nothing written into it")
            kept = sorted(os.listdir(os.path.join(xdg, "weft")))
            c.eq(len(kept), 1, f"one cache in $XDG_CACHE_HOME/weft: {kept}")
            c.expect(len(kept) == 1 and kept[0].startswith("trace-")
                     and kept[0].endswith(".view"), f"its name NAME-HASH.view: {kept}")
            xpath = os.path.join(xdg, "weft", kept[0]) if kept else ""
            one = ident(xpath) if kept else None
            _, got, _ = serve(args, "read-only trace again")
            check_answers(got, first, "read-only trace again")
            c.eq(ident(xpath) if kept else None, one, "read-only trace again: reused")
        finally:
            for d in dirs:
                os.chmod(d, 0o755)
        code, _, err = run(["dump", trace], timeout=TIMEOUT)
        c.eq((code, "weft-view" in err), (0, False), "weft dump: weft-view.cache passed over")

        shim = os.environ.get("WEFT_NO_TMPFILE_SHIM")
        if shim:
            no_tmpfile(trace, cpath, args, first, line, shim, os.path.join(tmp, "shim.log"))
        else:
            print("skip: without O_TMPFILE (no shim under a sanitizer)")

        interrupted(tmp, xdg)
        if shim:
            interrupted(tmp, xdg, shim, os.path.join(tmp, "shim2.log"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


def with_shim(shim, log):
    """The environment of a weft run under no_tmpfile.so (no O_TMPFILE)."""
    return dict(os.environ, LD_PRELOAD=shim, WEFT_NO_TMPFILE_LOG=log)


def no_tmpfile(trace, cpath, args, first, line, shim, log):
    """Without O_TMPFILE (no_tmpfile.so): the cache built through a named
    temporary file in the trace directory, renamed over the name, nothing
    else left; the same answers; reused as before."""
    if os.path.exists(cpath):
        os.unlink(cpath)
    before = sorted(os.listdir(trace))
    saved = dict(os.environ)
    os.environ.update(with_shim(shim, log))
    try:
        line2, got, err = serve(args, "without O_TMPFILE")
    finally:
        os.environ.clear()
        os.environ.update(saved)
    with open(log) as f:
        c.eq(f.read(), f"{trace}\n", "without O_TMPFILE: the one O_TMPFILE open refused, "
             "in the trace directory")
    c.eq((line2, err), (line, ""), "without O_TMPFILE: the port line, nothing on stderr")
    check_answers(got, first, "without O_TMPFILE")
    c.eq(sorted(os.listdir(trace)), before + ["weft-view.cache"],
         "without O_TMPFILE: the cache and no temporary file left")
    one = ident(cpath)
    _, got, _ = serve(args, "without O_TMPFILE, reopened")
    check_answers(got, first, "without O_TMPFILE, reopened")
    c.eq(ident(cpath), one, "without O_TMPFILE: the cache reused")


def interrupted(tmp, xdg, shim=None, log=None):
    """SIGINT once the cache's temporary file is open (O_TMPFILE: its fd in
    /proc, '#INODE (deleted)' in the trace directory; under shim, the named
    temporary '.weft-view-cache-XXXXXX'), the emulation running: exit 130,
    its message, nothing left."""
    gen = os.path.join(os.environ.get("WEFT_BINARY_DIR", ""), "bin", "bench_emu")
    g = os.path.join(tmp, "g")
    trace = os.path.join(g, "rt-trace")
    if not os.path.isdir(trace):
        subprocess.run([gen, "-g", g, "-n", "300000"], check=True, stdout=subprocess.DEVNULL,
                       timeout=300)
    what = "SIGINT without O_TMPFILE" if shim else "SIGINT"
    before = sorted(os.listdir(trace))
    xbefore = sorted(os.listdir(os.path.join(xdg, "weft")))
    p = subprocess.Popen([weft_bin(), "view", "--serve", "--budget", "1", "-j", "1", trace],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL,
                         env=with_shim(shim, log) if shim else None)
    seen = False
    try:
        deadline = time.monotonic() + TIMEOUT
        while not seen and p.poll() is None and time.monotonic() < deadline:
            d = f"/proc/{p.pid}/fd"
            try:
                for n in os.listdir(d):
                    t = os.readlink(os.path.join(d, n))
                    if t.startswith(trace + "/") and (t.startswith(
                            trace + "/.weft-view-cache-") if shim else t.endswith(" (deleted)")):
                        seen = True
            except OSError:
                pass
            if not seen:
                time.sleep(0.002)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=TIMEOUT)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    c.expect(seen, f"{what}: the cache's temporary file seen open before the port line")
    c.eq((p.returncode, out, err), (130, b"", b"weft view: interrupted by SIGINT; nothing "
                                    b"written\n"), f"{what} during the build: exit 130")
    c.eq(sorted(os.listdir(trace)), before, f"{what}: nothing left in the trace directory")
    c.eq(sorted(os.listdir(os.path.join(xdg, "weft"))), xbefore, f"{what}: nothing in the "
         "cache directory")


if __name__ == "__main__":
    main()
