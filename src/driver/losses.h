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
 * warning says that they are emulated leniently. 0, or -1 with err. */
int driver_losses(struct weft_trace *t, struct emu *e, const struct emu_sys *sys,
		void (*warn)(void *ctx, const char *msg), void *ctx, char *err, size_t errlen);

/* The clock stream i was cut at (weft.cut, the loom's offset applied):
 * 1 with *clock set, else 0. */
int driver_cut_clock(const struct weft_trace *t, size_t i, int64_t *clock);

#endif
