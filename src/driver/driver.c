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
#include "ranks.h"
#include "salvage.h"

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

/* --salvage: every thread of R with a stream, to close at its last event
 * when it is cut short (salvage.h): 0, or -1 out of memory. */
static int salv_setup(struct salv *C, struct run *R)
{
	if (salv_init(C, R->sys.nthreads) != 0)
		return -1;
	size_t ns = weft_nstreams(R->t);
	for (size_t th = 0; th < R->sys.nthreads; th++) {
		const struct weft_stream *st = R->sys.threads[th].stream;
		for (size_t i = 0; st != NULL && i < ns; i++) {
			if (weft_stream_at(R->t, i) == st) {
				salv_add(C, R->t, i, th);
				break;
			}
		}
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
	/* the handler stores it atomically, in any thread (cli_stop.c) */
	return o->stop != NULL && __atomic_load_n(o->stop, __ATOMIC_RELAXED) != 0;
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
	if (driver_losses(R->t, R->emu, &R->sys, NULL, o->warn, o->ctx, err, errlen) != 0)
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
static inline __attribute__((always_inline)) int feed(struct run *R, struct salv *C,
		const struct weft_event *evs, long got)
{
	for (long i = 0; i < got; i++) {
		int er = C != NULL ? salv_close(C, R->emu, evs[i].sclock, 0) : 0;
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
	struct salv C;
	if (o->salvage && salv_setup(&C, &R) != 0)
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
			salv_scan(&C);
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
		salv_scan(&C);
		if (salv_close(&C, R.emu, 0, 1) != 0)
			fail = emu_error(R.emu);
		else if (salv_mark(&C, R.emu) != 0)
			snprintf(rerr, sizeof rerr, "out of memory");
	}
	if (o->salvage)
		salv_free(&C);
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

/* Whether format spec f (FORMAT[:KEY=VALUE,...]) is format name. */
static int format_is(const char *f, const char *name)
{
	size_t n = strlen(name);
	return strncmp(f, name, n) == 0 && (f[n] == '\0' || f[n] == ':');
}

/* Why run o may not be made by workers (weft_emulate_opts.jobs) or by the
 * ranks of --mpi (mpi), or NULL: the Paraver, Perfetto and SQLite outputs
 * (SQLite by -j's workers, without --to), the summary, -b, a window,
 * and a caller's output that follows the records in time order
 * (open_output_merged), without what a worker cannot do alone. */
static const char *parallel_unfit(const struct weft_emulate_opts *o, int mpi)
{
	if (o->jobs < 2)
		return "one worker";
	if (o->info != NULL)
		return "-v";
	/* --mpi: the ranks' warnings are not put in the serial run's order */
	if (o->salvage && mpi)
		return "--salvage";
	/* reading stops at the first event after T1: the streams found cut
	 * short by then are those the serial reader reached over every loom */
	if (o->salvage && o->has_to)
		return "--salvage with --to";
	if (o->open_output != NULL && !o->open_output_merged)
		return "an output of the caller";
	if ((o->formats == NULL || o->formats[0] == NULL) && o->open_output == NULL)
		return "no output";
	for (size_t i = 0; o->formats != NULL && o->formats[i] != NULL; i++) {
		const char *f = o->formats[i];
		if (format_is(f, "paraver") || format_is(f, "paraver-cfg") ||
				format_is(f, "perfetto"))
			continue;
		/* the SQLite output: by -j's workers (write_merged reads the
		 * events for it), not --mpi's ranks; with --to, the events are
		 * those of the serial run's batches up to its stop */
		if (format_is(f, "sqlite") && !mpi && !o->has_to)
			continue;
		if (format_is(f, "sqlite") && !mpi)
			return "--to with the SQLite output";
		return format_is(f, "sqlite") ? "the SQLite output" : "an output other than Paraver";
	}
	return NULL;
}

/* The internal records the outputs of o want (EMU_SINK_INT_*), from their
 * registry's ops through a format's name (the Perfetto and SQLite outputs':
 * all) and from what the caller said of its own output (the Python
 * module's: the raw channels'). */
static int parallel_internal(const struct weft_emulate_opts *o)
{
	for (size_t i = 0; o->formats != NULL && o->formats[i] != NULL; i++)
		if (format_is(o->formats[i], "perfetto") || format_is(o->formats[i], "sqlite"))
			return EMU_SINK_INT_ALL;
	return o->open_output != NULL ? o->open_output_internal : 0;
}

#define RUN_SERIAL 3

/* --mpi: a warning of the whole trace makes the run serial. */
static void note_warning(void *ctx, const char *msg)
{
	(void) msg;
	*(int *) ctx = 1;
}

/* The warnings of the whole trace's opening (run_parallel), said once the
 * run by workers is kept, before the workers' own (the serial run says
 * them before its first event); after that, the trace's reader says again
 * what the workers' readers said (merged_events): not said twice. */
struct said {
	char **v;
	size_t n, cap;
	int oom, closed;
};

static void said_keep(void *ctx, const char *msg)
{
	struct said *s = ctx;
	if (s->closed || s->oom)
		return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		char **v = realloc(s->v, cap * sizeof *v);
		if (v == NULL) {
			s->oom = 1;
			return;
		}
		s->v = v;
		s->cap = cap;
	}
	if ((s->v[s->n] = strdup(msg)) == NULL)
		s->oom = 1;
	else
		s->n++;
}

static void said_free(struct said *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
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

/* The end of the run of records of a merged stream (times[i] at
 * base + i * esz, n of them) from pos before time cut. */
static size_t before_cut(const void *base, size_t esz, size_t pos, size_t n, int64_t cut)
{
	const char *b = base;
	int64_t t;
	while (pos < n && (memcpy(&t, b + pos * esz, sizeof t), t < cut))
		pos++;
	return pos;
}

#define MERGED_BATCH PAR_MERGED_BATCH

/* The events of the whole trace (R->t, opened and not read yet, in the
 * serial run's order: file order, which a run by workers has, without
 * unordered regions), read as the serial run reads them, given to the
 * outputs that write them (the SQLite output): 0, or -1 with err. */
static int merged_events(struct run *R, const struct weft_emulate_opts *o, char *err,
		size_t errlen)
{
	int want = 0;
	for (size_t i = 0; i < R->nouts; i++)
		want |= R->outs[i]->ops->events != NULL;
	if (!want)
		return 0;
	long got;
	while ((got = weft_next_batch(R->t, R->evs, EMU_BATCH)) > 0) {
		if (interrupted(o)) {
			snprintf(err, errlen, "interrupted");
			return -1;
		}
		for (size_t i = 0; i < R->nouts; i++)
			if (out_events(R->outs[i], R->evs, (size_t) got, err, errlen) != 0)
				return -1;
	}
	if (got < 0) {
		snprintf(err, errlen, "%s", weft_error(R->t));
		return -1;
	}
	return 0;
}

/* A batch of merged records (b->internal: the internal records the
 * workers kept: kept, an EMU_SINK_INT_*) handed to every output: 0, or -1
 * with err. */
static int merged_batch(struct run *R, int kept, const struct emu_batch *b, char *err,
		size_t errlen)
{
	struct emu_batch bs = *b;
	int status = 0;
	for (size_t k = 0; k < R->nouts && status == 0; k++) {
		struct emu_sink s = out_sink(R->outs[k]);
		if (s.internal && (kept == 0 || (kept == EMU_SINK_INT_RAW &&
				s.internal != EMU_SINK_INT_RAW))) {
			/* the caller's output asked for more than
			 * open_output_internal said */
			snprintf(err, errlen, "an output wants internal records the "
					"workers did not keep (weft_emulate_opts."
					"open_output_internal)");
			return -1;
		}
		bs.internal = s.internal ? b->internal : NULL;
		bs.ninternal = s.internal ? b->ninternal : 0;
		status = s.records(s.self, &bs, err, errlen);
	}
	return status;
}

/* The outputs of o opened on the catalogue of emu, given the merged records
 * of each view and the merged internal records (irec, for the outputs that
 * want them), and committed: 0, or -1 with err (nothing written). The
 * records go in batches that follow one another in time: a batch holds, of
 * each view and of the internal records, those before a cut time (at most
 * MERGED_BATCH of each, unless more share one time), so no record of a
 * batch is earlier than one of a batch before, as in the serial run's
 * batches (the Perfetto and SQLite outputs write their files from them in
 * time order: perfetto.c, sqlite.c). With `events` (-j, not --mpi), the
 * outputs that write the events (the SQLite output) are given the trace's,
 * read by this thread as the serial run reads them (merged_events). */
static int write_merged(struct run *R, const struct weft_emulate_opts *o, const struct emu *emu,
		struct emu_prv_rec *const *rec, const size_t *nrec, size_t nviews,
		const struct emu_rec *irec, size_t nirec, int64_t duration, int events, char *err,
		size_t errlen)
{
	int status = open_outputs(R, o, emu, err, errlen);
	int kept = parallel_internal(o); /* what the workers kept of irec */
	if (status == 0 && events)
		status = merged_events(R, o, err, errlen);
	size_t pos[EMU_MAX_VIEWS + 1] = { 0 }, end[EMU_MAX_VIEWS + 1];
	size_t ns = nviews + 1; /* the views, then the internal records */
	const void *base[EMU_MAX_VIEWS + 1];
	size_t n[EMU_MAX_VIEWS + 1], esz[EMU_MAX_VIEWS + 1];
	for (size_t f = 0; f < nviews; f++) {
		base[f] = rec[f];
		n[f] = nrec[f];
		esz[f] = sizeof **rec;
	}
	base[nviews] = irec;
	n[nviews] = irec != NULL ? nirec : 0;
	esz[nviews] = sizeof *irec;
	while (status == 0) {
		int64_t cut = INT64_MAX;
		int left = 0;
		for (size_t s = 0; s < ns; s++) {
			left |= pos[s] < n[s];
			if (pos[s] + MERGED_BATCH < n[s]) {
				int64_t t;
				memcpy(&t, (const char *) base[s] + (pos[s] + MERGED_BATCH) * esz[s],
						sizeof t);
				cut = t < cut ? t : cut;
			}
		}
		if (!left)
			break;
		int some = 0;
		for (size_t s = 0; s < ns; s++) {
			end[s] = before_cut(base[s], esz[s], pos[s], n[s], cut);
			some |= end[s] > pos[s];
		}
		if (!some) /* more than a batch at time cut: all of them */
			for (size_t s = 0; s < ns; s++)
				end[s] = cut == INT64_MAX ? n[s] :
					before_cut(base[s], esz[s], pos[s], n[s], cut + 1);
		struct emu_batch b;
		memset(&b, 0, sizeof b);
		for (size_t f = 0; f < nviews; f++) {
			b.prv[f] = rec[f] + pos[f];
			b.nprv[f] = end[f] - pos[f];
		}
		b.internal = irec != NULL ? irec + pos[nviews] : NULL;
		b.ninternal = end[nviews] - pos[nviews];
		status = merged_batch(R, kept, &b, err, errlen);
		memcpy(pos, end, sizeof pos);
	}
	if (status == 0 && interrupted(o)) {
		snprintf(err, errlen, "interrupted");
		status = -1;
	}
	if (status == 0)
		return outs_commit(R, o, duration, err, errlen);
	outs_discard(R);
	return status;
}

/* The engine options of a worker (-j, --mpi). */
static void worker_opts(const struct weft_emulate_opts *o, struct emu_opts *eo, char *e2,
		size_t e2len)
{
	memset(eo, 0, sizeof *eo);
	eo->lint = o->lint;
	eo->model_name = model_name;
	eo->model_ctx = (void *) (o->models != NULL ? o->models : weft_registry_builtin(e2,
				e2len));
	eo->no_summary = o->summary == NULL;
	eo->breakdown = o->breakdown;
}

/* par_stream's outputs (run_parallel): opened on the first worker's
 * catalogue, given the trace's events (merged_events), then the merged
 * batches. */
struct merged_ctx {
	struct run *R;
	const struct weft_emulate_opts *o;
	int kept; /* the internal records the workers keep */
};

static int merged_open(void *ctx, const struct emu *emu, char *err, size_t errlen)
{
	struct merged_ctx *c = ctx;
	if (open_outputs(c->R, c->o, emu, err, errlen) != 0)
		return -1;
	return merged_events(c->R, c->o, err, errlen);
}

static int merged_put(void *ctx, const struct emu_batch *b, char *err, size_t errlen)
{
	struct merged_ctx *c = ctx;
	if (interrupted(c->o)) {
		snprintf(err, errlen, "interrupted");
		return -1;
	}
	return merged_batch(c->R, c->kept, b, err, errlen);
}

/* weft emu -j: the run by workers (parallel.h); RUN_SERIAL when it must be
 * made serially (the trace has one loom, or a worker met what could make
 * its result differ), 0, or -1 with err. */
static int run_parallel(const struct weft_emulate_opts *o, char *err, size_t errlen)
{
	if (!several_looms(o->path))
		return RUN_SERIAL;
	/* the whole trace, without outputs; its warnings are kept, said if
	 * the run by workers is kept (else the serial run says them) */
	struct said said;
	memset(&said, 0, sizeof said);
	struct weft_emulate_opts mo = *o;
	mo.formats = NULL;
	mo.open_output = NULL; /* opened once, on the merged records */
	mo.warn = said_keep;
	mo.info = NULL;
	mo.progress = NULL;
	mo.ctx = &said;
	struct run R;
	memset(&R, 0, sizeof R);
	char e2[WEFT_ERR_MAX];
	int timing = getenv("WEFT_EMU_TIMING") != NULL;
	const char *why = NULL;
	if (prepare(&R, &mo, WEFT_SORT_NONE, e2, sizeof e2) != 0)
		why = "the trace is refused";
	else if (said.oom)
		why = "out of memory for the warnings";
	else if (R.sys.nlooms < 2)
		why = "one loom";
	else if (emu_has_lost(R.emu))
		why = "runs of lost events, which only the serial run emulates";
	else if (weft_stream_at(R.t, 0)->relpath[0] == '.' || strchr(weft_stream_at(R.t,
			0)->relpath, '/') == NULL)
		why = "not a whole trace";
	if (why != NULL) {
		if (timing)
			fprintf(stderr, "weft emu: -j %d: serial run (%s)\n", o->jobs, why);
		run_free(&R);
		said_free(&said);
		return RUN_SERIAL;
	}
	int64_t origin = INT64_MAX;
	for (size_t i = 0; i < weft_nstreams(R.t); i++)
		if (R.has[i] && R.first[i] < origin)
			origin = R.first[i];
	struct emu_opts eo;
	worker_opts(o, &eo, e2, sizeof e2);
	struct emu_window win = { o->has_from, o->has_to, o->from_rel, o->to_rel, o->from,
		o->to };
	struct par_in in = { o->path, R.t, &R.sys, R.models, R.nmodels, &eo, origin,
		(size_t) o->jobs, o->all_models, o->stop, NULL, 0, 0,
		o->has_from || o->has_to ? &win : NULL, parallel_internal(o), 0, o->salvage,
		(const char *const *) said.v, said.n, 1 };
	struct par_out P;
	double t0 = now_s();
	/* what the trace's reader says from now on (merged_events: the SQLite
	 * output's events, read while the workers run) the workers' readers
	 * say too: not said twice */
	said.closed = 1;
	/* the records merged as the workers make them and handed to the
	 * outputs at once (par_stream: memory bounded by the workers' queues;
	 * par_run collects them, for WEFT_EMU_PAR_COLLECT=1) */
	const char *cs = getenv("WEFT_EMU_PAR_COLLECT");
	int stream = cs == NULL || strcmp(cs, "1") != 0;
	struct merged_ctx mc = { &R, o, in.internal };
	struct par_stream_ops ops = { merged_open, merged_put, &mc };
	int r = stream ? par_stream(&in, &ops, &P, err, errlen) : par_run(&in, &P, err, errlen);
	if (timing && P.nworkers > 0) {
		for (size_t k = 0; k < P.nworkers && k < 64; k++)
			fprintf(stderr, "weft emu: worker %zu CPU %.3f s\n", k, P.cpu[k]);
	}
	if (r != 0) {
		if (timing && r > 0)
			fprintf(stderr, "weft emu: -j %d: serial run (%s)\n", o->jobs, P.why);
		outs_discard(&R); /* par_stream's, partly written */
		par_free(&P);
		run_free(&R);
		said_free(&said);
		return r > 0 ? RUN_SERIAL : -1;
	}
	/* the run is kept: the warnings in the serial run's order */
	for (size_t i = 0; i < said.n && o->warn != NULL; i++)
		o->warn(o->ctx, said.v[i]);
	for (size_t i = 0; i < P.nwarn && o->warn != NULL; i++)
		o->warn(o->ctx, P.warn[i]);
	double t1 = now_s();
	int status = 0;
	if (!stream) {
		status = write_merged(&R, o, P.emu, P.rec, P.nrec, P.nviews, P.irec, P.nirec,
				P.duration, 1, err, errlen);
	} else if (interrupted(o)) {
		snprintf(err, errlen, "interrupted");
		outs_discard(&R);
		status = -1;
	} else {
		status = outs_commit(&R, o, P.duration, err, errlen);
	}
	if (status == 0 && o->summary != NULL && par_summary(&P, o->summary) != 0) {
		snprintf(err, errlen, "out of memory");
		status = -1;
	}
	if (timing)
		fprintf(stderr, "weft emu: -j %d: %zu workers, %" PRIu64 " events in %.2f s (the "
				"workers and the merge %.2f s, the outputs %.2f s); process CPU %.3f s\n", o->jobs,
				P.nworkers, P.nevents, now_s() - t0, t1 - t0, now_s() - t1,
				cpu_s(RUSAGE_SELF, 0) + cpu_s(RUSAGE_SELF, 1));
	par_free(&P);
	run_free(&R);
	said_free(&said);
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
	const char *unfit = parallel_unfit(o, 0);
	if (unfit == NULL) {
		int pr = run_parallel(o, err, errlen);
		if (pr != RUN_SERIAL)
			return pr;
	} else if (o->jobs >= 2 && getenv("WEFT_EMU_TIMING") != NULL) {
		fprintf(stderr, "weft emu: -j %d: serial run (%s)\n", o->jobs, unfit);
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

/* ---- weft emu --mpi (weft_emulate_ranks; docs/emu.md, MPI) ---- */

/* The job's status from every rank's (code, msg): the lowest rank's error
 * (a code other than 0 and RUN_SERIAL), else RUN_SERIAL with the lowest
 * such rank's reason, else 0. Collective. */
static int agree(const struct weft_ranks *rk, int code, const char *msg, char *out,
		size_t outlen, int *who)
{
	struct rbuf b = { NULL, 0, 0, 0 };
	rbuf_u64(&b, (uint64_t) (int64_t) code);
	rbuf_str(&b, msg, b.oom ? 0 : strlen(msg));
	uint8_t *all = NULL;
	size_t *lens = calloc((size_t) rk->nranks, sizeof *lens);
	if (b.oom || lens == NULL) {
		/* nothing can be shared without memory: this rank's own status */
		free(b.p);
		free(lens);
		snprintf(out, outlen, "out of memory");
		*who = rk->rank;
		return 1;
	}
	rk->allgather(rk->ctx, b.p, b.n, &all, lens);
	free(b.p);
	int job = 0, serial = -1;
	size_t at = 0;
	for (int r = 0; r < rk->nranks && job == 0; r++) {
		struct rget g = { all + at, lens[r], 0 };
		at += lens[r];
		uint64_t c;
		const uint8_t *m;
		size_t ml;
		if (!rget_u64(&g, &c) || !rget_str(&g, &m, &ml))
			continue;
		if ((int) (int64_t) c == RUN_SERIAL && serial < 0) {
			serial = r;
			snprintf(out, outlen, "%.*s", (int) ml, (const char *) m);
		} else if (c != 0 && (int) (int64_t) c != RUN_SERIAL) {
			job = (int) (int64_t) c;
			*who = r;
			snprintf(out, outlen, "%.*s", (int) ml, (const char *) m);
		}
	}
	free(all);
	free(lens);
	if (job == 0 && serial >= 0) {
		*who = serial;
		return RUN_SERIAL;
	}
	return job;
}

/* A failure's exit status: 128 + the signal when the run was stopped. */
static int fail_code(const struct weft_emulate_opts *o)
{
	return interrupted(o) ? 128 + (int) __atomic_load_n(o->stop, __ATOMIC_RELAXED) : 1;
}

/* The task types of emu's catalogue (the .pcf lists them) as bytes. */
static void dyn_bytes(const struct emu *e, struct rbuf *b)
{
	size_t n = emu_nchans(e);
	for (size_t i = 0; i < n; i++) {
		const struct emu_chan_info *c = emu_chan_at(e, i);
		rbuf_u64(b, c->ndyn);
		for (size_t k = 0; k < c->ndyn; k++) {
			rbuf_u64(b, (uint64_t) c->dyn[k].value);
			rbuf_str(b, c->dyn[k].label, strlen(c->dyn[k].label));
		}
	}
}

/* What a rank sends rank 0 after its share: its counts, then per view its
 * records. */
struct rank_part {
	uint64_t nviews, nevents;
	int64_t duration;
	double cpu;
	uint64_t has; /* emulated looms (its task types are compared) */
	uint64_t snapped; /* a window: a worker wrote its state at T0 at an event */
	/* the summary's window line: the last event's dclock, whether a worker
	 * met an event, whether reading stopped after T1, the events before T0 */
	int64_t end;
	uint64_t started, stopped, nmuted;
	uint64_t nrec[EMU_MAX_VIEWS];
};

/* The share of each rank: looms (sys indices) of rank me into *mine. */
static int rank_share(const struct run *R, const struct weft_ranks *rk, const struct rloom *rl,
		size_t nrl, const char *path, size_t **mine, size_t *nmine, char *err, size_t errlen)
{
	size_t nl = R->sys.nlooms, nr = (size_t) rk->nranks;
	uint64_t *weight = calloc(nl + 1, sizeof *weight);
	uint8_t *may = rk->local ? calloc(nl * nr + 1, 1) : NULL;
	size_t *bin = calloc(nl + 1, sizeof *bin);
	*mine = calloc(nl + 1, sizeof **mine);
	*nmine = 0;
	int r = 0;
	if (weight == NULL || bin == NULL || *mine == NULL || (rk->local && may == NULL)) {
		snprintf(err, errlen, "out of memory");
		r = -1;
		goto out;
	}
	for (size_t t = 0; t < R->sys.nthreads; t++)
		if (R->sys.threads[t].stream != NULL)
			weight[R->sys.threads[t].loom] += R->sys.threads[t].stream->obs_size;
	for (size_t L = 0; L < nl && rk->local; L++) {
		char dir[512];
		const struct rloom *f = NULL;
		if (par_loom_dir(&R->sys, L, dir, sizeof dir) == 0)
			for (size_t k = 0; k < nrl && f == NULL; k++)
				if (strcmp(rl[k].dir, dir) == 0)
					f = &rl[k];
		if (f == NULL) {
			snprintf(err, errlen, "loom '%s': no rank found its directory",
					R->sys.looms[L].name);
			r = -1;
			goto out;
		}
		weight[L] = f->bytes; /* the shadow's files are not the streams */
		memcpy(may + L * nr, f->seen, nr);
	}
	if (par_partition(weight, nl, may, nr, bin) != 0) {
		snprintf(err, errlen, "out of memory");
		r = -1;
		goto out;
	}
	for (size_t L = 0; L < nl; L++)
		if (bin[L] == (size_t) rk->rank)
			(*mine)[(*nmine)++] = L;
	if (rk->rank == 0 && *nmine == 0 && nl > 0) {
		snprintf(err, errlen, "%s: rank 0 finds no loom there: it writes the outputs, "
				"and emulates a share to know their catalogue", path);
		r = -1;
	}
out:
	free(weight);
	free(may);
	free(bin);
	return r;
}

/* Merged records on their way to the outputs: batches of FEED_BATCH, in
 * EMU_BATCH_KEEP + 1 arrays used in turn (a sink may hold a batch's array
 * until EMU_BATCH_KEEP further calls returned: emu.h). */
#define FEED_BATCH 4096
struct feed {
	struct run *R;
	size_t f, nb, cur;
	char *err;
	size_t errlen;
	struct emu_prv_rec b[EMU_BATCH_KEEP + 1][FEED_BATCH];
};

static int feed_flush(struct feed *F)
{
	if (F->nb == 0)
		return 0;
	struct emu_batch b;
	memset(&b, 0, sizeof b);
	b.prv[F->f] = F->b[F->cur];
	b.nprv[F->f] = F->nb;
	for (size_t k = 0; k < F->R->nouts; k++) {
		struct emu_sink s = out_sink(F->R->outs[k]);
		if (s.records(s.self, &b, F->err, F->errlen) != 0)
			return -1;
	}
	F->nb = 0;
	F->cur = (F->cur + 1) % (EMU_BATCH_KEEP + 1);
	return 0;
}

static int feed_emit(void *ctx, const struct emu_prv_rec *r, size_t n)
{
	struct feed *F = ctx;
	while (n > 0) {
		size_t k = FEED_BATCH - F->nb < n ? FEED_BATCH - F->nb : n;
		memcpy(F->b[F->cur] + F->nb, r, k * sizeof *r);
		F->nb += k;
		r += k;
		n -= k;
		if (F->nb == FEED_BATCH && feed_flush(F) != 0)
			return -1;
	}
	return 0;
}

/* A breakdown view's merged per-CPU changes (every rank's), sorted on
 * their way to the outputs. */
struct feed_bd {
	struct emu_bd_replay *R;
	struct feed *F;
};

static int feed_bd_emit(void *ctx, const struct emu_prv_rec *r, size_t n)
{
	struct feed_bd *B = ctx;
	return emu_bd_replay_feed(B->R, r, n, feed_emit, B->F);
}

/* With the internal records (the Perfetto output, whose file follows the
 * records of its two streams in time order: PARALLEL), rank 0 merges every
 * view's records and the internal ones into arrays (a breakdown view's
 * changes sorted), then writes them as -j does (write_merged): 0 (the
 * outputs committed), 1 (records of two ranks at one time: nothing
 * written), or -1 with err. recs[f]: every rank's records of view f one
 * after another (rlens[f][r] bytes of rank r); irecs, ilens: the internal
 * ones. */
static int ranks_write_merged(struct run *R, const struct weft_emulate_opts *o,
		const struct emu *emu, uint8_t *const *recs, size_t *const *rlens, size_t nviews,
		const uint8_t *irecs, const size_t *ilens, size_t nr, int64_t duration, char *err,
		size_t errlen)
{
	struct emu_prv_rec *rec[EMU_MAX_VIEWS] = { NULL };
	size_t nrec[EMU_MAX_VIEWS] = { 0 }, nirec = 0;
	struct emu_rec *irec = NULL;
	const void **src = calloc(nr + 1, sizeof *src);
	size_t *n = calloc(nr + 1, sizeof *n);
	int r = src == NULL || n == NULL ? -1 : 0;
	for (size_t f = 0; f < nviews && f < EMU_MAX_VIEWS && r == 0; f++) {
		for (size_t k = 0, off = 0; k < nr; off += rlens[f][k++]) {
			src[k] = recs[f] + off;
			n[k] = rlens[f][k] / sizeof **rec;
		}
		r = par_merge((const struct emu_prv_rec *const *) src, n, nr, o->has_from, &rec[f],
				&nrec[f]);
		if (r == 0 && emu_view_at(emu, f)->breakdown) {
			struct emu_prv_rec *sorted;
			size_t ns;
			if (emu_bd_replay_all(emu, f, rec[f], nrec[f], &sorted, &ns) != 0) {
				r = -1;
			} else {
				free(rec[f]);
				rec[f] = sorted;
				nrec[f] = ns;
			}
		}
	}
	if (r == 0) {
		for (size_t k = 0, off = 0; k < nr; off += ilens[k++]) {
			src[k] = irecs + off;
			n[k] = ilens[k] / sizeof *irec;
		}
		r = par_merge_irec((const struct emu_rec *const *) src, n, nr, o->has_from, &irec,
				&nirec);
	}
	if (r < 0)
		snprintf(err, errlen, "out of memory for the merge");
	if (r == 0)
		r = write_merged(R, o, emu, rec, nrec, nviews, irec, nirec, duration, 0, err,
				errlen);
	for (size_t f = 0; f < EMU_MAX_VIEWS; f++)
		free(rec[f]);
	free(irec);
	free(src);
	free(n);
	return r;
}

/* The serial run, by rank 0 alone (the others wait for its status). */
static int rank0_serial(const struct weft_emulate_opts *o, const struct weft_ranks *rk,
		const char *why, char *err, size_t errlen, int *who)
{
	int code = 0;
	char msg[WEFT_ERR_MAX] = "";
	if (rk->local) {
		snprintf(msg, sizeof msg, "the ranks cannot emulate this trace apart as the serial "
				"run would (%s): emulate the whole trace with weft emu", why);
		code = rk->rank == 0 ? 1 : 0;
	} else if (rk->rank == 0) {
		if (getenv("WEFT_EMU_TIMING") != NULL)
			fprintf(stderr, "weft emu: --mpi: serial run on rank 0 (%s)\n", why);
		struct weft_emulate_opts so = *o;
		if (weft_emulate(&so, msg, sizeof msg) != 0)
			code = fail_code(o);
	}
	code = agree(rk, code, msg, err, errlen, who);
	return code;
}

int weft_emulate_ranks(const struct weft_emulate_opts *user_opts, const struct weft_ranks *rk,
		char *err, size_t errlen, int *who)
{
	struct weft_emulate_opts o0;
	*who = rk->rank;
	if (weft_opts_take(&o0, sizeof o0, user_opts, "weft_emulate_ranks: struct "
			"weft_emulate_opts", err, errlen) != 0)
		return 1;
	const struct weft_emulate_opts *o = &o0;
	int timing = getenv("WEFT_EMU_TIMING") != NULL;
	double t0 = now_s();
	struct weft_emulate_opts so = *o; /* the trace read: o->path, or the shadow */
	so.outdir = o->outdir != NULL ? o->outdir : o->path;
	so.jobs = o->jobs < 2 ? 2 : o->jobs;
	const char *unfit = parallel_unfit(&so, 1);
	so.jobs = o->jobs < 1 ? 1 : o->jobs;
	char msg[WEFT_ERR_MAX] = "", e2[WEFT_ERR_MAX];
	char *shadow = NULL;
	struct rloom *rl = NULL;
	size_t nrl = 0, *mine = NULL, nmine = 0;
	struct run R;
	memset(&R, 0, sizeof R);
	struct par_out P;
	memset(&P, 0, sizeof P);
	int job = 0;
	if (unfit != NULL) {
		/* rank0_serial's refusal under --local names it */
		return rank0_serial(o, rk, unfit, err, errlen, who);
	}
	if (rk->local) {
		struct rbuf b = { NULL, 0, 0, 0 };
		int code = ranks_scan(o->path, &b, msg, sizeof msg) != 0;
		uint8_t *all = NULL;
		size_t *lens = calloc((size_t) rk->nranks, sizeof *lens);
		if (lens == NULL)
			abort(); /* the collectives cannot go on without it */
		rk->allgather(rk->ctx, code ? NULL : b.p, code ? 0 : b.n, &all, lens);
		free(b.p);
		if ((job = agree(rk, code, msg, err, errlen, who)) == 0 &&
				ranks_shadow(o->path, all, lens, rk->nranks, rk->rank, &shadow, &rl, &nrl,
				msg, sizeof msg) != 0)
			code = 1;
		free(all);
		free(lens);
		if (job == 0)
			job = agree(rk, code, msg, err, errlen, who);
		if (job != 0)
			goto out;
		so.path = shadow;
	}
	/* the whole trace, without outputs; every rank its own */
	int warned = 0, code = 0;
	struct weft_emulate_opts mo = so;
	mo.formats = NULL;
	mo.warn = note_warning;
	mo.info = NULL;
	mo.progress = NULL;
	mo.ctx = &warned;
	if (prepare(&R, &mo, WEFT_SORT_NONE, e2, sizeof e2) != 0) {
		code = fail_code(o);
		snprintf(msg, sizeof msg, "%s", e2);
	} else if (warned) {
		code = RUN_SERIAL;
		snprintf(msg, sizeof msg, "a warning");
	} else if (emu_has_lost(R.emu)) {
		code = RUN_SERIAL;
		snprintf(msg, sizeof msg, "lost events");
	} else if (weft_stream_at(R.t, 0)->relpath[0] == '.' || strchr(weft_stream_at(R.t,
			0)->relpath, '/') == NULL) {
		code = RUN_SERIAL;
		snprintf(msg, sizeof msg, "not a whole trace");
	} else if (rank_share(&R, rk, rl, nrl, o->path, &mine, &nmine, msg, sizeof msg) != 0) {
		code = 1;
	}
	double t1 = now_s();
	struct emu_opts eo;
	worker_opts(o, &eo, e2, sizeof e2);
	int internal = parallel_internal(o); /* the same on every rank */
	struct emu_window win = { o->has_from, o->has_to, o->from_rel, o->to_rel, o->from,
		o->to };
	if (code == 0 && nmine > 0) {
		int64_t origin = INT64_MAX;
		for (size_t i = 0; i < weft_nstreams(R.t); i++)
			if (R.has[i] && R.first[i] < origin)
				origin = R.first[i];
		struct par_in in = { so.path, R.t, &R.sys, R.models, R.nmodels, &eo, origin,
			(size_t) so.jobs, o->all_models, o->stop, mine, nmine, 1,
			o->has_from || o->has_to ? &win : NULL, internal, 1, 0, NULL, 0, 0 };
		int r = par_run(&in, &P, msg, sizeof msg);
		if (r < 0 || P.error || interrupted(o)) {
			code = fail_code(o);
			if (r > 0)
				snprintf(msg, sizeof msg, "%s", interrupted(o) ? "interrupted" : P.emsg);
		} else if (r > 0) {
			code = RUN_SERIAL;
			snprintf(msg, sizeof msg, "%s", P.why);
		}
	}
	if (shadow != NULL) {
		/* messages name the files where they lie */
		char m2[WEFT_ERR_MAX];
		ranks_replace(msg, shadow, o->path, m2, sizeof m2);
		snprintf(msg, sizeof msg, "%s", m2);
	}
	job = agree(rk, code, msg, err, errlen, who);
	if (job == RUN_SERIAL) {
		snprintf(e2, sizeof e2, "%s", err);
		par_free(&P);
		run_free(&R);
		memset(&R, 0, sizeof R);
		job = rank0_serial(o, rk, e2, err, errlen, who);
		goto out;
	}
	if (job != 0)
		goto out;
	double t2 = now_s(), c2 = cpu_s(RUSAGE_SELF, 0) + cpu_s(RUSAGE_SELF, 1);
	/* rank 0 gets every rank's counts and task types, then each view's
	 * records */
	struct rank_part me;
	memset(&me, 0, sizeof me);
	me.nviews = nmine > 0 ? P.nviews : emu_nviews(R.emu);
	me.has = nmine > 0;
	if (nmine > 0) {
		me.nevents = P.nevents;
		me.duration = P.duration;
		me.snapped = (uint64_t) P.snapped;
		me.end = P.end;
		me.started = (uint64_t) P.started;
		me.stopped = (uint64_t) P.stopped;
		me.nmuted = P.nmuted;
		for (size_t k = 0; k < P.nworkers && k < 64; k++)
			me.cpu += P.cpu[k];
		for (size_t f = 0; f < P.nviews; f++)
			me.nrec[f] = P.nrec[f];
	}
	struct rbuf b = { NULL, 0, 0, 0 };
	rbuf_put(&b, &me, sizeof me);
	if (nmine > 0)
		dyn_bytes(P.emu, &b);
	size_t nr = (size_t) rk->nranks;
	size_t *lens = calloc(nr, sizeof *lens);
	uint8_t *parts = NULL;
	if (lens == NULL || b.oom)
		abort(); /* the collectives cannot go on without it */
	rk->gather0(rk->ctx, b.p, b.n, &parts, lens);
	free(b.p);
	uint8_t *recs[EMU_MAX_VIEWS] = { NULL };
	size_t *rlens[EMU_MAX_VIEWS] = { NULL };
	for (size_t f = 0; f < me.nviews && f < EMU_MAX_VIEWS; f++) {
		if ((rlens[f] = calloc(nr, sizeof *rlens[f])) == NULL)
			abort();
		rk->gather0(rk->ctx, nmine > 0 ? (const void *) P.rec[f] : NULL,
				nmine > 0 ? P.nrec[f] * sizeof *P.rec[f] : 0, &recs[f], rlens[f]);
		if (nmine > 0)
			par_free_rec(&P, f); /* rank 0 has its copy */
	}
	/* the internal records (the Perfetto output's), as the views' */
	uint8_t *irecs = NULL;
	size_t *ilens = NULL;
	if (internal) {
		if ((ilens = calloc(nr, sizeof *ilens)) == NULL)
			abort();
		rk->gather0(rk->ctx, nmine > 0 ? (const void *) P.irec : NULL,
				nmine > 0 ? P.nirec * sizeof *P.irec : 0, &irecs, ilens);
		if (nmine > 0)
			par_free_rec(&P, EMU_MAX_VIEWS);
	}
	/* the summary: each rank's figures of its looms' rows */
	uint8_t *sums = NULL;
	size_t *slens = NULL;
	if (o->summary != NULL) {
		uint8_t *sb = NULL;
		size_t sl = 0;
		if ((slens = calloc(nr, sizeof *slens)) == NULL ||
				(nmine > 0 && par_summary_pack(&P, &sb, &sl) != 0))
			abort(); /* the collectives cannot go on without it */
		rk->gather0(rk->ctx, sb, sl, &sums, slens);
		free(sb);
	}
	double t3 = now_s(), c3 = cpu_s(RUSAGE_SELF, 0) + cpu_s(RUSAGE_SELF, 1);
	code = 0;
	msg[0] = '\0';
	if (rk->rank == 0) {
		/* the task types must be the same in every rank that emulated */
		const uint8_t *dyn0 = parts + sizeof me;
		size_t dl0 = lens[0] - sizeof me, at = 0;
		int64_t duration = 0, end = 0;
		uint64_t nevents = 0, snapped = 0, started = 0, stopped = 0, nmuted = 0;
		double cpu = 0, cpumax = 0;
		for (size_t r = 0; r < nr; r++) {
			struct rank_part p;
			memcpy(&p, parts + at, sizeof p);
			if (p.has && (lens[r] - sizeof p != dl0 ||
					memcmp(parts + at + sizeof p, dyn0, dl0) != 0) && code == 0) {
				code = RUN_SERIAL;
				snprintf(msg, sizeof msg, "the ranks know different task types");
			}
			at += lens[r];
			if (p.duration > duration)
				duration = p.duration;
			nevents += p.nevents;
			snapped |= p.snapped;
			/* the window line as -j's (emu_summary_split): reading stopped
			 * when a rank met an event after T1 (the serial run's first
			 * one is one of theirs), the events before T0 summed */
			end = p.end > end ? p.end : end;
			started |= p.started;
			stopped |= p.stopped;
			nmuted += p.nmuted;
			cpu += p.cpu;
			cpumax = p.cpu > cpumax ? p.cpu : cpumax;
			if (timing)
				fprintf(stderr, "weft emu: rank %zu CPU %.3f s\n", r, p.cpu);
		}
		/* a window that holds nothing over every rank: the serial run's
		 * message (PARALLEL) */
		if (code == 0 && (o->has_from || o->has_to) && (nevents == 0 ||
				(o->has_from && !snapped))) {
			code = RUN_SERIAL;
			snprintf(msg, sizeof msg, "a window that holds nothing");
		}
		/* the merge goes straight to the outputs, view by view, in batches
		 * (no merged copy); a tie found on the way discards them */
		double t4 = now_s(), c4 = cpu_s(RUSAGE_SELF, 0) + cpu_s(RUSAGE_SELF, 1);
		struct feed *F = calloc(1, sizeof *F);
		if (F == NULL)
			abort();
		F->R = &R;
		F->err = msg;
		F->errlen = sizeof msg;
		if (code == 0 && internal) {
			int m = ranks_write_merged(&R, &so, P.emu, recs, rlens, me.nviews, irecs, ilens,
					nr, duration, msg, sizeof msg);
			if (m > 0) {
				code = RUN_SERIAL;
				snprintf(msg, sizeof msg, "records of two ranks at one time");
			} else if (m < 0) {
				code = fail_code(o);
			}
		} else if (code == 0 && open_outputs(&R, &so, P.emu, msg, sizeof msg) != 0) {
			code = fail_code(o);
		}
		for (size_t f = 0; f < me.nviews && code == 0 && !internal; f++) {
			const struct emu_prv_rec **src = calloc(nr, sizeof *src);
			size_t *n = calloc(nr, sizeof *n), off = 0;
			if (src == NULL || n == NULL)
				abort();
			for (size_t r = 0; r < nr; r++) {
				src[r] = (const struct emu_prv_rec *) (void *) (recs[f] + off);
				n[r] = rlens[f][r] / sizeof **src;
				off += rlens[f][r];
			}
			F->f = f;
			F->nb = 0;
			struct feed_bd B = { NULL, F };
			int m = 0;
			if (emu_view_at(P.emu, f)->breakdown && (B.R = emu_bd_replay_new(P.emu,
					f)) == NULL)
				m = -1;
			if (m == 0 && B.R != NULL)
				m = o->has_from ? par_merge_each_at0(src, n, nr, feed_bd_emit, &B) :
					par_merge_each(src, n, nr, feed_bd_emit, &B);
			else if (m == 0)
				m = o->has_from ? par_merge_each_at0(src, n, nr, feed_emit, F) :
					par_merge_each(src, n, nr, feed_emit, F);
			if (m == 0 && B.R != NULL)
				m = emu_bd_replay_end(B.R, feed_emit, F);
			emu_bd_replay_free(B.R);
			if (m == 0)
				m = feed_flush(F);
			free(src);
			free(n);
			free(recs[f]);
			recs[f] = NULL;
			if (m < 0) {
				code = fail_code(o);
				if (msg[0] == '\0')
					snprintf(msg, sizeof msg, "out of memory for the merge");
			} else if (m > 0) {
				code = RUN_SERIAL;
				snprintf(msg, sizeof msg, "records of two ranks at one time");
			}
		}
		if (code == 0 && interrupted(o)) {
			code = fail_code(o);
			snprintf(msg, sizeof msg, "interrupted");
		}
		if (code == 0 && !internal && outs_commit(&R, &so, duration, msg, sizeof msg) != 0)
			code = fail_code(o);
		else if (code != 0 && !internal)
			outs_discard(&R);
		/* the serial run's summary, from every rank's rows put together in
		 * rank 0's engine */
		for (size_t r = 0, so_at = 0; code == 0 && sums != NULL && r < nr;
				so_at += slens[r++])
			if (slens[r] > 0 && emu_summary_unpack(P.emu, sums + so_at, slens[r]) != 0) {
				code = 1;
				snprintf(msg, sizeof msg, "rank %zu's summary could not be read", r);
			}
		if (code == 0 && o->summary != NULL && (o->has_from || o->has_to))
			emu_window_add(P.emu, started != 0, stopped != 0, nmuted);
		if (code == 0 && o->summary != NULL)
			emu_summary_at(P.emu, end, nevents, o->summary);
		free(F);
		if (timing && code == 0)
			fprintf(stderr, "weft emu: --mpi: %d ranks, %" PRIu64 " events in %.2f s (the "
					"metadata %.2f s, the emulation %.2f s, the gather %.2f s, the merge "
					"and the outputs %.2f s); CPU of the ranks' workers: sum %.3f s, max "
					"%.3f s; rank 0's process CPU: the gather %.3f s, the merge and the "
					"outputs %.3f s\n", rk->nranks, nevents, now_s() - t0, t1 - t0,
					t2 - t1, t3 - t2, now_s() - t4, cpu, cpumax, c3 - c2,
					cpu_s(RUSAGE_SELF, 0) + cpu_s(RUSAGE_SELF, 1) - c4);
	}
	free(parts);
	free(lens);
	free(sums);
	free(slens);
	free(irecs);
	free(ilens);
	for (size_t f = 0; f < EMU_MAX_VIEWS; f++) {
		free(recs[f]);
		free(rlens[f]);
	}
	job = agree(rk, code, msg, err, errlen, who);
	if (job == RUN_SERIAL) {
		snprintf(e2, sizeof e2, "%s", err);
		par_free(&P);
		run_free(&R);
		memset(&R, 0, sizeof R);
		job = rank0_serial(o, rk, e2, err, errlen, who);
	}
out:
	par_free(&P);
	run_free(&R);
	free(mine);
	ranks_looms_free(rl, nrl);
	if (shadow != NULL)
		ranks_rmtree(shadow);
	free(shadow);
	return job;
}
