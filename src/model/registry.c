/* SPDX-License-Identifier: MIT */
/* registry.c - the list of known models and payload formatting. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "model_tables.h"
#include "obs_format.h"

/* Models without an event table yet: known by name and byte only, so that
 * ovni.require can be matched against the model byte of events. */
static const struct weft_model_spec weft_model_nanos6 = { '6', "nanos6", NULL, 0 };
static const struct weft_model_spec weft_model_nosv = { 'V', "nosv", NULL, 0 };
static const struct weft_model_spec weft_model_nodes = { 'D', "nodes", NULL, 0 };
static const struct weft_model_spec weft_model_tampi = { 'T', "tampi", NULL, 0 };
static const struct weft_model_spec weft_model_mpi = { 'M', "mpi", NULL, 0 };
static const struct weft_model_spec weft_model_kernel = { 'K', "kernel", NULL, 0 };
static const struct weft_model_spec weft_model_openmp = { 'P', "openmp", NULL, 0 };

/* When a model gets a table, replace its line here by its table's symbol. */
static const struct weft_model_spec *const models[] = {
	&weft_model_ovni,
	&weft_model_nanos6,
	&weft_model_nosv,
	&weft_model_nodes,
	&weft_model_tampi,
	&weft_model_mpi,
	&weft_model_kernel,
	&weft_model_openmp,
};

size_t weft_model_count(void)
{
	return sizeof models / sizeof models[0];
}

const struct weft_model_spec *weft_model_at(size_t i)
{
	return i < weft_model_count() ? models[i] : NULL;
}

const struct weft_model_spec *weft_model_by_code(char code)
{
	for (size_t i = 0; i < weft_model_count(); i++)
		if (models[i]->code == code)
			return models[i];
	return NULL;
}

const struct weft_model_spec *weft_model_by_name(const char *name)
{
	for (size_t i = 0; i < weft_model_count(); i++)
		if (strcmp(models[i]->name, name) == 0)
			return models[i];
	return NULL;
}

const struct weft_event_spec *weft_model_event(const char mcv[3])
{
	const struct weft_model_spec *m = weft_model_by_code(mcv[0]);
	if (m == NULL)
		return NULL;
	for (size_t i = 0; i < m->nevents; i++) {
		const struct weft_event_spec *e = &m->events[i];
		if ((e->mcv[1] == '*' || e->mcv[1] == mcv[1])
				&& (e->mcv[2] == '*' || e->mcv[2] == mcv[2]))
			return e;
	}
	return NULL;
}

static size_t field_size(enum weft_field_type t)
{
	switch (t) {
	case WEFT_FIELD_I32:
	case WEFT_FIELD_U32:
		return 4;
	case WEFT_FIELD_I64:
	case WEFT_FIELD_U64:
		return 8;
	case WEFT_FIELD_STR:
		return 1;
	}
	return 0;
}

size_t weft_event_spec_min_size(const struct weft_event_spec *e)
{
	size_t n = 0;
	for (size_t i = 0; i < e->nfields; i++)
		n += field_size(e->fields[i].type);
	return n;
}

struct out {
	char *buf;
	size_t cap;
	size_t len;
};

static void put(struct out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (o->len + 1 < o->cap)
			o->buf[o->len] = s[i];
		o->len++;
	}
}

/* Appends the value of field fi (at byte offset off of payload). */
static void put_field(struct out *o, const struct weft_event_spec *e, size_t fi,
		const uint8_t *payload, size_t size, int hex)
{
	size_t off = 0;
	for (size_t i = 0; i < fi; i++)
		off += field_size(e->fields[i].type);
	char tmp[32];
	int n = 0;
	const uint8_t *p = payload + off;
	switch (e->fields[fi].type) {
	case WEFT_FIELD_I32: {
		int32_t v;
		memcpy(&v, p, sizeof v);
		n = hex ? snprintf(tmp, sizeof tmp, "0x%" PRIx32, (uint32_t) v)
			: snprintf(tmp, sizeof tmp, "%" PRId32, v);
		break;
	}
	case WEFT_FIELD_U32: {
		uint32_t v = weft_load_u32(p);
		n = snprintf(tmp, sizeof tmp, hex ? "0x%" PRIx32 : "%" PRIu32, v);
		break;
	}
	case WEFT_FIELD_I64: {
		int64_t v;
		memcpy(&v, p, sizeof v);
		n = hex ? snprintf(tmp, sizeof tmp, "0x%" PRIx64, (uint64_t) v)
			: snprintf(tmp, sizeof tmp, "%" PRId64, v);
		break;
	}
	case WEFT_FIELD_U64: {
		uint64_t v = weft_load_u64(p);
		n = snprintf(tmp, sizeof tmp, hex ? "0x%" PRIx64 : "%" PRIu64, v);
		break;
	}
	case WEFT_FIELD_STR: {
		size_t max = size - off;
		const void *nul = memchr(p, 0, max);
		size_t len = nul ? (size_t) ((const uint8_t *) nul - p) : max;
		put(o, (const char *) p, len);
		return;
	}
	}
	if (n > 0)
		put(o, tmp, (size_t) n);
}

long weft_event_describe(const struct weft_event_spec *e, const uint8_t *payload,
		size_t size, char *buf, size_t buflen)
{
	if (size < weft_event_spec_min_size(e))
		return -1;
	struct out o = { buf, buflen, 0 };
	const char *s = e->desc;
	if (e->nfields == 0) { /* nothing to substitute */
		size_t n = strlen(s);
		if (n < buflen) {
			memcpy(buf, s, n + 1);
			return (long) n;
		}
	}
	while (*s) {
		const char *open = strchr(s, '{');
		if (open == NULL) {
			put(&o, s, strlen(s));
			break;
		}
		put(&o, s, (size_t) (open - s));
		const char *close = strchr(open, '}');
		if (close == NULL) {
			put(&o, open, strlen(open));
			break;
		}
		size_t nlen = (size_t) (close - open - 1);
		int hex = 0;
		if (nlen > 2 && open[nlen - 1] == ':' && open[nlen] == 'x') {
			hex = 1;
			nlen -= 2;
		}
		size_t fi;
		for (fi = 0; fi < e->nfields; fi++)
			if (strlen(e->fields[fi].name) == nlen
					&& strncmp(e->fields[fi].name, open + 1, nlen) == 0)
				break;
		if (fi < e->nfields)
			put_field(&o, e, fi, payload, size, hex);
		else
			put(&o, open, (size_t) (close - open + 1));
		s = close + 1;
	}
	if (buflen > 0)
		buf[o.len < buflen ? o.len : buflen - 1] = '\0';
	return (long) o.len;
}
