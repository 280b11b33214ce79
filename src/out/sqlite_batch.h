/* SPDX-License-Identifier: MIT */
/*
 * sqlite_batch.h - internal to the SQLite output: rows inserted
 * SQ_BATCH_ROWS at a time by one prepared multi-row INSERT (the rest at
 * the end one by one): a statement's start and end cost as much as a
 * narrow row, and a batch pays them once.
 */
#ifndef WEFT_OUT_SQLITE_BATCH_H
#define WEFT_OUT_SQLITE_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#define SQ_BATCH_ROWS 64
#define SQ_BATCH_MAXCOL 8

/* A value of a row: an integer, NULL, a short text held here, or a BLOB
 * that must stay valid until the next sq_batch_flush. */
struct sq_cell {
	int64_t i;
	const void *p;
	int len;
	char kind; /* 'i', 'n', 't' (text[0..len)), 'b' (p[0..len)) */
	char text[15];
};

struct sq_batch {
	sqlite3 *db;
	sqlite3_stmt *many, *one;
	int ncol, n; /* columns; rows held */
	int count;   /* count the rows an insert left unchanged (an upsert's WHERE) */
	uint64_t unchanged; /* those rows, so far */
	struct sq_cell cells[SQ_BATCH_ROWS * SQ_BATCH_MAXCOL];
};

/* into: "table (col, ...)" with ncol columns. SQLITE_OK or SQLite's code. */
int sq_batch_init(struct sq_batch *b, sqlite3 *db, const char *into, int ncol);
/* The same with tail after the VALUES (an upsert's ON CONFLICT clause):
 * each insert's rows that SQLite neither inserted nor updated (sqlite3_changes)
 * are counted in unchanged. */
int sq_batch_init_tail(struct sq_batch *b, sqlite3 *db, const char *into, int ncol,
		const char *tail);
/* A row of ncol integers; inserts a batch when it is full. SQLITE_OK, or
 * the code of the failed step. */
int sq_batch_add(struct sq_batch *b, const int64_t *row);
/* The next row's cells (ncol of them, to fill), then sq_batch_commit_row. */
struct sq_cell *sq_batch_row(struct sq_batch *b);
int sq_batch_commit_row(struct sq_batch *b);
/* Inserts the rows held. */
int sq_batch_flush(struct sq_batch *b);
void sq_batch_free(struct sq_batch *b);

#endif
