/* SPDX-License-Identifier: MIT */
/* view_internal.h - the collected timelines, shared by collect.c (which
 * fills them), page.c (which writes the page) and serve.c. */
#ifndef WEFT_VIEW_INTERNAL_H
#define WEFT_VIEW_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "view.h"

/* The finest pyramid level has at most this many buckets. */
#define VIEW_PYR_BUCKETS 1024
/* Values kept per bucket (the largest times). */
#define VIEW_PYR_VALUES 8
/* A tile: this many buckets of its level. */
#define VIEW_TILE_BUCKETS 1024

struct view_chan {
	char *name, *model;
	const char *kind;    /* "state", "single", "stack", "counter", "mark" */
	unsigned scope;      /* EMU_SCOPE_THREAD | EMU_SCOPE_CPU bits */
	size_t nlabels;
	int64_t *lvalue;     /* sorted */
	char **llabel;
	int counter;
};

struct view_row {
	int view;            /* 0: thread, 1: CPU */
	size_t index;        /* within its view (the row of `weft sql`'s interval) */
	char *label;
	char *loom;          /* its loom's name */
	int pid;             /* a thread's process, else 0 */
};

struct view_iv {
	int64_t start, end, value;
};

/* A track's summary built as its intervals arrive, once its intervals are
 * no longer kept (collect.c). */
struct view_spyr;

/* --serve (view_data_spill): the intervals of a track beyond the budget
 * go to a temporary file in chunks of VIEW_SPILL_CHUNK (the last one
 * buffered), each known by its last end, its first interval's index and
 * its place in the file, so that the server finds an interval with a
 * binary search over the chunks and two small reads (serve.c). A chunk
 * is made of sub-blocks of VIEW_SPILL_SUB intervals, each encoded on its
 * own (its first interval absolute, the others as deltas from the one
 * before, in varints: about 3 bytes an interval rather than 24), after a
 * directory (struct view_spill_dir) saying where each sub-block ends and
 * the end of its last interval; a lookup in a chunk not cached reads the
 * directory (320 bytes) and one sub-block, not the chunk. */
#define VIEW_SPILL_CHUNK 1024
#define VIEW_SPILL_SUB 32
#define VIEW_SPILL_NSUB (VIEW_SPILL_CHUNK / VIEW_SPILL_SUB)
/* An interval encoded takes at most three varints of 10 bytes. */
#define VIEW_SPILL_IV_MAX 30
/* The directory on disk: the fences (int64s), then the ends (uint16s). */
#define VIEW_SPILL_DIR_BYTES (VIEW_SPILL_NSUB * (sizeof(int64_t) + sizeof(uint16_t)))
/* The most bytes a chunk takes on disk (less than 2^16: its length fits
 * the low 16 bits of its place, struct view_spill_chunk). */
#define VIEW_SPILL_CHUNK_MAX (VIEW_SPILL_DIR_BYTES + VIEW_SPILL_CHUNK * VIEW_SPILL_IV_MAX)

struct view_spill_dir {
	int64_t fence[VIEW_SPILL_NSUB]; /* the end of each sub-block's last interval
	                                 * (an empty one: the chunk's last end) */
	uint16_t end[VIEW_SPILL_NSUB];  /* each sub-block's end: bytes after the directory */
};

struct view_spill_chunk {
	int64_t last_end;
	uint64_t base;
	uint64_t pos;   /* its offset in the file << 16 | its bytes (directory included) */
};

/* A spilled track's interval at times i * 2^k (i < VIEW_SPILL_SAMPLES,
 * k the least for the run so far): the first interval ending after it
 * (index: its place among the track's), so that the coarse tiles of the
 * server, whose buckets start at such times, read nothing. */
#define VIEW_SPILL_SAMPLES 8192

struct view_spill_sample {
	int64_t start, end, value;
	uint64_t index;
};

struct view_track {
	struct view_iv *iv;     /* the intervals kept (none once sp is set) */
	size_t n, cap;
	uint64_t count;         /* the intervals, kept or not */
	uint64_t jlen;          /* the JSON of the intervals kept (page.c): bytes */
	int64_t ostart, ovalue; /* the open interval (ovalue 0: none) */
	int64_t lend, lvalue;   /* the last interval's end and value, once sp is set */
	struct view_spyr *sp;   /* non-NULL: the intervals were beyond the budget */
	/* the pyramid: levels kmin..kmin+nlev-1; level j's buckets are the
	 * int64s pyr[off[j] .. off[j+1]): per bucket n, then n (value, time)
	 * pairs, the largest time first (a counter: n = 3, min, max, mean) */
	int kmin, nlev;
	int64_t *pyr;
	size_t *off;
	/* spilled (sp set, view_data_spill): the chunks written, the next one */
	struct view_spill_chunk *chunks;
	size_t nchunks, ccap;
	uint64_t nspilled;      /* intervals in the chunks written */
	struct view_iv *sbuf;   /* VIEW_SPILL_CHUNK; sn used */
	size_t sn;
	struct view_spill_sample *smp; /* VIEW_SPILL_SAMPLES; nsmp filled */
	size_t nsmp, slast;     /* slast: the first sample of the last interval */
	int sk;                 /* the samples are 2^sk ns apart */
};

struct view_data {
	size_t nrows, nchans;
	struct view_row *rows;
	struct view_chan *chans;
	struct view_track *tracks; /* row * nchans + chan */
	size_t *chan_of_id;        /* catalogue id -> chan (SIZE_MAX: none) */
	size_t ncat;
	int64_t duration;
	uint64_t nintervals;
	uint64_t keep;             /* bytes of JSON of the intervals kept at most */
	uint64_t kept;             /* bytes of JSON of the intervals kept */
	size_t ndropped;           /* tracks whose intervals were beyond keep */
	int complete;
	int failed;
	int spill_fd;              /* view_data_spill's file, else -1 */
	uint64_t spill_off;        /* its size */
	int spill_errno;           /* a write to it failed (failed set too) */
	/* the cache (cache.c): the chunks start after its header and key
	 * (spill_base); spill_tmp: the named temporary to remove unless
	 * made the cache (NULL: none, or O_TMPFILE's); spill_ro: the file
	 * is a cache read back, never truncated */
	uint64_t spill_base;
	char *spill_tmp;
	int spill_ro;
};

/* A spilled track read back from the cache: its flag (t->sp set), with no
 * buckets (the pyramid is made). NULL when out of memory. */
struct view_spyr *view_spyr_stub(void);

/* A spilled track's chunk k decoded into out (VIEW_SPILL_CHUNK), *n its
 * intervals: 0, or -1 (a read error, or bytes that do not decode). */
int view_spill_read(const struct view_data *vd, const struct view_track *t, size_t k,
		struct view_iv *out, size_t *n);
/* The intervals in chunk k of a spilled track. */
size_t view_spill_chunk_n(const struct view_track *t, size_t k);
/* The directory of chunk k of a spilled track: 0, or -1 (a read error). */
int view_spill_dir_read(const struct view_data *vd, const struct view_track *t, size_t k,
		struct view_spill_dir *d);
/* Sub-block j of chunk k of a spilled track (d: its directory) decoded
 * into out (VIEW_SPILL_SUB), *n its intervals (at least 1): 0, or -1 (a
 * read error, an empty sub-block, bytes that do not decode). */
int view_spill_sub_read(const struct view_data *vd, const struct view_track *t, size_t k,
		const struct view_spill_dir *d, size_t j, struct view_iv *out, size_t *n);
/* The n intervals iv (1 to VIEW_SPILL_SUB, in order) encoded at p as a
 * sub-block of the temporary file (at most n * VIEW_SPILL_IV_MAX bytes):
 * their bytes. The cache (cache.c) keeps the kept intervals so too. */
size_t view_sub_encode(uint8_t *p, const struct view_iv *iv, size_t n);
/* n intervals decoded from [p, e) into out: 0, or -1 when the bytes are not
 * n intervals exactly, or not in order from time 0 on. */
int view_sub_decode(const uint8_t *p, const uint8_t *e, struct view_iv *out, size_t n);
/* The temporary file's bytes and the intervals it holds. */
void view_spill_size(const struct view_data *vd, uint64_t *bytes, uint64_t *intervals);

/* The cache (cache.c; view.h, docs/view.md "The cache"): its header's
 * bytes. */
#define VIEW_CACHE_HEAD 48
/* view_cache_load on the open file fd (its ownership taken: closed unless
 * the collection, *out, keeps it): the same checks and results (never 1
 * for a missing file). fuzz/fuzz_view_cache.c loads from memory so. */
int view_cache_load_fd(int fd, const char *key, struct view_data **out, char *err,
		size_t errlen);
/* The checksum of a cache's n bytes of metadata p (the header's word). */
uint64_t view_cache_sum(const uint8_t *p, size_t n);
/* A complete header (VIEW_CACHE_HEAD bytes at head): the magic, the
 * version, the key's length, the metadata's offset, length and checksum,
 * the file's size (moff + mlen). */
void view_cache_head(uint8_t *head, uint32_t klen, uint64_t moff, uint64_t mlen, uint64_t sum);

/* The server's /tile and /at lookups without its socket (serve.c; used
 * by view_serve and by fuzz/fuzz_view_cache.c): view_lookup_reset points
 * them at vd with their caches empty; a reply is the JSON body the server
 * sends (malloc'd, *len its bytes), NULL for a query the server answers
 * 400 or a read of the file that failed (500). view_lookup_evict empties
 * the caches and drops the file's pages (WEFT_VIEW_EVICT). */
struct view_lookup;
struct view_lookup *view_lookup_new(int readahead);
void view_lookup_reset(struct view_lookup *l, const struct view_data *vd);
void view_lookup_evict(struct view_lookup *l);
char *view_lookup_tile(struct view_lookup *l, const char *q, size_t *len);
char *view_lookup_at(struct view_lookup *l, const char *q, size_t *len);
void view_lookup_free(struct view_lookup *l);

/* The decimal digits of v (and its sign). */
static inline size_t view_digits(int64_t v)
{
	uint64_t u = v < 0 ? (uint64_t) 0 - (uint64_t) v : (uint64_t) v;
	size_t n = v < 0 ? 2 : 1;
	while (u >= 10) {
		u /= 10;
		n++;
	}
	return n;
}

const char *view_label_of(const struct view_chan *c, int64_t v);
/* The first of the n intervals iv (in order) ending after time (n when
 * none). */
size_t view_iv_find(const struct view_iv *iv, size_t n, int64_t time);
/* The track's first interval ending after t (n when none). */
size_t view_track_find(const struct view_track *t, int64_t time);

#endif
