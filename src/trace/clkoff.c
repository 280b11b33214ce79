/* SPDX-License-Identifier: MIT */
/*
 * clkoff.c - clock-offsets.txt: a header line, then one row per host,
 * "rank hostname median mean std". The median, truncated to an integer, is
 * added to every clock of the looms whose name up to the first '.' is the
 * hostname. Blank lines are skipped; a line of only spaces ends the table.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace_internal.h"

#define MAX_FIELDS 6

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static int parse_double(const char *s, double *out)
{
	errno = 0;
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end != '\0' || errno != 0 || !isfinite(v))
		return 0;
	*out = v;
	return 1;
}

int weft_clkoff_parse(const char *text, size_t len, const char *name,
		struct weft_clkoff_row **rows, size_t *nrows, char *err, size_t errlen)
{
	*rows = NULL;
	*nrows = 0;
	size_t cap = 0;
	size_t pos = 0;
	int line = 0;
	if (memchr(text, '\0', len) != NULL) {
		snprintf(err, errlen, "%s: not a text file (holds a NUL byte)", name);
		return -1;
	}
	while (pos < len) {
		size_t end = pos;
		while (end < len && text[end] != '\n')
			end++;
		line++;
		size_t llen = end - pos;
		const char *l = text + pos;
		pos = end < len ? end + 1 : end;
		if (line == 1)
			continue; /* the header */
		if (llen == 0)
			continue;
		size_t k = 0;
		while (k < llen && is_space(l[k]))
			k++;
		if (k == llen)
			break; /* a line of blanks ends the table */
		char buf[512];
		if (llen >= sizeof buf) {
			snprintf(err, errlen, "%s: line %d: longer than %zu bytes", name, line,
					sizeof buf - 1);
			goto fail;
		}
		memcpy(buf, l, llen);
		buf[llen] = '\0';
		char *f[MAX_FIELDS];
		int nf = 0;
		char *sp = buf;
		while (*sp) {
			while (*sp && is_space(*sp))
				*sp++ = '\0';
			if (!*sp)
				break;
			if (nf == MAX_FIELDS) {
				nf++;
				break;
			}
			f[nf++] = sp;
			while (*sp && !is_space(*sp))
				sp++;
		}
		if (nf != 5) {
			snprintf(err, errlen, "%s: line %d: expected 5 fields (rank hostname median "
					"mean std), found %s%d", name, line, nf > 5 ? "more than " : "",
					nf > 5 ? 5 : nf);
			goto fail;
		}
		char *e;
		errno = 0;
		long rank = strtol(f[0], &e, 10);
		double med, mean, sd;
		if (*e != '\0' || errno != 0 || rank < INT_MIN || rank > INT_MAX) {
			snprintf(err, errlen, "%s: line %d: rank '%s' is not an integer", name, line,
					f[0]);
			goto fail;
		}
		if (!parse_double(f[2], &med) || !parse_double(f[3], &mean)
				|| !parse_double(f[4], &sd)) {
			snprintf(err, errlen, "%s: line %d: median, mean and std must be numbers",
					name, line);
			goto fail;
		}
		if (!(med > -9.2e18 && med < 9.2e18)) {
			snprintf(err, errlen, "%s: line %d: median %g out of range", name, line, med);
			goto fail;
		}
		for (size_t i = 0; i < *nrows; i++) {
			if (strcmp((*rows)[i].host, f[1]) == 0) {
				snprintf(err, errlen, "%s: line %d: host '%s' already given in line %d",
						name, line, f[1], (*rows)[i].line);
				goto fail;
			}
		}
		if (*nrows == cap) {
			cap = cap ? 2 * cap : 8;
			struct weft_clkoff_row *nr = realloc(*rows, cap * sizeof **rows);
			if (nr == NULL)
				goto oom;
			*rows = nr;
		}
		char *host = weft_strdup(f[1]);
		if (host == NULL)
			goto oom;
		struct weft_clkoff_row *row = &(*rows)[(*nrows)++];
		row->rank = (int) rank;
		row->host = host;
		row->offset = (int64_t) med; /* truncation toward zero */
		row->line = line;
	}
	if (*nrows == 0) {
		if (line == 0)
			snprintf(err, errlen, "%s: the file is empty (expected a header line, then "
					"rows 'rank hostname median mean std')", name);
		else
			snprintf(err, errlen, "%s: no offset rows after the header line", name);
		goto fail;
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory while reading %s", name);
	weft_clkoff_free(*rows, *nrows);
	*rows = NULL;
	*nrows = 0;
	return -2;
fail:
	weft_clkoff_free(*rows, *nrows);
	*rows = NULL;
	*nrows = 0;
	return -1;
}

void weft_clkoff_free(struct weft_clkoff_row *rows, size_t nrows)
{
	for (size_t i = 0; i < nrows; i++)
		free(rows[i].host);
	free(rows);
}

int weft_load_clock_offsets(struct weft_trace *t)
{
	/* the trace directory's, also when path is a directory inside it */
	char *file = weft_path_join(t->root ? t->root : t->path, WEFT_CLOCK_OFFSETS);
	if (file == NULL)
		return weft_oom(&t->diag, "reading the clock offsets of %s", t->path);
	struct stat st;
	if (stat(file, &st) != 0 && errno == ENOENT) {
		free(file);
		return 0; /* no file: offsets are 0 */
	}
	char *text;
	size_t len;
	const char *sfx = t->diag.mode == WEFT_LENIENT ? "; clock offsets not applied" : "";
	/* An unreadable or oversized file is a breach too. */
	char saved[WEFT_ERR_MAX];
	struct weft_diag quiet = t->diag;
	quiet.err = saved;
	quiet.errlen = sizeof saved;
	int rr = weft_read_small_file(file, 1u << 20, &text, &len, &quiet);
	if (rr < 0) {
		/* out of memory is no breach of the format */
		int r = rr == -2 ? weft_fail(&t->diag, "%s", saved)
			: weft_breach(&t->diag, "%s%s", saved, sfx);
		free(file);
		return r;
	}
	struct weft_clkoff_row *rows;
	size_t nrows;
	char err[WEFT_ERR_MAX];
	int r = 0;
	int pr = weft_clkoff_parse(text, len, file, &rows, &nrows, err, sizeof err);
	if (pr < 0) {
		r = pr == -2 ? weft_fail(&t->diag, "%s", err) : weft_breach(&t->diag, "%s%s", err, sfx);
		goto out;
	}
	for (size_t i = 0; i < nrows; i++) {
		int found = 0;
		for (size_t k = 0; k < t->nlooms; k++)
			if (strcmp(t->looms[k]->hostname, rows[i].host) == 0)
				found = 1;
		if (!found) {
			char names[WEFT_ERR_MAX / 2];
			size_t p = 0;
			names[0] = '\0';
			for (size_t k = 0; k < t->nlooms && p < sizeof names; k++) {
				int m = snprintf(names + p, sizeof names - p, "%s'%s'", k ? ", " : "",
						t->looms[k]->name);
				if (m < 0)
					break;
				p += (size_t) m;
			}
			r = weft_breach(&t->diag, "%s: line %d: host '%s' matches no loom (looms: %s)%s",
					file, rows[i].line, rows[i].host, t->nlooms ? names : "none", sfx);
			goto out_rows;
		}
	}
	/* sclock = rclock + offset must stay an int64: checked on the first
	 * clock of every stream (read when it was opened) */
	for (size_t i = 0; i < t->nstreams; i++) {
		struct weft_wstream *s = t->streams[i];
		const struct weft_thread *th = s->pub.thread;
		if (th == NULL || !s->has_peek)
			continue;
		const struct weft_clkoff_row *row = NULL;
		for (size_t k = 0; k < nrows && row == NULL; k++)
			if (strcmp(((const struct weft_iloom *) th->proc->loom)->hostname,
						rows[k].host) == 0)
				row = &rows[k];
		int64_t sum;
		if (row != NULL && __builtin_add_overflow(s->peek_clock, row->offset, &sum)) {
			r = weft_breach(&t->diag, "%s: line %d: the offset %" PRId64 " of host '%s' "
					"takes the first clock of %s, %" PRId64 ", outside the signed "
					"64-bit range%s", file, row->line, row->offset, row->host,
					s->obs_path, s->peek_clock, sfx);
			goto out_rows;
		}
	}
	for (size_t i = 0; i < nrows; i++)
		for (size_t k = 0; k < t->nlooms; k++)
			if (strcmp(t->looms[k]->hostname, rows[i].host) == 0)
				t->looms[k]->pub.clock_offset = rows[i].offset;
	for (size_t i = 0; i < t->nstreams; i++) {
		struct weft_wstream *s = t->streams[i];
		const struct weft_thread *th = s->pub.thread;
		if (th != NULL)
			s->clkoff = th->proc->loom->clock_offset;
	}
out_rows:
	weft_clkoff_free(rows, nrows);
out:
	free(text);
	free(file);
	return r;
}
