/* SPDX-License-Identifier: MIT */
/*
 * propagate.c - the propagation: once an event's actions are done, the
 * views that depend on its queued writes are re-evaluated in the order of
 * the writes (thread views on a state change, CPU views when a CPU's
 * running thread changes, both on a raw write; breakdown views hang off
 * the CPU views), their records written straight into the batch. Before a
 * window's T0 the views are marked instead (lazy) and evaluated once at
 * T0. The entry, propagate(), and the raw write's own views are inline in
 * fastpath.h. See docs/emu.md.
 */
#include <stdlib.h>

#include "fastpath.h"

/* What the propagation reads of the engine, held in locals for the walk:
 * its stores (records, and the views' byte-sized states, which may alias
 * anything) would otherwise force a reload of each field from e after
 * every one. Records go straight into space reserved before the walk. */
struct pwalk {
	struct emu *e;
	const struct chan *chans;
	struct raw *raw;
	struct last *cview;
	const struct thr *thr;
	const struct cpu *cpu;
	size_t nch;
	uint64_t seq;
	int64_t time;
	struct emu_prv_rec *rec[2]; /* the records of the thread and CPU views */
	size_t nrec[2];             /* ... and how many */
};
/* A view re-evaluated to (isnull, v): a record unless its policy skips it.
 * The last state keeps 0 as the value of a null. */
static inline __attribute__((always_inline)) void view_emit(struct pwalk *P, struct last *L,
		unsigned pol, int file, size_t row, int32_t id, int64_t v, int isnull)
{
	if (id < 0)
		return;
	v = isnull ? 0 : v;
	if (view_due(L, pol, isnull ? 1 : 2, v))
		rec_put(&P->rec[file][P->nrec[file]++], P->time, row, (uint32_t) id, v);
}

/* The thread view of channel C (ch) of thread t, whose raw value is R. */
static inline __attribute__((always_inline)) void eval_tview(struct pwalk *P, size_t t,
		struct raw *R, const struct chan *C)
{
	struct last *L = &R->tv;
	if (L->stamp == P->seq)
		return;
	L->stamp = P->seq;
	int isnull = !((C->vis >> P->thr[t].state) & 1u) || R->depth == 0;
	view_emit(P, L, C->tpol, EMU_FILE_THREAD, t, C->vrec, R->val, isnull);
}

/* The CPU view's value now: R(C)'s raw value, or the channel's fallback. */
static inline void cview_now(const struct emu *e, size_t c, size_t ch, int *isnull, int64_t *v)
{
	const struct chan *C = &e->chans[ch];
	int64_t r = e->cpu[c].rsel;
	*isnull = 1;
	*v = 0;
	if (r >= 0) {
		const struct raw *R = &e->raw[(size_t) r * e->nchans + ch];
		*isnull = R->depth == 0;
		*v = R->val;
	} else if (C->has_fallback) {
		*isnull = 0;
		*v = C->fallback;
	}
}

void emu_cview_value(const struct emu *e, size_t c, size_t ch, int *isnull, int64_t *v)
{
	cview_now(e, c, ch, isnull, v);
}

/* The CPU view of channel C (ch) on CPU c, whose running thread's raw
 * value is R (NULL: no running thread). */
static inline __attribute__((always_inline)) int eval_cview(struct pwalk *P, size_t c,
		const struct raw *R, size_t ch, const struct chan *C)
{
	struct last *L = &P->cview[c * P->nch + ch];
	if (L->stamp == P->seq)
		return 0;
	L->stamp = P->seq;
	int isnull = 1;
	int64_t v = 0;
	if (R != NULL) {
		isnull = R->depth == 0;
		v = R->val;
	} else if (C->has_fallback) {
		isnull = 0;
		v = C->fallback;
	}
	if (__builtin_expect(C->bd != 0, 0) && emu_bd_input(P->e, c, ch, isnull, v) != 0)
		return -1;
	view_emit(P, L, C->cpol, EMU_FILE_CPU, c, C->vrec, v, isnull);
	return 0;
}

/* The walk's start (room for `most` records in each of the thread and CPU
 * views) and end (the records it made are counted in). */
static inline __attribute__((always_inline)) int walk_start(struct emu *e, struct pwalk *P,
		size_t most)
{
	if (reserve_recs(e, EMU_FILE_THREAD, most) != 0 || reserve_recs(e, EMU_FILE_CPU, most) != 0)
		return -1;
	*P = (struct pwalk) {
		e, e->chans, e->raw, e->cview, e->thr, e->cpu, e->nchans, e->seq,
		e->dclock - e->rbase,
		{ e->batch.prv[EMU_FILE_THREAD], e->batch.prv[EMU_FILE_CPU] },
		{ e->batch.nprv[EMU_FILE_THREAD], e->batch.nprv[EMU_FILE_CPU] },
	};
	return 0;
}

static inline __attribute__((always_inline)) void walk_end(struct emu *e, const struct pwalk *P)
{
	if (__builtin_expect(!e->muted, 1)) {
		e->batch.nprv[EMU_FILE_THREAD] = P->nrec[0];
		e->batch.nprv[EMU_FILE_CPU] = P->nrec[1];
	}
}

/* A raw write on channel ch of thread a: its thread view, and its CPU view
 * when a is the running thread of its CPU (at most a record each). */
static inline __attribute__((always_inline)) int walk_raw(struct pwalk *P, size_t a, size_t ch)
{
	const struct chan *C = &P->chans[ch];
	struct raw *R = &P->raw[a * P->nch + ch];
	if ((C->vis >> P->thr[a].state) & 1u)
		eval_tview(P, a, R, C);
	int64_t cpu = P->thr[a].cpu;
	if (cpu >= 0 && P->cpu[cpu].rsel == (int64_t) a)
		return eval_cview(P, (size_t) cpu, R, ch, C);
	return 0;
}

/* The most common event: one raw write, walked without the queue. */
int emu_prop_raw(struct emu *e, size_t a, size_t ch)
{
	struct pwalk P;
	if (walk_start(e, &P, 1) != 0)
		return -1;
	int r = walk_raw(&P, a, ch);
	walk_end(e, &P);
	return r;
}

/* Walks the writes of the event in order (qlen > 0) and re-evaluates their
 * dependent views. Views have no dependents, so evaluating them during the walk
 * gives the same order as queueing them after the triggers. */
int emu_prop_queue(struct emu *e)
{
	const size_t nq = e->prop.qlen, nch = e->nchans;
	const struct qent *q = e->prop.q;
	struct pwalk P;
	if (walk_start(e, &P, nq * (nch > 2 ? nch : 2)) != 0)
		return -1;
	const size_t *const tracked = e->cidx.tracked;
	const size_t ntracked = e->cidx.ntracked;
	int r = 0;
	for (size_t i = 0; i < nq && r == 0; i++) {
		size_t a = q[i].a;
		switch (q[i].kind) {
		case TRIG_RAW:
			r = walk_raw(&P, a, q[i].b);
			break;
		case TRIG_STATE: {
			unsigned st = P.thr[a].state;
			struct raw *Ra = &P.raw[a * nch];
			for (size_t k = 0; k < ntracked; k++) {
				struct raw *R = &Ra[tracked[k]];
				const struct chan *C = &P.chans[tracked[k]];
				/* null before and after: no record, whenever evaluated */
				if (R->tv.st == 1 && (R->depth == 0 || !((C->vis >> st) & 1u)) &&
						C->tpol != EMU_POL_EMITDUP)
					continue;
				eval_tview(&P, a, R, C);
			}
			break;
		}
		case TRIG_RSEL: {
			int64_t rs = P.cpu[a].rsel;
			const struct raw *R = rs >= 0 ? &P.raw[(size_t) rs * nch] : NULL;
			for (size_t ch = 0; ch < nch && r == 0; ch++)
				r = eval_cview(&P, a, R != NULL ? R + ch : NULL, ch, &P.chans[ch]);
			break;
		}
		}
	}
	walk_end(e, &P);
	return r;
}

/* Before T0 (lazy views): marks the views the event's writes would have
 * evaluated, under the same conditions as the walks above. */
int emu_prop_lazy_mark(struct emu *e)
{
	const size_t nch = e->nchans;
	for (size_t i = 0; i < e->prop.qlen; i++) {
		size_t a = e->prop.q[i].a;
		switch (e->prop.q[i].kind) {
		case TRIG_RAW: {
			size_t ch = e->prop.q[i].b;
			if ((e->chans[ch].vis >> e->thr[a].state) & 1u)
				e->prop.lazy_raw[a * nch + ch] = 1;
			int64_t cpu = e->thr[a].cpu;
			if (cpu >= 0 && e->cpu[cpu].rsel == (int64_t) a)
				e->prop.lazy_cv[(size_t) cpu * nch + ch] = 1;
			break;
		}
		case TRIG_STATE:
			e->prop.lazy_thr[a] = 1;
			break;
		case TRIG_RSEL:
			e->prop.lazy_cpu[a] = 1;
			break;
		}
	}
	e->prop.qlen = 0;
	return 0;
}

/* At T0 (lazy views): every marked view evaluated once, with the state of
 * T0 (no record is kept: the window is still muted), so that the views'
 * last values are those a full evaluation would have left. */
int emu_prop_lazy_eval(struct emu *e)
{
	const size_t nch = e->nchans;
	const uint64_t seq = UINT64_MAX - 1; /* a stamp no event has */
	for (size_t t = 0; t < e->nthreads; t++) {
		struct pwalk P;
		if (walk_start(e, &P, nch) != 0)
			return -1;
		P.seq = seq;
		struct raw *Ra = &e->raw[t * nch];
		if (e->prop.lazy_thr[t])
			for (size_t k = 0; k < e->cidx.ntracked; k++)
				eval_tview(&P, t, &Ra[e->cidx.tracked[k]], &e->chans[e->cidx.tracked[k]]);
		for (size_t ch = 0; ch < nch; ch++)
			if (e->prop.lazy_raw[t * nch + ch])
				eval_tview(&P, t, &Ra[ch], &e->chans[ch]);
		walk_end(e, &P);
	}
	for (size_t c = 0; c < e->ncpus; c++) {
		struct pwalk P;
		if (walk_start(e, &P, nch) != 0)
			return -1;
		P.seq = seq;
		int64_t rs = e->cpu[c].rsel;
		const struct raw *R = rs >= 0 ? &e->raw[(size_t) rs * nch] : NULL;
		for (size_t ch = 0; ch < nch; ch++)
			if (e->prop.lazy_cpu[c] || e->prop.lazy_cv[c * nch + ch])
				if (eval_cview(&P, c, R != NULL ? R + ch : NULL, ch, &e->chans[ch]) != 0)
					return -1;
		walk_end(e, &P);
	}
	return 0;
}

void emu_prop_lazy_free(struct emu *e)
{
	free(e->prop.lazy_raw);
	free(e->prop.lazy_thr);
	free(e->prop.lazy_cv);
	free(e->prop.lazy_cpu);
	e->prop.lazy_raw = e->prop.lazy_thr = e->prop.lazy_cv = e->prop.lazy_cpu = NULL;
}

void emu_prop_lazy_start(struct emu *e)
{
	size_t nch = e->nchans ? e->nchans : 1;
	e->prop.lazy_raw = calloc(e->nthreads ? e->nthreads * nch : 1, 1);
	e->prop.lazy_thr = calloc(e->nthreads ? e->nthreads : 1, 1);
	e->prop.lazy_cv = calloc(e->ncpus ? e->ncpus * nch : 1, 1);
	e->prop.lazy_cpu = calloc(e->ncpus ? e->ncpus : 1, 1);
	if (!e->prop.lazy_raw || !e->prop.lazy_thr || !e->prop.lazy_cv || !e->prop.lazy_cpu)
		emu_prop_lazy_free(e);
}

void emu_prop_destroy(struct emu *e)
{
	emu_prop_lazy_free(e);
	free(e->prop.q);
}
