/* SPDX-License-Identifier: MIT */
/*
 * sort_stream.c - the whole-stream passes over a stream's file, opened
 * again as weft_open checked it: weft_stream_order (the order of its
 * events and its unordered regions, reported) and weft_sort_stream (the
 * stream sorted as ovnisort sorts it, for weft sort; the sorter is sort.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sort_internal.h"

/* Opens the file of stream s again, as weft_open checked it. */
static int open_again(struct weft_trace *t, const struct weft_wstream *s)
{
	int fd = open(s->obs_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return weft_fail(&t->diag, "%s: cannot open the binary stream: %s", s->obs_path,
				strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return weft_fail(&t->diag, "%s: cannot stat: %s", s->obs_path, strerror(e));
	}
	if ((uint64_t) st.st_dev != s->dev || (uint64_t) st.st_ino != s->ino) {
		close(fd);
		return weft_fail(&t->diag, "%s: the file was replaced since the trace was opened",
				s->obs_path);
	}
	if ((uint64_t) st.st_size != s->fsize) {
		close(fd);
		return weft_fail(&t->diag, "%s: the file changed size since the trace was opened "
				"(%" PRIu64 " bytes, now %" PRIu64 ")", s->obs_path, s->fsize,
				(uint64_t) st.st_size);
	}
	return fd;
}

static int report_fail(struct weft_trace *t, const struct weft_wstream *s,
		const struct sort_fail *f)
{
	return weft_fail(&t->diag, "%s: offset %" PRIu64 ": %s", s->obs_path, f->off, f->why);
}

/* Stream i opened again for a whole-stream pass (the report cleared), or -1. */
static int open_stream_at(struct weft_trace *t, size_t i, const char *fn,
		struct weft_sort_report *r, const struct weft_wstream **out)
{
	memset(r, 0, sizeof *r);
	if (i >= t->nstreams)
		return weft_fail(&t->diag, "%s: no stream %zu (the trace has %zu)", fn, i,
				t->nstreams);
	*out = t->streams[i];
	return open_again(t, *out);
}

int weft_stream_order(struct weft_trace *t, size_t i, struct weft_sort_report *r)
{
	const struct weft_wstream *s;
	int fd = open_stream_at(t, i, "weft_stream_order", r, &s);
	if (fd < 0)
		return -1;
	struct in in;
	if (weft_sort_in_init(&in, s->fsize) < 0) {
		close(fd);
		return weft_fail(&t->diag, "%s: out of memory", s->obs_path);
	}
	in.fd = fd;
	struct sort_fail f = { 0 };
	struct ent e;
	int rr, in_reg = 0, have = 0;
	int64_t last = 0;
	char st = 'S';
	uint64_t open_off = 0;
	while ((rr = in_next(&in, &e, &f)) > 0) {
		r->nevents++;
		int inside = in_reg && e.mark != MARK_CLOSE;
		if (e.mark)
			in_reg = e.mark == MARK_OPEN;
		if (have && e.clock < last && r->nback++ == 0) {
			r->back_offset = e.off;
			r->back_from = last;
			r->back_to = e.clock;
			memcpy(r->back_mcv, e.mcv, 3);
			r->back_mcv[3] = '\0';
			r->back_in_region = inside;
		}
		have = 1;
		last = e.clock;
		if (st == 'S' && e.mark == MARK_OPEN) {
			st = 'U';
			open_off = e.off;
		} else if (st == 'U') {
			if (e.mark == MARK_CLOSE) {
				r->nempty++;
				st = 'S';
			} else {
				st = 'X';
			}
		} else if (st == 'X' && e.mark == MARK_CLOSE) {
			r->nregions++;
			st = 'S';
		}
	}
	if (rr == 0 && in.off < in.fsize)
		weft_sort_tail_fail(&in, in.off, &f);
	free(in.buf);
	close(fd);
	if (f.failed)
		return report_fail(t, s, &f);
	if (st != 'S') {
		r->unclosed = 1;
		r->unclosed_offset = open_off;
	}
	return 0;
}

int weft_sort_stream(struct weft_trace *t, size_t i, size_t look_back,
		int (*write)(void *ctx, const void *buf, size_t len), void *ctx,
		struct weft_sort_report *r)
{
	const struct weft_wstream *s;
	int fd = open_stream_at(t, i, "weft_sort_stream", r, &s);
	if (fd < 0)
		return -1;
	struct weft_sorter *z = weft_sorter_new(s->fsize,
			look_back ? look_back : WEFT_SORT_LOOK_BACK);
	uint8_t *buf = malloc(OUT_BUF);
	int ret = 0;
	if (z == NULL || buf == NULL) {
		ret = weft_fail(&t->diag, "%s: out of memory", s->obs_path);
		goto out;
	}
	/* the header (checked by weft_open) */
	size_t pre = s->fsize < WEFT_OBS_HEADER_SIZE ? (size_t) s->fsize : WEFT_OBS_HEADER_SIZE;
	if (weft_sort_read_at(fd, buf, pre, 0, &z->fail) < 0) {
		ret = report_fail(t, s, &z->fail);
		goto out;
	}
	uint8_t *dst = write != NULL ? buf : NULL;
	for (;;) {
		uint64_t need;
		long n = weft_sorter_emit(z, fd, dst ? dst + pre : NULL, OUT_BUF - pre, &need, 0);
		if (n == 0 && need == 0 && z->tail_off < s->fsize) {
			/* the file ends inside an event: nothing is to be written */
			weft_sort_tail_fail(&z->in, z->tail_off, &z->fail);
			ret = report_fail(t, s, &z->fail);
			goto out;
		}
		if (n < 0) {
			ret = report_fail(t, s, &z->fail);
			goto out;
		}
		if (n == 0 && need > 0) {
			/* a jumbo event larger than the buffer: in pieces */
			const struct ent *e = at(z, 0);
			uint64_t off = e->off, left = e->size;
			pop(z);
			while (left > 0 || pre > 0) {
				size_t k = left < OUT_BUF - pre ? (size_t) left : OUT_BUF - pre;
				if (dst != NULL && weft_sort_read_at(fd, buf + pre, k, off, &z->fail) < 0) {
					ret = report_fail(t, s, &z->fail);
					goto out;
				}
				if (write != NULL && write(ctx, buf, pre + k) != 0) {
					ret = weft_fail(&t->diag, "%s: cannot write the sorted stream",
							s->obs_path);
					goto out;
				}
				off += k;
				left -= k;
				pre = 0;
			}
			continue;
		}
		if (n == 0 && pre == 0)
			break;
		if (write != NULL && write(ctx, buf, pre + (size_t) n) != 0) {
			ret = weft_fail(&t->diag, "%s: cannot write the sorted stream", s->obs_path);
			goto out;
		}
		pre = 0;
		if (n == 0)
			break;
	}
	r->nevents = z->nout;
	r->nregions = z->nregions;
	r->nempty = z->nempty;
	if (z->st != 'S') {
		r->unclosed = 1;
		r->unclosed_offset = z->reg_open_off;
	}
	r->nmoved = z->nmoved;
	r->nback = z->nback;
	r->back_offset = z->back_off;
	r->back_from = z->back_from;
	r->back_to = z->back_to;
	memcpy(r->back_mcv, z->back_mcv, sizeof r->back_mcv);
	r->back_in_region = z->back_in;
out:
	weft_sorter_free(z);
	free(buf);
	close(fd);
	return ret;
}
