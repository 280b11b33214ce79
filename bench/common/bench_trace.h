/* SPDX-License-Identifier: MIT */
/*
 * bench_trace.h - the trace writer of the benchmarks that make a synthetic
 * trace of their own (bench_emu, bench_export): the directories of a
 * process's threads, each thread's stream.json (as libovni 1.14.0 writes
 * it) and stream.obs, normal and jumbo events. Every error ends the
 * program: "PROGRAM: what: strerror(errno)", exit status 1.
 */
#ifndef WEFT_BENCH_TRACE_H
#define WEFT_BENCH_TRACE_H

#include <stdint.h>
#include <stdio.h>

/* Prints "PROGRAM: what: strerror(errno)" and exits with status 1. */
void bench_die(const char *what) __attribute__((noreturn));

/* Makes ROOT/loom.LOOM and ROOT/loom.LOOM/proc.PID (neither there yet). */
void bench_proc_dirs(const char *root, const char *loom, int pid);

/* Makes thread TID's directory in ROOT/loom.LOOM/proc.PID, its stream.json
 * (meta: the members after "app_id", each followed by ", "; the loom's
 * CPUs: 0 to ncpus - 1, their physical ids the same; top: members of the
 * document's top level after "ovni", each preceded by ", ") and its stream.obs
 * with the header written: returned, buffered by 1 MiB. */
FILE *bench_stream_open(const char *root, const char *loom, int pid, int tid,
		const char *meta, int ncpus, const char *top);

/* A normal event (payload: size bytes, at most 16) at clock. */
void bench_write_ev(FILE *f, const char *mcv, uint64_t clock, const void *payload,
		unsigned size);

/* A jumbo event (data: size bytes) at clock. */
void bench_write_jumbo(FILE *f, const char *mcv, uint64_t clock, const void *data,
		uint32_t size);

#endif
