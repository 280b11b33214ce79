/* SPDX-License-Identifier: MIT */
/* raw_iv.c - the raw intervals of the threads' channels (raw_iv.h). */
#include <stdlib.h>
#include <string.h>

#include "raw_iv.h"

struct raw_iv_top {
	int64_t start;
	int64_t *stack; /* the values written, bottom first (a single channel: one) */
	uint32_t depth, cap;
};

int raw_ivs_init(struct raw_ivs *r, const struct emu *emu)
{
	memset(r, 0, sizeof *r);
	r->emu = emu;
	r->nrows = emu_system(emu)->nthreads;
	size_t n = emu_cat_count(emu);
	r->ent_of_id = malloc((n + 1) * sizeof *r->ent_of_id);
	r->ids = calloc(n + 1, sizeof *r->ids);
	if (r->ent_of_id == NULL || r->ids == NULL)
		return -1;
	r->nids = n;
	for (size_t i = 0; i < n; i++) {
		const struct emu_cat_entry *e = emu_cat_at(emu, i);
		r->ent_of_id[i] = SIZE_MAX;
		/* the model channels that have a Paraver type */
		if (e->info == NULL || e->prv_type == 0)
			continue;
		r->ent_of_id[i] = r->nents;
		r->ids[r->nents++] = e->id;
	}
	r->top = calloc(r->nrows * r->nents + 1, sizeof *r->top);
	return r->top != NULL ? 0 : -1;
}

int raw_ivs_rec(struct raw_ivs *r, const struct emu_rec *x, raw_iv_put put, void *ctx)
{
	if (x->kind < EMU_REC_RAW_SET || x->kind > EMU_REC_RAW_POP || x->row >= r->nrows)
		return 0;
	const struct emu_cat_entry *e = emu_cat_of_raw(r->emu, x);
	if (e == NULL || e->id >= r->nids || r->ent_of_id[e->id] == SIZE_MAX)
		return 0;
	size_t ent = r->ent_of_id[e->id];
	struct raw_iv_top *T = &r->top[(size_t) x->row * r->nents + ent];
	int had = T->depth > 0;
	int64_t old = had ? T->stack[T->depth - 1] : 0;
	switch (x->kind) {
	case EMU_REC_RAW_SET:
		T->depth = 0;
		if (x->isnull)
			break;
		__attribute__((fallthrough)); /* one value */
	case EMU_REC_RAW_PUSH:
		if (T->depth == T->cap) {
			uint32_t cap = T->cap ? 2 * T->cap : 4;
			int64_t *s = realloc(T->stack, cap * sizeof *s);
			if (s == NULL)
				return -1;
			T->stack = s;
			T->cap = cap;
		}
		T->stack[T->depth++] = x->value;
		break;
	default:
		if (T->depth > 0)
			T->depth--;
		break;
	}
	int has = T->depth > 0;
	int64_t now = has ? T->stack[T->depth - 1] : 0;
	if (had == has && old == now)
		return 0; /* the value held goes on */
	if (had && x->time <= T->start)
		r->nempty++;
	else if (had && put(ctx, x->row, e->id, T->start, x->time, old) != 0)
		return -1;
	T->start = x->time;
	if (has && r->open != NULL && r->open(ctx, x->row, e->id, x->time, now) != 0)
		return -1;
	return 0;
}

int raw_ivs_holds(const struct raw_ivs *r, uint32_t row, size_t id, int64_t start)
{
	if (row >= r->nrows || id >= r->nids || r->ent_of_id[id] == SIZE_MAX)
		return 0;
	const struct raw_iv_top *T = &r->top[(size_t) row * r->nents + r->ent_of_id[id]];
	return T->depth > 0 && T->start == start;
}

int raw_ivs_end(struct raw_ivs *r, int64_t duration, raw_iv_put put, void *ctx)
{
	for (size_t t = 0; t < r->nrows; t++) {
		for (size_t k = 0; k < r->nents; k++) {
			struct raw_iv_top *T = &r->top[t * r->nents + k];
			if (T->depth == 0 || duration <= T->start)
				continue;
			if (put(ctx, (uint32_t) t, r->ids[k], T->start, duration, T->stack[T->depth - 1]) != 0)
				return -1;
		}
	}
	return 0;
}

void raw_ivs_free(struct raw_ivs *r)
{
	if (r->top != NULL)
		for (size_t i = 0; i < r->nrows * r->nents; i++)
			free(r->top[i].stack);
	free(r->top);
	free(r->ent_of_id);
	free(r->ids);
	memset(r, 0, sizeof *r);
}
