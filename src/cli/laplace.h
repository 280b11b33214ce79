/* SPDX-License-Identifier: MIT */
/*
 * laplace.h - what `weft split` (cmd_split.c) and `weft import laplace`
 * (cmd_import.c) share: Laplace's per-process layout (docs/export.md,
 * "Laplace"): the record tags, the names of its files, the index file, and
 * an output directory built aside and renamed to its name.
 * Header-only because src/cli builds every cmd_*.c and nothing else.
 */
#ifndef WEFT_CLI_LAPLACE_H
#define WEFT_CLI_LAPLACE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The laplace model (src/model/laplace/laplace.yaml): its byte, the
 * category of the references (value: the tag) and of the kernel records. */
#define LAP_BYTE 'L'
#define LAP_CAT_REF 'R'
#define LAP_CAT_KREC 'K'
/* A reference's jumbo data: u64 cpage, u32 vpage, u32 length, then what the
 * importer derives: u64 count (of the task's references of its kind), u64
 * pages (virtual pages the task touched), u64 shared (shared canonical pages
 * the task touched), each up to and including this reference. */
#define LAP_REF_DATA 40u
#define LAP_REF_TAGS "rwiRWI"
/* The tag of a record that is an ovni event of another kind, kept whole. */
#define LAP_TAG_EVENT 'e'
#define LAP_KERNEL_FILE "kernel"
#define LAP_INDEX_FILE "index"
#define LAP_NAME_MAX 200
/* The longest line weft import laplace reads. */
#define LAP_LINE_MAX 65536u

/* Whether c may be a kernel record's tag: printable, no space, and not a
 * reference's tag nor e. */
static inline int lap_krec_tag(int c)
{
	return c > 0x20 && c < 0x7f && c != LAP_TAG_EVENT && strchr(LAP_REF_TAGS, c) == NULL;
}

/* Whether name may name a directory or file of the layout: 1 to
 * LAP_NAME_MAX letters, digits, '.', '_', '-', '+', not starting with '.'. */
static inline int lap_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > LAP_NAME_MAX || name[0] == '.')
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
					|| c == '.' || c == '_' || c == '-' || c == '+'))
			return 0;
	}
	return 1;
}

static const char lap_hex[] = "0123456789abcdef";

/* Writes v as 16 lower-case hex digits at p. */
static inline char *lap_hex64(char *p, uint64_t v)
{
	for (int i = 15; i >= 0; i--) {
		p[i] = lap_hex[v & 0xf];
		v >>= 4;
	}
	return p + 16;
}

/* The value of a lower-case hex digit, or -1. */
static inline int lap_xdigit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The index file's text before its file lines (split writes it, the tests
 * compare it). */
static inline void lap_index_head(FILE *f, const char *by)
{
	fprintf(f, "# Laplace per-process merge layout, written by weft split "
			"(docs/export.md, \"Laplace\")\n"
			"# by: %s\n"
			"# records, one a line, by type tag:\n"
			"#   r w i R W I: tag clock length vpage cpage\n"
			"#   e: tag clock mcv flags payload\n"
			"#   other tags (kernel records): tag clock fields\n"
			"# files (directory/file records):\n", by);
}

/* ---- an output directory built aside ----
 * The output OUT is built as a fresh directory beside it (.NAME.weft-XXXXXX,
 * mode 0700 while it is written) and renamed to OUT when it is complete. OUT
 * may be absent or an empty directory (replaced by the rename; kept as it was
 * when the run fails); a symbolic link, another kind of file or a directory
 * with entries (or that cannot be read) is refused before anything is
 * written. */
struct lap_outdir {
	char out[4096];
	char tmp[4096];
};

/* 0, or 1 after printing why ("weft CMD: ..."). */
static inline int lap_outdir_open(const char *cmd, struct lap_outdir *o, const char *out)
{
	struct stat sb;
	size_t n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		n--;
	if (n == 0 || n >= sizeof o->out - 32) {
		fprintf(stderr, "weft %s: output name too long or empty\n", cmd);
		return 1;
	}
	memcpy(o->out, out, n);
	o->out[n] = '\0';
	if (lstat(o->out, &sb) == 0) {
		if (S_ISLNK(sb.st_mode)) {
			fprintf(stderr, "weft %s: %s: is a symbolic link; the output is never written "
					"through a link\n", cmd, o->out);
			return 1;
		}
		if (!S_ISDIR(sb.st_mode)) {
			fprintf(stderr, "weft %s: %s: exists and is not a directory\n", cmd, o->out);
			return 1;
		}
		DIR *d = opendir(o->out);
		struct dirent *e = NULL;
		while (d != NULL && (e = readdir(d)) != NULL)
			if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
				break;
		if (d != NULL)
			closedir(d);
		if (d == NULL || e != NULL) {
			fprintf(stderr, "weft %s: %s: exists and is not empty (remove it first)\n",
					cmd, o->out);
			return 1;
		}
		/* an empty directory: the rename at the end replaces it */
	}
	const char *slash = strrchr(o->out, '/');
	size_t dlen = slash == NULL ? 0 : (size_t) (slash - o->out) + 1;
	int w = snprintf(o->tmp, sizeof o->tmp, "%.*s.%s.weft-XXXXXX", (int) dlen, o->out,
			o->out + dlen);
	int cut = w < 0 || (size_t) w >= sizeof o->tmp; /* not so: out has at most 4063 bytes */
	if (cut)
		errno = ENAMETOOLONG;
	if (cut || mkdtemp(o->tmp) == NULL) {
		fprintf(stderr, "weft %s: cannot create a directory beside %s: %s\n", cmd, o->out,
				strerror(errno));
		return 1;
	}
	return 0;
}

/* Removes the tree under path (what this run wrote: directories and
 * regular files, at most 4 levels). */
static inline void lap_rmtree(const char *path, int depth)
{
	DIR *d = opendir(path);
	if (d != NULL) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			char sub[4096];
			if ((size_t) snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= sizeof sub)
				continue;
			struct stat sb;
			if (lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode) && depth > 0)
				lap_rmtree(sub, depth - 1);
			else
				unlink(sub);
		}
		closedir(d);
	}
	rmdir(path);
}

/* ok: the output is complete: renamed to its name (0, or 1 after printing
 * why); otherwise removed (returns 1). */
static inline int lap_outdir_close(const char *cmd, struct lap_outdir *o, int ok)
{
	if (ok) {
		mode_t um = umask(0);
		umask(um);
		if (chmod(o->tmp, 0777 & ~um) != 0 || rename(o->tmp, o->out) != 0) {
			fprintf(stderr, "weft %s: cannot rename %s to %s: %s\n", cmd, o->tmp, o->out,
					strerror(errno));
			lap_rmtree(o->tmp, 4);
			return 1;
		}
		return 0;
	}
	lap_rmtree(o->tmp, 4);
	return 1;
}

/* Creates the regular file path (it must not exist: O_EXCL, never through a
 * link); the fd or -1. */
static inline int lap_create(const char *path)
{
	return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
}

#endif
