/* SPDX-License-Identifier: MIT */
/*
 * test_prv_text.c - the text of the .prv records (paraver_prv.c, included
 * here for its static functions) against snprintf: records with random rows,
 * types and values, and times that step by a few ns (the incremental path,
 * its carries and the word boundaries of the time string), jump, go back,
 * are negative or near INT64_MAX, formatted in chunks of random sizes
 * across several write pieces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../src/out/paraver_prv.c"

static uint64_t rng = 88172645463325252u;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int64_t pick_value(void)
{
	switch (next() % 8) {
	case 0: return (int64_t) (next() % 1000);
	case 1: return (int64_t) (next() % 100000);
	case 2: return -(int64_t) (next() % 100000);
	case 3: return (int64_t) next();
	case 4: return INT64_MIN + (int64_t) (next() % 3);
	case 5: return INT64_MAX - (int64_t) (next() % 3);
	default: return (int64_t) (next() % 8);
	}
}

static int32_t pick_type(void)
{
	switch (next() % 7) {
	case 0: return (int32_t) (next() % 100000);
	case 6: return 999999 + (int32_t) (next() % 3); /* the longest word, and past it */
	case 1: return -(int32_t) (next() % 1000);
	case 2: return next() % 2 ? INT32_MIN : INT32_MAX;
	default: return (int32_t) (next() % 1000);
	}
}

/* The next time: mostly small steps from t, sometimes a jump. */
static int64_t pick_time(int64_t t)
{
	static const int64_t starts[] = { 0, 9, 95, 99999990, 999999999, 9999999995,
		1000000000000000000, INT64_MAX - 300, INT64_MAX - 5, -20, -100000005,
		INT64_MIN, 123456789012345 };
	uint64_t k = next() % 64;
	if (k == 0)
		return starts[next() % (sizeof starts / sizeof starts[0])];
	if (k == 1)
		return (int64_t) next();
	if (k == 2 && t >= INT64_MIN + 20)
		return t - (int64_t) (next() % 20);
	if (k < 40 && t <= INT64_MAX - 10)
		return t + (int64_t) (next() % 10);
	if (t <= INT64_MAX - 2000000)
		return t + (int64_t) (next() % 2000000);
	return t;
}

/* wide: rows numbered from 123456789 (prefixes longer than 16 bytes) */
static void check_text(int wide)
{
	const size_t nrows = 1200, nrec = 400000;
	const size_t row0 = wide ? 123456789 : 1;
	char path[] = "/tmp/weft-prv-text-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);

	struct prv p;
	memset(&p, 0, sizeof p);
	p.f.fd = fd;
	p.txt = malloc(TXT_BUF);
	p.big = calloc(BIG_SLOTS, sizeof *p.big);
	p.rows = calloc(nrows + 1, sizeof *p.rows);
	assert_non_null(p.txt);
	assert_non_null(p.big);
	assert_non_null(p.rows);
	for (size_t r = 0; r < nrows; r++)
		p.rows[r].len = (uint8_t) snprintf(p.rows[r].s, sizeof p.rows[r].s,
				"2:0:1:1:%zu:", r + row0);
	p.nrows = nrows;
	struct tcur t0 = { .len = 0 };
	p.tc = time_str_slow(t0, 0);

	/* records carry channel ids: the run's table gives their types */
	enum { NIDS = 512 };
	uint64_t *tword = calloc(NIDS, sizeof *tword);
	int32_t *ptype = calloc(NIDS, sizeof *ptype);
	assert_non_null(tword);
	assert_non_null(ptype);
	for (size_t i = 0; i < NIDS; i++) {
		ptype[i] = pick_type();
		tword[i] = type_word(ptype[i]);
	}
	p.tword = tword;
	p.ptype = ptype;

	struct brec *recs = calloc(nrec, sizeof *recs);
	assert_non_null(recs);
	size_t cap = nrec * 80, len = 0;
	char *want = malloc(cap);
	assert_non_null(want);
	int64_t t = 0;
	for (size_t i = 0; i < nrec; i++) {
		t = pick_time(t);
		recs[i].time = t;
		recs[i].row = (uint32_t) (next() % nrows);
		recs[i].chan = (uint32_t) (next() % NIDS);
		recs[i].value = pick_value();
		int n = snprintf(want + len, cap - len, "2:0:1:1:%zu:%" PRId64 ":%" PRId32 ":%" PRId64 "\n",
				recs[i].row + row0, recs[i].time, ptype[recs[i].chan], recs[i].value);
		assert_true(n > 0 && (size_t) n < cap - len);
		len += (size_t) n;
	}
	for (size_t i = 0; i < nrec;) {
		size_t n = 1 + next() % 3000;
		if (n > nrec - i)
			n = nrec - i;
		assert_int_equal(fmt_chunk(&p, recs + i, n), 0);
		i += n;
	}
	assert_int_equal(fmt_flush(&p), 0);
	assert_true(p.off == len);

	char *got = malloc(len + 1);
	assert_non_null(got);
	assert_true(pread(fd, got, len + 1, 0) == (ssize_t) len);
	size_t at = 0;
	while (at < len && got[at] == want[at])
		at++;
	if (at < len) {
		size_t from = at > 60 ? at - 60 : 0;
		print_error("first difference at byte %zu:\nwant %.120s\ngot  %.120s\n", at,
				want + from, got + from);
	}
	assert_true(at == len);
	close(fd);
	free(got);
	free(want);
	free(recs);
	free(p.txt);
	free(p.big);
	free(p.rows);
	free(tword);
	free(ptype);
}

static void text_matches(void **state)
{
	(void) state;
	check_text(0);
}

static void text_matches_wide_rows(void **state)
{
	(void) state;
	check_text(1);
}

/* The compile-time words of small and small_nl: "<n>:" and "<n>\n" in the
 * low bytes (first byte lowest), their length in the top byte. */
static void small_words(void **state)
{
	(void) state;
	for (unsigned n = 0; n < 1000; n++) {
		char want[8], nl[8];
		int k = snprintf(want, sizeof want, "%u:", n);
		snprintf(nl, sizeof nl, "%u\n", n);
		uint64_t w = small[n], x = small_nl[n];
		assert_int_equal(w >> 56, (uint64_t) k);
		assert_int_equal(x >> 56, (uint64_t) k);
		for (int b = 0; b < k; b++) {
			assert_int_equal((char) (w >> (8 * b)), want[b]);
			assert_int_equal((char) (x >> (8 * b)), nl[b]);
		}
		for (int b = k; b < 7; b++) {
			assert_int_equal((w >> (8 * b)) & 0xff, 0);
			assert_int_equal((x >> (8 * b)) & 0xff, 0);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(small_words),
		cmocka_unit_test(text_matches),
		cmocka_unit_test(text_matches_wide_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
