/* SPDX-License-Identifier: MIT */
/*
 * fastpath.h - the per-event fast paths of the engine, static inline and
 * kept together so that each file of the step compiles them into its own
 * hot loop (the engine is split by part, and a call across files is not
 * inlined): the thread of a stream, the window's check of an event, a raw
 * write and its two views, the records of a step taken back, the
 * propagation's entry. Included by the files of the engine after
 * emu_internal.h.
 */
#ifndef WEFT_EMU_FASTPATH_H
#define WEFT_EMU_FASTPATH_H

#include <inttypes.h>

#include "emu_internal.h"

/* ---- a step ---- */

/* A step of the engine by thread t at dclock: its own sequence number
 * (the "written twice in one event" stamps), an empty queue. */
static inline void emu_step_begin(struct emu *e, size_t t, int64_t dclock)
{
	e->dclock = dclock;
	e->seq++;
	e->cur_thread = t;
	e->prop.qlen = 0;
}

/* ---- dispatch ---- */

/* The thread of stream s (the last one is remembered). */
static inline size_t emu_stream_thread(struct emu *e, const struct weft_stream *s)
{
	if (s == e->disp.last_stream)
		return e->disp.last_thread;
	size_t t = emu_dispatch_thread(e, s);
	e->disp.last_stream = s;
	e->disp.last_thread = t;
	return t;
}

/* ---- window ---- */

/* An event at sclock enters the window: 0 with its dclock, 1 after the
 * window (not emulated), -1 on error (the snapshot at T0). */
static inline int emu_win_enter(struct emu *e, int64_t sclock, int64_t *dclock)
{
	if (!e->started) {
		e->started = 1;
		e->first_clock = e->has_origin ? e->origin : sclock;
		emu_win_start(e);
	}
	int64_t d = sclock - e->first_clock;
	if (__builtin_expect(d > e->window.to, 0)) {
		e->window.stopped = 1;
		return 1;
	}
	if (__builtin_expect(e->muted, 0)) {
		if (d <= e->window.from)
			e->window.nmuted++;
		else if (emu_win_snapshot(e) != 0)
			return -1;
	}
	*dclock = d;
	return 0;
}

/* ---- batches ---- */

/* Where a step's records begin (breakdown files: emu_batch_mark_bd).
 * Kept in registers (a 16-byte copy of nprv[] would load across two 8-byte
 * stores of the previous event and miss store forwarding). */
static inline __attribute__((always_inline)) struct batch_mark emu_batch_mark(const struct emu *e)
{
	size_t n0 = e->batch.nprv[0];
	__asm__("" : "+r"(n0));
	return (struct batch_mark) { n0, e->batch.nprv[1], e->batch.nirecs };
}

/* Nothing of a refused step is written; what came before is. */
static inline void emu_batch_undo(struct emu *e, struct batch_mark m, const size_t *nb)
{
	e->batch.nprv[0] = m.n0;
	e->batch.nprv[1] = m.n1;
	e->batch.nirecs = m.ni;
	for (size_t b = 0; b < e->nbd; b++)
		e->batch.nprv[2 + b] = nb[b];
}

/* The end of a step: a flush when a batch is full. */
static inline int emu_batch_step_end(struct emu *e)
{
	if (e->batch.nprv[0] + e->batch.nprv[1] + e->batch.nirecs >= EMU_FLUSH_RECS)
		return emu_flush(e);
	return 0;
}

/* Room for the records the walk of the queue may make: at most one per
 * view it evaluates, and a view is evaluated once an event. */
static inline int reserve_recs(struct emu *e, size_t file, size_t n)
{
	if (e->batch.prvcap[file] - e->batch.nprv[file] >= n)
		return 0;
	return emu_prv_grow(e, file, n);
}

/* ---- channels and views ---- */

static inline int find_mark_chan(struct emu *e, int64_t type, size_t *out)
{
	if ((uint64_t) type < 256) {
		int32_t c = e->cidx.mark_direct[type];
		if (c > 0) {
			*out = (size_t) c - 1;
			return 0;
		}
	}
	size_t lo = 0, hi = e->cidx.nmark_chan;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int64_t mt = e->cidx.mark_chan[mid].type;
		if (mt == type) {
			*out = e->cidx.mark_chan[mid].chan;
			return 0;
		}
		if (mt < type)
			lo = mid + 1;
		else
			hi = mid;
	}
	return emu_fail(e, "mark type %" PRId64 " is not declared in the metadata", type);
}

/* A view whose last record is L re-evaluated to state st (1 null, 2 a
 * value) and value v (0 for a null): 1 when its policy wants a record, with
 * L updated, 0 when the record is skipped. */
static inline __attribute__((always_inline)) int view_due(struct last *L, unsigned pol,
		uint8_t st, int64_t v)
{
	if (pol == EMU_POL_SKIPDUPNULL ? st == 1 && L->st == 1 :
			pol == EMU_POL_SKIPDUP && L->st == st && L->v == v)
		return 0;
	L->st = st;
	L->v = v;
	return 1;
}

/* Record *r of a view. */
static inline __attribute__((always_inline)) void rec_put(struct emu_prv_rec *r, int64_t time,
		size_t row, uint32_t chan, int64_t v)
{
	r->time = time;
	r->value = v;
	r->row = (uint32_t) row;
	r->chan = chan;
}

/* The thread view and the CPU view of channel ch of thread t, evaluated
 * straight into the record arrays right after its raw write (their first
 * evaluation in the event): what propagate_raw does, without the queue and
 * the walk's set-up. For an event whose only action is a raw write of a
 * constant (most events: fast_raw) and for the writes of a task action
 * (run_event's `direct`), which change no thread state. */
static inline __attribute__((always_inline)) int raw_views(struct emu *e, size_t t, size_t ch)
{
	const struct chan *C = &e->chans[ch];
	const struct thr *T = &e->thr[t];
	struct raw *R = &e->raw[t * e->nchans + ch];
	int32_t id = C->vrec;
	if (id < 0)
		return 0;
	uint32_t type = (uint32_t) id;
	int64_t time = e->dclock - e->rbase;
	uint8_t st = R->depth == 0 ? 1 : 2;
	int64_t val = R->depth == 0 ? 0 : R->val;
	if ((C->vis >> T->state) & 1u) {
		/* the thread view (its first evaluation in this event) */
		struct last *L = &R->tv;
		L->stamp = e->seq;
		if (view_due(L, C->tpol, st, val)) {
			if (reserve_recs(e, EMU_FILE_THREAD, 1) != 0)
				return -1;
			rec_put(&e->batch.prv[EMU_FILE_THREAD][e->batch.nprv[EMU_FILE_THREAD]++], time,
					t, type, val);
		}
	}
	int64_t cpu = T->cpu;
	if (cpu < 0 || e->cpu[cpu].rsel != (int64_t) t)
		return 0;
	/* the CPU view: the running thread's value */
	struct last *L = &e->cview[(size_t) cpu * e->nchans + ch];
	L->stamp = e->seq;
	if (!view_due(L, C->cpol, st, val))
		return 0;
	if (reserve_recs(e, EMU_FILE_CPU, 1) != 0)
		return -1;
	rec_put(&e->batch.prv[EMU_FILE_CPU][e->batch.nprv[EMU_FILE_CPU]++], time, (size_t) cpu,
			type, val);
	return 0;
}

static inline __attribute__((always_inline)) int raw_write_q(struct emu *e, size_t t, size_t ch,
		enum emu_op op, int64_t v, int isnull, int queue)
{
	const struct chan *C = &e->chans[ch];
	struct raw *R = &e->raw[t * e->nchans + ch];
	if (__builtin_expect((v == 0 && !isnull && !C->zero_ok) || R->stamp == e->seq, 0))
		return emu_raw_refuse(e, t, ch, op, v, isnull);
	int kind;
	switch (op) {
	case EMU_OP_SET:
		if (__builtin_expect(C->kind != EMU_CHAN_SINGLE || (C->refuse_dup &&
				(isnull ? R->depth == 0 : R->depth == 1 && R->val == v)), 0))
			return emu_raw_refuse(e, t, ch, op, v, isnull);
		emu_acc(e, t, ch, R);
		R->depth = isnull ? 0 : 1;
		R->val = isnull ? 0 : v;
		kind = EMU_REC_RAW_SET;
		break;
	case EMU_OP_PUSH:
		if (__builtin_expect(C->kind != EMU_CHAN_STACK || R->depth == EMU_STACK_MAX ||
				(C->refuse_dup && R->depth > 0 && R->val == v), 0))
			return emu_raw_refuse(e, t, ch, op, v, isnull);
		if (__builtin_expect(R->depth == R->cap, 0) && emu_raw_stack_grow(e, R) != 0)
			return -1;
		emu_acc(e, t, ch, R);
		R->stack[R->depth++] = v;
		R->val = v;
		kind = EMU_REC_RAW_PUSH;
		break;
	default:
		if (__builtin_expect(C->kind != EMU_CHAN_STACK || R->depth == 0 || R->val != v, 0))
			return emu_raw_refuse(e, t, ch, op, v, isnull);
		emu_acc(e, t, ch, R);
		R->depth--;
		R->val = R->depth > 0 ? R->stack[R->depth - 1] : 0;
		kind = EMU_REC_RAW_POP;
		break;
	}
	R->stamp = e->seq;
	if (emu_irec(e, kind, t, C->cat, v, isnull) != 0)
		return -1;
	if (!queue)
		return 0;
	if (e->prop.direct)
		return raw_views(e, t, ch);
	return emu_qpush(e, TRIG_RAW, t, ch);
}

static inline __attribute__((always_inline)) int raw_write(struct emu *e, size_t t, size_t ch,
		enum emu_op op, int64_t v, int isnull)
{
	return raw_write_q(e, t, ch, op, v, isnull, 1);
}

/* ---- propagation ---- */

/* The views that depend on the writes of the event. */
static inline int propagate(struct emu *e)
{
	if (__builtin_expect(e->prop.lazy_raw != NULL, 0))
		return emu_prop_lazy_mark(e);
	if (e->prop.qlen == 1 && e->prop.q[0].kind == TRIG_RAW)
		return emu_prop_raw(e, e->prop.q[0].a, e->prop.q[0].b);
	return e->prop.qlen != 0 ? emu_prop_queue(e) : 0;
}

#endif
