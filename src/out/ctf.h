/* SPDX-License-Identifier: MIT */
/*
 * ctf.h - `weft export ctf`: a trace written as a CTF 1.8 trace (docs/
 * export.md): the TSDL metadata (plain text) and one binary data stream per
 * thread, in packets of bounded size, so that memory does not grow with
 * the trace. Written into a temporary directory beside the output and
 * renamed over it at the end (export_dir.c); a failed or interrupted export
 * leaves the output as it was.
 *
 * The files of this part, one concern each:
 *   ctf_export.c  the pass over the trace: each event to its stream
 *   ctf_class.c   the event classes: the models' events, the raw ones
 *   ctf_packet.c  the data streams: packets, their header and context
 *   ctf_meta.c    the TSDL metadata
 *   ctf_dir.c     the output directory: what a trace of weft's holds, its
 *                 files (written aside, renamed, replaced by export_dir.c)
 */
#ifndef WEFT_OUT_CTF_H
#define WEFT_OUT_CTF_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct weft_trace;
struct weft_registry;

struct ctf_opts {
	struct weft_trace *trace;        /* opened by the caller, not yet read */
	const char *trace_path;          /* as given, for the metadata's env */
	const struct weft_registry *models; /* NULL: the built-in ones */
	int all_models;                  /* every model's classes, required or not */
	const char *outdir;              /* the CTF trace's directory */
	/* 1: an existing non-empty outdir is replaced if it holds a CTF trace
	 * weft wrote (else it is refused whatever force says) */
	int force;
	/* Non-NULL: the export stops (fails, err "interrupted") once *stop is
	 * non-zero (read before each batch of events). */
	const volatile sig_atomic_t *stop;
	/* Called about once a second (NULL: none). */
	void (*progress)(void *ctx, uint64_t events, double seconds);
	void *ctx;
	/* The packet size in bytes (0: CTF_PACKET_SIZE); at least 4096, and
	 * smaller when the streams' packets would hold more than 64 MiB. */
	size_t packet_size;
};

#define CTF_PACKET_SIZE (64u << 10)

struct ctf_stats {
	uint64_t streams;   /* data stream files */
	uint64_t events;    /* event records written */
	uint64_t raw;       /* of them, in the raw classes (no model table fits) */
	uint64_t classes;   /* event classes in the metadata */
	uint64_t discarded; /* events_discarded over all streams at their ends */
	uint64_t packets;
	uint64_t bytes;     /* of the data streams */
};

/* Exports o->trace into o->outdir. 0 with *st filled (st may be NULL), or
 * -1 with err: the trace's error, a write error naming the file, or the
 * output refused ("DIR: ..."); nothing is left behind then. */
int ctf_export(const struct ctf_opts *o, struct ctf_stats *st, char *err, size_t errlen);

#endif
