/* SPDX-License-Identifier: MIT */
/* cmd_check.c - `weft check PATH`: validate a trace strictly and summarise it. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_common.h"
#include "commands.h"
#include "driver.h"
#include "obs_format.h"

static const char usage[] =
	"Usage: weft check [-r] [-m] [--model FILE]... PATH\n"
	"\n"
	"Validate the trace at PATH strictly: stream discovery, every stream.json (or\n"
	"v1 metadata.json) and the rules that merge them (threads, processes, looms,\n"
	"CPUs, marks, clock offsets), and every event of every binary stream (headers,\n"
	"sizes, clocks that never go back except inside unordered regions OU[ ... OU],\n"
	"models that some stream requires). Nothing is printed for the events; on\n"
	"success, one summary line (which counts the clocks going back in regions).\n"
	"Streams cut short (the file ends inside an event or the stream header: a run\n"
	"killed mid-write) are all named, one line each (the file, the offset where\n"
	"the partial event starts, what runs past the end), after reading every other\n"
	"stream to its end; such a trace is invalid (weft emu --salvage emulates it).\n"
	"A stream that a crashed run wrote with WEFT_CRASH=flush is named with the\n"
	"signal (or the exit without ovni_proc_fini) and the clock of the cut; such a\n"
	"trace is invalid too (its threads did not end). Events a stream lacks are\n"
	"listed after the verdict, one line per stream and, for a flight recorder\n"
	"(WEFT_RING), one per run of overwritten events with its clock range.\n"
	"Without --models the rules of the models (what weft emu refuses: a mark\n"
	"popped out of order, a thread that never ends, ...) are not checked, and\n"
	"the summary says so.\n"
	"A PATH without a loom.* directory in its first 3 levels (not a trace) is\n"
	"warned about before every directory under it is read; on a terminal, a\n"
	"line shows the time spent after a second. Threads that did not end because\n"
	"the process writing them still runs on this host (its loom is named after\n"
	"this host and the pid exists) are named once, by that process.\n"
	"\n"
	"Options:\n"
	"  -m, --models  also run every check of the models the trace enables: the\n"
	"              emulation of weft emu, writing nothing; a trace it refuses\n"
	"              is invalid, with weft emu's message (exit status 1)\n"
	"  --model FILE  add the model FILE describes to the run's models\n"
	"              (repeatable; see docs/models.md): a malformed file is\n"
	"              refused (FILE:LINE: reason, exit status 1) before the\n"
	"              trace is read; its rules are checked with --models\n"
	"  -r, --rates  after the verdict, where the time goes: the events in each\n"
	"              twentieth of the run, with their rate in events per second\n"
	"  --follow-links  follow the symbolic links that lead out of PATH (by\n"
	"              default each is named in a warning and not followed)\n"
	"  -h, --help  show this help\n"
	"\n"
	"Exit status: 0 valid, 1 invalid (the first problem is printed; every cut\n"
	"stream), 2 usage error.\n";

/* ---- --rates: events over the run ----
 * Counts go into NFINE bins of a width that doubles (merging bins pairwise)
 * whenever an event falls past the last one, so the memory is fixed and the
 * span need not be known before the pass. A clock before the first event's
 * (gone back in an unordered region) counts in the first bin. */
#define NFINE 4096u
#define NSHOW 20u

struct rates {
	int any;
	int64_t first;
	uint64_t width; /* ns per fine bin, a power of two */
	uint64_t bins[NFINE];
};

static void rates_add(struct rates *r, int64_t clock)
{
	if (!r->any) {
		r->any = 1;
		r->first = clock;
		r->width = 1;
	}
	uint64_t d = clock > r->first ? (uint64_t) clock - (uint64_t) r->first : 0;
	while (d / r->width >= NFINE) {
		for (unsigned k = 0; k < NFINE / 2; k++)
			r->bins[k] = r->bins[2 * k] + r->bins[2 * k + 1];
		memset(&r->bins[NFINE / 2], 0, NFINE / 2 * sizeof r->bins[0]);
		r->width *= 2;
	}
	r->bins[d / r->width]++;
}

/* A duration in the unit that suits the span (ns, us, ms or s). */
static void fmt_dur(char *buf, size_t n, double ns, double span)
{
	if (span >= 1e9)
		snprintf(buf, n, "%.3f s", ns / 1e9);
	else if (span >= 1e6)
		snprintf(buf, n, "%.3f ms", ns / 1e6);
	else if (span >= 1e3)
		snprintf(buf, n, "%.3f us", ns / 1e3);
	else
		snprintf(buf, n, "%.0f ns", ns);
}

/* The run [first, last] in NSHOW equal parts (fewer for a span of fewer
 * nanoseconds), each with its events, events per second and a bar. */
static void rates_print(const struct rates *r, int64_t last)
{
	if (!r->any)
		return;
	/* the span is d + 1 nanoseconds: d + 1 itself wraps to 0 when the
	 * clocks go from INT64_MIN to INT64_MAX, so only d is computed */
	uint64_t d = last > r->first ? (uint64_t) last - (uint64_t) r->first : 0;
	unsigned nshow = d < NSHOW - 1 ? (unsigned) d + 1 : NSHOW;
	uint64_t part = d / nshow + 1; /* ceil((d + 1) / nshow) */
	double span = (double) d + 1.0;
	uint64_t counts[NSHOW] = { 0 };
	uint64_t most = 0;
	for (unsigned k = 0; k < NFINE; k++) {
		if (r->bins[k] == 0)
			continue;
		/* a fine bin goes to the part holding its start */
		uint64_t at = (uint64_t) k * r->width / part;
		counts[at < nshow ? at : nshow - 1] += r->bins[k];
	}
	for (unsigned k = 0; k < nshow; k++)
		if (counts[k] > most)
			most = counts[k];
	char a[32], b[32];
	fmt_dur(a, sizeof a, (double) part, span);
	printf("events over the run (%u parts of %s, from the first event at clock %" PRId64 "):\n",
			nshow, a, r->first);
	printf("  %12s    %12s  %12s  %14s\n", "from", "to", "events", "events/s");
	for (unsigned k = 0; k < nshow; k++) {
		fmt_dur(a, sizeof a, (double) k * (double) part, span);
		fmt_dur(b, sizeof b, (double) (k + 1) * (double) part, span);
		double rate = (double) counts[k] / ((double) part * 1e-9);
		unsigned bar = most > 0 ? (unsigned) ((counts[k] * 40 + most - 1) / most) : 0;
		printf("  %12s to %12s  %12" PRIu64 "  %14.0f  %.*s\n", a, b,
				counts[k], rate, (int) bar, "########################################");
	}
}

/* ---- what the streams lack (the weft.* keys, docs/reader.md "Losses") ---- */

/* The events stream i lacks, on stdout: a line for the stream, one per
 * overwritten run. */
static void print_lost(const struct weft_trace *t, size_t i, const char *json)
{
	struct weft_loss l;
	if (!weft_stream_loss(t, i, &l))
		return;
	if (l.dropped > 0)
		printf("weft check: %s: %" PRIu64 " event%s lost: emitted by signal handlers while "
				"the thread's buffer was busy, and could not be stored\n", json,
				l.dropped, l.dropped == 1 ? "" : "s");
	if (l.filter && l.filtered > 0) {
		char what[WEFT_FILTER_DESC_MAX];
		weft_filter_describe(&l, what, sizeof what);
		printf("weft check: %s: %" PRIu64 " event%s filtered at the source by %s: dropped on "
				"purpose, not lost\n", json, l.filtered, l.filtered == 1 ? "" : "s", what);
	}
	if (l.output_off)
		printf("weft check: %s: written with WEFT_OUTPUT=off: %" PRIu64 " bytes of events were "
				"recorded and none written (a run measuring the tracer's own cost)\n", json,
				l.unwritten_bytes);
	if (l.ring && l.lost_events > 0) {
		printf("weft check: %s: %" PRIu64 " event%s (%" PRIu64 " bytes) lost: overwritten "
				"by the flight recorder (WEFT_RING, %" PRIu64 " bytes) in %zu run%s:\n",
				json, l.lost_events, l.lost_events == 1 ? "" : "s", l.lost_bytes,
				l.ring_size, l.nruns, l.nruns == 1 ? "" : "s");
		struct weft_lost_run run;
		for (size_t k = 0; weft_stream_lost_run(t, i, k, &run); k++)
			printf("  clock %" PRId64 " to %" PRId64 ": %" PRIu64 " event%s (%" PRIu64
					" bytes)\n", run.first_sclock, run.last_sclock, run.events,
					run.events == 1 ? "" : "s", run.bytes);
	}
}

static void print_losses(const struct weft_trace *t)
{
	for (size_t i = 0; i < weft_nstreams(t); i++) {
		const char *json = weft_stream_json_path(t, i);
		print_lost(t, i, json ? json : "?");
	}
}

/* The options of weft check (cli_opts.h): add one here and in check_opt. */
enum { CHECK_RATES, CHECK_MODELS, CHECK_MODEL, CHECK_FOLLOW_LINKS };

static const struct cli_opt check_opts[] = {
	{ "rates", 'r', NULL, CHECK_RATES },
	{ "models", 'm', NULL, CHECK_MODELS },
	{ "model", 0, "FILE", CHECK_MODEL },
	{ "follow-links", 0, NULL, CHECK_FOLLOW_LINKS },
	{ NULL, 0, NULL, 0 },
};

struct check_args {
	int rates, models;
	struct cli_models mf;
};

static int check_opt(void *ctx, int id, const char *opt, const char *val)
{
	(void) opt;
	struct check_args *a = ctx;
	switch (id) {
	case CHECK_RATES: a->rates = 1; break;
	case CHECK_MODELS: a->models = 1; break;
	case CHECK_MODEL: a->mf.files[a->mf.n++] = val; break;
	case CHECK_FOLLOW_LINKS: cli_follow_links = 1; break;
	default: abort();
	}
	return 0;
}

/* ---- a path that does not look like a trace ----
 * A trace's streams are at loom.X/proc.PID/thread.TID under its root; the walk
 * (src/trace/discover.c) reads every directory under PATH, as the
 * reference does, which in a home directory takes long. So a shallow look
 * first: a loom.* directory at most LOOK_DEPTH levels under PATH (reading
 * at most LOOK_BUDGET entries), or PATH inside one. */
#define LOOK_DEPTH 3
#define LOOK_BUDGET 20000

static int is_loom(const char *name)
{
	return strncmp(name, "loom.", 5) == 0 && name[5] != '\0';
}

/* 1 if a loom.* directory is found under dir within depth levels (*budget
 * entries at most), 0 if not, -1 once the budget is spent; *ndirs counts
 * the directories seen. */
static int look_for_loom(const char *dir, int depth, long *budget, long *ndirs)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return 0;
	int found = 0;
	struct dirent *de;
	while (found == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (--*budget < 0) {
			found = -1;
			break;
		}
		size_t n = strlen(dir) + strlen(de->d_name) + 2;
		char *p = malloc(n);
		if (p == NULL)
			abort();
		snprintf(p, n, "%s/%s", dir, de->d_name);
		struct stat st;
		/* links are not followed here: the walk decides about them */
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
			++*ndirs;
			if (is_loom(de->d_name))
				found = 1;
			else if (depth > 1)
				found = look_for_loom(p, depth - 1, budget, ndirs);
		}
		free(p);
	}
	closedir(d);
	return found;
}

/* Whether path looks like a trace (or is not a directory, or holds no
 * directory: the walk says what it is, at once): a loom.* directory near
 * its top, or a component of its real path is one (a loom, process or
 * thread directory). */
static int looks_like_trace(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return 1;
	char *real = realpath(path, NULL);
	if (real != NULL) {
		int inside = 0;
		for (char *c = strtok(real, "/"); c != NULL && !inside; c = strtok(NULL, "/"))
			inside = is_loom(c);
		free(real);
		if (inside)
			return 1;
	}
	long budget = LOOK_BUDGET, ndirs = 0;
	return look_for_loom(path, LOOK_DEPTH, &budget, &ndirs) == 1 || ndirs == 0;
}

/* While the walk of such a path runs: after a second, a line on stderr
 * (a terminal) rewritten each second with the time spent. */
struct walk_progress {
	const char *path;
	pthread_t thread;
	atomic_int done;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int shown;
};

static void *walk_progress_main(void *arg)
{
	struct walk_progress *w = arg;
	double t0 = cli_now();
	pthread_mutex_lock(&w->mu);
	while (!atomic_load(&w->done)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&w->cv, &w->mu, &ts);
		if (atomic_load(&w->done))
			break;
		/* the cursor left at the line's start: a warning of the walk
		 * writes over it rather than after it */
		fprintf(stderr, "\rweft check: looking for the streams under %s: %.0f s   \r",
				w->path, cli_now() - t0);
		w->shown = 1;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Ends the line of w when on (its thread started). */
static void walk_progress_stop(struct walk_progress *w, int on)
{
	if (!on)
		return;
	pthread_mutex_lock(&w->mu);
	atomic_store(&w->done, 1);
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	if (w->shown)
		fputc('\n', stderr);
}

/* ---- a trace still being written ---- */

/* The pid of the process writing stream i when it is alive on this host (its
 * loom's host name is this machine's, up to the first '.', and the pid
 * exists: kill(pid, 0)), else 0. */
static int live_writer(const struct weft_trace *t, size_t i)
{
	const struct weft_stream *s = weft_stream_at(t, i);
	if (s == NULL || s->thread == NULL || s->thread->proc == NULL
			|| s->thread->proc->loom == NULL || s->thread->proc->pid <= 0)
		return 0;
	char host[256];
	if (gethostname(host, sizeof host) != 0)
		return 0;
	host[sizeof host - 1] = '\0';
	char *dot = strchr(host, '.');
	if (dot != NULL)
		*dot = '\0';
	const char *lh = s->thread->proc->loom->hostname;
	if (lh == NULL || strcmp(lh, host) != 0)
		return 0;
	int pid = s->thread->proc->pid;
	if (kill((pid_t) pid, 0) != 0 && errno != EPERM)
		return 0;
	return pid;
}

/* ---- --models: the emulation of weft emu, with no output ---- */

/* Runs the models' checks on the trace at path (weft_emulate() with no
 * output format: the driver creates no directory and writes no file).
 * CLI_EXIT_OK, or CLI_EXIT_TRACE after printing the refusal as weft emu
 * words it ("weft check: " and the driver's reason). */
static int check_models(const char *path, const struct weft_registry *models)
{
	static const char *const no_formats[] = { NULL };
	struct weft_emulate_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.path = path;
	o.formats = no_formats;
	o.models = models;
	o.warn = cli_warn;
	o.ctx = (void *) "check";
	o.progress = cli_progress_emulate;
	o.progress_every = cli_progress_every();
	struct cli_progress prog;
	cli_progress_start(&prog, "check", cli_obs_total_dir(path));
	char err[WEFT_ERR_MAX];
	int r = weft_emulate(&o, err, sizeof err);
	cli_progress_end(&prog);
	if (r != 0) {
		cli_message("check", "", err);
		return CLI_EXIT_TRACE;
	}
	return CLI_EXIT_OK;
}

/* A trace with clocks going back inside unordered regions: read as weft emu
 * reads it (sorted on read, every backwards clock an error), so that check
 * calls it valid exactly when the readers read it, and says why not with
 * their message. 0, or -1 (said). */
static int check_sorted(const char *path, struct weft_open_opts opts)
{
	opts.sort = WEFT_SORT_REGIONS;
	opts.backwards = WEFT_BACKWARDS_ERROR;
	opts.warn = NULL; /* said by the first pass */
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(path, &opts, err, sizeof err);
	if (t == NULL) {
		cli_message("check", "", err);
		return -1;
	}
	static struct weft_ref refs[256];
	long n;
	while ((n = weft_next_refs(t, refs, 256)) > 0)
		;
	if (n < 0)
		cli_message("check", "", weft_error(t));
	weft_close(t);
	return n < 0 ? -1 : 0;
}

int weft_cmd_check(int argc, char **argv)
{
	struct check_args a;
	memset(&a, 0, sizeof a);
	cli_models_init(&a.mf, argc);
	const char **pos = cli_operands(argc), *path = NULL;
	int npos = 0;
	int r = cli_opts_parse("check", check_opts, argc, argv, check_opt, &a, pos, &npos);
	if (r == CLI_OPTS_HELP)
		fputs(usage, stdout);
	if (r == 0)
		r = cli_one_path("check", pos, npos, &path);
	else
		free(pos);
	struct cli_models mf = a.mf;
	int set[2] = { a.rates, a.models };
	if (r != 0) {
		free(mf.files);
		return r == CLI_OPTS_HELP ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	/* a malformed model file is refused before the trace is read */
	struct weft_registry *models = cli_registry("check", &mf);
	if (models == NULL)
		return CLI_EXIT_TRACE;
	struct walk_progress wp;
	int wp_on = 0;
	if (!looks_like_trace(path)) {
		char msg[WEFT_ERR_MAX];
		snprintf(msg, sizeof msg, "%s does not look like a trace: no loom.* directory in "
				"its first %d levels (a trace's streams are in "
				"loom.*/proc.*/thread.*); every directory under it is read, looking "
				"for stream.json files", path, LOOK_DEPTH);
		cli_message("check", "warning: ", msg);
		wp.path = path;
		atomic_init(&wp.done, 0);
		wp.shown = 0;
		pthread_mutex_init(&wp.mu, NULL);
		pthread_cond_init(&wp.cv, NULL);
		wp_on = isatty(STDERR_FILENO)
			&& pthread_create(&wp.thread, NULL, walk_progress_main, &wp) == 0;
	}
	if (set[1]) {
		r = check_models(path, models);
		weft_registry_free(models);
		if (r != CLI_EXIT_OK) {
			walk_progress_stop(&wp, wp_on);
			return r;
		}
	} else {
		weft_registry_free(models);
	}
	/* Streams cut short, and threads that did not end (no ovni.finished:
	 * a run killed), are found quietly and all named at the end. */
	WEFT_OPTS(weft_open_opts, opts);
	opts.mode = WEFT_STRICT;
	opts.clock = WEFT_CLOCK_OFFSET;
	opts.backwards = WEFT_BACKWARDS_REGIONS;
	opts.cut = WEFT_CUT_QUIET;
	opts.accept_unfinished = 2;
	struct weft_trace *t;
	if (set[1]) {
		/* the emulation read it and warned already: the same warnings
		 * are not printed twice */
		char err[WEFT_ERR_MAX];
		opts.follow_links = cli_follow_links;
		t = weft_open(path, &opts, err, sizeof err);
		if (t == NULL)
			cli_message("check", "", err);
	} else {
		t = cli_open_opts("check", path, &opts);
	}
	walk_progress_stop(&wp, wp_on);
	if (t == NULL)
		return CLI_EXIT_TRACE;
	static struct weft_ref refs[256]; /* the reading checks; nothing to fill */
	long n;
	struct cli_progress prog;
	cli_progress_start(&prog, "check", cli_obs_total(t));
	static struct rates rates;
	while ((n = weft_next_refs(t, refs, 256)) > 0) {
		cli_progress_tick(&prog, weft_nevents(t));
		for (long k = 0; set[0] && k < n; k++)
			rates_add(&rates, weft_ref_sclock(&refs[k]));
	}
	cli_progress_end(&prog);
	r = n < 0 ? -1 : 0;
	/* Every stream cut short, in stream order (all known once the
	 * iteration ended; those found before an error otherwise). */
	size_t nbad = 0;
	int live[8]; /* the writers still running, each named once */
	size_t nlive = 0;
	for (size_t i = 0; i < weft_nstreams(t); i++) {
		struct weft_cut_info ci;
		const char *json = weft_stream_json_path(t, i);
		char msg[WEFT_ERR_MAX + 512];
		char why[256];
		struct weft_loss loss;
		int crashed = weft_stream_loss(t, i, &loss) && loss.end_by != WEFT_END_NORMAL;
		int pid = weft_stream_unfinished(t, i) && !crashed ? live_writer(t, i) : 0;
		if (pid != 0) {
			/* not ended because it is being written: said once per
			 * process, not for each of its threads */
			size_t k = 0;
			while (k < nlive && live[k] != pid)
				k++;
			if (k == nlive) {
				snprintf(msg, sizeof msg, "%s: the process %d that writes it is still "
						"running on this host; use weft dump --follow to read "
						"it as it grows", path, pid);
				cli_message("check", "", msg);
				if (nlive < sizeof live / sizeof live[0])
					live[nlive++] = pid;
			}
			nbad++;
			continue;
		}
		if (weft_stream_unfinished_why(t, i, why, sizeof why) && ++nbad) {
			snprintf(msg, sizeof msg, "%s: %s", json ? json : "?", why);
			cli_message("check", "", msg);
		}
		if (weft_stream_cut(t, i, &ci) && ++nbad) {
			snprintf(msg, sizeof msg, "%s: offset %" PRIu64 ": %s",
					weft_stream_at(t, i)->obs_path, ci.offset, ci.why);
			cli_message("check", "", msg);
		}
	}
	if (r == 0 && nbad > 0) {
		print_losses(t);
		weft_close(t);
		return CLI_EXIT_TRACE;
	}
	if (r < 0) {
		cli_message("check", "", weft_error(t));
		weft_close(t);
		return CLI_EXIT_TRACE;
	}
	if (weft_nbackwards(t, 1) > 0 && check_sorted(path, opts) < 0) {
		weft_close(t);
		return CLI_EXIT_TRACE;
	}
	size_t nthreads = 0, nprocs = 0;
	for (size_t i = 0; i < weft_nlooms(t); i++) {
		const struct weft_loom *l = weft_loom_at(t, i);
		nprocs += l->nprocs;
		for (size_t k = 0; k < l->nprocs; k++)
			nthreads += l->procs[k]->nthreads;
	}
	size_t ns = weft_nstreams(t), nl = weft_nlooms(t);
	uint64_t nev = weft_nevents(t);
	printf("weft check: %s: valid: %zu stream%s, %zu loom%s, %zu process%s, %zu thread%s, "
			"%" PRIu64 " event%s", path, ns, ns == 1 ? "" : "s", nl, nl == 1 ? "" : "s",
			nprocs, nprocs == 1 ? "" : "es", nthreads, nthreads == 1 ? "" : "s", nev,
			nev == 1 ? "" : "s");
	if (nev > 0)
		/* last >= first: the span fits an unsigned 64-bit value even
		 * from INT64_MIN to INT64_MAX */
		printf(", from %" PRId64 " to %" PRId64 " ns (span %" PRIu64 " ns)",
				weft_first_clock(t), weft_last_clock(t),
				(uint64_t) weft_last_clock(t) - (uint64_t) weft_first_clock(t));
	/* allowed, but worth knowing */
	uint64_t nun = weft_nbackwards(t, 1);
	if (nun > 0)
		printf("; %" PRIu64 " %s backwards inside %s (allowed; weft emu sorts %s on "
				"read)", nun, nun == 1 ? "clock goes" : "clocks go",
				nun == 1 ? "an unordered region" : "unordered regions",
				nun == 1 ? "it" : "them");
	/* what was not checked: the emulation (the models' rules) */
	printf(set[1] ? "; the models' rules were checked (--models)\n"
			: "; the models' rules were not checked (use --models)\n");
	print_losses(t);
	if (set[0])
		rates_print(&rates, weft_last_clock(t));
	weft_close(t);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "weft check: cannot write the output\n");
		return CLI_EXIT_TRACE;
	}
	return CLI_EXIT_OK;
}
