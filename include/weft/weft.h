/* SPDX-License-Identifier: MIT */
/*
 * weft/weft.h - libweft, the reader of ovni traces (spec v3 and v1).
 *
 * Open a trace (a trace directory, any directory inside it, or one stream
 * directory), inspect the merged system (looms, processes, threads, CPUs) and
 * iterate over every event of every stream in one global clock order, in
 * memory that does not grow with the trace.
 *
 *     char err[WEFT_ERR_MAX];
 *     struct weft_trace *t = weft_open("ovni", NULL, err, sizeof err);
 *     if (t == NULL) { fprintf(stderr, "%s\n", err); exit(1); }
 *     struct weft_event ev;
 *     int r;
 *     while ((r = weft_next(t, &ev)) > 0)
 *             ... ev.mcv, ev.rclock, ev.payload ...
 *     if (r < 0) fprintf(stderr, "%s\n", weft_error(t));
 *     weft_close(t);
 *
 * Errors are values: every message names the file (and, for binary data,
 * the byte offset) and what was wrong. The library never prints, except
 * through the warning callback the caller gives.
 *
 * This header is a contract; see docs/reader.md.
 */
#ifndef WEFT_WEFT_H
#define WEFT_WEFT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

#define WEFT_ERR_MAX 1024

struct weft_trace;
struct weft_loom;
struct weft_proc;
struct weft_thread;
struct weft_stream;

/* ---- opening ---- */

enum weft_mode {
	/* Every rule of the format and of the metadata is an error (weft check,
	 * weft emu). */
	WEFT_STRICT = 0,
	/* For looking at possibly broken traces (weft dump, weft top): a
	 * metadata breach (missing finished/require, an event of a model no
	 * stream requires, a CPU list rule, a bad clock-offsets file) is
	 * reported through the warning callback and reading goes on. Binary
	 * corruption is still an error. */
	WEFT_LENIENT = 1,
};

/* Which clock orders the events (added after the first release of this
 * header; 0 keeps the original behaviour). */
enum weft_clock {
	/* By sclock: the clock with the loom's offset applied (emulation). */
	WEFT_CLOCK_OFFSET = 0,
	/* By rclock: the raw clock in the file, as ovnidump/ovnitop order. */
	WEFT_CLOCK_RAW = 1,
};

/* The read-ahead thread. With it, the stream files are read and their
 * events framed and checked on a second core while the caller's thread
 * merges; the events, their order, the errors and the point where an error
 * stops the iteration are the same either way. */
enum weft_readahead {
	/* A thread when the machine has two or more CPUs, the trace has at
	 * most 256 streams and at least 4 MiB of events; the environment
	 * variable WEFT_READAHEAD=on|off overrides this choice. */
	WEFT_READAHEAD_AUTO = 0,
	WEFT_READAHEAD_OFF = 1, /* everything on the caller's thread */
	WEFT_READAHEAD_ON = 2,  /* a thread whatever the machine and trace */
};

/* What a clock going backwards within a stream is (addition; 0 keeps the
 * original rule). Runtimes that record events out of order (nOS-V's kernel
 * events, for one) write them inside unordered regions: between an OU[ and
 * the next OU] of the same stream, events may have clocks before earlier
 * events of that stream, until the trace is sorted. */
enum weft_backwards {
	/* Always an error, inside an unordered region too (weft emu: an
	 * emulation cannot go back in time). */
	WEFT_BACKWARDS_ERROR = 0,
	/* Allowed inside an unordered region, an error outside one (weft
	 * check). */
	WEFT_BACKWARDS_REGIONS = 1,
	/* Allowed inside an unordered region; outside one, a warning and the
	 * reading goes on (weft dump, weft top, as ovnidump/ovnitop do). The
	 * first 10 are warned one by one, the rest counted in one warning at
	 * the end of the iteration. */
	WEFT_BACKWARDS_WARN = 2,
};

/* Sorting on read (addition; 0 keeps the events in their file order). */
enum weft_sort {
	WEFT_SORT_NONE = 0,
	/* The events of every unordered region (OU[ ... OU]) are sorted into
	 * place as `weft sort` (and the reference's ovnisort) would sort the
	 * stream file, while reading, without writing anything: each stream
	 * reads as its sorted copy would (events, order and offsets), in memory
	 * bounded by the look-back (sort_look_back). The backwards rule then
	 * applies to the sorted order (weft emu). A region reaching back
	 * further than the look-back is an error. */
	WEFT_SORT_REGIONS = 1,
};

/* The look-back of weft_sort_stream() (weft sort) by default: a region's
 * events may go back before at most this many events of their stream
 * (their own included), as the reference's ovnisort (whose default ring of
 * 1000000 holds 999999). Sorting on read looks back less by default (see
 * weft_open_opts.sort_look_back). */
#define WEFT_SORT_LOOK_BACK 1000000u
/* Sorting on read: the look-back per stream by default, for traces of at
 * most 16 streams; with more, 1048576 / nstreams, at least
 * WEFT_SORT_READ_LOOK_BACK_MIN. */
#define WEFT_SORT_READ_LOOK_BACK 65536u
#define WEFT_SORT_READ_LOOK_BACK_MIN 4096u
/* Sorting on read: the memory of all sorters together by default. */
#define WEFT_SORT_BUDGET (64u << 20)

/* What a stream cut short is (addition; 0 keeps it an error). Only a cut at
 * the end of the file: any other corruption (bad magic, a clock going back,
 * ...) stays an error whatever this says. */
enum weft_cut {
	/* An error naming the file, the offset of the partial event and what
	 * runs past the end; the iteration stops there. */
	WEFT_CUT_ERROR = 0,
	/* The stream ends at its last whole event (a header cut short: it has
	 * no events) and the other streams go on to their ends; one warning
	 * through the callback when the cut is reached (a cut header: at
	 * weft_open):
	 *   FILE: offset N: stream cut: a partial event of B bytes at the end of
	 *   the file (WHY); read up to its last whole event
	 *   FILE: offset 0: stream cut: a partial stream header of B bytes
	 *   (WHY); the stream has no events */
	WEFT_CUT_WARN = 1,
	WEFT_CUT_STOP_STREAM = WEFT_CUT_WARN,
	/* As WEFT_CUT_WARN without the warning: the caller asks
	 * weft_stream_cut() (weft check lists every cut stream). */
	WEFT_CUT_QUIET = 2,
};

/* Option structs (struct weft_open_opts, struct weft_follow_opts) start
 * with sz, the size of the struct the caller was built with: declare them
 * with WEFT_OPTS, which sets it and zeroes every other field,
 *
 *     WEFT_OPTS(weft_open_opts, o, .mode = WEFT_LENIENT, .warn = my_warn);
 *     struct weft_trace *t = weft_open(path, &o, err, sizeof err);
 *
 * A caller built against an older header passes a smaller sz: the fields
 * past it read as 0 (their defaults). A larger sz (a newer header) is
 * accepted only when every byte past the struct this library knows is
 * zero; otherwise, and when sz is smaller than the sz field itself (0
 * included), the call fails with err naming the struct and the byte.
 * docs/reader.md, "Options that grow". */
#define WEFT_OPTS(type, name, ...) \
	struct type name = { .sz = sizeof(struct type), __VA_ARGS__ }

struct weft_open_opts {
	size_t sz; /* sizeof(struct weft_open_opts) of the caller: WEFT_OPTS */
	enum weft_mode mode;
	/* Called with one complete sentence per warning (no trailing newline);
	 * NULL: warnings are dropped. */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	/* Ordering clock; 0 (WEFT_CLOCK_OFFSET) by default. */
	enum weft_clock clock;
	/* Whether a helper thread reads and checks the streams ahead of the
	 * merge (added after the first release; 0 keeps working as before). */
	enum weft_readahead readahead;
	/* 1: events of every model are allowed, whatever the streams'
	 * ovni.require says (weft emu -a). (Addition; 0 keeps the rule.) */
	int all_models;
	/* A clock going backwards within a stream: 0 (WEFT_BACKWARDS_ERROR) is
	 * always an error. (Addition; 0 keeps the rule.) */
	enum weft_backwards backwards;
	/* WEFT_SORT_REGIONS: unordered regions sorted on read. (Addition; 0
	 * keeps the file's order.) */
	enum weft_sort sort;
	/* With WEFT_SORT_REGIONS: the look-back in events, a fixed limit (a
	 * region reaching back further is an error). 0 (the default): no
	 * limit: every stream longer than WEFT_SORT_READ_LOOK_BACK (or the
	 * share below) is scanned once first for how far its regions reach
	 * back, and the sorter holds that many events (24 bytes each, up to
	 * 2.5 times that while a region is sorted) within sort_budget. */
	size_t sort_look_back;
	/* A stream cut short (a run killed with SIGKILL): its file ends inside
	 * an event (the event header, the jumbo size field or the payload runs
	 * past the end of the file) or inside the 8-byte stream header. 0
	 * (WEFT_CUT_ERROR) keeps this an error. (Addition.) */
	enum weft_cut cut;
	/* 1: in strict mode, a v3 stream.json without ovni.finished (its
	 * process died before ovni_thread_free) is accepted with one warning
	 * instead of being an error; 2: accepted without the warning.
	 * weft_stream_unfinished() tells which. (Addition, for weft emu
	 * --salvage and weft check; 0 keeps the rule.) */
	int accept_unfinished;
	/* 1: the iteration starts at seek_clock, as after weft_seek(t,
	 * seek_clock). (Addition; 0 reads every event.) */
	int seek;
	int64_t seek_clock;
	/* 1: symbolic links that lead out of the directory opened (or of the
	 * trace around it) are followed like the others; 0 (the default): each
	 * is warned about, naming it and its target, and passed over (docs/
	 * reader.md, "Symbolic links"). (Addition; links inside are followed.) */
	int follow_links;
	/* With WEFT_SORT_REGIONS: the memory the sorters of all streams may
	 * hold together, in bytes (0: WEFT_SORT_BUDGET, or the environment's
	 * WEFT_SORT_BUDGET, e.g. 64M). The streams whose windows do not fit
	 * keep theirs in a temporary file (in $TMPDIR, never named, gone when
	 * the trace is closed or the process ends) mapped a part at a time
	 * (docs/reader.md, "Regions of any length"). (Addition; 0 keeps the
	 * default.) */
	size_t sort_budget;
};

/* Opens the trace at path. opts may be NULL (strict, no warnings); its sz
 * is checked (WEFT_OPTS). On failure returns NULL and writes the reason
 * into err. */
struct weft_trace *weft_open(const char *path, const struct weft_open_opts *opts,
		char *err, size_t errlen);
void weft_close(struct weft_trace *t);

/* The last error of t, as a sentence naming the file and byte offset. */
const char *weft_error(const struct weft_trace *t);

/* ---- the system (merged metadata) ---- */

struct weft_cpu {
	int index; /* logical index in the loom, 0..ncpus-1 */
	int phyid; /* as given by the operating system */
};

struct weft_mark_label {
	int64_t value;
	const char *label;
};

/* A mark type declared with ovni_mark_type(), merged over all streams. */
struct weft_mark_type {
	int32_t type;
	const char *title;
	int stack; /* 1: push/pop ("stack"), 0: set ("single") */
	size_t nlabels;
	/* in the order of first appearance (streams in relpath order, each
	 * stream.json in file order) */
	const struct weft_mark_label *labels;
};

struct weft_model_req {
	const char *model;   /* e.g. "ovni", "nosv" */
	const char *version; /* as written, e.g. "1.1.0" */
};

struct weft_loom {
	const char *name;     /* "vm.0" (from ovni.loom or the loom.* dir) */
	const char *hostname; /* the name up to the first '.' */
	int64_t clock_offset; /* ns added to every clock (clock-offsets.txt) */
	int has_rank;         /* every process of the loom has a rank */
	int rank_min;         /* smallest rank among its processes */
	size_t ncpus;
	const struct weft_cpu *cpus; /* sorted by index */
	size_t nprocs;
	const struct weft_proc *const *procs; /* sorted by pid */
};

struct weft_proc {
	int pid;
	int app_id; /* 0 when absent */
	int rank;   /* -1 when absent */
	int nranks; /* 0 when absent */
	const struct weft_loom *loom;
	size_t nthreads;
	const struct weft_thread *const *threads; /* sorted by tid */
};

struct weft_thread {
	int tid;
	const struct weft_proc *proc;
	const struct weft_stream *stream;
};

struct weft_stream {
	const char *relpath;  /* stream dir relative to the opened path ("." for itself) */
	const char *obs_path; /* the binary stream file, as opened */
	int meta_version;     /* 3, or 1 for the v1 layouts */
	/* NULL only in lenient mode, when the stream's thread keys are unusable */
	const struct weft_thread *thread;
	uint64_t obs_size;    /* bytes of the binary stream file */
	int finished;         /* ovni.finished == 1 (always 1 for v1) */
	const char *lib_version; /* ovni.lib.version, NULL if absent */
	const char *lib_commit;  /* ovni.lib.commit, NULL if absent */
	size_t nreqs;
	const struct weft_model_req *reqs; /* ovni.require, in file order */
	/* The clock offset of the stream's loom (clock-offsets.txt; 0 without
	 * one): sclock = rclock + clock_offset, unless the host has a drift
	 * (docs/sync.md, "Drift"). Set by weft_open. (Addition.) */
	int64_t clock_offset;
	/* The drift of the stream's host (clock-offsets.txt's drift section;
	 * 0 without one): when drift_ppb is not 0, sclock = rclock +
	 * clock_offset + floor(drift_ppb * (rclock - drift_t0) / 10^9), which
	 * weft_stream_sclock() computes. Set by weft_open. (Addition, appended:
	 * libweft allocates every struct weft_stream, so programs built against
	 * the struct without them keep working.) */
	int64_t drift_ppb;
	int64_t drift_t0;
};

/* Streams in relative-path order (the order the merge fills its heap). */
size_t weft_nstreams(const struct weft_trace *t);
const struct weft_stream *weft_stream_at(const struct weft_trace *t, size_t i);

/* Looms in name order, each with its processes and threads. */
size_t weft_nlooms(const struct weft_trace *t);
const struct weft_loom *weft_loom_at(const struct weft_trace *t, size_t i);

/* Mark types merged over all streams, in the order of first appearance
 * (streams in relpath order, each stream.json in file order), as the
 * reference orders them. */
size_t weft_nmark_types(const struct weft_trace *t);
const struct weft_mark_type *weft_mark_type_at(const struct weft_trace *t, size_t i);

/* A JSON attribute of a stream's stream.json by dotted key ("nosv.lib_version"),
 * serialised compactly into buf, like snprintf: returns 0 if not found, else
 * the length of the full serialisation (excluding the NUL); the output was
 * truncated if that is >= buflen (then retry with a larger buf). buf may be
 * NULL when buflen is 0. For model code that needs keys this header does not
 * type. */
int weft_stream_attr_json(const struct weft_stream *s, const char *dotted_key,
		char *buf, size_t buflen);

/* The first clock of stream i (weft_stream_at order) with its loom's clock
 * offset applied (the sclock), known from weft_open on, before iterating:
 * returns 1 with *clock set if the stream's file holds an event, 0 if it
 * holds none (or i is out of range). It is the clock in the first event's
 * header; the event itself is checked when the iteration reaches it.
 * (Addition, for the emulator's clock gate.) */
int weft_stream_first_sclock(const struct weft_trace *t, size_t i, int64_t *clock);

/* The same first clock as in the file (the rclock): 1 with *clock set, 0
 * when there is none. (Addition: the origin of raw-clock views such as weft
 * dump's; sclock - clock_offset is not the rclock when the host drifts.) */
int weft_stream_first_rclock(const struct weft_trace *t, size_t i, int64_t *clock);

/* The synchronized clock of raw clock rclock of stream s: rclock +
 * clock_offset, plus floor(drift_ppb * (rclock - drift_t0) / 10^9) computed
 * exactly (128-bit) when the host drifts. Exact for every clock of an event
 * libweft yields (it refuses an event whose sclock is not an int64); a
 * clock outside that range gives INT64_MIN or INT64_MAX. (Addition, exported
 * and not inline, so that the arithmetic stays libweft's.) */
int64_t weft_stream_sclock(const struct weft_stream *s, int64_t rclock);

/* ---- events, in one global clock order ---- */

struct weft_event {
	char mcv[4];          /* model, category, value, NUL */
	uint8_t flags;        /* as in the file (jumbo bit 0x10, size nibble, reserved bits) */
	int64_t rclock;       /* the clock in the file, read as signed 64-bit */
	int64_t sclock;       /* rclock + the loom's clock offset (and drift: docs/sync.md) */
	/* The payload as in the file: for a normal event 0 or 2..16 bytes; for
	 * a jumbo event the u32 size field followed by the jumbo data. Valid
	 * until the next weft_next() call. */
	const uint8_t *payload;
	uint32_t payload_size;
	int jumbo;                  /* 1 if flags has the jumbo bit */
	const uint8_t *jumbo_data;  /* jumbo only: the data after the size field */
	uint32_t jumbo_size;        /* jumbo only */
	uint64_t offset;            /* byte offset of the event in its stream file */
	const struct weft_stream *stream;
};

/* Yields the next event in global order (by sclock, or by rclock with
 * WEFT_CLOCK_RAW; ties in the reference's heap order). Returns 1 with *ev
 * filled, 0 at the end, -1 on error (weft_error). After an error, no further
 * events are yielded. */
int weft_next(struct weft_trace *t, struct weft_event *ev);

/* Yields up to max events at once into evs[0..n-1], in the same order and
 * under the same rules as weft_next(); the payload pointers of all of them
 * stay valid until the next call. Returns n (0 at the end), or -1 on error
 * (weft_error). An error met after some events is returned by the next call.
 * (Addition: lets a caller skip one library call per event.) */
long weft_next_batch(struct weft_trace *t, struct weft_event *evs, size_t max);

/*
 * The zero-copy way through a trace (addition): a reference to each event's
 * bytes where libweft holds them, and its stream. Nothing is decoded ahead;
 * the accessors below read the fields a caller wants. This is the fastest
 * way through a trace; weft_next_batch() is weft_next_refs() plus filling a
 * struct weft_event for each event (see weft_ref_event()).
 */
struct weft_ref {
	/* The event as in the file: the 12-byte header (flags, model,
	 * category, value, clock), then the payload. Valid until the next
	 * weft_next*() call. */
	const uint8_t *raw;
	const struct weft_stream *stream;
};

/* Yields up to max events into refs[0..n-1]: same order, same rules and
 * same returns as weft_next_batch(). Calls of weft_next(), weft_next_batch()
 * and weft_next_refs() may be mixed; each goes on where the last stopped. */
long weft_next_refs(struct weft_trace *t, struct weft_ref *refs, size_t max);

/* Fills *ev from a reference of the last weft_next_refs() call, exactly as
 * weft_next_batch() would have (offset included). */
void weft_ref_event(const struct weft_trace *t, const struct weft_ref *r,
		struct weft_event *ev);

static inline uint8_t weft_ref_flags(const struct weft_ref *r)
{
	return r->raw[0];
}

static inline int64_t weft_ref_rclock(const struct weft_ref *r)
{
	int64_t c;
	memcpy(&c, r->raw + 4, sizeof c); /* host endian, as the file */
	return c;
}

/* The event's sclock (as struct weft_event's): the offset inline, the
 * drift, where the host has one, by weft_stream_sclock(). Programs built
 * with an earlier weft.h add the offset only: rebuild them to read drifted
 * traces (docs/sync.md, "Drift"). */
static inline int64_t weft_ref_sclock(const struct weft_ref *r)
{
	if (r->stream->drift_ppb != 0)
		return weft_stream_sclock(r->stream, weft_ref_rclock(r));
	return (int64_t) ((uint64_t) weft_ref_rclock(r) + (uint64_t) r->stream->clock_offset);
}

/* The MCV as a NUL-terminated string of three bytes. */
static inline void weft_ref_mcv(const struct weft_ref *r, char mcv[4])
{
	memcpy(mcv, r->raw + 1, 3);
	mcv[3] = '\0';
}

static inline int weft_ref_is_jumbo(const struct weft_ref *r)
{
	return (r->raw[0] & 0x10u) != 0;
}

/* The payload, as struct weft_event's payload and payload_size: for a
 * normal event 0 or 2..16 bytes, for a jumbo event the u32 size field
 * followed by the data. */
static inline const uint8_t *weft_ref_payload(const struct weft_ref *r)
{
	return r->raw + 12;
}

static inline uint32_t weft_ref_payload_size(const struct weft_ref *r)
{
	if (weft_ref_is_jumbo(r)) {
		uint32_t n;
		memcpy(&n, r->raw + 12, sizeof n);
		return 4u + n;
	}
	uint32_t code = r->raw[0] & 0x0fu;
	return code + (code != 0); /* 0, or code + 1: without a branch */
}

/*
 * Seeking (addition). Before the first weft_next*() call, positions every
 * stream at its first event whose ordering clock (sclock, or rclock with
 * WEFT_CLOCK_RAW) is clock or later, reading nothing before: the stream's
 * index (stream.idx, see docs/reader.md) gives by a binary search the last
 * flushed buffer that starts before clock, and the events from there up to
 * clock are read and dropped (at most one buffer). A stream whose index is
 * missing, stale (older than the stream) or corrupted is read from its start
 * instead, with one warning naming the index file and what is wrong; the
 * events yielded are the same. The iteration then goes on as usual: the
 * events yielded are those a full iteration yields at clock or later, in
 * the same order, provided that no event before the chosen buffer has a
 * clock at or after `clock` (always so outside unordered regions; see
 * docs/reader.md for unordered regions). With WEFT_SORT_REGIONS the streams
 * are read from their starts (the sorter needs them) and the events before
 * clock are dropped. An unordered region that began before the seek point
 * is not known as one: a clock going back before the stream's next OU[ or
 * OU] is taken as inside a region. Returns 0, or -1 once the iteration has
 * begun (weft_error).
 */
int weft_seek(struct weft_trace *t, int64_t clock);

/* Streams that weft_seek() positioned by their index (the others were read
 * from their starts), known once the iteration began. (Addition.) */
size_t weft_nindexed(const struct weft_trace *t);

/* Writes the index of stream i (stream.idx beside stream.obs; for a v1
 * stream thread.TID.idx) from its events, atomically (a temporary file
 * beside it, then a rename): the entries libovni writes (the first event,
 * then every OF[ event, see docs/reader.md), so running it again gives the
 * same file. A stream cut short is indexed up to its last whole event. path
 * (may be NULL) receives the index's path, nentries (may be NULL) the
 * number of entries. Returns 0, or -1 (weft_error). (Addition.) */
int weft_stream_write_index(struct weft_trace *t, size_t i, char *path, size_t pathlen,
		uint64_t *nentries);
/* Writes the merge index of the trace at path (merge.idx at its top, the
 * directory that holds the loom.* directories): checkpoints of a full read's
 * merge, so that a seek gives the events of equal clocks in several streams
 * in the order of a full read (docs/reader.md, "Seeking"). opts: how the
 * trace is opened (mode, cut, accept_unfinished; the clock orders are
 * chosen here). Reads the whole trace once (twice if a loom has a clock
 * offset). Written to a temporary file, then renamed. 0 with ipath (the
 * file) and *nentries (checkpoints) set, 1 when path is not the top of its
 * trace (nothing written), or -1 with err. (Addition.) */
int weft_write_merge_index(const char *path, const struct weft_open_opts *opts,
		char *ipath, size_t ipathlen, uint64_t *nentries, char *err, size_t errlen);

/* Number of events yielded so far. */
uint64_t weft_nevents(const struct weft_trace *t);

/* Number of events yielded so far whose clock went backwards within their
 * stream: inside unordered regions (in_regions != 0; allowed unless
 * WEFT_BACKWARDS_ERROR), or outside them (in_regions == 0; only
 * WEFT_BACKWARDS_WARN lets them through). (Addition.) */
uint64_t weft_nbackwards(const struct weft_trace *t, int in_regions);

/* With WEFT_SORT_REGIONS: the number of events that sorting on read has
 * put in another place of their stream (their offset in the sorted stream
 * differs from the one in the file), over the chunks read so far; 0
 * without. (Addition.) */
uint64_t weft_nsorted(const struct weft_trace *t);

/* ---- sorting a stream (weft sort) ---- */

/* What weft_stream_order() found in a stream file, or weft_sort_stream()
 * in the sorted stream it wrote. */
struct weft_sort_report {
	uint64_t nevents;
	/* Unordered regions, as the reference's ovnisort tells them: an OU[
	 * opens one (an OU[ inside a region is one of its events), the next
	 * OU] closes it. Empty: the OU] right after the OU[. */
	uint64_t nregions; /* with events: the ones sorted */
	uint64_t nempty;
	int unclosed;      /* the stream ends inside a region (left as it is) */
	uint64_t unclosed_offset; /* its OU[ */
	uint64_t nmoved;   /* weft_sort_stream(): events put in another place */
	/* Clocks going back against the previous event of the stream (in the
	 * file, or in the sorted stream), and the first of them. */
	uint64_t nback;
	uint64_t back_offset;
	int64_t back_from, back_to;
	char back_mcv[4];
	int back_in_region; /* the first is inside a region */
};

/* Reads stream i of t in its file order, only the event headers, and fills
 * *r. Returns 0, or -1 on error (weft_error: a read error, the file ends
 * inside an event). May be called at any time after weft_open (it reads
 * the file on its own descriptor). (Addition.) */
int weft_stream_order(struct weft_trace *t, size_t i, struct weft_sort_report *r);

/* Sorts the unordered regions of stream i as the reference's ovnisort does
 * (see docs/reader.md, "Sorting unordered regions") and writes the whole
 * sorted stream (the 8-byte header, then every event) through write, in
 * pieces: write returns 0, or -1 to stop (the call then fails with "cannot
 * write the sorted stream"). write may be NULL: nothing is written, *r
 * still says what sorting would do. look_back: how many events before a
 * region's OU] its events may reach back to (0: WEFT_SORT_LOOK_BACK); a
 * region reaching further is an error naming the stream and the offset of
 * its OU]. Memory: 24 bytes per event of look-back, up to 2.5 times that
 * while a region is sorted; not the stream's size. Returns 0 with *r
 * filled (its nback counts the clocks still going back in the sorted
 * stream), or -1 (weft_error). (Addition.) */
int weft_sort_stream(struct weft_trace *t, size_t i, size_t look_back,
		int (*write)(void *ctx, const void *buf, size_t len), void *ctx,
		struct weft_sort_report *r);

/* ---- streams cut short (weft_open_opts.cut) ---- */

struct weft_cut_info {
	int header;        /* 1: cut inside the stream header (no events) */
	uint64_t offset;   /* where the partial event (or header) starts */
	uint64_t bytes;    /* its bytes in the file: from offset to the end */
	char why[256];     /* what runs past the end of the file, as the
	                    * WEFT_CUT_ERROR message says it */
	int has_last;      /* the stream yielded an event */
	int64_t last_sclock; /* the sclock of its last whole event */
};

/* Streams found cut so far: a cut header is found at weft_open, a cut event
 * when the iteration reaches the end of its stream (so all are known once
 * weft_next*() returned 0). With WEFT_CUT_ERROR, the one that stopped the
 * iteration. */
size_t weft_ncut(const struct weft_trace *t);
/* 1 with *info filled (info may be NULL) if stream i (weft_stream_at
 * order) was found cut, else 0. */
int weft_stream_cut(const struct weft_trace *t, size_t i, struct weft_cut_info *info);
/* 1 if stream i has no ovni.finished and was accepted for it
 * (accept_unfinished), else 0. */
int weft_stream_unfinished(const struct weft_trace *t, size_t i);
/* The metadata file of stream i as opened (its stream.json, or the v1
 * metadata.json), NULL if i is out of range. (Addition.) */
const char *weft_stream_json_path(const struct weft_trace *t, size_t i);

/* ---- losses and crash cuts (the weft.* keys of stream.json) ----
 * What libovni wrote about events a stream lacks (docs/reader.md,
 * "Losses"): events of signal handlers it could not store, a run cut by
 * WEFT_CRASH=flush, events a flight recorder (WEFT_RING) overwrote.
 * (Additions.) */
enum weft_end_by {
	WEFT_END_NORMAL = 0, /* no weft.cut */
	WEFT_END_SIGNAL = 1, /* the process died by a signal (end_signal) */
	WEFT_END_EXIT = 2    /* the process exited without ovni_proc_fini */
};
struct weft_loss {
	/* weft.cut: the stream was written when the run ended abnormally;
	 * every event before end_sclock is in it. */
	int end_by;           /* enum weft_end_by */
	int end_signal;       /* WEFT_END_SIGNAL: the signal number */
	int64_t end_sclock;   /* the clock at the cut, plus the loom's offset */
	/* weft.lost_events: signal-handler events that could not be stored
	 * (when is not known). */
	uint64_t dropped;
	/* weft.ring: the thread ran as a flight recorder of ring_size bytes;
	 * lost_events (lost_bytes) were overwritten before being written, in
	 * nruns runs (weft_stream_lost_run). */
	int ring;
	uint64_t ring_size;
	uint64_t lost_events, lost_bytes;
	size_t nruns;
	/* weft.filter, weft.filtered: a filter at the source was set (its
	 * WEFT_FILTER rules, "" for none, owned by the trace; a callback of
	 * the program) and dropped `filtered` events on purpose. */
	int filter;
	const char *filter_rules;
	int filter_callback;
	uint64_t filtered;
	/* weft.output = "off" (WEFT_OUTPUT=off): the events were recorded,
	 * unwritten_bytes of them, and never written. */
	int output_off;
	uint64_t unwritten_bytes;
};
/* 1 with *out filled (out may be NULL) if stream i has any of the keys,
 * else 0 (and *out zeroed). */
int weft_stream_loss(const struct weft_trace *t, size_t i, struct weft_loss *out);
#define WEFT_FILTER_DESC_MAX 640
/* The filter of l in words, for messages: "WEFT_FILTER='R'", "the
 * program's filter callback" or both joined by " and " ("" when none). */
void weft_filter_describe(const struct weft_loss *l, char *buf, size_t n);

/* One run of consecutive overwritten events of a flight recorder. */
struct weft_lost_run {
	int64_t first, last;   /* their smallest and largest raw clock */
	int64_t first_sclock, last_sclock; /* the same plus the loom's offset */
	uint64_t events, bytes;
	/* 1 if known: the byte offset in the stream file of the first event
	 * written after the run (the file's size if none was); without it,
	 * the run precedes the first event after it with a clock >= last. */
	int has_offset;
	uint64_t offset;
};
/* Run k (0 <= k < nruns, in stream order) of stream i: 1 with *out filled,
 * 0 if there is no such run. */
int weft_stream_lost_run(const struct weft_trace *t, size_t i, size_t k,
		struct weft_lost_run *out);
/* 1 if stream i is unfinished (weft_stream_unfinished), with why in buf:
 * "ovni.finished is missing (...)", or the cut of a crashed run
 * ("cut by signal 11 (SIGSEGV) at clock C (...)"); else 0. */
int weft_stream_unfinished_why(const struct weft_trace *t, size_t i, char *buf, size_t n);
/* "SIGSEGV" and the like for the signals a crash or a user names, else
 * NULL. */
const char *weft_signal_name(int signo);

/* The sclock of the last event stream i yielded so far: 1 with *clock set,
 * 0 if it yielded none. (Addition.) */
int weft_stream_last_sclock(const struct weft_trace *t, size_t i, int64_t *clock);

/* 1 once the iteration reached the end of stream i: its last whole event
 * was yielded and no event follows (the end of its file, or its cut was
 * found), else 0. Known in time: the merge finds the end of a stream
 * before it yields any event after that stream's last one, so when a
 * weft_next*() call returns, every stream whose last event precedes one of
 * the events it yielded is ended (a stream whose last event is the last one
 * yielded may be found ended only by the next call). With
 * weft_stream_last_sclock(), the clock at which a stream's thread stopped.
 * (Addition.) */
int weft_stream_ended(const struct weft_trace *t, size_t i);

/* Smallest first clock and largest last clock (sclock) over the streams
 * with events decoded so far (0 if none); valid after the iteration ends. */
int64_t weft_first_clock(const struct weft_trace *t);
int64_t weft_last_clock(const struct weft_trace *t);

/* ---- following a trace being written (addition) ----
 *
 * For a trace that a running program is writing with libovni (in place:
 * without OVNI_TMPDIR; with WEFT_FLUSH_MS so that its buffers reach the
 * disk while it runs). Each weft_follow_poll() looks for new stream
 * directories, reads what the stream files gained and moves the frontier;
 * weft_follow_next() then yields the events up to the frontier in one
 * order: by rclock (the raw clock; no clock offsets), ties by stream
 * relpath. The frontier is the smallest, over the streams not yet done, of
 * the clock of their last whole event read (a stream without events: see
 * docs/reader.md), and the reader's CLOCK_MONOTONIC at the poll's scan
 * (a stream that appears later was created after it). A stream is done
 * once its stream.json has ovni.finished and its file was read to its end;
 * a partial event at the end of a stream not done is "not yet". The trace
 * is DONE when every stream is done (and no new one appeared); STOPPED
 * when nothing grew (no new bytes, stream.json or stream) for timeout_ms
 * while a stream was not done: the frontier then goes past every event
 * read. Streams cut short are warned about at DONE or STOPPED. Events are
 * not checked against their models, unordered regions are not sorted, and
 * v1 traces are not followed. The streams' struct weft_stream has relpath,
 * obs_path, meta_version, obs_size (bytes read) and finished; thread is
 * NULL.
 */
struct weft_follow;

struct weft_follow_opts {
	size_t sz; /* sizeof(struct weft_follow_opts) of the caller: WEFT_OPTS */
	void (*warn)(void *ctx, const char *msg); /* NULL: warnings dropped */
	void *warn_ctx;
	/* ms without growth while a stream is not done: STOPPED (0: 5000) */
	unsigned timeout_ms;
	/* ms a stream without events, present at the first poll, holds the
	 * frontier back (0: 2000) */
	unsigned grace_ms;
};

enum weft_follow_state {
	WEFT_FOLLOW_LIVE = 0,    /* the program may still write */
	WEFT_FOLLOW_DONE = 1,    /* every stream finished and was read */
	WEFT_FOLLOW_STOPPED = 2, /* nothing grew for the timeout, streams unfinished */
};

/* path: a trace directory, a loom, process or stream directory; it need
 * not exist yet. opts may be NULL (the defaults); its sz is checked
 * (WEFT_OPTS). NULL with err on failure (path is not a directory, a bad
 * sz). */
struct weft_follow *weft_follow_open(const char *path, const struct weft_follow_opts *opts,
		char *err, size_t errlen);
/* One poll (reads nothing more once DONE or STOPPED): the state, or -1
 * (weft_follow_error). Call it every few tens of ms; it does not sleep. */
int weft_follow_poll(struct weft_follow *f);
/* Up to max events at or before the frontier (0: none now; poll again).
 * The payload pointers stay valid until the next weft_follow_poll(). */
long weft_follow_next(struct weft_follow *f, struct weft_event *evs, size_t max);
const char *weft_follow_error(const struct weft_follow *f);
/* Every event up to this clock was yielded or is ready (INT64_MIN: none). */
int64_t weft_follow_frontier(const struct weft_follow *f);
uint64_t weft_follow_nevents(const struct weft_follow *f);
/* Streams found cut short (warned) at DONE or STOPPED. */
size_t weft_follow_ncut(const struct weft_follow *f);
/* Streams in the order they were found. */
size_t weft_follow_nstreams(const struct weft_follow *f);
const struct weft_stream *weft_follow_stream_at(const struct weft_follow *f, size_t i);
/* 1 if stream i is done (finished and read to its end). */
int weft_follow_stream_done(const struct weft_follow *f, size_t i);
void weft_follow_close(struct weft_follow *f);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WEFT_H */
