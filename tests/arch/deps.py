#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""deps.py - the arrows between the parts of src/ point one way.

Every `#include "..."` of a file under src/<part>/ is resolved to the part that
owns the header (include/weft/*.h belongs to the reader, `trace`; include/ovni.h
to the runtime, `rt`; generated headers to `format`), and the test fails when
a part includes a header of a part it must not depend on:

    format  <- rt, trace, model          (the on-disk layout, shared)
    trace   <- model (weft.h only: the event a hook reads), emu, driver, view, cli
    model   <- emu, driver, view, cli    (model descriptions, registry)
    emu     <- out, driver, view         (the engine; outputs see only emu.h)
    out     <- driver, view              (the output formats; out.h, raw_iv.h,
                                          ctf.h, otf2.h (weft export's CTF and
                                          OTF2 writers);
                                          view: out_file.h too, its page written aside)
    driver  <- view, cli, python         (one call runs an emulation)
    view    <- cli                       (weft view's page, server, pictures; view.h, picture*.h)
    sync: format only                    (weft-sync, an MPI program of its own)

Also: an output includes no header of the engine but its interface emu.h, and
nothing includes a part's internal header (emu_internal.h, trace_internal.h,
rt_internal.h, model_hooks.h) from another part.

The C files of the Python module (python/, the part `python`) are held to the
same rule: they reach the reader through weft/weft.h, the emulation through
the driver's driver.h, and the models, the engine and the outputs only
through those parts' interfaces (model.h, emu.h, out.h, raw_iv.h), never a
private header (paraver.h, emu_internal.h, ...).

Usage: deps.py [--self-test]   (WEFT_SOURCE_DIR: the source tree)
"""
import os
import re
import sys
from pathlib import Path

ALLOWED = {
    "format": set(),
    "rt": {"format"},
    "trace": {"format"},
    "model": {"format", "trace"},
    "emu": {"format", "trace", "model"},
    "out": {"format", "emu", "model", "trace"},
    "driver": {"format", "trace", "model", "emu", "out"},
    "view": {"format", "trace", "model", "emu", "out", "driver"},
    "cli": {"format", "trace", "model", "driver", "view"},
    "sync": {"format"},
    "python": {"trace", "model", "emu", "out", "driver"},
}
# Parts outside src/: their directory under the source tree.
OUTSIDE = {"python": "python"}
# Headers an outside part may include (the part's interface); others are private.
INTERFACE = {
    "emu": {"emu.h"},
    "trace": {"weft.h", "weft/weft.h"},
    "model": {"model.h", "model_emu.h", "model_ids.h"},
    "out": {"out.h", "raw_iv.h", "ctf.h", "otf2.h"},
    "driver": {"driver.h"},
    "view": {"view.h", "picture.h", "picture_sink.h"},
    "format": None,  # all
    "rt": {"ovni.h"},
}
# Private headers one part may still include: the view writes its page
# aside and renames it as the outputs do (out_file.h).
EXTRA = {("view", "out_file.h")}
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def part_dir(root, part):
    return root / OUTSIDE[part] if part in OUTSIDE else root / "src" / part


def owners(src, root):
    """header file name -> part"""
    own = {}
    for part in ALLOWED:
        d = part_dir(root, part)
        if d.is_dir():
            for h in d.rglob("*.h"):
                own[h.name] = part
    own["weft.h"] = "trace"
    own["weft/weft.h"] = "trace"
    own["ovni.h"] = "rt"
    own["weft_version.h"] = "format"
    return own


def check(root):
    src = root / "src"
    own = owners(src, root)
    errors = []
    nfiles = 0
    for part in ALLOWED:
        d = part_dir(root, part)
        if not d.is_dir():
            continue
        for f in sorted(d.rglob("*.[ch]")):
            nfiles += 1
            for inc in INC.findall(f.read_text(errors="replace")):
                key = inc if inc in own else os.path.basename(inc)
                dep = own.get(key)
                if dep is None or dep == part:
                    continue
                rel = f.relative_to(root)
                if dep not in ALLOWED[part]:
                    errors.append(f"{rel}: includes \"{inc}\" of part '{dep}', which '{part}' "
                                  f"must not depend on")
                elif (INTERFACE.get(dep) is not None and key not in INTERFACE[dep]
                      and (part, key) not in EXTRA):
                    errors.append(f"{rel}: includes \"{inc}\", a private header of part '{dep}'")
    return nfiles, errors


def self_test(root):
    """The checker itself catches a forbidden include (a test that cannot fail is a defect)."""
    import shutil
    import tempfile
    with tempfile.TemporaryDirectory(prefix="weft-deps-") as tmp:
        t = Path(tmp)
        shutil.copytree(root / "src", t / "src")
        (t / "src" / "model" / "bad.c").write_text('#include "emu.h"\n')
        (t / "src" / "out" / "bad2.c").write_text('#include "emu_internal.h"\n')
        (t / "python").mkdir()
        (t / "python" / "bad3.c").write_text('#include "weft/weft.h"\n#include "driver.h"\n'
                                             '#include "paraver.h"\n')
        (t / "python" / "bad4.c").write_text('#include "ovni.h"\n')
        _, errs = check(t)
        want = ["src/model/bad.c: includes \"emu.h\" of part 'emu', which 'model' must not "
                "depend on",
                "src/out/bad2.c: includes \"emu_internal.h\", a private header of part 'emu'",
                "python/bad3.c: includes \"paraver.h\", a private header of part 'out'",
                "python/bad4.c: includes \"ovni.h\" of part 'rt', which 'python' must not "
                "depend on"]
        unwanted = [e for e in errs if "python/bad3.c" in e and "paraver.h" not in e]
        if unwanted:
            print(f"FAIL self-test: public headers refused: {unwanted!r}")
            return 1
        for w in want:
            if w not in errs:
                print(f"FAIL self-test: expected {w!r} in {errs!r}")
                return 1
    print("self-test: a forbidden include and a private header are both caught, in src/ "
          "and in python/")
    return 0


def main():
    root = Path(os.environ.get("WEFT_SOURCE_DIR") or Path(__file__).resolve().parents[2])
    if "--self-test" in sys.argv and self_test(root) != 0:
        return 1
    n, errs = check(root)
    for e in errs:
        print("FAIL " + e)
    print(f"deps: {n} files of src/ and python/ checked, {len(errs)} forbidden include(s)")
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main())
