/* SPDX-License-Identifier: MIT */
/*
 * test_rt_mt - many threads emit at once (small buffers, so automatic
 * flushes happen concurrently; marks, attributes, jumbo events and
 * explicit flushes too). Every stream must hold exactly its own events,
 * in order, with its payloads, and non-decreasing clocks. Runs under
 * ThreadSanitizer in CI (label mt).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "ovni.h"
#include "rt_test.h"

#define NTHREADS 8
#define NEV 50000
#define PID 4000

static pthread_barrier_t start;

static uint8_t pay(int t, int i, int j)
{
	return (uint8_t) (t * 31 + i * 7 + j);
}

static int psize(int i)
{
	int s = i % 16; /* 0, 2..16 */
	return s == 0 ? 0 : s + 1;
}

static void *worker(void *p)
{
	int t = (int) (intptr_t) p;
	ovni_thread_init(PID + 1 + t);
	ovni_thread_require("mymodel", "1.0.0");
	ovni_attr_set_double("test.index", t);
	ovni_mark_type(1, OVNI_MARK_STACK, "Phase");
	pthread_barrier_wait(&start);
	ovni_mark_push(1, t);
	for (int i = 0; i < NEV; i++) {
		struct ovni_ev ev = {0};
		ovni_ev_set_mcv(&ev, "Utp");
		ovni_ev_set_clock(&ev, ovni_clock_now());
		uint8_t buf[16];
		int n = psize(i);
		for (int j = 0; j < n; j++)
			buf[j] = pay(t, i, j);
		if (n > 0)
			ovni_payload_add(&ev, buf, n);
		ovni_ev_emit(&ev);
		if (i % 10000 == 9999)
			ovni_flush();
		if (i % 1000 == 999) {
			struct ovni_ev j = {0};
			ovni_ev_set_mcv(&j, "Uj.");
			ovni_ev_set_clock(&j, ovni_clock_now());
			ovni_ev_jumbo_emit(&j, buf, (uint32_t) n);
		}
	}
	ovni_mark_pop(1, t);
	ovni_thread_free();
	return NULL;
}

static void test_concurrent_emit(void **st)
{
	(void) st;
	setenv("WEFT_BUFSIZE", "4096", 1);
	ovni_proc_init(1, "vm", PID);
	pthread_barrier_init(&start, NULL, NTHREADS);
	pthread_t th[NTHREADS];
	for (int t = 0; t < NTHREADS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, worker, (void *) (intptr_t) t), 0);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	pthread_barrier_destroy(&start);
	ovni_proc_fini();

	for (int t = 0; t < NTHREADS; t++) {
		char *obs = rt_test_path("%s/loom.vm/proc.%d/thread.%d/stream.obs", rt_test_dir, PID, PID + 1 + t);
		struct rt_test_stream s;
		rt_test_stream_load(&s, obs);
		size_t k = 0, nflush = 0;
		uint64_t last = 0;
		int i = 0, jumbos = 0, marks = 0;
		for (k = 0; k < s.nev; k++) {
			struct rt_test_ev *e = &s.ev[k];
			assert_true(e->clock >= last);
			last = e->clock;
			if (strcmp(e->mcv, "OF[") == 0) {
				assert_true(k + 1 < s.nev);
				assert_string_equal(s.ev[k + 1].mcv, "OF]");
				nflush++;
				continue;
			}
			if (strcmp(e->mcv, "OF]") == 0) {
				assert_string_equal(s.ev[k - 1].mcv, "OF[");
				continue;
			}
			if (strcmp(e->mcv, "OM[") == 0 || strcmp(e->mcv, "OM]") == 0) {
				assert_int_equal(e->payload[0], t);
				marks++;
				continue;
			}
			if (strcmp(e->mcv, "Uj.") == 0) {
				assert_int_equal(e->flags, 0x13);
				assert_int_equal(e->payload_size, (size_t) psize(i - 1));
				for (size_t j = 0; j < e->payload_size; j++)
					assert_int_equal(e->payload[j], pay(t, i - 1, (int) j));
				jumbos++;
				continue;
			}
			assert_string_equal(e->mcv, "Utp");
			assert_int_equal(e->payload_size, (size_t) psize(i));
			for (size_t j = 0; j < e->payload_size; j++)
				assert_int_equal(e->payload[j], pay(t, i, (int) j));
			i++;
		}
		assert_int_equal(i, NEV);
		assert_int_equal(jumbos, NEV / 1000);
		assert_int_equal(marks, 2);
		/* 5 explicit flushes, and the 4096-byte buffer filled many times. */
		assert_true(nflush > 5 + 100);
		rt_test_stream_free(&s);

		char *json = rt_test_path("%s/loom.vm/proc.%d/thread.%d/stream.json", rt_test_dir, PID, PID + 1 + t);
		char *text = rt_test_read(json, NULL);
		assert_non_null(text);
		char *idx = rt_test_path("\"index\": %d", t);
		assert_non_null(strstr(text, idx));
		assert_non_null(strstr(text, "\"finished\": 1"));
		assert_non_null(strstr(text, "\"mymodel\": \"1.0.0\""));
		free(idx);
		free(text);
		free(json);
		free(obs);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_emit),
	};
	return cmocka_run_group_tests(tests, rt_test_group_setup, rt_test_group_teardown);
}
