/* SPDX-License-Identifier: MIT */
/*
 * sqlite_payload.c - the SQLite output's payload tables: each field of an
 * event's payload that the models' event tables describe (model.h: a name,
 * a type, an offset; what `weft dump` prints), one row per field:
 *   payload_field (id, mcv, idx, name, type): a field of an event table
 *     entry (mcv: the entry's, '*' for any value byte; idx: the field's
 *     place among the entry's), numbered as met;
 *   payload_value (event, field, value), WITHOUT ROWID, keyed by (event,
 *     field): the value, an integer (a u64 above 2^63 - 1 as its decimal
 *     text) or the text of a string field (escaped as weft dump prints it);
 *   the view payload (event_id, mcv, idx, name, type, value).
 * A field the payload is too short for is not stored.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "sqlite_batch.h"
#include "sqlite_events.h"
#include "sqlite_payload.h"
#include "weft/weft.h"

static const char payload_schema[] =
	"CREATE TABLE payload_field (id INTEGER PRIMARY KEY, mcv TEXT NOT NULL,"
	" idx INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL);\n"
	"CREATE TABLE payload_value (event INTEGER NOT NULL REFERENCES event,"
	" field INTEGER NOT NULL REFERENCES payload_field, value,"
	" PRIMARY KEY (event, field)) WITHOUT ROWID;\n"
	"CREATE VIEW payload AS SELECT v.event AS event_id, f.mcv AS mcv, f.idx AS idx,"
	" f.name AS name, f.type AS type, v.value AS value FROM payload_value v"
	" JOIN payload_field f ON f.id = v.field;\n";

/* The first field id of each event table entry met (by its address). */
struct spec_ids {
	const struct weft_event_spec *spec;
	int64_t base;
};

#define NSLOTS 1024 /* open addressing; the entries are a few hundred at most */

struct sq_payload {
	sqlite3 *db;
	const char *path;
	const struct weft_registry *reg;
	sqlite3_stmt *ins, *fins;
	struct sq_batch vb;     /* the integer values */
	struct spec_ids *slots; /* NSLOTS */
	size_t nspecs;
	int64_t next_field;
	/* the last MCV looked up, and its entry */
	char last_mcv[3];
	const struct weft_event_spec *last;
	int have_last;
};

static const char *const type_names[] = {
	[WEFT_FIELD_I8] = "i8", [WEFT_FIELD_I16] = "i16", [WEFT_FIELD_I32] = "i32",
	[WEFT_FIELD_I64] = "i64", [WEFT_FIELD_U8] = "u8", [WEFT_FIELD_U16] = "u16",
	[WEFT_FIELD_U32] = "u32", [WEFT_FIELD_U64] = "u64", [WEFT_FIELD_STR] = "str",
};

static size_t type_size(enum weft_field_type t)
{
	switch (t) {
	case WEFT_FIELD_I8: case WEFT_FIELD_U8: return 1;
	case WEFT_FIELD_I16: case WEFT_FIELD_U16: return 2;
	case WEFT_FIELD_I32: case WEFT_FIELD_U32: return 4;
	case WEFT_FIELD_I64: case WEFT_FIELD_U64: return 8;
	case WEFT_FIELD_STR: return 1;
	}
	return 1;
}

struct sq_payload *sq_payload_open(sqlite3 *db, const char *path,
		const struct weft_registry *reg, char *err, size_t errlen)
{
	struct sq_payload *p = calloc(1, sizeof *p);
	if (p == NULL || (p->slots = calloc(NSLOTS, sizeof *p->slots)) == NULL) {
		free(p);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->db = db;
	p->path = path;
	p->reg = reg != NULL ? reg : weft_registry_builtin(err, errlen);
	if (p->reg == NULL)
		goto fail;
	if (sqlite3_exec(db, payload_schema, NULL, NULL, NULL) != SQLITE_OK) {
		sq_db_fail(db, path, "cannot write the database", err, errlen);
		goto fail;
	}
	if (sq_batch_init(&p->vb, db, "payload_value (event, field, value)", 3) != SQLITE_OK ||
			sqlite3_prepare_v3(db, "INSERT INTO payload_value VALUES (?, ?, ?)", -1,
			SQLITE_PREPARE_PERSISTENT, &p->ins, NULL) != SQLITE_OK ||
			sqlite3_prepare_v3(db, "INSERT INTO payload_field VALUES (?, ?, ?, ?, ?)",
			-1, SQLITE_PREPARE_PERSISTENT, &p->fins, NULL) != SQLITE_OK) {
		sq_db_fail(db, path, "cannot prepare", err, errlen);
		goto fail;
	}
	return p;
fail:
	sq_payload_free(p);
	return NULL;
}

/* The first field id of spec's fields, written into payload_field the
 * first time. -1 with err. */
static int64_t spec_base(struct sq_payload *p, const struct weft_event_spec *spec, char *err,
		size_t errlen)
{
	size_t h = ((uintptr_t) spec >> 4) % NSLOTS;
	while (p->slots[h].spec != NULL && p->slots[h].spec != spec)
		h = (h + 1) % NSLOTS;
	if (p->slots[h].spec == spec)
		return p->slots[h].base;
	if (p->nspecs + 1 >= NSLOTS) {
		snprintf(err, errlen, "%s: more than %d event kinds with payload fields", p->path,
				NSLOTS - 1);
		return -1;
	}
	int64_t base = p->next_field;
	char esc[16]; /* the entry's MCV ('*': any value byte), as weft dump prints it */
	weft_escape(spec->mcv, 3, esc, sizeof esc);
	for (size_t i = 0; i < spec->nfields; i++) {
		sqlite3_stmt *st = p->fins;
		sqlite3_bind_int64(st, 1, base + (int64_t) i);
		sqlite3_bind_text(st, 2, esc, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 3, (sqlite3_int64) i);
		sqlite3_bind_text(st, 4, spec->fields[i].name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, type_names[spec->fields[i].type], -1, SQLITE_STATIC);
		int r = sqlite3_step(st);
		sqlite3_reset(st);
		if (r != SQLITE_DONE)
			return sq_db_fail(p->db, p->path, "cannot write the payload fields", err,
					errlen);
	}
	p->next_field += (int64_t) spec->nfields;
	p->slots[h].spec = spec;
	p->slots[h].base = base;
	p->nspecs++;
	return base;
}

static uint64_t le(const uint8_t *b, size_t n)
{
	uint64_t v = 0;
	for (size_t i = n; i-- > 0;)
		v = v << 8 | b[i];
	return v;
}

int sq_payload_add(struct sq_payload *p, uint64_t id, const struct weft_event *e, char *err,
		size_t errlen)
{
	if (e->payload_size == 0)
		return 0;
	const struct weft_event_spec *spec;
	if (p->have_last && memcmp(p->last_mcv, e->mcv, 3) == 0) {
		spec = p->last;
	} else {
		spec = weft_model_event(p->reg, e->mcv);
		memcpy(p->last_mcv, e->mcv, 3);
		p->last = spec;
		p->have_last = 1;
	}
	if (spec == NULL || spec->nfields == 0)
		return 0;
	int64_t base = spec_base(p, spec, err, errlen);
	if (base < 0)
		return -1;
	const uint8_t *pl = e->payload;
	size_t size = e->payload_size;
	sqlite3_stmt *st = p->ins;
	for (size_t i = 0; i < spec->nfields; i++) {
		const struct weft_field *f = &spec->fields[i];
		size_t n = type_size(f->type);
		if (f->offset > size || size - f->offset < n)
			continue; /* the payload is too short for it */
		const uint8_t *b = pl + f->offset;
		uint64_t u = f->type == WEFT_FIELD_STR ? 0 : le(b, n);
		int64_t v;
		switch (f->type) {
		case WEFT_FIELD_I8: v = (int8_t) u; break;
		case WEFT_FIELD_I16: v = (int16_t) u; break;
		case WEFT_FIELD_I32: v = (int32_t) u; break;
		case WEFT_FIELD_I64: v = (int64_t) u; break;
		case WEFT_FIELD_U64: v = (int64_t) u; break;
		case WEFT_FIELD_STR: v = 0; break;
		default: v = (int64_t) u; break;
		}
		if (f->type != WEFT_FIELD_STR && (f->type != WEFT_FIELD_U64 || u <= INT64_MAX)) {
			int64_t row[3] = { (int64_t) id, base + (int64_t) i, v };
			if (sq_batch_add(&p->vb, row) != SQLITE_OK)
				return sq_db_fail(p->db, p->path, "cannot write the payload fields",
						err, errlen);
			continue;
		}
		sqlite3_bind_int64(st, 1, (sqlite3_int64) id);
		sqlite3_bind_int64(st, 2, base + (int64_t) i);
		if (f->type == WEFT_FIELD_U64) {
			char text[24];
			snprintf(text, sizeof text, "%" PRIu64, u);
			sqlite3_bind_text(st, 3, text, -1, SQLITE_TRANSIENT);
		} else {
			size_t len = strnlen((const char *) b, size - f->offset);
			size_t cap = 4 * len + 1;
			char *str = malloc(cap);
			if (str == NULL) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			weft_escape((const char *) b, len, str, cap);
			sqlite3_bind_text(st, 3, str, -1, free);
		}
		int r = sqlite3_step(st);
		sqlite3_reset(st);
		if (r != SQLITE_DONE)
			return sq_db_fail(p->db, p->path, "cannot write the payload fields", err,
					errlen);
	}
	return 0;
}

int sq_payload_flush(struct sq_payload *p, char *err, size_t errlen)
{
	if (sq_batch_flush(&p->vb) != SQLITE_OK)
		return sq_db_fail(p->db, p->path, "cannot write the payload fields", err, errlen);
	return 0;
}

void sq_payload_free(struct sq_payload *p)
{
	if (p == NULL)
		return;
	sqlite3_finalize(p->ins);
	sqlite3_finalize(p->fins);
	sq_batch_free(&p->vb);
	free(p->slots);
	free(p);
}
