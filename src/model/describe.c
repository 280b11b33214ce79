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

/* ---- escaping (model.h) ---- */

static int cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/* The length of the character at p (at most n bytes) when it is printed as
 * it is: a printable ASCII byte or a valid UTF-8 sequence other than a C1
 * control; 0 when its first byte must be escaped. */
static size_t clean_char(const unsigned char *p, size_t n)
{
	unsigned char b = p[0];
	if (b < 0x80)
		return b >= 0x20 && b != 0x7f;
	if (b >= 0xc2 && b <= 0xdf) {
		if (n < 2 || !cont(p[1]) || (b == 0xc2 && p[1] < 0xa0))
			return 0;
		return 2;
	}
	if (b >= 0xe0 && b <= 0xef) {
		unsigned char lo = b == 0xe0 ? 0xa0 : 0x80, hi = b == 0xed ? 0x9f : 0xbf;
		if (n < 3 || p[1] < lo || p[1] > hi || !cont(p[2]))
			return 0;
		return 3;
	}
	if (b >= 0xf0 && b <= 0xf4) {
		unsigned char lo = b == 0xf0 ? 0x90 : 0x80, hi = b == 0xf4 ? 0x8f : 0xbf;
		if (n < 4 || p[1] < lo || p[1] > hi || !cont(p[2]) || !cont(p[3]))
			return 0;
		return 4;
	}
	return 0;
}

size_t weft_escape_clean(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *) s;
	size_t i = 0;
	while (i < n) {
		if (p[i] >= 0x20 && p[i] < 0x7f) { /* the common case */
			i++;
			continue;
		}
		size_t k = clean_char(p + i, n - i);
		if (k == 0)
			break;
		i += k;
	}
	return i;
}

/* Appends s[0..n) escaped. */
static void put_escaped(struct out *o, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	while (n > 0) {
		size_t k = weft_escape_clean(s, n);
		put(o, s, k);
		s += k;
		n -= k;
		if (n == 0)
			break;
		unsigned char b = (unsigned char) *s;
		char e[4] = { '\\', 0, 0, 0 };
		size_t len = 2;
		switch (b) {
		case '\n': e[1] = 'n'; break;
		case '\t': e[1] = 't'; break;
		case '\r': e[1] = 'r'; break;
		case 0x1b: e[1] = 'e'; break;
		default:
			e[1] = 'x';
			e[2] = hex[b >> 4];
			e[3] = hex[b & 15];
			len = 4;
		}
		put(o, e, len);
		s++;
		n--;
	}
}

size_t weft_escape(const char *s, size_t n, char *dst, size_t cap)
{
	struct out o = { dst, cap, 0 };
	put_escaped(&o, s, n);
	if (cap > 0)
		dst[o.len < cap ? o.len : cap - 1] = '\0';
	return o.len;
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
		put_escaped(o, (const char *) p, len);
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
