/* SPDX-License-Identifier: MIT */
/*
 * system.c - the metadata of all streams merged along the part model:
 * per-thread keys (tid, pid), per-process keys (app_id, rank, nranks, which
 * must agree), per-loom keys (loom_cpus, merged by phyid), and the mark types.
 * Every breach names the files involved; it is an error when strict and a
 * warning when lenient.
 *
 * On a path inside a trace, the streams of the rest of the trace
 * (t->mstreams, metadata only) take part too: they give the looms their
 * CPUs and the processes their app_id and rank, but no threads; the rules
 * of single streams apply to the path's streams only, and processes left
 * without threads are left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_ids.h"
#include "trace_internal.h"

static int oom(struct weft_trace *t, const struct weft_wstream *s)
{
	return weft_oom(&t->diag, "reading the metadata of %s", s->json_path);
}

struct build {
	size_t loomcap;
};

/* NULL: out of memory. */
static struct weft_iloom *get_loom(struct weft_trace *t, struct build *b, const char *name)
{
	for (size_t i = 0; i < t->nlooms; i++)
		if (strcmp(t->looms[i]->name, name) == 0)
			return t->looms[i];
	if (t->nlooms == b->loomcap) {
		size_t nc = b->loomcap ? 2 * b->loomcap : 4;
		struct weft_iloom **nl = realloc(t->looms, nc * sizeof *nl);
		if (nl == NULL)
			return NULL;
		t->looms = nl;
		b->loomcap = nc;
	}
	struct weft_iloom *l = calloc(1, sizeof *l);
	if (l == NULL)
		return NULL;
	l->name = weft_strdup(name);
	l->hostname = weft_strdup(name);
	if (l->name == NULL || l->hostname == NULL) {
		free(l->name);
		free(l->hostname);
		free(l);
		return NULL;
	}
	char *dot = strchr(l->hostname, '.');
	if (dot)
		*dot = '\0';
	l->pub.name = l->name;
	l->pub.hostname = l->hostname;
	t->looms[t->nlooms++] = l;
	return l;
}

/* "F1, F2, F3 and N more": the first 3 files of a list. */
static void list_files(char *buf, size_t len, const char *const *v, size_t n)
{
	size_t k = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && i < 3; i++) {
		int m = snprintf(buf + k, len - k, "%s%s", i ? ", " : "", v[i]);
		if (m < 0 || (size_t) m >= len - k)
			return;
		k += (size_t) m;
	}
	if (n > 3)
		snprintf(buf + k, len - k, " and %zu more", n - 3);
}

static int add_src(const char ***v, size_t *n, const char *f)
{
	const char **nv = realloc((void *) *v, (*n + 1) * sizeof **v);
	if (nv == NULL)
		return -1;
	*v = nv;
	(*v)[(*n)++] = f;
	return 0;
}

/* NULL: out of memory. */
static struct weft_iproc *get_proc(struct weft_iloom *l, int pid)
{
	for (size_t i = 0; i < l->nprocs; i++)
		if (l->procs[i]->pub.pid == pid)
			return l->procs[i];
	size_t cap = l->nprocs; /* grow by one: procs are few */
	struct weft_iproc **np = realloc(l->procs, (cap + 1) * sizeof *l->procs);
	if (np == NULL)
		return NULL;
	l->procs = np;
	struct weft_iproc *p = calloc(1, sizeof *p);
	if (p == NULL)
		return NULL;
	p->pub.pid = pid;
	p->pub.rank = -1;
	p->pub.loom = &l->pub;
	p->loom = l;
	l->procs[l->nprocs++] = p;
	return p;
}

static int add_cpus(struct weft_trace *t, struct weft_iloom *l, struct weft_wstream *s)
{
	const struct weft_meta *m = &s->meta;
	if (m->ncpus == 0)
		return weft_breach(&t->diag, "%s: %s is present but empty", s->json_path,
				m->version == WEFT_META_VERSION ? "ovni.loom_cpus" : "cpus");
	for (size_t i = 0; i < m->ncpus; i++) {
		const struct weft_cpu *c = &m->cpus[i];
		size_t k;
		for (k = 0; k < l->ncpus; k++)
			if (l->cpus[k].phyid == c->phyid)
				break;
		if (k < l->ncpus) {
			if (l->cpus[k].index != c->index
					&& weft_breach(&t->diag, "loom '%s': CPU phyid %d has index %d "
						"in %s but index %d in %s", l->name, c->phyid,
						l->cpus[k].index, l->cpu_src[k], c->index,
						s->json_path) < 0)
				return -1;
			continue;
		}
		struct weft_cpu *nc = realloc(l->cpus, (l->ncpus + 1) * sizeof *l->cpus);
		if (nc == NULL)
			return oom(t, s);
		l->cpus = nc;
		const char **ns = realloc((void *) l->cpu_src, (l->ncpus + 1) * sizeof *l->cpu_src);
		if (ns == NULL)
			return oom(t, s);
		l->cpu_src = ns;
		l->cpus[l->ncpus] = *c;
		l->cpu_src[l->ncpus] = s->json_path;
		l->ncpus++;
	}
	return 0;
}

/* The metadata file of the first stream (before s, in stream order) that
 * declares mark type `type` (and, if label is set, its value `value`): the
 * earlier declaration a conflict names. Only on the error path. */
static const char *mark_declarer(const struct weft_trace *t, const struct weft_wstream *s,
		int32_t type, int label, int64_t value)
{
	for (size_t i = 0; i < t->nstreams && t->streams[i] != s; i++) {
		const struct weft_meta *m = &t->streams[i]->meta;
		for (size_t k = 0; k < m->nmarks; k++) {
			if (m->marks[k].type != type)
				continue;
			if (!label)
				return t->streams[i]->json_path;
			for (size_t j = 0; j < m->marks[k].nlabels; j++)
				if (m->marks[k].labels[j].value == value)
					return t->streams[i]->json_path;
		}
	}
	return "an earlier stream";
}

static int add_marks(struct weft_trace *t, struct weft_wstream *s)
{
	const struct weft_meta *m = &s->meta;
	for (size_t i = 0; i < m->nmarks; i++) {
		const struct weft_mark_def *md = &m->marks[i];
		size_t k;
		for (k = 0; k < t->nmarks; k++)
			if (t->marks[k].type == md->type)
				break;
		if (k == t->nmarks) {
			struct weft_mark_type *nm = realloc(t->marks, (t->nmarks + 1) * sizeof *nm);
			if (nm == NULL)
				return oom(t, s);
			t->marks = nm;
			struct weft_mark_type *mt = &t->marks[t->nmarks++];
			memset(mt, 0, sizeof *mt);
			mt->type = md->type;
			mt->title = md->title;
			mt->stack = md->stack;
		}
		struct weft_mark_type *mt = &t->marks[k];
		if (strcmp(mt->title, md->title) != 0 || mt->stack != md->stack) {
			if (weft_breach(&t->diag, "%s: mark type %d is \"%s\" (%s), but %s "
						"declared it \"%s\" (%s)", s->json_path, md->type,
						md->title, md->stack ? "stack" : "single",
						mark_declarer(t, s, md->type, 0, 0), mt->title,
						mt->stack ? "stack" : "single") < 0)
				return -1;
			continue;
		}
		for (size_t j = 0; j < md->nlabels; j++) {
			const struct weft_mark_label *lb = &md->labels[j];
			size_t q;
			for (q = 0; q < mt->nlabels; q++)
				if (mt->labels[q].value == lb->value)
					break;
			if (q < mt->nlabels) {
				if (strcmp(mt->labels[q].label, lb->label) != 0
						&& weft_breach(&t->diag, "%s: mark type %d value %lld is "
							"labelled \"%s\", but %s labelled it \"%s\"",
							s->json_path, md->type, (long long) lb->value,
							lb->label,
							mark_declarer(t, s, md->type, 1, lb->value),
							mt->labels[q].label) < 0)
					return -1;
				continue;
			}
			struct weft_mark_label *nl = realloc((void *) mt->labels,
					(mt->nlabels + 1) * sizeof *nl);
			if (nl == NULL)
				return oom(t, s);
			nl[mt->nlabels++] = *lb;
			mt->labels = nl;
		}
	}
	return 0;
}

static int cmp_cpu(const void *a, const void *b)
{
	const struct weft_cpu *x = a, *y = b;
	return (x->index > y->index) - (x->index < y->index);
}

static int cmp_proc(const void *a, const void *b)
{
	const struct weft_iproc *x = *(struct weft_iproc *const *) a;
	const struct weft_iproc *y = *(struct weft_iproc *const *) b;
	return (x->pub.pid > y->pub.pid) - (x->pub.pid < y->pub.pid);
}

static int cmp_thread(const void *a, const void *b)
{
	const struct weft_thread *x = *(struct weft_thread *const *) a;
	const struct weft_thread *y = *(struct weft_thread *const *) b;
	if (x->tid != y->tid)
		return (x->tid > y->tid) - (x->tid < y->tid);
	return strcmp(x->stream->relpath, y->stream->relpath);
}

static int cmp_loom(const void *a, const void *b)
{
	return strcmp((*(struct weft_iloom *const *) a)->name,
			(*(struct weft_iloom *const *) b)->name);
}

/* "missing" if the key is absent from "ovni", "invalid" if present but unusable. */
static const char *absent(const struct weft_wstream *s, const char *key)
{
	json_t *o = s->json ? json_object_get(s->json, WEFT_KEY_OVNI) : NULL;
	return o != NULL && json_object_get(o, key) != NULL ? "invalid" : "missing";
}

/* Per-stream rules that do not involve other streams. */
static int check_stream(struct weft_trace *t, struct weft_wstream *s, int *placeable)
{
	const struct weft_meta *m = &s->meta;
	const char *f = s->json_path;
	struct weft_diag *d = &t->diag;
	*placeable = 0;
	if (m->part == NULL)
		return weft_breach(d, "%s: ovni.part is %s", f, absent(s, WEFT_KEY_PART));
	if (strcmp(m->part, WEFT_PART_THREAD) != 0)
		return weft_breach(d, "%s: ovni.part is '%s'; weft only knows 'thread' streams",
				f, m->part);
	if (!m->has_tid)
		return weft_breach(d, "%s: ovni.tid is %s", f, absent(s, WEFT_KEY_TID));
	if (!m->has_pid)
		return weft_breach(d, "%s: ovni.pid is %s", f, absent(s, WEFT_KEY_PID));
	if (m->loom == NULL)
		return weft_breach(d, "%s: ovni.loom is %s", f, absent(s, WEFT_KEY_LOOM));
	*placeable = 1;
	if (m->version == WEFT_META_VERSION) {
		if (!m->has_finished) {
			char why[256];
			weft_meta_unfinished_why(m, why, sizeof why);
			if (weft_breach(d, "%s: %s", f, why) < 0)
				return -1;
		} else if (m->finished != 1) {
			if (weft_breach(d, "%s: ovni.finished is not 1", f) < 0)
				return -1;
		}
		if (!m->has_require && weft_breach(d, "%s: ovni.require is missing", f) < 0)
			return -1;
		/* the reference refuses a stream without them (a key present
		 * but not a string was reported when parsed) */
		json_t *o = s->json ? json_object_get(s->json, WEFT_KEY_OVNI) : NULL;
		json_t *lib = o ? json_object_get(o, WEFT_KEY_LIB) : NULL;
		if (lib == NULL || json_is_object(lib)) {
			if (json_object_get(lib, WEFT_KEY_LIB_VERSION) == NULL
					&& weft_breach(d, "%s: ovni.lib.version is missing", f) < 0)
				return -1;
			if (json_object_get(lib, WEFT_KEY_LIB_COMMIT) == NULL
					&& weft_breach(d, "%s: ovni.lib.commit is missing", f) < 0)
				return -1;
		}
	}
	if (m->has_rank && !m->has_nranks)
		return weft_breach(d, "%s: %s is given without %s", f,
				m->version == WEFT_META_VERSION ? "ovni.rank" : "rank",
				m->version == WEFT_META_VERSION ? "ovni.nranks" : "nranks");
	if (m->has_rank && m->rank >= m->nranks)
		return weft_breach(d, "%s: rank %d is not below nranks %d", f, m->rank, m->nranks);
	return 0;
}

struct item {
	char *key; /* the stream dir relative to t->root */
	struct weft_wstream *s;
};

static int cmp_item(const void *a, const void *b)
{
	return strcmp(((const struct item *) a)->key, ((const struct item *) b)->key);
}

static void free_items(struct item *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].key);
	free(v);
}

/* The streams of both kinds, in the order of their dirs in the trace;
 * NULL: out of memory. */
static struct item *all_items(struct weft_trace *t, size_t *count)
{
	size_t n = t->nstreams + t->nmstreams;
	struct item *v = weft_calloc(n, sizeof *v);
	if (v == NULL)
		return NULL;
	int bad = 0;
	for (size_t i = 0; i < t->nstreams; i++) {
		struct weft_wstream *s = t->streams[i];
		v[i].s = s;
		v[i].key = t->subrel ? weft_path_join(t->subrel, s->relpath)
			: weft_strdup(s->relpath);
		bad |= v[i].key == NULL;
	}
	for (size_t i = 0; i < t->nmstreams; i++) {
		v[t->nstreams + i].s = t->mstreams[i];
		v[t->nstreams + i].key = weft_strdup(t->mstreams[i]->relpath);
		bad |= v[t->nstreams + i].key == NULL;
	}
	if (bad) {
		free_items(v, n);
		return NULL;
	}
	weft_sort(v, n, sizeof *v, cmp_item);
	*count = n;
	return v;
}

/* Takes the metadata of stream s into the system. */
static int take_stream(struct weft_trace *t, struct build *b, struct weft_wstream *s)
{
	struct weft_diag *d = &t->diag;
	const struct weft_meta *m = &s->meta;
	int placeable;
	if (s->meta_only) {
		if (s->meta_bad)
			return 0;
		placeable = m->part != NULL && strcmp(m->part, WEFT_PART_THREAD) == 0
			&& m->has_tid && m->has_pid && m->loom != NULL;
	} else if (check_stream(t, s, &placeable) < 0) {
		return -1;
	}
	if (add_marks(t, s) < 0)
		return -1;
	if (!placeable)
		return 0;
	struct weft_iloom *l = get_loom(t, b, m->loom);
	struct weft_iproc *p = l != NULL ? get_proc(l, m->pid) : NULL;
	if (p == NULL || add_src(&l->srcs, &l->nsrcs, s->json_path) < 0
			|| add_src(&p->srcs, &p->nsrcs, s->json_path) < 0)
		return oom(t, s);
	if (m->version == WEFT_META_VERSION)
		p->has_v3 = 1;
	if (!s->meta_only) {
		for (size_t k = 0; k < p->nthreads; k++) {
			if (p->threads[k]->tid == m->tid
					&& weft_breach(d, "process %d of loom '%s' has two streams for "
						"thread %d: %s and %s", m->pid, l->name, m->tid,
						((const struct weft_wstream *)
						 p->threads[k]->stream)->json_path,
						s->json_path) < 0)
				return -1;
		}
		struct weft_thread **nt = realloc(p->threads, (p->nthreads + 1) * sizeof *nt);
		if (nt == NULL)
			return oom(t, s);
		p->threads = nt;
		struct weft_thread *th = calloc(1, sizeof *th);
		if (th == NULL)
			return oom(t, s);
		th->tid = m->tid;
		th->proc = &p->pub;
		th->stream = &s->pub;
		p->threads[p->nthreads++] = th;
		s->pub.thread = th;
	}

	if (m->has_app_id) {
		if (p->app_id_src == NULL) {
			p->pub.app_id = m->app_id;
			p->app_id_src = s->json_path;
		} else if (p->pub.app_id != m->app_id
				&& weft_breach(d, "process %d of loom '%s': app_id %d in %s "
					"but %d in %s", p->pub.pid, l->name, p->pub.app_id,
					p->app_id_src, m->app_id, s->json_path) < 0) {
			return -1;
		}
	}
	if (m->has_rank && m->has_nranks) {
		if (p->rank_src == NULL) {
			p->pub.rank = m->rank;
			p->pub.nranks = m->nranks;
			p->rank_src = s->json_path;
		} else if ((p->pub.rank != m->rank || p->pub.nranks != m->nranks)
				&& weft_breach(d, "process %d of loom '%s': rank %d of %d in %s "
					"but rank %d of %d in %s", p->pub.pid, l->name,
					p->pub.rank, p->pub.nranks, p->rank_src, m->rank,
					m->nranks, s->json_path) < 0) {
			return -1;
		}
	}
	if (m->has_cpus && add_cpus(t, l, s) < 0)
		return -1;
	return 0;
}

static void free_proc(struct weft_iproc *p)
{
	for (size_t q = 0; q < p->nthreads; q++)
		free(p->threads[q]);
	free(p->threads);
	free(p->pthreads);
	free((void *) p->srcs);
	free(p);
}

int weft_build_system(struct weft_trace *t)
{
	struct build b = { 0 };
	struct weft_diag *d = &t->diag;
	size_t nitems = 0;
	struct item *items = all_items(t, &nitems);
	if (items == NULL)
		return weft_oom(d, "building the system of %s", t->path);
	for (size_t i = 0; i < nitems; i++) {
		if (take_stream(t, &b, items[i].s) < 0) {
			free_items(items, nitems);
			return -1;
		}
	}
	free_items(items, nitems);
	char files[WEFT_ERR_MAX / 2];

	/* Per loom: CPU indices 0..N-1, ranks in all processes or none. */
	for (size_t i = 0; i < t->nlooms; i++) {
		struct weft_iloom *l = t->looms[i];
		if (l->ncpus == 0) {
			list_files(files, sizeof files, l->srcs, l->nsrcs);
			if (weft_breach(d, "loom '%s' has no CPUs: none of its streams gives %s "
						"(%s)", l->name, "ovni.loom_cpus", files) < 0)
				return -1;
		}
		for (size_t k = 0; k < l->ncpus; k++) {
			if ((size_t) l->cpus[k].index >= l->ncpus) {
				if (weft_breach(d, "loom '%s': CPU index %d (phyid %d, in %s) is out "
							"of range: the loom has %zu CPUs, so indices must be "
							"0..%zu", l->name, l->cpus[k].index,
							l->cpus[k].phyid, l->cpu_src[k], l->ncpus,
							l->ncpus - 1) < 0)
					return -1;
				continue;
			}
			for (size_t q = 0; q < k; q++) {
				if (l->cpus[q].index == l->cpus[k].index
						&& weft_breach(d, "loom '%s': CPU index %d is given to phyid "
							"%d (in %s) and to phyid %d (in %s)", l->name,
							l->cpus[k].index, l->cpus[q].phyid,
							l->cpu_src[q], l->cpus[k].phyid,
							l->cpu_src[k]) < 0)
					return -1;
			}
		}
		weft_sort(l->cpus, l->ncpus, sizeof *l->cpus, cmp_cpu);
		l->pub.ncpus = l->ncpus;
		l->pub.cpus = l->cpus;

		size_t nrank = 0;
		int rmin = 0;
		const struct weft_iproc *without = NULL, *with = NULL;
		for (size_t k = 0; k < l->nprocs; k++) {
			const struct weft_iproc *p = l->procs[k];
			if (p->rank_src != NULL) {
				if (nrank == 0 || p->pub.rank < rmin)
					rmin = p->pub.rank;
				nrank++;
				with = p;
			} else {
				without = p;
			}
		}
		if (nrank > 0 && nrank < l->nprocs) {
			list_files(files, sizeof files, without->srcs, without->nsrcs);
			if (weft_breach(d, "loom '%s': process %d has a rank (in %s) but process "
						"%d has none (%s)", l->name, with->pub.pid,
						with->rank_src, without->pub.pid, files) < 0)
				return -1;
		}
		l->pub.has_rank = nrank > 0 && nrank == l->nprocs;
		l->pub.rank_min = l->pub.has_rank ? rmin : 0;

		/* A process of the path's streams: one of them gives app_id (v3,
		 * as the reference; v1 metadata.json is per process). Processes of
		 * the rest of the trace only were needed for the ranks above. */
		size_t kept = 0;
		for (size_t k = 0; k < l->nprocs; k++) {
			struct weft_iproc *p = l->procs[k];
			if (p->nthreads == 0) {
				free_proc(p);
				continue;
			}
			l->procs[kept++] = p;
			if (p->has_v3 && p->app_id_src == NULL) {
				list_files(files, sizeof files, p->srcs, p->nsrcs);
				if (weft_breach(d, "process %d of loom '%s': none of its streams gives "
							"ovni.app_id (%s)", p->pub.pid, l->name, files) < 0) {
					for (size_t q = k + 1; q < l->nprocs; q++)
						l->procs[kept++] = l->procs[q];
					l->nprocs = kept;
					return -1;
				}
			}
		}
		l->nprocs = kept;

		weft_sort(l->procs, l->nprocs, sizeof *l->procs, cmp_proc);
		l->pprocs = weft_calloc(l->nprocs, sizeof *l->pprocs);
		if (l->pprocs == NULL)
			return weft_oom(d, "building the system of %s", t->path);
		for (size_t k = 0; k < l->nprocs; k++) {
			struct weft_iproc *p = l->procs[k];
			l->pprocs[k] = &p->pub;
			weft_sort(p->threads, p->nthreads, sizeof *p->threads, cmp_thread);
			p->pthreads = weft_calloc(p->nthreads, sizeof *p->pthreads);
			if (p->pthreads == NULL)
				return weft_oom(d, "building the system of %s", t->path);
			for (size_t q = 0; q < p->nthreads; q++)
				p->pthreads[q] = p->threads[q];
			p->pub.nthreads = p->nthreads;
			p->pub.threads = p->pthreads;
		}
		l->pub.nprocs = l->nprocs;
		l->pub.procs = l->pprocs;
	}
	if (t->nlooms)
		weft_sort(t->looms, t->nlooms, sizeof *t->looms, cmp_loom);
	/* Mark types and their labels stay in first-appearance order (streams in
	 * relpath order, each stream.json in file order), as the reference. */

	/* Models some stream requires: 'O' always; v1 traces name none, so any. */
	memset(t->allowed, 0, sizeof t->allowed);
	t->allowed[(unsigned char) 'O'] = 1;
	for (size_t i = 0; i < t->nstreams; i++) {
		const struct weft_meta *m = &t->streams[i]->meta;
		if (m->version == WEFT_META_V1_VERSION)
			memset(t->allowed, 1, sizeof t->allowed);
		for (size_t k = 0; k < m->nreqs; k++) {
			char mb = m->reqs[k].model ? weft_model_id_byte(m->reqs[k].model) : 0;
			if (mb != 0) {
				t->allowed[(unsigned char) mb] = 1;
				continue;
			}
			/* A model outside the ovni family (a user's model): its byte
			 * is not known here, so every byte of no known model is. */
			for (unsigned c = 0; c < 256; c++)
				if (!weft_model_id_known_byte((unsigned char) c))
					t->allowed[c] = 1;
		}
	}
	return 0;
}

void weft_free_system(struct weft_trace *t)
{
	for (size_t i = 0; i < t->nlooms; i++) {
		struct weft_iloom *l = t->looms[i];
		for (size_t k = 0; k < l->nprocs; k++)
			free_proc(l->procs[k]);
		free(l->procs);
		free((void *) l->srcs);
		free(l->pprocs);
		free(l->cpus);
		free(l->cpu_src);
		free(l->name);
		free(l->hostname);
		free(l);
	}
	free(t->looms);
	t->looms = NULL;
	t->nlooms = 0;
	for (size_t k = 0; k < t->nmarks; k++)
		free((void *) t->marks[k].labels);
	free(t->marks);
	t->marks = NULL;
	t->nmarks = 0;
	weft_free_mstreams(t);
}
