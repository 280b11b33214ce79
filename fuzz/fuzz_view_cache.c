/* SPDX-License-Identifier: MIT */
/*
 * fuzz_view_cache - `weft view --serve`'s cache reader (src/view/cache.c,
 * view_cache_load_fd) on a file in memory (memfd, one per process, reused).
 * The input is, unless it starts with the cache's magic, the cache's body:
 * a 4-byte little-endian length C, then C bytes of chunks and the
 * metadata; the target writes a valid header before it (the magic, the
 * version, the key the load is called with, the metadata's offset, length
 * and checksum, the size), so that random bytes reach the structural
 * checks rather than stopping at the checksum. An input that starts with
 * the magic is the whole file (the header's checks; the key: the file's
 * own). A load that fails must say where ("byte N: ..."); one that
 * succeeds is served as the server would: the page written (to
 * /dev/null), then tiles at four levels of the first channels' first rows
 * and /at at five times, through serve.c's own tile() and at() (serve.c
 * is compiled into this file for its static functions; the fuzz build's
 * view library leaves it out), then everything freed (leaks count under
 * ASan's detect_leaks=1). fuzz/run.sh seeds it with the bodies of caches
 * built by the fuzz tree's weft from the conformance corpus.
 */
#include <sys/mman.h>

#include "serve.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_KEY "weft fuzz_view_cache\n"
#define FZ_ROWS 4  /* rows and channels queried */
#define FZ_CHANS 3

static int fz_fd = -1;
static FILE *fz_null;
static struct srv fz_S;

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
	fz_S.slots = calloc(CACHE_SLOTS, sizeof(struct chunk_slot));
	fz_S.ra = malloc(RA_MAX * sizeof *fz_S.ra);
	fz_S.adv = malloc(RA_MAX * sizeof *fz_S.adv);
	if (fz_fd < 0 || fz_null == NULL || fz_S.slots == NULL || fz_S.ra == NULL
			|| fz_S.adv == NULL)
		abort();
}

/* A request as handle() makes it: a NULL reply with S->failed is a 500
 * (the flag cleared), else a 400; a reply is JSON. */
static void fz_query(int is_tile, const char *q)
{
	size_t len = 0;
	char *body = is_tile ? tile(&fz_S, q, &len) : at(&fz_S, q, &len);
	fz_S.failed = 0;
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
	for (size_t i = 0; i < CACHE_SLOTS; i++) {
		fz_S.slots[i].t = NULL;
		fz_S.slots[i].used = 0;
	}
	fz_S.vd = vd;
	fz_S.clock = 0;
	fz_S.failed = 0;
	fz_S.ft = fz_S.st = NULL;
	fz_S.nra = fz_S.nadv = 0;
	fz_S.reads = fz_S.unasked = 0;
	if (vd->nrows == 0 || vd->nchans == 0)
		return;
	int64_t dur = vd->duration > 0 ? vd->duration : 1;
	int top = 0;
	while (top < 50 && ((int64_t) VIEW_TILE_BUCKETS << top) < dur)
		top++;
	size_t r1 = vd->nrows < FZ_ROWS ? vd->nrows - 1 : FZ_ROWS - 1;
	char q[160];
	for (size_t c = 0; c < vd->nchans && c < FZ_CHANS; c++) {
		const int lv[4] = { top, top > 3 ? top - 3 : 0, 4, 0 };
		for (int k = 0; k < 4; k++) {
			snprintf(q, sizeof q, "c=%zu&r0=0&r1=%zu&l=%d&i=%d", c, r1, lv[k], k == 1);
			fz_query(1, q);
		}
		for (size_t r = 0; r <= r1; r++) {
			const int64_t ts[5] = { 0, dur / 5, dur / 3, dur / 2, dur - 1 };
			for (int k = 0; k < 5; k++) {
				snprintf(q, sizeof q, "c=%zu&r=%zu&t=%" PRId64, c, r, ts[k]);
				fz_query(0, q);
			}
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fz_init();
	if (ftruncate(fz_fd, 0) != 0)
		abort();
	char key[256] = FZ_KEY;
	if (size >= 16 && memcmp(data, "weftvwc\n", 8) == 0) {
		/* the whole file; its own key when it has one that fits */
		uint32_t klen;
		memcpy(&klen, data + 12, 4);
		if (klen < sizeof key && size >= VIEW_CACHE_HEAD + (size_t) klen) {
			memcpy(key, data + VIEW_CACHE_HEAD, klen);
			key[klen] = '\0';
		}
		fz_pwrite(data, size, 0);
	} else {
		uint32_t c = 0;
		memcpy(&c, data, size < 4 ? size : 4);
		const uint8_t *body = size < 4 ? data + size : data + 4;
		size_t blen = size < 4 ? 0 : size - 4;
		size_t clen = c < blen ? c : blen, klen = strlen(FZ_KEY);
		uint64_t moff = VIEW_CACHE_HEAD + klen + clen;
		uint8_t head[VIEW_CACHE_HEAD];
		view_cache_head(head, (uint32_t) klen, moff, blen - clen,
				view_cache_sum(body + clen, blen - clen));
		fz_pwrite(head, sizeof head, 0);
		fz_pwrite(FZ_KEY, klen, VIEW_CACHE_HEAD);
		fz_pwrite(body, blen, VIEW_CACHE_HEAD + klen);
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
