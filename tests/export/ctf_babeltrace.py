#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ctf_babeltrace.py - `weft export ctf` read back by babeltrace2 (docs/export.md).

Every trace of the conformance corpus (v3/, v1/, and models/: the runtime
models), a trace of the example examples/zeta with its user model (--model
examples/zeta/zeta.yaml) and a flight-recorded trace with lost events (the
workers example under WEFT_RING=1K) is exported, and `babeltrace2
--clock-cycles` prints it. For every stream (the packets' `path`), the events
babeltrace2 prints are those of `weft dump -x --sort`, in the same order:
  - the clock: the event's timestamp is the raw clock plus its loom's offset
    (clock-offsets.txt) minus the clock's offset, and the metadata's clock
    offset is the smallest loom offset;
  - the stream: the packet context's path, loom, pid and tid are the
    stream's (its directory, its stream.json);
  - the MCV and payload: the class name (MODEL:MCV, '*' replaced by the
    mcv_value field) or the raw classes' MCV bytes, and the payload bytes
    rebuilt from the fields as the metadata types them (integers in the
    file's byte order, strings with their NUL, a jumbo's u32 size, its
    fields and its rest) equal the dump's bytes;
  - babeltrace2 reports, per stream, as many discarded events as `weft check`
    says the stream lost (the flight recorder's runs), and none elsewhere;
and the events of a model the trace enables are in their model's classes
(none raw in the zeta trace; `zeta:` classes with the zeta.yaml fields).
Also, byte for byte: every data stream is a run of packets (magic, the
metadata's UUID, sizes adding up to the file, packet_seq_num 0, 1, ...,
timestamp_begin <= timestamp_end, not going back, every packet at most
--packet-size bytes unless its events have one timestamp: one event); an export again gives the
same files; and the output rules: usage errors (exit 2, exact text), an
existing non-empty DIR refused without --force (untouched), a directory that
is no export of weft's refused even with --force, a symbolic link refused,
--force replacing an earlier export, two corrupt traces refused with the
reader's message, and no temporary left behind.
Without babeltrace2 the test skips (exit 77), or fails under CI=true.
"""
import glob
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from wefttest import SKIP, Checker, conformance_dir, skip_note, weft_bin  # noqa: E402

c = Checker()


def expect(cond, what):
    c.expect(cond, what)
    return cond


def eq(got, want, what):
    c.eq(got, want, what)
    return got == want

BIN = os.environ.get("WEFT_BINARY_DIR", "")
SRC = os.environ.get("WEFT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


# Babeltrace 2.0.4 (Debian 12) prints an empty string field with the value a
# recycled event of its class had (https://review.lttng.org/c/babeltrace/+/4528,
# fixed later): with it, an event whose dump has an empty string is matched
# with its string taken as empty; every other byte is still compared.
STALE_EMPTY = False


def need_babeltrace2():
    global STALE_EMPTY
    b = shutil.which("babeltrace2")
    if b is not None:
        v = subprocess.run([b, "--version"], capture_output=True, text=True, timeout=60).stdout
        m = re.search(r"Babeltrace (\d+)\.(\d+)\.(\d+)", v)
        STALE_EMPTY = m is None or tuple(map(int, m.groups())) <= (2, 0, 4)
        return b
    why = "babeltrace2 not found (Debian: apt-get install babeltrace2): skipped"
    if os.environ.get("CI") == "true":
        print("babeltrace2 not found (CI=true: this is a failure)", file=sys.stderr)
        sys.exit(1)
    print(why, file=sys.stderr)
    skip_note(why)
    sys.exit(SKIP)


def weft(args, timeout=300, env=None):
    p = subprocess.run([weft_bin()] + [str(a) for a in args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout, env=env)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


# ---- babeltrace2's pretty text: { a = 1, s = "x", q = [ [0] = 1 ] } ----

ESC = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
       "\\": "\\", '"': '"'}


def parse_value(s, i):
    if s[i] == "{":
        out = {}
        i += 1
        while True:
            while s[i] == " ":
                i += 1
            if s[i] == "}":
                return out, i + 1
            j = s.index(" = ", i)
            name = s[i:j]
            v, i = parse_value(s, j + 3)
            out[name] = v
            if s[i] == ",":
                i += 1
    if s[i] == "[":
        out = []
        i += 1
        while True:
            while s[i] == " ":
                i += 1
            if s[i] == "]":
                return out, i + 1
            j = s.index("] = ", i)
            v, i = parse_value(s, j + 4)
            out.append(v)
            if s[i] == ",":
                i += 1
    if s[i] == '"':
        buf = []
        i += 1
        while s[i] != '"':
            if s[i] == "\\":
                buf.append(ESC.get(s[i + 1], s[i + 1]))
                i += 2
            else:
                buf.append(s[i])
                i += 1
        return "".join(buf), i + 1
    m = re.compile(r"-?\d+").match(s, i)
    return int(m.group(0)), m.end()


LINE = re.compile(r"^\[(\d+)\] (.+?): \{ loom_id = ")


def bt_events_warnings(text):
    """babeltrace2's stderr: the events discarded, {stream file: n}."""
    disc = {}
    for m in re.finditer(r'^WARNING: Tracer discarded (\d+) events? between .* within stream '
                         r'"([^"]*)"', text, re.M):
        f = os.path.basename(m.group(2))
        disc[f] = disc.get(f, 0) + int(m.group(1))
    c.expect("may have discarded" not in text, "every discarded count is known")
    return None, disc


def bt_events(text):
    """[(cycles, class name, context dict, payload dict)]"""
    evs = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            c.expect(False, f"babeltrace2 line not understood: {line[:200]}")
            continue
        i = m.end() - len("{ loom_id = ")
        ctx, i = parse_value(line, i)
        pay = {}
        if line.startswith(", ", i):
            pay, i = parse_value(line, i + 2)
        evs.append((int(m.group(1)), m.group(2), ctx, pay))
    return evs, None


# ---- the metadata: classes, their fields' types; the clock's offset ----

TYPES = {"uint8_t": "<B", "uint16_t": "<H", "uint32_t": "<I", "uint64_t": "<Q",
         "int8_t": "<b", "int16_t": "<h", "int32_t": "<i", "int64_t": "<q"}


def meta_classes(text):
    cls = {}
    for blk in re.findall(r"\nevent \{\n(.*?)\n\};", text, re.S):
        name = re.search(r'name = "((?:[^"\\]|\\.)*)";', blk).group(1)
        name = re.sub(r"\\(.)", r"\1", name)
        fields = []
        for t, f, seq in re.findall(r"\t\t(\w+) (\w+)(\[\w+\])?;", blk):
            fields.append((t, f[1:] if f.startswith("_") else f, bool(seq)))
        cls[name] = fields
    return cls


def meta_clock(text):
    s = int(re.search(r"\toffset_s = (-?\d+);", text).group(1))
    ns = int(re.search(r"\toffset = (-?\d+);", text).group(1))
    return s * 1000000000 + ns


NAMED = {0x0a: "\\n", 0x09: "\\t", 0x0d: "\\r", 0x1b: "\\e"}


def esc_mcv(b):
    return "".join(chr(x) if 0x20 <= x < 0x7f else NAMED.get(x, f"\\x{x:02x}") for x in b)


def rebuild(name, fields, pay, empty_str=False):
    """(MCV as weft dump prints it, payload bytes) of an event; empty_str:
    its string field taken as empty (None if it has none)."""
    if name == "weft:raw":
        return esc_mcv(bytes([pay["model"], pay["category"], pay["value"]])), bytes(pay["payload"])
    if name == "weft:raw_jumbo":
        data = bytes(pay["jumbo"])
        return (esc_mcv(bytes([pay["model"], pay["category"], pay["value"]])),
                struct.pack("<I", pay["jumbo_size"]) + data)
    mcv = name.split(":", 1)[1].encode()
    fl = list(fields)
    if mcv[2:3] == b"*":
        mcv = mcv[:2] + bytes([pay[fl[0][1]]])
        fl = fl[1:]
    jumbo = bool(fl) and fl[-1][2]
    if jumbo:
        rest = bytes(pay[fl[-1][1]])
        fl = fl[:-2]
    if empty_str and not any(t == "string" for t, _, _ in fl):
        return None
    out = b""
    for t, f, _ in fl:
        if t == "string":
            out += (b"" if empty_str else pay[f].encode()) + b"\0"
        else:
            out += struct.pack(TYPES[t], pay[f])
    if jumbo:
        out = struct.pack("<I", len(out) + len(rest)) + out + rest
    return esc_mcv(mcv), out


# ---- the trace's side: weft dump -x --sort, clock offsets, weft check ----

DUMP = re.compile(r"^\s*(-?\d+)  (\S+)  (\S+)  ?(.*)$")


def dump_events(trace, models):
    rc, out, err = weft(["dump", "-x", "--sort"] + models + [trace])
    c.eq(rc, 0, f"weft dump -x --sort {trace}: exit 0 ({err[:300]})")
    per = {}
    for line in out.splitlines():
        if line.startswith("# "):
            continue  # a flight recorder's run, told by weft dump
        m = DUMP.match(line)
        if not expect(m is not None, f"dump line understood: {line[:200]}"):
            continue
        hx = m.group(4)
        data = bytes(int(x, 16) for x in hx.split(":")[1:]) if hx else b""
        per.setdefault(m.group(3), []).append((int(m.group(1)), m.group(2), data))
    return per


def loom_offsets(trace):
    """hostname -> offset_median, when clock-offsets.txt parses (5 fields a row)."""
    f = os.path.join(trace, "clock-offsets.txt")
    if not os.path.exists(f):
        return {}
    rows = [r.split() for r in open(f).read().splitlines()[1:] if r.strip()]
    if any(len(r) != 5 for r in rows):
        return {}
    return {r[1]: int(float(r[2])) for r in rows}


def check_lost(trace):
    """relpath -> events lost, from weft check's lines."""
    rc, out, err = weft(["check", trace])
    lost = {}
    for m in re.finditer(r"^weft check: (\S+)/stream\.json: (\d+) events? (?:\(\d+ bytes\) )?lost",
                         out, re.M):
        rel = os.path.relpath(m.group(1), trace)
        lost[rel] = lost.get(rel, 0) + int(m.group(2))
    for m in re.finditer(r"^weft check: (\S+)/stream\.json: (\d+) events? filtered at the source",
                         out, re.M):
        rel = os.path.relpath(m.group(1), trace)
        lost[rel] = lost.get(rel, 0) + int(m.group(2))
    return lost


# ---- the data streams, byte for byte ----

def check_packets(d, uuid_text, packet_size, what):
    """Every stream file: its packets. Returns {file: path (the context's)}."""
    uuid = bytes.fromhex(uuid_text.replace("-", ""))
    paths = {}
    for f in sorted(os.listdir(d)):
        if f == "metadata":
            continue
        data = open(os.path.join(d, f), "rb").read()
        off, seq, last_end = 0, 0, -1
        ok = True
        while off < len(data) and ok:
            magic, = struct.unpack_from("<I", data, off)
            tb, te, content, size, pseq, disc = struct.unpack_from("<QQQQQQ", data, off + 32)
            strs = data[off + 96:].split(b"\0", 2)
            hdr = 96 + len(strs[0]) + len(strs[1]) + 2
            ok = (magic == 0xC1FC1FC1 and data[off + 4:off + 20] == uuid and content == size
                  and size % 8 == 0 and size // 8 >= hdr and off + size // 8 <= len(data)
                  and pseq == seq and tb <= te and tb >= last_end
                  and (size // 8 <= packet_size or tb == te))
            if seq == 0:
                paths[f] = strs[1].decode()
            last_end = te
            off += size // 8
            seq += 1
        c.expect(ok and off == len(data), f"{what}: {f}: packets well formed (packet {seq - 1}"
                 f" at byte {off})")
    return paths


def zeta_trace(tmp):
    zeta = os.path.join(BIN, "bin", "zeta")
    trace = os.path.join(tmp, "zeta")
    p = subprocess.run([zeta, "2", "20"], capture_output=True, timeout=120,
                       env=dict(os.environ, OVNI_TRACEDIR=trace))
    c.eq(p.returncode, 0, "zeta 2 20")
    return trace


def workers_trace(tmp, name, **setting):
    workers = os.path.join(BIN, "bin", "workers")
    d = os.path.join(tmp, name)
    os.mkdir(d)
    env = dict(os.environ, **setting)
    env.pop("OVNI_TMPDIR", None)
    env.pop("OVNI_TRACEDIR", None)
    p = subprocess.run([workers], cwd=d, env=env, capture_output=True, timeout=120)
    c.eq(p.returncode, 0, f"workers with {setting}")
    return os.path.join(d, "ovni")


def ring_trace(tmp):
    return workers_trace(tmp, "ring", WEFT_RING="1K")


def one(bt2, trace, out, models=(), name=None, packet=None):
    """Exports trace into out and checks what babeltrace2 reads. Returns the
    events per class name."""
    what = name or trace
    args = ["export", "ctf", "-q"] + list(models) + [trace, "-o", out]
    if packet:
        args += ["--packet-size", str(packet)]
    rc, so, err = weft(args)
    if not eq((rc, so), (0, ""), f"{what}: weft export: exit 0, nothing on stdout ({err[:300]})"):
        return {}
    meta = open(os.path.join(out, "metadata")).read()
    classes = meta_classes(meta)
    uuid = re.search(r'\n\tuuid = "([0-9a-f-]+)";', meta).group(1)
    paths = check_packets(out, uuid, packet or 65536, what)
    p = subprocess.run([bt2, "--clock-cycles", "--no-delta", out], capture_output=True,
                       timeout=300)
    if not eq(p.returncode, 0, f"{what}: babeltrace2 exit 0 ({p.stderr[:300]!r})"):
        return {}
    evs, _ = bt_events(p.stdout.decode("utf-8", "surrogateescape"))
    _, disc = bt_events_warnings(p.stderr.decode("utf-8", "replace"))
    offs = loom_offsets(trace)
    base = min([0] + list(offs.values())) if offs else 0
    c.eq(meta_clock(meta), base, f"{what}: the clock's offset is the smallest loom offset")
    want = dump_events(trace, [m for m in models])
    got, used = {}, {}
    for cyc, cname, ctx, pay in evs:
        mcv, data = rebuild(cname, classes[cname], pay)
        empty = rebuild(cname, classes[cname], pay, True) if STALE_EMPTY else None
        off = offs.get(ctx["loom"].split(".")[0], 0)
        got.setdefault(ctx["path"], []).append((cyc - off + base, mcv, data,
                                                 empty[1] if empty else None))
        used[cname] = used.get(cname, 0) + 1
    for path in sorted(set(want) | set(got)):
        w, g = want.get(path, []), got.get(path, [])
        # babeltrace2 2.0.4's stale empty strings: the event is the dump's
        # with its string empty
        g = [x[:3] if x[3] is None or x[:3] == y else (x[0], x[1], x[3] if (x[0], x[1], x[3])
             == y else x[2]) for x, y in zip(g, w + [None] * len(g))]
        if w != g:
            bad = next((i for i, (x, y) in enumerate(zip(w, g)) if x != y), min(len(w), len(g)))
            c.expect(False, f"{what}: {path}: babeltrace2's events are weft dump's ("
                     f"{len(g)} vs {len(w)}; first difference at #{bad}: "
                     f"{g[bad:bad + 1]!r:.300} vs {w[bad:bad + 1]!r:.300})")
        else:
            c.expect(True, "")
    lost = check_lost(trace)
    c.eq({paths.get(f, f): n for f, n in disc.items()}, lost,
         f"{what}: babeltrace2's discarded events per stream are weft check's lost events")
    return used


def usage_and_dirs(bt2, tmp, trace):
    out = os.path.join(tmp, "rules")
    rc, so, err = weft(["export", "ctf", trace])
    c.eq((rc, so, err), (2, "", "weft export: missing -o DIR (the directory to write); run "
                         "`weft export --help`\n"), "no -o: usage error")
    rc, so, err = weft(["export", "ctff", trace, "-o", out])
    c.eq((rc, err), (2, "weft export: unknown format 'ctff' (did you mean 'ctf'?); run "
                     "`weft export --help`\n"), "a misspelt format")
    rc, so, err = weft(["export"])
    c.eq((rc, err), (2, "weft export: missing FORMAT (ctf or otf2); run `weft export --help`\n"),
         "no FORMAT")
    rc, so, err = weft(["export", "ctf", trace, trace, "-o", out])
    c.eq((rc, err), (2, "weft export: more than a FORMAT and a TRACE; run "
                     "`weft export --help`\n"), "two traces")
    rc, so, err = weft(["export", "--help"])
    c.expect(rc == 0 and so.startswith("Usage: weft export FORMAT") and "--force" in so,
             "--help")

    # a non-empty directory: refused, untouched; --force refuses it too
    os.mkdir(out)
    open(os.path.join(out, "notes.txt"), "w").write("mine\n")
    rc, so, err = weft(["export", "ctf", trace, "-o", out])
    c.eq((rc, so, err), (1, "", f"weft export: {out}: exists and is not empty: not replaced "
                         "(--force replaces a CTF trace weft wrote)\n"), "a non-empty DIR")
    rc, so, err = weft(["export", "ctf", "--force", trace, "-o", out])
    c.eq((rc, err), (1, f"weft export: {out}: exists and is not a CTF trace weft wrote: not "
                     "replaced (even with --force)\n"), "--force and a DIR of another's")
    c.eq(os.listdir(out), ["notes.txt"], "the DIR refused is untouched")
    os.unlink(os.path.join(out, "notes.txt"))
    # an empty directory is written into; again: refused; --force: replaced, same bytes
    rc, so, err = weft(["export", "ctf", "-q", trace, "-o", out])
    c.eq((rc, so, err), (0, "", ""), "an empty DIR")
    first = {f: open(os.path.join(out, f), "rb").read() for f in os.listdir(out)}
    rc, so, err = weft(["export", "ctf", "-q", trace, "-o", out])
    c.eq((rc, err), (1, f"weft export: {out}: exists and is not empty: not replaced "
                     "(--force replaces a CTF trace weft wrote)\n"), "an export again")
    rc, so, err = weft(["export", "ctf", "--force", trace, "-o", out])
    c.expect(rc == 0 and re.match(rf"weft export: {re.escape(out)}: \d+ streams?, \d+ events", so),
             f"--force replaces an export of weft's, the summary line ({so!r} {err!r})")
    again = {f: open(os.path.join(out, f), "rb").read() for f in os.listdir(out)}
    c.expect(first == again and "metadata" in first, "an export again gives the same files")
    # a symbolic link (to a directory, or dangling): refused, not followed
    link = os.path.join(tmp, "link")
    os.symlink(os.path.join(tmp, "elsewhere"), link)
    rc, so, err = weft(["export", "ctf", trace, "-o", link])
    c.eq((rc, err), (1, f"weft export: {link}: is a symbolic link: not replaced (the output is "
                     "a directory, and weft follows no symbolic link)\n"), "-o a symbolic link")
    c.expect(not os.path.exists(os.path.join(tmp, "elsewhere")), "the link not followed")
    # a trace error: nothing left
    rc, so, err = weft(["export", "ctf", os.path.join(tmp, "nothing-here"), "-o",
                        os.path.join(tmp, "new")])
    c.expect(rc == 1 and err.startswith("weft export: ") and not os.path.exists(
        os.path.join(tmp, "new")), f"a trace that is not there: exit 1, nothing written ({err!r})")
    # corrupt traces: the reader's message (file, offset), exit 1, nothing written
    bad = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(trace))), "bad")
    for case, msg in (("obs-truncated-mid-event", "offset 48: event header cut short: 5 of 12 "
                       "bytes before the end of the file"),
                      ("clock-backwards", "offset 48: event OHp: clock goes backwards from "
                       "484561306652 to 484561305245 within the stream")):
        t = os.path.join(bad, case, "ovni")
        obs = glob.glob(os.path.join(t, "loom.*", "proc.*", "thread.*", "stream.obs"))
        new = os.path.join(tmp, "bad-" + case)
        rc, so, err = weft(["export", "ctf", t, "-o", new])
        c.eq((rc, so, err), (1, "", f"weft export: {obs[0] if obs else '?'}: {msg}\n"),
             f"bad/{case}: the reader's error")
        c.expect(not os.path.exists(new), f"bad/{case}: nothing written")
    left = glob.glob(os.path.join(tmp, "*.weft-ctf-*"))
    c.eq(left, [], "no temporary directory left behind")


def main():
    bt2 = need_babeltrace2()
    corpus = conformance_dir()
    tmp = tempfile.mkdtemp(prefix="weft-ctf-")
    try:
        cases = sorted(glob.glob(os.path.join(corpus, "v3", "*", "ovni")) +
                       glob.glob(os.path.join(corpus, "v1", "*", "ovni")) +
                       glob.glob(os.path.join(corpus, "models", "*", "ovni")))
        c.expect(len(cases) >= 90, f"the corpus's cases ({len(cases)})")
        for i, case in enumerate(cases):
            name = os.path.relpath(os.path.dirname(case), corpus)
            one(bt2, case, os.path.join(tmp, f"c{i}"), name=name)
            shutil.rmtree(os.path.join(tmp, f"c{i}"), ignore_errors=True)
        # small packets: the 2 MiB jumbo and the rest over many packets
        one(bt2, os.path.join(corpus, "v3", "flush-auto", "ovni"), os.path.join(tmp, "small"),
            name="flush-auto, 4 KiB packets", packet=4096)
        # a user model
        zeta = zeta_trace(tmp)
        model = os.path.join(SRC, "examples", "zeta", "zeta.yaml")
        used = one(bt2, zeta, os.path.join(tmp, "zeta-ctf"), models=["--model", model],
                   name="zeta with --model")
        c.expect(used and not any(k.startswith("weft:raw") for k in used) and
                 sum(v for k, v in used.items() if k.startswith("zeta:")) > 40,
                 f"zeta: its events in the zeta classes, none raw ({sorted(used)})")
        meta = open(os.path.join(tmp, "zeta-ctf", "metadata")).read()
        c.expect('name = "zeta:ZWi";' in meta, "zeta: the class zeta:ZWi")
        # lost events
        ring = ring_trace(tmp)
        c.expect(sum(check_lost(ring).values()) > 0, "the ring trace lost events")
        one(bt2, ring, os.path.join(tmp, "ring-ctf"), name="WEFT_RING=1K")
        # events a filter left out: discarded too (the workers' OHp, one
        # a thread and ten a worker)
        filt = workers_trace(tmp, "filter", WEFT_FILTER="-OHp")
        c.eq(sorted(check_lost(filt).values()), [1, 10, 10, 10, 10],
             "the filtered trace: weft check's filtered counts")
        one(bt2, filt, os.path.join(tmp, "filter-ctf"), name="WEFT_FILTER=-OHp")
        usage_and_dirs(bt2, tmp, os.path.join(corpus, "v3", "two-procs", "ovni"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()
