/* SPDX-License-Identifier: MIT */
/*
 * zeta - a small work queue instrumented with a model of its own: byte 'Z',
 * described by zeta.yaml (next to this file; docs/models.md explains the
 * format). Emulate its trace with
 *
 *     weft emu --model examples/zeta/zeta.yaml ovni
 *
 * Every thread requires the model: ovni_thread_require("zeta", "1.0.0").
 *
 *   main:    OHx on CPU 0, ZPs (setup), ZR[ region 1 (main), then per
 *            worker OHC and pthread_create; ZPe (no phase), OHp, the joins,
 *            OHr, ZPt (teardown), ZR] region 1, ZPe, OHe.
 *   worker K (1..NWORKERS), on CPU K:
 *            OHx, ZPs, ZR[ region 2 (worker), ZPc (compute), then ITEMS work
 *            items in batches of ten: ZR[ region 3 (batch) at the start of a
 *            batch, ZWi (the size of the item) per item, ZR] region 3 at the
 *            end of the batch; then ZPt, ZR] region 2, ZPe, OHe.
 *
 * Payloads: ZR[ and ZR] = u32 region id (1 main, 2 worker, 3 batch: the
 *           labels zeta.yaml gives them); ZWi = u64 item size in bytes,
 *           64 * (1 + (item + K) % 8); OHx, OHC as in examples/workers.
 *
 * The trace declares NWORKERS+1 CPUs (logical index = phyid = 0..NWORKERS)
 * and places each thread on a CPU of its own, so that the CPU timelines are
 * the same on every machine; a real runtime declares the CPUs it may run on
 * (see examples/workers/workers.c). The program itself is not pinned.
 *
 * usage: zeta [NWORKERS [ITEMS]]   (default 3 and 200: about 800 events)
 * The trace goes to $OVNI_TRACEDIR, or ./ovni.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ovni.h"

#define MAX_WORKERS 64
#define MAX_ITEMS 10000
#define BATCH 10

enum { REGION_MAIN = 1, REGION_WORKER = 2, REGION_BATCH = 3 };

struct worker {
	pthread_t th;
	int32_t cpu; /* also K, the worker number */
	int32_t creator;
	uint64_t tag;
};

static int items = 200;

static void emit(const char *mcv, const void *payload, int size)
{
	struct ovni_ev ev = {0};
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, ovni_clock_now());
	if (size > 0)
		ovni_payload_add(&ev, payload, size);
	ovni_ev_emit(&ev);
}

static void emit_ohx(int32_t cpu, int32_t creator, uint64_t tag)
{
	uint8_t p[16];
	memcpy(p, &cpu, 4);
	memcpy(p + 4, &creator, 4);
	memcpy(p + 8, &tag, 8);
	emit("OHx", p, sizeof p);
}

static void emit_ohc(int32_t cpu, uint64_t tag)
{
	uint8_t p[12];
	memcpy(p, &cpu, 4);
	memcpy(p + 4, &tag, 8);
	emit("OHC", p, sizeof p);
}

/* The zeta events. */
static void zeta_phase(char which) /* 's' setup, 'c' compute, 't' teardown, 'e' none */
{
	char mcv[4] = { 'Z', 'P', which, '\0' };
	emit(mcv, NULL, 0);
}

static void zeta_region_enter(uint32_t id)
{
	emit("ZR[", &id, sizeof id);
}

static void zeta_region_leave(uint32_t id)
{
	emit("ZR]", &id, sizeof id);
}

static void zeta_item(uint64_t bytes)
{
	emit("ZWi", &bytes, sizeof bytes);
}

static double work(uint64_t bytes)
{
	double x = 0;
	for (uint64_t i = 1; i <= bytes; i++)
		x += 1.0 / ((double) i * (double) i);
	return x;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	ovni_thread_init(gettid());
	ovni_thread_require("zeta", "1.0.0");
	emit_ohx(w->cpu, w->creator, w->tag);

	zeta_phase('s');
	zeta_region_enter(REGION_WORKER);
	zeta_phase('c');
	volatile double sink = 0;
	for (int i = 0; i < items; i++) {
		if (i % BATCH == 0)
			zeta_region_enter(REGION_BATCH);
		uint64_t bytes = 64u * (uint64_t) (1 + (i + w->cpu) % 8);
		zeta_item(bytes);
		sink += work(16 * bytes);
		if (i % BATCH == BATCH - 1 || i == items - 1)
			zeta_region_leave(REGION_BATCH);
	}
	(void) sink;
	zeta_phase('t');
	zeta_region_leave(REGION_WORKER);
	zeta_phase('e');

	emit("OHe", NULL, 0);
	ovni_flush();
	ovni_thread_free();
	return NULL;
}

int main(int argc, char **argv)
{
	int nworkers = argc > 1 ? atoi(argv[1]) : 3;
	if (argc > 2)
		items = atoi(argv[2]);
	if (argc > 3 || nworkers <= 0 || nworkers > MAX_WORKERS || items <= 0 ||
			items > MAX_ITEMS) {
		fprintf(stderr, "usage: zeta [NWORKERS [ITEMS]]  (NWORKERS 1..%d, ITEMS 1..%d)\n",
				MAX_WORKERS, MAX_ITEMS);
		return 2;
	}

	char host[OVNI_MAX_HOSTNAME];
	if (gethostname(host, sizeof host) != 0)
		strcpy(host, "localhost");
	host[sizeof host - 1] = '\0';

	ovni_version_check();
	ovni_proc_init(1, host, getpid());
	ovni_thread_init(gettid());
	ovni_thread_require("zeta", "1.0.0");
	for (int i = 0; i <= nworkers; i++)
		ovni_add_cpu(i, i);
	emit_ohx(0, -1, 0);

	zeta_phase('s');
	zeta_region_enter(REGION_MAIN);
	struct worker *ws = calloc((size_t) nworkers, sizeof *ws);
	if (ws == NULL) {
		fprintf(stderr, "zeta: out of memory for %d workers\n", nworkers);
		return 1;
	}
	int32_t self = (int32_t) gettid();
	for (int i = 0; i < nworkers; i++) {
		struct worker *w = &ws[i];
		w->cpu = i + 1;
		w->creator = self;
		w->tag = (uint64_t) i + 1;
		emit_ohc(w->cpu, w->tag);
		if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
			fprintf(stderr, "zeta: cannot create worker %d\n", i + 1);
			return 1;
		}
	}
	zeta_phase('e');
	emit("OHp", NULL, 0); /* waiting for the workers */
	for (int i = 0; i < nworkers; i++)
		pthread_join(ws[i].th, NULL);
	emit("OHr", NULL, 0);
	free(ws);
	zeta_phase('t');
	zeta_region_leave(REGION_MAIN);
	zeta_phase('e');

	emit("OHe", NULL, 0);
	ovni_flush();
	ovni_thread_free();
	ovni_proc_fini();

	const char *dir = getenv("OVNI_TRACEDIR");
	if (dir == NULL || dir[0] == '\0')
		dir = OVNI_TRACEDIR;
	char cwd[PATH_MAX];
	if (dir[0] != '/' && getcwd(cwd, sizeof cwd) != NULL)
		printf("zeta: trace of %d workers written to %s/%s\n", nworkers, cwd, dir);
	else
		printf("zeta: trace of %d workers written to %s\n", nworkers, dir);
	return 0;
}
