/* SPDX-License-Identifier: MIT */
/* raw_iv.c - the raw intervals of the threads' channels (raw_iv.h). */
#include <stdlib.h>
#include <string.h>

#include "raw_iv.h"

struct raw_iv_map {
	int type;
	size_t ent;  /* index among the tracked entries */
	size_t id;   /* catalogue id */
};

struct raw_iv_top {
	int64_t start;
	int64_t *stack; /* the values written, bottom first (a single channel: one) */
	uint32_t depth, cap;
};

static int cmp_map(const void *a, const void *b)
{
	const struct raw_iv_map *x = a, *y = b;
	return (x->type > y->type) - (x->type < y->type);
}

int raw_ivs_init(struct raw_ivs *r, const struct emu *emu)
{
	memset(r, 0, sizeof *r);
	r->emu = emu;
	r->nrows = emu_system(emu)->nthreads;
	size_t n = emu_cat_count(emu);
	r->map = calloc(n + 1, sizeof *r->map);
	r->ids = calloc(n + 1, sizeof *r->ids);
	if (r->map == NULL || r->ids == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct emu_cat_entry *e = emu_cat_at(emu, i);
		/* the model channels: raw records name them by Paraver type */
		if (e->info == NULL || e->prv_type == 0 ||
				emu_cat_by_type(emu, EMU_FILE_THREAD, e->prv_type) != e)
			continue;
		r->map[r->nents] = (struct raw_iv_map) { e->prv_type, r->nents, e->id };
		r->ids[r->nents++] = e->id;
	}
	qsort(r->map, r->nents, sizeof *r->map, cmp_map);
	r->top = calloc(r->nrows * r->nents + 1, sizeof *r->top);
	return r->top != NULL ? 0 : -1;
}

static const struct raw_iv_map *map_of(const struct raw_ivs *r, int type)
{
	size_t lo = 0, hi = r->nents;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->map[mid].type == type)
			return &r->map[mid];
		if (r->map[mid].type < type)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int raw_ivs_rec(struct raw_ivs *r, const struct emu_rec *x, raw_iv_put put, void *ctx)
{
	if (x->kind < EMU_REC_RAW_SET || x->kind > EMU_REC_RAW_POP || x->row >= r->nrows)
		return 0;
	const struct raw_iv_map *m = map_of(r, x->type);
	if (m == NULL)
		return 0;
	struct raw_iv_top *T = &r->top[(size_t) x->row * r->nents + m->ent];
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
	if (had && x->time > T->start && put(ctx, x->row, m->id, T->start, x->time, old) != 0)
		return -1;
	T->start = x->time;
	return 0;
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
	free(r->map);
	free(r->ids);
	memset(r, 0, sizeof *r);
}
