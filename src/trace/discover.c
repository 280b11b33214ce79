/* SPDX-License-Identifier: MIT */
/*
 * discover.c - finding the streams under a path, as the reference does: a
 * recursive walk for files named stream.json (v3), plus the v1 layout
 * (proc.PID/metadata.json with thread.TID or thread.TID.obs files). Every
 * other regular file is reported as ignored, except clock-offsets.txt and
 * what an emulator writes into the trace dir (its Paraver and Perfetto
 * files at the top, ovniemu's cfg/ tree of *.cfg files).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace_internal.h"

#define MAX_DEPTH 64

struct strlist {
	char **v;
	size_t n, cap;
};

static void sl_add(struct strlist *l, char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = realloc(l->v, l->cap * sizeof *l->v);
		if (l->v == NULL)
			abort();
	}
	l->v[l->n++] = s;
}

static void sl_free(struct strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

struct walk {
	struct weft_trace *t;
	const char *root;
	struct strlist v3;      /* relpaths of stream dirs */
	struct strlist v1;      /* relpaths of v1 stream files */
	struct strlist stray;   /* relpaths of ignored files */
	struct strlist orphans; /* stream.obs without stream.json */
	struct strlist v1meta_nostreams;
	int dirs_failed;
};

static int is_digits(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* thread.TID or thread.TID.obs */
static int is_v1_stream_name(const char *name)
{
	size_t pl = strlen(WEFT_THREAD_PREFIX);
	if (strncmp(name, WEFT_THREAD_PREFIX, pl) != 0)
		return 0;
	const char *rest = name + pl;
	size_t n = strlen(rest);
	size_t el = strlen(WEFT_V1_STREAM_EXT);
	if (n > el && strcmp(rest + n - el, WEFT_V1_STREAM_EXT) == 0)
		n -= el;
	return is_digits(rest, n);
}

static char *rel_join(const char *rel, const char *name)
{
	if (strcmp(rel, ".") == 0)
		return weft_strdup(name);
	return weft_path_join(rel, name);
}

static const char *base_name(const char *rel, const char *abs_base)
{
	if (strcmp(rel, ".") == 0)
		return abs_base;
	const char *s = strrchr(rel, '/');
	return s ? s + 1 : rel;
}

struct entry {
	char *name;
	int is_dir;
	int is_reg;
};

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *) a)->name, ((const struct entry *) b)->name);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && strcmp(s + n - k, suffix) == 0;
}

/* An emulator's output file at the top of the trace dir: weft emu's, and
 * any Paraver trace the reference's ovniemu writes there (NAME.prv,
 * NAME.pcf, NAME.row). */
static int is_emu_output(const char *name)
{
	static const char *const names[] = WEFT_EMU_OUTPUT_NAMES;
	for (size_t i = 0; names[i] != NULL; i++)
		if (strcmp(name, names[i]) == 0)
			return 1;
	return ends_with(name, ".prv") || ends_with(name, ".pcf") || ends_with(name, ".row");
}

/* The Paraver configurations ovniemu writes into the trace dir: *.cfg files
 * anywhere under its top-level cfg/ directory (rel: the file's directory). */
#define EMU_CFG_DIR "cfg"

static int is_emu_cfg(const char *rel, const char *name)
{
	size_t k = strlen(EMU_CFG_DIR);
	return strncmp(rel, EMU_CFG_DIR, k) == 0 && (rel[k] == '\0' || rel[k] == '/')
		&& ends_with(name, ".cfg");
}

static int walk_dir(struct walk *w, const char *rel, const char *root_base, int depth)
{
	char *full = weft_path_join(w->root, rel);
	DIR *dir = opendir(full);
	if (dir == NULL) {
		int r = weft_fail(&w->t->diag, "%s: cannot open the directory: %s", full,
				strerror(errno));
		free(full);
		return r;
	}
	struct entry *ents = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char *p = weft_path_join(full, de->d_name);
		struct stat st;
		int ok = stat(p, &st) == 0;
		free(p);
		if (!ok)
			continue; /* dangling link */
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			ents = realloc(ents, cap * sizeof *ents);
			if (ents == NULL)
				abort();
		}
		ents[n].name = weft_strdup(de->d_name);
		ents[n].is_dir = S_ISDIR(st.st_mode);
		ents[n].is_reg = S_ISREG(st.st_mode);
		n++;
	}
	closedir(dir);
	free(full);
	weft_sort(ents, n, sizeof *ents, cmp_entry);

	int has_json = 0, has_meta = 0;
	for (size_t i = 0; i < n; i++) {
		if (ents[i].is_reg && strcmp(ents[i].name, WEFT_STREAM_JSON) == 0)
			has_json = 1;
		if (ents[i].is_reg && strcmp(ents[i].name, WEFT_V1_METADATA) == 0)
			has_meta = 1;
	}
	const char *bn = base_name(rel, root_base);
	int v1proc = has_meta && strncmp(bn, WEFT_PROC_PREFIX, strlen(WEFT_PROC_PREFIX)) == 0;
	if (has_json)
		sl_add(&w->v3, weft_strdup(rel));
	size_t v1count = 0;
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		const char *name = ents[i].name;
		if (ents[i].is_dir) {
			char *crel = rel_join(rel, name);
			if (depth + 1 > MAX_DEPTH)
				r = weft_fail(&w->t->diag, "%s/%s: directories nested too deep "
						"(more than %d levels)", w->root, crel, MAX_DEPTH);
			else
				r = walk_dir(w, crel, root_base, depth + 1);
			free(crel);
			continue;
		}
		if (!ents[i].is_reg)
			continue;
		char *frel = rel_join(rel, name);
		if (has_json && (strcmp(name, WEFT_STREAM_JSON) == 0
					|| strcmp(name, WEFT_STREAM_OBS) == 0)) {
			free(frel);
		} else if (v1proc && strcmp(name, WEFT_V1_METADATA) == 0) {
			free(frel);
		} else if (v1proc && is_v1_stream_name(name)) {
			sl_add(&w->v1, frel);
			v1count++;
		} else if (depth == 0 && (strcmp(name, WEFT_CLOCK_OFFSETS) == 0
					|| is_emu_output(name))) {
			free(frel);
		} else if (depth > 0 && is_emu_cfg(rel, name)) {
			free(frel);
		} else if (strcmp(name, WEFT_STREAM_OBS) == 0) {
			sl_add(&w->orphans, weft_strdup(frel));
			sl_add(&w->stray, frel);
		} else {
			sl_add(&w->stray, frel);
		}
	}
	if (v1proc && v1count == 0)
		sl_add(&w->v1meta_nostreams, rel_join(rel, WEFT_V1_METADATA));
	for (size_t i = 0; i < n; i++)
		free(ents[i].name);
	free(ents);
	return r;
}

static void list_names(char *buf, size_t len, const struct strlist *l, size_t max)
{
	size_t k = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < l->n && i < max; i++) {
		int m = snprintf(buf + k, len - k, "%s'%s'", i ? ", " : "", l->v[i]);
		if (m < 0 || (size_t) m >= len - k)
			return;
		k += (size_t) m;
	}
	if (l->n > max)
		snprintf(buf + k, len - k, " and %zu more", l->n - max);
}

static struct weft_wstream *new_stream(struct weft_trace *t, const char *rel)
{
	struct weft_wstream *s = weft_xcalloc(1, sizeof *s);
	s->fd = -1;
	s->relpath = weft_strdup(rel);
	s->pub.relpath = s->relpath;
	(void) t;
	return s;
}

static int cmp_stream(const void *a, const void *b)
{
	const struct weft_wstream *x = *(struct weft_wstream *const *) a;
	const struct weft_wstream *y = *(struct weft_wstream *const *) b;
	return strcmp(x->relpath, y->relpath);
}

int weft_discover(struct weft_trace *t, const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return weft_fail(&t->diag, "%s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return weft_fail(&t->diag, "%s: not a directory (give the trace directory, "
				"a directory inside it, or a stream directory)", path);
	char *abs = realpath(path, NULL);
	if (abs == NULL)
		return weft_fail(&t->diag, "%s: %s", path, strerror(errno));
	const char *slash = strrchr(abs, '/');
	const char *root_base = slash ? slash + 1 : abs;

	struct walk w;
	memset(&w, 0, sizeof w);
	w.t = t;
	w.root = path;
	int r = walk_dir(&w, ".", root_base, 0);
	if (r == 0 && w.v3.n + w.v1.n == 0) {
		char names[WEFT_ERR_MAX / 2];
		if (w.orphans.n > 0) {
			list_names(names, sizeof names, &w.orphans, 3);
			r = weft_fail(&t->diag, "no streams found under '%s': %s %s no %s beside it",
					path, names, w.orphans.n == 1 ? "has" : "have", WEFT_STREAM_JSON);
		} else if (w.v1meta_nostreams.n > 0) {
			list_names(names, sizeof names, &w.v1meta_nostreams, 3);
			r = weft_fail(&t->diag, "no streams found under '%s': found v1 metadata %s "
					"but no thread.TID stream files beside it", path, names);
		} else if (w.stray.n > 0) {
			list_names(names, sizeof names, &w.stray, 3);
			r = weft_fail(&t->diag, "no streams found under '%s': no %s (v3) nor "
					"proc.*/%s (v1); only %s", path, WEFT_STREAM_JSON,
					WEFT_V1_METADATA, names);
		} else {
			r = weft_fail(&t->diag, "no streams found under '%s': it holds no files",
					path);
		}
	}
	if (r == 0 && w.stray.n > 0) {
		char names[WEFT_ERR_MAX / 2];
		list_names(names, sizeof names, &w.stray, 8);
		weft_warnf(&t->diag, "ignoring %zu file%s that %s not part of any stream: %s",
				w.stray.n, w.stray.n == 1 ? "" : "s", w.stray.n == 1 ? "is" : "are",
				names);
	}
	if (r == 0) {
		t->nstreams = w.v3.n + w.v1.n;
		t->streams = weft_xcalloc(t->nstreams, sizeof *t->streams);
		size_t k = 0;
		for (size_t i = 0; i < w.v3.n; i++) {
			struct weft_wstream *s = new_stream(t, w.v3.v[i]);
			char *dir = weft_path_join(path, w.v3.v[i]);
			s->json_path = weft_path_join(dir, WEFT_STREAM_JSON);
			s->obs_path = weft_path_join(dir, WEFT_STREAM_OBS);
			s->pub.obs_path = s->obs_path;
			free(dir);
			s->pub.meta_version = WEFT_META_VERSION;
			t->streams[k++] = s;
		}
		for (size_t i = 0; i < w.v1.n; i++) {
			struct weft_wstream *s = new_stream(t, w.v1.v[i]);
			s->obs_path = weft_path_join(path, w.v1.v[i]);
			s->pub.obs_path = s->obs_path;
			char *dir = weft_strdup(s->obs_path);
			char *sl = strrchr(dir, '/');
			if (sl)
				*sl = '\0';
			s->json_path = weft_path_join(sl ? dir : ".", WEFT_V1_METADATA);
			free(dir);
			s->pub.meta_version = WEFT_META_V1_VERSION;
			t->streams[k++] = s;
		}
		weft_sort(t->streams, t->nstreams, sizeof *t->streams, cmp_stream);
	}
	free(abs);
	sl_free(&w.v3);
	sl_free(&w.v1);
	sl_free(&w.stray);
	sl_free(&w.orphans);
	sl_free(&w.v1meta_nostreams);
	return r;
}
