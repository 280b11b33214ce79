/* SPDX-License-Identifier: MIT */
/*
 * sqlite_payload.c - the SQLite output's payload fields: each field of an
 * event's payload that the models' event tables describe (model.h: a name,
 * a type, an offset; what `weft dump` prints), decoded by the view payload
 * from the payload event_data stores (nothing stored per integer field):
 *   payload_field (id, mcv, idx, name, type, byte_offset, size): a field of
 *     an event table entry (mcv: the entry's, '*' for any value byte; idx:
 *     the field's place among the entry's; where it is in the payload),
 *     numbered as met;
 *   payload_mcv (mcv, field), WITHOUT ROWID: the fields of the events of an
 *     MCV (mcv_name.id) met with a payload;
 *   payload_text (event, field, value), WITHOUT ROWID: the values plain SQL
 *     does not decode: the text of a string field (escaped as weft dump
 *     prints it), a u64 above 2^63 - 1 as its decimal text;
 *   the view payload (event_id, mcv, idx, name, type, value): an integer
 *     field decoded from its bytes (little-endian, a signed type's top byte
 *     signed), else payload_text's value.
 * A field the payload is too short for has no row.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "sqlite_events.h"
#include "sqlite_payload.h"
#include "weft/weft.h"

static const char payload_schema[] =
	"CREATE TABLE payload_field (id INTEGER PRIMARY KEY, mcv TEXT NOT NULL,"
	" idx INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,"
	" byte_offset INTEGER NOT NULL, size INTEGER NOT NULL);\n"
	"CREATE TABLE payload_mcv (mcv INTEGER NOT NULL REFERENCES mcv_name,"
	" field INTEGER NOT NULL REFERENCES payload_field, PRIMARY KEY (mcv, field))"
	" WITHOUT ROWID;\n"
	"CREATE TABLE payload_text (event INTEGER NOT NULL REFERENCES event,"
	" field INTEGER NOT NULL REFERENCES payload_field, value TEXT NOT NULL,"
	" PRIMARY KEY (event, field)) WITHOUT ROWID;\n";

/* Appends to the string s (cap bytes, len used). */
static void put(char *s, size_t cap, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void put(char *s, size_t cap, size_t *len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(s + *len, cap - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t) n < cap - *len ? (size_t) n : cap - *len - 1;
}

/* Byte k of the field (0: its first), 0 to 255, as SQL: its hex code's
 * place in the string of the 256 codes three characters apart (no code
 * matches across two), in plain SQL (SQLite 3.40 has no unhex()). */
static void put_byte(char *s, size_t cap, size_t *len, const char *codes, const char *k)
{
	put(s, cap, len, "((instr('%s', hex(substr(e.payload, f.byte_offset + %s, 1))) - 1) / 3)",
			codes, k);
}

/* CREATE VIEW payload, mcv being the SQL of an event_data row e's
 * mcv_name.id. NULL: out of memory. */
static char *view_sql(const char *mcv)
{
	char codes[256 * 3 + 1];
	for (int b = 0; b < 256; b++)
		snprintf(codes + 3 * b, 4, "%02X ", b);
	codes[256 * 3 - 1] = '\0';
	size_t cap = 32768, len = 0;
	char *s = malloc(cap);
	if (s == NULL)
		return NULL;
	/* the top byte: a u64's above 127 is payload_text's; a signed type's
	 * is signed, times 2^(8 (size - 1)), then the bytes below added
	 * (never past the 64 bits) */
	put(s, cap, &len, "CREATE VIEW payload AS SELECT e.id AS event_id, f.mcv AS mcv,"
			" f.idx AS idx, f.name AS name, f.type AS type, CASE WHEN f.type = 'str'"
			" OR (f.type = 'u64' AND ");
	put_byte(s, cap, &len, codes, "f.size");
	put(s, cap, &len, " > 127) THEN (SELECT t.value FROM payload_text t WHERE"
			" t.event = e.id AND t.field = f.id) ELSE (");
	put_byte(s, cap, &len, codes, "f.size");
	put(s, cap, &len, " - CASE WHEN f.type GLOB 'i*' AND ");
	put_byte(s, cap, &len, codes, "f.size");
	put(s, cap, &len, " > 127 THEN 256 ELSE 0 END) * (1 << (8 * f.size - 8))");
	for (int k = 0; k < 7; k++) {
		char kk[8];
		snprintf(kk, sizeof kk, "%d", k + 1);
		put(s, cap, &len, " + CASE WHEN f.size > %d THEN ", k + 1);
		put_byte(s, cap, &len, codes, kk);
		put(s, cap, &len, " << %d ELSE 0 END", 8 * k);
	}
	put(s, cap, &len, " END AS value FROM event_data e CROSS JOIN payload_mcv m ON m.mcv = %s"
			" JOIN payload_field f ON f.id = m.field"
			" WHERE length(e.payload) >= f.byte_offset + f.size", mcv);
	if (len + 1 >= cap) {
		free(s);
		return NULL;
	}
	return s;
}

/* What an MCV's events hold (by its mcv_name.id). */
struct mcv_fields {
	const struct weft_event_spec *spec; /* NULL: no field */
	int64_t base;  /* its first payload_field.id */
	int known;     /* payload_mcv written */
	int text;      /* a string or a u64 field: payload_text may have rows */
};

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
	sqlite3_stmt *tins, *fins, *mins; /* payload_text, payload_field, payload_mcv */
	struct spec_ids *slots; /* NSLOTS */
	size_t nspecs;
	int64_t next_field;
	struct mcv_fields *mcvs; /* by mcv_name.id */
	size_t nmcvs;
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
		const struct weft_registry *reg, const char *mcv_sql, char *err, size_t errlen)
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
	char *view = view_sql(mcv_sql);
	if (view == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	int r = sqlite3_exec(db, payload_schema, NULL, NULL, NULL);
	if (r == SQLITE_OK)
		r = sqlite3_exec(db, view, NULL, NULL, NULL);
	free(view);
	if (r != SQLITE_OK) {
		sq_db_fail(db, path, "cannot write the database", err, errlen);
		goto fail;
	}
	if (sqlite3_prepare_v3(db, "INSERT INTO payload_text VALUES (?, ?, ?)", -1,
			SQLITE_PREPARE_PERSISTENT, &p->tins, NULL) != SQLITE_OK ||
			sqlite3_prepare_v3(db, "INSERT INTO payload_field VALUES (?, ?, ?, ?, ?, ?, ?)",
			-1, SQLITE_PREPARE_PERSISTENT, &p->fins, NULL) != SQLITE_OK ||
			sqlite3_prepare_v3(db, "INSERT INTO payload_mcv VALUES (?, ?)",
			-1, SQLITE_PREPARE_PERSISTENT, &p->mins, NULL) != SQLITE_OK) {
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
		sqlite3_bind_int64(st, 6, (sqlite3_int64) spec->fields[i].offset);
		sqlite3_bind_int64(st, 7, (sqlite3_int64) type_size(spec->fields[i].type));
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

/* The fields of MCV number mid (its 3 bytes mcv), payload_mcv's rows
 * written the first time. NULL with err. */
static const struct mcv_fields *mcv_fields(struct sq_payload *p, uint32_t mid,
		const char *mcv, char *err, size_t errlen)
{
	if (mid >= p->nmcvs) {
		size_t n = p->nmcvs ? p->nmcvs : 64;
		while (n <= mid)
			n *= 2;
		struct mcv_fields *m = realloc(p->mcvs, n * sizeof *m);
		if (m == NULL) {
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
		memset(m + p->nmcvs, 0, (n - p->nmcvs) * sizeof *m);
		p->mcvs = m;
		p->nmcvs = n;
	}
	struct mcv_fields *m = &p->mcvs[mid];
	if (m->known)
		return m;
	const struct weft_event_spec *spec = weft_model_event(p->reg, mcv);
	if (spec != NULL && spec->nfields > 0) {
		int64_t base = spec_base(p, spec, err, errlen);
		if (base < 0)
			return NULL;
		for (size_t i = 0; i < spec->nfields; i++) {
			enum weft_field_type t = spec->fields[i].type;
			if (t == WEFT_FIELD_STR || t == WEFT_FIELD_U64)
				m->text = 1;
			sqlite3_bind_int64(p->mins, 1, (sqlite3_int64) mid);
			sqlite3_bind_int64(p->mins, 2, base + (int64_t) i);
			int r = sqlite3_step(p->mins);
			sqlite3_reset(p->mins);
			if (r != SQLITE_DONE) {
				sq_db_fail(p->db, p->path, "cannot write the payload fields", err,
						errlen);
				return NULL;
			}
		}
		m->spec = spec;
		m->base = base;
	}
	m->known = 1;
	return m;
}

static uint64_t le(const uint8_t *b, size_t n)
{
	uint64_t v = 0;
	for (size_t i = n; i-- > 0;)
		v = v << 8 | b[i];
	return v;
}

int sq_payload_add(struct sq_payload *p, uint64_t id, uint32_t mid, const struct weft_event *e,
		char *err, size_t errlen)
{
	if (e->payload_size == 0)
		return 0;
	const struct mcv_fields *m = mid < p->nmcvs && p->mcvs[mid].known ? &p->mcvs[mid] :
		mcv_fields(p, mid, e->mcv, err, errlen);
	if (m == NULL)
		return -1;
	if (!m->text)
		return 0; /* every field decoded by the view */
	const struct weft_event_spec *spec = m->spec;
	const uint8_t *pl = e->payload;
	size_t size = e->payload_size;
	sqlite3_stmt *st = p->tins;
	for (size_t i = 0; i < spec->nfields; i++) {
		const struct weft_field *f = &spec->fields[i];
		if (f->type != WEFT_FIELD_STR && f->type != WEFT_FIELD_U64)
			continue;
		size_t n = type_size(f->type);
		if (f->offset > size || size - f->offset < n)
			continue; /* the payload is too short for it */
		const uint8_t *b = pl + f->offset;
		if (f->type == WEFT_FIELD_U64) {
			uint64_t u = le(b, n);
			if (u <= INT64_MAX)
				continue; /* the view decodes it */
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
		sqlite3_bind_int64(st, 1, (sqlite3_int64) id);
		sqlite3_bind_int64(st, 2, m->base + (int64_t) i);
		int r = sqlite3_step(st);
		sqlite3_reset(st);
		if (r != SQLITE_DONE)
			return sq_db_fail(p->db, p->path, "cannot write the payload fields", err,
					errlen);
	}
	return 0;
}

void sq_payload_free(struct sq_payload *p)
{
	if (p == NULL)
		return;
	sqlite3_finalize(p->tins);
	sqlite3_finalize(p->fins);
	sqlite3_finalize(p->mins);
	free(p->mcvs);
	free(p->slots);
	free(p);
}
