# SPDX-License-Identifier: MIT
"""examples/python/tour.py runs on a conformance case, with its output."""
import os
import subprocess
import sys

from pycommon import Checker, conformance_dir, need_module

need_module()
root = conformance_dir()
c = Checker()
tour = os.path.join(os.environ["WEFT_SOURCE_DIR"], "examples", "python", "tour.py")
p = subprocess.run([sys.executable, tour, os.path.join(root, "v3", "two-looms", "ovni")],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
c.eq(p.returncode, 0, "exit status")
c.eq(p.stderr, "", "stderr")
lines = p.stdout.split("\n")
c.eq(lines[:5], ["looms: [('nodeA', 2), ('nodeB', 2)]",
                 "process 17376 rank 0 threads [17376, 17378]",
                 "process 17377 rank 1 threads [17377, 17379]",
                 "streams: 4 libovni 1.14.0",
                 "events: 26 from 484650500076 to 484652859043"], "the first cells")
c.expect("OHp 8" in lines, "events per MCV")
c.expect("thread 17378 starts on CPU 1 - starts running on CPU 1; created by thread 17376 "
         "with tag 0x0" in lines, "the OHx fields")
c.expect("TH 1.17379 Dead 456634 ns" in lines, "the emulation's states")
c.done()
