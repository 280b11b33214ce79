#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""file_sizes.py - the engine and the reader stay in files of a few hundred lines.

Every .c and .h file of src/emu/ and src/trace/ has at most LIMIT lines (the
bound the split of the engine and of the reader's private header set: one
concern per file, each read whole in one sitting). The test lists every file
over it with its count, and fails.

Usage: file_sizes.py [--self-test]   (WEFT_SOURCE_DIR: the source tree)
"""
import os
import sys
import tempfile
from pathlib import Path

LIMIT = 700
PARTS = ("src/emu", "src/trace")


def check(root):
    """(files checked, [(relative path, lines)] of those over LIMIT)."""
    n, over = 0, []
    for part in PARTS:
        for f in sorted((root / part).rglob("*")):
            if f.suffix not in (".c", ".h") or not f.is_file():
                continue
            n += 1
            lines = f.read_bytes().count(b"\n")
            if lines > LIMIT:
                over.append((str(f.relative_to(root)), lines))
    return n, over


def self_test():
    """A file one line over the bound is caught; one at the bound is not."""
    with tempfile.TemporaryDirectory(prefix="weft-sizes-") as tmp:
        t = Path(tmp)
        for part in PARTS:
            (t / part).mkdir(parents=True)
        (t / "src/emu/at.c").write_text("x\n" * LIMIT)
        (t / "src/trace/over.h").write_text("x\n" * (LIMIT + 1))
        n, over = check(t)
        if (n, over) != (2, [("src/trace/over.h", LIMIT + 1)]):
            print(f"FAIL self-test: {n} files, over the bound {over!r}")
            return 1
    print(f"self-test: a file of {LIMIT + 1} lines is caught, one of {LIMIT} is not")
    return 0


def main():
    root = Path(os.environ.get("WEFT_SOURCE_DIR") or Path(__file__).resolve().parents[2])
    if "--self-test" in sys.argv and self_test() != 0:
        return 1
    n, over = check(root)
    for rel, lines in over:
        print(f"FAIL {rel}: {lines} lines (at most {LIMIT}: split it along its concerns)")
    largest = max((f.read_bytes().count(b"\n"), str(f.relative_to(root)))
                  for part in PARTS for f in (root / part).rglob("*.[ch]"))
    print(f"file_sizes: {n} files of {', '.join(PARTS)} checked, {len(over)} over {LIMIT} "
          f"lines (the largest: {largest[1]}, {largest[0]})")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
