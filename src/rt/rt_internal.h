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
 *   - per thread, a small initial-exec TLS block: the emit cursor/limit
 *     (rt_hot, the only thing the hot path touches) and a pointer to the
 *     cold state (struct rt_thread: stream file, metadata, buffer start).
 */
#ifndef WEFT_RT_INTERNAL_H
#define WEFT_RT_INTERNAL_H

#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ovni.h"

#define RT_TLS static _Thread_local __attribute__((tls_model("initial-exec")))
#define RT_LIKELY(x) __builtin_expect(!!(x), 1)
#define RT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RT_NORETURN __attribute__((noreturn))
#define RT_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* WEFT_BUFSIZE bounds (bytes). The smallest buffer must hold the largest
 * normal event plus the OF[/OF] pair an automatic flush appends. */
#define RT_BUFSIZE_MIN 256ull
#define RT_BUFSIZE_MAX (1024ull * 1024ull * 1024ull)
/* Bytes kept free after any event for the OF[/OF] pair of a flush. */
#define RT_FLUSH_PAIR_SIZE (2u * 12u)

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
/* Moves directory src to dst (rename, or copy + remove across file
 * systems). dst must not exist. */
void rt_move_dir(const char *func, const char *src, const char *dst);

/* ---- process (proc.c) ---- */

/* A consistent copy of what a thread needs from the process. */
struct rt_proc_info {
	int app;
	int pid;
	char *loom;      /* malloc'ed */
	char *proc_dir;  /* malloc'ed: where this process writes its streams */
	size_t bufsize;  /* WEFT_BUFSIZE or OVNI_MAX_EV_BUF */
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
};

struct rt_thread {
	int fd;          /* stream.obs */
	char *dir;       /* thread.<tid> directory */
	char *obs_path;  /* .../stream.obs */
	char *json_path; /* .../stream.json */
	uint8_t *buf;    /* event buffer: bufsize bytes + slack */
	size_t bufsize;
	json_t *meta;      /* the stream.json document */
	json_t *require;   /* model -> version, in call order */
	json_t *loom_cpus; /* array, NULL until ovni_add_cpu */
	/* Set by ovni_flush, cleared by an automatic flush: the buffer then
	 * starts with that flush's OF[/OF] pair. ovni_thread_free drops the
	 * pair if nothing followed it, as the reference loses it. */
	int explicit_pair;
};

/* The emit cursor: the only per-thread data the hot path touches. Both
 * NULL while the thread is not ready, so "not ready" and "does not fit"
 * are the same test. */
struct rt_hot {
	uint8_t *cur;
	uint8_t *end;
};

extern _Thread_local struct rt_hot rt_hot __attribute__((tls_model("initial-exec")));

/* The ready thread's state, or dies naming func. */
struct rt_thread *rt_thread_get(const char *func);

/* ---- buffer and flush (emit.c) ---- */

/* Writes the buffer to the stream, leaving it empty (no OF events). */
void rt_buffer_write(const char *func, struct rt_thread *th);
/* Stores an event with an optional payload into the buffer, flushing
 * first (with the OF[/OF] pair after it) if it does not fit. */
void rt_emit_raw(const char *func, uint8_t flags, const char mcv[3], uint64_t clock,
		 const void *payload, size_t payload_size, const void *extra,
		 size_t extra_size);

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
/* Sets value (stolen) under a dotted key ("a.b.c") of doc, creating the
 * intermediate objects; dies naming func on a malformed key. */
void rt_meta_dotset(const char *func, json_t *doc, const char *key, json_t *value);
/* The value under a dotted key, or NULL (borrowed). */
json_t *rt_meta_dotget(const char *func, json_t *doc, const char *key);

#endif /* WEFT_RT_INTERNAL_H */
