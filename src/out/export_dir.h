/* SPDX-License-Identifier: MIT */
/*
 * export_dir.h - weft export's output directory, shared by its formats
 * (ctf_dir.c, otf2_dir.c): the files are written into a temporary
 * directory beside OUT (OUT.weft-FMT-XXXXXX, on the same file system),
 * renamed to OUT only when the whole export was written. OUT may be absent
 * or an empty directory; one that holds files is replaced only with
 * --force, and only when the format recognises it as an export of weft's
 * (then exchanged with the new one in one step, and its files removed); a
 * symbolic link or anything but a directory is refused. No symbolic link
 * is followed.
 */
#ifndef WEFT_EXPORT_DIR_H
#define WEFT_EXPORT_DIR_H

#include <limits.h>
#include <stddef.h>

/* What a format tells of its directory. */
struct export_fmt {
	const char *what;      /* its export, as a phrase: "a CTF trace" */
	const char *suffix;    /* the temporary's: ".weft-ctf-XXXXXX" */
	/* What the directory open at fd holds: 0 empty, 1 an export of
	 * weft's in this format, 2 anything else; -1 with errno. */
	int (*holds)(int fd);
	/* Removes what the directory open at fd holds (an export of weft's,
	 * or what was written into the temporary). */
	void (*empty)(int fd);
	int sync;              /* fsync the temporary before the rename */
};

struct export_dir {
	char out[PATH_MAX];  /* the directory asked for */
	char tmp[PATH_MAX];  /* where the files are written: OUT.weft-FMT-XXXXXX */
	int dfd;             /* tmp, opened (O_DIRECTORY, O_NOFOLLOW); -1: none */
	const struct export_fmt *fmt;
};

/* Checks out (absent, an empty directory, or with force an export of
 * weft's in this format; never a symbolic link) and makes the temporary
 * directory beside it, opened at d->dfd. 0, or -1 with err. */
int export_dir_open(struct export_dir *d, const struct export_fmt *fmt, const char *out,
		int force, char *err, size_t errlen);
/* Renames the temporary directory over out (checked again), removing the
 * export it replaces. 0, or -1 with err (the temporary directory removed). */
int export_dir_commit(struct export_dir *d, int force, char *err, size_t errlen);
/* Removes the temporary directory and what it holds (none: nothing). */
void export_dir_discard(struct export_dir *d);

#endif
