/* SPDX-License-Identifier: MIT */
/*
 * trace_sort.h - sorting on read: the sorter of one stream (sort.c) and the
 * plan that makes every stream's sorter (sort_plan.c). What sort.c,
 * sort_in.c and sort_stream.c share beyond this is in sort_internal.h.
 */
#ifndef WEFT_TRACE_SORT_H
#define WEFT_TRACE_SORT_H

#include <stddef.h>
#include <stdint.h>

struct weft_trace;
struct weft_sorter;

/* sort.c: the sorter of one stream (look_back >= 1 events). */
struct weft_sorter *weft_sorter_new(uint64_t fsize, size_t look_back);
/* The same with its window (ring and sort buffer) in map, len bytes of a
 * shared mapping of a temporary file, of which it keeps at most resident
 * bytes mapped in (the rest stays in the file). */
struct weft_sorter *weft_sorter_new_mapped(uint64_t fsize, size_t look_back, void *map,
		size_t len, size_t resident);
/* The bytes of a mapped window for look_back (0: not mapped). */
size_t weft_sorter_map_size(size_t look_back);
/* sort_plan.c: scans the stream file at fd (fsize bytes) for how far back
 * its unordered regions can reach: *need events of look-back surely hold
 * each (never less than the truth; more where earlier sorts may have
 * moved events). 0, or -1 when out of memory. */
int weft_sort_scan_reach(int fd, uint64_t fsize, uint64_t *need);
/* sort_plan.c: makes the sorter of every stream (once, at the first need):
 * each stream's look-back (fixed, or from its scan) and where its window
 * lives (in memory within t->sort.budget, or in a temporary file). */
int weft_sort_plan(struct weft_trace *t);
/* sort_plan.c: t->sort.budget from the environment's WEFT_SORT_BUDGET when
 * the options left it 0 (else WEFT_SORT_BUDGET); -1 (t's error) when it is
 * no size. */
int weft_sort_budget_env(struct weft_trace *t);
void weft_sorter_free(struct weft_sorter *z);
/* Copies the next whole events of the sorted stream, from file offset
 * WEFT_OBS_HEADER_SIZE on, into dst (at most cap bytes), reading the file
 * through fd. Returns the bytes copied (> 0); 0 with *need set when the
 * next event alone is larger than cap; 0 with *need == 0 once everything
 * was given (the bytes of a file that ends inside an event come last, on
 * their own, at most cap of them); -1 when sorting failed
 * (weft_sorter_error), after every event before the failure was given. */
long weft_sorter_read(struct weft_sorter *z, int fd, uint8_t *dst, size_t cap, uint64_t *need);
/* The failure: its offset in the file and why (without the file name). */
const char *weft_sorter_error(const struct weft_sorter *z, uint64_t *off);
/* Events given so far whose offset differs from the file's. */
uint64_t weft_sorter_nmoved(const struct weft_sorter *z);
/* Whether the next byte to give is inside an unordered region of the
 * sorted stream (after an OU[ that no OU] closed yet). */
int weft_sorter_out_in_region(const struct weft_sorter *z);
/* The clock of the first event of the sorted stream (sorting as far as
 * needed to know it): 1 with *clock, 0 if the stream has none or sorting
 * failed before it (the iteration reports that). */
int weft_sorter_first_clock(struct weft_sorter *z, int fd, int64_t *clock);

#endif
