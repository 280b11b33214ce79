/* SPDX-License-Identifier: MIT */
/*
 * trace_cache.c - the place and the key of a file kept beside a trace
 * (trace_cache.h): weft sql's database and weft view --serve's cache.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weft/weft.h"
#include "trace_cache.h"

/* A growing string (the key). */
struct sbuf {
	char *s;
	size_t len, cap;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			abort();
		if (b->s != NULL && b->len + (size_t) n < b->cap) {
			b->len += (size_t) n;
			return;
		}
		size_t cap = (b->cap + (size_t) n + 1) * 2;
		char *x = realloc(b->s, cap);
		if (x == NULL)
			abort();
		b->s = x;
		b->cap = cap;
	}
}

/* A file in the key: its size and modification time (ns), or "absent". */
static void sb_file(struct sbuf *b, const char *what, const char *path)
{
	struct stat sb;
	if (path != NULL && stat(path, &sb) == 0)
		sb_printf(b, " %s %lld %lld.%09ld", what, (long long) sb.st_size,
				(long long) sb.st_mtim.tv_sec, (long) sb.st_mtim.tv_nsec);
	else
		sb_printf(b, " %s absent", what);
}

char *trace_cache_key(const char *path, const char *head, int all_models,
		const char *const *models, int n, const char *opts)
{
	struct weft_open_opts oo;
	memset(&oo, 0, sizeof oo);
	oo.sz = sizeof oo;
	oo.mode = WEFT_LENIENT;
	oo.all_models = 1;
	oo.accept_unfinished = 2;
	char err[WEFT_ERR_MAX];
	struct weft_trace *t = weft_open(path, &oo, err, sizeof err);
	if (t == NULL)
		return NULL;
	struct sbuf b = { NULL, 0, 0 };
	sb_printf(&b, "%s", head);
	/* the program itself: a weft built again (a change of the format not
	 * yet counted in head) builds the file again */
	char exe[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[k > 0 ? k : 0] = '\0';
	sb_file(&b, "program", k > 0 ? exe : NULL);
	sb_printf(&b, "\nall-models %d\n", all_models);
	for (int i = 0; i < n; i++) {
		sb_printf(&b, "model %s", models[i]);
		sb_file(&b, "file", models[i]);
		sb_printf(&b, "\n");
	}
	if (opts != NULL)
		sb_printf(&b, "%s", opts);
	char co[4200];
	snprintf(co, sizeof co, "%s/clock-offsets.txt", path);
	sb_printf(&b, "clock-offsets.txt");
	sb_file(&b, "file", co);
	sb_printf(&b, "\n");
	for (size_t i = 0; i < weft_nstreams(t); i++) {
		const struct weft_stream *st = weft_stream_at(t, i);
		sb_printf(&b, "stream %s", st->relpath);
		sb_file(&b, "obs", st->obs_path);
		sb_file(&b, "json", weft_stream_json_path(t, i));
		sb_printf(&b, "\n");
	}
	weft_close(t);
	return b.s;
}

int trace_cache_dir_writable(const char *dir)
{
	struct stat sb;
	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || access(dir, W_OK | X_OK) != 0)
		return 0;
	mode_t w = sb.st_uid == geteuid() ? S_IWUSR : sb.st_gid == getegid() ? S_IWGRP :
		S_IWOTH;
	return geteuid() != 0 || (sb.st_mode & w) != 0;
}

int trace_cache_path(const char *cmd, const char *path, const char *name, const char *ext,
		const char *instead, char *out, size_t cap)
{
	if (trace_cache_dir_writable(path)) {
		if (snprintf(out, cap, "%s/%s", path, name) >= (int) cap) {
			fprintf(stderr, "weft %s: TRACE is too long; run `weft %s --help`\n", cmd, cmd);
			return -1;
		}
		return 0;
	}
	char real[PATH_MAX];
	if (realpath(path, real) == NULL) {
		fprintf(stderr, "weft %s: %s: %s\n", cmd, path, strerror(errno));
		return -1;
	}
	char dir[4200];
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	if (xdg != NULL && xdg[0] == '/')
		snprintf(dir, sizeof dir, "%s/weft", xdg);
	else if (home != NULL && home[0] != '\0')
		snprintf(dir, sizeof dir, "%s/.cache/weft", home);
	else {
		fprintf(stderr, "weft %s: the trace directory cannot be written into, and neither "
				"XDG_CACHE_HOME nor HOME names a cache directory: %s\n", cmd, instead);
		return -1;
	}
	/* the directories, made as needed (only the last one ours: 0700) */
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) != 0 && errno != EEXIST)
			break;
		*p = '/';
	}
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "weft %s: cannot create the cache directory %s: %s\n", cmd, dir,
				strerror(errno));
		return -1;
	}
	/* FNV-1a of the real path, after its last component */
	uint64_t h = 0xcbf29ce484222325u;
	for (const char *c = real; *c; c++)
		h = (h ^ (unsigned char) *c) * 0x100000001b3u;
	const char *base = strrchr(real, '/');
	base = base != NULL && base[1] != '\0' ? base + 1 : "root";
	char nm[96];
	size_t k = 0;
	for (; *base && k < 40; base++)
		nm[k++] = (*base >= 'a' && *base <= 'z') || (*base >= 'A' && *base <= 'Z') ||
			(*base >= '0' && *base <= '9') || *base == '-' || *base == '_' ||
			*base == '.' ? *base : '_';
	nm[k] = '\0';
	if (snprintf(out, cap, "%s/%s-%016" PRIx64 ".%s", dir, nm, h, ext) >= (int) cap) {
		fprintf(stderr, "weft %s: XDG_CACHE_HOME is too long; run `weft %s --help`\n", cmd,
				cmd);
		return -1;
	}
	return 0;
}
