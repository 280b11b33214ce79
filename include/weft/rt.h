/* SPDX-License-Identifier: MIT */
/*
 * weft/rt.h - weft's own runtime API, beside the ovni API of <ovni.h>.
 *
 * libovni.so.1 exports these functions under the symbol version WEFT_RT_1
 * (the ovni_* functions stay unversioned, exactly as the reference's), so
 * that a program using them needs weft's libovni, and says so at load time.
 * See docs/runtime.md, "weft's runtime API".
 *
 * Settings: every WEFT_* variable that libovni reads (WEFT_BUFSIZE,
 * WEFT_FLUSH_MS, WEFT_RING, WEFT_RING_FLUSH, WEFT_RING_SIGNAL, WEFT_CRASH,
 * WEFT_FILTER, WEFT_OUTPUT, WEFT_CLOCK, WEFT_SAMPLE_MS) is read once, by ovni_proc_init;
 * weft_rt_set() sets one before that, and a call wins over the environment.
 */
#ifndef WEFT_RT_H
#define WEFT_RT_H

#include <ovni.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default)

/* The version of this API (the symbol version node is WEFT_RT_<n>). */
#define WEFT_RT_API_VERSION 1

/* Sets the setting `name` (a WEFT_* variable name, e.g. "WEFT_BUFSIZE")
 * to `value`, with the meaning and the checks of the variable: it wins
 * over the environment. A NULL value forgets an earlier call (the
 * environment counts again). Only before ovni_proc_init (which reads the
 * settings once) or in a fork() child before its own ovni_proc_init.
 * An unknown name, a bad value or a call after ovni_proc_init is misuse:
 * the program stops with one line on stderr naming the setting, as a bad
 * variable stops ovni_proc_init. Returns 0. */
int weft_rt_set(const char *name, const char *value);

/* A filter at the source: called for each event the WEFT_FILTER rules
 * keep (ovni_ev_emit, ovni_ev_jumbo_emit, the ovni_mark_* events; never the
 * OF[/OF] pair libovni emits itself), on the emitting thread (in a signal
 * handler when a handler emits: then it must be async-signal-safe). It
 * returns nonzero to keep the event, 0 to drop it (counted in the
 * stream's weft.filtered). For a jumbo event, ev holds its header and
 * ev->payload.jumbo.size only. */
typedef int (*weft_rt_filter_fn)(const struct ovni_ev *ev, void *arg);

/* Sets the filter callback (fn NULL: none), before ovni_proc_init like
 * weft_rt_set. With a callback every event takes the emit's slow path. */
void weft_rt_filter_set(weft_rt_filter_fn fn, void *arg);

/* ---- sampling (docs/runtime.md, "Sampling") ----
 *
 * Every WEFT_SAMPLE_MS milliseconds, each thread records its counters as
 * events of the built-in model "sample" (model byte 'W', emulated as
 * counter channels): events, bytes written, flushes and the time spent
 * flushing, lost and filtered events, the buffer fill, the thread's CPU
 * time, cycles and instructions (perf_event_open, where the kernel allows
 * it) and every registered counter. A thread records its sample at its
 * first emit at or after the deadline: a thread that emits nothing
 * records nothing until it emits again (one sample then, not one per
 * period missed). */

/* Sets the sampling period in milliseconds (0: off), as WEFT_SAMPLE_MS;
 * before ovni_proc_init like weft_rt_set. Returns 0. */
int weft_rt_sample_every(unsigned ms);

/* A program's own counter: its value now, on the thread recording a
 * sample (in a signal handler if a handler's emit records it: then it
 * must be async-signal-safe). */
typedef uint64_t (*weft_rt_sample_fn)(void *arg);

/* Adds a counter recorded with every sample from now on (name and unit:
 * 1 to 63 printable bytes, copied; listed in each stream's
 * weft.sample.counters). At most WEFT_RT_SAMPLE_MAX_REGISTERED per
 * process; more, or a bad name, is misuse (the program stops, saying
 * why). Any time, from any thread. Returns the counter's index. */
#define WEFT_RT_SAMPLE_MAX_REGISTERED 8
int weft_rt_sample_register(const char *name, const char *unit, weft_rt_sample_fn fn, void *arg);

/* Records a sample now on the calling thread (every built-in and
 * registered counter), whether or not WEFT_SAMPLE_MS is set: call it at
 * the program's synchronization points (ROSS records its statistics
 * after each GVT). Not in a signal handler that interrupted this
 * thread's emit (then it records nothing). */
void weft_rt_sample_now(void);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* WEFT_RT_H */
