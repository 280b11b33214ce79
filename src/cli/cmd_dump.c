/* SPDX-License-Identifier: MIT */
/* cmd_dump.c - `weft dump [-x] PATH`: every event, in clock order, one per line. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "model.h"

static const char usage[] =
	"Usage: weft dump [-x] [--sort] [--model FILE]... [--from T0] [--to T1] PATH\n"
	"       weft dump [-x] [--model FILE]... --follow [--follow-timeout T] PATH\n"
	"\n"
	"Print every event of the trace at PATH (a trace directory, a directory inside\n"
	"it, or one stream directory) in one global order by raw clock, one per line:\n"
	"  CLOCK  MCV  STREAM  DESCRIPTION\n"
	"as ovnidump does: the raw clock right-aligned in 10 columns, the model,\n"
	"category and value bytes, the stream directory relative to PATH, then the\n"
	"event decoded by its model's table (or its payload bytes if no table knows it).\n"
	"\n"
	"Options:\n"
	"  -x, --hex   print the payload bytes as :xx instead of decoding them\n"
	"              (a jumbo event: its 4-byte size, then its data)\n"
	"  --sort      sort the events of unordered regions (OU[ ... OU]) into place\n"
	"              while reading, as `weft sort` would sort the files (which stay\n"
	"              as they are)\n"
	"  --model FILE  also decode the events of the model FILE describes\n"
	"              (repeatable; see docs/models.md)\n"
	"  --from T0   start at the first event whose raw clock is T0 or later,\n"
	"              without reading the trace before it (the stream indexes,\n"
	"              stream.idx, are used; a stream without a usable one is read\n"
	"              from its start, with a warning; `weft index` writes them)\n"
	"  --to T1     stop at the first event whose raw clock is after T1\n"
	"              A time is a clock, whole nanoseconds (e.g. 1500000), or a\n"
	"              number with a unit ns, us, ms, s or min: a time after the\n"
	"              trace's first event (e.g. 2.5s)\n"
	"  --follow    follow a trace that a running program is writing (libovni\n"
	"              with WEFT_FLUSH_MS set, without OVNI_TMPDIR): print the\n"
	"              events as they reach the disk, in clock order, up to the\n"
	"              clock every unfinished stream has passed; find the threads\n"
	"              and processes that start later; end when every stream is\n"
	"              finished (ovni.finished), or on Ctrl-C (exit status 0)\n"
	"  --follow-timeout T  with --follow: when nothing grew for T (ms, or with\n"
	"              a unit ms, s, min; 5s by default) while streams are\n"
	"              unfinished, the program stopped: print every whole event\n"
	"              read, name the unfinished streams and exit with status 1\n"
	"  --follow-links  follow the symbolic links that lead out of PATH (by\n"
	"              default each is named in a warning and not followed)\n"
	"  -h, --help  show this help\n"
	"\n"
	"Metadata problems are warnings; corrupt binary data stops the output after the\n"
	"last whole event, with an error. A stream cut short (a run killed mid-write:\n"
	"the file ends inside an event or the stream header) is read up to its last\n"
	"whole event with a warning naming the file, the offset of the partial event\n"
	"and its size, the other streams go on to their ends, and the exit status is 1\n"
	"at the end. A clock going backwards within a stream is a\n"
	"warning (none inside an unordered region OU[ ... OU]) and the output goes on.\n"
	"Exit status: 0 success, 1 trace error or a stream cut short, 2 usage error.\n";

static const char hexdig[] = "0123456789abcdef";

static void put_hex(struct cli_out *o, const uint8_t *p, size_t n)
{
	while (n > 0) {
		size_t chunk = n < 4096 ? n : 4096;
		char *w = cli_out_reserve(o, 3 * chunk);
		for (size_t i = 0; i < chunk; i++) {
			w[3 * i] = ':';
			w[3 * i + 1] = hexdig[p[i] >> 4];
			w[3 * i + 2] = hexdig[p[i] & 15];
		}
		o->len += 3 * chunk;
		p += chunk;
		n -= chunk;
	}
}

static const char digit_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* "%10" PRIi64 by hand, two digits at a time. */
static size_t fmt_clock(char *w, int64_t v)
{
	char tmp[24];
	size_t n = sizeof tmp;
	uint64_t u = v < 0 ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v;
	while (u >= 100) {
		unsigned d = (unsigned) (u % 100);
		u /= 100;
		tmp[--n] = digit_pairs[2 * d + 1];
		tmp[--n] = digit_pairs[2 * d];
	}
	if (u >= 10) {
		tmp[--n] = digit_pairs[2 * u + 1];
		tmp[--n] = digit_pairs[2 * u];
	} else {
		tmp[--n] = (char) ('0' + u);
	}
	if (v < 0)
		tmp[--n] = '-';
	size_t len = sizeof tmp - n, k = 0;
	while (len + k < 10)
		w[k++] = ' ';
	memcpy(w + k, tmp + n, len);
	return k + len;
}

/* The table entry of an MCV, remembered: most traces use few MCVs. */
struct spec_cache {
	uint32_t key; /* MCV bytes | 1 << 24 when used */
	const struct weft_event_spec *spec;
	const char *fixed; /* the description when it has no fields */
	size_t fixed_len;
};

#define SPEC_CACHE 1024u

struct dump {
	struct cli_out out;
	int hex;
	const struct weft_registry *models; /* the built-in ones and --model's */
	char *desc;
	size_t desccap;
	const struct weft_stream *last_stream;
	char *rel; /* its relpath, escaped (cli_escape.h) */
	size_t rel_len, relcap;
	struct spec_cache cache[SPEC_CACHE];
	/* Streams that lack events (weft_stream_loss): a line goes before the
	 * first event printed after each loss. */
	struct lossy *lossy;
	size_t nlossy;
	int64_t from; /* --from (INT64_MIN without): runs wholly before it are not told */
};

struct lossy {
	const struct weft_stream *stream;
	char *rel;         /* its relpath, escaped */
	size_t idx;        /* in the trace */
	uint64_t dropped;  /* not told yet */
	size_t next, nruns;
	struct weft_lost_run run; /* run next, when next < nruns */
};

/* A line saying what stream L lacks before an event with this offset and
 * raw clock (UINT64_MAX, INT64_MAX at the end of the output). */
static void lossy_tell(struct dump *d, const struct weft_trace *t, struct lossy *L,
		uint64_t offset, int64_t rclock)
{
	char line[1024];
	if (L->dropped > 0) {
		int n = snprintf(line, sizeof line, "# %s: %" PRIu64 " event%s of signal handlers "
				"lost (could not be stored; when is not known)\n", L->rel, L->dropped,
				L->dropped == 1 ? "" : "s");
		cli_out_put(&d->out, line, (size_t) n < sizeof line ? (size_t) n : sizeof line - 1);
		L->dropped = 0;
	}
	while (L->next < L->nruns && (L->run.has_offset ? offset >= L->run.offset
				: rclock >= L->run.last)) {
		if (L->run.last >= d->from) {
			int n = snprintf(line, sizeof line, "# %s: %" PRIu64 " event%s (%" PRIu64
					" bytes) lost here: overwritten by the flight recorder, "
					"clocks %" PRId64 " to %" PRId64 "\n", L->rel, L->run.events,
					L->run.events == 1 ? "" : "s", L->run.bytes, L->run.first,
					L->run.last);
			cli_out_put(&d->out, line, (size_t) n < sizeof line ? (size_t) n
					: sizeof line - 1);
		}
		if (++L->next < L->nruns)
			weft_stream_lost_run(t, L->idx, L->next, &L->run);
	}
}

static void lossy_init(struct dump *d, const struct weft_trace *t)
{
	size_t ns = weft_nstreams(t);
	for (size_t i = 0; i < ns; i++) {
		struct weft_loss l;
		if (!weft_stream_loss(t, i, &l) || (l.dropped == 0 && l.nruns == 0))
			continue;
		if (d->lossy == NULL && (d->lossy = calloc(ns, sizeof *d->lossy)) == NULL)
			abort();
		struct lossy *L = &d->lossy[d->nlossy++];
		L->stream = weft_stream_at(t, i);
		const char *rp = L->stream->relpath;
		size_t n = 4 * strlen(rp) + 1;
		if ((L->rel = malloc(n)) == NULL)
			abort();
		weft_escape(rp, strlen(rp), L->rel, n);
		L->idx = i;
		L->dropped = l.dropped;
		L->nruns = l.nruns;
		if (l.nruns > 0)
			weft_stream_lost_run(t, i, 0, &L->run);
	}
}

static void lossy_event(struct dump *d, const struct weft_trace *t, const struct weft_event *ev)
{
	for (size_t k = 0; k < d->nlossy; k++)
		if (d->lossy[k].stream == ev->stream)
			lossy_tell(d, t, &d->lossy[k], ev->offset, ev->rclock);
}

static void lossy_end(struct dump *d, const struct weft_trace *t)
{
	for (size_t k = 0; k < d->nlossy; k++) {
		lossy_tell(d, t, &d->lossy[k], UINT64_MAX, INT64_MAX);
		free(d->lossy[k].rel);
	}
	free(d->lossy);
}

/* The MCV as printed: its three bytes, escaped when one of them is not
 * printable ASCII (a trace cannot forge lines through its MCVs either; the
 * reference prints them raw). */
#define MCV_ESC_MAX 12
static inline size_t put_mcv(char *w, const char *mcv)
{
	unsigned a = (unsigned char) mcv[0], b = (unsigned char) mcv[1], c = (unsigned char) mcv[2];
	if (__builtin_expect(a - 0x20u < 0x5fu && b - 0x20u < 0x5fu && c - 0x20u < 0x5fu, 1)) {
		w[0] = (char) a;
		w[1] = (char) b;
		w[2] = (char) c;
		return 3;
	}
	char tmp[MCV_ESC_MAX + 1];
	size_t n = weft_escape(mcv, 3, tmp, sizeof tmp);
	memcpy(w, tmp, n);
	return n;
}

static struct spec_cache *lookup(struct dump *d, const char *mcv)
{
	uint32_t key = (uint32_t) (unsigned char) mcv[0] << 16
		| (uint32_t) (unsigned char) mcv[1] << 8 | (uint32_t) (unsigned char) mcv[2]
		| 1u << 24;
	struct spec_cache *c = &d->cache[(key * 2654435761u) >> 22];
	if (c->key != key) {
		c->key = key;
		c->spec = weft_model_event(d->models, mcv);
		c->fixed = NULL;
		c->fixed_len = 0;
		if (c->spec != NULL && c->spec->nfields == 0) {
			c->fixed = c->spec->desc;
			c->fixed_len = strlen(c->fixed);
		}
	}
	return c;
}

static void dump_event(struct dump *d, const struct weft_event *ev)
{
	struct cli_out *o = &d->out;
	if (ev->stream != d->last_stream) {
		d->last_stream = ev->stream;
		const char *rp = ev->stream->relpath;
		d->rel_len = weft_escape(rp, strlen(rp), d->rel, d->relcap);
		if (d->rel_len >= d->relcap) {
			d->relcap = d->rel_len + 1;
			d->rel = realloc(d->rel, d->relcap);
			if (d->rel == NULL)
				abort();
			weft_escape(rp, strlen(rp), d->rel, d->relcap);
		}
	}
	size_t head = 24 + 2 + MCV_ESC_MAX + 2 + d->rel_len + 2;
	if (head <= o->cap) {
		char *w = cli_out_reserve(o, head);
		size_t k = fmt_clock(w, ev->rclock);
		w[k++] = ' ';
		w[k++] = ' ';
		k += put_mcv(w + k, ev->mcv);
		w[k++] = ' ';
		w[k++] = ' ';
		memcpy(w + k, d->rel, d->rel_len);
		k += d->rel_len;
		w[k++] = ' ';
		w[k++] = ' ';
		o->len += k;
	} else {
		char tmp[40];
		size_t k = fmt_clock(tmp, ev->rclock);
		cli_out_put(o, tmp, k);
		cli_out_put(o, "  ", 2);
		char m[MCV_ESC_MAX];
		cli_out_put(o, m, put_mcv(m, ev->mcv));
		cli_out_put(o, "  ", 2);
		cli_out_put(o, d->rel, d->rel_len);
		cli_out_put(o, "  ", 2);
	}
	if (!d->hex) {
		struct spec_cache *c = lookup(d, ev->mcv);
		if (c->fixed != NULL) {
			char *w = cli_out_reserve(o, c->fixed_len + 1);
			if (c->fixed_len + 1 <= o->cap) {
				memcpy(w, c->fixed, c->fixed_len);
				w[c->fixed_len] = '\n';
				o->len += c->fixed_len + 1;
				return;
			}
		}
		const struct weft_event_spec *spec = c->spec;
		if (spec != NULL) {
			long n = weft_event_describe(spec, ev->payload, ev->payload_size, d->desc,
					d->desccap);
			if (n >= 0 && (size_t) n >= d->desccap) {
				d->desccap = (size_t) n + 1;
				d->desc = realloc(d->desc, d->desccap);
				if (d->desc == NULL)
					abort();
				n = weft_event_describe(spec, ev->payload, ev->payload_size, d->desc,
						d->desccap);
			}
			if (n >= 0) {
				cli_out_put(o, d->desc, (size_t) n);
				cli_out_put(o, "\n", 1);
				return;
			}
		}
	}
	put_hex(o, ev->payload, ev->payload_size);
	cli_out_put(o, "\n", 1);
}

static void follow_each(void *ctx, const struct weft_event *evs, long n)
{
	struct dump *d = ctx;
	for (long i = 0; i < n && !d->out.failed; i++)
		dump_event(d, &evs[i]);
}

/* After each poll: what was printed reaches the output. */
static int follow_tick(void *ctx, int final)
{
	struct dump *d = ctx;
	(void) final;
	cli_out_flush(&d->out);
	return d->out.failed;
}

static int dump_follow(const char *path, int hex, const struct weft_registry *models,
		unsigned timeout_ms)
{
	struct dump *d = calloc(1, sizeof *d);
	if (d == NULL)
		abort();
	d->hex = hex;
	d->models = models;
	d->desccap = 1024;
	d->desc = malloc(d->desccap);
	if (d->desc == NULL)
		abort();
	cli_out_init(&d->out, 1u << 20);
	int code = cli_follow("dump", path, timeout_ms, follow_each, follow_tick, d);
	if (cli_out_finish(&d->out, "dump") != 0)
		code = CLI_EXIT_TRACE;
	free(d->desc);
	free(d->rel);
	free(d);
	return code;
}

int weft_cmd_dump(int argc, char **argv)
{
	static const char *const longs[] = { "--hex" };
	int set[1] = { 0 };
	const char *path;
	/* --sort, --follow, --follow-timeout first: the rest are cli_parse's. */
	char **args = calloc((size_t) argc + 1, sizeof *args);
	if (args == NULL)
		abort();
	int nargs = 0;
	int sort = 0, follow = 0;
	unsigned follow_ms = 0;
	for (int i = 0; i < argc; i++) {
		if (i > 0 && strcmp(argv[i], "--follow") == 0) {
			follow = 1;
			continue;
		}
		int ft = i > 0 ? cli_follow_timeout_arg("dump", argc, argv, &i, &follow_ms) : 0;
		if (ft < 0) {
			free(args);
			return CLI_EXIT_USAGE;
		}
		if (ft > 0)
			continue;
		if (i > 0 && strcmp(argv[i], "--") == 0) {
			while (i < argc)
				args[nargs++] = argv[i++];
			break;
		}
		if (i > 0 && strcmp(argv[i], "--sort") == 0) {
			sort = 1;
			continue;
		}
		args[nargs++] = argv[i];
	}
	struct cli_models mf;
	int r = cli_model_args("dump", &nargs, args, &mf);
	struct cli_window win;
	if (r == 0)
		r = cli_window_args("dump", &nargs, args, &win);
	if (r == 0)
		r = cli_parse(nargs, args, "dump", usage, "x", longs, set, &path);
	free(args);
	if (r == 0 && !follow && follow_ms != 0) {
		fprintf(stderr, "weft dump: --follow-timeout goes with --follow; run `weft dump --help`\n");
		r = 2;
	}
	if (r == 0 && follow && (sort || win.from_arg != NULL || win.to_arg != NULL)) {
		fprintf(stderr, "weft dump: --follow does not go with --sort, --from or --to; run `weft dump --help`\n");
		r = 2;
	}
	if (r != 0) {
		free(mf.files);
		return r == 1 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	/* a malformed model file is refused before the trace is read */
	struct weft_registry *models = cli_registry("dump", &mf);
	if (models == NULL)
		return CLI_EXIT_TRACE;
	if (follow) {
		int code = dump_follow(path, set[0], models, follow_ms);
		weft_registry_free(models);
		return code;
	}
	WEFT_OPTS(weft_open_opts, opts);
	opts.mode = WEFT_LENIENT;
	opts.clock = WEFT_CLOCK_RAW;
	opts.backwards = WEFT_BACKWARDS_WARN;
	opts.sort = sort ? WEFT_SORT_REGIONS : WEFT_SORT_NONE;
	opts.cut = WEFT_CUT_WARN;
	struct weft_trace *t = cli_open_opts("dump", path, &opts);
	if (t == NULL) {
		weft_registry_free(models);
		return CLI_EXIT_TRACE;
	}
	cli_window_apply(t, &win);
	struct dump d;
	memset(&d, 0, sizeof d);
	d.hex = set[0];
	d.models = models;
	d.desccap = 1024;
	d.desc = malloc(d.desccap);
	if (d.desc == NULL)
		abort();
	cli_out_init(&d.out, 1u << 20);
	d.from = win.from_arg != NULL ? win.from : INT64_MIN;
	lossy_init(&d, t);
	static struct weft_event evs[256];
	long n;
	/* Progress on stderr only when the events do not go to the terminal. */
	struct cli_progress prog;
	cli_progress_start(&prog, "dump");
	prog.tty = prog.tty && !isatty(STDOUT_FILENO);
	int past = 0;
	while (!past && (n = weft_next_batch(t, evs, 256)) > 0 && !d.out.failed) {
		cli_progress_tick(&prog, weft_nevents(t));
		for (long i = 0; i < n; i++) {
			if (__builtin_expect(evs[i].rclock > win.to, 0)) {
				past = 1;
				n = 0;
				break;
			}
			/* after a seek, only a clock gone back in an unordered
			 * region can be before --from */
			if (__builtin_expect(evs[i].rclock >= win.from || win.from_arg == NULL, 1)) {
				if (__builtin_expect(d.nlossy != 0, 0))
					lossy_event(&d, t, &evs[i]);
				dump_event(&d, &evs[i]);
			}
		}
	}
	cli_progress_end(&prog);
	r = n < 0 ? -1 : 0;
	if (r == 0 && !past)
		lossy_end(&d, t);
	else
		for (size_t k = 0; k < d.nlossy; k++)
			free(d.lossy[k].rel);
	if (r != 0 || past)
		free(d.lossy);
	int code = CLI_EXIT_OK;
	if (cli_out_finish(&d.out, "dump") != 0) {
		code = CLI_EXIT_TRACE;
	} else if (r < 0) {
		cli_message("dump", "", weft_error(t));
		code = CLI_EXIT_TRACE;
	} else {
		code = cli_cut_end("dump", t, "printed");
	}
	free(d.desc);
	free(d.rel);
	weft_close(t);
	weft_registry_free(models);
	return code;
}
