/* SPDX-License-Identifier: MIT */
/*
 * model.h - the event tables of the trace models, for decoding payloads.
 *
 * Each model (ovni, and later nosv, nanos6, ...) describes its events in one
 * table: the MCV, the payload fields in order (each at the next offset, host
 * endian, as libovni writes them) and a description template where "{name}"
 * is replaced by the value of the field called name ("{name:x}" prints an
 * integer in hex). A model is added by writing its table in a new file and
 * listing it in registry.c; the reader does not change.
 */
#ifndef WEFT_MODEL_MODEL_H
#define WEFT_MODEL_MODEL_H

#include <stddef.h>
#include <stdint.h>

enum weft_field_type {
	WEFT_FIELD_I32,
	WEFT_FIELD_I64,
	WEFT_FIELD_U32,
	WEFT_FIELD_U64,
	WEFT_FIELD_STR, /* NUL-terminated string, to the end of the payload at most */
};

#define WEFT_MODEL_MAX_FIELDS 6

struct weft_field {
	const char *name;
	enum weft_field_type type;
};

struct weft_event_spec {
	/* Model, category, value; '*' in category or value matches any byte. */
	char mcv[4];
	size_t nfields;
	struct weft_field fields[WEFT_MODEL_MAX_FIELDS];
	/* One line in our own words; "{field}" is replaced by its value. */
	const char *desc;
};

struct weft_model_spec {
	char code;        /* the model byte of the MCV */
	const char *name; /* the name used in ovni.require */
	const struct weft_event_spec *events; /* may be NULL: no table yet */
	size_t nevents;
};

/* All known models (with or without an event table), in no special order. */
size_t weft_model_count(void);
const struct weft_model_spec *weft_model_at(size_t i);

const struct weft_model_spec *weft_model_by_code(char code);
const struct weft_model_spec *weft_model_by_name(const char *name);

/* The table entry for an MCV, or NULL if no model describes it. */
const struct weft_event_spec *weft_model_event(const char mcv[3]);

/* Bytes the fields need (a string field needs at least 1). */
size_t weft_event_spec_min_size(const struct weft_event_spec *e);

/* Writes the description of an event with the given payload into buf (NUL
 * terminated, truncated to buflen) and returns its length; returns -1 if the
 * payload is too short for the fields. */
long weft_event_describe(const struct weft_event_spec *e, const uint8_t *payload,
		size_t size, char *buf, size_t buflen);

#endif
