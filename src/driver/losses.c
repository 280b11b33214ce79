/* SPDX-License-Identifier: MIT */
/* losses.c - the driver's side of traces with lost events: the runs each
 * stream lost (weft_stream_loss, weft_stream_lost_run) handed to the engine
 * per thread, the warning that says so, and the clock of a crash cut. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "losses.h"

/* The stream index of thread th's stream, or SIZE_MAX. */
static size_t stream_index(const struct weft_trace *t, const struct weft_stream *st)
{
	for (size_t i = 0; st != NULL && i < weft_nstreams(t); i++)
		if (weft_stream_at(t, i) == st)
			return i;
	return SIZE_MAX;
}

int driver_losses(struct weft_trace *t, struct emu *e, const struct emu_sys *sys,
		void (*warn)(void *ctx, const char *msg), void *ctx, char *err, size_t errlen)
{
	size_t nth = 0;
	uint64_t lost = 0, dropped = 0;
	for (size_t th = 0; th < sys->nthreads; th++) {
		size_t i = stream_index(t, sys->threads[th].stream);
		struct weft_loss l;
		if (i == SIZE_MAX || !weft_stream_loss(t, i, &l) || (l.nruns == 0 && l.dropped == 0))
			continue;
		struct emu_lost_run *runs = calloc(l.nruns + 1, sizeof *runs);
		if (runs == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		size_t n = 0;
		for (size_t k = 0; k < l.nruns; k++) {
			struct weft_lost_run r;
			if (!weft_stream_lost_run(t, i, k, &r))
				break;
			runs[n++] = (struct emu_lost_run) { r.first_sclock, r.last_sclock, r.events,
				r.has_offset, r.offset, r.bytes };
		}
		int rc = emu_thread_lost(e, th, runs, n, l.dropped);
		free(runs);
		if (rc != 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		nth++;
		lost += l.lost_events;
		dropped += l.dropped;
	}
	if (nth > 0 && warn != NULL) {
		char msg[512], what[160];
		if (lost > 0 && dropped > 0)
			snprintf(what, sizeof what, "%" PRIu64 " overwritten by the flight recorder "
					"(WEFT_RING), %" PRIu64 " dropped by signal handlers", lost,
					dropped);
		else if (lost > 0)
			snprintf(what, sizeof what, "%" PRIu64 " overwritten by the flight recorder "
					"(WEFT_RING)", lost);
		else
			snprintf(what, sizeof what, "%" PRIu64 " dropped by signal handlers", dropped);
		snprintf(msg, sizeof msg, "%zu thread%s lost events (%s): %s emulated leniently: "
				"after a loss a thread starts again in an unknown state, the events the "
				"models refuse then are skipped and counted in the summary, and its end "
				"checks are waived (docs/emu.md, \"Traces with lost events\")", nth,
				nth == 1 ? "" : "s", what, nth == 1 ? "it is" : "they are");
		warn(ctx, msg);
	}
	return 0;
}

int driver_cut_clock(const struct weft_trace *t, size_t i, int64_t *clock)
{
	struct weft_loss l;
	if (!weft_stream_loss(t, i, &l) || l.end_by == WEFT_END_NORMAL)
		return 0;
	*clock = l.end_sclock;
	return 1;
}
