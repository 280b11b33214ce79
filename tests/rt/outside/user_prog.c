/* SPDX-License-Identifier: MIT */
/*
 * user_prog - an instrumented program built from the INSTALLED libovni
 * only (cc $(pkg-config --cflags --libs ovni)): 8 worker threads and the
 * main thread emit deterministic events (every payload size, jumbo events,
 * marks, explicit flushes), set attributes, require a model; main adds the
 * loom CPUs and sets the rank. check.py reads the trace back.
 *
 * Stream of thread index t (workers 0..7, main 8) with n events:
 *   OM[ (type 1, value 1)
 *   for i in 0..n-1:
 *     if i % 20000 == 0: OM= (type 2, value i)
 *     Utp with payload size SIZES[i % 16], byte j = (t*37 + i*13 + j) & 0xff
 *     if i % 5000 == 4999: jumbo Uj. of (i*7) % 1000 bytes, byte k = (t + i + 3k) & 0xff
 *     if i % 50000 == 49999: ovni_flush()
 *   OM] (type 1, value 1)
 *   ovni_flush(), ovni_thread_free()
 */
#define _GNU_SOURCE
#include <ovni.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define NWORKERS 8
#define NEV_WORKER 200000
#define NEV_MAIN 20000

static const int sizes[16] = {0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void run_stream(int t, int n)
{
	char buf[128];
	ovni_thread_require("mymodel", "2.0.1");
	ovni_attr_set_double("user.index", t);
	ovni_attr_set_double("user.nev", n);
	snprintf(buf, sizeof buf, "worker-%d", t);
	ovni_attr_set_str("user.name", buf);
	ovni_attr_set_boolean("user.flag", 1);
	snprintf(buf, sizeof buf, "{\"t\": %d, \"list\": [1, 2, 3]}", t);
	ovni_attr_set_json("user.obj", buf);
	ovni_mark_type(1, OVNI_MARK_STACK, "Phase");
	ovni_mark_label(1, 1, "compute");
	ovni_mark_type(2, 0, "Counter");

	static _Thread_local uint8_t data[1000];
	ovni_mark_push(1, 1);
	for (int i = 0; i < n; i++) {
		if (i % 20000 == 0)
			ovni_mark_set(2, i);
		struct ovni_ev ev = {0};
		ovni_ev_set_mcv(&ev, "Utp");
		ovni_ev_set_clock(&ev, ovni_clock_now());
		uint8_t p[16];
		int s = sizes[i % 16];
		for (int j = 0; j < s; j++)
			p[j] = (uint8_t) ((t * 37 + i * 13 + j) & 0xff);
		if (s > 0)
			ovni_payload_add(&ev, p, s);
		ovni_ev_emit(&ev);
		if (i % 5000 == 4999) {
			uint32_t len = (uint32_t) ((i * 7) % 1000);
			for (uint32_t k = 0; k < len; k++)
				data[k] = (uint8_t) ((t + i + 3 * (int) k) & 0xff);
			struct ovni_ev j = {0};
			ovni_ev_set_mcv(&j, "Uj.");
			ovni_ev_set_clock(&j, ovni_clock_now());
			ovni_ev_jumbo_emit(&j, data, len);
		}
		if (i % 50000 == 49999)
			ovni_flush();
	}
	ovni_mark_pop(1, 1);
	ovni_flush();
	ovni_thread_free();
}

static void *worker(void *arg)
{
	int t = (int) (intptr_t) arg;
	ovni_thread_init(gettid());
	run_stream(t, NEV_WORKER);
	return NULL;
}

int main(void)
{
	ovni_version_check();
	ovni_proc_init(3, "outside.loom", getpid());
	ovni_proc_set_rank(1, 4);
	ovni_thread_init(gettid());
	for (int i = 0; i < 4; i++)
		ovni_add_cpu(i, 2 * i);
	pthread_t th[NWORKERS];
	for (int t = 0; t < NWORKERS; t++)
		if (pthread_create(&th[t], NULL, worker, (void *) (intptr_t) t) != 0)
			return 1;
	for (int t = 0; t < NWORKERS; t++)
		pthread_join(th[t], NULL);
	run_stream(NWORKERS, NEV_MAIN);
	ovni_proc_fini();
	return 0;
}
