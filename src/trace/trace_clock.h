/* SPDX-License-Identifier: MIT */
/*
 * trace_clock.h - clock offsets: the rows of clock-offsets.txt and loading
 * them into the looms' and streams' offsets (clkoff.c).
 */
#ifndef WEFT_TRACE_CLOCK_H
#define WEFT_TRACE_CLOCK_H

#include <stddef.h>
#include <stdint.h>

struct weft_trace;

/* ---- clock offsets ---- */

struct weft_clkoff_row {
	int rank;
	char *host;
	int64_t offset; /* the median, truncated */
	int line;
};

/* Parses clock-offsets.txt text. Returns -1 with the reason in err; -2 out
 * of memory (err says so). */
int weft_clkoff_parse(const char *text, size_t len, const char *name,
		struct weft_clkoff_row **rows, size_t *nrows, char *err, size_t errlen);
void weft_clkoff_free(struct weft_clkoff_row *rows, size_t nrows);

/* clkoff.c: loads path/clock-offsets.txt if present and sets the looms' and
 * streams' offsets. */
int weft_load_clock_offsets(struct weft_trace *t);

#endif
