/* SPDX-License-Identifier: MIT */
/*
 * trace_util.h - libweft's small helpers: allocation that fails as an error
 * (diag.c), sorting an array that may be empty.
 */
#ifndef WEFT_TRACE_UTIL_H
#define WEFT_TRACE_UTIL_H

#include <stddef.h>
#include <stdlib.h>

/* util */
static inline void weft_sort(void *base, size_t n, size_t size,
		int (*cmp)(const void *, const void *))
{
	if (n > 1) /* qsort() wants a valid pointer even for 0 elements */
		qsort(base, n, size, cmp);
}

/* Allocation failures are errors like any other (nothing in libweft
 * aborts): these return NULL then, and the caller fails with weft_oom(). */
char *weft_strdup(const char *s);
char *weft_path_join(const char *a, const char *b);
void *weft_calloc(size_t n, size_t sz); /* calloc, at least one byte */

#endif
