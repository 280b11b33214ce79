/* SPDX-License-Identifier: MIT */
/*
 * trace_decode.h - decoding the binary stream: event sizes, filling a struct
 * weft_event, checking a stream header, decoding a buffer (stream.c; the
 * inline helpers are shared by chunk.c, stream.c, next.c and the tests).
 */
#ifndef WEFT_TRACE_DECODE_H
#define WEFT_TRACE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "obs_format.h"
#include "weft/weft.h"

/* ---- binary stream decoding ---- */

/* Size of the event starting at p given avail bytes: returns 1 and sets *need
 * to its total size when avail holds enough to know it (the event may still
 * be incomplete: compare *need with avail); returns 0 with *need = bytes
 * needed to know the size (the event header, or header + jumbo size field). */
static inline int weft_event_size(const uint8_t *p, size_t avail, uint64_t *need)
{
	if (avail < WEFT_EV_HEADER_SIZE) {
		*need = WEFT_EV_HEADER_SIZE;
		return 0;
	}
	uint8_t flags = p[WEFT_EV_OFF_FLAGS];
	if (!weft_ev_is_jumbo(flags)) {
		*need = WEFT_EV_HEADER_SIZE + weft_ev_payload_size(flags);
		return 1;
	}
	if (avail < WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD) {
		*need = WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD;
		return 0;
	}
	*need = (uint64_t) WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD
		+ weft_load_u32(p + WEFT_EV_OFF_PAYLOAD);
	return 1;
}

/* Fills ev (all but stream, sclock) from a complete event of size bytes. */
static inline void weft_event_fill(const uint8_t *p, uint64_t size, struct weft_event *ev)
{
	uint8_t flags = p[WEFT_EV_OFF_FLAGS];
	ev->mcv[0] = (char) p[WEFT_EV_OFF_MODEL];
	ev->mcv[1] = (char) p[WEFT_EV_OFF_CATEGORY];
	ev->mcv[2] = (char) p[WEFT_EV_OFF_VALUE];
	ev->mcv[3] = '\0';
	ev->flags = flags;
	ev->rclock = (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK);
	ev->payload = p + WEFT_EV_OFF_PAYLOAD;
	ev->payload_size = (uint32_t) (size - WEFT_EV_HEADER_SIZE);
	if (weft_ev_is_jumbo(flags)) {
		ev->jumbo = 1;
		ev->jumbo_data = p + WEFT_EV_OFF_PAYLOAD + WEFT_EV_JUMBO_SIZE_FIELD;
		ev->jumbo_size = (uint32_t) (size - WEFT_EV_HEADER_SIZE - WEFT_EV_JUMBO_SIZE_FIELD);
	} else {
		ev->jumbo = 0;
		ev->jumbo_data = NULL;
		ev->jumbo_size = 0;
	}
}

/* The MCV for a message: printable ASCII as is, other bytes as \xNN. */
static inline const char *weft_mcv_show(const void *mcv, char out[16])
{
	const uint8_t *m = mcv;
	size_t k = 0;
	for (int i = 0; i < 3; i++) {
		if (m[i] > 0x20 && m[i] < 0x7f && m[i] != '\\') {
			out[k++] = (char) m[i];
		} else {
			static const char hx[] = "0123456789abcdef";
			out[k++] = '\\';
			out[k++] = 'x';
			out[k++] = hx[m[i] >> 4];
			out[k++] = hx[m[i] & 15];
		}
	}
	out[k] = '\0';
	return out;
}

/* Why the event at p (avail bytes left in the file; need: what
 * weft_event_size said) cannot be complete (stream.c). */
void weft_why_incomplete(const uint8_t *p, uint64_t avail, uint64_t need, char *why,
		size_t whylen);

/* Checks a stream header held in memory (len bytes available of a file of
 * that size). Returns 0, or -1 with the reason (without the file name). */
int weft_check_header(const uint8_t *p, size_t len, char *why, size_t whylen);

/* Decodes a whole stream held in memory (for the fuzzer and tests): calls
 * cb for every event; returns the number of events, or -1 with the reason
 * (including the byte offset) in why. */
long weft_decode_buffer(const uint8_t *p, size_t len,
		void (*cb)(void *ctx, const struct weft_event *ev), void *ctx,
		char *why, size_t whylen);

#endif
