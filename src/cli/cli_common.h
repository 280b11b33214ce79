/* SPDX-License-Identifier: MIT */
/*
 * cli_common.h - shared bits of `weft dump`, `weft top` and `weft check`:
 * the values of shared options (--model FILE, --from, --to,
 * --follow-timeout; every option is read by cli_opts.c's parser), warnings
 * on stderr, a large output buffer.
 * Header-only because src/cli builds every cmd_*.c and nothing else.
 */
#ifndef WEFT_CLI_COMMON_H
#define WEFT_CLI_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "weft/weft.h"
#include "cli_escape.h"
#include "cli_opts.h"
#include "model.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_TRACE 1
#define CLI_EXIT_USAGE 2

/* Prints each library warning as "weft <cmd>: warning: <msg>" (msg escaped,
 * cli_escape.h), on a line of its own while a progress line is shown. */
static inline void cli_message_over(const char *cmd, const char *prefix, const char *msg);
static inline void cli_warn(void *ctx, const char *msg)
{
	cli_message_over((const char *) ctx, "warning: ", msg);
}

/* Opens the trace at path for subcommand cmd, with warnings printed by
 * cli_warn; on failure prints "weft <cmd>: <reason>" and returns NULL.
 * cut: what a stream cut short is (weft_open_opts.cut). */
/* --follow-links, set by the option callback of every command that takes it
 * (each command is one file: its parse and its opens see the same flag). */
static int cli_follow_links;

/* Opens the trace at path with the caller's options, warnings printed by
 * cli_warn; on failure prints "weft <cmd>: <reason>" and returns NULL. */
static inline struct weft_trace *cli_open_opts(const char *cmd, const char *path,
		struct weft_open_opts *opts)
{
	if (cli_follow_links)
		opts->follow_links = 1;
	opts->warn = cli_warn;
	opts->warn_ctx = (void *) cmd;
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(path, opts, err, sizeof err);
	if (t == NULL)
		cli_message(cmd, "", err);
	return t;
}

static inline struct weft_trace *cli_open_cut(const char *cmd, const char *path,
		enum weft_mode mode, enum weft_clock clock, enum weft_backwards backwards,
		enum weft_cut cut)
{
	WEFT_OPTS(weft_open_opts, opts);
	opts.cut = cut;
	opts.mode = mode;
	opts.clock = clock;
	opts.backwards = backwards;
	return cli_open_opts(cmd, path, &opts);
}

static inline struct weft_trace *cli_open(const char *cmd, const char *path, enum weft_mode mode,
		enum weft_clock clock, enum weft_backwards backwards)
{
	return cli_open_cut(cmd, path, mode, clock, backwards, WEFT_CUT_ERROR);
}

/* After reading every whole event of a trace with streams cut short (warned
 * one by one): the closing line, "weft <cmd>: N stream(s) cut short: every
 * whole event was <done>", and the exit status 1. */
static inline int cli_cut_end(const char *cmd, const struct weft_trace *t, const char *done)
{
	size_t n = weft_ncut(t);
	if (n == 0)
		return CLI_EXIT_OK;
	fprintf(stderr, "weft %s: %zu stream%s cut short: every whole event was %s\n", cmd, n,
			n == 1 ? "" : "s", done);
	return CLI_EXIT_TRACE;
}

/* The progress line, one for every command, on stderr only when it is a
 * terminal and the work has lasted more than a second, then rewritten at
 * most once a second (that second is WEFT_PROGRESS_SECONDS when set, from
 * 0.01 to 60: the tests draw the line of short runs with it):
 *   weft <cmd>: 42% (1.2 GB of 2.9 GB), 3.1 M events/s, 4 s left
 * The total is the sum of the streams' .obs sizes; the part done is an
 * estimate, the events read times 12 bytes (an event's header; payloads
 * make the real figure larger, so the percentage runs behind and ends
 * short of 100%; it never shows more than 99%). With no total (0):
 *   weft <cmd>: 1.2 GB, 3.1 M events/s
 * A phase with no count (cli_progress_phase) reads
 *   weft <cmd>: <what>, 12 s
 * The line ends in "\033[K" (the rest of an older, longer line cleared);
 * cli_warn clears it before a warning and draws it again after. Call
 * cli_progress_tick once per batch of events (it reads the clock there,
 * not per event) and cli_progress_end when done. */
struct cli_progress {
	const char *cmd;
	const char *what; /* cli_progress_phase's label, else NULL */
	double t0, last;
	double every;   /* seconds: the delay and the period (1, or the env's) */
	uint64_t total; /* bytes; 0: unknown */
	int tty, shown;
	char line[160]; /* the text on screen (shown) */
};

/* The progress line of this command (each command is one file), for
 * cli_warn; NULL when none is running. */
static struct cli_progress *cli_progress_cur;

#define CLI_PROGRESS_EV_BYTES 12

/* A run that writes files: handler stops it at each of the n signals sigs
 * (SA_RESTART), and SIGXFSZ is ignored, so that a file past RLIMIT_FSIZE is
 * a write error (EFBIG) that names it rather than the end of weft. */
static inline void cli_catch_stop(void (*handler)(int), const int *sigs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = handler;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
	}
	signal(SIGXFSZ, SIG_IGN);
}

/* cli_stop.c: the signal that asked the run to stop (0: none; given to the
 * driver as weft_emulate_opts.stop); cli_arm_stop arms SIGINT, SIGTERM and
 * SIGHUP with cli_catch_stop (a second one ends the program at once);
 * cli_stop_name names one of them. */
extern volatile sig_atomic_t cli_stop_sig;
void cli_arm_stop(void);
const char *cli_stop_name(int sig);

static inline double cli_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* The sum of the streams' .obs sizes of an open trace. */
static inline uint64_t cli_obs_total(const struct weft_trace *t)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < weft_nstreams(t); i++)
		sum += weft_stream_at(t, i)->obs_size;
	return sum;
}

/* The sum of the sizes of the *.obs files under the trace directory path
 * (loom.*, proc.*, thread.*: at most 4 levels, 100000 entries; what cannot
 * be read counts 0): the total of a command that does not open the trace. */
static inline uint64_t cli_obs_total_dir_at(const char *path, int depth, long *budget)
{
	DIR *d = opendir(path);
	if (d == NULL)
		return 0;
	uint64_t sum = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL && --*budget > 0) {
		if (e->d_name[0] == '.')
			continue;
		char sub[4096];
		if ((size_t) snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= sizeof sub)
			continue;
		struct stat st;
		if (lstat(sub, &st) != 0)
			continue;
		size_t n = strlen(e->d_name);
		if (S_ISREG(st.st_mode) && n > 4 && strcmp(e->d_name + n - 4, ".obs") == 0)
			sum += (uint64_t) st.st_size;
		else if (S_ISDIR(st.st_mode) && depth > 1)
			sum += cli_obs_total_dir_at(sub, depth - 1, budget);
	}
	closedir(d);
	return sum;
}

static inline uint64_t cli_obs_total_dir(const char *path)
{
	long budget = 100000;
	return cli_obs_total_dir_at(path, 4, &budget);
}

/* WEFT_PROGRESS_SECONDS when it is a number from 0.01 to 60, else 1. */
static inline double cli_progress_every(void)
{
	const char *s = getenv("WEFT_PROGRESS_SECONDS");
	char *end;
	double v = s != NULL ? strtod(s, &end) : 0.0;
	return s != NULL && end != s && *end == '\0' && v >= 0.01 && v <= 60.0 ? v : 1.0;
}

static inline void cli_progress_start(struct cli_progress *p, const char *cmd, uint64_t total)
{
	p->cmd = cmd;
	p->every = cli_progress_every();
	p->what = NULL;
	p->t0 = p->last = cli_now();
	p->total = total;
	p->tty = isatty(STDERR_FILENO);
	p->shown = 0;
	p->line[0] = '\0';
	cli_progress_cur = p;
}

/* A size in SI units: "812 B", "4.2 kB", "1.2 GB". */
static inline void cli_size(char *buf, size_t len, double b)
{
	static const char *const unit[] = { "kB", "MB", "GB", "TB" };
	if (b < 1000.0) {
		snprintf(buf, len, "%.0f B", b);
		return;
	}
	int u = 0;
	b /= 1000.0;
	while (b >= 999.95 && u < 3) {
		b /= 1000.0;
		u++;
	}
	snprintf(buf, len, "%.1f %s", b, unit[u]);
}

static inline void cli_progress_draw(struct cli_progress *p)
{
	fprintf(stderr, "\r%s\033[K", p->line);
	fflush(stderr);
	p->shown = 1;
}

/* The text of the line after secs seconds with nevents read. */
static inline void cli_progress_format(struct cli_progress *p, uint64_t nevents, double secs)
{
	if (p->what != NULL) {
		snprintf(p->line, sizeof p->line, "weft %s: %s, %.0f s", p->cmd, p->what, secs);
		return;
	}
	double done = (double) nevents * CLI_PROGRESS_EV_BYTES;
	double rate = secs > 0 ? (double) nevents / secs : 0.0;
	char d[32], tot[32];
	cli_size(d, sizeof d, done);
	if (p->total == 0) {
		snprintf(p->line, sizeof p->line, "weft %s: %s, %.1f M events/s", p->cmd, d,
				rate * 1e-6);
		return;
	}
	double total = (double) p->total;
	if (done > total * 0.99)
		done = total * 0.99;
	cli_size(d, sizeof d, done);
	cli_size(tot, sizeof tot, total);
	double bps = secs > 0 ? done / secs : 0.0;
	double left = bps > 0 ? (total - done) / bps : 0.0;
	snprintf(p->line, sizeof p->line, "weft %s: %u%% (%s of %s), %.1f M events/s, %.0f s left",
			p->cmd, (unsigned) (done / total * 100.0), d, tot, rate * 1e-6, left);
}

/* nevents: read so far; secs: since the work began (<0: since start). */
static inline void cli_progress_at(struct cli_progress *p, uint64_t nevents, double secs)
{
	if (!p->tty)
		return;
	double t = cli_now();
	if (secs < 0)
		secs = t - p->t0;
	if (secs <= p->every || (p->shown && t - p->last < p->every))
		return;
	p->last = t;
	cli_progress_format(p, nevents, secs);
	cli_progress_draw(p);
}

static inline void cli_progress_tick(struct cli_progress *p, uint64_t nevents)
{
	cli_progress_at(p, nevents, -1.0);
}

/* The same line (still on screen) counts a new pass over the trace. */
static inline void cli_progress_again(struct cli_progress *p, uint64_t total)
{
	p->what = NULL;
	p->total = total;
	p->t0 = cli_now();
}

/* From here on the line tells a phase with no count: "<what>, N s", the
 * seconds counted from this call. */
static inline void cli_progress_phase(struct cli_progress *p, const char *what)
{
	p->what = what;
	p->t0 = p->last = cli_now();
}

/* The line ends (a newline after it when it was shown). */
static inline void cli_progress_end(struct cli_progress *p)
{
	if (p->shown)
		fputc('\n', stderr);
	p->shown = 0;
	if (cli_progress_cur == p)
		cli_progress_cur = NULL;
}

/* A weft_emulate_opts.progress callback for the line cli_progress_start
 * began (cli_progress_cur): the driver calls it at most once a second. */
static inline void cli_progress_emulate(void *ctx, uint64_t nevents, double secs)
{
	(void) ctx;
	if (cli_progress_cur != NULL)
		cli_progress_at(cli_progress_cur, nevents, secs);
}

/* Prints "weft <cmd>: <prefix><msg>" (cli_message) on a line of its own:
 * a progress line on screen is cleared first and drawn again after. */
static inline void cli_message_over(const char *cmd, const char *prefix, const char *msg)
{
	struct cli_progress *p = cli_progress_cur;
	int redraw = p != NULL && p->shown;
	if (redraw)
		fputs("\r\033[K", stderr);
	cli_message(cmd, prefix, msg);
	if (redraw)
		cli_progress_draw(p);
}

/* The one PATH of a "[options] PATH" command among the npos operands
 * cli_opts_parse found (pos freed). 0, or 2 after printing why. */
static inline int cli_one_path(const char *cmd, const char **pos, int npos, const char **path)
{
	*path = npos > 0 ? pos[0] : NULL;
	int r = 0;
	if (npos > 1) {
		fprintf(stderr, "weft %s: more than one PATH ('%s' and '%s'); run "
				"`weft %s --help`\n", cmd, pos[0], pos[1], cmd);
		r = 2;
	} else if (npos == 0) {
		r = cli_usage_error(cmd, "missing PATH (a trace directory)");
	}
	free(pos);
	return r;
}

/* Room for the operands of argc arguments (cli_opts_parse). */
static inline const char **cli_operands(int argc)
{
	const char **pos = calloc((size_t) argc + 1, sizeof *pos);
	if (pos == NULL)
		abort();
	return pos;
}

/* A window bound (--from, --to): digits, a clock in ns; or a decimal number
 * with a unit (ns, us, ms, s, min), ns after the first event. 0, or 2 after
 * printing why. */
static inline int cli_parse_time(const char *cmd, const char *opt, const char *s, int64_t *out, int *rel)
{
	static const struct { const char *name; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 },
		{ "min", UINT64_C(60000000000) },
	};
	const char *p = s;
	if (*p == '-') {
		fprintf(stderr, "weft %s: %s '%s': a time cannot be negative\n", cmd, opt, s);
		return 2;
	}
	const char *ip = p;
	while (*p >= '0' && *p <= '9')
		p++;
	const char *ie = p, *fp = NULL, *fe = NULL;
	if (*p == '.') {
		fp = ++p;
		while (*p >= '0' && *p <= '9')
			p++;
		fe = p;
	}
	uint64_t mult = 0;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcmp(p, units[i].name) == 0)
			mult = units[i].ns;
	if (ie == ip || (fp != NULL && fe == fp) || (*p != '\0' && mult == 0)) {
		fprintf(stderr, "weft %s: %s '%s' is not a time: give a clock in nanoseconds (e.g. "
				"1500000) or a time after the trace's first event with a unit ns, us, "
				"ms, s or min (e.g. 2.5s); run `weft %s --help`\n", cmd, opt, s, cmd);
		return 2;
	}
	if (mult == 0 && fp != NULL) {
		fprintf(stderr, "weft %s: %s '%s': a clock (a number without a unit) is whole "
				"nanoseconds; give a unit for a time after the trace's first event "
				"(e.g. %ss)\n", cmd, opt, s, s);
		return 2;
	}
	*rel = mult != 0;
	if (mult == 0)
		mult = 1;
	uint64_t v = 0;
	int over = 0;
	for (const char *q = ip; q < ie; q++)
		over |= __builtin_mul_overflow(v, 10, &v) ||
			__builtin_add_overflow(v, (uint64_t) (*q - '0'), &v);
	over |= __builtin_mul_overflow(v, mult, &v);
	uint64_t scale = mult;
	for (const char *q = fp; fp != NULL && q < fe; q++) {
		uint64_t d = (uint64_t) (*q - '0');
		if (scale % 10 != 0) {
			if (d != 0) {
				fprintf(stderr, "weft %s: %s '%s': finer than a nanosecond\n", cmd, opt, s);
				return 2;
			}
			continue;
		}
		scale /= 10;
		over |= __builtin_add_overflow(v, d * scale, &v);
	}
	if (over || v > (uint64_t) INT64_MAX) {
		fprintf(stderr, "weft %s: %s '%s': out of range (at most %" PRId64 " ns)\n", cmd, opt, s,
				INT64_MAX);
		return 2;
	}
	*out = (int64_t) v;
	return 0;
}


/* --model FILE of every command that reads a trace (dump, top, check, emu,
 * sql, index): the model files of the run, in the order given. */
struct cli_models {
	const char **files;
	int n;
};

/* For cli_opts_parse: room for every --model of argc arguments. */
static inline void cli_models_init(struct cli_models *m, int argc)
{
	m->n = 0;
	m->files = calloc((size_t) argc + 1, sizeof *m->files);
	if (m->files == NULL)
		abort();
}

/* The registry of the run: the built-in models, then those of m's files (m
 * freed). NULL after printing "weft <cmd>: FILE:LINE: reason" (a malformed
 * model file, or one whose byte or name is taken). */
static inline struct weft_registry *cli_registry(const char *cmd, struct cli_models *m)
{
	char err[WEFT_ERR_MAX];
	struct weft_registry *r = weft_registry_new(err, sizeof err);
	for (int i = 0; r != NULL && i < m->n; i++) {
		if (weft_registry_add_file(r, m->files[i], err, sizeof err) != 0) {
			weft_registry_free(r);
			r = NULL;
		}
	}
	free(m->files);
	m->files = NULL;
	if (r == NULL)
		cli_message(cmd, "", err);
	return r;
}

/* -j N of an emulation (weft emu, weft view, weft sql): 1 to 4096 workers
 * into *jobs, 0, or 2 after printing why. */
static inline int cli_jobs(const char *cmd, const char *opt, const char *val, int *jobs)
{
	char *end;
	errno = 0;
	long j = strtol(val, &end, 10);
	if (end == val || *end != '\0' || errno != 0 || j < 1 || j > 4096) {
		char msg[WEFT_ERR_MAX];
		snprintf(msg, sizeof msg, "%s takes a number of workers from 1 to 4096, not '%s'",
				opt, val);
		cli_message(cmd, "", msg);
		return 2;
	}
	*jobs = (int) j;
	return 0;
}

/* The workers of -j when not given (0): the online CPUs. */
static inline int cli_jobs_default(int jobs)
{
	if (jobs > 0)
		return jobs;
	long nc = sysconf(_SC_NPROCESSORS_ONLN);
	return nc > 0 && nc < 4096 ? (int) nc : 1;
}

/* --from and --to of weft dump and weft top (cli_window_finish), and of
 * an emulation (cli_emu_window). */
struct cli_window {
	const char *from_arg, *to_arg;
	int64_t from, to;
	int from_rel, to_rel;
};

/* After cli_opts_parse set w->from_arg and w->to_arg (w zeroed before):
 * the times read and checked. 0, or 2 after printing why. */
static inline int cli_window_finish(const char *cmd, struct cli_window *w)
{
	if (w->from_arg != NULL && cli_parse_time(cmd, "--from", w->from_arg, &w->from,
				&w->from_rel) != 0)
		return 2;
	if (w->to_arg != NULL && cli_parse_time(cmd, "--to", w->to_arg, &w->to, &w->to_rel) != 0)
		return 2;
	if (w->from_arg != NULL && w->to_arg != NULL && w->from_rel == w->to_rel
			&& w->to < w->from) {
		fprintf(stderr, "weft %s: --to '%s' is before --from '%s'\n", cmd, w->to_arg,
				w->from_arg);
		return 2;
	}
	if (w->to_arg == NULL)
		w->to = INT64_MAX;
	return 0;
}

/* --from and --to of an emulation (weft emu, weft view): both of one kind
 * and the window not empty. After cli_opts_parse set w->from_arg and
 * w->to_arg (w zeroed before): 0, or 2 after printing why. */
static inline int cli_emu_window(const char *cmd, struct cli_window *w)
{
	if (w->from_arg != NULL && cli_parse_time(cmd, "--from", w->from_arg, &w->from,
				&w->from_rel) != 0)
		return 2;
	if (w->to_arg != NULL && cli_parse_time(cmd, "--to", w->to_arg, &w->to, &w->to_rel) != 0)
		return 2;
	if (w->from_arg == NULL || w->to_arg == NULL)
		return 0;
	if (w->from_rel != w->to_rel) {
		fprintf(stderr, "weft %s: --from '%s' and --to '%s' are of different kinds: give "
				"both as clocks (nanoseconds, no unit) or both with a unit (after the "
				"trace's first event)\n", cmd, w->from_arg, w->to_arg);
		return 2;
	}
	if (w->to <= w->from) {
		fprintf(stderr, "weft %s: --to '%s' is not after --from '%s': the window would be "
				"empty\n", cmd, w->to_arg, w->from_arg);
		return 2;
	}
	return 0;
}

/* After weft_open (raw clock order): a time with a unit becomes a clock
 * after the trace's first event, and --from seeks. */
static inline void cli_window_apply(struct weft_trace *t, struct cli_window *w)
{
	if (w->from_rel || w->to_rel) {
		int64_t start = 0;
		int any = 0;
		for (size_t i = 0; i < weft_nstreams(t); i++) {
			int64_t c;
			if (weft_stream_first_rclock(t, i, &c)) {
				if (!any || c < start)
					start = c;
				any = 1;
			}
		}
		if (w->from_rel)
			w->from = __builtin_add_overflow(start, w->from, &w->from) ? INT64_MAX : w->from;
		if (w->to_rel && w->to_arg != NULL)
			w->to = __builtin_add_overflow(start, w->to, &w->to) ? INT64_MAX : w->to;
	}
	if (w->from_arg != NULL)
		weft_seek(t, w->from);
}

/* A big stdout buffer written with write(2). */
struct cli_out {
	char *buf;
	size_t len, cap;
	int failed;
	int err;
};

static inline void cli_out_init(struct cli_out *o, size_t cap)
{
	o->buf = malloc(cap);
	if (o->buf == NULL)
		abort();
	o->len = 0;
	o->cap = cap;
	o->failed = 0;
	o->err = 0;
}

static inline void cli_out_flush(struct cli_out *o)
{
	size_t off = 0;
	while (off < o->len && !o->failed) {
		ssize_t r = write(STDOUT_FILENO, o->buf + off, o->len - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			o->failed = 1;
			o->err = errno;
			break;
		}
		off += (size_t) r;
	}
	o->len = 0;
}

/* Room for n more bytes (n <= cap). */
static inline char *cli_out_reserve(struct cli_out *o, size_t n)
{
	if (o->cap - o->len < n)
		cli_out_flush(o);
	return o->buf + o->len;
}

static inline void cli_out_put(struct cli_out *o, const char *s, size_t n)
{
	while (n > 0) {
		size_t room = o->cap - o->len;
		if (room == 0) {
			cli_out_flush(o);
			room = o->cap;
		}
		size_t k = n < room ? n : room;
		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
	}
}

/* Finishes the output; returns 0 or reports the write error and returns 1. */
static inline int cli_out_finish(struct cli_out *o, const char *cmd)
{
	cli_out_flush(o);
	free(o->buf);
	o->buf = NULL;
	if (o->failed) {
		fprintf(stderr, "weft %s: cannot write the output: %s\n", cmd, strerror(o->err));
		return 1;
	}
	return 0;
}

/* ---- --follow (weft dump, weft top): see docs/cli.md ---- */

#define CLI_FOLLOW_POLL_MS 20

static volatile sig_atomic_t cli_follow_stop;

static inline void cli_follow_on_sigint(int sig)
{
	(void) sig;
	cli_follow_stop = 1;
}

/* The value of --follow-timeout (ms, or a number with a unit ms, s or
 * min). 0, or 2 after printing why. */
static inline int cli_follow_timeout(const char *cmd, const char *v, unsigned *ms)
{
	char *end = NULL;
	errno = 0;
	double x = strtod(v, &end);
	double mul = 1;
	if (end != NULL && strcmp(end, "s") == 0)
		mul = 1000;
	else if (end != NULL && strcmp(end, "min") == 0)
		mul = 60000;
	else if (end == NULL || (strcmp(end, "ms") != 0 && *end != '\0'))
		x = -1;
	x *= mul;
	if (end == v || errno != 0 || !(x >= 1) || x > 86400000.0) {
		fprintf(stderr, "weft %s: --follow-timeout '%s' is not a time between 1 ms and 1 day "
				"(e.g. 500, 2s)\n", cmd, v);
		return 2;
	}
	*ms = (unsigned) x;
	return 0;
}

/* The follow loop: polls path every CLI_FOLLOW_POLL_MS (sleeping between
 * polls), gives each batch of safe events to each(ctx, evs, n) and, after
 * each poll, calls tick(ctx, final) (final: the last call). Ends when every
 * stream finished (0, or 1 with streams cut short), when the trace stopped
 * growing with unfinished streams (1, with a message naming them), on an
 * error (1), or on SIGINT (0, after what was safe). */
static inline int cli_follow(const char *cmd, const char *path, unsigned timeout_ms,
		void (*each)(void *ctx, const struct weft_event *evs, long n),
		int (*tick)(void *ctx, int final), void *ctx)
{
	WEFT_OPTS(weft_follow_opts, fo);
	fo.warn = cli_warn;
	fo.warn_ctx = (void *) cmd;
	fo.timeout_ms = timeout_ms;
	char err[WEFT_ERR_MAX];
	struct weft_follow *f = weft_follow_open(path, &fo, err, sizeof err);
	if (f == NULL) {
		cli_message(cmd, "", err);
		return CLI_EXIT_TRACE;
	}
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = cli_follow_on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old);
	static struct weft_event evs[256];
	int code = CLI_EXIT_OK;
	for (;;) {
		int st = weft_follow_poll(f);
		long n = 0;
		while (st >= 0 && (n = weft_follow_next(f, evs, 256)) > 0)
			each(ctx, evs, n);
		if (st < 0 || n < 0) {
			tick(ctx, 1);
			cli_message(cmd, "", weft_follow_error(f));
			code = CLI_EXIT_TRACE;
			break;
		}
		int final = st != WEFT_FOLLOW_LIVE || cli_follow_stop;
		if (tick(ctx, final) != 0) {
			code = CLI_EXIT_TRACE;
			break;
		}
		if (st == WEFT_FOLLOW_DONE) {
			size_t nc = weft_follow_ncut(f);
			if (nc > 0) {
				fprintf(stderr, "weft %s: %zu stream%s cut short: every whole event was read\n",
						cmd, nc, nc == 1 ? "" : "s");
				code = CLI_EXIT_TRACE;
			}
			break;
		}
		if (st == WEFT_FOLLOW_STOPPED) {
			size_t ns = weft_follow_nstreams(f), nun = 0;
			for (size_t i = 0; i < ns; i++)
				nun += !weft_follow_stream_done(f, i);
			if (ns == 0) {
				char esc[1024];
				weft_escape(path, strlen(path), esc, sizeof esc);
				fprintf(stderr, "weft %s: no stream appeared under '%s' in %g s\n", cmd,
						esc, timeout_ms / 1000.0);
			} else {
				fprintf(stderr, "weft %s: the trace stopped growing: nothing new for %g s "
						"with %zu unfinished stream%s (", cmd, timeout_ms / 1000.0,
						nun, nun == 1 ? "" : "s");
				size_t k = 0;
				for (size_t i = 0; i < ns; i++) {
					if (weft_follow_stream_done(f, i))
						continue;
					if (k++ == 8) {
						fprintf(stderr, ", ...");
						break;
					}
					char esc[1024];
					const char *rp = weft_follow_stream_at(f, i)->relpath;
					weft_escape(rp, strlen(rp), esc, sizeof esc);
					fprintf(stderr, "%s%s", k > 1 ? ", " : "", esc);
				}
				fprintf(stderr, "); every whole event read was printed\n");
			}
			code = CLI_EXIT_TRACE;
			break;
		}
		if (cli_follow_stop)
			break;
		struct timespec ts = { 0, CLI_FOLLOW_POLL_MS * 1000000L };
		nanosleep(&ts, NULL);
		if (cli_follow_stop) {
			/* what is safe now, then the end */
			continue;
		}
	}
	sigaction(SIGINT, &old, NULL);
	weft_follow_close(f);
	return code;
}

#endif
