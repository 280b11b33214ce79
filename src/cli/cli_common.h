/* SPDX-License-Identifier: MIT */
/*
 * cli_common.h - shared bits of `weft dump`, `weft top` and `weft check`:
 * argument parsing, warnings on stderr, a large output buffer.
 * Header-only because src/cli builds every cmd_*.c and nothing else.
 */
#ifndef WEFT_CLI_COMMON_H
#define WEFT_CLI_COMMON_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "weft/weft.h"
#include "cli_escape.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_TRACE 1
#define CLI_EXIT_USAGE 2

/* Prints each library warning as "weft <cmd>: warning: <msg>" (msg escaped,
 * cli_escape.h). */
static inline void cli_warn(void *ctx, const char *msg)
{
	cli_message((const char *) ctx, "warning: ", msg);
}

/* Opens the trace at path for subcommand cmd, with warnings printed by
 * cli_warn; on failure prints "weft <cmd>: <reason>" and returns NULL.
 * cut: what a stream cut short is (weft_open_opts.cut). */
static inline struct weft_trace *cli_open_cut(const char *cmd, const char *path,
		enum weft_mode mode, enum weft_clock clock, enum weft_backwards backwards,
		enum weft_cut cut)
{
	struct weft_open_opts opts = { 0 };
	opts.cut = cut;
	opts.mode = mode;
	opts.warn = cli_warn;
	opts.warn_ctx = (void *) cmd;
	opts.clock = clock;
	opts.backwards = backwards;
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(path, &opts, err, sizeof err);
	if (t == NULL)
		cli_message(cmd, "", err);
	return t;
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

/* A progress line on stderr for long reads: after 2 seconds, and then at
 * most once a second, "weft <cmd>: N events read (R M events/s)" is
 * rewritten in place; only when stderr is a terminal. Call
 * cli_progress_tick once per batch of events (it reads the clock there,
 * not per event) and cli_progress_end when done. */
struct cli_progress {
	const char *cmd;
	double t0, last;
	int tty, shown;
};

static inline double cli_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static inline void cli_progress_start(struct cli_progress *p, const char *cmd)
{
	p->cmd = cmd;
	p->t0 = p->last = cli_now();
	p->tty = isatty(STDERR_FILENO);
	p->shown = 0;
}

static inline void cli_progress_tick(struct cli_progress *p, uint64_t nevents)
{
	if (!p->tty)
		return;
	double t = cli_now();
	if (t - p->t0 < 2.0 || t - p->last < 1.0)
		return;
	p->last = t;
	p->shown = 1;
	fprintf(stderr, "\rweft %s: %" PRIu64 " events read (%.1f M events/s)   ", p->cmd, nevents,
			(double) nevents / (t - p->t0) * 1e-6);
}

static inline void cli_progress_end(struct cli_progress *p)
{
	if (p->shown)
		fprintf(stderr, "\n");
}

/* Parses "[-x] PATH"-style arguments: flags listed in `flags` (single letters,
 * long forms given in `longs`, same order) set flag_set[i]. Returns 0 and the
 * path, 1 if --help was asked (already printed), or 2 on a usage error
 * (already reported). */
static inline int cli_parse(int argc, char **argv, const char *cmd, const char *usage,
		const char *flags, const char *const *longs, int *flag_set, const char **path)
{
	*path = NULL;
	int only_paths = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!only_paths && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
			fputs(usage, stdout);
			return 1;
		}
		if (!only_paths && strcmp(a, "--") == 0) {
			only_paths = 1;
			continue;
		}
		if (!only_paths && a[0] == '-' && a[1] != '\0') {
			int found = 0;
			for (size_t k = 0; flags[k]; k++) {
				if ((a[1] == flags[k] && a[2] == '\0')
						|| (longs[k] && strcmp(a, longs[k]) == 0)) {
					flag_set[k] = 1;
					found = 1;
				}
			}
			if (!found) {
				fprintf(stderr, "weft %s: unknown option '%s'; run `weft %s --help`\n",
						cmd, a, cmd);
				return 2;
			}
			continue;
		}
		if (*path != NULL) {
			fprintf(stderr, "weft %s: more than one PATH ('%s' and '%s'); run "
					"`weft %s --help`\n", cmd, *path, a, cmd);
			return 2;
		}
		*path = a;
	}
	if (*path == NULL) {
		fprintf(stderr, "weft %s: missing PATH (a trace directory); run `weft %s --help`\n",
				cmd, cmd);
		return 2;
	}
	return 0;
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

#endif
