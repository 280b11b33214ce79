/* SPDX-License-Identifier: MIT */
/*
 * thread.c - the thread stream: ovni_thread_init, ovni_thread_require,
 * ovni_thread_free, ovni_thread_isready.
 *
 * A thread owns <proc dir>/thread.<tid>/ with stream.obs (opened at init,
 * 8-byte header written at once) and stream.json (written at init too,
 * before any event can reach the file, so that a program dying early
 * leaves streams the tools can name; rewritten by ovni_attr_flush and
 * ovni_thread_free).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "obs_format.h"
#include "rt_internal.h"

RT_TLS int th_state;
RT_TLS struct rt_thread *th_cur;

struct rt_thread *rt_thread_get(const char *func)
{
	if (RT_UNLIKELY(th_state != RT_THREAD_READY)) {
		if (th_state == RT_THREAD_FINISHED)
			rt_die(func, "the thread was already finished by ovni_thread_free");
		rt_die(func, "the thread is not initialized (call ovni_thread_init first)");
	}
	return th_cur;
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

	th->bufsize = info.bufsize;
	/* Slack after the end: the emit path copies a whole struct ovni_ev
	 * and advances by the real size. */
	th->buf = malloc(th->bufsize + sizeof(struct ovni_ev));
	if (th->buf == NULL)
		rt_die(func, "out of memory for the %zu-byte event buffer of '%s'", th->bufsize, th->obs_path);

	th->meta = rt_meta_new(func, &info, tid);
	th->require = json_object();
	if (th->require == NULL)
		rt_die(func, "out of memory for the metadata of '%s'", th->json_path);
	th->loom_cpus = NULL;
	rt_meta_write(func, th, RT_META_INITIAL);
	rt_proc_info_free(&info);

	th_cur = th;
	th_state = RT_THREAD_READY;
	rt_hot.cur = th->buf;
	rt_hot.end = th->buf + th->bufsize;
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
}

void ovni_thread_free(void)
{
	static const char func[] = "ovni_thread_free";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);

	/* The reference does not flush here, so the OF[/OF] pair that its
	 * last ovni_flush left in the buffer never reaches the file: drop it
	 * when nothing followed it. Events emitted after it are written (with
	 * the pair before them), and so is the pair of an automatic flush. */
	if (th->explicit_pair && rt_hot.cur == th->buf + RT_FLUSH_PAIR_SIZE)
		rt_hot.cur = th->buf;
	rt_buffer_write(func, th);
	if (close(th->fd) != 0)
		rt_die_errno(func, errno, "cannot close the stream file '%s'", th->obs_path);
	th->fd = -1;
	rt_meta_write(func, th, RT_META_FINAL);

	rt_hot.cur = NULL;
	rt_hot.end = NULL;
	th_state = RT_THREAD_FINISHED;
	th_cur = NULL;

	json_decref(th->meta);
	json_decref(th->require);
	json_decref(th->loom_cpus);
	free(th->buf);
	free(th->dir);
	free(th->obs_path);
	free(th->json_path);
	free(th);
}

int ovni_thread_isready(void)
{
	return th_state == RT_THREAD_READY;
}
