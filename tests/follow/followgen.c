/* SPDX-License-Identifier: MIT */
/*
 * followgen - a running program for the follow tests: writes a trace with
 * libovni (in $OVNI_TRACEDIR; WEFT_FLUSH_MS set by the caller) while it
 * runs, over MS milliseconds (argv[1], default 2500):
 *   - the main thread emits every 2 ms;
 *   - NTHREADS worker threads start one every MS/8 and emit every 1..3 ms
 *     (a 4-byte payload: a counter; every 50th event a jumbo of 40 bytes),
 *     each ending at a different time;
 *   - at MS/4, a child process with its own two threads, that ends at
 *     MS*3/4: forked, then this program again (exec, argv[2] "child"), so
 *     that the child starts clean (a fork while the workers emit and
 *     allocate leaves the child only async-signal-safe calls; under
 *     AddressSanitizer its allocator's locks could be held by a worker).
 * With "forever" as argv[2] (argv[3] for the child), nothing ends: the
 * caller kills it.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ovni.h"

#define NTHREADS 3

static long total_ms = 2500;
static int forever;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000u + (uint64_t) ts.tv_nsec / 1000000u;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static void emit(const char *mcv, uint32_t counter, int jumbo)
{
	struct ovni_ev ev = { 0 };
	ovni_ev_set_clock(&ev, ovni_clock_now());
	ovni_ev_set_mcv(&ev, mcv);
	if (jumbo) {
		uint8_t big[40];
		for (unsigned i = 0; i < sizeof big; i++)
			big[i] = (uint8_t) (counter + i);
		ovni_ev_jumbo_emit(&ev, big, sizeof big);
		return;
	}
	ovni_payload_add(&ev, (const uint8_t *) &counter, sizeof counter);
	ovni_ev_emit(&ev);
}

/* Emits for ms milliseconds, every period_ms. */
static void run(long ms, long period_ms, const char *mcv)
{
	uint64_t end = now_ms() + (uint64_t) ms;
	uint32_t n = 0;
	while (forever || now_ms() < end) {
		emit(mcv, n, n % 50 == 49);
		n++;
		sleep_ms(period_ms);
	}
}

static void *worker(void *arg)
{
	long k = (long) (intptr_t) arg;
	ovni_thread_init((pid_t) syscall(SYS_gettid));
	run(total_ms / 2 + k * (total_ms / 10), 1 + k % 3, "OB.");
	ovni_thread_free();
	return NULL;
}

static void child(void)
{
	ovni_proc_init(1, "follow", getpid());
	ovni_thread_init((pid_t) syscall(SYS_gettid));
	pthread_t th;
	if (pthread_create(&th, NULL, worker, (void *) (intptr_t) 1) != 0)
		_exit(1);
	run(total_ms / 2, 2, "OB.");
	pthread_join(th, NULL);
	ovni_thread_free();
	ovni_proc_fini();
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		total_ms = atol(argv[1]);
	forever = argc > 2 && strcmp(argv[2], "forever") == 0;
	if (total_ms < 100) {
		fprintf(stderr, "usage: followgen [MS [forever]]\n");
		return 2;
	}
	if (argc > 2 && strcmp(argv[2], "child") == 0) {
		forever = argc > 3 && strcmp(argv[3], "forever") == 0;
		child();
	}
	ovni_version_check();
	ovni_proc_init(1, "follow", getpid());
	ovni_thread_init((pid_t) syscall(SYS_gettid));
	uint64_t t0 = now_ms();
	pthread_t th[NTHREADS];
	pid_t pid = -1;
	uint32_t n = 0;
	int started = 0;
	while (forever || now_ms() < t0 + (uint64_t) total_ms) {
		uint64_t t = now_ms() - t0;
		while (started < NTHREADS && t >= (uint64_t) (started * (total_ms / 8))) {
			if (pthread_create(&th[started], NULL, worker, (void *) (intptr_t) started) != 0)
				return 1;
			started++;
		}
		if (pid < 0 && t >= (uint64_t) (total_ms / 4)) {
			fflush(NULL);
			pid = fork();
			if (pid == 0) {
				execl("/proc/self/exe", argv[0], argv[1] ? argv[1] : "2500", "child",
						forever ? "forever" : (char *) NULL, (char *) NULL);
				_exit(127);
			}
			if (pid < 0)
				return 1;
		}
		emit("OB.", n, 0);
		n++;
		sleep_ms(2);
	}
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	int st = 0;
	if (pid > 0 && (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0))
		return 1;
	ovni_thread_free();
	ovni_proc_fini();
	return 0;
}
