/* SPDX-License-Identifier: MIT */
/*
 * emu.h - the emulator core: a system model and an engine that replays
 * ordered events through model descriptions (src/model/model_emu.h) into
 * per-thread and per-CPU channels, and hands the resulting records to sinks
 * (src/out) as views (thread, CPU, breakdowns), channels and records.
 *
 * The core reads no file: it takes the system as weft.h structs (which
 * libweft fills, and tests may build by hand) and events as struct
 * weft_event. Errors are values: a function that fails returns -1 (or NULL)
 * and the reason is a sentence from emu_error() / the err buffer.
 */
#ifndef WEFT_EMU_EMU_H
#define WEFT_EMU_EMU_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "weft/weft.h"
#include "model_emu.h"

/* ---- the system model ---- */

#define EMU_LABEL_MAX 64

struct emu_loom {
	const char *name;
	char hostname[EMU_LABEL_MAX];
	int64_t clock_offset;
	size_t cpu_first;   /* gindex of its first physical CPU */
	size_t nphys;       /* physical CPUs (then the vCPU at cpu_first+nphys) */
	size_t vcpu;        /* gindex of its virtual CPU */
	size_t *cpu_by_index; /* logical index -> CPU gindex */
	size_t proc_first, nprocs;
};

struct emu_proc {
	int pid, app_id, rank;
	size_t loom;
	size_t thread_first, nthreads;
};

struct emu_sys_thread {
	int tid;
	size_t proc, loom;
	const struct weft_stream *stream; /* may be NULL */
	const char *relpath;              /* for messages ("?" without a stream) */
	char label[EMU_LABEL_MAX];        /* "TH <app_id>.<tid>" */
};

struct emu_sys_cpu {
	size_t loom;
	int index; /* -1 for the vCPU */
	int phyid; /* -1 for the vCPU */
	int is_virtual;
	char label[EMU_LABEL_MAX]; /* " CPU <loom>.<phyid>" or "vCPU <loom>.*" */
};

struct emu_mark {
	int32_t type;
	const char *title;
	int stack;
	size_t nlabels;
	const struct weft_mark_label *labels;
};

struct emu_sys {
	size_t nlooms, nprocs, nthreads, ncpus, nmarks;
	struct emu_loom *looms;       /* in row order */
	struct emu_proc *procs;       /* in row order */
	struct emu_sys_thread *threads; /* in row order: gindex = row - 1 */
	struct emu_sys_cpu *cpus;     /* in row order */
	struct emu_mark *marks;       /* in PCF/record order (as given) */
	int sorted_by_rank;
};

/* Builds the system from the merged metadata: looms (sorted by rank when
 * every loom has one, else as given, i.e. by name), their processes (by
 * rank, else pid), threads (by tid), CPUs (by phyid, then one vCPU per
 * loom) and the mark types. The weft structs must outlive sys. */
int emu_sys_build(struct emu_sys *sys, const struct weft_loom *const *looms, size_t nlooms,
		const struct weft_mark_type *marks, size_t nmarks, char *err, size_t errlen);
void emu_sys_free(struct emu_sys *sys);

/* ---- pre-emulation checks ---- */

struct weft_registry; /* src/model/model.h */

/* The models to enable, in model-byte order: ovni always, and each model
 * of the registry `models` (src/model: the run's; NULL: the built-in ones)
 * with an emulation description that a stream requires, or every one with
 * `all`. A required version the model does not provide refuses the trace;
 * unknown model names are ignored. out holds weft_model_count(models)
 * entries. */
int emu_select_models(const struct weft_registry *models,
		const struct weft_stream *const *streams, size_t nstreams, int all,
		const struct emu_model_desc **out, size_t *nout, char *err, size_t errlen);

/* "major.minor.patch" compatibility: same major, wanted minor <= provided. */
int emu_version_compatible(const char *want, const char *have);

/* The reference's one-hour gate on the streams' first clocks. first[i] is
 * the first sclock of stream i (relpath order), has[i] whether it has
 * events. The reference stream is the first one with events. */
int emu_clock_gate(const struct weft_stream *const *streams, const int64_t *first,
		const int *has, size_t nstreams, char *err, size_t errlen);

/* ---- records, handed to the sinks ---- */

/* The views: rows of one timeline each. Records name their view. */
enum emu_rec_file {
	EMU_FILE_THREAD = 0, /* a row per thread */
	EMU_FILE_CPU = 1,    /* a row per CPU */
	/* 2..: the breakdown views (-b), a row per physical CPU */
};
#define EMU_MAX_BD 3
#define EMU_MAX_VIEWS (2 + EMU_MAX_BD)

struct emu_view {
	const char *name;  /* file stem: "thread", "cpu", "nosv-breakdown" */
	size_t nrows;
	int breakdown;     /* a breakdown view: rows are slots */
	int prv_type;      /* breakdown: its Paraver type */
	const char *label; /* breakdown: its PCF type label */
};

/* A record of a view: row (0-based), time (dclock), channel, value (null =
 * 0). chan is the channel's catalogue id (catalogue.h: emu_cat_of_prv);
 * the Paraver output maps it to the Paraver type. */
struct emu_prv_rec {
	int64_t time;
	int64_t value;
	uint32_t row;
	uint32_t chan;
};

/* Records that only some sinks want (emu_sink.internal). */
enum emu_rec_kind {
	EMU_REC_RSEL = 1,   /* CPU row: the unique Running thread (value = thread
	                       gindex, -1 none) */
	EMU_REC_NRUN,       /* CPU row: number of Running threads (value) */
	EMU_REC_RAW_SET,    /* thread row: raw channel `chan` (its catalogue
	                       id) set to value (null: `isnull`) */
	EMU_REC_RAW_PUSH,
	EMU_REC_RAW_POP,
};

struct emu_rec {
	int64_t time;
	int64_t value;
	uint32_t row;
	uint32_t chan; /* EMU_REC_RAW_*: the channel's catalogue id; else 0 */
	uint8_t kind;
	uint8_t isnull;
};

/* The records of consecutive accepted events, in event order within each
 * array: the Paraver records of each file, and the internal records. A
 * refused event contributes nothing. The prv arrays and the internal one
 * stay valid (unchanged) until EMU_BATCH_KEEP further records() calls have
 * returned, or until emu_destroy(), so a sink may queue them for a writer
 * thread without copying (the engine cycles EMU_BATCH_KEEP + 1 sets of
 * arrays; the lost records are valid during the call only). 15 batches
 * of 4 Ki records (about 4 ms of emulation) let the writer ride out a slow
 * stretch of the kernel's page-cache copy while the emulation goes on;
 * with 7, the emulation thread found the queue full and wrote parts itself
 * (10M-event runtime trace, medians of 9 alternate runs: wall 0.360 ->
 * 0.340 s, emulation thread 0.353 -> 0.328 s of CPU; 31: no better). */
#define EMU_BATCH_KEEP 15
/* A lost interval of a thread (docs/emu.md, TRACES WITH LOST EVENTS), a
 * record kind of its own, as babeltrace2's discarded-events message: the
 * thread, when the interval begins and ends, and what was lost in it. The
 * engine makes two: EMU_LOST_BEGIN where the interval begins (end -1; the
 * events and bytes of the runs known then) and EMU_LOST_END where it ends
 * (the whole interval: begin, end, and every run it covers). The ovni.lost
 * channel of the thread and CPU views is derived from them by the outputs
 * (src/out: value 1 on the thread's row, and on the row of the CPU it had
 * when the interval began while a thread is lost there, from BEGIN; 0 at
 * END), placed among the views' records by `at`. */
enum emu_lost_phase {
	EMU_LOST_BEGIN = 0,
	EMU_LOST_END = 1,
};
struct emu_lost_rec {
	int64_t begin, end;     /* record times (dclocks, a window's T0 as 0) */
	uint64_t events, bytes; /* lost in its runs (weft_lost_run) */
	uint32_t thread;        /* its row in the thread view */
	int32_t cpu;            /* the CPU's row when it began, or -1 */
	uint32_t chan;          /* ovni.lost's catalogue id, for the records
	                           derived from it */
	/* It comes after the first at[0] records of the batch's thread view
	 * and at[1] of its CPU view (and before the others). */
	uint32_t at[2];
	uint8_t phase;          /* enum emu_lost_phase */
	uint8_t snapshot;       /* a BEGIN made at a window's T0: the state
	                           there (its CPU rows go in CPU order) */
};

struct emu_batch {
	const struct emu_prv_rec *prv[EMU_MAX_VIEWS]; /* per view */
	size_t nprv[EMU_MAX_VIEWS];
	const struct emu_rec *internal;
	size_t ninternal;
	/* the lost intervals (sinks with .lost), valid during the call only */
	const struct emu_lost_rec *lost;
	size_t nlost;
};

enum { EMU_SINK_INT_ALL = 1, EMU_SINK_INT_RAW = 2 };

struct emu_sink {
	void *self;
	int (*records)(void *self, const struct emu_batch *b, char *err, size_t errlen);
	/* Fill emu_batch.internal for this sink: EMU_SINK_INT_ALL, every
	 * internal record; EMU_SINK_INT_RAW, those of the raw channels
	 * (EMU_REC_RAW_*; the others come too when another sink wants them);
	 * 0, none. */
	int internal;
	/* 1: also fill emu_batch.lost (the views have no ovni.lost records:
	 * out.c derives them for the outputs that want them). */
	int lost;
};

/* ---- the engine ---- */

struct emu;

struct emu_opts {
	int lint; /* weft's own extra checks */
	/* Warnings and information lines (one sentence, no newline). */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	/* Information lines (e.g. burst statistics); NULL: dropped. */
	void (*info)(void *ctx, const char *msg);
	/* The breakdown views of the models that have one (-b). */
	int breakdown;
	/* The name of the model of a byte (in the run's registry), given
	 * model_ctx, for the message refusing an event of a model that is not
	 * enabled; NULL: none known. */
	const char *(*model_name)(void *model_ctx, unsigned char byte);
	void *model_ctx;
	/* No summary will be asked for: the time each labelled value holds
	 * is not accumulated (a cost on every raw write). */
	int no_summary;
};

/* A channel as the outputs see it (after families are expanded). */
struct emu_chan_info {
	const char *name;
	int prv_type;
	const char *thread_label;
	const char *cpu_label;
	size_t nvalues;
	const struct emu_value_label *values; /* or NULL and ... */
	const struct weft_mark_label *mvalues; /* ... these for a mark family */
	int stack;
	/* Values known at the end (task types), listed after the others;
	 * set by emu_finish(). */
	const struct emu_value_label *dyn;
	size_t ndyn;
	const char *model; /* the model's name */
	int counter;    /* a counter family member: its index; -1 otherwise */
	int dyn_values; /* its values are the task types (dyn) */
	enum emu_show show; /* as the description says (EMU_SHOW_AUTO: decide) */
};

/* models: the enabled models, in model-byte order. */
struct emu *emu_create(const struct emu_sys *sys, const struct emu_model_desc *const *models,
		size_t nmodels, const struct emu_opts *opts, char *err, size_t errlen);
void emu_destroy(struct emu *e);

/* Up to 4 sinks; each gets every record of every accepted event. */
int emu_add_sink(struct emu *e, const struct emu_sink *sink);

/* A time window (weft emu --from/--to): the engine emulates every event up
 * to T1 but makes records only for the window. Events at clocks up to T0
 * (included) are emulated muted: the state and the views' last values are
 * kept, no record is made and nothing reaches the sinks. Before the first
 * event after T0 (or at the end, if there is none) the state at T0 is
 * written at T0: for every row and Paraver type whose value is not null
 * (not 0), a record; for sinks with internal records, each CPU's running
 * thread and count, and each thread's raw channels (a set, or a push per
 * stack value, bottom first). Record times are then relative to T0 (T0 is
 * time 0). The first event after T1 is not emulated: emu_event() returns 1
 * and the run should stop; emu_finish() then skips the models' end checks.
 * A bound is a clock (sclock, the loom offsets applied) or, when rel, ns
 * after the first event (the emulation's time 0). Call before the first
 * event. */
struct emu_window {
	int has_from, has_to;
	int from_rel, to_rel;
	int64_t from, to;
};
void emu_set_window(struct emu *e, const struct emu_window *w);
/* The run's time 0 is `sclock`, not the first event's clock (weft emu -j:
 * each worker's engine sees the events of some looms only, and takes the
 * whole trace's first clock). Call before the first event. */
void emu_set_origin(struct emu *e, int64_t sclock);
/* After the run: 1 when a window was set and emu_event() refused an event
 * after T1 (the run stopped there). */
int emu_window_stopped(const struct emu *e);
/* weft emu -j with a window (window_merge.c): waiting: 1 when e met events
 * but none after T0 (its state at T0 not written yet); written: 1 when it
 * wrote it; late_snapshot writes it (at time 0 of the window) and flushes
 * it to the sinks, after emu_finish: 0, or -1. */
int emu_window_waiting(const struct emu *e);
int emu_window_written(const struct emu *e);
int emu_window_late_snapshot(struct emu *e);
/* weft emu --mpi with a window and the summary (window_merge.c): the
 * events e emulated before T0 (nmuted); add gives e the window line's
 * parts of the whole run (whether an engine met an event, whether reading
 * stopped after T1, the events before T0 over every engine), for
 * emu_summary_at, after e's outputs are done. */
uint64_t emu_window_nmuted(const struct emu *e);
void emu_window_add(struct emu *e, int started, int stopped, uint64_t nmuted);
/* After the run, with a window: the dclocks (ns after the first event) of
 * T0 (0 without --from) and of the last emulated event; 0 when no event
 * reached the engine. */
int emu_window_span(const struct emu *e, int64_t *from, int64_t *last);

/* Processes one event: 0, or -1 (emu_error) and the emulation must stop;
 * with a window (emu_set_window), 1 for an event after T1, not emulated.
 * Records are handed to the sinks in batches: call emu_flush() (or
 * emu_finish()) before closing the sinks. */
int emu_event(struct emu *e, const struct weft_event *ev);
/* Hands the buffered records of the accepted events to the sinks; call it
 * before closing them, also after a failed emu_event(). Returns -1 if a sink
 * failed or the emulation had failed. */
int emu_flush(struct emu *e);
/* The end of the run, once, after the last event (complete = 1) or after
 * an error: the models' end checks (the stacks that must be empty, every
 * thread dead) and their values known only at the end (task types, the
 * breakdown labels); then flushes. Returns -1 when a check fails or the run
 * had failed (emu_error() keeps the first error). */
int emu_finish(struct emu *e, int complete);

/* weft emu --salvage: thread t (row order) was cut short (a run killed
 * mid-write: its stream ends inside an event, or it never ended with
 * ovni_thread_free): it is closed at its last event (sclock last_sclock,
 * when has_last), the models' end checks are waived for it (and it only),
 * and the summary names it with why. Call before emu_finish(). 0, or -1
 * when out of memory. */
int emu_thread_cut(struct emu *e, size_t t, int has_last, int64_t last_sclock,
		const char *why);

/* weft emu --salvage: thread t (row order), cut short, ends at sclock (the
 * clock of its last event) as if it had emitted the thread-end event of
 * the first model that names one (thread-end:, ovni's OHe) right after
 * that event: its actions are applied with their state condition waived
 * (a Paused or Warming thread ends too) and without the model's guard;
 * the thread's views go to their values for its new state, it leaves its
 * CPU (whose views go to what they are without that thread), and its open
 * tasks and stacks are left as they are. Nothing happens for a thread that
 * never started or already ended. Records are written at sclock: call it
 * before any event with a later clock is emulated (an earlier clock than
 * the last record's is taken as that one). 0, or -1 (emu_error). */
int emu_thread_close(struct emu *e, size_t t, int64_t sclock);

/* ---- threads that lost events (loss.c; docs/emu.md, "Traces with lost
 * events") ---- */

/* The lost intervals are records of their own (struct emu_lost_rec, to
 * the sinks with emu_sink.lost), from the first lost clock of a run to the
 * first event written after it; the outputs show them as the catalogue's
 * built-in channel ovni.lost (src/model/builtin_chans.c) in the thread and
 * CPU views (only when a thread has a run of lost events: emu_has_lost()). */

/* A run of consecutive lost events of a thread (weft_lost_run). */
struct emu_lost_run {
	int64_t first_sclock, last_sclock; /* its smallest and largest clock */
	uint64_t events;
	int has_offset;  /* it lies before the first event at offset >= offset */
	uint64_t offset; /* (else before the first with a clock >= last_sclock) */
	uint64_t bytes;  /* the bytes of its events */
};
/* Thread t (row order) lost events: runs (in stream order) overwritten by
 * a flight recorder, and `dropped` events dropped (when is not known). It
 * is emulated leniently (loss.c): after each run it starts again in the
 * unknown state, the events the models refuse are skipped and counted,
 * its end checks are waived, and the runs are marked in the timelines.
 * Call before the first event; nothing happens with no run and none
 * dropped. 0, or -1 when out of memory. */
int emu_thread_lost(struct emu *e, size_t t, const struct emu_lost_run *runs, size_t nruns,
		uint64_t dropped);
/* Thread t had n events dropped by the program's filter callback at the
 * source (weft_rt_filter_set): which ones is not known, so it is emulated
 * leniently as emu_thread_lost's `dropped`, and the summary counts them
 * apart. 0, or -1 when out of memory. */
int emu_thread_filtered(struct emu *e, size_t t, uint64_t n);
/* 1 when some thread has a run of lost events (the .pcf lists the lost
 * events type). */
int emu_has_lost(const struct emu *e);
/* weft emu --salvage: thread t, cut short (emu_thread_cut), is closed at
 * the clock its stream was cut at (weft.cut), not its last event: the
 * summary says so. */
int emu_thread_cut_at(struct emu *e, size_t t);

const char *emu_error(const struct emu *e);
const struct emu_sys *emu_system(const struct emu *e);
/* dclock of the last event that reached the model (the PRV duration);
 * with a window, the window's duration: from T0 to T1 when the run stopped
 * after T1, else to the last event. */
int64_t emu_duration(const struct emu *e);
uint64_t emu_nevents(const struct emu *e);

size_t emu_nchans(const struct emu *e);
const struct emu_chan_info *emu_chan_at(const struct emu *e, size_t i);
size_t emu_nviews(const struct emu *e);
const struct emu_view *emu_view_at(const struct emu *e, size_t i);
/* A breakdown view's PCF values (known after emu_finish); 0 when they were
 * not completed (the .pcf then has no type block and the .row no rows). */
int emu_view_values(const struct emu *e, size_t view, const struct emu_value_label **v,
		size_t *n);
/* The row label of a breakdown view's slot. */
void emu_view_row_label(const struct emu *e, size_t view, size_t row, char *buf, size_t len);

/* weft emu -j, --mpi (docs/emu.md, PARALLEL): the breakdown views of e
 * hold, instead of their sorted slots, each physical CPU's value changes
 * (row: the CPU's slot index, value: its new value, chan: the number of
 * the event among e's events that changed one). Before the first event. */
void emu_bd_raw(struct emu *e);
/* Such records of every worker merged by time (two workers' records never
 * at one time), replayed through the serial run's sorter: the records of
 * breakdown view `view` of e's catalogue that the serial run writes. feed
 * and end hand them to emit in runs (its non-zero return: -1); NULL or -1
 * out of memory, or a row out of range. */
struct emu_bd_replay;
struct emu_bd_replay *emu_bd_replay_new(const struct emu *e, size_t view);
int emu_bd_replay_feed(struct emu_bd_replay *R, const struct emu_prv_rec *r, size_t n,
		int (*emit)(void *ctx, const struct emu_prv_rec *r, size_t n), void *ctx);
int emu_bd_replay_end(struct emu_bd_replay *R,
		int (*emit)(void *ctx, const struct emu_prv_rec *r, size_t n), void *ctx);
/* The records written so far handed to emit (weft emu -j's streaming
 * merge: those before the time of the last record fed are then all out;
 * the last event's are written when a later one is fed, or at the end). */
int emu_bd_replay_flush(struct emu_bd_replay *R,
		int (*emit)(void *ctx, const struct emu_prv_rec *r, size_t n), void *ctx);
void emu_bd_replay_free(struct emu_bd_replay *R);
/* The same over an array into *out (malloc'd, *nout records): 0 or -1. */
int emu_bd_replay_all(const struct emu *e, size_t view, const struct emu_prv_rec *raw, size_t n,
		struct emu_prv_rec **out, size_t *nout);

/* The Paraver value of a task type with this label: Jenkins' lookup2 hash of
 * the label, + 666, the low 31 bits, at least 1000 (tasks.c). */
int64_t emu_type_gid_of(const char *label);

/* Per thread, time in each state; per CPU, the fraction of the duration
 * during which a thread was running on it; per model, the share of each
 * labelled value (not with emu_opts.no_summary). */
void emu_summary(const struct emu *e, FILE *out);
/* The summary of a run made by several engines over one system (weft emu
 * -j: each emulated the threads and CPUs of its looms, with the same
 * models and origin): thread t's figures from thr_of[t], CPU c's from
 * cpu_of[c], the catalogue from e; the duration is the largest of all's
 * (e among them), the events their sum. Without a window, cuts or losses,
 * it is the serial run's summary, line for line. */
void emu_summary_split(const struct emu *e, const struct emu *const *thr_of,
		const struct emu *const *cpu_of, const struct emu *const *all, size_t nall, FILE *out);
/* weft emu --mpi (summary_merge.c): the summary's figures of thread t from
 * thr_of[t] and of CPU c from cpu_of[c] (NULL: left out), e giving the
 * layout, as bytes (*buf malloc'd): 0, or -1 out of memory. unpack writes
 * them into e's rows (those threads no longer cut): 0, or -1 when the
 * bytes are not such a pack (e then holds a part). emu_summary_at prints
 * e's summary with the run's end and events given. */
int emu_summary_pack(const struct emu *e, const struct emu *const *thr_of,
		const struct emu *const *cpu_of, uint8_t **buf, size_t *len);
int emu_summary_unpack(struct emu *e, const uint8_t *buf, size_t len);
void emu_summary_at(const struct emu *e, int64_t end, uint64_t nevents, FILE *out);
/* 1 when a thread lost or dropped events (emu_thread_lost,
 * emu_thread_filtered), even without a run of lost events. */
int emu_loss_noted(const struct emu *e);
/* The events skipped after lost events (the models refused them). */
uint64_t emu_loss_skipped(const struct emu *e);

/* The channel catalogue: every channel and what the outputs need. */
#include "catalogue.h"

#endif /* WEFT_EMU_EMU_H */
