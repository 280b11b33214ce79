# SPDX-License-Identifier: MIT
"""Shared by the Python module's tests: the module or a skip, the corpus."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("WEFT_SOURCE_DIR", ""), "tests", "cli"))
import wefttest  # noqa: E402  (tests/cli: skip notes, the corpus, running weft)
from wefttest import Checker, conformance_dir, run, weft_bin, SKIP  # noqa: E402,F401


def need_module():
    """Imports weft, or exits 77 with a skip note saying why it was not
    built; under CI=true on Debian (python3-dev and python3-numpy come with
    scripts/install-deps.sh) a module that was not built is a failure."""
    if os.environ.get("WEFT_PYTHON_BUILT") != "1":
        why = "the Python module was not built: " + (os.environ.get("WEFT_PYTHON_WHY")
                                                      or "unknown reason")
        sanitizer = "sanitizer build" in os.environ.get("WEFT_PYTHON_WHY", "")
        if os.environ.get("CI") == "true" and os.path.exists("/etc/debian_version") \
                and not sanitizer:
            print(why + " (CI=true on Debian: this is a failure)", file=sys.stderr)
            sys.exit(1)
        print(why + ": skipped", file=sys.stderr)
        wefttest.skip_note(why)
        sys.exit(SKIP)
    import weft
    return weft


def cases(root, kinds=("v3", "v1", "bad", "models")):
    """Every case directory holding an ovni/ trace, sorted."""
    out = []
    for k in kinds:
        base = os.path.join(root, k)
        if not os.path.isdir(base):
            continue
        for name in sorted(os.listdir(base)):
            d = os.path.join(base, name)
            if os.path.isdir(os.path.join(d, "ovni")):
                out.append(d)
    return out
