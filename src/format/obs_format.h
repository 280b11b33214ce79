/* SPDX-License-Identifier: MIT */
/*
 * obs_format.h - the one definition of the ovni on-disk layout.
 *
 * The writer (src/rt, libovni) and the reader (src/trace, libweft) both
 * include this file; nothing else in weft knows a byte offset of the format.
 * Source: trace specification v3 (binary stream version 1) and v1.
 *
 * Binary stream (stream.obs, or thread.TID[.obs] in v1):
 *   header: 4-byte magic "ovni", u32 version 1 (host endian)        8 bytes
 *   events, back to back:
 *     byte 0    flags: low nibble = payload size code (0 = none,
 *               n = n+1 bytes, so 1-byte payloads cannot exist),
 *               bit 0x10 = jumbo, other high bits reserved (ignored)
 *     byte 1..3 model, category, value (the MCV, ASCII)
 *     byte 4..11 u64 clock in ns (host endian)
 *     then the payload: normal = 0, 2..16 bytes;
 *                       jumbo  = u32 size, then size bytes of data
 *                       (the size nibble of a jumbo is ignored on read;
 *                        libovni writes 0x13).
 */
#ifndef WEFT_FORMAT_OBS_FORMAT_H
#define WEFT_FORMAT_OBS_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- stream header ---- */
#define WEFT_OBS_MAGIC "ovni"
#define WEFT_OBS_MAGIC_LEN 4u
#define WEFT_OBS_VERSION 1u
#define WEFT_OBS_HEADER_SIZE 8u

/* ---- event header ---- */
#define WEFT_EV_HEADER_SIZE 12u
#define WEFT_EV_OFF_FLAGS 0u
#define WEFT_EV_OFF_MODEL 1u
#define WEFT_EV_OFF_CATEGORY 2u
#define WEFT_EV_OFF_VALUE 3u
#define WEFT_EV_OFF_CLOCK 4u
#define WEFT_EV_OFF_PAYLOAD 12u

#define WEFT_EV_FLAG_JUMBO 0x10u
#define WEFT_EV_SIZE_MASK 0x0fu
#define WEFT_EV_MAX_PAYLOAD 16u
/* A jumbo's payload: u32 size, then the data. libovni writes this nibble. */
#define WEFT_EV_JUMBO_SIZE_FIELD 4u
#define WEFT_EV_JUMBO_NIBBLE 0x03u
/* Largest normal event: header + 16 payload bytes. */
#define WEFT_EV_MAX_NORMAL_SIZE (WEFT_EV_HEADER_SIZE + WEFT_EV_MAX_PAYLOAD)

/* Payload bytes encoded by the size nibble of a normal event (0 or 2..16). */
static inline unsigned weft_ev_payload_size(uint8_t flags)
{
	unsigned code = flags & WEFT_EV_SIZE_MASK;
	return code == 0 ? 0u : code + 1u;
}

/* Size nibble for a normal payload of n bytes (n = 0 or 2..16). */
static inline uint8_t weft_ev_size_code(unsigned n)
{
	return (uint8_t) (n == 0 ? 0u : (n - 1u) & WEFT_EV_SIZE_MASK);
}

static inline int weft_ev_is_jumbo(uint8_t flags)
{
	return (flags & WEFT_EV_FLAG_JUMBO) != 0;
}

/* Unaligned host-endian loads and stores, as the format is host endian. */
static inline uint64_t weft_load_u64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline uint32_t weft_load_u32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline void weft_store_u64(void *p, uint64_t v)
{
	memcpy(p, &v, sizeof v);
}

static inline void weft_store_u32(void *p, uint32_t v)
{
	memcpy(p, &v, sizeof v);
}

/* ---- trace directory layout ---- */
#define WEFT_TRACEDIR_DEFAULT "ovni"
#define WEFT_LOOM_PREFIX "loom."
#define WEFT_PROC_PREFIX "proc."
#define WEFT_THREAD_PREFIX "thread."
#define WEFT_STREAM_JSON "stream.json"
#define WEFT_STREAM_OBS "stream.obs"
#define WEFT_V1_METADATA "metadata.json"
#define WEFT_V1_STREAM_EXT ".obs" /* thread.TID.obs, releases 1.1 to 1.4 */
#define WEFT_CLOCK_OFFSETS "clock-offsets.txt"
/* Files an emulator writes at the top of the trace directory by default
 * (weft emu, the database weft sql keeps there, weft view --serve's cache,
 * and the reference's ovniemu for the Paraver ones): a reader passes over
 * them without a warning. NULL-terminated. */
#define WEFT_EMU_OUTPUT_NAMES                                                  \
	{ "thread.prv", "thread.pcf", "thread.row", "cpu.prv", "cpu.pcf",      \
	  "cpu.row", "perfetto.pftrace", "weft-sql.db", WEFT_VIEW_CACHE, NULL }
/* weft view --serve's cache while it is written: the named temporary file
 * made where the file system has no O_TMPFILE (WEFT_VIEW_CACHE_TMP and six
 * characters), and the name the finished file is linked under before its
 * rename over WEFT_VIEW_CACHE (WEFT_VIEW_CACHE "." and a suffix); a reader
 * passes over both, as over the cache. NULL-terminated. */
#define WEFT_VIEW_CACHE "weft-view.cache"
#define WEFT_VIEW_CACHE_TMP ".weft-view-cache-"
#define WEFT_EMU_OUTPUT_PREFIXES { WEFT_VIEW_CACHE_TMP, WEFT_VIEW_CACHE ".", NULL }

/* ---- metadata (stream.json, v3) ---- */
#define WEFT_META_VERSION 3
#define WEFT_META_V1_VERSION 1
#define WEFT_KEY_VERSION "version"
/* Keys below live inside the "ovni" object; dotted form in comments. */
#define WEFT_KEY_OVNI "ovni"
#define WEFT_KEY_LIB "lib"             /* ovni.lib (object) */
#define WEFT_KEY_LIB_VERSION "version" /* ovni.lib.version */
#define WEFT_KEY_LIB_COMMIT "commit"   /* ovni.lib.commit */
#define WEFT_KEY_PART "part"           /* ovni.part */
#define WEFT_PART_THREAD "thread"
#define WEFT_KEY_TID "tid"             /* ovni.tid */
#define WEFT_KEY_PID "pid"             /* ovni.pid */
#define WEFT_KEY_LOOM "loom"           /* ovni.loom */
#define WEFT_KEY_APP_ID "app_id"       /* ovni.app_id */
#define WEFT_KEY_RANK "rank"           /* ovni.rank */
#define WEFT_KEY_NRANKS "nranks"       /* ovni.nranks */
#define WEFT_KEY_REQUIRE "require"     /* ovni.require (object) */
#define WEFT_KEY_LOOM_CPUS "loom_cpus" /* ovni.loom_cpus (array) */
#define WEFT_KEY_CPU_INDEX "index"
#define WEFT_KEY_CPU_PHYID "phyid"
#define WEFT_KEY_FINISHED "finished" /* ovni.finished = 1 */
#define WEFT_KEY_MARK "mark"         /* ovni.mark.<type>.{title,chan_type,labels.<value>} */
#define WEFT_KEY_MARK_TITLE "title"
#define WEFT_KEY_MARK_CHAN_TYPE "chan_type"
#define WEFT_MARK_CHAN_SINGLE "single"
#define WEFT_MARK_CHAN_STACK "stack"
#define WEFT_KEY_MARK_LABELS "labels"
/* weft's own keys, beside ovni's */
#define WEFT_KEY_WEFT "weft"
#define WEFT_KEY_WEFT_VERSION "version" /* weft.version */
/*
 * Loss and cuts (weft.*; the reference's tools ignore the weft object).
 * Clocks here are raw clocks of the stream's thread, as in its event
 * headers (a reader adds the loom's clock offset).
 *
 * weft.lost_events: N, the events that signal handlers emitted and that
 *   could not be stored (no clock range is known for them).
 *
 * weft.cut: {"by": "signal", "signal": N, "clock": C} or
 *           {"by": "exit", "clock": C}
 *   written by WEFT_CRASH=flush when the process died by signal N, or
 *   exited without ovni_proc_fini; C is the clock at that moment. Every
 *   event emitted before C is in the stream; ovni.finished is absent.
 *
 * weft.ring: {"size": S, "lost_events": N, "lost_bytes": B,
 *             "lost": [[C0, C1, n, b, off], ...]}
 *   written in flight-recorder mode (WEFT_RING=S, bytes per thread). N
 *   and B: every event overwritten before it was written (events and
 *   bytes, headers included). "lost": one entry per run of consecutive
 *   overwritten events (a run ends where the ring was written out), in
 *   stream order: the smallest and the largest clock of the run's events
 *   (C0 <= C1), its events and bytes, and off: the byte offset in
 *   stream.obs of the first event written after the run (the run lies
 *   there; the file's size if nothing followed). A reader also accepts an
 *   entry without off (the run then precedes the first event after it
 *   with a clock >= C1). At most WEFT_RING_MAX_RUNS entries: later runs
 *   are merged into the last (its off the latest).
 *   The sums of n and b over the entries are N and B.
 *
 * weft.filter: {"rules": R, "callback": B} and weft.filtered: N
 *   written when a filter at the source was set (WEFT_FILTER=R, "" when
 *   unset; B true when the program set a callback, weft_rt_filter_set):
 *   N events of the thread were dropped by it (0 included), on purpose.
 *
 * weft.clock: "tsc"
 *   written by WEFT_CLOCK=tsc: the clocks were read from the time stamp
 *   counter and converted to CLOCK_MONOTONIC nanoseconds (the events are
 *   as with the default clock; absent: CLOCK_MONOTONIC itself).
 *
 * weft.sample: {"period_ms": P, "hardware": H, "counters": [{"name": N, "unit": U}...]}
 *   written once the thread records samples (WEFT_SAMPLE_MS=P, 0 when only
 *   weft_rt_sample_now; H: cycles and instructions were counted): the
 *   events of the "sample" model (model byte W) hold them; counters lists
 *   the program's registered counters, WR0 first (docs/runtime.md).
 *
 * weft.output: "off" and weft.unwritten_bytes: B
 *   written by WEFT_OUTPUT=off (the perturbation mode): the events were
 *   recorded into the buffers as usual but never written, B bytes of them
 *   (headers included); stream.obs holds its header only.
 *
 * weft.index_after: B
 *   written by libovni at every stage: no write to stream.obs holds more
 *   than B bytes, and the stream index (stream.idx, idx_format.h) is
 *   created at the stream's second write. A stream whose events take more
 *   than B bytes (after the stream header) has its index, and a reader
 *   reports it missing; one with at most B bytes (one buffer's worth, read
 *   from its start at no great cost) may have none, and its absence is
 *   not reported. Absent (the reference's libovni, weft's before it):
 *   every missing index is reported.
 */
#define WEFT_KEY_LOST_EVENTS "lost_events" /* weft.lost_events */
#define WEFT_KEY_FILTER "filter"           /* weft.filter (object) */
#define WEFT_KEY_FILTER_RULES "rules"      /* weft.filter.rules (string) */
#define WEFT_KEY_FILTER_CALLBACK "callback" /* weft.filter.callback (boolean) */
#define WEFT_KEY_FILTERED "filtered"       /* weft.filtered */
#define WEFT_KEY_CLOCK "clock"             /* weft.clock */
#define WEFT_CLOCK_TSC "tsc"
#define WEFT_KEY_OUTPUT "output"           /* weft.output */
#define WEFT_OUTPUT_OFF "off"
#define WEFT_KEY_UNWRITTEN_BYTES "unwritten_bytes" /* weft.unwritten_bytes */
#define WEFT_KEY_SAMPLE "sample"           /* weft.sample (object) */
#define WEFT_KEY_INDEX_AFTER "index_after" /* weft.index_after */
#define WEFT_KEY_CUT "cut"                 /* weft.cut (object) */
#define WEFT_KEY_CUT_BY "by"               /* weft.cut.by */
#define WEFT_CUT_BY_SIGNAL "signal"
#define WEFT_CUT_BY_EXIT "exit"
#define WEFT_KEY_CUT_SIGNAL "signal"  /* weft.cut.signal */
#define WEFT_KEY_CUT_CLOCK "clock"    /* weft.cut.clock */
#define WEFT_KEY_RING "ring"          /* weft.ring (object) */
#define WEFT_KEY_RING_SIZE "size"     /* weft.ring.size */
#define WEFT_KEY_RING_LOST_EVENTS "lost_events"
#define WEFT_KEY_RING_LOST_BYTES "lost_bytes"
#define WEFT_KEY_RING_LOST "lost"     /* weft.ring.lost (array of [C0, C1, n, b]) */
#define WEFT_RING_MAX_RUNS 1024
/* v1 metadata.json keys (top level) */
#define WEFT_V1_KEY_APP_ID "app_id"
#define WEFT_V1_KEY_RANK "rank"
#define WEFT_V1_KEY_NRANKS "nranks"
#define WEFT_V1_KEY_CPUS "cpus"

#endif /* WEFT_FORMAT_OBS_FORMAT_H */
