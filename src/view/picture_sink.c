/* SPDX-License-Identifier: MIT */
/* picture_sink.c - one channel's timeline kept for a picture (picture_sink.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "out.h"
#include "picture_sink.h"

struct picture_sink {
	struct out base;
	const char *channel;
	const struct emu *emu;
	const struct emu_cat_entry *cat;
	size_t views[EMU_MAX_VIEWS], nviews;
	size_t row0[EMU_MAX_VIEWS]; /* the first row of each view in pic.rows */
	size_t nchanges;
	int opened, closed, failed;
	struct picture pic;
};

int picture_sink_wants_breakdown(const char *channel)
{
	size_t n = strlen(channel);
	return n > 10 && strcmp(channel + n - 10, ".breakdown") == 0;
}

struct picture_sink *picture_sink_new(const char *channel)
{
	struct picture_sink *s = calloc(1, sizeof *s);
	if (s != NULL)
		s->channel = channel;
	return s;
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	if (na > 200 || nb > 200)
		return (size_t) -1;
	size_t prev[201], cur[201];
	for (size_t j = 0; j <= nb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= na; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= nb; j++) {
			size_t d = prev[j - 1] + (a[i - 1] != b[j - 1]);
			if (prev[j] + 1 < d)
				d = prev[j] + 1;
			if (cur[j - 1] + 1 < d)
				d = cur[j - 1] + 1;
			cur[j] = d;
		}
		memcpy(prev, cur, (nb + 1) * sizeof *prev);
	}
	return prev[nb];
}

static int add_change(struct picture_sink *s, struct picture_row *r, int64_t t, int64_t v)
{
	if (r->n > 0 && r->v[r->n - 1] == v)
		return 0;
	if (r->n > 0 && r->t[r->n - 1] == t) {
		/* a later record at the same time: it holds from then */
		r->v[r->n - 1] = v;
		return 0;
	}
	if (s->nchanges >= PICTURE_MAX_CHANGES)
		return 1;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		int64_t *t2 = realloc(r->t, cap * sizeof *t2);
		if (t2 == NULL)
			return -1;
		r->t = t2;
		int64_t *v2 = realloc(r->v, cap * sizeof *v2);
		if (v2 == NULL)
			return -1;
		r->v = v2;
		r->cap = cap;
	}
	r->t[r->n] = t;
	r->v[r->n] = v;
	r->n++;
	s->nchanges++;
	return 0;
}

static int sink_records(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct picture_sink *s = self;
	for (size_t k = 0; k < s->nviews; k++) {
		size_t view = s->views[k];
		const struct emu_prv_rec *r = b->prv[view];
		for (size_t i = 0; i < b->nprv[view]; i++) {
			if (emu_cat_of_prv(s->emu, view, &r[i]) != s->cat)
				continue;
			size_t row = s->row0[k] + r[i].row;
			if (row >= s->pic.nrows)
				continue;
			int e = add_change(s, &s->pic.rows[row], r[i].time, r[i].value);
			if (e < 0) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			if (e > 0) {
				snprintf(err, errlen, "the channel %s changes more than %zu times in the "
						"window: too many for a picture; draw a shorter window "
						"(--from, --to)", s->channel, PICTURE_MAX_CHANGES);
				return -1;
			}
		}
	}
	return 0;
}

struct vt {
	int64_t v, t;
};

static int cmp_vt(const void *a, const void *b)
{
	const struct vt *x = a, *y = b;
	return x->v < y->v ? -1 : x->v > y->v;
}

static int cmp_time(const void *a, const void *b)
{
	const struct picture_value *x = a, *y = b;
	if (x->time != y->time)
		return x->time > y->time ? -1 : 1;
	return x->value < y->value ? -1 : x->value > y->value;
}

static int sink_close(struct out *o, int64_t duration, char *err, size_t errlen)
{
	struct picture_sink *s = (struct picture_sink *) o;
	struct picture *p = &s->pic;
	int64_t from = 0, last = 0;
	emu_window_span(s->emu, &from, &last);
	p->span = duration > 0 ? duration : 0;
	p->origin = from;
	/* the time each value holds, all rows together */
	struct vt *all = malloc((s->nchanges + 1) * sizeof *all);
	if (all == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	size_t n = 0;
	for (size_t r = 0; r < p->nrows; r++) {
		const struct picture_row *row = &p->rows[r];
		for (size_t i = 0; i < row->n; i++) {
			if (row->v[i] == 0)
				continue;
			int64_t a = row->t[i], b = i + 1 < row->n ? row->t[i + 1] : p->span;
			if (b > p->span)
				b = p->span;
			all[n].v = row->v[i];
			all[n].t = b > a ? b - a : 0;
			n++;
		}
	}
	qsort(all, n, sizeof *all, cmp_vt);
	size_t nv = 0;
	for (size_t i = 0; i < n; i++)
		nv += i == 0 || all[i].v != all[i - 1].v;
	p->values = calloc(nv + 1, sizeof *p->values);
	if (p->values == NULL) {
		free(all);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || all[i].v != all[i - 1].v) {
			struct picture_value *v = &p->values[p->nvalues++];
			v->value = all[i].v;
			const char *l = emu_cat_value_label(s->cat, all[i].v);
			if (l != NULL && (v->label = strdup(l)) == NULL) {
				free(all);
				snprintf(err, errlen, "out of memory");
				return -1;
			}
		}
		p->values[p->nvalues - 1].time += all[i].t;
	}
	free(all);
	qsort(p->values, p->nvalues, sizeof *p->values, cmp_time);
	s->closed = 1;
	return 0;
}

static int sink_commit(struct out *o, char *err, size_t errlen)
{
	(void) o;
	(void) err;
	(void) errlen;
	return 0;
}

static void sink_discard(struct out *o)
{
	((struct picture_sink *) o)->failed = 1;
}

static const struct out_ops sink_ops = {
	.name = "picture",
	.records = sink_records,
	.close = sink_close,
	.commit = sink_commit,
	.discard = sink_discard,
};

static int set_rows(struct picture_sink *s, const struct emu *emu, char *err, size_t errlen)
{
	const struct emu_cat_entry *c = s->cat;
	size_t nv = emu_nviews(emu);
	for (size_t v = 0; v < nv; v++) {
		int in = c->bd_view >= 0 ? (size_t) c->bd_view == v
			: v < 2 && (c->scope & EMU_SCOPE_VIEW(v)) != 0;
		if (!in)
			continue;
		s->row0[s->nviews] = s->pic.nrows;
		s->views[s->nviews++] = v;
		s->pic.nrows += emu_view_at(emu, v)->nrows;
	}
	s->pic.rows = calloc(s->pic.nrows + 1, sizeof *s->pic.rows);
	if (s->pic.rows == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	const struct emu_sys *sys = emu_system(emu);
	for (size_t k = 0; k < s->nviews; k++) {
		size_t v = s->views[k];
		for (size_t i = 0; i < emu_view_at(emu, v)->nrows; i++) {
			struct picture_row *r = &s->pic.rows[s->row0[k] + i];
			char buf[64];
			const char *l = buf;
			if (v == EMU_FILE_THREAD)
				l = sys->threads[i].label;
			else if (v == EMU_FILE_CPU)
				l = sys->cpus[i].label;
			else
				emu_view_row_label(emu, v, i, buf, sizeof buf);
			r->group = v < 2 ? (int) v : 2;
			if ((r->label = strdup(l)) == NULL) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
		}
	}
	return 0;
}

struct out *picture_sink_open(void *ctx, const struct emu *emu, char *err, size_t errlen)
{
	struct picture_sink *s = ctx;
	/* The driver may run the emulation twice (sorting on read the second
	 * time): each run starts from scratch. */
	picture_free(&s->pic);
	const char *channel = s->channel;
	memset(s, 0, sizeof *s);
	s->channel = channel;
	s->opened = 1;
	s->emu = emu;
	s->cat = emu_cat_by_name(emu, s->channel);
	if (s->cat == NULL) {
		const char *best = NULL;
		size_t bd = (size_t) -1;
		for (size_t i = 0; i < emu_cat_count(emu); i++) {
			const struct emu_cat_entry *c = emu_cat_at(emu, i);
			if (c->prv_type == 0)
				continue;
			size_t d = edit_distance(s->channel, c->name);
			if (d < bd) {
				bd = d;
				best = c->name;
			}
		}
		if (best != NULL)
			snprintf(err, errlen, "unknown channel '%s'; did you mean '%s'? (the channels "
					"are the catalogue's names: docs/emu.md)", s->channel, best);
		else
			snprintf(err, errlen, "unknown channel '%s'", s->channel);
		return NULL;
	}
	if (s->cat->prv_type == 0) {
		snprintf(err, errlen, "the channel '%s' has no timeline to draw (no Paraver type)",
				s->channel);
		return NULL;
	}
	const char *label = s->cat->thread_label ? s->cat->thread_label : s->cat->cpu_label;
	if (s->cat->bd_view >= 0)
		label = emu_view_at(emu, (size_t) s->cat->bd_view)->label;
	size_t tn = strlen(s->channel) + (label ? strlen(label) : 0) + 4;
	if ((s->pic.title = malloc(tn)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(s->pic.title, tn, "%s%s%s", s->channel, label ? ": " : "", label ? label : "");
	if (set_rows(s, emu, err, errlen) != 0)
		return NULL;
	s->base.ops = &sink_ops;
	return &s->base;
}

int picture_sink_take(struct picture_sink *s, struct picture *p)
{
	if (!s->closed || s->failed)
		return -1;
	*p = s->pic;
	memset(&s->pic, 0, sizeof s->pic);
	return 0;
}

void picture_sink_free(struct picture_sink *s)
{
	if (s == NULL)
		return;
	picture_free(&s->pic);
	free(s);
}
