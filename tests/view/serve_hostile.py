#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""serve_hostile.py - `weft view --serve` against hostile clients, over raw
sockets (every socket with a timeout, the server stopped in every path).

Checked, each with its exact status and body:
  - DNS rebinding: a Host that is not 127.0.0.1:PORT or localhost:PORT
    (another name, another port, no port, a trailing dot), no Host, two
    Hosts, an Origin not the server's (another name or port, https, null,
    two Origins), a browser's request from another site's page
    (Sec-Fetch-Site cross-site or same-site, not a navigation): 403 with
    the refusal's text, no trace data, for /, /tile and /at;
  - the requests the server must still answer (Host in any case, with
    localhost, its own Origin, same-origin, a navigation from another
    site, lines ending in LF): 200 with the same bodies, the tile and /at
    weft sql's intervals, and the headers of every reply (nosniff,
    no-store, the Content-Security-Policy, CORP);
  - malformed requests: 400 (a space before a header's colon, a folded
    header, a control character, not HTTP/1.x, a request cut short);
  - a request at the buffer's size (8192 bytes) answered, one byte more:
    431 for the header section, 414 for the request line, 400 for bytes
    with no request line;
  - slow and idle clients: while an idle connection, a client sending a
    byte every 0.25 s and two clients reading none of their page (twice
    as large as a send buffer grows) are held open, other clients' tiles
    are answered within 1 s each; the slow one gets 408 about 2 s after
    its first byte; the idle one is closed, with nothing sent, about 10 s
    after it opened; one lazy client reads its page whole at last, the
    other, which never reads, is given up 10 s after its reply stalled
    (its reply cut); with 40 idle connections and a tile's (41 for 32
    places) the 9 oldest are closed, the others kept, and the tile
    answered within 1 s.
"""
import json
import os
import shutil
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
sys.dont_write_bytecode = True
from serve_util import Server, tile_intervals  # noqa: E402
from tracegen import ev, meta, thread_rel, write_stream  # noqa: E402
from wefttest import Checker, weft_bin  # noqa: E402

c = Checker()

CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
       "img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
       "frame-ancestors 'none'")


def send_buffer_max():
    """The most a TCP socket's send buffer grows to (tcp_wmem's third)."""
    try:
        with open("/proc/sys/net/ipv4/tcp_wmem", encoding="ascii") as f:
            return int(f.read().split()[2])
    except (OSError, ValueError, IndexError):
        return 4 << 20


def trace(root):
    """Threads 1 and 2 in the first microsecond (the tile and /at asked
    for), thread 3 switching after it, often enough for a page twice as
    large as a send buffer can grow (about 50 bytes a switch and back):
    the server cannot hand it to the kernel whole."""
    for tid, cpu in ((1, 0), (2, 1)):
        write_stream(root, thread_rel("vm", 1, tid), meta(tid, 1, cpus=((0, 0), (1, 1))), [
            ev("OHx", 1000 + tid, struct.pack("<iiQ", cpu, -1, 0)),
            ev("OHp", 1200 + tid), ev("OHr", 1400 + tid), ev("OHe", 2000 + tid)])
    n = (2 * send_buffer_max() + (1 << 20)) // 50
    evs = [ev("OHx", 100000, struct.pack("<iiQ", 0, -1, 0))]
    for k in range(n):
        evs += [ev("OHp", 100010 + 20 * k), ev("OHr", 100020 + 20 * k)]
    evs.append(ev("OHe", 100010 + 20 * n))
    write_stream(root, thread_rel("vm", 1, 3), meta(3, 1, cpus=((0, 0), (1, 1))), evs)
    return root


def connect(port, rcvbuf=None, timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    return s


def read_all(s, timeout=10):
    """What s receives until its end (or the deadline: None)."""
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            b = s.recv(1 << 16)
        except socket.timeout:
            break
        except ConnectionResetError:
            return out
        if not b:
            return out
        out += b
    return None


def parse(resp):
    """(status, headers {lower name: value}, body) of a reply (None: none)."""
    if not resp or b"\r\n\r\n" not in resp:
        return None, {}, resp
    head, body = resp.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    hdr = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdr[k.lower()] = v.strip()
    return int(lines[0].split(" ")[1]), hdr, body


def raw(port, data, timeout=10):
    """(status, headers, body) of the bytes data sent on a connection (no
    status: the connection failed or was reset, or no reply in time)."""
    try:
        s = connect(port, timeout=timeout)
    except OSError as e:
        return None, {}, str(e).encode()
    try:
        s.sendall(data)
        return parse(read_all(s, timeout))
    except OSError as e:
        return None, {}, str(e).encode()
    finally:
        s.close()


def get(port, target, host=None, extra=(), eol="\r\n", timeout=10):
    """A GET of target with Host host (default 127.0.0.1:PORT; "" none) and
    the extra header lines."""
    host = f"127.0.0.1:{port}" if host is None else host
    lines = [f"GET {target} HTTP/1.1"] + ([f"Host: {host}"] if host else []) + list(extra)
    return raw(port, (eol.join(lines) + eol + eol).encode("latin-1"), timeout)


def short(body):
    """A body as a failure shows it: a page is cut to its start."""
    return body if body is None or len(body) <= 200 else body[:200] + b"..."


def timed_tile(port, tile):
    """(seconds, status, body) of a tile asked for."""
    t0 = time.monotonic()
    st, _, body = get(port, tile, timeout=3)
    return time.monotonic() - t0, st, body


def expected(tmp, t):
    """weft sql's ovni.thread.state intervals of the thread rows."""
    db = os.path.join(tmp, "t.db")
    p = subprocess.run([weft_bin(), "sql", "-o", db, t], capture_output=True, timeout=120)
    c.eq(p.returncode, 0, "weft sql")
    con = sqlite3.connect(db)
    ivs = con.execute("SELECT i.row, i.start, i.end, i.value FROM interval i JOIN channel c ON "
                      "c.id = i.channel WHERE i.view = 'thread' AND c.name = "
                      "'ovni.thread.state' ORDER BY i.row, i.start").fetchall()
    con.close()
    return ivs


def normal(port, ivs):
    """The requests the server answers: 200, the same bodies, the headers."""
    st, hdr, page = get(port, "/")
    c.eq(st, 200, "GET /")
    c.expect(page.startswith(b"<!DOCTYPE html>") and b'"serve":true' in page
             and len(page) > 2 * send_buffer_max(), f"the page ({len(page)} bytes)")
    data = json.loads(page.split(b'type="application/json">')[1].split(b"</script>")[0])
    ch = [x["name"] for x in data["chans"]].index("ovni.thread.state")
    tile = f"/tile?c={ch}&r0=0&r1=1&l=0&i=0"
    st, hdr, tbody = get(port, tile)
    c.eq((st, tile_intervals(tbody) if st == 200 else tbody), (200, ivs), "the tile: weft sql's")
    r, s, e, v = ivs[1]
    at = f"/at?c={ch}&r={r}&t={s}"
    at_body = json.dumps({"iv": [s, e, v]}, separators=(",", ":")).encode()
    c.eq(get(port, at)[::2], (200, at_body), "/at: weft sql's interval")
    for what, body, ctype in (("/", page, "text/html; charset=utf-8"),
                              (tile, tbody, "application/json")):
        st, hdr, _ = get(port, what)
        c.eq(hdr, {"content-type": ctype, "content-length": str(len(body)),
                   "cache-control": "no-store", "x-content-type-options": "nosniff",
                   "cross-origin-resource-policy": "same-origin",
                   "content-security-policy": CSP, "connection": "close"},
             f"{what}: the reply's headers")
    ok = [
        ("Host in capitals", dict(host=f"LocalHost:{port}", extra=["HOST-x: 1"])),
        ("Host localhost", dict(host=f"localhost:{port}")),
        ("the header's name in any case", dict(host="", extra=[f"hOsT:  127.0.0.1:{port} "])),
        ("its own Origin", dict(extra=[f"Origin: http://127.0.0.1:{port}"])),
        ("Origin localhost", dict(host=f"localhost:{port}",
                                  extra=[f"Origin: http://localhost:{port}"])),
        ("the page's own fetch", dict(extra=["Sec-Fetch-Site: same-origin",
                                             "Sec-Fetch-Mode: cors", "Sec-Fetch-Dest: empty"])),
        ("a URL typed", dict(extra=["Sec-Fetch-Site: none", "Sec-Fetch-Mode: navigate"])),
        ("a link followed from another site",
         dict(extra=["Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate",
                     "Sec-Fetch-Dest: document"])),
        ("lines ending in LF", dict(eol="\n")),
    ]
    for what, kw in ok:
        for target, body in (("/", page), (tile, tbody), (at, at_body)):
            st, _, got = get(port, target, **kw)
            c.eq((st, got == body), (200, True), f"{what}: {target} 200, the same body")
    return page, tile, at


def refusals(port, targets):
    host_no = (f"refused: the Host header must be 127.0.0.1:{port} or localhost:{port}, "
               "once\n").encode()
    origin_no = b"refused: a request from another origin\n"
    site_no = b"refused: a request from another site's page\n"
    cases = [
        ("a rebinding Host", dict(host=f"evil.example:{port}"), host_no),
        ("another port", dict(host=f"127.0.0.1:{port + 1}"), host_no),
        ("no port", dict(host="127.0.0.1"), host_no),
        ("localhost.", dict(host=f"localhost.:{port}"), host_no),
        ("a port with a 0 before", dict(host=f"127.0.0.1:0{port}"), host_no),
        ("an empty Host", dict(host="", extra=["Host:"]), host_no),
        ("no Host", dict(host=""), host_no),
        ("two Hosts", dict(extra=[f"Host: 127.0.0.1:{port}"]), host_no),
        ("two Hosts, one evil", dict(extra=[f"host: evil.example:{port}"]), host_no),
        ("a foreign Origin", dict(extra=["Origin: http://evil.example"]), origin_no),
        ("Origin: another port", dict(extra=[f"Origin: http://127.0.0.1:{port + 1}"]),
         origin_no),
        ("Origin: https", dict(extra=[f"Origin: https://127.0.0.1:{port}"]), origin_no),
        ("Origin: null", dict(extra=["Origin: null"]), origin_no),
        ("two Origins", dict(extra=[f"Origin: http://127.0.0.1:{port}"] * 2), origin_no),
        ("a cross-site fetch", dict(extra=["Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: cors",
                                           "Sec-Fetch-Dest: empty"]), site_no),
        ("a same-site image", dict(extra=["Sec-Fetch-Site: same-site",
                                          "Sec-Fetch-Mode: no-cors", "Sec-Fetch-Dest: image"]),
         site_no),
        ("a cross-site frame", dict(extra=["Sec-Fetch-Site: cross-site",
                                           "Sec-Fetch-Mode: navigate",
                                           "Sec-Fetch-Dest: iframe"]), site_no),
    ]
    for what, kw, msg in cases:
        for target in targets:
            st, hdr, body = get(port, target, **kw)
            c.eq((st, short(body), hdr.get("content-type")),
                 (403, msg, "text/plain; charset=utf-8"), f"{what}: {target}: 403, no data")
    st, _, body = raw(port, b"GET /tile HTTP/1.0\r\n\r\n")
    c.eq((st, short(body)), (403, host_no), "HTTP/1.0 without Host")
    # a refusal comes before the method's and the path's answers
    c.eq(raw(port, b"POST /nothing HTTP/1.1\r\nHost: evil.example\r\n\r\n")[::2],
         (403, host_no), "POST with a bad Host: 403")


def malformed(port):
    h = f"Host: 127.0.0.1:{port}\r\n".encode()
    cases = [
        ("a space before the colon", b"GET / HTTP/1.1\r\nHost : x\r\n" + h + b"\r\n"),
        ("a folded header", b"GET / HTTP/1.1\r\n" + h + b"X-A: 1\r\n  2\r\n\r\n"),
        ("a NUL in a value", b"GET / HTTP/1.1\r\n" + h + b"X-A: a\0b\r\n\r\n"),
        ("a CR in a value", b"GET / HTTP/1.1\r\n" + h + b"X-A: a\rb\r\n\r\n"),
        ("HTTP/2.0", b"GET / HTTP/2.0\r\n" + h + b"\r\n"),
        ("no version", b"GET /\r\n" + h + b"\r\n"),
        ("two spaces", b"GET  / HTTP/1.1\r\n" + h + b"\r\n"),
        ("a line without a colon", b"GET / HTTP/1.1\r\n" + h + b"junk\r\n\r\n"),
    ]
    for what, data in cases:
        st, _, body = raw(port, data)
        c.eq((st, short(body)), (400, b"bad request\n"), f"{what}: 400")
    # the request cut short: the client ends its side
    s = connect(port)
    try:
        s.sendall(b"GET / HTTP/1.1\r\n" + h)
        s.shutdown(socket.SHUT_WR)
        c.eq(parse(read_all(s))[::2], (400, b"incomplete request\n"), "a request cut short: 400")
    finally:
        s.close()


def oversize(port, at, at_body):
    def request(total, pad_in_line=False):
        """A GET of at with exactly total bytes of request line and headers."""
        if pad_in_line:
            base = f"GET {at}&x= HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n"
            pad = "y" * (total - len(base))
            return f"GET {at}&x={pad} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        base = f"GET {at} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Pad: \r\n\r\n"
        pad = "p" * (total - len(base))
        return f"GET {at} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Pad: {pad}\r\n\r\n".encode()
    c.eq(len(request(8192)), 8192, "the request of 8192 bytes")
    c.eq(raw(port, request(8192))[::2], (200, at_body), "8192 bytes of header: answered")
    c.eq(raw(port, request(8193))[::2],
         (431, b"request header fields too large (8 KiB at most with the request line)\n"),
         "8193 bytes of header: 431")
    c.eq(raw(port, request(20000))[::2],
         (431, b"request header fields too large (8 KiB at most with the request line)\n"),
         "20000 bytes of header: 431")
    # the header section over the buffer, Host at its end: not parsed cut short
    big = (f"GET {at} HTTP/1.1\r\n" + "X-Pad: 1\r\n" * 900 + "Host: evil.example\r\n\r\n")
    c.eq(raw(port, big.encode())[0], 431, "a Host past 8 KiB: 431, not parsed cut short")
    c.eq(raw(port, request(8192, True))[::2], (200, at_body), "8192 bytes, the line long: "
         "answered")
    c.eq(raw(port, request(9000, True))[::2],
         (414, b"request line too long (8 KiB at most)\n"), "a request line of 9000 bytes: 414")
    c.eq(raw(port, b"x" * 9000)[::2], (400, b"bad request\n"), "9000 bytes, no line: 400")


def trickle(port, stop, out):
    """Sends a request a byte every 0.25 s until the server's reply (or
    stop); out: the time of the first byte, the reply, the time it came."""
    s = connect(port)
    data = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: {'s' * 200}\r\n\r\n".encode()
    out["first"] = time.monotonic()
    try:
        for k in range(len(data)):
            if stop.is_set():
                break
            try:
                s.sendall(data[k:k + 1])
            except OSError:
                break
            s.settimeout(0.25)
            try:
                b = s.recv(4096)
            except socket.timeout:
                continue
            out["reply"] = b + (read_all(s, 5) or b"")
            out["when"] = time.monotonic()
            break
    finally:
        s.close()


def slow_clients(port, tile, page):
    idle = connect(port)
    t0 = time.monotonic()
    stop = threading.Event()
    tr = {}
    th = threading.Thread(target=trickle, args=(port, stop, tr))
    # two clients asking for the page (twice a send buffer's most) with a receive buffer of 4 KiB:
    # one reads it only later, the other never
    lazy = [connect(port, rcvbuf=4096) for _ in range(2)]
    for s in lazy:
        s.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    th.start()
    try:
        times = []
        for _ in range(12):
            dt, st, body = timed_tile(port, tile)
            times.append(round(dt, 3))
            c.eq(st, 200, "a tile while the others are held: 200")
            time.sleep(0.2)
        c.expect(max(times) < 1.0, f"each tile answered within 1 s while an idle, a slow and "
                 f"two lazy clients are held: {times}")
        th.join(timeout=10)
        c.expect(not th.is_alive(), "the slow client's thread ended")
        st, _, body = parse(tr.get("reply"))
        c.eq((st, body), (408, b"request timeout: the request's header must arrive within "
                              b"2 s\n"), "the slow client: 408")
        if "when" in tr:
            dt = tr["when"] - tr["first"]
            c.expect(1.5 <= dt <= 3.5, f"the slow client's 408 about 2 s after its first byte "
                     f"({dt:.2f} s)")
        st, _, body = parse(read_all(lazy[0], 10))
        c.eq((st, body == page), (200, True), "the lazy client: its page whole, at last")
        # the idle one: closed, nothing sent, about 10 s after it opened
        got = read_all(idle, 14)
        dt = time.monotonic() - t0
        c.eq(got, b"", "the idle connection: closed, nothing sent")
        c.expect(8.5 <= dt <= 13, f"the idle connection closed after about 10 s ({dt:.2f} s)")
        # the one that never read: given up 10 s after its reply stalled
        time.sleep(max(0.0, t0 + 12 - time.monotonic()))
        got = read_all(lazy[1], 5)
        c.expect(got is not None and len(got) < len(page),
                 f"the client that never read: given up, its reply cut "
                 f"({None if got is None else len(got)} of {len(page)} bytes)")
    finally:
        stop.set()
        th.join(timeout=10)
        idle.close()
        for s in lazy:
            s.close()


def flood(port, tile):
    conns = []
    time.sleep(0.5)  # the connections before closed (drained for 200 ms at most)
    try:
        for _ in range(40):
            try:
                conns.append(connect(port, timeout=3))
            except OSError as e:
                c.expect(False, f"40 connections: the {len(conns) + 1}th refused: {e}")
                return
            time.sleep(0.01)
        dt, st, _ = timed_tile(port, tile)
        c.eq(st, 200, "a tile with 40 idle connections open")
        c.expect(dt < 1.0, f"answered within 1 s ({dt:.3f} s)")
        closed = []
        for k, s in enumerate(conns):
            s.settimeout(0.3 if k < 8 else 0.05)
            try:
                closed.append(s.recv(10) == b"")
            except socket.timeout:
                closed.append(False)
            except ConnectionResetError:
                closed.append(True)
        # 41 connections (the tile's the last) for 32 places: the 9 oldest
        c.eq(closed, [True] * 9 + [False] * 31, "the 9 oldest dropped, the others kept open")
    finally:
        for s in conns:
            s.close()


def main():
    tmp = tempfile.mkdtemp(prefix="weft-serve-hostile-")
    try:
        t = trace(os.path.join(tmp, "ovni"))
        ivs = [(r, s, e, v) for r, s, e, v in expected(tmp, t) if r < 2]
        c.eq(sorted(set(r for r, _, _, _ in ivs)), [0, 1], "the first two threads' intervals")
        srv = Server(weft_bin(), [t])
        try:
            page, tile, at = normal(srv.port, ivs)
            refusals(srv.port, ("/", tile, at))
            malformed(srv.port)
            r, s, e, v = ivs[1]
            oversize(srv.port, at, json.dumps({"iv": [s, e, v]}, separators=(",", ":")).encode())
            slow_clients(srv.port, tile, page)
            flood(srv.port, tile)
            c.eq(get(srv.port, tile)[0], 200, "the server answers after all of it")
        finally:
            rc, err = srv.stop()
        c.eq((rc, err), (0, ""), "SIGINT: exit 0, nothing on stderr")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
