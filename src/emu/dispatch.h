/* SPDX-License-Identifier: MIT */
/*
 * dispatch.h - the dispatch (dispatch.c): the enabled models, an event's
 * emitting thread (a map of streams to threads), and an event's MCV to its
 * model, its checks and its actions (a table of one cache line per MCV).
 * Part of struct emu (emu_internal.h).
 */
#ifndef WEFT_EMU_DISPATCH_H
#define WEFT_EMU_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "emu.h"

#define EMU_MAX_FLAGS 8

struct emu;
struct model_rt;

/* What the dispatch reads of an event description, side by side. */
struct ev_rt {
	const struct emu_event_desc *d;
	const struct emu_action *actions;
	size_t nactions;
	uint32_t smin, smax; /* the payload sizes its size rule accepts */
	/* it must be jumbo, it is only warned about, or --lint checks its
	 * size: the checks of event_checks() */
	int slow;
};

/* An MCV's dispatch flattened into one cache line: what run_event reads of
 * the model and of the event's description, and the first action's op, in
 * a direct-mapped table of EMU_DISP_SLOTS found by a hash of the MCV and
 * filled on the MCV's first use. The chain model byte -> model -> 64 Ki
 * table -> description -> action -> op was a dependent load at each step
 * before the jump to the action. */
#define EMU_DISP_SLOTS 512
struct disp_ent {
	_Alignas(64) uint32_t key; /* the MCV's bytes | EMU_DISP_VALID; 0: empty */
	uint32_t smin, smax;
	uint16_t guard_states, guard_bit;
	int16_t idx;               /* the event in m->ev[]; < 0: unknown (as m->disp) */
	uint8_t slow;
	uint8_t op0;               /* actions[0].op (EMU_OP_NONE without actions) */
	uint16_t nactions;
	/* 1: the event's only action is a raw write (op0) of the constant fv
	 * on engine channel fch, done without the action table (run_event) */
	uint8_t fast;
	uint8_t direct;            /* its one action is a task action (run_event) */
	uint32_t fch;
	int64_t fv;
	const struct emu_action *actions;
	const struct emu_event_desc *d;
	struct model_rt *m;
};
_Static_assert(sizeof(struct disp_ent) == 64, "a dispatch entry takes one cache line");
#define EMU_DISP_VALID (1u << 24)

struct map_ent {
	const struct weft_stream *key;
	size_t thread;
};

struct dispatch {
	size_t nmodels;
	struct model_rt *models;
	int model_of_byte[256];    /* model index, -1: none enabled */
	struct disp_ent *dtab;     /* EMU_DISP_SLOTS */
	const char *flag_names[EMU_MAX_FLAGS]; /* thread flags, shared by the models */
	size_t nflags;
	/* stream -> thread (open addressing), and the last one found */
	struct map_ent *map;
	size_t map_mask;
	const struct weft_stream *last_stream;
	size_t last_thread;
};

/* engine.c: what a hook may call (emu_hook_ctx.ops). */
extern const struct emu_hook_ops emu_hooks;

/* The models (their tables, flags, channels, task machinery) and the
 * stream map; emu_destroy frees them (emu_dispatch_destroy). */
int emu_dispatch_models(struct emu *e, const struct emu_model_desc *const *models,
		size_t nmodels, char *err, size_t errlen);
int emu_dispatch_map(struct emu *e);
void emu_dispatch_destroy(struct emu *e);
/* The thread of stream s, SIZE_MAX when it is not a thread of the system. */
size_t emu_dispatch_thread(struct emu *e, const struct weft_stream *s);
/* The actions of event description d of model m by thread t, the thread
 * state's condition waived (the end of a thread cut short). */
int emu_dispatch_end(struct emu *e, size_t t, struct model_rt *m,
		const struct emu_event_desc *d);

#endif
