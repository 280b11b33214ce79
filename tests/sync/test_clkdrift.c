/* SPDX-License-Identifier: MIT */
/*
 * The clock drift of clock-offsets.txt (src/trace/clkoff.c, docs/sync.md,
 * "Drift"): the exact arithmetic c + offset + floor(ppb * (c - t0) / 10^9)
 * at the int64 bounds and with negative drifts, the range of clocks whose
 * correction is an int64, and the parsing of the drift section with its
 * errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "trace_internal.h"

static void test_drift_arith(void **state)
{
	(void) state;
	int64_t v = 0;
	/* at t0 only the offset */
	assert_int_equal(weft_clk_drift(5000, 7, 5000, 50000, &v), 1);
	assert_int_equal(v, 5007);
	/* +50 ppm and -50 ppm over one second */
	assert_int_equal(weft_clk_drift(1000000000, 0, 0, 50000, &v), 1);
	assert_int_equal(v, 1000050000);
	assert_int_equal(weft_clk_drift(1000000000, 0, 0, -50000, &v), 1);
	assert_int_equal(v, 999950000);
	/* before t0 the drift goes the other way */
	assert_int_equal(weft_clk_drift(-1000000000, 0, 0, 50000, &v), 1);
	assert_int_equal(v, -1000050000);
	/* floor, not truncation: -1 ppb for 1 ns is -1, +1 ppb 1 ns before t0 too */
	assert_int_equal(weft_clk_drift(1000000000007LL, -5, 1000000000000LL, -1, &v), 1);
	assert_int_equal(v, 1000000000001LL);
	assert_int_equal(weft_clk_drift(99, 0, 100, 1, &v), 1);
	assert_int_equal(v, 98);
	assert_int_equal(weft_clk_drift(101, 0, 100, 1, &v), 1);
	assert_int_equal(v, 101);
	/* the bounds: c - t0 spans 2^64 - 1 without overflow */
	assert_int_equal(weft_clk_drift(INT64_MAX, 0, INT64_MAX, 999999999, &v), 1);
	assert_int_equal(v, INT64_MAX);
	assert_int_equal(weft_clk_drift(INT64_MIN, 0, INT64_MIN, -999999999, &v), 1);
	assert_int_equal(v, INT64_MIN);
	assert_int_equal(weft_clk_drift(INT64_MIN, 0, INT64_MAX, -999999999, &v), 1);
	assert_int_equal(v, 9223372018408031733LL);
	v = 42;
	assert_int_equal(weft_clk_drift(INT64_MAX, 0, INT64_MIN, 1, &v), 0);
	assert_int_equal(v, 42); /* untouched */
	assert_int_equal(weft_clk_drift(INT64_MAX, 1, INT64_MAX, 5, &v), 0);
	assert_int_equal(weft_clk_drift(INT64_MIN, -1, INT64_MIN, -5, &v), 0);
	assert_int_equal(weft_clk_drift(INT64_MIN, 0, 0, 1, &v), 0);
	assert_int_equal(weft_clk_drift(INT64_MIN, 0, 0, -1, &v), 1);
	assert_int_equal(v, INT64_MIN + 9223372036LL);
}

/* [lo, hi] is exactly the set of clocks whose correction is an int64. */
static void check_range(int64_t off, int64_t t0, int64_t ppb)
{
	int64_t lo = 0, hi = 0, v;
	assert_int_equal(weft_clk_drift_range(off, t0, ppb, &lo, &hi), 1);
	assert_true(lo <= hi);
	assert_int_equal(weft_clk_drift(lo, off, t0, ppb, &v), 1);
	assert_int_equal(weft_clk_drift(hi, off, t0, ppb, &v), 1);
	if (lo > INT64_MIN)
		assert_int_equal(weft_clk_drift(lo - 1, off, t0, ppb, &v), 0);
	if (hi < INT64_MAX)
		assert_int_equal(weft_clk_drift(hi + 1, off, t0, ppb, &v), 0);
}

static void test_drift_range(void **state)
{
	(void) state;
	check_range(0, 0, 50000);
	check_range(0, 0, -50000);
	check_range(-812344105, 123456789, 1);
	check_range(INT64_MAX, INT64_MIN, 999999999);
	check_range(INT64_MIN, INT64_MAX, -999999999);
	check_range(0, INT64_MAX, 999999999);
	check_range(3, INT64_MIN, -1);
	int64_t lo, hi;
	assert_int_equal(weft_clk_drift_range(0, 0, 1, &lo, &hi), 1);
	assert_int_equal(hi, 9223372027631403780LL);
	/* every clock overflows */
	assert_int_equal(weft_clk_drift_range(INT64_MIN, INT64_MIN, -999999999, &lo, &hi), 0);
}

static const char *HDR = "rank hostname offset_median offset_mean offset_std\n"
	"0 a 0 0 0\n"
	"1 b -2000 -2000.5 3\n";

/* Parses HDR + tail; returns the parser's result with err set. */
static int parse_with(const char *tail, struct weft_clkoff_row **rows, size_t *n, char *err,
		size_t errlen)
{
	char text[1024];
	snprintf(text, sizeof text, "%s%s", HDR, tail);
	return weft_clkoff_parse(text, strlen(text), "F", rows, n, err, errlen);
}

static void test_drift_parse(void **state)
{
	(void) state;
	struct weft_clkoff_row *rows;
	size_t n;
	char err[256];
	assert_int_equal(parse_with(" \ndrift hostname t0 drift_ppb\n"
				"drift b 4000000000 -50000\n\ndrift a 1 0\n", &rows, &n, err,
				sizeof err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(rows[1].offset, -2000);
	assert_int_equal(rows[1].t0, 4000000000LL);
	assert_int_equal(rows[1].ppb, -50000);
	assert_int_equal(rows[1].dline, 6);
	assert_int_equal(rows[0].dline, 8);
	weft_clkoff_free(rows, n);
	/* other text after the line of blanks is ignored, as before */
	assert_int_equal(parse_with("  \nnotes: measured on Monday\n", &rows, &n, err,
				sizeof err), 0);
	assert_int_equal(rows[1].dline, 0);
	assert_int_equal(rows[1].ppb, 0);
	weft_clkoff_free(rows, n);
	/* the section ends at a line of blanks */
	assert_int_equal(parse_with(" \ndrift hostname t0 drift_ppb\ndrift b 0 7\n \nxyz\n", &rows,
				&n, err, sizeof err), 0);
	assert_int_equal(rows[1].ppb, 7);
	weft_clkoff_free(rows, n);

	static const struct {
		const char *tail;
		const char *err;
	} bad[] = {
		{ " \ndrift host t0 ppb\n",
			"F: line 5: expected the drift header 'drift hostname t0 drift_ppb'" },
		{ " \ndrift hostname t0 drift_ppb\ndrift b 0\n",
			"F: line 6: expected 4 fields (drift hostname t0 drift_ppb), found 3" },
		{ " \ndrift hostname t0 drift_ppb\ndrift b 0 1 2\n",
			"F: line 6: expected 4 fields (drift hostname t0 drift_ppb), found more than 4" },
		{ " \ndrift hostname t0 drift_ppb\ndrfit b 0 1\n",
			"F: line 6: a drift row starts with 'drift', not 'drfit'" },
		{ " \ndrift hostname t0 drift_ppb\ndrift b 0 50ppm\n",
			"F: line 6: drift_ppb '50ppm' is not an integer from -999999999 to 999999999" },
		{ " \ndrift hostname t0 drift_ppb\ndrift b 0 1000000000\n",
			"F: line 6: drift_ppb '1000000000' is not an integer from -999999999 to 999999999" },
		{ " \ndrift hostname t0 drift_ppb\ndrift b 0 -99999999999999999999\n",
			"F: line 6: drift_ppb '-99999999999999999999' is not an integer from -999999999 to "
			"999999999" },
		{ " \ndrift hostname t0 drift_ppb\ndrift b 9223372036854775808 1\n",
			"F: line 6: t0 '9223372036854775808' is not a signed 64-bit integer (ns)" },
		{ " \ndrift hostname t0 drift_ppb\ndrift c 0 1\n",
			"F: line 6: host 'c' has a drift but no offset row" },
		{ " \ndrift hostname t0 drift_ppb\ndrift b 0 1\ndrift b 0 2\n",
			"F: line 7: the drift of host 'b' already given in line 6" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(parse_with(bad[i].tail, &rows, &n, err, sizeof err), -1);
		assert_string_equal(err, bad[i].err);
		assert_null(rows);
		assert_int_equal(n, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drift_arith),
		cmocka_unit_test(test_drift_range),
		cmocka_unit_test(test_drift_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
