/* SPDX-License-Identifier: MIT */
/*
 * cmd_emu.c - `weft emu`: flags, help and messages around weft_emulate()
 * (src/driver), which runs the emulation into Paraver and Perfetto.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_common.h"
#include "commands.h"

#include "driver.h"
#include "cli_opts.h"
#include "cli_mpi.h"

/* The formats of -f and their parameters, from the registry (driver.h). */
static void formats_help(FILE *f)
{
	fprintf(f, "\nOutput formats of -f FORMAT[:KEY=VALUE,...] and their parameters:\n");
	for (size_t i = 0; i < weft_output_count(); i++) {
		struct weft_output_info o;
		if (weft_output_at(i, &o) != 0)
			continue;
		fprintf(f, "  %-13s %s\n", o.name, o.what);
		for (size_t k = 0; k < o.nparams; k++) {
			struct weft_output_param p;
			if (weft_output_param(i, k, &p) != 0)
				continue;
			fprintf(f, "      %s=", p.key);
			if (p.type != NULL)
				fprintf(f, "%s", p.type);
			for (size_t c = 0; p.choices != NULL && p.choices[c] != NULL; c++)
				fprintf(f, "%s%s", c ? "|" : "", p.choices[c]);
			fprintf(f, " (default %s)\n          %s\n", p.def, p.help);
		}
	}
}

static void emu_usage(FILE *f)
{
	fprintf(f,
		"Usage: weft emu [-f FORMAT[:KEY=VALUE,...]]... [--paraver] [--perfetto] [--no-cfg]\n"
		"                [-o DIR] [-b] [-a] [--model FILE]... [--lint] [--salvage]\n"
		"                [--partial] [--from T0] [--to T1] [-j N] [-q] [-v] PATH\n"
		"       mpirun -n R weft emu --mpi [--local] [OPTIONS] PATH\n"
		"\n"
		"Emulate the trace at PATH (a trace directory) through the models it requires\n"
		"(ovni always; nosv, nanos6, openmp, mpi, tampi, nodes, kernel and the models\n"
		"added with --model when a stream's ovni.require names them) and write their\n"
		"timelines. With no -f, --paraver nor --perfetto, Paraver and Perfetto are\n"
		"written.\n"
		"\n"
		"  -f, --format FORMAT[:KEY=VALUE,...]  write FORMAT with these parameters\n"
		"                (repeatable, a format once; the formats and parameters below)\n"
		"  --paraver     -f paraver: thread.prv/.pcf/.row and cpu.prv/.pcf/.row\n"
		"  --perfetto    -f perfetto: perfetto.pftrace (Perfetto protobuf TrackEvents)\n"
		"  --no-cfg      with the Paraver files, no cfg/ directory: by default it\n"
		"                holds a Paraver view file per view of each channel\n"
		"                (cfg/thread/, cfg/cpu/, cfg/breakdown/; docs/emu.md)\n"
		"  -o, --output DIR  write into DIR (created if missing) instead of PATH\n"
		"  -b, --breakdown   also the breakdown views of nosv, nanos6 and openmp\n"
		"                (<model>-breakdown.prv/.pcf/.row: one row per physical CPU)\n"
		"  -a, --all-models  enable every model, whatever ovni.require says\n"
		"  --model FILE  add the model described by FILE (repeatable; docs/models.md)\n"
		"  --list-models print the models weft knows and exit\n"
		"  -l            accepted for the reference's ovniemu scripts; changes nothing\n"
		"                (weft always makes the checks of ovniemu -l)\n"
		"  --lint        also make weft's own, costlier checks\n"
		"  --salvage     emulate a run killed mid-write (SIGKILL): every stream up to\n"
		"                its last whole event (a stream cut inside an event or its\n"
		"                header is a warning), threads without ovni.finished are\n"
		"                accepted, and every thread cut short is closed at its last\n"
		"                event, as if it had emitted OHe there (Dead, off its CPU;\n"
		"                its open tasks and stacks left), without the models' end\n"
		"                checks (for it only); the summary names each one with its\n"
		"                last clock. Without it, a stream cut short is refused\n"
		"                (exit 1), naming it and offset\n"
		"  --from T0, --to T1  write the timelines of the window [T0, T1] only: they\n"
		"                start with the state of every row at T0 (its time 0; the state\n"
		"                after every event up to T0, included) and hold the records of\n"
		"                the events after T0 up to T1, included; the .prv duration is\n"
		"                T1 - T0 (up to the last event if the trace ends first). Events\n"
		"                before T0 are emulated without records; reading stops at the\n"
		"                first event after T1, and then the models' end checks (threads\n"
		"                dead, stacks empty) are not made. A time is either a clock, whole\n"
		"                nanoseconds (e.g. 1500000: the trace clock with the loom offsets\n"
		"                applied, as weft check prints it; weft dump's raw clock when\n"
		"                there are no offsets), or a number with a unit ns, us, ms, s or\n"
		"                min: a time after the trace's first event (e.g. 2.5s). Both bounds\n"
		"                are of one kind; either may be left out (the start, the end)\n"
		"  --partial     when the models refuse an event, still write the timelines\n"
		"                up to it (as the reference does); the exit status is still 1\n"
		"  -j, --jobs N  emulate the looms with N workers at once (default: the online\n"
		"                CPUs; 1: serially), the outputs the same whatever N; used\n"
		"                for the Paraver and Perfetto outputs, the summary, -b and a\n"
		"                window (without -b or Perfetto), --salvage (not with --to)\n"
		"                (docs/emu.md, PARALLEL); any other run is serial\n"
		"  --mpi         under mpirun (or srun): the ranks emulate a share of the looms\n"
		"                each (with -j N workers, default 1) and rank 0 writes the\n"
		"                outputs, the same files (docs/emu.md, MPI); needs weft-mpi,\n"
		"                built where Open MPI is found\n"
		"  --local       with --mpi: each rank emulates the looms it finds under its\n"
		"                own PATH (its node's directory); the ranks exchange the\n"
		"                metadata\n"
		"  -q, --quiet   no summary on stdout\n"
		"  -v, --verbose information lines on stderr (burst statistics)\n"
		"  -h, --help    this help\n"
		"Threads that lost events (flight recorder WEFT_RING, events dropped by\n"
		"signal handlers) are emulated leniently, with a warning: after a loss a\n"
		"thread is in an unknown state, events the models refuse then are skipped\n"
		"and counted in the summary, its end checks are waived, and the lost\n"
		"intervals are Paraver type 90 and Perfetto slices \"lost events\". With\n"
		"--salvage, a stream cut by a crash (weft.cut) is closed at its cut clock.\n"
		"A trace filtered at the source (WEFT_FILTER) is refused where a model\n"
		"would be wrong (docs/emu.md, FILTERED TRACES).\n"
		"\n"
		"Every file is written aside (.NAME.weft-XXXXXX in the same directory) and\n"
		"renamed over NAME only when the whole run succeeded: a run that fails or is\n"
		"interrupted leaves the files of an earlier run as they were and no temporary.\n"
		"A NAME that is a symbolic link or not a regular file is refused.\n"
		"\n"
		"On success the summary (time per thread state, busy fraction per CPU, and per\n"
		"model where the time went) goes to stdout and the exit status is 0. An illegal\n"
		"event sequence stops the emulation with a message naming the stream, the\n"
		"event, its clock and the rule broken, and the exit status is 1 (nothing is\n"
		"written, unless --partial); a malformed model file is refused before the\n"
		"trace is read (FILE:LINE: reason); usage errors exit with 2. SIGINT, SIGTERM\n"
		"or SIGHUP stops the run (a second one ends it at once): exit 128 + the\n"
		"signal's number (130 for SIGINT).\n"
		"See docs/emu.md and docs/models.md.\n");
	formats_help(f);
}

#include "weft/weft.h"
#include "model.h"
#include "cli_escape.h"

static void warn_cb(void *ctx, const char *msg)
{
	(void) ctx;
	cli_message_over("emu", "warning: ", msg);
}

static void info_cb(void *ctx, const char *msg)
{
	(void) ctx;
	cli_message("emu", "", msg);
}

/* The end of the summary: where the timelines are and how to open them. */
static void print_where(const char *dir, const char *const *formats)
{
	const char *sep = dir[0] != '\0' && dir[strlen(dir) - 1] == '/' ? "" : "/";
	int paraver = 0, perfetto = 0;
	const char *db = NULL;
	for (size_t i = 0; formats[i] != NULL; i++) {
		size_t n = strcspn(formats[i], ":");
		paraver |= strncmp(formats[i], "paraver", n) == 0 && n == 7;
		perfetto |= strncmp(formats[i], "perfetto", n) == 0 && n == 8;
		if (strncmp(formats[i], "sqlite", n) == 0 && n == 6) {
			const char *f = strstr(formats[i], "file=");
			db = f != NULL && (f[-1] == ':' || f[-1] == ',') ? f + 5 : "timeline.db";
		}
	}
	if (paraver)
		printf("Paraver: %s%sthread.prv, %s%scpu.prv (open with: wxparaver %s%sthread.prv)\n",
				dir, sep, dir, sep, dir, sep);
	if (perfetto)
		printf("Perfetto: %s%sperfetto.pftrace (open at https://ui.perfetto.dev, "
				"Open trace file)\n", dir, sep);
	if (db != NULL)
		printf("SQLite: %s%s%.*s\n", dir, sep, (int) strcspn(db, ","), db);
}

static void list_models(const struct weft_registry *models)
{
	printf("%-8s %-4s %-8s %s\n", "model", "byte", "version", "what");
	for (size_t i = 0; i < weft_model_count(models); i++) {
		const struct weft_model_spec *m = weft_model_at(models, i);
		printf("%-8s %-4c %-8s %s (%s)\n", m->name, m->code, m->version, m->title, m->source);
	}
}

static int cmd_emu(int argc, char **argv, struct weft_registry *models);

int weft_cmd_emu(int argc, char **argv)
{
	char err[WEFT_ERR_MAX];
	struct weft_registry *models = weft_registry_new(err, sizeof err);
	if (models == NULL) {
		cli_message("emu", "", err);
		return 1;
	}
	int r = cmd_emu(argc, argv, models);
	weft_registry_free(models);
	return r;
}

/* The options of weft emu (cli_opts.h): add one here and in emu_opt. */
enum { EMU_FORMAT, EMU_PARAVER, EMU_NO_CFG, EMU_PERFETTO, EMU_OUTPUT, EMU_BREAKDOWN, EMU_ALL_MODELS, EMU_MODEL,
	EMU_LIST_MODELS, EMU_LINT, EMU_SALVAGE, EMU_PARTIAL, EMU_FROM, EMU_TO, EMU_JOBS, EMU_QUIET,
	EMU_VERBOSE, EMU_MPI, EMU_LOCAL, EMU_L };

static const struct cli_opt emu_opts[] = {
	{ "format", 'f', "FORMAT[:KEY=VALUE,...]", EMU_FORMAT },
	{ "paraver", 0, NULL, EMU_PARAVER },
	{ "no-cfg", 0, NULL, EMU_NO_CFG },
	{ "perfetto", 0, NULL, EMU_PERFETTO },
	{ "output", 'o', "a directory", EMU_OUTPUT },
	{ "breakdown", 'b', NULL, EMU_BREAKDOWN },
	{ "all-models", 'a', NULL, EMU_ALL_MODELS },
	{ "model", 0, "FILE", EMU_MODEL },
	{ "list-models", 0, NULL, EMU_LIST_MODELS },
	{ "lint", 0, NULL, EMU_LINT },
	{ "salvage", 0, NULL, EMU_SALVAGE },
	{ "partial", 0, NULL, EMU_PARTIAL },
	{ "from", 0, "a time", EMU_FROM },
	{ "to", 0, "a time", EMU_TO },
	{ "jobs", 'j', "N", EMU_JOBS },
	{ "quiet", 'q', NULL, EMU_QUIET },
	{ "verbose", 'v', NULL, EMU_VERBOSE },
	{ "mpi", 0, NULL, EMU_MPI },
	{ "local", 0, NULL, EMU_LOCAL },
	{ NULL, 'l', NULL, EMU_L },
	{ NULL, 0, NULL, 0 },
};

#define EMU_MAX_FORMATS 8

struct emu_args {
	int salvage, partial;
	int no_cfg, lint, quiet, verbose, bd, all, list;
	int jobs; /* -j; 0: the online CPUs (1 with --mpi) */
	int mpi, local; /* --mpi, --local */
	const char *formats[EMU_MAX_FORMATS + 1]; /* -f, --paraver, --perfetto: the specs */
	size_t nformats;
	const char *outdir, *from_arg, *to_arg;
	struct weft_registry *models;
};

/* The length of the format name at the start of spec (up to ':'). */
static size_t spec_name_len(const char *spec)
{
	const char *colon = strchr(spec, ':');
	return colon != NULL ? (size_t) (colon - spec) : strlen(spec);
}

/* Format i of the registry whose name is the first n bytes of s, or -1. */
static long format_index(const char *s, size_t n)
{
	for (size_t i = 0; i < weft_output_count(); i++) {
		struct weft_output_info o;
		if (weft_output_at(i, &o) == 0 && strlen(o.name) == n && strncmp(o.name, s, n) == 0)
			return (long) i;
	}
	return -1;
}

/* A usage error about -f: "weft emu: WHAT; run `weft emu --help`", exit 2. */
static int format_error(const char *what)
{
	return cli_usage_error("emu", what);
}

/* Checks -f's spec (a format of the registry and its parameters, the
 * nearest name suggested for a misspelt one) and adds it: 0, or 2. */
/* Whether the parameters ":KEY=VALUE,..." of a spec hold kv exactly. */
static int spec_has(const char *params, const char *kv)
{
	size_t n = strlen(kv);
	for (const char *p = *params == ':' ? params + 1 : NULL; p != NULL;) {
		size_t len = strcspn(p, ",");
		if (len == n && strncmp(p, kv, n) == 0)
			return 1;
		p = p[len] == ',' ? p + len + 1 : NULL;
	}
	return 0;
}

static int add_format(struct emu_args *a, const char *opt, const char *spec)
{
	char what[WEFT_ERR_MAX + 128];
	size_t nl = spec_name_len(spec);
	long fi = format_index(spec, nl);
	if (fi < 0) {
		const char *names[16] = { NULL };
		size_t n = weft_output_count() < 16 ? weft_output_count() : 16;
		for (size_t i = 0; i < n; i++) {
			struct weft_output_info o;
			names[i] = weft_output_at(i, &o) == 0 ? o.name : NULL;
		}
		char word[64];
		snprintf(word, sizeof word, "%.*s", (int) (nl < sizeof word ? nl : sizeof word - 1),
				spec);
		const char *sugg = nl < sizeof word ? cli_suggest(word, names, n) : NULL;
		if (sugg != NULL)
			snprintf(what, sizeof what, "unknown output format '%.*s' for %s (did you mean "
					"'%s'?)", (int) nl, spec, opt, sugg);
		else
			snprintf(what, sizeof what, "unknown output format '%.*s' for %s", (int) nl,
					spec, opt);
		return format_error(what);
	}
	struct weft_output_info o;
	weft_output_at((size_t) fi, &o);
	/* each KEY a parameter of the format (KEY=VALUE, separated by ',') */
	const char *keys[16] = { NULL };
	size_t nk = o.nparams < 16 ? o.nparams : 16;
	for (size_t k = 0; k < nk; k++) {
		struct weft_output_param p;
		keys[k] = weft_output_param((size_t) fi, k, &p) == 0 ? p.key : NULL;
	}
	for (const char *kv = spec[nl] == ':' ? spec + nl + 1 : NULL; kv != NULL && *kv != '\0';) {
		size_t len = strcspn(kv, ",");
		size_t kl = strcspn(kv, ",=");
		char key[64];
		snprintf(key, sizeof key, "%.*s", (int) (kl < sizeof key ? kl : sizeof key - 1), kv);
		int known = 0;
		for (size_t k = 0; k < nk; k++)
			known |= keys[k] != NULL && kl < sizeof key && strcmp(keys[k], key) == 0;
		if (!known && kl > 0) {
			const char *sugg = kl < sizeof key ? cli_suggest(key, keys, nk) : NULL;
			if (sugg != NULL)
				snprintf(what, sizeof what, "unknown parameter '%.*s' of format '%s' (did "
						"you mean '%s'?)", (int) kl, kv, o.name, sugg);
			else {
				size_t w = (size_t) snprintf(what, sizeof what, "unknown parameter '%.*s' "
						"of format '%s' (it takes", (int) kl, kv, o.name);
				for (size_t k = 0; k < nk && w < sizeof what; k++)
					w += (size_t) snprintf(what + w, sizeof what - w, "%s %s",
							k ? "," : "", keys[k]);
				if (w < sizeof what)
					snprintf(what + w, sizeof what - w, ")");
			}
			return format_error(what);
		}
		kv = kv[len] == ',' ? kv + len + 1 : NULL;
	}
	/* the values (and a key given twice or without one): the registry's */
	char err[WEFT_ERR_MAX];
	if (weft_output_check(spec, err, sizeof err) != 0)
		return format_error(err);
	for (size_t i = 0; i < a->nformats; i++)
		if (spec_name_len(a->formats[i]) == nl && strncmp(a->formats[i], spec, nl) == 0) {
			snprintf(what, sizeof what, "output format '%s' given twice (%s once per "
					"format)", o.name, opt);
			return format_error(what);
		}
	if (a->nformats == EMU_MAX_FORMATS)
		return format_error("too many output formats");
	a->formats[a->nformats++] = spec;
	return 0;
}

static int emu_opt(void *ctx, int id, const char *opt, const char *val)
{
	struct emu_args *a = ctx;
	char err[WEFT_ERR_MAX];
	switch (id) {
	case EMU_FORMAT: return add_format(a, opt, val);
	case EMU_PARAVER: return add_format(a, opt, "paraver");
	case EMU_NO_CFG: a->no_cfg = 1; break;
	case EMU_PERFETTO: return add_format(a, opt, "perfetto");
	case EMU_OUTPUT: a->outdir = val; break;
	case EMU_BREAKDOWN: a->bd = 1; break;
	case EMU_ALL_MODELS: a->all = 1; break;
	case EMU_L: break;
	case EMU_LIST_MODELS: a->list = 1; break;
	case EMU_LINT: a->lint = 1; break;
	case EMU_SALVAGE: a->salvage = 1; break;
	case EMU_PARTIAL: a->partial = 1; break;
	case EMU_FROM: a->from_arg = val; break;
	case EMU_TO: a->to_arg = val; break;
	case EMU_JOBS:
		if (cli_jobs("emu", opt, val, &a->jobs) != 0)
			return 2;
		break;
	case EMU_QUIET: a->quiet = 1; break;
	case EMU_VERBOSE: a->verbose = 1; break;
	case EMU_MPI: a->mpi = 1; break;
	case EMU_LOCAL: a->local = 1; break;
	case EMU_MODEL:
		/* a malformed model file: exit status 1, as any other */
		if (weft_registry_add_file(a->models, val, err, sizeof err) != 0) {
			cli_message("emu", "", err);
			return 1;
		}
		break;
	default: abort();
	}
	return 0;
}

/* models: the run's registry, to which --model adds. */
static int cmd_emu(int argc, char **argv, struct weft_registry *models)
{
	struct emu_args ea;
	memset(&ea, 0, sizeof ea);
	ea.models = models;
	const char **pos = cli_operands(argc);
	int npos = 0;
	int pr = cli_opts_parse("emu", emu_opts, argc, argv, emu_opt, &ea, pos, &npos);
	const char *path = pos[0];
	free(pos);
	if (pr == CLI_OPTS_HELP) {
		emu_usage(stdout);
		return 0;
	}
	if (pr != 0)
		return pr;
	int salvage = ea.salvage, partial = ea.partial;
	int lint = ea.lint, quiet = ea.quiet;
	int verbose = ea.verbose, bd = ea.bd, all = ea.all;
	const char *outdir = ea.outdir, *from_arg = ea.from_arg, *to_arg = ea.to_arg;
	char err[WEFT_ERR_MAX];
	if (ea.list) {
		list_models(models);
		return 0;
	}
	if (npos != 1) {
		fprintf(stderr, "weft emu: expected one trace PATH; run `weft emu --help`\n");
		return 2;
	}
	if (ea.local && !ea.mpi)
		return cli_usage_error("emu", "--local goes with --mpi");
#ifndef WEFT_CLI_MPI
	if (ea.mpi)
		return cli_emu_mpi_exec(argc, argv);
#endif
	if (ea.nformats == 0) {
		ea.formats[ea.nformats++] = "paraver";
		ea.formats[ea.nformats++] = "perfetto";
	}
	/* the Paraver files come with their view files (cfg/) unless --no-cfg */
	int has_paraver = 0, has_cfg = 0;
	for (size_t i = 0; i < ea.nformats; i++) {
		size_t nl = spec_name_len(ea.formats[i]);
		/* paraver:aux=no asks for the .prv files only: no view files either */
		has_paraver |= nl == 7 && strncmp(ea.formats[i], "paraver", 7) == 0 &&
				!spec_has(ea.formats[i] + nl, "aux=no");
		has_cfg |= nl == 11 && strncmp(ea.formats[i], "paraver-cfg", 11) == 0;
	}
	if (has_paraver && !has_cfg && !ea.no_cfg && ea.nformats < EMU_MAX_FORMATS)
		ea.formats[ea.nformats++] = "paraver-cfg";
	ea.formats[ea.nformats] = NULL;
	if (outdir != NULL && outdir[0] == '\0') {
		fprintf(stderr, "weft emu: -o needs a directory, not an empty name; run "
				"`weft emu --help`\n");
		return 2;
	}
	struct cli_window win = { from_arg, to_arg, 0, 0, 0, 0 };
	if (cli_emu_window("emu", &win) != 0)
		return 2;
	struct weft_emulate_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.path = path;
	o.outdir = outdir;
	o.formats = ea.formats;
	o.lint = lint;
	o.salvage = salvage;
	o.has_from = from_arg != NULL;
	o.has_to = to_arg != NULL;
	o.from = win.from;
	o.to = win.to;
	o.from_rel = win.from_rel;
	o.to_rel = win.to_rel;
	o.from_arg = from_arg;
	o.to_arg = to_arg;
	o.breakdown = bd;
	o.all_models = all;
	o.models = models;
	o.warn = warn_cb;
	o.info = verbose ? info_cb : NULL;
	o.progress = cli_progress_emulate;
	o.progress_every = cli_progress_every();
	o.summary = quiet ? NULL : stdout;
	o.stop = &cli_stop_sig;
	o.keep_partial = partial;
	if (ea.jobs == 0 && ea.mpi)
		ea.jobs = 1; /* ranks share the nodes' cores */
	o.jobs = cli_jobs_default(ea.jobs);
	cli_arm_stop();
	struct cli_progress prog;
	cli_progress_start(&prog, "emu", cli_obs_total_dir(path));
#ifdef WEFT_CLI_MPI
	if (ea.mpi) {
		cli_progress_end(&prog);
		int rank = 0;
		int code = cli_emu_mpi(&o, ea.local, &rank);
		/* the summary and where the files are: rank 0's, once */
		if (code == 0 && !quiet && rank == 0)
			print_where(outdir ? outdir : path, ea.formats);
		return code;
	}
#endif
	int r = weft_emulate(&o, err, sizeof err);
	cli_progress_end(&prog);
	if (r != 0 && cli_stop_sig != 0) {
		fprintf(stderr, "weft emu: interrupted by %s; nothing written (the files of an "
				"earlier run are left as they were)\n", cli_stop_name(cli_stop_sig));
		return 128 + cli_stop_sig;
	}
	if (r != 0) {
		cli_message("emu", "", err);
		return 1;
	}
	if (!quiet)
		print_where(outdir ? outdir : path, ea.formats);
	return 0;
}
