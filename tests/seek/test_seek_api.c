/* SPDX-License-Identifier: MIT */
/*
 * test_seek_api.c - weft_seek() and weft_open_opts.seek through the API:
 * one stream of 3 buffers (the first event, then OF[ OF] pairs), indexed by
 * weft_stream_write_index(); every seek clock gives the events a full read
 * gives from it on, with the index used (weft_nindexed) and no warning;
 * with the chunk size at its minimum (the scan crosses chunks); a seek after
 * the iteration began fails with its exact message.
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "idx_format.h"
#include "trace_internal.h"
#include "tracewrite.h"

static int nwarn;

static void count_warn(void *ctx, const char *msg)
{
	(void) ctx;
	(void) msg;
	nwarn++;
}

/* Clocks: first buffer 10..100, then OF[ 105, OF] 106, 110..200, OF[ 205,
 * OF] 206, 210..300: 31 events per part. */
static char *make_trace(void)
{
	char *root = tw_tmpdir();
	FILE *f = tw_stream(root, "vm", 1, 1, NULL);
	uint8_t pl[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	for (int part = 0; part < 3; part++) {
		if (part > 0) {
			tw_event(f, "OF[", (uint64_t) (100 * part + 5), NULL, 0);
			tw_event(f, "OF]", (uint64_t) (100 * part + 6), NULL, 0);
		}
		for (int k = 1; k <= 10; k++)
			tw_event(f, "OB.", (uint64_t) (100 * part + 10 * k), pl, (unsigned) (k % 3) * 4);
	}
	fclose(f);
	return root;
}

/* Every event of root from a seek to at (or all of them without seek):
 * its key in the order of clock (rclock with WEFT_CLOCK_RAW, else sclock)
 * and, when ss is not NULL, its stream (by its index + 1, stable across
 * opens); *nindexed: the streams the seek positioned by their index. */
static size_t read_keys(const char *root, enum weft_clock clock, int seek, int64_t at,
		int64_t *keys, const struct weft_stream **ss, size_t max, size_t *nindexed)
{
	WEFT_OPTS(weft_open_opts, o);
	o.warn = count_warn;
	o.clock = clock;
	o.seek = seek;
	o.seek_clock = at;
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(root, &o, err, sizeof err);
	assert_non_null(t);
	struct weft_event ev;
	size_t n = 0;
	int r;
	while ((r = weft_next(t, &ev)) > 0) {
		assert_true(n < max);
		keys[n] = clock == WEFT_CLOCK_RAW ? ev.rclock : ev.sclock;
		for (size_t i = 0; ss != NULL && i < weft_nstreams(t); i++)
			if (weft_stream_at(t, i) == ev.stream)
				ss[n] = (const struct weft_stream *) (uintptr_t) (i + 1);
		n++;
	}
	assert_int_equal(r, 0);
	if (nindexed != NULL)
		*nindexed = weft_nindexed(t);
	weft_close(t);
	return n;
}

/* The raw clocks (one stream: no offset). */
static size_t read_all(const char *root, int seek, int64_t at, int64_t *clocks, size_t max,
		size_t *nindexed)
{
	return read_keys(root, WEFT_CLOCK_RAW, seek, at, clocks, NULL, max, nindexed);
}

static void test_every_clock(void **state)
{
	(void) state;
	char *root = make_trace();
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(root, NULL, err, sizeof err);
	assert_non_null(t);
	char ip[4096];
	uint64_t n = 0;
	assert_int_equal(weft_stream_write_index(t, 0, ip, sizeof ip, &n), 0);
	assert_int_equal(n, 3);
	weft_close(t);
	int64_t all[64], got[64];
	size_t ni;
	size_t nall = read_all(root, 0, 0, all, 64, &ni);
	assert_int_equal(nall, 34);
	for (size_t cs = 0; cs < 2; cs++) {
		weft_chunk_override = cs ? WEFT_EV_MAX_NORMAL_SIZE : 0;
		for (int64_t at = 0; at <= 310; at++) {
			nwarn = 0;
			size_t k = read_all(root, 1, at, got, 64, &ni);
			size_t skip = 0;
			while (skip < nall && all[skip] < at)
				skip++;
			assert_int_equal(k, nall - skip);
			assert_memory_equal(got, all + skip, k * sizeof *got);
			assert_int_equal(nwarn, 0);
			assert_int_equal(ni, 1);
		}
	}
	weft_chunk_override = 0;
	tw_rmtree(root);
	free(root);
}

static void test_seek_late(void **state)
{
	(void) state;
	char *root = make_trace();
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(root, NULL, err, sizeof err);
	assert_non_null(t);
	assert_int_equal(weft_seek(t, 150), 0);
	struct weft_event ev;
	assert_int_equal(weft_next(t, &ev), 1);
	assert_int_equal(ev.rclock, 150);
	assert_int_equal(weft_seek(t, 10), -1);
	assert_string_equal(weft_error(t), "weft_seek: the iteration has begun; seek before the "
			"first weft_next call");
	weft_close(t);
	tw_rmtree(root);
	free(root);
}

/* Two looms, hostA (offset 0) and hostB (offset 1000), three threads each,
 * whose clocks tie in both orders: raw clocks 100 + 10 i in every stream of
 * both looms (ties across all six streams in the raw order), so that hostB's
 * are 1000 later in the offset order, where hostA's i = k + 100 tie with
 * hostB's i = k. */
static char *make_two_looms(void)
{
	char *root = tw_tmpdir();
	const char *looms[2] = { "hostA.0", "hostB.1" };
	for (int l = 0; l < 2; l++) {
		for (int th = 0; th < 3; th++) {
			FILE *f = tw_stream(root, looms[l], 10 + l, 100 * (l + 1) + th, NULL);
			for (int i = 0; i < 300; i++)
				tw_event(f, "OB.", (uint64_t) (100 + 10 * i), NULL, 0);
			fclose(f);
		}
	}
	char *p = NULL;
	assert_true(asprintf(&p, "%s/clock-offsets.txt", root) > 0);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs("rank hostname offset_median offset_mean offset_std\n0 hostA 0 0 0\n"
			"1 hostB 1000 0 0\n", f);
	fclose(f);
	free(p);
	return root;
}

/* The merge index of a trace with clock offsets has a section per order;
 * a seek in either order to every clock gives exactly the full read's
 * events from there on, ties across streams in the same order. */
static void test_merge_index_orders(void **state)
{
	(void) state;
	char *root = make_two_looms();
	char ip[4096], err[WEFT_ERR_MAX];
	uint64_t n = 0;
	setenv("WEFT_MIDX_SPACING", "100", 1);
	assert_int_equal(weft_write_merge_index(root, NULL, ip, sizeof ip, &n, err, sizeof err), 0);
	unsetenv("WEFT_MIDX_SPACING");
	/* 1800 events of 12 bytes, a checkpoint every 100 bytes, per order */
	assert_int_equal(n, 2 * (1800 * 12 / 108));
	enum { MAX = 1800 };
	static int64_t all[MAX], got[MAX];
	static const struct weft_stream *sall[MAX], *sgot[MAX];
	for (int o = 0; o < 2; o++) {
		enum weft_clock clock = o ? WEFT_CLOCK_OFFSET : WEFT_CLOCK_RAW;
		size_t nall = read_keys(root, clock, 0, 0, all, sall, MAX, NULL);
		assert_int_equal(nall, MAX);
		for (int64_t at = 90; at <= 4100; at += 5) {
			nwarn = 0;
			size_t k = read_keys(root, clock, 1, at, got, sgot, MAX, NULL);
			size_t skip = 0;
			while (skip < nall && all[skip] < at)
				skip++;
			assert_int_equal(k, nall - skip);
			assert_memory_equal(got, all + skip, k * sizeof *got);
			assert_memory_equal(sgot, sall + skip, k * sizeof *sgot);
			assert_int_equal(nwarn, 0);
		}
	}
	tw_rmtree(root);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_index_orders),
		cmocka_unit_test(test_every_clock),
		cmocka_unit_test(test_seek_late),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
