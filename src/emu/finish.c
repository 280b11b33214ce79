/* SPDX-License-Identifier: MIT */
/*
 * finish.c - the end of a run: each enabled model in model-byte order makes
 * its end checks (stacks that must be empty; every thread dead, for ovni)
 * and completes the values known only at the end (task types for the PCF,
 * the breakdown labels). A run stopped by an error still gets the steps the
 * models make in that case, and its first error is kept. Threads cut short
 * (weft emu --salvage, emu_thread_cut) are exempt from the end checks, and
 * a run that a window (--to) stopped makes none.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

static int fail_keep(struct emu *e, int *status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records a failure of the end step: the first error of the run is kept. */
static int fail_keep(struct emu *e, int *status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (!e->failed) {
		e->ev = NULL;
		emu_vfail(e, fmt, ap);
	}
	va_end(ap);
	*status = -1;
	return -1;
}

static void check_stacks(struct emu *e, struct model_rt *m, int complete, int *status)
{
	for (size_t c = m->chan_first; c < m->chan_first + m->nchans; c++) {
		const struct chan *C = &e->chans[c];
		enum emu_lint_empty le = C->desc->lint_empty;
		if (C->mark_type >= 0 || C->counter >= 0 || le == EMU_LINT_NO ||
				(le == EMU_LINT_COMPLETE && !complete))
			continue;
		for (size_t t = 0; t < e->nthreads; t++) {
			const struct raw *R = &e->raw[t * e->nchans + c];
			if (R->depth == 0 || emu_unchecked(e, t))
				continue;
			fail_keep(e, status, "%s: thread %s ends with %zu value%s left on the %s %s stack "
					"(top %" PRId64 "); it must be empty at the end",
					e->sys->threads[t].relpath, emu_tname(e, t), (size_t) R->depth,
					R->depth == 1 ? "" : "s", m->desc->name, C->info.name, R->val);
			return;
		}
	}
}

static void check_dead(struct emu *e, int *status)
{
	for (size_t t = 0; t < e->nthreads; t++) {
		if (e->thr[t].state != EMU_ST_DEAD && !emu_unchecked(e, t)) {
			fail_keep(e, status, "%s: thread %d is %s at the end of the trace; every thread "
					"must end with OHe (Dead)", e->sys->threads[t].relpath,
					e->thr[t].tid, emu_state_name(e->thr[t].state));
			return;
		}
	}
}

int emu_thread_cut(struct emu *e, size_t t, int has_last, int64_t last_sclock,
		const char *why)
{
	if (t >= e->nthreads)
		return 0;
	if (e->cuts == NULL) {
		e->cuts = calloc(e->nthreads, sizeof *e->cuts);
		if (e->cuts == NULL)
			return -1;
	}
	struct emu_cut *C = &e->cuts[t];
	if (!C->cut)
		e->ncut++;
	C->cut = 1;
	C->has_last = has_last;
	C->last = last_sclock;
	snprintf(C->why, sizeof C->why, "%s", why);
	return 0;
}

int emu_finish(struct emu *e, int complete)
{
	if (e->finished)
		return e->failed ? -1 : 0;
	e->finished = 1;
	int status = e->failed ? -1 : 0;
	/* a window without events: its state at T0 (the run stopped after
	 * T1 with nothing in between) */
	if (!e->failed && e->muted && e->window.stopped && emu_win_snapshot(e) != 0)
		status = -1;
	/* a window stopped the run after T1: what follows was not emulated,
	 * so the end checks do not apply */
	int checks = !e->window.stopped;
	if (emu_flush(e) != 0)
		status = -1;
	if (e->failed)
		complete = 0;
	e->ev = NULL;
	for (size_t mi = 0; mi < e->disp.nmodels; mi++) {
		struct model_rt *m = &e->disp.models[mi];
		/* Task types for the PCF: some models list them even after an
		 * error; a gid with two labels stops the model's step here. */
		if (m->desc->tasks.present && (complete || m->desc->tasks.pcf_after_error)) {
			if (emu_tasks_pcf_values(e, m) != 0) {
				status = -1;
				continue;
			}
		}
		if (m->bd && emu_bd_finish(e, (size_t) m->bd - 1) != 0) {
			status = -1;
			continue;
		}
		if (!checks)
			continue;
		check_stacks(e, m, complete, &status);
		if (m->desc->end_threads_dead && complete)
			check_dead(e, &status);
	}
	return status;
}
