# SPDX-License-Identifier: MIT
"""cdp.py - headless Chromium driven through the DevTools protocol, with the
standard library only: the browser started with --remote-debugging-port=0
in a temporary profile, its port read from DevToolsActivePort, and the
protocol's websocket spoken by hand (RFC 6455: masked client frames,
fragments, ping answered). Every wait is bounded; close() kills the browser
(its process group) in every path.

    with Browser() as b:
        p = b.page()                    # a tab, Network + Runtime enabled
        p.navigate("file:///...")
        p.wait_attr("data-weft-state", ("ready", "error"))
        p.eval("weft.window()")         # a JSON value (promises awaited)
        p.requests, p.exceptions        # what the page asked for and raised
        p.console_errors                # console.error calls, the browser's errors
"""
import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium():
    env = os.environ.get("WEFT_CHROMIUM")
    if env:
        return env if os.path.exists(env) else None
    for name in CANDIDATES:
        p = shutil.which(name)
        if p:
            return p
    return None


class CDPError(Exception):
    pass


class WebSocket:
    def __init__(self, url, timeout):
        assert url.startswith("ws://")
        hostport, _, path = url[5:].partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise CDPError("websocket handshake: connection closed")
            head += chunk
        status, _, self.buf = head.partition(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n")[0]:
            raise CDPError(f"websocket handshake refused: {status[:80]!r}")

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise CDPError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text, opcode=1):
        data = text.encode() if isinstance(text, str) else text
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 65536:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(head + mask + masked)

    def recv(self):
        msg = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7f
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            data = self._read(n)
            op = b0 & 0x0f
            if op == 9:  # ping
                self.send(data, 10)
                continue
            if op == 8:
                raise CDPError("websocket closed by the browser")
            if op in (0, 1, 2):
                msg += data
                if b0 & 0x80:
                    return msg.decode("utf-8", "replace")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Page:
    def __init__(self, ws_url, timeout):
        self.timeout = timeout
        self.ws = WebSocket(ws_url, timeout)
        self.next_id = 0
        self.requests = []     # URLs the page asked for (Network.requestWillBeSent)
        self.exceptions = []   # Runtime.exceptionThrown texts
        # console.error's calls and the browser's own errors (Log: a request
        # refused, a Content-Security-Policy violated)
        self.console_errors = []
        self.call("Network.enable")
        self.call("Log.enable")
        self.call("Runtime.enable")
        self.call("Page.enable")

    def _event(self, m):
        meth = m.get("method")
        p = m.get("params", {})
        if meth == "Network.requestWillBeSent":
            self.requests.append(p["request"]["url"])
        elif meth == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            self.exceptions.append(d.get("exception", {}).get("description") or d.get("text"))
        elif meth == "Runtime.consoleAPICalled" and p.get("type") == "error":
            self.console_errors.append(repr(p.get("args")))
        elif meth == "Log.entryAdded" and p["entry"].get("level") == "error":
            e = p["entry"]
            self.console_errors.append(f"{e.get('source')}: {e.get('text')} {e.get('url', '')}")

    def call(self, method, **params):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            m = json.loads(self.ws.recv())
            if m.get("id") == mid:
                if "error" in m:
                    raise CDPError(f"{method}: {m['error']}")
                return m.get("result", {})
            self._event(m)
        raise CDPError(f"{method}: no answer in {self.timeout} s")

    def pump(self, seconds):
        """Reads the events that arrive during `seconds`."""
        self.ws.sock.settimeout(seconds)
        try:
            while True:
                self._event(json.loads(self.ws.recv()))
        except (socket.timeout, TimeoutError):
            pass
        finally:
            self.ws.sock.settimeout(self.timeout)

    def navigate(self, url):
        self.call("Page.navigate", url=url)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CDPError(f"{expr}: {d.get('exception', {}).get('description') or d.get('text')}")
        return r["result"].get("value")

    def wait_attr(self, attr, values, timeout=None):
        """Polls <html>'s attribute until it is one of values; returns it
        (None at the deadline)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        q = f"document.documentElement.getAttribute({json.dumps(attr)})"
        while time.monotonic() < deadline:
            try:
                v = self.eval(q)
            except CDPError:
                v = None
            if v in values:
                return v
            self.pump(0.05)
        return None

    def close(self):
        self.ws.close()


class Browser:
    def __init__(self, timeout=60, extra_args=()):
        self.exe = find_chromium()
        if self.exe is None:
            raise CDPError("chromium not found")
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="weft-cdp-")
        args = [self.exe, "--headless=new", "--remote-debugging-port=0",
                f"--user-data-dir={self.profile}", "--no-first-run", "--no-default-browser-check",
                "--disable-gpu", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-sandbox",
                # a proxy that does not exist: no request can leave (the
                # loopback, the server of weft view --serve, bypasses it)
                "--proxy-server=127.0.0.1:9",
                *extra_args, "about:blank"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        try:
            self.port = self._port()
        except BaseException:
            self.close()
            raise

    def _port(self):
        f = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise CDPError(f"chromium exited with {self.proc.returncode}")
            try:
                with open(f, encoding="utf-8") as fh:
                    line = fh.readline().strip()
                if line:
                    return int(line)
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        raise CDPError("chromium wrote no DevToolsActivePort")

    def _json(self, path, method="GET"):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(req, timeout=self.timeout) as r:
            return json.loads(r.read().decode())

    def page(self):
        t = self._json("/json/new?about:blank", method="PUT")
        return Page(t["webSocketDebuggerUrl"], self.timeout)

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
