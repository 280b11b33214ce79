/* SPDX-License-Identifier: MIT */
/*
 * readahead.c - the read-ahead thread: fills the streams' chunks (chunk.c)
 * on a second core while the caller's thread merges.
 *
 * Each stream has a ring of chunks. A chunk is either the producer's (free,
 * or being filled) or the merge's (ready), told by its `ready` flag: the
 * producer sets it with release order after filling the chunk, the merge
 * clears it the same way when done, and each side reads it with acquire
 * order before touching the chunk's contents. Both changes are also made
 * under the mutex, so that a side asleep on a condition variable is woken.
 *
 * A stream's chunks are filled in order, one at a time (its `prod.filling` flag,
 * under the mutex, says one is being filled), by the producer thread or by
 * the merge itself: when the merge needs a chunk that is not ready, it fills
 * it if nobody does yet, and while the producer fills it, it fills other
 * streams' next chunks rather than sleep. Who fills next picks the chunk
 * the merge waits for, then the stream with the fewest ready chunks (the
 * one the merge may need soonest), round robin among equals.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "trace_internal.h"

struct weft_ra {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t prod_cv;  /* the producer waits for a free chunk */
	pthread_cond_t merge_cv; /* the merge waits for a filled chunk */
	int stop;
	int prod_asleep;
	int merge_asleep;
	struct weft_wstream *want; /* the stream the merge waits on */
	unsigned *nready;          /* per stream: ready chunks */
	size_t rr;
	struct weft_trace *t;
};

long weft_online_cpus(void)
{
#ifdef CPU_COUNT
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		return CPU_COUNT(&set);
#endif
	return sysconf(_SC_NPROCESSORS_ONLN);
}

static int is_ready(const struct weft_chunk *c)
{
	return __atomic_load_n(&c->ready, __ATOMIC_ACQUIRE);
}

/* Under the mutex: the stream to fill next, or NULL. */
static struct weft_wstream *pick(struct weft_ra *ra)
{
	struct weft_trace *t = ra->t;
	struct weft_wstream *w = ra->want;
	if (w != NULL && !w->prod.done && !w->prod.filling && !is_ready(&w->ring[w->ph]))
		return w;
	struct weft_wstream *best = NULL;
	unsigned bestn = ~0u;
	size_t n = t->nstreams;
	for (size_t k = 0; k < n; k++) {
		size_t i = (ra->rr + k) % n;
		struct weft_wstream *s = t->streams[i];
		if (s->prod.done || s->prod.filling || is_ready(&s->ring[s->ph]))
			continue;
		if (ra->nready[i] < bestn) {
			best = s;
			bestn = ra->nready[i];
			if (bestn == 0)
				break;
		}
	}
	if (best != NULL)
		ra->rr = (best->index + 1) % n;
	return best;
}

/* Under the mutex (released meanwhile): fills ring[ph] of s, which nobody
 * fills, and hands it to the merge. */
static void fill_next(struct weft_ra *ra, struct weft_wstream *s)
{
	struct weft_chunk *c = &s->ring[s->ph];
	s->prod.filling = 1;
	pthread_mutex_unlock(&ra->mu);
	weft_chunk_fill(s, c, ra->t->allowed);
	pthread_mutex_lock(&ra->mu);
	__atomic_store_n(&c->ready, 1, __ATOMIC_RELEASE);
	ra->nready[s->index]++;
	s->ph = (s->ph + 1) % s->nring;
	s->prod.done = c->final;
	s->prod.filling = 0;
}

static void *producer(void *arg)
{
	struct weft_ra *ra = arg;
	pthread_mutex_lock(&ra->mu);
	while (!ra->stop) {
		struct weft_wstream *s = pick(ra);
		if (s == NULL) {
			ra->prod_asleep = 1;
			pthread_cond_wait(&ra->prod_cv, &ra->mu);
			ra->prod_asleep = 0;
			continue;
		}
		fill_next(ra, s);
		if (ra->merge_asleep)
			pthread_cond_signal(&ra->merge_cv);
	}
	pthread_mutex_unlock(&ra->mu);
	return NULL;
}

int weft_readahead_start(struct weft_trace *t)
{
	struct weft_ra *ra = calloc(1, sizeof *ra);
	if (ra == NULL)
		return -1;
	ra->nready = calloc(t->nstreams ? t->nstreams : 1, sizeof *ra->nready);
	if (ra->nready == NULL) {
		free(ra);
		return -1;
	}
	ra->t = t;
	pthread_mutex_init(&ra->mu, NULL);
	pthread_cond_init(&ra->prod_cv, NULL);
	pthread_cond_init(&ra->merge_cv, NULL);
	if (pthread_create(&ra->thread, NULL, producer, ra) != 0) {
		pthread_mutex_destroy(&ra->mu);
		pthread_cond_destroy(&ra->prod_cv);
		pthread_cond_destroy(&ra->merge_cv);
		free(ra->nready);
		free(ra);
		return -1;
	}
	t->ra = ra;
	return 0;
}

void weft_readahead_stop(struct weft_trace *t)
{
	struct weft_ra *ra = t->ra;
	if (ra == NULL)
		return;
	pthread_mutex_lock(&ra->mu);
	ra->stop = 1;
	pthread_cond_signal(&ra->prod_cv);
	pthread_mutex_unlock(&ra->mu);
	pthread_join(ra->thread, NULL);
	pthread_mutex_destroy(&ra->mu);
	pthread_cond_destroy(&ra->prod_cv);
	pthread_cond_destroy(&ra->merge_cv);
	free(ra->nready);
	free(ra);
	t->ra = NULL;
}

void weft_readahead_release(struct weft_trace *t, struct weft_wstream *s, struct weft_chunk *c)
{
	struct weft_ra *ra = t->ra;
	pthread_mutex_lock(&ra->mu);
	__atomic_store_n(&c->ready, 0, __ATOMIC_RELEASE);
	ra->nready[s->index]--;
	/* A sleeping producer is woken once the stream is down to the chunk
	 * the merge takes next, not at every chunk: while another one is
	 * ready behind it, the merge needs none soon, and the producer woken
	 * later fills the stream's free chunks (and any other's) in one go.
	 * About half the wake-ups; the merge never waits for a chunk nobody
	 * fills (weft_readahead_wait fills it then). */
	if (ra->prod_asleep && ra->nready[s->index] <= 1)
		pthread_cond_signal(&ra->prod_cv);
	pthread_mutex_unlock(&ra->mu);
}

void weft_readahead_wait(struct weft_trace *t, struct weft_wstream *s, struct weft_chunk *c)
{
	if (is_ready(c))
		return;
	struct weft_ra *ra = t->ra;
	pthread_mutex_lock(&ra->mu);
	while (!is_ready(c)) {
		/* Rather than wait, the merge fills chunks itself: its own if
		 * nobody fills it yet (then it is ring[ph]), else another
		 * stream's next one while the producer fills this. */
		struct weft_wstream *f = !s->prod.filling ? s : pick(ra);
		if (f != NULL) {
			fill_next(ra, f);
			continue;
		}
		ra->want = s;
		ra->merge_asleep = 1;
		pthread_cond_wait(&ra->merge_cv, &ra->mu);
		ra->merge_asleep = 0;
	}
	ra->want = NULL;
	pthread_mutex_unlock(&ra->mu);
}
