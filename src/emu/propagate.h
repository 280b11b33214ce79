/* SPDX-License-Identifier: MIT */
/*
 * propagate.h - the propagation (propagate.c): the writes of an event
 * queued, and the views that depend on them re-evaluated once the actions
 * are done; before a window's T0, the views marked rather than evaluated
 * (lazy) and evaluated once at T0. Part of struct emu (emu_internal.h).
 */
#ifndef WEFT_EMU_PROPAGATE_H
#define WEFT_EMU_PROPAGATE_H

#include <stddef.h>
#include <stdint.h>

struct emu;

enum trig {
	TRIG_STATE = 1, /* a: thread */
	TRIG_RSEL,      /* a: cpu */
	TRIG_RAW,       /* a: thread, b: chan */
};

struct qent {
	uint32_t kind, a, b;
};

struct prop {
	struct qent *q; /* the writes of the current step */
	size_t qlen, qcap;
	int direct; /* raw writes evaluate their views at once (run_event) */
	/* Before T0 without breakdown views or losses, the views are not
	 * evaluated: what would have been is marked (thread views by a raw
	 * write, every tracked one by a state change; CPU views by a raw
	 * write of their running thread, all of them by a change of it) and
	 * evaluated once at T0 (emu_prop_lazy_mark, emu_prop_lazy_eval).
	 * NULL otherwise. */
	uint8_t *lazy_raw;  /* nthreads x nchans */
	uint8_t *lazy_thr;  /* nthreads */
	uint8_t *lazy_cv;   /* ncpus x nchans */
	uint8_t *lazy_cpu;  /* ncpus */
};

/* The walks (called by propagate(), fastpath.h). */
int emu_prop_raw(struct emu *e, size_t a, size_t ch);
int emu_prop_queue(struct emu *e);
int emu_prop_lazy_mark(struct emu *e);
/* The lazy views: their marks made (0; without the memory they stay off
 * and the views are evaluated as usual), evaluated at T0, freed. */
void emu_prop_lazy_start(struct emu *e);
int emu_prop_lazy_eval(struct emu *e);
void emu_prop_lazy_free(struct emu *e);
void emu_prop_destroy(struct emu *e);

#endif
