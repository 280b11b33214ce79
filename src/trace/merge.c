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
	int64_t *hk = t->hkey;
	struct weft_wstream **hs = t->hs;
	size_t i = t->nheap++;
	int64_t key = s->key;
	while (i > 0) {
		size_t parent = (i - 1) / 2;
		if (!(key < hk[parent]))
			break;
		hk[i] = hk[parent];
		hs[i] = hs[parent];
		i = parent;
	}
	hk[i] = key;
	hs[i] = s;
	t->fast_known = 0;
}

/* c ? a : b without a branch (a branch here mispredicts half the time). */
static inline size_t select_idx(int c, size_t a, size_t b)
{
#if defined(__x86_64__) && defined(__GNUC__)
	__asm__("test %1, %1\n\tcmovne %2, %0" : "+r"(b) : "r"(c), "r"(a) : "cc");
	return b;
#else
	return c ? a : b;
#endif
}

/*
 * Moves (xkey, xs) into the root of a heap of n slots and sifts it down, with
 * the reference's rule (the left child if strictly smaller than x, then the
 * right child if strictly smaller than the best so far). The arrays hold
 * sentinels (key INT64_MAX, never strictly smaller than anything) in the
 * slots from n up to 2n + 1, so a child needs no bounds check; and once x
 * has found its slot (no child smaller), another round picks the same slot
 * again, so a fixed number of rounds (the depth, floor(log2 n)) with
 * conditional moves does the same as the loop with its unpredictable exit.
 */
static inline void sift_down_root(int64_t *hk, struct weft_wstream **hs, size_t n,
		int64_t xkey, struct weft_wstream *xs)
{
	size_t i = 0;
	for (unsigned d = n > 1 ? 63u - (unsigned) __builtin_clzll((unsigned long long) n) : 0;
			d > 0; d--) {
		size_t l = 2 * i + 1, r = l + 1;
		int64_t kl = hk[l], kr = hk[r];
		int takel = kl < xkey;
		size_t best = select_idx(takel, l, i);
		int64_t bkey = takel ? kl : xkey;
		best = select_idx(kr < bkey, r, best);
		/* a no-op copy of the hole when best == i */
		hk[i] = hk[best];
		hs[i] = hs[best];
		i = best;
	}
	hk[i] = xkey;
	hs[i] = xs;
}

struct weft_wstream *weft_heap_pop(struct weft_trace *t)
{
	int64_t *hk = t->hkey;
	struct weft_wstream **hs = t->hs;
	struct weft_wstream *top = hs[0];
	size_t n = --t->nheap;
	t->fast_known = 0;
	int64_t xkey = hk[n];
	struct weft_wstream *xs = hs[n];
	hk[n] = INT64_MAX; /* the freed slot becomes a sentinel */
	hs[n] = NULL;
	if (n > 0)
		sift_down_root(hk, hs, n, xkey, xs);
	return top;
}

struct weft_wstream *weft_heap_pushpop(struct weft_trace *t, struct weft_wstream *s)
{
	int64_t *hk = t->hkey;
	size_t n = t->nheap;
	if (n == 0)
		return s;
	/* If s would stay in the new last slot (not smaller than its parent),
	 * the push moves nothing and the pop brings s from that slot to the
	 * root: the same as putting s at the root and sifting it down. */
	if (!(s->key < hk[(n - 1) / 2])) {
		struct weft_wstream *top = t->hs[0];
		t->fast_known = 0;
		sift_down_root(hk, t->hs, n, s->key, s);
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
	const int64_t *hk = t->hkey;
	size_t n = t->nheap;
	int ok = 1;
	if (n >= 3) {
		size_t p1 = (n - 1) / 2;
		int64_t x = hk[p1];
		size_t child = p1;
		while (child > 0 && ok) {
			size_t pj = (child - 1) / 2;
			if (!(hk[pj] < x))
				ok = 0;
			else if (child % 2 == 0 && !(hk[child - 1] > hk[pj]))
				ok = 0;
			child = pj;
		}
	}
	t->fast_ok = ok;
	t->fast_known = 1;
	return ok;
}
