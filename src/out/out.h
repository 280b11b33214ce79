/* SPDX-License-Identifier: MIT */
/*
 * out.h - the output formats of the emulator. Each format is an emu_sink
 * (records of every accepted event) plus an open and a close step; one file
 * per format: Paraver (paraver_prv.c, paraver_pcf.c, paraver_row.c) and
 * Perfetto (perfetto.c).
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
	int (*records)(void *self, const struct emu_batch *b, char *err, size_t errlen);
	/* Completes and closes the files; duration = dclock of the last event
	 * that reached the model. Frees the output, also on failure. */
	int (*close)(struct out *o, int64_t duration, char *err, size_t errlen);
};

struct out {
	const struct out_ops *ops;
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

#endif /* WEFT_OUT_OUT_H */
