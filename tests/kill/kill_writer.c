/* SPDX-License-Identifier: MIT */
/*
 * kill_writer.c - the program tests/kill/kill.py kills with SIGKILL: one
 * process, main + NTHREADS-1 worker threads, each emitting payload-less,
 * normal and jumbo events (OU[ jumbo, OU] with payloads of 0, 2..16 bytes)
 * as fast as it can, so that the buffers are written often and in large
 * pieces. Each thread stops after CAP bytes of events (then the process
 * waits to be killed), so what one run writes is bounded.
 *
 * Usage: kill_writer NTHREADS CAP   (the trace goes to ./ovni)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ovni.h"

static long cap_bytes;
static pthread_barrier_t ready;

static void emit(const char *mcv, const void *payload, int n)
{
	struct ovni_ev ev;
	memset(&ev, 0, sizeof ev);
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, ovni_clock_now());
	if (n > 0)
		ovni_payload_add(&ev, payload, n);
	ovni_ev_emit(&ev);
}

static void emit_jumbo(const char *mcv, const uint8_t *data, uint32_t n)
{
	struct ovni_ev ev;
	memset(&ev, 0, sizeof ev);
	ovni_ev_set_mcv(&ev, mcv);
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_jumbo_emit(&ev, data, n);
}

/* The events of one thread on CPU cpu, until cap_bytes. */
static void run(int cpu, unsigned seed)
{
	static const int sizes[] = { 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	uint8_t buf[16];
	int32_t x[4] = { cpu, -1, 0, 0 };
	emit("OHx", x, 16);
	uint8_t *jumbo = malloc(65536);
	if (jumbo == NULL)
		abort();
	memset(jumbo, 0xab, 65536);
	long written = 28;
	while (written < cap_bytes) {
		seed = seed * 1103515245u + 12345u;
		uint32_t jn = (seed >> 8) % 3000u;
		emit_jumbo("OU[", jumbo, jn);
		written += 16 + (long) jn;
		int n = sizes[(seed >> 4) % 16];
		memset(buf, (int) (seed & 0xff), sizeof buf);
		emit("OU]", buf, n);
		written += 12 + n;
		for (int k = 0; k < (int) ((seed >> 20) % 64); k++) {
			emit("OB.", NULL, 0);
			written += 12;
		}
	}
	free(jumbo);
}

static void *worker(void *arg)
{
	int cpu = (int) (intptr_t) arg;
	ovni_thread_init((pid_t) syscall(SYS_gettid));
	/* written to stream.json at once (no ovni_attr_flush): the run is
	 * killed before ovni_thread_free */
	ovni_thread_require("ovni", OVNI_MODEL_VERSION);
	pthread_barrier_wait(&ready);
	run(cpu, (unsigned) cpu * 7919u + 1u);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: kill_writer NTHREADS CAP\n");
		return 2;
	}
	int n = atoi(argv[1]);
	cap_bytes = atol(argv[2]);
	if (n < 1 || n > 64 || cap_bytes < 1)
		return 2;
	ovni_version_check();
	ovni_proc_init(1, "vm", getpid());
	ovni_thread_init((pid_t) syscall(SYS_gettid));
	for (int i = 0; i < n; i++)
		ovni_add_cpu(i, i); /* each written to stream.json at once */
	pthread_barrier_init(&ready, NULL, (unsigned) n);
	pthread_t *th = calloc((size_t) n, sizeof *th);
	if (th == NULL)
		return 1;
	for (int i = 1; i < n; i++)
		pthread_create(&th[i], NULL, worker, (void *) (intptr_t) i);
	pthread_barrier_wait(&ready);
	/* the driver waits for this line, then for the files to grow */
	printf("ready\n");
	fflush(stdout);
	run(0, 1u);
	for (int i = 1; i < n; i++)
		pthread_join(th[i], NULL);
	/* everything emitted: wait to be killed (nothing more is written) */
	for (;;)
		pause();
}
