/* SPDX-License-Identifier: MIT */
/*
 * summary_merge.c - the summary of weft emu --mpi (docs/emu.md, MPI): each
 * rank packs the figures the summary prints of the rows its looms own (a
 * thread's state times, its labelled channels' accumulated times and the
 * value held at the end; a CPU's busy time), rank 0 unpacks every rank's
 * into one engine and prints the summary from it, as the serial run does.
 * The bytes are the engines' integers as they lie in memory: the ranks of
 * one job run one build of weft on one kind of machine.
 */
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

struct pk {
	uint8_t *p;
	size_t n, cap;
	int oom;
};

static void put(struct pk *b, int64_t v)
{
	if (b->oom)
		return;
	if (b->n + sizeof v > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		uint8_t *p = realloc(b->p, cap);
		if (p == NULL) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, &v, sizeof v);
	b->n += sizeof v;
}

/* The summary's values of channel C on a thread (model_shares): at most 64. */
static size_t nshares(const struct chan *C)
{
	return C->info.nvalues < 64 ? C->info.nvalues : 64;
}

int emu_summary_pack(const struct emu *e, const struct emu *const *thr_of,
		const struct emu *const *cpu_of, uint8_t **buf, size_t *len)
{
	struct pk b = { NULL, 0, 0, 0 };
	size_t nt = 0, nc = 0;
	for (size_t t = 0; t < e->nthreads; t++)
		nt += thr_of[t] != NULL;
	for (size_t c = 0; c < e->ncpus; c++)
		nc += cpu_of[c] != NULL;
	put(&b, (int64_t) nt);
	for (size_t t = 0; t < e->nthreads; t++) {
		const struct emu *se = thr_of[t];
		if (se == NULL)
			continue;
		const struct thr *T = &se->thr[t];
		put(&b, (int64_t) t);
		put(&b, (int64_t) T->state);
		put(&b, T->since);
		for (size_t s = 0; s < EMU_NSTATES; s++)
			put(&b, T->time[s]);
		for (size_t c = 0; c < e->nchans; c++) {
			const struct chan *C = &e->chans[c];
			if (C->acc_first == SIZE_MAX)
				continue;
			const struct raw *R = &se->raw[t * e->nchans + c];
			put(&b, R->depth > 0);
			put(&b, R->val);
			put(&b, R->since);
			for (size_t i = 0; i < nshares(C); i++)
				put(&b, se->acc[t * e->nacc + C->acc_first + i]);
		}
	}
	put(&b, (int64_t) nc);
	for (size_t c = 0; c < e->ncpus; c++) {
		if (cpu_of[c] == NULL)
			continue;
		const struct cpu *C = &cpu_of[c]->cpu[c];
		put(&b, (int64_t) c);
		put(&b, C->nrun);
		put(&b, C->busy_since);
		put(&b, C->busy);
	}
	if (b.oom) {
		free(b.p);
		return -1;
	}
	*buf = b.p;
	*len = b.n;
	return 0;
}

struct gk {
	const uint8_t *p;
	size_t n, at;
};

static int get(struct gk *g, int64_t *v)
{
	if (g->n - g->at < sizeof *v)
		return -1;
	memcpy(v, g->p + g->at, sizeof *v);
	g->at += sizeof *v;
	return 0;
}

int emu_summary_unpack(struct emu *e, const uint8_t *buf, size_t len)
{
	struct gk g = { buf, len, 0 };
	int64_t nt, nc, v;
	if (get(&g, &nt) != 0 || nt < 0 || (uint64_t) nt > e->nthreads)
		return -1;
	for (int64_t k = 0; k < nt; k++) {
		int64_t t, st;
		if (get(&g, &t) != 0 || t < 0 || (uint64_t) t >= e->nthreads || get(&g, &st) != 0 ||
				st < 0 || st >= EMU_NSTATES)
			return -1;
		struct thr *T = &e->thr[t];
		T->state = (enum emu_state) st;
		if (get(&g, &T->since) != 0)
			return -1;
		for (size_t s = 0; s < EMU_NSTATES; s++)
			if (get(&g, &T->time[s]) != 0)
				return -1;
		for (size_t c = 0; c < e->nchans; c++) {
			const struct chan *C = &e->chans[c];
			if (C->acc_first == SIZE_MAX)
				continue;
			struct raw *R = &e->raw[(size_t) t * e->nchans + c];
			/* the summary reads whether a value is held, not the stack */
			if (get(&g, &v) != 0)
				return -1;
			R->depth = v != 0;
			if (get(&g, &R->val) != 0 || get(&g, &R->since) != 0)
				return -1;
			for (size_t i = 0; i < nshares(C); i++)
				if (get(&g, &e->acc[(size_t) t * e->nacc + C->acc_first + i]) != 0)
					return -1;
		}
		/* the owner's figures: not another rank's thread any longer */
		if (e->cuts != NULL && e->cuts[t].cut) {
			e->cuts[t].cut = 0;
			e->ncut--;
		}
	}
	if (get(&g, &nc) != 0 || nc < 0 || (uint64_t) nc > e->ncpus)
		return -1;
	for (int64_t k = 0; k < nc; k++) {
		int64_t c;
		if (get(&g, &c) != 0 || c < 0 || (uint64_t) c >= e->ncpus)
			return -1;
		struct cpu *C = &e->cpu[c];
		if (get(&g, &C->nrun) != 0 || get(&g, &C->busy_since) != 0 || get(&g, &C->busy) != 0)
			return -1;
	}
	return g.at == g.n ? 0 : -1;
}
