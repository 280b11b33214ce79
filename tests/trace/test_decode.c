/* SPDX-License-Identifier: MIT */
/* test_decode.c - the in-memory decoder, the header check, the clock-offsets
 * and metadata parsers (internal functions, also driven by the fuzzers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "trace_clock.h"
#include "trace_decode.h"
#include "trace_diag.h"
#include "trace_meta.h"

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void hdr(struct buf *b)
{
	memcpy(b->b, "ovni", 4);
	weft_store_u32(b->b + 4, 1);
	b->n = 8;
}

static void ev(struct buf *b, uint8_t flags, const char *mcv, uint64_t clock,
		const void *pl, size_t n)
{
	b->b[b->n] = flags;
	memcpy(b->b + b->n + 1, mcv, 3);
	weft_store_u64(b->b + b->n + 4, clock);
	if (n)
		memcpy(b->b + b->n + 12, pl, n);
	b->n += 12 + n;
}

static struct weft_event got[16];
static int ngot;

static void collect(void *ctx, const struct weft_event *e)
{
	(void) ctx;
	if (ngot < 16)
		got[ngot] = *e;
	ngot++;
}

static long decode(const struct buf *b, char *why, size_t len)
{
	ngot = 0;
	return weft_decode_buffer(b->b, b->n, collect, NULL, why, len);
}

static void test_good_events(void **state)
{
	(void) state;
	struct buf b;
	hdr(&b);
	uint8_t pl[16];
	for (int i = 0; i < 16; i++)
		pl[i] = (uint8_t) (0xa0 | i);
	ev(&b, 0x00, "OHp", 10, NULL, 0);
	ev(&b, 0x01, "OU[", 10, pl, 2);
	ev(&b, 0x0f, "OU]", 11, pl, 16);
	uint8_t j[4 + 5] = { 5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o' };
	ev(&b, 0x10, "VYc", 12, j, sizeof j); /* jumbo, nibble 0 */
	ev(&b, 0xe0, "OHr", 13, NULL, 0);     /* reserved bits ignored */
	char why[256] = "";
	assert_int_equal(decode(&b, why, sizeof why), 5);
	assert_string_equal(got[1].mcv, "OU[");
	assert_int_equal(got[1].payload_size, 2);
	assert_int_equal(got[1].offset, 20);
	assert_int_equal(got[2].payload_size, 16);
	assert_memory_equal(got[2].payload, pl, 16);
	assert_int_equal(got[3].jumbo, 1);
	assert_int_equal(got[3].jumbo_size, 5);
	assert_memory_equal(got[3].jumbo_data, "hello", 5);
	assert_int_equal(got[3].payload_size, 9);
	assert_int_equal(got[4].flags, 0xe0);
	assert_int_equal(got[4].payload_size, 0);
	assert_int_equal(got[4].rclock, 13);
}

static void expect_error(const struct buf *b, const char *want)
{
	char why[256] = "";
	assert_int_equal(decode(b, why, sizeof why), -1);
	assert_string_equal(why, want);
}

static void test_bad_streams(void **state)
{
	(void) state;
	struct buf b;
	b.n = 0;
	expect_error(&b, "offset 0: the file is empty (no stream header)");
	hdr(&b);
	b.n = 5;
	expect_error(&b, "offset 0: truncated stream header: 5 of 8 bytes");
	hdr(&b);
	b.b[3] = 'j';
	expect_error(&b, "offset 0: bad magic 'ovnj' (expected 'ovni')");
	hdr(&b);
	weft_store_u32(b.b + 4, 2);
	expect_error(&b, "offset 0: unknown stream version 2 (expected 1)");

	hdr(&b);
	ev(&b, 0, "OHx", 5, NULL, 0);
	b.n -= 3;
	expect_error(&b, "offset 8: event header cut short: 9 of 12 bytes before the end of the file");
	hdr(&b);
	ev(&b, 0x0f, "OHx", 5, "0123456789abcdef", 16);
	b.n -= 1;
	expect_error(&b, "offset 8: event OHx: payload of 16 bytes runs past the end of the file "
			"(15 bytes left)");
	hdr(&b);
	uint8_t j[8] = { 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4 };
	ev(&b, 0x13, "OU[", 5, j, sizeof j);
	expect_error(&b, "offset 8: jumbo event OU[: size 4294967295 runs past the end of the file "
			"(4 bytes left after the size field)");
	hdr(&b);
	ev(&b, 0x13, "OU[", 5, j, 2);
	expect_error(&b, "offset 8: jumbo event OU[: size field cut short by the end of the file");
	hdr(&b);
	ev(&b, 0, "OHx", 5, NULL, 0);
	ev(&b, 0, "\x01\x02\\", 4, NULL, 0);
	expect_error(&b, "offset 20: clock goes backwards from 5 to 4");
	assert_int_equal(ngot, 1);
}

static void test_header_check(void **state)
{
	(void) state;
	char why[128];
	const uint8_t bad[8] = { 0, 'v', 'n', '\'', 1, 0, 0, 0 };
	assert_int_equal(weft_check_header(bad, 8, why, sizeof why), -1);
	assert_string_equal(why, "bad magic '\\x00vn\\x27' (expected 'ovni')");
	const uint8_t good[8] = { 'o', 'v', 'n', 'i', 1, 0, 0, 0 };
	assert_int_equal(weft_check_header(good, 8, why, sizeof why), 0);
}

static void test_clkoff_parse(void **state)
{
	(void) state;
	struct weft_clkoff_row *rows;
	size_t n;
	char err[256];
	const char *ok = "rank hostname offset_median offset_mean offset_std\n"
		"\n"
		"0 a -7199999999990.7 0 0\n"
		"1\tb 12.9 1e3 0.5\r\n";
	assert_int_equal(weft_clkoff_parse(ok, strlen(ok), "f", &rows, &n, err, sizeof err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].host, "a");
	assert_int_equal(rows[0].offset, -7199999999990LL);
	assert_int_equal(rows[1].offset, 12);
	assert_int_equal(rows[1].line, 4);
	weft_clkoff_free(rows, n);
	const char *nul = "h\n0 a 1 1 1\0\n";
	assert_int_equal(weft_clkoff_parse(nul, 13, "f", &rows, &n, err, sizeof err), -1);
	assert_string_equal(err, "f: not a text file (holds a NUL byte)");
	const char *big = "h\n0 a 1e30 1 1\n";
	assert_int_equal(weft_clkoff_parse(big, strlen(big), "f", &rows, &n, err, sizeof err), -1);
	assert_string_equal(err, "f: line 2: median 1e+30 out of range");
	const char *hdronly = "h\n";
	assert_int_equal(weft_clkoff_parse(hdronly, 2, "f", &rows, &n, err, sizeof err), -1);
	assert_string_equal(err, "f: no offset rows after the header line");
}

static void test_meta_parse(void **state)
{
	(void) state;
	char err[512];
	struct weft_diag d = { WEFT_STRICT, NULL, NULL, err, sizeof err, 0, 0 };
	struct weft_meta m;
	json_t *root;
	const char *j = "{\"version\": 3, \"ovni\": {\"part\": \"thread\", \"tid\": 7, \"pid\": 6,"
		"\"loom\": \"h.1\", \"rank\": 1, \"nranks\": 2, \"finished\": 1,"
		"\"require\": {\"ovni\": \"1.1.0\", \"nosv\": \"2.0.0\"},"
		"\"loom_cpus\": [{\"index\": 0, \"phyid\": 3}],"
		"\"lib\": {\"version\": \"1.14.0\", \"commit\": \"abc\"},"
		"\"mark\": {\"01\": {\"title\": \"T\", \"chan_type\": \"stack\","
		"\"labels\": {\"-7\": \"neg\", \"3\": \"three\"}}}}}";
	assert_int_equal(weft_meta_parse_v3(j, strlen(j), "s.json", &d, &m, &root), 0);
	assert_int_equal(m.tid, 7);
	assert_int_equal(m.pid, 6);
	assert_string_equal(m.loom, "h.1");
	assert_int_equal(m.nreqs, 2);
	assert_string_equal(m.reqs[1].model, "nosv");
	assert_int_equal(m.ncpus, 1);
	assert_int_equal(m.cpus[0].phyid, 3);
	assert_int_equal(m.nmarks, 1);
	assert_int_equal(m.marks[0].type, 1);
	assert_int_equal(m.marks[0].labels[0].value, -7);
	assert_string_equal(m.lib_commit, "abc");
	weft_meta_free(&m);
	json_decref(root);

	const char *bad = "{\"version\": 3, \"ovni\": {\"tid\": true}}";
	assert_int_equal(weft_meta_parse_v3(bad, strlen(bad), "s.json", &d, &m, &root), -1);
	assert_string_equal(err, "s.json: ovni.tid is a boolean, expected an integer");
	weft_meta_free(&m);
	json_decref(root);
	d.mode = WEFT_LENIENT;
	assert_int_equal(weft_meta_parse_v3(bad, strlen(bad), "s.json", &d, &m, &root), 0);
	assert_int_equal(m.has_tid, 0);
	weft_meta_free(&m);
	json_decref(root);
	const char *notjson = "{\"version\": ";
	assert_int_equal(weft_meta_parse_v3(notjson, strlen(notjson), "s.json", &d, &m, &root), -1);
	assert_null(root);
	assert_string_equal(err, "s.json: invalid JSON at line 1, column 12: unexpected token "
			"near end of file");
	weft_meta_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_events),
		cmocka_unit_test(test_bad_streams),
		cmocka_unit_test(test_header_check),
		cmocka_unit_test(test_clkoff_parse),
		cmocka_unit_test(test_meta_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
