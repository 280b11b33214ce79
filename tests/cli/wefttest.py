# SPDX-License-Identifier: MIT
"""Shared helpers of the CLI tests: where things are, running weft, skipping."""
import gzip
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

SKIP = 77
# The source tree and the build tree (ctest's environment names both; run
# by hand: this checkout and its build/).
SRC = Path(os.environ.get("WEFT_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN = Path(os.environ.get("WEFT_BINARY_DIR", SRC / "build"))


def skip_note(why):
    """Notes why this test skips, for the last lines of the ctest run
    (tests/ctest_skipped.py): one line in $WEFT_SKIP_DIR/<pid>.txt."""
    d = os.environ.get("WEFT_SKIP_DIR")
    if d and os.path.isdir(d):
        prog = " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])
        with open(os.path.join(d, f"{os.getpid()}.txt"), "w", encoding="utf-8") as f:
            f.write(f"{prog}: {why}\n")


def conformance_dir():
    """The corpus, or exit 77 (skip) / 1 under CI=true when it is absent."""
    d = os.environ.get("WEFT_CONFORMANCE_DIR") or os.environ.get("WEFT_CONFORMANCE_DIR_DEFAULT")
    if d and os.path.isdir(d):
        return d
    if os.environ.get("CI") == "true":
        print(f"conformance corpus not found at '{d}' (CI=true: this is a failure)", file=sys.stderr)
        sys.exit(1)
    why = f"conformance corpus not found at '{d}': skipped"
    print(why, file=sys.stderr)
    skip_note(why)
    sys.exit(SKIP)


def weft_bin():
    b = os.environ.get("WEFT_BIN")
    if not b or not os.path.exists(b):
        print(f"WEFT_BIN not set or missing: '{b}'", file=sys.stderr)
        sys.exit(1)
    return os.path.abspath(b)


def run(args, cwd=None, env=None, stdin=None, timeout=None):
    """Runs weft with args; returns (exit code, stdout bytes, stderr text).
    stdin: bytes written to it, or what subprocess takes (None: this
    process's)."""
    feed = stdin if isinstance(stdin, bytes) else None
    p = subprocess.run([weft_bin()] + args, cwd=cwd, env=env, input=feed,
                       stdin=stdin if feed is None else None, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def run_pty(args, env=None, cwd=None, all_tty=False, stdout=subprocess.PIPE, typed=None,
            prompt=b"", timeout=120):
    """Runs weft with args, its stderr on a pseudo-terminal; with all_tty
    its stdin and stdout too (else stdin /dev/null, stdout as given: a pipe
    read at the end, or subprocess.DEVNULL), and typed written to it once
    prompt shows there. Returns (exit code, stdout bytes (b"" unless a
    pipe), the terminal's text with "\r\n" read as "\n"); raises
    TimeoutError (weft killed) past timeout seconds."""
    master, slave = pty.openpty()
    if all_tty:
        p = subprocess.Popen([weft_bin()] + args, cwd=cwd, stdin=slave, stdout=slave,
                             stderr=slave, env=env)
    else:
        p = subprocess.Popen([weft_bin()] + args, cwd=cwd, stdin=subprocess.DEVNULL,
                             stdout=stdout, stderr=slave, env=env)
    os.close(slave)
    term = b""
    t0 = time.monotonic()
    try:
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                p.kill()
                raise TimeoutError(f"weft {' '.join(map(str, args))} ran past the time limit")
            r, _, _ = select.select([master], [], [], min(left, 0.2))
            if r:
                try:
                    d = os.read(master, 65536)
                except OSError:  # EIO: closed
                    break
                if not d:
                    break
                term += d
            if typed is not None and prompt in term:
                os.write(master, typed)
                typed = None
        out = p.stdout.read() if p.stdout is not None else b""
        rc = p.wait(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
        if p.stdout is not None:
            p.stdout.close()
    return rc, out, term.decode("utf-8", "replace").replace("\r\n", "\n")


def writable_copy(src, dst):
    """Copies the trace src to dst with a fresh one's modes (directories
    0755, files 0644), whatever src's (the corpus may be read-only)."""
    shutil.copytree(src, dst)
    for d, _, files in os.walk(dst):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)


def weft_text(*args, cwd=None, timeout=120):
    """Runs weft with args (each through str()): the CompletedProcess, its
    output as text."""
    return subprocess.run([weft_bin()] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def read_maybe_gz(path):
    if os.path.exists(path):
        with open(path, "rb") as f:
            return f.read()
    with gzip.open(path + ".gz", "rb") as f:
        return f.read()


class Checker:
    def __init__(self):
        self.failures = 0
        self.checks = 0

    def expect(self, cond, what):
        """Counts a check of cond; returns cond."""
        self.checks += 1
        if not cond:
            self.failures += 1
            print(f"FAIL: {what}", file=sys.stderr)
        return cond

    def eq(self, got, want, what):
        self.checks += 1
        if got != want:
            self.failures += 1
            print(f"FAIL: {what}\n  got:  {got!r}\n  want: {want!r}", file=sys.stderr)

    def status(self):
        """Prints the counts; the exit status: 1 on a failure or no check."""
        print(f"{self.checks} checks, {self.failures} failures")
        return 1 if self.failures or self.checks == 0 else 0

    def done(self):
        sys.exit(self.status())


# The reference prints an event's three MCV bytes raw; weft escapes them
# unless they are printable ASCII (docs/cli.md). The reference's outputs
# are compared once their MCVs are escaped the same way.
# A reference dump line: "%10ld  MCV  relpath  rest" (the MCV any 3 bytes).
REF_DUMP_LINE = re.compile(rb"^( *-?\d+)  (...)  (.*?)  (.*)$", re.S)
ESC_NAMED = {0x0a: b"\\n", 0x09: b"\\t", 0x0d: b"\\r", 0x1b: b"\\e"}


def esc_mcv(mcv):
    """An MCV as weft prints it: the reference prints the three bytes raw,
    weft escapes them unless they are printable ASCII (docs/cli.md). The
    corpus's MCVs are ASCII, so bytes >= 0x80 (never valid UTF-8 here) are
    \\xHH."""
    if all(0x20 <= b < 0x7f for b in mcv):
        return mcv
    return b"".join(ESC_NAMED.get(b, b"\\x%02x" % b) if b < 0x20 or b >= 0x7f else bytes([b])
                    for b in mcv)


def esc_ref_dump(data):
    out = []
    for line in data.split(b"\n"):
        m = REF_DUMP_LINE.match(line)
        if m is not None:
            line = m.group(1) + b"  " + esc_mcv(m.group(2)) + b"  " + m.group(3) + b"  " + m.group(4)
        out.append(line)
    return b"\n".join(out)


def esc_ref_top(data):
    return b"\n".join(esc_mcv(x[:3]) + x[3:] if len(x) > 3 else x for x in data.split(b"\n"))
