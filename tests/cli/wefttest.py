# SPDX-License-Identifier: MIT
"""Shared helpers of the CLI tests: where things are, running weft, skipping."""
import gzip
import os
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
