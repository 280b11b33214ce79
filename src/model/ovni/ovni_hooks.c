/* SPDX-License-Identifier: MIT */
/*
 * ovni_hooks.c - the C hooks of the ovni model (ovni.yaml says the rest):
 * three that only warn or inform (bursts, large flushes, OCn) and the --lint
 * pairing of unordered regions. They reach the engine through the ops of
 * model_emu.h only.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model_hooks.h"

/* ---- per-thread state of the hooks ---- */

#define OVNI_BURSTS 100
#define OVNI_LARGE_FLUSH_NS INT64_C(10000000)

struct ovni_thread {
	int64_t bursts[OVNI_BURSTS];
	size_t nbursts;
	int64_t flush_start;
	int ou_open;
	int ocn_warned;
	int burst_warned;
};

/* The k-th smallest of v[0..n-1] (v is reordered): Hoare's selection. */
static int64_t select_kth(int64_t *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;
	while (lo < hi) {
		int64_t pivot = v[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				int64_t tmp = v[i];
				v[i] = v[j];
				v[j] = tmp;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return v[k];
	}
	return v[k];
}

/* OB.: after each 100 bursts, the median, mean and max of the 99 gaps. */
static int hook_burst(struct emu_hook_ctx *ctx)
{
	struct ovni_thread *o = ctx->tstate;
	o->bursts[o->nbursts++] = ctx->ev->rclock;
	if (o->nbursts < OVNI_BURSTS)
		return 0;
	int64_t gaps[OVNI_BURSTS - 1];
	int64_t sum = 0, max = 0;
	for (size_t i = 0; i + 1 < OVNI_BURSTS; i++) {
		gaps[i] = o->bursts[i + 1] - o->bursts[i];
		sum += gaps[i];
		if (gaps[i] > max)
			max = gaps[i];
	}
	int64_t median = select_kth(gaps, OVNI_BURSTS - 1, 49); /* sorted[49] */
	emu_hook_info(ctx, "burst stats: median/avg/max = %" PRId64 "/%.0f/%" PRId64 " ns",
			median, (double) sum / (OVNI_BURSTS - 1), max);
	if (median > 100 && !o->burst_warned)
		emu_hook_warn(ctx, "large median burst time of %" PRId64 " ns, "
				"check the clock source", median);
	if (median > 100)
		o->burst_warned = 1;
	o->nbursts = 0;
	return 0;
}

static int hook_flush_begin(struct emu_hook_ctx *ctx)
{
	struct ovni_thread *o = ctx->tstate;
	o->flush_start = ctx->ev->rclock;
	return 0;
}

static int hook_flush_end(struct emu_hook_ctx *ctx)
{
	struct ovni_thread *o = ctx->tstate;
	int64_t d = ctx->ev->rclock - o->flush_start;
	if (d > OVNI_LARGE_FLUSH_NS && emu_hook_thread_state(ctx) == EMU_ST_RUNNING)
		emu_hook_warn(ctx, "large flush of %.3f ms", (double) d / 1e6);
	return 0;
}

static int hook_ocn(struct emu_hook_ctx *ctx)
{
	struct ovni_thread *o = ctx->tstate;
	if (!o->ocn_warned)
		emu_hook_warn(ctx, "OCn (number of CPUs) is obsolete and ignored");
	o->ocn_warned = 1;
	return 0;
}

/* --lint: unordered regions alternate OU[ OU] (a region may stay open at the end). */
static int hook_ou_begin(struct emu_hook_ctx *ctx)
{
	struct ovni_thread *o = ctx->tstate;
	if (emu_hook_lint(ctx) && o->ou_open)
		return emu_hook_fail(ctx, "lint: unordered region opened inside another one");
	o->ou_open = 1;
	return 0;
}

static int hook_ou_end(struct emu_hook_ctx *ctx)
{
	struct ovni_thread *o = ctx->tstate;
	if (emu_hook_lint(ctx) && !o->ou_open)
		return emu_hook_fail(ctx, "lint: unordered region closed but none is open");
	o->ou_open = 0;
	return 0;
}

/* ---- the table ---- */

const struct emu_hook_def ovni_hooks[] = {
	{ "ovni.burst", hook_burst },
	{ "ovni.flush-begin", hook_flush_begin },
	{ "ovni.flush-end", hook_flush_end },
	{ "ovni.ocn", hook_ocn },
	{ "ovni.ou-begin", hook_ou_begin },
	{ "ovni.ou-end", hook_ou_end },
	{ NULL, NULL },
};
const size_t ovni_hooks_state_size = sizeof(struct ovni_thread);
