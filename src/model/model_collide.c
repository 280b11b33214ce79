/* SPDX-License-Identifier: MIT */
/*
 * model_collide.c - what one model owns must be its own: a model is refused
 * when its byte, its name, a Paraver type it writes (in any view) or the
 * family of mark types is taken by a model registered before it, or when a
 * type is one the emulator writes for every trace (the built-in channels
 * below). The outputs tell channels apart by their Paraver type, so a
 * shared type would show one channel's values as the other's (a model's
 * type 4 read as thread states).
 *
 * Within one model the loader refuses the same things (model_load.c).
 * What models may share: channel names (every output names a channel with
 * its model: "nosv subsystem", "nanos6 subsystem"), flag names (a flag is
 * shared on purpose: the kernel model sets out-of-cpu, ovni and nosv read
 * it) and counters' metadata keys. An MCV starts with its model's byte, so
 * MCVs cannot clash once bytes do not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "model_emu.h"

/* The types the emulator writes for every trace, whatever the models: the
 * built-in channels (builtin_chans.c, one table with the engine's
 * catalogue, src/emu/catalogue.c); a type two of them share is named once. */
/* A range of types taken, and by whom: a model's entry, or a built-in. */
struct taken {
	int32_t lo, hi;
	const struct weft_model_spec *model; /* NULL: builtin */
	const struct weft_model_prv *prv;
	const char *builtin;
};

static int cmp_taken(const void *a, const void *b)
{
	const struct taken *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

static void owner(const struct taken *t, char *buf, size_t len)
{
	if (t->model == NULL)
		snprintf(buf, len, "%s", t->builtin);
	else
		snprintf(buf, len, "%s of model '%s' (%s:%u)", t->prv->what, t->model->name,
				t->model->source, t->prv->line);
}

int weft_model_collide(const struct weft_model_spec *m, const struct weft_model_spec *const *others,
		size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		const struct weft_model_spec *o = others[i];
		int bybyte = o->code == m->code;
		if (bybyte || strcmp(o->name, m->name) == 0) {
			snprintf(err, errlen, "%s:%u: model '%s' (byte '%c') clashes with model '%s' "
					"(byte '%c') of %s: its %s is taken", m->source,
					bybyte ? m->byte_line : m->name_line, m->name, m->code, o->name, o->code,
					o->source, bybyte ? "byte" : "name");
			return -1;
		}
	}
	/* The types taken, sorted: the ranges are disjoint (each model was
	 * checked against the ones before it, the first against the built-in
	 * types), so their ends are sorted too. */
	size_t ntaken = EMU_NBUILTIN_CHANS, nmine;
	for (size_t i = 0; i < n; i++) {
		size_t k;
		weft_model_prv_types(others[i], &k);
		ntaken += k;
	}
	struct taken *t = malloc(ntaken * sizeof *t);
	if (t == NULL) {
		snprintf(err, errlen, "%s: out of memory", m->source);
		return -1;
	}
	size_t k = 0;
	struct taken marks = { 0, 0, NULL, NULL, NULL }; /* the family of mark types */
	for (size_t i = 0; i < EMU_NBUILTIN_CHANS; i++)
		if (emu_builtin_chans[i].collide != NULL)
			t[k++] = (struct taken) { emu_builtin_chans[i].prv_type,
				emu_builtin_chans[i].prv_type, NULL, NULL, emu_builtin_chans[i].collide };
	for (size_t i = 0; i < n; i++) {
		size_t np;
		const struct weft_model_prv *p = weft_model_prv_types(others[i], &np);
		for (size_t j = 0; j < np; j++) {
			t[k] = (struct taken) { p[j].lo, p[j].hi, others[i], &p[j], NULL };
			if (p[j].marks)
				marks = t[k];
			if (p[j].lo <= p[j].hi)
				k++;
		}
	}
	qsort(t, k, sizeof *t, cmp_taken);
	const struct weft_model_prv *mine = weft_model_prv_types(m, &nmine);
	int r = 0;
	char who[512];
	for (size_t j = 0; j < nmine && r == 0; j++) {
		const struct weft_model_prv *p = &mine[j];
		if (p->marks && marks.model != NULL) {
			owner(&marks, who, sizeof who);
			snprintf(err, errlen, "%s:%u: %s is a family of mark types, and so is %s: a trace's "
					"mark types have one family", m->source, p->line, p->what, who);
			r = -1;
			break;
		}
		if (p->lo > p->hi)
			continue;
		/* the first range that ends at p->lo or after */
		size_t lo = 0, hi = k;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (t[mid].hi < p->lo)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < k && t[lo].lo <= p->hi) {
			owner(&t[lo], who, sizeof who);
			snprintf(err, errlen, "%s:%u: Paraver type %d of %s is taken by %s", m->source,
					p->line, t[lo].lo > p->lo ? t[lo].lo : p->lo, p->what, who);
			r = -1;
		}
	}
	free(t);
	return r;
}
