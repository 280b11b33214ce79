# SPDX-License-Identifier: MIT
"""weft: ovni traces as data (docs/python.md).

    import weft
    with weft.open("ovni") as t:
        print(t.looms, t.threads)
        ev = t.read_all()              # weft.Events: NumPy columns
        ev["rclock"], ev.mcv, ev.payload(0)
    tl = weft.emulate("ovni")          # the timelines of `weft emu`
    tl["thread"].to_pandas()           # when pandas is installed

Reading goes through libweft's reader and the emulation through the driver
of `weft emu`, both in C (weft._weft). Errors are weft.Error, carrying weft's
message (the file, the byte offset, the reason).
"""
import json
import os
import re

import numpy as np

from . import _weft

__all__ = ["Error", "open", "Trace", "Events", "Loom", "Process", "Thread", "Cpu", "Stream",
           "MarkType", "emulate", "Emulation", "Timeline", "concat", "event_fields",
           "describe"]

_MSG = re.compile(r"^(?P<file>.*?): offset (?P<offset>\d+): (?P<reason>.*)$", re.S)
_MSG_NOOFF = re.compile(r"^(?P<file>/?[^ :]*[/.][^ :]*): (?P<reason>.*)$", re.S)


class Error(Exception):
    """A weft error. str(e) is weft's message; file, offset (or None) and
    reason are its parts, when the message names them; warnings: those
    reported before a failed weft.open()."""

    warnings = ()

    def __init__(self, message):
        super().__init__(message)
        self.message = message
        self.file = None
        self.offset = None
        self.reason = message
        m = _MSG.match(message)
        if m:
            self.file, self.offset, self.reason = m["file"], int(m["offset"]), m["reason"]
        else:
            m = _MSG_NOOFF.match(message)
            if m:
                self.file, self.reason = m["file"], m["reason"]


_weft.set_error_class(Error)


def _plain(cls):
    """A small value class: fields from __slots__, repr, equality."""
    def __init__(self, *args):
        for k, v in zip(cls.__slots__, args):
            setattr(self, k, v)

    def __repr__(self):
        shown = [k for k in cls.__slots__ if k not in getattr(cls, "_hide", ())]
        return "%s(%s)" % (cls.__name__, ", ".join("%s=%r" % (k, getattr(self, k))
                                                  for k in shown))
    cls.__init__ = __init__
    cls.__repr__ = __repr__
    return cls


@_plain
class Cpu:
    """A CPU of a loom: its logical index and its physical id."""
    __slots__ = ("index", "phyid", "loom")
    _hide = ("loom",)


@_plain
class Loom:
    """A loom (a machine): name, hostname, clock_offset (ns), has_rank,
    rank_min, cpus, processes."""
    __slots__ = ("name", "hostname", "clock_offset", "has_rank", "rank_min", "cpus",
                 "processes")
    _hide = ("cpus", "processes")


@_plain
class Process:
    """A process: pid, app_id (0: absent), rank (-1: absent), nranks, its
    loom and threads."""
    __slots__ = ("pid", "app_id", "rank", "nranks", "loom", "threads")
    _hide = ("loom", "threads")


@_plain
class Thread:
    """A thread: tid, its process, its stream, and index (its place in
    Trace.threads: the events' `thread` column)."""
    __slots__ = ("tid", "process", "stream", "index")
    _hide = ("process", "stream")


@_plain
class Stream:
    """A stream (one thread's files): relpath, obs_path, meta_version,
    thread (or None), obs_size, finished, lib_version, lib_commit, requires
    [(model, version)], clock_offset, json_path, and index (the events'
    `stream` column). attr(key) reads any stream.json attribute."""
    __slots__ = ("relpath", "obs_path", "meta_version", "thread", "obs_size", "finished",
                 "lib_version", "lib_commit", "requires", "clock_offset", "json_path", "index",
                 "_trace")
    _hide = ("thread", "_trace", "obs_path", "json_path")

    def attr(self, key, default=None):
        """The stream.json attribute at a dotted key ("ovni.lib.version"),
        decoded from JSON; default when absent."""
        text = self._trace._c.stream_attr(self.index, key)
        return default if text is None else json.loads(text)


@_plain
class MarkType:
    """A mark type (ovni_mark_type): type, title, stack, labels {value: label}."""
    __slots__ = ("type", "title", "stack", "labels")


_MODES = {"strict": 0, "lenient": 1}
_CLOCKS = {"offset": 0, "raw": 1}
_READAHEAD = {"auto": 0, "off": 1, "on": 2}
_BACKWARDS = {"error": 0, "regions": 1, "warn": 2}
_CUT = {"error": 0, "warn": 1, "quiet": 2}


def _choice(name, table, v):
    if v not in table:
        raise ValueError("%s must be one of %s, not %r" % (name, ", ".join(table), v))
    return table[v]


def _models(model):
    """The registry of the model files `model` (None, a path, or a list of
    paths: weft emu --model FILE...), or None: the built-in models only.
    A malformed file raises weft.Error with the loader's message."""
    if model is None:
        return None
    if isinstance(model, (str, bytes, os.PathLike)):
        model = [model]
    return _weft.registry([os.fspath(m) for m in model])


def open(path, mode="strict", clock="offset", backwards="error", sort=False,
         sort_look_back=0, cut="error", all_models=False, accept_unfinished=0,
         readahead="auto", seek=None, warn=None, model=None):
    """Opens the trace at path (a trace directory, a directory in it, or a
    stream directory) with the reader's options (struct weft_open_opts):
    mode "strict"|"lenient", clock "offset" (ordered by sclock) | "raw",
    backwards "error"|"regions"|"warn", sort (unordered regions sorted on
    read), sort_look_back, cut "error"|"warn"|"quiet", all_models,
    accept_unfinished (0, 1, 2), readahead "auto"|"off"|"on", seek (a
    clock: start there). warn: a callable given each warning (they are also
    kept in Trace.warnings). model: a model file, or a list of them (weft
    dump --model FILE...): the events of those models are decoded too
    (Events.describe, decode, fields); a malformed file raises weft.Error
    before the trace is read. Raises weft.Error."""
    models = _models(model)
    c = _weft.open(os.fspath(path), _choice("mode", _MODES, mode),
                   _choice("clock", _CLOCKS, clock), _choice("readahead", _READAHEAD, readahead),
                   int(bool(all_models)), _choice("backwards", _BACKWARDS, backwards),
                   int(bool(sort)), int(sort_look_back), _choice("cut", _CUT, cut),
                   int(accept_unfinished), int(seek is not None),
                   int(seek) if seek is not None else 0, warn, models)
    return Trace(c, os.fspath(path), models)


class Trace:
    """An open trace: its system (looms, processes, threads, cpus,
    streams, mark_types) as plain objects, and its events in batches of
    NumPy columns (batches(), read(), read_all())."""

    def __init__(self, c, path, models=None):
        self._c = c
        self.path = path
        self._models = models  # the registry of open(model=...), or None
        looms, streams, marks = c.system()
        self.streams = [Stream(*s[:3], None, *s[4:], i, self) for i, s in enumerate(streams)]
        self.looms, self.processes, self.threads, self.cpus = [], [], [], []
        for (name, host, off, has_rank, rank_min, cpus, procs) in looms:
            loom = Loom(name, host, off, bool(has_rank), rank_min, [], [])
            for (index, phyid) in cpus:
                cpu = Cpu(index, phyid, loom)
                loom.cpus.append(cpu)
                self.cpus.append(cpu)
            for (pid, app_id, rank, nranks, threads) in procs:
                p = Process(pid, app_id, rank, nranks, loom, [])
                for (tid, si) in threads:
                    s = self.streams[si] if si >= 0 else None
                    th = Thread(tid, p, s, len(self.threads))
                    if s is not None:
                        s.thread = th
                    p.threads.append(th)
                    self.threads.append(th)
                loom.processes.append(p)
                self.processes.append(p)
            self.looms.append(loom)
        for s in self.streams:
            s.finished = bool(s.finished)
        self.mark_types = [MarkType(t, title, bool(st), dict(labels))
                           for (t, title, st, labels) in marks]

    @property
    def warnings(self):
        """The warnings so far (list of str, one sentence each)."""
        return self._c.warnings

    def close(self):
        self._c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def read(self, max=1 << 20, offsets=False):
        """The next events (at most max) as weft.Events, or None at the
        end. offsets: also the `offset` column (byte offset of each event
        in its stream file). Raises weft.Error on a bad trace."""
        cols = self._c.read(max, offsets)
        return None if cols is None else Events(cols, self)

    def batches(self, size=1 << 20, offsets=False):
        """Iterates over the events in batches of weft.Events."""
        while True:
            b = self.read(size, offsets)
            if b is None:
                return
            yield b

    def read_all(self, offsets=False):
        """Every (remaining) event, as one weft.Events."""
        return concat(list(self.batches(offsets=offsets)), self)

    def __iter__(self):
        return self.batches()

    @property
    def nevents(self):
        """Events yielded so far."""
        return self._c.counters()[0]

    @property
    def first_clock(self):
        """Smallest first sclock of the streams read so far (0: none)."""
        return self._c.counters()[1]

    @property
    def last_clock(self):
        """Largest last sclock of the streams read so far (0: none)."""
        return self._c.counters()[2]

    def nbackwards(self, in_regions=True):
        """Events whose clock went back within their stream."""
        return self._c.counters()[3 if in_regions else 4]

    def cut(self, stream):
        """None, or (header, offset, bytes, why) for a stream found cut."""
        return self._c.cut(stream.index if isinstance(stream, Stream) else int(stream))

    def unfinished(self, stream):
        """The stream was accepted without ovni.finished."""
        return self._c.unfinished(stream.index if isinstance(stream, Stream) else int(stream))


_COLS = ("rclock", "sclock", "flags", "model", "category", "value", "stream", "thread")


class Events:
    """Events as NumPy columns, one element per event: rclock (the clock in
    the file), sclock (with the loom's offset), flags, model, category,
    value (uint8 each), stream (index into Trace.streams), thread (index
    into Trace.threads, -1: none), and optionally offset. Payloads: the
    bytes of all events in `payload` (uint8), event i's from
    payload_offset[i] to payload_offset[i + 1] (as in the file: a jumbo
    payload starts with its u32 size)."""

    def __init__(self, cols, trace=None):
        self.columns = cols
        self.trace = trace

    def _registry(self):
        """The models of the trace's open(model=...), else the built-in."""
        return getattr(self.trace, "_models", None)

    def __len__(self):
        return len(self.columns["rclock"])

    def __getitem__(self, name):
        return self.columns[name]

    def __getattr__(self, name):
        cols = self.__dict__.get("columns")
        if cols is not None and name in cols:
            return cols[name]
        raise AttributeError(name)

    @property
    def mcv(self):
        """The MCVs as a NumPy array of 3-byte strings (dtype S3)."""
        a = np.empty((len(self), 3), dtype=np.uint8)
        a[:, 0] = self.columns["model"]
        a[:, 1] = self.columns["category"]
        a[:, 2] = self.columns["value"]
        return a.view("S3").reshape(len(self))

    @property
    def payload_size(self):
        return np.diff(self.columns["payload_offset"])

    def payload(self, i):
        """The payload of event i, as bytes."""
        o = self.columns["payload_offset"]
        return self.columns["payload"][o[i]:o[i + 1]].tobytes()

    def payload_fixed(self, width=16):
        """The payloads as an (n, width) uint8 array, zero-padded (longer
        ones cut at width: jumbo payloads)."""
        n = len(self)
        out = np.zeros((n, width), dtype=np.uint8)
        off = self.columns["payload_offset"]
        size = np.minimum(np.diff(off), width)
        data = self.columns["payload"]
        for k in range(width):
            has = size > k
            out[has, k] = data[off[:-1][has] + k]
        return out

    def select(self, mask):
        """The events where mask (a boolean array or index array) holds."""
        idx = np.arange(len(self))[mask]
        cols = {k: v[idx] for k, v in self.columns.items()
                if k not in ("payload", "payload_offset")}
        off = self.columns["payload_offset"]
        sizes = off[idx + 1] - off[idx]
        newoff = np.zeros(len(idx) + 1, dtype=np.int64)
        np.cumsum(sizes, out=newoff[1:])
        total = int(newoff[-1])
        pos = np.repeat(off[idx] - newoff[:-1], sizes) + np.arange(total, dtype=np.int64)
        cols["payload"] = self.columns["payload"][pos]
        cols["payload_offset"] = newoff
        return Events(cols, self.trace)

    def fields(self, mcv):
        """The payload fields of the events with this MCV (b"OHx" or
        "OHx"), decoded by name as the models describe them (weft dump's
        table): a dict name -> NumPy column (integers, or an object column
        of str for a string field), plus "index" (the events' positions)."""
        m = mcv.encode() if isinstance(mcv, str) else bytes(mcv)
        spec = _weft.event_spec(m, self._registry())
        if spec is None:
            raise KeyError("no model describes the events %r" % m.decode("latin-1"))
        idx = np.nonzero(self.mcv == m)[0]
        out = {"index": idx}
        off = self.columns["payload_offset"]
        data = self.columns["payload"]
        size = off[idx + 1] - off[idx]
        for (name, ftype, foff) in spec[1]:
            if ftype == "str":
                col = np.empty(len(idx), dtype=object)
                for j, i in enumerate(idx):
                    raw = data[off[i] + foff:off[i + 1]].tobytes()
                    col[j] = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
                out[name] = col
                continue
            dt = np.dtype(("<" if np.little_endian else ">") + ftype[0]
                          + str(int(ftype[1:]) // 8))
            w = dt.itemsize
            ok = size >= foff + w
            col = np.zeros(len(idx), dtype=dt)
            if ok.any():
                start = off[idx[ok]] + foff
                b = data[start[:, None] + np.arange(w)]
                col[ok] = np.ascontiguousarray(b).view(dt).reshape(-1)
            out[name] = col
        return out

    def decode(self, i):
        """Event i's payload fields by name (dict), from the models' table;
        {} when no model describes it."""
        m = bytes([self.columns["model"][i], self.columns["category"][i],
                   self.columns["value"][i]])
        spec = _weft.event_spec(m, self._registry())
        if spec is None:
            return {}
        p = self.payload(i)
        out = {}
        for (name, ftype, foff) in spec[1]:
            if ftype == "str":
                out[name] = p[foff:].split(b"\0", 1)[0].decode("utf-8", "replace")
            else:
                w = int(ftype[1:]) // 8
                if foff + w <= len(p):
                    out[name] = int.from_bytes(p[foff:foff + w], "little" if np.little_endian
                                               else "big", signed=ftype[0] == "i")
        return out

    def describe(self, i):
        """Event i as `weft dump` describes it, or None."""
        m = bytes([self.columns["model"][i], self.columns["category"][i],
                   self.columns["value"][i]])
        return _weft.describe(m, self.payload(i), self._registry())

    def tid(self):
        """The tid of each event's thread (int64; -1 where the event has no
        thread or these events have no trace), from Trace.threads."""
        ths = getattr(self.trace, "threads", None) or []
        tids = np.array([th.tid for th in ths] + [-1], dtype=np.int64)
        th = self.columns["thread"]
        if not ths:
            return np.full(len(th), -1, dtype=np.int64)
        # thread -1 (none) takes the last element, -1
        return tids[th]

    def to_pandas(self, payload="offsets"):
        """A pandas DataFrame (needs pandas), built with NumPy alone (no
        per-event Python objects unless payload="bytes"): rclock, sclock
        (int64), flags, model, category, value (uint8), stream, thread
        (int32: indexes), tid (int64: the thread's tid, -1 none), offset
        (int64, when read with offsets=True), mcv (category of 3-char str),
        then with payload="offsets" payload_offset and payload_size (int64:
        event i's payload is df.attrs["payload"], the uint8 buffer, from
        payload_offset to payload_offset + payload_size; the Events'
        buffer itself, not a copy), or with
        payload="bytes" a payload column of bytes objects (slower: one
        object per event)."""
        import pandas as pd  # optional: only this method needs it
        if payload not in ("offsets", "bytes"):
            raise ValueError('payload must be "offsets" or "bytes"')
        c = self.columns
        # one copy of each column, handed to pandas as is (copy=False: no
        # second copy when pandas would gather same-dtype columns in blocks)
        d = {k: c[k].copy() for k in _COLS}
        d["tid"] = self.tid()
        if "offset" in c:
            d["offset"] = c["offset"].copy()
        # mcv as a categorical: a code per distinct MCV, found with a
        # lookup table over the 2^24 possible MCVs
        code = (c["model"].astype(np.int32) << 16) | (c["category"].astype(np.int32) << 8) \
            | c["value"].astype(np.int32)
        seen = np.zeros(1 << 24, dtype=bool)
        seen[code] = True
        uniq = np.flatnonzero(seen)
        lut = np.zeros(1 << 24, dtype=np.int32)
        lut[uniq] = np.arange(len(uniq), dtype=np.int32)
        names = [bytes([int(x) >> 16, (int(x) >> 8) & 255, int(x) & 255]).decode("latin-1")
                 for x in uniq]
        d["mcv"] = pd.Categorical.from_codes(lut[code], names)
        off = c["payload_offset"]
        if payload == "bytes":
            data = c["payload"].tobytes()
            d["payload"] = np.array(list(map(data.__getitem__,
                                             map(slice, off[:-1].tolist(), off[1:].tolist()))) +
                                    [None], dtype=object)[:-1]
        else:
            d["payload_offset"] = off[:-1].copy()
            d["payload_size"] = np.diff(off)
        df = pd.DataFrame(d, copy=False)
        if payload == "offsets":
            df.attrs["payload"] = c["payload"]
        return df


def concat(parts, trace=None):
    """One weft.Events from several (in order)."""
    if not parts:
        cols = {k: np.zeros(0, dtype=np.int64 if "clock" in k else
                            np.int32 if k in ("stream", "thread") else np.uint8)
                for k in _COLS}
        cols["payload"] = np.zeros(0, dtype=np.uint8)
        cols["payload_offset"] = np.zeros(1, dtype=np.int64)
        return Events(cols, trace)
    if len(parts) == 1:
        return parts[0]
    cols = {}
    for k in parts[0].columns:
        if k == "payload_offset":
            offs = [parts[0][k]]
            base = parts[0][k][-1]
            for p in parts[1:]:
                offs.append(p[k][1:] + base)
                base += p[k][-1]
            cols[k] = np.concatenate(offs)
        else:
            cols[k] = np.concatenate([p[k] for p in parts])
    return Events(cols, trace or parts[0].trace)


def event_fields(mcv):
    """The models' table entry for an MCV: (description, [(name, type,
    offset)]) or None."""
    m = mcv.encode() if isinstance(mcv, str) else bytes(mcv)
    return _weft.event_spec(m)


def describe(mcv, payload=b""):
    """An event's description as `weft dump` prints it, or None."""
    m = mcv.encode() if isinstance(mcv, str) else bytes(mcv)
    return _weft.describe(m, bytes(payload))


# ---- the emulation ----

def _dense(a):
    """(the distinct values of the int array a, sorted; a's index into
    them), through a lookup table when the values are small (np.unique
    sorts: 5 times slower on millions of records)."""
    lo, hi = int(a.min()), int(a.max())
    if lo < 0 or hi >= 1 << 24:
        return np.unique(a, return_inverse=True)
    seen = np.zeros(hi + 1, dtype=bool)
    seen[a] = True
    vals = np.flatnonzero(seen)
    lut = np.zeros(hi + 1, dtype=np.int64)
    lut[vals] = np.arange(len(vals))
    return vals.astype(a.dtype), lut[a]


class Timeline:
    """The timelines of one view (thread, cpu, a breakdown) as an interval
    table: NumPy columns row (0-based), type (Paraver type), start, end
    (ns), value; an interval per value other than 0 (null) that a row's
    channel holds, from its record to the next record of the same row and
    type (or the end of the emulation). row_labels (as Paraver's without its
    leading space: "CPU 0.1"), channels {type: name} (the channel
    catalogue's names, as `weft sql`'s channel.name: "ovni.thread.state",
    "cpu.running.tid", "nosv.subsystem"), channel_labels {type: Paraver
    label} and value_labels {type: {value: label}} name them; channel(i)
    and label(i) for one interval, to_pandas() all of them."""

    def __init__(self, name, intervals, duration, chans, rows):
        self.name = name
        self.duration = duration
        self.row_labels = rows
        self.channels = {t: n for t, n, _, _ in chans}
        self.channel_labels = {t: lab for t, _, lab, _ in chans}
        self.value_labels = {t: vals for t, _, _, vals in chans}
        # made by the module as the records came (python/_weft.c, coll_part)
        r, ty, st, en, v = intervals
        self.columns = {"row": r, "type": ty, "start": st, "end": en, "value": v}

    def __len__(self):
        return len(self.columns["row"])

    def __getitem__(self, name):
        return self.columns[name]

    def channel(self, i):
        return self.channels.get(int(self.columns["type"][i]))

    def label(self, i):
        return self.value_labels.get(int(self.columns["type"][i]), {}).get(
            int(self.columns["value"][i]))

    def to_pandas(self):
        """A pandas DataFrame (needs pandas), built with NumPy (a Python step
        per distinct type and value, not per interval): row (int), row_label
        (str), type (int), channel (str), start, end (int64 ns), value (int),
        label (str); row_label, channel and label are object columns, None
        where unnamed."""
        import pandas as pd  # optional
        c = self.columns
        n = len(self)
        d = dict(c)
        nl = len(self.row_labels)
        labels = np.array(list(self.row_labels) + [None], dtype=object)
        d["row_label"] = labels[np.where((c["row"] >= 0) & (c["row"] < nl), c["row"], nl)]
        types, tinv = _dense(c["type"]) if n else (np.zeros(0, dtype=np.int32),
                                                     np.zeros(0, dtype=np.int64))
        d["channel"] = np.array([self.channels.get(int(x)) for x in types] + [None],
                                dtype=object)[tinv] if n else np.empty(0, dtype=object)
        lab = np.full(n, None, dtype=object)
        for k, ty in enumerate(types):
            vl = self.value_labels.get(int(ty))
            if not vl:
                continue
            m = tinv == k
            vals, vinv = np.unique(c["value"][m], return_inverse=True)
            lab[m] = np.array([vl.get(int(v)) for v in vals] + [None], dtype=object)[vinv]
        d["label"] = lab
        cols = ["row", "row_label", "type", "channel", "start", "end", "value", "label"]
        return pd.DataFrame({k: d[k] for k in cols})


class Emulation:
    """The result of weft.emulate(): views {name: Timeline} ("thread",
    "cpu", and the breakdowns with breakdown=True), the values the views
    show; raw, a Timeline of the thread rows with the values the models
    wrote in their channels (a stack: its top), whether or not the thread
    runs (docs/python.md, "Raw and shown"); duration (ns), warnings (the
    driver's warnings and information lines)."""

    def __init__(self, views, warnings, raw=None):
        self.views = views
        self.raw = raw
        self.warnings = warnings
        self.duration = max((v.duration for v in views.values()), default=0)

    def __getitem__(self, name):
        return self.views[name]


_UNITS = {"ns": 1, "us": 1000, "ms": 1000000, "s": 1000000000, "min": 60000000000}
_TIME = re.compile(r"([0-9]*)(?:\.([0-9]*))?(.*)", re.S)
_INT64_MAX = (1 << 63) - 1


def _time(text, what):
    """A time as weft emu's --from/--to take it (src/cli/cli_common.h,
    cli_parse_time): (ns, rel). Digits alone are a clock in ns; a decimal
    number with a unit ns, us, ms, s or min is that long after the trace's
    first event."""
    if text.startswith("-"):
        raise ValueError(f"{what} {text!r}: a time cannot be negative")
    m = _TIME.fullmatch(text)
    ip, fp, unit = m[1], m[2], m[3]
    if not ip or fp == "" or (unit and unit not in _UNITS):
        raise ValueError(f"{what} {text!r} is not a time: give a clock in nanoseconds (e.g. "
                         "1500000) or a time after the trace's first event with a unit ns, "
                         "us, ms, s or min (e.g. '2.5s')")
    if not unit and fp is not None:
        raise ValueError(f"{what} {text!r}: a clock (a number without a unit) is whole "
                         "nanoseconds; give a unit for a time after the trace's first event "
                         f"(e.g. '{text}s')")
    mult = _UNITS.get(unit, 1)
    v = int(ip) * mult
    for d in fp or "":
        if mult % 10 != 0:
            if d != "0":
                raise ValueError(f"{what} {text!r}: finer than a nanosecond")
            continue
        mult //= 10
        v += int(d) * mult
    if v > _INT64_MAX:
        raise ValueError(f"{what} {text!r}: out of range (at most {_INT64_MAX} ns)")
    return v, int(bool(unit))


def _bound(v, what):
    """A window bound: (has, ns, rel). None; a clock (an int, or a str of
    digits); a str with a unit ("2.5s", "1ms": after the first event), as
    weft emu --from/--to; or, after the first event in ns, "+N" (also
    "+2ms") or ("rel", N)."""
    if v is None:
        return 0, 0, 0
    if isinstance(v, str):
        if v.startswith("+"):
            return (1,) + (_time(v[1:], what)[0], 1)
        return (1,) + _time(v, what)
    if isinstance(v, tuple) and len(v) == 2 and v[0] in ("rel", "abs") \
            and isinstance(v[1], int) and not isinstance(v[1], bool):
        return (1,) + _time(str(v[1]), what)[:1] + (int(v[0] == "rel"),)
    if isinstance(v, int) and not isinstance(v, bool):
        return (1,) + _time(str(v), what)
    raise TypeError(f"{what} {v!r}: give a clock (int), a str such as '1500000' or '2.5s', "
                    "or None")


def emulate(path, models="required", window=None, breakdown=False, lint=False,
            salvage=False, model=None, jobs=None):
    """Emulates the trace at path through the driver of `weft emu` and
    returns the timelines as interval tables (weft.Emulation). models:
    "required" (those the streams require) or "all" (weft emu -a). window:
    (from, to), each None, a clock (an int, or digits: "1500000") or a time
    after the first event with a unit ns, us, ms, s or min ("2.5s"), as
    weft emu --from/--to ("+N" and ("rel", N): N ns after the first
    event). model: a model file, or a list of them, added to the built-in
    models of this run (weft emu --model FILE...); a malformed file raises
    weft.Error with the loader's message before the trace is read. jobs:
    weft emu -j's workers, 1 to 4096 (None: the online CPUs); the result is
    the same whatever it is, made by the workers where weft emu -j would be
    (the module's collecting output follows the records in time order, not
    the engine's batches), serially with a window. Runs in
    several threads go on at once (the GIL is released). Raises weft.Error
    with weft emu's message."""
    if models not in ("required", "all"):
        raise ValueError('models must be "required" or "all"')
    if jobs is None:
        jobs = min(max(os.cpu_count() or 1, 1), 4096)
    elif isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= 4096:
        raise ValueError(f"jobs {jobs!r}: give a number of workers from 1 to 4096, or None")
    registry = _models(model)
    f, t = window if window is not None else (None, None)
    hf, vf, rf = _bound(f, "window start")
    ht, vt, rt = _bound(t, "window end")
    if hf and ht and rf != rt:
        raise ValueError(f"window {f!r} to {t!r}: the two are of different kinds: give both as "
                         "clocks (nanoseconds, no unit) or both after the trace's first event "
                         "(with a unit, '+N' or ('rel', N))")
    if hf and ht and vt <= vf:
        raise ValueError(f"window {f!r} to {t!r}: the end is not after the start: the window "
                         "would be empty")
    warnings = []
    # the driver hands every view's records to the module (no files)
    res = _weft.emulate(os.fspath(path), int(bool(lint)), int(bool(breakdown)),
                        int(models == "all"), int(bool(salvage)), hf, vf, rf, ht, vt, rt,
                        warnings, registry, jobs)
    res, raw_iv = res
    views = {}
    raw = None
    for name, intervals, duration, chans, rows in sorted(res, key=lambda v: v[0]):
        views[name] = Timeline(name, intervals, duration, chans, rows)
        if name == "thread":
            raw = Timeline("raw", raw_iv, duration, chans, rows)
    return Emulation(views, warnings, raw)

