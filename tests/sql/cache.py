#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cache.py - the database `weft sql TRACE QUERY` keeps beside the trace
(docs/sql.md, "The database kept beside the trace"), on a copy of the corpus
case models/mix-0 in a temporary directory:
  - the first query builds TRACE/weft-sql.db (its key in weft_build: weft's
    version, the layout, each stream's files' sizes and modification times);
  - a second query reuses it: the same output, the file's inode and
    modification time unchanged; with stderr on a terminal, the one line
    saying so, exactly;
  - --rebuild builds it again (a new inode); a stream file touched (its
    modification time) or grown (its size) builds it again; -a (another
    key) builds it again;
  - the trace directory made read-only (mode 0555, as root too): the
    database goes to $XDG_CACHE_HOME/weft/, nothing is written into the
    trace, and a second query reuses it;
  - weft dump on the trace says nothing of weft-sql.db (the reader passes
    over it);
  - --rebuild on a database file: a usage error.
Every subprocess has a time limit; the directory is removed at the end."""
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import Checker, conformance_dir, run, run_pty, writable_copy  # noqa: E402

TIMEOUT = 120
Q = "SELECT count(*) AS n FROM event"


def weft(args, env=None):
    return run(args, env=env, stdin=subprocess.DEVNULL, timeout=TIMEOUT)


def ident(path):
    st = os.stat(path)
    return (st.st_ino, st.st_mtime_ns)


def main():
    corpus = conformance_dir()
    c = Checker()
    src = os.path.join(corpus, "models", "mix-0", "ovni")
    tmp = tempfile.mkdtemp(prefix="weft-sql-cache-")
    try:
        trace = os.path.join(tmp, "trace")
        writable_copy(src, trace)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        db = os.path.join(trace, "weft-sql.db")
        want = (0, b"  n\n---\n167\n", "")

        c.eq(weft(["sql", trace, Q], env), want, "first query: built")
        c.expect(os.path.isfile(db), "the database kept as TRACE/weft-sql.db")
        first = ident(db)
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            key = con.execute("SELECT key FROM weft_build").fetchone()[0]
        lines = key.split("\n")
        c.expect(lines[0].startswith("weft ") and ", database layout " in lines[0],
                 f"the key names weft's version and the layout: {lines[0]!r}")
        c.eq(sum(1 for x in lines if x.startswith("stream ")), 4, "the key lists the 4 streams")

        c.eq(weft(["sql", trace, Q], env), want, "second query: the same output")
        c.eq(ident(db), first, "second query: not built again (inode and mtime unchanged)")
        rc, out, term = run_pty(["sql", trace, Q], env, timeout=TIMEOUT)
        c.eq((rc, out, term), (0, want[1], f"weft sql: {db}: built before, the trace "
                               "unchanged: reused (--rebuild builds it again)\n"),
             "reused: one line on a terminal")
        c.eq(ident(db), first, "the query on a terminal: not built again")

        c.eq(weft(["sql", "--rebuild", trace, Q], env), want, "--rebuild")
        second = ident(db)
        c.expect(second[0] != first[0], "--rebuild: a new file")

        obs = None
        for d, _, files in os.walk(trace):
            if "stream.obs" in files:
                obs = os.path.join(d, "stream.obs")
                break
        st = os.stat(obs)
        os.utime(obs, ns=(st.st_atime_ns, st.st_mtime_ns + 1000000000))
        c.eq(weft(["sql", trace, Q], env), want, "a touched stream: the same output")
        third = ident(db)
        c.expect(third[0] != second[0], "a touched stream: built again")
        c.eq(weft(["sql", trace, Q], env), want, "after the rebuild")
        c.eq(ident(db), third, "... then reused")
        c.eq(weft(["sql", "-a", trace, Q], env), want, "-a")
        c.expect(ident(db)[0] != third[0], "-a: another key, built again")

        # a stream that grew: its size in the key (a whole event appended
        # would be read; a byte that is no event is refused by the build)
        with open(obs, "ab") as f:
            f.write(b"\x00")
        rc, _, err = weft(["sql", trace, Q], env)
        c.expect(rc == 1 and err.startswith("weft sql: "),
                 f"a grown stream: built again (and refused): {rc} {err!r}")
        with open(obs, "r+b") as f:
            f.truncate(st.st_size)

        c.eq(weft(["dump", trace], env)[2], "", "weft dump passes over weft-sql.db")

        # a read-only trace: the cache directory
        ro = os.path.join(tmp, "ro")
        shutil.copytree(src, ro)
        for d, dirs, files in os.walk(ro, topdown=False):
            for f in files:
                os.chmod(os.path.join(d, f), 0o444)
            os.chmod(d, 0o555)
        before = sorted(os.walk(ro))
        c.eq(weft(["sql", ro, Q], env), want, "a read-only trace")
        c.eq(sorted(os.walk(ro)), before, "nothing written into the read-only trace")
        cached = os.listdir(os.path.join(tmp, "cache", "weft"))
        c.eq(len(cached), 1, f"one database in $XDG_CACHE_HOME/weft: {cached}")
        c.expect(cached[0].startswith("ro-") and cached[0].endswith(".db"),
                 f"named after the trace: {cached[0]}")
        cpath = os.path.join(tmp, "cache", "weft", cached[0])
        one = ident(cpath)
        c.eq(weft(["sql", ro, Q], env), want, "a read-only trace, again")
        c.eq(ident(cpath), one, "... reused")
        for d, dirs, files in os.walk(ro):
            os.chmod(d, 0o755)

        c.eq(weft(["sql", "--rebuild", db, Q], env),
             (2, b"", "weft sql: --rebuild builds the database of a trace directory, and PATH "
              "is a file; run `weft sql --help`\n"), "--rebuild on a database file")
    finally:
        for d, dirs, _ in os.walk(tmp):
            os.chmod(d, stat.S_IRWXU)
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
