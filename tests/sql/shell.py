#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""shell.py - `weft sql` without a QUERY opens the database in the sqlite3
program, and a QUERY that starts with '.' (a dot command) is run by it, on a
copy of the corpus case models/mix-0 in a temporary directory:
  - sqlite3 not in PATH: the exact message naming the package, exit 1, and
    nothing built (no weft-sql.db beside the trace), for the shell and for a
    dot command;
  - with sqlite3 installed (else those checks are skipped, said on stderr):
    statements on stdin (a pipe) run in the shell on the trace's database
    and on a database file, exactly their output; `.schema view_name` as a
    QUERY, exactly; the database opened read-only (a write fails with
    sqlite3's message); the shell on a pseudo-terminal answers a statement
    and ends at .quit.
Every subprocess has a time limit; the directory is removed at the end."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import Checker, conformance_dir, run, run_pty, writable_copy  # noqa: E402

TIMEOUT = 120


def weft(args, env, stdin=b""):
    return run(args, env=env, stdin=stdin, timeout=TIMEOUT)


def main():
    corpus = conformance_dir()
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="weft-sql-shell-")
    try:
        trace = os.path.join(tmp, "trace")
        writable_copy(os.path.join(corpus, "models", "mix-0", "ovni"), trace)
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
        nosq = dict(env, PATH=empty)
        c.eq(weft(["sql", trace], nosq),
             (1, b"", "weft sql: the interactive shell is the sqlite3 program, which is not "
              "installed (not found in PATH): install the package sqlite3 (Debian, Ubuntu: "
              "apt-get install sqlite3), or give a QUERY\n"), "no sqlite3: the shell")
        c.eq(weft(["sql", trace, ".tables"], nosq),
             (1, b"", "weft sql: a dot command is run by the sqlite3 program, which is not "
              "installed (not found in PATH): install the package sqlite3 (Debian, Ubuntu: "
              "apt-get install sqlite3)\n"), "no sqlite3: a dot command")
        c.eq(os.path.exists(os.path.join(trace, "weft-sql.db")), False,
             "no sqlite3: nothing built")

        if shutil.which("sqlite3") is None:
            print("sqlite3 is not installed: the shell's own checks are skipped",
                  file=sys.stderr)
            c.done()
            return
        stmts = b"SELECT count(*) FROM thread;\nSELECT name FROM loom;\n"
        c.eq(weft(["sql", trace], env, stmts), (0, b"4\nvm\n", ""), "the shell, stdin a pipe")
        c.expect(os.path.isfile(os.path.join(trace, "weft-sql.db")), "the database kept")
        schema = b"CREATE TABLE view_name (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);\n"
        c.eq(weft(["sql", trace, ".schema view_name"], env), (0, schema, ""),
             "a dot command on the trace's database")
        db = os.path.join(tmp, "t.db")
        c.eq(weft(["sql", trace, "-o", db], env), (0, b"", ""), "-o: no shell")
        c.eq(weft(["sql", db, " .schema view_name"], env), (0, schema, ""),
             "a dot command on a database file")
        c.eq(weft(["sql", "--csv", db], env, b"SELECT 1 AS a, 'x,y' AS b;\n"),
             (0, b'1,"x,y"\n', ""), "--csv: the shell in CSV mode")
        rc, out, err = weft(["sql", db], env, b"DELETE FROM event_data;\n")
        c.expect(rc != 0 and "readonly database" in err,
                 f"the shell opens the database read-only: {rc} {err!r}")
        rc, _, term = run_pty(["sql", trace], env, all_tty=True, typed=b"SELECT 40 + 2;\n.quit\n",
                              prompt=b"sqlite> ", timeout=TIMEOUT)
        c.eq(rc, 0, "the shell on a terminal: exit 0")
        c.expect("42\n" in term, f"the shell on a terminal answers: {term[-300:]!r}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
