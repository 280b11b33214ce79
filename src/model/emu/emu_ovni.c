/* SPDX-License-Identifier: MIT */
/*
 * emu_ovni.c - the description of the ovni model (model byte 'O', provides
 * 1.1.0): the thread life cycle, CPU affinity, buffer flushes, marks,
 * bursts and unordered regions. Everything is data except three hooks that
 * only warn or inform (bursts, large flushes, OCn) and the --lint pairing
 * of unordered regions.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

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

/* ---- channels ---- */

static const struct emu_value_label flush_values[] = {
	{ 1, "Flushing" },
};

static const struct emu_chan_desc ovni_chans[] = {
	{
		.name = "flush",
		.kind = EMU_CHAN_SINGLE,
		.dup = EMU_DUP_REFUSE,
		.track = EMU_TRACK_ANY,
		.prv_type = 7,
		.thread_policy = EMU_POL_EMITDUP,
		.cpu_policy = EMU_POL_SKIPDUP,
		.thread_label = "Flushing ovni buffer ",
		.cpu_label = "Flushing ovni buffer of the RUNNING thread",
		.nvalues = 1,
		.values = flush_values,
	},
	{
		.name = "mark",
		.family = EMU_FAMILY_MARK_TYPES,
		.dup = EMU_DUP_ALLOW,
		.track = EMU_TRACK_ACT,
		.prv_type = 100,
		.thread_policy = EMU_POL_SKIPDUPNULL,
		.cpu_policy = EMU_POL_SKIPDUPNULL,
	},
};

/* ---- events ---- */

#define I32(off) { EMU_VAL_I32, (off) }
#define I64(off) { EMU_VAL_I64, (off) }
#define K(v) { EMU_VAL_CONST, (v) }
#define NUL { EMU_VAL_NULL, 0 }
#define STATE(to_, from_) { .op = EMU_OP_THREAD_STATE, .to = (to_), .from = (from_) }
#define HOOK(fn) { .op = EMU_OP_HOOK, .hook = (fn) }
#define R EMU_STM(EMU_ST_RUNNING)
#define P EMU_STM(EMU_ST_PAUSED)
#define C EMU_STM(EMU_ST_COOLING)
#define W EMU_STM(EMU_ST_WARMING)

static const struct emu_event_desc ovni_events[] = {
	{ "OHx", "OHx (thread starts running)", EMU_SIZE_ATLEAST, 4, 16, 1,
		{ { .op = EMU_OP_THREAD_START, .val = I32(0) } } },
	{ "OHC", "OHC (thread creates a thread)", EMU_SIZE_ANY, 0, 12, 0, { { 0 } } },
	{ "OHp", "OHp (pause)", EMU_SIZE_ANY, 0, 0, 1, { STATE(EMU_ST_PAUSED, R | C) } },
	{ "OHr", "OHr (resume)", EMU_SIZE_ANY, 0, 0, 1, { STATE(EMU_ST_RUNNING, P | W) } },
	{ "OHc", "OHc (cooling)", EMU_SIZE_ANY, 0, 0, 1, { STATE(EMU_ST_COOLING, R) } },
	{ "OHw", "OHw (warming)", EMU_SIZE_ANY, 0, 0, 1, { STATE(EMU_ST_WARMING, P) } },
	{ "OHe", "OHe (thread ends)", EMU_SIZE_ANY, 0, 0, 1, { STATE(EMU_ST_DEAD, R | C) } },
	{ "OAs", "OAs (own affinity)", EMU_SIZE_EXACT, 4, 4, 1,
		{ { .op = EMU_OP_AFFINITY_SELF, .val = I32(0) } } },
	{ "OAr", "OAr (remote affinity)", EMU_SIZE_EXACT, 8, 8, 1,
		{ { .op = EMU_OP_AFFINITY_REMOTE, .val = I32(0), .arg = I32(4) } } },
	{ "OCn", "OCn (number of CPUs)", EMU_SIZE_ANY, 0, 4, 1, { HOOK(hook_ocn) } },
	{ "OF[", "OF[ (flush begins)", EMU_SIZE_ANY, 0, 0, 2,
		{ { .op = EMU_OP_SET, .chan = "flush", .val = K(1) }, HOOK(hook_flush_begin) } },
	{ "OF]", "OF] (flush ends)", EMU_SIZE_ANY, 0, 0, 2,
		{ { .op = EMU_OP_SET, .chan = "flush", .val = NUL }, HOOK(hook_flush_end) } },
	{ "OB*", "OB (burst)", EMU_SIZE_ANY, 0, 0, 1, { HOOK(hook_burst) } },
	{ "OU[", "OU[ (unordered region begins)", EMU_SIZE_ANY, 0, -1, 1, { HOOK(hook_ou_begin) } },
	{ "OU]", "OU] (unordered region ends)", EMU_SIZE_ANY, 0, -1, 1, { HOOK(hook_ou_end) } },
	{ "OU*", "OU (unordered region)", EMU_SIZE_ANY, 0, -1, 0, { { 0 } } },
	{ "OM[", "OM[ (mark push)", EMU_SIZE_EXACT, 12, 12, 1,
		{ { .op = EMU_OP_PUSH, .sel = I32(8), .val = I64(0), .nonzero = 1 } } },
	{ "OM]", "OM] (mark pop)", EMU_SIZE_EXACT, 12, 12, 1,
		{ { .op = EMU_OP_POP, .sel = I32(8), .val = I64(0), .nonzero = 1 } } },
	{ "OM=", "OM= (mark set)", EMU_SIZE_EXACT, 12, 12, 1,
		{ { .op = EMU_OP_SET, .sel = I32(8), .val = I64(0), .nonzero = 1 } } },
};

const struct emu_model_desc emu_model_ovni = {
	.name = "ovni",
	.byte = 'O',
	.version = "1.1.0",
	.nchans = sizeof ovni_chans / sizeof ovni_chans[0],
	.chans = ovni_chans,
	.nevents = sizeof ovni_events / sizeof ovni_events[0],
	.events = ovni_events,
	.thread_state_size = sizeof(struct ovni_thread),
};

/* ---- the registry ---- */

static const struct emu_model_reg registry[] = {
	{ "nanos6", '6', "1.1.0", NULL },
	{ "nodes", 'D', "1.0.0", NULL },
	{ "kernel", 'K', "1.0.0", NULL },
	{ "mpi", 'M', "1.0.0", NULL },
	{ "ovni", 'O', "1.1.0", &emu_model_ovni },
	{ "openmp", 'P', "1.2.1", NULL },
	{ "tampi", 'T', "1.0.0", NULL },
	{ "nosv", 'V', "2.7.0", NULL },
};

size_t emu_model_registry(const struct emu_model_reg **regs)
{
	*regs = registry;
	return sizeof registry / sizeof registry[0];
}
