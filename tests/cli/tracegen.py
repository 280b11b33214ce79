# SPDX-License-Identifier: MIT
"""Writes small synthetic ovni traces (v3 and v1) for the tests."""
import json
import os
import struct


def ev(mcv, clock, payload=b"", jumbo=None, flags=None):
    """One event: normal (payload 0 or 2..16 bytes) or jumbo (jumbo = data)."""
    m = mcv.encode("latin-1") if isinstance(mcv, str) else mcv
    if jumbo is not None:
        f = 0x13 if flags is None else flags
        return struct.pack("<B3sQI", f, m, clock, len(jumbo)) + jumbo
    n = len(payload)
    assert n == 0 or 2 <= n <= 16
    f = (0 if n == 0 else n - 1) if flags is None else flags
    return struct.pack("<B3sQ", f, m, clock) + payload


HEADER = b"ovni" + struct.pack("<I", 1)


def meta(tid, pid, loom="vm", cpus=((0, 0),), **over):
    o = {
        "lib": {"version": "1.14.0", "commit": "test"},
        "part": "thread", "tid": tid, "pid": pid, "loom": loom, "app_id": 1,
        "require": {"ovni": "1.1.0"},
        "finished": 1,
    }
    if cpus is not None:
        o["loom_cpus"] = [{"index": i, "phyid": p} for i, p in cpus]
    for k, v in over.items():
        if v is None:
            o.pop(k, None)
        else:
            o[k] = v
    return {"version": 3, "ovni": o}


def write_stream(root, rel, meta_obj, events=(), raw_json=None, obs=None):
    d = os.path.join(root, rel)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "stream.json"), "w", encoding="utf-8") as f:
        f.write(raw_json if raw_json is not None else json.dumps(meta_obj, indent=4))
    if obs is False:
        return
    with open(os.path.join(d, "stream.obs"), "wb") as f:
        f.write(obs if obs is not None else HEADER + b"".join(events))


def thread_rel(loom, pid, tid):
    return f"loom.{loom}/proc.{pid}/thread.{tid}"


def simple_events(t0, cpu=0):
    return [ev("OHx", t0, struct.pack("<iiQ", cpu, -1, 0)), ev("OHe", t0 + 10)]
