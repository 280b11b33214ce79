/* SPDX-License-Identifier: MIT */
/*
 * bd_sort.h - the sorter of a breakdown view (docs/emu.md, BREAKDOWN): the
 * values of every physical CPU kept sorted ascending, one slot a CPU, and
 * per event the slots that changed, written once with their final value in
 * the order they first changed. The engine's breakdown (breakdown.c) and
 * the replay of the workers' per-CPU values after the time merge
 * (breakdown_merge.c: weft emu -j, --mpi) share it, so both write the same
 * records.
 */
#ifndef WEFT_EMU_BD_SORT_H
#define WEFT_EMU_BD_SORT_H

#include <stddef.h>
#include <stdint.h>

struct bd_sort {
	size_t n;           /* slots: the physical CPUs */
	int64_t *sorted;    /* the CPUs' values, ascending */
	int64_t *cur;       /* slot values after the last update */
	int64_t *last;      /* slot values last written */
	uint8_t *written;
	uint32_t *changed;  /* slots changed in this event, in order */
	uint8_t *is_changed;
	size_t nchanged;
	int started;
};

/* n slots, every value 0: 0, or -1 out of memory (bd_sort_free after). */
int bd_sort_init(struct bd_sort *s, size_t n);
void bd_sort_free(struct bd_sort *s);
/* A CPU's value goes from old to v (v != old). */
void bd_sort_update(struct bd_sort *s, int64_t old, int64_t v);
/* The end of an event: put(ctx, slot, value) for each slot changed since
 * the last commit whose value is not the one last written, in the order
 * the slots first changed: 0, or put's non-zero return. */
int bd_sort_commit(struct bd_sort *s, int (*put)(void *ctx, size_t slot, int64_t v), void *ctx);

#endif
