/* SPDX-License-Identifier: MIT */
/*
 * sqlite.c - the emulated timelines as a SQLite database: <dir>/<file> (the
 * parameter file, SQLITE_DB_NAME by default: out.c's registry)
 * with the system (loom, process, thread, cpu), the channels and their value
 * labels, the intervals of every view row, and (sqlite_events.c) the
 * streams and every event the run reads (docs/sql.md): every table of
 * `weft sql`'s database.
 *
 * Intervals: each (view, row, Paraver type) holds a value from one record
 * to the next; a value is an interval [start, end) with its label; a null
 * value (0) ends the open interval and starts none; a record repeating the
 * open value changes nothing; an interval of no length (two records at the
 * same time) is not stored; what is open at the end of the run ends at the
 * run's duration. The raw layer (raw_interval): per thread and model
 * channel, the value its model wrote (a stack: its top), from the engine's
 * raw records (raw_iv.h), whether or not the thread ran. Channels are the
 * catalogue's entries (catalogue.h), under its ids and names. An interval
 * is one row for all the layers that hold it (the raw layer, the thread
 * view, the CPU view of the CPU its thread ran on: EMU_REC_RSEL), merged as
 * they are made (add_iv) or by the insert (upsert). Everything is written
 * inside one transaction with prepared statements, with no index (the
 * intervals are stored clustered by their track, WITHOUT ROWID; the events
 * in time order).
 *
 * The file is a function of the events in the order read and of the
 * records in time order, not of where the run's batches are cut (so weft
 * emu -j's merged records, with the events read by the merging thread, give
 * the serial run's bytes): the records are taken in time order, those at a
 * batch's last time held until the next (sq_records); during the run only
 * the events' rows go into the database's file, SQ_BATCH_ROWS at a time
 * whatever the batches of events (sqlite_events.c); the intervals go into
 * a temporary table, whose rows are a set (the upsert), and the tracks,
 * numbered as met, are kept in memory: both are written at the close,
 * after the events. WEFT_SQL_TRACE_TX set: each
 * statement that begins or ends a transaction, and each that writes
 * outside one, is named on stderr (the test of the single transaction,
 * tests/sql/cli.py).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "out.h"
#include "out_file.h"
#include "raw_iv.h"
#include "sqlite_batch.h"
#include "sqlite_events.h"

#define SQLITE_DB_NAME "timeline.db"

/* A change of the tables raises SQL_SCHEMA in src/cli/cmd_sql.c (the
 * databases kept beside traces are then built again). */
static const char schema[] =
	"CREATE TABLE loom (id INTEGER PRIMARY KEY, name TEXT NOT NULL, hostname TEXT,"
	" clock_offset INTEGER NOT NULL, ncpus INTEGER NOT NULL);\n"
	"CREATE TABLE process (id INTEGER PRIMARY KEY, loom INTEGER NOT NULL REFERENCES loom,"
	" pid INTEGER NOT NULL, app_id INTEGER, rank INTEGER);\n"
	"CREATE TABLE thread (id INTEGER PRIMARY KEY, process INTEGER NOT NULL REFERENCES process,"
	" loom INTEGER NOT NULL REFERENCES loom, tid INTEGER NOT NULL, label TEXT NOT NULL,"
	" stream_path TEXT);\n"
	"CREATE TABLE cpu (id INTEGER PRIMARY KEY, loom INTEGER NOT NULL REFERENCES loom,"
	" idx INTEGER, phyid INTEGER, virtual INTEGER NOT NULL, label TEXT NOT NULL);\n"
	"CREATE TABLE channel (id INTEGER PRIMARY KEY, name TEXT NOT NULL, model TEXT,"
	" type INTEGER NOT NULL, thread_label TEXT, cpu_label TEXT);\n"
	"CREATE TABLE value_label (channel INTEGER NOT NULL REFERENCES channel,"
	" value INTEGER NOT NULL, label TEXT NOT NULL, PRIMARY KEY (channel, value))"
	" WITHOUT ROWID;\n"
	"CREATE TABLE view_name (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);\n"
	"INSERT INTO view_name VALUES (0, 'thread'), (1, 'cpu');\n"
	/* the intervals as stored: one row per (track, start, dur, value,
	 * flags) (most intervals are the same in the raw layer, the thread
	 * view and the CPU view of the CPU the thread ran on: one row), a
	 * track being a thread's channel, or a CPU's for the CPU view's
	 * intervals that start while no single thread runs on it (numbered as
	 * met: small numbers): flags bit 0 set: not in the raw layer, bit 1:
	 * not in the thread view; flags >> 2: 1 + the CPU view row that shows
	 * it (0: none); the duration (1 at least) and the flags in one
	 * column, dur_flags = (dur - 1) * F + flags, F = 4 * (the CPUs + 1)
	 * (one column less a row).
	 * The duration rather than the end; the view rows and labels found by
	 * the views (views_sql: one join, no compound: SQLite flattens them
	 * into a query). */
	"CREATE TABLE track (id INTEGER PRIMARY KEY, thread INTEGER REFERENCES thread,"
	" cpu INTEGER REFERENCES cpu, channel INTEGER NOT NULL REFERENCES channel);\n"
	"CREATE TABLE interval_data (track INTEGER NOT NULL REFERENCES track,"
	" start INTEGER NOT NULL, dur_flags INTEGER NOT NULL, value INTEGER NOT NULL,"
	" PRIMARY KEY (track, start, dur_flags, value)) WITHOUT ROWID;\n";

/* The views of the intervals, F (%1$lld) the factor of the duration in
 * dur_flags. */
static const char views_sql[] =
	"CREATE VIEW interval AS SELECT v.name AS view, CASE v.id WHEN 0 THEN t.thread"
	" ELSE (i.dur_flags %% %1$lld >> 2) - 1 END AS row, t.channel AS channel,"
	" i.start AS start, i.start + i.dur_flags / %1$lld + 1 AS end,"
	" i.value AS value, l.label AS label, i.dur_flags / %1$lld + 1 AS dur"
	" FROM interval_data i JOIN track t ON t.id = i.track"
	" JOIN view_name v ON CASE v.id WHEN 0 THEN i.dur_flags %% %1$lld & 2 = 0"
	" ELSE i.dur_flags %% %1$lld >= 4 END"
	" LEFT JOIN value_label l ON l.channel = t.channel AND l.value = i.value;\n"
	"CREATE VIEW raw_interval AS SELECT t.thread AS thread,"
	" t.channel AS channel, i.start AS start, i.start + i.dur_flags / %1$lld + 1 AS end,"
	" i.value AS value, l.label AS label, i.dur_flags / %1$lld + 1 AS dur"
	" FROM interval_data i"
	" JOIN track t ON t.id = i.track"
	" LEFT JOIN value_label l ON l.channel = t.channel AND l.value = i.value"
	" WHERE i.dur_flags %% %1$lld & 1 = 0;\n";

/* The intervals are inserted into a temporary table of the same layout
 * (SQLite's temporary file, deleted when closed: bounded memory), in the
 * order they are made (the tracks interleaved: its pages half full in
 * places), then copied into interval_data at the end in one statement,
 * which SQLite does page by page in key order, the pages full (its
 * transfer of a table into an empty one of the same layout). */
static const char stage[] =
	"CREATE TEMP TABLE interval_stage (track INTEGER NOT NULL,"
	" start INTEGER NOT NULL, dur_flags INTEGER NOT NULL, value INTEGER NOT NULL,"
	" PRIMARY KEY (track, start, dur_flags, value)) WITHOUT ROWID;\n";

/* A layer's row of interval_data: its absent bits (flags & 3). */
#define ABSENT_RAW 2    /* in the raw layer only */
#define ABSENT_SHOWN 1  /* in the thread view only */
#define ABSENT_CPU 3    /* in a CPU view only */

/* A row written twice (the same layers) is one. The layers of an
 * interval merged before it is written (add_iv) are one row; one not
 * merged there (its layers too far apart) is a row per layer. */
static const char upsert[] = "ON CONFLICT DO NOTHING";

/* The last intervals of a thread's channel not yet written, each until the
 * other layers that may hold it have given theirs (most come within one
 * interval of each other): merged here, one insert a row; one pushed out
 * (RING_K held) or left at the end is written alone, and merged by the
 * upsert if its other layers come later. */
#define RING_K 4

struct held {
	int64_t start, dur, value;
	int32_t cpu;   /* -1: none */
	int32_t absent;
};

struct ring {
	struct held h[RING_K];
	size_t n;
};

/* A CPU's running threads (EMU_REC_RSEL), in time order: from time[k] on,
 * thread thr[k] (-1: none or several). 12 bytes a change of the running
 * thread, kept for the run (a CPU interval is written after its end). */
struct rsel_hist {
	int64_t *time;
	int32_t *thr;
	size_t n, cap;
};

struct label {
	int64_t value;
	const char *label;
};

struct chan {
	struct label *labels; /* sorted by value */
	size_t nlabels;
	int dyn;              /* labels known at the end: filled then */
	const struct emu_chan_info *info; /* a model's channel, else NULL */
	const struct emu_cat_entry *entry; /* its catalogue entry: id = channel.id */
};

/* Per (row, channel): the open interval, and the last one ended (not yet
 * stored: the same value set again at its end continues it). */
struct open_iv {
	int64_t start, value; /* value 0: none open */
	int64_t pstart, pend, pvalue; /* pvalue 0: none pending */
};

/* The records not yet taken (sq_records), each kind in its order: the
 * thread view's, the CPU view's, and the raw channels' writes. */
struct pend_prv {
	struct emu_prv_rec *r;
	size_t n, cap;
};

struct pend_raw {
	struct emu_rec *r;
	size_t n, cap;
};

/* A track (track table), written at the close in its number's order. */
struct track_row {
	int64_t thread, cpu; /* -1: NULL */
	int64_t channel;     /* catalogue id */
};

struct sq {
	struct out base;
	const struct emu *emu;
	sqlite3 *db;
	struct sq_batch ib;    /* interval_data rows (an upsert) */
	struct rsel_hist *hist; /* per CPU */
	struct ring *ring;      /* per thread row * nchans + channel */
	uint32_t *track;        /* the same: 1 + its track.id, 0: none yet; then
	                           per CPU row * nchans + channel, a CPU's */
	uint32_t ntracks;
	struct track_row *trows; /* the tracks met, by number (written at the close) */
	size_t trcap;
	sqlite3_stmt *tins;     /* INSERT INTO track */
	struct pend_prv pprv[2]; /* the records held (sq_records) */
	struct pend_raw praw;
	uint8_t *layers;        /* per channel: the layers that may hold its intervals:
	                           the absent bits they clear (1 raw, 2 thread view),
	                           4: a CPU view */
	char *path;           /* the final name, for messages */
	struct out_file file; /* its temporary (out_file.h) */
	size_t nviews;
	size_t nrows[2];
	uint32_t *map[2];    /* per view: catalogue id -> channel, UINT32_MAX: none */
	size_t nmap;         /* ids in map (the catalogue's) */
	struct chan *chans;
	size_t nchans;
	struct open_iv *cur[2]; /* per view: row * nchans + channel */
	struct raw_ivs raw;     /* the raw layer (raw_iv.h) */
	struct out_input in;    /* the run's input (out.h), once given */
	const char *phase;      /* the long step running, for in.phase */
	struct sq_events *ev;   /* the stream, event and trace tables */
	int failed;
	int64_t flag_factor;    /* F of dur_flags */
	int64_t beyond;         /* an interval's duration past what dur_flags holds */
	int beyond_set;
	int timing;
	double t_open;
};

static int sq_fail(struct sq *s, const char *what, char *err, size_t errlen)
{
	s->failed = 1;
	if (s->beyond_set) {
		snprintf(err, errlen, "%s: an interval lasts %" PRId64 " ns: the database's "
				"layout holds durations up to %" PRId64 " ns with %zu CPUs "
				"(docs/sql.md, Schema)", s->path, s->beyond,
				INT64_MAX / s->flag_factor, s->nrows[EMU_FILE_CPU]);
		return -1;
	}
	return sq_db_fail(s->db, s->path, what, err, errlen);
}

static int cmp_label(const void *a, const void *b)
{
	const struct label *x = a, *y = b;
	return x->value < y->value ? -1 : x->value > y->value;
}

static int64_t chan_of(const struct sq *s, size_t view, const struct emu_prv_rec *r)
{
	const struct emu_cat_entry *e = emu_cat_of_prv(s->emu, view, r);
	if (e == NULL || e->id >= s->nmap || s->map[view][e->id] == UINT32_MAX)
		return -1;
	return s->map[view][e->id];
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* WEFT_SQL_TIMING set: the time of each step on stderr (weft sql). */
static void timing(const struct sq *s, const char *what, double *t0)
{
	double t = now_s();
	if (s->timing)
		fprintf(stderr, "weft sql: sqlite output: %s: %.2f s\n", what, t - *t0);
	*t0 = t;
}

static void sq_free(struct sq *s)
{
	sq_batch_free(&s->ib);
	raw_ivs_free(&s->raw);
	for (size_t c = 0; s->hist != NULL && c < s->nrows[EMU_FILE_CPU]; c++) {
		free(s->hist[c].time);
		free(s->hist[c].thr);
	}
	free(s->hist);
	free(s->ring);
	free(s->track);
	free(s->trows);
	for (size_t v = 0; v < 2; v++)
		free(s->pprv[v].r);
	free(s->praw.r);
	sqlite3_finalize(s->tins);
	free(s->layers);
	sq_events_free(s->ev);
	if (s->db != NULL)
		sqlite3_close(s->db);
	for (size_t i = 0; i < s->nchans; i++)
		free(s->chans[i].labels);
	free(s->chans);
	for (size_t v = 0; v < 2; v++) {
		free(s->map[v]);
		free(s->cur[v]);
	}
	out_file_discard(&s->file);
	free(s->path);
	free(s);
}

static int exec(struct sq *s, const char *sql, char *err, size_t errlen)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return sq_fail(s, "cannot write the database", err, errlen);
	return 0;
}

static int step_reset(struct sq *s, sqlite3_stmt *st, char *err, size_t errlen)
{
	int r = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (r != SQLITE_DONE)
		return sq_fail(s, "cannot write the database", err, errlen);
	return 0;
}

static int bind_text(sqlite3_stmt *st, int i, const char *t)
{
	return t == NULL ? sqlite3_bind_null(st, i) : sqlite3_bind_text(st, i, t, -1, SQLITE_STATIC);
}

static int add_label(struct chan *c, size_t *cap, int64_t v, const char *label)
{
	if (c->nlabels == *cap) {
		size_t n = *cap ? 2 * *cap : 8;
		struct label *l = realloc(c->labels, n * sizeof *l);
		if (l == NULL)
			return -1;
		c->labels = l;
		*cap = n;
	}
	c->labels[c->nlabels].value = v;
	c->labels[c->nlabels++].label = label;
	return 0;
}

/* The channels: the catalogue's entries of the thread or CPU view that
 * have a Paraver type, under their catalogue ids and names. */
static int build_chans(struct sq *s, char *err, size_t errlen)
{
	size_t n = emu_cat_count(s->emu);
	s->chans = calloc(n + 1, sizeof *s->chans);
	for (size_t v = 0; v < 2; v++)
		s->map[v] = malloc((n + 1) * sizeof *s->map[v]);
	if (s->chans == NULL || s->map[0] == NULL || s->map[1] == NULL)
		goto oom;
	s->nmap = n;
	for (size_t v = 0; v < 2; v++)
		for (size_t i = 0; i < n; i++)
			s->map[v][i] = UINT32_MAX;
	for (size_t i = 0; i < n; i++) {
		const struct emu_cat_entry *e = emu_cat_at(s->emu, i);
		if (e->prv_type == 0 || !(e->scope & (EMU_SCOPE_THREAD | EMU_SCOPE_CPU)))
			continue;
		struct chan *c = &s->chans[s->nchans];
		size_t cap = 0;
		c->entry = e;
		c->info = e->info;
		c->dyn = e->info != NULL && e->info->dyn_values;
		for (size_t k = 0; k < e->nvalues; k++) {
			int64_t v = e->values != NULL ? e->values[k].value : e->mvalues[k].value;
			const char *l = e->values != NULL ? e->values[k].label : e->mvalues[k].label;
			if (add_label(c, &cap, v, l) != 0)
				goto oom;
		}
		for (size_t v = 0; v < 2; v++) {
			/* the view's records of this entry */
			if (e->scope & EMU_SCOPE_VIEW(v))
				s->map[v][e->id] = (uint32_t) s->nchans;
		}
		s->nchans++;
	}
	for (size_t i = 0; i < s->nchans; i++)
		if (s->chans[i].nlabels > 1)
			qsort(s->chans[i].labels, s->chans[i].nlabels, sizeof *s->chans[i].labels,
					cmp_label);
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
	return -1;
}

static int write_chans(struct sq *s, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int r = 0;
	if (sqlite3_prepare_v2(s->db, "INSERT INTO channel VALUES (?, ?, ?, ?, ?, ?)", -1, &st,
			NULL) != SQLITE_OK)
		return sq_fail(s, "cannot prepare", err, errlen);
	for (size_t i = 0; i < s->nchans && r == 0; i++) {
		const struct chan *c = &s->chans[i];
		const struct emu_cat_entry *e = c->entry;
		sqlite3_bind_int64(st, 1, (sqlite3_int64) e->id);
		bind_text(st, 2, e->name);
		bind_text(st, 3, e->model);
		sqlite3_bind_int64(st, 4, e->prv_type);
		bind_text(st, 5, e->scope & EMU_SCOPE_THREAD ? e->thread_label : NULL);
		bind_text(st, 6, e->scope & EMU_SCOPE_CPU ? e->cpu_label : NULL);
		r = step_reset(s, st, err, errlen);
	}
	sqlite3_finalize(st);
	return r;
}

/* The thread running on CPU cpu at time t (-1: none, or several). */
static int64_t running(const struct sq *s, size_t cpu, int64_t t)
{
	const struct rsel_hist *h = &s->hist[cpu];
	size_t lo = 0, hi = h->n; /* the first entry after t */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (h->time[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? h->thr[lo - 1] : -1;
}

static int rsel_add(struct sq *s, const struct emu_rec *x)
{
	if (x->row >= s->nrows[EMU_FILE_CPU])
		return 0;
	struct rsel_hist *h = &s->hist[x->row];
	if (h->n == h->cap) {
		size_t n = h->cap ? 2 * h->cap : 64;
		int64_t *t = realloc(h->time, n * sizeof *t);
		if (t == NULL)
			return -1;
		h->time = t;
		int32_t *r = realloc(h->thr, n * sizeof *r);
		if (r == NULL)
			return -1;
		h->thr = r;
		h->cap = n;
	}
	h->time[h->n] = x->time;
	h->thr[h->n++] = x->value >= 0 && x->value < (int64_t) s->nrows[EMU_FILE_THREAD] ?
		(int32_t) x->value : -1;
	return 0;
}

/* An interval_data row of the track of thread `row` (view EMU_FILE_THREAD)
 * or CPU `row` (EMU_FILE_CPU), channel ci (the track made the first time):
 * start, dur, value, the layers' absent bits, the CPU view row (-1: none). */
static int put_row(struct sq *s, size_t view, size_t row, size_t ci, int64_t start,
		int64_t dur, int64_t value, int64_t absent, int64_t cpu)
{
	size_t k = (view == EMU_FILE_THREAD ? row : s->nrows[EMU_FILE_THREAD] + row) * s->nchans +
		ci;
	uint32_t *tr = &s->track[k];
	if (*tr == 0) {
		/* numbered now, written at the close (write_tracks): the
		 * database's pages during the run are the events' only */
		if (s->ntracks == UINT32_MAX - 1)
			return SQLITE_FULL;
		if (s->ntracks == s->trcap) {
			size_t n = s->trcap ? 2 * s->trcap : 64;
			struct track_row *t = realloc(s->trows, n * sizeof *t);
			if (t == NULL)
				return SQLITE_NOMEM;
			s->trows = t;
			s->trcap = n;
		}
		struct track_row *t = &s->trows[s->ntracks];
		t->thread = view == EMU_FILE_THREAD ? (int64_t) row : -1;
		t->cpu = view == EMU_FILE_THREAD ? -1 : (int64_t) row;
		t->channel = (int64_t) s->chans[ci].entry->id;
		*tr = ++s->ntracks;
	}
	if (dur < 1 || dur > INT64_MAX / s->flag_factor) {
		s->beyond = dur;
		s->beyond_set = 1;
		return SQLITE_RANGE;
	}
	int64_t v[4] = { *tr - 1, start, (dur - 1) * s->flag_factor + (absent | (cpu + 1) << 2),
		value };
	return sq_batch_add(&s->ib, v);
}

/* Whether no other layer may hold h (channel ci): then it is written. */
static int complete(const struct sq *s, size_t ci, const struct held *h)
{
	return (h->absent & s->layers[ci] & 3) == 0 && (h->cpu >= 0 || !(s->layers[ci] & 4));
}

static int put_held(struct sq *s, size_t thread, size_t ci, const struct held *h)
{
	return put_row(s, EMU_FILE_THREAD, thread, ci, h->start, h->dur, h->value, h->absent,
			h->cpu);
}

/* A layer's interval of thread `thread`, channel ci: merged with the same
 * interval of another layer held, else held (or written). */
static int add_iv(struct sq *s, size_t thread, size_t ci, int64_t start, int64_t end,
		int64_t value, int32_t absent, int32_t cpu)
{
	struct ring *g = &s->ring[thread * s->nchans + ci];
	struct held x = { start, (int64_t) ((uint64_t) end - (uint64_t) start), value, cpu,
		absent };
	for (size_t i = 0; i < g->n; i++) {
		struct held *h = &g->h[i];
		if (h->start != x.start || h->dur != x.dur || h->value != x.value ||
				(h->cpu >= 0 && x.cpu >= 0 && h->cpu != x.cpu))
			continue;
		h->absent &= x.absent;
		if (x.cpu >= 0)
			h->cpu = x.cpu;
		if (!complete(s, ci, h))
			return SQLITE_OK;
		int r = put_held(s, thread, ci, h);
		memmove(h, h + 1, (g->n - i - 1) * sizeof *h);
		g->n--;
		return r;
	}
	if (complete(s, ci, &x))
		return put_held(s, thread, ci, &x);
	if (g->n == RING_K) {
		int r = put_held(s, thread, ci, &g->h[0]);
		if (r != SQLITE_OK)
			return r;
		memmove(&g->h[0], &g->h[1], (RING_K - 1) * sizeof g->h[0]);
		g->n--;
	}
	g->h[g->n++] = x;
	return SQLITE_OK;
}

/* Writes every interval held. */
static int flush_held(struct sq *s)
{
	int r = SQLITE_OK;
	for (size_t t = 0; t < s->nrows[EMU_FILE_THREAD] && r == SQLITE_OK; t++)
		for (size_t ci = 0; ci < s->nchans && r == SQLITE_OK; ci++) {
			struct ring *g = &s->ring[t * s->nchans + ci];
			for (size_t i = 0; i < g->n && r == SQLITE_OK; i++)
				r = put_held(s, t, ci, &g->h[i]);
			g->n = 0;
		}
	return r;
}

static int put_interval(struct sq *s, size_t view, uint32_t row, size_t chan, int64_t start,
		int64_t end, int64_t value, char *err, size_t errlen)
{
	if (end <= start)
		return 0;
	int r;
	if (view == EMU_FILE_THREAD) {
		r = add_iv(s, row, chan, start, end, value, ABSENT_SHOWN, -1);
	} else {
		int64_t t = running(s, row, start);
		if (t >= 0) {
			r = add_iv(s, (size_t) t, chan, start, end, value, ABSENT_CPU, (int32_t) row);
		} else {
			/* no other layer: the CPU's own track */
			r = put_row(s, EMU_FILE_CPU, row, chan, start, (int64_t) ((uint64_t) end -
					(uint64_t) start), value, ABSENT_CPU, row);
		}
	}
	if (r == SQLITE_NOMEM) {
		s->failed = 1;
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (r != SQLITE_OK)
		return sq_fail(s, "cannot write the intervals", err, errlen);
	return 0;
}

/* A raw interval (raw_iv_put). */
static int raw_put(void *ctx, uint32_t row, size_t id, int64_t start, int64_t end, int64_t value)
{
	struct sq *s = ctx;
	uint32_t ci = id < s->nmap ? s->map[EMU_FILE_THREAD][id] : UINT32_MAX;
	if (ci == UINT32_MAX || row >= s->nrows[EMU_FILE_THREAD])
		return -1; /* the raw layer's channels are thread view ones */
	return add_iv(s, row, ci, start, end, value, ABSENT_RAW, -1) == SQLITE_OK ? 0 : -1;
}

/* A record of view v: ends the open interval of its row and channel, or
 * starts one (intervals stored when complete). */
static int prv_rec(struct sq *s, size_t v, const struct emu_prv_rec *r, char *err, size_t errlen)
{
	int64_t c = chan_of(s, v, r);
	if (c < 0 || r->row >= s->nrows[v])
		return 0; /* a record of no channel: not stored */
	struct open_iv *o = &s->cur[v][(size_t) r->row * s->nchans + (size_t) c];
	if (o->value == r->value)
		return 0;
	if (o->value != 0 && o->start < r->time) {
		/* ends now; stored once something else follows (one that
		 * started now has no length: dropped) */
		if (o->pvalue != 0 && put_interval(s, v, r->row, (size_t) c, o->pstart, o->pend,
				o->pvalue, err, errlen) != 0)
			return -1;
		o->pstart = o->start;
		o->pend = r->time;
		o->pvalue = o->value;
	}
	o->value = r->value;
	o->start = r->time;
	if (r->value == 0)
		return 0;
	if (o->pvalue == r->value && o->pend == r->time) {
		/* the same value again where it ended: one interval */
		o->start = o->pstart;
		o->pvalue = 0;
	} else if (o->pvalue != 0 && o->pend < r->time) {
		if (put_interval(s, v, r->row, (size_t) c, o->pstart, o->pend, o->pvalue, err,
				errlen) != 0)
			return -1;
		o->pvalue = 0;
	}
	return 0;
}

/* Room for k more records of size esz after the n of array v (cap: its
 * room): the array (moved or not), or NULL when out of memory (v kept). */
static void *pend_room(void *v, size_t n, size_t *cap, size_t esz, size_t k)
{
	if (n + k <= *cap)
		return v;
	size_t c = *cap ? *cap : 256;
	while (c < n + k)
		c *= 2;
	void *p = realloc(v, c * esz);
	if (p != NULL)
		*cap = c;
	return p;
}

/* Takes the records held in time order, the thread view's first at one
 * time, then the CPU view's, then the raw ones (each kind in its order),
 * up to those at time `hold` and after (all: every one). An interval's
 * layers then come within a few intervals of each other, and are merged
 * before they are written (add_iv). */
static int take(struct sq *s, int64_t hold, int all, char *err, size_t errlen)
{
	struct pend_prv *p0 = &s->pprv[0], *p1 = &s->pprv[1];
	struct pend_raw *px = &s->praw;
	size_t i0 = 0, i1 = 0, i2 = 0;
	int r = 0;
	for (;;) {
		int64_t t0 = i0 < p0->n ? p0->r[i0].time : INT64_MAX;
		int64_t t1 = i1 < p1->n ? p1->r[i1].time : INT64_MAX;
		int64_t t2 = i2 < px->n ? px->r[i2].time : INT64_MAX;
		int k;
		int64_t t;
		if (i0 < p0->n && t0 <= t1 && t0 <= t2)
			k = 0, t = t0;
		else if (i1 < p1->n && t1 <= t2)
			k = 1, t = t1;
		else if (i2 < px->n)
			k = 2, t = t2;
		else
			break;
		if (!all && t >= hold)
			break;
		if (k == 0) {
			r = prv_rec(s, 0, &p0->r[i0++], err, errlen);
		} else if (k == 1) {
			r = prv_rec(s, 1, &p1->r[i1++], err, errlen);
		} else if (raw_ivs_rec(&s->raw, &px->r[i2++], raw_put, s) != 0) {
			r = sq_fail(s, "cannot write the raw intervals", err, errlen);
		}
		if (r != 0)
			break;
	}
	/* the rest is kept, from the start of the arrays */
	if (i0 > 0) {
		memmove(p0->r, p0->r + i0, (p0->n - i0) * sizeof *p0->r);
		p0->n -= i0;
	}
	if (i1 > 0) {
		memmove(p1->r, p1->r + i1, (p1->n - i1) * sizeof *p1->r);
		p1->n -= i1;
	}
	if (i2 > 0) {
		memmove(px->r, px->r + i2, (px->n - i2) * sizeof *px->r);
		px->n -= i2;
	}
	return r;
}

/* A batch of records. The intervals are made from the records in time
 * order, whatever the batches (the serial run's, cut after an event, or
 * weft emu -j's merged ones, cut by time): the records at the batch's last
 * time are held until the next batch (one to come may share that time),
 * those before it are taken. */
static int sq_records(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct sq *s = self;
	if (s->failed) {
		snprintf(err, errlen, "%s: the database was not completed", s->path);
		return -1;
	}
	/* the records kept after those held; the running threads go into
	 * each CPU's history at once: a CPU interval's thread is the one
	 * running at its start, which is before the record that ends it */
	int64_t hold = INT64_MIN;
	for (size_t v = 0; v < 2; v++) {
		struct pend_prv *p = &s->pprv[v];
		if (b->nprv[v] == 0)
			continue;
		struct emu_prv_rec *r = pend_room(p->r, p->n, &p->cap, sizeof *p->r, b->nprv[v]);
		if (r == NULL)
			goto oom;
		p->r = r;
		memcpy(p->r + p->n, b->prv[v], b->nprv[v] * sizeof *p->r);
		p->n += b->nprv[v];
		int64_t t = b->prv[v][b->nprv[v] - 1].time;
		hold = t > hold ? t : hold;
	}
	for (size_t i = 0; i < b->ninternal; i++) {
		const struct emu_rec *x = &b->internal[i];
		if (x->kind == EMU_REC_RSEL) {
			if (rsel_add(s, x) != 0)
				goto oom;
		} else if (x->kind == EMU_REC_RAW_SET || x->kind == EMU_REC_RAW_PUSH ||
				x->kind == EMU_REC_RAW_POP) {
			struct pend_raw *p = &s->praw;
			struct emu_rec *r = pend_room(p->r, p->n, &p->cap, sizeof *p->r, 1);
			if (r == NULL)
				goto oom;
			p->r = r;
			p->r[p->n++] = *x;
		}
		hold = x->time > hold ? x->time : hold;
	}
	return take(s, hold, 0, err, errlen);
oom:
	s->failed = 1;
	snprintf(err, errlen, "out of memory");
	return -1;
}

/* SQLite's progress handler: a long statement (an index) stops when the run
 * is asked to, and keeps the caller's line of its phase going. */
static int sq_busy(void *ctx)
{
	struct sq *s = ctx;
	if (s->phase != NULL && s->in.phase != NULL)
		s->in.phase(s->in.ctx, s->phase);
	return s->in.stop != NULL && *s->in.stop != 0;
}

static void sq_phase(struct sq *s, const char *what)
{
	s->phase = what;
	if (what != NULL && s->in.phase != NULL)
		s->in.phase(s->in.ctx, what);
}

static int sq_input(struct out *o, const struct out_input *in, char *err, size_t errlen)
{
	struct sq *s = (struct sq *) o;
	s->in = *in;
	sqlite3_progress_handler(s->db, 10000, sq_busy, s);
	s->ev = sq_events_open(s->db, s->path, s->emu, &s->in, err, errlen);
	if (s->ev == NULL) {
		s->failed = 1;
		return -1;
	}
	return 0;
}

static int sq_events(struct out *o, const struct weft_event *evs, size_t n, char *err,
		size_t errlen)
{
	struct sq *s = (struct sq *) o;
	if (s->failed) {
		snprintf(err, errlen, "%s: the database was not completed", s->path);
		return -1;
	}
	if (s->ev != NULL && sq_events_add(s->ev, evs, n, err, errlen) != 0) {
		s->failed = 1;
		return -1;
	}
	return 0;
}

/* The tracks, in the order of their numbers (as met). */
static int write_tracks(struct sq *s, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < s->ntracks; i++) {
		const struct track_row *t = &s->trows[i];
		sqlite3_bind_int64(s->tins, 1, (sqlite3_int64) i);
		if (t->thread >= 0)
			sqlite3_bind_int64(s->tins, 2, t->thread);
		else
			sqlite3_bind_null(s->tins, 2);
		if (t->cpu >= 0)
			sqlite3_bind_int64(s->tins, 3, t->cpu);
		else
			sqlite3_bind_null(s->tins, 3);
		sqlite3_bind_int64(s->tins, 4, t->channel);
		if (step_reset(s, s->tins, err, errlen) != 0)
			return -1;
	}
	return 0;
}

static int sq_close(struct out *o, int64_t duration, char *err, size_t errlen)
{
	struct sq *s = (struct sq *) o;
	int r = s->failed ? -1 : 0;
	if (r != 0)
		snprintf(err, errlen, "%s: the database was not completed", s->path);
	timing(s, "emulation and intervals", &s->t_open);
	double t0 = now_s();
	sq_phase(s, "committing the database");
	/* the events' last rows, then the records held */
	if (r == 0 && s->ev != NULL && sq_events_flush(s->ev, err, errlen) != 0)
		r = -1;
	if (r == 0)
		r = take(s, 0, 1, err, errlen);
	/* what is open ends at the end of the run */
	for (size_t v = 0; v < 2 && r == 0; v++)
		for (size_t row = 0; row < s->nrows[v] && r == 0; row++)
			for (size_t c = 0; c < s->nchans && r == 0; c++) {
				struct open_iv *iv = &s->cur[v][row * s->nchans + c];
				if (iv->pvalue != 0)
					r = put_interval(s, v, (uint32_t) row, c, iv->pstart, iv->pend,
							iv->pvalue, err, errlen);
				if (iv->value != 0 && r == 0)
					r = put_interval(s, v, (uint32_t) row, c, iv->start, duration,
							iv->value, err, errlen);
			}
	if (r == 0 && raw_ivs_end(&s->raw, duration, raw_put, s) != 0)
		r = sq_fail(s, "cannot write the raw intervals", err, errlen);
	if (r == 0 && (flush_held(s) != SQLITE_OK || sq_batch_flush(&s->ib) != SQLITE_OK))
		r = sq_fail(s, "cannot write the intervals", err, errlen);
	if (r == 0)
		r = write_tracks(s, err, errlen);
	if (r == 0)
		r = exec(s, "INSERT INTO main.interval_data SELECT * FROM temp.interval_stage", err,
				errlen);
	/* the value labels, those known only at the end (task types) too */
	sqlite3_stmt *st = NULL;
	if (r == 0 && sqlite3_prepare_v2(s->db, "INSERT OR IGNORE INTO value_label "
			"VALUES (?, ?, ?)", -1, &st, NULL) != SQLITE_OK)
		r = sq_fail(s, "cannot prepare", err, errlen);
	for (size_t i = 0; i < s->nchans && r == 0; i++) {
		const struct chan *c = &s->chans[i];
		for (size_t k = 0; k < c->nlabels && r == 0; k++) {
			sqlite3_bind_int64(st, 1, (sqlite3_int64) c->entry->id);
			sqlite3_bind_int64(st, 2, c->labels[k].value);
			bind_text(st, 3, c->labels[k].label);
			r = step_reset(s, st, err, errlen);
		}
		if (c->info != NULL && c->dyn) {
			for (size_t k = 0; k < c->info->ndyn && r == 0; k++) {
				sqlite3_bind_int64(st, 1, (sqlite3_int64) c->entry->id);
				sqlite3_bind_int64(st, 2, c->info->dyn[k].value);
				bind_text(st, 3, c->info->dyn[k].label);
				r = step_reset(s, st, err, errlen);
			}
		}
	}
	if (st != NULL)
		sqlite3_finalize(st);
	if (r == 0 && s->ev != NULL && sq_events_finish(s->ev, err, errlen) != 0)
		r = -1;
	timing(s, "the last intervals, the labels, the trace row and the event view", &t0);
	if (r == 0)
		r = exec(s, "COMMIT", err, errlen);
	timing(s, "commit", &t0);
	sq_phase(s, NULL);
	if (r == 0) {
		sq_events_free(s->ev);
		s->ev = NULL;
		sq_batch_free(&s->ib);
			sqlite3_finalize(s->tins);
		s->tins = NULL;
		if (sqlite3_close(s->db) != SQLITE_OK)
			r = sq_fail(s, "cannot close the database", err, errlen);
		else
			s->db = NULL;
	}
	if (r == 0)
		r = out_file_check(&s->file, err, errlen);
	return r;
}

static int sq_commit(struct out *o, char *err, size_t errlen)
{
	struct sq *s = (struct sq *) o;
	int r = out_file_commit(&s->file, err, errlen);
	sq_free(s);
	return r;
}

static void sq_discard(struct out *o)
{
	sq_free((struct sq *) o);
}

static const struct out_ops sq_ops = {
	.name = "sqlite",
	.internal = 1, /* the raw records: raw_interval */
	.records = sq_records,
	.close = sq_close,
	.commit = sq_commit,
	.discard = sq_discard,
	.input = sq_input,
	.events = sq_events,
};

/* WEFT_SQL_TRACE_TX: the statements that make transactions. */
static int trace_tx(unsigned type, void *ctx, void *p, void *x)
{
	sqlite3 *db = ctx;
	sqlite3_stmt *st = p;
	const char *sql = x;
	if (type != SQLITE_TRACE_STMT || sql == NULL)
		return 0;
	while (*sql == ' ' || *sql == '\n' || *sql == '\t')
		sql++;
	if (sqlite3_strnicmp(sql, "BEGIN", 5) == 0 || sqlite3_strnicmp(sql, "COMMIT", 6) == 0
			|| sqlite3_strnicmp(sql, "END", 3) == 0
			|| sqlite3_strnicmp(sql, "ROLLBACK", 8) == 0)
		fprintf(stderr, "weft sql: transaction: %.8s\n", sql);
	else if (sqlite3_get_autocommit(db) && !sqlite3_stmt_readonly(st)
			&& sqlite3_strnicmp(sql, "PRAGMA", 6) != 0)
		fprintf(stderr, "weft sql: transaction: a write outside one: %.40s\n", sql);
	return 0;
}

struct out *out_sqlite_open(const char *dir, const struct emu *emu, const struct out_params *p,
		char *err, size_t errlen)
{
	struct sq *s = calloc(1, sizeof *s);
	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->base.ops = &sq_ops;
	out_file_init(&s->file);
	s->emu = emu;
	s->timing = getenv("WEFT_SQL_TIMING") != NULL;
	s->t_open = now_s();
	const char *name = out_params_get(p, "file"); /* SQLITE_DB_NAME by default */
	size_t n = strlen(dir) + strlen(name) + 2;
	s->path = malloc(n);
	if (s->path == NULL) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(s->path, n, "%s/%s", dir, name);
	/* SQLite opens the empty temporary made beside the final name (never
	 * through a link); the journal is off, so it makes no other file. */
	if (out_file_open(&s->file, dir, name, err, errlen) != 0) {
		sq_free(s);
		return NULL;
	}
	int e = out_file_close_fd(&s->file);
	if (e != 0) {
		snprintf(err, errlen, "cannot write %s: %s", s->path, strerror(e));
		sq_free(s);
		return NULL;
	}
	if (sqlite3_open_v2(s->file.tmp, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW,
			NULL) != SQLITE_OK) {
		sq_fail(s, "cannot create the database", err, errlen);
		sq_free(s);
		return NULL;
	}
	if (getenv("WEFT_SQL_TRACE_TX") != NULL)
		sqlite3_trace_v2(s->db, SQLITE_TRACE_STMT, trace_tx, s->db);
	/* Written once, renamed or removed if it fails: no journal needed. */
	if (exec(s, "PRAGMA page_size = 16384; PRAGMA journal_mode = OFF; "
			"PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE; "
			"PRAGMA cache_size = -262144; "
			"PRAGMA threads = 2; PRAGMA temp.journal_mode = OFF; "
			"PRAGMA temp.cache_size = -262144; BEGIN", err, errlen) != 0 ||
			exec(s, schema, err, errlen) != 0 || exec(s, stage, err, errlen) != 0 ||
			sq_write_system(s->db, s->path, s->emu, err, errlen) != 0 ||
			build_chans(s, err, errlen) != 0 || write_chans(s, err, errlen) != 0)
		goto fail;
	const struct emu_sys *sys = emu_system(emu);
	s->nrows[EMU_FILE_THREAD] = sys->nthreads;
	s->nrows[EMU_FILE_CPU] = sys->ncpus;
	for (size_t v = 0; v < 2; v++) {
		s->cur[v] = calloc(s->nrows[v] * s->nchans + 1, sizeof *s->cur[v]);
		if (s->cur[v] == NULL) {
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	s->hist = calloc(s->nrows[EMU_FILE_CPU] + 1, sizeof *s->hist);
	s->ring = calloc(s->nrows[EMU_FILE_THREAD] * s->nchans + 1, sizeof *s->ring);
	s->track = calloc((s->nrows[EMU_FILE_THREAD] + s->nrows[EMU_FILE_CPU]) * s->nchans + 1,
			sizeof *s->track);
	s->layers = calloc(s->nchans + 1, 1);
	if (s->hist == NULL || s->ring == NULL || s->track == NULL || s->layers == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	s->flag_factor = 4 * ((int64_t) s->nrows[EMU_FILE_CPU] + 1);
	char views[sizeof views_sql + 256];
	snprintf(views, sizeof views, views_sql, (long long) s->flag_factor);
	if (exec(s, views, err, errlen) != 0)
		goto fail;
	if (sq_batch_init_tail(&s->ib, s->db, "temp.interval_stage (track, start, dur_flags, value)",
			4, upsert) != SQLITE_OK || sqlite3_prepare_v3(s->db, "INSERT INTO track VALUES "
			"(?, ?, ?, ?)", -1, SQLITE_PREPARE_PERSISTENT, &s->tins, NULL) != SQLITE_OK) {
		sq_fail(s, "cannot prepare", err, errlen);
		goto fail;
	}
	if (raw_ivs_init(&s->raw, emu) != 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* the layers that may hold each channel's intervals: the raw layer
	 * (absent bit 0), the thread view (bit 1), a CPU view (4) */
	for (size_t ci = 0; ci < s->nchans; ci++) {
		size_t id = s->chans[ci].entry->id;
		if (id < s->raw.nids && s->raw.ent_of_id[id] != SIZE_MAX)
			s->layers[ci] |= 1;
		if (s->map[EMU_FILE_THREAD][id] == ci)
			s->layers[ci] |= 2;
		if (s->map[EMU_FILE_CPU][id] == ci)
			s->layers[ci] |= 4;
	}
	return &s->base;
fail:
	sq_free(s);
	return NULL;
}

