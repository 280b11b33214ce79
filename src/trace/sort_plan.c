/* SPDX-License-Identifier: MIT */
/*
 * sort_plan.c - sorting on read without a limit on how far back an
 * unordered region reaches (docs/reader.md, "Regions of any length").
 *
 * A sorter gives an event out once look_back events follow it: no later
 * region can move it then. Without a limit, no event would be final before
 * its stream ends; so each stream longer than the default look-back is
 * scanned once first (its event headers, in file order) for a look-back
 * that surely holds each of its regions, and its sorter is made with it
 * (however much smaller than the default: 1 for a stream without regions).
 *
 * The scan runs ovnisort's state machine (sort.c). At the OU] that closes
 * a region of smallest clock r, the sort starts after the last event, in
 * the order the earlier sorts left, whose clock is below r. Some event x
 * with a clock below r lies at or after the start of the last block of
 * BLK events (file order) whose smallest clock is below r. Earlier sorts
 * move events only inside their ranges, so x stays inside the union of
 * the ranges that holds its position: the sort starts at or after the
 * start of that union (or of the block, if earlier). The distance from
 * there to the OU] is the look-back the region needs, or more. The blocks
 * are kept as a stack of suffix minima (a block whose minimum is not
 * below a later one's is never the last below any r), the ranges as
 * disjoint intervals (merged when too many: wider, never narrower).
 *
 * Then the windows: a stream's needs at most min(its events, look-back)
 * entries of 24 bytes, 2.5 times that while a region is sorted. The
 * smallest fit the budget in memory; the others live in one temporary
 * file (O_TMPFILE in $TMPDIR, or /tmp; else made and unlinked at once;
 * its blocks reserved at once),
 * each in its own shared mapping, whose pages go back to the file once
 * the sorter has touched its resident share.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sort_internal.h"

#define BLK 1024u
#define MAX_IVS 65536u
/* The least resident share of a mapped window. */
#define MIN_RESIDENT (4u << 20)

struct iv {
	uint64_t lo, hi; /* event positions, both included */
};

struct blk {
	uint64_t start;
	int64_t min;
};

struct reach {
	struct blk *b;
	size_t nb, capb;
	struct iv *v;
	size_t nv, capv;
	uint64_t need;
};

static int push_blk(struct reach *r, uint64_t start, int64_t min)
{
	while (r->nb > 0 && r->b[r->nb - 1].min >= min)
		r->nb--;
	if (r->nb == r->capb) {
		size_t nc = r->capb ? r->capb * 2 : 64;
		struct blk *nb = realloc(r->b, nc * sizeof *nb);
		if (nb == NULL)
			return -1;
		r->b = nb;
		r->capb = nc;
	}
	r->b[r->nb].start = start;
	r->b[r->nb].min = min;
	r->nb++;
	return 0;
}

/* The start of the interval holding pos, or pos. */
static uint64_t iv_start(const struct reach *r, uint64_t pos)
{
	size_t lo = 0, hi = r->nv; /* first interval with hi >= pos */
	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;
		if (r->v[m].hi < pos)
			lo = m + 1;
		else
			hi = m;
	}
	if (lo < r->nv && r->v[lo].lo <= pos)
		return r->v[lo].lo;
	return pos;
}

static int push_iv(struct reach *r, uint64_t lo, uint64_t hi)
{
	while (r->nv > 0 && r->v[r->nv - 1].hi + 1 >= lo) {
		if (r->v[r->nv - 1].lo < lo)
			lo = r->v[r->nv - 1].lo;
		r->nv--;
	}
	if (r->nv == MAX_IVS) {
		/* widen: each pair becomes one interval (holds both) */
		size_t k = 0;
		for (size_t i = 0; i + 1 < r->nv; i += 2)
			r->v[k++] = (struct iv) { r->v[i].lo, r->v[i + 1].hi };
		if (r->nv % 2)
			r->v[k++] = r->v[r->nv - 1];
		r->nv = k;
	}
	if (r->nv == r->capv) {
		size_t nc = r->capv ? r->capv * 2 : 64;
		struct iv *nv = realloc(r->v, nc * sizeof *nv);
		if (nv == NULL)
			return -1;
		r->v = nv;
		r->capv = nc;
	}
	r->v[r->nv].lo = lo;
	r->v[r->nv].hi = hi;
	r->nv++;
	return 0;
}

/* The region closed by the OU] at position pos (cur: the block being
 * filled, from cstart, its minimum cmin) had the smallest clock rmin. */
static int close_region(struct reach *r, uint64_t pos, uint64_t cstart, int64_t cmin,
		int64_t rmin)
{
	uint64_t from = 0;
	if (pos > cstart && cmin < rmin) {
		from = cstart;
	} else {
		size_t lo = 0, hi = r->nb; /* the last block whose min < rmin */
		while (lo < hi) {
			size_t m = lo + (hi - lo) / 2;
			if (r->b[m].min < rmin)
				lo = m + 1;
			else
				hi = m;
		}
		if (lo > 0)
			from = r->b[lo - 1].start;
	}
	from = iv_start(r, from);
	/* the window must hold the events from `from` to the OU], that one
	 * excluded; one more for good measure */
	if (pos - from + 1 > r->need)
		r->need = pos - from + 1;
	return pos > from ? push_iv(r, from, pos - 1) : 0;
}

int weft_sort_scan_reach(int fd, uint64_t fsize, uint64_t *need)
{
	struct in in;
	struct sort_fail f = { 0 };
	struct reach r = { 0 };
	*need = 0;
	if (weft_sort_in_init(&in, fsize) < 0)
		return -1;
	in.fd = fd;
	char st = 'S';
	int64_t rmin = 0;
	uint64_t pos = 0, cstart = 0;
	int64_t cmin = INT64_MAX;
	int rc = 0;
	struct ent e;
	/* bytes that are no event, or a read failure: the scan stops there
	 * (the sorter says what is wrong when it gets there) */
	while (in_next(&in, &e, &f) > 0) {
		if (e.mark != 0 || st != 'S') {
			switch (st) {
			case 'S':
				if (e.mark == MARK_OPEN)
					st = 'U';
				break;
			case 'U':
				if (e.mark == MARK_CLOSE) {
					st = 'S';
				} else {
					st = 'X';
					rmin = e.clock;
				}
				break;
			default:
				if (e.mark == MARK_CLOSE) {
					if (close_region(&r, pos, cstart, cmin, rmin) < 0)
						rc = -1;
					st = 'S';
				} else if (e.clock < rmin) {
					rmin = e.clock;
				}
				break;
			}
			if (rc < 0)
				break;
		}
		if (e.clock < cmin)
			cmin = e.clock;
		if (++pos - cstart == BLK) {
			if (push_blk(&r, cstart, cmin) < 0) {
				rc = -1;
				break;
			}
			cstart = pos;
			cmin = INT64_MAX;
		}
	}
	free(in.buf);
	free(r.b);
	free(r.v);
	*need = r.need;
	return rc;
}

int weft_sort_budget_env(struct weft_trace *t)
{
	if (t->sort.budget != 0)
		return 0;
	t->sort.budget = WEFT_SORT_BUDGET;
	const char *env = getenv("WEFT_SORT_BUDGET");
	if (env == NULL)
		return 0;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(env, &end, 10);
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (shift)
		end++;
	if (end == env || *end != '\0' || errno != 0 || env[0] == '-'
			|| v > (SIZE_MAX >> shift) || (v << shift) < (1u << 20))
		return weft_fail(&t->diag, "WEFT_SORT_BUDGET is '%s'; it must be a size in bytes "
				"of at least 1M (e.g. 64M, 1G)", env);
	t->sort.budget = (size_t) (v << shift);
	return 0;
}

struct want {
	struct weft_wstream *s;
	size_t look_back;
	uint64_t bytes; /* its window at most, in memory */
};

static int cmp_want(const void *a, const void *b)
{
	const struct want *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	return (x->s->index > y->s->index) - (x->s->index < y->s->index);
}

static int open_tmp(void)
{
	const char *dir = getenv("TMPDIR");
	if (dir == NULL || dir[0] == '\0')
		dir = "/tmp";
	int fd;
#ifdef O_TMPFILE
	fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
#endif
	char path[4096];
	if ((size_t) snprintf(path, sizeof path, "%s/weft-sort-XXXXXX", dir) >= sizeof path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = mkstemp(path);
	if (fd >= 0)
		unlink(path); /* never seen by name: gone with its last user */
	return fd;
}

static int sort_plan_once(struct weft_trace *t);

int weft_sort_plan(struct weft_trace *t)
{
	/* once: a failure stays one (its message stays in t's error), so a
	 * later caller does not find a stream without its sorter and blame
	 * the memory */
	if (t->sort.planned)
		return t->sort.plan_rc;
	t->sort.planned = 1;
	t->sort.plan_rc = sort_plan_once(t);
	return t->sort.plan_rc;
}

static int sort_plan_once(struct weft_trace *t)
{
	struct want *w = weft_calloc(t->nstreams ? t->nstreams : 1, sizeof *w);
	if (w == NULL)
		return weft_oom(&t->diag, "planning the sort of %s", t->path);
	int rc = 0;
	for (size_t i = 0; i < t->nstreams; i++) {
		struct weft_wstream *s = t->streams[i];
		s->index = i;
		uint64_t nev = s->fsize > WEFT_OBS_HEADER_SIZE
			? (s->fsize - WEFT_OBS_HEADER_SIZE) / WEFT_EV_HEADER_SIZE : 0;
		size_t lb = t->sort.look_back;
		if (t->sort.auto_lb && nev > lb) {
			int fd = s->fd >= 0 ? s->fd : open(s->obs_path, O_RDONLY | O_CLOEXEC);
			uint64_t need = 0;
			if (fd >= 0 && weft_sort_scan_reach(fd, s->fsize, &need) < 0) {
				rc = weft_oom(&t->diag, "%s: scanning for unordered regions",
						s->obs_path);
			}
			if (fd >= 0 && fd != s->fd)
				close(fd);
			if (rc < 0)
				break;
			/* what its regions need, however much less than the
			 * default (a small window stays in the caches) */
			lb = need > SIZE_MAX / 64 ? SIZE_MAX / 64 : need > 0 ? (size_t) need : 1;
		}
		/* never more than the stream's events: the window holds them
		 * all then, and no region can reach past its first event */
		if (nev < lb)
			lb = nev > 0 ? (size_t) nev : 1;
		w[i].s = s;
		w[i].look_back = lb;
		uint64_t held = lb;
		w[i].bytes = (held + BATCH) * sizeof(struct ent) * 5 / 2;
	}
	if (rc < 0) {
		free(w);
		return -1;
	}
	qsort(w, t->nstreams, sizeof *w, cmp_want);
	size_t nmem = 0;
	uint64_t used = 0;
	while (nmem < t->nstreams && used + w[nmem].bytes <= t->sort.budget)
		used += w[nmem++].bytes;
	/* The others: each a part of one temporary file. */
	int tfd = -1;
	uint64_t total = 0;
	for (size_t i = nmem; i < t->nstreams; i++) {
		size_t len = weft_sorter_map_size(w[i].look_back);
		if (len == 0 || total + len < total) {
			rc = weft_fail(&t->diag, "%s: a look-back of %zu events is more than this "
					"machine can map", w[i].s->obs_path, w[i].look_back);
			free(w);
			return rc;
		}
		total += len;
	}
	if (nmem < t->nstreams) {
		/* its blocks reserved now: a full disk is this error, not a
		 * SIGBUS at a page of the mapping later */
		tfd = open_tmp();
		int e = tfd < 0 ? errno : posix_fallocate(tfd, 0, (off_t) total);
		if (e != 0) {
			if (tfd >= 0)
				close(tfd);
			free(w);
			return weft_fail(&t->diag, "cannot make a temporary file of %" PRIu64 " bytes "
					"in %s for sorting on read: %s", total,
					getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp",
					strerror(e));
		}
	}
	size_t nmap = t->nstreams - nmem;
	uint64_t left = t->sort.budget > used ? t->sort.budget - used : 0;
	size_t resident = nmap ? (size_t) (left / nmap) : 0;
	if (resident < MIN_RESIDENT)
		resident = MIN_RESIDENT;
	uint64_t at = 0;
	for (size_t i = 0; i < t->nstreams && rc == 0; i++) {
		struct weft_wstream *s = w[i].s;
		if (i < nmem) {
			s->sorter = weft_sorter_new(s->fsize, w[i].look_back);
		} else {
			size_t len = weft_sorter_map_size(w[i].look_back);
			void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, tfd,
					(off_t) at);
			at += len;
			if (m == MAP_FAILED) {
				rc = weft_fail(&t->diag, "%s: cannot map %zu bytes of the temporary "
						"file for sorting on read: %s", s->obs_path, len,
						strerror(errno));
				break;
			}
			s->sorter = weft_sorter_new_mapped(s->fsize, w[i].look_back, m, len,
					resident);
			if (s->sorter == NULL)
				munmap(m, len);
		}
		if (s->sorter == NULL)
			rc = weft_fail(&t->diag, "%s: out of memory for sorting on read",
					s->obs_path);
	}
	if (tfd >= 0)
		close(tfd); /* the mappings hold the file */
	free(w);
	return rc;
}
