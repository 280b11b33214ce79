/* SPDX-License-Identifier: MIT */
/* losses.h - what the driver tells the engine about the events a trace
 * lacks (losses.c). */
#ifndef WEFT_DRIVER_LOSSES_H
#define WEFT_DRIVER_LOSSES_H

#include <stddef.h>
#include <stdint.h>

#include "emu.h"

/* Every thread of sys whose stream lost events (weft.ring runs,
 * weft.lost_events) is handed to the engine (emu_thread_lost), and one
 * warning (warn non-NULL) says that they are emulated leniently; with
 * only, the threads th with only[th] only (-j's worker: its looms'). 0, or
 * -1 with err. */
int driver_losses(struct weft_trace *t, struct emu *e, const struct emu_sys *sys,
		const uint8_t *only, void (*warn)(void *ctx, const char *msg), void *ctx, char *err,
		size_t errlen);

/* Filters at the source (weft.filter): -1 with err naming the stream and
 * the filter when a rule removed part of a model's events, or the ovni
 * model's while another model needs its thread states (the model would
 * be wrong); else one warning for the threads whose filter dropped whole
 * models (a callback's drops are losses: driver_losses). A stream written
 * with WEFT_OUTPUT=off (no events) is refused too. */
int driver_filters(const struct weft_trace *t, void (*warn)(void *ctx, const char *msg), void *ctx,
		char *err, size_t errlen);

/* The clock stream i was cut at (weft.cut, the loom's offset applied):
 * 1 with *clock set, else 0. */
int driver_cut_clock(const struct weft_trace *t, size_t i, int64_t *clock);

#endif
