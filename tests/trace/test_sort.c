/* SPDX-License-Identifier: MIT */
/*
 * test_sort.c - sorting unordered regions (OU[ ... OU]) on read
 * (weft_open_opts.sort = WEFT_SORT_REGIONS) and into a new file
 * (weft_sort_stream), against a model of the reference's ovnisort.
 *
 *   test_random       random traces (1 to 4 streams: regions reaching back,
 *                     equal clocks, payloads of every size, jumbo events
 *                     larger than a read chunk, empty and unclosed regions,
 *                     stray OU], clocks going back outside regions): the
 *                     model's sorted stream = weft_sort_stream's bytes; read
 *                     with sorting on, every stream yields the model's sorted
 *                     events at their offsets in the sorted stream, and the
 *                     global order is the one of a copy of the trace whose
 *                     files hold the sorted streams (read without sorting);
 *                     weft_nsorted = the events whose offset changed;
 *                     weft_stream_first_sclock = the sorted first clock; with
 *                     read chunks of 64, 97, 4096 bytes and the default, with
 *                     and without the read-ahead thread, through weft_next,
 *                     weft_next_batch and weft_next_refs; look-backs of 3,
 *                     30 and the default (a region reaching too far: the
 *                     events before it, then the error).
 *   test_default_look_back  a region reaching 60001 events back sorts with
 *                     up to 16 streams (65536) and is refused with 20
 *                     (16 * 65536 / 20 = 52428 events).
 *   test_tail         a file that ends inside an event: the sorted events,
 *                     then the error of the unsorted reading, same offset.
 *   test_lean         40 streams under a limit of 64 open files (each file
 *                     opened for each read): sorted as the sorted copy reads.
 *   test_bad_choice   an unknown sort choice is refused by weft_open.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "tracewrite.h"
#include "weft/weft.h"

extern size_t weft_chunk_override;

#define MAXS 4
#define MAXE 700

struct sev {
	int64_t clock;
	char mcv[4];
	uint64_t off; /* in the file as written */
	uint32_t size;
};

struct strm {
	size_t n;
	struct sev ev[MAXE];
	uint8_t *file; /* the stream.obs as written */
	size_t flen;
	/* the model's result */
	int toofar; /* the sort fails: a region reaches back too far */
	size_t nsorted; /* events of the sorted stream (up to the failure) */
	struct sev out[MAXE];
	uint8_t *sorted; /* header + the events of out */
	size_t slen;
	size_t nmoved;
};

struct trace {
	size_t ns;
	struct strm s[MAXS];
};

static uint64_t rng;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng >> 16);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t) n + 1);
	assert_int_equal(fread(b, 1, (size_t) n, f), (size_t) n);
	fclose(f);
	*len = (size_t) n;
	return b;
}

/* The model: the reference's ovnisort as docs/reader.md states it, on arrays. */
static void model_sort(struct strm *m, size_t look_back)
{
	size_t n = 0;
	char st = 'S';
	size_t first = 0;
	m->toofar = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct sev *e = &m->ev[i];
		int open = strcmp(e->mcv, "OU[") == 0, close = strcmp(e->mcv, "OU]") == 0;
		if (st == 'S') {
			if (open)
				st = 'U';
		} else if (st == 'U') {
			if (close) {
				st = 'S';
			} else {
				st = 'X';
				first = n;
			}
		} else if (close) {
			int64_t c = INT64_MAX;
			for (size_t k = first; k < n; k++)
				if (m->out[k].clock < c)
					c = m->out[k].clock;
			size_t lo = n > look_back ? n - look_back : 0;
			long keep = -2;
			for (long k = (long) n - 1; k >= (long) lo; k--) {
				if (m->out[k].clock < c) {
					keep = k;
					break;
				}
			}
			if (keep == -2) {
				if (n >= look_back) {
					m->toofar = 1;
					break;
				}
				keep = -1;
			}
			/* stable insertion sort of out[keep + 1 .. n) */
			for (size_t a = (size_t) (keep + 1) + 1; a < n; a++) {
				struct sev x = m->out[a];
				size_t b = a;
				while (b > (size_t) (keep + 1) && m->out[b - 1].clock > x.clock) {
					m->out[b] = m->out[b - 1];
					b--;
				}
				m->out[b] = x;
			}
			st = 'S';
		}
		m->out[n++] = *e;
	}
	m->nsorted = n;
	free(m->sorted);
	m->sorted = malloc(m->flen);
	memcpy(m->sorted, m->file, WEFT_OBS_HEADER_SIZE);
	m->slen = WEFT_OBS_HEADER_SIZE;
	m->nmoved = 0;
	for (size_t k = 0; k < n; k++) {
		if (m->out[k].off != m->slen)
			m->nmoved++;
		memcpy(m->sorted + m->slen, m->file + m->out[k].off, m->out[k].size);
		m->slen += m->out[k].size;
	}
}

static void put(FILE *f, struct strm *m, const char *mcv, int64_t clock, uint64_t *off)
{
	struct sev *e = &m->ev[m->n++];
	e->clock = clock;
	memcpy(e->mcv, mcv, 4);
	e->off = *off;
	uint8_t data[3000];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (uint8_t) (i * 7 + m->n);
	if (rnd() % 100 < 4) {
		static const uint32_t sizes[] = { 0, 1, 14, 300, 2999 };
		uint32_t n = sizes[rnd() % 5];
		tw_jumbo(f, mcv, (uint64_t) clock, data, n);
		e->size = WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD + n;
	} else {
		static const unsigned sizes[] = { 0, 0, 0, 2, 3, 4, 8, 16 };
		unsigned n = sizes[rnd() % 8];
		tw_event(f, mcv, (uint64_t) clock, data, n);
		e->size = WEFT_EV_HEADER_SIZE + n;
	}
	*off += e->size;
}

static const char *const mcvs[] = { "OB.", "OHp", "OJj", "OX?" };

static void gen_stream(FILE *f, struct strm *m, size_t nev)
{
	uint64_t off = WEFT_OBS_HEADER_SIZE;
	int64_t t = 2000 + rnd() % 1000;
	while (m->n + 40 < MAXE && m->n < nev) {
		unsigned r = rnd() % 1000;
		if (r < 60) {
			t += rnd() % 3;
			put(f, m, "OU[", t, &off);
			static const unsigned ks[] = { 0, 0, 1, 2, 3, 5, 10, 30 };
			static const unsigned reaches[] = { 0, 3, 20, 100, 1000 };
			unsigned k = ks[rnd() % 8], reach = reaches[rnd() % 5];
			int64_t top = t;
			for (unsigned i = 0; i < k; i++) {
				int64_t c = t - (int64_t) (rnd() % (reach + 1)) + rnd() % 4;
				if (c < 0)
					c = 0;
				put(f, m, rnd() % 100 < 4 ? "OU[" : mcvs[rnd() % 4], c, &off);
				if (c > top)
					top = c;
			}
			int64_t tc = rnd() % 10 ? top + rnd() % 3 : t - rnd() % 5;
			put(f, m, "OU]", tc, &off);
			if (tc > t)
				t = tc;
		} else if (r < 70) {
			put(f, m, "OU]", t, &off); /* a stray one */
		} else if (r < 75) {
			put(f, m, mcvs[rnd() % 4], t - 1 - rnd() % 50, &off); /* back, outside */
		} else {
			t += rnd() % 4 == 0 ? 0 : rnd() % 3;
			put(f, m, mcvs[rnd() % 4], t, &off);
		}
	}
	if (rnd() % 100 < 15) { /* the stream ends inside a region */
		put(f, m, "OU[", t + 1, &off);
		put(f, m, "OB.", t - 5, &off);
	}
}

static void make_trace(struct trace *tr, const char *root, uint64_t seed)
{
	rng = seed * 2654435761u + 11;
	for (size_t s = 0; s < MAXS; s++) {
		free(tr->s[s].file);
		free(tr->s[s].sorted);
	}
	memset(tr, 0, sizeof *tr);
	tr->ns = 1 + rnd() % MAXS;
	for (size_t s = 0; s < tr->ns; s++) {
		FILE *f = tw_stream(root, "vm", 1, 10 + (int) s, NULL);
		static const size_t lens[] = { 0, 1, 5, 40, 200, 600 };
		gen_stream(f, &tr->s[s], lens[rnd() % 6]);
		fclose(f);
		char path[4200];
		snprintf(path, sizeof path, "%s/loom.vm/proc.1/thread.%d/stream.obs", root, 10 + (int) s);
		tr->s[s].file = slurp(path, &tr->s[s].flen);
	}
}

/* Writes the model's sorted streams into a copy of the trace at root. */
static void write_sorted_copy(const struct trace *tr, const char *root)
{
	for (size_t s = 0; s < tr->ns; s++) {
		FILE *f = tw_stream(root, "vm", 1, 10 + (int) s, NULL);
		fclose(f);
		char path[4200];
		snprintf(path, sizeof path, "%s/loom.vm/proc.1/thread.%d/stream.obs", root, 10 + (int) s);
		f = fopen(path, "wb");
		fwrite(tr->s[s].sorted, 1, tr->s[s].slen, f);
		fclose(f);
	}
}

#define MAXSEEN 16384

struct seen {
	size_t n;
	size_t stream[MAXSEEN];
	uint64_t off[MAXSEEN];
};

static size_t stream_index(struct weft_trace *t, const struct weft_stream *st)
{
	for (size_t i = 0; i < weft_nstreams(t); i++)
		if (weft_stream_at(t, i) == st)
			return i;
	fail();
	return 0;
}

/* Reads the whole trace; returns weft_next*'s last result (0 or -1). */
static int read_all(const char *root, int sort, size_t look_back, int ra, int api,
		struct seen *seen, char *err, struct weft_trace **out)
{
	WEFT_OPTS(weft_open_opts, o);
	o.mode = WEFT_LENIENT;
	o.clock = WEFT_CLOCK_RAW;
	o.backwards = WEFT_BACKWARDS_WARN;
	o.readahead = ra ? WEFT_READAHEAD_ON : WEFT_READAHEAD_OFF;
	o.sort = sort ? WEFT_SORT_REGIONS : WEFT_SORT_NONE;
	o.sort_look_back = look_back;
	struct weft_trace *t = weft_open(root, &o, err, WEFT_ERR_MAX);
	assert_non_null(t);
	seen->n = 0;
	struct weft_event evs[7];
	struct weft_ref refs[7];
	long n;
	for (;;) {
		if (api == 0)
			n = weft_next(t, evs);
		else if (api == 1)
			n = weft_next_batch(t, evs, 7);
		else
			n = weft_next_refs(t, refs, 7);
		if (n <= 0)
			break;
		for (long i = 0; i < n; i++) {
			if (api == 2)
				weft_ref_event(t, &refs[i], &evs[i]);
			assert_true(seen->n < MAXSEEN);
			seen->stream[seen->n] = stream_index(t, evs[i].stream);
			seen->off[seen->n] = evs[i].offset;
			seen->n++;
		}
	}
	if (n < 0)
		snprintf(err, WEFT_ERR_MAX, "%s", weft_error(t));
	*out = t;
	return n < 0 ? -1 : 0;
}

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static int buf_write(void *ctx, const void *data, size_t len)
{
	struct buf *b = ctx;
	if (b->n + len > b->cap) {
		b->cap = (b->n + len) * 2;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, data, len);
	b->n += len;
	return 0;
}

/* What the random traces reached (each must be met). */
static size_t n_far, n_moved, n_clean;

static void check_trace(struct trace *tr, const char *root, const char *copy, size_t look_back)
{
	size_t lb = look_back ? look_back : WEFT_SORT_READ_LOOK_BACK;
	int any_far = 0;
	for (size_t s = 0; s < tr->ns; s++) {
		model_sort(&tr->s[s], lb);
		any_far |= tr->s[s].toofar;
		n_moved += tr->s[s].nmoved > 0;
	}
	n_far += any_far != 0;
	n_clean += any_far == 0;
	/* weft_sort_stream, against the model (its own look-back) */
	struct weft_trace *t = weft_open(root, NULL, NULL, 0);
	if (t == NULL) {
		char e[WEFT_ERR_MAX];
		WEFT_OPTS(weft_open_opts, o, .mode = WEFT_LENIENT);
		t = weft_open(root, &o, e, sizeof e);
	}
	assert_non_null(t);
	for (size_t s = 0; s < tr->ns; s++) {
		struct buf b = { 0 };
		struct weft_sort_report r;
		int rc = weft_sort_stream(t, s, lb, buf_write, &b, &r);
		if (tr->s[s].toofar) {
			assert_int_equal(rc, -1);
			assert_non_null(strstr(weft_error(t), "look-back"));
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(b.n, tr->s[s].slen);
			assert_memory_equal(b.p, tr->s[s].sorted, b.n);
			assert_int_equal(r.nmoved, tr->s[s].nmoved);
			assert_int_equal(r.nevents, tr->s[s].n);
		}
		free(b.p);
	}
	weft_close(t);
	if (!any_far) {
		tw_rmtree(copy);
		write_sorted_copy(tr, copy);
	}

	static const size_t chunks[] = { 64, 97, 4096, 0 };
	static struct seen got, want;
	char err[WEFT_ERR_MAX];
	for (size_t c = 0; c < 4; c++) {
		for (int ra = 0; ra < 2; ra++) {
			int api = (int) ((c + (size_t) ra) % 3);
			weft_chunk_override = chunks[c];
			struct weft_trace *tt;
			/* the first clocks, before iterating */
			WEFT_OPTS(weft_open_opts, o);
			o.mode = WEFT_LENIENT;
			o.sort = WEFT_SORT_REGIONS;
			o.sort_look_back = look_back;
			o.readahead = WEFT_READAHEAD_OFF;
			tt = weft_open(root, &o, err, sizeof err);
			assert_non_null(tt);
			for (size_t s = 0; s < tr->ns; s++) {
				int64_t fc;
				int has = weft_stream_first_sclock(tt, s, &fc);
				const struct strm *m = &tr->s[s];
				if (m->nsorted > 0 && (!m->toofar || m->nsorted > lb)) {
					assert_int_equal(has, 1);
					assert_int_equal(fc, m->out[0].clock);
				}
			}
			weft_close(tt);

			int rc = read_all(root, 1, look_back, ra, api, &got, err, &tt);
			uint64_t nsorted = weft_nsorted(tt);
			weft_close(tt);
			/* per stream: the sorted events, at their sorted offsets */
			size_t k[MAXS] = { 0 };
			uint64_t pos[MAXS];
			for (size_t s = 0; s < tr->ns; s++)
				pos[s] = WEFT_OBS_HEADER_SIZE;
			for (size_t i = 0; i < got.n; i++) {
				size_t s = got.stream[i];
				const struct strm *m = &tr->s[s];
				assert_true(k[s] < m->nsorted);
				assert_int_equal(got.off[i], pos[s]);
				pos[s] += m->out[k[s]].size;
				k[s]++;
			}
			if (any_far) {
				assert_int_equal(rc, -1);
				assert_non_null(strstr(err, "look-back of"));
				/* every stream stopped no later than its failure */
				continue;
			}
			assert_int_equal(rc, 0);
			uint64_t moved = 0;
			for (size_t s = 0; s < tr->ns; s++) {
				assert_int_equal(k[s], tr->s[s].nsorted);
				moved += tr->s[s].nmoved;
			}
			assert_int_equal(nsorted, moved);
			/* the global order: the sorted copy's, read without sorting */
			read_all(copy, 0, 0, ra, api, &want, err, &tt);
			assert_int_equal(weft_nsorted(tt), 0);
			weft_close(tt);
			assert_int_equal(got.n, want.n);
			for (size_t i = 0; i < got.n; i++) {
				assert_int_equal(got.stream[i], want.stream[i]);
				assert_int_equal(got.off[i], want.off[i]);
			}
		}
	}
	weft_chunk_override = 0;
}

static void test_random(void **state)
{
	(void) state;
	static struct trace tr;
	char *root = tw_tmpdir(), *copy = tw_tmpdir();
	for (uint64_t seed = 1; seed <= 120; seed++) {
		tw_rmtree(root);
		make_trace(&tr, root, seed);
		check_trace(&tr, root, copy, seed % 3 == 0 ? 3 : seed % 3 == 1 ? 30 : 0);
	}
	for (size_t s = 0; s < MAXS; s++) {
		free(tr.s[s].file);
		free(tr.s[s].sorted);
	}
	assert_true(n_far >= 10 && n_moved >= 50 && n_clean >= 40);
	tw_rmtree(root);
	tw_rmtree(copy);
	free(root);
	free(copy);
}

/* Stream 0: 60000 events, then a region whose event goes before them all;
 * nstreams - 1 more streams of one event. */
static void write_far(const char *root, size_t nstreams)
{
	FILE *f = tw_stream(root, "vm", 1, 10, NULL);
	for (int i = 0; i < 60000; i++)
		tw_event(f, "OB.", 100 + (uint64_t) i, NULL, 0);
	tw_event(f, "OU[", 70000, NULL, 0);
	tw_event(f, "OB.", 50, NULL, 0);
	tw_event(f, "OU]", 70001, NULL, 0);
	fclose(f);
	for (size_t s = 1; s < nstreams; s++) {
		f = tw_stream(root, "vm", 1, 10 + (int) s, NULL);
		tw_event(f, "OB.", 1, NULL, 0);
		fclose(f);
	}
}

/* The default look-back has no limit (the long stream is scanned first:
 * its region reaches back 60002 events, beyond the 52428 of 20 streams;
 * with 20, its window in the temporary file under a budget of 1 MiB);
 * a fixed one (sort_look_back, the last case) refuses a region beyond it. */
static void test_default_look_back(void **state)
{
	(void) state;
	static const size_t counts[] = { 1, 16, 20, 20 };
	for (size_t c = 0; c < 4; c++) {
		char *root = tw_tmpdir();
		write_far(root, counts[c]);
		WEFT_OPTS(weft_open_opts, o);
		o.sort = WEFT_SORT_REGIONS;
		o.sort_look_back = c == 3 ? 52428 : 0;
		/* 20 streams: the long one's window (60 bytes an event) is over
		 * this budget, so it lives in the temporary file */
		o.sort_budget = c == 2 ? (1u << 20) : 0;
		char err[WEFT_ERR_MAX];
		struct weft_trace *t = weft_open(root, &o, err, sizeof err);
		assert_non_null(t);
		int64_t fc = 0;
		struct weft_event ev;
		int r;
		uint64_t n = 0;
		if (c < 3) {
			assert_int_equal(weft_stream_first_sclock(t, 0, &fc), 1);
			assert_int_equal(fc, 50);
		}
		while ((r = weft_next(t, &ev)) > 0)
			n++;
		if (c < 3) {
			assert_int_equal(r, 0);
			assert_int_equal(n, 60003 + counts[c] - 1);
			assert_int_equal(weft_nsorted(t), 60002);
		} else {
			assert_int_equal(r, -1);
			char want[512];
			snprintf(want, sizeof want, "%s/loom.vm/proc.1/thread.10/stream.obs: offset %u: "
					"event OU]: the unordered region it closes (opened at offset %u) "
					"reaches back further than the look-back of 52428 events: none of "
					"the 52428 events before this OU] has a clock below 50, the "
					"region's earliest", root, 8 + 60002 * 12, 8 + 60000 * 12);
			assert_string_equal(weft_error(t), want);
		}
		weft_close(t);
		tw_rmtree(root);
		free(root);
	}
}

static void test_tail(void **state)
{
	(void) state;
	char *root = tw_tmpdir();
	FILE *f = tw_stream(root, "vm", 1, 10, NULL);
	tw_event(f, "OB.", 10, NULL, 0);
	tw_event(f, "OU[", 20, NULL, 0);
	tw_event(f, "OB.", 5, "abcd", 4);
	tw_event(f, "OU]", 21, NULL, 0);
	fwrite("\x03OB.", 1, 4, f); /* an event cut short */
	fclose(f);
	char err[WEFT_ERR_MAX];
	for (int sort = 0; sort < 2; sort++) {
		WEFT_OPTS(weft_open_opts, o);
		o.backwards = WEFT_BACKWARDS_REGIONS;
		o.sort = sort ? WEFT_SORT_REGIONS : WEFT_SORT_NONE;
		struct weft_trace *t = weft_open(root, &o, err, sizeof err);
		assert_non_null(t);
		struct weft_event ev;
		int64_t clocks[4];
		int n = 0, r;
		while ((r = weft_next(t, &ev)) > 0)
			clocks[n++] = ev.rclock;
		assert_int_equal(r, -1);
		assert_int_equal(n, 4);
		if (sort) {
			assert_int_equal(clocks[0], 5);
			assert_int_equal(clocks[1], 10);
			assert_int_equal(clocks[2], 20);
		}
		char want[512];
		snprintf(want, sizeof want, "%s/loom.vm/proc.1/thread.10/stream.obs: offset 60: "
				"event header cut short: 4 of 12 bytes before the end of the file", root);
		assert_string_equal(weft_error(t), want);
		weft_close(t);
	}
	/* weft_sort_stream refuses it; weft_stream_order too */
	struct weft_trace *t = weft_open(root, NULL, err, sizeof err);
	assert_non_null(t);
	struct weft_sort_report rep;
	assert_int_equal(weft_sort_stream(t, 0, 0, NULL, NULL, &rep), -1);
	assert_non_null(strstr(weft_error(t), "offset 60: event header cut short"));
	assert_int_equal(weft_stream_order(t, 0, &rep), -1);
	assert_non_null(strstr(weft_error(t), "offset 60: event header cut short"));
	weft_close(t);
	tw_rmtree(root);
	free(root);
}

/* More streams than file descriptors to spare: each stream file is opened
 * for each read, its sorter's too (and for the first clock). */
static void test_lean(void **state)
{
	(void) state;
	enum { NS = 40 };
	char *root = tw_tmpdir(), *copy = tw_tmpdir();
	for (int s = 0; s < NS; s++) {
		FILE *f = tw_stream(root, "vm", 1, 10 + s, NULL);
		FILE *g = tw_stream(copy, "vm", 1, 10 + s, NULL);
		for (int i = 0; i < 300; i++) {
			uint64_t c = 1000 + (uint64_t) (i * 10 + s);
			if (i % 50 == 20) {
				/* OU[, an event 5 back, OU]: sorted, the event goes
				 * before the OU[ */
				tw_event(f, "OU[", c, NULL, 0);
				tw_event(f, "OB.", c - 5, NULL, 0);
				tw_event(f, "OU]", c + 1, NULL, 0);
				tw_event(g, "OB.", c - 5, NULL, 0);
				tw_event(g, "OU[", c, NULL, 0);
				tw_event(g, "OU]", c + 1, NULL, 0);
			} else {
				tw_event(f, "OB.", c, NULL, 0);
				tw_event(g, "OB.", c, NULL, 0);
			}
		}
		fclose(f);
		fclose(g);
	}
	struct rlimit old, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 64;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	static struct seen got, want;
	char err[WEFT_ERR_MAX];
	for (int ra = 0; ra < 2; ra++) {
		WEFT_OPTS(weft_open_opts, o);
		o.sort = WEFT_SORT_REGIONS;
		struct weft_trace *t = weft_open(root, &o, err, sizeof err);
		assert_non_null(t);
		for (size_t s = 0; s < NS; s++) {
			int64_t fc;
			assert_int_equal(weft_stream_first_sclock(t, s, &fc), 1);
			assert_int_equal(fc, 1000 + (int64_t) s);
		}
		weft_close(t);
		assert_int_equal(read_all(root, 1, 0, ra, 1, &got, err, &t), 0);
		assert_int_equal(weft_nsorted(t), NS * 6 * 2);
		weft_close(t);
		assert_int_equal(read_all(copy, 0, 0, ra, 1, &want, err, &t), 0);
		weft_close(t);
		assert_int_equal(got.n, want.n);
		for (size_t i = 0; i < got.n; i++) {
			assert_int_equal(got.stream[i], want.stream[i]);
			assert_int_equal(got.off[i], want.off[i]);
		}
	}
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	tw_rmtree(root);
	tw_rmtree(copy);
	free(root);
	free(copy);
}

static void test_bad_choice(void **state)
{
	(void) state;
	char *root = tw_tmpdir();
	FILE *f = tw_stream(root, "vm", 1, 10, NULL);
	tw_event(f, "OB.", 10, NULL, 0);
	fclose(f);
	WEFT_OPTS(weft_open_opts, o);
	o.sort = (enum weft_sort) 5;
	char err[WEFT_ERR_MAX];
	assert_null(weft_open(root, &o, err, sizeof err));
	assert_string_equal(err, "weft_open: unknown choice 5 for sorting on read");
	tw_rmtree(root);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_default_look_back),
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_lean),
		cmocka_unit_test(test_bad_choice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
