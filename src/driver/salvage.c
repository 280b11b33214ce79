/* SPDX-License-Identifier: MIT */
/* salvage.c - weft emu --salvage: the threads cut short closed at their
 * last event (salvage.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "losses.h"
#include "salvage.h"

int salv_init(struct salv *C, size_t nthreads)
{
	memset(C, 0, sizeof *C);
	C->all = calloc(nthreads + 1, sizeof *C->all);
	C->cand = calloc(nthreads + 1, sizeof *C->cand);
	C->pending = calloc(nthreads + 1, sizeof *C->pending);
	C->cap = nthreads;
	if (C->all == NULL || C->cand == NULL || C->pending == NULL) {
		salv_free(C);
		return -1;
	}
	return 0;
}

void salv_add(struct salv *C, struct weft_trace *t, size_t stream, size_t thread)
{
	if (C->nall == C->cap)
		return;
	struct salv_thr s = { t, stream, thread };
	C->all[C->nall++] = s;
	C->cand[C->ncand++] = s;
}

void salv_scan(struct salv *C)
{
	size_t k = 0;
	for (size_t j = 0; j < C->ncand; j++) {
		struct weft_trace *t = C->cand[j].t;
		size_t i = C->cand[j].stream;
		if (!weft_stream_ended(t, i)) {
			C->cand[k++] = C->cand[j];
			continue;
		}
		int64_t last;
		if ((!weft_stream_cut(t, i, NULL) && !weft_stream_unfinished(t, i)) ||
				!weft_stream_last_sclock(t, i, &last))
			continue;
		int64_t cc;
		if (driver_cut_clock(t, i, &cc) && cc > last)
			last = cc; /* closed at its crash cut */
		/* insert in clock order (after equal clocks: ended earlier) */
		size_t p = C->npend;
		while (p > C->head && C->pending[p - 1].clock > last) {
			C->pending[p] = C->pending[p - 1];
			p--;
		}
		C->pending[p].clock = last;
		C->pending[p].thread = C->cand[j].thread;
		C->npend++;
	}
	C->ncand = k;
}

int salv_close(struct salv *C, struct emu *e, int64_t before, int all)
{
	while (C->head < C->npend && (all || C->pending[C->head].clock < before)) {
		if (emu_thread_close(e, C->pending[C->head].thread, C->pending[C->head].clock) != 0)
			return -1;
		C->head++;
	}
	return 0;
}

int salv_mark(const struct salv *C, struct emu *e)
{
	for (size_t j = 0; j < C->nall; j++) {
		struct weft_trace *t = C->all[j].t;
		size_t i = C->all[j].stream;
		struct weft_cut_info ci;
		int cut = weft_stream_cut(t, i, &ci);
		int unf = weft_stream_unfinished(t, i);
		if (!cut && !unf)
			continue;
		char why[384];
		int k = 0;
		if (cut)
			k = snprintf(why, sizeof why, "stream cut at offset %" PRIu64 " (a partial "
					"%s of %" PRIu64 " bytes)", ci.offset,
					ci.header ? "stream header" : "event", ci.bytes);
		int64_t cc;
		int at = driver_cut_clock(t, i, &cc);
		if (at && unf) {
			/* after the cut's words: ", cut by signal ..." */
			if (cut && k + 2 < (int) sizeof why)
				k += snprintf(why + k, sizeof why - (size_t) k, ", ");
			weft_stream_unfinished_why(t, i, why + k, sizeof why - (size_t) k);
		}
		else if (unf)
			snprintf(why + k, sizeof why - (size_t) k, "%sno ovni.finished",
					cut ? ", " : "");
		int64_t last = 0;
		int has = 0;
		if (cut) {
			has = ci.has_last;
			last = ci.last_sclock;
		} else {
			/* the stream's last event: the reader knows it once read */
			has = weft_stream_last_sclock(t, i, &last);
		}
		/* closed at the clock of its crash cut (weft.cut) */
		at = at && has && cc >= last;
		if (emu_thread_cut(e, C->all[j].thread, has, at ? cc : last, why) != 0)
			return -1;
		if (at)
			emu_thread_cut_at(e, C->all[j].thread);
	}
	return 0;
}

void salv_free(struct salv *C)
{
	free(C->all);
	free(C->cand);
	free(C->pending);
	memset(C, 0, sizeof *C);
}
