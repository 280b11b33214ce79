/* SPDX-License-Identifier: MIT */
/*
 * thread.c - the thread stream: ovni_thread_init, ovni_thread_require,
 * ovni_thread_free, ovni_thread_isready.
 *
 * A thread owns <proc dir>/thread.<tid>/ with stream.obs (opened at init,
 * 8-byte header written at once), its index stream.idx (index.c) and stream.json (written at init too,
 * before any event can reach the file, so that a program dying early
 * leaves streams the tools can name; rewritten by ovni_attr_flush and
 * ovni_thread_free).
 *
 * The process's threads are in a list (under a mutex of their own) so
 * that a fork() child can close their stream files without writing: the
 * child starts untraced (proc.c's pthread_atfork handlers call
 * rt_threads_forked).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "obs_format.h"
#include "rt_internal.h"

RT_TLS int th_state;
RT_TLS struct rt_thread *th_cur;

static pthread_mutex_t threads_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rt_thread *threads;
/* The threads of the parent, in a fork() child: never written, never
 * freed (other threads may have been using them), kept reachable. */
static struct rt_thread *forked_threads;

struct rt_thread *rt_thread_get(const char *func)
{
	if (RT_UNLIKELY(th_state != RT_THREAD_READY)) {
		if (th_state == RT_THREAD_FINISHED)
			rt_die(func, "the thread was already finished by ovni_thread_free");
		if (th_state == RT_THREAD_FORKED)
			rt_die(func, "the thread is not initialized in this process, a fork() child of a traced "
				     "process: a child starts untraced (call ovni_proc_init with its own pid, then "
				     "ovni_thread_init)");
		rt_die(func, "the thread is not initialized (call ovni_thread_init first)");
	}
	return th_cur;
}

struct rt_thread *rt_thread_peek(void)
{
	return th_state == RT_THREAD_READY ? th_cur : NULL;
}

void rt_threads_lock(void)
{
	pthread_mutex_lock(&threads_mu);
}

void rt_threads_unlock(void)
{
	pthread_mutex_unlock(&threads_mu);
}

void rt_threads_forked(void)
{
	/* Only close(2): the child must not write the parent's streams, and
	 * closing its copies of their descriptors does not touch them. */
	struct rt_thread **tail = &forked_threads;
	while (*tail != NULL)
		tail = &(*tail)->next;
	for (struct rt_thread *th = threads; th != NULL; th = th->next) {
		if (th->fd >= 0)
			close(th->fd);
		th->fd = -1;
		if (th->idx_fd >= 0)
			close(th->idx_fd);
		th->idx_fd = -1;
		th->idx_lazy = 0; /* nor create it */
	}
	*tail = threads;
	threads = NULL;
	rt_emit_forget();
	th_cur = NULL;
	th_state = RT_THREAD_FORKED;
}

int rt_threads_trylock(void)
{
	return pthread_mutex_trylock(&threads_mu) == 0;
}

struct rt_thread *rt_threads_first(void)
{
	return __atomic_load_n(&threads, __ATOMIC_ACQUIRE);
}

/* The list is changed under the mutex, with atomic stores, so that a crash
 * handler that cannot take the mutex may still walk it (see crash.c). */
static void threads_add(struct rt_thread *th)
{
	pthread_mutex_lock(&threads_mu);
	th->next = threads;
	__atomic_store_n(&threads, th, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&threads_mu);
}

static void threads_remove(struct rt_thread *th)
{
	pthread_mutex_lock(&threads_mu);
	for (struct rt_thread **p = &threads; *p != NULL; p = &(*p)->next) {
		if (*p == th) {
			__atomic_store_n(p, th->next, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&threads_mu);
}

static void write_stream_header(const char *func, struct rt_thread *th)
{
	uint8_t hdr[WEFT_OBS_HEADER_SIZE];
	memcpy(hdr, WEFT_OBS_MAGIC, WEFT_OBS_MAGIC_LEN);
	weft_store_u32(hdr + WEFT_OBS_MAGIC_LEN, WEFT_OBS_VERSION);
	rt_write_all(func, th->fd, hdr, sizeof hdr, th->obs_path);
}

void ovni_thread_init(pid_t tid)
{
	static const char func[] = "ovni_thread_init";
	RT_KEEP_ERRNO;
	if (th_state == RT_THREAD_READY)
		rt_die(func, "the thread is already initialized");
	if (th_state == RT_THREAD_FINISHED)
		rt_die(func, "the thread was already finished by ovni_thread_free and cannot be initialized again");

	struct rt_proc_info info;
	rt_proc_get(func, &info);

	struct rt_thread *th = calloc(1, sizeof *th);
	if (th == NULL)
		rt_die(func, "out of memory for the thread state");
	th->dir = rt_strfmt(func, "%s/" WEFT_THREAD_PREFIX "%d", info.proc_dir, (int) tid);
	th->obs_path = rt_strfmt(func, "%s/" WEFT_STREAM_OBS, th->dir);
	th->json_path = rt_strfmt(func, "%s/" WEFT_STREAM_JSON, th->dir);
	rt_mkdir_p(func, th->dir);

	th->fd = open(th->obs_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (th->fd < 0)
		rt_die_errno(func, errno, "cannot create the stream file '%s'", th->obs_path);
	write_stream_header(func, th);
	th->obs_off = WEFT_OBS_HEADER_SIZE;
	rt_index_open(func, th);

	th->bufsize = info.bufsize;
	th->flush_ns = info.flush_ns;
	th->output_off = info.output_off;
	th->sample_ns = info.sample_ns;
	/* WEFT_RING: the buffer is the ring, twice its size (emit.c). */
	if (info.ring_size != 0) {
		th->bufsize = 2u * info.ring_size;
		rt_ring_thread_init(func, th, info.ring_size, info.ring_flush);
	}
	/* Room for the events an automatic flush holds back, and slack
	 * after the end: the emit path copies a whole struct ovni_ev and
	 * advances by the real size. */
	th->hold_max = th->bufsize / 8u;
	if (th->hold_max < RT_HOLD_MIN)
		th->hold_max = RT_HOLD_MIN;
	if (th->hold_max > RT_HOLD_MAX)
		th->hold_max = RT_HOLD_MAX;
	th->buf = malloc(th->bufsize + th->hold_max + sizeof(struct ovni_ev));
	th->pend = malloc(RT_PEND_SIZE);
	if (th->buf == NULL || th->pend == NULL)
		rt_die(func, "out of memory for the %zu-byte event buffer of '%s'", th->bufsize, th->obs_path);

	th->meta = rt_meta_new(func, &info, tid);
	th->require = json_object();
	if (th->require == NULL)
		rt_die(func, "out of memory for the metadata of '%s'", th->json_path);
	th->loom_cpus = NULL;
	rt_sample_thread_init(func, th);
	if (rt_crash_enabled)
		rt_crash_thread_init(th);
	rt_meta_write(func, th, th->sampling ? RT_META_UPDATE : RT_META_INITIAL);
	rt_proc_info_free(&info);

	threads_add(th);
	th_cur = th;
	th_state = RT_THREAD_READY;
	rt_emit_open(th);
}

static int valid_model_name(const char *s)
{
	if (s == NULL || s[0] == '\0')
		return 0;
	for (const char *p = s; *p != '\0'; p++) {
		int ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_';
		if (!ok)
			return 0;
	}
	return 1;
}

/* "X.Y.Z", each a non-empty decimal number. */
static int valid_version(const char *s)
{
	if (s == NULL)
		return 0;
	const char *p = s;
	for (int part = 0; part < 3; part++) {
		if (*p < '0' || *p > '9')
			return 0;
		size_t digits = 0;
		while (*p >= '0' && *p <= '9') {
			p++;
			if (++digits > 9)
				return 0;
		}
		if (part < 2) {
			if (*p != '.')
				return 0;
			p++;
		}
	}
	return *p == '\0';
}

void ovni_thread_require(const char *model, const char *version)
{
	static const char func[] = "ovni_thread_require";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);
	if (!valid_model_name(model))
		rt_die(func, "malformed model name '%s' (expected one or more of a-z, 0-9 and _)",
		       model != NULL ? model : "(null)");
	if (!valid_version(version))
		rt_die(func, "malformed version '%s' for model '%s' (expected X.Y.Z)",
		       version != NULL ? version : "(null)", model);
	/* As in the reference, the last call for a model wins, "ovni"
	 * included (its default, OVNI_MODEL_VERSION, is added when the
	 * metadata is written). A model keeps the place of its first call. */
	if (json_object_set_new(th->require, model, json_string(version)) != 0)
		rt_die(func, "out of memory for the metadata of '%s'", th->json_path);
	rt_meta_touch(func, th);
}

void ovni_thread_free(void)
{
	static const char func[] = "ovni_thread_free";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);

	/* From here on a crash handler leaves the stream to this call (it
	 * waits for the gate, or stops the thread in it). */
	rt_crash_gate_enter(th);
	__atomic_store_n(&th->freeing, 1, __ATOMIC_SEQ_CST);
	rt_crash_gate_leave(th);
	if (rt_crash_enabled)
		rt_crash_thread_free(th);

	/* Writes what is buffered (see there) and keeps the buffer taken:
	 * from here on, a signal handler's event is dropped and counted. */
	rt_emit_close(func, th);
	if (close(th->fd) != 0)
		rt_die_errno(func, errno, "cannot close the stream file '%s'", th->obs_path);
	th->fd = -1;
	rt_index_close(func, th);
	rt_meta_write(func, th, RT_META_FINAL);
	rt_sample_thread_free(th);
	threads_remove(th);

	th_state = RT_THREAD_FINISHED;
	th_cur = NULL;
	RT_SIGNAL_FENCE;
	/* A handler emitting now is told the thread is finished. */
	rt_hot.busy = 0;

	if (th->ring != NULL)
		rt_ring_thread_free(th);
	json_decref(th->meta);
	json_decref(th->require);
	json_decref(th->loom_cpus);
	free(th->buf);
	free(th->pend);
	free(th->dir);
	free(th->obs_path);
	free(th->idx_path);
	free(th->json_path);
	free(th->crash_text);
	free(th->crash_tmp);
	free(th);
}

int ovni_thread_isready(void)
{
	return th_state == RT_THREAD_READY;
}
