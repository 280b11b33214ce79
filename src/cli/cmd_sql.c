/* SPDX-License-Identifier: MIT */
/*
 * cmd_sql.c - `weft sql`: a trace as a SQLite database (docs/sql.md).
 *
 *   weft sql TRACE -o FILE      writes the database
 *   weft sql TRACE 'QUERY'      builds it beside the trace (or reuses it), runs QUERY
 *   weft sql FILE.db 'QUERY'    runs QUERY on a database written before
 *
 * The emulation (the driver, with the "sqlite" output: src/out/sqlite.c,
 * sqlite_events.c) writes every table into timeline.db in a fresh
 * directory, in one transaction, as it reads the trace once; the file is
 * then renamed to FILE (or queried and removed).
 */
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cli_common.h"
#include "commands.h"
#include "driver.h"
#include "trace_cache.h"
#include "weft_version.h"

#define CMD "sql"
/* The file the sqlite output writes into its directory (src/out/sqlite.c). */
#define TIMELINE_DB "timeline.db"

static const char usage[] =
	"Usage: weft sql [options] TRACE -o FILE [QUERY]\n"
	"       weft sql [options] TRACE [QUERY]\n"
	"       weft sql [options] FILE [QUERY]\n"
	"\n"
	"Turn the trace at TRACE (a directory) into a SQLite database: its looms,\n"
	"processes, threads, CPUs and streams, every event, and the emulated\n"
	"timelines as intervals per thread and CPU, in the tables loom, process,\n"
	"thread, cpu, stream, event, channel, value_label, interval, raw_interval\n"
	"and trace (docs/sql.md). With -o the database is written to FILE (replaced\n"
	"if it exists and is a regular file; a symbolic link, a directory, a FIFO\n"
	"or a device is refused); it is built beside FILE and renamed to FILE only\n"
	"when it is complete, so a failed or interrupted run leaves FILE as it was.\n"
	"Without -o, the database is kept beside the trace, as TRACE/weft-sql.db\n"
	"(or in $XDG_CACHE_HOME/weft, else ~/.cache/weft, when TRACE may not be\n"
	"written into), and built again only when the trace changed (its streams'\n"
	"paths, sizes and modification times, the options and weft's version are\n"
	"stored in it): a later QUERY on TRACE reuses it (said on stderr when it is\n"
	"a terminal). A FILE (a database) is opened read-only and QUERY run on it.\n"
	"Without a QUERY (and without -o), or with a QUERY that starts with '.' (a\n"
	"dot command: .tables, .schema event), the database is opened read-only in\n"
	"the sqlite3 program (its interactive shell, or the command), which must be\n"
	"installed (Debian: the package sqlite3).\n"
	"The result of each statement is printed as a table: a header, aligned\n"
	"columns (numbers right-aligned), NULL shown as NULL.\n"
	"\n"
	"Options:\n"
	"  -o, --output FILE  write the database to FILE\n"
	"      --rebuild      build the database kept beside the trace again,\n"
	"                     whether or not the trace changed\n"
	"  -a, --all-models   enable every model, whatever ovni.require says (as\n"
	"                     weft emu -a)\n"
	"      --model FILE   add the model FILE describes (repeatable; as weft\n"
	"                     emu --model, docs/models.md): its channels and\n"
	"                     intervals when a stream requires it; a malformed\n"
	"                     file is refused (FILE:LINE: reason, exit status 1)\n"
	"                     before anything is read or written\n"
	"  -j, --jobs N       emulate with N workers (as weft emu -j; default: the\n"
	"                     online CPUs): the database is the same whatever N;\n"
	"                     its writer follows the engine's batches, so the run\n"
	"                     is made serially (docs/emu.md, PARALLEL)\n"
	"      --csv          print results as CSV (RFC 4180: CRLF line ends,\n"
	"                     quoted fields; NULL is an empty field)\n"
	"  -h, --help         show this help\n"
	"\n"
	"The trace must emulate (as `weft emu` would, without -b): a trace error\n"
	"is reported with weft's message and nothing is written.\n"
	"Exit status: 0 success, 1 trace or SQL error (\"weft sql: SQL error: ...\"),\n"
	"2 usage error; SIGINT, SIGTERM or SIGHUP while the database is built stops\n"
	"it (a second one ends weft at once): 128 + the signal's number (130 for\n"
	"SIGINT).\n";

static int usage_error(const char *msg)
{
	fprintf(stderr, "weft sql: %s; run `weft sql --help`\n", msg);
	return CLI_EXIT_USAGE;
}

/* ---- building ---- */

/* The signal that asked the build to stop (0: none; see on_signal). */
static volatile sig_atomic_t stop_sig;

/* The one progress line of the build (cli_common.h): the emulation, the
 * events (in the same pass), then the commit. */
static struct cli_progress build_progress;

static int db_error(sqlite3 *db, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(db));
	return -1;
}

/* The temporary directory and its database, removed also when a signal ends
 * the program meanwhile (Ctrl-C, a closed pipe: `weft sql TRACE Q | head`);
 * unlink and rmdir are async-signal-safe. While the database is built
 * (building), a signal (SIGINT, SIGTERM, SIGHUP, SIGPIPE) only asks the
 * build to stop (stop_sig: read by the driver and by the fill of the
 * events), which then removes its temporaries itself; a second signal ends
 * the program. */
static char armed_dir[4400], armed_db[4500];
static volatile sig_atomic_t armed, building;

static void on_signal(int sig)
{
	if (building && stop_sig == 0) {
		stop_sig = sig;
		return;
	}
	if (armed) {
		unlink(armed_db);
		rmdir(armed_dir);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void arm_tmp(const char *dir, const char *db)
{
	snprintf(armed_dir, sizeof armed_dir, "%s", dir);
	snprintf(armed_db, sizeof armed_db, "%s", db);
	armed = 1;
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	cli_catch_stop(on_signal, sigs, sizeof sigs / sizeof sigs[0]);
}

static void remove_tmp(const char *dir, const char *db)
{
	unlink(db);
	rmdir(dir);
	armed = 0;
}

/* The driver's phase hook: the line of an output's long step (the SQLite
 * output's commit), its label, then kept going. */
static void build_phase(void *ctx, const char *what)
{
	(void) ctx;
	struct cli_progress *p = cli_progress_cur;
	if (p == NULL || what == NULL)
		return;
	if (p->what == NULL || strcmp(p->what, what) != 0)
		cli_progress_phase(p, what);
	else
		cli_progress_at(p, 0, -1.0);
}

/* Builds the database of the trace at path in a new directory tmpdir
 * (a template, filled in) as tmpdir/timeline.db (written into dbpath);
 * out: the -o FILE its messages name instead (NULL: none). */
static int build(const char *path, int all_models, int jobs,
		const struct weft_registry *models, char *tmpdir, char *dbpath, size_t dblen,
		const char *out)
{
	if (mkdtemp(tmpdir) == NULL) {
		fprintf(stderr, "weft sql: cannot create a directory %s: %s\n", tmpdir,
				strerror(errno));
		return -1;
	}
	snprintf(dbpath, dblen, "%s/%s", tmpdir, TIMELINE_DB);
	arm_tmp(tmpdir, dbpath);
	const char *formats[] = { "sqlite", NULL };
	struct weft_emulate_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.path = path;
	o.outdir = tmpdir;
	o.formats = formats;
	o.all_models = all_models;
	o.jobs = cli_jobs_default(jobs);
	o.models = models;
	o.warn = cli_warn;
	o.ctx = (void *) CMD;
	o.progress = cli_progress_emulate;
	o.progress_every = cli_progress_every();
	cli_progress_start(&build_progress, CMD, cli_obs_total_dir(path));
	int timing = getenv("WEFT_SQL_TIMING") != NULL;
	o.phase = build_phase;
	o.stop = &stop_sig;
	char err[WEFT_ERR_MAX];
	double t0 = cli_now();
	building = 1;
	int r = weft_emulate(&o, err, sizeof err);
	building = 0;
	cli_progress_end(&build_progress);
	if (timing)
		fprintf(stderr, "weft sql: the whole build (emulation, intervals, streams, events, "
				"commit): %.2f s\n", cli_now() - t0);
	if (r != 0) {
		if (stop_sig != 0)
			fprintf(stderr, "weft sql: interrupted by %s; nothing written\n",
					stop_sig == SIGINT ? "SIGINT" : stop_sig == SIGTERM ? "SIGTERM" :
					stop_sig == SIGHUP ? "SIGHUP" : "SIGPIPE");
		else if (out != NULL && strncmp(err, dbpath, strlen(dbpath)) == 0) {
			char msg[WEFT_ERR_MAX + 4300];
			snprintf(msg, sizeof msg, "%s%s", out, err + strlen(dbpath));
			cli_message(CMD, "", msg);
		} else
			cli_message(CMD, "", err);
		remove_tmp(tmpdir, dbpath);
		return -1;
	}
	return 0;
}

/* -o FILE: absent, or a regular file to replace (never a link, a directory,
 * a FIFO, a device). 0, or -1 with the message printed. */
static int check_out(const char *out)
{
	struct stat sb;
	if (lstat(out, &sb) != 0) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "weft sql: %s: cannot check the file to replace: %s\n", out,
				strerror(errno));
		return -1;
	}
	if (S_ISREG(sb.st_mode))
		return 0;
	const char *kind = S_ISLNK(sb.st_mode) ? "a symbolic link" : S_ISDIR(sb.st_mode) ?
		"a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISCHR(sb.st_mode) ?
		"a character device" : S_ISBLK(sb.st_mode) ? "a block device" :
		S_ISSOCK(sb.st_mode) ? "a socket" : "not a regular file";
	char msg[4400];
	snprintf(msg, sizeof msg, "%s: is %s: not replaced (weft replaces only regular files)",
			out, kind);
	cli_message(CMD, "", msg);
	return -1;
}

/* ---- the database kept beside the trace ---- */

/* The layout of the database (src/out/sqlite.c, sqlite_events.c): raised
 * with it, so that a database kept from an older weft is built again. */
#define SQL_SCHEMA 8
/* Its name in the trace directory. */
#define CACHE_NAME "weft-sql.db"

/* What the database of path depends on (trace_cache.h): weft's version and
 * the layout's, the program's file, the options that change it (-a, the
 * --model files), and each stream's path, and its files' sizes and
 * modification times. NULL when the trace cannot be opened (the build then
 * says why). */
static char *cache_key(const char *path, int all_models, const struct cli_models *mf)
{
	char head[128];
	snprintf(head, sizeof head, "weft %s, database layout %d", WEFT_VERSION, SQL_SCHEMA);
	return trace_cache_key(path, head, all_models, mf->files, mf->n, NULL);
}

/* The key stored in the database at db (NULL: none, or not a database of
 * weft sql's). */
static char *stored_key(const char *db)
{
	struct stat sb;
	if (lstat(db, &sb) != 0 || !S_ISREG(sb.st_mode))
		return NULL;
	sqlite3 *d = NULL;
	char *key = NULL;
	sqlite3_stmt *st = NULL;
	if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW, NULL) ==
			SQLITE_OK && sqlite3_prepare_v2(d, "SELECT key FROM weft_build", -1, &st,
			NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
			sqlite3_column_text(st, 0) != NULL)
		key = strdup((const char *) sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(d);
	return key;
}

/* Stores key in the database at db (the temporary, before its rename). */
static int store_key(const char *db, const char *key)
{
	sqlite3 *d = NULL;
	sqlite3_stmt *st = NULL;
	int r = -1;
	if (sqlite3_open_v2(db, &d, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL) ==
			SQLITE_OK && sqlite3_exec(d, "PRAGMA journal_mode = OFF; CREATE TABLE "
			"weft_build (key TEXT NOT NULL)", NULL, NULL, NULL) == SQLITE_OK &&
			sqlite3_prepare_v2(d, "INSERT INTO weft_build VALUES (?)", -1, &st, NULL) ==
			SQLITE_OK) {
		sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_DONE)
			r = 0;
	}
	if (r != 0)
		fprintf(stderr, "weft sql: %s: cannot write the database: %s\n", db,
				sqlite3_errmsg(d));
	sqlite3_finalize(st);
	sqlite3_close(d);
	return r;
}

/* ---- the interactive shell: the sqlite3 program ---- */

/* A query that is a dot command of sqlite3 (".tables", ".schema event"). */
static int is_dot(const char *q)
{
	while (*q == ' ' || *q == '\t' || *q == '\n')
		q++;
	return *q == '.';
}

/* The sqlite3 program: the first executable "sqlite3" in $PATH, into buf.
 * 0, or -1 when there is none. */
static int find_sqlite3(char *buf, size_t cap)
{
	const char *p = getenv("PATH");
	if (p == NULL)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (*p != '\0') {
		size_t n = strcspn(p, ":");
		if (n > 0 && snprintf(buf, cap, "%.*s/sqlite3", (int) n, p) < (int) cap) {
			struct stat sb;
			if (stat(buf, &sb) == 0 && S_ISREG(sb.st_mode) && access(buf, X_OK) == 0)
				return 0;
		}
		p += n;
		if (*p == ':')
			p++;
	}
	return -1;
}

/* Runs the sqlite3 program on the database at db (read-only): its
 * interactive shell, or the dot command dot. Returns only on failure (the
 * message printed; db is not read when the program is missing). */
static int run_shell(const char *db, const char *dot, int csv)
{
	char prog[PATH_MAX + 16];
	if (find_sqlite3(prog, sizeof prog) != 0) {
		cli_message(CMD, "", dot != NULL ? "a dot command is run by the sqlite3 program, "
				"which is not installed (not found in PATH): install the package "
				"sqlite3 (Debian, Ubuntu: apt-get install sqlite3)" : "the interactive "
				"shell is the sqlite3 program, which is not installed (not found in "
				"PATH): install the package sqlite3 (Debian, Ubuntu: apt-get install "
				"sqlite3), or give a QUERY");
		return CLI_EXIT_TRACE;
	}
	char *argv[6];
	int k = 0;
	argv[k++] = (char *) "sqlite3";
	argv[k++] = (char *) "-readonly";
	if (csv)
		argv[k++] = (char *) "-csv";
	argv[k++] = (char *) db;
	if (dot != NULL) {
		while (*dot == ' ' || *dot == '\t' || *dot == '\n')
			dot++;
		argv[k++] = (char *) dot;
	}
	argv[k] = NULL;
	fflush(stdout);
	fflush(stderr);
	execv(prog, argv);
	fprintf(stderr, "weft sql: cannot run %s: %s\n", prog, strerror(errno));
	return CLI_EXIT_TRACE;
}

/* ---- querying ---- */

struct cell {
	char *text; /* as printed (NULL: a NULL) */
	int num;
};

static size_t width(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		w += ((unsigned char) *s & 0xc0u) != 0x80u;
	return w;
}

static char *hex_blob(const unsigned char *b, size_t n, int table)
{
	char *s = malloc(2 * n + 4);
	if (s == NULL)
		abort();
	size_t k = 0;
	if (table) {
		s[k++] = 'x';
		s[k++] = '\'';
	}
	for (size_t i = 0; i < n; i++) {
		s[k++] = "0123456789abcdef"[b[i] >> 4];
		s[k++] = "0123456789abcdef"[b[i] & 15];
	}
	if (table)
		s[k++] = '\'';
	s[k] = '\0';
	return s;
}

static char *dup_or_die(const char *s)
{
	char *d = strdup(s);
	if (d == NULL)
		abort();
	return d;
}

static char *cell_text(sqlite3_stmt *st, int i, int csv, int *num)
{
	int ty = sqlite3_column_type(st, i);
	*num = ty == SQLITE_INTEGER || ty == SQLITE_FLOAT;
	if (ty == SQLITE_NULL)
		return NULL;
	if (ty == SQLITE_BLOB)
		return hex_blob(sqlite3_column_blob(st, i), (size_t) sqlite3_column_bytes(st, i),
				!csv);
	const char *t = (const char *) sqlite3_column_text(st, i);
	if (t == NULL)
		t = "";
	if (csv)
		return dup_or_die(t);
	char buf[256], *heap;
	const char *e = cli_escaped(t, buf, sizeof buf, &heap);
	if (heap != NULL)
		return heap;
	return dup_or_die(e);
}

static void csv_field(const char *s)
{
	if (s == NULL)
		return;
	if (strpbrk(s, ",\"\r\n") == NULL) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static void pad(size_t n)
{
	while (n-- > 0)
		putchar(' ');
}

static void print_table(sqlite3_stmt *st, int ncol, struct cell *cells, size_t nrows)
{
	size_t *w = calloc((size_t) ncol, sizeof *w);
	int *right = calloc((size_t) ncol, sizeof *right);
	char **names = calloc((size_t) ncol, sizeof *names);
	if (w == NULL || right == NULL || names == NULL)
		abort();
	for (int c = 0; c < ncol; c++) {
		const char *nm = sqlite3_column_name(st, c);
		char buf[256], *heap;
		const char *e = cli_escaped(nm ? nm : "", buf, sizeof buf, &heap);
		names[c] = heap ? heap : dup_or_die(e);
		w[c] = width(names[c]);
		int any = 0, all = 1;
		for (size_t r = 0; r < nrows; r++) {
			const struct cell *x = &cells[r * (size_t) ncol + (size_t) c];
			size_t cw = x->text ? width(x->text) : 4;
			if (cw > w[c])
				w[c] = cw;
			if (x->text != NULL) {
				any = 1;
				all &= x->num;
			}
		}
		right[c] = any && all;
	}
	for (int c = 0; c < ncol; c++) {
		size_t cw = width(names[c]);
		if (c > 0)
			fputs("  ", stdout);
		if (right[c])
			pad(w[c] - cw);
		fputs(names[c], stdout);
		if (!right[c] && c + 1 < ncol)
			pad(w[c] - cw);
	}
	putchar('\n');
	for (int c = 0; c < ncol; c++) {
		if (c > 0)
			fputs("  ", stdout);
		for (size_t k = 0; k < w[c]; k++)
			putchar('-');
	}
	putchar('\n');
	for (size_t r = 0; r < nrows; r++) {
		for (int c = 0; c < ncol; c++) {
			const struct cell *x = &cells[r * (size_t) ncol + (size_t) c];
			const char *s = x->text ? x->text : "NULL";
			size_t cw = width(s);
			if (c > 0)
				fputs("  ", stdout);
			if (right[c])
				pad(w[c] - cw);
			fputs(s, stdout);
			if (!right[c] && c + 1 < ncol)
				pad(w[c] - cw);
		}
		putchar('\n');
	}
	for (int c = 0; c < ncol; c++)
		free(names[c]);
	free(names);
	free(w);
	free(right);
}

/* Runs every statement of sql; prints the result of each that has columns
 * (a blank line between results). 0, or 1 on an SQL error (reported). */
static int run_query(sqlite3 *db, const char *sql, int csv)
{
	const char *tail = sql;
	int nresults = 0;
	while (tail != NULL && *tail != '\0') {
		sqlite3_stmt *st = NULL;
		const char *next = NULL;
		if (sqlite3_prepare_v2(db, tail, -1, &st, &next) != SQLITE_OK) {
			cli_message(CMD, "SQL error: ", sqlite3_errmsg(db));
			return CLI_EXIT_TRACE;
		}
		tail = next;
		if (st == NULL)
			continue; /* only blanks or a comment */
		int ncol = sqlite3_column_count(st);
		struct cell *cells = NULL;
		size_t nrows = 0, cap = 0;
		int rc;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			if (ncol == 0)
				continue;
			if (nrows == cap) {
				cap = cap ? 2 * cap : 64;
				cells = realloc(cells, cap * (size_t) ncol * sizeof *cells);
				if (cells == NULL)
					abort();
			}
			for (int c = 0; c < ncol; c++) {
				struct cell *x = &cells[nrows * (size_t) ncol + (size_t) c];
				x->text = cell_text(st, c, csv, &x->num);
			}
			nrows++;
		}
		int failed = rc != SQLITE_DONE;
		if (failed) {
			cli_message(CMD, "SQL error: ", sqlite3_errmsg(db));
		} else if (ncol > 0) {
			if (nresults++ > 0)
				fputs(csv ? "\r\n" : "\n", stdout);
			if (csv) {
				for (int c = 0; c < ncol; c++) {
					if (c > 0)
						putchar(',');
					csv_field(sqlite3_column_name(st, c));
				}
				fputs("\r\n", stdout);
				for (size_t r = 0; r < nrows; r++) {
					for (int c = 0; c < ncol; c++) {
						if (c > 0)
							putchar(',');
						csv_field(cells[r * (size_t) ncol + (size_t) c].text);
					}
					fputs("\r\n", stdout);
				}
			} else {
				print_table(st, ncol, cells, nrows);
			}
		}
		for (size_t i = 0; i < nrows * (size_t) ncol; i++)
			free(cells[i].text);
		free(cells);
		sqlite3_finalize(st);
		if (failed)
			return CLI_EXIT_TRACE;
	}
	return CLI_EXIT_OK;
}

static int query_file(const char *dbpath, const char *sql, int csv)
{
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		char msg[WEFT_ERR_MAX + 256];
		db_error(db, dbpath, msg, sizeof msg);
		cli_message(CMD, "", msg);
		sqlite3_close(db);
		return CLI_EXIT_TRACE;
	}
	int r = run_query(db, sql, csv);
	sqlite3_close(db);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "weft sql: cannot write the output: %s\n", strerror(errno));
		r = CLI_EXIT_TRACE;
	}
	return r;
}

/* A regular file is a database: it must start as one. */
static int check_db(const char *path)
{
	static const char magic[16] = "SQLite format 3";
	char head[16];
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "weft sql: %s: cannot open: %s\n", path, strerror(errno));
		return -1;
	}
	size_t n = fread(head, 1, sizeof head, f);
	fclose(f);
	if (n != sizeof head || memcmp(head, magic, sizeof magic) != 0) {
		char msg[4200];
		snprintf(msg, sizeof msg, "%s: not a SQLite database (a trace is a directory)",
				path);
		cli_message(CMD, "", msg);
		return -1;
	}
	return 0;
}

static int cmd_sql(int argc, char **argv, struct cli_models *mf);
struct sql_args {
	int csv, all_models, rebuild, jobs;
	const char *out;
	struct cli_models *mf;
};

static int run_sql(const char *path, const char *query, const struct sql_args *a,
		const struct weft_registry *models);

int weft_cmd_sql(int argc, char **argv)
{
	struct cli_models mf;
	cli_models_init(&mf, argc);
	int r = cmd_sql(argc, argv, &mf);
	free(mf.files);
	return r;
}

/* The options of weft sql (cli_opts.h): add one here and in sql_opt. */
enum { SQL_CSV, SQL_ALL_MODELS, SQL_OUTPUT, SQL_MODEL, SQL_REBUILD, SQL_JOBS };

static const struct cli_opt sql_opts[] = {
	{ "csv", 0, NULL, SQL_CSV },
	{ "all-models", 'a', NULL, SQL_ALL_MODELS },
	{ "output", 'o', "FILE", SQL_OUTPUT },
	{ "model", 0, "FILE", SQL_MODEL },
	{ "rebuild", 0, NULL, SQL_REBUILD },
	{ "jobs", 'j', "N", SQL_JOBS },
	{ NULL, 0, NULL, 0 },
};

static int sql_opt(void *ctx, int id, const char *opt, const char *val)
{
	struct sql_args *a = ctx;
	switch (id) {
	case SQL_CSV: a->csv = 1; break;
	case SQL_ALL_MODELS: a->all_models = 1; break;
	case SQL_OUTPUT: a->out = val; break;
	case SQL_MODEL: a->mf->files[a->mf->n++] = val; break;
	case SQL_REBUILD: a->rebuild = 1; break;
	case SQL_JOBS:
		if (cli_jobs(CMD, opt, val, &a->jobs) != 0)
			return 2;
		break;
	default: abort();
	}
	return 0;
}

/* mf: the --model files, loaded once the arguments are known good. */
static int cmd_sql(int argc, char **argv, struct cli_models *mf)
{
	struct sql_args sa = { 0, 0, 0, 0, NULL, mf };
	const char **pos = cli_operands(argc);
	int npos = 0;
	int pr = cli_opts_parse(CMD, sql_opts, argc, argv, sql_opt, &sa, pos, &npos);
	const char *path = npos > 0 ? pos[0] : NULL, *query = npos > 1 ? pos[1] : NULL;
	free(pos);
	if (pr == CLI_OPTS_HELP) {
		fputs(usage, stdout);
		return CLI_EXIT_OK;
	}
	if (pr != 0)
		return CLI_EXIT_USAGE;
	if (npos > 2)
		return usage_error("more than a PATH and a QUERY (quote the query)");
	const char *out = sa.out;
	if (path == NULL)
		return usage_error("missing TRACE (a trace directory) or FILE (a database)");
	if (out != NULL && out[0] == '\0')
		return usage_error("-o needs a FILE");
	/* a malformed model file is refused before anything is read or
	 * written */
	/* the files' names, for the key of the database kept beside the trace
	 * (cli_registry frees the list) */
	struct cli_models names = { calloc((size_t) mf->n + 1, sizeof *names.files), mf->n };
	if (names.files == NULL)
		abort();
	for (int i = 0; i < mf->n; i++)
		names.files[i] = mf->files[i];
	sa.mf = &names;
	struct weft_registry *models = cli_registry(CMD, mf);
	int r = CLI_EXIT_TRACE;
	if (models != NULL)
		r = run_sql(path, query, &sa, models);
	weft_registry_free(models);
	free(names.files);
	return r;
}

/* The arguments checked, the models loaded: a database file queried, or a
 * trace's database built (and queried), or the one kept beside it reused. */
static int run_sql(const char *path, const char *query, const struct sql_args *a,
		const struct weft_registry *models)
{
	const char *out = a->out;
	int csv = a->csv;
	struct stat sb;
	if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
		if (out != NULL)
			return usage_error("-o writes the database of a trace directory, and "
					"PATH is a file");
		if (a->rebuild)
			return usage_error("--rebuild builds the database of a trace directory, and "
					"PATH is a file");
		if (check_db(path) != 0)
			return CLI_EXIT_TRACE;
		if (query == NULL || is_dot(query))
			return run_shell(path, query, csv);
		return query_file(path, query, csv);
	}

	/* the shell's program is looked for before anything is built */
	char prog[PATH_MAX + 16];
	if (((query == NULL && out == NULL) || (query != NULL && is_dot(query))) &&
			find_sqlite3(prog, sizeof prog) != 0)
		return run_shell(NULL, query, csv);
	/* without -o: the database kept beside the trace, built again only
	 * when the trace changed (its key) or --rebuild */
	char cpath[4300];
	char *key = NULL;
	if (out == NULL) {
		if (trace_cache_path(CMD, path, CACHE_NAME, "db", "give -o FILE", cpath,
				sizeof cpath) != 0)
			return CLI_EXIT_TRACE;
		key = cache_key(path, a->all_models, a->mf);
		char *old = key != NULL && !a->rebuild ? stored_key(cpath) : NULL;
		int same = old != NULL && strcmp(old, key) == 0;
		free(old);
		if (same) {
			free(key);
			if (isatty(STDERR_FILENO))
				fprintf(stderr, "weft sql: %s: built before, the trace unchanged: "
						"reused (--rebuild builds it again)\n", cpath);
			if (query == NULL || is_dot(query))
				return run_shell(cpath, query, csv);
			return query_file(cpath, query, csv);
		}
		out = cpath;
	}
	if (check_out(out) != 0) {
		free(key);
		return CLI_EXIT_TRACE;
	}
	char tmpdir[4400], dbpath[4500];
	/* next to FILE: renamed within one file system */
	if (snprintf(tmpdir, sizeof tmpdir, "%s.weft-sql-XXXXXX", out) >= (int) sizeof tmpdir) {
		free(key);
		return usage_error("FILE is too long");
	}
	if (build(path, a->all_models, a->jobs, models, tmpdir, dbpath, sizeof dbpath, out) != 0) {
		free(key);
		return stop_sig != 0 ? 128 + stop_sig : CLI_EXIT_TRACE;
	}
	int r = key != NULL ? store_key(dbpath, key) : 0;
	free(key);
	/* FILE may have become a link meanwhile: checked again */
	if (r != 0 || check_out(out) != 0) {
		remove_tmp(tmpdir, dbpath);
		return CLI_EXIT_TRACE;
	}
	if (rename(dbpath, out) != 0) {
		fprintf(stderr, "weft sql: cannot write %s: %s\n", out, strerror(errno));
		remove_tmp(tmpdir, dbpath);
		return CLI_EXIT_TRACE;
	}
	rmdir(tmpdir);
	armed = 0;
	if (query != NULL && is_dot(query))
		return run_shell(out, query, csv);
	if (query != NULL)
		return query_file(out, query, csv);
	/* without -o and a QUERY: the shell */
	return a->out == NULL ? run_shell(out, NULL, csv) : CLI_EXIT_OK;
}
