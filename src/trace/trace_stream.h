/* SPDX-License-Identifier: MIT */
/*
 * trace_stream.h - one stream, read and framed: struct weft_chunk (a piece of
 * the file in memory, framed by chunk.c), struct weft_wstream (its file, ring
 * of chunks, producer state, the merge's cursor and pending event), the
 * read-ahead thread (readahead.c), opening and stepping a stream (stream.c),
 * its chunk size (trace.c). The streams are held by struct weft_trace
 * (trace_internal.h).
 */
#ifndef WEFT_TRACE_STREAM_H
#define WEFT_TRACE_STREAM_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "obs_format.h"
#include "trace_clock.h"
#include "trace_meta.h"
#include "weft/weft.h"

struct weft_trace;
struct weft_sorter;

/*
 * A chunk: a piece of one stream file in memory, as the producer (chunk.c)
 * leaves it for the merge. It holds whole events only, except that the last
 * chunk of a file that ends inside an event holds that event's bytes too;
 * idx[] gives where each event starts. spos[] lists the positions in idx of
 * the entries the merge must decode and check itself (jumbo, reserved flag
 * bits, a model no stream requires, a clock going backwards); the last of
 * them may be flagged WEFT_IDX_TAIL: the bytes from there cannot hold a
 * whole event (the file ends first), an error when reached. An entry whose
 * clock goes backwards is flagged WEFT_IDX_UNORD when it lies inside an
 * unordered region of its stream (see in_region() in chunk.c). Every other
 * entry is a normal event whose model some stream requires and whose clock
 * is not below the previous event's.
 */
#define WEFT_IDX_UNORD 0x80000000u
/* WEFT_BACKWARDS_WARN: backwards clocks warned one by one, the rest counted. */
#define WEFT_BACKWARDS_WARN_MAX 10
#define WEFT_IDX_TAIL 0x40000000u
#define WEFT_IDX_OFF 0x3fffffffu

/* Largest normal chunk; a jumbo event larger than that gets a chunk of its
 * own size (checked against the bytes the file has). */
#define WEFT_CHUNK_MAX (128u << 10)

struct weft_chunk {
	uint8_t *mem;      /* the allocation: buf is mem + (file_off % 64) */
	const uint8_t *buf;/* buf[0] is the byte at file_off */
	size_t cap;        /* bytes mem holds after its 64-byte lead */
	uint64_t file_off;
	size_t len;        /* bytes at buf */
	uint32_t *idx;
	size_t nidx, idxcap;
	/* the positions in idx of the entries to check, ascending: the merge
	 * runs plain events up to the next one without testing each entry */
	uint32_t *spos;
	size_t nspos, spcap;
	int final;         /* no chunk follows (end of file, tail, error) */
	char err[512];     /* a read error met here (reported after the events) */
	uint64_t nmoved;   /* sorting on read: events this chunk has in another place */
	int ready;         /* 1: filled, the merge's; 0: free, the producer's */
};

struct weft_wstream {
	struct weft_stream pub;
	char *relpath;
	char *obs_path;
	char *json_path;  /* stream.json, or the v1 metadata.json */
	json_t *json;     /* the parsed document (a reference) */
	struct weft_meta meta;
	struct weft_meta *v1meta; /* v1: shared per process (not owned) */
	int64_t clkoff;
	size_t index;     /* in t->streams */

	int fd;           /* -1 between fills when fd_lean */
	int fd_lean;      /* more streams than file descriptors to spare: the
	                   * file is opened for each fill and closed after */
	uint64_t dev, ino;/* the file opened at weft_open (checked at reopens) */
	uint64_t fsize;
	size_t chunk_cap; /* normal chunk size */

	/* The ring of chunks: the merge takes them in order from ring[ah], the
	 * producer fills them in order from ring[ph]. */
	struct weft_chunk *ring;
	unsigned nring;
	unsigned ah, ph;
	int have_chunk;   /* ring[ah] is the merge's current chunk */

	/* producer state (the read-ahead thread's, or the caller's thread
	 * without one) */
	struct {
		uint64_t off;   /* file offset of the next event to frame */
		int64_t last;   /* clock of the last event framed (INT64_MIN
		                 * before the first: a lower bound, see last_clock) */
		/* Backwards clocks (set before the first fill): 0, the framing
		 * stops at the first one (it is an error); 1, it goes on and
		 * flags those inside an unordered region (OU[ ... OU]) with
		 * WEFT_IDX_UNORD. To tell, the region state is known at reg_off
		 * (an event boundary): reg_in says whether the events from there
		 * on are inside a region, up to the next OU[ or OU]. Kept lazily:
		 * only a backwards clock moves it on. */
		int unord;
		int reg_in;
		uint64_t reg_off;
		int done;       /* the final chunk was produced (under the
		                 * read-ahead mutex) */
		int filling;    /* read-ahead: a thread is filling ring[ph]
		                 * (under its mutex) */
	} prod;

	/* the merge's cursor in ring[ah] */
	const uint8_t *base; /* the chunk's buf */
	const uint32_t *idx;
	size_t ci, cn;       /* next index entry, number of entries */
	const uint32_t *spos;
	size_t si, nspos;    /* next listed position, number of them */
	size_t stop;         /* spos[si], or cn after the last */
	uint64_t cbase;      /* chunk file_off - (uintptr_t) base: offset = cbase + (uintptr_t) p */
	int64_t last_clock;  /* the last event's clock; before the first event
	                      * INT64_MIN, a lower bound for the backwards
	                      * check (no clock is below it), not a sentinel:
	                      * has_first tells whether there was an event */

	/* the pending event (decoded, not yet yielded) */
	const uint8_t *evp;
	uint64_t evsize;
	int64_t key;    /* the ordering clock of the pending event */
	int64_t keyoff; /* key = rclock + keyoff (0 or clkoff) */
	/* A clock drift (clkoff.c): when drift_ppb != 0, sclock =
	 * weft_clk_drift(rclock, clkoff, drift_t0, drift_ppb), and the key too
	 * unless keydrift is 0 (raw order). */
	int64_t drift_ppb, drift_t0;
	int keydrift;
	int64_t first_clock; /* rclock of the first event (when has_first) */
	/* The rclocks that stay an int64 once the clock offset is added
	 * (clk_lo <= rclock <= clk_hi; the whole range when clkoff is 0):
	 * the framing refuses the first event outside them (chunk.c). */
	int64_t clk_lo, clk_hi;
	int has_peek;        /* the file holds a first event header */
	int64_t peek_clock;  /* its rclock (read at open) */
	/* WEFT_SORT_REGIONS: the producer takes the stream's bytes from its
	 * sorter (sort.c) instead of the file: the sorted stream, whose size
	 * is the file's. NULL otherwise. */
	struct weft_sorter *sorter;

	/* ---- sub-trace paths (discover.c, meta_load.c, system.c) ----
	 * meta_only: a stream of the whole trace outside the opened path
	 * (t->mstreams): its metadata gives the looms their CPUs and the
	 * processes their app_id and rank; it is never opened nor merged and
	 * has no thread; its relpath is relative to t->root. meta_bad:
	 * lenient, its metadata could not be used (left out). */
	int meta_only;
	int meta_bad;
	/* ---- streams cut short (a killed run); no clock as a sentinel ---- */
	int has_first;        /* first_clock is set (the stream yielded an event) */
	int cut;              /* the file ends inside an event or the header */
	int cut_header;       /* ... inside the stream header */
	uint64_t cut_off;     /* where the partial event (header) starts */
	char cut_why[256];    /* what runs past the end (without the file name) */
	int unfinished;       /* no ovni.finished, accepted (accept_unfinished) */
	int ended;            /* the merge reached its end (after its last
	                       * event, or its cut): weft_stream_ended() */
	/* ---- seeking by the stream index ---- */
	int64_t mtime_sec, mtime_nsec; /* of the stream file at open (a stale index) */
};

/* The synchronized clock of rclock c of s (c within [clk_lo, clk_hi]). */
static inline int64_t weft_sclock_of(const struct weft_wstream *s, int64_t c)
{
	int64_t v = (int64_t) ((uint64_t) c + (uint64_t) s->clkoff);
	if (__builtin_expect(s->drift_ppb != 0, 0))
		(void) weft_clk_drift(c, s->clkoff, s->drift_t0, s->drift_ppb, &v);
	return v;
}

/* The merge key of rclock c of s. */
static inline int64_t weft_key_of(const struct weft_wstream *s, int64_t c)
{
	if (__builtin_expect(s->keydrift, 0))
		return weft_sclock_of(s, c);
	return (int64_t) ((uint64_t) c + (uint64_t) s->keyoff);
}

/* stream.c */
/* A cut stream (the file ends inside the event, or header, at pos; why:
 * what runs past the end): records it; an error with WEFT_CUT_ERROR (-1),
 * else 0 after the warning (WEFT_CUT_WARN). stream.c. */
int weft_stream_cut_at(struct weft_trace *t, struct weft_wstream *s, uint64_t pos,
		int header, const char *why);

int weft_stream_open(struct weft_trace *t, struct weft_wstream *s);
void weft_stream_close(struct weft_wstream *s);
/* Allocates the ring of nring chunks of chunk_cap bytes. */
int weft_stream_alloc_ring(struct weft_trace *t, struct weft_wstream *s, unsigned nring);
/* Moves the merge's cursor of s to its next chunk (releasing the current
 * one, whose events must not be referenced any more): 1, 0 at the end of
 * the stream, -1 error. */
int weft_stream_next_chunk(struct weft_trace *t, struct weft_wstream *s);
/* Decodes the special event (or tail) at index entry x: 1 with the pending
 * event set, -1 error. */
int weft_stream_special(struct weft_trace *t, struct weft_wstream *s, uint32_t x);

/* chunk.c: fills chunk c with the next bytes of s and frames them (the
 * producer's side; allowed: the model bytes some stream requires). */
void weft_chunk_fill(struct weft_wstream *s, struct weft_chunk *c, const uint8_t *allowed);

/* trace.c: the normal chunk size of s with nring chunks per stream. */
size_t weft_chunk_size(const struct weft_trace *t, const struct weft_wstream *s, unsigned nring);

/* readahead.c */
/* CPUs this process may run on. */
long weft_online_cpus(void);
int weft_readahead_start(struct weft_trace *t);
void weft_readahead_stop(struct weft_trace *t);
/* The merge is done with ring[ah] of s: gives it back to the producer. */
void weft_readahead_release(struct weft_trace *t, struct weft_wstream *s, struct weft_chunk *c);
/* Waits until chunk c of s is filled. */
void weft_readahead_wait(struct weft_trace *t, struct weft_wstream *s, struct weft_chunk *c);

/* Decodes the next event of s into its pending event (s->evp, s->evsize,
 * s->key): 1, 0 at its end, -1 error. With may_switch == 0, returns 2
 * instead of moving to the stream's next chunk (which releases the current
 * one: only allowed before the first event of a call is yielded). */
static inline int weft_stream_step(struct weft_trace *t, struct weft_wstream *s, int may_switch)
{
	for (;;) {
		if (__builtin_expect(s->ci < s->cn, 1)) {
			uint32_t x = s->idx[s->ci];
			if (__builtin_expect(s->ci == s->stop, 0))
				return weft_stream_special(t, s, x);
			const uint8_t *p = s->base + x;
			int64_t clock = (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK);
			s->evp = p;
			s->evsize = WEFT_EV_HEADER_SIZE + weft_ev_payload_size(p[WEFT_EV_OFF_FLAGS]);
			s->last_clock = clock;
			s->key = weft_key_of(s, clock);
			s->ci++;
			return 1;
		}
		if (!may_switch && s->have_chunk)
			return 2;
		int r = weft_stream_next_chunk(t, s);
		if (r <= 0)
			return r;
	}
}

#endif
