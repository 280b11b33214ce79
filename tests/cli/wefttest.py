# SPDX-License-Identifier: MIT
"""Shared helpers of the CLI tests: where things are, running weft, skipping."""
import gzip
import os
import re
import subprocess
import sys

SKIP = 77


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


def run(args, cwd=None):
    """Runs weft with args; returns (exit code, stdout bytes, stderr text)."""
    p = subprocess.run([weft_bin()] + args, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


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
        self.checks += 1
        if not cond:
            self.failures += 1
            print(f"FAIL: {what}", file=sys.stderr)

    def eq(self, got, want, what):
        self.checks += 1
        if got != want:
            self.failures += 1
            print(f"FAIL: {what}\n  got:  {got!r}\n  want: {want!r}", file=sys.stderr)

    def done(self):
        print(f"{self.checks} checks, {self.failures} failures")
        sys.exit(1 if self.failures or self.checks == 0 else 0)


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
