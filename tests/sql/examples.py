#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""examples.py - the example queries of docs/sql.md, run by `weft sql` on
runtime-model cases of the corpus, print exactly the tables below (and as
CSV, the same rows). The queries are read from docs/sql.md (the ```sql block
after each `<!-- example: NAME -->`), so the documentation and the test
cannot drift apart. A query runs on the trace (a temporary database) and on
a database written with -o (read-only), with the same output."""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import Checker, conformance_dir, run  # noqa: E402

EXPECTED = {
    "task-types": ("models/rand-nosv-5", """\
task_type  intervals  time_ns
---------  ---------  -------
beta               7       88
delta              4       45
alpha              3       20
"""),
    "subsystems": ("models/rand-nosv-5", """\
thread  subsystem              time_ns
------  ---------------------  -------
TH 1.1  Memory: Allocating          86
TH 1.1  Task: In body               32
TH 1.1  Thread: Worker              26
TH 1.1  Scheduler: Submitting       16
TH 1.1  Scheduler: Hungry           14
TH 1.1  API: Submit                 11
TH 1.1  API: Pause                  10
TH 1.1  Scheduler: Serving           1
TH 1.2  Memory: Allocating          11
TH 1.2  API: Submit                  7
TH 1.3  Memory: Allocating          71
TH 1.3  Scheduler: Serving          38
TH 1.3  Scheduler: Hungry           26
TH 1.3  Thread: Worker              20
TH 1.3  Task: In body               11
TH 1.3  Scheduler: Submitting        6
"""),
    "mpi-calls": ("models/mix-0", """\
thread  call          start  dur
------  ------------  -----  ---
TH 1.4  MPI_Recv         42   41
TH 1.1  MPI_Ibarrier     38   30
TH 1.4  MPI_Ibarrier    155   23
TH 1.1  MPI_Recv        185   23
TH 1.4  MPI_Testsome    180   21
"""),
    "payload-task-types": ("models/rand-nosv-5", """\
type   tasks
-----  -----
alpha      3
delta      3
beta       1
"""),
    "payload-fields": ("models/rand-nosv-5", """\
time  mcv  name    value
----  ---  ------  -----
   5  OHx  cpu     0
   5  OHx  tid     -1
   5  OHx  tag     0
  16  VYc  typeid  101
  16  VYc  label   beta
  38  VYc  typeid  102
"""),
}


def doc_examples():
    src = os.environ.get("WEFT_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(src, "docs", "sql.md"), encoding="utf-8") as f:
        text = f.read()
    return dict(re.findall(r"<!-- example: ([\w-]+) -->\n```sql\n(.*?)```", text, re.S))


def as_csv(table):
    """The CSV weft sql prints for a table of this test (no field needs quotes)."""
    lines = table.splitlines()
    out = []
    for k, line in enumerate(lines):
        if k == 1:
            continue
        out.append(",".join(re.split(r"  +", line.strip())))
    return "".join(x + "\r\n" for x in out)


def main():
    corpus = conformance_dir()
    c = Checker()
    queries = doc_examples()
    c.eq(sorted(queries), sorted(EXPECTED), "the examples of docs/sql.md")
    with tempfile.TemporaryDirectory(prefix="weft-sql-examples-") as tmp:
        for name, (case, want) in EXPECTED.items():
            q = queries.get(name)
            if q is None:
                continue
            trace = os.path.join(corpus, case, "ovni")
            c.eq(run(["sql", trace, q]), (0, want.encode(), ""), f"{name} on {case}")
            db = os.path.join(tmp, "t.db")
            c.eq(run(["sql", trace, "-o", db]), (0, b"", ""), f"{name}: -o")
            c.eq(run(["sql", db, q]), (0, want.encode(), ""), f"{name} on the .db")
            c.eq(run(["sql", "--csv", db, q]), (0, as_csv(want).encode(), ""),
                 f"{name} as CSV")
            os.unlink(db)
    c.done()


if __name__ == "__main__":
    main()
