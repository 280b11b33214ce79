/* SPDX-License-Identifier: MIT */
/*
 * model.h - the models: one description per model (a YAML file, see
 * docs/models.md), loaded into the event table `weft dump` prints with and
 * the emulation description `weft emu` runs (model_emu.h). A registry lists
 * the models of a run: the built-in ones (their files are compiled into the
 * binary) and the ones its user adds with --model FILE.
 */
#ifndef WEFT_MODEL_MODEL_H
#define WEFT_MODEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "model_emu.h"

enum weft_field_type {
	WEFT_FIELD_I8,
	WEFT_FIELD_I16,
	WEFT_FIELD_I32,
	WEFT_FIELD_I64,
	WEFT_FIELD_U8,
	WEFT_FIELD_U16,
	WEFT_FIELD_U32,
	WEFT_FIELD_U64,
	WEFT_FIELD_STR, /* NUL-terminated string, to the end of the payload at most */
};

#define WEFT_MODEL_MAX_FIELDS 16

struct weft_field {
	const char *name;
	enum weft_field_type type;
	uint32_t offset; /* in the payload (a jumbo payload starts with its u32 size) */
};

struct weft_event_spec {
	/* Model, category, value; '*' in the value matches any byte. */
	char mcv[4];
	size_t nfields;
	struct weft_field fields[WEFT_MODEL_MAX_FIELDS];
	/* One line in our own words: "%{field}" is replaced by its value,
	 * "%x{field}" by its value in hex, "%%" by "%". */
	const char *desc;
	int has_placeholders; /* else desc is the whole text */
};

struct weft_model_spec {
	char code;           /* the model byte of the MCV */
	const char *name;    /* the name used in ovni.require */
	const char *version; /* provided */
	const char *title;
	const char *source;  /* the description file ("built-in nosv.yaml") */
	unsigned name_line, byte_line; /* where they are given, for messages */
	const struct weft_event_spec *events;
	size_t nevents;
	const struct emu_model_desc *emu;
};

/* ---- the registries ----
 * A registry lists models: the built-in ones (model-byte order), then those a
 * run adds from files (in the order given). The built-in descriptions are
 * parsed once (the first call that needs them, under pthread_once) and never
 * change after; a run owns its registry (weft_registry_new), which shares
 * them. A registry that is not changed any more may be read by any number
 * of threads; nothing else is kept between calls. */
struct weft_registry;

/* The built-in models; NULL with the reason in err if a built-in
 * description is broken. */
const struct weft_registry *weft_registry_builtin(char *err, size_t errlen);
/* A new registry of the built-in models (to add a run's model files to);
 * NULL with the reason. Freed with weft_registry_free(). */
struct weft_registry *weft_registry_new(char *err, size_t errlen);
void weft_registry_free(struct weft_registry *r);
/* Adds the model described by the file at path (after the others); refuses
 * a file that is malformed ("FILE:LINE: reason") or whose byte or name is
 * already taken. 0, or -1 with the reason. */
int weft_registry_add_file(struct weft_registry *r, const char *path, char *err,
		size_t errlen);

/* The models of r (NULL: the built-in ones): built-in first, in model-byte
 * order, then the added ones. */
size_t weft_model_count(const struct weft_registry *r);
const struct weft_model_spec *weft_model_at(const struct weft_registry *r, size_t i);
const struct weft_model_spec *weft_model_by_code(const struct weft_registry *r, char code);
const struct weft_model_spec *weft_model_by_name(const struct weft_registry *r,
		const char *name);

/* The table entry of r for an MCV, or NULL if no model describes it. */
const struct weft_event_spec *weft_model_event(const struct weft_registry *r,
		const char mcv[3]);

/* Bytes the fields need (a string field needs at least 1). */
size_t weft_event_spec_min_size(const struct weft_event_spec *e);

/* Writes the description of an event with the given payload into buf (NUL
 * terminated, truncated to buflen) and returns its length; returns -1 if the
 * payload is too short for the fields. A string field is escaped
 * (weft_escape). */
long weft_event_describe(const struct weft_event_spec *e, const uint8_t *payload,
		size_t size, char *buf, size_t buflen);

/* ---- escaping text that comes from a trace (describe.c) ----
 * Text taken from a trace (names, labels, payload strings) is printed with
 * its control characters escaped, so that it cannot forge lines or move the
 * terminal: bytes 0x00-0x1f and 0x7f become \n, \t, \r, \e (ESC) or \xHH
 * (two lower-case hex digits); the C1 controls U+0080-U+009F become \xc2\xHH;
 * a byte that is not part of valid UTF-8 becomes \xHH. Valid UTF-8 otherwise,
 * and the backslash, are kept as they are. */

/* The length of the longest prefix of s[0..n) that needs no escaping. */
size_t weft_escape_clean(const char *s, size_t n);
/* Writes s[0..n) escaped into dst (NUL terminated, truncated to cap) and
 * returns the length of the whole escaped text (at most 4 * n). */
size_t weft_escape(const char *s, size_t n, char *dst, size_t cap);

/* ---- the loader (model_load.c) ---- */

/* Parses one description. name: the file name used in messages. The result
 * is one allocation tree, freed with weft_model_free(). */
struct weft_model_spec *weft_model_parse(const char *text, size_t len, const char *name,
		char *err, size_t errlen);
void weft_model_free(struct weft_model_spec *m);

/* The Paraver types a model writes, in the views of every output: one
 * entry per channel with a type, per family (a type per member: BASE +
 * the mark type, 0..WEFT_MODEL_MARK_TYPES-1, or BASE + the counter's index,
 * 0..WEFT_MODEL_COUNTERS-1) and for the breakdown view, in the order the
 * file gives them. No two overlap (the loader refuses that). */
#define WEFT_MODEL_MARK_TYPES 100 /* ovni.mark types 0..99 (src/trace/meta_load.c) */
#define WEFT_MODEL_COUNTERS 100   /* counter indexes 0..99 (src/emu/families.c) */
struct weft_model_prv {
	int32_t lo, hi;   /* the types lo..hi; lo > hi: none (a family of mark types
	                     without prv) */
	unsigned line;    /* where the type is given */
	const char *what; /* "channel 'phase'", "the counters (types 200 to 299, one
	                     per counter)", "the breakdown view" */
	int marks;        /* the family of mark types (one in all models) */
};
const struct weft_model_prv *weft_model_prv_types(const struct weft_model_spec *m, size_t *n);

/* ---- collisions between models (model_collide.c) ---- */

/* Refuses model m when what it owns is taken by one of the models
 * others[0..n) or by the built-in channels of every trace (thread state,
 * CPU running thread and count, lost events): its byte, its name, a
 * Paraver type of any view, the family of mark types. The message is
 * "FILE:LINE: what" at the line of m that is refused, naming the owner
 * (a model, its file and line, or the built-in channel). 0 or -1. */
int weft_model_collide(const struct weft_model_spec *m, const struct weft_model_spec *const *others,
		size_t n, char *err, size_t errlen);

#endif
