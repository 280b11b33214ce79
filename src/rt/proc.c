/* SPDX-License-Identifier: MIT */
/*
 * proc.c - the process: ovni_proc_init, ovni_proc_set_rank, ovni_proc_fini.
 *
 * The process state is written by these calls and read by threads when
 * they start or finish (never on the emit path), under one mutex.
 * Environment, read once by ovni_proc_init (the WEFT_* settings through
 * settings.c, where weft_rt_set() may have set them first):
 *   OVNI_TRACEDIR  final trace directory (default "ovni"), created if missing
 *   OVNI_TMPDIR    if set, streams are written under it and moved into the
 *                  trace directory by ovni_proc_fini (file by file, over
 *                  those of an earlier run), which then removes
 *                  the directories it created there, and the temporary
 *                  directory itself once it is empty (as the reference)
 *   WEFT_BUFSIZE   per-thread event buffer size in bytes
 *   WEFT_FLUSH_MS  write a thread's buffer once it holds an event older
 *                  than this many milliseconds (checked at each emit; off
 *                  when unset or 0), for readers following a live trace
 *   WEFT_CRASH     "flush": write the buffers at a fatal signal or at exit
 *                  without ovni_proc_fini (crash.c); unset: off
 *   WEFT_RING, WEFT_RING_FLUSH, WEFT_RING_SIGNAL
 *                  the flight recorder (ring.c)
 * A process is initialized once: ovni_proc_init after ovni_proc_fini is
 * misuse, as in the reference.
 *
 * fork(): the child of a traced process starts untraced. pthread_atfork
 * handlers (installed by the first ovni_proc_init) hold the process and
 * thread mutexes across the fork, and in the child forget the process and
 * close the inherited stream files without writing anything (the parent's
 * files are not touched). The child may then call ovni_proc_init with its
 * own pid and becomes a process of its own in the trace; emitting without
 * that is misuse, with a message that says so.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "obs_format.h"
#include "rt_internal.h"

static struct {
	pthread_mutex_t mu;
	int ready;
	int finished; /* ovni_proc_fini was called */
	int app;
	int pid;
	char *loom;
	char *final_proc_dir; /* <tracedir>/loom.<loom>/proc.<pid> */
	char *tmp_dir;        /* <tmpdir> (absolute), or NULL */
	char *tmp_loom_dir;   /* <tmpdir>/loom.<loom>, or NULL */
	char *tmp_proc_dir;   /* <tmpdir>/loom.<loom>/proc.<pid>, or NULL */
	struct rt_settings set; /* as read by ovni_proc_init (settings.c) */
	int rank_set;
	int rank;
	int nranks;
	int forked; /* a fork() child of a traced process, not initialized */
} proc = {.mu = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_prepare(void)
{
	pthread_mutex_lock(&proc.mu);
	rt_threads_lock();
}

static void atfork_parent(void)
{
	rt_threads_unlock();
	pthread_mutex_unlock(&proc.mu);
}

/* Frees the process's paths (at ovni_proc_fini, and in a fork() child). */
static void forget_paths(void)
{
	free(proc.loom);
	free(proc.final_proc_dir);
	free(proc.tmp_dir);
	free(proc.tmp_loom_dir);
	free(proc.tmp_proc_dir);
	proc.loom = NULL;
	proc.final_proc_dir = NULL;
	proc.tmp_dir = NULL;
	proc.tmp_loom_dir = NULL;
	proc.tmp_proc_dir = NULL;
}

static void atfork_child(void)
{
	if (proc.ready || proc.finished) {
		forget_paths();
		proc.ready = 0;
		proc.finished = 0;
		proc.rank_set = 0;
		proc.forked = 1;
		rt_threads_forked();
	}
	rt_threads_unlock();
	pthread_mutex_unlock(&proc.mu);
}

static void atfork_install(void)
{
	if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child) != 0)
		rt_die("ovni_proc_init", "cannot install the fork() handlers (pthread_atfork failed)");
}

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);
	return (v != NULL && v[0] != '\0') ? v : NULL;
}

/* An absolute version of dir (relative to the working directory now). */
static char *absolute_dir(const char *func, const char *dir)
{
	if (dir[0] == '/')
		return rt_strfmt(func, "%s", dir);
	char *cwd = getcwd(NULL, 0);
	if (cwd == NULL)
		rt_die_errno(func, errno, "cannot get the working directory to place the trace directory '%s'", dir);
	char *abs = rt_strfmt(func, "%s/%s", cwd, dir);
	free(cwd);
	return abs;
}

int rt_proc_started(void)
{
	pthread_mutex_lock(&proc.mu);
	int started = proc.ready || proc.finished;
	pthread_mutex_unlock(&proc.mu);
	return started;
}

void ovni_proc_init(int app, const char *loom, int pid)
{
	static const char func[] = "ovni_proc_init";
	RT_KEEP_ERRNO;
	pthread_once(&atfork_once, atfork_install);
	pthread_mutex_lock(&proc.mu);
	if (proc.ready)
		rt_die(func, "the process is already initialized");
	if (proc.finished)
		rt_die(func, "the process was already finished by ovni_proc_fini and cannot be initialized again");
	if (loom == NULL || loom[0] == '\0')
		rt_die(func, "the loom name is empty");
	if (strchr(loom, '/') != NULL)
		rt_die(func, "the loom name '%s' contains a '/'", loom);

	/* Seed jansson's hash tables once, before threads use it. */
	json_object_seed(0);

	/* Every WEFT_* setting, in one place (settings.c). */
	struct rt_settings set;
	rt_settings_read(func, &set);
	rt_crash_setup(set.crash);
	if (set.ring_size != 0)
		rt_ring_setup(set.ring_signo);
	rt_filter_setup(&set);
	rt_clock_setup(func, set.clock_tsc);
	const char *tracedir = env_nonempty("OVNI_TRACEDIR");
	if (tracedir == NULL)
		tracedir = WEFT_TRACEDIR_DEFAULT;
	const char *tmpdir = env_nonempty("OVNI_TMPDIR");

	char *abs_trace = absolute_dir(func, tracedir);
	proc.final_proc_dir = rt_strfmt(func, "%s/" WEFT_LOOM_PREFIX "%s/" WEFT_PROC_PREFIX "%d",
					abs_trace, loom, pid);
	rt_mkdir_p(func, proc.final_proc_dir);
	free(abs_trace);

	if (tmpdir != NULL) {
		proc.tmp_dir = absolute_dir(func, tmpdir);
		proc.tmp_loom_dir = rt_strfmt(func, "%s/" WEFT_LOOM_PREFIX "%s", proc.tmp_dir, loom);
		proc.tmp_proc_dir = rt_strfmt(func, "%s/" WEFT_PROC_PREFIX "%d", proc.tmp_loom_dir, pid);
		rt_mkdir_p(func, proc.tmp_proc_dir);
	}

	proc.loom = rt_strfmt(func, "%s", loom);
	proc.app = app;
	proc.pid = pid;
	proc.set = set;
	proc.rank_set = 0;
	proc.rank = 0;
	proc.nranks = 0;
	proc.forked = 0;
	proc.ready = 1;
	pthread_mutex_unlock(&proc.mu);
}

/* Dies naming func unless the process is between init and fini. */
static void check_ready(const char *func)
{
	if (proc.finished)
		rt_die(func, "the process was already finished by ovni_proc_fini");
	if (!proc.ready && proc.forked)
		rt_die(func, "the process is not initialized: it is a fork() child of a traced process, which "
			     "starts untraced (call ovni_proc_init with its own pid first)");
	if (!proc.ready)
		rt_die(func, "the process is not initialized (call ovni_proc_init first)");
}

void ovni_proc_set_rank(int rank, int nranks)
{
	static const char func[] = "ovni_proc_set_rank";
	RT_KEEP_ERRNO;
	pthread_mutex_lock(&proc.mu);
	check_ready(func);
	if (nranks <= 0 || rank < 0 || rank >= nranks)
		rt_die(func, "rank %d is not between 0 and nranks - 1 (nranks = %d)", rank, nranks);
	proc.rank_set = 1;
	proc.rank = rank;
	proc.nranks = nranks;
	pthread_mutex_unlock(&proc.mu);
}

void rt_proc_get(const char *func, struct rt_proc_info *info)
{
	pthread_mutex_lock(&proc.mu);
	check_ready(func);
	info->app = proc.app;
	info->pid = proc.pid;
	info->loom = rt_strfmt(func, "%s", proc.loom);
	info->proc_dir = rt_strfmt(func, "%s", proc.tmp_proc_dir != NULL ? proc.tmp_proc_dir : proc.final_proc_dir);
	info->bufsize = proc.set.bufsize;
	info->flush_ns = proc.set.flush_ns;
	info->ring_size = proc.set.ring_size;
	info->ring_flush = proc.set.ring_flush;
	info->output_off = proc.set.output_off;
	info->sample_ns = proc.set.sample_ns;
	info->rank_set = proc.rank_set;
	info->rank = proc.rank;
	info->nranks = proc.nranks;
	pthread_mutex_unlock(&proc.mu);
}

void rt_proc_info_free(struct rt_proc_info *info)
{
	free(info->loom);
	free(info->proc_dir);
	info->loom = NULL;
	info->proc_dir = NULL;
}

int rt_proc_rank(int *rank, int *nranks)
{
	pthread_mutex_lock(&proc.mu);
	int set = proc.ready && proc.rank_set;
	*rank = proc.rank;
	*nranks = proc.nranks;
	pthread_mutex_unlock(&proc.mu);
	return set;
}

/* Moves every stream directory of the temporary process directory into
 * the final one, file by file: the streams of an earlier run of the same
 * process into the same trace directory are replaced, as the reference
 * does (rt_move_tree). Then removes the (now empty) temporary directories:
 * the process one, the loom one unless another process still uses it, and
 * OVNI_TMPDIR itself if that leaves it empty. */
static void move_tmp_streams(const char *func)
{
	DIR *d = opendir(proc.tmp_proc_dir);
	if (d == NULL)
		rt_die_errno(func, errno, "cannot open the temporary process directory '%s'", proc.tmp_proc_dir);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char *src = rt_strfmt(func, "%s/%s", proc.tmp_proc_dir, de->d_name);
		char *dst = rt_strfmt(func, "%s/%s", proc.final_proc_dir, de->d_name);
		rt_move_tree(func, src, dst);
		free(src);
		free(dst);
	}
	closedir(d);
	if (rmdir(proc.tmp_proc_dir) != 0)
		rt_die_errno(func, errno, "cannot remove the temporary process directory '%s'", proc.tmp_proc_dir);
	/* Other processes of the loom may still use it. */
	if (rmdir(proc.tmp_loom_dir) != 0 && errno != ENOTEMPTY && errno != EEXIST && errno != EBUSY
	    && errno != ENOENT)
		rt_die_errno(func, errno, "cannot remove the temporary loom directory '%s'", proc.tmp_loom_dir);
	/* Best effort, like the reference: OVNI_TMPDIR may hold other files
	 * or be a directory we may not remove (/tmp, /dev/shm). */
	(void) rmdir(proc.tmp_dir);
}

void ovni_proc_fini(void)
{
	static const char func[] = "ovni_proc_fini";
	RT_KEEP_ERRNO;
	pthread_mutex_lock(&proc.mu);
	check_ready(func);
	if (proc.tmp_proc_dir != NULL)
		move_tmp_streams(func);
	forget_paths();
	proc.ready = 0;
	proc.finished = 1;
	rt_crash_proc_fini();
	pthread_mutex_unlock(&proc.mu);
}
