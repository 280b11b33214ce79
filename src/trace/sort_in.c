/* SPDX-License-Identifier: MIT */
/*
 * sort_in.c - the event headers of a stream file read in order, in blocks
 * (the sorter frames its events with them; the common case, in_next, is
 * inline in sort_internal.h), and the sorter's error messages.
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

void weft_sort_set_fail(struct sort_fail *f, uint64_t off, const char *fmt, ...)
{
	if (f->failed)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof f->why, fmt, ap);
	va_end(ap);
	f->failed = 1;
	f->off = off;
}

int weft_sort_read_at(int fd, uint8_t *dst, size_t n, uint64_t off, struct sort_fail *f)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, dst + got, n - got, (off_t) (off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			weft_sort_set_fail(f, off + got, "read failed: %s", strerror(errno));
			return -1;
		}
		if (r == 0) {
			weft_sort_set_fail(f, off + got, "the file became shorter while reading");
			return -1;
		}
		got += (size_t) r;
	}
	return 0;
}

int weft_sort_in_init(struct in *in, uint64_t fsize)
{
	memset(in, 0, sizeof *in);
	in->fd = -1;
	in->fsize = fsize;
	in->off = fsize < WEFT_OBS_HEADER_SIZE ? fsize : WEFT_OBS_HEADER_SIZE;
	in->buf = malloc(IN_BUF);
	return in->buf != NULL ? 0 : -1;
}

int weft_sort_in_next_slow(struct in *in, struct ent *e, struct sort_fail *f)
{
	uint64_t left = in->fsize - in->off;
	if (left == 0)
		return 0;
	/* the header and a jumbo's size field */
	size_t want = left < WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD ? (size_t) left
		: WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD;
	if (in->off < in->boff || in->off + want > in->boff + in->blen) {
		size_t n = left < IN_BUF ? (size_t) left : IN_BUF;
		if (weft_sort_read_at(in->fd, in->buf, n, in->off, f) < 0)
			return -1;
		in->boff = in->off;
		in->blen = n;
	}
	const uint8_t *p = in->buf + (size_t) (in->off - in->boff);
	size_t avail = (size_t) (in->boff + in->blen - in->off);
	uint64_t need;
	if (!weft_event_size(p, avail, &need) || need > left)
		return 0;
	if (need > UINT32_MAX) {
		weft_sort_set_fail(f, in->off, "an event of %" PRIu64 " bytes: too large to sort", need);
		return -1;
	}
	take(in, e, p, need);
	return 1;
}

void weft_sort_tail_fail(struct in *in, uint64_t off, struct sort_fail *f)
{
	uint8_t hdr[WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD];
	uint64_t left = in->fsize - off;
	size_t n = left < sizeof hdr ? (size_t) left : sizeof hdr;
	if (weft_sort_read_at(in->fd, hdr, n, off, f) < 0)
		return;
	uint64_t need = 0;
	weft_event_size(hdr, n, &need);
	char why[256];
	weft_why_incomplete(hdr, left, need, why, sizeof why);
	weft_sort_set_fail(f, off, "%s", why);
}

