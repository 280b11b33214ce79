/* SPDX-License-Identifier: MIT */
/*
 * loss.c - the emulation of threads that lost events (docs/emu.md, "Traces
 * with lost events"): a flight recorder (WEFT_RING) overwrote runs of them,
 * or signal handlers dropped some. Such a thread is emulated leniently:
 *
 *   - where a run of lost events lies (at its first lost clock C0, at the
 *     latest at the first event written after it), the thread is put into
 *     the unknown state: no thread state (ovni's Unknown), no CPU, no
 *     affinity, its raw channels back to their initial values (null); a
 *     history that begins after a loss begins so anyway;
 *   - from the unknown state, the first state event sets the state whatever
 *     its condition (an OHp makes the thread Paused), the runtime models'
 *     events are taken though the thread is not known to run, and an
 *     affinity event (OAs) gives a thread without a CPU its CPU;
 *   - an event the models refuse is skipped: each action of the engine
 *     checks before it changes anything, so the actions before the refused
 *     one stay applied (with their records) and the rest are not; the
 *     refusal is counted by rule. A thread left as the second Running
 *     thread of a CPU goes back to the unknown state;
 *   - the end checks (stacks empty, thread Dead) are waived for it;
 *   - the lost intervals, from C0 (at the earliest the trace's first event)
 *     to the first event written after the run, are lost records (struct
 *     emu_lost_rec: a BEGIN and an END, with the events and bytes of the
 *     runs it covers), which the outputs show as the built-in ovni.lost
 *     (value 1) of the thread, and of the CPU it had when the interval
 *     began.
 * Threads that lost no events are emulated exactly as before.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

#define LOSS_MAX_RULES 64
#define LOSS_RULE_MAX 200

struct lrun {
	struct emu_lost_run r;
	int started;
};

struct lthr {
	struct lrun *runs;
	size_t nruns, next;  /* next: the first run whose position was not reached */
	uint64_t dropped, lost;
	uint64_t filtered;   /* dropped by a filter callback (emu_thread_filtered) */
	uint64_t skipped;
	int on;              /* inside a lost interval */
	int64_t cpu;         /* the CPU marked with it, or -1 */
	int64_t begin;       /* the interval's: its start (record time) */
	uint64_t events, bytes; /* ... and what its runs lost */
};

struct sched {
	int64_t c0;
	size_t thread, run;
};

struct rule {
	char key[LOSS_RULE_MAX];
	uint64_t n;
};

struct emu_loss {
	struct lthr *thr;
	struct sched *sched;
	size_t nsched, schedcap, head;
	int sorted;
	struct rule rules[LOSS_MAX_RULES];
	size_t nrules;
	uint64_t other;   /* refusals past LOSS_MAX_RULES distinct rules */
	uint64_t skipped;
	int has_runs;
};

static struct emu_loss *loss_get(struct emu *e)
{
	if (e->loss != NULL)
		return e->loss;
	struct emu_loss *L = calloc(1, sizeof *L);
	if (L == NULL)
		return NULL;
	L->thr = calloc(e->nthreads + 1, sizeof *L->thr);
	e->lossy = calloc(e->nthreads + 1, 1);
	if (L->thr == NULL || e->lossy == NULL) {
		free(L->thr);
		free(L);
		free(e->lossy);
		e->lossy = NULL;
		return NULL;
	}
	for (size_t t = 0; t < e->nthreads; t++)
		L->thr[t].cpu = -1;
	e->loss = L;
	return L;
}

void emu_loss_destroy(struct emu *e)
{
	struct emu_loss *L = e->loss;
	if (L != NULL) {
		for (size_t t = 0; t < e->nthreads; t++)
			free(L->thr[t].runs);
		free(L->thr);
		free(L->sched);
		free(L);
	}
	free(e->lossy);
	e->loss = NULL;
	e->lossy = NULL;
}

int emu_thread_lost(struct emu *e, size_t t, const struct emu_lost_run *runs, size_t nruns,
		uint64_t dropped)
{
	if (t >= e->nthreads || (nruns == 0 && dropped == 0))
		return 0;
	struct emu_loss *L = loss_get(e);
	if (L == NULL)
		return -1;
	struct lthr *T = &L->thr[t];
	if (nruns > 0) {
		struct lrun *r = realloc(T->runs, (T->nruns + nruns) * sizeof *r);
		if (r == NULL)
			return -1;
		T->runs = r;
		if (emu_grow((void **) &L->sched, &L->schedcap, L->nsched + nruns,
					sizeof *L->sched) != 0)
			return -1;
		for (size_t k = 0; k < nruns; k++) {
			T->runs[T->nruns] = (struct lrun) { runs[k], 0 };
			T->lost += runs[k].events;
			L->sched[L->nsched++] = (struct sched) { runs[k].first_sclock, t, T->nruns };
			T->nruns++;
		}
		L->has_runs = 1;
		L->sorted = 0;
	}
	T->dropped += dropped;
	e->lossy[t] = 1;
	return 0;
}

int emu_thread_filtered(struct emu *e, size_t t, uint64_t n)
{
	if (t >= e->nthreads || n == 0)
		return 0;
	struct emu_loss *L = loss_get(e);
	if (L == NULL)
		return -1;
	L->thr[t].filtered += n;
	e->lossy[t] = 1;
	return 0;
}

int emu_has_lost(const struct emu *e)
{
	return e->loss != NULL && e->loss->has_runs;
}

int emu_loss_noted(const struct emu *e)
{
	return e->loss != NULL;
}

int emu_thread_cut_at(struct emu *e, size_t t)
{
	if (e->cuts == NULL || t >= e->nthreads || !e->cuts[t].cut)
		return 0;
	e->cuts[t].at_cut = 1;
	return 0;
}

int emu_loss_guard_waived(const struct emu *e, size_t t, const struct model_rt *m)
{
	const struct thr *T = &e->thr[t];
	return e->lossy[t] && T->state == EMU_ST_UNKNOWN && !(T->flags & m->guard_bit);
}

static int cmp_sched(const void *a, const void *b)
{
	const struct sched *x = a, *y = b;
	if (x->c0 != y->c0)
		return x->c0 < y->c0 ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->run < y->run ? -1 : x->run > y->run;
}

/* A step of the engine that no event makes: its own sequence number (the
 * "written twice in one event" stamps) at dclock d. */
static void step(struct emu *e, int64_t d)
{
	e->seq++;
	e->prop.qlen = 0;
	e->dclock = d;
	if (d > e->duration)
		e->duration = d;
}

/* Thread t's raw channels back to their values before the first event
 * (null, or the description's initial value), with their records. */
static int reset_chans(struct emu *e, size_t t)
{
	for (size_t ch = 0; ch < e->nchans; ch++) {
		struct raw *R = &e->raw[t * e->nchans + ch];
		const struct chan *C = &e->chans[ch];
		int init = C->desc->has_initial && C->mark_type < 0 && C->counter < 0;
		if ((init && R->depth == 1 && R->val == C->desc->initial) || (!init && R->depth == 0))
			continue;
		emu_acc(e, t, ch, R);
		uint32_t type = C->cat;
		if (C->kind == EMU_CHAN_STACK) {
			for (uint32_t d = R->depth; d > 0; d--)
				if (emu_irec(e, EMU_REC_RAW_POP, t, type,
						R->stack != NULL ? R->stack[d - 1] : R->val, 0) != 0)
					return -1;
			R->depth = 0;
			R->val = 0;
			if (init) {
				size_t cap = R->cap;
				if (emu_grow((void **) &R->stack, &cap, 1, sizeof *R->stack) != 0)
					return emu_fail(e, "out of memory");
				R->cap = (uint32_t) cap;
				R->stack[0] = C->desc->initial;
				R->depth = 1;
				R->val = C->desc->initial;
				if (emu_irec(e, EMU_REC_RAW_PUSH, t, type, R->val, 0) != 0)
					return -1;
			}
		} else {
			R->depth = init ? 1 : 0;
			R->val = init ? C->desc->initial : 0;
			if (emu_irec(e, EMU_REC_RAW_SET, t, type, R->val, !init) != 0)
				return -1;
		}
		R->stamp = e->seq;
		if (emu_qpush(e, TRIG_RAW, t, ch) != 0)
			return -1;
	}
	return 0;
}

/* Thread t into the unknown state (a step of its own at dclock d). */
static int forget(struct emu *e, size_t t, int64_t d)
{
	step(e, d);
	if (emu_thread_forget(e, t) != 0 || reset_chans(e, t) != 0)
		return -1;
	return emu_settle(e);
}

/* Thread t's lost record of this phase (its interval as it stands). */
static int lost_rec(struct emu *e, size_t t, enum emu_lost_phase phase, int snapshot)
{
	const struct lthr *T = &e->loss->thr[t];
	struct emu_lost_rec r = {
		.begin = T->begin,
		.end = phase == EMU_LOST_END ? e->dclock - e->rbase : -1,
		.events = T->events,
		.bytes = T->bytes,
		.thread = (uint32_t) t,
		.cpu = (int32_t) T->cpu,
		.chan = EMU_BT(EMU_BI_LOST),
		.phase = (uint8_t) phase,
		.snapshot = (uint8_t) snapshot,
	};
	return emu_lost_add(e, &r);
}

/* A lost interval of thread t begins at dclock d (run R). */
static int interval_begin(struct emu *e, size_t t, int64_t d, const struct emu_lost_run *R)
{
	struct emu_loss *L = e->loss;
	struct lthr *T = &L->thr[t];
	if (T->on) {
		/* runs with no event between them: one interval */
		T->events += R->events;
		T->bytes += R->bytes;
		return 0;
	}
	if (e->thr[t].state == EMU_ST_DEAD)
		return 0;
	int64_t c = e->thr[t].cpu;
	if (forget(e, t, d) != 0)
		return -1;
	T->on = 1;
	T->cpu = c;
	T->begin = e->dclock - e->rbase;
	T->events = R->events;
	T->bytes = R->bytes;
	return lost_rec(e, t, EMU_LOST_BEGIN, 0);
}

/* ... and ends at dclock d (the first event written after it). */
static int interval_end(struct emu *e, size_t t, int64_t d)
{
	struct emu_loss *L = e->loss;
	struct lthr *T = &L->thr[t];
	if (!T->on)
		return 0;
	step(e, d);
	T->on = 0;
	int r = lost_rec(e, t, EMU_LOST_END, 0);
	T->cpu = -1;
	return r;
}

/* Event ev of thread t comes after run r (its position in the stream). */
static int after_run(const struct emu_lost_run *r, const struct weft_event *ev)
{
	return r->has_offset ? ev->offset >= r->offset : ev->sclock >= r->last_sclock;
}

/* The dclock of clock c, not before what was written nor after `until`. */
static int64_t clamp_dclock(const struct emu *e, int64_t c, int64_t until)
{
	int64_t d;
	if (__builtin_sub_overflow(c, e->first_clock, &d))
		d = c < e->first_clock ? INT64_MIN : INT64_MAX;
	if (d < e->dclock)
		d = e->dclock;
	/* a window's records start at T0 (an interval begun before T0 that
	 * is found after it) */
	if (!e->muted && d < e->rbase)
		d = e->rbase;
	return d > until ? until : d;
}

int emu_loss_before(struct emu *e, size_t t, const struct weft_event *ev, int64_t dclock)
{
	struct emu_loss *L = e->loss;
	if (!L->sorted) {
		/* nothing to sort (and no array) when the threads only dropped
		 * events (weft.lost_events): qsort's pointer must not be NULL */
		if (L->nsched > 1)
			qsort(L->sched, L->nsched, sizeof *L->sched, cmp_sched);
		L->sorted = 1;
	}
	const struct weft_event *saved = e->ev;
	e->ev = NULL;
	int r = 0;
	/* the runs that began before this event, on every thread */
	while (r == 0 && L->head < L->nsched && L->sched[L->head].c0 < ev->sclock) {
		const struct sched *s = &L->sched[L->head++];
		struct lrun *R = &L->thr[s->thread].runs[s->run];
		if (R->started || s->run < L->thr[s->thread].next)
			continue;
		R->started = 1;
		r = interval_begin(e, s->thread, clamp_dclock(e, s->c0, dclock), &R->r);
	}
	/* this thread's runs that lie before this event */
	struct lthr *T = &L->thr[t];
	if (r == 0 && T->next < T->nruns && after_run(&T->runs[T->next].r, ev)) {
		while (r == 0 && T->next < T->nruns && after_run(&T->runs[T->next].r, ev)) {
			struct lrun *R = &T->runs[T->next++];
			if (!R->started) {
				R->started = 1;
				r = interval_begin(e, t, clamp_dclock(e, R->r.first_sclock, dclock), &R->r);
			}
		}
		if (r == 0)
			r = interval_end(e, t, dclock);
	}
	e->ev = saved;
	return r;
}

static int isdig(char c)
{
	return c >= '0' && c <= '9';
}

/* The rule of a refusal: its reason with the thread's label and the
 * numbers left out ("the thread is Unknown, but ...", "task N ..."). */
static void rule_key(const struct emu *e, size_t t, char *out, size_t len)
{
	const char *msg = strstr(e->err, "): ");
	msg = msg != NULL ? msg + 3 : e->err;
	char mcv[4] = "?";
	if (e->ev != NULL) {
		for (int i = 0; i < 3; i++) {
			unsigned char c = (unsigned char) e->ev->mcv[i];
			mcv[i] = c >= 0x21 && c < 0x7f ? (char) c : '?';
		}
		mcv[3] = '\0';
	}
	const char *label = emu_tname(e, t);
	size_t ll = strlen(label), n = (size_t) snprintf(out, len, "%s: ", mcv);
	for (const char *p = msg; *p != '\0' && n + 16 < len;) {
		if (strncmp(p, "thread ", 7) == 0 && strncmp(p + 7, label, ll) == 0) {
			n += (size_t) snprintf(out + n, len - n, "the thread");
			p += 7 + ll;
		} else if (strncmp(p, label, ll) == 0) {
			n += (size_t) snprintf(out + n, len - n, "the thread");
			p += ll;
		} else if ((p == msg || p[-1] == ' ' || p[-1] == '(') && (isdig(*p) ||
				(*p == '-' && isdig(p[1])))) {
			p++;
			while (isdig(*p) || (*p == '.' && isdig(p[1])))
				p++;
			out[n++] = 'N';
		} else {
			out[n++] = *p++;
		}
	}
	out[n < len ? n : len - 1] = '\0';
}

int emu_loss_skip(struct emu *e, size_t t)
{
	struct emu_loss *L = e->loss;
	if (!e->lossy[t] || strstr(e->err, "out of memory") != NULL)
		return -1;
	char key[LOSS_RULE_MAX];
	rule_key(e, t, key, sizeof key);
	size_t i = 0;
	while (i < L->nrules && strcmp(L->rules[i].key, key) != 0)
		i++;
	if (i < L->nrules) {
		L->rules[i].n++;
	} else if (L->nrules < LOSS_MAX_RULES) {
		snprintf(L->rules[L->nrules].key, sizeof L->rules[0].key, "%s", key);
		L->rules[L->nrules++].n = 1;
	} else {
		L->other++;
	}
	L->skipped++;
	L->thr[t].skipped++;
	if (e->opts.info != NULL) {
		char msg[WEFT_ERR_MAX + 64];
		snprintf(msg, sizeof msg, "skipped after lost events: %s", e->err);
		e->opts.info(e->opts.warn_ctx, msg);
	}
	e->failed = 0;
	e->err[0] = '\0';
	/* what the actions before the refused one did stays, shown */
	if (emu_settle(e) != 0)
		return -1;
	/* a second Running thread on a physical CPU: back to unknown */
	int64_t c = e->thr[t].cpu;
	if (c >= 0 && !e->sys->cpus[c].is_virtual && e->cpu[c].nrun >= 2)
		return forget(e, t, e->dclock);
	return 0;
}

int emu_loss_snapshot(struct emu *e)
{
	struct emu_loss *L = e->loss;
	int r = 0;
	for (size_t t = 0; t < e->nthreads; t++) {
		struct lthr *T = &L->thr[t];
		if (!T->on)
			continue;
		/* the window begins inside it: shown from T0 */
		T->begin = e->dclock - e->rbase;
		r |= lost_rec(e, t, EMU_LOST_BEGIN, 1);
	}
	return r ? -1 : 0;
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

uint64_t emu_loss_skipped(const struct emu *e)
{
	return e->loss != NULL ? e->loss->skipped : 0;
}

void emu_loss_summary(const struct emu *e, const struct emu *const *thr_of, FILE *out)
{
	const struct emu_loss *L = e->loss;
	int noted = L != NULL;
	for (size_t t = 0; thr_of != NULL && t < e->nthreads; t++)
		noted |= thr_of[t]->loss != NULL;
	if (!noted)
		return;
	uint64_t lost = 0, dropped = 0, filtered = 0, skipped = 0;
	size_t nruns = 0, nth = 0, nthd = 0, nthf = 0, nlossy = 0;
	for (size_t t = 0; t < e->nthreads; t++) {
		/* each thread's from the engine that emulated it */
		const struct emu *se = thr_of != NULL ? thr_of[t] : e;
		if (se->loss == NULL)
			continue;
		const struct lthr *T = &se->loss->thr[t];
		skipped += T->skipped;
		lost += T->lost;
		dropped += T->dropped;
		filtered += T->filtered;
		nthf += T->filtered > 0;
		nruns += T->nruns;
		nth += T->nruns > 0;
		nthd += T->dropped > 0;
		nlossy += se->lossy[t] != 0;
	}
	fprintf(out, "lost events:");
	if (nruns > 0)
		fprintf(out, " %" PRIu64 " %s overwritten by the flight recorder before %s written, "
				"in %zu %s on %zu %s", lost, plural(lost, "event", "events"),
				plural(lost, "it was", "they were"), nruns, plural(nruns, "run", "runs"),
				nth, plural(nth, "thread", "threads"));
	if (dropped > 0)
		fprintf(out, "%s %" PRIu64 " dropped by signal handlers on %zu %s",
				nruns > 0 ? ";" : "", dropped, nthd, plural(nthd, "thread", "threads"));
	if (filtered > 0)
		fprintf(out, "%s %" PRIu64 " dropped by the program's filter callback on %zu %s",
				nruns > 0 || dropped > 0 ? ";" : "", filtered, nthf,
				plural(nthf, "thread", "threads"));
	if (nlossy == 1)
		fprintf(out, "; the thread that lost events was emulated leniently (in an unknown "
				"state after a loss) and the end checks were waived for it\n");
	else
		fprintf(out, "; the %zu threads that lost events were emulated leniently (each in "
				"an unknown state after a loss) and the end checks were waived for them\n",
				nlossy);
	if (skipped == 0) {
		fprintf(out, "lost events: every event after them could be emulated\n");
		return;
	}
	/* the rules in the order first met: e's (a run made by several
	 * engines has none: emu_loss_skipped) */
	if (L == NULL)
		return;
	fprintf(out, "lost events: %" PRIu64 " %s after them could not be emulated (the models "
			"refuse %s without what was lost) and %s skipped:\n", L->skipped,
			plural(L->skipped, "event", "events"), plural(L->skipped, "it", "them"),
			plural(L->skipped, "was", "were"));
	for (size_t i = 0; i < L->nrules; i++)
		fprintf(out, "  %6" PRIu64 "  %s\n", L->rules[i].n, L->rules[i].key);
	if (L->other > 0)
		fprintf(out, "  %6" PRIu64 "  other rules\n", L->other);
}
