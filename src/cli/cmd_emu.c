/* SPDX-License-Identifier: MIT */
/*
 * cmd_emu.c - `weft emu`: emulate a trace through the ovni model into
 * Paraver (thread/cpu .prv .pcf .row) and Perfetto (perfetto.pftrace)
 * timelines, and print a summary.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"

static void emu_usage(FILE *f)
{
	fprintf(f,
		"Usage: weft emu [--paraver] [--perfetto] [-o DIR] [--lint] PATH\n"
		"\n"
		"Emulate the trace at PATH (a trace directory) through the ovni model and\n"
		"write its timelines. With neither --paraver nor --perfetto, both are written.\n"
		"\n"
		"  --paraver     thread.prv/.pcf/.row and cpu.prv/.pcf/.row (Paraver)\n"
		"  --perfetto    perfetto.pftrace (Perfetto protobuf TrackEvents)\n"
		"  -o, --output DIR  write into DIR (created if missing) instead of PATH\n"
		"  --lint        also make weft's own, costlier checks\n"
		"  -q, --quiet   no summary on stdout\n"
		"  -v, --verbose information lines on stderr (burst statistics)\n"
		"  -h, --help    this help\n"
		"\n"
		"On success the summary (time per thread state, busy fraction per CPU) goes\n"
		"to stdout and the exit status is 0. An illegal event sequence stops the\n"
		"emulation with a message naming the stream, the event, its clock and the\n"
		"rule broken, and the exit status is 1 (the files written so far are\n"
		"closed properly); usage errors exit with 2. See docs/emu.md.\n");
}


#include "emu.h"
#include "out.h"

#define EMU_BATCH 256

static void warn_cb(void *ctx, const char *msg)
{
	(void) ctx;
	fprintf(stderr, "weft emu: warning: %s\n", msg);
}

static void info_cb(void *ctx, const char *msg)
{
	(void) ctx;
	fprintf(stderr, "weft emu: %s\n", msg);
}

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

/* The end of the summary: where the timelines are and how to open them. */
static void print_where(const char *dir, int paraver, int perfetto)
{
	const char *sep = dir[0] != '\0' && dir[strlen(dir) - 1] == '/' ? "" : "/";
	if (paraver)
		printf("Paraver: %s%sthread.prv, %s%scpu.prv (open with: wxparaver %s%sthread.prv)\n",
				dir, sep, dir, sep, dir, sep);
	if (perfetto)
		printf("Perfetto: %s%sperfetto.pftrace (open at https://ui.perfetto.dev, "
				"Open trace file)\n", dir, sep);
}

struct run {
	struct weft_trace *t;
	struct emu_sys sys;
	int sys_ok;
	struct emu *emu;
	struct out *outs[2];
	const struct weft_stream **streams;
	const struct weft_loom **looms;
	const struct weft_mark_type *marks;
	int64_t *first;
	int *has;
};

static void run_free(struct run *r)
{
	if (r->emu != NULL)
		emu_destroy(r->emu);
	if (r->sys_ok)
		emu_sys_free(&r->sys);
	if (r->t != NULL)
		weft_close(r->t);
	free(r->streams);
	free(r->looms);
	free((void *) r->marks);
	free(r->first);
	free(r->has);
}

int weft_cmd_emu(int argc, char **argv)
{
	int paraver = 0, perfetto = 0, lint = 0, quiet = 0, verbose = 0;
	const char *outdir = NULL;
	static const struct option longopts[] = {
		{ "paraver", no_argument, NULL, 'P' },
		{ "perfetto", no_argument, NULL, 'F' },
		{ "output", required_argument, NULL, 'o' },
		{ "lint", no_argument, NULL, 'l' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:lqvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'P': paraver = 1; break;
		case 'F': perfetto = 1; break;
		case 'o': outdir = optarg; break;
		case 'l': lint = 1; break;
		case 'q': quiet = 1; break;
		case 'v': verbose = 1; break;
		case 'h': emu_usage(stdout); return 0;
		default:
			fprintf(stderr, "weft emu: unknown or incomplete option '%s'; "
					"run `weft emu --help`\n", argv[optind - 1]);
			return 2;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "weft emu: expected one trace PATH; run `weft emu --help`\n");
		return 2;
	}
	if (!paraver && !perfetto)
		paraver = perfetto = 1;
	const char *path = argv[optind];
	if (outdir == NULL)
		outdir = path;

	struct run R = { 0 };
	char err[WEFT_ERR_MAX];
	int status = 1;
	struct weft_open_opts oo;
	memset(&oo, 0, sizeof oo);
	oo.mode = WEFT_STRICT;
	oo.warn = warn_cb;
	R.t = weft_open(path, &oo, err, sizeof err);
	if (R.t == NULL) {
		fprintf(stderr, "weft emu: %s\n", err);
		return 1;
	}
	size_t ns = weft_nstreams(R.t), nl = weft_nlooms(R.t), nm = weft_nmark_types(R.t);
	if (ns == 0) {
		fprintf(stderr, "weft emu: %s: no streams found (no stream.json)\n", path);
		run_free(&R);
		return 1;
	}
	R.streams = calloc(ns + 1, sizeof *R.streams);
	R.looms = calloc(nl + 1, sizeof *R.looms);
	struct weft_mark_type *marks = calloc(nm + 1, sizeof *marks);
	R.marks = marks;
	R.first = calloc(ns + 1, sizeof *R.first);
	R.has = calloc(ns + 1, sizeof *R.has);
	if (!R.streams || !R.looms || !marks || !R.first || !R.has) {
		fprintf(stderr, "weft emu: out of memory\n");
		run_free(&R);
		return 1;
	}
	for (size_t i = 0; i < ns; i++)
		R.streams[i] = weft_stream_at(R.t, i);
	for (size_t i = 0; i < nl; i++)
		R.looms[i] = weft_loom_at(R.t, i);
	for (size_t i = 0; i < nm; i++)
		marks[i] = *weft_mark_type_at(R.t, i);

	if (emu_check_requires(R.streams, ns, err, sizeof err) != 0 ||
			emu_sys_build(&R.sys, R.looms, nl, marks, nm, err, sizeof err) != 0) {
		fprintf(stderr, "weft emu: %s\n", err);
		run_free(&R);
		return 1;
	}
	R.sys_ok = 1;
	/* The first clock of every stream, known before the iteration. */
	for (size_t i = 0; i < ns; i++)
		R.has[i] = weft_stream_first_sclock(R.t, i, &R.first[i]);
	if (emu_clock_gate(R.streams, R.first, R.has, ns, err, sizeof err) != 0) {
		fprintf(stderr, "weft emu: %s\n", err);
		run_free(&R);
		return 1;
	}
	struct emu_opts eo = { lint, warn_cb, NULL, verbose ? info_cb : NULL };
	const struct emu_model_desc *models[] = { &emu_model_ovni };
	R.emu = emu_create(&R.sys, models, 1, &eo, err, sizeof err);
	if (R.emu == NULL) {
		fprintf(stderr, "weft emu: %s\n", err);
		run_free(&R);
		return 1;
	}
	if (mkdir_p(outdir) != 0) {
		fprintf(stderr, "weft emu: cannot create %s: %s\n", outdir, strerror(errno));
		run_free(&R);
		return 1;
	}
	size_t nouts = 0;
	if (paraver && (R.outs[nouts++] = out_paraver_open(outdir, R.emu, err, sizeof err)) == NULL)
		nouts--;
	if (nouts == (size_t) paraver && perfetto &&
			(R.outs[nouts++] = out_perfetto_open(outdir, R.emu, err, sizeof err)) == NULL)
		nouts--;
	if (nouts != (size_t) (paraver + perfetto)) {
		fprintf(stderr, "weft emu: %s\n", err);
		for (size_t i = 0; i < nouts; i++)
			out_close(R.outs[i], 0, err, sizeof err);
		run_free(&R);
		return 1;
	}
	for (size_t i = 0; i < nouts; i++) {
		struct emu_sink s = out_sink(R.outs[i]);
		emu_add_sink(R.emu, &s);
	}

	/* The loop. */
	static struct weft_event evs[EMU_BATCH];
	int r;
	double t0 = now_s(), last_progress = t0;
	int progress = 0;
	uint64_t n = 0;
	const char *fail = NULL;
	/* Events come in batches (one library call per batch). */
	long got;
	uint64_t next_check = 1u << 20;
	while ((got = weft_next_batch(R.t, evs, EMU_BATCH)) > 0) {
		for (long i = 0; i < got; i++) {
			if (emu_event(R.emu, &evs[i]) != 0) {
				fail = emu_error(R.emu);
				break;
			}
		}
		if (fail != NULL)
			break;
		n += (uint64_t) got;
		if (n >= next_check) {
			next_check = n + (1u << 20);
			double t = now_s();
			if (t - t0 > 2.0 && t - last_progress > 1.0) {
				fprintf(stderr, "\rweft emu: %.1f M events, %.2f M events/s ",
						(double) n / 1e6, (double) n / 1e6 / (t - t0));
				last_progress = t;
				progress = 1;
			}
		}
	}
	r = got < 0 ? -1 : 0;
	double t_loop = now_s();
	if (progress)
		fputc('\n', stderr);
	if (fail == NULL && r < 0)
		fail = weft_error(R.t);
	if (fail == NULL && emu_finish(R.emu) != 0)
		fail = emu_error(R.emu);
	if (emu_flush(R.emu) != 0 && fail == NULL)
		fail = emu_error(R.emu);
	if (fail != NULL)
		fprintf(stderr, "weft emu: %s\n", fail);
	else
		status = 0;
	for (size_t i = 0; i < nouts; i++) {
		if (out_close(R.outs[i], emu_duration(R.emu), err, sizeof err) != 0) {
			fprintf(stderr, "weft emu: %s\n", err);
			status = 1;
		}
	}
	double t_close = now_s();
	if (status == 0 && !quiet) {
		emu_summary(R.emu, stdout);
		print_where(outdir, paraver, perfetto);
	}
	if (progress || getenv("WEFT_EMU_TIMING") != NULL) {
		double dt = now_s() - t0;
		struct timespec cpu;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "weft emu: %" PRIu64 " events in %.2f s (%.2f M events/s; CPU: "
				"emulation thread %.2f s, process %.2f s user + %.2f s sys; "
				"loop %.2f s, close %.2f s)\n",
				emu_nevents(R.emu), dt,
				dt > 0 ? (double) emu_nevents(R.emu) / 1e6 / dt : 0.0,
				(double) cpu.tv_sec + (double) cpu.tv_nsec * 1e-9,
				(double) ru.ru_utime.tv_sec + (double) ru.ru_utime.tv_usec * 1e-6,
				(double) ru.ru_stime.tv_sec + (double) ru.ru_stime.tv_usec * 1e-6,
				t_loop - t0, t_close - t_loop);
	}
	run_free(&R);
	return status;
}
