/* SPDX-License-Identifier: MIT */
/* test_num_format.c - num_format.h's text of numbers, byte for byte what
 * snprintf prints ("%" PRIu64, "%" PRId64, "%*" PRId64, "%10" PRId64 with and
 * without the cache of the high digits, "%" PRIx64, "%08u"),
 * on the edges of every digit count and 400000 values of every magnitude;
 * and the bytes past the text each function may store stay within its
 * stated room. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "num_format.h"

#define GUARD 0x5a

/* buf filled with GUARD; returns 1 when no byte from buf + room on changed. */
static int untouched(const char *buf, size_t room, size_t len)
{
	for (size_t i = room; i < len; i++)
		if ((unsigned char) buf[i] != GUARD)
			return 0;
	return 1;
}

static void check_u64(uint64_t v)
{
	char want[32], got[64];
	snprintf(want, sizeof want, "%" PRIu64, v);
	memset(got, GUARD, sizeof got);
	char *e = weft_num_u64(got, v);
	assert_int_equal(e - got, strlen(want));
	assert_memory_equal(got, want, strlen(want));
	assert_true(untouched(got, strlen(want) + 7, sizeof got));
	assert_int_equal(weft_num_digits(v), strlen(want));

	snprintf(want, sizeof want, "%" PRIx64, v);
	memset(got, GUARD, sizeof got);
	e = weft_num_hex(got, v);
	assert_int_equal(e - got, strlen(want));
	assert_memory_equal(got, want, strlen(want));
	assert_true(untouched(got, strlen(want), sizeof got));

	int64_t s = (int64_t) v;
	snprintf(want, sizeof want, "%" PRId64, s);
	memset(got, GUARD, sizeof got);
	e = weft_num_i64(got, s);
	assert_int_equal(e - got, strlen(want));
	assert_memory_equal(got, want, strlen(want));

	for (unsigned w = 1; w <= 24; w += 9) {
		snprintf(want, sizeof want, "%*" PRId64, (int) w, s);
		memset(got, GUARD, sizeof got);
		e = weft_num_i64_w(got, s, w);
		assert_int_equal(e - got, strlen(want));
		assert_memory_equal(got, want, strlen(want));
		assert_true(untouched(got, 32, sizeof got));
	}
	snprintf(want, sizeof want, "%10" PRId64, s);
	memset(got, GUARD, sizeof got);
	e = weft_num_i64_w10(got, s);
	assert_int_equal(e - got, strlen(want));
	assert_memory_equal(got, want, strlen(want));
	assert_true(untouched(got, 32, sizeof got));
	/* with the cache of the high digits: a value, its neighbours (the
	 * same high digits, or the next ones), the value again */
	static struct weft_num_w10_cache cache;
	/* (wrapping: the values past the ends are skipped below) */
	const int64_t near[] = { s, (int64_t) (v + 1), (int64_t) (v - 1),
		(int64_t) (v + 100000000), s };
	for (size_t k = 0; k < sizeof near / sizeof near[0]; k++) {
		if ((k == 1 && s == INT64_MAX) || (k == 2 && s == INT64_MIN)
				|| (k == 3 && s > INT64_MAX - 100000000))
			continue;
		snprintf(want, sizeof want, "%10" PRId64, near[k]);
		memset(got, GUARD, sizeof got);
		e = weft_num_i64_w10c(got, near[k], &cache);
		assert_int_equal(e - got, strlen(want));
		assert_memory_equal(got, want, strlen(want));
		assert_true(untouched(got, 32, sizeof got));
	}

	if (v < 100000000) {
		snprintf(want, sizeof want, "%08u", (unsigned) v);
		memset(got, GUARD, sizeof got);
		assert_ptr_equal(weft_num_8(got, (uint32_t) v), got + 8);
		assert_memory_equal(got, want, 8);
		snprintf(want, sizeof want, "%u", (unsigned) v);
		memset(got, GUARD, sizeof got);
		e = weft_num_u27(got, (uint32_t) v);
		assert_int_equal(e - got, strlen(want));
		assert_memory_equal(got, want, strlen(want));
		assert_true(untouched(got, 8, sizeof got));
	}
}

static void test_edges(void **state)
{
	(void) state;
	uint64_t p = 1;
	for (int k = 0; k < 20; k++) {
		for (uint64_t d = 0; d < 3; d++) {
			check_u64(p - 1 + d);
			check_u64((uint64_t) 0 - (p - 1 + d)); /* negative as signed */
		}
		check_u64(9 * p);
		if (k < 19)
			p *= 10;
	}
	check_u64(UINT64_MAX);
	check_u64((uint64_t) INT64_MAX);
	check_u64((uint64_t) INT64_MIN);
	check_u64(UINT64_C(9999999999999999));
	check_u64(UINT64_C(10000000000000000));
	for (unsigned b = 0; b < 64; b++) {
		check_u64(UINT64_C(1) << b);
		check_u64((UINT64_C(1) << b) - 1);
	}
}

static void test_random(void **state)
{
	(void) state;
	uint64_t x = UINT64_C(0x9e3779b97f4a7c15);
	for (int i = 0; i < 400000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		check_u64(x >> (x % 64)); /* every magnitude */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
