/* SPDX-License-Identifier: MIT */
/*
 * sqlite_events.c - the SQLite output's tables of the trace itself
 * (docs/sql.md): the system (loom, process, thread, cpu), the streams of the trace the run opened, then every event
 * as the run reads it (the same batches the engine is fed, or, with weft
 * emu -j, the merging thread's read of the trace), inserted SQ_BATCH_ROWS
 * at a time whatever the batches (their payloads copied until then), inside
 * the output's one transaction; the trace row at the end (the events have
 * no index: they are stored in time order).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "sqlite_batch.h"
#include "sqlite_events.h"
#include "sqlite_payload.h"
#include "weft/weft.h"

/* What event_data.kind has subtracted (the view adds it back; 128, as
 * written in event_view). */
#define KIND_BIAS 128

static const char events_schema[] =
	"CREATE TABLE stream (id INTEGER PRIMARY KEY, path TEXT NOT NULL,"
	" thread INTEGER REFERENCES thread, clock_offset INTEGER NOT NULL,"
	" size INTEGER NOT NULL, meta_version INTEGER NOT NULL, finished INTEGER NOT NULL,"
	" lib_version TEXT);\n"
	"CREATE TABLE trace (path TEXT NOT NULL, first_clock INTEGER, duration INTEGER,"
	" nevents INTEGER NOT NULL);\n"
	/* the events as stored: the time (after the first clock: small
	 * numbers), the stream (its thread is the stream's) and the MCV (its
	 * number in mcv_name, numbered as met) in one small number, kind =
	 * mcv * the number of streams + stream - KIND_BIAS (one column less a
	 * row; the bias puts the first 256 combinations, not 128, in SQLite's
	 * one-byte integers, -128 to 127) */
	"CREATE TABLE mcv_name (id INTEGER PRIMARY KEY, mcv TEXT NOT NULL);\n"
	"CREATE TABLE event_data (id INTEGER PRIMARY KEY, time INTEGER NOT NULL,"
	" kind INTEGER NOT NULL, payload BLOB);\n";

/* The event view (made at the end, with the first clock): clock = time +
 * the first clock, rclock = clock - %s, the stream's clock offset (or, for a
 * drifted stream, the expression of drift_expr); the stream (kind +
 * KIND_BIAS) %% the number of streams (%lld), the MCV (kind + KIND_BIAS) / it. */
static const char event_view[] =
	"CREATE VIEW event AS SELECT e.id AS id, e.time AS time, e.time + %1$lld AS clock,"
	" e.time + %1$lld - %2$s AS rclock, s.thread AS thread,"
	" (e.kind + 128) %% %3$lld AS stream, m.mcv AS mcv, e.payload AS payload FROM event_data e"
	" JOIN stream s ON s.id = (e.kind + 128) %% %3$lld"
	" JOIN mcv_name m ON m.id = (e.kind + 128) / %3$lld";

/* A stream of the trace, by its address: its position (stream.id) and its
 * thread (thread.id, -1: none). */
struct smap {
	const struct weft_stream *s;
	size_t index;
	int64_t thread;
};

struct sq_events {
	sqlite3 *db;
	const char *path;       /* the database, for messages */
	char *trace_path;       /* the trace, as given */
	const struct out_input *in;
	struct smap *m;         /* by address */
	size_t ns;
	const struct weft_stream *last; /* the stream of the last event, and ... */
	size_t last_i;                  /* ... its place in m */
	struct sq_batch eb;    /* the event_data rows */
	uint8_t *pay;          /* the payloads of the rows held in eb (a row's
	                          cell holds its offset here) */
	size_t npay, paycap;
	struct sq_payload *pl; /* the payload fields */
	sqlite3_stmt *mins;    /* INSERT INTO mcv_name */
	uint32_t *mkey;        /* the MCVs met: 1 + their 3 bytes (0: free), ... */
	uint32_t *mval;        /* ... their mcv_name.id */
	size_t mcap, nm;       /* slots (a power of 2), MCVs */
	uint32_t last_key, last_val; /* the last MCV looked up */
	uint64_t n;
	int64_t first, last_clock;
};

/* The streams of the trace, the factor of the MCV in event_data.kind (1
 * at least). */
static size_t kinds(const struct sq_events *q)
{
	return q->ns > 0 ? q->ns : 1;
}

int sq_db_fail(sqlite3 *db, const char *path, const char *what, char *err, size_t errlen)
{
	/* the system's reason too, where SQLite's is vague ("disk I/O error") */
	int e = sqlite3_system_errno(db);
	if (e != 0)
		snprintf(err, errlen, "%s: %s: %s (%s)", path, what, sqlite3_errmsg(db), strerror(e));
	else if (sqlite3_extended_errcode(db) == SQLITE_IOERR_WRITE)
		/* SQLite keeps no errno of a failed write */
		snprintf(err, errlen, "%s: %s: %s (a write failed: no space left on the device, or "
				"the file size limit reached)", path, what, sqlite3_errmsg(db));
	else
		snprintf(err, errlen, "%s: %s: %s", path, what, sqlite3_errmsg(db));
	return -1;
}

static int step_reset(sqlite3 *db, const char *path, sqlite3_stmt *st, char *err,
		size_t errlen)
{
	int r = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (r != SQLITE_DONE)
		return sq_db_fail(db, path, "cannot write the database", err, errlen);
	return 0;
}

static int bind_text(sqlite3_stmt *st, int i, const char *t)
{
	return t == NULL ? sqlite3_bind_null(st, i) : sqlite3_bind_text(st, i, t, -1, SQLITE_STATIC);
}

int sq_write_system(sqlite3 *db, const char *path, const struct emu *emu, char *err,
		size_t errlen)
{
	const struct emu_sys *sys = emu_system(emu);
	sqlite3_stmt *st = NULL;
	int r = 0;
	if (sqlite3_prepare_v2(db, "INSERT INTO loom VALUES (?, ?, ?, ?, ?)", -1, &st,
			NULL) != SQLITE_OK)
		return sq_db_fail(db, path, "cannot prepare", err, errlen);
	for (size_t i = 0; i < sys->nlooms && r == 0; i++) {
		const struct emu_loom *l = &sys->looms[i];
		sqlite3_bind_int64(st, 1, (sqlite3_int64) i);
		bind_text(st, 2, l->name);
		bind_text(st, 3, l->hostname);
		sqlite3_bind_int64(st, 4, l->clock_offset);
		sqlite3_bind_int64(st, 5, (sqlite3_int64) l->nphys);
		r = step_reset(db, path, st, err, errlen);
	}
	sqlite3_finalize(st);
	if (r != 0 || sqlite3_prepare_v2(db, "INSERT INTO process VALUES (?, ?, ?, ?, ?)", -1,
			&st, NULL) != SQLITE_OK)
		return r != 0 ? r : sq_db_fail(db, path, "cannot prepare", err, errlen);
	for (size_t i = 0; i < sys->nprocs && r == 0; i++) {
		const struct emu_proc *p = &sys->procs[i];
		sqlite3_bind_int64(st, 1, (sqlite3_int64) i);
		sqlite3_bind_int64(st, 2, (sqlite3_int64) p->loom);
		sqlite3_bind_int64(st, 3, p->pid);
		if (p->app_id != 0)
			sqlite3_bind_int64(st, 4, p->app_id);
		if (p->rank >= 0)
			sqlite3_bind_int64(st, 5, p->rank);
		r = step_reset(db, path, st, err, errlen);
	}
	sqlite3_finalize(st);
	if (r != 0 || sqlite3_prepare_v2(db, "INSERT INTO thread VALUES (?, ?, ?, ?, ?, ?)", -1,
			&st, NULL) != SQLITE_OK)
		return r != 0 ? r : sq_db_fail(db, path, "cannot prepare", err, errlen);
	for (size_t i = 0; i < sys->nthreads && r == 0; i++) {
		const struct emu_sys_thread *t = &sys->threads[i];
		sqlite3_bind_int64(st, 1, (sqlite3_int64) i);
		sqlite3_bind_int64(st, 2, (sqlite3_int64) t->proc);
		sqlite3_bind_int64(st, 3, (sqlite3_int64) t->loom);
		sqlite3_bind_int64(st, 4, t->tid);
		bind_text(st, 5, t->label);
		bind_text(st, 6, t->stream != NULL ? t->stream->relpath : NULL);
		r = step_reset(db, path, st, err, errlen);
	}
	sqlite3_finalize(st);
	if (r != 0 || sqlite3_prepare_v2(db, "INSERT INTO cpu VALUES (?, ?, ?, ?, ?, ?)", -1,
			&st, NULL) != SQLITE_OK)
		return r != 0 ? r : sq_db_fail(db, path, "cannot prepare", err, errlen);
	for (size_t i = 0; i < sys->ncpus && r == 0; i++) {
		const struct emu_sys_cpu *c = &sys->cpus[i];
		sqlite3_bind_int64(st, 1, (sqlite3_int64) i);
		sqlite3_bind_int64(st, 2, (sqlite3_int64) c->loom);
		if (!c->is_virtual) {
			sqlite3_bind_int64(st, 3, c->index);
			sqlite3_bind_int64(st, 4, c->phyid);
		}
		sqlite3_bind_int64(st, 5, c->is_virtual != 0);
		bind_text(st, 6, c->label);
		r = step_reset(db, path, st, err, errlen);
	}
	sqlite3_finalize(st);
	return r;
}

static int cmp_smap(const void *a, const void *b)
{
	const struct smap *x = a, *y = b;
	return x->s < y->s ? -1 : x->s > y->s;
}

static const struct smap *find(struct sq_events *q, const struct weft_stream *s)
{
	if (s == q->last)
		return &q->m[q->last_i];
	size_t lo = 0, hi = q->ns;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (q->m[mid].s < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= q->ns || q->m[lo].s != s)
		return NULL;
	q->last = s;
	q->last_i = lo;
	return &q->m[lo];
}

static int write_streams(struct sq_events *q, const struct emu *emu, char *err, size_t errlen)
{
	const struct weft_trace *t = q->in->t;
	const struct emu_sys *sys = emu_system(emu);
	q->ns = weft_nstreams(t);
	q->m = calloc(q->ns + 1, sizeof *q->m);
	if (q->m == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < q->ns; i++) {
		q->m[i].s = weft_stream_at(t, i);
		q->m[i].index = i;
		q->m[i].thread = -1;
	}
	qsort(q->m, q->ns, sizeof *q->m, cmp_smap);
	for (size_t i = 0; i < sys->nthreads; i++) {
		struct smap *e = sys->threads[i].stream != NULL ?
			(struct smap *) find(q, sys->threads[i].stream) : NULL;
		if (e != NULL)
			e->thread = (int64_t) i;
	}
	/* by position: in stream.id order */
	struct smap **by = calloc(q->ns + 1, sizeof *by);
	sqlite3_stmt *ins = NULL;
	int r = 0;
	if (by == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < q->ns; i++)
		by[q->m[i].index] = &q->m[i];
	if (sqlite3_prepare_v2(q->db, "INSERT INTO stream VALUES (?, ?, ?, ?, ?, ?, ?, ?)", -1,
			&ins, NULL) != SQLITE_OK)
		r = sq_db_fail(q->db, q->path, "cannot prepare", err, errlen);
	for (size_t i = 0; r == 0 && i < q->ns; i++) {
		const struct weft_stream *s = by[i]->s;
		sqlite3_bind_int64(ins, 1, (sqlite3_int64) i);
		sqlite3_bind_text(ins, 2, s->relpath, -1, SQLITE_STATIC);
		if (by[i]->thread >= 0)
			sqlite3_bind_int64(ins, 3, by[i]->thread);
		else
			sqlite3_bind_null(ins, 3);
		sqlite3_bind_int64(ins, 4, s->clock_offset);
		sqlite3_bind_int64(ins, 5, (sqlite3_int64) s->obs_size);
		sqlite3_bind_int64(ins, 6, s->meta_version);
		sqlite3_bind_int64(ins, 7, s->finished);
		if (s->lib_version != NULL)
			sqlite3_bind_text(ins, 8, s->lib_version, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(ins, 8);
		if (sqlite3_step(ins) != SQLITE_DONE)
			r = sq_db_fail(q->db, q->path, "cannot write the streams", err, errlen);
		sqlite3_reset(ins);
	}
	sqlite3_finalize(ins);
	free(by);
	return r;
}

struct sq_events *sq_events_open(sqlite3 *db, const char *path, const struct emu *emu,
		const struct out_input *in, char *err, size_t errlen)
{
	struct sq_events *q = calloc(1, sizeof *q);
	if (q == NULL || (q->trace_path = strdup(in->path != NULL ? in->path : "")) == NULL) {
		free(q);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	q->db = db;
	q->path = path;
	q->in = in;
	if (sqlite3_exec(db, events_schema, NULL, NULL, NULL) != SQLITE_OK) {
		sq_db_fail(db, path, "cannot write the database", err, errlen);
		goto fail;
	}
	if (write_streams(q, emu, err, errlen) != 0)
		goto fail;
	if (sq_batch_init(&q->eb, db, "event_data (id, time, kind, payload)", 4) !=
			SQLITE_OK || sqlite3_prepare_v3(db, "INSERT INTO mcv_name VALUES (?, ?)", -1,
			SQLITE_PREPARE_PERSISTENT, &q->mins, NULL) != SQLITE_OK) {
		sq_db_fail(db, path, "cannot prepare", err, errlen);
		goto fail;
	}
	char mcv_sql[48];
	snprintf(mcv_sql, sizeof mcv_sql, "(e.kind + %d) / %zu", KIND_BIAS, kinds(q));
	q->pl = sq_payload_open(db, path, in->models, mcv_sql, err, errlen);
	if (q->pl == NULL)
		goto fail;
	return q;
fail:
	sq_events_free(q);
	return NULL;
}

/* The MCV as weft dump prints it into c: its three bytes, escaped when
 * one is not printable ASCII. */
static void mcv_cell(const char mcv[4], struct sq_cell *c)
{
	c->kind = 't';
	if ((unsigned char) mcv[0] - 0x20u < 0x5fu && (unsigned char) mcv[1] - 0x20u < 0x5fu &&
			(unsigned char) mcv[2] - 0x20u < 0x5fu) {
		memcpy(c->text, mcv, 3);
		c->len = 3;
		return;
	}
	char buf[16];
	size_t n = weft_escape(mcv, 3, buf, sizeof buf);
	if (n > sizeof c->text)
		n = sizeof c->text;
	memcpy(c->text, buf, n);
	c->len = (int) n;
}

/* The number of an MCV in mcv_name, written there the first time: 0, or
 * -1 with err. */
static int mcv_id(struct sq_events *q, const char mcv[4], uint32_t *id, char *err, size_t errlen)
{
	uint32_t key = 1u + ((uint32_t) (unsigned char) mcv[0] | (uint32_t) (unsigned char) mcv[1]
			<< 8 | (uint32_t) (unsigned char) mcv[2] << 16);
	if (key == q->last_key) {
		*id = q->last_val;
		return 0;
	}
	if (2 * (q->nm + 1) > q->mcap) {
		/* grow: twice the slots, the MCVs placed again */
		size_t cap = q->mcap ? 2 * q->mcap : 256;
		uint32_t *k = calloc(cap, sizeof *k), *v = calloc(cap, sizeof *v);
		if (k == NULL || v == NULL) {
			free(k);
			free(v);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		for (size_t i = 0; i < q->mcap; i++) {
			if (q->mkey[i] == 0)
				continue;
			size_t h = (q->mkey[i] * 2654435761u) & (cap - 1);
			while (k[h] != 0)
				h = (h + 1) & (cap - 1);
			k[h] = q->mkey[i];
			v[h] = q->mval[i];
		}
		free(q->mkey);
		free(q->mval);
		q->mkey = k;
		q->mval = v;
		q->mcap = cap;
	}
	size_t h = (key * 2654435761u) & (q->mcap - 1);
	while (q->mkey[h] != 0 && q->mkey[h] != key)
		h = (h + 1) & (q->mcap - 1);
	if (q->mkey[h] == 0) {
		struct sq_cell c;
		mcv_cell(mcv, &c);
		sqlite3_bind_int64(q->mins, 1, (sqlite3_int64) q->nm);
		sqlite3_bind_text(q->mins, 2, c.text, c.len, SQLITE_TRANSIENT);
		int r = sqlite3_step(q->mins);
		sqlite3_reset(q->mins);
		if (r != SQLITE_DONE)
			return sq_db_fail(q->db, q->path, "cannot write the events", err, errlen);
		q->mkey[h] = key;
		q->mval[h] = (uint32_t) q->nm++;
	}
	q->last_key = key;
	q->last_val = q->mval[h];
	*id = q->mval[h];
	return 0;
}

/* Inserts every row held. */
int sq_events_flush(struct sq_events *q, char *err, size_t errlen)
{
	if (sq_batch_flush(&q->eb) != SQLITE_OK)
		return sq_db_fail(q->db, q->path, "cannot write the events", err, errlen);
	q->npay = 0;
	return 0;
}

/* A copy of payload p (n bytes) for the row being filled, kept until its
 * rows are inserted: the rows go in SQ_BATCH_ROWS at a time whatever the
 * batches of events (the database's pages are then a function of the
 * events in order, not of where the run's batches are cut); cell c gets
 * it. 0, or -1 when out of memory. */
static int keep_payload(struct sq_events *q, struct sq_cell *c, const void *p, size_t n)
{
	if (q->eb.n == 0)
		q->npay = 0; /* the rows before were inserted */
	if (q->npay + n > q->paycap) {
		size_t cap = q->paycap ? q->paycap : 4096;
		while (cap < q->npay + n)
			cap *= 2;
		uint8_t *b = realloc(q->pay, cap);
		if (b == NULL)
			return -1;
		q->pay = b;
		q->paycap = cap;
		/* the rows held point into it again */
		for (int r = 0; r < q->eb.n; r++) {
			struct sq_cell *h = &q->eb.cells[r * q->eb.ncol + 3];
			if (h->kind == 'b')
				h->p = q->pay + h->i;
		}
	}
	memcpy(q->pay + q->npay, p, n);
	c->kind = 'b';
	c->i = (int64_t) q->npay;
	c->p = q->pay + q->npay;
	c->len = (int) n;
	q->npay += n;
	return 0;
}

int sq_events_add(struct sq_events *q, const struct weft_event *evs, size_t n, char *err,
		size_t errlen)
{
	for (size_t k = 0; k < n; k++) {
		const struct weft_event *e = &evs[k];
		const struct smap *m = find(q, e->stream);
		if (m == NULL) {
			snprintf(err, errlen, "%s: an event of a stream the trace does not list",
					q->path);
			return -1;
		}
		if (q->n == 0)
			q->first = e->sclock;
		q->last_clock = e->sclock;
		uint32_t mid = 0;
		if (mcv_id(q, e->mcv, &mid, err, errlen) != 0)
			return -1;
		struct sq_cell *c = sq_batch_row(&q->eb);
		c[0].kind = 'i';
		c[0].i = (int64_t) q->n;
		c[1].kind = 'i';
		c[1].i = (int64_t) ((uint64_t) e->sclock - (uint64_t) q->first);
		c[2].kind = 'i';
		c[2].i = (int64_t) ((uint64_t) mid * kinds(q) + m->index) - KIND_BIAS;
		c[3].kind = 'n';
		if (e->payload_size > 0 && keep_payload(q, &c[3], e->payload,
				e->payload_size) != 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		if (sq_batch_commit_row(&q->eb) != SQLITE_OK)
			return sq_db_fail(q->db, q->path, "cannot write the events", err, errlen);
		if (e->payload_size > 0 && sq_payload_add(q->pl, q->n, mid, e, err, errlen) != 0)
			return -1;
		q->n++;
	}
	return 0;
}

/* clock - rclock of a drifted stream s as SQL (docs/sql.md), with C the
 * event's clock: with S = C - offset - t0 and k = 10^9 + drift_ppb, the
 * rclock is t0 + d for the least d with floor(d * k / 10^9) = S, that is
 * ceil(S * 10^9 / k), computed in 64 bits as q * 10^9 + ceil(m * 10^9 / k)
 * (S = q * k + m, 0 <= m < k). */
static int drift_expr(char *x, size_t cap, const struct weft_stream *s, long long first)
{
	long long off = (long long) s->clock_offset, t0 = (long long) s->drift_t0;
	long long k = 1000000000LL + (long long) s->drift_ppb;
	char S[128], m[256];
	snprintf(S, sizeof S, "(e.time + %lld - %lld - %lld)", first, off, t0);
	snprintf(m, sizeof m, "((%s %% %lld + %lld) %% %lld)", S, k, k, k);
	return snprintf(x, cap, "(%s + %lld - ((%s - %s) / %lld * 1000000000"
			" + (%s * 1000000000 + %lld) / %lld))",
			S, off, S, m, k, m, k - 1, k);
}

/* clock - rclock as SQL: the stream's clock_offset column, or a CASE on the
 * stream for the drifted ones (only traces with a drift section have any).
 * NULL: out of memory. */
static char *offset_expr(const struct sq_events *q)
{
	size_t ndrift = 0;
	for (size_t i = 0; i < q->ns; i++)
		ndrift += q->m[i].s->drift_ppb != 0;
	size_t cap = 64 + ndrift * 1024;
	char *x = malloc(cap);
	if (x == NULL)
		return NULL;
	if (ndrift == 0) {
		snprintf(x, cap, "s.clock_offset");
		return x;
	}
	size_t len = (size_t) snprintf(x, cap, "CASE (e.kind + %d) %% %zu", KIND_BIAS, kinds(q));
	for (size_t i = 0; i < q->ns; i++) {
		const struct weft_stream *s = q->m[i].s;
		if (s->drift_ppb == 0)
			continue;
		len += (size_t) snprintf(x + len, cap - len, " WHEN %zu THEN ", q->m[i].index);
		len += (size_t) drift_expr(x + len, cap - len, s, (long long) q->first);
	}
	snprintf(x + len, cap - len, " ELSE s.clock_offset END");
	return x;
}

int sq_events_finish(struct sq_events *q, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int r = 0;
	if (sq_events_flush(q, err, errlen) != 0)
		return -1;
	char *off = offset_expr(q);
	size_t cap = off == NULL ? 0 : sizeof event_view + 128 + strlen(off);
	char *view = off == NULL ? NULL : malloc(cap);
	if (view == NULL) {
		free(off);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	snprintf(view, cap, event_view, (long long) q->first, off, (long long) kinds(q));
	free(off);
	int made = sqlite3_exec(q->db, view, NULL, NULL, NULL) == SQLITE_OK;
	free(view);
	if (!made)
		return sq_db_fail(q->db, q->path, "cannot write the database", err, errlen);
	if (sqlite3_prepare_v2(q->db, "INSERT INTO trace VALUES (?, ?, ?, ?)", -1, &st, NULL)
			!= SQLITE_OK)
		return sq_db_fail(q->db, q->path, "cannot prepare", err, errlen);
	sqlite3_bind_text(st, 1, q->trace_path, -1, SQLITE_STATIC);
	if (q->n > 0) {
		sqlite3_bind_int64(st, 2, q->first);
		sqlite3_bind_int64(st, 3, (sqlite3_int64) ((uint64_t) q->last_clock -
				(uint64_t) q->first));
	}
	sqlite3_bind_int64(st, 4, (sqlite3_int64) q->n);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = sq_db_fail(q->db, q->path, "cannot write the database", err, errlen);
	sqlite3_finalize(st);
	return r;
}

void sq_events_free(struct sq_events *q)
{
	if (q == NULL)
		return;
	sq_batch_free(&q->eb);
	free(q->pay);
	sq_payload_free(q->pl);
	sqlite3_finalize(q->mins);
	free(q->mkey);
	free(q->mval);
	free(q->m);
	free(q->trace_path);
	free(q);
}
