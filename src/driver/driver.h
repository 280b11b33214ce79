/* SPDX-License-Identifier: MIT */
/*
 * driver.h - one call runs an emulation: open the trace, enable the models
 * it requires, build the system, replay every event through the engine
 * into the chosen output formats, and end the run. Used by `weft emu`, and
 * the entry point for later callers (bindings, a per-rank driver).
 */
#ifndef WEFT_DRIVER_H
#define WEFT_DRIVER_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct emu;
struct out;
struct weft_registry;

/* Declared with WEFT_OPTS(weft_emulate_opts, o, ...) (weft/weft.h): sz is
 * checked as the reader's option structs' (docs/reader.md, "Options that
 * grow"). */
struct weft_emulate_opts {
	size_t sz; /* sizeof(struct weft_emulate_opts) of the caller */
	const char *path;   /* the trace */
	const char *outdir; /* NULL: path */
	/* The outputs, NULL-terminated: each a format of the registry (out.h:
	 * out_format_at) and its parameters, "FORMAT" or
	 * "FORMAT:KEY=VALUE,..." (out_params_parse; an unknown format or
	 * parameter, or a bad value, fails the run before anything is
	 * written). */
	const char *const *formats;
	int lint;           /* weft's own extra checks */
	int breakdown;      /* -b: the breakdown views */
	int all_models;     /* -a: every model enabled */
	/* The models of the run (src/model/model.h: the built-in ones and the
	 * user's model files, --model); NULL: the built-in ones. Only read:
	 * runs in several threads at once may share one. */
	const struct weft_registry *models;
	/* Warnings and information lines (one sentence each); NULL: dropped. */
	void (*warn)(void *ctx, const char *msg);
	void (*info)(void *ctx, const char *msg);
	void *ctx;
	/* Called about once a second (progress_every) on long runs (NULL:
	 * none). */
	void (*progress)(void *ctx, uint64_t events, double seconds);
	/* Where the summary goes (NULL: none). */
	FILE *summary;
	/* 0: a stream cut short (a run killed mid-write) is refused, naming it;
	 * 1 (--salvage): every stream is emulated up to its last whole event,
	 * threads without ovni.finished are accepted, and each thread cut short
	 * is closed at its last event without the models' end checks, and
	 * named in the summary. */
	int salvage;
	/* --from/--to: a time window (emu_set_window in src/emu/emu.h): the
	 * timelines hold only [T0, T1], starting with the state at T0; the
	 * run stops at the first event after T1 (the models' end checks are
	 * then not made). A bound is a clock (the loom offsets applied) or,
	 * when *_rel, ns after the trace's first event. from_arg, to_arg: the
	 * options as given, for messages. */
	int has_from, has_to, from_rel, to_rel;
	int64_t from, to;
	const char *from_arg, *to_arg;
	/* Hooks of a caller (NULL: none), given hook_ctx. open_output: an
	 * output of the caller's own (src/out/out.h), opened after those of
	 * formats and closed by the driver as they are (python/_weft.c keeps
	 * the records in memory). phase: an output's long step after the
	 * events (the SQLite output's index builds) names itself, given ctx,
	 * and calls again with the same text while it runs. */
	struct out *(*open_output)(void *hook_ctx, const struct emu *emu, char *err,
			size_t errlen);
	void (*phase)(void *ctx, const char *what);
	void *hook_ctx;
	/* Non-NULL: the run stops (fails, err "interrupted") once *stop is
	 * non-zero, read before each batch of events and before the outputs
	 * are committed (a signal handler of the caller sets it). */
	const volatile sig_atomic_t *stop;
	/* --partial: when the models refuse an event, the outputs are still
	 * completed and committed (the records up to that event, as the
	 * reference writes them); the run still fails. */
	int keep_partial;
	/* Seconds between two progress calls (0: 1 s; the CLI's
	 * WEFT_PROGRESS_SECONDS). */
	double progress_every;
	/* -j: the looms emulated by this many workers at once, their records
	 * merged (docs/emu.md, PARALLEL); 0 or 1: the serial run. Used only
	 * for the outputs and options the workers can make (the Paraver and
	 * Perfetto outputs, the summary, -b, a window, a caller's output that
	 * says so: open_output_merged), on a trace of several looms; any other
	 * run, or one whose parallel result could differ from the serial one,
	 * is serial. */
	int jobs;
	/* -j with open_output: 1 when the caller's output is a function of
	 * the records in time order, not of where the batches are cut (the
	 * merged records reach it in batches cut by time: docs/emu.md,
	 * PARALLEL), so that the workers may make it; 0: the run is serial
	 * ("an output of the caller"). open_output_internal: the internal
	 * records that output wants (its out_ops.internal, an EMU_SINK_INT_*
	 * of emu.h), which the workers keep for it; a run whose output asks
	 * for more than it said fails. */
	int open_output_merged;
	int open_output_internal;
};

/* The output formats (src/out's registry) and their parameters, for a
 * caller's help and checks: weft_emulate_opts.formats names them. */
struct weft_output_info {
	const char *name; /* "paraver" */
	const char *what; /* what it writes, one line */
	size_t nparams;
};
struct weft_output_param {
	const char *key;  /* "layer" */
	const char *type; /* "yes|no", "NAME"; NULL: one of choices */
	const char *const *choices; /* NULL-terminated, or NULL */
	const char *def;  /* the default */
	const char *help; /* one line */
};
size_t weft_output_count(void);
/* Format i (0 <= i < weft_output_count()): 0, or -1 past the end. */
int weft_output_at(size_t i, struct weft_output_info *info);
/* Parameter k of format i: 0, or -1 past the end. */
int weft_output_param(size_t i, size_t k, struct weft_output_param *param);
/* 0 if spec ("FORMAT" or "FORMAT:KEY=VALUE,...") names a format and
 * parameters it takes with good values; else -1 with the reason in err. */
int weft_output_check(const char *spec, char *err, size_t errlen);

/* 0 on success; -1 with the reason in err. Every output file is written
 * aside and renamed over its final name only when the whole run succeeded
 * (src/out/out.h): a failed run leaves the files of an earlier run as they
 * were and no temporary behind. Reentrant: runs in several threads at once
 * are independent (each its own trace, engine and outputs; o->models is
 * only read). */
int weft_emulate(const struct weft_emulate_opts *o, char *err, size_t errlen);

/*
 * weft emu --mpi (docs/emu.md, MPI): one emulation made by the ranks of a
 * job, each emulating its share of the looms; rank 0 merges their records
 * and writes the outputs. The collectives are the caller's (src/cli/
 * cli_mpi.c implements them with MPI), so the driver links no MPI. Each
 * takes this rank's len bytes at buf and returns 0 with *all (malloc'd, the
 * caller frees it) holding every rank's bytes in rank order, lens[r] their
 * lengths; gather0 gives them to rank 0 only (*all NULL elsewhere). A
 * failing collective ends the job (MPI's default), so they have no error.
 */
struct weft_ranks {
	int rank, nranks;
	/* --local: each rank emulates the looms it finds under its own
	 * o->path (its node's directory); the ranks share the streams'
	 * metadata and first events. 0: every rank reads the whole trace at
	 * o->path (a shared file system). */
	int local;
	void *ctx;
	void (*allgather)(void *ctx, const void *buf, size_t len, uint8_t **all, size_t *lens);
	void (*gather0)(void *ctx, const void *buf, size_t len, uint8_t **all, size_t *lens);
};

/* Collective: every rank calls it with the same options (o->path: its own
 * directory with local). Returns the job's exit status on every rank: 0, or
 * that of the lowest rank that failed (1, or 128 + the signal when *o->stop
 * was set), with its message in err and its number in *who. Outputs are
 * written by rank 0 only, aside and renamed when complete, as
 * weft_emulate's; a run the ranks cannot make as the serial run would is
 * made by rank 0 alone (shared trace) or refused (local). */
int weft_emulate_ranks(const struct weft_emulate_opts *o, const struct weft_ranks *rk,
		char *err, size_t errlen, int *who);

/* ---- exporting a trace to another format (weft export) ---- */

/* The formats weft export writes: "ctf" (CTF 1.8, src/out/ctf.h) and
 * "otf2" (OTF2, src/out/otf2.h, when this build found the OTF2 library). */
size_t weft_export_format_count(void);
/* 1 if format i was built (OTF2 needs the library), else 0. */
int weft_export_format_built(size_t i);
/* What a build without OTF2 says of `weft export otf2`. */
#define WEFT_EXPORT_NO_OTF2 "this weft was built without the OTF2 library: install it " \
	"(Debian, Ubuntu: apt-get install libotf2-trace-dev; or " \
	"scripts/install-deps.sh --ci) and build weft again"

/* Format i: its name, and what it writes (one line) in *what; NULL past
 * the end. */
const char *weft_export_format_at(size_t i, const char **what);

/* Declared with WEFT_OPTS(weft_export_opts, o, ...). */
struct weft_export_opts {
	size_t sz;          /* sizeof(struct weft_export_opts) of the caller */
	const char *format; /* one of weft_export_format_at */
	const char *path;   /* the trace */
	const char *outdir; /* the exported trace's directory */
	/* 1: an existing non-empty outdir is replaced when it is an export of
	 * weft's in the same format (else refused whatever force says) */
	int force;
	int all_models;     /* every model's events in the metadata */
	const struct weft_registry *models; /* NULL: the built-in ones */
	int follow_links;   /* weft_open_opts.follow_links */
	/* Warnings (one sentence each; NULL: dropped). */
	void (*warn)(void *ctx, const char *msg);
	void *ctx;
	void (*progress)(void *ctx, uint64_t events, double seconds);
	/* Non-NULL: the export stops (fails, err "interrupted") once *stop is
	 * non-zero; nothing is left behind. */
	const volatile sig_atomic_t *stop;
	size_t packet_size; /* CTF: bytes per packet (0: 64 KiB) */
};

struct weft_export_stats {
	/* ctf: data streams, events, raw, classes, discarded, packets, bytes;
	 * otf2: locations (streams), events (enters + leaves + samples),
	 * regions (classes), metrics */
	uint64_t streams, events, raw, classes, discarded, packets, bytes;
	uint64_t metrics, enters, leaves, samples;
};

/* Opens the trace (metadata problems are warnings, as weft dump; the
 * unordered regions sorted on read; a clock going back outside them, or a
 * stream cut short, an error) and writes it in o->format into o->outdir,
 * written aside and renamed. 0 with *st (may be NULL), or -1 with err. */
int weft_export(const struct weft_export_opts *o, struct weft_export_stats *st, char *err,
		size_t errlen);

#endif
