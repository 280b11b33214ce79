/* SPDX-License-Identifier: MIT */
/*
 * merge.c - the binary min-heap over the stream cursors, with exactly the
 * reference's push and pop (facts note §4.3), so that events with equal
 * clocks come out in the same order: slot 0 is the root, the children of
 * slot i are 2i+1 and 2i+2; a push sifts up while strictly smaller than the
 * parent; a pop moves the last slot to the root and sifts down, taking the
 * left child if strictly smaller than the node, then the right child if
 * strictly smaller than the best so far.
 */
#include "trace_internal.h"

void weft_heap_push(struct weft_trace *t, struct weft_wstream *s)
{
	struct weft_heap_ent *h = t->heap;
	size_t i = t->nheap++;
	int64_t key = s->key;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!(key < h[parent].key))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i].key = key;
	h[i].s = s;
	t->fast_known = 0;
}

/* Moves x into the root of a heap of n slots and sifts it down. */
static void sift_down_root(struct weft_heap_ent *h, size_t n, struct weft_heap_ent x)
{
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1;
		size_t best = i;
		int64_t bkey = x.key;
		if (l < n && h[l].key < bkey) {
			best = l;
			bkey = h[l].key;
		}
		if (r < n && h[r].key < bkey)
			best = r;
		if (best == i)
			break;
		h[i] = h[best];
		i = best;
	}
	h[i] = x;
}

struct weft_wstream *weft_heap_pop(struct weft_trace *t)
{
	struct weft_heap_ent *h = t->heap;
	struct weft_wstream *top = h[0].s;
	size_t n = --t->nheap;
	t->fast_known = 0;
	if (n > 0)
		sift_down_root(h, n, h[n]);
	return top;
}

struct weft_wstream *weft_heap_pushpop(struct weft_trace *t, struct weft_wstream *s)
{
	struct weft_heap_ent *h = t->heap;
	size_t n = t->nheap;
	/* If s would stay in the new last slot (not smaller than its parent),
	 * the push moves nothing and the pop brings s from that slot to the
	 * root: the same as putting s at the root and sifting it down. */
	if (n == 0 || (n > 0 && !(s->key < h[(n - 1) / 2].key))) {
		if (n == 0)
			return s;
		struct weft_wstream *top = h[0].s;
		struct weft_heap_ent x = { s->key, s };
		t->fast_known = 0;
		sift_down_root(h, n, x);
		return top;
	}
	weft_heap_push(t, s);
	return weft_heap_pop(t);
}

/*
 * The fast path yields the next event of the stream just taken, without
 * touching the heap, when that event is strictly earlier than the root. The
 * reference would push it (it sifts up to the root) and pop it again; that
 * leaves the heap exactly as it was unless keys tie along the path from the
 * new slot (nheap) to the root. With p1 = parent(nheap), p2.. its ancestors:
 * the heap is unchanged iff key(p_j) < key(p1) for every ancestor p_j of p1,
 * and for each right child on that path its left sibling's key is strictly
 * greater than their parent's. This depends only on the heap, which the fast
 * path does not change, so it is computed once per heap change.
 */
int weft_heap_fast_ok(struct weft_trace *t)
{
	if (t->fast_known)
		return t->fast_ok;
	struct weft_heap_ent *h = t->heap;
	size_t n = t->nheap;
	int ok = 1;
	if (n >= 3) {
		size_t p1 = (n - 1) / 2;
		int64_t x = h[p1].key;
		size_t child = p1;
		while (child > 0 && ok) {
			size_t pj = (child - 1) / 2;
			if (!(h[pj].key < x))
				ok = 0;
			else if (child % 2 == 0 && !(h[child - 1].key > h[pj].key))
				ok = 0;
			child = pj;
		}
	}
	t->fast_ok = ok;
	t->fast_known = 1;
	return ok;
}
