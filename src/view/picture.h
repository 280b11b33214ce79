/* SPDX-License-Identifier: MIT */
/*
 * picture.h - a picture of a window of a timeline (cairo): rows (threads,
 * then CPUs) x time, each interval in its value's colour, a time axis with
 * units, a legend (value label and colour) and a bar chart of the time each
 * value holds in the window; as PNG, SVG or PDF (docs/view.md, "Pictures").
 *
 * The timeline comes from picture_sink.h (the emulation's records of one
 * channel); this file only draws.
 */
#ifndef WEFT_VIEW_PICTURE_H
#define WEFT_VIEW_PICTURE_H

#include <stddef.h>
#include <stdint.h>

/* One row: the changes of its value, in time order: from t[i] on, the
 * value is v[i] (0: none, nothing drawn), until t[i + 1] or the end. */
struct picture_row {
	char *label;
	size_t n, cap;
	int64_t *t, *v;
	int group; /* 0: threads, 1: CPUs, 2: a breakdown's rows (a rule between groups) */
};

/* A value of the window and its label (NULL: the number is shown). */
struct picture_value {
	int64_t value;
	char *label;
	int64_t time; /* ns it holds in the window, all rows together */
};

struct picture {
	char *title;
	int64_t span;   /* the window's duration (ns): rows' times are in [0, span] */
	int64_t origin; /* the window's start, in ns after the trace's first event (axis labels) */
	size_t nrows;
	struct picture_row *rows;
	size_t nvalues;
	struct picture_value *values; /* by decreasing time */
};

enum picture_format { PICTURE_PNG, PICTURE_SVG, PICTURE_PDF };

/* The sizes a picture may have: each side in [PICTURE_MIN_SIDE,
 * PICTURE_MAX_SIDE], and at most PICTURE_MAX_PIXELS in all. */
#define PICTURE_MIN_SIDE 200u
#define PICTURE_MAX_SIDE 16384u
#define PICTURE_MAX_PIXELS (1u << 26)
#define PICTURE_DEFAULT_W 1600u
#define PICTURE_DEFAULT_H 900u

/* The colour of a value: the same in every picture (a fixed palette). */
void picture_color(int64_t value, double rgb[3]);

/* Draws p into a buffer (*out, *outlen, malloc'ed) in the format: 0, or -1
 * with the reason in err. */
int picture_render(const struct picture *p, enum picture_format fmt, unsigned width,
		unsigned height, unsigned char **out, size_t *outlen, char *err, size_t errlen);

void picture_free(struct picture *p);

/* Frees cairo's caches of fonts and the like (its static data) and
 * fontconfig's configuration, for a process that draws no more: call it
 * when no picture_render is running (weft view, once its pictures are
 * written). A later picture_render loads them again. */
void picture_end(void);

#endif
