# SPDX-License-Identifier: MIT
"""Every error path of weft dump/top/check on synthetic traces: the exact exit
code, stdout and stderr of each case (see errors_cases.py for the traces).
With --print, shows what weft does instead of checking."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from errors_cases import CASES  # noqa: E402
from errors_expected import EXPECTED  # noqa: E402
from wefttest import Checker, run, weft_bin  # noqa: E402


def main():
    show = "--print" in sys.argv
    c = Checker()
    if not show:
        c.eq(sorted(EXPECTED), sorted(n for n, _, _ in CASES), "every case has its expectation")
    for name, build, argv in CASES:
        tmp = tempfile.mkdtemp(prefix="weft-err-")
        try:
            root = os.path.join(tmp, "t")
            os.mkdir(root)
            build(root)
            rc, out, err = run(argv, cwd=tmp)
            got = (rc, out.decode("utf-8", "replace"), err)
            if show:
                print(f"    {name!r}: {got!r},")
            elif name in EXPECTED:
                c.eq(got, EXPECTED[name], f"{name}: weft {' '.join(argv)}")
        finally:
            shutil.rmtree(tmp)
    if not show:
        # a failing output: weft dump into a full device
        tmp = tempfile.mkdtemp(prefix="weft-err-")
        try:
            root = os.path.join(tmp, "t")
            os.mkdir(root)
            from errors_cases import one, m  # noqa: E402
            one(m())(root)
            with open("/dev/full", "wb") as full:
                p = subprocess.run([weft_bin(), "dump", "t"], cwd=tmp, stdout=full,
                                   stderr=subprocess.PIPE)
            c.eq((p.returncode, p.stderr.decode()),
                 (1, "weft dump: cannot write the output: No space left on device\n"),
                 "weft dump > /dev/full")
        finally:
            shutil.rmtree(tmp)
        # WEFT_READAHEAD: on and off give the same output; anything else is refused
        tmp = tempfile.mkdtemp(prefix="weft-err-")
        try:
            root = os.path.join(tmp, "t")
            os.mkdir(root)
            from errors_cases import one, m  # noqa: E402
            one(m())(root)
            outs = {}
            for val in ("on", "off", None):
                env = dict(os.environ)
                env.pop("WEFT_READAHEAD", None)
                if val is not None:
                    env["WEFT_READAHEAD"] = val
                for cmd in ("dump", "check"):
                    p = subprocess.run([weft_bin(), cmd, "t"], cwd=tmp, env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                    outs[(val, cmd)] = (p.returncode, p.stdout, p.stderr)
            for cmd in ("dump", "check"):
                c.eq(outs[("on", cmd)], outs[(None, cmd)], f"WEFT_READAHEAD=on weft {cmd}")
                c.eq(outs[("off", cmd)], outs[(None, cmd)], f"WEFT_READAHEAD=off weft {cmd}")
                c.eq(outs[(None, cmd)][0], 0, f"weft {cmd} exit status")
            env = dict(os.environ, WEFT_READAHEAD="yes")
            p = subprocess.run([weft_bin(), "dump", "t"], cwd=tmp, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            c.eq((p.returncode, p.stdout, p.stderr.decode()),
                 (1, b"", "weft dump: WEFT_READAHEAD is 'yes'; it must be 'on' or 'off' "
                  "(or unset)\n"), "WEFT_READAHEAD=yes weft dump")
        finally:
            shutil.rmtree(tmp)
        c.done()


main()
