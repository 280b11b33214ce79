/* SPDX-License-Identifier: MIT */
/*
 * window.c - weft emu --from/--to: the bounds as dclocks at the first
 * event, the events before T0 emulated without records (e->muted; the
 * views lazy, propagate.c), the state at T0 written at T0 (the snapshot),
 * the end at T1. The check of each event is inline in fastpath.h
 * (emu_win_enter). See docs/emu.md.
 */
#include "emu_internal.h"

void emu_set_window(struct emu *e, const struct emu_window *w)
{
	e->window.bounds = *w;
	e->muted = w->has_from;
}

int emu_window_stopped(const struct emu *e)
{
	return e->window.stopped;
}

int emu_window_span(const struct emu *e, int64_t *from, int64_t *last)
{
	*from = e->rbase;
	*last = e->duration;
	return e->started;
}

int64_t emu_duration(const struct emu *e)
{
	if (!e->window.bounds.has_from && !e->window.bounds.has_to)
		return e->duration;
	int64_t end = e->window.stopped ? e->window.to : e->duration;
	return end > e->rbase ? end - e->rbase : 0;
}

/* A bound as a dclock: clocks saturate at the int64 range. */
static int64_t win_dclock(const struct emu *e, int rel, int64_t v)
{
	if (rel)
		return v;
	int64_t d;
	if (__builtin_sub_overflow(v, e->first_clock, &d))
		d = e->first_clock < 0 ? INT64_MAX : INT64_MIN;
	return d;
}

/* At the first event: the bounds as dclocks. */
void emu_win_start(struct emu *e)
{
	const struct emu_window *w = &e->window.bounds;
	e->window.from = w->has_from ? win_dclock(e, w->from_rel, w->from) : 0;
	e->window.to = w->has_to ? win_dclock(e, w->to_rel, w->to) : INT64_MAX;
	e->rbase = w->has_from ? e->window.from : 0;
	/* lazy views before T0 (not with breakdown views, whose selection
	 * follows every CPU view change, nor with losses); without the
	 * memory, the views are evaluated as usual */
	if (e->muted && e->nbd == 0 && e->loss == NULL)
		emu_prop_lazy_start(e);
}

/* The state at T0, written at T0 (time 0 of the window): every row and
 * Paraver type with a value other than 0, then the internal records. */
int emu_win_snapshot(struct emu *e)
{
	if (e->prop.lazy_raw != NULL) {
		int lr = emu_prop_lazy_eval(e);
		emu_prop_lazy_free(e);
		if (lr != 0)
			return -1;
	}
	e->muted = 0;
	int64_t saved = e->dclock;
	e->dclock = e->window.from;
	size_t nch = e->nchans;
	int r = 0;
	for (size_t t = 0; t < e->nthreads && r == 0; t++) {
		const struct thr *T = &e->thr[t];
		if (T->tidv != 0)
			r |= emu_rec(e, EMU_FILE_THREAD, t, EMU_BT(EMU_BI_TID), T->tidv);
		if (T->state != EMU_ST_UNKNOWN)
			r |= emu_rec(e, EMU_FILE_THREAD, t, EMU_BT(EMU_BI_STATE), T->state);
		if (T->aff != 0)
			r |= emu_rec(e, EMU_FILE_THREAD, t, EMU_BT(EMU_BI_AFFINITY), T->aff);
		for (size_t ch = 0; ch < nch; ch++) {
			const struct last *L = &e->raw[t * nch + ch].tv;
			int32_t id = e->chans[ch].vrec;
			if (id >= 0 && L->st == 2 && L->v != 0)
				r |= emu_rec(e, EMU_FILE_THREAD, t, (uint32_t) id, L->v);
		}
	}
	for (size_t c = 0; c < e->ncpus && r == 0; c++) {
		const struct cpu *C = &e->cpu[c];
		if (C->pidv != 0)
			r |= emu_rec(e, EMU_FILE_CPU, c, EMU_BT(EMU_BI_CPU_PID), C->pidv);
		if (C->tidv != 0)
			r |= emu_rec(e, EMU_FILE_CPU, c, EMU_BT(EMU_BI_CPU_TID), C->tidv);
		if (C->nrun_written && C->nrun_v != 0)
			r |= emu_rec(e, EMU_FILE_CPU, c, EMU_BT(EMU_BI_CPU_COUNT), C->nrun_v);
		for (size_t ch = 0; ch < nch; ch++) {
			const struct last *L = &e->cview[c * nch + ch];
			int32_t id = e->chans[ch].vrec;
			if (id >= 0 && L->st == 2 && L->v != 0)
				r |= emu_rec(e, EMU_FILE_CPU, c, (uint32_t) id, L->v);
		}
	}
	if (r == 0 && e->nbd)
		r = emu_bd_snapshot(e);
	if (r == 0 && e->loss != NULL)
		r = emu_loss_snapshot(e);
	/* the internal records: running threads, then the raw channels */
	for (size_t c = 0; c < e->ncpus && r == 0 && e->batch.internal; c++) {
		const struct cpu *C = &e->cpu[c];
		if (C->rsel >= 0)
			r |= emu_irec(e, EMU_REC_RSEL, c, 0, C->rsel, 0);
		if (C->nrun_written && C->nrun_v != 0)
			r |= emu_irec(e, EMU_REC_NRUN, c, 0, C->nrun_v, 0);
	}
	for (size_t t = 0; t < e->nthreads && r == 0 && e->batch.internal; t++) {
		for (size_t ch = 0; ch < nch && r == 0; ch++) {
			const struct raw *R = &e->raw[t * nch + ch];
			const struct chan *C = &e->chans[ch];
			/* a value never written by an event (a channel's initial
			 * value) made no internal record in a full run either */
			if (R->depth == 0 || R->stamp == 0)
				continue;
			if (C->kind != EMU_CHAN_STACK) {
				r |= emu_irec(e, EMU_REC_RAW_SET, t, C->cat, R->val, 0);
				continue;
			}
			for (uint32_t k = 0; k < R->depth && r == 0; k++)
				r |= emu_irec(e, EMU_REC_RAW_PUSH, t, C->cat, R->stack[k], 0);
		}
	}
	e->dclock = saved;
	return r ? -1 : 0;
}

void emu_set_origin(struct emu *e, int64_t sclock)
{
	e->has_origin = 1;
	e->origin = sclock;
}
