/* SPDX-License-Identifier: MIT */
/*
 * trace_midx.h - seeking by the merge index, merge.idx (mindex.c).
 */
#ifndef WEFT_TRACE_MIDX_H
#define WEFT_TRACE_MIDX_H

#include <stdint.h>

struct weft_trace;

/* mindex.c: a seek by the merge index (merge.idx). weft_midx_plan, before
 * the streams' rings are made: 1 if the index is used (use; the streams'
 * prod.off set from the checkpoint before the seek clock, if any), 0 if
 * not (the stream indexes then). weft_midx_resume, after: the heap as the
 * full read has it at the first event at or after the seek clock. */
struct weft_midx_plan {
	int use;
	int fd;
	char *path;
	uint64_t entries, nentries, esize; /* the section's checkpoints */
	uint8_t *entry;                    /* the one resumed from, or NULL */
};
int weft_midx_plan(struct weft_trace *t, struct weft_midx_plan *pl);
int weft_midx_resume(struct weft_trace *t, struct weft_midx_plan *pl);
void weft_midx_plan_free(struct weft_midx_plan *pl);

#endif
