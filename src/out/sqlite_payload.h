/* SPDX-License-Identifier: MIT */
/*
 * sqlite_payload.h - internal to the SQLite output: the payload fields of
 * the events, decoded as the models' event tables name and type them (the
 * fields `weft dump` prints), decoded by the view payload from event_data's
 * payloads, with payload_field, payload_mcv and payload_text (docs/sql.md).
 */
#ifndef WEFT_OUT_SQLITE_PAYLOAD_H
#define WEFT_OUT_SQLITE_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

struct sq_payload;
struct weft_event;
struct weft_registry;

/* Creates the tables and the view; reg: the run's models (NULL: the
 * built-in ones); mcv_sql: the SQL of an event_data row e's mcv_name.id.
 * NULL with err. */
struct sq_payload *sq_payload_open(sqlite3 *db, const char *path,
		const struct weft_registry *reg, const char *mcv_sql, char *err, size_t errlen);
/* The fields of event number id (event.id), of MCV number mid
 * (mcv_name.id). 0, or -1 with err. */
int sq_payload_add(struct sq_payload *p, uint64_t id, uint32_t mid, const struct weft_event *e,
		char *err, size_t errlen);
/* NULL-safe; finalizes its statements. */
void sq_payload_free(struct sq_payload *p);

#endif
