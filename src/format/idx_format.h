/* SPDX-License-Identifier: MIT */
/*
 * idx_format.h - the one definition of the stream index (stream.idx).
 *
 * Written by libovni (src/rt) beside each stream.obs and by `weft index`
 * for traces written without one; read by libweft (src/trace) to seek.
 * The index is a hint: the reader checks what it uses against the stream.
 *
 * File (host endian, like stream.obs):
 *   header, 16 bytes:
 *     4-byte magic "ovix"
 *     u32 version 1
 *     u32 entry size (16)
 *     u32 reserved (0)
 *   entries, 16 bytes each, ascending offsets:
 *     u64 byte offset in stream.obs of an event
 *     u64 that event's clock (as in its header)
 *
 * Which events (weft_idx_marks_buffer): one entry per flushed buffer.
 * Entry 0 is the first event of the stream (offset 8), the start of its
 * first buffer. Every later buffer holds the OF[ (flush begins) event of the
 * flush that emptied the buffer before it, near its start (after at most the
 * event that did not fit, and what signal handlers left pending): its entry
 * is that OF[ event. So the entries are the first event and every OF[ event
 * of the stream, in file order, and their clocks, taken by libovni at each
 * flush, never go backwards (beyond entry 0), inside unordered regions too.
 * `weft index` finds them by reading the stream; libovni records them as it
 * writes each buffer, without reading anything back but the buffer's first
 * event headers.
 */
#ifndef WEFT_FORMAT_IDX_FORMAT_H
#define WEFT_FORMAT_IDX_FORMAT_H

#include <stdint.h>

#include "obs_format.h"

#define WEFT_STREAM_IDX "stream.idx"       /* beside stream.obs */
#define WEFT_V1_IDX_EXT ".idx"             /* v1: thread.TID.idx beside thread.TID[.obs] */
#define WEFT_IDX_MAGIC "ovix"
#define WEFT_IDX_MAGIC_LEN 4u
#define WEFT_IDX_VERSION 1u
#define WEFT_IDX_HEADER_SIZE 16u
#define WEFT_IDX_ENTRY_SIZE 16u
#define WEFT_IDX_OFF_VERSION 4u
#define WEFT_IDX_OFF_ENTRY_SIZE 8u
#define WEFT_IDX_OFF_RESERVED 12u
/* in an entry */
#define WEFT_IDX_ENT_OFF_OFFSET 0u
#define WEFT_IDX_ENT_OFF_CLOCK 8u
/* libovni looks for the OF[ of a buffer among its first events only. */
#define WEFT_IDX_SCAN_EVENTS 4096u

/* The 16-byte header. */
static inline void weft_idx_header(uint8_t h[WEFT_IDX_HEADER_SIZE])
{
	memcpy(h, WEFT_IDX_MAGIC, WEFT_IDX_MAGIC_LEN);
	weft_store_u32(h + WEFT_IDX_OFF_VERSION, WEFT_IDX_VERSION);
	weft_store_u32(h + WEFT_IDX_OFF_ENTRY_SIZE, WEFT_IDX_ENTRY_SIZE);
	weft_store_u32(h + WEFT_IDX_OFF_RESERVED, 0);
}

static inline void weft_idx_entry(uint8_t e[WEFT_IDX_ENTRY_SIZE], uint64_t offset,
		uint64_t clock)
{
	weft_store_u64(e + WEFT_IDX_ENT_OFF_OFFSET, offset);
	weft_store_u64(e + WEFT_IDX_ENT_OFF_CLOCK, clock);
}

/* Whether the event header at p is an OF[ (the mark an index entry of a
 * buffer after the first points at). */
static inline int weft_idx_is_flush_begin(const uint8_t *p)
{
	return p[WEFT_EV_OFF_MODEL] == 'O' && p[WEFT_EV_OFF_CATEGORY] == 'F'
		&& p[WEFT_EV_OFF_VALUE] == '[';
}

/*
 * The merge index (merge.idx at the top of the trace, beside the loom.*
 * directories), written by `weft index` after a full read of the trace:
 * checkpoints of the global merge, so that a seek resumes the merge exactly
 * as a full read has it (the order of events with equal clocks in several
 * streams is the heap's, which depends on everything merged before). Like
 * the stream index, a hint: the reader checks it against the streams.
 *
 * File (host endian):
 *   header, 16 bytes: 4-byte magic "ovmx", u32 version 2, u32 nstreams,
 *     u32 nsections
 *   nstreams stream records, in the merge's order (relative paths sorted):
 *     u64 the size of its stream file when indexed, u32 L, u32 0, then the
 *     stream directory relative to the trace (L bytes), zero-padded to a
 *     multiple of 8
 *   nsections sections, one per event order: u32 orders (bit 0: raw
 *     clocks, bit 1: clocks plus the looms' offsets; one section with both
 *     when no loom has an offset, else two: raw, then offsets), u32 0,
 *     u64 nentries, then nentries checkpoints of
 *     WEFT_MIDX_ENTRY_SIZE(nstreams) bytes, with nondecreasing keys:
 *       i64 key: the largest ordering clock of the events yielded before
 *         it (so every event before it is before a seek clock above it,
 *         clocks gone back in unordered regions included)
 *       u32 cur: the stream that yielded it
 *       u32 nheap: the heap slots in use (at most nstreams - 1)
 *       u64 the offset of cur's next event (its file size if none)
 *       nstreams slots of 32 bytes, every stream in one: u32 stream, u32 0,
 *       u64 offset, i64 pending key, i64 top (the largest key the stream
 *       yielded before the checkpoint, INT64_MIN if none):
 *         slots 0..nheap-1: the heap's, in order, each at its pending event
 *           (offset and key);
 *         slot nheap: cur, at the offset of its next event, with that
 *           event's key (0 when no whole event header is there);
 *         the others: the streams read to their end (offset: the file
 *           size, key 0), in stream order.
 *     So key is the largest top of its slots, and a reader checks it.
 * The file ends with the last section. Version 1 (24-byte slots, the heap's
 * only) is refused: `weft index` writes version 2.
 * No checkpoint before a clock: the merge is replayed from the start.
 */
#define WEFT_MIDX_NAME "merge.idx"
#define WEFT_MIDX_MAGIC "ovmx"
#define WEFT_MIDX_VERSION 2u
#define WEFT_MIDX_HEADER_SIZE 16u
#define WEFT_MIDX_STREAM_HEAD 16u  /* size, L, 0 */
#define WEFT_MIDX_SECTION_HEAD 16u /* orders, 0, nentries */
#define WEFT_MIDX_ORDER_RAW 1u
#define WEFT_MIDX_ORDER_OFFSET 2u
#define WEFT_MIDX_SLOT_SIZE 32u
#define WEFT_MIDX_ENTRY_HEAD 24u /* key, cur, nheap, next */
#define WEFT_MIDX_ENTRY_SIZE(ns) (WEFT_MIDX_ENTRY_HEAD + WEFT_MIDX_SLOT_SIZE * (uint64_t) (ns))
/* A checkpoint every this many bytes of merged events at least (and at
 * least 1024 entry sizes apart, so the file stays ~0.1% of the trace). */
#define WEFT_MIDX_SPACING (1u << 20)

#endif /* WEFT_FORMAT_IDX_FORMAT_H */
