/* SPDX-License-Identifier: MIT */
/*
 * engine.c - the emulation engine: per event, find the emitting thread,
 * check the model's guard, look the MCV up in the model's dispatch table,
 * check the event's own rules and run its actions. Actions make direct
 * writes (the thread and CPU system channels in threads.c, raw model
 * channels here, the task machinery in tasks.c); each write that changes
 * something is queued, and the queue is walked to re-evaluate the views
 * that depend on it (thread views on a state change, CPU views when a
 * CPU's running thread changes, both on a raw write; breakdown views hang
 * off the CPU views). The records of an event are buffered and handed to
 * the sinks only if the whole event was accepted. See docs/emu.md.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

const char *const emu_state_names[EMU_NSTATES] = {
	"Unknown", "Running", "Paused", "Dead", "Cooling", "Warming",
};

static int cmp_mark_ref(const void *a, const void *b)
{
	const struct mark_ref *x = a, *y = b;
	return (x->type > y->type) - (x->type < y->type);
}

/* ---- messages ---- */

static void fmt_mcv(char *buf, size_t len, const char mcv[3])
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < 3 && n + 5 < len; i++) {
		unsigned char c = (unsigned char) mcv[i];
		if (c >= 0x21 && c < 0x7f) {
			buf[n++] = (char) c;
			buf[n] = '\0';
		} else {
			n += (size_t) snprintf(buf + n, len - n, "\\x%02x", c);
		}
	}
}

int emu_vfail(struct emu *e, const char *fmt, va_list ap)
{
	char reason[WEFT_ERR_MAX - 256];
	vsnprintf(reason, sizeof reason, fmt, ap);
	if (e->ev != NULL) {
		char mcv[16];
		fmt_mcv(mcv, sizeof mcv, e->ev->mcv);
		const char *where = e->ev->stream && e->ev->stream->relpath ?
				e->ev->stream->relpath : "?";
		int n = snprintf(e->err, sizeof e->err, "%s: event %s at clock %" PRId64 " (offset %" PRIu64
				"): %s", where, mcv, e->ev->rclock, e->ev->offset, reason);
		(void) n;
	} else {
		snprintf(e->err, sizeof e->err, "%s", reason);
	}
	e->failed = 1;
	return -1;
}

int emu_fail(struct emu *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emu_vfail(e, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- small buffers ---- */

int emu_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *np = realloc(*p, n * elem);
	if (np == NULL)
		return -1;
	*p = np;
	*cap = n;
	return 0;
}

int emu_irec_add(struct emu *e, int kind, size_t row, int type, int64_t value, int isnull)
{
	if (__builtin_expect(e->batch.nirecs == e->batch.ireccap, 0) &&
			emu_grow((void **) &e->batch.irecs, &e->batch.ireccap, e->batch.nirecs + 1, sizeof *e->batch.irecs) != 0)
		return emu_fail(e, "out of memory");
	struct emu_rec *r = &e->batch.irecs[e->batch.nirecs++];
	r->time = e->dclock - e->rbase;
	r->value = isnull ? 0 : value;
	r->row = (uint32_t) row;
	r->type = type;
	r->kind = (uint8_t) kind;
	r->isnull = (uint8_t) isnull;
	return 0;
}

int emu_prv_grow(struct emu *e, size_t file, size_t n)
{
	/* A batch (EMU_FLUSH_RECS records in all) fits at once: no array is
	 * doubled past it, which would touch that much fresh memory again in
	 * each of the sets of arrays the engine cycles. */
	size_t need = e->batch.nprv[file] + n;
	size_t cap = e->batch.prvcap[file] ? e->batch.prvcap[file] * 2 : EMU_FLUSH_RECS + EMU_FLUSH_SLACK;
	while (cap < need)
		cap *= 2;
	struct emu_prv_rec *p = realloc(e->batch.prv[file], cap * sizeof *p);
	if (p == NULL)
		return emu_fail(e, "out of memory");
	e->batch.prv[file] = p;
	e->batch.prvcap[file] = cap;
	return 0;
}

/* ---- stream -> thread map ---- */

static size_t ptr_hash(const void *p)
{
	uint64_t x = (uint64_t) (uintptr_t) p;
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return (size_t) x;
}

static int map_build(struct emu *e)
{
	size_t n = 16;
	while (n < e->nthreads * 2 + 2)
		n *= 2;
	e->disp.map = calloc(n, sizeof *e->disp.map);
	if (e->disp.map == NULL)
		return -1;
	e->disp.map_mask = n - 1;
	for (size_t t = 0; t < e->nthreads; t++) {
		const struct weft_stream *s = e->sys->threads[t].stream;
		if (s == NULL)
			continue;
		size_t h = ptr_hash(s) & e->disp.map_mask;
		while (e->disp.map[h].key != NULL && e->disp.map[h].key != s)
			h = (h + 1) & e->disp.map_mask;
		e->disp.map[h].key = s;
		e->disp.map[h].thread = t;
	}
	return 0;
}

static size_t map_find(const struct emu *e, const struct weft_stream *s)
{
	if (s == NULL)
		return SIZE_MAX;
	size_t h = ptr_hash(s) & e->disp.map_mask;
	while (e->disp.map[h].key != NULL) {
		if (e->disp.map[h].key == s)
			return e->disp.map[h].thread;
		h = (h + 1) & e->disp.map_mask;
	}
	return SIZE_MAX;
}

/* ---- construction ---- */

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

static void build_dispatch(struct model_rt *m)
{
	for (size_t i = 0; i < 65536; i++)
		m->disp[i] = -2;
	/* Categories present, then wildcards, then exact values. */
	for (size_t i = 0; i < m->desc->nevents; i++) {
		size_t c = (unsigned char) m->desc->events[i].mcv[1];
		for (size_t v = 0; v < 256; v++)
			if (m->disp[c << 8 | v] == -2)
				m->disp[c << 8 | v] = -1;
	}
	for (size_t i = 0; i < m->desc->nevents; i++) {
		const char *mcv = m->desc->events[i].mcv;
		size_t c = (unsigned char) mcv[1];
		if (mcv[2] == '*')
			for (size_t v = 0; v < 256; v++)
				if (m->disp[c << 8 | v] == -1)
					m->disp[c << 8 | v] = (int16_t) i;
	}
	for (size_t i = 0; i < m->desc->nevents; i++) {
		const char *mcv = m->desc->events[i].mcv;
		if (mcv[2] != '*')
			m->disp[(size_t) (unsigned char) mcv[1] << 8 | (unsigned char) mcv[2]] =
				(int16_t) i;
	}
}

/* The model's flags, by name, become bits shared by every model. */
static int map_flags(struct emu *e, struct model_rt *m, char *err, size_t errlen)
{
	for (size_t i = 0; i < m->desc->nflags; i++) {
		size_t k;
		for (k = 0; k < e->disp.nflags; k++)
			if (strcmp(e->disp.flag_names[k], m->desc->flags[i]) == 0)
				break;
		if (k == e->disp.nflags) {
			if (e->disp.nflags == EMU_MAX_FLAGS) {
				snprintf(err, errlen, "the models use more than %d thread flags",
						EMU_MAX_FLAGS);
				return -1;
			}
			e->disp.flag_names[e->disp.nflags++] = m->desc->flags[i];
		}
		m->flag_bit[i] = 1u << k;
	}
	if (m->desc->guard_flag >= 0)
		m->guard_bit = m->flag_bit[m->desc->guard_flag];
	return 0;
}

static int add_model_chans(struct emu *e, size_t mi, size_t *chcap, char *err, size_t errlen)
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

struct emu *emu_create(const struct emu_sys *sys, const struct emu_model_desc *const *models,
		size_t nmodels, const struct emu_opts *opts, char *err, size_t errlen)
{
	struct emu *e = calloc(1, sizeof *e);
	if (e == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	e->sys = sys;
	if (opts != NULL)
		e->opts = *opts;
	e->nthreads = sys->nthreads;
	e->ncpus = sys->ncpus;
	for (size_t i = 0; i < 256; i++)
		e->disp.model_of_byte[i] = -1;
	e->disp.nmodels = nmodels;
	e->disp.models = calloc(nmodels + 1, sizeof *e->disp.models);
	e->disp.dtab = aligned_alloc(64, EMU_DISP_SLOTS * sizeof *e->disp.dtab);
	if (e->disp.dtab == NULL)
		goto oom;
	memset(e->disp.dtab, 0, EMU_DISP_SLOTS * sizeof *e->disp.dtab);
	size_t nfam = 0;
	for (size_t mi = 0; mi < nmodels; mi++)
		for (size_t ci = 0; ci < models[mi]->nchans; ci++)
			nfam += models[mi]->chans[ci].family == EMU_FAMILY_MARK_TYPES;
	e->cidx.mark_chan = calloc(sys->nmarks * nfam + 1, sizeof *e->cidx.mark_chan);
	if (e->disp.models == NULL || e->cidx.mark_chan == NULL)
		goto oom;
	e->views[0] = (struct emu_view) { "thread", sys->nthreads, 0, 0, NULL };
	e->views[1] = (struct emu_view) { "cpu", sys->ncpus, 0, 0, NULL };
	size_t chcap = 0;
	for (size_t mi = 0; mi < nmodels; mi++) {
		struct model_rt *m = &e->disp.models[mi];
		m->desc = models[mi];
		if (e->disp.model_of_byte[(unsigned char) m->desc->byte] >= 0) {
			snprintf(err, errlen, "two enabled models have the byte '%c'", m->desc->byte);
			goto fail;
		}
		e->disp.model_of_byte[(unsigned char) m->desc->byte] = (int) mi;
		m->disp = malloc(65536 * sizeof *m->disp);
		m->ev = calloc(m->desc->nevents + 1, sizeof *m->ev);
		m->warned = calloc(m->desc->nevents + 1, 1);
		if (m->disp == NULL || m->ev == NULL || m->warned == NULL)
			goto oom;
		m->guard_states = m->desc->guard_states;
		build_dispatch(m);
		for (size_t k = 0; k < m->desc->nevents; k++) {
			const struct emu_event_desc *d = &m->desc->events[k];
			struct ev_rt *E = &m->ev[k];
			E->d = d;
			E->actions = d->actions;
			E->nactions = d->nactions;
			E->smin = d->size_rule == EMU_SIZE_ANY ? 0 : d->size;
			E->smax = d->size_rule == EMU_SIZE_EXACT ? d->size : UINT32_MAX;
			E->slow = d->jumbo || d->warn != NULL || (e->opts.lint && d->lint_size >= 0);
		}
		if (map_flags(e, m, err, errlen) != 0)
			goto fail;
		if (m->desc->has_counters && emu_counters_setup(e, m, err, errlen) != 0)
			goto fail;
		int r = add_model_chans(e, mi, &chcap, err, errlen);
		if (r == -1)
			goto fail;
		if (r != 0)
			goto oom;
		if (m->desc->thread_state_size > 0) {
			m->tstate = calloc(sys->nthreads + 1, m->desc->thread_state_size);
			if (m->tstate == NULL)
				goto oom;
		}
		if (m->desc->tasks.present && emu_tasks_create(e, m) != 0)
			goto oom;
	}
	qsort(e->cidx.mark_chan, e->cidx.nmark_chan, sizeof *e->cidx.mark_chan, cmp_mark_ref);
	for (size_t k = 0; k < e->cidx.nmark_chan; k++)
		if (e->cidx.mark_chan[k].type >= 0 && e->cidx.mark_chan[k].type < 256)
			e->cidx.mark_direct[e->cidx.mark_chan[k].type] = (int32_t) e->cidx.mark_chan[k].chan + 1;
	size_t nt = e->nthreads, nc = e->ncpus, nch = e->nchans;
	e->cidx.tracked = calloc(nch + 1, sizeof *e->cidx.tracked);
	if (e->cidx.tracked == NULL)
		goto oom;
	for (size_t c = 0; c < nch; c++)
		if (e->chans[c].desc->track != EMU_TRACK_ANY)
			e->cidx.tracked[e->cidx.ntracked++] = c;
	for (size_t c = 0; c < nch; c++) {
		struct chan *C = &e->chans[c];
		C->acc_first = SIZE_MAX;
		if (!e->opts.no_summary && C->info.values != NULL && C->info.nvalues > 0 &&
				C->info.prv_type > 0 && C->mark_type < 0) {
			C->acc_first = e->nacc;
			e->nacc += C->info.nvalues;
			for (size_t i = 0; i < C->info.nvalues && i < 127; i++) {
				int64_t v = C->info.values[i].value;
				if (v >= 0 && v < 128 && C->acc_lut[v] == 0)
					C->acc_lut[v] = (int8_t) (i + 1);
			}
		}
	}
	e->acc = calloc(nt * e->nacc + 1, sizeof *e->acc);
	e->thr = calloc(nt + 1, sizeof *e->thr);
	e->cpu = calloc(nc + 1, sizeof *e->cpu);
	e->raw = calloc(nt * nch + 1, sizeof *e->raw);
	e->cview = calloc(nc * nch + 1, sizeof *e->cview);
	if (!e->thr || !e->cpu || !e->raw || !e->cview || !e->acc)
		goto oom;
	for (size_t t = 0; t < nt; t++) {
		const struct emu_sys_thread *st = &sys->threads[t];
		e->thr[t].cpu = NO_CPU;
		e->thr[t].tid = st->tid;
		e->thr[t].proc = st->proc;
		e->thr[t].loom = st->loom;
		e->thr[t].pid = sys->procs[st->proc].pid;
		/* Initial raw values (idle states), set without a record. */
		for (size_t c = 0; c < nch; c++) {
			const struct emu_chan_desc *d = e->chans[c].desc;
			if (d->has_initial && e->chans[c].mark_type < 0 && e->chans[c].counter < 0) {
				e->raw[t * nch + c].depth = 1;
				e->raw[t * nch + c].val = d->initial;
			}
		}
	}
	for (size_t c = 0; c < nc; c++)
		e->cpu[c].rsel = -1;
	if (map_build(e) != 0)
		goto oom;
	if (e->opts.breakdown) {
		for (size_t mi = 0; mi < nmodels; mi++) {
			if (e->disp.models[mi].desc->breakdown.kind == EMU_BD_NONE)
				continue;
			int r = emu_bd_create(e, mi, err, errlen);
			if (r < 0)
				goto fail;
		}
	}
	return e;
oom:
	snprintf(err, errlen, "out of memory creating the emulator");
fail:
	emu_destroy(e);
	return NULL;
}

static void lazy_free(struct emu *e);

void emu_destroy(struct emu *e)
{
	if (e == NULL)
		return;
	lazy_free(e);
	free(e->cuts);
	emu_loss_destroy(e);
	for (size_t m = 0; m < e->disp.nmodels && e->disp.models; m++) {
		struct model_rt *M = &e->disp.models[m];
		free(M->disp);
		free(M->ev);
		free(M->warned);
		free(M->tstate);
		free(M->chan_of_desc);
		free(M->dyn);
		for (size_t k = 0; k < M->ncounters; k++)
			free(M->counter_names[k]);
		free(M->counter_names);
		emu_tasks_destroy(M);
	}
	for (size_t b = 0; b < e->nbd; b++)
		emu_bd_destroy(e->bd[b]);
	if (e->raw != NULL)
		for (size_t i = 0; i < e->nthreads * e->nchans; i++)
			free(e->raw[i].stack);
	free(e->disp.models);
	free(e->disp.dtab);
	free(e->cidx.mark_chan);
	free(e->chans);
	free(e->cidx.tracked);
	free(e->thr);
	free(e->cpu);
	free(e->raw);
	free(e->cview);
	free(e->acc);
	free(e->disp.map);
	free(e->prop.q);
	for (size_t f = 0; f < EMU_MAX_VIEWS; f++) {
		free(e->batch.prv[f]);
		for (size_t k = 0; k < EMU_BATCH_KEEP; k++)
			free(e->batch.prv_kept[k][f]);
	}
	free(e->batch.irecs);
	free(e);
}

int emu_add_sink(struct emu *e, const struct emu_sink *sink)
{
	if (e->batch.nsinks == EMU_MAX_SINKS) {
		snprintf(e->err, sizeof e->err, "too many output sinks");
		return -1;
	}
	e->batch.sinks[e->batch.nsinks++] = *sink;
	if (sink->internal)
		e->batch.internal = 1;
	return 0;
}

const char *emu_error(const struct emu *e) { return e->err; }
const struct emu_sys *emu_system(const struct emu *e) { return e->sys; }
int64_t emu_duration(const struct emu *e)
{
	if (!e->window.bounds.has_from && !e->window.bounds.has_to)
		return e->duration;
	int64_t end = e->window.stopped ? e->window.to : e->duration;
	return end > e->rbase ? end - e->rbase : 0;
}
uint64_t emu_nevents(const struct emu *e) { return e->nevents; }
size_t emu_nchans(const struct emu *e) { return e->nchans; }
const struct emu_chan_info *emu_chan_at(const struct emu *e, size_t i) { return &e->chans[i].info; }
size_t emu_nviews(const struct emu *e) { return 2 + e->nbd; }
const struct emu_view *emu_view_at(const struct emu *e, size_t i) { return &e->views[i]; }

/* ---- values ---- */

int emu_get_val(struct emu *e, const struct emu_val *v, int64_t *out, int *isnull)
{
	const struct weft_event *ev = e->ev;
	*isnull = 0;
	*out = 0;
	switch (v->src) {
	case EMU_VAL_NULL:
		*isnull = 1;
		*out = 0;
		return 0;
	case EMU_VAL_CONST:
		*out = v->k;
		return 0;
	case EMU_VAL_I32:
	case EMU_VAL_U32:
	case EMU_VAL_TYPE_GID: {
		if ((uint64_t) v->k + 4 > ev->payload_size)
			return emu_fail(e, "payload of %" PRIu32 " bytes has no 32-bit field at offset %"
					PRId64, ev->payload_size, v->k);
		uint32_t x;
		memcpy(&x, ev->payload + v->k, 4);
		if (v->src == EMU_VAL_I32) {
			*out = (int32_t) x;
			return 0;
		}
		if (v->src == EMU_VAL_U32) {
			*out = x;
			return 0;
		}
		const struct model_rt *m = &e->disp.models[e->disp.model_of_byte[(unsigned char) ev->mcv[0]]];
		return emu_tasks_type_gid(e, e->cur_thread, (struct model_rt *) m, x, out);
	}
	case EMU_VAL_I64:
	case EMU_VAL_U64: {
		int64_t x;
		if ((uint64_t) v->k + 8 > ev->payload_size)
			return emu_fail(e, "payload of %" PRIu32 " bytes has no 64-bit field at offset %"
					PRId64, ev->payload_size, v->k);
		memcpy(&x, ev->payload + v->k, 8);
		*out = x;
		return 0;
	}
	case EMU_VAL_TASK_GID: {
		struct model_rt *m = &e->disp.models[e->disp.model_of_byte[(unsigned char) ev->mcv[0]]];
		return emu_tasks_event_gid(e, m, out);
	}
	}
	return emu_fail(e, "bad value source in the model description");
}

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
static __attribute__((noinline, cold)) int raw_refuse(struct emu *e, size_t t, size_t ch,
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

static __attribute__((noinline)) int raw_stack_grow(struct emu *e, struct raw *R)
{
	size_t cap = R->cap;
	if (emu_grow((void **) &R->stack, &cap, R->depth + 1, sizeof *R->stack) != 0)
		return emu_fail(e, "out of memory");
	R->cap = (uint32_t) cap;
	return 0;
}

static inline __attribute__((always_inline)) int raw_views(struct emu *e, size_t t, size_t ch);

static inline __attribute__((always_inline)) int raw_write_q(struct emu *e, size_t t, size_t ch,
		enum emu_op op, int64_t v, int isnull, int queue)
{
	const struct chan *C = &e->chans[ch];
	struct raw *R = &e->raw[t * e->nchans + ch];
	if (__builtin_expect((v == 0 && !isnull && !C->zero_ok) || R->stamp == e->seq, 0))
		return raw_refuse(e, t, ch, op, v, isnull);
	int kind;
	switch (op) {
	case EMU_OP_SET:
		if (__builtin_expect(C->kind != EMU_CHAN_SINGLE || (C->refuse_dup &&
				(isnull ? R->depth == 0 : R->depth == 1 && R->val == v)), 0))
			return raw_refuse(e, t, ch, op, v, isnull);
		emu_acc(e, t, ch, R);
		R->depth = isnull ? 0 : 1;
		R->val = isnull ? 0 : v;
		kind = EMU_REC_RAW_SET;
		break;
	case EMU_OP_PUSH:
		if (__builtin_expect(C->kind != EMU_CHAN_STACK || R->depth == EMU_STACK_MAX ||
				(C->refuse_dup && R->depth > 0 && R->val == v), 0))
			return raw_refuse(e, t, ch, op, v, isnull);
		if (__builtin_expect(R->depth == R->cap, 0) && raw_stack_grow(e, R) != 0)
			return -1;
		emu_acc(e, t, ch, R);
		R->stack[R->depth++] = v;
		R->val = v;
		kind = EMU_REC_RAW_PUSH;
		break;
	default:
		if (__builtin_expect(C->kind != EMU_CHAN_STACK || R->depth == 0 || R->val != v, 0))
			return raw_refuse(e, t, ch, op, v, isnull);
		emu_acc(e, t, ch, R);
		R->depth--;
		R->val = R->depth > 0 ? R->stack[R->depth - 1] : 0;
		kind = EMU_REC_RAW_POP;
		break;
	}
	R->stamp = e->seq;
	if (emu_irec(e, kind, t, C->info.prv_type, v, isnull) != 0)
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

int emu_raw_write(struct emu *e, size_t t, size_t ch, enum emu_op op, int64_t v, int isnull)
{
	return raw_write(e, t, ch, op, v, isnull);
}


/* A value of an action: constants inline, the rest by emu_get_val. */
static inline int get_val(struct emu *e, const struct emu_val *v, int64_t *out, int *isnull)
{
	if (__builtin_expect(v->src == EMU_VAL_CONST, 1)) {
		*out = v->k;
		*isnull = 0;
		return 0;
	}
	return emu_get_val(e, v, out, isnull);
}

static int act_raw(struct emu *e, size_t t, const struct model_rt *m, const struct emu_action *a)
{
	size_t ch = 0;
	if (a->sel.src != EMU_VAL_NULL) {
		int64_t type;
		int isnull;
		if (emu_get_val(e, &a->sel, &type, &isnull) != 0 || find_mark_chan(e, type, &ch) != 0)
			return -1;
	} else {
		ch = m->chan_of_desc[a->chan];
	}
	int64_t v;
	int isnull;
	if (get_val(e, &a->val, &v, &isnull) != 0)
		return -1;
	return raw_write(e, t, ch, a->op, v, isnull);
}

/* ---- propagation ---- */

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
		size_t row, int type, int64_t v)
{
	r->time = time;
	r->value = v;
	r->row = (uint32_t) row;
	r->type = type;
}

/* A view re-evaluated to (isnull, v): a record unless its policy skips it.
 * The last state keeps 0 as the value of a null. */
static inline __attribute__((always_inline)) void view_emit(struct pwalk *P, struct last *L,
		unsigned pol, int file, size_t row, int type, int64_t v, int isnull)
{
	if (type == 0)
		return;
	v = isnull ? 0 : v;
	if (view_due(L, pol, isnull ? 1 : 2, v))
		rec_put(&P->rec[file][P->nrec[file]++], P->time, row, type, v);
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
	view_emit(P, L, C->tpol, EMU_FILE_THREAD, t, C->info.prv_type, R->val, isnull);
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
	view_emit(P, L, C->cpol, EMU_FILE_CPU, c, C->info.prv_type, v, isnull);
	return 0;
}

/* Room for the records the walk of the queue may make: at most one per
 * view it evaluates, and a view is evaluated once an event. */
static int reserve_recs(struct emu *e, size_t file, size_t n)
{
	if (e->batch.prvcap[file] - e->batch.nprv[file] >= n)
		return 0;
	return emu_prv_grow(e, file, n);
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
static __attribute__((noinline)) int propagate_raw(struct emu *e, size_t a, size_t ch)
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
static __attribute__((noinline)) int propagate_queue(struct emu *e)
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
static __attribute__((noinline)) int lazy_mark(struct emu *e)
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
static int lazy_eval(struct emu *e)
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
	int type = C->info.prv_type;
	if (type == 0)
		return 0;
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
			rec_put(&e->batch.prv[EMU_FILE_THREAD][e->batch.nprv[EMU_FILE_THREAD]++], time, t, type,
					val);
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
	rec_put(&e->batch.prv[EMU_FILE_CPU][e->batch.nprv[EMU_FILE_CPU]++], time, (size_t) cpu, type, val);
	return 0;
}

/* The views that depend on the writes of the event. */
static inline int propagate(struct emu *e)
{
	if (__builtin_expect(e->prop.lazy_raw != NULL, 0))
		return lazy_mark(e);
	if (e->prop.qlen == 1 && e->prop.q[0].kind == TRIG_RAW)
		return propagate_raw(e, e->prop.q[0].a, e->prop.q[0].b);
	return e->prop.qlen != 0 ? propagate_queue(e) : 0;
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
		int type = C->info.prv_type;
		if (type == 0)
			continue;
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

/* An event whose only action is a raw write of a constant (most events),
 * inlined in run_event.
 * Muted, lazy or breakdown runs take the general path. */
static inline __attribute__((always_inline)) int fast_raw(struct emu *e, size_t t, size_t ch, enum emu_op op,
		int64_t v)
{
	if (__builtin_expect(e->muted || e->nbd != 0, 0)) {
		if (raw_write(e, t, ch, op, v, 0) != 0 || propagate(e) != 0)
			return -1;
		return e->nbd ? emu_bd_commit(e) : 0;
	}
	if (raw_write_q(e, t, ch, op, v, 0, 0) != 0)
		return -1;
	return raw_views(e, t, ch);
}

/* ---- the event ---- */

static int lint_event(struct emu *e, const struct emu_event_desc *d)
{
	const struct weft_event *ev = e->ev;
	if (d->lint_size < 0)
		return 0;
	if (ev->jumbo)
		return emu_fail(e, "lint: %s is a jumbo event; its signature is a normal event of %d "
				"payload bytes", d->what, d->lint_size);
	if (ev->payload_size != (uint32_t) d->lint_size)
		return emu_fail(e, "lint: %s has %" PRIu32 " payload bytes; its signature has %d",
				d->what, ev->payload_size, d->lint_size);
	return 0;
}

static const struct emu_hook_ops hook_ops;

static int guard_fail(struct emu *e, size_t t, const struct model_rt *m)
{
	const struct thr *T = &e->thr[t];
	if (m->guard_bit && (T->flags & m->guard_bit))
		return emu_fail(e, "thread %s is %s (flag %s), and events of the %s model are "
				"refused then", emu_tname(e, t),
				strcmp(e->disp.flag_names[__builtin_ctz(m->guard_bit)], "out-of-cpu") == 0 ?
				"out of its CPU" : "flagged",
				e->disp.flag_names[__builtin_ctz(m->guard_bit)], m->desc->name);
	return emu_fail(e, "thread %s is %s, but events of the %s model need it %s", emu_tname(e, t),
			emu_state_names[T->state], m->desc->name,
			m->desc->guard_states == EMU_STM(EMU_ST_RUNNING) ? "Running" :
			"Running, Cooling or Warming");
}

/* One action of event description d of model m, by thread t (op: a->op). */
static inline __attribute__((always_inline)) int apply_action(struct emu *e, size_t t,
		struct model_rt *m, const struct emu_event_desc *d, const struct emu_action *a,
		enum emu_op op)
{
	const struct weft_event *ev = e->ev;
	int r = 0;
	switch (op) {
	case EMU_OP_NONE:
		break;
	case EMU_OP_THREAD_START:
		r = emu_act_start(e, t, a);
		break;
	case EMU_OP_THREAD_STATE:
		r = emu_act_state(e, t, a);
		break;
	case EMU_OP_AFFINITY_SELF:
		r = emu_act_aff_self(e, t, a);
		break;
	case EMU_OP_AFFINITY_REMOTE:
		r = emu_act_aff_remote(e, t, a);
		break;
	case EMU_OP_SET:
	case EMU_OP_PUSH:
	case EMU_OP_POP:
		r = act_raw(e, t, m, a);
		break;
	case EMU_OP_HOOK: {
		struct emu_hook_ctx ctx = { &hook_ops, e, ev, d, t, NULL, e->dclock };
		if (m->tstate != NULL)
			ctx.tstate = m->tstate + t * m->desc->thread_state_size;
		r = a->hook(&ctx);
		break;
	}
	case EMU_OP_FLAG:
		if (a->val.k)
			e->thr[t].flags |= m->flag_bit[a->flag];
		else
			e->thr[t].flags &= ~m->flag_bit[a->flag];
		break;
	case EMU_OP_TYPE_CREATE:
		r = emu_act_type_create(e, t, m);
		break;
	case EMU_OP_TASK_CREATE:
		r = emu_act_task_create(e, t, m, a);
		break;
	case EMU_OP_TASK:
		r = emu_act_task(e, t, m, a);
		break;
	case EMU_OP_COUNTERS:
		r = emu_act_counters(e, t, m);
		break;
	}
	return r;
}

/* The rare checks of an event (E->slow, or a payload of the wrong size), in
 * the reference's order: 0 to run its actions, 1 when it is only warned
 * about (accepted, no effect), -1 when refused. */
static __attribute__((noinline, cold)) int event_checks(struct emu *e, size_t t,
		struct model_rt *m, size_t idx)
{
	const struct weft_event *ev = e->ev;
	const struct emu_event_desc *d = m->ev[idx].d;
	uint32_t ps = ev->payload_size;
	if (d->jumbo && !ev->jumbo)
		return emu_fail(e, "%s must be a jumbo event", d->what);
	if (ps < m->ev[idx].smin || ps > m->ev[idx].smax) {
		if (d->size_rule == EMU_SIZE_EXACT)
			return emu_fail(e, "%s needs exactly %" PRIu32 " payload bytes, it has %" PRIu32,
					d->what, d->size, ps);
		return emu_fail(e, "%s needs at least %" PRIu32 " payload bytes, it has %" PRIu32,
				d->what, d->size, ps);
	}
	if (e->opts.lint && lint_event(e, d) != 0)
		return -1;
	if (d->warn != NULL) {
		if (!m->warned[idx])
			emu_warn(e, t, "%s (%s event at clock %" PRId64 "; warned once)", d->warn,
					m->desc->name, ev->rclock);
		m->warned[idx] = 1;
		return 1;
	}
	return 0;
}

static inline size_t disp_slot(uint32_t key)
{
	return (key * UINT32_C(0x9e3779b1)) >> (32 - 9) & (EMU_DISP_SLOTS - 1);
}

/* The dispatch entry of an MCV not in the table (or another MCV in its
 * slot): resolved from the model's tables and stored in the slot, or, for
 * an event its model does not know, written to *tmp (idx < 0) and not
 * stored. NULL when no enabled model takes the event (refused). */
static __attribute__((noinline)) const struct disp_ent *disp_miss(struct emu *e, uint32_t key,
		struct disp_ent *tmp)
{
	unsigned char mb = (unsigned char) key;
	int mi = e->disp.model_of_byte[mb];
	if (mi < 0) {
		const char *name = e->opts.model_name ? e->opts.model_name(mb) : NULL;
		if (name != NULL)
			emu_fail(e, "the %s model is not enabled (no stream requires it; "
					"-a enables every model)", name);
		else
			emu_fail(e, "no model is registered for the model byte of this event");
		return NULL;
	}
	struct model_rt *m = &e->disp.models[mi];
	int idx = m->disp[(key >> 8 & 0xff) << 8 | (key >> 16 & 0xff)];
	struct disp_ent *D = idx >= 0 ? &e->disp.dtab[disp_slot(key)] : tmp;
	*D = (struct disp_ent) { .key = key, .guard_states = (uint16_t) m->guard_states,
		.guard_bit = (uint16_t) m->guard_bit, .idx = (int16_t) idx, .op0 = EMU_OP_NONE,
		.m = m };
	if (idx >= 0) {
		const struct ev_rt *E = &m->ev[idx];
		D->smin = E->smin;
		D->smax = E->smax;
		D->slow = (uint8_t) E->slow;
		D->nactions = (uint16_t) E->nactions;
		D->actions = E->actions;
		if (E->nactions > 0)
			D->op0 = (uint8_t) E->actions[0].op;
		D->d = E->d;
		const struct emu_action *a = E->actions;
		if (E->nactions == 1 && (a->op == EMU_OP_SET || a->op == EMU_OP_PUSH ||
				a->op == EMU_OP_POP) && a->sel.src == EMU_VAL_NULL &&
				a->val.src == EMU_VAL_CONST) {
			D->fast = 1;
			D->fch = (uint32_t) m->chan_of_desc[a->chan];
			D->fv = a->val.k;
		}
		D->direct = E->nactions == 1 && a->op == EMU_OP_TASK;
	}
	return D;
}

static int run_event(struct emu *e, size_t t)
{
	const struct weft_event *ev = e->ev;
	/* Byte loads, not one wider load: the reader stores the MCV a byte
	 * at a time and a wider load would miss store forwarding. */
	uint32_t key = (uint32_t) (unsigned char) ev->mcv[0] |
		(uint32_t) (unsigned char) ev->mcv[1] << 8 |
		(uint32_t) (unsigned char) ev->mcv[2] << 16 | EMU_DISP_VALID;
	const struct disp_ent *D = &e->disp.dtab[disp_slot(key)];
	struct disp_ent tmp;
	if (__builtin_expect(D->key != key, 0) && (D = disp_miss(e, key, &tmp)) == NULL)
		return -1;
	struct model_rt *m = D->m;
	const struct thr *T = &e->thr[t];
	if (__builtin_expect((D->guard_states && !(D->guard_states & EMU_STM(T->state))) ||
			(T->flags & D->guard_bit), 0) &&
			!(e->lossy != NULL && emu_loss_guard_waived(e, t, m)))
		return guard_fail(e, t, m);
	if (__builtin_expect(D->idx < 0, 0))
		return emu_fail(e, "unknown event %sof the %s model", D->idx == -2 ? "category " : "",
				m->desc->name);
	e->cur_desc = D->d;
	uint32_t ps = ev->payload_size;
	if (__builtin_expect(D->slow || ps < D->smin || ps > D->smax, 0)) {
		int r = event_checks(e, t, m, (size_t) D->idx);
		if (r != 0)
			return r < 0 ? -1 : 0;
	}
	if (D->fast)
		return fast_raw(e, t, D->fch, (enum emu_op) D->op0, D->fv);
	/* the first action's op from the entry: the jump waits for no load
	 * of the action */
	/* A task action's raw writes evaluate their views as they are made
	 * (it changes no thread state, and each channel is written at most
	 * once an event): not with views muted or lazy, breakdown inputs, or
	 * threads that lost events (whose refused events are skipped, and a
	 * view evaluated before the refusal would be out of step). */
	e->prop.direct = D->direct && !(e->muted | (e->nbd != 0) | (e->loss != NULL));
	if (D->nactions > 0 && apply_action(e, t, m, D->d, &D->actions[0],
			(enum emu_op) D->op0) != 0) {
		e->prop.direct = 0;
		return -1;
	}
	e->prop.direct = 0;
	for (size_t i = 1; i < D->nactions; i++)
		if (apply_action(e, t, m, D->d, &D->actions[i], D->actions[i].op) != 0)
			return -1;
	if (propagate(e) != 0)
		return -1;
	return e->nbd ? emu_bd_commit(e) : 0;
}

int emu_settle(struct emu *e)
{
	if (propagate(e) != 0)
		return -1;
	return e->nbd ? emu_bd_commit(e) : 0;
}

__attribute__((noinline, cold))
static void bd_save(const struct emu *e, size_t *nb)
{
	for (size_t b = 0; b < e->nbd; b++)
		nb[b] = e->batch.nprv[2 + b];
}

/* ---- the window (--from/--to) ---- */

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
static void lazy_free(struct emu *e)
{
	free(e->prop.lazy_raw);
	free(e->prop.lazy_thr);
	free(e->prop.lazy_cv);
	free(e->prop.lazy_cpu);
	e->prop.lazy_raw = e->prop.lazy_thr = e->prop.lazy_cv = e->prop.lazy_cpu = NULL;
}

static void win_start(struct emu *e)
{
	e->window.from = e->window.bounds.has_from ? win_dclock(e, e->window.bounds.from_rel, e->window.bounds.from) : 0;
	e->window.to = e->window.bounds.has_to ? win_dclock(e, e->window.bounds.to_rel, e->window.bounds.to) : INT64_MAX;
	e->rbase = e->window.bounds.has_from ? e->window.from : 0;
	/* lazy views before T0 (not with breakdown views, whose selection
	 * follows every CPU view change, nor with losses); without the
	 * memory, the views are evaluated as usual */
	if (e->muted && e->nbd == 0 && e->loss == NULL) {
		size_t nch = e->nchans ? e->nchans : 1;
		e->prop.lazy_raw = calloc(e->nthreads ? e->nthreads * nch : 1, 1);
		e->prop.lazy_thr = calloc(e->nthreads ? e->nthreads : 1, 1);
		e->prop.lazy_cv = calloc(e->ncpus ? e->ncpus * nch : 1, 1);
		e->prop.lazy_cpu = calloc(e->ncpus ? e->ncpus : 1, 1);
		if (!e->prop.lazy_raw || !e->prop.lazy_thr || !e->prop.lazy_cv || !e->prop.lazy_cpu)
			lazy_free(e);
	}
}

/* The state at T0, written at T0 (time 0 of the window): every row and
 * Paraver type with a value other than 0, then the internal records. */

int emu_win_snapshot(struct emu *e)
{
	if (e->prop.lazy_raw != NULL) {
		int lr = lazy_eval(e);
		lazy_free(e);
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
			r |= emu_rec(e, EMU_FILE_THREAD, t, 2, T->tidv);
		if (T->state != EMU_ST_UNKNOWN)
			r |= emu_rec(e, EMU_FILE_THREAD, t, 4, T->state);
		if (T->aff != 0)
			r |= emu_rec(e, EMU_FILE_THREAD, t, 6, T->aff);
		for (size_t ch = 0; ch < nch; ch++) {
			const struct last *L = &e->raw[t * nch + ch].tv;
			int type = e->chans[ch].info.prv_type;
			if (type != 0 && L->st == 2 && L->v != 0)
				r |= emu_rec(e, EMU_FILE_THREAD, t, type, L->v);
		}
	}
	for (size_t c = 0; c < e->ncpus && r == 0; c++) {
		const struct cpu *C = &e->cpu[c];
		if (C->pidv != 0)
			r |= emu_rec(e, EMU_FILE_CPU, c, 1, C->pidv);
		if (C->tidv != 0)
			r |= emu_rec(e, EMU_FILE_CPU, c, 2, C->tidv);
		if (C->nrun_written && C->nrun_v != 0)
			r |= emu_rec(e, EMU_FILE_CPU, c, 3, C->nrun_v);
		for (size_t ch = 0; ch < nch; ch++) {
			const struct last *L = &e->cview[c * nch + ch];
			int type = e->chans[ch].info.prv_type;
			if (type != 0 && L->st == 2 && L->v != 0)
				r |= emu_rec(e, EMU_FILE_CPU, c, type, L->v);
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
				r |= emu_irec(e, EMU_REC_RAW_SET, t, C->info.prv_type, R->val, 0);
				continue;
			}
			for (uint32_t k = 0; k < R->depth && r == 0; k++)
				r |= emu_irec(e, EMU_REC_RAW_PUSH, t, C->info.prv_type, R->stack[k], 0);
		}
	}
	e->dclock = saved;
	return r ? -1 : 0;
}

int emu_event(struct emu *e, const struct weft_event *ev)
{
	if (e->failed)
		return -1;
	e->ev = ev;
	size_t t;
	if (ev->stream == e->disp.last_stream) {
		t = e->disp.last_thread;
	} else {
		t = map_find(e, ev->stream);
		e->disp.last_stream = ev->stream;
		e->disp.last_thread = t;
	}
	if (t == SIZE_MAX)
		return emu_fail(e, "the event comes from a stream that is not a thread of the system");
	if (!e->started) {
		e->started = 1;
		e->first_clock = ev->sclock;
		win_start(e);
	}
	int64_t dclock = ev->sclock - e->first_clock;
	if (__builtin_expect(dclock > e->window.to, 0)) {
		e->window.stopped = 1;
		return 1;
	}
	if (__builtin_expect(e->muted, 0)) {
		if (dclock <= e->window.from)
			e->window.nmuted++;
		else if (emu_win_snapshot(e) != 0)
			return -1;
	}
	/* threads that lost events: where their lost intervals begin and end */
	if (__builtin_expect(e->loss != NULL, 0) && emu_loss_before(e, t, ev, dclock) != 0)
		return -1;
	e->dclock = dclock;
	e->duration = e->dclock;
	e->seq++;
	e->nevents++;
	e->cur_thread = t;
	e->prop.qlen = 0;
	/* Kept in registers (a 16-byte copy of nprv[] would load across two
	 * 8-byte stores of the previous event and miss store forwarding). */
	size_t n0 = e->batch.nprv[0];
	__asm__("" : "+r"(n0));
	size_t n1 = e->batch.nprv[1], ni = e->batch.nirecs;
	size_t nb[EMU_MAX_BD] = { 0 };
	if (__builtin_expect(e->nbd != 0, 0))
		bd_save(e, nb);
	if (run_event(e, t) != 0 && !(e->loss != NULL && emu_loss_skip(e, t) == 0)) {
		/* Nothing of a refused event is written; what came before is
		 * (a skipped event of a thread that lost events keeps it). */
		e->batch.nprv[0] = n0;
		e->batch.nprv[1] = n1;
		e->batch.nirecs = ni;
		for (size_t b = 0; b < e->nbd; b++)
			e->batch.nprv[2 + b] = nb[b];
		return -1;
	}
	if (e->batch.nprv[0] + e->batch.nprv[1] + e->batch.nirecs >= EMU_FLUSH_RECS)
		return emu_flush(e);
	return 0;
}

int emu_thread_close(struct emu *e, size_t t, int64_t sclock)
{
	if (e->failed)
		return -1;
	if (t >= e->nthreads || !e->started)
		return 0;
	if (sclock - e->first_clock > e->window.to)
		return 0; /* after the window: not emulated */
	enum emu_state st = e->thr[t].state;
	if (st == EMU_ST_UNKNOWN || st == EMU_ST_DEAD)
		return 0; /* it never started, or it ended */
	/* the thread-end event of the first model that names one (ovni) */
	struct model_rt *m = NULL;
	for (size_t k = 0; k < e->disp.nmodels && m == NULL; k++)
		if (e->disp.models[k].desc->has_thread_end)
			m = &e->disp.models[k];
	if (m == NULL)
		return emu_fail(e, "thread %s is cut short, but no model names the event that "
				"ends a thread (thread-end:)", emu_tname(e, t));
	const struct emu_event_desc *d = &m->desc->events[m->desc->thread_end];
	/* as if the thread had emitted it right after its last event: a
	 * payload of none, the clock of its last event */
	static const uint8_t none[1];
	struct weft_event ev;
	memset(&ev, 0, sizeof ev);
	memcpy(ev.mcv, d->mcv, 3);
	ev.rclock = sclock;
	ev.sclock = sclock;
	ev.payload = none;
	ev.stream = e->sys->threads[t].stream;
	e->ev = &ev;
	int64_t dclock = sclock - e->first_clock;
	/* records go in time order: never before what was written */
	dclock = dclock > e->dclock ? dclock : e->dclock;
	if (e->muted && dclock > e->window.from && emu_win_snapshot(e) != 0) {
		e->ev = NULL;
		return -1;
	}
	e->dclock = dclock;
	if (e->dclock > e->duration)
		e->duration = e->dclock;
	e->seq++;
	e->cur_thread = t;
	e->cur_desc = d;
	e->prop.qlen = 0;
	size_t n0 = e->batch.nprv[0], n1 = e->batch.nprv[1], ni = e->batch.nirecs;
	size_t nb[EMU_MAX_BD] = { 0 };
	if (e->nbd != 0)
		bd_save(e, nb);
	int r = 0;
	for (size_t i = 0; i < d->nactions && r == 0; i++) {
		struct emu_action a = d->actions[i];
		/* the state condition is waived: a Paused or Warming thread
		 * ends as well */
		if (a.op == EMU_OP_THREAD_STATE)
			a.from = ~0u;
		r = apply_action(e, t, m, d, &a, a.op);
	}
	if (r == 0)
		r = propagate(e);
	if (r == 0 && e->nbd)
		r = emu_bd_commit(e);
	e->ev = NULL;
	if (r != 0) {
		e->batch.nprv[0] = n0;
		e->batch.nprv[1] = n1;
		e->batch.nirecs = ni;
		for (size_t b = 0; b < e->nbd; b++)
			e->batch.nprv[2 + b] = nb[b];
		return -1;
	}
	if (e->batch.nprv[0] + e->batch.nprv[1] + e->batch.nirecs >= EMU_FLUSH_RECS)
		return emu_flush(e);
	return 0;
}

int emu_flush(struct emu *e)
{
	size_t nv = 2 + e->nbd, total = e->batch.nirecs;
	for (size_t f = 0; f < nv; f++)
		total += e->batch.nprv[f];
	if (total == 0)
		return e->failed ? -1 : 0;
	struct emu_batch b;
	memset(&b, 0, sizeof b);
	for (size_t f = 0; f < nv; f++) {
		b.prv[f] = e->batch.prv[f];
		b.nprv[f] = e->batch.nprv[f];
	}
	b.internal = e->batch.irecs;
	b.ninternal = e->batch.nirecs;
	struct emu_batch bp = b;
	bp.internal = NULL;
	bp.ninternal = 0;
	int r = 0;
	for (size_t s = 0; s < e->batch.nsinks; s++) {
		char err[WEFT_ERR_MAX];
		if (e->batch.sinks[s].records(e->batch.sinks[s].self, e->batch.sinks[s].internal ? &b : &bp,
				err, sizeof err) != 0) {
			if (!e->failed)
				snprintf(e->err, sizeof e->err, "%s", err);
			e->failed = 1;
			r = -1;
		}
	}
	/* The sinks may still read this set during their next EMU_BATCH_KEEP
	 * calls: fill the oldest kept one, which they are done with. */
	for (size_t f = 0; f < nv; f++) {
		struct emu_prv_rec *tp = e->batch.prv_kept[0][f];
		size_t tc = e->batch.prvcap_kept[0][f];
		for (size_t k = 0; k + 1 < EMU_BATCH_KEEP; k++) {
			e->batch.prv_kept[k][f] = e->batch.prv_kept[k + 1][f];
			e->batch.prvcap_kept[k][f] = e->batch.prvcap_kept[k + 1][f];
		}
		e->batch.prv_kept[EMU_BATCH_KEEP - 1][f] = e->batch.prv[f];
		e->batch.prvcap_kept[EMU_BATCH_KEEP - 1][f] = e->batch.prvcap[f];
		e->batch.prv[f] = tp;
		e->batch.prvcap[f] = tc;
		e->batch.nprv[f] = 0;
	}
	e->batch.nirecs = 0;
	return r != 0 || e->failed ? -1 : 0;
}

/* ---- the hook interface ---- */

__attribute__((format(printf, 2, 0)))
static int hook_fail(struct emu_hook_ctx *ctx, const char *fmt, va_list ap)
{
	struct emu *e = ctx->engine;
	e->ev = ctx->ev;
	return emu_vfail(e, fmt, ap);
}

__attribute__((format(printf, 4, 0)))
static void vsay(struct emu *e, size_t thread, void (*say)(void *, const char *),
		const char *fmt, va_list ap)
{
	if (say == NULL)
		return;
	char msg[WEFT_ERR_MAX], full[WEFT_ERR_MAX + 256];
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (thread < e->nthreads)
		snprintf(full, sizeof full, "%s: %s", e->sys->threads[thread].relpath, msg);
	else
		snprintf(full, sizeof full, "%s", msg);
	say(e->opts.warn_ctx, full);
}

void emu_warn(struct emu *e, size_t thread, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(e, thread, e->opts.warn, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 0)))
static void hook_warn(struct emu_hook_ctx *ctx, const char *fmt, va_list ap)
{
	struct emu *e = ctx->engine;
	vsay(e, ctx->thread, e->opts.warn, fmt, ap);
}

__attribute__((format(printf, 2, 0)))
static void hook_info(struct emu_hook_ctx *ctx, const char *fmt, va_list ap)
{
	struct emu *e = ctx->engine;
	vsay(e, ctx->thread, e->opts.info, fmt, ap);
}

static enum emu_state hook_thread_state(const struct emu_hook_ctx *ctx)
{
	const struct emu *e = ctx->engine;
	return e->thr[ctx->thread].state;
}

static int hook_lint(const struct emu_hook_ctx *ctx)
{
	const struct emu *e = ctx->engine;
	return e->opts.lint;
}

static const struct emu_hook_ops hook_ops = {
	hook_fail, hook_warn, hook_info, hook_thread_state, hook_lint,
};
