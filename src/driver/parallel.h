/* SPDX-License-Identifier: MIT */
/*
 * parallel.h - weft emu -j N (docs/emu.md, PARALLEL): the looms of a trace
 * shared among N workers, each with its own readers (one per loom: the
 * trace opened at the loom's directory) and its own engine over the whole
 * system (the rows, the catalogue and the time origin of the serial run),
 * the view records of the workers merged in time order (a breakdown view:
 * each CPU's value changes, sorted after the merge): as the workers make
 * them (par_stream: -j), or once they are done (par_run: --mpi).
 *
 * A run whose result could differ from the serial one's is not kept: events
 * of two streams with the same clock (the serial order of such events is
 * the reference's heap order, which a worker cannot see), records of two
 * workers at the same time in one view, an unordered region, a warning
 * (but for a reader's of a stream cut short, with --salvage, and one said
 * by the whole trace's opening already), an error, runs of lost events,
 * an event skipped after lost events, or task types that differ between
 * workers. Then
 * par_run says why and the caller runs the serial emulation.
 */
#ifndef WEFT_DRIVER_PARALLEL_H
#define WEFT_DRIVER_PARALLEL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "emu.h"

struct par_worker;
struct par_merge;

/* The records of a batch of the merge (par_stream, and the driver's
 * write_merged over the merged arrays): at most this many of each view
 * and of the internal records, unless more share one time. */
#define PAR_MERGED_BATCH 4096

struct par_in {
	const char *path;          /* the trace directory (its root) */
	struct weft_trace *t;      /* the whole trace, opened at path */
	const struct emu_sys *sys; /* built from t */
	const struct emu_model_desc *const *models;
	size_t nmodels;
	const struct emu_opts *eo; /* warn/info/ctx are the workers' own */
	int64_t origin;            /* the first clock of the trace */
	size_t jobs;
	int all_models;
	const volatile sig_atomic_t *stop;
	/* Non-NULL: only these looms (sys indices; weft emu --mpi: a rank's
	 * share), among min(jobs, nonly) workers, one worker allowed. */
	const size_t *only;
	size_t nonly;
	/* 1 (--mpi): the breakdown views' records are left as each CPU's
	 * changes (emu_bd_raw), for the merge of every rank's; 0: sorted as
	 * the serial run's (emu_bd_replay_all) */
	int raw_bd;
	/* Non-NULL: --from/--to */
	const struct emu_window *window;
	/* The internal records the outputs want (an EMU_SINK_INT_*: the
	 * Perfetto output's running threads and raw channels), kept and merged
	 * as the views' records; 0: none. */
	int internal;
	/* 1 (--mpi, with window): a window that holds nothing in these looms
	 * is not refused (the ranks decide it together: par_out.snapped), and
	 * the workers without an event after T0 write their rows' state at T0
	 * after their last event whatever the others found. */
	int defer_window;
	/* 1: --salvage (weft emu -j only): the streams cut short are read up
	 * to their last whole event (the reader's warnings kept, said in the
	 * serial run's order: par_out.warn), their threads closed at their
	 * last event as the serial run closes them (salvage.h) */
	int salvage;
	/* The warnings the opening of the whole trace said (the caller says
	 * them): a loom's reader that says one of them again at its opening
	 * is not giving a warning of its own. */
	const char *const *said;
	size_t nsaid;
	/* 1 (weft emu -j): the threads that lost events (weft.lost_events,
	 * a filter callback's drops; no run of lost events: the caller makes
	 * those serially) are handed to each worker's engine, its looms' only
	 * (driver_losses); a worker that skips an event after them gives the
	 * run up (the summary's rules of the skipped refusals, in the order
	 * first met over the whole trace, are not put together) */
	int losses;
};

struct par_out {
	struct emu *emu; /* worker 0's engine: the catalogue for the outputs */
	size_t nviews;
	struct emu_prv_rec *rec[EMU_MAX_VIEWS]; /* the merged records per view */
	size_t nrec[EMU_MAX_VIEWS];
	struct emu_rec *irec; /* the merged internal records (par_in.internal) */
	size_t nirec;
	int64_t duration;
	uint64_t nevents;
	/* the summary's window line over the workers: the last event's dclock,
	 * whether one met an event, whether reading stopped after T1, the
	 * events before T0 */
	int64_t end;
	int started, stopped;
	uint64_t nmuted;
	size_t nworkers;
	double cpu[64]; /* each worker's CPU time (first 64) */
	char why[256];  /* par_run returned 1: why the serial run is needed */
	int snap0;      /* a window's time 0: merged by row */
	int snapped;    /* a window: a worker wrote its state at T0 at an event */
	/* par_run returned 1 because a worker met an error (the reader's or
	 * the engine's): its message (the first worker's that had one). */
	int error;
	char emsg[1024];
	struct par_worker *w;
	struct par_merge *m; /* par_stream's merge: its batches' arrays */
	/* the bytes mapped for rec[f] (maplen[EMU_MAX_VIEWS]: irec), 0 where
	 * malloc'd: give them back with par_free_rec */
	size_t maplen[EMU_MAX_VIEWS + 1];
	/* --salvage: the readers' warnings of the streams found cut short
	 * while reading, in the serial run's order (the streams without a
	 * whole event first, in stream order, then by the clock of each
	 * stream's last whole event), for the caller to say */
	char **warn;
	size_t nwarn;
};

/* 0: out filled; 1: out->why says why the serial run must be made; -1:
 * out of memory (err). par_free in every case. */
int par_run(const struct par_in *in, struct par_out *out, char *err, size_t errlen);
void par_free(struct par_out *out);

/* weft emu -j's streaming merge (docs/emu.md, PARALLEL): each worker hands
 * its records to this thread through a queue of its own (bounded: a worker
 * waits while its queue is full), which merges them by time while the
 * workers run and hands them on in batches (the cut rules of write_merged's
 * batches over the merged arrays: the same batches). */
struct par_stream_ops {
	/* Once every worker's engine is made: the outputs opened on emu
	 * (worker 0's; its catalogue, the system and the views are those of
	 * every worker): 0, or -1 with err. */
	int (*open)(void *ctx, const struct emu *emu, char *err, size_t errlen);
	/* The next batch (b->prv[f] for the views, b->internal), its records
	 * not earlier than any of the batch before; its arrays stay valid for
	 * EMU_BATCH_KEEP further calls, and until par_free: 0, or -1 with
	 * err. */
	int (*batch)(void *ctx, const struct emu_batch *b, char *err, size_t errlen);
	void *ctx;
};

/* par_run's run with the streaming merge (-j; --mpi's ranks use par_run:
 * in->defer_window is not taken here). A breakdown view's changes are
 * sorted as they are merged; with a window, a worker without an event
 * after T0 writes its state at T0 at its end, and every worker's records at
 * time 0 are merged first, by row. 0 (every batch handed on, out filled but
 * rec/irec), 1 (out->why: the serial run is needed; batches may have been
 * handed on: the caller throws its outputs away), -1 (err: out of memory,
 * or ops's error). Every worker joined on every path; par_free in every
 * case. */
int par_stream(const struct par_in *in, const struct par_stream_ops *ops, struct par_out *out,
		char *err, size_t errlen);

/* Gives back out->rec[f] (f == EMU_MAX_VIEWS: out->irec) before par_free,
 * setting it to NULL. */
void par_free_rec(struct par_out *out, size_t f);

/* The run's summary (emu_summary_split): each thread's and CPU's figures
 * from the worker that emulated its loom; the workers must have been made
 * with emu_opts.no_summary 0. 0, or -1 out of memory (nothing printed). */
int par_summary(const struct par_out *out, FILE *f);

/* weft emu --mpi: the summary's figures of the rows of the looms of out's
 * workers (emu_summary_pack), for rank 0 to print the run's summary: 0, or
 * -1 out of memory. */
int par_summary_pack(const struct par_out *out, uint8_t **buf, size_t *len);

/* Merges k arrays of records, each sorted by time, handing emit each run
 * of records of one array in merged order: 0; 1 when two arrays have
 * records at one time (their serial order is not known; emit had those
 * before); -1 when emit failed (its non-zero return) or out of memory. */
int par_merge_each(const struct emu_prv_rec *const *src, const size_t *n, size_t k,
		int (*emit)(void *ctx, const struct emu_prv_rec *r, size_t nr), void *ctx);

/* par_merge_each for a window's records (--from): those at time 0 (each
 * row's state at T0; every row in one array) first, row by row, then the
 * others by time. */
int par_merge_each_at0(const struct emu_prv_rec *const *src, const size_t *n, size_t k,
		int (*emit)(void *ctx, const struct emu_prv_rec *r, size_t nr), void *ctx);

/* par_merge_each (at0: par_merge_each_at0) into *out (malloc'd, *nout
 * records); -1: out of memory. */
int par_merge(const struct emu_prv_rec *const *src, const size_t *n, size_t k, int at0,
		struct emu_prv_rec **out, size_t *nout);

/* The same for internal records (weft emu --mpi with the Perfetto output):
 * *out malloc'd even on 1 (*nout records before the tie); with at0 (a
 * window's --from), those at time 0 first in the serial run's order of the
 * state at T0 (the CPUs' row by row, then the threads' row by row: every
 * row is one array's); 0, 1 (two arrays with records at one time), or -1
 * out of memory. */
int par_merge_irec(const struct emu_rec *const *src, const size_t *n, size_t k, int at0,
		struct emu_rec **out, size_t *nout);

/* Shares looms among nw bins: each loom (weight[L], bins it may go to:
 * may[L * nw + b], NULL: any) heaviest first to the lightest bin it may go
 * to (the lowest of equals). bin[L] gets the bin; -1 when a loom may go to
 * none. 0, or -1 out of memory. */
/* The directory ("loom.X") of sys loom L, from its streams' paths: 0, or
 * -1 when it has none. */
int par_loom_dir(const struct emu_sys *sys, size_t L, char *buf, size_t len);

int par_partition(const uint64_t *weight, size_t nl, const uint8_t *may, size_t nw,
		size_t *bin);

#endif
