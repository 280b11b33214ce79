/* SPDX-License-Identifier: MIT */
/*
 * layout.c - compile-time checks that the public structures of ovni.h
 * have the sizes the on-disk format (obs_format.h) gives them.
 */
#include "obs_format.h"
#include "ovni.h"

_Static_assert(sizeof(struct ovni_ev_header) == WEFT_EV_HEADER_SIZE, "struct ovni_ev_header must be 12 bytes");
_Static_assert(sizeof(union ovni_ev_payload) == WEFT_EV_MAX_PAYLOAD, "union ovni_ev_payload must be 16 bytes");
_Static_assert(sizeof(struct ovni_ev) == WEFT_EV_MAX_NORMAL_SIZE, "struct ovni_ev must be 28 bytes");
_Static_assert(sizeof(struct ovni_stream_header) == WEFT_OBS_HEADER_SIZE,
	       "struct ovni_stream_header must be 8 bytes");
_Static_assert(offsetof(struct ovni_ev_header, clock) == WEFT_EV_OFF_CLOCK, "the clock is at byte 4");
_Static_assert(offsetof(struct ovni_ev, payload) == WEFT_EV_OFF_PAYLOAD, "the payload is at byte 12");
