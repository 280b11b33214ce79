/* SPDX-License-Identifier: MIT */
/*
 * test_rt_flush - where OF[/OF] land.
 *   automatic: the buffer (WEFT_BUFSIZE=256) is written when an event
 *     does not fit; the OF[/OF] pair follows that event, with
 *     event clock <= OF[ clock <= OF] clock; an exactly full buffer does
 *     not flush; a jumbo can trigger it too;
 *   explicit: ovni_flush writes the buffer; its pair is written by the next
 *     flush, and the pair of the last ovni_flush is kept by ovni_thread_free
 *     (the reference drops it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ovni.h"
#include "rt_test.h"

#define BUFSIZE 256
#define NEV 200

static int next_tid = 1000;

struct body {
	int tid;
	const int *sizes; /* payload size pattern */
	int nsizes;
	long long size_after_flush[3];
};

static uint8_t pay(int i, int j)
{
	return (uint8_t) (i * 7 + j);
}

static void emit_sized(int i, int psize)
{
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "Utp");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	uint8_t buf[16];
	for (int j = 0; j < psize; j++)
		buf[j] = pay(i, j);
	if (psize > 0)
		ovni_payload_add(&ev, buf, psize);
	ovni_ev_emit(&ev);
}

static char *start_proc(const char *bufsize)
{
	if (bufsize != NULL)
		setenv("WEFT_BUFSIZE", bufsize, 1);
	else
		unsetenv("WEFT_BUFSIZE");
	ovni_proc_init(1, "vm", 77);
	return rt_test_path("%s/loom.vm/proc.77/thread.%d/stream.obs", rt_test_dir, next_tid);
}

static void auto_body(void *p)
{
	struct body *b = p;
	ovni_thread_init(b->tid);
	for (int i = 0; i < NEV; i++)
		emit_sized(i, b->sizes[i % b->nsizes]);
	ovni_thread_free();
}

static void check_auto(const int *sizes, int nsizes)
{
	char *obs = start_proc("256");
	struct body b = {.tid = next_tid++, .sizes = sizes, .nsizes = nsizes};
	rt_test_in_thread(auto_body, &b);
	ovni_proc_fini();

	/* Which events must be followed by a flush pair, from the rule. */
	int pair_after[NEV] = {0};
	int npairs = 0;
	size_t used = 0;
	for (int i = 0; i < NEV; i++) {
		size_t sz = 12u + (size_t) sizes[i % nsizes];
		if (used + sz > BUFSIZE) {
			pair_after[i] = 1;
			npairs++;
			used = sz + 24u;
		} else {
			used += sz;
		}
	}
	assert_true(npairs >= 5);

	struct rt_test_stream s;
	rt_test_stream_load(&s, obs);
	assert_int_equal(s.nev, (size_t) (NEV + 2 * npairs));
	size_t k = 0;
	uint64_t last = 0;
	for (int i = 0; i < NEV; i++) {
		struct rt_test_ev *e = &s.ev[k++];
		assert_string_equal(e->mcv, "Utp");
		assert_int_equal(e->payload_size, (size_t) sizes[i % nsizes]);
		for (size_t j = 0; j < e->payload_size; j++)
			assert_int_equal(e->payload[j], pay(i, (int) j));
		assert_true(e->clock >= last);
		last = e->clock;
		if (pair_after[i]) {
			struct rt_test_ev *b0 = &s.ev[k++];
			struct rt_test_ev *b1 = &s.ev[k++];
			assert_string_equal(b0->mcv, "OF[");
			assert_string_equal(b1->mcv, "OF]");
			assert_int_equal(b0->flags, 0);
			assert_int_equal(b1->flags, 0);
			assert_true(e->clock <= b0->clock);
			assert_true(b0->clock <= b1->clock);
			last = b1->clock;
		}
	}
	assert_int_equal(k, s.nev);
	rt_test_stream_free(&s);
	free(obs);
}

static void test_auto_no_payload(void **st)
{
	(void) st;
	static const int sizes[] = {0};
	check_auto(sizes, 1);
}

static void test_auto_exact_fill(void **st)
{
	(void) st;
	/* 16-byte events: 16 fill the 256-byte buffer exactly. */
	static const int sizes[] = {4};
	check_auto(sizes, 1);
}

static void test_auto_mixed(void **st)
{
	(void) st;
	static const int sizes[] = {0, 2, 16, 5, 3, 11, 8};
	check_auto(sizes, 7);
}

static void test_auto_max_payload(void **st)
{
	(void) st;
	static const int sizes[] = {16};
	check_auto(sizes, 1);
}

static void explicit_body(void *p)
{
	struct body *b = p;
	char *obs = rt_test_path("%s/loom.vm/proc.77/thread.%d/stream.obs", rt_test_dir, b->tid);
	ovni_thread_init(b->tid);
	for (int i = 0; i < 3; i++)
		emit_sized(i, 0);
	ovni_flush();
	b->size_after_flush[0] = rt_test_file_size(obs);
	for (int i = 3; i < 5; i++)
		emit_sized(i, 0);
	ovni_flush();
	b->size_after_flush[1] = rt_test_file_size(obs);
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "OHe");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_emit(&ev);
	ovni_flush();
	b->size_after_flush[2] = rt_test_file_size(obs);
	ovni_thread_free();
	free(obs);
}

static void test_explicit(void **st)
{
	(void) st;
	char *obs = start_proc(NULL);
	struct body b = {.tid = next_tid++};
	rt_test_in_thread(explicit_body, &b);
	ovni_proc_fini();

	/* The pair of a flush is written by the next one. */
	assert_int_equal(b.size_after_flush[0], 8 + 3 * 12);
	assert_int_equal(b.size_after_flush[1], 8 + 3 * 12 + 24 + 2 * 12);
	assert_int_equal(b.size_after_flush[2], 8 + 3 * 12 + 24 + 2 * 12 + 24 + 12);

	struct rt_test_stream s;
	rt_test_stream_load(&s, obs);
	static const char *want[] = {"Utp", "Utp", "Utp", "OF[", "OF]", "Utp", "Utp",
				     "OF[", "OF]", "OHe", "OF[", "OF]"};
	assert_int_equal(s.nev, 12);
	assert_int_equal(s.len, 8 + 12 * 12);
	for (size_t i = 0; i < s.nev; i++) {
		assert_string_equal(s.ev[i].mcv, want[i]);
		assert_int_equal(s.ev[i].payload_size, 0);
		if (i > 0)
			assert_true(s.ev[i].clock >= s.ev[i - 1].clock);
	}
	rt_test_stream_free(&s);
	free(obs);
}

static void jumbo_body(void *p)
{
	struct body *b = p;
	ovni_thread_init(b->tid);
	for (int i = 0; i < 10; i++)
		emit_sized(i, 0); /* 120 bytes */
	uint8_t data[150];
	for (int j = 0; j < 150; j++)
		data[j] = (uint8_t) j;
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, "VYc");
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_jumbo_emit(&ev, data, sizeof data); /* 166 bytes: does not fit */
	for (int i = 0; i < 5; i++)
		ovni_mark_push(3, i); /* 24 bytes: 166 + 24 + 3 * 24 = 262 > 256 */
	ovni_thread_free();
}

static void test_auto_jumbo_and_marks(void **st)
{
	(void) st;
	char *obs = start_proc("256");
	struct body b = {.tid = next_tid++};
	rt_test_in_thread(jumbo_body, &b);
	ovni_proc_fini();

	struct rt_test_stream s;
	rt_test_stream_load(&s, obs);
	static const char *want[] = {"Utp", "Utp", "Utp", "Utp", "Utp", "Utp", "Utp", "Utp", "Utp", "Utp",
				     "VYc", "OF[", "OF]", "OM[", "OM[", "OM[", "OF[", "OF]", "OM[", "OM["};
	assert_int_equal(s.nev, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < s.nev; i++)
		assert_string_equal(s.ev[i].mcv, want[i]);
	struct rt_test_ev *j = &s.ev[10];
	assert_int_equal(j->flags, 0x13);
	assert_int_equal(j->payload_size, 150);
	for (int k = 0; k < 150; k++)
		assert_int_equal(j->payload[k], k);
	assert_true(j->clock <= s.ev[11].clock && s.ev[11].clock <= s.ev[12].clock);
	/* Mark payload: i64 value, then i32 type. */
	struct rt_test_ev *m = &s.ev[13];
	assert_int_equal(m->flags, 0x0b);
	static const uint8_t mark0[12] = {0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0};
	assert_memory_equal(m->payload, mark0, 12);
	assert_int_equal(s.ev[19].payload[0], 4);
	rt_test_stream_free(&s);
	free(obs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auto_no_payload),
		cmocka_unit_test(test_auto_exact_fill),
		cmocka_unit_test(test_auto_mixed),
		cmocka_unit_test(test_auto_max_payload),
		cmocka_unit_test(test_explicit),
		cmocka_unit_test(test_auto_jumbo_and_marks),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
