/* SPDX-License-Identifier: MIT */
/*
 * trace_meta.h - the metadata of one stream: struct weft_meta and its mark
 * definitions, parsed from stream.json / metadata.json (meta_load.c), its
 * weft.* losses (loss.c); reading a small file (diag.c). Held by each
 * struct weft_wstream (trace_stream.h).
 */
#ifndef WEFT_TRACE_META_H
#define WEFT_TRACE_META_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_diag.h"
#include "weft/weft.h"

/* ---- metadata of one stream ---- */

struct weft_mark_def {
	int32_t type;
	char *title;
	int stack;
	size_t nlabels;
	struct weft_mark_label *labels; /* label strings owned */
};

struct weft_meta {
	int version; /* 3 or 1 */
	char *part;  /* NULL if absent */
	int has_tid, tid;
	int has_pid, pid;
	char *loom;  /* NULL if absent */
	int has_app_id, app_id;
	int has_rank, rank;
	int has_nranks, nranks;
	int has_finished;
	int64_t finished;
	int has_require;
	size_t nreqs;
	struct weft_model_req *reqs; /* strings owned */
	int has_cpus;
	size_t ncpus;
	struct weft_cpu *cpus;
	size_t nmarks;
	struct weft_mark_def *marks;
	char *lib_version, *lib_commit;
	/* weft.* losses (loss.c): weft.cut, weft.lost_events, weft.ring; raw
	 * clocks */
	int end_by;               /* 0, WEFT_END_SIGNAL or WEFT_END_EXIT */
	int end_signal;
	int64_t end_clock;
	uint64_t dropped;         /* weft.lost_events */
	int ring;
	uint64_t ring_size, ring_lost_events, ring_lost_bytes;
	size_t nruns;
	struct weft_lost_run *runs; /* owned; first/last raw */
	/* weft.filter, weft.filtered (loss.c) */
	int has_filter;
	char *filter_rules;       /* owned; "" when no rules */
	int filter_callback;
	uint64_t filtered;
	/* weft.output = "off", weft.unwritten_bytes */
	int output_off;
	uint64_t unwritten_bytes;
	/* weft.index_after (loss.c): a stream.idx is due only beyond it */
	int has_index_after;
	uint64_t index_after;
};

/* Parse a v3 stream.json (name: the file, for messages). Returns -1 when the
 * file cannot be used at all (not JSON, not an object, bad version) or on a
 * strict breach; on success *root holds the parsed document. */
int weft_meta_parse_v3(const char *text, size_t len, const char *name,
		struct weft_diag *d, struct weft_meta *m, json_t **root);
/* Same for a v1 per-process metadata.json. */
int weft_meta_parse_v1(const char *text, size_t len, const char *name,
		struct weft_diag *d, struct weft_meta *m, json_t **root);
void weft_meta_free(struct weft_meta *m);
/* The weft.* loss keys of a v3 document (loss.c); -1 on a strict breach. */
int weft_meta_parse_loss(json_t *root, const char *name, struct weft_diag *d,
		struct weft_meta *m);
void weft_meta_free_loss(struct weft_meta *m);
/* Why the thread of m did not end: "ovni.finished is missing (...)", or
 * its weft.cut. */
void weft_meta_unfinished_why(const struct weft_meta *m, char *buf, size_t n);

/* Reads a whole small file (metadata); refuses files over max bytes. -1
 * with the error set; -2 out of memory (the error set too). */
int weft_read_small_file(const char *path, size_t max, char **out, size_t *outlen,
		struct weft_diag *d);

#endif
