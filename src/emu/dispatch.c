/* SPDX-License-Identifier: MIT */
/*
 * dispatch.c - the dispatch: the enabled models set up (their dispatch
 * tables, thread flags, channels, task machinery), the map of streams to
 * threads, and per event: the model's guard, the MCV looked up (a table of
 * a cache line per MCV, filled on first use), the event's own rules, and
 * its actions (thread states and CPUs in threads.c, raw writes in
 * chan_views.c and fastpath.h, the task machinery in tasks.c, hooks), then
 * the propagation of their writes; and one step of the emulation,
 * emu_event, a few calls into the parts. See docs/emu.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastpath.h"

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

int emu_dispatch_map(struct emu *e)
{
	return map_build(e);
}

size_t emu_dispatch_thread(struct emu *e, const struct weft_stream *s)
{
	return map_find(e, s);
}

/* ---- the models ---- */

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

int emu_dispatch_models(struct emu *e, const struct emu_model_desc *const *models,
		size_t nmodels, char *err, size_t errlen)
{
	struct dispatch *D = &e->disp;
	for (size_t i = 0; i < 256; i++)
		D->model_of_byte[i] = -1;
	D->nmodels = nmodels;
	D->models = calloc(nmodels + 1, sizeof *D->models);
	D->dtab = aligned_alloc(64, EMU_DISP_SLOTS * sizeof *D->dtab);
	if (D->models == NULL || D->dtab == NULL)
		goto oom;
	memset(D->dtab, 0, EMU_DISP_SLOTS * sizeof *D->dtab);
	size_t chcap = 0;
	for (size_t mi = 0; mi < nmodels; mi++) {
		struct model_rt *m = &D->models[mi];
		m->desc = models[mi];
		if (D->model_of_byte[(unsigned char) m->desc->byte] >= 0) {
			snprintf(err, errlen, "two enabled models have the byte '%c'", m->desc->byte);
			return -1;
		}
		D->model_of_byte[(unsigned char) m->desc->byte] = (int) mi;
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
			return -1;
		if (m->desc->has_counters && emu_counters_setup(e, m, err, errlen) != 0)
			return -1;
		int r = emu_chans_add_model(e, mi, &chcap, err, errlen);
		if (r == -1)
			return -1;
		if (r != 0)
			goto oom;
		if (m->desc->thread_state_size > 0) {
			m->tstate = calloc(e->sys->nthreads + 1, m->desc->thread_state_size);
			if (m->tstate == NULL)
				goto oom;
		}
		if (m->desc->tasks.present && emu_tasks_create(e, m) != 0)
			goto oom;
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory creating the emulator");
	return -1;
}

void emu_dispatch_destroy(struct emu *e)
{
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
	free(e->disp.models);
	free(e->disp.dtab);
	free(e->disp.map);
}

/* ---- an event ---- */

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
			emu_state_name(T->state), m->desc->name,
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
		struct emu_hook_ctx ctx = { &emu_hooks, e, ev, d, t, NULL, e->dclock };
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
		const char *name = e->opts.model_name != NULL ?
			e->opts.model_name(e->opts.model_ctx, mb) : NULL;
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


int emu_dispatch_end(struct emu *e, size_t t, struct model_rt *m,
		const struct emu_event_desc *d)
{
	int r = 0;
	for (size_t i = 0; i < d->nactions && r == 0; i++) {
		struct emu_action a = d->actions[i];
		/* the state condition is waived: a Paused or Warming thread
		 * ends as well */
		if (a.op == EMU_OP_THREAD_STATE)
			a.from = ~0u;
		r = apply_action(e, t, m, d, &a, a.op);
	}
	return r;
}

/* ---- one step of the emulation ---- */

/* Here, beside run_event, which it inlines (a call across files cost 15
 * instructions an event). */
int emu_event(struct emu *e, const struct weft_event *ev)
{
	if (e->failed)
		return -1;
	e->ev = ev;
	size_t t = emu_stream_thread(e, ev->stream);
	if (t == SIZE_MAX)
		return emu_fail(e, "the event comes from a stream that is not a thread of the system");
	int64_t dclock;
	int w = emu_win_enter(e, ev->sclock, &dclock);
	if (w != 0)
		return w;
	/* threads that lost events: where their lost intervals begin and end */
	if (__builtin_expect(e->loss != NULL, 0) && emu_loss_before(e, t, ev, dclock) != 0)
		return -1;
	emu_step_begin(e, t, dclock);
	e->duration = dclock;
	e->nevents++;
	struct batch_mark bm = emu_batch_mark(e);
	size_t nb[EMU_MAX_BD] = { 0 };
	if (__builtin_expect(e->nbd != 0, 0))
		emu_batch_mark_bd(e, nb);
	if (run_event(e, t) != 0 && !(e->loss != NULL && emu_loss_skip(e, t) == 0)) {
		/* (a skipped event of a thread that lost events keeps its records) */
		emu_batch_undo(e, bm, nb);
		return -1;
	}
	return emu_batch_step_end(e);
}
