/* SPDX-License-Identifier: MIT */
/* losses.c - the driver's side of traces with lost events: the runs each
 * stream lost (weft_stream_loss, weft_stream_lost_run) handed to the engine
 * per thread, the warning that says so, and the clock of a crash cut. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "losses.h"
#include "model_ids.h"

/* The stream index of thread th's stream, or SIZE_MAX. */
static size_t stream_index(const struct weft_trace *t, const struct weft_stream *st)
{
	for (size_t i = 0; st != NULL && i < weft_nstreams(t); i++)
		if (weft_stream_at(t, i) == st)
			return i;
	return SIZE_MAX;
}

int driver_losses(struct weft_trace *t, struct emu *e, const struct emu_sys *sys,
		const uint8_t *only, void (*warn)(void *ctx, const char *msg), void *ctx, char *err,
		size_t errlen)
{
	size_t nth = 0;
	uint64_t lost = 0, dropped = 0, filtered = 0;
	for (size_t th = 0; th < sys->nthreads; th++) {
		if (only != NULL && !only[th])
			continue;
		size_t i = stream_index(t, sys->threads[th].stream);
		struct weft_loss l;
		if (i == SIZE_MAX || !weft_stream_loss(t, i, &l) || (l.nruns == 0 && l.dropped == 0
					&& !(l.filter && l.filter_callback && l.filtered > 0)))
			continue;
		struct emu_lost_run *runs = calloc(l.nruns + 1, sizeof *runs);
		if (runs == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		size_t n = 0;
		for (size_t k = 0; k < l.nruns; k++) {
			struct weft_lost_run r;
			if (!weft_stream_lost_run(t, i, k, &r))
				break;
			runs[n++] = (struct emu_lost_run) { r.first_sclock, r.last_sclock, r.events,
				r.has_offset, r.offset, r.bytes };
		}
		/* What a filter callback dropped is not known: as lost. */
		uint64_t cb = l.filter && l.filter_callback ? l.filtered : 0;
		int rc = emu_thread_lost(e, th, runs, n, l.dropped);
		if (rc == 0)
			rc = emu_thread_filtered(e, th, cb);
		free(runs);
		if (rc != 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		nth++;
		lost += l.lost_events;
		dropped += l.dropped;
		filtered += cb;
	}
	if (nth > 0 && warn != NULL) {
		char msg[640], what[256];
		size_t w = 0;
		what[0] = '\0';
		if (lost > 0)
			w += (size_t) snprintf(what + w, sizeof what - w, "%" PRIu64 " overwritten by the "
					"flight recorder (WEFT_RING)", lost);
		if (dropped > 0 && w < sizeof what)
			w += (size_t) snprintf(what + w, sizeof what - w, "%s%" PRIu64 " dropped by signal "
					"handlers", w > 0 ? ", " : "", dropped);
		if (filtered > 0 && w < sizeof what)
			snprintf(what + w, sizeof what - w, "%s%" PRIu64 " dropped by the program's filter "
					"callback (weft_rt_filter_set)", w > 0 ? ", " : "", filtered);
		snprintf(msg, sizeof msg, "%zu thread%s lost events (%s): %s emulated leniently: "
				"after a loss a thread starts again in an unknown state, the events the "
				"models refuse then are skipped and counted in the summary, and its end "
				"checks are waived (docs/emu.md, \"Traces with lost events\")", nth,
				nth == 1 ? "" : "s", what, nth == 1 ? "it is" : "they are");
		warn(ctx, msg);
	}
	return 0;
}

/* ---- filters at the source (weft.filter, weft.filtered) ---- */

struct frule {
	int keep, any;
	size_t len;
	char p[3];
};
#define FRULES_MAX 64

/* A WEFT_FILTER list (docs/runtime.md, "Filters"): 0, or -1 if malformed. */
static int frules_parse(const char *text, struct frule *r, size_t *n)
{
	*n = 0;
	const char *p = text;
	while (*p != '\0') {
		if (*n == FRULES_MAX || (*p != '+' && *p != '-'))
			return -1;
		struct frule *f = &r[(*n)++];
		memset(f, 0, sizeof *f);
		f->keep = *p++ == '+';
		const char *end = strchr(p, ',');
		size_t len = end != NULL ? (size_t) (end - p) : strlen(p);
		if (len == 1 && *p == '*')
			f->any = 1;
		else if (len < 1 || len > 3)
			return -1;
		else
			memcpy(f->p, p, len);
		f->len = f->any ? 0 : len;
		p += len;
		if (end != NULL && *++p == '\0')
			return -1;
	}
	return 0;
}

/* What the rules shorter than len bytes decide for the events starting
 * with p: the longest matching one (the last of equal ones), else the
 * default ("*", else drop if some rule keeps). */
static int frules_keep_under(const struct frule *r, size_t n, const char *p, size_t len)
{
	int deflt = 1, any_keep = 0, has_any = 0;
	const struct frule *best = NULL;
	for (size_t k = 0; k < n; k++) {
		any_keep |= r[k].keep;
		if (r[k].any) {
			has_any = 1;
			deflt = r[k].keep;
		} else if (r[k].len < len && memcmp(r[k].p, p, r[k].len) == 0
				&& (best == NULL || r[k].len >= best->len)) {
			best = &r[k];
		}
	}
	if (best != NULL)
		return best->keep;
	return has_any ? deflt : !any_keep;
}

/* Families of events a model can lose as a whole and still be right:
 * punctual events, or pairs that are all gone together (the ovni model's
 * bursts, flushes and marks). */
static const char *const whole_families[] = { "OB", "OF", "OM" };

/* Whether rule q of model byte b leaves that model's emulation right: it
 * decides as the shorter rules already do, or it drops a whole family of
 * a kept model. */
static int frule_harmless(const struct frule *r, size_t n, size_t q)
{
	int parent = frules_keep_under(r, n, r[q].p, r[q].len);
	if (r[q].keep == parent)
		return 1;
	if (r[q].keep || r[q].len != 2)
		return 0;
	for (size_t k = 0; k < sizeof whole_families / sizeof whole_families[0]; k++)
		if (memcmp(whole_families[k], r[q].p, 2) == 0)
			return 1;
	return 0;
}

int driver_filters(const struct weft_trace *t, void (*warn)(void *ctx, const char *msg), void *ctx,
		char *err, size_t errlen)
{
	size_t nth = 0;
	uint64_t total = 0;
	char first[WEFT_FILTER_DESC_MAX] = "";
	int others = 0; /* streams with another filter than the first's */
	for (size_t i = 0; i < weft_nstreams(t); i++) {
		struct weft_loss l;
		if (!weft_stream_loss(t, i, &l))
			continue;
		if (l.output_off) {
			const char *json = weft_stream_json_path(t, i);
			snprintf(err, errlen, "%s: written with WEFT_OUTPUT=off (the perturbation mode): its "
					"%" PRIu64 " bytes of events were recorded and never written, so there "
					"is nothing to emulate", json != NULL ? json : "?", l.unwritten_bytes);
			return -1;
		}
		if (!l.filter || l.filtered == 0)
			continue;
		const char *json = weft_stream_json_path(t, i);
		json = json != NULL ? json : "?";
		char desc[WEFT_FILTER_DESC_MAX];
		weft_filter_describe(&l, desc, sizeof desc);
		struct frule r[FRULES_MAX];
		size_t n;
		if (frules_parse(l.filter_rules, r, &n) != 0) {
			snprintf(err, errlen, "%s: weft.filter.rules '%s' is not a WEFT_FILTER list of "
					"rules (docs/runtime.md, \"Filters\")", json, l.filter_rules);
			return -1;
		}
		if (n == 0)
			continue; /* a callback alone: emulated as lost (driver_losses) */
		const struct weft_stream *st = weft_stream_at(t, i);
		const char *needs = NULL;
		int ovni_gone = 0;
		for (size_t k = 0; k < st->nreqs; k++) {
			char b = weft_model_id_byte(st->reqs[k].model);
			if (b == 0)
				continue;
			for (size_t q = 0; q < n; q++) {
				if (r[q].any || r[q].len < 2 || r[q].p[0] != b || frule_harmless(r, n, q))
					continue;
				snprintf(err, errlen, "%s: %" PRIu64 " event%s filtered at the source by %s, "
						"whose rule '%c%.*s' keeps or drops only part of the events "
						"of the %s model (byte '%c'): its emulation would be wrong; "
						"filter whole models (one-byte rules), or the ovni model's "
						"bursts, flushes or marks (-OB, -OF, -OM), to emulate such "
						"a trace", json, l.filtered, l.filtered == 1 ? " was" : "s were",
						desc, r[q].keep ? '+' : '-', (int) r[q].len, r[q].p,
						st->reqs[k].model, b);
				return -1;
			}
			int keep = frules_keep_under(r, n, &b, 2);
			if (b == 'O' && !keep)
				ovni_gone = 1;
			else if (b != 'O' && keep && needs == NULL)
				needs = st->reqs[k].model;
		}
		if (ovni_gone && needs != NULL) {
			snprintf(err, errlen, "%s: %" PRIu64 " event%s filtered at the source by %s, "
					"which drops every event of the ovni model (byte 'O'), whose "
					"thread states the %s model needs: its emulation would be wrong",
					json, l.filtered, l.filtered == 1 ? " was" : "s were", desc, needs);
			return -1;
		}
		if (nth++ == 0)
			snprintf(first, sizeof first, "%s", desc);
		else if (strcmp(first, desc) != 0)
			others = 1;
		total += l.filtered;
	}
	if (nth > 0 && warn != NULL) {
		char msg[WEFT_FILTER_DESC_MAX + 256];
		snprintf(msg, sizeof msg, "%zu thread%s had %" PRIu64 " event%s filtered at the source "
				"(%s%s): whole models or families of events dropped on purpose, emulated "
				"as if never emitted",
				nth, nth == 1 ? "" : "s", total, total == 1 ? "" : "s", first,
				others ? ", and others" : "");
		warn(ctx, msg);
	}
	return 0;
}

int driver_cut_clock(const struct weft_trace *t, size_t i, int64_t *clock)
{
	struct weft_loss l;
	if (!weft_stream_loss(t, i, &l) || l.end_by == WEFT_END_NORMAL)
		return 0;
	*clock = l.end_sclock;
	return 1;
}
