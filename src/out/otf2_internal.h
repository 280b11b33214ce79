/* SPDX-License-Identifier: MIT */
/*
 * otf2_internal.h - the parts of `weft export otf2` (otf2.h): the sink
 * (otf2.c) and its output directory (otf2_dir.c).
 */
#ifndef WEFT_OUT_OTF2_INTERNAL_H
#define WEFT_OUT_OTF2_INTERNAL_H

#include <limits.h>
#include <stddef.h>

/* The archive's name in the output directory: traces.otf2 (the anchor
 * file), traces.def (the global definitions), traces/ (a .evt and a .def
 * file per location). */
#define OTF2_ARCHIVE_NAME "traces"
/* The anchor file's creator: --force replaces only an archive with it. */
#define OTF2_CREATOR "weft export otf2"

struct otf2_dir {
	char out[PATH_MAX]; /* the directory asked for */
	char tmp[PATH_MAX]; /* where the archive is written: OUT.weft-otf2-XXXXXX */
};

/* Checks out (absent, an empty directory, or with force an archive weft
 * wrote; never a symbolic link) and makes the temporary directory beside
 * it. 0, or -1 with err. */
int otf2_dir_open(struct otf2_dir *d, const char *out, int force, char *err, size_t errlen);
/* Renames the temporary directory over out (checked again), removing the
 * archive it replaces. 0, or -1 with err (the temporary removed). */
int otf2_dir_commit(struct otf2_dir *d, int force, char *err, size_t errlen);
/* Removes the temporary directory and what it holds. */
void otf2_dir_discard(struct otf2_dir *d);

#endif
