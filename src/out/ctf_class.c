/* SPDX-License-Identifier: MIT */
/*
 * ctf_class.c - the event classes of `weft export ctf` and each event's
 * record. One class per event of a model's table (src/model: its MCV, its
 * fields named and typed as the description gives them), listed from the
 * start for the models the trace enables (ovni, those its streams
 * require, every one with -a), and when first met for the others the
 * run's registry knows. The fields are the payload as it is (the file's
 * byte order, which the metadata declares): an event whose payload the
 * table's fields fit exactly is written as its bytes after the record
 * header; a table whose MCV has a '*' gets the value byte as its first
 * field; a jumbo event's fields are read after its u32 size, and the
 * bytes after the fields follow as a sequence (its rest). Every other
 * event (an MCV no table knows, a payload of another size, a string not
 * ending the payload, a jumbo event where the table says normal or the
 * other way) goes to one of two raw classes, its MCV bytes and its
 * payload as a sequence, so that no event is left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctf_internal.h"

#define CACHE_SLOTS 4096 /* MCV -> class, direct-mapped */
#define NO_CLASS UINT32_MAX
#define MAX_CLASSES 65535u /* the header's id is a u16 */

struct cache_slot {
	uint32_t key; /* the MCV's bytes, | 1 << 24 when filled */
	uint32_t cls; /* the class index, or NO_CLASS */
};

struct ctf_classes {
	const struct weft_registry *reg;
	struct ctf_class *cls;
	size_t n, cap;
	size_t nmodels;
	uint32_t **by_spec; /* [model][event]: class index + 1, 0 before it is made */
	struct cache_slot cache[CACHE_SLOTS];
};

static size_t field_size(enum weft_field_type t)
{
	switch (t) {
	case WEFT_FIELD_I8: case WEFT_FIELD_U8: return 1;
	case WEFT_FIELD_I16: case WEFT_FIELD_U16: return 2;
	case WEFT_FIELD_I32: case WEFT_FIELD_U32: return 4;
	case WEFT_FIELD_I64: case WEFT_FIELD_U64: return 8;
	case WEFT_FIELD_STR: return 0;
	}
	return 0;
}

static int has_field(const struct weft_event_spec *s, const char *name)
{
	for (size_t i = 0; i < s->nfields; i++)
		if (strcmp(s->fields[i].name, name) == 0)
			return 1;
	return 0;
}

/* base, or base followed by '_'s: a name none of the model's fields has
 * (the rest's size field is the name + "_size": checked too). */
static void fresh_name(const struct weft_event_spec *s, const char *base, char *out, size_t n)
{
	snprintf(out, n, "%s", base);
	for (;;) {
		char sz[40];
		snprintf(sz, sizeof sz, "%s_size", out);
		if (!has_field(s, out) && !has_field(s, sz))
			return;
		size_t l = strlen(out);
		if (l + 2 >= n)
			return; /* 16 fields cannot take 20 names */
		out[l] = '_';
		out[l + 1] = '\0';
	}
}

/* Makes the class of event k of model mi; its index, or NO_CLASS with err. */
static uint32_t make_class(struct ctf_classes *c, size_t mi, size_t k, char *err, size_t errlen)
{
	if (c->by_spec[mi][k] != 0)
		return c->by_spec[mi][k] - 1;
	if (c->n >= MAX_CLASSES - CTF_CLASS_FIRST) {
		snprintf(err, errlen, "more than %u event classes", MAX_CLASSES);
		return NO_CLASS;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct ctf_class *p = realloc(c->cls, cap * sizeof *p);
		if (p == NULL) {
			snprintf(err, errlen, "out of memory");
			return NO_CLASS;
		}
		c->cls = p;
		c->cap = cap;
	}
	const struct weft_model_spec *m = weft_model_at(c->reg, mi);
	const struct weft_event_spec *s = &m->events[k];
	struct ctf_class *k2 = &c->cls[c->n];
	memset(k2, 0, sizeof *k2);
	k2->id = (uint32_t) (c->n + CTF_CLASS_FIRST);
	k2->model = m;
	k2->spec = s;
	k2->jumbo = m->emu != NULL && k < m->emu->nevents && m->emu->events[k].jumbo;
	k2->wildcard = s->mcv[2] == '*';
	uint32_t off = k2->jumbo ? 4 : 0;
	for (size_t i = 0; i < s->nfields; i++) {
		if (s->fields[i].type == WEFT_FIELD_STR)
			k2->has_str = 1;
		else
			off += (uint32_t) field_size(s->fields[i].type);
	}
	k2->fixed = off - (k2->jumbo ? 4 : 0);
	fresh_name(s, "mcv_value", k2->vname, sizeof k2->vname);
	fresh_name(s, "jumbo_rest", k2->rname, sizeof k2->rname);
	c->by_spec[mi][k] = (uint32_t) c->n + 1;
	return (uint32_t) c->n++;
}

/* Whether model m is enabled for t: ovni always, else required by a stream. */
static int enabled(const struct weft_model_spec *m, const struct weft_trace *t)
{
	if (strcmp(m->name, "ovni") == 0)
		return 1;
	for (size_t i = 0; i < weft_nstreams(t); i++) {
		const struct weft_stream *s = weft_stream_at(t, i);
		for (size_t r = 0; r < s->nreqs; r++)
			if (s->reqs[r].model != NULL && strcmp(s->reqs[r].model, m->name) == 0)
				return 1;
	}
	return 0;
}

struct ctf_classes *ctf_classes_new(const struct weft_registry *reg, const struct weft_trace *t,
		int all, char *err, size_t errlen)
{
	struct ctf_classes *c = calloc(1, sizeof *c);
	if (c == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->reg = reg != NULL ? reg : weft_registry_builtin(err, errlen);
	if (c->reg == NULL)
		goto fail;
	c->nmodels = weft_model_count(c->reg);
	c->by_spec = calloc(c->nmodels + 1, sizeof *c->by_spec);
	if (c->by_spec == NULL)
		goto oom;
	for (size_t mi = 0; mi < c->nmodels; mi++) {
		const struct weft_model_spec *m = weft_model_at(c->reg, mi);
		if ((c->by_spec[mi] = calloc(m->nevents + 1, sizeof **c->by_spec)) == NULL)
			goto oom;
	}
	for (size_t mi = 0; mi < c->nmodels; mi++) {
		const struct weft_model_spec *m = weft_model_at(c->reg, mi);
		if (!all && !enabled(m, t))
			continue;
		for (size_t k = 0; k < m->nevents; k++)
			if (make_class(c, mi, k, err, errlen) == NO_CLASS)
				goto fail;
	}
	return c;
oom:
	snprintf(err, errlen, "out of memory");
fail:
	ctf_classes_free(c);
	return NULL;
}

void ctf_classes_free(struct ctf_classes *c)
{
	if (c == NULL)
		return;
	for (size_t mi = 0; c->by_spec != NULL && mi < c->nmodels; mi++)
		free(c->by_spec[mi]);
	free(c->by_spec);
	free(c->cls);
	free(c);
}

size_t ctf_classes_count(const struct ctf_classes *c)
{
	return c->n;
}

const struct ctf_class *ctf_class_at(const struct ctf_classes *c, size_t i)
{
	return i < c->n ? &c->cls[i] : NULL;
}

/* The class of an MCV (NO_CLASS: no table has it), made when first met:
 * the table's entry of the exact value byte, else its '*' entry. */
static uint32_t lookup(struct ctf_classes *c, const char mcv[3], char *err, size_t errlen,
		int *fail)
{
	uint32_t key = (uint32_t) (uint8_t) mcv[0] << 16 | (uint32_t) (uint8_t) mcv[1] << 8 |
		(uint8_t) mcv[2];
	struct cache_slot *slot = &c->cache[(key ^ key >> 12) % CACHE_SLOTS];
	if (slot->key == (key | 1u << 24))
		return slot->cls;
	uint32_t cls = NO_CLASS;
	for (size_t mi = 0; mi < c->nmodels; mi++) {
		const struct weft_model_spec *m = weft_model_at(c->reg, mi);
		if (m->code != mcv[0])
			continue;
		size_t wild = SIZE_MAX, exact = SIZE_MAX;
		for (size_t k = 0; k < m->nevents && exact == SIZE_MAX; k++) {
			const char *em = m->events[k].mcv;
			if (em[1] != mcv[1])
				continue;
			if (em[2] == mcv[2])
				exact = k;
			else if (em[2] == '*' && wild == SIZE_MAX)
				wild = k;
		}
		size_t k = exact != SIZE_MAX ? exact : wild;
		if (k != SIZE_MAX && (cls = make_class(c, mi, k, err, errlen)) == NO_CLASS) {
			*fail = 1;
			return NO_CLASS;
		}
		break;
	}
	slot->key = key | 1u << 24;
	slot->cls = cls;
	return cls;
}

static uint32_t put_head(struct ctf_rec *r, uint32_t id, uint64_t ts)
{
	uint16_t id16 = (uint16_t) id;
	memcpy(r->head, &id16, 2);
	memcpy(r->head + 2, &ts, 8);
	return 10;
}

const struct ctf_class *ctf_encode(struct ctf_classes *c, const struct weft_event *e,
		uint64_t ts, struct ctf_rec *r, char *err, size_t errlen)
{
	static const struct ctf_class raw[2] = {
		{ .id = CTF_CLASS_RAW }, { .id = CTF_CLASS_RAW_JUMBO, .jumbo = 1 },
	};
	int fail = 0;
	uint32_t ci = lookup(c, e->mcv, err, errlen, &fail);
	if (fail)
		return NULL;
	r->nmid = r->ntail = 0;
	if (ci != NO_CLASS) {
		const struct ctf_class *k = &c->cls[ci];
		if (!k->jumbo && !e->jumbo) {
			uint32_t n = e->payload_size;
			int fits = !k->has_str ? n == k->fixed : n > k->fixed &&
				memchr(e->payload + k->fixed, 0, n - k->fixed) == e->payload + n - 1;
			if (fits) {
				r->nhead = put_head(r, k->id, ts);
				if (k->wildcard)
					r->head[r->nhead++] = (uint8_t) e->mcv[2];
				r->body = e->payload;
				r->nbody = n;
				return k;
			}
		} else if (k->jumbo && e->jumbo) {
			const uint8_t *d = e->jumbo_data;
			uint32_t n = e->jumbo_size, flen = k->fixed;
			int fits = n >= k->fixed;
			if (fits && k->has_str) {
				const uint8_t *z = n > k->fixed ? memchr(d + k->fixed, 0, n - k->fixed) :
					NULL;
				fits = z != NULL;
				if (z != NULL)
					flen = (uint32_t) (z - d) + 1;
			}
			if (fits) {
				r->nhead = put_head(r, k->id, ts);
				if (k->wildcard)
					r->head[r->nhead++] = (uint8_t) e->mcv[2];
				r->body = d;
				r->nbody = flen;
				uint32_t rest = n - flen;
				memcpy(r->mid, &rest, 4);
				r->nmid = 4;
				r->tail = d + flen;
				r->ntail = rest;
				return k;
			}
		}
	}
	/* raw: the MCV bytes, then the payload as in the file (a jumbo's
	 * starts with its u32 size: the sequence's length) */
	const struct ctf_class *k = &raw[e->jumbo ? 1 : 0];
	r->nhead = put_head(r, k->id, ts);
	memcpy(r->head + r->nhead, e->mcv, 3);
	r->nhead += 3;
	if (!e->jumbo)
		r->head[r->nhead++] = (uint8_t) e->payload_size;
	r->body = e->payload;
	r->nbody = e->payload_size;
	return k;
}
