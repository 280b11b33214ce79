/* SPDX-License-Identifier: MIT */
/* salvage.h - weft emu --salvage (salvage.c): the threads cut short (their
 * stream ends inside an event, or they never ended: no ovni.finished)
 * closed at their last event, for the serial run (driver.c) and for each
 * worker of -j over its looms' threads (parallel.c). */
#ifndef WEFT_DRIVER_SALVAGE_H
#define WEFT_DRIVER_SALVAGE_H

#include <stddef.h>
#include <stdint.h>

#include "emu.h"
#include "weft/weft.h"

/* The threads to close at their last event. A thread is a candidate until
 * its stream ends; then, if it is cut short and has events, it waits in
 * `pending` (ascending clocks) to be closed before the first event with a
 * later clock is emulated (the reader finds a stream's end before it
 * yields any event after that stream's last one). */
struct salv {
	struct salv_thr {
		struct weft_trace *t; /* the reader of its stream */
		size_t stream;        /* its index there */
		size_t thread;        /* its row */
	} *all, *cand;        /* every thread with a stream; those whose stream did not end */
	size_t nall, ncand, cap;
	struct salv_pend {
		int64_t clock;
		size_t thread;
	} *pending;
	size_t npend, head;
};

/* Room for nthreads threads: 0, or -1 out of memory. */
int salv_init(struct salv *C, size_t nthreads);
/* Thread `thread` (row order) is read from stream `stream` of t (call in
 * row order, at most nthreads times). */
void salv_add(struct salv *C, struct weft_trace *t, size_t stream, size_t thread);
/* Moves the candidates whose stream ended to pending (if cut short). */
void salv_scan(struct salv *C);
/* Closes the pending threads whose last clock is before `before` (all:
 * every one): 0, or -1 (emu_error). */
int salv_close(struct salv *C, struct emu *e, int64_t before, int all);
/* After the last event: every thread cut short is marked so for the end
 * checks and the summary (emu_thread_cut, emu_thread_cut_at). 0, or -1
 * out of memory. */
int salv_mark(const struct salv *C, struct emu *e);
void salv_free(struct salv *C);

#endif
