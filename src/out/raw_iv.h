/* SPDX-License-Identifier: MIT */
/*
 * raw_iv.h - the raw intervals of the threads' channels, from the engine's
 * raw records (EMU_REC_RAW_SET/PUSH/POP): per thread and catalogue entry,
 * the value the model wrote (a stack: its top) holds from the write that
 * made it the value to the next write that changes it, whether or not the
 * thread runs (the "raw" layer of `weft sql` and weft.emulate(); the views
 * give the "shown" one). A null value, or an empty stack, holds no
 * interval; an interval of no length is not made. Used by sqlite.c and the
 * Python module.
 */
#ifndef WEFT_OUT_RAW_IV_H
#define WEFT_OUT_RAW_IV_H

#include <stddef.h>
#include <stdint.h>

#include "emu.h"

/* An interval of thread `row`, catalogue entry `id`: 0, or -1 to stop. */
typedef int (*raw_iv_put)(void *ctx, uint32_t row, size_t id, int64_t start, int64_t end,
		int64_t value);

/* Optional (raw_ivs.open, NULL: none): thread `row`'s entry `id` begins to
 * hold `value` at `start`, the interval put gives once it ends (none when
 * it ends where it began). 0, or -1 to stop. */
typedef int (*raw_iv_open)(void *ctx, uint32_t row, size_t id, int64_t start, int64_t value);

struct raw_iv_top;

struct raw_ivs {
	const struct emu *emu;
	size_t nrows;              /* threads */
	size_t nents;              /* entries with raw records (thread scope, a Paraver type) */
	size_t *ent_of_id;         /* catalogue id -> tracked entry, SIZE_MAX: none */
	size_t nids;               /* the catalogue's ids */
	size_t *ids;               /* tracked entry -> catalogue id */
	struct raw_iv_top *top;    /* nrows * nents */
	raw_iv_open open;          /* set after raw_ivs_init, given put's ctx */
	uint64_t nempty;           /* values that ended where they began (put
	                              no interval): raw_ivs_rec's count */
};

/* 0, or -1 when out of memory. */
int raw_ivs_init(struct raw_ivs *r, const struct emu *emu);
/* A raw record (other kinds are ignored): 0, -1 when out of memory or put
 * failed. */
int raw_ivs_rec(struct raw_ivs *r, const struct emu_rec *x, raw_iv_put put, void *ctx);
/* 1 when thread row's entry id holds a value since start (an interval
 * open since then), else 0. */
int raw_ivs_holds(const struct raw_ivs *r, uint32_t row, size_t id, int64_t start);
/* The values still held end at duration. */
int raw_ivs_end(struct raw_ivs *r, int64_t duration, raw_iv_put put, void *ctx);
void raw_ivs_free(struct raw_ivs *r);

#endif /* WEFT_OUT_RAW_IV_H */
