/* SPDX-License-Identifier: MIT */
/*
 * sort_internal.h - what the files of the sorter share (sort.c: the sorter
 * of a stream's unordered regions; sort_in.c: the event headers of a stream
 * file read in order; sort_stream.c: the whole-stream passes of
 * weft_stream_order and weft_sort_stream). The per-event steps are inline
 * here.
 */
#ifndef WEFT_SORT_INTERNAL_H
#define WEFT_SORT_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "trace_internal.h"

#define MARK_OPEN 1
#define MARK_CLOSE 2

/* The input is read in blocks of this size (only the headers are used). */
#define IN_BUF (64u << 10)
/* Events framed at a time once the window is full (given out in a batch). */
#define BATCH 64u
/* A mapped window's sort counts the entries it touched this many at a time. */
#define SPILL_STEP 16384u
/* weft_sort_stream writes in pieces of this size. */
#define OUT_BUF (256u << 10)

struct ent {
	int64_t clock;
	uint64_t off; /* in the file */
	uint32_t size;
	uint8_t mark;
	char mcv[3];
};

struct sort_fail {
	int failed;
	uint64_t off;
	char why[512];
};

/* The event headers of a stream file, in order. */
struct in {
	int fd;
	uint64_t fsize;
	uint8_t *buf;
	uint64_t boff; /* file offset of buf[0] */
	size_t blen;
	uint64_t off;  /* the next event */
};

/* The bytes given out are read again from the file through a cache of
 * one block: the events of a sorted range lie near each other. */
struct outcache {
	uint8_t *buf;
	uint64_t boff;
	size_t blen;
};


struct weft_sorter {
	struct in in;
	struct outcache oc;
	size_t look_back;
	/* The live entries, oldest first: ring[head], ... (n of them, modulo
	 * cap); the first nfinal are final (given out next), the others the
	 * window (at most look_back). */
	struct ent *ring;
	size_t cap, maxcap;
	size_t head, n, nfinal;
	int in_end;        /* no event left to frame */
	uint64_t tail_off; /* then: where the bytes that are no whole event begin */
	int tail_given;
	struct sort_fail fail;
	/* ovnisort's states: 'S' outside a region, 'U' right after its OU[,
	 * 'X' inside it after its first event */
	char st;
	int64_t reg_min;       /* the smallest clock of the region's events */
	uint64_t reg_open_off; /* its OU[ */
	uint64_t nregions, nempty;
	struct ent *tmp;
	size_t tmpcap;
	/* A window kept in a temporary file (sort_plan.c): ring and tmp lie
	 * in map (maplen bytes, a shared mapping); once touched bytes pass
	 * resident, its pages are given back (the file keeps them). */
	uint8_t *map;
	size_t maplen, resident, touched;
	/* the sorted stream given so far */
	uint64_t out_off;
	int out_in;
	uint64_t nout, nmoved;
	int have_last;
	int64_t last_clock;
	uint64_t nback, back_off;
	int64_t back_from, back_to;
	char back_mcv[4];
	int back_in;
};

/* sort_in.c */
void weft_sort_set_fail(struct sort_fail *f, uint64_t off, const char *fmt, ...) WEFT_PRINTF(3, 4);
/* Reads n bytes at off into dst. */
int weft_sort_read_at(int fd, uint8_t *dst, size_t n, uint64_t off, struct sort_fail *f);
int weft_sort_in_init(struct in *in, uint64_t fsize);
/* 1: the next event into *e; 0: no whole event is left (in->off is where
 * the rest begins: the end of the file, or bytes that cannot hold the
 * event they begin); -1: error (f). */
int weft_sort_in_next_slow(struct in *in, struct ent *e, struct sort_fail *f);
/* The message for bytes at off that cannot hold the event they begin. */
void weft_sort_tail_fail(struct in *in, uint64_t off, struct sort_fail *f);

/* sort.c: the next whole events into dst (NULL: only given out, not read);
 * with give_tail, once they are all given, the bytes that are no whole
 * event. */
long weft_sorter_emit(struct weft_sorter *z, int fd, uint8_t *dst, size_t cap, uint64_t *need,
		int give_tail);

static inline int mark_of(const uint8_t *p)
{
	if (p[WEFT_EV_OFF_MODEL] != 'O' || p[WEFT_EV_OFF_CATEGORY] != 'U')
		return 0;
	return p[WEFT_EV_OFF_VALUE] == '[' ? MARK_OPEN : p[WEFT_EV_OFF_VALUE] == ']' ? MARK_CLOSE : 0;
}

/* The event at p (at in->off, need bytes, whole) into *e; in moves past it. */
static inline void take(struct in *in, struct ent *e, const uint8_t *p, uint64_t need)
{
	e->clock = (int64_t) weft_load_u64(p + WEFT_EV_OFF_CLOCK);
	e->off = in->off;
	e->size = (uint32_t) need;
	e->mark = (uint8_t) mark_of(p);
	memcpy(e->mcv, p + WEFT_EV_OFF_MODEL, 3);
	in->off += need;
}

/* weft_sort_in_next_slow() when the buffer holds the event's header and jumbo size
 * field, the event is whole in the file and smaller than 4 GiB: most. */
static inline int in_next(struct in *in, struct ent *e, struct sort_fail *f)
{
	uint64_t rel = in->off - in->boff; /* in->off >= in->boff */
	if (__builtin_expect(rel + WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD <= in->blen, 1)) {
		const uint8_t *p = in->buf + rel;
		uint8_t flags = p[WEFT_EV_OFF_FLAGS];
		uint64_t need = weft_ev_is_jumbo(flags)
			? (uint64_t) WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD
				+ weft_load_u32(p + WEFT_EV_OFF_PAYLOAD)
			: WEFT_EV_HEADER_SIZE + weft_ev_payload_size(flags);
		if (__builtin_expect(need <= in->fsize - in->off && need <= UINT32_MAX, 1)) {
			take(in, e, p, need);
			return 1;
		}
	}
	return weft_sort_in_next_slow(in, e, f);
}


/* A mapped window: n more entries touched; past the resident share, its
 * pages go back to the file (sort.c). */
void weft_sorter_spill(struct weft_sorter *z);
static inline void touch(struct weft_sorter *z, size_t n)
{
	if (__builtin_expect(z->map != NULL, 0)) {
		z->touched += n * sizeof(struct ent);
		if (z->touched > z->resident)
			weft_sorter_spill(z);
	}
}

/* The i-th live entry (i < n). */
static inline struct ent *at(struct weft_sorter *z, size_t i)
{
	size_t k = z->head + i;
	return &z->ring[k >= z->cap ? k - z->cap : k];
}

/* Gives out the head entry: the sorted stream's next event. */
static inline void pop(struct weft_sorter *z)
{
	struct ent *e = at(z, 0);
	if (e->off != z->out_off)
		z->nmoved++;
	int inside = z->out_in && e->mark != MARK_CLOSE;
	if (e->mark == MARK_OPEN)
		z->out_in = 1;
	else if (e->mark == MARK_CLOSE)
		z->out_in = 0;
	if (z->have_last && e->clock < z->last_clock && z->nback++ == 0) {
		z->back_off = z->out_off;
		z->back_from = z->last_clock;
		z->back_to = e->clock;
		memcpy(z->back_mcv, e->mcv, 3);
		z->back_mcv[3] = '\0';
		z->back_in = inside;
	}
	z->have_last = 1;
	z->last_clock = e->clock;
	z->out_off += e->size;
	z->nout++;
	z->head = z->head + 1 == z->cap ? 0 : z->head + 1;
	z->n--;
	z->nfinal--;
	touch(z, 1);
}


#endif
