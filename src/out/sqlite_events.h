/* SPDX-License-Identifier: MIT */
/*
 * sqlite_events.h - internal to the SQLite output (sqlite.c): the system,
 * stream, event and trace tables, written from the events the run reads (out.h:
 * the input and events ops), inside the output's one transaction.
 */
#ifndef WEFT_OUT_SQLITE_EVENTS_H
#define WEFT_OUT_SQLITE_EVENTS_H

#include <stddef.h>

#include <sqlite3.h>

#include "out.h"

struct sq_events;

/* The failure of a statement on db, as "<path>: <what>: <SQLite's reason>"
 * (with the system's reason where there is one). Returns -1. */
int sq_db_fail(sqlite3 *db, const char *path, const char *what, char *err, size_t errlen);

/* The loom, process, thread and cpu tables from emu's system. 0, or -1
 * with err. */
int sq_write_system(sqlite3 *db, const char *path, const struct emu *emu, char *err,
		size_t errlen);
/* Creates the tables (stream, event, trace) and writes the streams: the
 * threads of emu's system name the streams' threads. NULL with err. */
struct sq_events *sq_events_open(sqlite3 *db, const char *path, const struct emu *emu,
		const struct out_input *in, char *err, size_t errlen);
/* A batch of events, in the order read; their rows go in SQ_BATCH_ROWS at
 * a time whatever the batches (the payloads copied), so the database is a
 * function of the events in order. 0, or -1 with err. */
int sq_events_add(struct sq_events *q, const struct weft_event *evs, size_t n, char *err,
		size_t errlen);
/* Inserts the rows still held (after the last batch). 0, or -1 with err. */
int sq_events_flush(struct sq_events *q, char *err, size_t errlen);
/* The rows still held, the trace row and the event view. 0, or -1 with err. */
int sq_events_finish(struct sq_events *q, char *err, size_t errlen);
/* NULL-safe. */
void sq_events_free(struct sq_events *q);

#endif
