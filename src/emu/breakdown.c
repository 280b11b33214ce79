/* SPDX-License-Identifier: MIT */
/*
 * breakdown.c - the breakdown views (-b): one value per physical CPU made
 * from that CPU's views (task kind: the task type while a body runs, else
 * the subsystem, else 2, replaced by the idle state when it is not 100;
 * label kind: the label, else the subsystem), sorted ascending into one row
 * per physical CPU (slot). The selectors re-choose their input only when
 * their own selecting view changes, as the reference does; slots are
 * written once per event with their final value, in the order they first
 * changed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bd_sort.h"
#include "emu_internal.h"

enum role { R_SUBSYS = 1, R_TYPE, R_IDLE, R_LABEL };
enum sel { S_NONE = 0, S_TYPE, S_SUBSYS, S_CONST2, S_LABEL, S_TR, S_IDLE };

struct in {
	int64_t v;
	uint8_t isnull;
	uint8_t seen;
};

struct bcpu {
	struct in subsys, type, idle, label;
	uint8_t sel_tr, sel_tri, sel_out;
	uint8_t ever; /* its value changed once at least */
	int64_t value;
};

struct bd_rt {
	size_t model, view;
	const struct emu_breakdown_desc *d;
	size_t nphy;
	ssize_t *phys;      /* CPU gindex -> physical index, -1 for vCPUs */
	struct bcpu *cpu;
	struct bd_sort s;
	/* emu_bd_raw: each CPU's changes written (row: its slot index, chan:
	 * group, the number of the event among those that changed one) */
	int raw, dirty;
	uint32_t group;
	struct emu_value_label *values;
	size_t nvalues;
	int values_ok;
	char *name;
};

static int check_requires(struct emu *e, const char *key, char *err, size_t errlen)
{
	int all = 1;
	for (size_t t = 0; t < e->nthreads; t++) {
		json_t *v = emu_thread_attr(e, t, key);
		if (v == NULL || !json_is_boolean(v)) {
			snprintf(err, errlen, "%s: %s %s (-b needs it as true or false in every stream)",
					e->sys->threads[t].relpath, key, v == NULL ? "is missing" :
					"is not a boolean");
			json_decref(v);
			return -1;
		}
		all &= json_is_true(v);
		json_decref(v);
	}
	return all;
}

int emu_bd_create(struct emu *e, size_t mi, char *err, size_t errlen)
{
	struct model_rt *m = &e->disp.models[mi];
	const struct emu_breakdown_desc *d = &m->desc->breakdown;
	if (d->requires != NULL) {
		int r = check_requires(e, d->requires, err, errlen);
		if (r < 0)
			return -1;
		if (r == 0) {
			emu_warn(e, SIZE_MAX, "no %s breakdown: %s is false in some stream",
					m->desc->name, d->requires);
			return 0;
		}
	}
	if (e->nbd == EMU_MAX_BD) {
		snprintf(err, errlen, "more than %d breakdown views", EMU_MAX_BD);
		return -1;
	}
	struct bd_rt *b = calloc(1, sizeof *b);
	if (b == NULL)
		goto oom;
	e->bd[e->nbd] = b;
	b->model = mi;
	b->view = 2 + e->nbd;
	b->d = d;
	b->phys = calloc(e->ncpus + 1, sizeof *b->phys);
	if (b->phys == NULL)
		goto oom;
	for (size_t c = 0; c < e->ncpus; c++)
		b->phys[c] = e->sys->cpus[c].is_virtual ? -1 : (ssize_t) b->nphy++;
	size_t n = b->nphy;
	b->cpu = calloc(n + 1, sizeof *b->cpu);
	if (b->cpu == NULL || bd_sort_init(&b->s, n) != 0)
		goto oom;
	e->nbd++;
	m->bd = (int) e->nbd;
	/* The input channels. */
	size_t ins[3] = { d->subsystem, d->kind == EMU_BD_TASK ? d->type : d->type, d->idle };
	uint8_t roles[3] = { R_SUBSYS, d->kind == EMU_BD_TASK ? R_TYPE : R_LABEL, R_IDLE };
	for (int i = 0; i < (d->kind == EMU_BD_TASK ? 3 : 2); i++) {
		struct chan *C = &e->chans[m->chan_of_desc[ins[i]]];
		C->bd = (int) e->nbd;
		C->bd_role = roles[i];
	}
	char *name = malloc(strlen(m->desc->name) + 16);
	if (name == NULL)
		goto oom;
	sprintf(name, "%s-breakdown", m->desc->name);
	b->name = name;
	e->views[b->view] = (struct emu_view) { name, n, 1, d->prv_type, d->label };
	return 0;
oom:
	snprintf(err, errlen, "out of memory creating the breakdown view");
	return -1;
}

void emu_bd_destroy(struct bd_rt *b)
{
	if (b == NULL)
		return;
	free(b->phys);
	free(b->cpu);
	bd_sort_free(&b->s);
	free(b->values);
	free(b->name);
	free(b);
}

/* An input's value now (null counts as 0). */
static int64_t now(const struct emu *e, const struct bd_rt *b, size_t c, size_t desc_chan,
		int *isnull)
{
	int64_t v;
	emu_cview_value(e, c, e->disp.models[b->model].chan_of_desc[desc_chan], isnull, &v);
	return *isnull ? 0 : v;
}

static int64_t cpu_value(const struct emu *e, const struct bd_rt *b, const struct bcpu *X,
		size_t c)
{
	int isnull;
	if (b->d->kind == EMU_BD_LABEL) {
		switch (X->sel_out) {
		case S_LABEL: return now(e, b, c, b->d->type, &isnull);
		case S_SUBSYS: return now(e, b, c, b->d->subsystem, &isnull);
		default: return 0;
		}
	}
	if (X->sel_tri == S_IDLE)
		return now(e, b, c, b->d->idle, &isnull);
	if (X->sel_tri != S_TR)
		return 0;
	switch (X->sel_tr) {
	case S_TYPE: return now(e, b, c, b->d->type, &isnull);
	case S_SUBSYS: return now(e, b, c, b->d->subsystem, &isnull);
	case S_CONST2: return 2;
	default: return 0;
	}
}

int emu_bd_input(struct emu *e, size_t c, size_t ch, int isnull, int64_t v)
{
	const struct chan *C = &e->chans[ch];
	struct bd_rt *b = e->bd[C->bd - 1];
	ssize_t p = b->phys[c];
	if (p < 0)
		return 0;
	struct bcpu *X = &b->cpu[p];
	struct in *in = C->bd_role == R_SUBSYS ? &X->subsys : C->bd_role == R_TYPE ? &X->type :
		C->bd_role == R_IDLE ? &X->idle : &X->label;
	if (in->seen && in->isnull == isnull && (isnull || in->v == v))
		return 0; /* no change */
	in->seen = 1;
	in->isnull = (uint8_t) isnull;
	in->v = isnull ? 0 : v;
	int tnull;
	switch (C->bd_role) {
	case R_SUBSYS:
		if (b->d->kind == EMU_BD_TASK) {
			now(e, b, c, b->d->type, &tnull);
			if (!X->subsys.isnull && X->subsys.v == b->d->body_value && !tnull)
				X->sel_tr = S_TYPE;
			else if (!X->subsys.isnull)
				X->sel_tr = S_SUBSYS;
			else
				X->sel_tr = S_CONST2;
		}
		break;
	case R_IDLE:
		X->sel_tri = !X->idle.isnull && X->idle.v == 100 ? S_TR : S_IDLE;
		break;
	case R_LABEL:
		X->sel_out = X->label.isnull ? S_SUBSYS : S_LABEL;
		break;
	default:
		break;
	}
	int64_t nv = cpu_value(e, b, X, c);
	if (nv != X->value) {
		int64_t old = X->value;
		X->value = nv;
		X->ever = 1;
		if (b->raw) {
			b->dirty = 1;
			return emu_rec(e, (int) b->view, (size_t) p, b->group, nv);
		}
		bd_sort_update(&b->s, old, nv);
	}
	return 0;
}

void emu_bd_raw(struct emu *e)
{
	for (size_t k = 0; k < e->nbd; k++)
		e->bd[k]->raw = 1;
}

struct put_ctx {
	struct emu *e;
	const struct bd_rt *b;
};

static int put_rec(void *ctx, size_t slot, int64_t v)
{
	struct put_ctx *c = ctx;
	return emu_rec(c->e, (int) c->b->view, slot, c->e->cat_view[c->b->view], v);
}

int emu_bd_commit(struct emu *e)
{
	for (size_t k = 0; k < e->nbd; k++) {
		struct bd_rt *b = e->bd[k];
		if (b->raw) {
			b->group += (uint32_t) b->dirty;
			b->dirty = 0;
			continue;
		}
		struct put_ctx c = { e, b };
		if (bd_sort_commit(&b->s, put_rec, &c) != 0)
			return -1;
	}
	return 0;
}

int emu_bd_snapshot(struct emu *e)
{
	for (size_t k = 0; k < e->nbd; k++) {
		struct bd_rt *b = e->bd[k];
		/* emu_bd_raw: each CPU's value at T0, of each CPU whose value
		 * changed before (the sorter has started then: the replay's
		 * state at T0, breakdown_merge.c) */
		for (size_t p = 0; p < b->nphy && b->raw; p++)
			if (b->cpu[p].ever && emu_rec(e, (int) b->view, p, 0, b->cpu[p].value) != 0)
				return -1;
		for (size_t s = 0; s < b->nphy && !b->raw; s++)
			if (b->s.written[s] && b->s.last[s] != 0 &&
					emu_rec(e, (int) b->view, s, e->cat_view[b->view], b->s.last[s]) != 0)
				return -1;
	}
	return 0;
}

int emu_bd_finish(struct emu *e, size_t bd)
{
	struct bd_rt *b = e->bd[bd];
	struct model_rt *m = &e->disp.models[b->model];
	if (m->desc->tasks.present && !m->dyn_ok)
		return -1;
	const struct emu_chan_desc *ss = &m->desc->chans[b->d->subsystem];
	size_t n = ss->nvalues + m->ndyn;
	const struct emu_chan_desc *idle = NULL;
	if (b->d->kind == EMU_BD_TASK) {
		idle = &m->desc->chans[b->d->idle];
		n += idle->nvalues;
	}
	b->values = calloc(n + 1, sizeof *b->values);
	if (b->values == NULL)
		return -1;
	for (size_t i = 0; i < ss->nvalues; i++)
		b->values[b->nvalues++] = ss->values[i];
	for (size_t i = 0; idle != NULL && i < idle->nvalues; i++)
		b->values[b->nvalues++] = idle->values[i];
	for (size_t i = 0; i < m->ndyn; i++)
		b->values[b->nvalues++] = m->dyn[i];
	b->values_ok = 1;
	return 0;
}

int emu_view_values(const struct emu *e, size_t view, const struct emu_value_label **v,
		size_t *n)
{
	if (view < 2 || view >= 2 + e->nbd)
		return 0;
	const struct bd_rt *b = e->bd[view - 2];
	if (!b->values_ok)
		return 0;
	*v = b->values;
	*n = b->nvalues;
	return 1;
}

void emu_view_row_label(const struct emu *e, size_t view, size_t row, char *buf, size_t len)
{
	size_t n = e->views[view].nrows;
	snprintf(buf, len, "~CPU %4zu", n - row);
}
