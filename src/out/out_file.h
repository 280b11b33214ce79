/* SPDX-License-Identifier: MIT */
/*
 * out_file.h - internal: a file of an output written aside and renamed.
 *
 * An output file is created as a temporary beside its final name,
 * DIR/.NAME.weft-XXXXXX (O_CREAT | O_EXCL | O_NOFOLLOW: never a file that
 * was there, never through a link; XXXXXX random, so one per run), written,
 * and renamed over DIR/NAME only when the whole run succeeded (out.h:
 * out_commit); a failed run removes it (out_discard), leaving DIR/NAME as it
 * was. DIR/NAME must be absent or a regular file: a symbolic link, a FIFO,
 * a device or a directory there is refused, when the temporary is made and
 * again before the rename.
 */
#ifndef WEFT_OUT_OUT_FILE_H
#define WEFT_OUT_OUT_FILE_H

#include <stddef.h>
#include <stdio.h>

struct out_file {
	char *path; /* DIR/NAME: the final name (messages name it) */
	char *tmp;  /* DIR/.NAME.weft-XXXXXX while it exists, else NULL */
	int fd;     /* open for writing, or -1 */
};

/* Creates the temporary of dir/name (f->fd open for writing). 0, or -1 with
 * the reason in err (nothing left behind; f is then as out_file_init). */
int out_file_open(struct out_file *f, const char *dir, const char *name, char *err,
		size_t errlen);
/* f->fd as a stdio stream (f->fd then belongs to it: f->fd is set to -1);
 * NULL with the reason in err. */
FILE *out_file_stream(struct out_file *f, const char *mode, char *err, size_t errlen);
/* The temporary's descriptor closed: 0 or an errno. */
int out_file_close_fd(struct out_file *f);
/* dir/name is still absent or a regular file: 0, or -1 with err. */
int out_file_check(const struct out_file *f, char *err, size_t errlen);
/* Renames the temporary over the final name (the descriptor must be
 * closed); 0, or -1 with err and the temporary removed. Frees f's names. */
int out_file_commit(struct out_file *f, char *err, size_t errlen);
/* Closes the descriptor and removes the temporary, if any; frees f's names.
 * Safe on an out_file_init'ed or already discarded f. */
void out_file_discard(struct out_file *f);
void out_file_init(struct out_file *f);

/* A scratch file beside dir/name: created as out_file_open does and
 * unlinked at once (it vanishes with its descriptor). A descriptor open for
 * reading and writing, or -1
 * with the reason in err. */
int out_file_scratch(const char *dir, const char *name, char *err, size_t errlen);

/* dir/name may be written over: absent, or a regular file (lstat). 0, or -1
 * with the reason in err ("<path>: is a symbolic link; weft does not write
 * through links", ...). */
int out_file_check_path(const char *path, char *err, size_t errlen);

#endif
