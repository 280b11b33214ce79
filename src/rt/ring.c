/* SPDX-License-Identifier: MIT */
/*
 * ring.c - the flight recorder (WEFT_RING; docs/runtime.md, "Flight
 * recorder"): its setup, the per-thread loss accounting, weft.ring
 * in stream.json, and the WEFT_RING_SIGNAL handler.
 *
 * The buffer management itself is in emit.c (the ring is the thread's
 * event buffer, 2 * WEFT_RING bytes): when it is full, the slow path drops
 * the oldest whole events (rt_ring_trim, counting them in the open run)
 * and moves the rest to the start, so that the hot path is unchanged. A
 * write of the ring trims to WEFT_RING bytes, closes the open run (it
 * becomes the next entry of weft.ring.lost) and writes what is left.
 *
 * WEFT_RING_SIGNAL: the handler bumps rt_ring_gen and, if it gets the
 * thread-list mutex, sets every ring thread's rt_hot.flush_at to 0, which
 * sends the thread's next emit to the slow path; there the thread sees the
 * new generation and writes its ring (emit.c, ring_poll). A thread whose
 * flush_at the handler could not set (the mutex was taken) writes at its
 * next slow path. Async-signal-safe: atomics, pthread_mutex_trylock and
 * unlock (as crash.c), sched_yield.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_internal.h"

uint32_t rt_ring_gen;

static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int dump_signo;
static pthread_key_t exit_key;
/* How many times the handler tries the thread-list mutex. */
#define TRYLOCK_MAX 64

/* ---- the dump signal ---- */

static void dump_handler(int sig)
{
	(void) sig;
	int saved = errno;
	__atomic_add_fetch(&rt_ring_gen, 1u, __ATOMIC_SEQ_CST);
	int locked = 0;
	for (int i = 0; i < TRYLOCK_MAX && !(locked = rt_threads_trylock()); i++)
		sched_yield();
	if (locked) {
		for (struct rt_thread *th = rt_threads_first(); th != NULL; th = th->next)
			if (th->ring != NULL && th->ring->hot != NULL)
				__atomic_store_n(&th->ring->hot->flush_at, 0, __ATOMIC_SEQ_CST);
		rt_threads_unlock();
	}
	errno = saved;
}

/* A thread ends without ovni_thread_free: its TLS goes away. */
static void thread_exit_hook(void *p)
{
	struct rt_thread *th = p;
	rt_threads_lock();
	th->ring->hot = NULL;
	rt_threads_unlock();
}

static void install(void)
{
	static const char func[] = "ovni_proc_init";
	if (pthread_key_create(&exit_key, thread_exit_hook) != 0)
		rt_die(func, "WEFT_RING: cannot create the thread-exit key");
	if (dump_signo == 0)
		return;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = dump_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(dump_signo, &sa, NULL) != 0)
		rt_die_errno(func, errno, "WEFT_RING_SIGNAL: cannot install the handler of signal %d", dump_signo);
}

void rt_ring_setup(int signo)
{
	if (signo != 0 && dump_signo == 0)
		dump_signo = signo;
	pthread_once(&install_once, install);
	/* A signal named by a later ovni_proc_init (a fork() child) is not
	 * installed again: the first one stays. */
}

/* ---- threads ---- */

void rt_ring_thread_init(const char *func, struct rt_thread *th, size_t size, int flush)
{
	struct rt_ring *r = calloc(1, sizeof *r);
	if (r != NULL)
		r->runs = malloc(WEFT_RING_MAX_RUNS * sizeof *r->runs);
	if (r == NULL || r->runs == NULL)
		rt_die(func, "out of memory for the flight recorder of '%s'", th->obs_path);
	r->size = size;
	r->flush = flush;
	r->seen_gen = __atomic_load_n(&rt_ring_gen, __ATOMIC_SEQ_CST);
	r->hot = &rt_hot;
	th->ring = r;
	if (pthread_setspecific(exit_key, th) != 0)
		rt_die(func, "WEFT_RING: cannot arm the thread-exit hook");
}

void rt_ring_thread_free(struct rt_thread *th)
{
	pthread_setspecific(exit_key, NULL);
	free(th->ring->runs);
	free(th->ring);
	th->ring = NULL;
}

/* ---- loss accounting ---- */

const uint8_t *rt_ring_trim(const struct rt_ring *r, const uint8_t *p, const uint8_t *cur, size_t extra,
			    struct rt_ring_run *run)
{
	while (p < cur && (size_t) (cur - p) + extra > r->size) {
		size_t s = rt_ev_stored_size(p);
		rt_ring_run_add(run, weft_load_u64(p + WEFT_EV_OFF_CLOCK), s);
		p += s;
	}
	return p;
}

static void merge_run(struct rt_ring_run *l, const struct rt_ring_run *run)
{
	if (run->c0 < l->c0)
		l->c0 = run->c0;
	if (run->c1 > l->c1)
		l->c1 = run->c1;
	l->n += run->n;
	l->b += run->b;
	l->off = run->off; /* the merged run lies before the later place */
}

/* Appends run to runs[*nruns] (merged into the last once full). */
static void push_run(struct rt_ring_run *runs, uint32_t *nruns, const struct rt_ring_run *run)
{
	if (*nruns < WEFT_RING_MAX_RUNS)
		runs[(*nruns)++] = *run;
	else
		merge_run(&runs[WEFT_RING_MAX_RUNS - 1], run);
}

void rt_ring_close_run(struct rt_ring *r, uint64_t off)
{
	if (r->open.n == 0)
		return;
	r->open.off = off;
	push_run(r->runs, &r->nruns, &r->open);
	r->lost_events += r->open.n;
	r->lost_bytes += r->open.b;
	memset(&r->open, 0, sizeof r->open);
}

/* ---- weft.ring ---- */

static json_t *int_or_die(const char *func, uint64_t v)
{
	json_t *j = json_integer((json_int_t) v);
	if (j == NULL)
		rt_die(func, "out of memory while building weft.ring");
	return j;
}

static void append_or_die(const char *func, json_t *arr, json_t *v)
{
	if (json_array_append_new(arr, v) != 0)
		rt_die(func, "out of memory while building weft.ring");
}

static void set_or_die(const char *func, json_t *obj, const char *key, json_t *v)
{
	if (json_object_set_new(obj, key, v) != 0)
		rt_die(func, "out of memory while building weft.ring");
}

json_t *rt_ring_json(const char *func, const struct rt_ring *r)
{
	json_t *o = json_object();
	json_t *lost = json_array();
	if (o == NULL || lost == NULL)
		rt_die(func, "out of memory while building weft.ring");
	set_or_die(func, o, WEFT_KEY_RING_SIZE, int_or_die(func, r->size));
	set_or_die(func, o, WEFT_KEY_RING_LOST_EVENTS, int_or_die(func, r->lost_events));
	set_or_die(func, o, WEFT_KEY_RING_LOST_BYTES, int_or_die(func, r->lost_bytes));
	for (uint32_t k = 0; k < r->nruns; k++) {
		const struct rt_ring_run *run = &r->runs[k];
		json_t *e = json_array();
		if (e == NULL)
			rt_die(func, "out of memory while building weft.ring");
		append_or_die(func, e, int_or_die(func, run->c0));
		append_or_die(func, e, int_or_die(func, run->c1));
		append_or_die(func, e, int_or_die(func, run->n));
		append_or_die(func, e, int_or_die(func, run->b));
		append_or_die(func, e, int_or_die(func, run->off));
		append_or_die(func, lost, e);
	}
	set_or_die(func, o, WEFT_KEY_RING_LOST, lost);
	return o;
}

/* ---- the same, by hand (crash handler: no allocation) ---- */

struct out {
	int fd;
	size_t n;
	char buf[512];
};

static void out_flush(struct out *o)
{
	const char *p = o->buf;
	size_t len = o->n;
	while (len > 0) {
		ssize_t w = write(o->fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		p += w;
		len -= (size_t) w;
	}
	o->n = 0;
}

static void out_str(struct out *o, const char *s)
{
	for (; *s != '\0'; s++) {
		if (o->n == sizeof o->buf)
			out_flush(o);
		o->buf[o->n++] = *s;
	}
}

static void out_u64(struct out *o, uint64_t v)
{
	char tmp[24];
	size_t n = sizeof tmp - 1;
	tmp[n] = '\0';
	do {
		tmp[--n] = (char) ('0' + (int) (v % 10u));
		v /= 10u;
	} while (v != 0);
	out_str(o, tmp + n);
}

static void out_run(struct out *o, const struct rt_ring_run *run, int first)
{
	out_str(o, first ? "[" : ", [");
	out_u64(o, run->c0);
	out_str(o, ", ");
	out_u64(o, run->c1);
	out_str(o, ", ");
	out_u64(o, run->n);
	out_str(o, ", ");
	out_u64(o, run->b);
	out_str(o, ", ");
	out_u64(o, run->off);
	out_str(o, "]");
}

void rt_ring_render(int fd, const struct rt_ring *r, const struct rt_ring_run *last)
{
	struct out o = {.fd = fd, .n = 0};
	uint32_t nruns = r->nruns;
	/* The closed runs, and last after them (merged into the last entry if
	 * the list is full): the list as a write would leave it. */
	struct rt_ring_run tail;
	int merged = last != NULL && last->n > 0 && nruns == WEFT_RING_MAX_RUNS;
	if (merged) {
		tail = r->runs[nruns - 1];
		merge_run(&tail, last);
	}
	uint64_t n = r->lost_events, b = r->lost_bytes;
	if (last != NULL) {
		n += last->n;
		b += last->b;
	}
	out_str(&o, "{\"" WEFT_KEY_RING_SIZE "\": ");
	out_u64(&o, r->size);
	out_str(&o, ", \"" WEFT_KEY_RING_LOST_EVENTS "\": ");
	out_u64(&o, n);
	out_str(&o, ", \"" WEFT_KEY_RING_LOST_BYTES "\": ");
	out_u64(&o, b);
	out_str(&o, ", \"" WEFT_KEY_RING_LOST "\": [");
	for (uint32_t k = 0; k < nruns; k++)
		out_run(&o, merged && k == nruns - 1 ? &tail : &r->runs[k], k == 0);
	if (last != NULL && last->n > 0 && !merged)
		out_run(&o, last, nruns == 0);
	out_str(&o, "]}");
	out_flush(&o);
}
