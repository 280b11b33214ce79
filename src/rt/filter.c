/* SPDX-License-Identifier: MIT */
/*
 * filter.c - filters at the source (WEFT_FILTER, weft_rt_filter_set;
 * docs/runtime.md, "Filters").
 *
 * WEFT_FILTER is a comma-separated list of rules, "+P" (keep) or "-P"
 * (drop), P an MCV prefix of 1 to 3 bytes (one byte: a whole model) or "*"
 * (every event). An event follows the longest rule whose prefix it starts
 * with (the last of equal ones); one that matches none is dropped if the
 * list has a "+" rule and no "*" one, else kept. The program's callback,
 * if any, then decides for the events the rules keep.
 *
 * The emit path: rt_filter_tab[model] is 0 when every event of that model
 * byte is kept without asking (the usual case, and every byte when no
 * filter is set): one load, folded into the emit's one test of "anything
 * unusual". Otherwise the event goes to the slow path, where
 * rt_filter_keep decides: RT_FILTER_DROP (the whole model is dropped),
 * or a look at the longer rules of that model and at the callback.
 * The table is written by ovni_proc_init only (before the threads of the
 * process are initialized, which take the process mutex after it).
 */
#include <string.h>

#include "rt_internal.h"

uint8_t rt_filter_tab[256];

static struct {
	struct rt_filter_spec spec;
	weft_rt_filter_fn fn;
	void *arg;
	int deflt_keep;
} flt;

int rt_filter_parse(const char *v, struct rt_filter_spec *spec)
{
	memset(spec, 0, sizeof *spec);
	size_t n = strlen(v);
	if (n == 0 || n >= sizeof spec->text)
		return -1;
	const char *p = v;
	for (;;) {
		if (spec->nrules == RT_FILTER_MAX_RULES || (*p != '+' && *p != '-'))
			return -1;
		struct rt_filter_rule *r = &spec->rules[spec->nrules++];
		r->keep = *p == '+';
		p++;
		const char *end = strchr(p, ',');
		size_t len = end != NULL ? (size_t) (end - p) : strlen(p);
		if (len == 1 && p[0] == '*') {
			r->any = 1;
		} else {
			if (len < 1 || len > 3)
				return -1;
			for (size_t k = 0; k < len; k++) {
				/* printable, not a space */
				if (p[k] <= ' ' || p[k] > '~')
					return -1;
				r->mcv[k] = (uint8_t) p[k];
			}
			r->len = (uint8_t) len;
		}
		if (end == NULL)
			break;
		p = end + 1;
	}
	memcpy(spec->text, v, n + 1);
	return 0;
}

/* The rule deciding an event whose MCV starts with the n bytes at mcv,
 * among the rules of at most n bytes; NULL: none. */
static const struct rt_filter_rule *best_rule(const uint8_t *mcv, size_t n)
{
	const struct rt_filter_rule *best = NULL;
	for (size_t i = 0; i < flt.spec.nrules; i++) {
		const struct rt_filter_rule *r = &flt.spec.rules[i];
		if (r->any || r->len > n || memcmp(r->mcv, mcv, r->len) != 0)
			continue;
		if (best == NULL || r->len >= best->len)
			best = r;
	}
	return best;
}

static int rules_keep(const uint8_t *mcv, size_t n)
{
	const struct rt_filter_rule *r = best_rule(mcv, n);
	return r != NULL ? r->keep : flt.deflt_keep;
}

void rt_filter_setup(const struct rt_settings *s)
{
	flt.spec = s->filter;
	flt.fn = s->filter_fn;
	flt.arg = s->filter_arg;
	/* The default: "*" if given (the last one), else drop when some rule
	 * keeps (a list of what to keep), else keep. */
	int any_keep = 0, has_any = 0;
	flt.deflt_keep = 1;
	for (size_t i = 0; i < flt.spec.nrules; i++) {
		const struct rt_filter_rule *r = &flt.spec.rules[i];
		if (r->any) {
			has_any = 1;
			flt.deflt_keep = r->keep;
		}
		any_keep |= r->keep;
	}
	if (!has_any)
		flt.deflt_keep = !any_keep;
	for (unsigned m = 0; m < 256; m++) {
		uint8_t b = (uint8_t) m;
		int deeper = 0;
		for (size_t i = 0; i < flt.spec.nrules; i++) {
			const struct rt_filter_rule *r = &flt.spec.rules[i];
			if (!r->any && r->len > 1 && r->mcv[0] == b)
				deeper = 1;
		}
		uint8_t t;
		if (deeper)
			t = RT_FILTER_ASK;
		else if (!rules_keep(&b, 1))
			t = RT_FILTER_DROP;
		else
			t = flt.fn != NULL ? RT_FILTER_ASK : 0;
		rt_filter_tab[m] = t;
	}
}

int rt_filter_keep(const struct ovni_ev *ev)
{
	uint8_t t = rt_filter_tab[ev->header.model];
	if (t == 0)
		return 1;
	if (t == RT_FILTER_DROP)
		return 0;
	const uint8_t mcv[3] = {ev->header.model, ev->header.category, ev->header.value};
	if (!rules_keep(mcv, 3))
		return 0;
	return flt.fn == NULL || flt.fn(ev, flt.arg) != 0;
}

int rt_filter_active(void)
{
	return flt.spec.nrules > 0 || flt.fn != NULL;
}

const char *rt_filter_rules(void)
{
	return flt.spec.text;
}

int rt_filter_callback(void)
{
	return flt.fn != NULL;
}
