/* SPDX-License-Identifier: MIT */
/* driver.c - runs an emulation: trace -> models -> engine -> outputs. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "emu.h"
#include "losses.h"
#include "model.h"
#include "opts_size.h"
#include "out.h"
#include "parallel.h"

#define EMU_BATCH 256
#define MAX_OUTS 4

static int mkdir_p(const char *dir)
{
	char *p = strdup(dir);
	if (p == NULL)
		return -1;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST) {
			free(p);
			return -1;
		}
		*s = '/';
	}
	int r = mkdir(p, 0777);
	free(p);
	return r != 0 && errno != EEXIST ? -1 : 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* The engine's model_name: ctx is the run's registry. */
static const char *model_name(void *ctx, unsigned char byte)
{
	const struct weft_model_spec *m = weft_model_by_code(ctx, (char) byte);
	return m ? m->name : NULL;
}

struct run {
	struct weft_trace *t;
	struct emu_sys sys;
	int sys_ok;
	struct emu *emu;
	struct out *outs[MAX_OUTS];
	size_t nouts;
	const struct weft_stream **streams;
	const struct weft_loom **looms;
	struct weft_mark_type *marks;
	const struct emu_model_desc **models;
	size_t nmodels;
	int64_t *first;
	int *has;
	/* the batch of events read (the run's own: runs may go on at once in
	 * several threads) */
	struct weft_event evs[EMU_BATCH];
};

static void run_free(struct run *r)
{
	/* The trace first: its read-ahead thread stops before the engine's
	 * memory is given back (no other core to tell of each unmapping). */
	if (r->t != NULL)
		weft_close(r->t);
	if (r->emu != NULL)
		emu_destroy(r->emu);
	if (r->sys_ok)
		emu_sys_free(&r->sys);
	free(r->streams);
	free(r->looms);
	free(r->marks);
	free(r->models);
	free(r->first);
	free(r->has);
}

/* Without --salvage: the first stream found cut short, or whose thread did
 * not end (no ovni.finished), refuses the trace (1, with the message in
 * err). */
static int cut_refusal(const struct weft_trace *t, char *err, size_t errlen)
{
	for (size_t i = 0; i < weft_nstreams(t); i++) {
		char why[256];
		if (weft_stream_unfinished_why(t, i, why, sizeof why)) {
			snprintf(err, errlen, "%s: %s; `weft emu --salvage` emulates a run cut short",
					weft_stream_json_path(t, i), why);
			return 1;
		}
		struct weft_cut_info ci;
		if (!weft_stream_cut(t, i, &ci))
			continue;
		snprintf(err, errlen, "%s: offset %" PRIu64 ": the stream is cut short (%s); "
				"`weft emu --salvage` emulates every stream up to its last whole "
				"event", weft_stream_at(t, i)->obs_path, ci.offset, ci.why);
		return 1;
	}
	return 0;
}

/* With --salvage, after the last event: the threads cut short (their stream
 * ends inside an event, or they never ended: no ovni.finished) are closed
 * at their last event. */
static int mark_cut_threads(struct run *R)
{
	for (size_t th = 0; th < R->sys.nthreads; th++) {
		const struct weft_stream *st = R->sys.threads[th].stream;
		size_t i = 0;
		while (st != NULL && i < weft_nstreams(R->t) && weft_stream_at(R->t, i) != st)
			i++;
		if (st == NULL || i == weft_nstreams(R->t))
			continue;
		struct weft_cut_info ci;
		int cut = weft_stream_cut(R->t, i, &ci);
		int unf = weft_stream_unfinished(R->t, i);
		if (!cut && !unf)
			continue;
		char why[384];
		int k = 0;
		if (cut)
			k = snprintf(why, sizeof why, "stream cut at offset %" PRIu64 " (a partial "
					"%s of %" PRIu64 " bytes)", ci.offset,
					ci.header ? "stream header" : "event", ci.bytes);
		int64_t cc;
		int at = driver_cut_clock(R->t, i, &cc);
		if (at && unf)
			weft_stream_unfinished_why(R->t, i, why + k, sizeof why - (size_t) k);
		else if (unf)
			snprintf(why + k, sizeof why - (size_t) k, "%sno ovni.finished",
					cut ? ", " : "");
		int64_t last = 0;
		int has = 0;
		if (cut) {
			has = ci.has_last;
			last = ci.last_sclock;
		} else {
			/* the stream's last event: the reader knows it once read */
			has = weft_stream_last_sclock(R->t, i, &last);
		}
		/* closed at the clock of its crash cut (weft.cut) */
		at = at && has && cc >= last;
		if (emu_thread_cut(R->emu, th, has, at ? cc : last, why) != 0)
			return -1;
		if (at)
			emu_thread_cut_at(R->emu, th);
	}
	return 0;
}

/* --salvage: the threads to close at their last event. A thread is a
 * candidate until its stream ends; then, if it is cut short (its stream is
 * cut, or it has no ovni.finished) and has events, it waits in `pending`
 * (ascending clocks) to be closed before the first event with a later clock
 * is emulated (the reader finds a stream's end before it yields any event
 * after that stream's last one). */
struct closer {
	size_t *cand;     /* threads whose stream did not end yet */
	size_t *cstream;  /* ... and their stream index */
	size_t ncand;
	struct pend {
		int64_t clock;
		size_t thread;
	} *pending;
	size_t npend, head;
};

static void closer_free(struct closer *C)
{
	free(C->cand);
	free(C->cstream);
	free(C->pending);
}

static int closer_init(struct closer *C, struct run *R)
{
	memset(C, 0, sizeof *C);
	size_t nt = R->sys.nthreads;
	C->cand = calloc(nt + 1, sizeof *C->cand);
	C->cstream = calloc(nt + 1, sizeof *C->cstream);
	C->pending = calloc(nt + 1, sizeof *C->pending);
	if (C->cand == NULL || C->cstream == NULL || C->pending == NULL)
		return -1;
	size_t ns = weft_nstreams(R->t);
	for (size_t th = 0; th < nt; th++) {
		const struct weft_stream *st = R->sys.threads[th].stream;
		for (size_t i = 0; st != NULL && i < ns; i++) {
			if (weft_stream_at(R->t, i) == st) {
				C->cand[C->ncand] = th;
				C->cstream[C->ncand++] = i;
				break;
			}
		}
	}
	return 0;
}

/* Moves the candidates whose stream ended to pending (if cut short). */
static void closer_scan(struct closer *C, struct weft_trace *t)
{
	size_t k = 0;
	for (size_t j = 0; j < C->ncand; j++) {
		size_t i = C->cstream[j];
		if (!weft_stream_ended(t, i)) {
			C->cand[k] = C->cand[j];
			C->cstream[k++] = i;
			continue;
		}
		int64_t last;
		if ((!weft_stream_cut(t, i, NULL) && !weft_stream_unfinished(t, i)) ||
				!weft_stream_last_sclock(t, i, &last))
			continue;
		int64_t cc;
		if (driver_cut_clock(t, i, &cc) && cc > last)
			last = cc; /* closed at its crash cut */
		/* insert in clock order (after equal clocks: ended earlier) */
		size_t p = C->npend;
		while (p > C->head && C->pending[p - 1].clock > last) {
			C->pending[p] = C->pending[p - 1];
			p--;
		}
		C->pending[p].clock = last;
		C->pending[p].thread = C->cand[j];
		C->npend++;
	}
	C->ncand = k;
}

/* Closes the pending threads whose last clock is before `before`. */
static int closer_run(struct closer *C, struct emu *e, int64_t before, int all)
{
	while (C->head < C->npend && (all || C->pending[C->head].clock < before)) {
		if (emu_thread_close(e, C->pending[C->head].thread, C->pending[C->head].clock) != 0)
			return -1;
		C->head++;
	}
	return 0;
}

/* A window bound as the caller gave it (from_arg, to_arg) or, when it gave
 * no text (python/_weft.c), as weft emu --from/--to would take it: a clock
 * in ns, or a time after the first event in the largest unit that writes
 * it whole ("1ms"). */
static const char *window_arg(const char *arg, int64_t v, int rel, char *buf, size_t len)
{
	static const struct { const char *name; int64_t ns; } units[] = {
		{ "min", INT64_C(60000000000) }, { "s", 1000000000 }, { "ms", 1000000 },
		{ "us", 1000 }, { "ns", 1 },
	};
	if (arg != NULL)
		return arg;
	size_t i = 0;
	while (rel && i + 1 < sizeof units / sizeof units[0] && (v == 0 || v % units[i].ns != 0))
		i++;
	snprintf(buf, len, "%" PRId64 "%s", rel ? v / units[i].ns : v, rel ? units[i].name : "");
	return buf;
}

/* After a run with a window: a window outside the trace is refused (the
 * files are still closed, with no records of the window). */
static void window_refusal(struct run *R, const struct weft_emulate_opts *o, char *err,
		size_t errlen)
{
	int64_t from, last;
	char buf[32];
	int started = emu_window_span(R->emu, &from, &last);
	if (emu_window_stopped(R->emu) && emu_nevents(R->emu) == 0)
		snprintf(err, errlen, "--to %s is before the first event of the trace; the window "
				"holds nothing", window_arg(o->to_arg, o->to, o->to_rel, buf, sizeof buf));
	else if (o->has_from && !emu_window_stopped(R->emu) && (!started || last <= from))
		snprintf(err, errlen, "--from %s is at or after the last event of the trace (%"
				PRId64 " ns into the run); the window holds nothing",
				window_arg(o->from_arg, o->from, o->from_rel, buf, sizeof buf), last);
}

/* A failed run: every output's temporaries removed. */
static void outs_discard(struct run *R)
{
	for (size_t i = 0; i < R->nouts; i++)
		out_discard(R->outs[i]);
	R->nouts = 0;
}

static int interrupted(const struct weft_emulate_opts *o)
{
	return o->stop != NULL && *o->stop != 0;
}

/* Every output completed, then, when all were (and the run was not asked
 * to stop meanwhile), every one committed (its files renamed over their
 * final names); else all discarded. 0, or -1 with the first reason in err. */
static int outs_commit(struct run *R, const struct weft_emulate_opts *o, int64_t duration,
		char *err, size_t errlen)
{
	int r = 0;
	for (size_t i = 0; i < R->nouts && r == 0; i++)
		r = out_close(R->outs[i], duration, err, errlen);
	if (r == 0 && interrupted(o)) {
		snprintf(err, errlen, "interrupted");
		r = -1;
	}
	if (r != 0) {
		outs_discard(R);
		return -1;
	}
	char e2[WEFT_ERR_MAX];
	for (size_t i = 0; i < R->nouts; i++)
		if (out_commit(R->outs[i], r ? e2 : err, r ? sizeof e2 : errlen) != 0)
			r = -1;
	R->nouts = 0;
	return r;
}

/* Takes an opened output (NULL: its open failed, err set). */
static int add_out(struct run *R, struct out *out, char *err, size_t errlen)
{
	if (out == NULL)
		return -1;
	R->outs[R->nouts++] = out;
	struct emu_sink s = out_sink(out);
	if (emu_add_sink(R->emu, &s) != 0) {
		snprintf(err, errlen, "%s", emu_error(R->emu));
		return -1;
	}
	return 0;
}

/* The outputs of o, given the catalogue of emu. */
static int open_outputs(struct run *R, const struct weft_emulate_opts *o, const struct emu *emu,
		char *err, size_t errlen)
{
	const char *outdir = o->outdir ? o->outdir : o->path;
	int files = o->formats != NULL && o->formats[0] != NULL; /* else nothing is written */
	if (files && mkdir_p(outdir) != 0) {
		snprintf(err, errlen, "cannot create %s: %s", outdir, strerror(errno));
		return -1;
	}
	if (files && access(outdir, W_OK | X_OK) != 0) {
		int e = errno;
		if (o->outdir == NULL)
			snprintf(err, errlen, "%s: cannot write the timelines into the trace directory "
					"(%s); give a directory to write them into with -o DIR", outdir,
					strerror(e));
		else
			snprintf(err, errlen, "%s: cannot write the timelines there (%s)", outdir,
					strerror(e));
		return -1;
	}
	for (size_t i = 0; o->formats != NULL && o->formats[i] != NULL; i++) {
		/* "FORMAT" or "FORMAT:KEY=VALUE,..." */
		const char *spec = o->formats[i];
		const char *colon = strchr(spec, ':');
		char name[64];
		size_t fl = colon != NULL ? (size_t) (colon - spec) : strlen(spec);
		snprintf(name, sizeof name, "%.*s", (int) (fl < sizeof name ? fl : sizeof name - 1),
				spec);
		const struct out_format *f = fl < sizeof name ? out_format_by_name(name) : NULL;
		if (f == NULL) {
			snprintf(err, errlen, "unknown output format '%.*s'", (int) fl, spec);
			return -1;
		}
		if (R->nouts == MAX_OUTS) {
			snprintf(err, errlen, "too many output formats");
			return -1;
		}
		struct out_params *p = malloc(sizeof *p);
		if (p == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		if (out_params_parse(f, colon != NULL ? colon + 1 : NULL, p, err, errlen) != 0) {
			free(p);
			return -1;
		}
		struct out *out = out_open(f, outdir, emu, p, err, errlen);
		free(p);
		if (add_out(R, out, err, errlen) != 0)
			return -1;
	}
	if (o->open_output != NULL) {
		if (R->nouts == MAX_OUTS) {
			snprintf(err, errlen, "too many output formats");
			return -1;
		}
		if (add_out(R, o->open_output(o->hook_ctx, emu, err, errlen), err,
				errlen) != 0)
			return -1;
	}
	struct out_input in = { o->path, R->t, o->models, o->stop, o->phase, o->ctx };
	for (size_t i = 0; i < R->nouts; i++)
		if (out_input(R->outs[i], &in, err, errlen) != 0)
			return -1;
	return 0;
}

/* Everything before the first event. */
static int prepare(struct run *R, const struct weft_emulate_opts *o, enum weft_sort sort,
		char *err, size_t errlen)
{
	const struct weft_registry *reg = o->models;
	if (reg == NULL && (reg = weft_registry_builtin(err, errlen)) == NULL)
		return -1;
	struct weft_open_opts oo;
	memset(&oo, 0, sizeof oo);
	oo.sz = sizeof oo;
	oo.mode = WEFT_STRICT;
	oo.warn = o->warn;
	oo.warn_ctx = o->ctx;
	/* The engine judges the model bytes (its message names the model and the
	 * clock; the reader's would not). */
	oo.all_models = 1;
	/* An unsorted trace emulates as its sorted copy (weft sort) would:
	 * unordered regions are sorted while reading (see weft_emulate). */
	oo.sort = sort;
	/* Streams cut short: read up to their last whole event with --salvage;
	 * else found quietly and refused with a message of ours. */
	oo.cut = o->salvage ? WEFT_CUT_WARN : WEFT_CUT_QUIET;
	oo.accept_unfinished = o->salvage ? 1 : 2;
	R->t = weft_open(o->path, &oo, err, errlen);
	if (R->t == NULL)
		return -1;
	if (!o->salvage && cut_refusal(R->t, err, errlen))
		return -1;
	size_t ns = weft_nstreams(R->t), nl = weft_nlooms(R->t), nm = weft_nmark_types(R->t);
	if (ns == 0) {
		snprintf(err, errlen, "%s: no streams found (no stream.json)", o->path);
		return -1;
	}
	R->streams = calloc(ns + 1, sizeof *R->streams);
	R->looms = calloc(nl + 1, sizeof *R->looms);
	R->marks = calloc(nm + 1, sizeof *R->marks);
	R->models = calloc(weft_model_count(reg) + 1, sizeof *R->models);
	R->first = calloc(ns + 1, sizeof *R->first);
	R->has = calloc(ns + 1, sizeof *R->has);
	if (!R->streams || !R->looms || !R->marks || !R->models || !R->first || !R->has) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < ns; i++)
		R->streams[i] = weft_stream_at(R->t, i);
	for (size_t i = 0; i < nl; i++)
		R->looms[i] = weft_loom_at(R->t, i);
	for (size_t i = 0; i < nm; i++)
		R->marks[i] = *weft_mark_type_at(R->t, i);
	/* a filter at the source: refused where a model would be wrong (and
	 * a trace written with WEFT_OUTPUT=off, which has no events) */
	if (driver_filters(R->t, o->warn, o->ctx, err, errlen) != 0)
		return -1;
	size_t nmodels = 0;
	if (emu_select_models(reg, R->streams, ns, o->all_models, R->models, &nmodels, err,
				errlen) != 0)
		return -1;
	R->nmodels = nmodels;
	if (emu_sys_build(&R->sys, R->looms, nl, R->marks, nm, err, errlen) != 0)
		return -1;
	R->sys_ok = 1;
	/* The first clock of every stream, known before the iteration. */
	for (size_t i = 0; i < ns; i++)
		R->has[i] = weft_stream_first_sclock(R->t, i, &R->first[i]);
	if (emu_clock_gate(R->streams, R->first, R->has, ns, err, errlen) != 0)
		return -1;
	struct emu_opts eo;
	memset(&eo, 0, sizeof eo);
	eo.lint = o->lint;
	eo.warn = o->warn;
	eo.warn_ctx = o->ctx;
	eo.info = o->info;
	eo.breakdown = o->breakdown;
	eo.model_name = model_name;
	eo.model_ctx = (void *) reg;
	eo.no_summary = o->summary == NULL;
	R->emu = emu_create(&R->sys, R->models, nmodels, &eo, err, errlen);
	if (R->emu == NULL)
		return -1;
	/* threads that lost events are emulated leniently (a warning) */
	if (driver_losses(R->t, R->emu, &R->sys, o->warn, o->ctx, err, errlen) != 0)
		return -1;
	if (o->has_from || o->has_to) {
		struct emu_window w = { o->has_from, o->has_to, o->from_rel, o->to_rel, o->from,
			o->to };
		emu_set_window(R->emu, &w);
	}
	return open_outputs(R, o, R->emu, err, errlen);
}

/* Emulates a batch of events; with C (--salvage), the threads cut short
 * are closed first, at their last clock. Inlined twice, so the loop without
 * C has no test of it. 0, 1 (the window ended: stop reading) or -1
 * (emu_error). */
static inline __attribute__((always_inline)) int feed(struct run *R, struct closer *C,
		const struct weft_event *evs, long got)
{
	for (long i = 0; i < got; i++) {
		int er = C != NULL ? closer_run(C, R->emu, evs[i].sclock, 0) : 0;
		if (er == 0)
			er = emu_event(R->emu, &evs[i]);
		if (er != 0)
			return er > 0 ? 1 : -1;
	}
	return 0;
}

/* The messages of a run that may be given up (see weft_emulate): kept in
 * order until the run is kept, then said, and said at once after that. */
struct held {
	const struct weft_emulate_opts *o;
	int now;      /* the run is kept: say them at once */
	struct hmsg {
		int info;
		char *text;
	} *v;
	size_t n, cap;
};

#define RUN_AGAIN 2

static void held_say(struct held *h, int info, const char *msg)
{
	void (*say)(void *, const char *) = info ? h->o->info : h->o->warn;
	if (say == NULL)
		return;
	if (!h->now && h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 16;
		struct hmsg *v = realloc(h->v, cap * sizeof *v);
		if (v != NULL) {
			h->v = v;
			h->cap = cap;
		}
	}
	char *text = h->now || h->n == h->cap ? NULL : strdup(msg);
	if (text == NULL) {
		/* kept, or out of memory: said now */
		say(h->o->ctx, msg);
		return;
	}
	h->v[h->n].info = info;
	h->v[h->n++].text = text;
}

static void held_warn(void *ctx, const char *msg)
{
	held_say(ctx, 0, msg);
}

static void held_info(void *ctx, const char *msg)
{
	held_say(ctx, 1, msg);
}

static void held_progress(void *ctx, uint64_t events, double seconds)
{
	const struct held *h = ctx;
	h->o->progress(h->o->ctx, events, seconds);
}

/* ho: o, its messages held in h. */
static void held_init(struct held *h, const struct weft_emulate_opts *o,
		struct weft_emulate_opts *ho)
{
	memset(h, 0, sizeof *h);
	h->o = o;
	*ho = *o;
	ho->ctx = h;
	ho->warn = o->warn ? held_warn : NULL;
	ho->info = o->info ? held_info : NULL;
	ho->progress = o->progress ? held_progress : NULL;
}

/* The run is kept: the held messages are said, in order, and the next ones
 * at once. */
static void held_release(struct held *h)
{
	for (size_t i = 0; i < h->n; i++) {
		(h->v[i].info ? h->o->info : h->o->warn)(h->o->ctx, h->v[i].text);
		free(h->v[i].text);
	}
	h->n = 0;
	h->now = 1;
}

static void held_free(struct held *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->v[i].text);
	free(h->v);
}

/* An event of an unordered region (OU[, OU]) among evs. */
static int has_region_event(const struct weft_event *evs, long n)
{
	for (long i = 0; i < n; i++)
		if (evs[i].mcv[0] == 'O' && evs[i].mcv[1] == 'U')
			return 1;
	return 0;
}

/* User (sys 0) or system (sys 1) CPU time of the calling thread or of the
 * process. */
static double cpu_s(int who, int sys)
{
	struct rusage ru;
	if (getrusage(who, &ru) != 0)
		return 0.0;
	const struct timeval *tv = sys ? &ru.ru_stime : &ru.ru_utime;
	return (double) tv->tv_sec + (double) tv->tv_usec / 1e6;
}

/* One run. With `held` (a run in file order, sort is WEFT_SORT_NONE), the
 * run is given up and RUN_AGAIN returned when it meets an event of an
 * unordered region (OU) or fails in any way before the end of the trace:
 * it may then differ from the run in sorted order. */
static int run_once(const struct weft_emulate_opts *o, enum weft_sort sort, struct held *held,
		char *err, size_t errlen)
{
	struct run R;
	memset(&R, 0, sizeof R);
	if (prepare(&R, o, sort, err, errlen) != 0) {
		outs_discard(&R);
		run_free(&R);
		return held != NULL ? RUN_AGAIN : -1;
	}
	struct weft_event *evs = R.evs;
	double t0 = now_s(), last_progress = t0;
	uint64_t n = 0, next_check = 1u << 20;
	const char *fail = NULL;
	int stopped = 0;
	long got = 0;
	char rerr[WEFT_ERR_MAX] = "";
	struct closer C;
	if (o->salvage && closer_init(&C, &R) != 0)
		snprintf(rerr, sizeof rerr, "out of memory");
	int region = 0;
	while (rerr[0] == '\0' && (got = weft_next_batch(R.t, evs, EMU_BATCH)) > 0) {
		int r;
		if (interrupted(o)) {
			snprintf(rerr, sizeof rerr, "interrupted");
			break;
		}
		if (held != NULL && (region = has_region_event(evs, got)) != 0)
			break;
		if (o->salvage) {
			/* each thread cut short is closed at its last clock,
			 * before the first event after it */
			closer_scan(&C, R.t);
			r = feed(&R, &C, evs, got);
		} else {
			/* a stream found cut short stops the run (once per
			 * batch: the reader finds a cut at the end of its
			 * stream) */
			if (cut_refusal(R.t, rerr, sizeof rerr))
				break;
			r = feed(&R, NULL, evs, got);
		}
		if (r < 0)
			fail = emu_error(R.emu);
		else if (r > 0)
			stopped = 1;
		for (size_t i = 0; i < R.nouts && fail == NULL && rerr[0] == '\0'; i++)
			out_events(R.outs[i], evs, (size_t) got, rerr, sizeof rerr);
		if (fail != NULL)
			break;
		if (stopped) {
			/* the window ends: the rest of the trace is not read */
			got = 0;
			break;
		}
		n += (uint64_t) got;
		if (n >= next_check) {
			next_check = n + (1u << 20);
			double t = now_s();
			if (o->progress != NULL && t - last_progress
					> (o->progress_every > 0 ? o->progress_every : 1.0)) {
				o->progress(o->ctx, n, t - t0);
				last_progress = t;
			}
		}
	}
	if (rerr[0] == '\0' && fail == NULL && got == 0 && !o->salvage)
		cut_refusal(R.t, rerr, sizeof rerr);
	if (held != NULL) {
		if (interrupted(o)) {
			snprintf(err, errlen, "interrupted");
			outs_discard(&R);
			run_free(&R);
			return -1;
		}
		if (region || rerr[0] != '\0' || fail != NULL || got != 0) {
			outs_discard(&R);
			run_free(&R);
			return RUN_AGAIN;
		}
		/* the whole trace was read in sorted order: this is the run */
		held_release(held);
	}
	if (fail == NULL && got < 0)
		snprintf(rerr, sizeof rerr, "%s", weft_error(R.t));
	if (o->salvage && rerr[0] == '\0' && fail == NULL && got == 0) {
		/* the threads still open close at their last clocks, in order */
		closer_scan(&C, R.t);
		if (closer_run(&C, R.emu, 0, 1) != 0)
			fail = emu_error(R.emu);
		else if (mark_cut_threads(&R) != 0)
			snprintf(rerr, sizeof rerr, "out of memory");
	}
	if (o->salvage)
		closer_free(&C);
	/* The models' end step runs also after an error, as the reference's. */
	int ended = emu_finish(R.emu, fail == NULL && got == 0 && rerr[0] == '\0');
	int status = 0;
	if (rerr[0] == '\0' && fail == NULL && ended == 0 && (o->has_from || o->has_to))
		window_refusal(&R, o, rerr, sizeof rerr);
	int refused = 0; /* the models refused an event (--partial keeps the files) */
	if (rerr[0] != '\0') {
		snprintf(err, errlen, "%s", rerr);
		status = -1;
	} else if (fail != NULL || ended != 0) {
		snprintf(err, errlen, "%s", emu_error(R.emu));
		status = -1;
		refused = 1;
	}
	if (interrupted(o)) {
		snprintf(err, errlen, "interrupted");
		status = -1;
		refused = 0;
	}
	/* All the outputs are committed together at the end, or none is. */
	if (status == 0) {
		status = outs_commit(&R, o, emu_duration(R.emu), err, errlen);
	} else if (refused && o->keep_partial) {
		char e2[WEFT_ERR_MAX];
		outs_commit(&R, o, emu_duration(R.emu), e2, sizeof e2);
	} else {
		outs_discard(&R);
	}
	if (status == 0 && o->summary != NULL) {
		emu_summary(R.emu, o->summary);
		if (weft_nsorted(R.t) > 0)
			fprintf(o->summary, "unordered regions were sorted on read: %" PRIu64
					" events moved\n", weft_nsorted(R.t));
	}
	if (getenv("WEFT_EMU_TIMING") != NULL) {
		double dt = now_s() - t0;
		fprintf(stderr, "weft emu: %" PRIu64 " events in %.2f s (%.2f M events/s); CPU "
				"(user + system): emulation thread %.3f + %.3f s, process %.3f + %.3f s\n",
				emu_nevents(R.emu), dt,
				dt > 0 ? (double) emu_nevents(R.emu) / 1e6 / dt : 0.0,
				cpu_s(RUSAGE_THREAD, 0), cpu_s(RUSAGE_THREAD, 1), cpu_s(RUSAGE_SELF, 0),
				cpu_s(RUSAGE_SELF, 1));
	}
	run_free(&R);
	return status;
}

/* Whether run o may be made by workers (weft_emulate_opts.jobs): the
 * Paraver output only, without what a worker cannot do alone. */
static int parallel_fits(const struct weft_emulate_opts *o)
{
	if (o->jobs < 2 || o->summary != NULL || o->info != NULL || o->salvage || o->has_from ||
			o->has_to || o->breakdown || o->open_output != NULL ||
			o->formats == NULL || o->formats[0] == NULL)
		return 0;
	for (size_t i = 0; o->formats[i] != NULL; i++)
		if (strncmp(o->formats[i], "paraver", 7) != 0 || (o->formats[i][7] != '\0' &&
				o->formats[i][7] != ':' && strcmp(o->formats[i] + 7, "-cfg") != 0))
			return 0;
	return 1;
}

#define RUN_SERIAL 3

static void note_warning(void *ctx, const char *msg)
{
	(void) msg;
	*(int *) ctx = 1;
}

/* Whether dir holds two loom.* entries or more (else -j changes nothing,
 * and the trace is not opened twice). */
static int several_looms(const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return 0;
	int n = 0;
	struct dirent *de;
	while (n < 2 && (de = readdir(d)) != NULL)
		n += strncmp(de->d_name, "loom.", 5) == 0 && de->d_name[5] != '\0';
	closedir(d);
	return n >= 2;
}

/* weft emu -j: the run by workers (parallel.h); RUN_SERIAL when it must be
 * made serially (the trace has one loom, or a worker met what could make
 * its result differ), 0, or -1 with err. */
static int run_parallel(const struct weft_emulate_opts *o, char *err, size_t errlen)
{
	if (!several_looms(o->path))
		return RUN_SERIAL;
	/* the whole trace, without outputs; a warning makes the run serial
	 * (which says it) */
	int warned = 0;
	struct weft_emulate_opts mo = *o;
	mo.formats = NULL;
	mo.warn = note_warning;
	mo.info = NULL;
	mo.progress = NULL;
	mo.ctx = &warned;
	struct run R;
	memset(&R, 0, sizeof R);
	char e2[WEFT_ERR_MAX];
	int timing = getenv("WEFT_EMU_TIMING") != NULL;
	const char *why = NULL;
	if (prepare(&R, &mo, WEFT_SORT_NONE, e2, sizeof e2) != 0)
		why = "the trace is refused";
	else if (warned)
		why = "a warning";
	else if (R.sys.nlooms < 2)
		why = "one loom";
	else if (emu_has_lost(R.emu))
		why = "lost events";
	else if (weft_stream_at(R.t, 0)->relpath[0] == '.' || strchr(weft_stream_at(R.t,
			0)->relpath, '/') == NULL)
		why = "not a whole trace";
	if (why != NULL) {
		if (timing)
			fprintf(stderr, "weft emu: -j %d: serial run (%s)\n", o->jobs, why);
		run_free(&R);
		return RUN_SERIAL;
	}
	int64_t origin = INT64_MAX;
	for (size_t i = 0; i < weft_nstreams(R.t); i++)
		if (R.has[i] && R.first[i] < origin)
			origin = R.first[i];
	struct emu_opts eo;
	memset(&eo, 0, sizeof eo);
	eo.lint = o->lint;
	eo.model_name = model_name;
	eo.model_ctx = (void *) (o->models != NULL ? o->models : weft_registry_builtin(e2,
				sizeof e2));
	eo.no_summary = 1;
	struct par_in in = { o->path, R.t, &R.sys, R.models, R.nmodels, &eo, origin,
		(size_t) o->jobs, o->all_models, o->stop };
	struct par_out P;
	double t0 = now_s();
	int r = par_run(&in, &P, err, errlen);
	if (timing && P.nworkers > 0) {
		for (size_t k = 0; k < P.nworkers && k < 64; k++)
			fprintf(stderr, "weft emu: worker %zu CPU %.3f s\n", k, P.cpu[k]);
	}
	if (r != 0) {
		if (timing && r > 0)
			fprintf(stderr, "weft emu: -j %d: serial run (%s)\n", o->jobs, P.why);
		par_free(&P);
		run_free(&R);
		return r > 0 ? RUN_SERIAL : -1;
	}
	double t1 = now_s();
	int status = open_outputs(&R, o, P.emu, err, errlen);
	struct emu_batch b;
	for (size_t f = 0; f < P.nviews && status == 0; f++) {
		for (size_t i = 0; i < P.nrec[f] && status == 0; i += 4096) {
			memset(&b, 0, sizeof b);
			b.prv[f] = P.rec[f] + i;
			b.nprv[f] = P.nrec[f] - i < 4096 ? P.nrec[f] - i : 4096;
			for (size_t k = 0; k < R.nouts && status == 0; k++) {
				struct emu_sink s = out_sink(R.outs[k]);
				status = s.records(s.self, &b, err, errlen);
			}
		}
	}
	if (status == 0 && interrupted(o)) {
		snprintf(err, errlen, "interrupted");
		status = -1;
	}
	if (status == 0)
		status = outs_commit(&R, o, P.duration, err, errlen);
	else
		outs_discard(&R);
	if (timing)
		fprintf(stderr, "weft emu: -j %d: %zu workers, %" PRIu64 " events in %.2f s (the "
				"workers and the merge %.2f s, the outputs %.2f s); process CPU %.3f s\n", o->jobs,
				P.nworkers, P.nevents, now_s() - t0, t1 - t0, now_s() - t1,
				cpu_s(RUSAGE_SELF, 0) + cpu_s(RUSAGE_SELF, 1));
	par_free(&P);
	run_free(&R);
	return status;
}

/* Sorting on read frames every event twice and reads its bytes again, about
 * an eighth of a run, for unordered regions that almost no trace has. So a
 * run (without --salvage or --to, which may stop reading early) first reads
 * the trace in file order, which is its sorted order when no stream has an
 * event of an unordered region. That run is kept when it reads the whole
 * trace without meeting one, or any error; otherwise the emulation runs
 * again with sorting on read, from scratch. The messages of the first run
 * are held until it is kept (the second run says them again). */
int weft_emulate(const struct weft_emulate_opts *user_opts, char *err, size_t errlen)
{
	struct weft_emulate_opts full; /* a whole struct (opts_size.h) */
	if (weft_opts_take(&full, sizeof full, user_opts, "weft_emulate: struct weft_emulate_opts",
			err, errlen) != 0)
		return -1;
	const struct weft_emulate_opts *o = &full;
	if (parallel_fits(o)) {
		int pr = run_parallel(o, err, errlen);
		if (pr != RUN_SERIAL)
			return pr;
	}
	if (o->salvage || o->has_to)
		return run_once(o, WEFT_SORT_REGIONS, NULL, err, errlen);
	struct held h;
	struct weft_emulate_opts ho;
	held_init(&h, o, &ho);
	int r = run_once(&ho, WEFT_SORT_NONE, &h, err, errlen);
	held_free(&h);
	if (r != RUN_AGAIN)
		return r;
	return run_once(o, WEFT_SORT_REGIONS, NULL, err, errlen);
}
