# SPDX-License-Identifier: MIT
"""The one option parser of every weft command (src/cli/cli_opts.c,
docs/cli.md "Options"):
  - for every command, an unknown option, an option without its argument and
    a misspelt option each give one line of the same form on stderr, exactly,
    nothing on stdout and exit status 2; a misspelling names the option meant;
  - a misspelt command names the command meant (`weft dmup`);
  - a model file's misspelt key names the key meant;
  - `weft help CMD` prints exactly what `weft CMD --help` prints, and
    `weft help` what `weft --help` prints;
  - bundled short flags (-cqn64, -qbo DIR), -oVALUE, --opt=value and
    --opt value give the same results as the options spelt one by one, and
    "--" makes what follows an operand.
Environment: WEFT_BIN, WEFT_CONFORMANCE_DIR."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wefttest import Checker, conformance_dir, weft_bin  # noqa: E402

TIMEOUT = 60


def run(args, cwd=None):
    """weft with args: (exit status, stdout bytes, stderr text), bounded."""
    p = subprocess.run([weft_bin()] + [str(a) for a in args], cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def usage(cmd, what):
    return (2, b"", f"weft {cmd}: {what}; run `weft {cmd} --help`\n")


# per command: (an unknown option, the option without its argument and the
# message's name for the argument, a misspelling and what it means)
CASES = {
    "dump": ("-z", ["--model"], "FILE", "--hexx", "--hex"),
    "top": ("-z", ["--from"], "a time", "--folow", "--follow"),
    "check": ("-z", ["--model"], "FILE", "--rats", "--rates"),
    "emu": ("-z", ["-o"], "a directory", "--ouptut", "--output"),
    "sort": ("-z", ["-n"], "a number of events", "--look-bak=3", "--look-back"),
    "index": ("-z", ["--model"], "FILE", "--quite", "--quiet"),
    "sql": ("-z", ["-o"], "FILE", "--csvv", "--csv"),
    "view": ("-z", ["--budget"], "SIZE", "--budgte", "--budget"),
    "export": ("-z", ["-o"], "DIR", "--forse", "--force"),
    "version": ("-z", None, None, "--hlep", "--help"),
}


def messages(c):
    for cmd, (bad, missing, argname, typo, meant) in CASES.items():
        # operands first: the options come anywhere, the error is the option's
        c.eq(run([cmd, "t", bad] if cmd != "version" else [cmd, bad]),
             usage(cmd, f"unknown option '{bad}'"), f"{cmd}: unknown option")
        # in a bundle, the letter that is not an option is named
        bundle = {"dump": "-xz", "check": "-rz", "emu": "-qz", "sort": "-cz", "index": "-qz",
                  "sql": "-az", "view": "-qz", "export": "-qz"}.get(cmd, "-zz")
        c.eq(run([cmd, bundle, "t"] if cmd != "version" else [cmd, bundle]),
             usage(cmd, "unknown option '-z'"), f"{cmd}: unknown letter in a bundle")
        if missing is not None:
            c.eq(run([cmd, "t"] + missing),
                 usage(cmd, f"option '{missing[0]}' needs an argument ({argname})"),
                 f"{cmd}: {missing[0]} without its argument")
        c.eq(run([cmd, typo, "t"] if cmd != "version" else [cmd, typo]),
             usage(cmd, f"unknown option '{typo}' (did you mean '{meant}'?)"),
             f"{cmd}: misspelt {typo}")
        # a flag given a value
        flag = {"dump": "--hex", "top": "--follow", "check": "--rates", "emu": "--quiet",
                "sort": "--check", "index": "--quiet", "sql": "--csv",
                "view": "--serve", "export": "--force"}.get(cmd)
        if flag is not None:
            c.eq(run([cmd, f"{flag}=1", "t"]), usage(cmd, f"option '{flag}' takes no argument"),
                 f"{cmd}: {flag}=1")
        # help
        code, out, err = run([cmd, "--help"])
        c.expect(code == 0 and err == "" and out.startswith(b"Usage: weft " + cmd.encode()),
                 f"{cmd} --help: the usage, exit 0")
        c.eq(run(["help", cmd]), (code, out, err), f"weft help {cmd} = weft {cmd} --help")
        c.eq(run([cmd, "-h"]), (code, out, err), f"weft {cmd} -h = weft {cmd} --help")
    c.eq(run(["help"]), run(["--help"]), "weft help = weft --help")
    c.expect(run(["help"])[0] == 0, "weft help: exit 0")
    c.eq(run(["dmup", "t"]), (2, b"", "weft: unknown command 'dmup' (did you mean 'dump'?); "
                                      "run `weft --help` for the list\n"), "weft dmup")
    c.eq(run(["help", "sqll"]), (2, b"", "weft: unknown command 'sqll' (did you mean 'sql'?); "
                                         "run `weft --help` for the list\n"), "weft help sqll")
    c.eq(run(["frobnicate"]), (2, b"", "weft: unknown command 'frobnicate'; "
                                       "run `weft --help` for the list\n"), "weft frobnicate")
    c.eq(run(["help", "dump", "top"]),
         (2, b"", "weft help: more than one COMMAND ('dump' and 'top'); run `weft --help`\n"),
         "weft help dump top")
    # after "--", an option-like word is an operand
    c.eq(run(["version", "--", "-x"]),
         (2, b"", "weft version: unexpected argument '-x'; run `weft version --help`\n"),
         "weft version -- -x")
    c.eq(run(["dump", "a", "--", "-x"]), usage("dump", "more than one PATH ('a' and '-x')"),
         "weft dump a -- -x")


def model_key(c, tmp):
    f = os.path.join(tmp, "typo.yaml")
    with open(f, "w", encoding="utf-8") as fh:
        fh.write("weft-model: 1\nname: zeta\nbyte: Z\nversion: 1.0.0\n"
                 "evnets:\n  - mcv: ZPs\n    desc: enters the setup phase\n")
    c.eq(run(["check", "--model", f, "t"]),
         (1, b"", f"weft check: {f}:5: model: unknown key 'evnets' (did you mean 'events'?)\n"),
         "a misspelt model key")


def spellings(c, tmp, trace):
    """Bundles, attached values and --opt=value against the long spellings."""
    same = [
        (["check", "-r", trace], ["check", "--rates", trace]),
        (["sort", "-cn64", trace], ["sort", "--check", "--look-back", "64", trace]),
        (["sort", "-c", "-n", "64", trace], ["sort", "-c", "--look-back=64", trace]),
        (["dump", "-x", "--to=10min", trace], ["dump", "--hex", "--to", "10min", trace]),
        (["top", "--to=2s", trace], ["top", "--to", "2s", trace]),
        (["sql", "-a", trace, "SELECT count(*) FROM event"],
         ["sql", trace, "--all-models", "SELECT count(*) FROM event"]),
    ]
    for a, b in same:
        ra, rb = run(a), run(b)
        c.expect(ra[0] == 0 and len(ra[1]) > 0 and ra[2] == "",
                 f"weft {' '.join(map(str, a))}: ran ({ra[2]!r})")
        c.eq(ra, rb, f"weft {' '.join(map(str, a))} = weft {' '.join(map(str, b))}")
    # -q (quiet) in a bundle: the summary line of -c goes
    c.eq(run(["sort", "-cq", trace]), (0, b"", ""), "sort -cq: quiet, exit 0")
    c.expect(run(["sort", "-c", trace])[1] != b"", "sort -c: a summary line")
    # emu: -qbo DIR, -oDIR and --output=DIR write the same files
    outs = []
    for i, args in enumerate((["-qbo", "@"], ["-q", "-b", "-o@"],
                              ["--quiet", "--breakdown", "--output=@"])):
        d = os.path.join(tmp, f"emu{i}")
        r = run(["emu"] + [x.replace("@", d) for x in args] + [trace])
        c.eq((r[0], r[1], r[2]), (0, b"", ""), f"emu {args}: quiet, exit 0")
        files = {}
        for root, _, names in os.walk(d):
            for n in names:
                with open(os.path.join(root, n), "rb") as fh:
                    files[os.path.relpath(os.path.join(root, n), d)] = fh.read()
        outs.append(files)
    c.expect(len(outs[0]) > 0, "emu -qbo: wrote files")
    c.expect(outs[0] == outs[1] == outs[2], "emu: -qbo DIR, -q -b -oDIR, --output=DIR alike")


def main():
    corpus = conformance_dir()
    trace = os.path.join(corpus, "models", "mix-0", "ovni")
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-options-")
    try:
        messages(c)
        model_key(c, tmp)
        spellings(c, tmp, trace)
    finally:
        shutil.rmtree(tmp)
    c.done()


if __name__ == "__main__":
    main()
