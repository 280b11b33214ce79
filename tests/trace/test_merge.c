/* SPDX-License-Identifier: MIT */
/*
 * test_merge.c - the global event order on random traces full of equal
 * clocks: weft's order (heap only, with its fast path, and in batches) must
 * equal an independent model of the reference's heap (facts note §4.3).
 * Also weft_stream_ended(): a stream's end is known before any event after
 * its last one is yielded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_internal.h"
#include "tracewrite.h"

#define MAXS 16
#define MAXE 300

struct model {
	size_t ns;
	size_t nev[MAXS];
	int64_t clk[MAXS][MAXE];
};

static uint64_t rng;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng >> 16);
}

/* Independent heap model: returns the order as (stream, event index) pairs. */
static size_t model_order(const struct model *m, int out[][2])
{
	size_t heap[MAXS], n = 0, pos[MAXS] = { 0 };
	size_t k = 0;
#define KEY(s) (m->clk[(s)][pos[(s)]])
	for (size_t s = 0; s < m->ns; s++) {
		if (m->nev[s] == 0)
			continue;
		size_t i = n++;
		heap[i] = s;
		while (i > 0 && KEY(heap[i]) < KEY(heap[(i - 1) / 2])) {
			size_t tmp = heap[i];
			heap[i] = heap[(i - 1) / 2];
			heap[(i - 1) / 2] = tmp;
			i = (i - 1) / 2;
		}
	}
	long prev = -1;
	for (;;) {
		if (prev >= 0) {
			size_t s = (size_t) prev;
			pos[s]++;
			if (pos[s] < m->nev[s]) {
				size_t i = n++;
				heap[i] = s;
				while (i > 0 && KEY(heap[i]) < KEY(heap[(i - 1) / 2])) {
					size_t tmp = heap[i];
					heap[i] = heap[(i - 1) / 2];
					heap[(i - 1) / 2] = tmp;
					i = (i - 1) / 2;
				}
			}
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
			size_t tmp = heap[i];
			heap[i] = heap[best];
			heap[best] = tmp;
			i = best;
		}
		out[k][0] = (int) top;
		out[k][1] = (int) pos[top];
		k++;
		prev = (long) top;
	}
#undef KEY
	return k;
}

/* mode 0: weft_next through the heap only; 1: weft_next; 2: weft_next_batch
 * with batches of changing sizes. */
static size_t weft_order(const char *root, int mode, int out[][2], const struct model *m)
{
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(root, NULL, err, sizeof err);
	if (t == NULL)
		fail_msg("open: %s", err);
	weft_trace_set_no_fast(t, mode == 0);
	assert_int_equal(weft_nstreams(t), m->ns);
	static struct weft_event evs[64];
	size_t k = 0, bsize = 1;
	long r;
	/* where each stream's last event was yielded (-1: not yet) */
	long lastpos[MAXS];
	for (size_t s = 0; s < m->ns; s++)
		lastpos[s] = -1;
	for (;;) {
		if (mode == 2) {
			bsize = (bsize * 7 + 3) % 64 + 1; /* 1..64 */
			r = weft_next_batch(t, evs, bsize);
		} else {
			r = weft_next(t, evs);
		}
		if (r <= 0)
			break;
		for (long b = 0; b < r; b++) {
			const struct weft_event *ev = &evs[b];
			size_t s;
			for (s = 0; s < m->ns; s++)
				if (weft_stream_at(t, s) == ev->stream)
					break;
			assert_true(s < m->ns);
			/* the payload holds the event index */
			uint32_t idx;
			assert_int_equal(ev->payload_size, 4);
			memcpy(&idx, ev->payload, 4);
			assert_int_equal(ev->rclock, m->clk[s][idx]);
			out[k][0] = (int) s;
			out[k][1] = (int) idx;
			if (idx + 1 == m->nev[s])
				lastpos[s] = (long) k;
			k++;
		}
		/* weft_stream_ended: every stream whose last event precedes
		 * one yielded has ended; none with events left has */
		for (size_t s = 0; s < m->ns; s++) {
			if (m->nev[s] == 0 || (lastpos[s] >= 0 && lastpos[s] < (long) k - 1))
				assert_int_equal(weft_stream_ended(t, s), 1);
			if (lastpos[s] < 0 && m->nev[s] > 0)
				assert_int_equal(weft_stream_ended(t, s), 0);
		}
	}
	assert_int_equal(r, 0);
	for (size_t s = 0; s < m->ns; s++)
		assert_int_equal(weft_stream_ended(t, s), 1);
	weft_close(t);
	return k;
}

static void one_trace(uint64_t seed)
{
	rng = seed * 2654435761u + 1;
	struct model m;
	memset(&m, 0, sizeof m);
	m.ns = 1 + rnd() % MAXS;
	char *root = tw_tmpdir();
	size_t total = 0;
	int spread = 1 + (int) (rnd() % 4);
	for (size_t s = 0; s < m.ns; s++) {
		/* tids 10..25: relpath order is the tid order */
		FILE *f = tw_stream(root, "vm", 1, 10 + (int) s, NULL);
		m.nev[s] = rnd() % 4 == 0 ? 0 : rnd() % MAXE;
		int64_t c = rnd() % 5;
		for (size_t e = 0; e < m.nev[s]; e++) {
			c += rnd() % (unsigned) (spread + 1);
			m.clk[s][e] = c;
			uint32_t idx = (uint32_t) e;
			tw_event(f, "OB.", (uint64_t) c, &idx, 4);
		}
		total += m.nev[s];
		fclose(f);
	}
	static int a[MAXS * MAXE][2], b[MAXS * MAXE][2], c[MAXS * MAXE][2], d[MAXS * MAXE][2];
	size_t na = model_order(&m, a);
	size_t nb = weft_order(root, 0, b, &m);
	size_t nc = weft_order(root, 1, c, &m);
	/* batches over chunks of a few events: a stream's end is often
	 * found by the call after the one that yields its last event */
	weft_chunk_override = seed % 2 ? WEFT_EV_MAX_NORMAL_SIZE : 0;
	size_t nd = weft_order(root, 2, d, &m);
	weft_chunk_override = 0;
	assert_int_equal(na, total);
	assert_int_equal(nb, total);
	assert_int_equal(nc, total);
	assert_int_equal(nd, total);
	for (size_t i = 0; i < total; i++) {
		if (a[i][0] != b[i][0] || a[i][1] != b[i][1] || a[i][0] != c[i][0]
				|| a[i][1] != c[i][1] || a[i][0] != d[i][0] || a[i][1] != d[i][1])
			fail_msg("seed %llu: event %zu: model (%d,%d) heap (%d,%d) fast (%d,%d) "
					"batch (%d,%d)", (unsigned long long) seed, i, a[i][0], a[i][1],
					b[i][0], b[i][1], c[i][0], c[i][1], d[i][0], d[i][1]);
	}
	tw_rmtree(root);
	free(root);
}

static void test_random_ties(void **state)
{
	(void) state;
	for (uint64_t seed = 1; seed <= 300; seed++)
		one_trace(seed);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_ties),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
