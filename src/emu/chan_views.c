/* SPDX-License-Identifier: MIT */
/*
 * chan_views.c - channels and views: the engine's channels made from the
 * models' descriptions (a mark family expanded to a channel per declared
 * mark type, a counter family to one per declared counter), their PCF
 * values checked, the index of mark channels by type, the channels with a
 * tracked thread view, the summary's accumulators, the raw values and the
 * views' last records; the raw writes (the write and its two views are
 * inline in fastpath.h) and why one is refused.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastpath.h"

static int cmp_mark_ref(const void *a, const void *b)
{
	const struct mark_ref *x = a, *y = b;
	return (x->type > y->type) - (x->type < y->type);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
	return (x > y) - (x < y);
}

/* PCF values are written as 32-bit ints: two values that collide after the
 * cast cannot both be labelled. */
static int check_pcf_values(const struct chan *c, char *err, size_t errlen)
{
	size_t n = c->info.nvalues;
	if (n < 2)
		return 0;
	int64_t *v = malloc(n * sizeof *v);
	if (v == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int64_t x = c->info.values ? c->info.values[i].value : c->info.mvalues[i].value;
		v[i] = (int64_t) (int32_t) (uint32_t) (uint64_t) x;
	}
	qsort(v, n, sizeof *v, cmp_i64);
	for (size_t i = 1; i < n; i++) {
		if (v[i] == v[i - 1]) {
			snprintf(err, errlen, "%s: two value labels collide as the 32-bit "
					"Paraver value %" PRId64, c->info.thread_label, v[i]);
			free(v);
			return -1;
		}
	}
	free(v);
	return 0;
}

static int add_chan(struct emu *e, size_t *cap, const struct chan *c)
{
	if (emu_grow((void **) &e->chans, cap, e->nchans + 1, sizeof *e->chans) != 0)
		return -1;
	struct chan *n = &e->chans[e->nchans++];
	*n = *c;
	switch (c->desc->track) {
	case EMU_TRACK_ANY:
		n->vis = ~0u;
		break;
	case EMU_TRACK_ACT:
		n->vis = EMU_STM_ACTIVE;
		break;
	default:
		n->vis = EMU_STM(EMU_ST_RUNNING);
		break;
	}
	n->tpol = (uint8_t) c->desc->thread_policy;
	n->cpol = (uint8_t) c->desc->cpu_policy;
	n->has_fallback = (uint8_t) c->desc->has_fallback;
	n->fallback = c->desc->fallback;
	n->zero_ok = (uint8_t) c->desc->zero_ok;
	n->refuse_dup = c->desc->dup == EMU_DUP_REFUSE;
	n->info.model = e->disp.models[c->model].desc->name;
	return 0;
}

int emu_chans_add_model(struct emu *e, size_t mi, size_t *chcap, char *err, size_t errlen)
{
	struct model_rt *m = &e->disp.models[mi];
	const struct emu_sys *sys = e->sys;
	m->chan_first = e->nchans;
	m->chan_of_desc = calloc(m->desc->nchans + 1, sizeof *m->chan_of_desc);
	if (m->chan_of_desc == NULL)
		return -2;
	for (size_t ci = 0; ci < m->desc->nchans; ci++) {
		const struct emu_chan_desc *d = &m->desc->chans[ci];
		struct chan c = { 0 };
		c.desc = d;
		c.model = mi;
		c.info.name = d->name;
		c.mark_type = -1;
		c.counter = -1;
		c.info.counter = -1;
		c.info.dyn_values = d->values_from_types;
		c.info.show = d->show;
		m->chan_of_desc[ci] = e->nchans;
		if (d->family == EMU_FAMILY_MARK_TYPES) {
			for (size_t k = 0; k < sys->nmarks; k++) {
				const struct emu_mark *mk = &sys->marks[k];
				c.kind = mk->stack ? EMU_CHAN_STACK : EMU_CHAN_SINGLE;
				c.mark_type = mk->type;
				c.info.prv_type = d->prv_type + mk->type;
				c.info.thread_label = mk->title;
				c.info.cpu_label = mk->title;
				c.info.nvalues = mk->nlabels;
				c.info.values = NULL;
				c.info.mvalues = mk->labels;
				c.info.stack = mk->stack;
				e->cidx.mark_chan[e->cidx.nmark_chan].type = mk->type;
				e->cidx.mark_chan[e->cidx.nmark_chan++].chan = e->nchans;
				if (check_pcf_values(&c, err, errlen) != 0)
					return -1;
				if (add_chan(e, chcap, &c) != 0)
					return -2;
			}
		} else if (d->family == EMU_FAMILY_COUNTERS) {
			m->counter_first = e->nchans;
			for (size_t k = 0; k < m->ncounters; k++) {
				c.kind = EMU_CHAN_SINGLE;
				c.counter = (int32_t) k;
				c.info.counter = (int) k;
				c.info.prv_type = d->prv_type + (int) k;
				c.info.thread_label = m->counter_names[k];
				c.info.cpu_label = m->counter_names[k];
				if (add_chan(e, chcap, &c) != 0)
					return -2;
			}
		} else {
			c.kind = d->kind;
			c.info.prv_type = d->prv_type;
			c.info.thread_label = d->thread_label;
			c.info.cpu_label = d->cpu_label;
			c.info.nvalues = d->nvalues;
			c.info.values = d->values;
			c.info.stack = d->kind == EMU_CHAN_STACK;
			if (check_pcf_values(&c, err, errlen) != 0)
				return -1;
			if (add_chan(e, chcap, &c) != 0)
				return -2;
		}
	}
	m->nchans = e->nchans - m->chan_first;
	return 0;
}

int emu_chans_init(struct emu *e, const struct emu_model_desc *const *models, size_t nmodels)
{
	size_t nfam = 0;
	for (size_t mi = 0; mi < nmodels; mi++)
		for (size_t ci = 0; ci < models[mi]->nchans; ci++)
			nfam += models[mi]->chans[ci].family == EMU_FAMILY_MARK_TYPES;
	e->cidx.mark_chan = calloc(e->sys->nmarks * nfam + 1, sizeof *e->cidx.mark_chan);
	return e->cidx.mark_chan != NULL ? 0 : -1;
}

int emu_chans_finish(struct emu *e)
{
	struct chan_index *X = &e->cidx;
	qsort(X->mark_chan, X->nmark_chan, sizeof *X->mark_chan, cmp_mark_ref);
	for (size_t k = 0; k < X->nmark_chan; k++)
		if (X->mark_chan[k].type >= 0 && X->mark_chan[k].type < 256)
			X->mark_direct[X->mark_chan[k].type] = (int32_t) X->mark_chan[k].chan + 1;
	size_t nt = e->nthreads, nc = e->ncpus, nch = e->nchans;
	X->tracked = calloc(nch + 1, sizeof *X->tracked);
	if (X->tracked == NULL)
		return -1;
	for (size_t c = 0; c < nch; c++)
		if (e->chans[c].desc->track != EMU_TRACK_ANY)
			X->tracked[X->ntracked++] = c;
	for (size_t c = 0; c < nch; c++) {
		struct chan *C = &e->chans[c];
		C->acc_first = SIZE_MAX;
		/* labelled channels, mark types with labels too */
		if (!e->opts.no_summary && (C->info.values != NULL || C->info.mvalues != NULL) &&
				C->info.nvalues > 0 && C->info.prv_type > 0) {
			C->acc_first = e->nacc;
			e->nacc += C->info.nvalues;
			for (size_t i = 0; i < C->info.nvalues && i < 127; i++) {
				int64_t v = emu_chan_value(C, i);
				if (v >= 0 && v < 128 && C->acc_lut[v] == 0)
					C->acc_lut[v] = (int8_t) (i + 1);
			}
		}
	}
	e->acc = calloc(nt * e->nacc + 1, sizeof *e->acc);
	e->raw = calloc(nt * nch + 1, sizeof *e->raw);
	e->cview = calloc(nc * nch + 1, sizeof *e->cview);
	if (!e->raw || !e->cview || !e->acc)
		return -1;
	/* Initial raw values (idle states), set without a record. */
	for (size_t t = 0; t < nt; t++) {
		for (size_t c = 0; c < nch; c++) {
			const struct emu_chan_desc *d = e->chans[c].desc;
			if (d->has_initial && e->chans[c].mark_type < 0 && e->chans[c].counter < 0) {
				e->raw[t * nch + c].depth = 1;
				e->raw[t * nch + c].val = d->initial;
			}
		}
	}
	return 0;
}

void emu_chans_destroy(struct emu *e)
{
	if (e->raw != NULL)
		for (size_t i = 0; i < e->nthreads * e->nchans; i++)
			free(e->raw[i].stack);
	free(e->cidx.mark_chan);
	free(e->cidx.tracked);
	free(e->chans);
	free(e->raw);
	free(e->cview);
	free(e->acc);
}

/* ---- raw writes ---- */

static const char *chan_what(const struct chan *c, char *buf, size_t len)
{
	if (c->mark_type >= 0)
		snprintf(buf, len, "mark type %d", c->mark_type);
	else if (c->counter >= 0)
		snprintf(buf, len, "%s counter %s", c->info.model, c->info.thread_label);
	else
		snprintf(buf, len, "%s %s", c->info.model, c->info.name);
	return buf;
}

#define WHAT chan_what(C, what, sizeof what)

/* Why a raw write is refused: its checks again, in the order of the
 * reference's messages (out of the hot path). */
int emu_raw_refuse(struct emu *e, size_t t, size_t ch,
		enum emu_op op, int64_t v, int isnull)
{
	const struct chan *C = &e->chans[ch];
	const struct raw *R = &e->raw[t * e->nchans + ch];
	char what[128];
	if (!C->zero_ok && !isnull && v == 0)
		return emu_fail(e, "%s: value 0 is not allowed", WHAT);
	if (op == EMU_OP_SET && C->kind != EMU_CHAN_SINGLE)
		return emu_fail(e, "%s is a stack: set it with push and pop", WHAT);
	if (op != EMU_OP_SET && C->kind != EMU_CHAN_STACK)
		return emu_fail(e, "%s is single: %s needs a stack", WHAT,
				op == EMU_OP_PUSH ? "a push" : "a pop");
	if (R->stamp == e->seq)
		return emu_fail(e, "%s of thread %s written twice in one event", WHAT, emu_tname(e, t));
	if (op == EMU_OP_SET && isnull)
		return emu_fail(e, "%s of thread %s is already null", WHAT, emu_tname(e, t));
	if (op == EMU_OP_SET)
		return emu_fail(e, "%s of thread %s already holds %" PRId64, WHAT, emu_tname(e, t), v);
	if (op == EMU_OP_PUSH && R->depth == EMU_STACK_MAX && !(C->refuse_dup && R->val == v))
		return emu_fail(e, "%s of thread %s: stack full (%d values)", WHAT, emu_tname(e, t),
				EMU_STACK_MAX);
	if (op == EMU_OP_PUSH)
		return emu_fail(e, "%s of thread %s already has %" PRId64 " on top", WHAT,
				emu_tname(e, t), v);
	if (R->depth == 0)
		return emu_fail(e, "%s of thread %s: pop of %" PRId64 " from an empty stack", WHAT,
				emu_tname(e, t), v);
	return emu_fail(e, "%s of thread %s: pop of %" PRId64 " but the top is %" PRId64,
			WHAT, emu_tname(e, t), v, R->val);
}
#undef WHAT

int emu_raw_stack_grow(struct emu *e, struct raw *R)
{
	size_t cap = R->cap;
	if (emu_grow((void **) &R->stack, &cap, R->depth + 1, sizeof *R->stack) != 0)
		return emu_fail(e, "out of memory");
	R->cap = (uint32_t) cap;
	return 0;
}

int emu_raw_write(struct emu *e, size_t t, size_t ch, enum emu_op op, int64_t v, int isnull)
{
	return raw_write(e, t, ch, op, v, isnull);
}

int emu_raw_set_n(struct emu *e, size_t t, const size_t *ch, const int64_t *v, size_t n,
		int isnull)
{
	if (!e->prop.direct) {
		for (size_t i = 0; i < n; i++)
			if (raw_write(e, t, ch[i], EMU_OP_SET, v[i], isnull) != 0)
				return -1;
		return 0;
	}
	/* direct: each write then its views, as raw_write and raw_views one
	 * after the other, with what they share loaded once */
	const struct thr *T = &e->thr[t];
	const struct chan *chans = e->chans;
	struct raw *Rt = &e->raw[t * e->nchans];
	int64_t cpu = T->cpu;
	int oncpu = cpu >= 0 && e->cpu[cpu].rsel == (int64_t) t;
	struct last *Lc = oncpu ? &e->cview[(size_t) cpu * e->nchans] : NULL;
	if (reserve_recs(e, EMU_FILE_THREAD, n) != 0 || reserve_recs(e, EMU_FILE_CPU, n) != 0)
		return -1;
	struct emu_prv_rec *rt = e->batch.prv[EMU_FILE_THREAD], *rc = e->batch.prv[EMU_FILE_CPU];
	size_t nt = e->batch.nprv[EMU_FILE_THREAD], nc = e->batch.nprv[EMU_FILE_CPU];
	const int64_t time = e->dclock - e->rbase;
	const uint64_t seq = e->seq;
	const unsigned state = T->state;
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		size_t c = ch[i];
		const struct chan *C = &chans[c];
		struct raw *R = &Rt[c];
		int64_t x = v[i];
		if (raw_write_q(e, t, c, EMU_OP_SET, x, isnull, 0) != 0) {
			r = -1;
			break;
		}
		int32_t id = C->vrec;
		if (id < 0)
			continue;
		uint32_t type = (uint32_t) id;
		int64_t val = isnull ? 0 : x;
		uint8_t st = isnull ? 1 : 2;
		if ((C->vis >> state) & 1u) {
			struct last *L = &R->tv;
			L->stamp = seq;
			if (view_due(L, C->tpol, st, val))
				rec_put(&rt[nt++], time, t, type, val);
		}
		if (Lc != NULL) {
			struct last *L = &Lc[c];
			L->stamp = seq;
			if (view_due(L, C->cpol, st, val))
				rec_put(&rc[nc++], time, (size_t) cpu, type, val);
		}
	}
	e->batch.nprv[EMU_FILE_THREAD] = nt;
	e->batch.nprv[EMU_FILE_CPU] = nc;
	return r;
}
