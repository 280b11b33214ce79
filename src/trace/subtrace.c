/* SPDX-License-Identifier: MIT */
/*
 * subtrace.c - a path inside a trace (a loom, process or thread directory,
 * or deeper): the trace directory around it, the nearest ancestor that
 * holds the loom.* directory the path is in, written from the path as the
 * user gave it when that names the same directory. discover.c reads the
 * whole trace from there for the metadata of the other streams
 * (t->mstreams, freed here).
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trace_internal.h"

static int is_loom_name(const char *name)
{
	size_t k = strlen(WEFT_LOOM_PREFIX);
	return strncmp(name, WEFT_LOOM_PREFIX, k) == 0 && name[k] != '\0';
}

/* Whether dir holds a loom.* directory (*oom set when memory ran out). */
static int holds_loom(const char *dir, int *oom)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return 0;
	int found = 0;
	struct dirent *de;
	while (!found && (de = readdir(d)) != NULL) {
		if (!is_loom_name(de->d_name))
			continue;
		char *p = weft_path_join(dir, de->d_name);
		struct stat st;
		if (p == NULL) {
			*oom = 1;
			break;
		}
		found = stat(p, &st) == 0 && S_ISDIR(st.st_mode);
		free(p);
	}
	closedir(d);
	return found;
}

/* path with its last levels components taken off, as the user wrote it
 * ("." when nothing is left), or NULL if a component is "." or "..". */
static char *strip_levels(const char *path, size_t levels, int *oom)
{
	char *p = weft_strdup(path);
	if (p == NULL) {
		*oom = 1;
		return NULL;
	}
	for (size_t i = 0; i < levels; i++) {
		size_t n = strlen(p);
		while (n > 1 && p[n - 1] == '/')
			p[--n] = '\0';
		char *sl = strrchr(p, '/');
		const char *comp = sl ? sl + 1 : p;
		if (*comp == '\0' || strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) {
			free(p);
			return NULL;
		}
		if (sl == NULL) {
			free(p);
			if (i + 1 != levels)
				return NULL;
			char *dot = weft_strdup(".");
			if (dot == NULL)
				*oom = 1;
			return dot;
		}
		if (sl == p)
			sl[1] = '\0'; /* "/x": the root directory */
		else
			*sl = '\0';
	}
	return p;
}

/*
 * The trace directory around the directory path (abs: its real path): NULL
 * if path holds a loom.* directory itself or is inside none; else the
 * parent of the nearest loom.* directory that is path or holds it, written
 * from path when it can be ("ovni/loom.vm/proc.1" gives "ovni"), else as a
 * real path; *subrel: path relative to it. NULL with *oom set: out of memory.
 */
char *weft_find_trace_root(const char *path, const char *abs, char **subrel, int *oom)
{
	if (holds_loom(abs, oom) || *oom)
		return NULL;
	char *cur = weft_strdup(abs);
	if (cur == NULL) {
		*oom = 1;
		return NULL;
	}
	size_t levels = 0;
	char *root = NULL;
	for (;;) {
		char *sl = strrchr(cur, '/');
		if (sl == NULL || sl[1] == '\0')
			break; /* the filesystem root */
		levels++;
		int loom = is_loom_name(sl + 1);
		if (sl == cur)
			sl[1] = '\0';
		else
			*sl = '\0';
		if (loom) {
			root = cur;
			break;
		}
	}
	if (root == NULL) {
		free(cur);
		return NULL;
	}
	size_t rl = strlen(root);
	*subrel = weft_strdup(abs + rl + (root[rl - 1] == '/' ? 0 : 1));
	char *shown = *subrel != NULL ? strip_levels(path, levels, oom) : NULL;
	if (*subrel == NULL || *oom) {
		*oom = 1;
		free(*subrel);
		*subrel = NULL;
		free(root);
		return NULL;
	}
	struct stat a, b;
	if (shown != NULL && stat(shown, &a) == 0 && stat(root, &b) == 0
			&& a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
		free(root);
		return shown;
	}
	free(shown);
	return root;
}

/* The state of a trace opened at a path inside it (weft_free_system). */
void weft_free_mstreams(struct weft_trace *t)
{
	for (size_t i = 0; i < t->nmstreams; i++)
		weft_wstream_free(t->mstreams[i]);
	free(t->mstreams);
	t->mstreams = NULL;
	t->nmstreams = 0;
	free(t->root);
	t->root = NULL;
	free(t->subrel);
	t->subrel = NULL;
}
