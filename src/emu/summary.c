/* SPDX-License-Identifier: MIT */
/* summary.c - the summary `weft emu` prints: time per thread state, CPU use,
 * and per model where the time went. */
#include <inttypes.h>
#include <stdio.h>

#include "emu_internal.h"

/* Per model, for each labelled channel (mark types with labels too): the
 * share of the run each value held on each thread (the three largest) and
 * its time, e.g. time per subsystem. The raw definition: the time the
 * model's value (a stack: its top) held, whether or not the thread ran, as
 * Perfetto's slices and `weft sql`'s raw_interval give it. */
static void model_shares(const struct emu *e, const struct emu *const *thr_of, int64_t end,
		FILE *out)
{
	if (end <= 0)
		return;
	for (size_t c = 0; c < e->nchans; c++) {
		const struct chan *C = &e->chans[c];
		if (C->acc_first == SIZE_MAX)
			continue;
		int header = 0;
		for (size_t t = 0; t < e->nthreads; t++) {
			const struct emu *se = thr_of != NULL ? thr_of[t] : e;
			const struct raw *R = &se->raw[t * e->nchans + c];
			size_t n = C->info.nvalues;
			int64_t tot[64];
			if (n > 64)
				n = 64;
			int any = 0;
			for (size_t i = 0; i < n; i++) {
				tot[i] = se->acc[t * e->nacc + C->acc_first + i];
				if (R->depth > 0 && emu_chan_value(C, i) == R->val && end > R->since)
					tot[i] += end - R->since;
				any |= tot[i] > 0;
			}
			if (!any)
				continue;
			if (!header) {
				const char *name = C->info.name;
				for (size_t k = 0; k < e->ncat; k++)
					if (e->cat[k].chan == (int) c)
						name = e->cat[k].name;
				fprintf(out, "%s: share of the run per thread (raw: the value the "
						"model wrote, whether or not the thread ran)\n", name);
				header = 1;
			}
			fprintf(out, "  %-22s", e->sys->threads[t].label);
			for (int k = 0; k < 3; k++) {
				size_t best = SIZE_MAX;
				for (size_t i = 0; i < n; i++)
					if (tot[i] > 0 && (best == SIZE_MAX || tot[i] > tot[best]))
						best = i;
				if (best == SIZE_MAX)
					break;
				fprintf(out, "  %s %.1f%% (%" PRId64 " ns)", emu_chan_vlabel(C, best),
						100.0 * (double) tot[best] / (double) end, tot[best]);
				tot[best] = 0;
			}
			fputc('\n', out);
		}
	}
}

static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return a < 0 ? INT64_MIN : INT64_MAX;
	return r;
}

/* What the summary's window line says of the run: whether an event was
 * read, whether reading stopped after T1, the events before T0 (over every
 * engine of a run made by several). */
struct win_sum {
	int started, stopped;
	uint64_t nmuted;
};

/* The summary: thread t's figures from thr_of[t], CPU c's from cpu_of[c]
 * (NULL: e's), the catalogue and the losses from e, the window from e and
 * w. */
static void summary_of(const struct emu *e, const struct emu *const *thr_of,
		const struct emu *const *cpu_of, int64_t end, uint64_t nevents,
		const struct win_sum *w, FILE *out)
{
	fprintf(out, "duration: %" PRId64 " ns, %" PRIu64 " events\n", end, nevents);
	if ((e->window.bounds.has_from || e->window.bounds.has_to) && w->started) {
		int64_t wend = w->stopped ? e->window.to : end;
		int64_t span = wend > e->rbase ? wend - e->rbase : 0; /* emu_duration's */
		fprintf(out, "window: %" PRId64 " to %" PRId64 " ns into the run (clocks %" PRId64
				" to %" PRId64 "): the timelines hold %" PRId64 " ns; %" PRIu64
				" events before it emulated without records, %" PRIu64 " in it\n",
				e->rbase, wend, sat_add(e->rbase, e->first_clock), sat_add(wend, e->first_clock),
				span, w->nmuted, nevents - w->nmuted);
		if (w->stopped)
			fprintf(out, "the run stopped at the first event after the window: the rest of "
					"the trace was not read and the models' end checks were not made\n");
	}
	static const int order[] = { EMU_ST_RUNNING, EMU_ST_PAUSED, EMU_ST_COOLING,
		EMU_ST_WARMING, EMU_ST_DEAD };
	fprintf(out, "%-24s", "thread (time in ns)");
	for (size_t k = 0; k < 5; k++)
		fprintf(out, " %14s", emu_state_name(order[k]));
	fputc('\n', out);
	for (size_t t = 0; t < e->nthreads; t++) {
		const struct emu *se = thr_of != NULL ? thr_of[t] : e;
		const struct thr *T = &se->thr[t];
		/* a thread cut short ends at its last event */
		int64_t tend = end;
		if (emu_is_cut(se, t))
			tend = se->cuts[t].has_last && se->started
				? se->cuts[t].last - se->first_clock : 0;
		fprintf(out, "%-24s", e->sys->threads[t].label);
		for (size_t k = 0; k < 5; k++) {
			int s = order[k];
			int64_t v = T->time[s];
			if ((int) T->state == s && tend > T->since)
				v += tend - T->since;
			fprintf(out, " %14" PRId64, v);
		}
		fputc('\n', out);
	}
	size_t ncut = 0;
	for (size_t t = 0; t < e->nthreads; t++)
		ncut += emu_is_cut(thr_of != NULL ? thr_of[t] : e, t) != 0;
	if (ncut > 0) {
		size_t nat = 0;
		for (size_t t = 0; t < e->nthreads; t++) {
			const struct emu *se = thr_of != NULL ? thr_of[t] : e;
			nat += emu_is_cut(se, t) && se->cuts[t].at_cut;
		}
		fprintf(out, "cut short (--salvage): %zu thread%s, each closed at %s; "
				"the end checks were waived for %s\n", ncut, ncut == 1 ? "" : "s",
				nat == 0 ? "its last event" : nat == ncut ? "the clock of its cut" :
				"its last event or the clock of its cut", ncut == 1 ? "it" : "them");
		for (size_t t = 0; t < e->nthreads; t++) {
			const struct emu *se = thr_of != NULL ? thr_of[t] : e;
			if (!emu_is_cut(se, t))
				continue;
			const struct emu_cut *C = &se->cuts[t];
			fprintf(out, "  %-22s %s: ", e->sys->threads[t].label,
					e->sys->threads[t].relpath);
			if (C->has_last)
				fprintf(out, "%s at clock %" PRId64 " (%" PRId64 " ns into "
						"the run)", C->at_cut ? "closed" : "last event", C->last,
						se->started ? C->last - se->first_clock : 0);
			else
				fprintf(out, "no events");
			fprintf(out, "; %s\n", C->why);
		}
	}
	emu_loss_summary(e, thr_of, out);
	fprintf(out, "%-24s %14s\n", "CPU", "running");
	for (size_t c = 0; c < e->ncpus; c++) {
		const struct cpu *C = &(cpu_of != NULL ? cpu_of[c] : e)->cpu[c];
		int64_t busy = C->busy;
		if (C->nrun > 0 && end > C->busy_since)
			busy += end - C->busy_since;
		double frac = end > 0 ? 100.0 * (double) busy / (double) end : 0.0;
		fprintf(out, "%-24s %13.2f%%\n", e->sys->cpus[c].label[0] == ' ' ?
				e->sys->cpus[c].label + 1 : e->sys->cpus[c].label, frac);
	}
	model_shares(e, thr_of, end, out);
}

static struct win_sum win_of(const struct emu *e)
{
	struct win_sum w = { e->started, e->window.stopped, e->window.nmuted };
	return w;
}

void emu_summary(const struct emu *e, FILE *out)
{
	struct win_sum w = win_of(e);
	summary_of(e, NULL, NULL, e->duration, e->nevents, &w, out);
}

void emu_summary_split(const struct emu *e, const struct emu *const *thr_of,
		const struct emu *const *cpu_of, const struct emu *const *all, size_t nall, FILE *out)
{
	int64_t end = e->duration;
	uint64_t n = 0;
	struct win_sum w = { 0, 0, 0 };
	for (size_t k = 0; k < nall; k++) {
		if (all[k]->duration > end)
			end = all[k]->duration;
		n += all[k]->nevents;
		/* reading stopped when any engine met an event after T1: the
		 * serial run's first such event is one of them */
		w.started |= all[k]->started;
		w.stopped |= all[k]->window.stopped;
		w.nmuted += all[k]->window.nmuted;
	}
	summary_of(e, thr_of, cpu_of, end, n, &w, out);
}

void emu_summary_at(const struct emu *e, int64_t end, uint64_t nevents, FILE *out)
{
	struct win_sum w = win_of(e);
	summary_of(e, NULL, NULL, end, nevents, &w, out);
}
