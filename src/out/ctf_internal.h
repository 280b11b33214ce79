/* SPDX-License-Identifier: MIT */
/*
 * ctf_internal.h - what the files of `weft export ctf` share (ctf.h lists
 * them). Private to src/out.
 */
#ifndef WEFT_OUT_CTF_INTERNAL_H
#define WEFT_OUT_CTF_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "export_dir.h"
#include "model.h"
#include "weft/weft.h"

/* ---- the output directory (ctf_dir.c) ---- */

/* The first line of the metadata weft writes: --force replaces only a
 * directory whose metadata file starts with it. */
#define CTF_META_SIGNATURE "/* CTF 1.8 */\n/* written by weft export"

/* Checks out (absent, an empty directory, or with force a CTF trace weft
 * wrote; never a symbolic link) and makes the temporary directory beside
 * it. 0, or -1 with err. Then export_dir_commit or export_dir_discard. */
int ctf_dir_open(struct export_dir *d, const char *out, int force, char *err, size_t errlen);
/* A new file name in the temporary directory (O_EXCL, no link followed),
 * opened for writing: its descriptor, or -1 with err. */
int ctf_dir_create(struct export_dir *d, const char *name, char *err, size_t errlen);

/* ---- the event classes (ctf_class.c) ---- */

/* The two classes of events no model's table fits (an unknown MCV, a
 * payload of another size than the table's fields, a jumbo event where
 * the table says normal or the other way): their MCV bytes and payload. */
enum { CTF_CLASS_RAW = 0, CTF_CLASS_RAW_JUMBO = 1, CTF_CLASS_FIRST = 2 };

struct ctf_class {
	uint32_t id;
	const struct weft_model_spec *model;
	const struct weft_event_spec *spec;
	int jumbo;      /* the table's event is jumbo: fields after the size */
	int wildcard;   /* '*' in the MCV: the value byte is a field */
	int has_str;    /* the last field is a string */
	uint32_t fixed; /* bytes of the fields before a string (jumbo: from the data) */
	int used;       /* listed in the metadata */
	/* the generated fields' names (the value byte; a jumbo's rest), chosen
	 * apart from the model's */
	char vname[24], rname[24];
};

struct ctf_classes;

/* The classes of the models of reg (NULL: built-in): those of every model
 * enabled for t (ovni, those a stream requires, every one with all) listed
 * from the start, the others when first met. NULL with err. */
struct ctf_classes *ctf_classes_new(const struct weft_registry *reg, const struct weft_trace *t,
		int all, char *err, size_t errlen);
void ctf_classes_free(struct ctf_classes *c);
size_t ctf_classes_count(const struct ctf_classes *c);
const struct ctf_class *ctf_class_at(const struct ctf_classes *c, size_t i);

/* An event record, in at most four pieces after its 10-byte header: pre
 * (bytes the writer adds: the value byte, the raw classes' MCV and size),
 * body (a part of the payload as it is), mid (a jumbo's rest size),
 * tail (the rest). */
struct ctf_rec {
	uint8_t head[24]; /* the header (id, timestamp) then pre */
	uint32_t nhead;
	const uint8_t *body;
	uint32_t nbody;
	uint8_t mid[4];
	uint32_t nmid;
	const uint8_t *tail;
	uint32_t ntail;
};

/* Encodes event e, at timestamp ts, into *r (its pieces point into e's
 * payload). Returns the class (raw when no table fits), or NULL with err
 * (out of memory, too many classes). */
const struct ctf_class *ctf_encode(struct ctf_classes *c, const struct weft_event *e,
		uint64_t ts, struct ctf_rec *r, char *err, size_t errlen);

/* ---- the data streams (ctf_packet.c) ---- */

struct ctf_stream;

struct ctf_stream_info {
	uint64_t index;       /* stream_instance_id: the stream's place in the trace */
	uint32_t loom_id;     /* the loom's place among the looms */
	int32_t pid, tid, rank;
	const char *loom;     /* its name */
	const char *path;     /* the stream directory, relative to the trace */
	const uint8_t *uuid;  /* the trace's, 16 bytes */
};

/* A data stream file (name) in d, packets of at most packet_size bytes
 * (an event larger than a packet has a packet of its own). NULL with err. */
struct ctf_stream *ctf_stream_new(struct export_dir *d, const char *name,
		const struct ctf_stream_info *info, size_t packet_size, char *err, size_t errlen);
/* Appends an event record at timestamp ts. 0, or -1 with err (a write error). */
int ctf_stream_add(struct ctf_stream *s, const struct ctf_rec *r, uint64_t ts, char *err,
		size_t errlen);
/* Events the stream lacks from here on (lost from ts on): the packet
 * being filled is closed first (if it holds events; an empty one at ts if
 * the stream has none yet) so that the next packet's events_discarded
 * grows by n, where the loss is. 0 or -1 with err. */
int ctf_stream_discard(struct ctf_stream *s, uint64_t n, uint64_t ts, char *err,
		size_t errlen);
/* Writes the last packet (an empty one at ts if the stream has none) and
 * closes the file. 0 or -1 with err. */
int ctf_stream_end(struct ctf_stream *s, uint64_t ts, char *err, size_t errlen);
uint64_t ctf_stream_events(const struct ctf_stream *s);
uint64_t ctf_stream_discarded(const struct ctf_stream *s);
uint64_t ctf_stream_packets(const struct ctf_stream *s);
uint64_t ctf_stream_bytes(const struct ctf_stream *s);
void ctf_stream_free(struct ctf_stream *s);

/* ---- the metadata (ctf_meta.c) ---- */

struct ctf_meta_info {
	const struct weft_trace *trace;
	const char *trace_path;
	const uint8_t *uuid;     /* 16 bytes */
	int64_t clock_base;      /* ns: the clock's offset (timestamps are sclock - base) */
	const struct ctf_classes *classes;
};

/* Writes the metadata file into d. 0 or -1 with err. */
int ctf_meta_write(struct export_dir *d, const struct ctf_meta_info *m, char *err, size_t errlen);

/* Writes all of buf to fd (a short write retried). 0 or -1 with errno. */
int ctf_write_all(int fd, const void *buf, size_t len);

#endif
