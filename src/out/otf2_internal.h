/* SPDX-License-Identifier: MIT */
/*
 * otf2_internal.h - the parts of `weft export otf2` (otf2.h): the sink
 * (otf2.c) and its output directory (otf2_dir.c).
 */
#ifndef WEFT_OUT_OTF2_INTERNAL_H
#define WEFT_OUT_OTF2_INTERNAL_H

#include <limits.h>
#include <stddef.h>

#include "export_dir.h"

/* The archive's name in the output directory: traces.otf2 (the anchor
 * file), traces.def (the global definitions), traces/ (a .evt and a .def
 * file per location). */
#define OTF2_ARCHIVE_NAME "traces"
/* The anchor file's creator: --force replaces only an archive with it. */
#define OTF2_CREATOR "weft export otf2"

/* Checks out (absent, an empty directory, or with force an archive weft
 * wrote; never a symbolic link) and makes the temporary directory beside
 * it. 0, or -1 with err. Then export_dir_commit or export_dir_discard. */
int otf2_dir_open(struct export_dir *d, const char *out, int force, char *err, size_t errlen);

#endif
