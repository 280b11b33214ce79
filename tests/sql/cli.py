#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cli.py - `weft sql`: options, the table and CSV output, and the errors,
each with its exact output and exit status: --help; usage errors (exit 2);
a malformed query (`weft sql: SQL error: <SQLite's message>`, exit 1, the
results of the statements before it printed); a statement that writes on a
database (opened read-only); an unreadable trace (weft's message, as weft
emu prints it), a model no stream requires (refused without -a), an
interval longer than the database's layout holds, and a file that
is no database; NULL, BLOB, text with a
newline and numbers in a table and in CSV (RFC 4180); several statements;
-o with a query; the temporary database removed after a query (also when a
closed pipe ends weft sql), and nothing left when a build fails; the
database written in one transaction (WEFT_SQL_TRACE_TX names on stderr every
BEGIN, COMMIT, END or ROLLBACK and every write outside a transaction: exactly
one BEGIN and one COMMIT, and the file's change counter at 1). Everything is
written into a temporary directory, removed at the end."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import Checker, conformance_dir, run, weft_bin  # noqa: E402
import signal  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import tracegen  # noqa: E402

HELP = "run `weft sql --help`\n"

VALUES = ("SELECT 1 AS n, NULL AS x, 'a,b' AS s, 'say \"hi\"' AS q, x'00ff' AS b, "
          "'line' || char(10) || 'two' AS nl, 2.5 AS f")

TABLE = """\
n  x     s    q         b        nl           f
-  ----  ---  --------  -------  ---------  ---
1  NULL  a,b  say "hi"  x'00ff'  line\\ntwo  2.5
"""

CSV = 'n,x,s,q,b,nl,f\r\n1,,"a,b","say ""hi""",00ff,"line\ntwo",2.5\r\n'


def main():
    corpus = conformance_dir()
    c = Checker()
    trace = os.path.join(corpus, "models", "mix-0", "ovni")
    bad = os.path.join(corpus, "bad", "bad-magic", "ovni")

    code, out, err = run(["sql", "--help"])
    c.eq((code, err), (0, ""), "--help: exit 0, nothing on stderr")
    c.expect(out.startswith(b"Usage: weft sql [options] TRACE -o FILE [QUERY]\n"), "--help text")

    usage = [
        ([], "missing TRACE (a trace directory) or FILE (a database)"),
        ([trace, "-o"], "option '-o' needs an argument (FILE)"),
        ([trace, "-o", ""], "-o needs a FILE"),
        ([trace, "SELECT 1", "SELECT 2"], "more than a PATH and a QUERY (quote the query)"),
    ]
    for args, msg in usage:
        c.eq(run(["sql"] + args), (2, b"", f"weft sql: {msg}; {HELP}"), f"usage: {args}")
    c.eq(run(["sql", "--bogus", trace]), (2, b"", "weft sql: unknown option '--bogus'; " + HELP),
         "unknown option")

    # a malformed query: SQLite's message, exit 1
    c.eq(run(["sql", trace, "SELEC 1"]),
         (1, b"", 'weft sql: SQL error: near "SELEC": syntax error\n'), "malformed query")
    c.eq(run(["sql", trace, "SELECT 1 AS a; SELECT nosuch FROM event"]),
         (1, b"a\n-\n1\n", "weft sql: SQL error: no such column: nosuch\n"),
         "an error after a statement that printed")

    # the trace cannot be read: weft's message, as weft emu prints it
    with tempfile.TemporaryDirectory(prefix="weft-sql-cli-") as tmp:
        code, _, emu_err = run(["emu", "-o", os.path.join(tmp, "emu"), bad])
        c.eq(code, 1, "weft emu on a bad trace")
        db = os.path.join(tmp, "bad.db")
        c.eq(run(["sql", bad, "-o", db]), (1, b"", emu_err.replace("weft emu: ", "weft sql: ", 1)),
             "a bad trace: weft's message")
        c.eq([x for x in os.listdir(tmp) if x.startswith("bad.db")], [],
             "a failed build leaves nothing")
        # a model no stream requires: refused as weft emu does, enabled by -a
        every = os.path.join(corpus, "models", "enable-all", "ovni")
        code, _, emu_err = run(["emu", "-o", os.path.join(tmp, "emu"), every])
        c.eq(code, 1, "weft emu on enable-all without -a")
        c.eq(run(["sql", every, "SELECT 1"]),
             (1, b"", emu_err.replace("weft emu: ", "weft sql: ", 1)), "enable-all without -a")
        c.eq(run(["sql", "-a", every, "SELECT count(*) AS n FROM channel WHERE model = 'kernel'"]),
             (0, b"n\n-\n1\n", ""), "enable-all with -a")
        c.eq(run(["sql", os.path.join(tmp, "nosuch"), "SELECT 1"]),
             (1, b"", f"weft sql: {tmp}/nosuch: No such file or directory\n"), "no trace")

        notdb = os.path.join(tmp, "notes.txt")
        with open(notdb, "w", encoding="utf-8") as f:
            f.write("not a database, long enough\n")
        c.eq(run(["sql", notdb, "SELECT 1"]),
             (1, b"", f"weft sql: {notdb}: not a SQLite database (a trace is a directory)\n"),
             "a file that is no database")
        c.eq(run(["sql", notdb]),
             (1, b"", f"weft sql: {notdb}: not a SQLite database (a trace is a directory)\n"),
             "a file that is no database, without a query")
        c.eq(run(["sql", notdb, "-o", db]), (2, b"", "weft sql: -o writes the database of a trace "
             "directory, and PATH is a file; " + HELP), "-o on a database")

        # an interval longer than interval_data.dur_flags holds ((dur - 1) *
        # F + flags, F = 4 * (2 CPUs + 1)): refused, nothing left
        far = os.path.join(tmp, "far")
        t0, late = 100, 110 + (1 << 60)
        tracegen.write_stream(far, tracegen.thread_rel("vm", 10, 10), tracegen.meta(10, 10), [
            tracegen.ev("OHx", t0, struct.pack("<iiQ", 0, -1, 0)), tracegen.ev("OHp", t0 + 10),
            tracegen.ev("OHr", late), tracegen.ev("OHe", late + 10)])
        fardb = os.path.join(tmp, "far.db")
        c.eq(run(["sql", far, "-o", fardb]),
             (1, b"", f"weft sql: {fardb}: an interval lasts {1 << 60} ns: the database's "
              f"layout holds durations up to {(2 ** 63 - 1) // 12} ns with 2 CPUs "
              "(docs/sql.md, Schema)\n"), "an interval longer than the layout holds")
        c.eq([x for x in os.listdir(tmp) if x.startswith("far.db")], [],
             "a build past the layout leaves nothing")

        # -o and a query: written, then queried
        c.eq(run(["sql", trace, "-o", db, "SELECT count(*) AS events FROM event"]),
             (0, b"events\n------\n   167\n", ""), "-o with a query")
        c.eq(run(["sql", db, "DELETE FROM event_data"]),
             (1, b"", "weft sql: SQL error: attempt to write a readonly database\n"),
             "a database is opened read-only")
        c.eq(run(["sql", db, VALUES]), (0, TABLE.encode(), ""), "NULL, BLOB, text, numbers")
        c.eq(run(["sql", "--csv", db, VALUES]), (0, CSV.encode(), ""), "CSV (RFC 4180)")
        c.eq(run(["sql", db, "SELECT 'x' AS a; SELECT tid FROM thread WHERE 0; "
                  "-- a comment\n SELECT name FROM loom;"]),
             (0, b"a\n-\nx\n\ntid\n---\n\nname\n----\nvm\n", ""),
             "several statements, an empty result")
        c.eq(run(["sql", "--csv", db, "SELECT 1 AS a; SELECT 2 AS b"]),
             (0, b"a\r\n1\r\n\r\nb\r\n2\r\n", ""), "several statements as CSV")
        c.eq(run(["sql", db, "SELECT char(27) || '[2J' AS t"]), (0, b"t\n-----\n\\e[2J\n", ""),
             "control characters escaped")

        # the temporary database of a query on a trace is removed
        qtmp = os.path.join(tmp, "qtmp")
        os.mkdir(qtmp)
        p = subprocess.run([weft_bin(), "sql", trace, "SELECT count(*) AS n FROM thread"],
                           env=dict(os.environ, TMPDIR=qtmp), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        c.eq((p.returncode, p.stdout, p.stderr), (0, b"n\n-\n4\n", b""), "a query on a trace")
        c.eq(os.listdir(qtmp), [], "the temporary database is removed")
        # ... also when a closed pipe ends the program (`weft sql TRACE Q | head`)
        rfd, wfd = os.pipe()
        os.close(rfd)
        p = subprocess.run([weft_bin(), "sql", trace, "SELECT 1"],
                           env=dict(os.environ, TMPDIR=qtmp), stdout=wfd,
                           stderr=subprocess.PIPE)
        os.close(wfd)
        c.eq((p.returncode, p.stderr), (-signal.SIGPIPE, b""), "a closed pipe: SIGPIPE")
        c.eq(os.listdir(qtmp), [], "the temporary database is removed after SIGPIPE")
        # one transaction: the timelines, the streams and the events
        one = os.path.join(tmp, "one.db")
        p = subprocess.run([weft_bin(), "sql", trace, "-o", one],
                           env=dict(os.environ, WEFT_SQL_TRACE_TX="1"), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        c.eq((p.returncode, p.stdout, p.stderr),
             (0, b"", b"weft sql: transaction: BEGIN\nweft sql: transaction: COMMIT\n"),
             "the database is written in one transaction")
        with open(one, "rb") as f:
            head = f.read(100)
        c.eq(int.from_bytes(head[24:28], "big"), 1, "one write session: change counter 1")
        c.eq(run(["sql", one, "SELECT (SELECT count(*) FROM event) > 0 AS e, "
                  "(SELECT count(*) FROM interval) > 0 AS i"]),
             (0, b"e  i\n-  -\n1  1\n", ""), "events and intervals in it")
    c.done()


if __name__ == "__main__":
    main()
