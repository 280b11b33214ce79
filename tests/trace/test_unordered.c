/* SPDX-License-Identifier: MIT */
/*
 * test_unordered.c - clocks going backwards within a stream, inside and
 * outside unordered regions (OU[ ... OU]), under the three rules of
 * weft_open_opts.backwards.
 *
 *   test_random       random traces (1 to 6 streams; region markers, stray
 *                     OU], clocks going back by up to 20 ns, jumbo events)
 *                     against an independent model: which backwards clocks
 *                     are inside a region, the global order (the reference's
 *                     heap over the clocks as they are), the warnings
 *                     (WEFT_BACKWARDS_WARN: the first 10, then a count),
 *                     weft_nbackwards, and where WEFT_BACKWARDS_REGIONS and
 *                     WEFT_BACKWARDS_ERROR stop with which error; with read
 *                     chunks of 28, 40, 97, 4096 bytes and the default size,
 *                     with and without the read-ahead thread, through
 *                     weft_next, weft_next_batch and weft_next_refs.
 *   test_long_region  a region opened 240 KB before its backwards clock,
 *                     and one closed 240 KB before: the region state is
 *                     carried over many chunks (read again from the file).
 *   test_bad_rule     an unknown rule is refused by weft_open.
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

#include "tracewrite.h"
#include "weft/weft.h"

extern size_t weft_chunk_override;

#define MAXS 6
#define MAXE 400
#define JUMBO_MCV "OJj"

struct model {
	size_t ns;
	size_t nev[MAXS];
	int64_t clk[MAXS][MAXE];
	uint64_t off[MAXS][MAXE];
	char mcv[MAXS][MAXE][4];
	int back[MAXS][MAXE]; /* 0 in order, 1 backwards inside a region, 2 outside */
};

static uint64_t rng;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng >> 16);
}

/* The reference's heap over the clocks as they are: (stream, index) pairs. */
static size_t model_order(const struct model *m, int out[][2])
{
	size_t heap[MAXS], n = 0, pos[MAXS] = { 0 }, k = 0;
#define KEY(s) (m->clk[(s)][pos[(s)]])
#define PUSH(s)                                                                        \
	do {                                                                           \
		size_t i_ = n++;                                                       \
		heap[i_] = (s);                                                        \
		while (i_ > 0 && KEY(heap[i_]) < KEY(heap[(i_ - 1) / 2])) {            \
			size_t t_ = heap[i_];                                          \
			heap[i_] = heap[(i_ - 1) / 2];                                 \
			heap[(i_ - 1) / 2] = t_;                                       \
			i_ = (i_ - 1) / 2;                                             \
		}                                                                      \
	} while (0)
	for (size_t s = 0; s < m->ns; s++)
		if (m->nev[s] > 0)
			PUSH(s);
	long prev = -1;
	for (;;) {
		if (prev >= 0) {
			size_t s = (size_t) prev;
			if (++pos[s] < m->nev[s])
				PUSH(s);
		}
		if (n == 0)
			break;
		size_t top = heap[0];
		heap[0] = heap[--n];
		size_t i = 0;
		for (;;) {
			size_t l = 2 * i + 1, r = l + 1, best = i;
			if (l < n && KEY(heap[l]) < KEY(heap[best]))
				best = l;
			if (r < n && KEY(heap[r]) < KEY(heap[best]))
				best = r;
			if (best == i)
				break;
			size_t t = heap[i];
			heap[i] = heap[best];
			heap[best] = t;
			i = best;
		}
		out[k][0] = (int) top;
		out[k][1] = (int) pos[top];
		k++;
		prev = (long) top;
	}
#undef KEY
#undef PUSH
	return k;
}

/* Writes one event of stream s (index e) and notes it in the model. */
static void put(struct model *m, FILE *f, size_t s, size_t e, const char *mcv, int64_t clock,
		int jumbo, uint64_t *off)
{
	uint32_t idx = (uint32_t) e;
	m->clk[s][e] = clock;
	m->off[s][e] = *off;
	memcpy(m->mcv[s][e], mcv, 4);
	if (jumbo) {
		uint8_t data[200] = { 0 };
		uint32_t n = 4 + rnd() % 150;
		memcpy(data, &idx, 4);
		tw_jumbo(f, mcv, (uint64_t) clock, data, n);
		*off += WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD + n;
	} else {
		tw_event(f, mcv, (uint64_t) clock, &idx, 4);
		*off += WEFT_EV_HEADER_SIZE + 4;
	}
}

/* Classifies every event as the rules say: backwards against the previous
 * event of its stream; inside when an OU[ came before it that no OU] closed,
 * unless it is that OU]. */
static void classify(struct model *m)
{
	for (size_t s = 0; s < m->ns; s++) {
		int in = 0;
		for (size_t e = 0; e < m->nev[s]; e++) {
			const char *mcv = m->mcv[s][e];
			int open = strcmp(mcv, "OU[") == 0, close = strcmp(mcv, "OU]") == 0;
			m->back[s][e] = 0;
			if (e > 0 && m->clk[s][e] < m->clk[s][e - 1])
				m->back[s][e] = in && !close ? 1 : 2;
			if (open)
				in = 1;
			if (close)
				in = 0;
		}
	}
}

static void make_trace(struct model *m, const char *root, uint64_t seed)
{
	rng = seed * 2654435761u + 7;
	memset(m, 0, sizeof *m);
	m->ns = 1 + rnd() % MAXS;
	unsigned backrate = 1 + rnd() % 10, markrate = 1 + rnd() % 8;
	for (size_t s = 0; s < m->ns; s++) {
		FILE *f = tw_stream(root, "vm", 1, 10 + (int) s, NULL);
		uint64_t off = WEFT_OBS_HEADER_SIZE;
		m->nev[s] = 1 + rnd() % MAXE;
		int64_t c = 1000 + rnd() % 5;
		for (size_t e = 0; e < m->nev[s]; e++) {
			unsigned r = rnd() % 100;
			const char *mcv = "OB.";
			int jumbo = 0;
			if (r < markrate)
				mcv = "OU[";
			else if (r < 2 * markrate)
				mcv = "OU]";
			else if (r < 2 * markrate + 2)
				jumbo = 1, mcv = JUMBO_MCV;
			if (e > 0 && rnd() % 100 < backrate)
				c -= 1 + rnd() % 20;
			else
				c += rnd() % 3;
			put(m, f, s, e, mcv, c, jumbo, &off);
		}
		fclose(f);
	}
	classify(m);
}

struct warns {
	size_t n;
	char msg[64][WEFT_ERR_MAX];
};

static void warn_cb(void *ctx, const char *msg)
{
	struct warns *w = ctx;
	if (w->n < 64)
		snprintf(w->msg[w->n], sizeof w->msg[0], "%s", msg);
	w->n++;
}

static void obs_of(char *buf, size_t len, const char *root, size_t s)
{
	snprintf(buf, len, "%s/loom.vm/proc.1/thread.%d/stream.obs", root, 10 + (int) s);
}

static void back_msg(char *buf, size_t len, const char *root, const struct model *m, size_t s,
		size_t e, const char *tail)
{
	char obs[4200];
	obs_of(obs, sizeof obs, root, s);
	snprintf(buf, len, "%s: offset %" PRIu64 ": event %s: clock goes backwards from %" PRId64
			" to %" PRId64 " within the stream%s", obs, m->off[s][e], m->mcv[s][e],
			m->clk[s][e - 1], m->clk[s][e], tail);
}

/* Reads the trace under one rule and setting; checks it against the model
 * (order the events as `order`, nord of them). how: 0 weft_next, 1 batches,
 * 2 refs. */
static void run_one(const char *root, const struct model *m, int order[][2], size_t nord,
		enum weft_backwards rule, enum weft_readahead ra, size_t chunk, int how,
		uint64_t seed)
{
	weft_chunk_override = chunk;
	struct warns *w = calloc(1, sizeof *w);
	assert_non_null(w);
	WEFT_OPTS(weft_open_opts, o);
	o.mode = WEFT_LENIENT;
	o.warn = warn_cb;
	o.warn_ctx = w;
	o.clock = WEFT_CLOCK_RAW;
	o.readahead = ra;
	o.backwards = rule;
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(root, &o, err, sizeof err);
	if (t == NULL)
		fail_msg("open: %s", err);

	/* What the model says: stop before the first stepping onto a refused
	 * event (after its stream's previous event is yielded). */
	size_t stop = nord, bad_s = 0, bad_e = 0;
	int bad = 0;
	uint64_t nin = 0, nout = 0;
	for (size_t k = 0; k < nord && !bad; k++) {
		size_t s = (size_t) order[k][0], e = (size_t) order[k][1] + 1;
		if (e >= m->nev[s])
			continue;
		int b = m->back[s][e];
		if ((b == 2 && rule != WEFT_BACKWARDS_WARN) || (b == 1 && rule == WEFT_BACKWARDS_ERROR)) {
			bad = 1;
			stop = k + 1;
			bad_s = s;
			bad_e = e;
		} else if (b == 1) {
			nin++;
		} else if (b == 2) {
			nout++;
		}
	}

	static struct weft_event evs[64];
	static struct weft_ref refs[64];
	size_t k = 0, bsize = 1;
	long r;
	for (;;) {
		bsize = (bsize * 7 + 3) % 64 + 1;
		if (how == 0)
			r = weft_next(t, evs);
		else if (how == 1)
			r = weft_next_batch(t, evs, bsize);
		else
			r = weft_next_refs(t, refs, bsize);
		if (r <= 0)
			break;
		for (long b = 0; b < r; b++) {
			struct weft_event ev;
			if (how == 2)
				weft_ref_event(t, &refs[b], &ev);
			else
				ev = evs[b];
			size_t s;
			for (s = 0; s < m->ns; s++)
				if (weft_stream_at(t, s) == ev.stream)
					break;
			assert_true(s < m->ns);
			uint32_t idx;
			memcpy(&idx, ev.jumbo ? ev.jumbo_data : ev.payload, 4);
			if (k >= nord || order[k][0] != (int) s || order[k][1] != (int) idx)
				fail_msg("seed %" PRIu64 " rule %d ra %d chunk %zu how %d: event %zu is "
						"(%zu,%u), the model says (%d,%d)", seed, (int) rule,
						(int) ra, chunk, how, k, s, idx, k < nord ? order[k][0] : -1,
						k < nord ? order[k][1] : -1);
			assert_int_equal(ev.rclock, m->clk[s][idx]);
			assert_int_equal(ev.offset, m->off[s][idx]);
			k++;
		}
	}
	char want[8192];
	if (bad) {
		assert_int_equal(r, -1);
		back_msg(want, sizeof want, root, m, bad_s, bad_e, "");
		assert_string_equal(weft_error(t), want);
	} else {
		assert_int_equal(r, 0);
	}
	if (k != stop)
		fail_msg("seed %" PRIu64 " rule %d ra %d chunk %zu how %d: %zu events, the model "
				"says %zu", seed, (int) rule, (int) ra, chunk, how, k, stop);
	assert_int_equal(weft_nbackwards(t, 1), nin);
	assert_int_equal(weft_nbackwards(t, 0), nout);

	/* the warnings: each outside clock in stepping order, the first 10,
	 * then (at the end) how many more */
	size_t nw = 0;
	for (size_t q = 0; q < stop && nw < 10; q++) {
		size_t s = (size_t) order[q][0], e = (size_t) order[q][1] + 1;
		if (e < m->nev[s] && m->back[s][e] == 2 && rule == WEFT_BACKWARDS_WARN) {
			back_msg(want, sizeof want, root, m, s, e,
					", outside an unordered region");
			assert_true(nw < w->n);
			assert_string_equal(w->msg[nw], want);
			nw++;
		}
	}
	if (nout > 10) {
		snprintf(want, sizeof want, "%" PRIu64 " more clocks go backwards outside "
				"unordered regions (%" PRIu64 " in all; only the first 10 are shown)",
				nout - 10, nout);
		assert_true(nw < w->n);
		assert_string_equal(w->msg[nw], want);
		nw++;
	}
	assert_int_equal(w->n, nw);
	weft_close(t);
	weft_chunk_override = 0; /* it applies from the first read on */
	free(w);
}

static void test_random(void **state)
{
	(void) state;
	static const size_t chunks[] = { 28, 40, 97, 4096, 0 };
	static const enum weft_backwards rules[] = { WEFT_BACKWARDS_WARN, WEFT_BACKWARDS_REGIONS,
		WEFT_BACKWARDS_ERROR };
	static int order[MAXS * MAXE][2];
	static struct model m;
	uint64_t total_in = 0, total_out = 0;
	for (uint64_t seed = 1; seed <= 60; seed++) {
		char *root = tw_tmpdir();
		make_trace(&m, root, seed);
		size_t nord = model_order(&m, order);
		for (size_t s = 0; s < m.ns; s++)
			for (size_t e = 0; e < m.nev[s]; e++) {
				total_in += m.back[s][e] == 1;
				total_out += m.back[s][e] == 2;
			}
		for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
			for (int ra = WEFT_READAHEAD_OFF; ra <= WEFT_READAHEAD_ON; ra++)
				for (size_t ru = 0; ru < 3; ru++)
					run_one(root, &m, order, nord, rules[ru],
							(enum weft_readahead) ra, chunks[c],
							(int) ((seed + c + ru) % 3), seed);
		tw_rmtree(root);
		free(root);
	}
	/* the random traces have both kinds, plenty of each */
	assert_true(total_in > 100);
	assert_true(total_out > 100);
}

/* One stream: OU[ (or OU[ then OU] when closed), 20000 events, then a clock
 * going back: inside the region, or outside when it was closed. */
static void long_region(int closed, size_t chunk, enum weft_readahead ra)
{
	char *root = tw_tmpdir();
	FILE *f = tw_stream(root, "vm", 1, 1, NULL);
	uint32_t z = 0;
	tw_event(f, "OHx", 10, NULL, 0);
	tw_event(f, "OU[", 20, NULL, 0);
	if (closed)
		tw_event(f, "OU]", 21, NULL, 0);
	uint64_t off = WEFT_OBS_HEADER_SIZE + 24 + (closed ? 12 : 0);
	for (uint32_t i = 0; i < 20000; i++) {
		tw_event(f, "OB.", 100 + i, &z, i % 50 == 0 ? 0 : 4);
		off += i % 50 == 0 ? 12 : 16;
		if (i % 1000 == 0) {
			uint8_t data[3000] = { 0 };
			tw_jumbo(f, JUMBO_MCV, 100 + i, data, 3000);
			off += 16 + 3000;
		}
	}
	tw_event(f, "OB.", 50, NULL, 0); /* back from 20099 */
	tw_event(f, "OHe", 30000, NULL, 0);
	fclose(f);

	weft_chunk_override = chunk;
	struct warns *w = calloc(1, sizeof *w);
	assert_non_null(w);
	WEFT_OPTS(weft_open_opts, o);
	o.mode = WEFT_LENIENT;
	o.warn = warn_cb;
	o.warn_ctx = w;
	o.readahead = ra;
	o.backwards = WEFT_BACKWARDS_WARN;
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(root, &o, err, sizeof err);
	assert_non_null(t);
	static struct weft_ref refs[512];
	long r;
	while ((r = weft_next_refs(t, refs, 512)) > 0)
		;
	assert_int_equal(r, 0);
	assert_int_equal(weft_nevents(t), 2 + (closed ? 1 : 0) + 20000 + 20 + 2);
	assert_int_equal(weft_nbackwards(t, 1), closed ? 0 : 1);
	assert_int_equal(weft_nbackwards(t, 0), closed ? 1 : 0);
	if (closed) {
		char want[8192];
		snprintf(want, sizeof want, "%s/loom.vm/proc.1/thread.1/stream.obs: offset %" PRIu64
				": event OB.: clock goes backwards from 20099 to 50 within the "
				"stream, outside an unordered region", root, off);
		assert_int_equal(w->n, 1);
		assert_string_equal(w->msg[0], want);
	} else {
		assert_int_equal(w->n, 0);
	}
	weft_close(t);
	weft_chunk_override = 0; /* it applies from the first read on */
	free(w);
	tw_rmtree(root);
	free(root);
}

static void test_long_region(void **state)
{
	(void) state;
	static const size_t chunks[] = { 4096, 20000, 0 };
	for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
		for (int ra = WEFT_READAHEAD_OFF; ra <= WEFT_READAHEAD_ON; ra++)
			for (int closed = 0; closed < 2; closed++)
				long_region(closed, chunks[c], (enum weft_readahead) ra);
}

static void test_bad_rule(void **state)
{
	(void) state;
	char *root = tw_tmpdir();
	FILE *f = tw_stream(root, "vm", 1, 1, NULL);
	tw_event(f, "OHx", 10, NULL, 0);
	fclose(f);
	WEFT_OPTS(weft_open_opts, o);
	o.backwards = (enum weft_backwards) 7;
	char err[WEFT_ERR_MAX];
	assert_null(weft_open(root, &o, err, sizeof err));
	assert_string_equal(err, "weft_open: unknown rule 7 for clocks going backwards");
	tw_rmtree(root);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_long_region),
		cmocka_unit_test(test_bad_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
