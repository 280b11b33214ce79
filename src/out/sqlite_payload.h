/* SPDX-License-Identifier: MIT */
/*
 * sqlite_payload.h - internal to the SQLite output: the payload fields of
 * the events, decoded as the models' event tables name and type them (the
 * fields `weft dump` prints), in payload_field, payload_value and the view
 * payload (docs/sql.md).
 */
#ifndef WEFT_OUT_SQLITE_PAYLOAD_H
#define WEFT_OUT_SQLITE_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

struct sq_payload;
struct weft_event;
struct weft_registry;

/* Creates the tables; reg: the run's models (NULL: the built-in ones).
 * NULL with err. */
struct sq_payload *sq_payload_open(sqlite3 *db, const char *path,
		const struct weft_registry *reg, char *err, size_t errlen);
/* The fields of event number id (event.id). 0, or -1 with err. */
int sq_payload_add(struct sq_payload *p, uint64_t id, const struct weft_event *e, char *err,
		size_t errlen);
/* Inserts the values held (sqlite_batch.h). 0, or -1 with err. */
int sq_payload_flush(struct sq_payload *p, char *err, size_t errlen);
/* NULL-safe; finalizes its statements. */
void sq_payload_free(struct sq_payload *p);

#endif
