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
	/* the drift section's row of the host (dline 0: none): the clocks c
	 * become c + offset + floor(ppb * (c - t0) / WEFT_DRIFT_SCALE) */
	int64_t t0, ppb;
	int dline;
};

#define WEFT_DRIFT_SCALE 1000000000 /* drift in parts per 10^9 (ns per s) */

/* *out = c + off + floor(ppb * (c - t0) / 10^9), computed exactly in 128
 * bits; returns 0 (out untouched) when that is not an int64. */
int weft_clk_drift(int64_t c, int64_t off, int64_t t0, int64_t ppb, int64_t *out);
/* The clocks c whose weft_clk_drift is an int64 (|ppb| < 10^9): [lo, hi];
 * returns 0 when there is none. */
int weft_clk_drift_range(int64_t off, int64_t t0, int64_t ppb, int64_t *lo, int64_t *hi);

/* Parses clock-offsets.txt text. Returns -1 with the reason in err; -2 out
 * of memory (err says so). */
int weft_clkoff_parse(const char *text, size_t len, const char *name,
		struct weft_clkoff_row **rows, size_t *nrows, char *err, size_t errlen);
void weft_clkoff_free(struct weft_clkoff_row *rows, size_t nrows);

/* clkoff.c: loads path/clock-offsets.txt if present and sets the looms' and
 * streams' offsets. */
int weft_load_clock_offsets(struct weft_trace *t);

#endif
