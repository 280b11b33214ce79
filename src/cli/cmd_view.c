/* SPDX-License-Identifier: MIT */
/*
 * cmd_view.c - `weft view`: the emulated timelines as one self-contained
 * HTML page (src/view), served over HTTP on the loopback (--serve), or
 * drawn as pictures (--png/--svg/--pdf: view_picture.h). docs/view.md.
 */
#include <errno.h>
#include <inttypes.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "driver.h"
#include "model.h"
#include "obs_format.h"
#include "trace_cache.h"
#include "view.h"
#include "view_picture.h"
#include "weft_version.h"

#define VIEW_DEFAULT_BUDGET ((uint64_t) 64 << 20)
/* --serve's cache (src/view/cache.c): its name in the trace directory is
 * WEFT_VIEW_CACHE (src/format/obs_format.h, which readers pass over); its
 * extension in $XDG_CACHE_HOME/weft, and its format in the key (raised
 * with what it holds, so that a cache of an older weft is built again). */
#define VIEW_CACHE_EXT "view"
#define VIEW_CACHE_FORMAT 1

static void view_usage(FILE *f)
{
	fprintf(f,
		"Usage: weft view [-o FILE.html] [--from T0] [--to T1] [-a] [--model FILE]...\n"
		"                 [--budget SIZE] [--channel NAME] [-j N] [-q] TRACE\n"
		"       weft view --serve [--port N] [--bind 127.0.0.1] [--rebuild | --no-cache]\n"
		"                 [...] TRACE\n"
		"       weft view --png FILE | --svg FILE | --pdf FILE [--size WxH] [...] TRACE\n"
		"\n"
		"Emulate the trace at TRACE (as weft emu does, through the models it requires)\n"
		"and write its timelines as one HTML page that any browser opens from disk,\n"
		"with no network: every thread and CPU row (labelled as the .row files),\n"
		"coloured by a channel of the catalogue chosen on the page, counters as line\n"
		"tracks, lost intervals marked; zoom, pan, hover, selection, time per value\n"
		"and search. The page holds a summary pyramid of every row (drawing costs\n"
		"the pixels, not the events) and the intervals themselves up to the budget.\n"
		"\n"
		"  -o, --output FILE  the page (default: TRACE/view.html); written aside and\n"
		"                renamed over FILE once complete\n"
		"  --from T0, --to T1  the window [T0, T1] only (times as weft emu's)\n"
		"  -a, --all-models  enable every model, whatever ovni.require says (as\n"
		"                weft emu -a)\n"
		"  --model FILE  add the model described by FILE (repeatable; docs/models.md)\n"
		"  --budget SIZE the page's largest size (default 64MiB; SIZE in bytes, or with\n"
		"                K, M, G (KiB, MiB, GiB) or kB, MB, GB): beyond it the page holds\n"
		"                the summary of the largest rows only, and says so; the run keeps\n"
		"                no more intervals than fit it, so its memory does not grow with\n"
		"                the trace (--serve writes the others to an unlinked file\n"
		"                in $TMPDIR, from which it answers the page's tiles)\n"
		"  --channel NAME  the colour channel shown first (default ovni.thread.state)\n"
		"  -j, --jobs N  emulate with N workers (as weft emu -j; default: the online\n"
		"                CPUs): the page is the same whatever N\n"
		"  --serve       serve the page on http://127.0.0.1:PORT/ instead of writing\n"
		"                it: the page asks the server for the intervals it lacks, so\n"
		"                it stays exact at every zoom whatever the budget; stops on\n"
		"                SIGINT (Ctrl-C) or SIGTERM, exit 0. What it serves is kept\n"
		"                in TRACE/weft-view.cache (or in $XDG_CACHE_HOME/weft, else\n"
		"                ~/.cache/weft, when TRACE may not be written into) and\n"
		"                reused, without emulating again, while the trace, weft and\n"
		"                the options that change the page (-a, --model, --from,\n"
		"                --to, --budget) are the same\n"
		"  --port N      the server's port (default 0: a free one, printed)\n"
		"  --rebuild     with --serve: emulate the trace again and replace the cache\n"
		"                kept beside it, whether or not the trace changed\n"
		"  --no-cache    with --serve: neither read nor write the cache (the\n"
		"                intervals beyond the budget in an unlinked file in $TMPDIR)\n"
		"  --bind ADDR   only 127.0.0.1 (or localhost) is accepted: the server never\n"
		"                listens beyond the loopback\n"
		"  --png FILE, --svg FILE, --pdf FILE  draw the window as a picture instead\n"
		"  --size WxH    the picture's size in pixels\n"
		"  -q, --quiet   no line about the page written\n"
		"  -h, --help    this help\n"
		"\n"
		"Exit status: 0 on success, 1 when the trace or a model is refused (the\n"
		"message names the file) or a file cannot be written, 2 for usage errors,\n"
		"130 when SIGINT stops the emulation. See docs/view.md.\n");
}

enum { V_OUTPUT, V_FROM, V_TO, V_MODEL, V_BUDGET, V_CHANNEL, V_SERVE, V_PORT, V_BIND, V_PNG,
	V_SVG, V_PDF, V_SIZE, V_QUIET, V_JOBS, V_ALL, V_REBUILD, V_NO_CACHE };

static const struct cli_opt view_opts[] = {
	{ "output", 'o', "FILE", V_OUTPUT },
	{ "from", 0, "a time", V_FROM },
	{ "to", 0, "a time", V_TO },
	{ "model", 0, "FILE", V_MODEL },
	{ "budget", 0, "SIZE", V_BUDGET },
	{ "channel", 0, "NAME", V_CHANNEL },
	{ "serve", 0, NULL, V_SERVE },
	{ "port", 0, "N", V_PORT },
	{ "bind", 0, "ADDR", V_BIND },
	{ "png", 0, "FILE", V_PNG },
	{ "svg", 0, "FILE", V_SVG },
	{ "pdf", 0, "FILE", V_PDF },
	{ "size", 0, "WxH", V_SIZE },
	{ "quiet", 'q', NULL, V_QUIET },
	{ "jobs", 'j', "N", V_JOBS },
	{ "all-models", 'a', NULL, V_ALL },
	{ "rebuild", 0, NULL, V_REBUILD },
	{ "no-cache", 0, NULL, V_NO_CACHE },
	{ NULL, 0, NULL, 0 },
};

struct view_args {
	const char *output, *from, *to, *budget, *channel, *port, *bind, *png, *svg, *pdf, *size;
	int serve, quiet, jobs, all, rebuild, no_cache;
	struct cli_models models;
};

static int view_opt(void *ctx, int id, const char *opt, const char *val)
{
	struct view_args *a = ctx;
	switch (id) {
	case V_OUTPUT: a->output = val; break;
	case V_FROM: a->from = val; break;
	case V_TO: a->to = val; break;
	case V_MODEL: a->models.files[a->models.n++] = val; break;
	case V_BUDGET: a->budget = val; break;
	case V_CHANNEL: a->channel = val; break;
	case V_SERVE: a->serve = 1; break;
	case V_PORT: a->port = val; break;
	case V_BIND: a->bind = val; break;
	case V_PNG: a->png = val; break;
	case V_SVG: a->svg = val; break;
	case V_PDF: a->pdf = val; break;
	case V_SIZE: a->size = val; break;
	case V_QUIET: a->quiet = 1; break;
	case V_JOBS:
		if (cli_jobs("view", opt, val, &a->jobs) != 0)
			return 2;
		break;
	case V_ALL: a->all = 1; break;
	case V_REBUILD: a->rebuild = 1; break;
	case V_NO_CACHE: a->no_cache = 1; break;
	default: abort();
	}
	return 0;
}

/* SIZE: bytes, or with a unit. 0, or 2 after the message. */
static int parse_size(const char *s, uint64_t *out)
{
	static const struct { const char *u; uint64_t m; } units[] = {
		{ "", 1 }, { "B", 1 }, { "K", 1ull << 10 }, { "KiB", 1ull << 10 },
		{ "M", 1ull << 20 }, { "MiB", 1ull << 20 }, { "G", 1ull << 30 },
		{ "GiB", 1ull << 30 }, { "kB", 1000 }, { "MB", 1000000 }, { "GB", 1000000000 },
	};
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (end != s && s[0] != '-' && errno == 0)
		for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
			if (strcmp(end, units[i].u) == 0 && v <= UINT64_MAX / units[i].m) {
				*out = v * units[i].m;
				return 0;
			}
	fprintf(stderr, "weft view: --budget '%s' is not a size (bytes, or a number with K, M, "
			"G, KiB, MiB, GiB, kB, MB or GB); run `weft view --help`\n", s);
	return 2;
}

static void warn_cb(void *ctx, const char *msg)
{
	(void) ctx;
	cli_message_over("view", "warning: ", msg);
}

static struct out *open_view(void *ctx, const struct emu *emu, char *err, size_t errlen)
{
	return view_out_open(ctx, emu, err, errlen);
}

struct bound_ctx {
	const char *path;
	size_t spilled; /* tracks read from the temporary file or the cache */
	int cached;
};

static void on_bound(void *ctx, int port)
{
	const struct bound_ctx *b = ctx;
	printf("weft view: serving %s at http://127.0.0.1:%d/ (Ctrl-C to stop; %zu track%s "
			"beyond the budget, read from %s)\n", b->path, port, b->spilled,
			b->spilled == 1 ? "" : "s", b->cached ? "the cache" : "a temporary file");
	fflush(stdout);
}

/* --channel NAME is one of the run's channels: 0, or 2 after the message. */
static int check_channel(const struct view_data *vd, const char *name)
{
	if (name == NULL || view_has_channel(vd, name))
		return 0;
	size_t n = view_nchans(vd);
	const char **names = calloc(n + 1, sizeof *names);
	for (size_t i = 0; names != NULL && i < n; i++)
		names[i] = view_chan_name(vd, i);
	const char *s = names != NULL ? cli_suggest(name, names, n) : NULL;
	if (s != NULL)
		fprintf(stderr, "weft view: --channel '%s' is not a channel of this trace (did you "
				"mean '%s'?); `weft sql TRACE \"SELECT name FROM channel\"` lists them\n",
				name, s);
	else
		fprintf(stderr, "weft view: --channel '%s' is not a channel of this trace; `weft sql "
				"TRACE \"SELECT name FROM channel\"` lists them\n", name);
	free(names);
	return 2;
}

static int pictures(const struct view_args *a, const char *path)
{
	struct view_picture_req r;
	memset(&r, 0, sizeof r);
	r.trace = path;
	a->models.files[a->models.n] = NULL;
	r.models = a->models.n > 0 ? a->models.files : NULL;
	r.from = a->from;
	r.to = a->to;
	r.channel = a->channel;
	r.all_models = a->all;
	r.png = a->png;
	r.svg = a->svg;
	r.pdf = a->pdf;
	char err[WEFT_ERR_MAX];
	if (a->size != NULL && view_picture_parse_size(a->size, &r.width, &r.height, err,
			sizeof err) != 0) {
		fprintf(stderr, "weft view: %s\n", err);
		return 2;
	}
	if (view_picture_run(&r, err, sizeof err) != 0) {
		cli_message("view", "", err);
		return 1;
	}
	return 0;
}

/* Serves vd (freed): the exit status. cached: its spilled tracks are read
 * from the cache (else from a temporary file). */
static int serve(struct view_data *vd, const struct view_args *a, const char *path,
		uint64_t budget, int port, int cached)
{
	int status = check_channel(vd, a->channel);
	if (status != 0) {
		view_data_free(vd);
		return status;
	}
	int complete = 0;
	struct view_page_opts po = { path, budget, a->channel, 1, 0, &complete };
	char err[WEFT_ERR_MAX];
	cli_stop_sig = 0;
	cli_arm_stop();
	struct bound_ctx bc = { path, view_ndropped(vd), cached };
	int r = view_serve(vd, &po, port, &cli_stop_sig, on_bound, &bc, err, sizeof err);
	view_data_free(vd);
	if (r != 0) {
		cli_message("view", "", err);
		return 1;
	}
	return 0;
}

/* --serve's cache: its path (cpath), and the cache read back into *vd when
 * it was built from the same trace with the same options (else *key: the
 * key to build it with; NULL when the trace cannot be opened, the
 * emulation then saying why). 0, or the exit status after the message (a
 * path that is not a regular file is neither read nor replaced). */
static int serve_cache(const struct view_args *a, const char *path,
		const struct cli_window *win, uint64_t budget, const char *const *mnames, int nm,
		char *cpath, size_t cap, char **key, struct view_data **vd)
{
	char err[WEFT_ERR_MAX + 4400 + 64];
	if (trace_cache_path("view", path, WEFT_VIEW_CACHE, VIEW_CACHE_EXT, "give --no-cache",
			cpath, cap) != 0)
		return 1;
	if (view_cache_refused(cpath, err, sizeof err) != 0) {
		cli_message("view", "", err);
		return 1;
	}
	/* what the cache holds depends on: the window, the budget (which
	 * tracks are kept, which spilled), -a and the models (in the key's
	 * head); not -j (the same collection), nor --channel and the path
	 * (the page is made afresh from the collection at each start) */
	char head[128], opts[256];
	snprintf(head, sizeof head, "weft %s, view cache format %d", WEFT_VERSION,
			VIEW_CACHE_FORMAT);
	snprintf(opts, sizeof opts, "from %s %" PRId64 " %d\nto %s %" PRId64 " %d\nbudget %"
			PRIu64 "\n", a->from != NULL ? "yes" : "no", win->from, win->from_rel,
			a->to != NULL ? "yes" : "no", win->to, win->to_rel, budget);
	*key = trace_cache_key(path, head, a->all, mnames, nm, opts);
	if (*key == NULL || a->rebuild)
		return 0;
	char why[WEFT_ERR_MAX];
	int r = view_cache_load(cpath, *key, vd, why, sizeof why);
	if (r < 0) {
		snprintf(err, sizeof err, "%s: %s: built again", cpath, why);
		cli_message("view", "warning: ", err);
	} else if (r == 0) {
		free(*key);
		*key = NULL;
		if (isatty(STDERR_FILENO))
			fprintf(stderr, "weft view: %s: built before, the trace unchanged: reused "
					"(--rebuild builds it again)\n", cpath);
	}
	return 0;
}

static int cmd_view(int argc, char **argv, struct view_args *a)
{
	const char **pos = cli_operands(argc);
	int npos = 0;
	int pr = cli_opts_parse("view", view_opts, argc, argv, view_opt, a, pos, &npos);
	const char *path = pos[0];
	free(pos);
	if (pr == CLI_OPTS_HELP) {
		view_usage(stdout);
		return 0;
	}
	if (pr != 0)
		return pr;
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD)
	/* The interval arrays of the rows (collect.c) double as they grow:
	 * from 1 MiB on they are mappings of their own, which realloc moves
	 * with mremap instead of copying them into fresh pages (glibc's
	 * threshold would otherwise rise to 32 MiB; the copies and their page
	 * faults were a sixth of weft view's time). */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
	if (npos != 1) {
		fprintf(stderr, "weft view: expected one TRACE; run `weft view --help`\n");
		return 2;
	}
	int picture = a->png != NULL || a->svg != NULL || a->pdf != NULL;
	if (picture && (a->serve || a->output != NULL))
		return cli_usage_error("view", "--png, --svg and --pdf draw pictures: give neither "
				"--serve nor -o with them");
	if (a->size != NULL && !picture)
		return cli_usage_error("view", "--size is the size of a picture: give it with --png, "
				"--svg or --pdf");
	if (a->serve && a->output != NULL)
		return cli_usage_error("view", "--serve serves the page instead of writing it: give "
				"either --serve or -o");
	if ((a->port != NULL || a->bind != NULL) && !a->serve)
		return cli_usage_error("view", "--port and --bind are options of --serve");
	if ((a->rebuild || a->no_cache) && !a->serve)
		return cli_usage_error("view", "--rebuild and --no-cache are options of --serve "
				"(its cache)");
	if (a->rebuild && a->no_cache)
		return cli_usage_error("view", "--rebuild builds the cache that --no-cache leaves "
				"alone: give one of them");
	if (a->bind != NULL && strcmp(a->bind, "127.0.0.1") != 0
			&& strcmp(a->bind, "localhost") != 0) {
		fprintf(stderr, "weft view: --bind '%s' refused: the server listens on the loopback "
				"only (127.0.0.1)\n", a->bind);
		return 2;
	}
	long port = 0;
	if (a->port != NULL) {
		char *e;
		errno = 0;
		port = strtol(a->port, &e, 10);
		if (e == a->port || *e != '\0' || errno != 0 || port < 0 || port > 65535) {
			fprintf(stderr, "weft view: --port '%s' is not a port number (0 to 65535); run "
					"`weft view --help`\n", a->port);
			return 2;
		}
	}
	uint64_t budget = VIEW_DEFAULT_BUDGET;
	if (a->budget != NULL && parse_size(a->budget, &budget) != 0)
		return 2;
	if (a->output != NULL && a->output[0] == '\0')
		return cli_usage_error("view", "-o needs a FILE, not an empty name");
	struct cli_window win = { a->from, a->to, 0, 0, 0, 0 };
	if (cli_emu_window("view", &win) != 0)
		return 2;
	if (picture)
		return pictures(a, path);
	/* --serve's cache: the --model files' names kept for its key
	 * (cli_registry frees the list) */
	int cache = a->serve && !a->no_cache;
	const char **mnames = calloc((size_t) a->models.n + 1, sizeof *mnames);
	if (mnames == NULL) {
		fprintf(stderr, "weft view: out of memory\n");
		return 1;
	}
	int nm = a->models.n;
	for (int i = 0; i < nm; i++)
		mnames[i] = a->models.files[i];
	struct weft_registry *models = cli_registry("view", &a->models);
	if (models == NULL) {
		free(mnames);
		return 1;
	}
	char err[WEFT_ERR_MAX];
	char cpath[4400];
	char *key = NULL;
	struct view_data *vd = NULL;
	int status = cache ? serve_cache(a, path, &win, budget, mnames, nm, cpath, sizeof cpath,
			&key, &vd) : 0;
	free(mnames);
	if (status != 0) {
		weft_registry_free(models);
		return status;
	}
	if (vd != NULL) {
		/* built before, the trace unchanged: served without emulating */
		weft_registry_free(models);
		return serve(vd, a, path, budget, (int) port, 1);
	}
	vd = view_data_new();
	if (vd == NULL) {
		weft_registry_free(models);
		free(key);
		fprintf(stderr, "weft view: out of memory\n");
		return 1;
	}
	/* the collection keeps the intervals up to the budget (its memory
	 * then bounded whatever the trace); the server's writes the others to
	 * a file, to answer its tiles exactly: the cache being made in its
	 * directory, else a temporary file */
	view_data_keep(vd, budget);
	/* SIGINT from here on stops the run and removes what it made (the
	 * cache's temporary file is a named one where the file system has no
	 * O_TMPFILE) */
	cli_arm_stop();
	if (key != NULL) {
		char dir[4400];
		snprintf(dir, sizeof dir, "%s", cpath);
		char *slash = strrchr(dir, '/');
		if (slash != NULL)
			*slash = '\0';
		if (view_cache_begin(vd, slash != NULL ? dir : ".", key, err, sizeof err) != 0) {
			char msg[WEFT_ERR_MAX + 64];
			snprintf(msg, sizeof msg, "%s: served without the cache", err);
			cli_message("view", "warning: ", msg);
			free(key);
			key = NULL;
		}
	}
	int cached = key != NULL;
	free(key);
	if (a->serve && !cached && view_data_spill(vd, NULL, err, sizeof err) != 0) {
		weft_registry_free(models);
		view_data_free(vd);
		cli_message("view", "", err);
		return 1;
	}
	static const char *const no_formats[] = { NULL };
	struct weft_emulate_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.path = path;
	o.formats = no_formats;
	o.models = models;
	o.all_models = a->all;
	o.warn = warn_cb;
	o.has_from = a->from != NULL;
	o.has_to = a->to != NULL;
	o.from = win.from;
	o.to = win.to;
	o.from_rel = win.from_rel;
	o.to_rel = win.to_rel;
	o.from_arg = a->from;
	o.to_arg = a->to;
	o.open_output = open_view;
	o.hook_ctx = vd;
	/* the collection is a function of the records in time order (collect.c),
	 * so -j's workers make the page and the server's tracks (its temporary
	 * file holds each track's intervals in their order, wherever a track's
	 * chunks fall in it) */
	o.open_output_merged = 1;
	o.jobs = cli_jobs_default(a->jobs);
	o.stop = &cli_stop_sig;
	o.progress = cli_progress_emulate;
	o.progress_every = cli_progress_every();
	struct cli_progress prog;
	cli_progress_start(&prog, "view", cli_obs_total_dir(path));
	int r = weft_emulate(&o, err, sizeof err);
	cli_progress_end(&prog);
	weft_registry_free(models);
	if (r != 0 && cli_stop_sig != 0) {
		fprintf(stderr, "weft view: interrupted by %s; nothing written\n",
				cli_stop_name(cli_stop_sig));
		status = 128 + cli_stop_sig;
	} else if (r != 0) {
		cli_message("view", "", err);
		status = 1;
	} else {
		/* the cache made whatever --channel: it does not change it */
		if (cached && view_cache_commit(vd, cpath, err, sizeof err) != 0) {
			char msg[WEFT_ERR_MAX + 64];
			snprintf(msg, sizeof msg, "%s: served without keeping it", err);
			cli_message("view", "warning: ", msg);
			cached = 0;
		}
		status = check_channel(vd, a->channel);
	}
	if (status != 0) {
		view_data_free(vd);
		return status;
	}
	if (a->serve)
		return serve(vd, a, path, budget, (int) port, cached);
	int complete = 0;
	struct view_page_opts po = { path, budget, a->channel, 0, 0, &complete };
	char *def = NULL;
	const char *out = a->output;
	if (out == NULL) {
		size_t n = strlen(path) + sizeof "/view.html";
		def = malloc(n);
		if (def == NULL) {
			view_data_free(vd);
			fprintf(stderr, "weft view: out of memory\n");
			return 1;
		}
		snprintf(def, n, "%s/view.html", path);
		out = def;
	}
	uint64_t size = 0;
	r = view_write_file(vd, &po, out, &size, err, sizeof err);
	if (r != 0) {
		cli_message("view", "", err);
		status = 1;
	} else if (!a->quiet) {
		char sz[32], bud[32];
		cli_size(sz, sizeof sz, (double) size);
		cli_size(bud, sizeof bud, (double) budget);
		printf("%s: %zu rows, %" PRIu64 " intervals, %s (budget %s)%s\n", out,
				view_nrows(vd), view_nintervals(vd), sz, bud,
				complete ? "" : "; beyond the budget the page holds the summary of the "
				"largest rows only (weft view --serve shows every interval)");
	}
	free(def);
	view_data_free(vd);
	return status;
}

int weft_cmd_view(int argc, char **argv)
{
	struct view_args a;
	memset(&a, 0, sizeof a);
	cli_models_init(&a.models, argc);
	int r = cmd_view(argc, argv, &a);
	free(a.models.files);
	return r;
}
