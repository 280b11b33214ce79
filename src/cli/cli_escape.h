/* SPDX-License-Identifier: MIT */
/*
 * cli_escape.h - printing text that comes from a trace: names, labels,
 * payload strings, and the library's messages, which quote them. Control
 * characters are escaped (weft_escape in model.h: \n, \t, \r, \e, \xHH), so
 * that a trace cannot forge lines on the terminal or in a log.
 */
#ifndef WEFT_CLI_ESCAPE_H
#define WEFT_CLI_ESCAPE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* s escaped: s itself when it needs no escaping, else a copy in buf (cap
 * bytes) or in *heap (malloc'ed; free it). Never NULL. */
static inline const char *cli_escaped(const char *s, char *buf, size_t cap, char **heap)
{
	size_t n = strlen(s);
	*heap = NULL;
	if (weft_escape_clean(s, n) == n)
		return s;
	size_t len = weft_escape(s, n, buf, cap);
	if (len < cap)
		return buf;
	*heap = malloc(len + 1);
	if (*heap == NULL)
		return buf; /* the truncated copy: still escaped */
	weft_escape(s, n, *heap, len + 1);
	return *heap;
}

/* Prints "weft <cmd>: <prefix><msg>" and a newline on stderr, msg escaped:
 * a message is one line. */
static inline void cli_message(const char *cmd, const char *prefix, const char *msg)
{
	char buf[1024], *heap;
	const char *m = cli_escaped(msg, buf, sizeof buf, &heap);
	fprintf(stderr, "weft %s: %s%s\n", cmd, prefix, m);
	free(heap);
}

#endif
