/* SPDX-License-Identifier: MIT */
/*
 * chan_views.h - channels and views (chan_views.c): the engine's channels
 * made from the models' descriptions (mark and counter families expanded),
 * the index of mark channels by type, the channels with a tracked thread
 * view, and the raw writes and their refusals. The raw values and the views'
 * last records are shared state of struct emu (emu_internal.h); the raw
 * write and its views are inline in fastpath.h.
 */
#ifndef WEFT_EMU_CHAN_VIEWS_H
#define WEFT_EMU_CHAN_VIEWS_H

#include <stddef.h>
#include <stdint.h>

#include "emu.h"

struct emu;
struct raw;

struct mark_ref {
	int64_t type;
	size_t chan;
};

struct chan_index {
	size_t ntracked;
	size_t *tracked; /* channels with a RUN or ACT thread view, in order */
	struct mark_ref *mark_chan; /* mark type -> chan index, sorted by type */
	size_t nmark_chan;
	int32_t mark_direct[256]; /* types 0..255: chan index + 1, 0 none */
};

/* Room for the mark channels of the models (emu_create). */
int emu_chans_init(struct emu *e, const struct emu_model_desc *const *models, size_t nmodels);
/* The channels of model mi appended (*chcap: e->chans' capacity): 0, -1
 * refused (err), -2 out of memory. */
int emu_chans_add_model(struct emu *e, size_t mi, size_t *chcap, char *err, size_t errlen);
/* After the models: the mark index, the tracked channels, the summary's
 * accumulators, the raw values (with their initial values) and the CPU
 * views. */
int emu_chans_finish(struct emu *e);
void emu_chans_destroy(struct emu *e);
/* Why a raw write is refused (cold). */
int emu_raw_refuse(struct emu *e, size_t t, size_t ch, enum emu_op op, int64_t v, int isnull)
	__attribute__((noinline, cold));
int emu_raw_stack_grow(struct emu *e, struct raw *R) __attribute__((noinline));

#endif
