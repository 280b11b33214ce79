# SPDX-License-Identifier: MIT
"""`weft dump`'s description column against weft.describe (the library's
weft_event_describe, which dump no longer calls per event: it makes each
MCV's description into pieces once and prints numbers with num_format.h),
on every v3 and models case of the conformance corpus: every event's text,
byte for byte, or its payload bytes (:xx) where no model describes it. Mark
events name their type and value as the metadata does: "pushes 2 (Gray) on
mark type 2 (Colors)", built here from the module's mark types."""
import re

from pycommon import Checker, cases, conformance_dir, need_module, run
import wefttest

weft = need_module()
root = conformance_dir()
c = Checker()

MARK = [re.compile(r"^(pushes|pops) (-?\d+) (on|from) mark type (-?\d+)$"),
        re.compile(r"^sets mark type (-?\d+) to (-?\d+)$")]


def with_marks(text, marks):
    """text with the metadata's names of its mark type and value."""
    def named(t, v):
        m = marks.get(t)
        tn = f" ({m.title})" if m is not None and m.title is not None else ""
        ln = f" ({m.labels[v]})" if m is not None and v in m.labels else ""
        return tn, ln
    x = MARK[0].match(text)
    if x:
        tn, ln = named(int(x.group(4)), int(x.group(2)))
        return f"{x.group(1)} {x.group(2)}{ln} {x.group(3)} mark type {x.group(4)}{tn}"
    x = MARK[1].match(text)
    if x:
        tn, ln = named(int(x.group(1)), int(x.group(2)))
        return f"sets mark type {x.group(1)}{tn} to {x.group(2)}{ln}"
    return text


def expected(case):
    """dump's lines as the module describes the events, or None when the
    module cannot read the trace."""
    try:
        with weft.open(f"{case}/ovni", mode="lenient", clock="raw", backwards="warn",
                       cut="warn") as t:
            rel = [s.relpath.encode() for s in t.streams]
            marks = {m.type: m for m in t.mark_types}
            out = []
            for b in t.batches(size=4096):
                rc, st, po, pay = b["rclock"], b["stream"], b["payload_offset"], b["payload"]
                for i in range(len(b)):
                    p = bytes(pay[po[i]:po[i + 1]])
                    text = weft.describe(b.mcv[i], p)
                    if text is None:
                        text = "".join(":%02x" % x for x in p)
                    else:
                        text = with_marks(text, marks)
                    line = b"%10d  %s  %s  " % (rc[i], wefttest.esc_mcv(b.mcv[i]), rel[st[i]])
                    out.append(line + text.encode("utf-8", "surrogateescape") + b"\n")
            return b"".join(out)
    except weft.Error:
        return None


n = 0
for case in cases(root, kinds=("v3", "models")):
    want = expected(case)
    if want is None:
        continue
    rc, out, err = run(["dump", "ovni"], cwd=case)
    name = case[len(root) + 1:]
    if out != want:
        got_l, want_l = out.split(b"\n"), want.split(b"\n")
        first = next((k for k in range(min(len(got_l), len(want_l))) if got_l[k] != want_l[k]),
                     min(len(got_l), len(want_l)))
        c.eq(got_l[first:first + 1], want_l[first:first + 1], f"{name}: dump line {first + 1}")
    else:
        c.expect(True, name)
    n += 1
c.expect(n >= 40, f"cases compared: {n}")
c.done()
