/* SPDX-License-Identifier: MIT */
/* trace.c - the public API of libweft: open, inspect, close (the iteration
 * is in next.c). */
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "opts_size.h"
#include "trace_internal.h"

/* Read chunks: large for few streams, smaller for many, so that memory
 * stays bounded by the number of streams, not the trace size; never larger
 * than a stream's file needs. */
#define CHUNK_MIN (16u << 10)
#define CHUNK_BUDGET (32u << 20)

/* Tests and fuzzers: a smaller chunk reaches the chunk-boundary paths with
 * small files (0: the normal size). */
size_t weft_chunk_override;

size_t weft_chunk_size(const struct weft_trace *t, const struct weft_wstream *s, unsigned nring)
{
	if (weft_chunk_override >= WEFT_EV_MAX_NORMAL_SIZE)
		return weft_chunk_override < WEFT_CHUNK_MAX ? weft_chunk_override : WEFT_CHUNK_MAX;
	size_t cap = CHUNK_BUDGET / ((t->nstreams ? t->nstreams : 1) * nring);
	if (cap > WEFT_CHUNK_MAX)
		cap = WEFT_CHUNK_MAX;
	if (cap < CHUNK_MIN)
		cap = CHUNK_MIN;
	uint64_t body = s->fsize - s->prod.off; /* the events' bytes */
	if (body < cap) /* a small file: all of it, rounded up to lines */
		cap = body < 64 ? 64 : (size_t) ((body + 63) & ~(uint64_t) 63);
	return cap;
}

static void close_all(struct weft_trace *t)
{
	weft_readahead_stop(t);
	for (size_t i = 0; i < t->nstreams; i++) {
		struct weft_wstream *s = t->streams[i];
		weft_stream_close(s);
		weft_wstream_free(s);
	}
	free(t->streams);
	t->streams = NULL;
	t->nstreams = 0;
	weft_free_system(t);
	free(t->hkey);
	free(t->hs);
	free(t->path);
}

void weft_close(struct weft_trace *t)
{
	if (t == NULL)
		return;
	close_all(t);
	free(t);
}

struct weft_trace *weft_open(const char *path, const struct weft_open_opts *user_opts,
		char *err, size_t errlen)
{
	/* the caller's struct, whatever its size, into a whole one (opts_size.h) */
	struct weft_open_opts full;
	if (weft_opts_take(&full, sizeof full, user_opts, "weft_open: struct weft_open_opts",
			err, errlen) != 0)
		return NULL;
	const struct weft_open_opts *opts = &full;
	struct weft_trace *t = calloc(1, sizeof *t);
	if (t == NULL) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "out of memory while opening %s", path);
		return NULL;
	}
	t->diag.mode = opts ? opts->mode : WEFT_STRICT;
	t->diag.warn = opts ? opts->warn : NULL;
	t->diag.warn_ctx = opts ? opts->warn_ctx : NULL;
	t->diag.err = t->errbuf;
	t->diag.errlen = sizeof t->errbuf;
	t->raw_order = opts ? opts->clock == WEFT_CLOCK_RAW : 0;
	t->ra_mode = opts ? opts->readahead : WEFT_READAHEAD_AUTO;
	t->backwards = opts ? opts->backwards : WEFT_BACKWARDS_ERROR;
	t->sort.mode = opts ? opts->sort : WEFT_SORT_NONE;
	t->sort.look_back = opts ? opts->sort_look_back : 0;
	t->sort.auto_lb = t->sort.look_back == 0;
	t->sort.budget = opts ? opts->sort_budget : 0;
	t->cut = opts ? opts->cut : WEFT_CUT_ERROR;
	t->seek = opts ? opts->seek != 0 : 0;
	t->seek_clock = opts ? opts->seek_clock : 0;
	t->follow_links = opts ? opts->follow_links != 0 : 0;
	t->path = weft_strdup(path);
	if (t->path == NULL) {
		weft_oom(&t->diag, "opening %s", path);
		goto fail;
	}
	if (t->cut != WEFT_CUT_ERROR && t->cut != WEFT_CUT_WARN && t->cut != WEFT_CUT_QUIET) {
		weft_fail(&t->diag, "weft_open: unknown choice %d for streams cut short",
				(int) t->cut);
		goto fail;
	}
	if (t->diag.mode != WEFT_STRICT && t->diag.mode != WEFT_LENIENT) {
		weft_fail(&t->diag, "weft_open: unknown mode %d", (int) t->diag.mode);
		goto fail;
	}
	if (t->backwards != WEFT_BACKWARDS_ERROR && t->backwards != WEFT_BACKWARDS_REGIONS
			&& t->backwards != WEFT_BACKWARDS_WARN) {
		weft_fail(&t->diag, "weft_open: unknown rule %d for clocks going backwards",
				(int) t->backwards);
		goto fail;
	}
	if (t->sort.mode != WEFT_SORT_NONE && t->sort.mode != WEFT_SORT_REGIONS) {
		weft_fail(&t->diag, "weft_open: unknown choice %d for sorting on read", (int) t->sort.mode);
		goto fail;
	}
	if (weft_discover(t, path) < 0)
		goto fail;
	if (t->sort.look_back == 0) {
		/* 24 bytes an event of look-back per stream: about 1.5 MiB each
		 * up to 16 streams, 24 MiB over all streams beyond */
		size_t lb = WEFT_SORT_READ_LOOK_BACK;
		if (t->nstreams > 16)
			lb = (16 * (size_t) WEFT_SORT_READ_LOOK_BACK) / t->nstreams;
		if (lb < WEFT_SORT_READ_LOOK_BACK_MIN)
			lb = WEFT_SORT_READ_LOOK_BACK_MIN;
		t->sort.look_back = lb;
	}
	if (weft_load_metadata(t) < 0)
		goto fail;
	if (opts != NULL && opts->accept_unfinished) {
		/* A thread whose process was killed before ovni_thread_free */
		for (size_t i = 0; i < t->nstreams; i++) {
			struct weft_wstream *s = t->streams[i];
			if (s->meta.version != WEFT_META_VERSION || s->meta.has_finished)
				continue;
			if (opts->accept_unfinished == 1) {
				char why[256];
				weft_meta_unfinished_why(&s->meta, why, sizeof why);
				weft_warnf(&t->diag, "%s: %s: accepted as a thread cut short",
						s->json_path, why);
			}
			s->unfinished = 1;
			s->meta.has_finished = 1;
			s->meta.finished = 1;
			/* A thread killed before it flushed its metadata has no
			 * ovni.require either: it requires no model then (the
			 * always-enabled ones only; -a enables every model). */
			if (!s->meta.has_require) {
				if (opts->accept_unfinished == 1)
					weft_warnf(&t->diag, "%s: ovni.require is missing too: the "
						"thread is taken to require no model (its events of "
						"other models than ovni are refused; -a enables every "
						"model)", s->json_path);
				s->meta.has_require = 1;
			}
		}
	}
	if (t->ra_mode != WEFT_READAHEAD_AUTO && t->ra_mode != WEFT_READAHEAD_OFF
			&& t->ra_mode != WEFT_READAHEAD_ON) {
		weft_fail(&t->diag, "weft_open: unknown read-ahead choice %d", (int) t->ra_mode);
		goto fail;
	}
	const char *env = getenv("WEFT_READAHEAD");
	if (t->ra_mode == WEFT_READAHEAD_AUTO && env != NULL) {
		if (strcmp(env, "on") == 0) {
			t->ra_mode = WEFT_READAHEAD_ON;
		} else if (strcmp(env, "off") == 0) {
			t->ra_mode = WEFT_READAHEAD_OFF;
		} else {
			weft_fail(&t->diag, "WEFT_READAHEAD is '%s'; it must be 'on' or 'off' "
					"(or unset)", env);
			goto fail;
		}
	}
	if (weft_sort_budget_env(t) < 0)
		goto fail;
	/* One file descriptor per stream while there are plenty; beyond half
	 * the process's limit, each stream file is opened for each read. */
	int fd_lean = 0;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
			&& (rlim_t) t->nstreams > rl.rlim_cur / 2)
		fd_lean = 1;
	for (size_t i = 0; i < t->nstreams; i++) {
		struct weft_wstream *s = t->streams[i];
		s->fd_lean = fd_lean;
		if (weft_stream_open(t, s) < 0)
			goto fail;
		if (s->fsize == WEFT_OBS_HEADER_SIZE && !s->cut)
			weft_warnf(&t->diag, "stream '%s' has zero events", s->relpath);
	}
	if (weft_build_system(t) < 0)
		goto fail;
	if (opts != NULL && opts->all_models)
		memset(t->allowed, 1, sizeof t->allowed);
	if (weft_load_clock_offsets(t) < 0)
		goto fail;
	for (size_t i = 0; i < t->nstreams; i++) {
		struct weft_wstream *s = t->streams[i];
		s->pub.clock_offset = s->clkoff;
		s->pub.drift_ppb = s->drift_ppb;
		s->pub.drift_t0 = s->drift_t0;
		if (s->drift_ppb != 0)
			continue; /* clk_lo and clk_hi set by weft_load_clock_offsets */
		s->clk_lo = s->clkoff < 0 ? INT64_MIN - s->clkoff : INT64_MIN;
		s->clk_hi = s->clkoff > 0 ? INT64_MAX - s->clkoff : INT64_MAX;
	}
	/* Room for the children of every slot (2n + 2), all sentinels past the
	 * live slots (see merge.c). */
	t->hkey = weft_calloc(2 * t->nstreams + 2, sizeof *t->hkey);
	t->hs = weft_calloc(2 * t->nstreams + 2, sizeof *t->hs);
	if (t->hkey == NULL || t->hs == NULL) {
		weft_oom(&t->diag, "opening %s", path);
		goto fail;
	}
	for (size_t i = 0; i < 2 * t->nstreams + 2; i++)
		t->hkey[i] = INT64_MAX;
	return t;
fail:
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "%s", t->errbuf);
	weft_close(t);
	return NULL;
}

int weft_seek(struct weft_trace *t, int64_t clock)
{
	if (t->started)
		return weft_fail(&t->diag, "weft_seek: the iteration has begun; seek before the "
				"first weft_next call");
	t->seek = 1;
	t->seek_clock = clock;
	return 0;
}

size_t weft_nindexed(const struct weft_trace *t)
{
	return (size_t) t->nindexed;
}

const char *weft_error(const struct weft_trace *t)
{
	return t->errbuf;
}

size_t weft_nstreams(const struct weft_trace *t)
{
	return t->nstreams;
}

const struct weft_stream *weft_stream_at(const struct weft_trace *t, size_t i)
{
	return i < t->nstreams ? &t->streams[i]->pub : NULL;
}

size_t weft_nlooms(const struct weft_trace *t)
{
	return t->nlooms;
}

const struct weft_loom *weft_loom_at(const struct weft_trace *t, size_t i)
{
	return i < t->nlooms ? &t->looms[i]->pub : NULL;
}

size_t weft_nmark_types(const struct weft_trace *t)
{
	return t->nmarks;
}

const struct weft_mark_type *weft_mark_type_at(const struct weft_trace *t, size_t i)
{
	return i < t->nmarks ? &t->marks[i] : NULL;
}

int weft_stream_attr_json(const struct weft_stream *s, const char *dotted_key,
		char *buf, size_t buflen)
{
	const struct weft_wstream *ws = (const struct weft_wstream *) s;
	json_t *v = ws->json;
	const char *k = dotted_key;
	char part[256];
	while (v != NULL && *k) {
		size_t n = strcspn(k, ".");
		if (n >= sizeof part || !json_is_object(v))
			return 0;
		memcpy(part, k, n);
		part[n] = '\0';
		v = json_object_get(v, part);
		k += n;
		if (*k == '.')
			k++;
	}
	if (v == NULL)
		return 0;
	char *txt = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	if (txt == NULL)
		return 0;
	size_t len = strlen(txt);
	if (buf != NULL && buflen > 0)
		snprintf(buf, buflen, "%s", txt);
	free(txt);
	/* snprintf-style: the full length (>= 1: no JSON value serialises to
	 * nothing), so that the caller sees truncation as len >= buflen. */
	return len > INT_MAX ? INT_MAX : (int) len;
}

void weft_trace_set_no_fast(struct weft_trace *t, int no_fast)
{
	t->no_fast = no_fast;
}

uint64_t weft_nevents(const struct weft_trace *t)
{
	return t->nevents;
}

uint64_t weft_nsorted(const struct weft_trace *t)
{
	return t->sort.nsorted;
}

uint64_t weft_nbackwards(const struct weft_trace *t, int in_regions)
{
	return in_regions ? t->nback_in : t->nback_out;
}

int64_t weft_first_clock(const struct weft_trace *t)
{
	int any = 0;
	int64_t v = 0;
	for (size_t i = 0; i < t->nstreams; i++) {
		const struct weft_wstream *s = t->streams[i];
		if (s->has_first) {
			int64_t c = weft_sclock_of(s, s->first_clock);
			if (!any || c < v)
				v = c;
			any = 1;
		}
	}
	return v;
}

int64_t weft_last_clock(const struct weft_trace *t)
{
	int any = 0;
	int64_t v = 0;
	for (size_t i = 0; i < t->nstreams; i++) {
		const struct weft_wstream *s = t->streams[i];
		if (s->has_first) {
			int64_t c = weft_sclock_of(s, s->last_clock);
			if (!any || c > v)
				v = c;
			any = 1;
		}
	}
	return v;
}

size_t weft_ncut(const struct weft_trace *t)
{
	return t->ncut;
}

int weft_stream_cut(const struct weft_trace *t, size_t i, struct weft_cut_info *info)
{
	if (i >= t->nstreams || !t->streams[i]->cut)
		return 0;
	const struct weft_wstream *s = t->streams[i];
	if (info != NULL) {
		memset(info, 0, sizeof *info);
		info->header = s->cut_header;
		info->offset = s->cut_off;
		info->bytes = s->fsize - s->cut_off;
		snprintf(info->why, sizeof info->why, "%s", s->cut_why);
		info->has_last = s->has_first;
		if (s->has_first)
			info->last_sclock = weft_sclock_of(s, s->last_clock);
	}
	return 1;
}

int weft_stream_last_sclock(const struct weft_trace *t, size_t i, int64_t *clock)
{
	if (i >= t->nstreams || !t->streams[i]->has_first)
		return 0;
	const struct weft_wstream *s = t->streams[i];
	if (clock != NULL)
		*clock = weft_sclock_of(s, s->last_clock);
	return 1;
}

int weft_stream_ended(const struct weft_trace *t, size_t i)
{
	return i < t->nstreams && t->streams[i]->ended;
}

const char *weft_stream_json_path(const struct weft_trace *t, size_t i)
{
	return i < t->nstreams ? t->streams[i]->json_path : NULL;
}

int weft_stream_unfinished(const struct weft_trace *t, size_t i)
{
	return i < t->nstreams && t->streams[i]->unfinished;
}
