/* SPDX-License-Identifier: MIT */
/*
 * trace_cache.h - a file kept beside a trace and built again only when the
 * trace changed: weft sql's database (TRACE/weft-sql.db, docs/sql.md) and
 * weft view --serve's cache (TRACE/weft-view.cache, docs/view.md). Where it
 * is kept (the trace directory, else $XDG_CACHE_HOME/weft) and its key
 * (what it was built from: weft, the program, the options, the streams'
 * sizes and modification times).
 */
#ifndef WEFT_CLI_TRACE_CACHE_H
#define WEFT_CLI_TRACE_CACHE_H

#include <stddef.h>

/* The directory may be written into: by its permission bits as they apply
 * to this user (root too: a trace made read-only is not written into). */
int trace_cache_dir_writable(const char *dir);

/* Where the file of the trace at path is kept: path/name, or, when path
 * may not be written into, $XDG_CACHE_HOME/weft (else ~/.cache/weft; made
 * as needed) as BASE-HASH.ext, BASE the trace directory's name, HASH one of
 * its real path. cmd names the command in the messages, instead what to
 * do when there is no cache directory ("give -o FILE"). 0, or -1 with the
 * message printed. */
int trace_cache_path(const char *cmd, const char *path, const char *name, const char *ext,
		const char *instead, char *out, size_t cap);

/* What the file of the trace at path depends on, as text: head (weft's
 * version and the file's format), the weft program's size and modification
 * time, -a and each --model file's path, size and modification time (the n
 * files), opts (more options, verbatim: NULL or "" for none),
 * clock-offsets.txt's, and each stream's path with its stream.obs's and
 * stream.json's sizes and modification times (ns). NULL when the trace
 * cannot be opened (the build then says why). Freed by the caller. */
char *trace_cache_key(const char *path, const char *head, int all_models,
		const char *const *models, int n, const char *opts);

#endif
