/* SPDX-License-Identifier: MIT */
/*
 * view.h - `weft view`: the timelines as one self-contained HTML page
 * (docs/view.md). An output of the emulator (src/out/out.h, given to the
 * driver through its open_output hook) collects, per row (every thread,
 * then every CPU, in the .row files' order and labels) and per channel of
 * the catalogue that the thread or CPU view holds, the intervals that
 * `weft sql`'s interval table holds (the same rules: a value from one
 * record to the next, a null value ends it, a repeated value continues it,
 * none of no length), and computes at its close a summary pyramid per row
 * and channel: per power-of-two time bucket, the time of each value
 * (dominant first; min, max and mean for counters). The page holds the
 * pyramid and the intervals up to a budget; `weft view --serve` answers the
 * rest from the collection's temporary file (view_data_spill, serve.c).
 */
#ifndef WEFT_VIEW_VIEW_H
#define WEFT_VIEW_VIEW_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct emu;
struct out;
struct view_data;

/* An empty collection (NULL when out of memory). It keeps every interval
 * unless view_data_keep limits them. */
struct view_data *view_data_new(void);
/* Before the run: the collection keeps the intervals of the tracks while
 * their JSON (as the page writes it) is at most budget bytes; beyond it the
 * largest tracks' intervals are dropped, down to 15/16 of it (their summary
 * pyramids are then built as they arrive), so the collection's memory is bounded by the budget and
 * the pyramids whatever the trace's length (docs/view.md). */
void view_data_keep(struct view_data *vd, uint64_t budget);
/* Before the run (--serve): the intervals beyond the budget are written to
 * an unlinked temporary file in dir (NULL: $TMPDIR, else /tmp), so that
 * the server answers every tile exactly with the collection's memory
 * still bounded by the budget. 0, or -1 with err. */
int view_data_spill(struct view_data *vd, const char *dir, char *err, size_t errlen);
/* --serve's cache (cache.c, docs/view.md "The cache"): before the run,
 * view_data_spill's file made in dir instead (O_TMPFILE, else a named
 * temporary removed unless it becomes the cache), its header's room and
 * key (text) first. 0, or -1 with err. */
int view_cache_begin(struct view_data *vd, const char *dir, const char *key, char *err,
		size_t errlen);
/* After the run: the collection written after the chunks, the header
 * completed, the file synced and made path (renamed over it: nothing
 * half-written is ever under that name; a path that is not a regular file
 * is not replaced). 0, or -1 with err (vd still serves). */
int view_cache_commit(struct view_data *vd, const char *path, char *err, size_t errlen);
/* path, when it exists, is a regular file (lstat): 0, or -1 with err
 * ("PATH: is a symbolic link: not replaced (...)"). */
int view_cache_refused(const char *path, char *err, size_t errlen);
/* The cache at path read back when its key is key (its chunks then read
 * by the server from it): 0 (*out the collection, complete), 1 (no file,
 * or another key), -1 (not a cache to trust: err says "byte N: what was
 * wrong"). Every count, offset and length is checked against the file's
 * size before anything is allocated from it. */
int view_cache_load(const char *path, const char *key, struct view_data **out, char *err,
		size_t errlen);
/* Tracks whose intervals were beyond the budget (after the run). */
size_t view_ndropped(const struct view_data *vd);
void view_data_free(struct view_data *vd);

/* The output that fills vd during a run (the driver's open_output hook).
 * Its close completes vd (labels known at the end, pyramids); its commit
 * only frees the output; its discard leaves vd incomplete. NULL with err. */
struct out *view_out_open(struct view_data *vd, const struct emu *emu, char *err,
		size_t errlen);

/* The catalogue name of a channel the collection holds: 1, else 0. */
int view_has_channel(const struct view_data *vd, const char *name);
/* The channels collected, by index (catalogue names). */
size_t view_nchans(const struct view_data *vd);
const char *view_chan_name(const struct view_data *vd, size_t i);
/* Rows and intervals collected (all channels). */
size_t view_nrows(const struct view_data *vd);
uint64_t view_nintervals(const struct view_data *vd);

struct view_page_opts {
	const char *title;    /* the trace's path, shown as text */
	uint64_t budget;      /* bytes of intervals the page may hold */
	const char *channel;  /* the initial colour channel (NULL: ovni.thread.state) */
	int serve;            /* the page asks a server for what it lacks */
	int64_t from;         /* the window's start the run used (ns after the first event) */
	int *complete;        /* non-NULL: set to 1 when every interval fit the budget */
};

/* The page on f. 0, or -1 with err (a write error). */
int view_write_page(const struct view_data *vd, const struct view_page_opts *o, FILE *f,
		char *err, size_t errlen);
/* The page as the file path, written aside and renamed (src/out/out_file.h);
 * *size: its bytes. 0, or -1 with err. */
int view_write_file(const struct view_data *vd, const struct view_page_opts *o,
		const char *path, uint64_t *size, char *err, size_t errlen);

/* `weft view --serve`: HTTP on 127.0.0.1:port (0: a free one), one request
 * per connection, up to 32 connections at a time in one thread: GET / (the
 * page), GET /tile?c=&r0=&r1=&l=&i= (intervals of rows r0..r1 of channel c
 * in [i*1024*2^l, (i+1)*1024*2^l)), GET /at?c=&r=&t= (the interval at t);
 * anything else 404, any other method 405; a Host or Origin not the
 * server's 403. bound(ctx, port) is called once listening. Returns 0 once
 * *stop is set (SIGINT), -1 with err. */
int view_serve(const struct view_data *vd, const struct view_page_opts *o, int port,
		const volatile sig_atomic_t *stop, void (*bound)(void *ctx, int port), void *ctx,
		char *err, size_t errlen);

/* The text of the page (generated from page.html at build time). */
extern const char *const view_page_text;
extern const size_t view_page_len;

#endif
