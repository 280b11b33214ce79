# SPDX-License-Identifier: MIT
"""`weft check` and `weft dump` on every case under bad/: the verdict of
VERDICTS.txt, and the exact exit code, stderr (and check's stdout) per case.
Run from the case directory with the argument `ovni`, as the reference tools were."""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wefttest import Checker, conformance_dir, run  # noqa: E402

# case: check (exit, stderr, stdout), dump (exit, stderr)
CASES = {
    'appid-mismatch': {
        'check': (1, "weft check: process 17372 of loom 'vm': app_id 2 in ovni/loom.vm/proc.17372/thread.17372/stream.json but 3 in ovni/loom.vm/proc.17372/thread.17373/stream.json\n",
                  ''),
        'dump': (0, "weft dump: warning: process 17372 of loom 'vm': app_id 2 in ovni/loom.vm/proc.17372/thread.17372/stream.json but 3 in ovni/loom.vm/proc.17372/thread.17373/stream.json\n"),
    },
    'bad-magic': {
        'check': (1, "weft check: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 0: bad magic 'ovnj' (expected 'ovni')\n",
                  ''),
        'dump': (1, "weft dump: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 0: bad magic 'ovnj' (expected 'ovni')\n"),
    },
    'bad-stream-version': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 0: unknown stream version 2 (expected 1)\n',
                  ''),
        'dump': (1, 'weft dump: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 0: unknown stream version 2 (expected 1)\n'),
    },
    'clkoff-no-rows': {
        'check': (1, 'weft check: ovni/clock-offsets.txt: no offset rows after the header line\n',
                  ''),
        'dump': (0, 'weft dump: warning: ovni/clock-offsets.txt: no offset rows after the header line; clock offsets not applied\n'),
    },
    'clkoff-unknown-host': {
        'check': (1, "weft check: ovni/clock-offsets.txt: line 4: host 'hostC' matches no loom (looms: 'hostA.0', 'hostB.1')\n",
                  ''),
        'dump': (0, "weft dump: warning: ovni/clock-offsets.txt: line 4: host 'hostC' matches no loom (looms: 'hostA.0', 'hostB.1'); clock offsets not applied\n"),
    },
    'clock-backwards': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 48: event OHp: clock goes backwards from 484561306652 to 484561305245 within the stream\n',
                  ''),
        # dump warns and goes on, as ovnidump does (outside an unordered region)
        'dump': (0, 'weft dump: warning: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 48: event OHp: clock goes backwards from 484561306652 to 484561305245 within the stream, outside an unordered region\n'),
    },
    'clock-equal': {
        'check': (0, '',
                  'weft check: ovni: valid: 1 stream, 1 loom, 1 process, 1 thread, 10 events, from 484561305246 to 484561307164 ns (span 1918 ns); the models\' rules were not checked (use --models)\n'),
        'dump': (0, ''),
    },
    'clock-gate': {
        'check': (0, '',
                  'weft check: ovni: valid: 4 streams, 1 loom, 2 processes, 4 threads, 26 events, from 484633527834 to 7684644984313 ns (span 7200011456479 ns); the models\' rules were not checked (use --models)\n'),
        'dump': (0, ''),
    },
    'duplicate-tid': {
        'check': (1, "weft check: process 17323 of loom 'vm' has two streams for thread 17323: ovni/loom.vm/proc.17323/thread.17323/stream.json and ovni/loom.vm/proc.17323/thread.17323.copy/stream.json\n",
                  ''),
        'dump': (0, "weft dump: warning: process 17323 of loom 'vm' has two streams for thread 17323: ovni/loom.vm/proc.17323/thread.17323/stream.json and ovni/loom.vm/proc.17323/thread.17323.copy/stream.json\n"),
    },
    'finished-0': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.json: ovni.finished is not 1\n',
                  ''),
        'dump': (0, 'weft dump: warning: ovni/loom.vm/proc.17323/thread.17323/stream.json: ovni.finished is not 1\n'),
    },
    'finished-missing': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.json: ovni.finished is missing (the thread did not end with ovni_thread_free)\n',
                  ''),
        'dump': (0, 'weft dump: warning: ovni/loom.vm/proc.17323/thread.17323/stream.json: ovni.finished is missing (the thread did not end with ovni_thread_free)\n'),
    },
    'json-comments': {
        'check': (1, "weft check: ovni/loom.vm/proc.17323/thread.17323/stream.json: invalid JSON at line 1, column 3: string or '}' expected near '/'\n",
                  ''),
        'dump': (1, "weft dump: ovni/loom.vm/proc.17323/thread.17323/stream.json: invalid JSON at line 1, column 3: string or '}' expected near '/'\n"),
    },
    'json-invalid': {
        'check': (1, "weft check: ovni/loom.vm/proc.17323/thread.17323/stream.json: invalid JSON at line 12, column 4: string or '}' expected near end of file\n",
                  ''),
        'dump': (1, "weft dump: ovni/loom.vm/proc.17323/thread.17323/stream.json: invalid JSON at line 12, column 4: string or '}' expected near end of file\n"),
    },
    'json-not-object': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.json: the metadata is an array, not a JSON object\n',
                  ''),
        'dump': (1, 'weft dump: ovni/loom.vm/proc.17323/thread.17323/stream.json: the metadata is an array, not a JSON object\n'),
    },
    'json-version-2': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.json: metadata version 2, expected 3\n',
                  ''),
        'dump': (1, 'weft dump: ovni/loom.vm/proc.17323/thread.17323/stream.json: metadata version 2, expected 3\n'),
    },
    'json-version-missing': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.json: missing "version" (expected 3)\n',
                  ''),
        'dump': (1, 'weft dump: ovni/loom.vm/proc.17323/thread.17323/stream.json: missing "version" (expected 3)\n'),
    },
    'json-version-string': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.json: "version" is a string, expected the number 3\n',
                  ''),
        'dump': (1, 'weft dump: ovni/loom.vm/proc.17323/thread.17323/stream.json: "version" is a string, expected the number 3\n'),
    },
    'jumbo-nibble-0': {
        'check': (0, '',
                  'weft check: ovni: valid: 1 stream, 1 loom, 1 process, 1 thread, 14 events, from 484584081000 to 484584184606 ns (span 103606 ns); the models\' rules were not checked (use --models)\n'),
        'dump': (0, ''),
    },
    'jumbo-size-ffffffff': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17332/thread.17332/stream.obs: offset 123: jumbo event OU[: size 4294967295 runs past the end of the file (103494 bytes left after the size field)\n',
                  ''),
        'dump': (1, 'weft dump: warning: ovni/loom.vm/proc.17332/thread.17332/stream.obs: offset 123: stream cut: a partial event of 103510 bytes at the end of the file (jumbo event OU[: size 4294967295 runs past the end of the file (103494 bytes left after the size field)); read up to its last whole event\nweft dump: 1 stream cut short: every whole event was printed\n'),
    },
    'jumbo-size-past-eof': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17332/thread.17332/stream.obs: offset 123: jumbo event OU[: size 1048576 runs past the end of the file (103494 bytes left after the size field)\n',
                  ''),
        'dump': (1, 'weft dump: warning: ovni/loom.vm/proc.17332/thread.17332/stream.obs: offset 123: stream cut: a partial event of 103510 bytes at the end of the file (jumbo event OU[: size 1048576 runs past the end of the file (103494 bytes left after the size field)); read up to its last whole event\nweft dump: 1 stream cut short: every whole event was printed\n'),
    },
    'loom-cpus-empty': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.json: ovni.loom_cpus is present but empty\n',
                  ''),
        'dump': (0, "weft dump: warning: ovni/loom.vm/proc.17323/thread.17323/stream.json: ovni.loom_cpus is present but empty\nweft dump: warning: loom 'vm' has no CPUs: none of its streams gives ovni.loom_cpus (ovni/loom.vm/proc.17323/thread.17323/stream.json)\n"),
    },
    'loom-cpus-index-mismatch': {
        'check': (1, "weft check: loom 'vm': CPU phyid 0 has index 0 in ovni/loom.vm/proc.17369/thread.17369/stream.json but index 1 in ovni/loom.vm/proc.17372/thread.17373/stream.json\n",
                  ''),
        'dump': (0, "weft dump: warning: loom 'vm': CPU phyid 0 has index 0 in ovni/loom.vm/proc.17369/thread.17369/stream.json but index 1 in ovni/loom.vm/proc.17372/thread.17373/stream.json\n"),
    },
    'missing-stream-json': {
        'check': (1, "weft check: no streams found under 'ovni': 'loom.vm/proc.17323/thread.17323/stream.obs' has no stream.json beside it\n",
                  ''),
        'dump': (1, "weft dump: no streams found under 'ovni': 'loom.vm/proc.17323/thread.17323/stream.obs' has no stream.json beside it\n"),
    },
    'missing-stream-obs': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.obs: cannot open the binary stream: No such file or directory\n',
                  ''),
        'dump': (1, 'weft dump: ovni/loom.vm/proc.17323/thread.17323/stream.obs: cannot open the binary stream: No such file or directory\n'),
    },
    'nested-stream-dir': {
        'check': (0, '',
                  'weft check: ovni: valid: 1 stream, 1 loom, 1 process, 1 thread, 10 events, from 484561305246 to 484561307164 ns (span 1918 ns); the models\' rules were not checked (use --models)\n'),
        'dump': (0, ''),
    },
    'obs-empty': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 0: the file is empty (no stream header)\n',
                  ''),
        'dump': (1, 'weft dump: warning: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 0: stream cut: a partial stream header of 0 bytes (the file is empty (no stream header)); the stream has no events\nweft dump: 1 stream cut short: every whole event was printed\n'),
    },
    'obs-header-only': {
        'check': (0, "weft check: warning: stream 'loom.vm/proc.17323/thread.17323' has zero events\n",
                  'weft check: ovni: valid: 1 stream, 1 loom, 1 process, 1 thread, 0 events; the models\' rules were not checked (use --models)\n'),
        'dump': (0, "weft dump: warning: stream 'loom.vm/proc.17323/thread.17323' has zero events\n"),
    },
    'obs-truncated-header': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 0: truncated stream header: 5 of 8 bytes\n',
                  ''),
        'dump': (1, 'weft dump: warning: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 0: stream cut: a partial stream header of 5 bytes (truncated stream header: 5 of 8 bytes); the stream has no events\nweft dump: 1 stream cut short: every whole event was printed\n'),
    },
    'obs-truncated-mid-event': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 48: event header cut short: 5 of 12 bytes before the end of the file\n',
                  ''),
        'dump': (1, 'weft dump: warning: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 48: stream cut: a partial event of 5 bytes at the end of the file (event header cut short: 5 of 12 bytes before the end of the file); read up to its last whole event\nweft dump: 1 stream cut short: every whole event was printed\n'),
    },
    'obs-truncated-mid-payload': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 8: event OHx: payload of 16 bytes runs past the end of the file (8 bytes left)\n',
                  ''),
        'dump': (1, 'weft dump: warning: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 8: stream cut: a partial event of 20 bytes at the end of the file (event OHx: payload of 16 bytes runs past the end of the file (8 bytes left)); read up to its last whole event\nweft dump: 1 stream cut short: every whole event was printed\n'),
    },
    'part-not-thread': {
        'check': (1, "weft check: ovni/loom.vm/proc.17372/thread.17373/stream.json: ovni.part is 'cpu'; weft only knows 'thread' streams\n",
                  ''),
        'dump': (0, "weft dump: warning: ovni/loom.vm/proc.17372/thread.17373/stream.json: ovni.part is 'cpu'; weft only knows 'thread' streams\n"),
    },
    'payload-nibble-past-eof': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 132: event OHe: payload of 16 bytes runs past the end of the file (0 bytes left)\n',
                  ''),
        'dump': (1, 'weft dump: warning: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 132: stream cut: a partial event of 12 bytes at the end of the file (event OHe: payload of 16 bytes runs past the end of the file (0 bytes left)); read up to its last whole event\nweft dump: 1 stream cut short: every whole event was printed\n'),
    },
    'payload-nibble-shifted': {
        'check': (1, "weft check: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 64: event \\xc4\\x1a\\xd2 of model '\\xc4', which no stream requires in ovni.require\n",
                  ''),
        'dump': (1, "weft dump: warning: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 64: event \\xc4\\x1a\\xd2 of model '\\xc4', which no stream requires in ovni.require (not reported again for this model)\nweft dump: warning: ovni/loom.vm/proc.17323/thread.17323/stream.obs: offset 80: stream cut: a partial event of 64 bytes at the end of the file (jumbo event \\x00\\x00\\x00: size 112 runs past the end of the file (48 bytes left after the size field)); read up to its last whole event\nweft dump: 1 stream cut short: every whole event was printed\n"),
    },
    'rank-without-nranks': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.json: ovni.rank is given without ovni.nranks\n',
                  ''),
        'dump': (0, 'weft dump: warning: ovni/loom.vm/proc.17323/thread.17323/stream.json: ovni.rank is given without ovni.nranks\n'),
    },
    'require-missing': {
        'check': (1, 'weft check: ovni/loom.vm/proc.17323/thread.17323/stream.json: ovni.require is missing\n',
                  ''),
        'dump': (0, 'weft dump: warning: ovni/loom.vm/proc.17323/thread.17323/stream.json: ovni.require is missing\n'),
    },
    'reserved-flag-bits': {
        'check': (0, '',
                  'weft check: ovni: valid: 1 stream, 1 loom, 1 process, 1 thread, 10 events, from 484561305246 to 484561307164 ns (span 1918 ns); the models\' rules were not checked (use --models)\n'),
        'dump': (0, ''),
    },
    'stray-files': {
        'check': (0, "weft check: warning: ignoring 2 files that are not part of any stream: 'loom.vm/metadata.json', 'loom.vm/orphan/stream.obs'\n",
                  'weft check: ovni: valid: 1 stream, 1 loom, 1 process, 1 thread, 10 events, from 484561305246 to 484561307164 ns (span 1918 ns); the models\' rules were not checked (use --models)\n'),
        'dump': (0, "weft dump: warning: ignoring 2 files that are not part of any stream: 'loom.vm/metadata.json', 'loom.vm/orphan/stream.obs'\n"),
    },
}


def verdicts(root):
    v = {}
    for line in open(os.path.join(root, "VERDICTS.txt"), encoding="utf-8"):
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        v[f[0]] = f[1]
    return v


def main():
    root = conformance_dir()
    c = Checker()
    bad = os.path.join(root, "bad")
    v = verdicts(root)
    cases = sorted(os.listdir(bad))
    c.eq(sorted(CASES), cases, "the table covers exactly the cases under bad/")
    c.eq(sorted(v), cases, "VERDICTS.txt covers exactly the cases under bad/")
    for case in cases:
        if case not in CASES or case not in v:
            continue
        d = os.path.join(bad, case)
        rc, out, err = run(["check", "ovni"], cwd=d)
        want = CASES[case]["check"]
        if v[case] == "reject":
            c.expect(rc != 0, f"bad/{case}: check rejects it")
            c.expect("ovni/" in err or "loom." in err, f"bad/{case}: the message names a file or stream")
        elif v[case] == "accept":
            c.eq(rc, 0, f"bad/{case}: check accepts it")
        c.eq((rc, err, out.decode()), want, f"bad/{case}: check exit code, stderr, stdout")
        rc, out, err = run(["dump", "ovni"], cwd=d)
        c.eq((rc, err), CASES[case]["dump"], f"bad/{case}: dump exit code and stderr")
    c.done()


main()
