/* SPDX-License-Identifier: MIT */
/*
 * discover.c - finding the streams under a path, as the reference does: a
 * recursive walk for files named stream.json (v3), plus the v1 layout
 * (proc.PID/metadata.json with thread.TID or thread.TID.obs files). Every
 * other regular file is reported as ignored, except clock-offsets.txt and
 * what an emulator writes into the trace dir (its Paraver and Perfetto
 * files at the top, ovniemu's cfg/ tree of *.cfg files).
 *
 * Every directory is read once (by device and inode): a link that leads
 * back to a directory being read (a loop) or to one already read is not
 * followed, with a warning that names it. A symbolic link to a directory
 * outside the one walked (by real path) is not followed either, with a
 * warning naming it and its target, unless the trace was opened with
 * follow_links: `weft index` and `weft sort` would write there, and a link
 * to / would walk the whole file system. Links inside are followed (each
 * directory once); a link to a file is read where it leads (what is
 * written replaces the link, beside it: nothing is written out there).
 *
 * A path inside a trace (a loom, process or thread directory, or deeper)
 * gives the streams under it, and the metadata of the other streams of the
 * whole trace (t->mstreams) for the system: the trace directory is the
 * nearest ancestor that holds the loom.* directory path is in.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "idx_format.h"
#include "trace_internal.h"

#define MAX_DEPTH 64

struct strlist {
	char **v;
	size_t n, cap;
};

/* Adds s (NULL: out of memory) to l; -1 out of memory (s freed). */
static int sl_add(struct strlist *l, char *s)
{
	if (s == NULL)
		return -1;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		char **v = realloc(l->v, cap * sizeof *v);
		if (v == NULL) {
			free(s);
			return -1;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = s;
	return 0;
}

static void sl_free(struct strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

/* A directory read (or being read) by the walk. */
struct seen {
	dev_t dev;
	ino_t ino;
	char *rel;
	int active; /* being read: on the way from the root to here */
};

struct walk {
	struct weft_trace *t;
	struct weft_diag *d; /* where errors and warnings go */
	const char *root;
	char *real_root; /* root's real path: links out of it are not followed */
	struct seen *seen;
	size_t nseen, seencap;
	struct strlist v3;      /* relpaths of stream dirs */
	struct strlist v1;      /* relpaths of v1 stream files */
	struct strlist stray;   /* relpaths of ignored files */
	struct strlist orphans; /* stream.obs without stream.json */
	struct strlist v1meta_nostreams;
	int dirs_failed;
	int oom; /* an allocation failed */
};

static void walk_add(struct walk *w, struct strlist *l, char *s)
{
	if (sl_add(l, s) < 0)
		w->oom = 1;
}

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

/* thread.TID.idx: the index of a v1 stream (idx_format.h) */
static int is_v1_index_name(const char *name)
{
	size_t pl = strlen(WEFT_THREAD_PREFIX), n = strlen(name);
	size_t el = strlen(WEFT_V1_IDX_EXT);
	return strncmp(name, WEFT_THREAD_PREFIX, pl) == 0 && n > pl + el
		&& strcmp(name + n - el, WEFT_V1_IDX_EXT) == 0
		&& is_digits(name + pl, n - pl - el);
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
	int is_link;
	int is_dir;
	int is_reg;
	dev_t dev;
	ino_t ino;
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

/* An emulator's output file at the top of the trace dir: weft emu's (and
 * weft view --serve's cache being written), and any Paraver trace the
 * reference's ovniemu writes there (NAME.prv, NAME.pcf, NAME.row). */
static int is_emu_output(const char *name)
{
	static const char *const names[] = WEFT_EMU_OUTPUT_NAMES;
	static const char *const prefixes[] = WEFT_EMU_OUTPUT_PREFIXES;
	for (size_t i = 0; names[i] != NULL; i++)
		if (strcmp(name, names[i]) == 0)
			return 1;
	for (size_t i = 0; prefixes[i] != NULL; i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
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

static size_t find_seen(const struct walk *w, dev_t dev, ino_t ino)
{
	for (size_t i = 0; i < w->nseen; i++)
		if (w->seen[i].dev == dev && w->seen[i].ino == ino)
			return i;
	return SIZE_MAX;
}

/* SIZE_MAX: out of memory (w->oom set). */
static size_t add_seen(struct walk *w, dev_t dev, ino_t ino, const char *rel)
{
	if (w->nseen == w->seencap) {
		size_t cap = w->seencap ? 2 * w->seencap : 16;
		struct seen *v = realloc(w->seen, cap * sizeof *v);
		if (v == NULL) {
			w->oom = 1;
			return SIZE_MAX;
		}
		w->seen = v;
		w->seencap = cap;
	}
	struct seen *v = &w->seen[w->nseen];
	v->dev = dev;
	v->ino = ino;
	v->rel = weft_strdup(rel);
	v->active = 1;
	if (v->rel == NULL) {
		w->oom = 1;
		return SIZE_MAX;
	}
	return w->nseen++;
}

/* A directory entry that leads to a directory read already: a warning. */
static void warn_seen(struct walk *w, const char *crel, size_t k)
{
	char *link = weft_path_join(w->root, crel);
	char *dir = weft_path_join(w->root, w->seen[k].rel);
	if (link == NULL || dir == NULL)
		w->oom = 1;
	else if (w->seen[k].active)
		weft_warnf(w->d, "%s: a link loop: it leads back to %s, which contains it; "
				"not followed", link, dir);
	else
		weft_warnf(w->d, "%s: leads to %s, which was read already; not followed",
				link, dir);
	free(link);
	free(dir);
}

/* Whether the symbolic link at p (crel under the root), to a directory,
 * leads out of the root: then it is warned about, naming its target, and
 * not followed, unless links are followed. */
static int link_out(struct walk *w, const char *p, const char *crel)
{
	if (w->t->follow_links || w->real_root == NULL)
		return 0;
	char *target = realpath(p, NULL);
	if (target == NULL)
		return 1; /* gone since */
	size_t rl = strlen(w->real_root);
	int inside = strcmp(w->real_root, "/") == 0 || (strncmp(target, w->real_root, rl) == 0
			&& (target[rl] == '\0' || target[rl] == '/'));
	if (!inside) {
		char *link = weft_path_join(w->root, crel);
		if (link == NULL)
			w->oom = 1;
		else
			weft_warnf(w->d, "%s: a symbolic link to %s, outside %s; not followed "
					"(--follow-links follows it)", link, target, w->root);
		free(link);
	}
	free(target);
	return !inside;
}

static int walk_dir(struct walk *w, const char *rel, const char *root_base, int depth)
{
	char *full = weft_path_join(w->root, rel);
	if (full == NULL)
		return weft_oom(w->d, "looking for the streams under %s", w->root);
	DIR *dir = opendir(full);
	if (dir == NULL) {
		int r = weft_fail(w->d, "%s: cannot open the directory: %s", full,
				strerror(errno));
		free(full);
		return r;
	}
	size_t me = SIZE_MAX;
	if (depth == 0) {
		struct stat rs;
		if (fstat(dirfd(dir), &rs) == 0)
			me = add_seen(w, rs.st_dev, rs.st_ino, rel);
	}
	struct entry *ents = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char *p = weft_path_join(full, de->d_name);
		struct stat st;
		if (p == NULL) {
			w->oom = 1;
			break;
		}
		int ok = lstat(p, &st) == 0;
		int is_link = ok && S_ISLNK(st.st_mode);
		if (is_link)
			ok = stat(p, &st) == 0;
		free(p);
		if (!ok)
			continue; /* dangling link */
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 16;
			struct entry *ne = realloc(ents, nc * sizeof *ne);
			if (ne == NULL) {
				w->oom = 1;
				break;
			}
			ents = ne;
			cap = nc;
		}
		ents[n].name = weft_strdup(de->d_name);
		if (ents[n].name == NULL) {
			w->oom = 1;
			break;
		}
		ents[n].is_link = is_link;
		ents[n].is_dir = S_ISDIR(st.st_mode);
		ents[n].is_reg = S_ISREG(st.st_mode);
		ents[n].dev = st.st_dev;
		ents[n].ino = st.st_ino;
		n++;
	}
	closedir(dir);
	weft_sort(ents, n, sizeof *ents, cmp_entry);
	/* links to directories out of the root, in name order */
	for (size_t i = 0; i < n && !w->oom; i++) {
		if (!ents[i].is_link || !ents[i].is_dir)
			continue; /* a file is read where it leads: nothing is written there */
		char *p = weft_path_join(full, ents[i].name), *crel = rel_join(rel, ents[i].name);
		if (p == NULL || crel == NULL)
			w->oom = 1;
		else if (link_out(w, p, crel))
			ents[i].is_dir = 0;
		free(p);
		free(crel);
	}
	free(full);

	int has_json = 0, has_meta = 0;
	for (size_t i = 0; i < n; i++) {
		if (ents[i].is_reg && strcmp(ents[i].name, WEFT_STREAM_JSON) == 0)
			has_json = 1;
		if (ents[i].is_reg && strcmp(ents[i].name, WEFT_V1_METADATA) == 0)
			has_meta = 1;
	}
	const char *bn = base_name(rel, root_base);
	int v1proc = has_meta && strncmp(bn, WEFT_PROC_PREFIX, strlen(WEFT_PROC_PREFIX)) == 0;
	if (has_json && !w->oom)
		walk_add(w, &w->v3, weft_strdup(rel));
	size_t v1count = 0;
	int r = 0;
	for (size_t i = 0; i < n && r == 0 && !w->oom; i++) {
		const char *name = ents[i].name;
		if (ents[i].is_dir) {
			char *crel = rel_join(rel, name);
			size_t k = crel != NULL ? find_seen(w, ents[i].dev, ents[i].ino) : SIZE_MAX;
			if (crel == NULL) {
				w->oom = 1;
			} else if (k != SIZE_MAX) {
				warn_seen(w, crel, k);
			} else if (depth + 1 > MAX_DEPTH) {
				r = weft_fail(w->d, "%s/%s: directories nested too deep "
						"(more than %d levels)", w->root, crel, MAX_DEPTH);
			} else {
				size_t c = add_seen(w, ents[i].dev, ents[i].ino, crel);
				if (c != SIZE_MAX) {
					r = walk_dir(w, crel, root_base, depth + 1);
					w->seen[c].active = 0;
				}
			}
			free(crel);
			continue;
		}
		if (!ents[i].is_reg)
			continue;
		char *frel = rel_join(rel, name);
		if (frel == NULL) {
			w->oom = 1;
		} else if (has_json && (strcmp(name, WEFT_STREAM_JSON) == 0
					|| strcmp(name, WEFT_STREAM_OBS) == 0
					|| strcmp(name, WEFT_STREAM_IDX) == 0)) {
			free(frel);
		} else if (v1proc && is_v1_index_name(name)) {
			free(frel);
		} else if (v1proc && strcmp(name, WEFT_V1_METADATA) == 0) {
			free(frel);
		} else if (v1proc && is_v1_stream_name(name)) {
			walk_add(w, &w->v1, frel);
			v1count++;
		} else if (depth == 0 && (strcmp(name, WEFT_CLOCK_OFFSETS) == 0
					|| strcmp(name, WEFT_MIDX_NAME) == 0
					|| is_emu_output(name))) {
			free(frel);
		} else if (depth > 0 && is_emu_cfg(rel, name)) {
			free(frel);
		} else if (strcmp(name, WEFT_STREAM_OBS) == 0) {
			walk_add(w, &w->orphans, weft_strdup(frel));
			walk_add(w, &w->stray, frel);
		} else {
			walk_add(w, &w->stray, frel);
		}
	}
	if (v1proc && v1count == 0 && !w->oom)
		walk_add(w, &w->v1meta_nostreams, rel_join(rel, WEFT_V1_METADATA));
	if (w->oom && r == 0)
		r = weft_oom(w->d, "looking for the streams under %s", w->root);
	if (me != SIZE_MAX)
		w->seen[me].active = 0;
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
	struct weft_wstream *s = calloc(1, sizeof *s);
	if (s == NULL)
		return NULL;
	s->fd = -1;
	s->relpath = weft_strdup(rel);
	s->pub.relpath = s->relpath;
	(void) t;
	if (s->relpath == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

static int cmp_stream(const void *a, const void *b)
{
	const struct weft_wstream *x = *(struct weft_wstream *const *) a;
	const struct weft_wstream *y = *(struct weft_wstream *const *) b;
	return strcmp(x->relpath, y->relpath);
}

static void walk_free(struct walk *w)
{
	sl_free(&w->v3);
	sl_free(&w->v1);
	sl_free(&w->stray);
	sl_free(&w->orphans);
	sl_free(&w->v1meta_nostreams);
	for (size_t i = 0; i < w->nseen; i++)
		free(w->seen[i].rel);
	free(w->seen);
	free(w->real_root);
}

/* The streams the walk found under path, sorted by relpath; NULL: out of
 * memory. */
static struct weft_wstream **make_streams(struct weft_trace *t, const struct walk *w,
		const char *path, size_t *count)
{
	size_t n = w->v3.n + w->v1.n;
	struct weft_wstream **v = weft_calloc(n, sizeof *v);
	if (v == NULL)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < w->v3.n; i++) {
		struct weft_wstream *s = new_stream(t, w->v3.v[i]);
		if (s == NULL)
			goto oom;
		v[k++] = s;
		char *dir = weft_path_join(path, w->v3.v[i]);
		if (dir == NULL)
			goto oom;
		s->json_path = weft_path_join(dir, WEFT_STREAM_JSON);
		s->obs_path = weft_path_join(dir, WEFT_STREAM_OBS);
		s->pub.obs_path = s->obs_path;
		free(dir);
		s->pub.meta_version = WEFT_META_VERSION;
		if (s->json_path == NULL || s->obs_path == NULL)
			goto oom;
	}
	for (size_t i = 0; i < w->v1.n; i++) {
		struct weft_wstream *s = new_stream(t, w->v1.v[i]);
		if (s == NULL)
			goto oom;
		v[k++] = s;
		s->obs_path = weft_path_join(path, w->v1.v[i]);
		s->pub.obs_path = s->obs_path;
		char *dir = s->obs_path != NULL ? weft_strdup(s->obs_path) : NULL;
		if (dir == NULL)
			goto oom;
		char *sl = strrchr(dir, '/');
		if (sl)
			*sl = '\0';
		s->json_path = weft_path_join(sl ? dir : ".", WEFT_V1_METADATA);
		free(dir);
		s->pub.meta_version = WEFT_META_V1_VERSION;
		if (s->json_path == NULL)
			goto oom;
	}
	weft_sort(v, n, sizeof *v, cmp_stream);
	*count = n;
	return v;
oom:
	for (size_t i = 0; i < k; i++)
		weft_wstream_free(v[i]);
	free(v);
	return NULL;
}

void weft_wstream_free(struct weft_wstream *s)
{
	weft_meta_free(&s->meta);
	if (s->json)
		json_decref(s->json);
	free(s->relpath);
	free(s->obs_path);
	free(s->json_path);
	free(s);
}

/* The identity of the file that makes a stream (its stream.json, or the v1
 * thread file): 0, or -1 if it cannot be known. */
static int stream_id(const struct weft_wstream *s, dev_t *dev, ino_t *ino)
{
	struct stat st;
	const char *f = s->pub.meta_version == WEFT_META_VERSION ? s->json_path : s->obs_path;
	if (stat(f, &st) != 0)
		return -1;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

/* path is inside a trace: the metadata of the streams of the trace outside
 * path. A trace that cannot be read as a whole leaves the system to path's
 * streams, with a warning. */
static int find_mstreams(struct weft_trace *t, const char *path, const char *abs)
{
	char *subrel = NULL;
	int oom = 0;
	char *root = weft_find_trace_root(path, abs, &subrel, &oom);
	if (oom)
		return weft_oom(&t->diag, "looking for the trace around %s", path);
	if (root == NULL)
		return 0;
	t->inside = 1;
	char err[WEFT_ERR_MAX];
	struct weft_diag quiet = { 0 };
	quiet.mode = t->diag.mode;
	quiet.err = err;
	quiet.errlen = sizeof err;
	struct walk w;
	memset(&w, 0, sizeof w);
	w.t = t;
	w.d = &quiet;
	w.root = root;
	w.real_root = realpath(root, NULL);
	const char *slash = strrchr(root, '/');
	int wr = walk_dir(&w, ".", slash ? slash + 1 : root, 0);
	if (wr < 0 && (w.oom || quiet.oom)) {
		walk_free(&w);
		free(root);
		free(subrel);
		return weft_oom(&t->diag, "looking for the trace around %s", path);
	}
	if (wr < 0) {
		weft_warnf(&t->diag, "cannot read the whole trace %s around %s (%s); the system "
				"is taken from %s alone", root, path, err, path);
		walk_free(&w);
		free(root);
		free(subrel);
		return 0;
	}
	size_t n = 0;
	struct weft_wstream **all = make_streams(t, &w, root, &n);
	walk_free(&w);
	dev_t *devs = weft_calloc(t->nstreams, sizeof *devs);
	ino_t *inos = weft_calloc(t->nstreams, sizeof *inos);
	int *known = weft_calloc(t->nstreams, sizeof *known);
	t->mstreams = weft_calloc(n, sizeof *t->mstreams);
	if (all == NULL || devs == NULL || inos == NULL || known == NULL || t->mstreams == NULL) {
		for (size_t i = 0; all != NULL && i < n; i++)
			weft_wstream_free(all[i]);
		free(all);
		free(devs);
		free(inos);
		free(known);
		free(t->mstreams);
		t->mstreams = NULL;
		free(root);
		free(subrel);
		return weft_oom(&t->diag, "looking for the trace around %s", path);
	}
	for (size_t i = 0; i < t->nstreams; i++)
		known[i] = stream_id(t->streams[i], &devs[i], &inos[i]) == 0;
	for (size_t i = 0; i < n; i++) {
		struct weft_wstream *s = all[i];
		dev_t dev;
		ino_t ino;
		int mine = 0;
		if (stream_id(s, &dev, &ino) == 0)
			for (size_t k = 0; k < t->nstreams && !mine; k++)
				mine = known[k] && devs[k] == dev && inos[k] == ino;
		if (mine) {
			weft_wstream_free(s);
			continue;
		}
		s->meta_only = 1;
		t->mstreams[t->nmstreams++] = s;
	}
	free(all);
	free(devs);
	free(inos);
	free(known);
	t->root = root;
	t->subrel = subrel;
	return 0;
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
	w.d = &t->diag;
	w.root = path;
	w.real_root = weft_strdup(abs);
	int r = w.real_root != NULL ? walk_dir(&w, ".", root_base, 0)
		: weft_oom(&t->diag, "looking for the streams under %s", path);
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
		t->streams = make_streams(t, &w, path, &t->nstreams);
		if (t->streams == NULL)
			r = weft_oom(&t->diag, "looking for the streams under %s", path);
		else
			r = find_mstreams(t, path, abs);
	}
	free(abs);
	walk_free(&w);
	return r;
}
