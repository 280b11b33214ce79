/* SPDX-License-Identifier: MIT */
/* out.c - the part of the output interface shared by every format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out.h"

static const char *const perfetto_layers[] = { "raw", "shown", NULL };

static const struct out_param paraver_params[] = {
	{ "aux", OUT_PARAM_BOOL, "yes", "also each view's .pcf (labels) and .row (row names); "
		"no: .prv only", NULL },
};
static const struct out_param perfetto_params[] = {
	{ "layer", OUT_PARAM_ENUM, "raw", "model channel slices: raw (as the models wrote) or "
		"shown (as Paraver)", perfetto_layers },
};
static const struct out_param sqlite_params[] = {
	{ "file", OUT_PARAM_NAME, "timeline.db", "the database's file name in the output "
		"directory", NULL },
};

#define PARAMS(a) a, sizeof a / sizeof a[0]

static const struct out_format formats[] = {
	{ "paraver", "<view>.prv/.pcf/.row for each view (thread, cpu, breakdowns)",
		out_paraver_open, PARAMS(paraver_params) },
	{ "paraver-cfg", "cfg/: Paraver view files (.cfg), one per view of each channel",
		out_paraver_cfg_open, NULL, 0 },
	{ "perfetto", "perfetto.pftrace (Perfetto protobuf TrackEvents)", out_perfetto_open,
		PARAMS(perfetto_params) },
	{ "sqlite", "a SQLite database: the system, channels, intervals, streams, events and "
		"payload fields (weft sql)",
		out_sqlite_open, PARAMS(sqlite_params) },
};
_Static_assert(sizeof paraver_params / sizeof paraver_params[0] <= OUT_MAX_PARAMS &&
		sizeof perfetto_params / sizeof perfetto_params[0] <= OUT_MAX_PARAMS &&
		sizeof sqlite_params / sizeof sqlite_params[0] <= OUT_MAX_PARAMS,
		"a format has at most OUT_MAX_PARAMS parameters");

size_t out_format_count(void)
{
	return sizeof formats / sizeof formats[0];
}

const struct out_format *out_format_at(size_t i)
{
	return i < out_format_count() ? &formats[i] : NULL;
}

const struct out_format *out_format_by_name(const char *name)
{
	for (size_t i = 0; i < out_format_count(); i++)
		if (strcmp(formats[i].name, name) == 0)
			return &formats[i];
	return NULL;
}

struct out *out_open(const struct out_format *f, const char *dir, const struct emu *emu,
		const struct out_params *p, char *err, size_t errlen)
{
	struct out_params def;
	if (p == NULL) {
		out_params_default(f, &def);
		p = &def;
	}
	return f->open(dir, emu, p, err, errlen);
}

/* ---- parameters ---- */

const struct out_param *out_param_find(const struct out_format *f, const char *key)
{
	for (size_t i = 0; i < f->nparams; i++)
		if (strcmp(f->params[i].key, key) == 0)
			return &f->params[i];
	return NULL;
}

int out_param_check(const struct out_format *f, const struct out_param *q, const char *value,
		char *err, size_t errlen)
{
	switch (q->type) {
	case OUT_PARAM_BOOL:
		if (strcmp(value, "yes") == 0 || strcmp(value, "no") == 0)
			return 0;
		snprintf(err, errlen, "parameter '%s' of format '%s' takes yes or no, not '%s'",
				q->key, f->name, value);
		return -1;
	case OUT_PARAM_ENUM: {
		size_t n = 0;
		for (size_t i = 0; q->choices[i] != NULL; i++) {
			if (strcmp(q->choices[i], value) == 0)
				return 0;
			n++;
		}
		size_t len = (size_t) snprintf(err, errlen, "parameter '%s' of format '%s' takes ",
				q->key, f->name);
		for (size_t i = 0; i < n && len < errlen; i++)
			len += (size_t) snprintf(err + len, errlen - len, "%s%s", q->choices[i],
					i + 2 < n ? ", " : i + 2 == n ? " or " : "");
		if (len < errlen)
			snprintf(err + len, errlen - len, ", not '%s'", value);
		return -1;
	}
	case OUT_PARAM_NAME:
		if (value[0] == '\0' || strchr(value, '/') != NULL || strcmp(value, ".") == 0 ||
				strcmp(value, "..") == 0 || strlen(value) > 255) {
			snprintf(err, errlen, "parameter '%s' of format '%s' takes a file name (no "
					"'/'; the file goes into the output directory), not '%s'", q->key,
					f->name, value);
			return -1;
		}
		return 0;
	}
	return -1;
}

void out_params_default(const struct out_format *f, struct out_params *p)
{
	memset(p, 0, sizeof *p);
	p->format = f;
	for (size_t i = 0; i < f->nparams && i < OUT_MAX_PARAMS; i++)
		p->val[i] = f->params[i].def;
}

int out_params_parse(const struct out_format *f, const char *spec, struct out_params *p,
		char *err, size_t errlen)
{
	out_params_default(f, p);
	if (spec == NULL || spec[0] == '\0')
		return 0;
	if (strlen(spec) >= sizeof p->spec) {
		snprintf(err, errlen, "the parameters of format '%s' are too long (%zu bytes; at "
				"most %zu)", f->name, strlen(spec), sizeof p->spec - 1);
		return -1;
	}
	memcpy(p->spec, spec, strlen(spec) + 1);
	int given[OUT_MAX_PARAMS] = { 0 };
	char *save = NULL;
	for (char *kv = strtok_r(p->spec, ",", &save); kv != NULL; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (eq != NULL)
			*eq = '\0';
		const struct out_param *q = out_param_find(f, kv);
		if (q == NULL) {
			size_t len = (size_t) snprintf(err, errlen, "unknown parameter '%s' of format "
					"'%s'", kv, f->name);
			for (size_t i = 0; i < f->nparams && len < errlen; i++)
				len += (size_t) snprintf(err + len, errlen - len, "%s%s",
						i == 0 ? " (it takes " : ", ", f->params[i].key);
			if (f->nparams > 0 && len < errlen)
				snprintf(err + len, errlen - len, ")");
			return -1;
		}
		size_t i = (size_t) (q - f->params);
		if (eq == NULL) {
			snprintf(err, errlen, "parameter '%s' of format '%s' needs a value (%s=VALUE)",
					kv, f->name, kv);
			return -1;
		}
		if (given[i]) {
			snprintf(err, errlen, "parameter '%s' of format '%s' is given twice", kv,
					f->name);
			return -1;
		}
		if (out_param_check(f, q, eq + 1, err, errlen) != 0)
			return -1;
		given[i] = 1;
		p->val[i] = eq + 1;
	}
	return 0;
}

const char *out_params_get(const struct out_params *p, const char *key)
{
	const struct out_param *q = out_param_find(p->format, key);
	return q != NULL ? p->val[q - p->format->params] : NULL;
}

int out_params_bool(const struct out_params *p, const char *key)
{
	const char *v = out_params_get(p, key);
	return v != NULL && strcmp(v, "yes") == 0;
}

/* ---- the ovni.lost records of the views, from the lost records ---- */

/* The output may keep a batch's view arrays for EMU_BATCH_KEEP further
 * calls (emu.h): the arrays with the derived records are cycled the same
 * way, one set per call. */
#define LOSTX_SETS (EMU_BATCH_KEEP + 1)

struct lostx_set {
	struct emu_prv_rec *v[2]; /* thread and CPU views */
	size_t cap[2];
};

struct out_lostx {
	struct lostx_set sets[LOSTX_SETS];
	uint64_t calls;    /* records() calls since it was made */
	uint32_t *cpu_on;  /* per CPU row: threads lost on it */
	size_t ncpu;
	/* a CPU view record waiting for its place (snapshot: by CPU) */
	struct lostx_cpu {
		uint32_t at;
		int32_t cpu;
		int64_t time, value;
		uint32_t chan;
		int snap;
	} *pend;
	size_t npend, pendcap;
};

static int lx_grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *q = realloc(*p, c * size);
	if (q == NULL)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

static void lostx_free(struct out_lostx *x)
{
	if (x == NULL)
		return;
	for (size_t k = 0; k < LOSTX_SETS; k++)
		for (int v = 0; v < 2; v++)
			free(x->sets[k].v[v]);
	free(x->cpu_on);
	free(x->pend);
	free(x);
}

/* The CPU view records of the lost records: at BEGIN, 1 on the CPU the
 * thread had when no other lost thread is marked there; at END, 0 when it
 * was the last. The BEGINs of a window's T0 (snapshot) go in CPU order. */
static int cpu_pending(struct out_lostx *x, const struct emu_batch *b)
{
	x->npend = 0;
	for (size_t i = 0; i < b->nlost; i++) {
		const struct emu_lost_rec *l = &b->lost[i];
		if (l->cpu < 0)
			continue;
		size_t c = (size_t) l->cpu;
		if (c >= x->ncpu) {
			size_t n = x->ncpu;
			if (lx_grow((void **) &x->cpu_on, &n, c + 1, sizeof *x->cpu_on) != 0)
				return -1;
			memset(x->cpu_on + x->ncpu, 0, (n - x->ncpu) * sizeof *x->cpu_on);
			x->ncpu = n;
		}
		int64_t value;
		if (l->phase == EMU_LOST_BEGIN) {
			if (x->cpu_on[c]++ != 0)
				continue;
			value = 1;
		} else {
			if (x->cpu_on[c] == 0 || --x->cpu_on[c] != 0)
				continue;
			value = 0;
		}
		if (lx_grow((void **) &x->pend, &x->pendcap, x->npend + 1, sizeof *x->pend) != 0)
			return -1;
		int64_t t = l->phase == EMU_LOST_BEGIN ? l->begin : l->end;
		x->pend[x->npend++] = (struct lostx_cpu) { l->at[1], l->cpu, t, value, l->chan,
			l->snapshot };
		/* a snapshot's: sorted by CPU among those before it (insertion) */
		for (size_t k = x->npend - 1; l->snapshot && k > 0 && x->pend[k - 1].snap &&
				x->pend[k - 1].at == x->pend[k].at && x->pend[k - 1].cpu > x->pend[k].cpu; k--) {
			struct lostx_cpu tmp = x->pend[k - 1];
			x->pend[k - 1] = x->pend[k];
			x->pend[k] = tmp;
		}
	}
	return 0;
}

/* b with the ovni.lost records derived into its thread and CPU views (in
 * the set of this call), into *out. */
static int lostx_batch(struct out *o, const struct emu_batch *b, struct emu_batch *out)
{
	struct out_lostx *x = o->lostx;
	struct lostx_set *S = &x->sets[x->calls % LOSTX_SETS];
	*out = *b;
	out->lost = NULL;
	out->nlost = 0;
	if (cpu_pending(x, b) != 0)
		return -1;
	size_t add[2] = { b->nlost, x->npend };
	for (int v = 0; v < 2; v++) {
		size_t n = b->nprv[v];
		if (lx_grow((void **) &S->v[v], &S->cap[v], n + add[v] + 1, sizeof *S->v[v]) != 0)
			return -1;
		struct emu_prv_rec *d = S->v[v];
		size_t from = 0, k = 0;
		for (size_t i = 0; i < add[v]; i++) {
			size_t at;
			struct emu_prv_rec r;
			if (v == 0) {
				const struct emu_lost_rec *l = &b->lost[i];
				at = l->at[0];
				int begin = l->phase == EMU_LOST_BEGIN;
				r = (struct emu_prv_rec) { begin ? l->begin : l->end, begin, l->thread,
					l->chan };
			} else {
				const struct lostx_cpu *c = &x->pend[i];
				at = c->at;
				r = (struct emu_prv_rec) { c->time, c->value, (uint32_t) c->cpu, c->chan };
			}
			if (at > n)
				at = n;
			if (at > from) {
				memcpy(d + k, b->prv[v] + from, (at - from) * sizeof *d);
				k += at - from;
				from = at;
			}
			d[k++] = r;
		}
		if (n > from)
			memcpy(d + k, b->prv[v] + from, (n - from) * sizeof *d);
		out->prv[v] = d;
		out->nprv[v] = n + add[v];
	}
	return 0;
}

static int out_records(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct out *o = self;
	if (o->ops->lost || (b->nlost == 0 && o->lostx == NULL))
		return o->ops->records(o, b, err, errlen);
	if (o->lostx == NULL && (o->lostx = calloc(1, sizeof *o->lostx)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	struct emu_batch d;
	int r;
	if (b->nlost == 0) {
		d = *b;
		r = 0;
	} else {
		r = lostx_batch(o, b, &d);
	}
	o->lostx->calls++;
	if (r != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return o->ops->records(o, &d, err, errlen);
}

struct emu_sink out_sink(struct out *o)
{
	struct emu_sink s = { o, out_records, o->ops->internal, 1 };
	return s;
}

int out_close(struct out *o, int64_t duration, char *err, size_t errlen)
{
	if (o == NULL)
		return 0;
	return o->ops->close(o, duration, err, errlen);
}

/* The derived arrays are freed once the output is (its writer done). */
int out_commit(struct out *o, char *err, size_t errlen)
{
	if (o == NULL)
		return 0;
	struct out_lostx *x = o->lostx;
	int r = 0;
	if (o->ops->commit != NULL)
		r = o->ops->commit(o, err, errlen); /* o is freed */
	else
		o->lostx = NULL;
	lostx_free(x);
	return r;
}

void out_discard(struct out *o)
{
	if (o == NULL)
		return;
	struct out_lostx *x = o->lostx;
	if (o->ops->discard != NULL)
		o->ops->discard(o); /* o is freed */
	else
		o->lostx = NULL;
	lostx_free(x);
}

int out_input(struct out *o, const struct out_input *in, char *err, size_t errlen)
{
	if (o == NULL || o->ops->input == NULL)
		return 0;
	return o->ops->input(o, in, err, errlen);
}

int out_events(struct out *o, const struct weft_event *evs, size_t n, char *err, size_t errlen)
{
	if (o == NULL || o->ops->events == NULL)
		return 0;
	return o->ops->events(o, evs, n, err, errlen);
}
