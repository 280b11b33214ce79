/* SPDX-License-Identifier: MIT */
/*
 * fuzz_view_cache - `weft view --serve`'s cache reader (src/view/cache.c,
 * view_cache_load_fd) on a file in memory (memfd, one per process, reused).
 * The input is, unless it starts with the cache's magic, the cache's body:
 * two 4-byte little-endian lengths K and C, then K bytes of key (the key
 * the load is called with: the chunks' offsets in the file count it), C
 * bytes of chunks and the metadata; the target writes a valid header
 * before the key (the magic, the version, the key's length, the
 * metadata's offset, length and checksum, the size), so that random bytes
 * reach the structural checks rather than stopping at the checksum. An
 * input that starts with the magic is the whole file (the header's
 * checks; the key: the file's own). A load that fails must say where
 * ("byte N: ..."); one that succeeds is served as the server would: the
 * page written (to /dev/null), then /at at five times (each with the
 * server's caches emptied first, as WEFT_VIEW_EVICT does) and tiles at
 * four levels, of the first channels' first rows and of the first tracks
 * read from the chunks, through the server's own lookups (view_lookup_*:
 * serve.c's tile() and at() without the socket), then everything freed
 * (leaks count under ASan's detect_leaks=1). fuzz/run.sh seeds it with caches built by the fuzz
 * tree's weft from the conformance corpus (fuzz/view_cache_seed.py).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "view_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_KEY_MAX 4096 /* a key's bytes: a real one is about 300 */
#define FZ_ROWS 4    /* the rows of a tile queried */
#define FZ_CHANS 3   /* the channels queried from row 0 */
#define FZ_SPILLED 4 /* the tracks from the chunks queried */

static int fz_fd = -1;
static FILE *fz_null;
static struct view_lookup *fz_L;

static void fz_pwrite(const void *p, size_t n, uint64_t off)
{
	if (n > 0 && pwrite(fz_fd, p, n, (off_t) off) != (ssize_t) n)
		abort();
}

static void fz_init(void)
{
	if (fz_fd >= 0)
		return;
	fz_fd = memfd_create("fuzz_view_cache", MFD_CLOEXEC);
	fz_null = fopen("/dev/null", "w");
	fz_L = view_lookup_new(1);
	if (fz_fd < 0 || fz_null == NULL || fz_L == NULL)
		abort();
}

/* A request as handle() makes it: a NULL reply with S->failed is a 500
 * (the flag cleared), else a 400; a reply is JSON. */
static void fz_query(int is_tile, const char *q)
{
	size_t len = 0;
	char *body = is_tile ? view_lookup_tile(fz_L, q, &len) : view_lookup_at(fz_L, q, &len);
	if (body != NULL && (len == 0 || body[0] != '{'))
		abort();
	free(body);
}

/* What the server does with a collection read back: the page, then a few
 * tiles and /at lookups (the server's state emptied first: its chunk cache
 * names tracks of the collection before). */
static void fz_serve(const struct view_data *vd)
{
	struct view_page_opts o = { "fuzz", (uint64_t) 1 << 20, NULL, 1, 0, NULL };
	char err[256];
	if (view_write_page(vd, &o, fz_null, err, sizeof err) != 0 && err[0] == '\0')
		abort();
	view_lookup_reset(fz_L, vd);
	if (vd->nrows == 0 || vd->nchans == 0)
		return;
	int64_t dur = vd->duration > 0 ? vd->duration : 1;
	int top = 0;
	while (top < 50 && ((int64_t) VIEW_TILE_BUCKETS << top) < dur)
		top++;
	/* the first rows of the first channels, and the first tracks read
	 * from the chunks (the largest: rarely among the first) */
	size_t nq = 0, qr[FZ_CHANS + FZ_SPILLED], qc[FZ_CHANS + FZ_SPILLED];
	for (size_t c = 0; c < vd->nchans && c < FZ_CHANS; c++, nq++) {
		qr[nq] = 0;
		qc[nq] = c;
	}
	for (size_t i = 0; i < vd->nrows * vd->nchans && nq < FZ_CHANS + FZ_SPILLED; i++)
		if (vd->tracks[i].sp != NULL) {
			qr[nq] = i / vd->nchans;
			qc[nq++] = i % vd->nchans;
		}
	char q[160];
	for (size_t k = 0; k < nq; k++) {
		size_t r0 = qr[k], c = qc[k];
		size_t r1 = vd->nrows - r0 < FZ_ROWS ? vd->nrows - 1 : r0 + FZ_ROWS - 1;
		/* /at as under WEFT_VIEW_EVICT (nothing cached: a chunk's
		 * directory and one sub-block read), then the tiles */
		const int64_t ts[5] = { 0, dur / 5, dur / 3, dur / 2, dur - 1 };
		for (int j = 0; j < 5; j++) {
			snprintf(q, sizeof q, "c=%zu&r=%zu&t=%" PRId64, c, r0, ts[j]);
			view_lookup_evict(fz_L);
			fz_query(0, q);
		}
		const int lv[4] = { top, top > 3 ? top - 3 : 0, 4, 0 };
		for (int j = 0; j < 4; j++) {
			snprintf(q, sizeof q, "c=%zu&r0=%zu&r1=%zu&l=%d&i=%d", c, r0, r1, lv[j],
					j == 1);
			fz_query(1, q);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_init();
	if (ftruncate(fz_fd, 0) != 0)
		abort();
	static char key[FZ_KEY_MAX + 1];
	if (size >= 16 && memcmp(data, "weftvwc\n", 8) == 0) {
		/* the whole file; its own key when it has one that fits */
		uint32_t klen;
		memcpy(&klen, data + 12, 4);
		if (klen > FZ_KEY_MAX || size < VIEW_CACHE_HEAD + (size_t) klen)
			klen = 0;
		memcpy(key, data + VIEW_CACHE_HEAD, klen);
		key[klen] = '\0';
		fz_pwrite(data, size, 0);
	} else {
		/* K and C (4 bytes each), the key, the chunks, the metadata;
		 * each length cut to what follows it */
		uint32_t kc[2] = { 0, 0 };
		size_t h = size < sizeof kc ? size : sizeof kc;
		memcpy(kc, data, h);
		const uint8_t *p = data + h;
		size_t left = size - h;
		size_t klen = kc[0] < left ? kc[0] : left;
		if (klen > FZ_KEY_MAX)
			klen = FZ_KEY_MAX;
		memcpy(key, p, klen);
		key[klen] = '\0';
		p += klen;
		left -= klen;
		size_t clen = kc[1] < left ? kc[1] : left;
		uint64_t moff = VIEW_CACHE_HEAD + klen + clen;
		uint8_t head[VIEW_CACHE_HEAD];
		view_cache_head(head, (uint32_t) klen, moff, left - clen,
				view_cache_sum(p + clen, left - clen));
		fz_pwrite(head, sizeof head, 0);
		fz_pwrite(data + h, klen + left, VIEW_CACHE_HEAD);
	}
	int fd = dup(fz_fd);
	if (fd < 0)
		abort();
	struct view_data *vd = NULL;
	char err[512];
	int r = view_cache_load_fd(fd, key, &vd, err, sizeof err);
	if (r < 0 && strncmp(err, "byte ", 5) != 0)
		abort(); /* every failure says where */
	if ((r == 0) != (vd != NULL))
		abort();
	if (r == 0) {
		if (!vd->complete || vd->spill_fd < 0)
			abort();
		fz_serve(vd);
		view_data_free(vd);
	}
	return 0;
}
