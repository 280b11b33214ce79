/* SPDX-License-Identifier: MIT */
/*
 * bench_sql.c - speed and size of `weft sql TRACE -o DB` against SQLite's
 * own insert rate.
 *
 * Writes, in a temporary directory it removes at the end, the trace of
 * bench_emu -g (the bench_emu next to this program; -t rt, the default: its
 * runtime-shaped trace, nOS-V tasks, subsystems, pauses and MPI calls of 8
 * threads on 4 CPUs; -t ovni: its ovni-only one; the other is removed at
 * once), then:
 *   - times `weft sql TRACE -o DB` (the weft of the same bin directory) and
 *     prints its events per second;
 *   - the floor: SQLite alone inserting as many rows as DB holds in all its
 *     tables, each a row of DB's stored events (event_data: the same CREATE TABLE, the
 *     stored columns' values taken in turn from DB's first 4,096 events, the
 *     primary key counting up), with one prepared statement in one
 *     transaction into a new file, with the pragmas weft's SQLite output
 *     sets (src/out/sqlite.c: no journal, synchronous off, exclusive locking,
 *     a 256 MiB cache, the same page size), no index: the rate no database
 *     of that many rows can be written faster than;
 *   - `sql/floor ratio: R`: weft sql's CPU time (user + system) over the
 *     floor's (target at most 1.5; the wall times' ratio after it: on a
 *     machine shared with other work, wall time measures the others), and `db/trace size ratio: R`: DB's bytes over the trace
 *     directory's (target at most 3).
 * Usage: bench_sql [-n EVENTS] [-t rt|ovni] [-k]
 *   -n the events of the trace (10000000), -k keeps the directory.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

extern char **environ;

#define NSAMPLE 4096

static void die(const char *what)
{
	fprintf(stderr, "bench_sql: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void die_db(sqlite3 *db, const char *what)
{
	fprintf(stderr, "bench_sql: %s: %s\n", what, sqlite3_errmsg(db));
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static double tv_s(const struct timeval *tv)
{
	return (double) tv->tv_sec + (double) tv->tv_usec * 1e-6;
}

/* The CPU time (user + system) of this process so far. */
static double self_cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return tv_s(&ru.ru_utime) + tv_s(&ru.ru_stime);
}

/* Runs argv; exits when it does not exit 0. Returns its CPU time (user +
 * system). */
static double spawn(char *const argv[])
{
	pid_t pid;
	int e = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
	if (e != 0) {
		errno = e;
		die(argv[0]);
	}
	int st;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) < 0)
		die("wait4");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "bench_sql: %s %s failed\n", argv[0], argv[1]);
		exit(1);
	}
	return tv_s(&ru.ru_utime) + tv_s(&ru.ru_stime);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void) sb;
	(void) flag;
	(void) ftw;
	return remove(path);
}

static uint64_t dir_bytes;

static int add_size(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void) path;
	(void) ftw;
	if (flag == FTW_F)
		dir_bytes += (uint64_t) sb->st_size;
	return 0;
}

static uint64_t file_size(const char *path)
{
	struct stat sb;
	if (stat(path, &sb) != 0)
		die(path);
	return (uint64_t) sb.st_size;
}

static int64_t count(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		die_db(db, sql);
	int64_t n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
	sqlite3_finalize(st);
	return n;
}

/* The rows of every table of db, in *rows; its page size. */
static void db_rows(sqlite3 *db, int64_t *rows, int64_t *page_size)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE type = 'table'", -1, &st,
			NULL) != SQLITE_OK)
		die_db(db, "the tables");
	*rows = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		char q[300];
		snprintf(q, sizeof q, "SELECT count(*) FROM \"%s\"",
				(const char *) sqlite3_column_text(st, 0));
		int64_t n = count(db, q);
		printf("  table %-16s %12" PRId64 " rows\n", sqlite3_column_text(st, 0), n);
		*rows += n;
	}
	sqlite3_finalize(st);
	*page_size = count(db, "PRAGMA page_size");
}

/* The floor: rows rows of db's stored events (event_data) into a new file at path. */
static double floor_pass(sqlite3 *src, const char *path, int64_t rows, int64_t page_size,
		double *cpu)
{
	/* the stored events' declaration and stored columns */
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(src, "SELECT sql FROM sqlite_schema WHERE name = 'event_data'", -1, &st,
			NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
		die_db(src, "the event table");
	char create[4096];
	const char *decl = (const char *) sqlite3_column_text(st, 0);
	const char *paren = strchr(decl, '(');
	snprintf(create, sizeof create, "CREATE TABLE floor %s", paren);
	sqlite3_finalize(st);
	char cols[1024] = "", marks[256] = "";
	int ncol = 0, pk = -1;
	if (sqlite3_prepare_v2(src, "SELECT name, pk FROM pragma_table_info('event_data')", -1, &st,
			NULL) != SQLITE_OK)
		die_db(src, "the event columns");
	while (sqlite3_step(st) == SQLITE_ROW) {
		size_t l = strlen(cols), m = strlen(marks);
		snprintf(cols + l, sizeof cols - l, "%s\"%s\"", ncol ? ", " : "",
				sqlite3_column_text(st, 0));
		snprintf(marks + m, sizeof marks - m, "%s?", ncol ? ", " : "");
		if (sqlite3_column_int(st, 1) == 1)
			pk = ncol;
		ncol++;
	}
	sqlite3_finalize(st);
	/* the sample: the first NSAMPLE events */
	char sel[1200];
	snprintf(sel, sizeof sel, "SELECT %s FROM event_data ORDER BY rowid LIMIT %d", cols, NSAMPLE);
	if (sqlite3_prepare_v2(src, sel, -1, &st, NULL) != SQLITE_OK)
		die_db(src, sel);
	sqlite3_value **sample = calloc((size_t) NSAMPLE * (size_t) ncol, sizeof *sample);
	if (sample == NULL)
		die("calloc");
	int ns = 0;
	while (ns < NSAMPLE && sqlite3_step(st) == SQLITE_ROW) {
		for (int c = 0; c < ncol; c++)
			sample[ns * ncol + c] = sqlite3_value_dup(sqlite3_column_value(st, c));
		ns++;
	}
	sqlite3_finalize(st);
	if (ns == 0) {
		fprintf(stderr, "bench_sql: the database has no events\n");
		exit(1);
	}

	double t0 = now_s(), c0 = self_cpu();
	sqlite3 *db;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		die_db(db, path);
	char pragmas[400];
	snprintf(pragmas, sizeof pragmas, "PRAGMA page_size = %" PRId64 "; PRAGMA journal_mode = "
			"OFF; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE; PRAGMA "
			"cache_size = -262144; PRAGMA threads = 2; BEGIN", page_size);
	if (sqlite3_exec(db, pragmas, NULL, NULL, NULL) != SQLITE_OK ||
			sqlite3_exec(db, create, NULL, NULL, NULL) != SQLITE_OK)
		die_db(db, "the floor's table");
	char ins[1500];
	snprintf(ins, sizeof ins, "INSERT INTO floor (%s) VALUES (%s)", cols, marks);
	if (sqlite3_prepare_v3(db, ins, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK)
		die_db(db, ins);
	for (int64_t i = 0; i < rows; i++) {
		sqlite3_value **row = &sample[(i % ns) * ncol];
		for (int c = 0; c < ncol; c++) {
			if (c == pk)
				sqlite3_bind_int64(st, c + 1, i);
			else
				sqlite3_bind_value(st, c + 1, row[c]);
		}
		if (sqlite3_step(st) != SQLITE_DONE)
			die_db(db, "the floor's insert");
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		die_db(db, "the floor's commit");
	sqlite3_close(db);
	double dt = now_s() - t0;
	*cpu = self_cpu() - c0;
	for (int i = 0; i < ns * ncol; i++)
		sqlite3_value_free(sample[i]);
	free(sample);
	return dt;
}

int main(int argc, char **argv)
{
	const char *events = "10000000", *which = "rt";
	int keep = 0, opt;
	while ((opt = getopt(argc, argv, "n:t:k")) != -1) {
		switch (opt) {
		case 'n': events = optarg; break;
		case 't': which = optarg; break;
		case 'k': keep = 1; break;
		default:
			fprintf(stderr, "usage: bench_sql [-n EVENTS] [-t rt|ovni] [-k]\n");
			return 2;
		}
	}
	if (strcmp(which, "rt") != 0 && strcmp(which, "ovni") != 0) {
		fprintf(stderr, "bench_sql: -t takes rt or ovni\n");
		return 2;
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n < 0)
		die("/proc/self/exe");
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	char weft[PATH_MAX + 16], gen[PATH_MAX + 16];
	snprintf(weft, sizeof weft, "%.*s/weft", (int) (slash - self), self);
	snprintf(gen, sizeof gen, "%.*s/bench_emu", (int) (slash - self), self);
	if (access(weft, X_OK) != 0)
		die(weft);
	if (access(gen, X_OK) != 0)
		die(gen);

	const char *tmpd = getenv("TMPDIR");
	char root[200];
	if ((size_t) snprintf(root, sizeof root, "%s/bench_sql.XXXXXX",
			tmpd && *tmpd ? tmpd : "/tmp") >= sizeof root) {
		fprintf(stderr, "bench_sql: TMPDIR too long\n");
		return 1;
	}
	if (mkdtemp(root) == NULL)
		die("mkdtemp");
	char traces[256], trace[300], other[300], db[256], fl[256];
	snprintf(traces, sizeof traces, "%s/traces", root);
	snprintf(trace, sizeof trace, "%s/%s", traces, strcmp(which, "rt") == 0 ? "rt-trace" :
			"trace");
	snprintf(other, sizeof other, "%s/%s", traces, strcmp(which, "rt") == 0 ? "trace" :
			"rt-trace");
	snprintf(db, sizeof db, "%s/trace.db", root);
	snprintf(fl, sizeof fl, "%s/floor.db", root);

	double t0 = now_s();
	char *gargv[] = { gen, "-g", traces, "-n", (char *) events, NULL };
	spawn(gargv);
	nftw(other, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	dir_bytes = 0;
	nftw(trace, add_size, 16, FTW_PHYS);
	uint64_t trace_bytes = dir_bytes;
	printf("trace: %s (bench_emu -g), %.1f MB, written in %.2f s\n", trace,
			(double) trace_bytes / 1e6, now_s() - t0);
	fflush(stdout);

	t0 = now_s();
	char *sargv[] = { weft, "sql", trace, "-o", db, NULL };
	double csql = spawn(sargv);
	double tsql = now_s() - t0;

	sqlite3 *src;
	if (sqlite3_open_v2(db, &src, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		die_db(src, db);
	int64_t nev = count(src, "SELECT count(*) FROM event"), rows, page_size;
	printf("weft sql TRACE -o DB: %.2f s (CPU %.2f s), %" PRId64 " events, %.3f M events/s "
			"(of CPU time: %.3f); the database's tables:\n", tsql, csql, nev,
			(double) nev / tsql / 1e6, (double) nev / csql / 1e6);
	db_rows(src, &rows, &page_size);
	uint64_t db_bytes = file_size(db);
	double cfl;
	double tfl = floor_pass(src, fl, rows, page_size, &cfl);
	sqlite3_close(src);
	printf("floor (SQLite inserting %" PRId64 " event rows, one prepared statement, one "
			"transaction, no index): %.2f s (CPU %.2f s), %.3f M rows/s; as events/s of the "
			"trace: %.3f M events/s (of CPU time: %.3f)\n", rows, tfl, cfl,
			(double) rows / tfl / 1e6, (double) nev / tfl / 1e6, (double) nev / cfl / 1e6);
	printf("database: %.1f MB (%.1f bytes an event), floor file %.1f MB\n",
			(double) db_bytes / 1e6, (double) db_bytes / (double) (nev ? nev : 1),
			(double) file_size(fl) / 1e6);
	/* CPU time: on a machine shared with other work, wall time says more
	 * about the others than about weft */
	printf("sql/floor ratio: %.3f (CPU time; of wall time: %.3f)\n", csql / cfl, tsql / tfl);
	printf("db/trace size ratio: %.3f\n", (double) db_bytes / (double) trace_bytes);
	if (!keep)
		nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	else
		printf("kept %s\n", root);
	return 0;
}
