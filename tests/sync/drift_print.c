/* SPDX-License-Identifier: MIT */
/*
 * drift_print TRACE: prints every event of TRACE in the merged order of the
 * synchronized clocks (WEFT_CLOCK_OFFSET, strict), one line each:
 * "SCLOCK RCLOCK MCV RELPATH". For tests/sync/drift_read.py, which checks
 * the clock drift of clock-offsets.txt end to end. Exit 1 with libweft's
 * message on stderr on any error.
 */
#include <inttypes.h>
#include <stdio.h>

#include "weft/weft.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: drift_print TRACE\n");
		return 2;
	}
	char err[1024];
	WEFT_OPTS(weft_open_opts, o, .clock = WEFT_CLOCK_OFFSET);
	struct weft_trace *t = weft_open(argv[1], &o, err, sizeof err);
	if (t == NULL) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	struct weft_event ev;
	int r;
	while ((r = weft_next(t, &ev)) > 0)
		printf("%" PRId64 " %" PRId64 " %s %s\n", ev.sclock, ev.rclock, ev.mcv,
				ev.stream->relpath);
	if (r < 0)
		fprintf(stderr, "%s\n", weft_error(t));
	weft_close(t);
	return r < 0 ? 1 : 0;
}
