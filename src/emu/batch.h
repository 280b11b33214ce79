/* SPDX-License-Identifier: MIT */
/*
 * batch.h - batches and sinks (batch.c): the records of the accepted events
 * buffered, per view file and internal, and handed to the sinks a batch at
 * a time; an event refused takes its records back. Part of struct emu
 * (emu_internal.h).
 */
#ifndef WEFT_EMU_BATCH_H
#define WEFT_EMU_BATCH_H

#include <stddef.h>

#include "emu.h"

#define EMU_MAX_SINKS 4
/* Records buffered before the sinks get them. The sinks may keep the Paraver
 * arrays for EMU_BATCH_KEEP more calls (emu.h), so a writer thread formats
 * one batch while the next ones are made. 4 Ki records (about 100 KB a
 * batch) rather than 16 Ki: a batch stays in the cores' L2 between the
 * emulation writing it and the writer reading it (process CPU on the 10M-event runtime trace, medians of 9
 * alternate runs: 0.751 -> 0.711 s; 8 Ki: 0.710 s; 2 Ki: no better). */
#define EMU_FLUSH_RECS (1u << 12)
/* Room beyond a batch in each array, for the records of the event that
 * reaches EMU_FLUSH_RECS. */
#define EMU_FLUSH_SLACK 1024u

struct emu;

struct batches {
	struct emu_sink sinks[EMU_MAX_SINKS];
	size_t nsinks;
	unsigned internal; /* the internal record kinds some sink wants: bit
	                      1 << kind (0: none) */
	/* records of the accepted events not yet given to the sinks */
	struct emu_prv_rec *prv[EMU_MAX_VIEWS];
	size_t nprv[EMU_MAX_VIEWS], prvcap[EMU_MAX_VIEWS];
	/* the sets of Paraver arrays last handed to the sinks, oldest first */
	struct emu_prv_rec *prv_kept[EMU_BATCH_KEEP][EMU_MAX_VIEWS];
	size_t prvcap_kept[EMU_BATCH_KEEP][EMU_MAX_VIEWS];
	struct emu_rec *irecs;
	size_t nirecs, ireccap;
	/* the internal arrays last handed to the sinks, oldest first (kept
	 * as the Paraver ones: a sink's thread may read them) */
	struct emu_rec *irecs_kept[EMU_BATCH_KEEP];
	size_t ireccap_kept[EMU_BATCH_KEEP];
	int lost;  /* some sink wants the lost records */
	struct emu_lost_rec *lrecs; /* the lost records (made outside the steps
	                               that emu_batch_undo takes back) */
	size_t nlrecs, lreccap;
};

/* Where a step's records begin: taken back when the step is refused
 * (emu_batch_mark, emu_batch_undo: fastpath.h). */
struct batch_mark {
	size_t n0, n1, ni;
};

/* Room for n more Paraver records of view file (0, or -1: out of memory). */
int emu_prv_grow(struct emu *e, size_t file, size_t n);
/* An internal record (emu_irec) when a sink wants them. */
int emu_irec_add(struct emu *e, int kind, size_t row, uint32_t chan, int64_t value, int isnull);
/* A lost record (loss.c) of thread t, placed after the view records made so
 * far; nothing while muted (a window's T0 not reached). */
int emu_lost_add(struct emu *e, const struct emu_lost_rec *r);
/* Where the step's records of the breakdown files begin (nb[EMU_MAX_BD]). */
void emu_batch_mark_bd(const struct emu *e, size_t *nb) __attribute__((noinline, cold));
void emu_batch_destroy(struct emu *e);

#endif
