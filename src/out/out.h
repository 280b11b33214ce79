/* SPDX-License-Identifier: MIT */
/*
 * out.h - the output formats of the emulator. Each format is an emu_sink
 * (records of every accepted event) plus an open, a close, a commit and a
 * discard step; one file per format: Paraver (paraver_prv.c, paraver_pcf.c,
 * paraver_row.c), Perfetto (perfetto.c) and SQLite (sqlite.c).
 *
 * Every file an output writes is a temporary beside its final name
 * (out_file.h), renamed over it at the commit: a run that fails, in any
 * step, calls out_discard and leaves the files of an earlier run as they
 * were; one that succeeds closes every output, then commits every one.
 */
#ifndef WEFT_OUT_OUT_H
#define WEFT_OUT_OUT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "emu.h"

struct out;
struct weft_event;
struct weft_registry;
struct weft_trace;

/* What a run reads, for an output that writes the events themselves (the
 * SQLite output's stream, event and trace tables): given once, after the
 * open and before any record. */
struct out_input {
	const char *path;              /* the trace, as given */
	const struct weft_trace *t;    /* as opened: lives until the commit or discard */
	const struct weft_registry *models; /* the run's models (NULL: the built-in ones) */
	const volatile sig_atomic_t *stop; /* non-zero: a long step stops (may be NULL) */
	/* A long step after the events (an index build) names itself, then
	 * calls again with the same text while it runs (NULL: none). */
	void (*phase)(void *ctx, const char *what);
	void *ctx;
};

struct out_ops {
	const char *name;
	int internal; /* wants the records other than EMU_REC_PRV */
	int (*records)(void *self, const struct emu_batch *b, char *err, size_t errlen);
	/* Completes the files (still temporaries) and checks that their final
	 * names may be replaced; duration = dclock of the last event that
	 * reached the model. 0, or -1 with the reason in err. The output stays
	 * until commit or discard (an output without them is the caller's to
	 * free). */
	int (*close)(struct out *o, int64_t duration, char *err, size_t errlen);
	/* After a close that succeeded: renames the files over their final
	 * names and frees the output. 0, or -1 with err (the temporaries not
	 * renamed are removed). NULL: nothing to do. */
	int (*commit)(struct out *o, char *err, size_t errlen);
	/* Removes every temporary (closed or not) and frees the output; after
	 * the open, the records or the close. NULL: nothing to do. */
	void (*discard)(struct out *o);
	/* Optional (NULL: not wanted): the run's input (out_input), once
	 * before the first event; then every batch of events the run reads,
	 * in the order the engine is fed them, after the engine took them.
	 * 0, or -1 with the reason in err (the run fails). */
	int (*input)(struct out *o, const struct out_input *in, char *err, size_t errlen);
	int (*events)(struct out *o, const struct weft_event *evs, size_t n, char *err,
			size_t errlen);
};

struct out {
	const struct out_ops *ops;
};

/* thread.{prv,pcf,row} and cpu.{prv,pcf,row} in dir. */
struct out *out_paraver_open(const char *dir, const struct emu *emu, char *err, size_t errlen);
/* cfg/: the Paraver view files, one per view of each channel
 * (paraver_cfg.c), in dir. */
struct out *out_paraver_cfg_open(const char *dir, const struct emu *emu, char *err,
		size_t errlen);
/* perfetto.pftrace (protobuf TrackEvent) in dir. */
struct out *out_perfetto_open(const char *dir, const struct emu *emu, char *err, size_t errlen);
/* timeline.db (SQLite: system, channels, intervals, streams and events) in
 * dir (sqlite.c, sqlite_events.c). */
struct out *out_sqlite_open(const char *dir, const struct emu *emu, char *err, size_t errlen);

/* The output registry: every format by name. */
struct out_format {
	const char *name;
	const char *what; /* for --help */
	struct out *(*open)(const char *dir, const struct emu *emu, char *err, size_t errlen);
};
size_t out_format_count(void);
const struct out_format *out_format_at(size_t i);
const struct out_format *out_format_by_name(const char *name);

/* The sink to give to emu_add_sink(). */
struct emu_sink out_sink(struct out *o);
int out_close(struct out *o, int64_t duration, char *err, size_t errlen);
int out_commit(struct out *o, char *err, size_t errlen);
void out_discard(struct out *o);
/* The ops input and events where the output has them; 0 otherwise. */
int out_input(struct out *o, const struct out_input *in, char *err, size_t errlen);
int out_events(struct out *o, const struct weft_event *evs, size_t n, char *err, size_t errlen);

#endif /* WEFT_OUT_OUT_H */
