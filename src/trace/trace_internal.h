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
 */
#ifndef WEFT_TRACE_INTERNAL_H
#define WEFT_TRACE_INTERNAL_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "obs_format.h"
#include "weft/weft.h"

#define WEFT_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* ---- diagnostics ---- */

struct weft_diag {
	enum weft_mode mode;
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	char *err;     /* where an error goes */
	size_t errlen;
	int failed;
	int oom;       /* the error is out of memory (weft_oom) */
};

/* An error in any mode: writes the message, returns -1. */
int weft_fail(struct weft_diag *d, const char *fmt, ...) WEFT_PRINTF(2, 3);
/* A warning in any mode: returns 0. */
int weft_warnf(struct weft_diag *d, const char *fmt, ...) WEFT_PRINTF(2, 3);
/* A metadata rule: an error (-1) when strict, a warning (0) when lenient. */
int weft_breach(struct weft_diag *d, const char *fmt, ...) WEFT_PRINTF(2, 3);
/* weft_fail() with "out of memory while <what>". */
int weft_oom(struct weft_diag *d, const char *fmt, ...) WEFT_PRINTF(2, 3);

/* ---- metadata of one stream ---- */

struct weft_mark_def {
	int32_t type;
	char *title;
	int stack;
	size_t nlabels;
	struct weft_mark_label *labels; /* label strings owned */
};

struct weft_meta {
	int version; /* 3 or 1 */
	char *part;  /* NULL if absent */
	int has_tid, tid;
	int has_pid, pid;
	char *loom;  /* NULL if absent */
	int has_app_id, app_id;
	int has_rank, rank;
	int has_nranks, nranks;
	int has_finished;
	int64_t finished;
	int has_require;
	size_t nreqs;
	struct weft_model_req *reqs; /* strings owned */
	int has_cpus;
	size_t ncpus;
	struct weft_cpu *cpus;
	size_t nmarks;
	struct weft_mark_def *marks;
	char *lib_version, *lib_commit;
	/* weft.* losses (loss.c): weft.cut, weft.lost_events, weft.ring; raw
	 * clocks */
	int end_by;               /* 0, WEFT_END_SIGNAL or WEFT_END_EXIT */
	int end_signal;
	int64_t end_clock;
	uint64_t dropped;         /* weft.lost_events */
	int ring;
	uint64_t ring_size, ring_lost_events, ring_lost_bytes;
	size_t nruns;
	struct weft_lost_run *runs; /* owned; first/last raw */
};

/* Parse a v3 stream.json (name: the file, for messages). Returns -1 when the
 * file cannot be used at all (not JSON, not an object, bad version) or on a
 * strict breach; on success *root holds the parsed document. */
int weft_meta_parse_v3(const char *text, size_t len, const char *name,
		struct weft_diag *d, struct weft_meta *m, json_t **root);
/* Same for a v1 per-process metadata.json. */
int weft_meta_parse_v1(const char *text, size_t len, const char *name,
		struct weft_diag *d, struct weft_meta *m, json_t **root);
void weft_meta_free(struct weft_meta *m);
/* The weft.* loss keys of a v3 document (loss.c); -1 on a strict breach. */
int weft_meta_parse_loss(json_t *root, const char *name, struct weft_diag *d,
		struct weft_meta *m);
void weft_meta_free_loss(struct weft_meta *m);
/* Why the thread of m did not end: "ovni.finished is missing (...)", or
 * its weft.cut. */
void weft_meta_unfinished_why(const struct weft_meta *m, char *buf, size_t n);

/* Reads a whole small file (metadata); refuses files over max bytes. -1
 * with the error set; -2 out of memory (the error set too). */
int weft_read_small_file(const char *path, size_t max, char **out, size_t *outlen,
		struct weft_diag *d);

/* ---- clock offsets ---- */

struct weft_clkoff_row {
	int rank;
	char *host;
	int64_t offset; /* the median, truncated */
	int line;
	/* the drift section's row of the host (dline 0: none): the clocks c
	 * become c + offset + floor(ppb * (c - t0) / WEFT_DRIFT_SCALE) */
	int64_t t0, ppb;
	int dline;
};

#define WEFT_DRIFT_SCALE 1000000000 /* drift in parts per 10^9 (ns per s) */

/* *out = c + off + floor(ppb * (c - t0) / 10^9), computed exactly in 128
 * bits; returns 0 (out untouched) when that is not an int64. */
int weft_clk_drift(int64_t c, int64_t off, int64_t t0, int64_t ppb, int64_t *out);
/* The clocks c whose weft_clk_drift is an int64 (|ppb| < 10^9): [lo, hi];
 * returns 0 when there is none. */
int weft_clk_drift_range(int64_t off, int64_t t0, int64_t ppb, int64_t *lo, int64_t *hi);

/* Parses clock-offsets.txt text. Returns -1 with the reason in err; -2 out
 * of memory (err says so). */
int weft_clkoff_parse(const char *text, size_t len, const char *name,
		struct weft_clkoff_row **rows, size_t *nrows, char *err, size_t errlen);
void weft_clkoff_free(struct weft_clkoff_row *rows, size_t nrows);

/* ---- binary stream decoding ---- */

/* Size of the event starting at p given avail bytes: returns 1 and sets *need
 * to its total size when avail holds enough to know it (the event may still
 * be incomplete: compare *need with avail); returns 0 with *need = bytes
 * needed to know the size (the event header, or header + jumbo size field). */
static inline int weft_event_size(const uint8_t *p, size_t avail, uint64_t *need)
{
	if (avail < WEFT_EV_HEADER_SIZE) {
		*need = WEFT_EV_HEADER_SIZE;
		return 0;
	}
	uint8_t flags = p[WEFT_EV_OFF_FLAGS];
	if (!weft_ev_is_jumbo(flags)) {
		*need = WEFT_EV_HEADER_SIZE + weft_ev_payload_size(flags);
		return 1;
	}
	if (avail < WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD) {
		*need = WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD;
		return 0;
	}
	*need = (uint64_t) WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD
		+ weft_load_u32(p + WEFT_EV_OFF_PAYLOAD);
	return 1;
}

/* Fills ev (all but stream, sclock) from a complete event of size bytes. */
static inline void weft_event_fill(const uint8_t *p, uint64_t size, struct weft_event *ev)
{
	uint8_t flags = p[WEFT_EV_OFF_FLAGS];
	ev->mcv[0] = (char) p[WEFT_EV_OFF_MODEL];
	ev->mcv[1] = (char) p[WEFT_EV_OFF_CATEGORY];
	ev->mcv[2] = (char) p[WEFT_EV_OFF_VALUE];
	ev->mcv[3] = '\0';
	ev->flags = flags;
	ev->rclock = (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK);
	ev->payload = p + WEFT_EV_OFF_PAYLOAD;
	ev->payload_size = (uint32_t) (size - WEFT_EV_HEADER_SIZE);
	if (weft_ev_is_jumbo(flags)) {
		ev->jumbo = 1;
		ev->jumbo_data = p + WEFT_EV_OFF_PAYLOAD + WEFT_EV_JUMBO_SIZE_FIELD;
		ev->jumbo_size = (uint32_t) (size - WEFT_EV_HEADER_SIZE - WEFT_EV_JUMBO_SIZE_FIELD);
	} else {
		ev->jumbo = 0;
		ev->jumbo_data = NULL;
		ev->jumbo_size = 0;
	}
}

/* The MCV for a message: printable ASCII as is, other bytes as \xNN. */
static inline const char *weft_mcv_show(const void *mcv, char out[16])
{
	const uint8_t *m = mcv;
	size_t k = 0;
	for (int i = 0; i < 3; i++) {
		if (m[i] > 0x20 && m[i] < 0x7f && m[i] != '\\') {
			out[k++] = (char) m[i];
		} else {
			static const char hx[] = "0123456789abcdef";
			out[k++] = '\\';
			out[k++] = 'x';
			out[k++] = hx[m[i] >> 4];
			out[k++] = hx[m[i] & 15];
		}
	}
	out[k] = '\0';
	return out;
}

/* Why the event at p (avail bytes left in the file; need: what
 * weft_event_size said) cannot be complete (stream.c). */
void weft_why_incomplete(const uint8_t *p, uint64_t avail, uint64_t need, char *why,
		size_t whylen);

/* Checks a stream header held in memory (len bytes available of a file of
 * that size). Returns 0, or -1 with the reason (without the file name). */
int weft_check_header(const uint8_t *p, size_t len, char *why, size_t whylen);

/* Decodes a whole stream held in memory (for the fuzzer and tests): calls
 * cb for every event; returns the number of events, or -1 with the reason
 * (including the byte offset) in why. */
long weft_decode_buffer(const uint8_t *p, size_t len,
		void (*cb)(void *ctx, const struct weft_event *ev), void *ctx,
		char *why, size_t whylen);

/* ---- the trace ---- */

struct weft_iloom;
struct weft_iproc;

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
	uint64_t prod_off;   /* file offset of the next event to frame */
	int64_t prod_last;   /* clock of the last event framed (INT64_MIN
	                      * before the first: a lower bound, see last_clock) */
	/* Backwards clocks (set before the first fill): 0, the framing stops at
	 * the first one (it is an error); 1, it goes on and flags those inside
	 * an unordered region (OU[ ... OU]) with WEFT_IDX_UNORD. To tell, the
	 * region state is known at reg_off (an event boundary): reg_in says
	 * whether the events from there on are inside a region, up to the next
	 * OU[ or OU]. Kept lazily: only a backwards clock moves it on. */
	int unord;
	int reg_in;
	uint64_t reg_off;
	int prod_done;       /* the final chunk was produced (under the read-ahead mutex) */
	int filling;         /* read-ahead: a thread is filling ring[ph] (under its mutex) */

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
	enum weft_sort sort;   /* sorting on read */
	size_t sort_look_back; /* its look-back per stream (set at weft_open) */
	int sort_auto;         /* no limit asked: each stream's from its scan */
	size_t sort_budget;    /* the sorters' memory together, bytes */
	int sort_planned;      /* the sorters made (sort_plan.c) */
	int sort_plan_rc;      /* and what that returned (a failure is final) */
	uint64_t nsorted;      /* events moved, over the chunks the merge took */

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

struct weft_iloom {
	struct weft_loom pub;
	char *name;
	char *hostname;
	struct weft_cpu *cpus;
	const char **cpu_src; /* which file gave each CPU */
	size_t ncpus;
	struct weft_iproc **procs;
	const struct weft_proc **pprocs;
	size_t nprocs;
	/* ---- messages (system.c): the metadata files of the loom's streams ---- */
	const char **srcs;
	size_t nsrcs;
};

struct weft_iproc {
	struct weft_proc pub;
	struct weft_iloom *loom;
	const char *app_id_src, *rank_src;
	struct weft_thread **threads;
	const struct weft_thread **pthreads;
	size_t nthreads;
	/* ---- messages and rules (system.c): the metadata files of the
	 * process's streams (of the whole trace); whether one is v3 ---- */
	const char **srcs;
	size_t nsrcs;
	int has_v3;
};

/* discover.c: fills t->streams (sorted by relpath) with relpath, obs_path,
 * json_path and the v1 identity; warns about stray files. */
int weft_discover(struct weft_trace *t, const char *path);
/* subtrace.c: the trace directory around the directory path (abs: its real
 * path) and *subrel, path relative to it; NULL when path holds a loom.*
 * directory itself or is inside none (or, *oom set, out of memory). */
char *weft_find_trace_root(const char *path, const char *abs, char **subrel, int *oom);
/* subtrace.c: frees t->mstreams, t->root and t->subrel (weft_free_system). */
/* Frees a stream struct and what it owns (its metadata, its paths); the
 * stream must be closed (weft_stream_close). */
void weft_wstream_free(struct weft_wstream *s);
void weft_free_mstreams(struct weft_trace *t);

/* meta: load each stream's metadata */
int weft_load_metadata(struct weft_trace *t);

/* system.c */
int weft_build_system(struct weft_trace *t);
void weft_free_system(struct weft_trace *t);

/* clkoff.c: loads path/clock-offsets.txt if present and sets the looms' and
 * streams' offsets. */
int weft_load_clock_offsets(struct weft_trace *t);

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

/* sort.c: the sorter of one stream (look_back >= 1 events). */
struct weft_sorter *weft_sorter_new(uint64_t fsize, size_t look_back);
/* The same with its window (ring and sort buffer) in map, len bytes of a
 * shared mapping of a temporary file, of which it keeps at most resident
 * bytes mapped in (the rest stays in the file). */
struct weft_sorter *weft_sorter_new_mapped(uint64_t fsize, size_t look_back, void *map,
		size_t len, size_t resident);
/* The bytes of a mapped window for look_back (0: not mapped). */
size_t weft_sorter_map_size(size_t look_back);
/* sort_plan.c: scans the stream file at fd (fsize bytes) for how far back
 * its unordered regions can reach: *need events of look-back surely hold
 * each (never less than the truth; more where earlier sorts may have
 * moved events). 0, or -1 when out of memory. */
int weft_sort_scan_reach(int fd, uint64_t fsize, uint64_t *need);
/* sort_plan.c: makes the sorter of every stream (once, at the first need):
 * each stream's look-back (fixed, or from its scan) and where its window
 * lives (in memory within t->sort_budget, or in a temporary file). */
int weft_sort_plan(struct weft_trace *t);
/* sort_plan.c: t->sort_budget from the environment's WEFT_SORT_BUDGET when
 * the options left it 0 (else WEFT_SORT_BUDGET); -1 (t's error) when it is
 * no size. */
int weft_sort_budget_env(struct weft_trace *t);
void weft_sorter_free(struct weft_sorter *z);
/* Copies the next whole events of the sorted stream, from file offset
 * WEFT_OBS_HEADER_SIZE on, into dst (at most cap bytes), reading the file
 * through fd. Returns the bytes copied (> 0); 0 with *need set when the
 * next event alone is larger than cap; 0 with *need == 0 once everything
 * was given (the bytes of a file that ends inside an event come last, on
 * their own, at most cap of them); -1 when sorting failed
 * (weft_sorter_error), after every event before the failure was given. */
long weft_sorter_read(struct weft_sorter *z, int fd, uint8_t *dst, size_t cap, uint64_t *need);
/* The failure: its offset in the file and why (without the file name). */
const char *weft_sorter_error(const struct weft_sorter *z, uint64_t *off);
/* Events given so far whose offset differs from the file's. */
uint64_t weft_sorter_nmoved(const struct weft_sorter *z);
/* Whether the next byte to give is inside an unordered region of the
 * sorted stream (after an OU[ that no OU] closed yet). */
int weft_sorter_out_in_region(const struct weft_sorter *z);
/* The clock of the first event of the sorted stream (sorting as far as
 * needed to know it): 1 with *clock, 0 if the stream has none or sorting
 * failed before it (the iteration reports that). */
int weft_sorter_first_clock(struct weft_sorter *z, int fd, int64_t *clock);

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

/* mindex.c: a seek by the merge index (merge.idx). weft_midx_plan, before
 * the streams' rings are made: 1 if the index is used (use; the streams'
 * prod_off set from the checkpoint before the seek clock, if any), 0 if
 * not (the stream indexes then). weft_midx_resume, after: the heap as the
 * full read has it at the first event at or after the seek clock. */
struct weft_midx_plan {
	int use;
	int fd;
	char *path;
	uint64_t entries, nentries, esize; /* the section's checkpoints */
	uint8_t *entry;                    /* the one resumed from, or NULL */
};
int weft_midx_plan(struct weft_trace *t, struct weft_midx_plan *pl);
int weft_midx_resume(struct weft_trace *t, struct weft_midx_plan *pl);
void weft_midx_plan_free(struct weft_midx_plan *pl);

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

/* util */
static inline void weft_sort(void *base, size_t n, size_t size,
		int (*cmp)(const void *, const void *))
{
	if (n > 1) /* qsort() wants a valid pointer even for 0 elements */
		qsort(base, n, size, cmp);
}

/* Allocation failures are errors like any other (nothing in libweft
 * aborts): these return NULL then, and the caller fails with weft_oom(). */
char *weft_strdup(const char *s);
char *weft_path_join(const char *a, const char *b);
void *weft_calloc(size_t n, size_t sz); /* calloc, at least one byte */

#endif
