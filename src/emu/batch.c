/* SPDX-License-Identifier: MIT */
/*
 * batch.c - batches and sinks: the records of the accepted events
 * buffered per view file (and the internal records when a sink wants
 * them), handed to the sinks once a batch is full (EMU_FLUSH_RECS) and at
 * the end; the engine cycles EMU_BATCH_KEEP + 1 sets of arrays (the
 * internal ones too) so that a writer thread may format a batch while the
 * next ones are made. A step's
 * records are taken back when it is refused (fastpath.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"

int emu_irec_add(struct emu *e, int kind, size_t row, uint32_t chan, int64_t value, int isnull)
{
	struct batches *B = &e->batch;
	if (__builtin_expect(B->nirecs == B->ireccap, 0) &&
			emu_grow((void **) &B->irecs, &B->ireccap, B->nirecs + 1, sizeof *B->irecs) != 0)
		return emu_fail(e, "out of memory");
	struct emu_rec *r = &B->irecs[B->nirecs++];
	r->time = e->dclock - e->rbase;
	r->value = isnull ? 0 : value;
	r->row = (uint32_t) row;
	r->chan = chan;
	r->kind = (uint8_t) kind;
	r->isnull = (uint8_t) isnull;
	return 0;
}

int emu_lost_add(struct emu *e, const struct emu_lost_rec *r)
{
	struct batches *B = &e->batch;
	if (e->muted)
		return 0;
	if (B->nlrecs == B->lreccap &&
			emu_grow((void **) &B->lrecs, &B->lreccap, B->nlrecs + 1, sizeof *B->lrecs) != 0)
		return emu_fail(e, "out of memory");
	struct emu_lost_rec *x = &B->lrecs[B->nlrecs++];
	*x = *r;
	x->at[0] = (uint32_t) B->nprv[EMU_FILE_THREAD];
	x->at[1] = (uint32_t) B->nprv[EMU_FILE_CPU];
	return 0;
}

int emu_prv_grow(struct emu *e, size_t file, size_t n)
{
	/* A batch (EMU_FLUSH_RECS records in all) fits at once: no array is
	 * doubled past it, which would touch that much fresh memory again in
	 * each of the sets of arrays the engine cycles. */
	struct batches *B = &e->batch;
	size_t need = B->nprv[file] + n;
	size_t cap = B->prvcap[file] ? B->prvcap[file] * 2 : EMU_FLUSH_RECS + EMU_FLUSH_SLACK;
	while (cap < need)
		cap *= 2;
	struct emu_prv_rec *p = realloc(B->prv[file], cap * sizeof *p);
	if (p == NULL)
		return emu_fail(e, "out of memory");
	B->prv[file] = p;
	B->prvcap[file] = cap;
	return 0;
}

int emu_add_sink(struct emu *e, const struct emu_sink *sink)
{
	struct batches *B = &e->batch;
	if (B->nsinks == EMU_MAX_SINKS) {
		snprintf(e->err, sizeof e->err, "too many output sinks");
		return -1;
	}
	B->sinks[B->nsinks++] = *sink;
	if (sink->internal == EMU_SINK_INT_RAW)
		B->internal |= 1u << EMU_REC_RAW_SET | 1u << EMU_REC_RAW_PUSH | 1u << EMU_REC_RAW_POP;
	else if (sink->internal)
		B->internal |= ~0u;
	if (sink->lost)
		B->lost = 1;
	return 0;
}

void emu_batch_mark_bd(const struct emu *e, size_t *nb)
{
	const struct batches *B = &e->batch;
	for (size_t b = 0; b < e->nbd; b++)
		nb[b] = B->nprv[2 + b];
}

int emu_flush(struct emu *e)
{
	struct batches *B = &e->batch;
	size_t nv = 2 + e->nbd, total = B->nirecs + B->nlrecs;
	for (size_t f = 0; f < nv; f++)
		total += B->nprv[f];
	if (total == 0)
		return e->failed ? -1 : 0;
	struct emu_batch b;
	memset(&b, 0, sizeof b);
	for (size_t f = 0; f < nv; f++) {
		b.prv[f] = B->prv[f];
		b.nprv[f] = B->nprv[f];
	}
	b.internal = B->irecs;
	b.ninternal = B->nirecs;
	b.lost = B->lrecs;
	b.nlost = B->nlrecs;
	int r = 0;
	for (size_t s = 0; s < B->nsinks; s++) {
		char err[WEFT_ERR_MAX];
		struct emu_batch bs = b;
		if (!B->sinks[s].internal) {
			bs.internal = NULL;
			bs.ninternal = 0;
		}
		if (!B->sinks[s].lost) {
			bs.lost = NULL;
			bs.nlost = 0;
		}
		if (B->sinks[s].records(B->sinks[s].self, &bs, err, sizeof err) != 0) {
			if (!e->failed)
				snprintf(e->err, sizeof e->err, "%s", err);
			e->failed = 1;
			r = -1;
		}
	}
	/* The sinks may still read this set during their next EMU_BATCH_KEEP
	 * calls: fill the oldest kept one, which they are done with. */
	for (size_t f = 0; f < nv; f++) {
		struct emu_prv_rec *tp = B->prv_kept[0][f];
		size_t tc = B->prvcap_kept[0][f];
		for (size_t k = 0; k + 1 < EMU_BATCH_KEEP; k++) {
			B->prv_kept[k][f] = B->prv_kept[k + 1][f];
			B->prvcap_kept[k][f] = B->prvcap_kept[k + 1][f];
		}
		B->prv_kept[EMU_BATCH_KEEP - 1][f] = B->prv[f];
		B->prvcap_kept[EMU_BATCH_KEEP - 1][f] = B->prvcap[f];
		B->prv[f] = tp;
		B->prvcap[f] = tc;
		B->nprv[f] = 0;
	}
	if (B->internal) {
		struct emu_rec *ti = B->irecs_kept[0];
		size_t tc = B->ireccap_kept[0];
		for (size_t k = 0; k + 1 < EMU_BATCH_KEEP; k++) {
			B->irecs_kept[k] = B->irecs_kept[k + 1];
			B->ireccap_kept[k] = B->ireccap_kept[k + 1];
		}
		B->irecs_kept[EMU_BATCH_KEEP - 1] = B->irecs;
		B->ireccap_kept[EMU_BATCH_KEEP - 1] = B->ireccap;
		B->irecs = ti;
		B->ireccap = tc;
	}
	B->nirecs = 0;
	B->nlrecs = 0;
	return r != 0 || e->failed ? -1 : 0;
}

void emu_batch_destroy(struct emu *e)
{
	struct batches *B = &e->batch;
	for (size_t f = 0; f < EMU_MAX_VIEWS; f++) {
		free(B->prv[f]);
		for (size_t k = 0; k < EMU_BATCH_KEEP; k++)
			free(B->prv_kept[k][f]);
	}
	free(B->irecs);
	for (size_t k = 0; k < EMU_BATCH_KEEP; k++)
		free(B->irecs_kept[k]);
	free(B->lrecs);
}
