#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""picture.py - weft view's pictures (--png, --svg, --pdf; docs/view.md, "Pictures").

On corpus traces (a nosv run, its nosv.subsystem channel in thread and CPU
rows, also in a window --from/--to; the default channel, the thread state),
against weft emu's .prv of the same trace (and window):
  - the PNG (read with png.py: zlib, no imaging library) has the size asked for;
    every row band holds, at the middle of each interval of the channel at
    least 4 pixels wide, exactly that value's colour (the fixed palette,
    computed here as docs/view.md, "Pictures" gives it), and a row whose channel is
    never set is blank; each legend value's colour is in the image;
  - the SVG is XML (xml.etree) with the title, the row labels and the legend's
    value labels as <text>;
  - the PDF converts with `pdftoppm -png` into a page that is not blank and
    shows the legend's colours;
  - the errors: an unknown channel (with the nearest name), a bad size, an
    unwritable file, a symbolic link: exact messages and exit codes, and a
    failed run leaves the files of an earlier run as they were, no temporary;
  - an attacker's labels (a model whose value labels and channel label hold
    <script>, quotes, </ and &) appear in the SVG as escaped text: the
    markup is never the attacker's, and xml.etree reads back the labels;
    a trace path that is not UTF-8 (with a control character) is drawn with
    '?' for its bad bytes, the SVG still XML.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
sys.dont_write_bytecode = True
import png  # noqa: E402
from wefttest import BIN, SRC, Checker, conformance_dir, weft_bin  # noqa: E402
from wefttest import weft_text as weft  # noqa: E402

C = Checker()
check = C.expect


# ------------------------------------------------------------------ PNG

def read_png(path):
    """(width, height, rows of (r, g, b) tuples)."""
    return png.decode(Path(path).read_bytes())


# ------------------------------------------------------------------ the palette (picture.c)

PAL = [(0, 0, 0), (0, 130, 200), (217, 217, 217), (230, 25, 75), (60, 180, 75), (255, 225, 25),
       (245, 130, 48), (145, 30, 180), (70, 240, 240), (240, 50, 230), (210, 245, 60),
       (250, 190, 212), (0, 128, 128), (128, 128, 128), (220, 190, 255), (170, 110, 40),
       (255, 250, 200), (128, 0, 0), (170, 255, 195), (128, 128, 0), (255, 215, 180),
       (0, 0, 128), (0, 0, 255)]
M64 = (1 << 64) - 1


def color(v):
    if 0 < v < len(PAL):
        return PAL[v]
    x = ((v & M64) * 0x9e3779b97f4a7c15) & M64
    x ^= x >> 31
    x = (x * 0xbf58476d1ce4e5b9) & M64
    x ^= x >> 29
    return tuple(40 + (x >> (8 * k)) % 191 for k in range(3))


def geometry(W, H):
    """The timeline's top and bottom rows (picture.c's layout)."""
    fs = min(max(min(W, H) / 70.0, 9.0), 28.0)
    pad = fs
    bottom = max(H * 0.3, fs * 8)
    y0 = int(pad * 2 + fs * 1.5 + 0.5)
    y1 = int(H - bottom - fs * 3.6 + 0.5)
    return y0, y1


# ------------------------------------------------------------------ weft emu's view of the trace

def prv_changes(path, typ):
    """(duration, {row: [(time, value)]}) of one Paraver type, the last value at a time."""
    rows = {}
    with open(path) as f:
        head = f.readline()
        dur = int(re.search(r":([0-9]+)_ns:", head).group(1))
        for line in f:
            p = line.rstrip("\n").split(":")
            if p[0] != "2":
                continue
            row, t = int(p[4]), int(p[5])
            for k in range(6, len(p) - 1, 2):
                if int(p[k]) == typ:
                    ch = rows.setdefault(row, [])
                    v = int(p[k + 1])
                    if ch and ch[-1][0] == t:
                        ch[-1] = (t, v)
                    else:
                        ch.append((t, v))
    return dur, rows


def row_labels(path):
    lines = Path(path).read_text().split("\n")
    n = int(re.search(r"LEVEL THREAD SIZE ([0-9]+)", "\n".join(lines)).group(1))
    i = lines.index(f"LEVEL THREAD SIZE {n}")
    return lines[i + 1:i + 1 + n]


def pcf_values(path, typ):
    """{value: label} of a type's block of a .pcf."""
    lines = Path(path).read_text().split("\n")
    out = {}
    for i, l in enumerate(lines):
        if l == "EVENT_TYPE" and re.match(rf"0 +{typ} ", lines[i + 1]):
            for v in lines[i + 3:]:
                m = re.match(r"(-?[0-9]+) +(.*)$", v)
                if not m:
                    break
                out[int(m.group(1))] = m.group(2)
    return out


def cfg_type(path):
    return int(re.search(r"^window_filter_module evt_type 1 ([0-9]+)$", Path(path).read_text(),
                         re.M).group(1))


def expected_rows(emu, channel):
    """[(label, [(t0, t1, value)])] of the picture's rows: the threads', then the CPUs'."""
    out, dur = [], 0
    for view in ("thread", "cpu"):
        cfg = emu / "cfg" / view / f"{channel}.cfg"
        if not cfg.exists():
            continue
        dur, rows = prv_changes(emu / f"{view}.prv", cfg_type(cfg))
        for r, label in enumerate(row_labels(emu / f"{view}.row"), 1):
            ch = rows.get(r, [])
            ivs = [(t, ch[i + 1][0] if i + 1 < len(ch) else dur, v)
                   for i, (t, v) in enumerate(ch) if v != 0]
            out.append((label, ivs))
    return dur, out


def check_png(name, png, W, H, dur, rows, legend_values):
    try:
        w, h, px = read_png(png)
    except (ValueError, zlib.error, OSError) as e:
        check(False, f"{name}: {png} is not a PNG: {e}")
        return
    check((w, h) == (W, H), f"{name}: size {w}x{h}, want {W}x{H}")
    y0, y1 = geometry(W, H)
    # the axis: a line of (51, 51, 51) at y1 + 2 from x0 to x1
    axis = [x for x in range(W) if px[y1 + 2][x] == (51, 51, 51)]
    if not check(len(axis) > W // 2, f"{name}: no time axis at row {y1 + 2}"):
        return
    x0, x1 = axis[0], axis[-1] + 1
    rh = (y1 - y0) / len(rows)
    white = (255, 255, 255)
    sampled = 0
    for r, (label, ivs) in enumerate(rows):
        top, bot = int(y0 + rh * r) + 2, int(y0 + rh * (r + 1)) - 2
        mid = int(y0 + rh * r + rh / 2)
        band = [px[y][x] for y in range(top, bot) for x in range(x0 + 1, x1 - 1)]
        drawn = sum(1 for c in band if c != white)
        if ivs:
            check(drawn > 0, f"{name}: row {r} ({label}) has intervals but its band is blank")
        else:
            check(drawn == 0, f"{name}: row {r} ({label}) has no interval but {drawn} pixels drawn")
        for t0, t1, v in ivs:
            xa, xb = x0 + (x1 - x0) * t0 / dur, x0 + (x1 - x0) * min(t1, dur) / dur
            if xb - xa < 4:
                continue
            x = int((xa + xb) / 2)
            sampled += 1
            check(px[mid][x] == color(v), f"{name}: row {r} ({label}) at x {x} (t {t0}..{t1}): "
                  f"{px[mid][x]}, want the colour of {v} {color(v)}")
    check(sampled >= 3, f"{name}: only {sampled} intervals wide enough to sample")
    counts = {}
    for y in range(H):
        for c in px[y]:
            counts[c] = counts.get(c, 0) + 1
    for v in legend_values:
        check(counts.get(color(v), 0) >= 16, f"{name}: the legend colour of {v} {color(v)} "
              f"is not in the image")


def svg_texts(path):
    root = ET.parse(path).getroot()
    return [(e.text or "") for e in root.iter("{http://www.w3.org/2000/svg}text")]


def main():
    weft_bin()
    corpus = Path(conformance_dir())
    trace = corpus / "models" / "rand-nosv-0" / "ovni"
    with tempfile.TemporaryDirectory(prefix="weft-picture-") as tmp:
        tmp = Path(tmp)
        emu = tmp / "emu"
        p = weft("emu", "-q", "--paraver", "-o", emu, trace)
        if not check(p.returncode == 0, f"weft emu: {p.stderr}"):
            return 1
        wemu = tmp / "emu-window"
        p = weft("emu", "-q", "--paraver", "--from", "40ns", "--to", "230ns", "-o", wemu, trace)
        check(p.returncode == 0, f"weft emu --from --to: {p.stderr}")
        for name, channel, W, H, window in [("subsystem", "nosv.subsystem", 900, 560, None),
                                            ("state", None, 640, 400, None),
                                            ("window", "nosv.subsystem", 800, 500,
                                             ("40ns", "230ns"))]:
            dur, rows = expected_rows(wemu if window else emu, channel or "ovni.thread.state")
            values = sorted({v for _, ivs in rows for _, _, v in ivs})
            out = tmp / name
            out.mkdir()
            args = ["view", trace, "--png", out / "p.png", "--svg", out / "p.svg",
                    "--pdf", out / "p.pdf", "--size", f"{W}x{H}"]
            if channel:
                args += ["--channel", channel]
            if window:
                args += ["--from", window[0], "--to", window[1]]
            p = weft(*args)
            if not check((p.returncode, p.stdout, p.stderr) == (0, "", ""),
                         f"{name}: weft view: exit {p.returncode}: {p.stderr}"):
                continue
            check(sorted(x.name for x in out.iterdir()) == ["p.pdf", "p.png", "p.svg"],
                  f"{name}: files {sorted(x.name for x in out.iterdir())}")
            check(len(rows) > 1 and len(values) > 1, f"{name}: {len(rows)} rows, values {values}")
            check_png(name, out / "p.png", W, H, dur, rows, values)
            # the SVG: XML, its text as text
            try:
                texts = svg_texts(out / "p.svg")
            except ET.ParseError as e:
                check(False, f"{name}: the SVG is not XML: {e}")
                texts = []
            ch = channel or "ovni.thread.state"
            check(any(t.startswith(ch + ": ") for t in texts), f"{name}: no title in {texts}")
            for label, _ in rows:
                check(label.strip() in [t.strip() for t in texts],
                      f"{name}: row label {label!r} not in the SVG's text")
            labels = pcf_values(emu / "thread.pcf", cfg_type(emu / "cfg" / "thread" / f"{ch}.cfg"))
            check(all(v in labels for v in values), f"{name}: values {values} vs .pcf {labels}")
            for v in values:
                check(labels.get(v) in texts, f"{name}: legend label {labels.get(v)!r} not in "
                      f"the SVG's text")
            # the PDF: pdftoppm makes a page that is not blank, with the legend's colours
            pdftoppm = shutil.which("pdftoppm")
            if check(pdftoppm is not None, "pdftoppm (poppler-utils) is not installed"):
                q = subprocess.run([pdftoppm, "-png", "-r", "72", "-singlefile", out / "p.pdf",
                                    out / "page"], capture_output=True, text=True, timeout=60)
                if check(q.returncode == 0, f"{name}: pdftoppm: {q.stderr}"):
                    w, h, px = read_png(out / "page.png")
                    colours = {}
                    for row in px:
                        for c in row:
                            colours[c] = colours.get(c, 0) + 1
                    drawn = w * h - colours.get((255, 255, 255), 0)
                    check(drawn > w * h // 50, f"{name}: the PDF's page is blank ({drawn} pixels)")
                    check(sum(1 for v in values if colours.get(color(v), 0) > 0) >= 1,
                          f"{name}: no legend colour on the PDF's page")

        # ---- errors ----
        err = tmp / "err"
        err.mkdir()
        (err / "old.png").write_bytes(b"old")
        cases = [
            (["--png", err / "x.png", "--channel", "nosv.subsytem"], 1,
             "weft view: unknown channel 'nosv.subsytem'; did you mean 'nosv.subsystem'? (the "
             "channels are the catalogue's names: docs/emu.md)\n"),
            (["--png", err / "x.png", "--size", "10x10"], 2,
             "weft view: --size '10x10': each side must be from 200 to 16384 pixels, and the "
             "picture at most 67108864 pixels in all\n"),
            (["--png", err / "x.png", "--size", "8193x8193"], 2,
             "weft view: --size '8193x8193': each side must be from 200 to 16384 pixels, and the "
             "picture at most 67108864 pixels in all\n"),
            (["--png", err / "x.png", "--size", "99999999999x300"], 2,
             "weft view: --size '99999999999x300': each side must be from 200 to 16384 pixels, "
             "and the picture at most 67108864 pixels in all\n"),
            (["--png", err / "x.png", "--size", "wide"], 2,
             "weft view: --size 'wide' is not a size: give WIDTHxHEIGHT in pixels (e.g. "
             "1600x900)\n"),
            (["--png", tmp / "no-such-dir" / "x.png"], 1,
             f"weft view: cannot write {tmp}/no-such-dir/x.png: No such file or directory\n"),
            (["--png", err / "old.png", "--svg", tmp / "no-such-dir" / "x.svg"], 1,
             f"weft view: cannot write {tmp}/no-such-dir/x.svg: No such file or directory\n"),
        ]
        os.symlink(err / "old.png", err / "link.png")
        cases.append((["--png", err / "link.png"], 1,
                      f"weft view: {err}/link.png: is a symbolic link: not replaced (weft "
                      f"replaces only regular files)\n"))
        for args, rc, msg in cases:
            p = weft("view", trace, *args)
            check((p.returncode, p.stdout, p.stderr) == (rc, "", msg),
                  f"weft view {' '.join(map(str, args))}: exit {p.returncode}: {p.stderr!r}, "
                  f"want {rc}: {msg!r}")
        check(sorted(x.name for x in err.iterdir()) == ["link.png", "old.png"],
              f"errors: files left {sorted(x.name for x in err.iterdir())}")
        check((err / "old.png").read_bytes() == b"old", "errors: old.png changed")

        # ---- an attacker's labels ----
        zeta = BIN / "bin" / "zeta"
        if check(zeta.is_file(), f"{zeta} is missing (build the examples)"):
            hostile = {1: "<script>alert(1)</script>", 2: "a \"quoted\" & 'apostrophe' </text>",
                       3: "</svg><svg onload=x>"}
            model = (SRC / "examples" / "zeta" / "zeta.yaml").read_text()
            model = model.replace("[1, Setup]", "[1, '<script>alert(1)</script>']")
            model = model.replace("[2, Compute]", "[2, 'a \"quoted\" & ''apostrophe'' </text>']")
            model = model.replace("[3, Teardown]", "[3, '</svg><svg onload=x>']")
            model = model.replace("label: Zeta phase", "label: '</text><script>t</script> & \"q\"'")
            mpath = tmp / "hostile.yaml"
            mpath.write_text(model)
            ztrace = tmp / "zeta-trace"
            q = subprocess.run([str(zeta), "2", "10"], capture_output=True, text=True, timeout=60,
                               cwd=tmp, env=dict(os.environ, OVNI_TRACEDIR=str(ztrace)))
            if check(q.returncode == 0, f"zeta: {q.stderr}"):
                svg = tmp / "hostile.svg"
                p = weft("view", ztrace, "--model", mpath, "--channel", "zeta.phase", "--svg", svg,
                         "--png", tmp / "hostile.png")
                if check(p.returncode == 0, f"hostile: exit {p.returncode}: {p.stderr}"):
                    raw = svg.read_text()
                    for bad in ("<script", "</svg><svg", "onload=x>", "</text><script"):
                        check(bad not in raw, f"hostile: {bad!r} is markup in the SVG")
                    check("&lt;script&gt;alert(1)&lt;/script&gt;" in raw, "hostile: not escaped")
                    check("&amp;" in raw and "&quot;quoted&quot;" in raw,
                          "hostile: & and quotes not escaped")
                    try:
                        texts = svg_texts(svg)
                    except ET.ParseError as e:
                        check(False, f"hostile: the SVG is not XML: {e}")
                        texts = []
                    for v, label in hostile.items():
                        check(label in texts, f"hostile: label {label!r} not read back: {texts}")
                    check(any("</text><script>t</script> & \"q\"" in t for t in texts),
                          "hostile: the channel's label not in the title")
        # a trace path that is not UTF-8 (in the title): drawn with '?', the SVG still XML
        odd = tmp / os.fsdecode(b"odd-\xff\x01-dir")
        shutil.copytree(trace, odd)
        p = weft("view", odd, "--svg", tmp / "odd.svg", "--png", tmp / "odd.png")
        if check((p.returncode, p.stderr) == (0, ""), f"odd path: exit {p.returncode}: {p.stderr}"):
            try:
                texts = svg_texts(tmp / "odd.svg")
            except ET.ParseError as e:
                check(False, f"odd path: the SVG is not XML: {e}")
                texts = []
            check(any("odd-??-dir" in t for t in texts), f"odd path: title not in {texts}")
            check(read_png(tmp / "odd.png")[:2] == (1600, 900), "odd path: PNG size")
    return C.status()


if __name__ == "__main__":
    sys.exit(main())
