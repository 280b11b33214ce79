/* SPDX-License-Identifier: MIT */
/*
 * workers - a small pthreads program instrumented the way a runtime
 * instruments itself with libovni.
 *
 *   main:   ovni_proc_init(app 1, loom = host name, pid), ovni_thread_init,
 *           one ovni_add_cpu per CPU it may run on, OHx (starts running),
 *           OHC before creating each worker, OHp/OHr around the joins, OHe,
 *           ovni_flush, ovni_thread_free, ovni_proc_fini.
 *   worker: ovni_thread_init(gettid()), OHx (cpu, creator tid, tag), OAs
 *           when pinned to its CPU, then rounds of a "compute" phase (OB.
 *           bursts) and an "exchange" phase (OHp/OHr around a barrier wait),
 *           marked on a stack mark type "Phase"; OHe, ovni_flush,
 *           ovni_thread_free.
 *
 * Like a real runtime, at most one thread runs on a CPU at a time: each CPU
 * has a token (a mutex) that a thread holds while it is Running there. A
 * thread emits OHx/OHr after taking the token and OHp/OHe before giving it
 * back, so the trace never shows two running threads on one CPU, even with
 * more workers than CPUs.
 *
 * Payloads: OHx = i32 cpu, i32 creator tid (-1 if none), u64 tag;
 *           OHC = i32 cpu, u64 tag; OAs = i32 cpu.
 *
 * usage: workers [NWORKERS [ROUNDS]]   (default 4 and 10)
 * The trace goes to $OVNI_TRACEDIR, or ./ovni.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ovni.h"

enum { MARK_PHASE = 1 };
enum { PHASE_COMPUTE = 1, PHASE_EXCHANGE = 2 };

struct worker {
	pthread_t th;
	int index;
	int cpu_index; /* logical index in loom_cpus */
	int cpu_phyid; /* as the OS numbers it */
	int32_t creator;
	uint64_t tag;
};

static pthread_barrier_t barrier;
static pthread_mutex_t *cpu_token; /* one per logical CPU */
static int rounds = 10;

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

static double compute(int n)
{
	double x = 0;
	for (int i = 1; i <= n; i++)
		x += 1.0 / ((double) i * (double) i);
	return x;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	ovni_thread_init(gettid());
	pthread_mutex_lock(&cpu_token[w->cpu_index]);
	emit_ohx(w->cpu_index, w->creator, w->tag);

	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET((size_t) w->cpu_phyid, &set);
	if (sched_setaffinity(0, sizeof set, &set) == 0) {
		int32_t cpu = w->cpu_index;
		emit("OAs", &cpu, sizeof cpu);
	}

	ovni_mark_type(MARK_PHASE, OVNI_MARK_STACK, "Phase");
	ovni_mark_label(MARK_PHASE, PHASE_COMPUTE, "compute");
	ovni_mark_label(MARK_PHASE, PHASE_EXCHANGE, "exchange");

	volatile double sink = 0;
	for (int r = 0; r < rounds; r++) {
		ovni_mark_push(MARK_PHASE, PHASE_COMPUTE);
		for (int b = 0; b < 8; b++) {
			emit("OB.", NULL, 0);
			sink += compute(2000 * (w->index + 1));
		}
		ovni_mark_pop(MARK_PHASE, PHASE_COMPUTE);

		ovni_mark_push(MARK_PHASE, PHASE_EXCHANGE);
		emit("OHp", NULL, 0); /* blocks: Running -> Paused */
		pthread_mutex_unlock(&cpu_token[w->cpu_index]);
		pthread_barrier_wait(&barrier);
		pthread_mutex_lock(&cpu_token[w->cpu_index]);
		emit("OHr", NULL, 0); /* Paused -> Running */
		ovni_mark_pop(MARK_PHASE, PHASE_EXCHANGE);
	}
	(void) sink;

	emit("OHe", NULL, 0);
	pthread_mutex_unlock(&cpu_token[w->cpu_index]);
	ovni_flush();
	ovni_thread_free();
	return NULL;
}

int main(int argc, char **argv)
{
	int nworkers = argc > 1 ? atoi(argv[1]) : 4;
	if (argc > 2)
		rounds = atoi(argv[2]);
	if (nworkers <= 0 || nworkers > 1024 || rounds <= 0) {
		fprintf(stderr, "usage: workers [NWORKERS [ROUNDS]]\n");
		return 2;
	}

	char host[OVNI_MAX_HOSTNAME];
	if (gethostname(host, sizeof host) != 0)
		strcpy(host, "localhost");
	host[sizeof host - 1] = '\0';

	ovni_version_check();
	ovni_proc_init(1, host, getpid());
	ovni_thread_init(gettid());

	/* The CPUs this process may run on: index = position, phyid = OS id. */
	int phyids[CPU_SETSIZE];
	int ncpus = 0;
	cpu_set_t mask;
	if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET((size_t) c, &mask))
				phyids[ncpus++] = c;
	}
	if (ncpus == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		for (int c = 0; c < (n > 0 ? n : 1) && c < CPU_SETSIZE; c++)
			phyids[ncpus++] = c;
	}
	for (int i = 0; i < ncpus; i++)
		ovni_add_cpu(i, phyids[i]);

	int main_cpu = 0;
	int cur = sched_getcpu();
	for (int i = 0; i < ncpus; i++)
		if (phyids[i] == cur)
			main_cpu = i;
	cpu_token = calloc((size_t) ncpus, sizeof *cpu_token);
	if (cpu_token == NULL) {
		fprintf(stderr, "workers: out of memory for %d CPUs\n", ncpus);
		return 1;
	}
	for (int i = 0; i < ncpus; i++)
		pthread_mutex_init(&cpu_token[i], NULL);
	pthread_mutex_lock(&cpu_token[main_cpu]);
	emit_ohx(main_cpu, -1, 0);

	pthread_barrier_init(&barrier, NULL, (unsigned) nworkers);
	struct worker *ws = calloc((size_t) nworkers, sizeof *ws);
	if (ws == NULL) {
		fprintf(stderr, "workers: out of memory for %d workers\n", nworkers);
		return 1;
	}
	int32_t self = (int32_t) gettid();
	for (int i = 0; i < nworkers; i++) {
		struct worker *w = &ws[i];
		w->index = i;
		w->cpu_index = i % ncpus;
		w->cpu_phyid = phyids[w->cpu_index];
		w->creator = self;
		w->tag = (uint64_t) i + 1;
		emit_ohc(w->cpu_index, w->tag);
		if (pthread_create(&w->th, NULL, worker_main, w) != 0) {
			fprintf(stderr, "workers: cannot create worker %d\n", i);
			return 1;
		}
	}
	emit("OHp", NULL, 0); /* waiting for the workers */
	pthread_mutex_unlock(&cpu_token[main_cpu]);
	for (int i = 0; i < nworkers; i++)
		pthread_join(ws[i].th, NULL);
	pthread_mutex_lock(&cpu_token[main_cpu]);
	emit("OHr", NULL, 0);
	pthread_barrier_destroy(&barrier);
	free(ws);

	emit("OHe", NULL, 0);
	pthread_mutex_unlock(&cpu_token[main_cpu]);
	ovni_flush();
	ovni_thread_free();
	ovni_proc_fini();
	for (int i = 0; i < ncpus; i++)
		pthread_mutex_destroy(&cpu_token[i]);
	free(cpu_token);

	const char *dir = getenv("OVNI_TRACEDIR");
	if (dir == NULL || dir[0] == '\0')
		dir = OVNI_TRACEDIR;
	char cwd[PATH_MAX];
	if (dir[0] != '/' && getcwd(cwd, sizeof cwd) != NULL)
		printf("workers: trace of %d workers written to %s/%s\n", nworkers, cwd, dir);
	else
		printf("workers: trace of %d workers written to %s\n", nworkers, dir);
	return 0;
}
