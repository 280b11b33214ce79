/* SPDX-License-Identifier: MIT */
/* cmd_dump.c - `weft dump [-x] PATH`: every event, in clock order, one per line. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_chans.h"
#include "cli_common.h"
#include "commands.h"
#include "model.h"
#include "num_format.h"
#include "obs_format.h"

static const char usage[] =
	"Usage: weft dump [-x] [--sort] [--model FILE]... [--from T0] [--to T1]\n"
	"                 [--time LIST] PATH\n"
	"       weft dump [-x] [--model FILE]... [--time LIST] --follow\n"
	"                 [--follow-timeout T] PATH\n"
	"\n"
	"Print every event of the trace at PATH (a trace directory, a directory inside\n"
	"it, or one stream directory) in one global order by raw clock, one per line:\n"
	"  CLOCK  MCV  STREAM  DESCRIPTION\n"
	"as ovnidump does: the raw clock right-aligned in 10 columns, the model,\n"
	"category and value bytes, the stream directory relative to PATH, then the\n"
	"event decoded by its model's table (or its payload bytes if no table knows it).\n"
	"A mark event (ovni.mark in stream.json, ovni_mark_type) names its mark type\n"
	"and value as the metadata does, after the numbers: \"pushes 2 (Gray) on mark\n"
	"type 2 (Colors)\" (not with --follow, whose metadata may not be written yet).\n"
	"\n"
	"Options:\n"
	"  -x, --hex   print the payload bytes as :xx instead of decoding them\n"
	"              (a jumbo event: its 4-byte size, then its data)\n"
	"  --sort      sort the events of unordered regions (OU[ ... OU]) into place\n"
	"              while reading, as `weft sort` would sort the files (which stay\n"
	"              as they are)\n"
	"  --model FILE  also decode the events of the model FILE describes\n"
	"              (repeatable; see docs/models.md); each of its events is\n"
	"              followed by the catalogue names of the channels it writes,\n"
	"              \"  [zeta.phase]\"\n"
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
	"  --time LIST the time columns in place of the raw clock, in the order\n"
	"              given, separated by commas, each right-aligned in 10\n"
	"              columns and followed by two spaces: abs (the raw clock,\n"
	"              the default), rel (ns since the trace's first event: the\n"
	"              earliest first clock of its streams, or with --follow the\n"
	"              first event printed), delta (ns since the previous event\n"
	"              printed, with its sign: +0 on the first line);\n"
	"              e.g. --time=rel,delta\n"
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

/* "%10" PRIi64: the clock column as ovnidump prints it (num_format.h;
 * stores up to 32 bytes from w). */
static inline size_t fmt_clock(char *w, int64_t v, struct weft_num_w10_cache *c)
{
	return (size_t) (weft_num_i64_w10c(w, v, c) - w);
}

/* The table entry of an MCV, remembered: most traces use few MCVs. */
struct spec_cache {
	uint32_t key; /* MCV bytes | 1 << 24 when used */
	const struct weft_event_spec *spec;
	const char *fixed; /* the description when it has no fields */
	size_t fixed_len;
	/* The description made into pieces (plan_make), for spec plan_of. */
	const struct weft_event_spec *plan_of;
	struct piece *pieces;
	size_t npieces;
	size_t room;     /* bytes the pieces write at most, strings and labels aside */
	size_t min_size; /* the payload the fields need */
	int32_t mtype_off; /* a mark event: where its mark type is (-1: none) */
	enum weft_field_type mtype_t;
	/* An event of a model given with --model: "  [zeta.phase, ...]", the
	 * catalogue names of the channels it writes (cli_chans.h); else NULL. */
	char *chans;
	size_t chans_len;
};

/* A piece of a description: text, then a field (or none). */
struct piece {
	const char *lit;
	uint32_t len;
	int16_t field;  /* index in spec->fields, or -1 */
	uint8_t hex;    /* %x{...} */
	uint8_t mark;   /* MARK_TYPE or MARK_VALUE: the metadata's name follows */
};

enum { MARK_TYPE = 1, MARK_VALUE = 2 };

/* The time columns (--time): the raw clock, the time since the trace's
 * first event, the time since the previous event printed. */
enum { TIME_ABS, TIME_REL, TIME_DELTA };
#define TIME_MAX 3

/* A stream's relpath, escaped once (a stream change costs a lookup). */
struct relc {
	const struct weft_stream *stream;
	char *rel;
	size_t len;
};

/* A mark type of the metadata (ovni.mark), its title and labels escaped. */
struct mark {
	int32_t type;
	char *title;
	size_t title_len;
	size_t nlabels;
	struct mark_label *labels; /* by value */
};

struct mark_label {
	int64_t value;
	char *label;
	size_t len;
};

#define SPEC_CACHE 1024u

struct dump {
	struct cli_out out;
	int hex;
	const struct weft_registry *models; /* the built-in ones and --model's */
	char *desc;
	size_t desccap;
	const struct weft_stream *last_stream;
	const char *rel; /* its relpath, escaped (cli_escape.h) */
	size_t rel_len;
	struct relc *rels; /* open addressing by stream */
	size_t nrels, relcap;
	struct spec_cache cache[SPEC_CACHE];
	/* Streams that lack events (weft_stream_loss): a line goes before the
	 * first event printed after each loss. */
	struct lossy *lossy;
	size_t nlossy;
	int64_t from; /* --from (INT64_MIN without): runs wholly before it are not told */
	/* --time: the columns in their order; none: the raw clock alone */
	int time[TIME_MAX];
	size_t ntime;
	int64_t origin, prev; /* the trace's first clock; the last one printed */
	int have_origin, have_prev;
	struct mark *marks; /* by type */
	size_t nmarks;
	struct weft_num_w10_cache clk; /* the clock's high digits */
};

struct lossy {
	const struct weft_stream *stream;
	char *rel;         /* its relpath, escaped */
	size_t idx;        /* in the trace */
	uint64_t dropped;  /* not told yet */
	uint64_t filtered; /* not told yet */
	char *filter;      /* the filter in words (weft_filter_describe) */
	int unwritten;     /* WEFT_OUTPUT=off, not told yet */
	uint64_t unwritten_bytes;
	size_t next, nruns;
	struct weft_lost_run run; /* run next, when next < nruns */
};

/* s escaped, in a new string. */
static char *esc_dup(const char *s)
{
	size_t n = strlen(s);
	char *e = malloc(4 * n + 1);
	if (e == NULL)
		abort();
	weft_escape(s, n, e, 4 * n + 1);
	return e;
}

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
	if (L->filtered > 0) {
		int n = snprintf(line, sizeof line, "# %s: %" PRIu64 " event%s filtered at the source "
				"by %s (dropped on purpose)\n", L->rel, L->filtered,
				L->filtered == 1 ? "" : "s", L->filter);
		cli_out_put(&d->out, line, (size_t) n < sizeof line ? (size_t) n : sizeof line - 1);
		L->filtered = 0;
	}
	if (L->unwritten) {
		int n = snprintf(line, sizeof line, "# %s: written with WEFT_OUTPUT=off: %" PRIu64
				" bytes of events recorded, none written\n", L->rel, L->unwritten_bytes);
		cli_out_put(&d->out, line, (size_t) n < sizeof line ? (size_t) n : sizeof line - 1);
		L->unwritten = 0;
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
		if (!weft_stream_loss(t, i, &l) || (l.dropped == 0 && l.nruns == 0 && l.filtered == 0
					&& !l.output_off))
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
		L->filtered = l.filter ? l.filtered : 0;
		char what[WEFT_FILTER_DESC_MAX];
		weft_filter_describe(&l, what, sizeof what);
		if ((L->filter = strdup(what)) == NULL)
			abort();
		L->unwritten = l.output_off;
		L->unwritten_bytes = l.unwritten_bytes;
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
		free(d->lossy[k].filter);
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

/* "  [zeta.phase, zeta.region]": the channels an event of mcv writes when
 * a model given with --model describes it (cli_chans.h), escaped; NULL
 * when none. */
static char *user_chans(const struct weft_registry *models, const char *mcv, size_t *len)
{
	const struct weft_model_spec *m;
	size_t ch[16];
	size_t n = cli_user_chans(models, mcv, &m, ch, sizeof ch / sizeof *ch);
	if (n == 0)
		return NULL;
	char names[16 * 96 + 8] = "  [";
	size_t k = 3;
	for (size_t i = 0; i < n; i++) {
		char name[96];
		cli_chan_name(m, ch[i], name, sizeof name);
		k += (size_t) snprintf(names + k, sizeof names - k, "%s%s", i ? ", " : "", name);
	}
	snprintf(names + k, sizeof names - k, "]");
	char *s = esc_dup(names);
	*len = strlen(s);
	return s;
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
		free(c->chans);
		c->chans = user_chans(d->models, mcv, &c->chans_len); /* once per MCV */
		if (c->spec != NULL && c->spec->nfields == 0 && !c->spec->has_placeholders) {
			c->fixed = c->spec->desc;
			c->fixed_len = strlen(c->fixed);
		}
	}
	return c;
}

/* ---- the description, made once per MCV into pieces ---- */

static void add_piece(struct spec_cache *c, size_t *cap, const char *lit, size_t len,
		int field, int hex)
{
	if (c->npieces == *cap) {
		*cap = *cap ? 2 * *cap : 8;
		c->pieces = realloc(c->pieces, *cap * sizeof *c->pieces);
		if (c->pieces == NULL)
			abort();
	}
	struct piece *pc = &c->pieces[c->npieces++];
	pc->lit = lit;
	pc->len = (uint32_t) len;
	pc->field = (int16_t) field;
	pc->hex = (uint8_t) hex;
	pc->mark = 0;
	/* a number: "-" and 20 digits, or "0x" and 16 digits, and the
	 * bytes num_format.h may store past them */
	c->room += len + (field >= 0 ? 32 : 0);
}

static int int_field(enum weft_field_type t)
{
	return t != WEFT_FIELD_STR;
}

/* A mark event (an action of its model writes a channel of the family of
 * mark types, the type and the value from the payload): its fields at those
 * offsets are marked, for the metadata's title and label. */
static void plan_marks(const struct weft_registry *models, struct spec_cache *c, const char *mcv)
{
	const struct weft_model_spec *m = weft_model_by_code(models, mcv[0]);
	if (m == NULL || m->emu == NULL)
		return;
	const struct emu_model_desc *md = m->emu;
	const struct emu_event_desc *ed = NULL;
	for (size_t i = 0; i < md->nevents && (ed == NULL || ed->mcv[2] == '*'); i++) {
		const struct emu_event_desc *x = &md->events[i];
		if (x->mcv[1] == mcv[1] && (x->mcv[2] == mcv[2] || x->mcv[2] == '*'))
			ed = x;
	}
	if (ed == NULL)
		return;
	for (size_t k = 0; k < ed->nactions; k++) {
		const struct emu_action *a = &ed->actions[k];
		if ((a->op != EMU_OP_SET && a->op != EMU_OP_PUSH && a->op != EMU_OP_POP)
				|| a->chan >= md->nchans
				|| md->chans[a->chan].family != EMU_FAMILY_MARK_TYPES
				|| (a->sel.src != EMU_VAL_I32 && a->sel.src != EMU_VAL_I64))
			continue;
		c->mtype_off = (int32_t) a->sel.k;
		c->mtype_t = a->sel.src == EMU_VAL_I32 ? WEFT_FIELD_I32 : WEFT_FIELD_I64;
		for (size_t i = 0; i < c->npieces; i++) {
			struct piece *pc = &c->pieces[i];
			if (pc->field < 0 || !int_field(c->spec->fields[pc->field].type))
				continue;
			int64_t off = c->spec->fields[pc->field].offset;
			if (off == a->sel.k)
				pc->mark = MARK_TYPE;
			else if (off == a->val.k && a->val.src != EMU_VAL_NULL
					&& a->val.src != EMU_VAL_CONST)
				pc->mark = MARK_VALUE;
		}
		return;
	}
}

/* The pieces of c->spec's description, as weft_event_describe reads it:
 * "%{name}" and "%x{name}" a field, "%%" one '%', anything else as it is. */
static void plan_make(const struct weft_registry *models, struct spec_cache *c, const char *mcv)
{
	const struct weft_event_spec *e = c->spec;
	size_t cap = 0;
	free(c->pieces);
	c->pieces = NULL;
	c->npieces = 0;
	c->plan_of = e;
	c->room = 1 + 8;
	c->min_size = weft_event_spec_min_size(e);
	c->mtype_off = -1;
	const char *s = e->desc, *lit = s;
	while (*s != '\0') {
		if (*s != '%') {
			s++;
			continue;
		}
		if (s[1] == '%') { /* the first '%' kept, the second dropped */
			add_piece(c, &cap, lit, (size_t) (s + 1 - lit), -1, 0);
			s += 2;
			lit = s;
			continue;
		}
		int hex = s[1] == 'x';
		const char *open = s + 1 + hex, *close = strchr(open, '}');
		if (*open != '{' || close == NULL) {
			s++;
			continue;
		}
		size_t nlen = (size_t) (close - open - 1), fi;
		for (fi = 0; fi < e->nfields; fi++)
			if (strlen(e->fields[fi].name) == nlen
					&& strncmp(e->fields[fi].name, open + 1, nlen) == 0)
				break;
		if (fi < e->nfields && fi < INT16_MAX) {
			add_piece(c, &cap, lit, (size_t) (s - lit), (int) fi, hex);
			lit = close + 1;
		}
		s = close + 1;
	}
	if (s > lit || c->npieces == 0)
		add_piece(c, &cap, lit, (size_t) (s - lit), -1, 0);
	plan_marks(models, c, mcv);
}

/* Payload text, escaped (weft_escape). */
static void put_str(struct dump *d, const uint8_t *p, size_t max)
{
	const void *nul = memchr(p, 0, max);
	size_t len = nul != NULL ? (size_t) ((const uint8_t *) nul - p) : max;
	size_t k = weft_escape_clean((const char *) p, len);
	cli_out_put(&d->out, (const char *) p, k);
	if (k == len)
		return;
	size_t need = 4 * (len - k) + 1;
	if (need > d->desccap) {
		d->desccap = need;
		d->desc = realloc(d->desc, d->desccap);
		if (d->desc == NULL)
			abort();
	}
	size_t n = weft_escape((const char *) p + k, len - k, d->desc, d->desccap);
	cli_out_put(&d->out, d->desc, n);
}

/* An integer field: its bits (sign-extended) and whether it is signed. */
static uint64_t load_int(enum weft_field_type t, const uint8_t *p, int *sign)
{
	*sign = 0;
	switch (t) {
	case WEFT_FIELD_U8: return p[0];
	case WEFT_FIELD_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
	case WEFT_FIELD_U32: return weft_load_u32(p);
	case WEFT_FIELD_U64: return weft_load_u64(p);
	case WEFT_FIELD_I8: *sign = 1; return (uint64_t) (int64_t) (int8_t) p[0];
	case WEFT_FIELD_I16: {
		int16_t v;
		memcpy(&v, p, 2);
		*sign = 1;
		return (uint64_t) (int64_t) v;
	}
	case WEFT_FIELD_I32: {
		int32_t v;
		memcpy(&v, p, 4);
		*sign = 1;
		return (uint64_t) (int64_t) v;
	}
	case WEFT_FIELD_I64: *sign = 1; return weft_load_u64(p);
	case WEFT_FIELD_STR: break;
	}
	return 0;
}

static int cmp_mark(const void *a, const void *b)
{
	const struct mark *x = a, *y = b;
	return (x->type > y->type) - (x->type < y->type);
}

static int cmp_label(const void *a, const void *b)
{
	const struct mark_label *x = a, *y = b;
	return (x->value > y->value) - (x->value < y->value);
}

/* The metadata's name of a mark type (MARK_TYPE) or of the value v of the
 * event's mark type (MARK_VALUE), escaped, and its length; NULL when it has
 * none. */
static const char *mark_name(const struct dump *d, const struct spec_cache *c,
		const struct weft_event *ev, int what, int64_t v, size_t *len)
{
	if (d->nmarks == 0 || c->mtype_off < 0)
		return NULL;
	int64_t type = v;
	if (what == MARK_VALUE) {
		size_t sz = c->mtype_t == WEFT_FIELD_I32 ? 4 : 8;
		if ((size_t) c->mtype_off + sz > ev->payload_size)
			return NULL;
		int sign;
		type = (int64_t) load_int(c->mtype_t, ev->payload + c->mtype_off, &sign);
	}
	if (type < INT32_MIN || type > INT32_MAX)
		return NULL;
	struct mark key = { (int32_t) type, NULL, 0, 0, NULL };
	const struct mark *mk = bsearch(&key, d->marks, d->nmarks, sizeof *d->marks, cmp_mark);
	if (mk == NULL)
		return NULL;
	if (what == MARK_TYPE) {
		*len = mk->title_len;
		return mk->title;
	}
	struct mark_label lk = { v, NULL, 0 };
	const struct mark_label *l = bsearch(&lk, mk->labels, mk->nlabels, sizeof *mk->labels,
			cmp_label);
	if (l == NULL)
		return NULL;
	*len = l->len;
	return l->label;
}

/* The description by its pieces (c->room <= the output's capacity). */
static void put_plan(struct dump *d, const struct spec_cache *c, const struct weft_event *ev)
{
	struct cli_out *o = &d->out;
	const struct weft_event_spec *e = c->spec;
	char *w = cli_out_reserve(o, c->room);
	for (size_t i = 0; i < c->npieces; i++) {
		const struct piece *pc = &c->pieces[i];
		memcpy(w, pc->lit, pc->len);
		w += pc->len;
		if (pc->field < 0)
			continue;
		const struct weft_field *f = &e->fields[pc->field];
		const uint8_t *p = ev->payload + f->offset;
		if (f->type == WEFT_FIELD_STR) {
			o->len = (size_t) (w - o->buf);
			put_str(d, p, ev->payload_size - f->offset);
			w = cli_out_reserve(o, c->room);
			continue;
		}
		int sign;
		uint64_t u = load_int(f->type, p, &sign);
		if (pc->hex) {
			if (f->type == WEFT_FIELD_I32)
				u = (uint32_t) u;
			else if (f->type == WEFT_FIELD_I16)
				u = (uint16_t) u;
			else if (f->type == WEFT_FIELD_I8)
				u = (uint8_t) u;
			*w++ = '0';
			*w++ = 'x';
			w = weft_num_hex(w, u);
		} else {
			w = sign ? weft_num_i64(w, (int64_t) u) : weft_num_u64(w, u);
		}
		if (__builtin_expect(pc->mark != 0, 0)) {
			size_t nlen;
			const char *name = mark_name(d, c, ev, pc->mark, (int64_t) u, &nlen);
			if (name != NULL) {
				o->len = (size_t) (w - o->buf);
				if (c->room + nlen + 3 <= o->cap) {
					w = cli_out_reserve(o, c->room + nlen + 3);
					*w++ = ' ';
					*w++ = '(';
					memcpy(w, name, nlen);
					w += nlen;
					*w++ = ')';
					continue;
				}
				cli_out_put(o, " (", 2);
				cli_out_put(o, name, nlen);
				cli_out_put(o, ")", 1);
				w = cli_out_reserve(o, c->room);
			}
		}
	}
	*w++ = '\n';
	o->len = (size_t) (w - o->buf);
}

/* ---- the stream column ---- */

static struct relc *rel_slot(struct relc *tab, size_t cap, const struct weft_stream *s)
{
	size_t i = (size_t) (((uint64_t) (uintptr_t) s * UINT64_C(0x9e3779b97f4a7c15)) >> 40)
		& (cap - 1);
	while (tab[i].stream != NULL && tab[i].stream != s)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

/* The escaped relpath of stream s becomes the current one. */
static void rel_set(struct dump *d, const struct weft_stream *s)
{
	d->last_stream = s;
	if (2 * (d->nrels + 1) > d->relcap) {
		size_t ncap = d->relcap ? 2 * d->relcap : 64;
		struct relc *nt = calloc(ncap, sizeof *nt);
		if (nt == NULL)
			abort();
		for (size_t i = 0; i < d->relcap; i++)
			if (d->rels[i].stream != NULL)
				*rel_slot(nt, ncap, d->rels[i].stream) = d->rels[i];
		free(d->rels);
		d->rels = nt;
		d->relcap = ncap;
	}
	struct relc *r = rel_slot(d->rels, d->relcap, s);
	if (r->stream == NULL) {
		const char *rp = s->relpath;
		size_t n = strlen(rp);
		r->stream = s;
		r->rel = malloc(4 * n + 1);
		if (r->rel == NULL)
			abort();
		r->len = weft_escape(rp, n, r->rel, 4 * n + 1);
		d->nrels++;
	}
	d->rel = r->rel;
	d->rel_len = r->len;
}

/* ---- the time columns (--time) ---- */

/* "%+10" PRId64 as it were: the sign always, right-aligned in 10 columns. */
static char *put_delta(char *w, int64_t v)
{
	uint64_t u = v < 0 ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v;
	unsigned len = weft_num_digits(u) + 1;
	memset(w, ' ', 16);
	if (len < 10)
		w += 10 - len;
	*w++ = v < 0 ? '-' : '+';
	return weft_num_u64(w, u);
}

/* The time columns of an event at raw clock c (stores up to 34 bytes a
 * column); returns their length. */
static size_t put_times(struct dump *d, char *w, int64_t c)
{
	char *p = w;
	if (!d->have_origin) { /* --follow: the first event printed */
		d->origin = c;
		d->have_origin = 1;
	}
	for (size_t i = 0; i < d->ntime; i++) {
		if (i > 0) {
			*p++ = ' ';
			*p++ = ' ';
		}
		switch (d->time[i]) {
		case TIME_ABS:
			p = weft_num_i64_w10(p, c);
			break;
		case TIME_REL:
			p = weft_num_i64_w10(p, (int64_t) ((uint64_t) c - (uint64_t) d->origin));
			break;
		default:
			p = put_delta(p, d->have_prev
					? (int64_t) ((uint64_t) c - (uint64_t) d->prev) : 0);
			break;
		}
	}
	d->prev = c;
	d->have_prev = 1;
	return (size_t) (p - w);
}

#define TIMES_ROOM (TIME_MAX * 36)

/* An event of a model given with --model: its description, then the
 * channels it writes (c->chans); 0 when it cannot be described (its payload
 * in hex follows, as for any event). */
static int describe_user(struct dump *d, const struct spec_cache *c, const struct weft_event *ev)
{
	if (c->spec == NULL)
		return 0;
	long n = weft_event_describe(c->spec, ev->payload, ev->payload_size, d->desc, d->desccap);
	if (n >= 0 && (size_t) n >= d->desccap) {
		d->desccap = (size_t) n + 1;
		d->desc = realloc(d->desc, d->desccap);
		if (d->desc == NULL)
			abort();
		n = weft_event_describe(c->spec, ev->payload, ev->payload_size, d->desc,
				d->desccap);
	}
	if (n < 0)
		return 0;
	cli_out_put(&d->out, d->desc, (size_t) n);
	cli_out_put(&d->out, c->chans, c->chans_len);
	cli_out_put(&d->out, "\n", 1);
	return 1;
}

static void dump_event(struct dump *d, const struct weft_event *ev)
{
	struct cli_out *o = &d->out;
	if (ev->stream != d->last_stream)
		rel_set(d, ev->stream);
	size_t head = TIMES_ROOM + MCV_ESC_MAX + 2 + d->rel_len + 2;
	if (head <= o->cap) {
		char *w = cli_out_reserve(o, head);
		size_t k = d->ntime == 0 ? fmt_clock(w, ev->rclock, &d->clk)
			: put_times(d, w, ev->rclock);
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
		char tmp[TIMES_ROOM];
		size_t k = d->ntime == 0 ? fmt_clock(tmp, ev->rclock, &d->clk)
			: put_times(d, tmp, ev->rclock);
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
		if (c->chans != NULL && describe_user(d, c, ev))
			return;
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
		if (spec != NULL && c->plan_of != spec)
			plan_make(d->models, c, ev->mcv);
		if (spec != NULL && ev->payload_size >= c->min_size && c->room <= o->cap) {
			put_plan(d, c, ev);
			return;
		}
		if (spec != NULL) { /* a description longer than the output buffer */
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

/* The time origin and the mark names of trace t (after the window is set). */
static void dump_view_init(struct dump *d, const struct weft_trace *t)
{
	for (size_t i = 0; i < weft_nstreams(t); i++) { /* as cli_window_apply */
		int64_t c;
		if (weft_stream_first_rclock(t, i, &c)) {
			if (!d->have_origin || c < d->origin)
				d->origin = c;
			d->have_origin = 1;
		}
	}
	size_t n = weft_nmark_types(t);
	if (n == 0)
		return;
	d->marks = calloc(n, sizeof *d->marks);
	if (d->marks == NULL)
		abort();
	for (size_t i = 0; i < n; i++) {
		const struct weft_mark_type *mt = weft_mark_type_at(t, i);
		struct mark *mk = &d->marks[d->nmarks++];
		mk->type = mt->type;
		mk->title = mt->title != NULL ? esc_dup(mt->title) : NULL;
		mk->title_len = mk->title != NULL ? strlen(mk->title) : 0;
		mk->labels = calloc(mt->nlabels ? mt->nlabels : 1, sizeof *mk->labels);
		if (mk->labels == NULL)
			abort();
		for (size_t k = 0; k < mt->nlabels; k++) {
			mk->labels[k].value = mt->labels[k].value;
			mk->labels[k].label = esc_dup(mt->labels[k].label);
			mk->labels[k].len = strlen(mk->labels[k].label);
		}
		mk->nlabels = mt->nlabels;
		qsort(mk->labels, mk->nlabels, sizeof *mk->labels, cmp_label);
	}
	qsort(d->marks, d->nmarks, sizeof *d->marks, cmp_mark);
}

static void dump_fini(struct dump *d)
{
	free(d->desc);
	for (size_t i = 0; i < d->relcap; i++)
		free(d->rels[i].rel);
	free(d->rels);
	for (size_t i = 0; i < SPEC_CACHE; i++) {
		free(d->cache[i].pieces);
		free(d->cache[i].chans);
	}
	for (size_t i = 0; i < d->nmarks; i++) {
		free(d->marks[i].title);
		for (size_t k = 0; k < d->marks[i].nlabels; k++)
			free(d->marks[i].labels[k].label);
		free(d->marks[i].labels);
	}
	free(d->marks);
}

/* --time LIST: the columns, each at most once, in their order (the
 * command's one run: set by its option, read by time_opts_apply). */
static struct {
	int col[TIME_MAX];
	size_t n;
} time_opts;

static int time_parse(const char *v)
{
	static const char *const names[] = { "abs", "rel", "delta" };
	time_opts.n = 0;
	for (const char *p = v;;) {
		size_t len = strcspn(p, ","), k;
		for (k = 0; k < TIME_MAX; k++)
			if (strlen(names[k]) == len && strncmp(p, names[k], len) == 0)
				break;
		int twice = 0;
		for (size_t j = 0; k < TIME_MAX && j < time_opts.n; j++)
			twice |= time_opts.col[j] == (int) k;
		if (k == TIME_MAX || twice) {
			char esc[256];
			weft_escape(v, strlen(v), esc, sizeof esc);
			fprintf(stderr, "weft dump: --time '%s': %s; give columns among abs, rel "
					"and delta, each at most once, separated by commas (e.g. "
					"--time=rel,delta)\n", esc, twice ? "a column is named twice"
					: "not a list of columns");
			return 2;
		}
		time_opts.col[time_opts.n++] = (int) k;
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	return 0;
}

/* The columns --time asked for: none when it is the raw clock alone (the
 * default line, ovnidump's). */
static void time_opts_apply(struct dump *d)
{
	d->ntime = time_opts.n == 1 && time_opts.col[0] == TIME_ABS ? 0 : time_opts.n;
	memcpy(d->time, time_opts.col, sizeof d->time);
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
	time_opts_apply(d);
	int code = cli_follow("dump", path, timeout_ms, follow_each, follow_tick, d);
	if (cli_out_finish(&d->out, "dump") != 0)
		code = CLI_EXIT_TRACE;
	dump_fini(d);
	free(d);
	return code;
}

/* The options of weft dump (cli_opts.h): add one here and in dump_opt. */
enum { DUMP_HEX, DUMP_SORT, DUMP_MODEL, DUMP_FROM, DUMP_TO, DUMP_FOLLOW, DUMP_FOLLOW_TIMEOUT,
	DUMP_FOLLOW_LINKS, DUMP_TIME };

static const struct cli_opt dump_opts[] = {
	{ "hex", 'x', NULL, DUMP_HEX },
	{ "sort", 0, NULL, DUMP_SORT },
	{ "model", 0, "FILE", DUMP_MODEL },
	{ "from", 0, "a time", DUMP_FROM },
	{ "to", 0, "a time", DUMP_TO },
	{ "follow", 0, NULL, DUMP_FOLLOW },
	{ "follow-timeout", 0, "a time", DUMP_FOLLOW_TIMEOUT },
	{ "follow-links", 0, NULL, DUMP_FOLLOW_LINKS },
	{ "time", 0, "a list of columns", DUMP_TIME },
	{ NULL, 0, NULL, 0 },
};

struct dump_args {
	int hex, sort, follow;
	unsigned follow_ms;
	struct cli_models mf;
	struct cli_window win;
};

static int dump_opt(void *ctx, int id, const char *opt, const char *val)
{
	(void) opt;
	struct dump_args *a = ctx;
	switch (id) {
	case DUMP_HEX: a->hex = 1; break;
	case DUMP_SORT: a->sort = 1; break;
	case DUMP_MODEL: a->mf.files[a->mf.n++] = val; break;
	case DUMP_FROM: a->win.from_arg = val; break;
	case DUMP_TO: a->win.to_arg = val; break;
	case DUMP_FOLLOW: a->follow = 1; break;
	case DUMP_FOLLOW_TIMEOUT: return cli_follow_timeout("dump", val, &a->follow_ms);
	case DUMP_FOLLOW_LINKS: cli_follow_links = 1; break;
	case DUMP_TIME: return time_parse(val);
	default: abort();
	}
	return 0;
}

int weft_cmd_dump(int argc, char **argv)
{
	struct dump_args a;
	memset(&a, 0, sizeof a);
	cli_models_init(&a.mf, argc);
	const char **pos = cli_operands(argc), *path = NULL;
	int npos = 0;
	int r = cli_opts_parse("dump", dump_opts, argc, argv, dump_opt, &a, pos, &npos);
	if (r == CLI_OPTS_HELP)
		fputs(usage, stdout);
	if (r == 0)
		r = cli_one_path("dump", pos, npos, &path);
	else
		free(pos);
	if (r == 0)
		r = cli_window_finish("dump", &a.win);
	if (r == 0 && !a.follow && a.follow_ms != 0) {
		fprintf(stderr, "weft dump: --follow-timeout goes with --follow; run `weft dump --help`\n");
		r = 2;
	}
	if (r == 0 && a.follow && (a.sort || a.win.from_arg != NULL || a.win.to_arg != NULL)) {
		fprintf(stderr, "weft dump: --follow does not go with --sort, --from or --to; run `weft dump --help`\n");
		r = 2;
	}
	struct cli_models mf = a.mf;
	struct cli_window win = a.win;
	int sort = a.sort, follow = a.follow;
	unsigned follow_ms = a.follow_ms;
	int set[1] = { a.hex };
	if (r != 0) {
		free(mf.files);
		return r == CLI_OPTS_HELP ? CLI_EXIT_OK : CLI_EXIT_USAGE;
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
	time_opts_apply(&d);
	dump_view_init(&d, t);
	static struct weft_event evs[256];
	long n;
	/* Progress on stderr only when the events do not go to the terminal. */
	struct cli_progress prog;
	cli_progress_start(&prog, "dump", cli_obs_total(t));
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
	dump_fini(&d);
	weft_close(t);
	weft_registry_free(models);
	return code;
}
