/* SPDX-License-Identifier: MIT */
/* describe.c - the text `weft dump` prints for an event: its model
 * description's template with the payload fields substituted. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "obs_format.h"

static size_t field_size(enum weft_field_type t)
{
	switch (t) {
	case WEFT_FIELD_I8:
	case WEFT_FIELD_U8:
	case WEFT_FIELD_STR:
		return 1;
	case WEFT_FIELD_I16:
	case WEFT_FIELD_U16:
		return 2;
	case WEFT_FIELD_I32:
	case WEFT_FIELD_U32:
		return 4;
	case WEFT_FIELD_I64:
	case WEFT_FIELD_U64:
		return 8;
	}
	return 0;
}

size_t weft_event_spec_min_size(const struct weft_event_spec *e)
{
	if (e->nfields == 0)
		return 0;
	const struct weft_field *f = &e->fields[e->nfields - 1];
	return f->offset + field_size(f->type);
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

/* Appends the value of field f of the payload. */
static void put_field(struct out *o, const struct weft_field *f, const uint8_t *payload,
		size_t size, int hex)
{
	const uint8_t *p = payload + f->offset;
	char tmp[32];
	int n = 0;
	uint64_t u = 0;
	int64_t i = 0;
	int sign = 0;
	switch (f->type) {
	case WEFT_FIELD_U8: u = p[0]; break;
	case WEFT_FIELD_I8: i = (int8_t) p[0]; sign = 1; break;
	case WEFT_FIELD_U16: { uint16_t v; memcpy(&v, p, 2); u = v; break; }
	case WEFT_FIELD_I16: { int16_t v; memcpy(&v, p, 2); i = v; sign = 1; break; }
	case WEFT_FIELD_U32: u = weft_load_u32(p); break;
	case WEFT_FIELD_I32: { int32_t v; memcpy(&v, p, 4); i = v; sign = 1; break; }
	case WEFT_FIELD_U64: u = weft_load_u64(p); break;
	case WEFT_FIELD_I64: { int64_t v; memcpy(&v, p, 8); i = v; sign = 1; break; }
	case WEFT_FIELD_STR: {
		size_t max = size - f->offset;
		const void *nul = memchr(p, 0, max);
		size_t len = nul ? (size_t) ((const uint8_t *) nul - p) : max;
		put(o, (const char *) p, len);
		return;
	}
	}
	if (hex) {
		uint64_t x = sign ? (uint64_t) i : u;
		if (sign && f->type == WEFT_FIELD_I32)
			x = (uint32_t) i;
		else if (sign && f->type == WEFT_FIELD_I16)
			x = (uint16_t) i;
		else if (sign && f->type == WEFT_FIELD_I8)
			x = (uint8_t) i;
		n = snprintf(tmp, sizeof tmp, "0x%" PRIx64, x);
	} else if (sign) {
		n = snprintf(tmp, sizeof tmp, "%" PRId64, i);
	} else {
		n = snprintf(tmp, sizeof tmp, "%" PRIu64, u);
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
	if (!e->has_placeholders) { /* nothing to substitute */
		size_t n = strlen(s);
		if (n < buflen) {
			memcpy(buf, s, n + 1);
			return (long) n;
		}
		put(&o, s, n);
	} else {
		while (*s) {
			const char *pct = strchr(s, '%');
			if (pct == NULL) {
				put(&o, s, strlen(s));
				break;
			}
			put(&o, s, (size_t) (pct - s));
			if (pct[1] == '%') {
				put(&o, "%", 1);
				s = pct + 2;
				continue;
			}
			/* The loader checked the placeholders: %{name} or %x{name}. */
			int hex = pct[1] == 'x';
			const char *open = pct + 1 + hex;
			const char *close = strchr(open, '}');
			if (*open != '{' || close == NULL) {
				put(&o, pct, 1);
				s = pct + 1;
				continue;
			}
			size_t nlen = (size_t) (close - open - 1), fi;
			for (fi = 0; fi < e->nfields; fi++)
				if (strlen(e->fields[fi].name) == nlen &&
						strncmp(e->fields[fi].name, open + 1, nlen) == 0)
					break;
			if (fi < e->nfields)
				put_field(&o, &e->fields[fi], payload, size, hex);
			else
				put(&o, pct, (size_t) (close - pct + 1));
			s = close + 1;
		}
	}
	if (buflen > 0)
		buf[o.len < buflen ? o.len : buflen - 1] = '\0';
	return (long) o.len;
}
