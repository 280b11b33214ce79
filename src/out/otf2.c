/* SPDX-License-Identifier: MIT */
/*
 * otf2.c - the OTF2 sink of `weft export otf2` (otf2.h; docs/export.md).
 *
 * Fed the thread view's records (the values `weft sql`'s interval table
 * holds for view 'thread'), it keeps per thread the value of each region
 * channel and a stack of the regions entered, in the order they were
 * entered. A value change of channel c at time t leaves the regions above
 * c's (newest first), leaves c's, enters those again in the same order and
 * then c's new value on top: Enter and Leave stay properly nested, and the
 * channel that changes most often stays on top, where a change costs two
 * events. Counter channels are metrics, a Metric event per change. The
 * definitions (strings, system tree, groups, locations, regions, metrics,
 * clock) are written at the close, once the task types' labels are known.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <otf2/otf2.h>

#include "otf2.h"
#include "otf2_internal.h"
#include "weft/weft.h"

#define NONE SIZE_MAX

struct frame {
	size_t slot;         /* the channel's region slot */
	OTF2_RegionRef region;
};

struct loc {
	OTF2_EvtWriter *w;
	struct frame *stack; /* nslots at most */
	size_t depth;
	uint64_t events;
	/* the changes at time ptime, applied once the time moves on: the
	 * slots changed (in the order of their first change), their last
	 * values in pval */
	int64_t ptime;
	size_t *pend, npend;
};

struct region {
	size_t slot;
	int64_t value;
};

struct otf2_out {
	struct out base;
	const struct emu *emu;
	struct export_dir dir;
	int force, closed;
	OTF2_Archive *ar;
	int64_t origin;            /* the trace's first clock: time 0 */
	size_t nthreads;
	struct loc *locs;
	/* region channels: catalogue id -> slot; slot -> catalogue id */
	size_t nids, nslots, *slot_of, *id_of_slot;
	int64_t *cur;              /* nthreads * nslots: the value shown (0: none) */
	struct frame *scratch;     /* nslots: the frames left and entered again */
	int64_t *pval;             /* nthreads * nslots: a pending change's value */
	unsigned char *pset;       /* nthreads * nslots: 1 while pending */
	/* counter channels: catalogue id -> metric (NONE: not one) */
	size_t *metric_of, nmetrics, *id_of_metric;
	/* regions: (slot, value), found by an open-addressing table */
	struct region *regions;
	size_t nregions, capregions;
	uint32_t *rhash;           /* region index + 1, 0: empty */
	size_t hcap;
	struct out_otf2_stats *st;
	struct out_otf2_stats count;
	size_t max_chunks;         /* per writer's buffer (pool_alloc) */
};

static int otf2_fail(char *err, size_t errlen, const char *dir, const char *what,
		OTF2_ErrorCode e)
{
	snprintf(err, errlen, "%s: OTF2: %s: %s (%s)", dir, what, OTF2_Error_GetName(e),
			OTF2_Error_GetDescription(e));
	return -1;
}

static OTF2_FlushType pre_flush(void *ud, OTF2_FileType ft, OTF2_LocationRef loc,
		void *cb, bool final)
{
	(void) ud, (void) ft, (void) loc, (void) cb, (void) final;
	return OTF2_FLUSH;
}

static OTF2_TimeStamp post_flush(void *ud, OTF2_FileType ft, OTF2_LocationRef loc)
{
	(void) ud, (void) ft, (void) loc;
	return 0;
}

static const OTF2_FlushCallbacks flush_cbs = { pre_flush, post_flush };

/* The chunks of a writer's buffer: at most max_chunks, so that the memory
 * does not grow with the trace (OTF2's own pool holds up to 128 MiB per
 * writer): when the allocation fails, the library writes the buffer's
 * chunks to its file and frees them (free_all), then asks again. */
#define POOL_MAX 16

struct pool {
	size_t n;
	void *chunk[POOL_MAX];
};

static void *pool_alloc(void *ud, OTF2_FileType ft, OTF2_LocationRef loc, void **pbd,
		uint64_t size)
{
	(void) ft, (void) loc;
	const size_t *max = ud;
	struct pool *p = *pbd;
	if (p == NULL && (p = *pbd = calloc(1, sizeof *p)) == NULL)
		return NULL;
	if (p->n >= *max)
		return NULL;
	void *c = malloc((size_t) size);
	if (c != NULL)
		p->chunk[p->n++] = c;
	return c;
}

static void pool_free_all(void *ud, OTF2_FileType ft, OTF2_LocationRef loc, void **pbd,
		bool final)
{
	(void) ud, (void) ft, (void) loc;
	struct pool *p = *pbd;
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->chunk[i]);
	p->n = 0;
	if (final) {
		free(p);
		*pbd = NULL;
	}
}

static const OTF2_MemoryCallbacks memory_cbs = { pool_alloc, pool_free_all };

static uint64_t hash2(size_t slot, int64_t v)
{
	uint64_t h = (uint64_t) v * 0x9e3779b97f4a7c15ull ^ (uint64_t) slot * 0xc2b2ae3d27d4eb4full;
	return h ^ (h >> 29);
}

static int grow_hash(struct otf2_out *s)
{
	size_t cap = s->hcap ? s->hcap * 2 : 256;
	uint32_t *h = calloc(cap, sizeof *h);
	if (h == NULL)
		return -1;
	for (size_t i = 0; i < s->nregions; i++) {
		size_t k = (size_t) hash2(s->regions[i].slot, s->regions[i].value) & (cap - 1);
		while (h[k] != 0)
			k = (k + 1) & (cap - 1);
		h[k] = (uint32_t) (i + 1);
	}
	free(s->rhash);
	s->rhash = h;
	s->hcap = cap;
	return 0;
}

/* The region of (slot, value), made at its first use: its id, or -1. */
static int64_t region_of(struct otf2_out *s, size_t slot, int64_t v)
{
	if (s->nregions * 2 >= s->hcap && grow_hash(s) != 0)
		return -1;
	size_t k = (size_t) hash2(slot, v) & (s->hcap - 1);
	while (s->rhash[k] != 0) {
		const struct region *r = &s->regions[s->rhash[k] - 1];
		if (r->slot == slot && r->value == v)
			return s->rhash[k] - 1;
		k = (k + 1) & (s->hcap - 1);
	}
	if (s->nregions == UINT32_MAX - 1)
		return -1;
	if (s->nregions == s->capregions) {
		size_t cap = s->capregions ? s->capregions * 2 : 64;
		struct region *r = realloc(s->regions, cap * sizeof *r);
		if (r == NULL)
			return -1;
		s->regions = r;
		s->capregions = cap;
	}
	s->regions[s->nregions] = (struct region) { slot, v };
	s->rhash[k] = (uint32_t) (s->nregions + 1);
	return (int64_t) s->nregions++;
}

static int enter(struct otf2_out *s, struct loc *l, OTF2_TimeStamp t, const struct frame *f,
		char *err, size_t errlen)
{
	OTF2_ErrorCode e = OTF2_EvtWriter_Enter(l->w, NULL, t, f->region);
	if (e != OTF2_SUCCESS)
		return otf2_fail(err, errlen, s->dir.out, "writing an Enter event", e);
	l->stack[l->depth++] = *f;
	l->events++;
	s->count.enters++;
	return 0;
}

static int leave(struct otf2_out *s, struct loc *l, OTF2_TimeStamp t, char *err, size_t errlen)
{
	OTF2_ErrorCode e = OTF2_EvtWriter_Leave(l->w, NULL, t, l->stack[l->depth - 1].region);
	if (e != OTF2_SUCCESS)
		return otf2_fail(err, errlen, s->dir.out, "writing a Leave event", e);
	l->depth--;
	l->events++;
	s->count.leaves++;
	return 0;
}

/* Channel slot of thread row changes from its value to v at t. */
static int change(struct otf2_out *s, size_t row, size_t slot, int64_t v, OTF2_TimeStamp t,
		char *err, size_t errlen)
{
	struct loc *l = &s->locs[row];
	int64_t *cur = &s->cur[row * s->nslots + slot];
	if (*cur == v)
		return 0;
	if (*cur != 0) {
		size_t p = l->depth;
		while (p > 0 && l->stack[p - 1].slot != slot)
			p--;
		if (p == 0) {
			snprintf(err, errlen, "%s: OTF2: internal error: a channel's region is not on "
					"its thread's stack", s->dir.out);
			return -1;
		}
		p--; /* the channel's frame */
		size_t above = l->depth - p - 1;
		struct frame *keep = s->scratch;
		memcpy(keep, l->stack + p + 1, above * sizeof *keep);
		while (l->depth > p)
			if (leave(s, l, t, err, errlen) != 0)
				return -1;
		for (size_t i = 0; i < above; i++)
			if (enter(s, l, t, &keep[i], err, errlen) != 0)
				return -1;
	}
	*cur = v;
	if (v != 0) {
		int64_t r = region_of(s, slot, v);
		if (r < 0) {
			snprintf(err, errlen, "%s: OTF2: out of memory for the regions", s->dir.out);
			return -1;
		}
		struct frame f = { slot, (OTF2_RegionRef) r };
		if (enter(s, l, t, &f, err, errlen) != 0)
			return -1;
	}
	return 0;
}

static int metric(struct otf2_out *s, size_t row, size_t m, int64_t v, OTF2_TimeStamp t,
		char *err, size_t errlen)
{
	struct loc *l = &s->locs[row];
	OTF2_Type type = OTF2_TYPE_INT64;
	OTF2_MetricValue mv;
	mv.signed_int = v;
	OTF2_ErrorCode e = OTF2_EvtWriter_Metric(l->w, NULL, t, (OTF2_MetricRef) m, 1, &type, &mv);
	if (e != OTF2_SUCCESS)
		return otf2_fail(err, errlen, s->dir.out, "writing a Metric event", e);
	l->events++;
	s->count.samples++;
	return 0;
}

static OTF2_TimeStamp stamp(const struct otf2_out *s, int64_t time)
{
	return (OTF2_TimeStamp) (s->origin + time);
}

/* Applies the changes of thread row pending at its ptime: a channel set
 * several times at one time gets its last value (the values between hold
 * for no time: weft sql stores no interval of no length either). */
static int flush(struct otf2_out *s, size_t row, char *err, size_t errlen)
{
	struct loc *l = &s->locs[row];
	for (size_t k = 0; k < l->npend; k++) {
		size_t slot = l->pend[k], at = row * s->nslots + slot;
		s->pset[at] = 0;
		if (change(s, row, slot, s->pval[at], stamp(s, l->ptime), err, errlen) != 0)
			return -1;
	}
	l->npend = 0;
	return 0;
}

static int otf2_records(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct otf2_out *s = (struct otf2_out *) self;
	const struct emu_prv_rec *r = b->prv[EMU_FILE_THREAD];
	for (size_t i = 0; i < b->nprv[EMU_FILE_THREAD]; i++) {
		size_t id = r[i].chan, row = r[i].row;
		if (id >= s->nids || row >= s->nthreads)
			continue;
		struct loc *l = &s->locs[row];
		if (r[i].time != l->ptime && l->npend > 0 && flush(s, row, err, errlen) != 0)
			return -1;
		l->ptime = r[i].time;
		int rc = 0;
		if (s->slot_of[id] != NONE) {
			size_t at = row * s->nslots + s->slot_of[id];
			if (!s->pset[at]) {
				s->pset[at] = 1;
				l->pend[l->npend++] = s->slot_of[id];
			}
			s->pval[at] = r[i].value;
		} else if (s->metric_of[id] != NONE)
			rc = metric(s, row, s->metric_of[id], r[i].value, stamp(s, r[i].time), err,
					errlen);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* ---- the definitions ---- */

struct defs {
	struct otf2_out *s;
	OTF2_GlobalDefWriter *g;
	OTF2_StringRef next;
	char *err;
	size_t errlen;
};

/* A new string's id, or OTF2_UNDEFINED_STRING when it failed (err). */
static OTF2_StringRef str(struct defs *d, const char *text)
{
	OTF2_ErrorCode e = OTF2_GlobalDefWriter_WriteString(d->g, d->next, text);
	if (e != OTF2_SUCCESS) {
		otf2_fail(d->err, d->errlen, d->s->dir.out, "writing a string", e);
		return OTF2_UNDEFINED_STRING;
	}
	return d->next++;
}

#define STR(var, text) \
	OTF2_StringRef var = str(&d, (text)); \
	if (var == OTF2_UNDEFINED_STRING) \
		return -1

#define CHECK(call, what) \
	do { \
		OTF2_ErrorCode e_ = (call); \
		if (e_ != OTF2_SUCCESS) \
			return otf2_fail(err, errlen, s->dir.out, (what), e_); \
	} while (0)

static int write_system(struct otf2_out *s, struct defs *dd, char *err, size_t errlen)
{
	struct defs d = *dd;
	const struct emu_sys *sys = emu_system(s->emu);
	STR(machine, "weft trace");
	STR(mclass, "machine");
	STR(nclass, "node");
	CHECK(OTF2_GlobalDefWriter_WriteSystemTreeNode(d.g, 0, machine, mclass,
			OTF2_UNDEFINED_SYSTEM_TREE_NODE), "writing the system tree");
	for (size_t i = 0; i < sys->nlooms; i++) {
		const struct emu_loom *lm = &sys->looms[i];
		STR(name, lm->name);
		CHECK(OTF2_GlobalDefWriter_WriteSystemTreeNode(d.g, (OTF2_SystemTreeNodeRef) (i + 1),
				name, nclass, 0), "writing the system tree");
	}
	for (size_t i = 0; i < sys->nprocs; i++) {
		const struct emu_proc *p = &sys->procs[i];
		char buf[96];
		if (p->rank >= 0)
			snprintf(buf, sizeof buf, "rank %d (pid %d)", p->rank, p->pid);
		else
			snprintf(buf, sizeof buf, "pid %d", p->pid);
		STR(name, buf);
		CHECK(OTF2_GlobalDefWriter_WriteLocationGroup(d.g, (OTF2_LocationGroupRef) i, name,
				OTF2_LOCATION_GROUP_TYPE_PROCESS, (OTF2_SystemTreeNodeRef) (p->loom + 1),
				OTF2_UNDEFINED_LOCATION_GROUP), "writing a location group");
	}
	for (size_t i = 0; i < sys->nthreads; i++) {
		const struct emu_sys_thread *th = &sys->threads[i];
		STR(name, th->label);
		CHECK(OTF2_GlobalDefWriter_WriteLocation(d.g, (OTF2_LocationRef) i, name,
				OTF2_LOCATION_TYPE_CPU_THREAD, s->locs[i].events,
				(OTF2_LocationGroupRef) th->proc), "writing a location");
	}
	dd->next = d.next;
	return 0;
}

static int write_regions(struct otf2_out *s, struct defs *dd, char *err, size_t errlen)
{
	struct defs d = *dd;
	OTF2_StringRef *names = calloc(s->nslots + 1, sizeof *names);
	uint64_t *members = malloc((s->nregions + 1) * sizeof *members);
	int rc = -1;
	if (names == NULL || members == NULL) {
		snprintf(err, errlen, "%s: OTF2: out of memory for the definitions", s->dir.out);
		goto out;
	}
	for (size_t k = 0; k < s->nslots; k++) {
		const struct emu_cat_entry *c = emu_cat_at(s->emu, s->id_of_slot[k]);
		if ((names[k] = str(&d, c->name)) == OTF2_UNDEFINED_STRING)
			goto out;
	}
	for (size_t i = 0; i < s->nregions; i++) {
		const struct region *r = &s->regions[i];
		const struct emu_cat_entry *c = emu_cat_at(s->emu, s->id_of_slot[r->slot]);
		const char *label = emu_cat_value_label(c, r->value);
		char num[32], canon[512];
		snprintf(num, sizeof num, "%" PRId64, r->value);
		snprintf(canon, sizeof canon, "%s=%" PRId64, c->name, r->value);
		OTF2_StringRef n = str(&d, label != NULL ? label : num);
		OTF2_StringRef cn = n == OTF2_UNDEFINED_STRING ? n : str(&d, canon);
		OTF2_StringRef desc = cn == OTF2_UNDEFINED_STRING ? cn :
			str(&d, c->thread_label != NULL ? c->thread_label : c->name);
		if (desc == OTF2_UNDEFINED_STRING)
			goto out;
		OTF2_ErrorCode e = OTF2_GlobalDefWriter_WriteRegion(d.g, (OTF2_RegionRef) i, n, cn,
				desc, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER, OTF2_REGION_FLAG_NONE,
				names[r->slot], 0, 0);
		if (e != OTF2_SUCCESS) {
			otf2_fail(err, errlen, s->dir.out, "writing a region", e);
			goto out;
		}
	}
	/* a group of regions per channel: Vampir's function groups */
	OTF2_GroupRef gid = 0;
	for (size_t k = 0; k < s->nslots; k++) {
		uint32_t n = 0;
		for (size_t i = 0; i < s->nregions; i++)
			if (s->regions[i].slot == k)
				members[n++] = i;
		if (n == 0)
			continue;
		OTF2_ErrorCode e = OTF2_GlobalDefWriter_WriteGroup(d.g, gid++, names[k],
				OTF2_GROUP_TYPE_REGIONS, OTF2_PARADIGM_USER, OTF2_GROUP_FLAG_NONE, n,
				members);
		if (e != OTF2_SUCCESS) {
			otf2_fail(err, errlen, s->dir.out, "writing a group", e);
			goto out;
		}
	}
	dd->next = d.next;
	rc = 0;
out:
	free(names);
	free(members);
	return rc;
}

static int write_metrics(struct otf2_out *s, struct defs *dd, char *err, size_t errlen)
{
	struct defs d = *dd;
	STR(unit, "#");
	for (size_t m = 0; m < s->nmetrics; m++) {
		const struct emu_cat_entry *c = emu_cat_at(s->emu, s->id_of_metric[m]);
		STR(name, c->name);
		STR(desc, c->thread_label != NULL ? c->thread_label : c->name);
		CHECK(OTF2_GlobalDefWriter_WriteMetricMember(d.g, (OTF2_MetricMemberRef) m, name,
				desc, OTF2_METRIC_TYPE_USER, OTF2_METRIC_ABSOLUTE_POINT, OTF2_TYPE_INT64,
				OTF2_BASE_DECIMAL, 0, unit), "writing a metric member");
		OTF2_MetricMemberRef mm = (OTF2_MetricMemberRef) m;
		CHECK(OTF2_GlobalDefWriter_WriteMetricClass(d.g, (OTF2_MetricRef) m, 1, &mm,
				OTF2_METRIC_ASYNCHRONOUS, OTF2_RECORDER_KIND_ABSTRACT),
				"writing a metric class");
	}
	dd->next = d.next;
	return 0;
}

static int otf2_close(struct out *o, int64_t duration, char *err, size_t errlen)
{
	struct otf2_out *s = (struct otf2_out *) o;
	s->closed = 1;
	OTF2_TimeStamp end = stamp(s, duration);
	for (size_t i = 0; i < s->nthreads; i++) {
		struct loc *l = &s->locs[i];
		if (l->npend > 0 && flush(s, i, err, errlen) != 0)
			return -1;
		while (l->depth > 0)
			if (leave(s, l, end, err, errlen) != 0)
				return -1;
		CHECK(OTF2_Archive_CloseEvtWriter(s->ar, l->w), "closing an event writer");
		l->w = NULL;
	}
	CHECK(OTF2_Archive_CloseEvtFiles(s->ar), "closing the event files");
	CHECK(OTF2_Archive_OpenDefFiles(s->ar), "opening the definition files");
	for (size_t i = 0; i < s->nthreads; i++) {
		OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(s->ar, (OTF2_LocationRef) i);
		if (dw == NULL) {
			snprintf(err, errlen, "%s: OTF2: cannot get a definition writer", s->dir.out);
			return -1;
		}
		CHECK(OTF2_Archive_CloseDefWriter(s->ar, dw), "closing a definition writer");
	}
	CHECK(OTF2_Archive_CloseDefFiles(s->ar), "closing the definition files");
	struct defs d = { s, OTF2_Archive_GetGlobalDefWriter(s->ar), 0, err, errlen };
	if (d.g == NULL) {
		snprintf(err, errlen, "%s: OTF2: cannot get the global definition writer",
				s->dir.out);
		return -1;
	}
	CHECK(OTF2_GlobalDefWriter_WriteClockProperties(d.g, 1000000000u,
			(uint64_t) s->origin, (uint64_t) (duration > 0 ? duration : 0),
			OTF2_UNDEFINED_TIMESTAMP), "writing the clock properties");
	if (write_system(s, &d, err, errlen) != 0 || write_regions(s, &d, err, errlen) != 0 ||
			write_metrics(s, &d, err, errlen) != 0)
		return -1;
	OTF2_ErrorCode e = OTF2_Archive_Close(s->ar);
	s->ar = NULL;
	if (e != OTF2_SUCCESS)
		return otf2_fail(err, errlen, s->dir.out, "closing the archive", e);
	s->count.locations = s->nthreads;
	s->count.regions = s->nregions;
	s->count.metrics = s->nmetrics;
	if (s->st != NULL)
		*s->st = s->count;
	return 0;
}

static void otf2_free(struct otf2_out *s)
{
	if (s->ar != NULL)
		OTF2_Archive_Close(s->ar);
	if (s->locs != NULL)
		for (size_t i = 0; i < s->nthreads; i++) {
			free(s->locs[i].stack);
			free(s->locs[i].pend);
		}
	free(s->locs);
	free(s->slot_of);
	free(s->id_of_slot);
	free(s->metric_of);
	free(s->id_of_metric);
	free(s->cur);
	free(s->scratch);
	free(s->pval);
	free(s->pset);
	free(s->regions);
	free(s->rhash);
	free(s);
}

static int otf2_commit(struct out *o, char *err, size_t errlen)
{
	struct otf2_out *s = (struct otf2_out *) o;
	int r = export_dir_commit(&s->dir, s->force, err, errlen);
	otf2_free(s);
	return r;
}

static void otf2_discard(struct out *o)
{
	struct otf2_out *s = (struct otf2_out *) o;
	if (s->ar != NULL) {
		OTF2_Archive_Close(s->ar);
		s->ar = NULL;
	}
	export_dir_discard(&s->dir);
	otf2_free(s);
}

static int otf2_input(struct out *o, const struct out_input *in, char *err, size_t errlen)
{
	(void) err, (void) errlen;
	struct otf2_out *s = (struct otf2_out *) o;
	/* time 0 of the records: the smallest first clock, as the driver's */
	int any = 0;
	int64_t first = 0, c;
	for (size_t i = 0; i < weft_nstreams(in->t); i++)
		if (weft_stream_first_sclock(in->t, i, &c) == 1 && (!any || c < first)) {
			first = c;
			any = 1;
		}
	s->origin = first > 0 ? first : 0;
	return 0;
}

static const struct out_ops otf2_ops = {
	.name = "otf2",
	.internal = 0,
	.lost = 0, /* ovni.lost as a region */
	.records = otf2_records,
	.close = otf2_close,
	.commit = otf2_commit,
	.discard = otf2_discard,
	.input = otf2_input,
};

/* The thread view's channels: those Perfetto draws as slices are regions
 * (states, subsystems, task types, functions, marks), as counters metrics
 * (hardware counters, numbers); ids (task, body, app: drawn by neither)
 * and the built-ins other than the thread state and the lost intervals
 * are not written. */
static int in_thread_view(const struct emu_cat_entry *c)
{
	return (c->scope & EMU_SCOPE_VIEW(EMU_FILE_THREAD)) && c->prv_type != 0 &&
		c->bd_view < 0;
}

static int is_region(const struct emu_cat_entry *c)
{
	if (!in_thread_view(c))
		return 0;
	if (c->builtin >= 0)
		return c->builtin == EMU_BI_STATE || strcmp(c->name, "ovni.lost") == 0;
	return c->track == EMU_CAT_TRACK_SLICES;
}

static int is_metric(const struct emu_cat_entry *c)
{
	return in_thread_view(c) && c->builtin < 0 && c->track == EMU_CAT_TRACK_COUNTER;
}

static int setup(struct otf2_out *s, char *err, size_t errlen)
{
	s->nids = emu_cat_count(s->emu);
	s->slot_of = malloc((s->nids + 1) * sizeof *s->slot_of);
	s->id_of_slot = malloc((s->nids + 1) * sizeof *s->id_of_slot);
	s->metric_of = malloc((s->nids + 1) * sizeof *s->metric_of);
	s->id_of_metric = malloc((s->nids + 1) * sizeof *s->id_of_metric);
	s->nthreads = emu_system(s->emu)->nthreads;
	s->locs = calloc(s->nthreads + 1, sizeof *s->locs);
	if (s->slot_of == NULL || s->id_of_slot == NULL || s->metric_of == NULL ||
			s->id_of_metric == NULL || s->locs == NULL)
		goto oom;
	for (size_t id = 0; id < s->nids; id++) {
		const struct emu_cat_entry *c = emu_cat_at(s->emu, id);
		s->slot_of[id] = s->metric_of[id] = NONE;
		if (is_region(c)) {
			s->id_of_slot[s->nslots] = id;
			s->slot_of[id] = s->nslots++;
		} else if (is_metric(c)) {
			s->id_of_metric[s->nmetrics] = id;
			s->metric_of[id] = s->nmetrics++;
		}
	}
	if (s->nmetrics > UINT32_MAX || s->nslots > UINT32_MAX)
		goto oom;
	s->cur = calloc(s->nthreads * s->nslots + 1, sizeof *s->cur);
	s->scratch = malloc((s->nslots + 1) * sizeof *s->scratch);
	s->pval = calloc(s->nthreads * s->nslots + 1, sizeof *s->pval);
	s->pset = calloc(s->nthreads * s->nslots + 1, 1);
	if (s->cur == NULL || s->scratch == NULL || s->pval == NULL || s->pset == NULL)
		goto oom;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct loc *l = &s->locs[i];
		l->stack = malloc((s->nslots + 1) * sizeof *l->stack);
		l->pend = malloc((s->nslots + 1) * sizeof *l->pend);
		if (l->stack == NULL || l->pend == NULL)
			goto oom;
	}
	return 0;
oom:
	snprintf(err, errlen, "%s: out of memory", s->dir.out);
	return -1;
}

static int open_archive(struct otf2_out *s, char *err, size_t errlen)
{
	s->ar = OTF2_Archive_Open(s->dir.tmp, OTF2_ARCHIVE_NAME, OTF2_FILEMODE_WRITE,
			OTF2_CHUNK_SIZE_EVENTS_DEFAULT, OTF2_CHUNK_SIZE_DEFINITIONS_DEFAULT,
			OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
	if (s->ar == NULL) {
		snprintf(err, errlen, "%s: OTF2: cannot open an archive in %s", s->dir.out,
				s->dir.tmp);
		return -1;
	}
	CHECK(OTF2_Archive_SetFlushCallbacks(s->ar, &flush_cbs, NULL), "the flush callbacks");
	/* 16 MiB of 1 MiB event chunks over the threads, 2 to 8 each */
	s->max_chunks = s->nthreads > 0 ? 16 / s->nthreads : 8;
	s->max_chunks = s->max_chunks < 2 ? 2 : s->max_chunks > 8 ? 8 : s->max_chunks;
	CHECK(OTF2_Archive_SetMemoryCallbacks(s->ar, &memory_cbs, &s->max_chunks),
			"the memory callbacks");
	CHECK(OTF2_Archive_SetSerialCollectiveCallbacks(s->ar), "the collective callbacks");
	CHECK(OTF2_Archive_SetCreator(s->ar, OTF2_CREATOR), "the creator");
	CHECK(OTF2_Archive_SetDescription(s->ar, "a trace of ovni's format, emulated by weft"),
			"the description");
	CHECK(OTF2_Archive_OpenEvtFiles(s->ar), "opening the event files");
	for (size_t i = 0; i < s->nthreads; i++) {
		s->locs[i].w = OTF2_Archive_GetEvtWriter(s->ar, (OTF2_LocationRef) i);
		if (s->locs[i].w == NULL) {
			snprintf(err, errlen, "%s: OTF2: cannot get the event writer of location %zu",
					s->dir.out, i);
			return -1;
		}
	}
	return 0;
}

struct out *out_otf2_open(const char *outdir, int force, const struct emu *emu,
		struct out_otf2_stats *st, char *err, size_t errlen)
{
	struct otf2_out *s = calloc(1, sizeof *s);
	if (s == NULL) {
		snprintf(err, errlen, "%s: out of memory", outdir);
		return NULL;
	}
	s->base.ops = &otf2_ops;
	s->emu = emu;
	s->force = force;
	s->st = st;
	if (otf2_dir_open(&s->dir, outdir, force, err, errlen) != 0) {
		free(s);
		return NULL;
	}
	if (setup(s, err, errlen) != 0 || open_archive(s, err, errlen) != 0) {
		otf2_discard(&s->base);
		return NULL;
	}
	return &s->base;
}
