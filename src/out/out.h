/* SPDX-License-Identifier: MIT */
/*
 * out.h - the output formats of the emulator, as sinks (docs/architecture.md,
 * "Outputs as sinks"). Each format is found by name in a registry that
 * declares its parameters (struct out_param: name, type, default, help);
 * its life is: open (the directory, the catalogue of the run's channels,
 * the parsed parameters) before the first record; the records of every
 * accepted event (an emu_sink, batch by batch); then close, and commit or
 * discard. One file per format: Paraver (paraver_prv.c, paraver_pcf.c,
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
	int internal; /* wants the records other than EMU_REC_PRV: an
	                 EMU_SINK_INT_* (emu.h), 0 none */
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
	/* Optional (NULL: not wanted): the run's input (out_input), once
	 * before the first event; then every batch of events the run reads,
	 * in the order the engine is fed them, after the engine took them.
	 * 0, or -1 with the reason in err (the run fails). */
	int (*input)(struct out *o, const struct out_input *in, char *err, size_t errlen);
	int (*events)(struct out *o, const struct weft_event *evs, size_t n, char *err,
			size_t errlen);
};

struct out_lostx; /* out.c: the views with the lost records derived */

struct out {
	const struct out_ops *ops;
	struct out_lostx *lostx; /* NULL until needed (an output calloc's it) */
};

/* ---- parameters ---- */

enum out_param_type {
	OUT_PARAM_BOOL, /* yes or no */
	OUT_PARAM_ENUM, /* one of choices */
	OUT_PARAM_NAME, /* a file name: not empty, no '/', not "." or "..", < 256 bytes */
};

/* A parameter of a format, given as `-f FORMAT:KEY=VALUE,...` (weft emu). */
struct out_param {
	const char *key;
	enum out_param_type type;
	const char *def;  /* the default value, as it would be written */
	const char *help; /* one line, for --help */
	const char *const *choices; /* OUT_PARAM_ENUM: NULL-terminated */
};

#define OUT_MAX_PARAMS 8
#define OUT_SPEC_MAX 1024

/* The values of a format's parameters: val[i] is that of params[i], its
 * default when not given (pointers into spec, or to the defaults). */
struct out_params {
	const struct out_format *format;
	const char *val[OUT_MAX_PARAMS];
	char spec[OUT_SPEC_MAX];
};

/* The parameter `key` of format f, or NULL. */
const struct out_param *out_param_find(const struct out_format *f, const char *key);
/* 0 if value is one param q takes; else -1 with the reason in err
 * ("parameter 'layer' of format 'perfetto' takes raw or shown, not 'x'"). */
int out_param_check(const struct out_format *f, const struct out_param *q, const char *value,
		char *err, size_t errlen);
/* Parses "KEY=VALUE,..." (NULL or "": every default) for format f into p:
 * 0, or -1 with the reason in err (an unknown key, a key without a value
 * or given twice, a bad value). */
int out_params_parse(const struct out_format *f, const char *spec, struct out_params *p,
		char *err, size_t errlen);
/* Every default of format f. */
void out_params_default(const struct out_format *f, struct out_params *p);
/* The value of a parameter of p's format (the key must be one of its). */
const char *out_params_get(const struct out_params *p, const char *key);
/* ... a boolean's: 1 for yes. */
int out_params_bool(const struct out_params *p, const char *key);

/* ---- the formats ---- */

/* thread.{prv,pcf,row} and cpu.{prv,pcf,row} in dir (aux=no: the .prv only). */
struct out *out_paraver_open(const char *dir, const struct emu *emu, const struct out_params *p,
		char *err, size_t errlen);
/* cfg/: the Paraver view files, one per view of each channel
 * (paraver_cfg.c), in dir; no parameters. */
struct out *out_paraver_cfg_open(const char *dir, const struct emu *emu,
		const struct out_params *p, char *err, size_t errlen);
/* perfetto.pftrace (protobuf TrackEvent) in dir; layer: the raw channels
 * (what models wrote) or the shown ones (the thread view's values). */
struct out *out_perfetto_open(const char *dir, const struct emu *emu, const struct out_params *p,
		char *err, size_t errlen);
/* <file> (timeline.db: SQLite, the system, channels, intervals, streams,
 * events and payload fields) in dir (sqlite.c, sqlite_events.c,
 * sqlite_payload.c). */
struct out *out_sqlite_open(const char *dir, const struct emu *emu, const struct out_params *p,
		char *err, size_t errlen);

/* The output registry: every format by name, with its parameters. open is
 * given the run's catalogue (emu: catalogue.h) before the first record, and
 * its parameters parsed (out_params_parse; NULL: every default). */
struct out_format {
	const char *name;
	const char *what; /* for --help */
	struct out *(*open)(const char *dir, const struct emu *emu, const struct out_params *p,
			char *err, size_t errlen);
	const struct out_param *params;
	size_t nparams;
};
size_t out_format_count(void);
const struct out_format *out_format_at(size_t i);
const struct out_format *out_format_by_name(const char *name);
/* Opens format f (p: its parameters, NULL for the defaults). */
struct out *out_open(const struct out_format *f, const char *dir, const struct emu *emu,
		const struct out_params *p, char *err, size_t errlen);

/* The colours (RGB) of values 0 to OUT_NCOLORS - 1 wherever weft draws
 * them: the .pcf's DEFAULT_SEMANTIC table and weft view's pictures
 * (palette.c). */
#define OUT_NCOLORS 23
extern const unsigned char out_colors[OUT_NCOLORS][3];

/* The sink to give to emu_add_sink(). */
struct emu_sink out_sink(struct out *o);
int out_close(struct out *o, int64_t duration, char *err, size_t errlen);
int out_commit(struct out *o, char *err, size_t errlen);
void out_discard(struct out *o);
/* The ops input and events where the output has them; 0 otherwise. */
int out_input(struct out *o, const struct out_input *in, char *err, size_t errlen);
int out_events(struct out *o, const struct weft_event *evs, size_t n, char *err, size_t errlen);

#endif /* WEFT_OUT_OUT_H */
