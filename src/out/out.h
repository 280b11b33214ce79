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

#include <stddef.h>
#include <stdint.h>

#include "emu.h"

struct out;

struct out_ops {
	const char *name;
	int internal; /* wants the records other than EMU_REC_PRV */
	/* 1: takes the lost records (emu_batch.lost) as they are; 0: gets
	 * them as the ovni.lost records of the thread and CPU views, derived
	 * by out.c (value 1 on the thread's row and on its CPU's while a
	 * thread is lost there, 0 at the end), the records of each view in
	 * the order the engine made them. */
	int lost;
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
};

struct out_lostx; /* out.c: the views with the lost records derived */

struct out {
	const struct out_ops *ops;
	struct out_lostx *lostx; /* NULL until needed (an output calloc's it) */
};

/* thread.{prv,pcf,row} and cpu.{prv,pcf,row} in dir. */
struct out *out_paraver_open(const char *dir, const struct emu *emu, char *err, size_t errlen);
/* perfetto.pftrace (protobuf TrackEvent) in dir. */
struct out *out_perfetto_open(const char *dir, const struct emu *emu, char *err, size_t errlen);
/* timeline.db (SQLite: system, channels, intervals) in dir (sqlite.c). */
struct out *out_sqlite_open(const char *dir, const struct emu *emu, char *err, size_t errlen);
/* A "sqlite" output's connection (a sqlite3 *), inside its one open
 * transaction (committed by out_close); NULL for another output. */
void *out_sqlite_db(struct out *o);

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

#endif /* WEFT_OUT_OUT_H */
