# SPDX-License-Identifier: MIT
"""serve_util.py - `weft view --serve` started and stopped by the tests
(bounded: the port line read with a deadline, SIGINT then SIGKILL)."""
import http.client
import json
import os
import select
import signal
import subprocess
import time



def tile_decode(flat):
    """A tile row's flat triples (start after the previous end, duration,
    value) as (start, end, value) intervals."""
    out, prev = [], 0
    for k in range(0, len(flat), 3):
        s = prev + flat[k]
        prev = s + flat[k + 1]
        out.append((s, prev, flat[k + 2]))
    return out


def tile_intervals(body):
    """A /tile reply's intervals as (row, start, end, value)."""
    return [(r, s, e, v) for r, _, flat in json.loads(body)["rows"]
            for s, e, v in tile_decode(flat)]


class Server:
    def __init__(self, weft, args, timeout=120):
        self.proc = subprocess.Popen([weft, "view", "--serve", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True)
        self.port = None
        line = b""
        deadline = time.monotonic() + timeout
        try:
            while b"\n" not in line and time.monotonic() < deadline:
                r, _, _ = select.select([self.proc.stdout], [], [], 0.5)
                if r:
                    b = os.read(self.proc.stdout.fileno(), 1)
                    if not b:
                        break
                    line += b
            self.line = line.decode("utf-8", "replace")
            if " at http://127.0.0.1:" not in self.line:
                raise RuntimeError(f"weft view --serve: no port line: {self.line!r}, "
                                   f"{self.proc.stderr.read1(4096) if self.proc.poll() else b''!r}")
            self.port = int(self.line.split("http://127.0.0.1:")[1].split("/")[0])
        except BaseException:
            self.kill()
            raise

    def request(self, method, path, body=None):
        """(status, body bytes) of one request."""
        con = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            con.request(method, path, body=body)
            r = con.getresponse()
            return r.status, r.read()
        finally:
            con.close()

    def stop(self, timeout=20):
        """SIGINT; (exit status, stderr) once it exited (None: it did not)."""
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None, ""
        err = self.proc.stderr.read().decode("utf-8", "replace")
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.proc.returncode, err

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait(timeout=10)
        for f in (self.proc.stdout, self.proc.stderr):
            if f and not f.closed:
                f.close()
