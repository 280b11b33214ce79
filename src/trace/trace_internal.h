/* SPDX-License-Identifier: MIT */
/*
 * trace_internal.h - libweft's internal structures, shared by its files:
 *   diag.c      errors and warnings (strict vs lenient)
 *   discover.c  finding the streams (v3 stream.json, v1 metadata.json)
 *   subtrace.c  the trace around a path inside it
 *   meta_load.c stream.json / metadata.json into struct weft_meta
 *   system.c    merging metadata into looms, processes, threads, CPUs, marks
 *   clkoff.c    clock-offsets.txt
 *   chunk.c     reads and frames the next chunk of a stream file (the producer)
 *   readahead.c the read-ahead thread: who fills which chunk, and when
 *   stream.c    a stream on the merge's side: open, its cursor over the chunks,
 *               the checks of listed events; the in-memory decoder
 *   merge.c     the min-heap that orders the events of all streams
 *   sort.c      sorting unordered regions (OU[ ... OU]) as ovnisort does:
 *               on read (the chunks of a stream come from its sorter) and
 *               into a new file (sort_stream.c: weft_sort_stream, weft sort);
 *               sort_in.c its input, sort_internal.h what they share
 *   index.c     the stream index (stream.idx): seeking with it, weft index
 *   trace.c     the public API: open, inspect, close
 *   next.c      the iteration: weft_next, weft_next_batch, weft_next_refs
 *
 * The declarations are in headers by concern, which this one includes:
 *   trace_diag.h   struct weft_diag, errors and warnings
 *   trace_util.h   allocation helpers
 *   trace_meta.h   struct weft_meta: the metadata of one stream
 *   trace_clock.h  clock offsets
 *   trace_decode.h decoding the binary stream
 *   trace_stream.h struct weft_chunk, struct weft_wstream: reading and framing
 *   trace_sort.h   sorting on read
 *   trace_system.h looms, processes, CPUs; discovery, sub-traces
 *   trace_midx.h   the merge index
 * This one keeps struct weft_trace, the merge, the stream index.
 */
#ifndef WEFT_TRACE_INTERNAL_H
#define WEFT_TRACE_INTERNAL_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "trace_clock.h"
#include "trace_decode.h"
#include "trace_diag.h"
#include "trace_meta.h"
#include "trace_midx.h"
#include "trace_sort.h"
#include "trace_stream.h"
#include "trace_system.h"
#include "trace_util.h"
#include "weft/weft.h"

/* ---- the trace ---- */

struct weft_sorter;

struct weft_ra;

struct weft_trace {
	struct weft_diag diag;
	char errbuf[WEFT_ERR_MAX];
	char *path;
	int raw_order;
	int drifted;      /* a stream has a clock drift (clkoff.c) */
	int no_fast; /* tests: always go through the heap */
	int follow_links; /* weft_open_opts.follow_links (discover.c) */

	size_t nstreams;
	struct weft_wstream **streams;

	size_t nlooms;
	struct weft_iloom **looms;
	size_t nmarks;
	struct weft_mark_type *marks;
	struct weft_meta **v1metas;
	size_t nv1metas;

	uint8_t allowed[256];  /* model bytes some stream requires */
	enum weft_readahead ra_mode;
	struct weft_ra *ra; /* the read-ahead thread, NULL without */
	uint8_t warned[256];   /* lenient: warned once about this model byte */
	enum weft_backwards backwards; /* what a clock going backwards is */
	uint64_t nback_in;     /* backwards clocks inside unordered regions (accepted) */
	uint64_t nback_out;    /* outside them, let through with a warning */
	int ended;             /* the iteration reached its end */
	struct {               /* sorting on read (trace_sort.h) */
		enum weft_sort mode;
		size_t look_back; /* its look-back per stream (set at weft_open) */
		int auto_lb;      /* no limit asked: each stream's from its scan */
		size_t budget;    /* the sorters' memory together, bytes */
		int planned;      /* the sorters made (sort_plan.c) */
		int plan_rc;      /* and what that returned (a failure is final) */
		uint64_t nsorted; /* events moved, over the chunks the merge took */
	} sort;

	/* merge */
	int started;
	int failed;
	/* The heap, as two arrays (a slot's key beside the others', no pointer
	 * chase; 8-byte moves, which store-to-load forwarding always serves):
	 * hkey[i] is the key of stream hs[i]. 2n + 2 slots, INT64_MAX / NULL
	 * sentinels past nheap (see merge.c). */
	int64_t *hkey;
	struct weft_wstream **hs;
	size_t nheap;
	struct weft_wstream *cur;
	int fast_known;
	int fast_ok;
	uint64_t nevents;

	/* ---- sub-trace paths (discover.c, meta_load.c, system.c, clkoff.c) ----
	 * root: the trace directory, the one that holds the loom.* directories:
	 * path itself, or, when path is a loom, process or thread directory (or
	 * deeper), the ancestor that holds the loom.* directory path is in.
	 * clock-offsets.txt is read there. subrel: path relative to root (NULL
	 * when path is the root). mstreams: the streams of that trace outside
	 * path, metadata only (see meta_only). The system takes the metadata of
	 * both kinds in the order of their dirs relative to root. root, subrel
	 * and mstreams are freed by weft_free_system. */
	char *root;
	char *subrel;
	int inside; /* path is inside a trace, not its top (kept after root is freed) */
	size_t nmstreams;
	struct weft_wstream **mstreams;
	/* ---- streams cut short (a killed run) ---- */
	enum weft_cut cut;     /* what a cut is */
	size_t ncut;           /* streams found cut */
	/* ---- seeking by the stream index ---- */
	int seek;              /* weft_seek() or weft_open_opts.seek */
	int64_t seek_clock;    /* in the ordering clock */
	uint64_t nindexed;     /* streams positioned by their index */
};

/* merge.c */
void weft_heap_push(struct weft_trace *t, struct weft_wstream *s);
struct weft_wstream *weft_heap_pop(struct weft_trace *t);
/* weft_heap_push(t, s) then weft_heap_pop(t), in one go. */
struct weft_wstream *weft_heap_pushpop(struct weft_trace *t, struct weft_wstream *s);
int weft_heap_fast_ok(struct weft_trace *t);

/* trace.c: for tests and fuzzers, the chunk size of every stream opened
 * from now on (>= WEFT_EV_MAX_NORMAL_SIZE, at most WEFT_CHUNK_MAX; 0: the
 * normal size). */
extern size_t weft_chunk_override;

/* trace.c: for tests, disables the fast path (every event goes through the heap). */
void weft_trace_set_no_fast(struct weft_trace *t, int no_fast);

/* index.c: the index file of a stream file (malloc'ed; NULL: out of memory). */
char *weft_index_path(const char *obs_path);
/* Where reading s must start for its events whose key (rclock + s->keyoff)
 * is T or later, by its index: 1 with *off set; 0 with *off at the first
 * event (no usable index: warned, except for a stream without events); -1
 * out of memory (the error set). */
/* pread/write of all n bytes, going on after EINTR: 0, or -1 (errno set;
 * a short file is -1 with errno unchanged). index.c. */
int weft_pread_full(int fd, void *buf, size_t n, uint64_t off);
int weft_write_all(int fd, const void *buf, size_t n);
int weft_index_seek(struct weft_trace *t, struct weft_wstream *s, int64_t T, uint64_t *off);

#endif
