/* SPDX-License-Identifier: MIT */
/*
 * clkoff.c - clock-offsets.txt: a header line, then one row per host,
 * "rank hostname median mean std". The median, truncated to an integer, is
 * added to every clock of the looms whose name up to the first '.' is the
 * hostname. Blank lines are skipped; a line of only spaces ends the table.
 *
 * After that line, a drift section may follow (weft-sync --drift; the
 * reference's reader stops at the line of blanks and never sees it): a
 * header "drift hostname t0 drift_ppb", then rows "drift HOST T0 PPB". A
 * host with a drift row has its clocks c corrected to
 * c + offset + floor(PPB * (c - T0) / 10^9), in exact integer arithmetic
 * (weft_clk_drift). Anything else after the line of blanks is ignored, as
 * before. See docs/sync.md, "Drift".
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

int weft_clk_drift(int64_t c, int64_t off, int64_t t0, int64_t ppb, int64_t *out)
{
	/* |c - t0| < 2^64 and |ppb| < 2^30: the product is below 2^94 */
	__int128 p = ((__int128) c - t0) * ppb;
	__int128 q = p / WEFT_DRIFT_SCALE;
	if (p % WEFT_DRIFT_SCALE < 0)
		q--; /* floor: the correction is monotonic across t0 */
	__int128 v = (__int128) c + off + q;
	if (v < INT64_MIN || v > INT64_MAX)
		return 0;
	*out = (int64_t) v;
	return 1;
}

/* The corrected clock as a 128-bit value (never overflows). */
static __int128 drift_wide(int64_t c, int64_t off, int64_t t0, int64_t ppb)
{
	__int128 p = ((__int128) c - t0) * ppb;
	__int128 q = p / WEFT_DRIFT_SCALE;
	if (p % WEFT_DRIFT_SCALE < 0)
		q--;
	return (__int128) c + off + q;
}

int weft_clk_drift_range(int64_t off, int64_t t0, int64_t ppb, int64_t *lo, int64_t *hi)
{
	/* c -> drift_wide(c) does not decrease when |ppb| < 10^9, so the
	 * clocks whose correction is an int64 are one interval: bisect its
	 * ends. */
	if (drift_wide(INT64_MAX, off, t0, ppb) < INT64_MIN
			|| drift_wide(INT64_MIN, off, t0, ppb) > INT64_MAX)
		return 0;
	int64_t a = INT64_MIN, b = INT64_MAX; /* the first c with wide(c) >= INT64_MIN */
	if (drift_wide(a, off, t0, ppb) < INT64_MIN) {
		while ((uint64_t) b - (uint64_t) a > 1) { /* wide(a) < MIN <= wide(b) */
			int64_t m = (int64_t) ((__int128) a + ((__int128) b - a) / 2);
			if (drift_wide(m, off, t0, ppb) < INT64_MIN)
				a = m;
			else
				b = m;
		}
		a = b;
	}
	*lo = a;
	a = INT64_MIN;
	b = INT64_MAX; /* the last c with wide(c) <= INT64_MAX */
	if (drift_wide(b, off, t0, ppb) > INT64_MAX) {
		while ((uint64_t) b - (uint64_t) a > 1) { /* wide(a) <= MAX < wide(b) */
			int64_t m = (int64_t) ((__int128) a + ((__int128) b - a) / 2);
			if (drift_wide(m, off, t0, ppb) > INT64_MAX)
				b = m;
			else
				a = m;
		}
		b = a;
	}
	*hi = b;
	return *lo <= *hi;
}

/* Splits buf (NUL-terminated, modified) into at most max fields; returns
 * their number, max + 1 when there are more. */
static int split_fields(char *buf, char **f, int max)
{
	int nf = 0;
	char *sp = buf;
	while (*sp) {
		while (*sp && is_space(*sp))
			*sp++ = '\0';
		if (!*sp)
			break;
		if (nf == max)
			return max + 1;
		f[nf++] = sp;
		while (*sp && !is_space(*sp))
			sp++;
	}
	return nf;
}

static int parse_i64(const char *s, int64_t *out)
{
	char *e;
	errno = 0;
	long long v = strtoll(s, &e, 10);
	if (e == s || *e != '\0' || errno != 0)
		return 0;
	*out = (int64_t) v;
	return 1;
}

/* The drift section, from text[pos] on (line is the number of the line
 * before it). 0: parsed or absent; -1 with err. */
static int parse_drift(const char *text, size_t len, size_t pos, int line, const char *name,
		struct weft_clkoff_row *rows, size_t nrows, char *err, size_t errlen)
{
	int in = 0; /* the header was seen */
	while (pos < len) {
		size_t end = pos;
		while (end < len && text[end] != '\n')
			end++;
		line++;
		size_t llen = end - pos;
		const char *l = text + pos;
		pos = end < len ? end + 1 : end;
		if (llen == 0)
			continue; /* empty lines are skipped, as in the table */
		size_t k = 0;
		while (k < llen && is_space(l[k]))
			k++;
		if (k == llen) {
			if (in)
				return 0; /* a line of blanks ends the section */
			continue;
		}
		char buf[512];
		if (llen >= sizeof buf) {
			if (!in)
				return 0; /* not a drift section: ignored, as before */
			snprintf(err, errlen, "%s: line %d: longer than %zu bytes", name, line,
					sizeof buf - 1);
			return -1;
		}
		memcpy(buf, l, llen);
		buf[llen] = '\0';
		char *f[5] = { NULL };
		int nf = split_fields(buf, f, 4);
		if (nf == 0)
			continue; /* not reached: the line holds a non-blank */
		if (!in) {
			if (strcmp(f[0], "drift") != 0)
				return 0; /* not a drift section: ignored, as before */
			if (nf != 4 || strcmp(f[1], "hostname") != 0 || strcmp(f[2], "t0") != 0
					|| strcmp(f[3], "drift_ppb") != 0) {
				snprintf(err, errlen, "%s: line %d: expected the drift header 'drift "
						"hostname t0 drift_ppb'", name, line);
				return -1;
			}
			in = 1;
			continue;
		}
		if (nf != 4 || strcmp(f[0], "drift") != 0) {
			snprintf(err, errlen, "%s: line %d: expected 4 fields (drift hostname t0 "
					"drift_ppb), found %s%d", name, line,
					nf > 4 ? "more than " : "", nf > 4 ? 4 : nf);
			if (nf == 4)
				snprintf(err, errlen, "%s: line %d: a drift row starts with 'drift', "
						"not '%s'", name, line, f[0]);
			return -1;
		}
		struct weft_clkoff_row *row = NULL;
		for (size_t i = 0; i < nrows && row == NULL; i++)
			if (strcmp(rows[i].host, f[1]) == 0)
				row = &rows[i];
		if (row == NULL) {
			snprintf(err, errlen, "%s: line %d: host '%s' has a drift but no offset row",
					name, line, f[1]);
			return -1;
		}
		if (row->dline != 0) {
			snprintf(err, errlen, "%s: line %d: the drift of host '%s' already given in "
					"line %d", name, line, f[1], row->dline);
			return -1;
		}
		int64_t t0, ppb;
		if (!parse_i64(f[2], &t0)) {
			snprintf(err, errlen, "%s: line %d: t0 '%s' is not a signed 64-bit integer "
					"(ns)", name, line, f[2]);
			return -1;
		}
		if (!parse_i64(f[3], &ppb) || ppb <= -WEFT_DRIFT_SCALE || ppb >= WEFT_DRIFT_SCALE) {
			snprintf(err, errlen, "%s: line %d: drift_ppb '%s' is not an integer from "
					"-999999999 to 999999999", name, line, f[3]);
			return -1;
		}
		row->t0 = t0;
		row->ppb = ppb;
		row->dline = line;
	}
	return 0;
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
		if (k == llen) {
			/* a line of blanks ends the table; a drift section may follow */
			if (*nrows > 0 && parse_drift(text, len, pos, line, name, *rows, *nrows, err,
						errlen) < 0)
				goto fail;
			break;
		}
		char buf[512];
		if (llen >= sizeof buf) {
			snprintf(err, errlen, "%s: line %d: longer than %zu bytes", name, line,
					sizeof buf - 1);
			goto fail;
		}
		memcpy(buf, l, llen);
		buf[llen] = '\0';
		char *f[MAX_FIELDS];
		int nf = split_fields(buf, f, MAX_FIELDS);
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
		row->t0 = 0;
		row->ppb = 0;
		row->dline = 0;
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
		if (row != NULL && row->ppb != 0) {
			int64_t lo, hi;
			if (!weft_clk_drift_range(row->offset, row->t0, row->ppb, &lo, &hi)
					|| s->peek_clock < lo || s->peek_clock > hi) {
				r = weft_breach(&t->diag, "%s: line %d: the offset %" PRId64 " and "
						"drift %" PRId64 " ppb from t0 %" PRId64 " of host '%s' "
						"take the first clock of %s, %" PRId64 ", outside the "
						"signed 64-bit range%s", file, row->dline, row->offset,
						row->ppb, row->t0, row->host, s->obs_path, s->peek_clock,
						sfx);
				goto out_rows;
			}
			continue;
		}
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
		if (th == NULL)
			continue;
		s->clkoff = th->proc->loom->clock_offset;
		const char *host = ((const struct weft_iloom *) th->proc->loom)->hostname;
		for (size_t k = 0; k < nrows; k++) {
			if (rows[k].ppb != 0 && strcmp(host, rows[k].host) == 0) {
				s->drift_ppb = rows[k].ppb;
				s->drift_t0 = rows[k].t0;
				t->drifted = 1;
				/* the framing refuses a clock outside (chunk.c); none
				 * when the range is empty */
				if (!weft_clk_drift_range(rows[k].offset, rows[k].t0, rows[k].ppb,
							&s->clk_lo, &s->clk_hi)) {
					s->clk_lo = INT64_MAX;
					s->clk_hi = INT64_MIN;
				}
			}
		}
	}
out_rows:
	weft_clkoff_free(rows, nrows);
out:
	free(text);
	free(file);
	return r;
}
