/* SPDX-License-Identifier: MIT */
/*
 * breakdown_merge.c - the breakdown's sorter (bd_sort.h), and its replay
 * after the time merge (emu.h: emu_bd_raw, emu_bd_replay_*): a worker of
 * weft emu -j (or a rank of --mpi) sees its looms' CPUs only, so its
 * breakdown views hold each physical CPU's value changes (row: the CPU's
 * slot index, value: its new value, chan: the number of the event among
 * the worker's events that changed one, so that two events at one time
 * stay apart); merged by time over every worker, they are the changes the
 * serial run's sorter met, event by event, and the sorter replayed over
 * them writes the serial run's records. With a window's --from, each
 * worker's records at time 0 are its CPUs' values at T0, from which the
 * replay sets the sorter's state at T0 (settle_at0).
 */
#include <stdlib.h>
#include <string.h>

#include "bd_sort.h"
#include "emu_internal.h"

int bd_sort_init(struct bd_sort *s, size_t n)
{
	memset(s, 0, sizeof *s);
	s->n = n;
	s->sorted = calloc(n + 1, sizeof *s->sorted);
	s->cur = calloc(n + 1, sizeof *s->cur);
	s->last = calloc(n + 1, sizeof *s->last);
	s->written = calloc(n + 1, 1);
	s->changed = calloc(n + 1, sizeof *s->changed);
	s->is_changed = calloc(n + 1, 1);
	return s->sorted && s->cur && s->last && s->written && s->changed && s->is_changed ? 0 :
		-1;
}

void bd_sort_free(struct bd_sort *s)
{
	free(s->sorted);
	free(s->cur);
	free(s->last);
	free(s->written);
	free(s->changed);
	free(s->is_changed);
	memset(s, 0, sizeof *s);
}

static void mark(struct bd_sort *s, size_t k)
{
	if (!s->is_changed[k]) {
		s->is_changed[k] = 1;
		s->changed[s->nchanged++] = (uint32_t) k;
	}
}

void bd_sort_update(struct bd_sort *s, int64_t old, int64_t v)
{
	size_t n = s->n, i;
	for (i = 0; i < n && s->sorted[i] != old; i++)
		;
	if (i == n)
		return;
	memmove(&s->sorted[i], &s->sorted[i + 1], (n - 1 - i) * sizeof *s->sorted);
	size_t k;
	for (k = 0; k + 1 < n && s->sorted[k] < v; k++)
		;
	memmove(&s->sorted[k + 1], &s->sorted[k], (n - 1 - k) * sizeof *s->sorted);
	s->sorted[k] = v;
	/* the first change of the run writes every slot */
	if (!s->started) {
		s->started = 1;
		for (size_t j = 0; j < n; j++)
			mark(s, j);
	}
	for (size_t j = 0; j < n; j++) {
		if (s->cur[j] != s->sorted[j]) {
			s->cur[j] = s->sorted[j];
			mark(s, j);
		}
	}
}

int bd_sort_commit(struct bd_sort *s, int (*put)(void *ctx, size_t slot, int64_t v), void *ctx)
{
	for (size_t i = 0; i < s->nchanged; i++) {
		size_t k = s->changed[i];
		s->is_changed[k] = 0;
		if (s->written[k] && s->last[k] == s->cur[k])
			continue;
		s->written[k] = 1;
		s->last[k] = s->cur[k];
		int r = put(ctx, k, s->cur[k]);
		if (r != 0) {
			/* the rest stays unmarked: the run ends here */
			for (size_t j = i + 1; j < s->nchanged; j++)
				s->is_changed[s->changed[j]] = 0;
			s->nchanged = 0;
			return r;
		}
	}
	s->nchanged = 0;
	return 0;
}

/* ---- the replay after the merge ---- */

#define REPLAY_OUT 4096

struct emu_bd_replay {
	struct bd_sort s;
	int64_t *value; /* each CPU's value (slot index) */
	int at0;        /* a window's --from: the records at time 0 are the state at T0 */
	int any0;       /* some were met */
	uint32_t chan;  /* the view's catalogue id */
	int open;       /* an event's changes are pending */
	int64_t time;
	uint32_t group;
	struct emu_prv_rec out[REPLAY_OUT];
	size_t nout;
	int (*emit)(void *ctx, const struct emu_prv_rec *r, size_t n);
	void *ctx;
};

struct emu_bd_replay *emu_bd_replay_new(const struct emu *e, size_t view)
{
	if (view < 2 || view >= 2 + e->nbd)
		return NULL;
	struct emu_bd_replay *R = calloc(1, sizeof *R);
	if (R == NULL)
		return NULL;
	size_t n = e->views[view].nrows;
	R->value = calloc(n + 1, sizeof *R->value);
	if (R->value == NULL || bd_sort_init(&R->s, n) != 0) {
		emu_bd_replay_free(R);
		return NULL;
	}
	R->chan = e->cat_view[view];
	R->at0 = e->window.bounds.has_from;
	return R;
}

void emu_bd_replay_free(struct emu_bd_replay *R)
{
	if (R == NULL)
		return;
	bd_sort_free(&R->s);
	free(R->value);
	free(R);
}

static int out_flush(struct emu_bd_replay *R)
{
	if (R->nout == 0)
		return 0;
	int r = R->emit(R->ctx, R->out, R->nout);
	R->nout = 0;
	return r != 0 ? -1 : 0;
}

static int out_put(void *ctx, size_t slot, int64_t v)
{
	struct emu_bd_replay *R = ctx;
	if (R->nout == REPLAY_OUT && out_flush(R) != 0)
		return -1;
	struct emu_prv_rec *r = &R->out[R->nout++];
	r->time = R->time;
	r->value = v;
	r->row = (uint32_t) slot;
	r->chan = R->chan;
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
	return x < y ? -1 : x > y;
}

/* A window's state at T0 (--from): the records at time 0 are the values of
 * each CPU whose value changed before T0 (emu_bd_snapshot). The serial
 * run's sorter has then started (its first change wrote every slot) and
 * holds every CPU's value sorted, each slot written with its value; at T0
 * it writes the slots whose value is not 0, in slot order. Without such a
 * record, no value changed: the sorter has not started, and writes
 * nothing at T0. */
static int settle_at0(struct emu_bd_replay *R)
{
	R->at0 = 0;
	if (!R->any0)
		return 0;
	struct bd_sort *s = &R->s;
	memcpy(s->sorted, R->value, s->n * sizeof *s->sorted);
	qsort(s->sorted, s->n, sizeof *s->sorted, cmp_i64);
	memcpy(s->cur, s->sorted, s->n * sizeof *s->cur);
	memcpy(s->last, s->sorted, s->n * sizeof *s->last);
	memset(s->written, 1, s->n);
	s->started = 1;
	R->time = 0;
	for (size_t k = 0; k < s->n; k++)
		if (s->cur[k] != 0 && out_put(R, k, s->cur[k]) != 0)
			return -1;
	return 0;
}

int emu_bd_replay_feed(struct emu_bd_replay *R, const struct emu_prv_rec *r, size_t n,
		int (*emit)(void *ctx, const struct emu_prv_rec *r, size_t n), void *ctx)
{
	R->emit = emit;
	R->ctx = ctx;
	for (size_t i = 0; i < n; i++) {
		if (r[i].row >= R->s.n)
			return -1;
		if (R->at0 && r[i].time == 0) {
			R->value[r[i].row] = r[i].value;
			R->any0 = 1;
			continue;
		}
		if (R->at0 && settle_at0(R) != 0)
			return -1;
		if (R->open && (r[i].time != R->time || r[i].chan != R->group)) {
			if (bd_sort_commit(&R->s, out_put, R) != 0)
				return -1;
			R->open = 0;
		}
		R->open = 1;
		R->time = r[i].time;
		R->group = r[i].chan;
		int64_t old = R->value[r[i].row];
		if (r[i].value == old)
			continue;
		R->value[r[i].row] = r[i].value;
		bd_sort_update(&R->s, old, r[i].value);
	}
	return 0;
}

int emu_bd_replay_flush(struct emu_bd_replay *R,
		int (*emit)(void *ctx, const struct emu_prv_rec *r, size_t n), void *ctx)
{
	R->emit = emit;
	R->ctx = ctx;
	return out_flush(R);
}

int emu_bd_replay_end(struct emu_bd_replay *R,
		int (*emit)(void *ctx, const struct emu_prv_rec *r, size_t n), void *ctx)
{
	R->emit = emit;
	R->ctx = ctx;
	if (R->at0 && settle_at0(R) != 0)
		return -1;
	if (R->open && bd_sort_commit(&R->s, out_put, R) != 0)
		return -1;
	R->open = 0;
	return out_flush(R);
}

struct to_vec {
	struct emu_prv_rec *p;
	size_t n, cap;
};

static int vec_put(void *ctx, const struct emu_prv_rec *r, size_t n)
{
	struct to_vec *v = ctx;
	if (v->n + n > v->cap) {
		size_t cap = v->cap ? v->cap : 4096;
		while (cap < v->n + n)
			cap *= 2;
		struct emu_prv_rec *p = realloc(v->p, cap * sizeof *p);
		if (p == NULL)
			return -1;
		v->p = p;
		v->cap = cap;
	}
	memcpy(v->p + v->n, r, n * sizeof *r);
	v->n += n;
	return 0;
}

int emu_bd_replay_all(const struct emu *e, size_t view, const struct emu_prv_rec *raw, size_t n,
		struct emu_prv_rec **out, size_t *nout)
{
	*out = NULL;
	*nout = 0;
	struct emu_bd_replay *R = emu_bd_replay_new(e, view);
	if (R == NULL)
		return -1;
	struct to_vec v = { NULL, 0, 0 };
	int r = emu_bd_replay_feed(R, raw, n, vec_put, &v);
	if (r == 0)
		r = emu_bd_replay_end(R, vec_put, &v);
	emu_bd_replay_free(R);
	if (r != 0) {
		free(v.p);
		return -1;
	}
	*out = v.p != NULL ? v.p : malloc(sizeof *v.p);
	*nout = v.n;
	return *out == NULL ? -1 : 0;
}
