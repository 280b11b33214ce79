/* SPDX-License-Identifier: MIT */
/*
 * catalogue.c - the channel catalogue (catalogue.h): built once at the end
 * of emu_create() from src/model's built-in table, the engine's channels
 * and the breakdown views; read by the outputs.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

/* A dotted lower-case name: "<a>.<b>[.<c>]", the parts lowered, a
 * character other than a letter, digit, '_' or '-' made '_'. */
static char *cat_name(const char *a, const char *b, const char *c)
{
	size_t n = strlen(a) + strlen(b) + (c ? strlen(c) + 1 : 0) + 2;
	char *s = malloc(n);
	if (s == NULL)
		return NULL;
	snprintf(s, n, c ? "%s.%s.%s" : "%s.%s", a, b, c);
	for (char *p = s; *p; p++) {
		unsigned char ch = (unsigned char) *p;
		if (isupper(ch))
			*p = (char) tolower(ch);
		else if (!isalnum(ch) && ch != '_' && ch != '-' && ch != '.')
			*p = '_';
	}
	return s;
}

static struct emu_cat_entry *cat_new(struct emu *e, size_t *cap)
{
	if (emu_grow((void **) &e->cat, cap, e->ncat + 1, sizeof *e->cat) != 0)
		return NULL;
	struct emu_cat_entry *c = &e->cat[e->ncat];
	memset(c, 0, sizeof *c);
	c->id = e->ncat++;
	c->builtin = -1;
	c->chan = -1;
	c->bd_view = -1;
	return c;
}

static int cat_builtin(struct emu *e, size_t *cap, enum emu_builtin_index b)
{
	const struct emu_builtin_chan *B = &emu_builtin_chans[b];
	struct emu_cat_entry *c = cat_new(e, cap);
	if (c == NULL || (c->name = strdup(B->name)) == NULL)
		return -1;
	c->model = "ovni";
	c->scope = B->scope;
	c->kind = B->what == EMU_BUILTIN_STATE ? EMU_CAT_STATE : EMU_CAT_SINGLE;
	c->nvalues = B->nvalues;
	c->values = B->values;
	if (B->what == EMU_BUILTIN_AFFINITY) {
		c->nvalues = e->sys->ncpus;
		c->values = e->cat_cpus;
	}
	c->prv_type = B->prv_type;
	c->thread_label = B->thread_label;
	c->cpu_label = B->cpu_label;
	c->pcf = B->pcf;
	c->track = B->show == EMU_SHOW_SLICES ? EMU_CAT_TRACK_SLICES : EMU_CAT_TRACK_NONE;
	c->view = EMU_CAT_VIEW_ANY;
	c->builtin = (int) b;
	e->cat_builtin[b] = c->id;
	return 0;
}

static enum emu_cat_track chan_track(const struct emu_chan_info *i)
{
	if (i->show == EMU_SHOW_NONE)
		return EMU_CAT_TRACK_NONE;
	if (i->counter >= 0 || i->show == EMU_SHOW_COUNTER)
		return EMU_CAT_TRACK_COUNTER;
	if (i->dyn_values || i->show == EMU_SHOW_SLICES || i->nvalues > 0 || i->stack)
		return EMU_CAT_TRACK_SLICES;
	return EMU_CAT_TRACK_COUNTER; /* numbers without labels */
}

static int cat_chan(struct emu *e, size_t *cap, size_t ch)
{
	struct chan *C = &e->chans[ch];
	const struct emu_chan_info *i = &C->info;
	struct emu_cat_entry *c = cat_new(e, cap);
	if (c == NULL)
		return -1;
	C->cat = (uint32_t) c->id;
	C->vrec = i->prv_type != 0 ? (int32_t) c->id : -1;
	char num[24];
	if (C->mark_type >= 0) {
		snprintf(num, sizeof num, "%d", C->mark_type);
		c->name = cat_name(i->model, "mark", num);
		c->kind = EMU_CAT_MARK;
	} else if (C->counter >= 0) {
		c->name = cat_name(i->model, "counter", i->thread_label);
		c->kind = EMU_CAT_COUNTER;
	} else {
		c->name = cat_name(i->model, i->name, NULL);
		c->kind = i->stack ? EMU_CAT_STACK : EMU_CAT_SINGLE;
	}
	if (c->name == NULL)
		return -1;
	c->model = i->model;
	c->scope = EMU_SCOPE_THREAD | EMU_SCOPE_CPU;
	c->stack = i->stack;
	c->nvalues = i->nvalues;
	c->values = i->values;
	c->mvalues = i->mvalues;
	c->prv_type = i->prv_type;
	c->thread_label = i->thread_label;
	c->cpu_label = i->cpu_label;
	c->pcf = i->prv_type != 0 ? EMU_PCF_ALWAYS : EMU_PCF_NEVER;
	c->track = chan_track(i);
	c->view = C->desc->track == EMU_TRACK_ANY ? EMU_CAT_VIEW_ANY :
			C->desc->track == EMU_TRACK_ACT ? EMU_CAT_VIEW_ACT : EMU_CAT_VIEW_RUN;
	c->chan = (int) ch;
	c->info = i;
	return 0;
}

static int cat_breakdown(struct emu *e, size_t *cap, size_t view)
{
	const struct emu_view *v = &e->views[view];
	struct emu_cat_entry *c = cat_new(e, cap);
	if (c == NULL)
		return -1;
	/* "nosv-breakdown" -> "nosv.breakdown" */
	const char *dash = strrchr(v->name, '-');
	size_t n = dash ? (size_t) (dash - v->name) : strlen(v->name);
	char model[EMU_LABEL_MAX];
	snprintf(model, sizeof model, "%.*s", (int) (n < sizeof model ? n : sizeof model - 1),
			v->name);
	if ((c->name = cat_name(model, "breakdown", NULL)) == NULL)
		return -1;
	for (size_t mi = 0; mi < e->disp.nmodels; mi++)
		if (strcmp(e->disp.models[mi].desc->name, model) == 0)
			c->model = e->disp.models[mi].desc->name;
	c->scope = EMU_SCOPE_VIEW(view);
	c->kind = EMU_CAT_SINGLE;
	c->prv_type = v->prv_type;
	c->thread_label = v->label;
	c->cpu_label = v->label;
	c->pcf = EMU_PCF_ALWAYS;
	c->track = EMU_CAT_TRACK_NONE;
	c->view = EMU_CAT_VIEW_ANY;
	c->bd_view = (int) view;
	e->cat_view[view] = (uint32_t) c->id;
	return 0;
}

/* A name taken by an entry before: ".2", ".3"... after it (two counters
 * whose names lower to the same). */
static int cat_unique(struct emu *e)
{
	for (size_t i = 1; i < e->ncat; i++) {
		struct emu_cat_entry *c = &e->cat[i];
		for (unsigned k = 2;; k++) {
			int taken = 0;
			for (size_t j = 0; j < i && !taken; j++)
				taken = strcmp(e->cat[j].name, c->name) == 0;
			if (!taken)
				break;
			size_t n = strlen(c->name) + 16;
			char *s = malloc(n);
			if (s == NULL)
				return -1;
			const char *base = c->name;
			size_t blen = strlen(base);
			if (k > 2) /* drop the ".<k-1>" added before */
				blen = (size_t) (strrchr(base, '.') - base);
			snprintf(s, n, "%.*s.%u", (int) blen, base, k);
			free((char *) c->name);
			c->name = s;
		}
	}
	return 0;
}

int emu_cat_build(struct emu *e)
{
	size_t cap = 0;
	const struct emu_sys *sys = e->sys;
	e->cat_cpus = calloc(sys->ncpus + 1, sizeof *e->cat_cpus);
	if (e->cat_cpus == NULL)
		return -1;
	for (size_t c = 0; c < sys->ncpus; c++)
		e->cat_cpus[c] = (struct emu_value_label) { (int64_t) c + 1, sys->cpus[c].label };
	for (int b = 0; b < EMU_BI_LOST; b++)
		if (cat_builtin(e, &cap, (enum emu_builtin_index) b) != 0)
			return -1;
	for (size_t ch = 0; ch < e->nchans; ch++)
		if (cat_chan(e, &cap, ch) != 0)
			return -1;
	if (cat_builtin(e, &cap, EMU_BI_LOST) != 0)
		return -1;
	for (size_t v = 2; v < 2 + e->nbd; v++)
		if (cat_breakdown(e, &cap, v) != 0)
			return -1;
	return cat_unique(e);
}

void emu_cat_destroy(struct emu *e)
{
	for (size_t i = 0; i < e->ncat; i++)
		free((char *) e->cat[i].name);
	free(e->cat);
	free(e->cat_cpus);
}

size_t emu_cat_count(const struct emu *e) { return e->ncat; }

const struct emu_cat_entry *emu_cat_at(const struct emu *e, size_t id)
{
	return id < e->ncat ? &e->cat[id] : NULL;
}

const struct emu_cat_entry *emu_cat_by_name(const struct emu *e, const char *name)
{
	for (size_t i = 0; i < e->ncat; i++)
		if (strcmp(e->cat[i].name, name) == 0)
			return &e->cat[i];
	return NULL;
}

const struct emu_cat_entry *emu_cat_by_type(const struct emu *e, size_t view, int type)
{
	if (type == 0 || view >= 32)
		return NULL;
	for (size_t i = 0; i < e->ncat; i++)
		if (e->cat[i].prv_type == type && (e->cat[i].scope & EMU_SCOPE_VIEW(view)))
			return &e->cat[i];
	return NULL;
}

const struct emu_cat_entry *emu_cat_of_prv(const struct emu *e, size_t view,
		const struct emu_prv_rec *r)
{
	(void) view; /* the id names the entry whatever the view */
	return r->chan < e->ncat ? &e->cat[r->chan] : NULL;
}

const struct emu_cat_entry *emu_cat_of_raw(const struct emu *e, const struct emu_rec *r)
{
	if (r->kind < EMU_REC_RAW_SET || r->kind > EMU_REC_RAW_POP)
		return NULL;
	return r->chan < e->ncat ? &e->cat[r->chan] : NULL;
}

const struct emu_cat_entry *emu_cat_builtin(const struct emu *e, enum emu_builtin_index b)
{
	return &e->cat[e->cat_builtin[b]];
}

const char *emu_cat_value_label(const struct emu_cat_entry *c, int64_t v)
{
	for (size_t i = 0; i < c->nvalues; i++) {
		if (c->values != NULL && c->values[i].value == v)
			return c->values[i].label;
		if (c->mvalues != NULL && c->mvalues[i].value == v)
			return c->mvalues[i].label;
	}
	if (c->info != NULL)
		for (size_t i = 0; i < c->info->ndyn; i++)
			if (c->info->dyn[i].value == v)
				return c->info->dyn[i].label;
	return NULL;
}
