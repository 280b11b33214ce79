/* SPDX-License-Identifier: MIT */
/*
 * page.c - the page of `weft view` (view.h): page.html with the collected
 * timelines as one JSON document inside it (docs/view.md, "The page's
 * data"). Every string is escaped so that no text of the trace can end the
 * script element or become markup: '<', '>' and '&' are \u003c, \u003e and
 * \u0026, U+2028/U+2029 escaped, and bytes that are not UTF-8 replaced by
 * U+FFFD. The intervals of the tracks (the smallest first) are included
 * while the page stays within the budget; the pyramids always are.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "out_file.h"
#include "view_internal.h"
#include "view_json.h"

#define DATA_MARK "__WEFT_DATA__"

/* v's digits at p; returns the end. */
static const char DIGITS2[] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

static inline char *put_int(char *p, int64_t v)
{
	uint64_t u = v < 0 ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v;
	if (v < 0)
		*p++ = '-';
	/* the digits counted, then written from the last two at a time: no
	 * copy (a memcpy call per number was a tenth of weft view's time) */
	size_t n = 1;
	uint64_t x = u;
	for (; x >= 100; x /= 100)
		n += 2;
	if (x >= 10)
		n++;
	char *end = p + n;
	while (u >= 100) {
		unsigned d = (unsigned) (u % 100) * 2;
		u /= 100;
		*--end = DIGITS2[d + 1];
		*--end = DIGITS2[d];
	}
	if (u >= 10) {
		*--end = DIGITS2[u * 2 + 1];
		*--end = DIGITS2[u * 2];
	} else {
		*--end = (char) ('0' + u);
	}
	return p + n;
}

/* Room for n bytes in the buffer (n <= VJ_BUF). */
static inline char *room(struct vj *j, size_t n)
{
	if (j->len + n > VJ_BUF)
		vj_flush(j);
	return j->buf + j->len;
}

static inline void used(struct vj *j, char *end)
{
	size_t n = (size_t) (end - (j->buf + j->len));
	j->n += n;
	j->len = j->f != NULL ? j->len + n : 0;
}

void vj_int(struct vj *j, int64_t v)
{
	used(j, put_int(room(j, 24), v));
}

int vj_flush(struct vj *j)
{
	if (j->f != NULL && j->len > 0 && fwrite(j->buf, 1, j->len, j->f) != j->len)
		j->failed = 1;
	j->len = 0;
	return j->failed ? -1 : 0;
}

void vj_raw(struct vj *j, const char *s, size_t n)
{
	j->n += n;
	if (j->f == NULL)
		return;
	if (j->len + n > VJ_BUF) {
		vj_flush(j);
		if (n > VJ_BUF) {
			if (fwrite(s, 1, n, j->f) != n)
				j->failed = 1;
			return;
		}
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
}

void vj_s(struct vj *j, const char *s)
{
	vj_raw(j, s, strlen(s));
}

/* The length of a valid UTF-8 sequence at s (0: not one). */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n;
	unsigned min;
	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0) {
		n = 2;
		min = 0x80;
		c &= 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3;
		min = 0x800;
		c &= 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		n = 4;
		min = 0x10000;
		c &= 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return n;
}

void vj_str(struct vj *j, const char *s)
{
	const unsigned char *p = (const unsigned char *) (s != NULL ? s : "");
	vj_raw(j, "\"", 1);
	while (*p != '\0') {
		unsigned char c = *p;
		char esc[8];
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char) c;
			vj_raw(j, esc, 2);
			p++;
		} else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) {
			snprintf(esc, sizeof esc, "\\u%04x", c);
			vj_raw(j, esc, 6);
			p++;
		} else if (c < 0x80) {
			vj_raw(j, (const char *) p, 1);
			p++;
		} else {
			size_t n = utf8_len(p);
			if (n == 0) {
				vj_s(j, "\\ufffd");
				p++;
			} else if (n == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
				vj_s(j, p[2] == 0xa8 ? "\\u2028" : "\\u2029");
				p += 3;
			} else {
				vj_raw(j, (const char *) p, n);
				p += n;
			}
		}
	}
	vj_raw(j, "\"", 1);
}

/* The intervals of a track from index a to b: gap after the previous end,
 * duration, value; prev: the end before a. */
void vj_ivs(struct vj *j, const struct view_track *t, size_t a, size_t b, int64_t prev)
{
	vj_raw(j, "[", 1);
	for (size_t i = a; i < b; i++) {
		const struct view_iv *x = &t->iv[i];
		char *p = room(j, 3 * 24);
		if (i > a)
			*p++ = ',';
		p = put_int(p, x->start - prev);
		*p++ = ',';
		p = put_int(p, x->end - x->start);
		*p++ = ',';
		p = put_int(p, x->value);
		used(j, p);
		prev = x->end;
	}
	vj_raw(j, "]", 1);
}

static void pyr(struct vj *j, const struct view_track *t)
{
	vj_raw(j, "[", 1);
	for (int l = 0; l < t->nlev; l++) {
		vj_s(j, l ? ",[" : "[");
		for (size_t k = t->off[l]; k < t->off[l + 1]; k++) {
			char *p = room(j, 25);
			if (k > t->off[l])
				*p++ = ',';
			used(j, put_int(p, t->pyr[k]));
		}
		vj_raw(j, "]", 1);
	}
	vj_raw(j, "]", 1);
}

/* Everything but the intervals, without the closing brace. */
static void head(struct vj *j, const struct view_data *vd, const struct view_page_opts *o)
{
	vj_s(j, "{\"v\":1,\"title\":");
	vj_str(j, o->title);
	vj_s(j, ",\"duration\":");
	vj_int(j, vd->duration);
	vj_s(j, ",\"from\":");
	vj_int(j, o->from);
	vj_s(j, ",\"budget\":");
	vj_int(j, (int64_t) o->budget);
	vj_s(j, ",\"serve\":");
	vj_s(j, o->serve ? "true" : "false");
	vj_s(j, ",\"channel\":");
	vj_str(j, o->channel != NULL ? o->channel : "ovni.thread.state");
	vj_s(j, ",\"chans\":[");
	for (size_t c = 0; c < vd->nchans; c++) {
		const struct view_chan *ch = &vd->chans[c];
		vj_s(j, c ? ",{\"name\":" : "{\"name\":");
		vj_str(j, ch->name);
		vj_s(j, ",\"model\":");
		vj_str(j, ch->model);
		vj_s(j, ",\"kind\":");
		vj_str(j, ch->kind);
		vj_s(j, ",\"scope\":");
		vj_int(j, ch->scope);
		vj_s(j, ",\"labels\":[");
		for (size_t k = 0; k < ch->nlabels; k++) {
			vj_s(j, k ? ",[" : "[");
			vj_int(j, ch->lvalue[k]);
			vj_raw(j, ",", 1);
			vj_str(j, ch->llabel[k]);
			vj_raw(j, "]", 1);
		}
		vj_s(j, "]}");
	}
	vj_s(j, "],\"rows\":[");
	for (size_t r = 0; r < vd->nrows; r++) {
		const struct view_row *row = &vd->rows[r];
		vj_s(j, r ? ",{\"view\":" : "{\"view\":");
		vj_int(j, row->view);
		vj_s(j, ",\"index\":");
		vj_int(j, (int64_t) row->index);
		vj_s(j, ",\"label\":");
		vj_str(j, row->label);
		vj_s(j, ",\"loom\":");
		vj_str(j, row->loom);
		vj_s(j, ",\"pid\":");
		vj_int(j, row->pid);
		vj_raw(j, "}", 1);
	}
	vj_s(j, "],\"tracks\":[");
	int first = 1;
	for (size_t i = 0; i < vd->nrows * vd->nchans; i++) {
		const struct view_track *t = &vd->tracks[i];
		if (t->count == 0)
			continue;
		vj_s(j, first ? "{\"r\":" : ",{\"r\":");
		first = 0;
		vj_int(j, (int64_t) (i / vd->nchans));
		vj_s(j, ",\"c\":");
		vj_int(j, (int64_t) (i % vd->nchans));
		vj_s(j, ",\"n\":");
		vj_int(j, (int64_t) t->count);
		vj_s(j, ",\"k\":");
		vj_int(j, t->kmin);
		vj_s(j, ",\"pyr\":");
		pyr(j, t);
		vj_raw(j, "}", 1);
	}
	vj_raw(j, "]", 1);
}

struct tsize {
	size_t track;
	uint64_t len;
};

static int cmp_tsize(const void *a, const void *b)
{
	const struct tsize *x = a, *y = b;
	if (x->len != y->len)
		return (x->len > y->len) - (x->len < y->len);
	return (x->track > y->track) - (x->track < y->track);
}

int view_write_page(const struct view_data *vd, const struct view_page_opts *o, FILE *f,
		char *err, size_t errlen)
{
	const char *mark = strstr(view_page_text, DATA_MARK);
	if (mark == NULL || !vd->complete) {
		snprintf(err, errlen, "the page's template has no data mark");
		return -1;
	}
	/* all but the intervals, written once into memory: its size decides
	 * which intervals fit (formatting it twice, to count and to write,
	 * was a tenth of weft view's time) */
	struct vj *hj = malloc(sizeof *hj), *jw = malloc(sizeof *jw);
	char *hbuf = NULL;
	size_t hlen = 0;
	FILE *hf = hj != NULL && jw != NULL ? open_memstream(&hbuf, &hlen) : NULL;
	int hfailed = 1;
	if (hf != NULL) {
		vj_init(hj, hf);
		head(hj, vd, o);
		hfailed = vj_flush(hj) != 0;
		hfailed |= fclose(hf) != 0;
	}
	free(hj);
	if (hfailed) {
		free(hbuf);
		free(jw);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	uint64_t used = hlen + view_page_len - strlen(DATA_MARK) + 64;
	size_t nt = vd->nrows * vd->nchans;
	struct tsize *ts = calloc(nt + 1, sizeof *ts);
	char *take = calloc(nt + 1, 1);
	if (ts == NULL || take == NULL) {
		free(ts);
		free(take);
		free(jw);
		free(hbuf);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	size_t n = 0, ntake = 0;
	for (size_t i = 0; i < nt; i++)
		if (vd->tracks[i].count > 0) {
			/* a track whose intervals the collection did not keep (they
			 * were beyond the budget) comes last and is never taken */
			ts[n].track = i;
			ts[n++].len = vd->tracks[i].sp != NULL ? UINT64_MAX
				: vd->tracks[i].jlen + 2 + view_digits((int64_t) i) + 4;
		}
	qsort(ts, n, sizeof *ts, cmp_tsize);
	for (size_t k = 0; k < n; k++) {
		if (ts[k].len == UINT64_MAX || used + ts[k].len > o->budget)
			break;
		used += ts[k].len;
		take[ts[k].track] = 1;
		ntake++;
	}
	vj_init(jw, f);
	vj_raw(jw, view_page_text, (size_t) (mark - view_page_text));
	vj_raw(jw, hbuf, hlen);
	free(hbuf);
	vj_s(jw, ",\"complete\":");
	vj_s(jw, ntake == n ? "true" : "false");
	if (o->complete != NULL)
		*o->complete = ntake == n;
	vj_s(jw, ",\"detail\":{");
	int first = 1;
	for (size_t i = 0; i < nt; i++) {
		if (!take[i])
			continue;
		vj_s(jw, first ? "\"" : ",\"");
		first = 0;
		vj_int(jw, (int64_t) i);
		vj_s(jw, "\":");
		vj_ivs(jw, &vd->tracks[i], 0, vd->tracks[i].n, 0);
	}
	vj_s(jw, "}}");
	const char *rest = mark + strlen(DATA_MARK);
	vj_raw(jw, rest, view_page_len - (size_t) (rest - view_page_text));
	int failed = vj_flush(jw) != 0;
	free(jw);
	free(ts);
	free(take);
	if (failed || ferror(f)) {
		snprintf(err, errlen, "cannot write the page: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int view_write_file(const struct view_data *vd, const struct view_page_opts *o,
		const char *path, uint64_t *size, char *err, size_t errlen)
{
	char *dir = strdup(path);
	if (dir == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	char *slash = strrchr(dir, '/');
	const char *name = path;
	if (slash != NULL) {
		name = path + (slash - dir) + 1;
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
	} else {
		strcpy(dir, ".");
	}
	if (*name == '\0') {
		snprintf(err, errlen, "%s: names a directory, not a file", path);
		free(dir);
		return -1;
	}
	struct out_file of;
	out_file_init(&of);
	if (out_file_open(&of, dir, name, err, errlen) != 0) {
		free(dir);
		return -1;
	}
	free(dir);
	FILE *f = out_file_stream(&of, "w", err, errlen);
	if (f == NULL) {
		out_file_discard(&of);
		return -1;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	int r = view_write_page(vd, o, f, err, errlen);
	if (r == 0)
		*size = (uint64_t) ftello(f);
	if (fclose(f) != 0 && r == 0) {
		snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
		r = -1;
	}
	if (r == 0)
		r = out_file_check(&of, err, errlen);
	if (r == 0)
		return out_file_commit(&of, err, errlen);
	out_file_discard(&of);
	return -1;
}
