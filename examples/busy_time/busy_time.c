/* SPDX-License-Identifier: MIT */
/*
 * busy_time - per thread, how long it lived and how long it was paused,
 * from the ovni events of a trace, using only the public libweft API.
 *
 *   alive:  the time between OHx (the thread starts running) and OHe (it
 *           ends), summed if the thread starts more than once;
 *   paused: the time between OHp (pause) and OHr (resume) inside that;
 *   busy:   alive - paused.
 * Clocks are the loom-corrected clocks (sclock). A thread still running at
 * the end of the trace is counted up to its last event and marked "(no OHe)".
 *
 * Usage: busy_time TRACE_DIR
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft/weft.h>

struct tstate {
	const struct weft_thread *th;
	int running, paused, ended;
	int64_t run_start, pause_start, last;
	int64_t alive, paused_ns;
};

static struct tstate *states;
static size_t nstates;

static struct tstate *state_of(const struct weft_thread *th)
{
	/* threads are few; a cache of the last hit makes this cheap */
	static size_t last;
	if (last < nstates && states[last].th == th)
		return &states[last];
	for (size_t i = 0; i < nstates; i++) {
		if (states[i].th == th) {
			last = i;
			return &states[i];
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2 || strcmp(argv[1], "--help") == 0) {
		fprintf(argc == 2 ? stdout : stderr, "Usage: busy_time TRACE_DIR\n");
		return argc == 2 ? 0 : 2;
	}
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(argv[1], NULL, err, sizeof err);
	if (t == NULL) {
		fprintf(stderr, "busy_time: %s\n", err);
		return 1;
	}
	/* one state per thread, in loom, process, thread order */
	for (size_t l = 0; l < weft_nlooms(t); l++) {
		const struct weft_loom *loom = weft_loom_at(t, l);
		for (size_t p = 0; p < loom->nprocs; p++)
			nstates += loom->procs[p]->nthreads;
	}
	states = calloc(nstates ? nstates : 1, sizeof *states);
	if (states == NULL)
		return 1;
	size_t k = 0;
	for (size_t l = 0; l < weft_nlooms(t); l++) {
		const struct weft_loom *loom = weft_loom_at(t, l);
		for (size_t p = 0; p < loom->nprocs; p++)
			for (size_t i = 0; i < loom->procs[p]->nthreads; i++)
				states[k++].th = loom->procs[p]->threads[i];
	}

	struct weft_event ev;
	int r;
	while ((r = weft_next(t, &ev)) > 0) {
		if (ev.mcv[0] != 'O' || ev.stream->thread == NULL)
			continue;
		struct tstate *s = state_of(ev.stream->thread);
		if (s == NULL)
			continue;
		s->last = ev.sclock;
		if (ev.mcv[1] != 'H')
			continue;
		switch (ev.mcv[2]) {
		case 'x':
			if (!s->running) {
				s->running = 1;
				s->ended = 0;
				s->run_start = ev.sclock;
			}
			break;
		case 'p':
			if (s->running && !s->paused) {
				s->paused = 1;
				s->pause_start = ev.sclock;
			}
			break;
		case 'r':
			if (s->paused) {
				s->paused = 0;
				s->paused_ns += ev.sclock - s->pause_start;
			}
			break;
		case 'e':
			if (s->running) {
				if (s->paused)
					s->paused_ns += ev.sclock - s->pause_start;
				s->alive += ev.sclock - s->run_start;
				s->running = s->paused = 0;
				s->ended = 1;
			}
			break;
		default:
			break;
		}
	}
	if (r < 0) {
		fprintf(stderr, "busy_time: %s\n", weft_error(t));
		weft_close(t);
		return 1;
	}
	printf("%-12s %8s %8s %14s %14s %14s %6s\n", "loom", "pid", "tid", "alive_ns",
			"paused_ns", "busy_ns", "busy%");
	for (size_t i = 0; i < nstates; i++) {
		struct tstate *s = &states[i];
		if (s->running) { /* count up to the last event */
			if (s->paused)
				s->paused_ns += s->last - s->pause_start;
			s->alive += s->last - s->run_start;
		}
		int64_t busy = s->alive - s->paused_ns;
		double pct = s->alive > 0 ? 100.0 * (double) busy / (double) s->alive : 0.0;
		printf("%-12s %8d %8d %14" PRId64 " %14" PRId64 " %14" PRId64 " %6.1f%s\n",
				s->th->proc->loom->name, s->th->proc->pid, s->th->tid, s->alive,
				s->paused_ns, busy, pct, s->running ? " (no OHe)" : "");
	}
	free(states);
	weft_close(t);
	return 0;
}
