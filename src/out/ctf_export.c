/* SPDX-License-Identifier: MIT */
/*
 * ctf_export.c - the pass of `weft export ctf` over a trace: every event,
 * in the reader's order, encoded in its class (ctf_class.c) and appended
 * to its thread's data stream (ctf_packet.c) at its timestamp, the
 * event's clock with its loom's offset applied minus the clock's offset
 * (the smallest loom offset: with one loom, or looms of one offset, the
 * timestamp is the raw clock in the file). The events a stream lacks
 * (weft_stream_loss: a flight recorder's overwritten runs where they
 * were, the events of signal handlers that could not be stored at its
 * end) grow its packets' events_discarded. The metadata is written last
 * (the classes met on the way are in it), then the directory renamed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctf.h"
#include "ctf_internal.h"

#define BATCH 512
#define CTF_PACKETS_MEMORY (64u << 20)

struct sref {
	const struct weft_stream *s;
	size_t i;
};

struct xstream {
	struct ctf_stream *w;
	int64_t last;         /* the sclock of its last event */
	int any;
	size_t nruns, next_run; /* the flight recorder's lost runs */
	uint64_t dropped;     /* signal handlers' events lost (when unknown) and
	                       * the events a filter left out (weft.filtered) */
};

static int by_ptr(const void *a, const void *b)
{
	const struct sref *x = a, *y = b;
	return x->s < y->s ? -1 : x->s > y->s;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* The trace's UUID: a hash of its streams and looms, so that exporting
 * the same trace again gives the same files. */
static void make_uuid(const struct weft_trace *t, uint8_t u[16])
{
	uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
	for (size_t i = 0; i < weft_nstreams(t); i++) {
		const struct weft_stream *s = weft_stream_at(t, i);
		h1 = fnv(h1, s->relpath, strlen(s->relpath) + 1);
		h1 = fnv(h1, &s->obs_size, sizeof s->obs_size);
		h2 = fnv(h2, &s->obs_size, sizeof s->obs_size);
		h2 = fnv(h2, s->relpath, strlen(s->relpath) + 1);
	}
	for (size_t i = 0; i < weft_nlooms(t); i++) {
		const struct weft_loom *l = weft_loom_at(t, i);
		h1 = fnv(h1, l->name, strlen(l->name) + 1);
		h2 = fnv(h2, &l->clock_offset, sizeof l->clock_offset);
	}
	memcpy(u, &h1, 8);
	memcpy(u + 8, &h2, 8);
	u[6] = (uint8_t) ((u[6] & 0x0f) | 0x40); /* the form of a random UUID */
	u[8] = (uint8_t) ((u[8] & 0x3f) | 0x80);
}

static size_t loom_index(const struct weft_trace *t, const struct weft_loom *l)
{
	for (size_t i = 0; i < weft_nlooms(t); i++)
		if (weft_loom_at(t, i) == l)
			return i;
	return 0;
}

/* The timestamp of a loss that began at clock c, before clock next (or
 * at next when c is out of [base, next]). */
static uint64_t ts_of(int64_t c, int64_t base, int64_t next)
{
	return (uint64_t) (c >= base && c <= next ? c : next) - (uint64_t) base;
}

/* The runs of stream i that precede event e: their events discarded. */
static int runs_before(const struct weft_trace *t, size_t i, struct xstream *x,
		const struct weft_event *e, int64_t base, char *err, size_t errlen)
{
	while (x->next_run < x->nruns) {
		struct weft_lost_run run;
		if (!weft_stream_lost_run(t, i, x->next_run, &run))
			break;
		int before = run.has_offset ? e->offset >= run.offset : e->rclock >= run.last;
		if (!before)
			break;
		x->next_run++;
		if (ctf_stream_discard(x->w, run.events, ts_of(run.first_sclock, base, e->sclock),
					err, errlen) != 0)
			return -1;
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

int ctf_export(const struct ctf_opts *o, struct ctf_stats *st, char *err, size_t errlen)
{
	struct weft_trace *t = o->trace;
	size_t ns = weft_nstreams(t);
	size_t psize = o->packet_size ? o->packet_size : CTF_PACKET_SIZE;
	/* a packet in memory per stream: all of them within CTF_PACKETS_MEMORY
	 * (smaller packets for traces of many threads), 4 KiB each at least */
	if (ns > 0 && psize > CTF_PACKETS_MEMORY / ns)
		psize = CTF_PACKETS_MEMORY / ns;
	if (psize < 4096)
		psize = 4096;
	struct ctf_stats stats;
	memset(&stats, 0, sizeof stats);
	uint8_t uuid[16];
	make_uuid(t, uuid);

	/* the clock's offset: the smallest loom offset, or an earlier first
	 * clock (timestamps are unsigned) */
	int64_t base = 0;
	int have_base = 0;
	for (size_t i = 0; i < weft_nlooms(t); i++) {
		int64_t off = weft_loom_at(t, i)->clock_offset;
		if (!have_base || off < base)
			base = off;
		have_base = 1;
	}
	for (size_t i = 0; i < ns; i++) {
		int64_t c;
		if (weft_stream_first_sclock(t, i, &c) && (!have_base || c < base)) {
			base = c;
			have_base = 1;
		}
	}

	struct export_dir dir;
	if (ctf_dir_open(&dir, o->outdir, o->force, err, errlen) != 0)
		return -1;
	struct ctf_classes *classes = ctf_classes_new(o->models, t, o->all_models, err, errlen);
	struct xstream *xs = calloc(ns + 1, sizeof *xs);
	struct sref *refs = calloc(ns + 1, sizeof *refs);
	struct weft_event *evs = calloc(BATCH, sizeof *evs);
	int rc = -1;
	if (classes == NULL)
		goto out;
	if (xs == NULL || refs == NULL || evs == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < ns; i++) {
		const struct weft_stream *s = weft_stream_at(t, i);
		const struct weft_thread *th = s->thread;
		struct ctf_stream_info info = {
			.index = i,
			.loom_id = th ? (uint32_t) loom_index(t, th->proc->loom) : 0,
			.pid = th ? th->proc->pid : -1,
			.tid = th ? th->tid : -1,
			.rank = th ? th->proc->rank : -1,
			.loom = th ? th->proc->loom->name : "",
			.path = s->relpath,
			.uuid = uuid,
		};
		char name[32];
		snprintf(name, sizeof name, "stream%zu", i);
		if ((xs[i].w = ctf_stream_new(&dir, name, &info, psize, err, errlen)) == NULL)
			goto out;
		struct weft_loss loss;
		if (weft_stream_loss(t, i, &loss)) {
			xs[i].nruns = loss.ring ? loss.nruns : 0;
			xs[i].dropped = loss.dropped + loss.filtered;
		}
		refs[i].s = s;
		refs[i].i = i;
	}
	qsort(refs, ns, sizeof *refs, by_ptr);

	const struct weft_stream *last_s = NULL;
	size_t last_i = 0;
	double t0 = now(), next_progress = t0 + 1.0;
	long n;
	while ((n = weft_next_batch(t, evs, BATCH)) > 0) {
		if (o->stop != NULL && *o->stop != 0) {
			snprintf(err, errlen, "interrupted");
			goto out;
		}
		for (long k = 0; k < n; k++) {
			const struct weft_event *e = &evs[k];
			if (e->stream != last_s) {
				struct sref key = { e->stream, 0 };
				const struct sref *f = bsearch(&key, refs, ns, sizeof *refs, by_ptr);
				if (f == NULL) {
					snprintf(err, errlen, "%s: an event of a stream the trace does "
							"not list", e->stream->obs_path);
					goto out;
				}
				last_s = e->stream;
				last_i = f->i;
			}
			struct xstream *x = &xs[last_i];
			if (e->sclock < base || (x->any && e->sclock < x->last)) {
				snprintf(err, errlen, "%s: offset %" PRIu64 ": clock %" PRId64 " goes "
						"back %s (CTF's timestamps only go forward)",
						e->stream->obs_path, e->offset, e->rclock, e->sclock < base ?
						"before the clock's offset" : "within the stream");
				goto out;
			}
			x->last = e->sclock;
			x->any = 1;
			if (x->next_run < x->nruns && runs_before(t, last_i, x, e, base, err, errlen) != 0)
				goto out;
			uint64_t ts = (uint64_t) e->sclock - (uint64_t) base;
			struct ctf_rec r;
			const struct ctf_class *k2 = ctf_encode(classes, e, ts, &r, err, errlen);
			if (k2 == NULL || ctf_stream_add(x->w, &r, ts, err, errlen) != 0)
				goto out;
			stats.events++;
			stats.raw += k2->id < CTF_CLASS_FIRST;
		}
		if (o->progress != NULL) {
			double tn = now();
			if (tn >= next_progress) {
				o->progress(o->ctx, stats.events, tn - t0);
				next_progress = tn + 1.0;
			}
		}
	}
	if (n < 0) {
		snprintf(err, errlen, "%s", weft_error(t));
		goto out;
	}
	for (size_t i = 0; i < ns; i++) {
		struct xstream *x = &xs[i];
		/* the runs after its last event, the events lost at an
		 * unknown time and those a filter left out (weft.filtered):
		 * counted at its end */
		uint64_t tail = x->dropped;
		for (; x->next_run < x->nruns; x->next_run++) {
			struct weft_lost_run run;
			if (weft_stream_lost_run(t, i, x->next_run, &run))
				tail += run.events;
		}
		uint64_t end = x->any ? (uint64_t) x->last - (uint64_t) base : 0;
		if (ctf_stream_discard(x->w, tail, end, err, errlen) != 0 ||
				ctf_stream_end(x->w, end, err, errlen) != 0)
			goto out;
		stats.discarded += ctf_stream_discarded(x->w);
		stats.packets += ctf_stream_packets(x->w);
		stats.bytes += ctf_stream_bytes(x->w);
	}
	stats.streams = ns;
	stats.classes = ctf_classes_count(classes) + CTF_CLASS_FIRST;
	struct ctf_meta_info mi = {
		.trace = t, .trace_path = o->trace_path ? o->trace_path : "", .uuid = uuid,
		.clock_base = base, .classes = classes,
	};
	if (ctf_meta_write(&dir, &mi, err, errlen) != 0)
		goto out;
	if (o->stop != NULL && *o->stop != 0) {
		snprintf(err, errlen, "interrupted");
		goto out;
	}
	if (export_dir_commit(&dir, o->force, err, errlen) != 0)
		goto out;
	rc = 0;
	if (st != NULL)
		*st = stats;
out:
	if (rc != 0)
		export_dir_discard(&dir);
	for (size_t i = 0; xs != NULL && i < ns; i++)
		ctf_stream_free(xs[i].w);
	free(xs);
	free(refs);
	free(evs);
	ctf_classes_free(classes);
	return rc;
}
