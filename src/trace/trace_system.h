/* SPDX-License-Identifier: MIT */
/*
 * trace_system.h - the system: looms (struct weft_iloom), processes (struct
 * weft_iproc), their CPUs and threads, built from the streams' metadata
 * (system.c); finding the streams (discover.c), the trace around a path
 * (subtrace.c), loading the metadata (meta_load.c).
 */
#ifndef WEFT_TRACE_SYSTEM_H
#define WEFT_TRACE_SYSTEM_H

#include <stddef.h>

#include "weft/weft.h"

struct weft_trace;
struct weft_wstream;

struct weft_iloom {
	struct weft_loom pub;
	char *name;
	char *hostname;
	struct weft_cpu *cpus;
	const char **cpu_src; /* which file gave each CPU */
	size_t ncpus;
	struct weft_iproc **procs;
	const struct weft_proc **pprocs;
	size_t nprocs;
	/* ---- messages (system.c): the metadata files of the loom's streams ---- */
	const char **srcs;
	size_t nsrcs;
};

struct weft_iproc {
	struct weft_proc pub;
	struct weft_iloom *loom;
	const char *app_id_src, *rank_src;
	struct weft_thread **threads;
	const struct weft_thread **pthreads;
	size_t nthreads;
	/* ---- messages and rules (system.c): the metadata files of the
	 * process's streams (of the whole trace); whether one is v3 ---- */
	const char **srcs;
	size_t nsrcs;
	int has_v3;
};

/* discover.c: fills t->streams (sorted by relpath) with relpath, obs_path,
 * json_path and the v1 identity; warns about stray files. */
int weft_discover(struct weft_trace *t, const char *path);
/* subtrace.c: the trace directory around the directory path (abs: its real
 * path) and *subrel, path relative to it; NULL when path holds a loom.*
 * directory itself or is inside none (or, *oom set, out of memory). */
char *weft_find_trace_root(const char *path, const char *abs, char **subrel, int *oom);
/* subtrace.c: frees t->mstreams, t->root and t->subrel (weft_free_system). */
/* Frees a stream struct and what it owns (its metadata, its paths); the
 * stream must be closed (weft_stream_close). */
void weft_wstream_free(struct weft_wstream *s);
void weft_free_mstreams(struct weft_trace *t);

/* meta: load each stream's metadata */
int weft_load_metadata(struct weft_trace *t);

/* system.c */
int weft_build_system(struct weft_trace *t);
void weft_free_system(struct weft_trace *t);

#endif
