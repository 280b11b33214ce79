# SPDX-License-Identifier: MIT
"""weft import laplace (docs/export.md, "Laplace").

- round trip: a generated Laplace per-process merge trace (four processes,
  tasks and a kernel-thread file each, canonical pages shared between tasks
  and processes, kernel references, kernel records with and without fields,
  e records, an empty task file, weft split's index file) imported, then `weft split --by thread`
  gives every file back byte for byte; `--by process` gives, per process, the
  records of its task files merged in clock order;
- malformed input: each kind refused with its exact message (FILE:LINE: why),
  exit status 1, and nothing left at the output; usage errors exit 2;
- the tools: weft dump, weft emu (thread.prv) and weft sql on a small imported
  trace give exactly the expected lines.
"""
import filecmp
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import Checker, weft_bin  # noqa: E402

TIMEOUT = 60
INDEX_HEAD = (
    "# Laplace per-process merge layout, written by weft split (docs/export.md, \"Laplace\")\n"
    "# by: {by}\n"
    "# records, one a line, by type tag:\n"
    "#   r w i R W I: tag clock length vpage cpage\n"
    "#   e: tag clock mcv flags payload\n"
    "#   other tags (kernel records): tag clock fields\n"
    "# files (directory/file records):\n")


def weft(*args, cwd=None):
    p = subprocess.run([weft_bin()] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT, cwd=cwd)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def write_tree(d, files, by="thread"):
    """files: {'proc/file': [lines]}; also the index split writes."""
    os.makedirs(d)
    for path, lines in files.items():
        os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(d, path), "w", encoding="utf-8", newline="") as f:
            f.write("".join(x + "\n" for x in lines))
    with open(os.path.join(d, "index"), "w", encoding="utf-8") as f:
        f.write(INDEX_HEAD.format(by=by))
        for path in sorted(files):
            f.write(f"{path} {len(files[path])}\n")


def generate(rng):
    """A Laplace trace: {'proc/file': [lines]}."""
    shared_pages = [rng.getrandbits(64) & 0x7fffffffffffffff for _ in range(6)]
    procs = ["proc.1", "proc.17", "web-server", "zz_batch+2"]
    files = {}
    for p in procs:
        names = ["kernel"] + [f"thread.{rng.randint(1, 99999)}" for _ in range(rng.randint(1, 3))]
        if p == "web-server":
            names.append("worker-a")
        own = [rng.getrandbits(64) for _ in range(8)]
        for name in names:
            kernel = name == "kernel"
            clock = rng.getrandbits(40)
            lines = []
            for _ in range(rng.randint(20, 60)):
                clock += rng.choice([0, 0, 1, 7, 1000, rng.getrandbits(20)])
                x = rng.random()
                if x < 0.75:
                    tag = rng.choice("RWI" if kernel else "rwi")
                    cp = rng.choice(shared_pages if rng.random() < 0.4 else own)
                    lines.append(f"{tag} {clock:016x} {rng.randint(0, 15):x} "
                                 f"{rng.randint(0, 40) if rng.random() < .7 else rng.getrandbits(20):05x} "
                                 f"{cp:016x}")
                elif x < 0.85:
                    lines.append(f"F {clock:016x} {rng.randint(1, 999):x} {rng.randint(1, 999):x}")
                elif x < 0.92:
                    lines.append(f"M {clock:016x} 100 1a2b3c4d 9000 8efa5567 35 5 "
                                 f"{rng.getrandbits(64):016x} lib{rng.randint(0, 9)}.so")
                elif x < 0.96:
                    lines.append(f"X {clock:016x}")
                elif x < 0.98:
                    lines.append(f"e {clock:016x} OB. 00 -")
                else:
                    lines.append(f"e {clock:016x} OXj 13 00ff10")
            files[f"{p}/{name}"] = lines
    files["zz_batch+2/idle"] = []  # a task without records: an empty file both ways
    # a kernel record of the longest line (65536 bytes)
    files["zz_batch+2/long"] = ["M 0000000000000001 " + "x" * (65536 - 19)]
    return files


def read_all(d):
    out = {}
    for root, _dirs, fs in os.walk(d):
        for f in fs:
            with open(os.path.join(root, f), "rb") as fh:
                out[os.path.relpath(os.path.join(root, f), d)] = fh.read()
    return out


def round_trip(c, tmp):
    rng = random.Random(20261128)
    files = generate(rng)
    src, tr, out, byp = (os.path.join(tmp, x) for x in ("src", "tr", "out", "byp"))
    write_tree(src, files)
    nrec = sum(len(v) for v in files.values())
    rc, so, se = weft("import", "laplace", src, "-o", tr)
    c.eq((rc, se), (0, ""), "import: exit and stderr")
    c.eq(so, f"{tr}: 4 processes, {len(files)} streams, {nrec + 2 * len(files)} events\n",
         "import: summary")
    rc, so, se = weft("split", tr, "-o", out)
    c.eq((rc, se.count("error")), (0, 0), f"split: exit ({se!r})")
    c.eq(so, f"{out}: 4 processes, {len(files)} files, {nrec} records\n", "split: summary")
    a, b = read_all(src), read_all(out)
    c.eq(sorted(b), sorted(a), "round trip: the same files")
    for k in sorted(a):
        c.expect(a[k] == b.get(k), f"round trip: {k} byte for byte")
    c.expect(filecmp.cmp(os.path.join(src, "index"), os.path.join(out, "index"), shallow=False),
             "round trip: index")
    # --by process: each process's task files merged by clock (the kernel file apart)
    rc, so, se = weft("split", "--by", "process", "-q", tr, "-o", byp)
    c.eq((rc, so), (0, ""), f"split --by process: exit ({se!r})")
    for p in sorted({k.split("/")[0] for k in files}):
        recs = []
        for k, v in files.items():
            if k.startswith(p + "/") and not k.endswith("/kernel"):
                recs += v
        with open(os.path.join(byp, p, "process"), encoding="utf-8") as f:
            got = f.read().splitlines()
        c.eq(sorted(got), sorted(recs), f"--by process: {p}/process holds its tasks' records")
        clocks = [int(x.split(" ")[1], 16) for x in got]
        c.expect(clocks == sorted(clocks), f"--by process: {p}/process in clock order")
        with open(os.path.join(byp, p, "kernel"), encoding="utf-8") as f:
            c.eq(f.read().splitlines(), files[p + "/kernel"], f"--by process: {p}/kernel")
    # the imported streams' metadata: web-server's kernel thread
    pdir = os.path.join(tr, "loom.laplace", "proc.3")
    metas = []
    for t in sorted(os.listdir(pdir)):
        with open(os.path.join(pdir, t, "stream.json"), encoding="utf-8") as f:
            metas.append(f.read())
    c.eq(sum('"dir": "web-server",\n        "file": "kernel",\n        "kernel": true\n' in m
             for m in metas), 1, "stream.json: web-server's kernel thread")
    c.eq(len(metas), sum(k.startswith("web-server/") for k in files), "web-server: its streams")


SMALL = {
    "proc.a/thread.1": [
        "r 0000000000000010 4 9a8b7 8888ffff3e456a21",
        "F 0000000000000011 100 77",
        "w 0000000000000012 8 9a8b8 0000000000000042",
        "M 0000000000000013 100 1a2b3c4d 9000 8efa5567 35 5 1029384756afbecd foobar.so",
        "i 0000000000000014 4 9a8b7 8888ffff3e456a21"],
    "proc.a/thread.2": [
        "r 0000000000000015 4 00001 0000000000000042",
        "X 0000000000000016"],
    "proc.a/kernel": [
        "R 0000000000000010 4 fffff 0000000000000001",
        "W 0000000000000017 2 fffff 0000000000000042"],
    "proc.b/t": ["r 0000000000000020 4 00001 0000000000000099"],
}

DUMP = """\
        16  OHx  loom.laplace/proc.1/thread.1  starts running on CPU -1; created by thread 0 with tag 0x0
        16  OHx  loom.laplace/proc.1/thread.2  starts running on CPU -1; created by thread 0 with tag 0x0
        16  LRR  loom.laplace/proc.1/thread.1  kernel reads 4 bytes of page 0xfffff (canonical 0x1): read 1, 1 pages, 0 shared
        16  LRr  loom.laplace/proc.1/thread.2  reads 4 bytes of page 0x9a8b7 (canonical 0x8888ffff3e456a21): read 1, 1 pages, 0 shared
        17  LKF  loom.laplace/proc.1/thread.2  kernel record: 100 77
        18  LRw  loom.laplace/proc.1/thread.2  writes 8 bytes of page 0x9a8b8 (canonical 0x42): write 1, 2 pages, 1 shared
        19  LKM  loom.laplace/proc.1/thread.2  kernel record: 100 1a2b3c4d 9000 8efa5567 35 5 1029384756afbecd foobar.so
        20  LRi  loom.laplace/proc.1/thread.2  fetches 4 bytes of instructions of page 0x9a8b7 (canonical 0x8888ffff3e456a21): fetch 1, 2 pages, 1 shared
        20  OHe  loom.laplace/proc.1/thread.2  finishes: the thread ends
        21  OHx  loom.laplace/proc.1/thread.3  starts running on CPU -1; created by thread 0 with tag 0x0
        21  LRr  loom.laplace/proc.1/thread.3  reads 4 bytes of page 0x1 (canonical 0x42): read 1, 1 pages, 1 shared
        22  LKX  loom.laplace/proc.1/thread.3  kernel record: 
        22  OHe  loom.laplace/proc.1/thread.3  finishes: the thread ends
        23  LRW  loom.laplace/proc.1/thread.1  kernel writes 2 bytes of page 0xfffff (canonical 0x42): write 1, 1 pages, 1 shared
        23  OHe  loom.laplace/proc.1/thread.1  finishes: the thread ends
        32  OHx  loom.laplace/proc.2/thread.4  starts running on CPU -1; created by thread 0 with tag 0x0
        32  LRr  loom.laplace/proc.2/thread.4  reads 4 bytes of page 0x1 (canonical 0x99): read 1, 1 pages, 0 shared
        32  OHe  loom.laplace/proc.2/thread.4  finishes: the thread ends
"""

# the laplace types (1200 reads ... 1207 shared) of thread.prv, in file order
PRV_LAPLACE = """\
2:0:1:1:1:0:1203:1
2:0:1:1:1:0:1206:1
2:0:1:1:1:0:1207:0
2:0:1:1:2:0:1200:1
2:0:1:1:2:0:1206:1
2:0:1:1:2:0:1207:0
2:0:1:1:2:2:1201:1
2:0:1:1:2:2:1206:2
2:0:1:1:2:2:1207:1
2:0:1:1:2:4:1202:1
2:0:1:1:3:5:1200:1
2:0:1:1:3:5:1206:1
2:0:1:1:3:5:1207:1
2:0:1:1:1:7:1204:1
2:0:1:1:1:7:1207:1
2:0:1:1:4:16:1200:1
2:0:1:1:4:16:1206:1
2:0:1:1:4:16:1207:0
"""

SQL = ("SELECT t.tid, c.name, r.start, r.value FROM raw_interval r JOIN thread t "
       "ON t.id = r.thread JOIN channel c ON c.id = r.channel WHERE c.model = 'laplace' "
       "ORDER BY t.tid, c.name, r.start")
SQL_OUT = """\
tid,name,start,value\r
1,laplace.kreads,0,1\r
1,laplace.kwrites,7,1\r
1,laplace.pages,0,1\r
1,laplace.shared,0,0\r
1,laplace.shared,7,1\r
2,laplace.ifetches,4,1\r
2,laplace.pages,0,1\r
2,laplace.pages,2,2\r
2,laplace.reads,0,1\r
2,laplace.shared,0,0\r
2,laplace.shared,2,1\r
2,laplace.writes,2,1\r
3,laplace.pages,5,1\r
3,laplace.reads,5,1\r
3,laplace.shared,5,1\r
"""
SQL2 = ("SELECT e.clock, e.mcv, p.name, p.value FROM event e JOIN payload p ON "
        "p.event_id = e.id WHERE e.mcv IN ('LRw', 'LKM') ORDER BY e.id, p.idx")
SQL2_OUT = """\
clock,mcv,name,value\r
18,LRw,cpage,66\r
18,LRw,vpage,633016\r
18,LRw,length,8\r
18,LRw,count,1\r
18,LRw,pages,2\r
18,LRw,shared,1\r
19,LKM,fields,100 1a2b3c4d 9000 8efa5567 35 5 1029384756afbecd foobar.so\r
"""


def tools(c, tmp):
    src, tr = os.path.join(tmp, "small"), os.path.join(tmp, "small.trace")
    write_tree(src, SMALL)
    rc, so, se = weft("import", "laplace", "-q", src, "-o", tr)
    c.eq((rc, so, se), (0, "", ""), "small: import -q")
    rc, so, se = weft("dump", tr)
    c.eq((rc, se), (0, ""), "dump: exit")
    c.eq(so.splitlines(), DUMP.splitlines(), "dump: every line")
    emu = os.path.join(tmp, "emu")
    rc, so, se = weft("emu", "-q", "-o", emu, tr)
    c.eq((rc, so, se), (0, "", ""), "emu: exit")
    with open(os.path.join(emu, "thread.prv"), encoding="utf-8") as f:
        prv = f.read().splitlines()
    c.eq(prv[0], "#Paraver (19/01/38 at 03:14):00000000000000000016_ns:0:1:1(4:1)",
         "thread.prv: header")
    c.eq([x for x in prv if x.split(":")[6:7] and x.split(":")[6].startswith("120")],
         PRV_LAPLACE.splitlines(), "thread.prv: the laplace records")
    with open(os.path.join(emu, "thread.pcf"), encoding="utf-8") as f:
        pcf = f.read()
    for t, label in ((1200, "Laplace user reads"), (1206, "Laplace virtual pages touched"),
                     (1207, "Laplace shared canonical pages touched")):
        c.expect(f"\n0 {t}       {label} \n" in pcf, f"thread.pcf: type {t} {label}")
    db = os.path.join(tmp, "small.db")
    rc, so, se = weft("sql", tr, "-o", db)
    c.eq(rc, 0, f"sql -o: exit ({se!r})")
    rc, so, se = weft("sql", "--csv", db, SQL)
    c.eq((rc, so, se), (0, SQL_OUT, ""), "sql: the laplace intervals")
    rc, so, se = weft("sql", "--csv", db, SQL2)
    c.eq((rc, so, se), (0, SQL2_OUT, ""), "sql: payload fields")
    # weft view: the page of an imported trace
    page = os.path.join(tmp, "small.html")
    rc, so, se = weft("view", tr, "-o", page)
    c.eq((rc, se), (0, ""), "view: exit")
    c.eq(so.split(", ")[:2], [page + ": 6 rows", "37 intervals"],
         "view: the rows and intervals of the page")
    # weft emu -a leaves laplace out of a trace that does not require it
    rc, so, se = weft("emu", "--list-models")
    c.expect(rc == 0 and "laplace" in so, "emu --list-models names laplace")


REF = "r 0000000000000010 4 9a8b7 8888ffff3e456a21"
BAD = [
    # (name, file content, line, reason)
    ("tag", b" 0000000000000010 4 9a8b7 8888ffff3e456a21\n", 1,
     "the line does not start with a type tag (a printable character)"),
    ("space", b"r0000000000000010 4 9a8b7 8888ffff3e456a21\n", 1,
     "a space is expected after the type tag"),
    ("clock-case", (REF + "\nw 00000000000000AB 4 9a8b7 8888ffff3e456a21\n").encode(), 2,
     "the clock is not 16 lower-case hexadecimal digits"),
    ("clock-short", b"r 10 4 9a8b7 8888ffff3e456a21\n", 1,
     "the clock is not 16 lower-case hexadecimal digits"),
    ("clock-sign", b"F 8000000000000000 1\n", 1,
     "the clock is over 7fffffffffffffff (an ovni clock is a signed 64-bit number)"),
    ("clock-back", (REF + "\nF 000000000000000f 1 2\n").encode(), 2,
     "the clock 000000000000000f is before the previous record's 0000000000000010 "
     "(a task's records are in clock order)"),
    ("fields", b"r 0000000000000010 4 9a8b7\n", 1,
     "a reference has 5 fields (tag clock length vpage cpage), single spaces between them"),
    ("two-spaces", b"r 0000000000000010 4  9a8b7 8888ffff3e456a21\n", 1,
     "a reference has 5 fields (tag clock length vpage cpage), single spaces between "
     "them: an empty field"),
    ("length", b"r 0000000000000010 10 9a8b7 8888ffff3e456a21\n", 1,
     "the length is not one lower-case hexadecimal digit"),
    ("vpage", b"r 0000000000000010 4 9a8b 8888ffff3e456a21\n", 1,
     "the virtual page is not 5 lower-case hexadecimal digits"),
    ("cpage", b"R 0000000000000010 4 9a8b7 8888ffff3e456a2g\n", 1,
     "the canonical page is not 16 lower-case hexadecimal digits"),
    ("newline", REF.encode(), 1, "the last line does not end with a newline"),
    ("empty", (REF + "\n\n").encode(), 2, "an empty line"),
    ("nul", b"F 0000000000000010 a\0b\n", 1, "a NUL byte in the line"),
    ("krec-space", b"F 0000000000000010 \n", 1,
     "a kernel record with a space after its clock and no fields"),
    ("e-size", b"e 0000000000000010 OB. 00 ab\n", 1,
     "the payload of an e record has 1 bytes, its flags 00 say 0"),
    ("e-fields", b"e 0000000000000010 OB.\n", 1,
     "an e record has 5 fields (e clock MCV flags payload), single spaces between them"),
    ("long", b"F 0000000000000010 " + b"x" * 70000 + b"\n", 1,
     "the line is longer than 65536 bytes"),
]


def errors(c, tmp):
    for name, content, line, why in BAD:
        d = os.path.join(tmp, "bad-" + name)
        os.makedirs(os.path.join(d, "proc.1"))
        with open(os.path.join(d, "proc.1", "thread.1"), "wb") as f:
            f.write(content)
        out = os.path.join(tmp, "out-" + name)
        rc, so, se = weft("import", "laplace", d, "-o", out)
        c.eq((rc, so, se), (1, "", f"weft import: {d}/proc.1/thread.1:{line}: {why}\n"),
             f"malformed {name}")
        c.expect(not os.path.exists(out), f"malformed {name}: nothing at the output")
        c.eq([x for x in os.listdir(tmp) if x.startswith(".out-")], [],
             f"malformed {name}: no temporary left")
    # the layout
    lay = os.path.join(tmp, "layout")
    os.makedirs(os.path.join(lay, "proc.1"))
    with open(os.path.join(lay, "proc.1", "t"), "w", encoding="utf-8") as f:
        f.write(REF + "\n")
    with open(os.path.join(lay, "notes.txt"), "w", encoding="utf-8") as f:
        f.write("x\n")
    rc, so, se = weft("import", "laplace", lay, "-o", os.path.join(tmp, "o1"))
    c.eq((rc, se), (1, f"weft import: {lay}/notes.txt: not a directory (a process directory "
                       "is expected here; only index may be a file)\n"), "layout: a file at the top")
    os.unlink(os.path.join(lay, "notes.txt"))
    os.symlink("t", os.path.join(lay, "proc.1", "u"))
    rc, so, se = weft("import", "laplace", lay, "-o", os.path.join(tmp, "o1"))
    c.eq((rc, se), (1, f"weft import: {lay}/proc.1/u: not a regular file (a task's trace "
                       "is expected)\n"), "layout: a link")
    os.unlink(os.path.join(lay, "proc.1", "u"))
    os.makedirs(os.path.join(lay, "a b"))
    rc, so, se = weft("import", "laplace", lay, "-o", os.path.join(tmp, "o1"))
    c.eq((rc, se), (1, f"weft import: {lay}/a b: a name of letters, digits, '.', '_', '-' "
                       "and '+' is expected\n"), "layout: a name")
    os.rmdir(os.path.join(lay, "a b"))
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    rc, so, se = weft("import", "laplace", empty, "-o", os.path.join(tmp, "o1"))
    c.eq((rc, se), (1, f"weft import: {empty}: no process directories\n"), "layout: empty")
    # the output
    full = os.path.join(tmp, "full")
    os.makedirs(os.path.join(full, "x"))
    rc, so, se = weft("import", "laplace", lay, "-o", full)
    c.eq((rc, se), (1, f"weft import: {full}: exists and is not empty (remove it first)\n"),
         "output: not empty")
    emptyout = os.path.join(tmp, "emptyout")
    os.makedirs(emptyout)
    rc, so, se = weft("import", "laplace", os.path.join(tmp, "bad-nul"), "-o", emptyout)
    c.eq((rc, os.listdir(emptyout)), (1, []), "output: an empty directory kept by a failed run")
    rc, so, se = weft("import", "laplace", "-q", lay, "-o", emptyout)
    c.eq((rc, so, se, os.listdir(emptyout)), (0, "", "", ["loom.laplace"]),
         "output: an empty directory replaced by a run that succeeds")
    link = os.path.join(tmp, "link")
    os.symlink(full, link)
    rc, so, se = weft("split", os.path.join(tmp, "small.trace"), "-o", link)
    c.eq((rc, se), (1, f"weft split: {link}: is a symbolic link; the output is never written "
                       "through a link\n"), "split output: a link")
    c.eq(os.listdir(full), ["x"], "output: untouched")
    # usage
    rc, so, se = weft("import", "lapalce", lay, "-o", os.path.join(tmp, "o1"))
    c.eq((rc, se), (2, "weft import: unknown format 'lapalce' (the one known: laplace); run "
                       "`weft import --help`\n"), "usage: format")
    rc, so, se = weft("import", "laplace", lay)
    c.eq((rc, se), (2, "weft import: missing -o TRACE (the trace directory to write); run "
                       "`weft import --help`\n"), "usage: -o")
    rc, so, se = weft("split", "--by", "core", lay, "-o", os.path.join(tmp, "o1"))
    c.eq((rc, se), (2, "weft split: --by 'core': process, thread or task expected; run "
                       "`weft split --help`\n"), "usage: --by")
    c.expect(not os.path.exists(os.path.join(tmp, "o1")), "usage: nothing written")


def main():
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-laplace-")
    try:
        round_trip(c, tmp)
        tools(c, tmp)
        errors(c, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
