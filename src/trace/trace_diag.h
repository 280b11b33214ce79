/* SPDX-License-Identifier: MIT */
/*
 * trace_diag.h - libweft's diagnostics: struct weft_diag, where errors and
 * warnings go, strict vs lenient (diag.c). Part of struct weft_trace
 * (trace_internal.h).
 */
#ifndef WEFT_TRACE_DIAG_H
#define WEFT_TRACE_DIAG_H

#include <stddef.h>

#include "weft/weft.h"

#define WEFT_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* ---- diagnostics ---- */

struct weft_diag {
	enum weft_mode mode;
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	char *err;     /* where an error goes */
	size_t errlen;
	int failed;
	int oom;       /* the error is out of memory (weft_oom) */
};

/* An error in any mode: writes the message, returns -1. */
int weft_fail(struct weft_diag *d, const char *fmt, ...) WEFT_PRINTF(2, 3);
/* A warning in any mode: returns 0. */
int weft_warnf(struct weft_diag *d, const char *fmt, ...) WEFT_PRINTF(2, 3);
/* A metadata rule: an error (-1) when strict, a warning (0) when lenient. */
int weft_breach(struct weft_diag *d, const char *fmt, ...) WEFT_PRINTF(2, 3);
/* weft_fail() with "out of memory while <what>". */
int weft_oom(struct weft_diag *d, const char *fmt, ...) WEFT_PRINTF(2, 3);

#endif
