/* SPDX-License-Identifier: MIT */
/* sqlite_batch.c - multi-row inserts (sqlite_batch.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_batch.h"

/* "INSERT INTO <into> VALUES (?, ...), ... <tail>" of rows rows. */
static char *insert_sql(const char *into, int ncol, int rows, const char *tail)
{
	size_t cap = strlen(into) + strlen(tail) + 32 + (size_t) rows * ((size_t) ncol * 3 + 4);
	char *s = malloc(cap);
	if (s == NULL)
		return NULL;
	size_t len = (size_t) snprintf(s, cap, "INSERT INTO %s VALUES ", into);
	for (int r = 0; r < rows; r++) {
		s[len++] = r ? ',' : ' ';
		s[len++] = '(';
		for (int c = 0; c < ncol; c++) {
			if (c)
				s[len++] = ',';
			s[len++] = '?';
		}
		s[len++] = ')';
	}
	snprintf(s + len, cap - len, "%s%s", *tail ? " " : "", tail);
	return s;
}

int sq_batch_init(struct sq_batch *b, sqlite3 *db, const char *into, int ncol)
{
	return sq_batch_init_tail(b, db, into, ncol, "");
}

int sq_batch_init_tail(struct sq_batch *b, sqlite3 *db, const char *into, int ncol,
		const char *tail)
{
	memset(b, 0, sizeof *b);
	b->db = db;
	b->ncol = ncol;
	b->count = *tail != '\0';
	if (ncol < 1 || ncol > SQ_BATCH_MAXCOL)
		return SQLITE_MISUSE;
	char *many = insert_sql(into, ncol, SQ_BATCH_ROWS, tail);
	char *one = insert_sql(into, ncol, 1, tail);
	int r = many == NULL || one == NULL ? SQLITE_NOMEM : SQLITE_OK;
	if (r == SQLITE_OK)
		r = sqlite3_prepare_v3(db, many, -1, SQLITE_PREPARE_PERSISTENT, &b->many, NULL);
	if (r == SQLITE_OK)
		r = sqlite3_prepare_v3(db, one, -1, SQLITE_PREPARE_PERSISTENT, &b->one, NULL);
	free(many);
	free(one);
	return r;
}

static int run(struct sq_batch *b, sqlite3_stmt *st, const struct sq_cell *v, int n)
{
	for (int i = 0; i < n; i++) {
		switch (v[i].kind) {
		case 'i': sqlite3_bind_int64(st, i + 1, v[i].i); break;
		case 't': sqlite3_bind_text(st, i + 1, v[i].text, v[i].len, SQLITE_STATIC); break;
		case 'b': sqlite3_bind_blob(st, i + 1, v[i].p, v[i].len, SQLITE_STATIC); break;
		default: sqlite3_bind_null(st, i + 1); break;
		}
	}
	int r = sqlite3_step(st);
	sqlite3_reset(st);
	if (r == SQLITE_DONE && b->count) {
		int rows = n / b->ncol, changed = sqlite3_changes(b->db);
		if (changed < rows)
			b->unchanged += (uint64_t) (rows - changed);
	}
	return r == SQLITE_DONE ? SQLITE_OK : r;
}

struct sq_cell *sq_batch_row(struct sq_batch *b)
{
	return &b->cells[b->n * b->ncol];
}

int sq_batch_commit_row(struct sq_batch *b)
{
	if (++b->n < SQ_BATCH_ROWS)
		return SQLITE_OK;
	b->n = 0;
	return run(b, b->many, b->cells, SQ_BATCH_ROWS * b->ncol);
}

int sq_batch_add(struct sq_batch *b, const int64_t *row)
{
	struct sq_cell *c = sq_batch_row(b);
	for (int i = 0; i < b->ncol; i++) {
		c[i].kind = 'i';
		c[i].i = row[i];
	}
	return sq_batch_commit_row(b);
}

int sq_batch_flush(struct sq_batch *b)
{
	int r = SQLITE_OK;
	for (int i = 0; i < b->n && r == SQLITE_OK; i++)
		r = run(b, b->one, &b->cells[i * b->ncol], b->ncol);
	b->n = 0;
	return r;
}

void sq_batch_free(struct sq_batch *b)
{
	sqlite3_finalize(b->many);
	sqlite3_finalize(b->one);
	b->many = b->one = NULL;
	b->n = 0;
}
