/* SPDX-License-Identifier: MIT */
/*
 * test_roundtrip - traces written by weft's libovni, read back through
 * libweft event for event: 8 threads with seeded random mixes of events
 * (every normal payload size, jumbo events up to 20 KiB, explicit flushes)
 * and WEFT_BUFSIZE=65536 so that libovni flushes often on its own. Every
 * event a thread emitted must come back, in its stream's order, with its
 * MCV, clock and payload bytes; the flush markers libovni adds (OF[ OF])
 * are the only extra events; the global order never goes back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ovni.h"
#include "tracewrite.h"
#include "weft/weft.h"

#define NTHREADS 8
#define NEVENTS 20000
#define PID 4242
#define TID0 5000

struct rec {
	char mcv[4];
	uint64_t clock;
	uint32_t size;  /* payload bytes (normal) or jumbo data bytes */
	int jumbo;
	uint32_t seed;  /* the bytes are a function of the seed */
};

static struct rec *recs[NTHREADS];
static size_t nrecs[NTHREADS];

static uint8_t byte_of(uint32_t seed, uint32_t i)
{
	uint32_t x = seed * 2654435761u + i * 40503u;
	return (uint8_t) (x >> 13);
}

static uint32_t xs(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void *writer(void *arg)
{
	int idx = (int) (intptr_t) arg;
	uint32_t rng = 0x12345u + (uint32_t) idx * 7919u;
	ovni_thread_init(TID0 + idx);
	ovni_thread_require("nosv", "2.0.0");
	if (idx == 0)
		for (int c = 0; c < NTHREADS; c++)
			ovni_add_cpu(c, 100 + c);
	recs[idx] = calloc(NEVENTS, sizeof *recs[idx]);
	static const char *const mcvs[] = { "OU[", "OU]", "OB.", "VTx", "VYc" };
	uint8_t *buf = malloc(20000);
	for (int i = 0; i < NEVENTS; i++) {
		struct rec *r = &recs[idx][nrecs[idx]++];
		uint32_t x = xs(&rng);
		memcpy(r->mcv, mcvs[x % 5], 4);
		r->seed = xs(&rng);
		struct ovni_ev ev = { 0 };
		ovni_ev_set_mcv(&ev, r->mcv);
		r->clock = ovni_clock_now();
		ovni_ev_set_clock(&ev, r->clock);
		if ((x >> 8) % 50 == 0) {
			r->jumbo = 1;
			r->size = xs(&rng) % 20000;
			for (uint32_t k = 0; k < r->size; k++)
				buf[k] = byte_of(r->seed, k);
			ovni_ev_jumbo_emit(&ev, buf, r->size);
		} else {
			unsigned n = (x >> 16) % 17;
			if (n == 1)
				n = 0;
			r->size = n;
			for (uint32_t k = 0; k < n; k++)
				buf[k] = byte_of(r->seed, k);
			if (n)
				ovni_payload_add(&ev, buf, (int) n);
			ovni_ev_emit(&ev);
		}
		if ((x >> 20) % 997 == 0)
			ovni_flush();
	}
	free(buf);
	ovni_thread_free();
	return NULL;
}

static void test_roundtrip(void **state)
{
	(void) state;
	char *root = tw_tmpdir();
	setenv("OVNI_TRACEDIR", root, 1);
	setenv("WEFT_BUFSIZE", "65536", 1);
	ovni_proc_init(1, "rt.0", PID);
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, writer, (void *) (intptr_t) i), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	ovni_proc_fini();

	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(root, NULL, err, sizeof err);
	if (t == NULL)
		fail_msg("weft_open: %s", err);
	assert_int_equal(weft_nstreams(t), NTHREADS);
	assert_int_equal(weft_nlooms(t), 1);
	const struct weft_loom *l = weft_loom_at(t, 0);
	assert_string_equal(l->name, "rt.0");
	assert_int_equal(l->ncpus, NTHREADS);
	assert_int_equal(l->cpus[3].phyid, 103);
	assert_int_equal(l->procs[0]->pid, PID);
	assert_int_equal(l->procs[0]->nthreads, NTHREADS);

	size_t pos[NTHREADS] = { 0 };
	uint64_t flushes = 0, n = 0;
	int64_t last = INT64_MIN;
	struct weft_event evs[64];
	long got;
	while ((got = weft_next_batch(t, evs, 64)) > 0) {
		for (long e = 0; e < got; e++) {
			const struct weft_event *ev = &evs[e];
			assert_true(ev->sclock >= last);
			last = ev->sclock;
			n++;
			int idx = ev->stream->thread->tid - TID0;
			assert_true(idx >= 0 && idx < NTHREADS);
			if (ev->mcv[0] == 'O' && ev->mcv[1] == 'F') {
				flushes++;
				continue;
			}
			assert_true(pos[idx] < nrecs[idx]);
			const struct rec *r = &recs[idx][pos[idx]++];
			assert_string_equal(ev->mcv, r->mcv);
			assert_int_equal(ev->rclock, (int64_t) r->clock);
			assert_int_equal(ev->jumbo, r->jumbo);
			const uint8_t *data = r->jumbo ? ev->jumbo_data : ev->payload;
			uint32_t size = r->jumbo ? ev->jumbo_size : ev->payload_size;
			assert_int_equal(size, r->size);
			for (uint32_t k = 0; k < size; k++)
				if (data[k] != byte_of(r->seed, k))
					fail_msg("thread %d event %zu byte %u differs", idx, pos[idx] - 1, k);
		}
	}
	assert_int_equal(got, 0);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pos[i], nrecs[i]);
	assert_true(flushes > 2 * NTHREADS); /* automatic and explicit flushes happened */
	assert_int_equal(weft_nevents(t), n);
	weft_close(t);
	for (int i = 0; i < NTHREADS; i++)
		free(recs[i]);
	tw_rmtree(root);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
