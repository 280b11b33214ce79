/* SPDX-License-Identifier: MIT */
/* cmd_top.c - `weft top PATH`: how many events of each MCV, most frequent first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_chans.h"
#include "cli_common.h"
#include "commands.h"
#include "model.h"

static const char usage[] =
	"Usage: weft top [-d] [--model FILE]... [--from T0] [--to T1] PATH\n"
	"       weft top [-d] [--model FILE]... --follow [--follow-timeout T] PATH\n"
	"\n"
	"Count the events of the trace at PATH per MCV (model, category, value) and\n"
	"print one line per MCV, most frequent first, then by MCV, as ovnitop does:\n"
	"  MCV COUNT   (the count right-aligned in 10 columns)\n"
	"\n"
	"Options:\n"
	"  --model FILE  add the model FILE describes to the run's models\n"
	"              (repeatable; see docs/models.md): a malformed file is\n"
	"              refused (FILE:LINE: reason, exit status 1) before the\n"
	"              trace is read; the counts are by MCV whatever the models;\n"
	"              then, after a blank line and a title, per channel of\n"
	"              these models, its catalogue name and how many events\n"
	"              wrote it (set, push or pop), by name\n"
	"  --from T0   count from the first event whose raw clock is T0 or later,\n"
	"              without reading the trace before it (see `weft dump --help`)\n"
	"  --to T1     stop at the first event whose raw clock is after T1\n"
	"              A time is a clock, whole nanoseconds, or a number with a\n"
	"              unit ns, us, ms, s or min after the trace's first event\n"
	"  --follow    follow a trace that a running program is writing (see\n"
	"              `weft dump --help`): the counts are printed again at most\n"
	"              every 0.5 s while they change, and at the end; to a\n"
	"              terminal the screen is cleared and redrawn, otherwise each\n"
	"              refresh is a block of lines, the blocks separated by a blank\n"
	"              line (the last block is what `weft top` prints once the\n"
	"              trace is finished)\n"
	"  --follow-timeout T  with --follow: see `weft dump --help`\n"
	"  --follow-links  follow the symbolic links that lead out of PATH (by\n"
	"              default each is named in a warning and not followed)\n"
	"  -d, --describe  name each MCV after its count as `weft dump` does: its\n"
	"              model's description, each payload field shown as <name>\n"
	"              (nothing when no model describes the MCV)\n"
	"  -h, --help  show this help\n"
	"\n"
	"Metadata problems are warnings; corrupt binary data is an error (nothing is\n"
	"printed). A stream cut short (a run killed mid-write) is counted up to its\n"
	"last whole event with a warning, the other streams to their ends, and the\n"
	"exit status is 1 at the end. A clock going backwards within a stream is a warning (none inside\n"
	"an unordered region OU[ ... OU]) and the counting goes on.\n"
	"Exit status: 0 success, 1 trace error or a stream cut short, 2 usage error.\n";

struct slot {
	uint32_t key; /* MCV bytes + 1 << 24 when used */
	long count;
};

struct table {
	struct slot *s;
	size_t cap, n;
};

static uint32_t mcv_key(const uint8_t *mcv)
{
	return (uint32_t) mcv[0] << 16 | (uint32_t) mcv[1] << 8 | (uint32_t) mcv[2] | 1u << 24;
}

static void tab_add(struct table *t, uint32_t key, long by)
{
	if (2 * (t->n + 1) > t->cap) {
		struct table nt = { NULL, t->cap ? 2 * t->cap : 256, 0 };
		nt.s = calloc(nt.cap, sizeof *nt.s);
		if (nt.s == NULL)
			abort();
		for (size_t i = 0; i < t->cap; i++)
			if (t->s[i].key)
				tab_add(&nt, t->s[i].key, t->s[i].count);
		free(t->s);
		*t = nt;
	}
	size_t i = (key * 2654435761u) & (t->cap - 1);
	while (t->s[i].key && t->s[i].key != key)
		i = (i + 1) & (t->cap - 1);
	if (!t->s[i].key) {
		t->s[i].key = key;
		t->n++;
	}
	t->s[i].count += by;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return (x->key > y->key) - (x->key < y->key);
}

/* The description `weft dump` prints for the MCV of key, each field as
 * <name> (model.h's template: "%{name}", "%x{name}", "%%"), escaped. */
static void put_desc(FILE *out, uint32_t key, const struct weft_registry *models)
{
	char mcv[3] = { (char) (key >> 16), (char) (key >> 8), (char) key };
	const struct weft_event_spec *e = weft_model_event(models, mcv);
	if (e == NULL)
		return;
	size_t n = strlen(e->desc);
	char *text = malloc(n + 1), *w = text;
	if (text == NULL)
		abort();
	for (const char *s = e->desc; *s != '\0';) {
		const char *open = s + 1 + (s[1] == 'x'), *close;
		if (s[0] == '%' && s[1] == '%') {
			*w++ = '%';
			s += 2;
		} else if (s[0] == '%' && *open == '{' && (close = strchr(open, '}')) != NULL) {
			*w++ = '<';
			memcpy(w, open + 1, (size_t) (close - open - 1));
			w += close - open - 1;
			*w++ = '>';
			s = close + 1;
		} else {
			*w++ = *s++;
		}
	}
	char buf[1024], *heap;
	*w = '\0';
	fprintf(out, "  %s", cli_escaped(text, buf, sizeof buf, &heap));
	free(heap);
	free(text);
}

struct chan_count {
	char name[96];
	long count;
};

static int cmp_chan_count(const void *a, const void *b)
{
	return strcmp(((const struct chan_count *) a)->name, ((const struct chan_count *) b)->name);
}

/* After the table, when events of models given with --model were counted:
 * a blank line, a title and per channel of those models that an event
 * writes, its catalogue name (cli_chans.h) and how many events wrote it,
 * by name. */
static void put_chans(FILE *out, const struct slot *v, size_t nv,
		const struct weft_registry *models)
{
	struct chan_count *cc = NULL;
	size_t ncc = 0, cap = 0, width = 0;
	for (size_t i = 0; i < nv; i++) {
		char mcv[3] = { (char) (v[i].key >> 16), (char) (v[i].key >> 8), (char) v[i].key };
		const struct weft_model_spec *m;
		size_t ch[16];
		size_t n = cli_user_chans(models, mcv, &m, ch, sizeof ch / sizeof *ch);
		for (size_t j = 0; j < n; j++) {
			char name[96];
			cli_chan_name(m, ch[j], name, sizeof name);
			size_t k = 0;
			while (k < ncc && strcmp(cc[k].name, name) != 0)
				k++;
			if (k == ncc) {
				if (ncc == cap) {
					cap = cap ? 2 * cap : 16;
					cc = realloc(cc, cap * sizeof *cc);
					if (cc == NULL)
						abort();
				}
				snprintf(cc[ncc].name, sizeof cc[ncc].name, "%s", name);
				cc[ncc++].count = 0;
				if (strlen(name) > width)
					width = strlen(name);
			}
			cc[k].count += v[i].count;
		}
	}
	if (ncc > 0) {
		qsort(cc, ncc, sizeof *cc, cmp_chan_count);
		fprintf(out, "\nchannels of the --model models (events that write each):\n");
		for (size_t k = 0; k < ncc; k++) {
			char buf[4 * sizeof cc[k].name], *heap;
			fprintf(out, "%-*s %10ld\n", (int) width,
					cli_escaped(cc[k].name, buf, sizeof buf, &heap), cc[k].count);
			free(heap);
		}
	}
	free(cc);
}

/* The table as ovnitop prints it, into out (with -d, each MCV's
 * description after its count); 0, or -1 on a write error. */
static int print_table(const struct table *tab, FILE *out, int describe,
		const struct weft_registry *models)
{
	struct slot *v = calloc(tab->n ? tab->n : 1, sizeof *v);
	if (v == NULL)
		abort();
	size_t nv = 0;
	for (size_t i = 0; i < tab->cap; i++)
		if (tab->s[i].key)
			v[nv++] = tab->s[i];
	qsort(v, nv, sizeof *v, cmp_slot);
	for (size_t i = 0; i < nv; i++) {
		/* Escaped when not printable ASCII (the reference prints the
		 * bytes raw, up to a NUL). */
		char mcv[3] = { (char) (v[i].key >> 16), (char) (v[i].key >> 8), (char) v[i].key };
		char esc[16];
		weft_escape(mcv, 3, esc, sizeof esc);
		fprintf(out, "%s %10ld", esc, v[i].count);
		if (describe)
			put_desc(out, v[i].key, models);
		fputc('\n', out);
	}
	put_chans(out, v, nv, models);
	free(v);
	return fflush(out) != 0 || ferror(out) ? -1 : 0;
}

#define TOP_REFRESH_S 0.5

struct top_follow {
	struct table tab;
	int tty;
	int printed;     /* blocks printed */
	int changed;     /* counts changed since the last block */
	double last;     /* when the last block was printed */
	int describe;    /* -d */
	const struct weft_registry *models; /* for -d */
};

static void top_each(void *ctx, const struct weft_event *evs, long n)
{
	struct top_follow *tf = ctx;
	for (long i = 0; i < n; i++)
		tab_add(&tf->tab, mcv_key((const uint8_t *) evs[i].mcv), 1);
	if (n > 0)
		tf->changed = 1;
}

static int top_tick(void *ctx, int final)
{
	struct top_follow *tf = ctx;
	double now = cli_now();
	if (!tf->changed || (!final && tf->printed > 0 && now - tf->last < TOP_REFRESH_S))
		return 0;
	if (tf->tty)
		fputs("\033[H\033[2J", stdout);
	else if (tf->printed > 0)
		fputs("\n", stdout);
	tf->printed++;
	tf->changed = 0;
	tf->last = now;
	if (print_table(&tf->tab, stdout, tf->describe, tf->models) != 0) {
		fprintf(stderr, "weft top: cannot write the output\n");
		return -1;
	}
	return 0;
}

static int top_follow(const char *path, unsigned timeout_ms, int describe,
		const struct weft_registry *models)
{
	struct top_follow tf;
	memset(&tf, 0, sizeof tf);
	tf.describe = describe;
	tf.models = models;
	tf.tty = isatty(STDOUT_FILENO);
	int code = cli_follow("top", path, timeout_ms, top_each, top_tick, &tf);
	free(tf.tab.s);
	return code;
}

static int top_run(const char *path, const struct cli_window *win_, int follow,
		unsigned follow_ms, int describe, const struct weft_registry *models);

/* The options of weft top (cli_opts.h): add one here and in top_opt. */
enum { TOP_MODEL, TOP_FROM, TOP_TO, TOP_FOLLOW, TOP_FOLLOW_TIMEOUT, TOP_FOLLOW_LINKS,
	TOP_DESCRIBE };

static const struct cli_opt top_opts[] = {
	{ "model", 0, "FILE", TOP_MODEL },
	{ "from", 0, "a time", TOP_FROM },
	{ "to", 0, "a time", TOP_TO },
	{ "follow", 0, NULL, TOP_FOLLOW },
	{ "follow-timeout", 0, "a time", TOP_FOLLOW_TIMEOUT },
	{ "follow-links", 0, NULL, TOP_FOLLOW_LINKS },
	{ "describe", 'd', NULL, TOP_DESCRIBE },
	{ NULL, 0, NULL, 0 },
};

struct top_args {
	int follow, describe;
	unsigned follow_ms;
	struct cli_models mf;
	struct cli_window win;
};

static int top_opt(void *ctx, int id, const char *opt, const char *val)
{
	(void) opt;
	struct top_args *a = ctx;
	switch (id) {
	case TOP_MODEL: a->mf.files[a->mf.n++] = val; break;
	case TOP_FROM: a->win.from_arg = val; break;
	case TOP_TO: a->win.to_arg = val; break;
	case TOP_FOLLOW: a->follow = 1; break;
	case TOP_FOLLOW_TIMEOUT: return cli_follow_timeout("top", val, &a->follow_ms);
	case TOP_FOLLOW_LINKS: cli_follow_links = 1; break;
	case TOP_DESCRIBE: a->describe = 1; break;
	default: abort();
	}
	return 0;
}

int weft_cmd_top(int argc, char **argv)
{
	struct top_args a;
	memset(&a, 0, sizeof a);
	cli_models_init(&a.mf, argc);
	const char **pos = cli_operands(argc), *path = NULL;
	int npos = 0;
	int r = cli_opts_parse("top", top_opts, argc, argv, top_opt, &a, pos, &npos);
	if (r == CLI_OPTS_HELP)
		fputs(usage, stdout);
	if (r == 0)
		r = cli_one_path("top", pos, npos, &path);
	else
		free(pos);
	if (r == 0)
		r = cli_window_finish("top", &a.win);
	struct cli_models mf = a.mf;
	struct cli_window win = a.win;
	int follow = a.follow, describe = a.describe;
	unsigned follow_ms = a.follow_ms;
	if (r == 0 && !follow && follow_ms != 0) {
		fprintf(stderr, "weft top: --follow-timeout goes with --follow; run `weft top --help`\n");
		r = 2;
	}
	if (r == 0 && follow && (win.from_arg != NULL || win.to_arg != NULL)) {
		fprintf(stderr, "weft top: --follow does not go with --from or --to; run `weft top --help`\n");
		r = 2;
	}
	if (r != 0) {
		free(mf.files);
		return r == CLI_OPTS_HELP ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	/* a malformed model file is refused before the trace is read (top
	 * counts by MCV; -d describes them with the run's models) */
	struct weft_registry *models = cli_registry("top", &mf);
	if (models == NULL)
		return CLI_EXIT_TRACE;
	int code = top_run(path, &win, follow, follow_ms, describe, models);
	weft_registry_free(models);
	return code;
}

static int top_run(const char *path, const struct cli_window *win_, int follow,
		unsigned follow_ms, int describe, const struct weft_registry *models)
{
	struct cli_window win = *win_;
	int r;
	if (follow)
		return top_follow(path, follow_ms, describe, models);
	struct weft_trace *t = cli_open_cut("top", path, WEFT_LENIENT, WEFT_CLOCK_RAW,
			WEFT_BACKWARDS_WARN, WEFT_CUT_WARN);
	if (t == NULL)
		return CLI_EXIT_TRACE;
	cli_window_apply(t, &win);
	struct table tab = { NULL, 0, 0 };
	static struct weft_ref refs[256]; /* the MCV is all top needs */
	uint32_t last = 0;
	long run = 0, n;
	struct cli_progress prog;
	cli_progress_start(&prog, "top", cli_obs_total(t));
	int windowed = win.from_arg != NULL || win.to_arg != NULL, past = 0;
	while (!past && (n = weft_next_refs(t, refs, 256)) > 0) {
		cli_progress_tick(&prog, weft_nevents(t));
		for (long i = 0; i < n; i++) {
			if (__builtin_expect(windowed, 0)) {
				int64_t c = weft_ref_rclock(&refs[i]);
				if (c > win.to) {
					past = 1;
					n = 0;
					break;
				}
				if (c < win.from && win.from_arg != NULL)
					continue;
			}
			uint32_t k = mcv_key(refs[i].raw + 1);
			if (k == last) {
				run++;
				continue;
			}
			if (run)
				tab_add(&tab, last, run);
			last = k;
			run = 1;
		}
	}
	cli_progress_end(&prog);
	r = n < 0 ? -1 : 0;
	if (run)
		tab_add(&tab, last, run);
	if (r < 0) {
		cli_message("top", "", weft_error(t));
		free(tab.s);
		weft_close(t);
		return CLI_EXIT_TRACE;
	}
	int werr = print_table(&tab, stdout, describe, models);
	free(tab.s);
	if (werr != 0) {
		fprintf(stderr, "weft top: cannot write the output\n");
		weft_close(t);
		return CLI_EXIT_TRACE;
	}
	int code = cli_cut_end("top", t, "counted");
	weft_close(t);
	return code;
}
