/* SPDX-License-Identifier: MIT */
/*
 * bench_write_calls.h - the floor of bench_write behind the ovni API's
 * per-event calls (bench_write_calls.c).
 */
#ifndef WEFT_BENCH_WRITE_CALLS_H
#define WEFT_BENCH_WRITE_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include "ovni.h"

#pragma GCC visibility push(default)
/* The calling thread stores into buf (size bytes), written to fd when the
 * next event does not fit. */
void bwc_thread_init(int fd, uint8_t *buf, size_t size);
/* Writes what is left; returns the number of writes the thread made. */
unsigned long bwc_thread_fini(void);
uint64_t bwc_clock_now(void);
void bwc_ev_set_clock(struct ovni_ev *ev, uint64_t clock);
void bwc_ev_set_mcv(struct ovni_ev *ev, const char *mcv);
void bwc_ev_emit(struct ovni_ev *ev);
#pragma GCC visibility pop

#endif
