/* SPDX-License-Identifier: MIT */
/*
 * die.c - how libovni stops a program: one line on stderr,
 * "libovni: <function>: <reason>", then abort(). Used for API misuse and
 * for I/O errors (a trace is never silently truncated).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_internal.h"

RT_NORETURN RT_PRINTF(3, 0) static void vdie(const char *func, int errnum, const char *fmt, va_list ap)
{
	char msg[1024];
	int n = snprintf(msg, sizeof msg, "libovni: %s: ", func);
	if (n < 0)
		n = 0;
	size_t off = (size_t) n < sizeof msg ? (size_t) n : sizeof msg - 1;
	int m = vsnprintf(msg + off, sizeof msg - off, fmt, ap);
	if (m > 0)
		off += (size_t) m;
	if (off > sizeof msg - 1)
		off = sizeof msg - 1;
	if (errnum != 0) {
		char ebuf[128];
		const char *es = strerror_r(errnum, ebuf, sizeof ebuf);
		m = snprintf(msg + off, sizeof msg - off, ": %s", es);
		if (m > 0)
			off += (size_t) m;
		if (off > sizeof msg - 1)
			off = sizeof msg - 1;
	}
	/* One write so that concurrent deaths do not interleave. */
	if (off > sizeof msg - 2)
		off = sizeof msg - 2;
	msg[off++] = '\n';
	ssize_t w = write(STDERR_FILENO, msg, off);
	(void) w;
	abort();
}

void rt_die(const char *func, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vdie(func, 0, fmt, ap);
}

void rt_die_errno(const char *func, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vdie(func, errnum, fmt, ap);
}
