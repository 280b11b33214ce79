/* SPDX-License-Identifier: MIT */
/*
 * num_format.h - numbers as decimal and hex text, without printf: what the
 * text writers (the Paraver .prv writer, `weft dump`) print per event. The
 * decimal digits are made eight at a time: a value below 10^8 is split into
 * two halves of four digits, each half into two pairs and each pair into
 * two digits, every lane of one 64-bit word at once.
 *
 * The writers store whole words: each function says how many bytes past the
 * end of the text it may store, and the caller leaves that room.
 */
#ifndef WEFT_FORMAT_NUM_FORMAT_H
#define WEFT_FORMAT_NUM_FORMAT_H

#include <stdint.h>
#include <string.h>

#define WEFT_NUM_ASCII8 UINT64_C(0x3030303030303030)

/* The 8 decimal digits of v < 10^8 as byte values 0-9, the most significant
 * in the lowest byte (the first in memory on a little-endian machine): the
 * multiply by 10486 >> 20 divides a lane below 10^4 by 100, the multiply by
 * 103 >> 10 one below 100 by 10. */
static inline uint64_t weft_num_bcd8(uint32_t v)
{
	uint64_t x = (v / 10000) | (uint64_t) (v % 10000) << 32;
	uint64_t q = ((x * 10486) >> 20) & UINT64_C(0x0000007f0000007f);
	x = q | (x - 100 * q) << 16;
	q = ((x * 103) >> 10) & UINT64_C(0x000f000f000f000f);
	return q | (x - 10 * q) << 8;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Writes v < 10^8 in decimal at o, storing 8 bytes whatever its length;
 * returns the end of the text. */
static inline char *weft_num_u27(char *o, uint32_t v)
{
	uint64_t d = weft_num_bcd8(v);
	/* the leading zero digits are the low zero bytes (0 keeps one) */
	unsigned lz = d != 0 ? (unsigned) __builtin_ctzll(d) >> 3 : 7;
	d = (d + WEFT_NUM_ASCII8) >> (lz * 8);
	memcpy(o, &d, 8);
	return o + 8 - lz;
}

/* Writes exactly 8 digits of v < 10^8 (leading zeros kept). */
static inline char *weft_num_8(char *o, uint32_t v)
{
	uint64_t d = weft_num_bcd8(v) + WEFT_NUM_ASCII8;
	memcpy(o, &d, 8);
	return o + 8;
}
#else
static inline char *weft_num_8(char *o, uint32_t v)
{
	for (int i = 7; i >= 0; i--) {
		o[i] = (char) ('0' + v % 10);
		v /= 10;
	}
	return o + 8;
}

static inline char *weft_num_u27(char *o, uint32_t v)
{
	char t[8];
	weft_num_8(t, v);
	unsigned lz = 0;
	while (lz < 7 && t[lz] == '0')
		lz++;
	memcpy(o, t + lz, 8 - lz);
	return o + 8 - lz;
}
#endif

/* Writes v in decimal at o, storing up to 7 bytes past the end of the
 * text (at most 20 digits); returns the end. */
static inline char *weft_num_u64(char *o, uint64_t v)
{
	if (v < 100000000)
		return weft_num_u27(o, (uint32_t) v);
	uint64_t hi = v / 100000000;
	uint32_t lo = (uint32_t) (v % 100000000);
	if (hi < 100000000) {
		o = weft_num_u27(o, (uint32_t) hi);
	} else {
		o = weft_num_u27(o, (uint32_t) (hi / 100000000));
		o = weft_num_8(o, (uint32_t) (hi % 100000000));
	}
	return weft_num_8(o, lo);
}

/* The same for a signed value ("-" and its magnitude). */
static inline char *weft_num_i64(char *o, int64_t v)
{
	if (v < 0) {
		*o++ = '-';
		return weft_num_u64(o, (uint64_t) 0 - (uint64_t) v);
	}
	return weft_num_u64(o, (uint64_t) v);
}

/* The number of decimal digits of v (1 for 0). */
static inline unsigned weft_num_digits(uint64_t v)
{
	static const uint64_t pow10[20] = {
		UINT64_C(1), UINT64_C(10), UINT64_C(100), UINT64_C(1000), UINT64_C(10000),
		UINT64_C(100000), UINT64_C(1000000), UINT64_C(10000000), UINT64_C(100000000),
		UINT64_C(1000000000), UINT64_C(10000000000), UINT64_C(100000000000),
		UINT64_C(1000000000000), UINT64_C(10000000000000), UINT64_C(100000000000000),
		UINT64_C(1000000000000000), UINT64_C(10000000000000000),
		UINT64_C(100000000000000000), UINT64_C(1000000000000000000),
		UINT64_C(10000000000000000000),
	};
	v |= 1; /* the same digits, and a bit for the count below */
	unsigned t = ((64u - (unsigned) __builtin_clzll(v)) * 1233u) >> 12; /* ~ bits * log10(2) */
	return t + (v >= pow10[t]);
}

/* "%*" PRId64 with width w (at most 24): v right-aligned with spaces in w
 * columns, or wider when it needs more. Stores up to 32 bytes from o;
 * returns the end of the text. */
static inline char *weft_num_i64_w(char *o, int64_t v, unsigned w)
{
	uint64_t u = v < 0 ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v;
	unsigned len = weft_num_digits(u) + (v < 0);
	memset(o, ' ', 24);
	if (len < w)
		o += w - len;
	return weft_num_i64(o, v);
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* The sixteen digits of weft_num_bcd8 words hi and lo (hi first) right-
 * aligned in 10 columns, or all the digits when they are more: the leading
 * zeros made spaces (0x30 - 0x10) but the last digit, and the last columns
 * copied out. Stores 16 bytes from o; returns the end of the text. */
static inline char *weft_num_w10_words(char *o, uint64_t hi, uint64_t lo)
{
	const uint64_t sp = UINT64_C(0x1010101010101010);
	unsigned len;
	if (hi != 0) {
		unsigned lz = (unsigned) __builtin_ctzll(hi) >> 3;
		hi = hi + WEFT_NUM_ASCII8 - (sp & ((UINT64_C(1) << (lz * 8)) - 1));
		lo += WEFT_NUM_ASCII8;
		len = 16 - lz;
	} else {
		unsigned lz = lo != 0 ? (unsigned) __builtin_ctzll(lo) >> 3 : 7;
		hi = UINT64_C(0x2020202020202020);
		lo = lo + WEFT_NUM_ASCII8 - (sp & ((UINT64_C(1) << (lz * 8)) - 1));
		len = 8 - lz;
	}
	unsigned cols = len > 10 ? len : 10;
	char b[32] = { 0 };
	memcpy(b, &hi, 8);
	memcpy(b + 8, &lo, 8);
	memcpy(o, b + 16 - cols, 16);
	return o + cols;
}
#endif

/* "%10" PRId64 (the clock column of a dump): as weft_num_i64_w(o, v, 10),
 * quicker for 0 <= v < 10^16 (two words of eight digits). Stores up to 32
 * bytes from o. */
static inline char *weft_num_i64_w10(char *o, int64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (v >= 0 && v < INT64_C(10000000000000000))
		return weft_num_w10_words(o, weft_num_bcd8((uint32_t) ((uint64_t) v / 100000000)),
				weft_num_bcd8((uint32_t) ((uint64_t) v % 100000000)));
#endif
	return weft_num_i64_w(o, v, 10);
}

/* The high eight digits of the last value weft_num_i64_w10c wrote: the
 * clocks of a trace in order share them for 0.1 s at a time. Zeroed to
 * start. */
struct weft_num_w10_cache {
	uint64_t hi;   /* v / 10^8, + 1 (0: nothing yet) */
	uint64_t word; /* weft_num_bcd8 of it */
};

/* weft_num_i64_w10, the high digits taken from c when they are the same. */
static inline char *weft_num_i64_w10c(char *o, int64_t v, struct weft_num_w10_cache *c)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (v >= 0 && v < INT64_C(10000000000000000)) {
		uint64_t hi = (uint64_t) v / 100000000;
		if (c->hi != hi + 1) {
			c->hi = hi + 1;
			c->word = weft_num_bcd8((uint32_t) hi);
		}
		return weft_num_w10_words(o, c->word,
				weft_num_bcd8((uint32_t) ((uint64_t) v % 100000000)));
	}
#else
	(void) c;
#endif
	return weft_num_i64_w(o, v, 10);
}

/* "%" PRIx64: v in lower-case hex without leading zeros ("0" for 0),
 * storing no byte past the text; returns the end. */
static inline char *weft_num_hex(char *o, uint64_t v)
{
	static const char hex[] = "0123456789abcdef";
	unsigned n = v != 0 ? (67u - (unsigned) __builtin_clzll(v)) / 4 : 1;
	for (unsigned i = n; i-- > 0; v >>= 4)
		o[i] = hex[v & 15];
	return o + n;
}

#endif
