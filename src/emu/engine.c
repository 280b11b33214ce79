/* SPDX-License-Identifier: MIT */
/*
 * engine.c - the emulation engine composed of its parts (struct emu,
 * emu_internal.h): the dispatch (dispatch.c: an event's thread, model,
 * checks and actions), channels and views (chan_views.c), the propagation
 * of an event's writes to the views (propagate.c), batches and sinks
 * (batch.c), the window (window.c) and the threads that lost events
 * (loss.c); the actions of the ovni model in threads.c, the task machinery
 * in tasks.c. Here: creation and destruction (each part sets up and frees
 * its own), the end of a thread cut short (a step without an event; an
 * event's step, emu_event, is in dispatch.c beside the dispatch it runs),
 * messages and the hooks' interface. A step's records are buffered and
 * handed to the sinks only if the whole step was accepted. The per-event
 * fast paths are inline in fastpath.h. See docs/emu.md and
 * docs/architecture.md.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fastpath.h"

/* ---- messages ---- */

static void fmt_mcv(char *buf, size_t len, const char mcv[3])
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < 3 && n + 5 < len; i++) {
		unsigned char c = (unsigned char) mcv[i];
		if (c >= 0x21 && c < 0x7f) {
			buf[n++] = (char) c;
			buf[n] = '\0';
		} else {
			n += (size_t) snprintf(buf + n, len - n, "\\x%02x", c);
		}
	}
}

int emu_vfail(struct emu *e, const char *fmt, va_list ap)
{
	char reason[WEFT_ERR_MAX - 256];
	vsnprintf(reason, sizeof reason, fmt, ap);
	if (e->ev != NULL) {
		char mcv[16];
		fmt_mcv(mcv, sizeof mcv, e->ev->mcv);
		const char *where = e->ev->stream && e->ev->stream->relpath ?
				e->ev->stream->relpath : "?";
		int n = snprintf(e->err, sizeof e->err, "%s: event %s at clock %" PRId64 " (offset %" PRIu64
				"): %s", where, mcv, e->ev->rclock, e->ev->offset, reason);
		(void) n;
	} else {
		snprintf(e->err, sizeof e->err, "%s", reason);
	}
	e->failed = 1;
	return -1;
}

int emu_fail(struct emu *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emu_vfail(e, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- small buffers ---- */

int emu_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *np = realloc(*p, n * elem);
	if (np == NULL)
		return -1;
	*p = np;
	*cap = n;
	return 0;
}

/* ---- construction ---- */

struct emu *emu_create(const struct emu_sys *sys, const struct emu_model_desc *const *models,
		size_t nmodels, const struct emu_opts *opts, char *err, size_t errlen)
{
	struct emu *e = calloc(1, sizeof *e);
	if (e == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	e->sys = sys;
	if (opts != NULL)
		e->opts = *opts;
	e->nthreads = sys->nthreads;
	e->ncpus = sys->ncpus;
	e->views[0] = (struct emu_view) { "thread", sys->nthreads, 0, 0, NULL };
	e->views[1] = (struct emu_view) { "cpu", sys->ncpus, 0, 0, NULL };
	if (emu_chans_init(e, models, nmodels) != 0)
		goto oom;
	if (emu_dispatch_models(e, models, nmodels, err, errlen) != 0)
		goto fail;
	if (emu_chans_finish(e) != 0)
		goto oom;
	size_t nt = e->nthreads, nc = e->ncpus;
	e->thr = calloc(nt + 1, sizeof *e->thr);
	e->cpu = calloc(nc + 1, sizeof *e->cpu);
	if (!e->thr || !e->cpu)
		goto oom;
	for (size_t t = 0; t < nt; t++) {
		const struct emu_sys_thread *st = &sys->threads[t];
		e->thr[t].cpu = NO_CPU;
		e->thr[t].tid = st->tid;
		e->thr[t].proc = st->proc;
		e->thr[t].loom = st->loom;
		e->thr[t].pid = sys->procs[st->proc].pid;
	}
	for (size_t c = 0; c < nc; c++)
		e->cpu[c].rsel = -1;
	if (emu_dispatch_map(e) != 0)
		goto oom;
	if (e->opts.breakdown) {
		for (size_t mi = 0; mi < nmodels; mi++) {
			if (e->disp.models[mi].desc->breakdown.kind == EMU_BD_NONE)
				continue;
			int r = emu_bd_create(e, mi, err, errlen);
			if (r < 0)
				goto fail;
		}
	}
	if (emu_cat_build(e) != 0)
		goto oom;
	return e;
oom:
	snprintf(err, errlen, "out of memory creating the emulator");
fail:
	emu_destroy(e);
	return NULL;
}

void emu_destroy(struct emu *e)
{
	if (e == NULL)
		return;
	emu_prop_destroy(e);
	free(e->cuts);
	emu_loss_destroy(e);
	emu_dispatch_destroy(e);
	for (size_t b = 0; b < e->nbd; b++)
		emu_bd_destroy(e->bd[b]);
	emu_cat_destroy(e);
	emu_chans_destroy(e);
	free(e->thr);
	free(e->cpu);
	emu_batch_destroy(e);
	free(e);
}

const char *emu_error(const struct emu *e) { return e->err; }
const struct emu_sys *emu_system(const struct emu *e) { return e->sys; }
uint64_t emu_nevents(const struct emu *e) { return e->nevents; }
size_t emu_nchans(const struct emu *e) { return e->nchans; }
const struct emu_chan_info *emu_chan_at(const struct emu *e, size_t i) { return &e->chans[i].info; }
size_t emu_nviews(const struct emu *e) { return 2 + e->nbd; }
const struct emu_view *emu_view_at(const struct emu *e, size_t i) { return &e->views[i]; }

/* ---- a step ---- */

int emu_settle(struct emu *e)
{
	if (propagate(e) != 0)
		return -1;
	return e->nbd ? emu_bd_commit(e) : 0;
}

int emu_thread_close(struct emu *e, size_t t, int64_t sclock)
{
	if (e->failed)
		return -1;
	if (t >= e->nthreads || !e->started)
		return 0;
	if (sclock - e->first_clock > e->window.to)
		return 0; /* after the window: not emulated */
	enum emu_state st = e->thr[t].state;
	if (st == EMU_ST_UNKNOWN || st == EMU_ST_DEAD)
		return 0; /* it never started, or it ended */
	/* the thread-end event of the first model that names one (ovni) */
	struct model_rt *m = NULL;
	for (size_t k = 0; k < e->disp.nmodels && m == NULL; k++)
		if (e->disp.models[k].desc->has_thread_end)
			m = &e->disp.models[k];
	if (m == NULL)
		return emu_fail(e, "thread %s is cut short, but no model names the event that "
				"ends a thread (thread-end:)", emu_tname(e, t));
	const struct emu_event_desc *d = &m->desc->events[m->desc->thread_end];
	/* as if the thread had emitted it right after its last event: a
	 * payload of none, the clock of its last event */
	static const uint8_t none[1];
	struct weft_event ev;
	memset(&ev, 0, sizeof ev);
	memcpy(ev.mcv, d->mcv, 3);
	ev.rclock = sclock;
	ev.sclock = sclock;
	ev.payload = none;
	ev.stream = e->sys->threads[t].stream;
	e->ev = &ev;
	int64_t dclock = sclock - e->first_clock;
	/* records go in time order: never before what was written */
	dclock = dclock > e->dclock ? dclock : e->dclock;
	if (e->muted && dclock > e->window.from && emu_win_snapshot(e) != 0) {
		e->ev = NULL;
		return -1;
	}
	emu_step_begin(e, t, dclock);
	if (dclock > e->duration)
		e->duration = dclock;
	e->cur_desc = d;
	struct batch_mark bm = emu_batch_mark(e);
	size_t nb[EMU_MAX_BD] = { 0 };
	if (e->nbd != 0)
		emu_batch_mark_bd(e, nb);
	int r = emu_dispatch_end(e, t, m, d);
	if (r == 0)
		r = emu_settle(e);
	e->ev = NULL;
	if (r != 0) {
		emu_batch_undo(e, bm, nb);
		return -1;
	}
	return emu_batch_step_end(e);
}

/* ---- the hook interface ---- */

__attribute__((format(printf, 2, 0)))
static int hook_fail(struct emu_hook_ctx *ctx, const char *fmt, va_list ap)
{
	struct emu *e = ctx->engine;
	e->ev = ctx->ev;
	return emu_vfail(e, fmt, ap);
}

__attribute__((format(printf, 4, 0)))
static void vsay(struct emu *e, size_t thread, void (*say)(void *, const char *),
		const char *fmt, va_list ap)
{
	if (say == NULL)
		return;
	char msg[WEFT_ERR_MAX], full[WEFT_ERR_MAX + 256];
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (thread < e->nthreads)
		snprintf(full, sizeof full, "%s: %s", e->sys->threads[thread].relpath, msg);
	else
		snprintf(full, sizeof full, "%s", msg);
	say(e->opts.warn_ctx, full);
}

void emu_warn(struct emu *e, size_t thread, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsay(e, thread, e->opts.warn, fmt, ap);
	va_end(ap);
}

__attribute__((format(printf, 2, 0)))
static void hook_warn(struct emu_hook_ctx *ctx, const char *fmt, va_list ap)
{
	struct emu *e = ctx->engine;
	vsay(e, ctx->thread, e->opts.warn, fmt, ap);
}

__attribute__((format(printf, 2, 0)))
static void hook_info(struct emu_hook_ctx *ctx, const char *fmt, va_list ap)
{
	struct emu *e = ctx->engine;
	vsay(e, ctx->thread, e->opts.info, fmt, ap);
}

static enum emu_state hook_thread_state(const struct emu_hook_ctx *ctx)
{
	const struct emu *e = ctx->engine;
	return e->thr[ctx->thread].state;
}

static int hook_lint(const struct emu_hook_ctx *ctx)
{
	const struct emu *e = ctx->engine;
	return e->opts.lint;
}

const struct emu_hook_ops emu_hooks = {
	hook_fail, hook_warn, hook_info, hook_thread_state, hook_lint,
};
