/* SPDX-License-Identifier: MIT */
/*
 * rt_internal.h - shared state and helpers of libovni (src/rt).
 *
 * Nothing here is exported: the sources are built with -fvisibility=hidden
 * and the library is linked with libovni.map, which exports ovni_* only.
 *
 * State:
 *   - one process (struct rt_proc, proc.c), set up by ovni_proc_init and
 *     read by threads under its mutex (never on the emit path);
 *   - per thread, a small initial-exec TLS block (rt_hot: the emit
 *     cursor/limit, the owner flag that makes emitting from a signal
 *     handler safe, the log of recent ovni_clock_now reads) and a pointer to the cold state
 *     (struct rt_thread: stream file, metadata, buffer, pending events).
 *
 * Signal handlers (see emit.c and docs/runtime.md): the code that touches
 * a thread's buffer runs with rt_hot.busy set. An emit that finds it set
 * interrupted that code (it runs in a signal handler): it appends its
 * event to the thread's pending ring instead, and the interrupted code
 * stores the pending events when it is done, in clock order.
 */
#ifndef WEFT_RT_INTERNAL_H
#define WEFT_RT_INTERNAL_H

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "idx_format.h"
#include "obs_format.h"
#include "ovni.h"
#include "weft/rt.h"

#define RT_TLS static _Thread_local __attribute__((tls_model("initial-exec")))
#define RT_LIKELY(x) __builtin_expect(!!(x), 1)
#define RT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RT_NORETURN __attribute__((noreturn))
#define RT_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* WEFT_BUFSIZE bounds (bytes). The smallest buffer must hold the largest
 * normal event plus the OF[/OF] pair an automatic flush appends. */
#define RT_BUFSIZE_MIN 256ull
#define RT_BUFSIZE_MAX (1024ull * 1024ull * 1024ull)
/* WEFT_FLUSH_MS bound (one day). */
#define RT_FLUSH_MS_MAX 86400000ull
/* Bytes kept free after any event for the OF[/OF] pair of a flush. */
#define RT_FLUSH_PAIR_SIZE (2u * 12u)
/* An automatic flush may keep the newest events in the buffer (those an
 * older event may still have to go before, see emit.c): up to an eighth
 * of the buffer, within these bounds. The buffer has that much room
 * beyond WEFT_BUFSIZE, so flushes happen where they would without it. */
#define RT_HOLD_MIN 512u
#define RT_HOLD_MAX 16384u
/* The pending ring of a thread: events emitted by signal handlers that
 * interrupted the thread's own emit or flush (2-byte size, then the
 * event). Events that do not fit are dropped and counted. */
#define RT_PEND_SIZE 8192u
/* The clock log of a thread: the last RT_CLOG_N values ovni_clock_now
 * returned on it, each with the buffer position at that moment (a power
 * of two). An event older than the newest stored is put back in place
 * only if its clock is one of them (see emit.c). */
#define RT_CLOG_N 16u
/* ... and only among the events stored within this many bytes after the
 * logged position. */
#define RT_SCAN_MAX 16384u
/* The compiler may not move memory accesses across this; the CPU never
 * reorders a thread's accesses as seen by its own signal handlers. */
#define RT_SIGNAL_FENCE __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* ---- errno ----
 *
 * A successful call leaves errno as the caller left it (system calls and
 * the C library may set it on success: mkdir's EEXIST, write's EINTR).
 * Every public function that can reach them declares RT_KEEP_ERRNO first:
 * the value is put back whenever the function returns. The emit hot path
 * never touches errno (its slow path does the saving). */
static inline void rt_errno_restore(const int *saved)
{
	errno = *saved;
}
#define RT_KEEP_ERRNO \
	__attribute__((cleanup(rt_errno_restore), unused)) const int rt_saved_errno_ = errno

/* ---- errors (die.c) ---- */

/* "libovni: <func>: <reason>\n" on stderr, then abort(). */
RT_NORETURN void rt_die(const char *func, const char *fmt, ...) RT_PRINTF(2, 3);
/* Same, with ": <strerror(errnum)>" appended. */
RT_NORETURN void rt_die_errno(const char *func, int errnum, const char *fmt, ...)
	RT_PRINTF(3, 4);

/* ---- files (fs.c) ---- */

/* malloc'ed printf, dies (naming func) when out of memory. */
char *rt_strfmt(const char *func, const char *fmt, ...) RT_PRINTF(2, 3);
/* mkdir -p with mode 0777 (& umask); dies naming func and the path. */
void rt_mkdir_p(const char *func, const char *path);
/* Writes all len bytes (loops on short writes and EINTR); dies naming func
 * and the file path on any error. */
void rt_write_all(const char *func, int fd, const void *buf, size_t len, const char *path);
/* Writes text into path atomically: a temporary file in the same
 * directory, then rename(2). */
void rt_write_file_atomic(const char *func, const char *path, const char *text);
/* Writes len bytes of text over the start of the file path, in place
 * (open without O_TRUNC, write, close: no temporary file, no rename, which
 * on ext4 each start the write-back of the file); with create, the file
 * must not exist (O_EXCL): returns 0, having written nothing, if it does.
 * Returns 1 when written; dies naming func on any other error. */
int rt_write_file_over(const char *func, const char *path, const char *text, size_t len, int create);
/* Moves the tree src into dst, then removes src: directories are created
 * where missing (an existing one is kept; one that is not a directory, a
 * link included, is an error), and each file replaces the one of the same
 * name (rename, or across file systems a copy written aside, times kept,
 * renamed over it): never written through a link. */
void rt_move_tree(const char *func, const char *src, const char *dst);

/* ---- settings (settings.c) ---- */

/* WEFT_FILTER (filter.c): at most this many rules, this much text. */
#define RT_FILTER_MAX_RULES 64
#define RT_FILTER_TEXT_MAX 512
struct rt_filter_rule {
	uint8_t keep; /* "+" */
	uint8_t any;  /* "*" */
	uint8_t len;  /* bytes of the prefix, 1 to 3 */
	uint8_t mcv[3];
};
struct rt_filter_spec {
	size_t nrules;
	struct rt_filter_rule rules[RT_FILTER_MAX_RULES];
	char text[RT_FILTER_TEXT_MAX]; /* WEFT_FILTER as given ("" when unset) */
};

/* Every setting, as ovni_proc_init read it (weft_rt_set's value, else the
 * environment; defaults when neither). */
struct rt_settings {
	size_t bufsize;     /* WEFT_BUFSIZE, default OVNI_MAX_EV_BUF */
	uint64_t flush_ns;  /* WEFT_FLUSH_MS in ns, 0 when off */
	size_t ring_size;   /* WEFT_RING in bytes, 0 when off */
	int ring_flush;     /* WEFT_RING_FLUSH=on (0 without WEFT_RING) */
	int ring_signo;     /* WEFT_RING_SIGNAL (0: none, or without WEFT_RING) */
	int crash;          /* WEFT_CRASH=flush */
	int output_off;     /* WEFT_OUTPUT=off */
	int clock_tsc;      /* WEFT_CLOCK=tsc */
	uint64_t sample_ns; /* WEFT_SAMPLE_MS in ns, 0 when off */
	struct rt_filter_spec filter; /* WEFT_FILTER (no rules when unset) */
	weft_rt_filter_fn filter_fn; /* weft_rt_filter_set */
	void *filter_arg;
};

/* Reads every setting; dies naming func and the setting on a bad value
 * or combination. */
void rt_settings_read(const char *func, struct rt_settings *s);

/* ---- the clock (clock.c) ---- */

/* WEFT_CLOCK=tsc is in force (atomic, read relaxed). */
extern int rt_clock_tsc;
/* ovni_proc_init's part: with tsc, checks the counter (dies naming func
 * and the reason when it is not usable) and calibrates it. */
void rt_clock_setup(const char *func, int tsc);
/* Why the TSC cannot be used here (in buf), or NULL when it can. */
const char *rt_clock_tsc_refusal(char *buf, size_t n);
/* The conversion's parameters, twice (a latch, see clock.c): latch
 * even, readers use slot 0; odd, slot 1. All read and written atomically. */
struct rt_clock_conv {
	uint64_t base_tsc;
	uint64_t base_ns;
	uint64_t mult; /* ns per tick << 32 */
	uint64_t pad;  /* 32 bytes: a slot is a shift away from the latch */
};
extern struct rt_clock_conv rt_clock_slots[2];
/* 64 bits: it never wraps, so that no thread's copy (rt_hot.cv_latch)
 * matches it by chance. */
extern uint64_t rt_clock_latch;

static inline uint64_t rt_tsc_read(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t) hi << 32) | lo;
#else
	return 0;
#endif
}

/* A whole copy of the parameters (never waits: an update leaves one slot
 * whole at every moment). */
static inline uint64_t rt_clock_conv_get(struct rt_clock_conv *out)
{
	for (;;) {
		uint64_t l = __atomic_load_n(&rt_clock_latch, __ATOMIC_ACQUIRE);
		const struct rt_clock_conv *c = &rt_clock_slots[l & 1u];
		out->base_tsc = __atomic_load_n(&c->base_tsc, __ATOMIC_ACQUIRE);
		out->base_ns = __atomic_load_n(&c->base_ns, __ATOMIC_ACQUIRE);
		out->mult = __atomic_load_n(&c->mult, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&rt_clock_latch, __ATOMIC_ACQUIRE) == l)
			return l;
	}
}

/* base_ns + d * mult / 2^32 for d ticks since base_tsc, as the integer
 * and the fractional parts of mult (d * int + the high half of d * frac
 * << 32): two multiplications side by side, no double-word shift. */
static inline uint64_t rt_clock_conv_at(const struct rt_clock_conv *c, uint64_t t)
{
	uint64_t d = t > c->base_tsc ? t - c->base_tsc : 0;
	uint64_t whole = d * (c->mult >> 32);
	uint64_t frac = (uint64_t) (((unsigned __int128) d * (c->mult << 32)) >> 64);
	return c->base_ns + whole + frac;
}

/* The TSC converted to ns (async-signal-safe, never waits). */
static inline uint64_t rt_clock_tsc_ns(void)
{
	struct rt_clock_conv c;
	rt_clock_conv_get(&c);
	uint64_t t = rt_tsc_read();
	uint64_t d = t - c.base_tsc;
	/* Within 2^32 ticks of the base (a second or more; the base moves at
	 * each write of a buffer) and below a ns per tick, d * mult fits in
	 * 64 bits: one multiplication. */
	if (RT_LIKELY(((d | c.mult) >> 32) == 0))
		return c.base_ns + ((d * c.mult) >> 32);
	return rt_clock_conv_at(&c, t);
}
/* CLOCK_MONOTONIC: the vDSO's clock_gettime called directly (found by
 * rt_clock_setup in the image that AT_SYSINFO_EHDR names), libc's until
 * then or where there is none (atomic, read relaxed). What libc's
 * clock_gettime calls itself, without its wrapper and the PLT. */
typedef int (*rt_clock_gettime_fn)(clockid_t, struct timespec *);
extern rt_clock_gettime_fn rt_clock_gettime;
/* The vDSO's clock_gettime, or NULL (no vDSO, none that exports it, one
 * whose call fails). */
rt_clock_gettime_fn rt_clock_vdso_find(void);

static inline uint64_t rt_clock_mono_ns(void)
{
	struct timespec ts;
	__atomic_load_n(&rt_clock_gettime, __ATOMIC_RELAXED)(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* ovni_clock_now, called by libovni itself (a hidden alias: a direct
 * call, emit.c). */
__attribute__((visibility("hidden"))) uint64_t rt_clock_now(void);

/* The clock of the events now, without the per-thread clamp (for a
 * crash's cut; async-signal-safe). */
uint64_t rt_clock_event_now(void);
/* At a write of a buffer: recalibrates (at most once a millisecond, if no
 * other thread is at it). */
void rt_clock_calibrate(void);

/* ---- filters at the source (filter.c) ---- */

/* rt_filter_tab[model byte]: 0 keep (no question asked), or one of these:
 * the emit path sends the event to its slow path, which asks
 * rt_filter_keep. */
#define RT_FILTER_DROP 1u
#define RT_FILTER_ASK 2u
extern uint8_t rt_filter_tab[256];
/* WEFT_FILTER's rules into spec: 0, or -1 when malformed. */
int rt_filter_parse(const char *v, struct rt_filter_spec *spec);
/* ovni_proc_init's part: the rules, the callback and the table. */
void rt_filter_setup(const struct rt_settings *s);
/* Whether ev (its header; for a jumbo, also payload.jumbo.size) is kept. */
int rt_filter_keep(const struct ovni_ev *ev);
/* A filter is set (rules or a callback); its rules as given ("" none);
 * whether there is a callback. */
int rt_filter_active(void);
const char *rt_filter_rules(void);
int rt_filter_callback(void);

/* ---- sampling (sample.c) ---- */

struct rt_thread;

/* The built-in model of the samples. */
#define RT_SAMPLE_MODEL "sample"
#define RT_SAMPLE_MODEL_VERSION "1.0.0"
#define RT_SAMPLE_BYTE 'W'
/* The most counters of one sample (built-in and registered). */
#define RT_SAMPLE_MAX 24
struct rt_sample_val {
	char mcv[3];
	uint64_t v;
};
/* ovni_thread_init's part: opens the hardware counters (warning once per
 * process where not permitted). */
void rt_sample_thread_init(const char *func, struct rt_thread *th);
void rt_sample_thread_free(struct rt_thread *th);
/* Turns counting on for th (the first sample of weft_rt_sample_now, or
 * ovni_thread_init with WEFT_SAMPLE_MS): the model joins ovni.require
 * (the caller writes stream.json) and the hardware counters open. */
void rt_sample_start(const char *func, struct rt_thread *th);
/* The counters other than those of the buffer (CPU time, hardware,
 * registered) into out (from index n on); returns the new n. */
size_t rt_sample_collect(const struct rt_thread *th, struct rt_sample_val *out, size_t n);
/* weft.sample in stream.json (NULL when the thread never sampled). */
json_t *rt_sample_json(const char *func, const struct rt_thread *th);
/* The next deadline after clock c for a period of p ns. */
static inline uint64_t rt_sample_next(uint64_t deadline, uint64_t c, uint64_t p)
{
	if (deadline > c)
		return deadline;
	uint64_t k = (c - deadline) / p + 1u;
	return deadline + k * p;
}

/* ---- process (proc.c) ---- */

/* Nonzero once ovni_proc_init has run in this process (and until a fork()
 * child forgets it): settings can no longer be changed. */
int rt_proc_started(void);

/* A consistent copy of what a thread needs from the process. */
struct rt_proc_info {
	int app;
	int pid;
	char *loom;      /* malloc'ed */
	char *proc_dir;  /* malloc'ed: where this process writes its streams */
	size_t bufsize;  /* WEFT_BUFSIZE or OVNI_MAX_EV_BUF */
	uint64_t flush_ns; /* WEFT_FLUSH_MS in ns, 0 when off */
	size_t ring_size;  /* WEFT_RING in bytes, 0 when off */
	int ring_flush;    /* WEFT_RING_FLUSH=on */
	int output_off;    /* WEFT_OUTPUT=off */
	uint64_t sample_ns; /* WEFT_SAMPLE_MS in ns, 0 when off */
	int rank_set;
	int rank;
	int nranks;
};

/* Fills info (dies naming func when the process is not initialized). */
void rt_proc_get(const char *func, struct rt_proc_info *info);
void rt_proc_info_free(struct rt_proc_info *info);
/* Rank and number of ranks, if ovni_proc_set_rank was called. */
int rt_proc_rank(int *rank, int *nranks);

/* ---- thread (thread.c) ---- */

enum rt_thread_state {
	RT_THREAD_NONE = 0,
	RT_THREAD_READY = 1,
	RT_THREAD_FINISHED = 2,
	/* In a fork() child of a traced process: untraced until it calls
	 * ovni_proc_init and ovni_thread_init itself. */
	RT_THREAD_FORKED = 3,
};

struct rt_thread {
	int fd;          /* stream.obs */
	char *dir;       /* thread.<tid> directory */
	char *obs_path;  /* .../stream.obs */
	int idx_fd;      /* stream.idx (index.c) */
	char *idx_path;  /* .../stream.idx */
	/* stream.idx is created at the stream's second write (index.c):
	 * until then idx_lazy is set and the first write's entry waits in
	 * idx_pend (idx_npend of them, 0 or 1). */
	int idx_lazy;
	int idx_writes;
	unsigned idx_npend;
	uint8_t idx_pend[WEFT_IDX_ENTRY_SIZE];
	uint64_t obs_off;/* bytes written to stream.obs so far */
	char *json_path; /* .../stream.json */
	uint8_t *buf;    /* event buffer: bufsize bytes + slack */
	size_t bufsize;
	size_t hold_max; /* what an automatic flush may keep, see emit.c */
	uint64_t flush_ns; /* WEFT_FLUSH_MS in ns (0: off), see emit.c */
	json_t *meta;      /* the stream.json document */
	json_t *require;   /* model -> version, in call order */
	json_t *loom_cpus; /* array, NULL until ovni_add_cpu */
	/* Set by ovni_flush, cleared by an automatic flush: the buffer then
	 * starts with that flush's OF[/OF] pair. ovni_thread_free drops the
	 * pair if nothing followed it, as the reference loses it. */
	int explicit_pair;
	/* Pending ring (RT_PEND_SIZE bytes; rt_hot.pend bytes reserved) and
	 * how far the owner has stored it. */
	uint8_t *pend;
	uint32_t pend_pos;
	/* Set by ovni_thread_free: handlers' events are then dropped. */
	int closing;
	/* Events dropped (atomic: handlers count too). */
	uint64_t lost;
	/* Events a filter dropped (WEFT_FILTER, weft_rt_filter_set; atomic). */
	uint64_t filtered;
	/* WEFT_OUTPUT=off: nothing is written to stream.obs (nor stream.idx);
	 * unwritten counts the bytes of events that a write would have
	 * written (atomic: the crash handler adds its own). */
	int output_off;
	uint64_t unwritten;
	/* All the process's threads (thread.c, under its mutex): a fork()
	 * child closes their files. */
	struct rt_thread *next;
	/* ---- WEFT_CRASH=flush (crash.c) ---- */
	/* The owner's emit state (its TLS rt_hot), NULL once the thread has
	 * exited without ovni_thread_free (exit_cur is then its cursor). */
	struct rt_hot *hot;
	uint8_t *exit_cur;
	/* > 0 while the owner moves bytes in the buffer, writes it or swaps
	 * crash_text (atomic; see rt_crash_gate_enter). */
	uint32_t moving;
	/* Set by ovni_thread_free before it leaves the list. */
	int freeing;
	/* stream.json as last written plus weft.cut, whose value is the
	 * placeholder at crash_cut (RT_CUT_PLACEHOLDER_LEN bytes); and the
	 * temporary file a crash writes it to. NULL when off. */
	char *crash_text;
	size_t crash_cut;
	/* The length of stream.json as this thread last wrote it (0: not
	 * written yet; meta.c). */
	size_t json_len;
	char *crash_tmp;
	/* Where the placeholder of weft.ring is in crash_text (ring mode). */
	size_t crash_ring;
	/* ---- WEFT_RING (ring.c): NULL when off ---- */
	struct rt_ring *ring;
	/* ---- sampling (sample.c) ---- */
	uint64_t sample_ns;   /* WEFT_SAMPLE_MS in ns, 0 when off */
	int sampling;         /* counting on (periodic, or weft_rt_sample_now once) */
	uint64_t wbytes;      /* event bytes passed to the writes (written or not) */
	uint64_t cnt_off;     /* events counted up to this stream offset (wbytes scale) */
	uint64_t cnt_events;  /* ... this many */
	uint64_t flushes;     /* OF[/OF] pairs stored */
	uint64_t flush_ns_sum;/* the sum of their OF] - OF[ */
	int perf_fd[2];       /* cycles, instructions; -1 when not counted */
};

/* Per-thread state of the emit path. cur and end are both NULL while the
 * thread is not ready, so "not ready" and "does not fit" are the same
 * test. */
struct rt_hot {
	uint8_t *cur;
	uint8_t *end;
	uint64_t last;  /* the newest clock stored in the stream */
	uint32_t busy;  /* the thread's own code is using the buffer */
	/* Read and written with __atomic builtins (relaxed on the hot path, a
	 * plain load on x86-64): in ring mode the WEFT_RING_SIGNAL handler
	 * sets it to 0 from any thread to send the next emit to the slow
	 * path, which dumps the ring (ring.c). WEFT_FLUSH_MS: an event with a clock at or after this goes to the
	 * slow path, which writes the buffer (a timed flush) or, when 0 (the
	 * buffer holds no event since the last write), sets it to the
	 * event's clock + the age. UINT64_MAX when off. */
	uint64_t flush_at;
	uint32_t pend;  /* bytes reserved in the pending ring (atomic) */
	uint64_t clk_last; /* WEFT_CLOCK=tsc: the newest clock read on the thread */
	/* WEFT_CLOCK=tsc: the thread's copy of the conversion (emit.c), valid
	 * while cv_latch equals rt_clock_latch (RT_CV_NONE: no copy; the
	 * initial value, so that without the TSC the compare always fails),
	 * and the most ticks past cv_base_tsc that one 64-bit multiplication
	 * converts. */
	uint64_t cv_latch;
	uint64_t cv_base_tsc;
	uint64_t cv_base_ns;
	uint64_t cv_mult;
	uint64_t cv_dmax;
	/* Sampling: an event with a clock at or after this goes to the slow
	 * path, which records the thread's sample first (UINT64_MAX: off). */
	uint64_t sample_at;
	/* The clock log: entry i % RT_CLOG_N is the i-th read (its clock,
	 * the buffer position at the read, its epoch). An entry is valid
	 * while its ep equals epoch (never 0); whatever moves bytes in the
	 * buffer bumps epoch and carries the entries it keeps over. Three
	 * arrays rather than one of structures: an entry's field is then
	 * one instruction from the thread pointer (8-byte strides). */
	uint32_t clog_head;
	uint32_t epoch;
	uint64_t clog_clock[RT_CLOG_N];
	uint8_t *clog_pos[RT_CLOG_N];
	uint32_t clog_ep[RT_CLOG_N];
};

#define RT_CV_NONE UINT64_MAX
extern _Thread_local struct rt_hot rt_hot __attribute__((tls_model("initial-exec")));

/* The ready thread's state, or dies naming func. */
struct rt_thread *rt_thread_get(const char *func);
/* The ready thread's state, or NULL (async-signal-safe). */
struct rt_thread *rt_thread_peek(void);
/* Forgets every stream in a fork() child, without writing (proc.c calls
 * it from its pthread_atfork child handler, with the registry locked by
 * rt_threads_lock in the prepare handler). */
void rt_threads_lock(void);
void rt_threads_unlock(void);
void rt_threads_forked(void);
/* For a crash handler: takes the mutex if free (nonzero then), and the
 * first thread of the list (whose next pointers are stored atomically). */
int rt_threads_trylock(void);
struct rt_thread *rt_threads_first(void);

/* ---- WEFT_CRASH (crash.c) ---- */

/* The value of weft.cut in the pre-rendered stream.json (a JSON string). */
#define RT_CUT_PLACEHOLDER "\"@weft-cut@\""
#define RT_CUT_PLACEHOLDER_LEN (sizeof RT_CUT_PLACEHOLDER - 1u)

/* WEFT_CRASH=flush is in force (set once by the first ovni_proc_init). */
extern int rt_crash_enabled;
/* Nonzero once a crash or the exit handler started writing the buffers. */
extern uint32_t rt_crash_frozen;
/* ovni_proc_init's part: the first time WEFT_CRASH is "flush" (on),
 * installs the handlers. */
void rt_crash_setup(int on);
/* ovni_thread_init's part (crash mode): notes the thread's emit state and
 * arms the thread-exit hook. */
void rt_crash_thread_init(struct rt_thread *th);
/* ovni_thread_free's part: disarms the thread-exit hook. */
void rt_crash_thread_free(struct rt_thread *th);
/* ovni_proc_fini's part: the exit handler has nothing to do. */
void rt_crash_proc_fini(void);
/* Called by the gates when the buffers are being (or were) written by a
 * crash or at exit. Returns 1 (the caller goes on) on the exiting thread
 * at exit; 0 (the caller must leave the buffer alone: it is out of the
 * gate again) when may_drop, on the thread that wrote the buffers after a
 * fatal signal or in a handler that interrupted its thread's own gate
 * code; otherwise it does not return (the thread stops for good). */
int rt_crash_hold(struct rt_thread *th, int may_drop);

/* The owner's code that moves or writes the bytes of its buffer (or swaps
 * crash_text) runs between these; a crash handler waits for it to leave
 * and stops it at the next enter (Dekker: both sides are seq_cst). Never
 * on the emit hot path. */
static inline void rt_crash_gate_enter(struct rt_thread *th)
{
	if (!rt_crash_enabled)
		return;
	__atomic_add_fetch(&th->moving, 1u, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&rt_crash_frozen, __ATOMIC_SEQ_CST) != 0)
		(void) rt_crash_hold(th, 0);
}

/* The same for the async-signal-safe calls (emit, flush), which a signal
 * handler of the program may make on the crashing thread itself (after
 * the crash handler: the program's own handler of the fatal signal, a
 * timer's handler before the fault happens again), or on a thread inside
 * its own gate (a stream.json rewrite). There the thread must not stop,
 * or the process would never die, or the crash handler would wait for
 * that gate in vain: 0 tells the caller to drop its event and give the
 * buffer back. */
static inline int rt_crash_gate_try(struct rt_thread *th)
{
	if (!rt_crash_enabled)
		return 1;
	__atomic_add_fetch(&th->moving, 1u, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&rt_crash_frozen, __ATOMIC_SEQ_CST) != 0)
		return rt_crash_hold(th, 1);
	return 1;
}

static inline void rt_crash_gate_leave(struct rt_thread *th)
{
	if (!rt_crash_enabled)
		return;
	__atomic_sub_fetch(&th->moving, 1u, __ATOMIC_SEQ_CST);
}

/* The value of weft.ring in the pre-rendered stream.json (ring mode). */
#define RT_RING_PLACEHOLDER "\"@weft-ring@\""
#define RT_RING_PLACEHOLDER_LEN (sizeof RT_RING_PLACEHOLDER - 1u)

/* ---- flight recorder, WEFT_RING (ring.c) ----
 *
 * The thread's buffer holds up to 2 * size bytes; the hot path stores as
 * usual and, when it is full, the slow path drops the oldest events (whole
 * events, counted) until what is left and the new event fit in size. A
 * write of the ring writes the longest suffix of the events not yet
 * written that fits in size (counting the others as lost). */

/* WEFT_RING bounds (bytes). */
#define RT_RING_MIN 1024ull
#define RT_RING_MAX (1024ull * 1024ull * 1024ull)

/* A run of lost (overwritten) events: smallest and largest clock, events
 * and bytes. n == 0: empty. */
struct rt_ring_run {
	uint64_t c0;
	uint64_t c1;
	uint64_t n;
	uint64_t b;
	uint64_t off; /* stream.obs offset of the first event written after it */
};

struct rt_ring {
	size_t size;              /* WEFT_RING */
	int flush;                /* WEFT_RING_FLUSH=on: ovni_flush writes the ring */
	struct rt_ring_run open;  /* lost since the last write of the ring */
	struct rt_ring_run *runs; /* closed runs, WEFT_RING_MAX_RUNS of room */
	uint32_t nruns;
	uint64_t lost_events;     /* sums over the closed runs */
	uint64_t lost_bytes;
	uint32_t seen_gen;        /* the last dump request this thread served */
	/* The owner's emit state, for the dump signal handler (under the
	 * thread-list mutex; NULL once the thread exited). */
	struct rt_hot *hot;
};

/* Bumped by the WEFT_RING_SIGNAL handler (atomic): a thread whose
 * seen_gen differs dumps its ring at its next slow path. */
extern uint32_t rt_ring_gen;
/* ovni_proc_init's part, in ring mode: installs the thread-exit key and
 * the WEFT_RING_SIGNAL handler (signo, 0 for none) once. */
void rt_ring_setup(int signo);
/* ovni_thread_init's and ovni_thread_free's parts. */
void rt_ring_thread_init(const char *func, struct rt_thread *th, size_t size, int flush);
void rt_ring_thread_free(struct rt_thread *th);
/* Bytes of the whole event stored at p. */
static inline size_t rt_ev_stored_size(const uint8_t *p)
{
	uint8_t flags = p[WEFT_EV_OFF_FLAGS];
	if (weft_ev_is_jumbo(flags))
		return WEFT_EV_HEADER_SIZE + WEFT_EV_JUMBO_SIZE_FIELD + (size_t) weft_load_u32(p + WEFT_EV_OFF_PAYLOAD);
	return WEFT_EV_HEADER_SIZE + weft_ev_payload_size(flags);
}
/* Adds one lost event (clock c, s bytes) to run. */
static inline void rt_ring_run_add(struct rt_ring_run *run, uint64_t c, size_t s)
{
	if (run->n == 0 || c < run->c0)
		run->c0 = c;
	if (run->n == 0 || c > run->c1)
		run->c1 = c;
	run->n++;
	run->b += s;
}
/* The first event from p on (p < cur, whole events) such that the bytes
 * from it to cur plus extra fit in the ring; the events skipped are added
 * to run. Async-signal-safe. */
const uint8_t *rt_ring_trim(const struct rt_ring *r, const uint8_t *p, const uint8_t *cur, size_t extra,
			    struct rt_ring_run *run);
/* A write of the ring: the open run, if any, becomes the next entry. */
void rt_ring_close_run(struct rt_ring *r, uint64_t off);
/* The value of weft.ring (closed runs only: what is lost is known once the
 * ring is written). */
json_t *rt_ring_json(const char *func, const struct rt_ring *r);
/* The same as text to fd, with last (if not empty) as a closed run after
 * the others (async-signal-safe, for the crash handler). */
void rt_ring_render(int fd, const struct rt_ring *r, const struct rt_ring_run *last);

/* ---- the stream index (index.c) ---- */

/* Names th->idx_path; the file is created at the stream's second write
 * (a stream written in one write has none: weft.index_after). */
void rt_index_open(const char *func, struct rt_thread *th);
/* The bytes of events beyond which a stream has its stream.idx
 * (weft.index_after): the most one write of th's buffer may hold. */
uint64_t rt_index_after(const struct rt_thread *th);
/* After len bytes of buf were written to stream.obs at th->obs_off:
 * appends their entry (see idx_format.h; at the second write, creates
 * the file with the first write's entry) and moves obs_off on. */
void rt_index_note(const char *func, struct rt_thread *th, const uint8_t *buf, size_t len);
void rt_index_close(const char *func, struct rt_thread *th);
/* The same as rt_index_note, async-signal-safe: write(2) errors are
 * ignored (a crash handler cannot report them). */
void rt_index_note_raw(struct rt_thread *th, const uint8_t *buf, size_t len);

/* ---- buffer and flush (emit.c) ---- */

/* Stores an event with an optional payload into the buffer, flushing
 * first (with the OF[/OF] pair after it) if it does not fit. From a signal
 * handler that interrupted the thread's emit or flush, the event goes to
 * the pending ring. */
void rt_emit_raw(const char *func, uint8_t flags, const char mcv[3], uint64_t clock,
		 const void *payload, size_t payload_size, const void *extra,
		 size_t extra_size);
/* ovni_thread_free's part: takes the buffer for good, stores what is
 * pending, writes everything (but the pair of a last ovni_flush that
 * nothing followed) and detaches the emit path. */
void rt_emit_close(const char *func, struct rt_thread *th);
/* ovni_thread_init's part: attaches the emit path to th's buffer. */
void rt_emit_open(struct rt_thread *th);
/* The exit handler, on the exiting thread's own stream: writes its buffer
 * and empties it (no OF[/OF] pair). */
void rt_emit_write_out(const char *func, struct rt_thread *th);
/* weft_rt_sample_now's part: records a sample on the calling thread. */
void rt_emit_sample_now(const char *func);
/* In a fork() child: the emit path of the calling thread forgets its
 * buffer. */
void rt_emit_forget(void);

/* ---- metadata (meta.c) ---- */

/* The initial stream.json document of a thread. */
json_t *rt_meta_new(const char *func, const struct rt_proc_info *info, pid_t tid);
enum rt_meta_stage {
	RT_META_INITIAL, /* the document as built by rt_meta_new */
	RT_META_UPDATE,  /* plus ovni.require, rank/nranks, loom_cpus */
	RT_META_FINAL,   /* plus ovni.finished = 1 */
};
/* Writes stream.json (atomically) from the thread's document. */
void rt_meta_write(const char *func, struct rt_thread *th, enum rt_meta_stage stage);
/* After ovni_thread_require, ovni_add_cpu and ovni_mark_type (a few calls
 * per thread, at its start): stream.json is rewritten at once
 * (RT_META_UPDATE), so that a run killed before ovni_thread_free or
 * ovni_attr_flush leaves the models, CPUs and mark types the tools need
 * (weft emu --salvage). Labels and user attributes, which may be many, wait
 * for ovni_attr_flush or ovni_thread_free, as in the reference. */
static inline void rt_meta_touch(const char *func, struct rt_thread *th)
{
	rt_meta_write(func, th, RT_META_UPDATE);
}
/* Sets value (stolen) under a dotted key ("a.b.c") of doc, creating the
 * intermediate objects; dies naming func on a malformed key. */
void rt_meta_dotset(const char *func, json_t *doc, const char *key, json_t *value);
/* The value under a dotted key, or NULL (borrowed). */
json_t *rt_meta_dotget(const char *func, json_t *doc, const char *key);

#endif /* WEFT_RT_INTERNAL_H */
