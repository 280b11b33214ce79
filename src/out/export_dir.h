/* SPDX-License-Identifier: MIT */
/*
 * export_dir.h - the check of weft export's output directory, shared by
 * its formats (ctf_dir.c, otf2_dir.c): OUT may be absent or an empty
 * directory; one that holds files is replaced only with --force, and only
 * when the format recognises it as an export of weft's; a symbolic link
 * or anything but a directory is refused.
 */
#ifndef WEFT_EXPORT_DIR_H
#define WEFT_EXPORT_DIR_H

#include <stddef.h>

/* what: the format's export, as a phrase ("a CTF trace"); holds(fd): what
 * the directory open at fd holds (0 empty, 1 an export of weft's in this
 * format, 2 anything else; -1 with errno). Returns -1 with err if out is
 * refused, else 0 with *exists: 0 absent, 1 an empty directory, 2 an
 * export of weft's to replace. */
int export_dir_check(const char *out, int force, const char *what, int (*holds)(int fd),
		int *exists, char *err, size_t errlen);

#endif
