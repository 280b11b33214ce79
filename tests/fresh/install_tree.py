# SPDX-License-Identifier: MIT
"""install_tree: `cmake --install` of this build into DESTDIR=<tmp> with the
prefix /usr/local (the README's Installing command, staged), then:
  - the Python module is in the directory under /usr/local that the
    interpreter it was built for searches (site.getsitepackages(): on
    Debian's python3 lib/python3.X/dist-packages), or, when it searches none
    there, in sysconfig's posix_prefix lib/python3.X/site-packages; and it
    imports from there;
  - the man pages: exactly weft.1, weft-CMD.1 for each command of
    `weft --help` and ovnidump/ovnitop/ovniemu/ovnisort.1; weft-emu.1's NAME
    and SYNOPSIS lines as its --help says, every line of `weft emu --help`
    in the page, and `man -l` renders it (when man is there);
  - a program built with `pkg-config --define-prefix --cflags --libs ovni`
    fails to start without LD_LIBRARY_PATH exactly when `weft version`'s
    loader line says the loader cannot load libovni.so.1 (then its note names
    the staged lib directory), and with LD_LIBRARY_PATH both run and the
    loader line names the staged library.
Usage: install_tree.py CMAKE BUILD_DIR CC PKG_CONFIG PYTHON_EXE_OR_EMPTY
(a DESTDIR install skips ldconfig: the system is not touched)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import Checker  # noqa: E402

TIMEOUT = 120


def run(args, env=None, cwd=None):
    p = subprocess.run(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=TIMEOUT)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def roff_escape(line):
    out = line.replace("\\", "\\e").replace("-", "\\-")
    if out.startswith(".") or out.startswith("'"):
        out = "\\&" + out
    return out


def main():
    cmake, build, cc, pkgconfig, py = sys.argv[1:6]
    chk = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-install-")
    try:
        dest = os.path.join(tmp, "dest")
        env = dict(os.environ, DESTDIR=dest)
        rc, out, err = run([cmake, "--install", build, "--prefix", "/usr/local"], env=env)
        chk.eq(rc, 0, f"cmake --install: {err[-2000:]}")
        root = dest + "/usr/local"
        weft = root + "/bin/weft"

        # The Python module.
        if py:
            probe = ("import site, sysconfig, os\n"
                     "d = [x for x in site.getsitepackages() if x.startswith('/usr/local/')]\n"
                     "print(os.path.relpath(d[0], '/usr/local') if d else "
                     "sysconfig.get_path('platlib', 'posix_prefix', vars={'base': '/usr/local', "
                     "'platbase': '/usr/local'})[len('/usr/local/'):])\n")
            rc, rel, err = run([py, "-c", probe])
            rel = rel.strip()
            chk.eq(rc, 0, f"{py}: its site directories: {err}")
            pkg = os.path.join(root, rel, "weft")
            chk.expect(os.path.isfile(os.path.join(pkg, "__init__.py")),
                       f"the Python module in {pkg} (where {py} looks): {os.listdir(root + '/lib')}")
            chk.eq(sorted(n for n in os.listdir(pkg) if n.startswith("_weft")) if os.path.isdir(pkg) else [],
                   [n for n in sorted(os.listdir(os.path.join(build, "python", "weft"))) if n.startswith("_weft")],
                   "the extension next to it")
            chk.expect(f"-- weft Python module: /usr/local/{rel}/weft" in out,
                       f"the install names the directory it used: {out[-600:]}")
            rc, o, err = run([py, "-c", "import weft; print(weft.__file__)"], cwd=tmp,
                             env=dict(os.environ, PYTHONPATH=os.path.join(root, rel)))
            chk.eq((rc, o.strip()), (0, os.path.join(pkg, "__init__.py")), f"import weft: {err[-500:]}")

        # The man pages.
        rc, top, err = run([weft, "--help"])
        cmds = re.findall(r"^  (\w+) ", top.split("\nCommands:\n", 1)[-1].split("\n\n", 1)[0], re.M)
        chk.expect(len(cmds) >= 8, f"weft --help lists the commands: {cmds}")
        mandir = root + "/share/man/man1"
        want = sorted(["weft.1"] + [f"weft-{c}.1" for c in cmds]
                      + [f"{n}.1" for n in ("ovnidump", "ovnitop", "ovniemu", "ovnisort")])
        chk.eq(sorted(os.listdir(mandir)) if os.path.isdir(mandir) else [], want, "the man pages")
        page = open(os.path.join(mandir, "weft-emu.1"), encoding="utf-8").read() \
            if os.path.isfile(os.path.join(mandir, "weft-emu.1")) else ""
        lines = page.split("\n")
        chk.expect(".SH NAME" in lines and lines[lines.index(".SH NAME") + 1]
                   == "weft\\-emu \\- emulate the trace into Paraver and Perfetto timelines",
                   f"weft-emu.1's NAME: {page[:400]!r}")
        rc, h, err = run([weft, "emu", "--help"])
        usage = h.split("\n")[0]
        chk.expect(usage.startswith("Usage: weft emu ")
                   and ".SH SYNOPSIS" in lines and lines[lines.index(".SH SYNOPSIS") + 2]
                   == roff_escape(usage[len("Usage: "):]), f"weft-emu.1's SYNOPSIS: {usage!r}")
        # after the usage lines (the SYNOPSIS: up to the first blank line)
        hl = h.split("\n")
        body = hl[hl.index(""):] if "" in hl else []
        missing = [ln for ln in body if ln.strip() and roff_escape(ln) not in lines]
        chk.eq(missing, [], "every line of `weft emu --help` in weft-emu.1")
        if shutil.which("man"):
            rc, o, err = run(["man", "-l", os.path.join(mandir, "weft-emu.1")],
                             env=dict(os.environ, MANPAGER="cat", MANWIDTH="80", LANG="C"))
            chk.expect(rc == 0 and "emulate the trace into Paraver and Perfetto timelines" in o,
                       f"man -l weft-emu.1: exit {rc}: {o[:300]!r} {err[:300]!r}")

        # A program built with pkg-config ovni, and weft version's loader line.
        src = os.path.join(tmp, "app.c")
        with open(src, "w") as f:
            f.write('#include <ovni.h>\n#include <stdio.h>\nint main(void)\n{\n'
                    '\tconst char *v, *c;\n\tovni_version_get(&v, &c);\n'
                    '\tprintf("libovni %s %s\\n", v, c);\n\treturn 0;\n}\n')
        rc, flags, err = run([pkgconfig, "--define-prefix", "--cflags", "--libs", "ovni"],
                             env=dict(os.environ, PKG_CONFIG_PATH=root + "/lib/pkgconfig"))
        chk.expect(rc == 0 and f"-L{root}/lib" in flags, f"pkg-config --define-prefix ovni: {flags!r} {err!r}")
        app = os.path.join(tmp, "app")
        rc, o, err = run([cc, src, "-o", app] + flags.split())
        chk.eq(rc, 0, f"cc app.c $(pkg-config ...): {err[-1000:]}")
        if rc != 0:
            chk.done()
        noenv = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        rc_app, o_app, err_app = run([app], env=noenv)
        rc, ver, err = run([weft, "version"], env=noenv)
        loader = [ln for ln in ver.split("\n") if ln.startswith("loader: ")]
        who = "loader: a program linked with -lovni (no RUNPATH)"
        if rc_app != 0:
            chk.expect("libovni.so.1: cannot open shared object file" in err_app, f"app: {err_app!r}")
            chk.eq(loader, [f"{who} cannot load it: libovni.so.1: cannot open shared object file: "
                            "No such file or directory"], "weft version: the loader cannot load it")
            chk.expect(f"note: {root}/lib is not in the loader's search path: as root, run ldconfig" in ver,
                       f"weft version's note: {ver!r}")
        else:
            chk.expect(len(loader) == 1 and loader[0].startswith(f"{who} loads /"),
                       f"weft version says the loader finds the system's libovni: {ver!r}")
        withenv = dict(os.environ, LD_LIBRARY_PATH=root + "/lib")
        rc, o, err = run([app], env=withenv)
        chk.eq((rc, o), (0, "libovni 1.14.0 weft\n"), f"app with LD_LIBRARY_PATH: {err!r}")
        rc, ver, err = run([weft, "version"], env=withenv)
        chk.expect(f"\n{who} loads {root}/lib/libovni.so.1\n" in ver, f"weft version with LD_LIBRARY_PATH: {ver!r}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    chk.done()


if __name__ == "__main__":
    main()
