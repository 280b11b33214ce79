#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""prv_blocks.py - the blocks of the .prv files of `weft emu --paraver`.

The writer reserves a .prv file's blocks ahead of its writes (fallocate,
without changing the size) and frees those past the end at close. On a trace
whose thread.prv spans several write pieces, each .prv must hold no more
blocks than its size needs (allowing 1 MiB of file system rounding: a leftover
reservation is tens of MiB), also when the run writes over the files of an
earlier one, and the second run's files must equal the first's.
"""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from cli_emu import rounds_trace  # noqa: E402

WEFT = os.environ["WEFT_BIN"]
SLACK = 1 << 20


def trace(root, k):
    rounds_trace(root, k)


def main():
    bad = 0
    with tempfile.TemporaryDirectory(prefix="weft-prv-blocks-") as tmp:
        tmp = Path(tmp)
        trace(tmp / "ovni", 40000)
        out = tmp / "out"
        first = {}
        for run in (1, 2):
            r = subprocess.run([WEFT, "emu", "--paraver", "-q", "-o", str(out),
                                str(tmp / "ovni")], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL run {run}: weft emu exited {r.returncode}: {r.stderr}")
                return 1
            for name in ("thread.prv", "cpu.prv"):
                st = os.stat(out / name)
                data = (out / name).read_bytes()
                if st.st_size != len(data) or not data.endswith(b"\n"):
                    print(f"FAIL run {run} {name}: size {st.st_size}, {len(data)} bytes read")
                    bad += 1
                if st.st_blocks * 512 > st.st_size + SLACK:
                    print(f"FAIL run {run} {name}: {st.st_blocks * 512} bytes of blocks "
                          f"for {st.st_size} bytes")
                    bad += 1
                if run == 1:
                    first[name] = data
                elif data != first[name]:
                    print(f"FAIL {name}: the second run's file differs from the first's")
                    bad += 1
        if bad:
            return 1
        print(f"ok: thread.prv {len(first['thread.prv'])} bytes, "
              f"cpu.prv {len(first['cpu.prv'])} bytes, no blocks past their ends")
        return 0


if __name__ == "__main__":
    sys.exit(main())
