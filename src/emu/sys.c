/* SPDX-License-Identifier: MIT */
/*
 * sys.c - the system model (row order of looms, processes, threads, CPUs)
 * and the checks made before the first event (required models, clock gate).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "model.h"

static void sys_err(char *err, size_t errlen, const char *msg)
{
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "%s", msg);
}

struct loom_ref {
	const struct weft_loom *l;
	size_t pos;
};

static int cmp_loom_rank(const void *a, const void *b)
{
	const struct loom_ref *x = a, *y = b;
	if (x->l->rank_min != y->l->rank_min)
		return x->l->rank_min < y->l->rank_min ? -1 : 1;
	return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

struct proc_ref {
	const struct weft_proc *p;
	size_t pos;
};

static int cmp_proc_rank(const void *a, const void *b)
{
	const struct proc_ref *x = a, *y = b;
	if (x->p->rank != y->p->rank)
		return x->p->rank < y->p->rank ? -1 : 1;
	return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

static int cmp_proc_pid(const void *a, const void *b)
{
	const struct proc_ref *x = a, *y = b;
	if (x->p->pid != y->p->pid)
		return x->p->pid < y->p->pid ? -1 : 1;
	return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

static int cmp_thread_tid(const void *a, const void *b)
{
	const struct weft_thread *const *x = a, *const *y = b;
	return ((*x)->tid > (*y)->tid) - ((*x)->tid < (*y)->tid);
}

static int cmp_cpu_phyid(const void *a, const void *b)
{
	const struct weft_cpu *const *x = a, *const *y = b;
	return ((*x)->phyid > (*y)->phyid) - ((*x)->phyid < (*y)->phyid);
}

void emu_sys_free(struct emu_sys *sys)
{
	if (sys == NULL)
		return;
	for (size_t i = 0; i < sys->nlooms && sys->looms != NULL; i++)
		free(sys->looms[i].cpu_by_index);
	free(sys->looms);
	free(sys->procs);
	free(sys->threads);
	free(sys->cpus);
	free(sys->marks);
	memset(sys, 0, sizeof *sys);
}

int emu_sys_build(struct emu_sys *sys, const struct weft_loom *const *looms, size_t nlooms,
		const struct weft_mark_type *marks, size_t nmarks, char *err, size_t errlen)
{
	char msg[WEFT_ERR_MAX];
	memset(sys, 0, sizeof *sys);
	struct loom_ref *lr = calloc(nlooms + 1, sizeof *lr);
	if (lr == NULL)
		goto oom;
	int all_rank = 1;
	size_t nprocs = 0, nthreads = 0, ncpus = 0;
	for (size_t i = 0; i < nlooms; i++) {
		lr[i].l = looms[i];
		lr[i].pos = i;
		if (!looms[i]->has_rank)
			all_rank = 0;
		nprocs += looms[i]->nprocs;
		ncpus += looms[i]->ncpus + 1;
		for (size_t p = 0; p < looms[i]->nprocs; p++)
			nthreads += looms[i]->procs[p]->nthreads;
	}
	/* Looms are given in name order; the rank sort is stable. */
	if (all_rank && nlooms > 0)
		qsort(lr, nlooms, sizeof *lr, cmp_loom_rank);
	sys->sorted_by_rank = all_rank;
	sys->nlooms = nlooms;
	sys->looms = calloc(nlooms + 1, sizeof *sys->looms);
	sys->procs = calloc(nprocs + 1, sizeof *sys->procs);
	sys->threads = calloc(nthreads + 1, sizeof *sys->threads);
	sys->cpus = calloc(ncpus + 1, sizeof *sys->cpus);
	sys->marks = calloc(nmarks + 1, sizeof *sys->marks);
	if (!sys->looms || !sys->procs || !sys->threads || !sys->cpus || !sys->marks)
		goto oom;

	size_t pi = 0, ti = 0, ci = 0;
	for (size_t li = 0; li < nlooms; li++) {
		const struct weft_loom *wl = lr[li].l;
		struct emu_loom *L = &sys->looms[li];
		L->name = wl->name;
		snprintf(L->hostname, sizeof L->hostname, "%s", wl->hostname ? wl->hostname : "");
		L->clock_offset = wl->clock_offset;
		/* CPUs by phyid, then the vCPU. */
		const struct weft_cpu **cs = calloc(wl->ncpus + 1, sizeof *cs);
		L->cpu_by_index = calloc(wl->ncpus + 1, sizeof *L->cpu_by_index);
		if (cs == NULL || L->cpu_by_index == NULL) {
			free(cs);
			goto oom;
		}
		for (size_t c = 0; c < wl->ncpus; c++) {
			cs[c] = &wl->cpus[c];
			L->cpu_by_index[c] = SIZE_MAX;
		}
		qsort(cs, wl->ncpus, sizeof *cs, cmp_cpu_phyid);
		L->cpu_first = ci;
		L->nphys = wl->ncpus;
		for (size_t c = 0; c < wl->ncpus; c++) {
			int idx = cs[c]->index;
			if (idx < 0 || (size_t) idx >= wl->ncpus || L->cpu_by_index[idx] != SIZE_MAX) {
				snprintf(msg, sizeof msg,
					"loom %s: CPU index %d is not unique or not in 0..%zu",
					wl->name, idx, wl->ncpus - 1);
				free(cs);
				sys_err(err, errlen, msg);
				emu_sys_free(sys);
				free(lr);
				return -1;
			}
			L->cpu_by_index[idx] = ci;
			struct emu_sys_cpu *C = &sys->cpus[ci++];
			C->loom = li;
			C->index = idx;
			C->phyid = cs[c]->phyid;
			snprintf(C->label, sizeof C->label, " CPU %zu.%d", li, C->phyid);
		}
		free(cs);
		L->vcpu = ci;
		struct emu_sys_cpu *V = &sys->cpus[ci++];
		V->loom = li;
		V->index = -1;
		V->phyid = -1;
		V->is_virtual = 1;
		snprintf(V->label, sizeof V->label, "vCPU %zu.*", li);

		/* Processes: by rank when the loom has ranks, else by pid. */
		struct proc_ref *pr = calloc(wl->nprocs + 1, sizeof *pr);
		if (pr == NULL)
			goto oom;
		for (size_t p = 0; p < wl->nprocs; p++) {
			pr[p].p = wl->procs[p];
			pr[p].pos = p;
		}
		qsort(pr, wl->nprocs, sizeof *pr, wl->has_rank ? cmp_proc_rank : cmp_proc_pid);
		L->proc_first = pi;
		L->nprocs = wl->nprocs;
		for (size_t p = 0; p < wl->nprocs; p++) {
			const struct weft_proc *wp = pr[p].p;
			struct emu_proc *P = &sys->procs[pi];
			P->pid = wp->pid;
			P->app_id = wp->app_id;
			P->rank = wp->rank;
			P->loom = li;
			P->thread_first = ti;
			P->nthreads = wp->nthreads;
			const struct weft_thread **ts = calloc(wp->nthreads + 1, sizeof *ts);
			if (ts == NULL) {
				free(pr);
				goto oom;
			}
			for (size_t t = 0; t < wp->nthreads; t++)
				ts[t] = wp->threads[t];
			qsort(ts, wp->nthreads, sizeof *ts, cmp_thread_tid);
			for (size_t t = 0; t < wp->nthreads; t++) {
				struct emu_sys_thread *T = &sys->threads[ti++];
				T->tid = ts[t]->tid;
				T->proc = pi;
				T->loom = li;
				T->stream = ts[t]->stream;
				T->relpath = T->stream && T->stream->relpath ? T->stream->relpath : "?";
				snprintf(T->label, sizeof T->label, "TH %d.%d", wp->app_id, T->tid);
			}
			free(ts);
			pi++;
		}
		free(pr);
	}
	sys->nprocs = pi;
	sys->nthreads = ti;
	sys->ncpus = ci;
	for (size_t m = 0; m < nmarks; m++) {
		sys->marks[m].type = marks[m].type;
		sys->marks[m].title = marks[m].title;
		sys->marks[m].stack = marks[m].stack;
		sys->marks[m].nlabels = marks[m].nlabels;
		sys->marks[m].labels = marks[m].labels;
	}
	sys->nmarks = nmarks;
	free(lr);
	return 0;
oom:
	free(lr);
	emu_sys_free(sys);
	sys_err(err, errlen, "out of memory building the system model");
	return -1;
}

/* ---- required models ---- */

static int parse_version(const char *s, long v[3])
{
	for (int i = 0; i < 3; i++) {
		char *end;
		if (*s < '0' || *s > '9')
			return -1;
		v[i] = strtol(s, &end, 10);
		s = end;
		if (i < 2) {
			if (*s != '.')
				return -1;
			s++;
		}
	}
	if (*s != '\0' && *s != '.' && *s != '-')
		return -1;
	return 0;
}

int emu_version_compatible(const char *want, const char *have)
{
	long w[3], h[3];
	if (want == NULL || parse_version(want, w) != 0 || parse_version(have, h) != 0)
		return 0;
	return w[0] == h[0] && w[1] <= h[1];
}

int emu_select_models(const struct weft_registry *models,
		const struct weft_stream *const *streams, size_t nstreams, int all,
		const struct emu_model_desc **out, size_t *nout, char *err, size_t errlen)
{
	char msg[WEFT_ERR_MAX];
	size_t nm = weft_model_count(models);
	size_t n = 0;
	for (size_t g = 0; g < nm; g++) {
		const struct weft_model_spec *ms = weft_model_at(models, g);
		if (ms->emu == NULL)
			continue;
		int want = (all && !ms->emu->not_in_all) || ms->emu->always_enabled;
		for (size_t s = 0; s < nstreams; s++) {
			const struct weft_stream *st = streams[s];
			for (size_t r = 0; r < st->nreqs; r++) {
				const struct weft_model_req *q = &st->reqs[r];
				if (q->model == NULL || strcmp(q->model, ms->name) != 0)
					continue;
				if (!emu_version_compatible(q->version, ms->version)) {
					snprintf(msg, sizeof msg,
						"%s: unsupported %s model version (want %s, have %s)",
						st->relpath, q->model, q->version ? q->version : "?",
						ms->version);
					sys_err(err, errlen, msg);
					return -1;
				}
				want = 1;
			}
		}
		if (want)
			out[n++] = ms->emu;
	}
	/* model-byte order (the registry lists user models last) */
	for (size_t i = 1; i < n; i++)
		for (size_t k = i; k > 0 && (unsigned char) out[k - 1]->byte >
				(unsigned char) out[k]->byte; k--) {
			const struct emu_model_desc *x = out[k];
			out[k] = out[k - 1];
			out[k - 1] = x;
		}
	*nout = n;
	return 0;
}

/* ---- the clock gate ---- */

#define EMU_GATE_NS (INT64_C(3600) * 1000000000)

int emu_clock_gate(const struct weft_stream *const *streams, const int64_t *first,
		const int *has, size_t nstreams, char *err, size_t errlen)
{
	size_t ref = SIZE_MAX;
	char msg[WEFT_ERR_MAX];
	for (size_t i = 0; i < nstreams; i++) {
		if (!has[i])
			continue;
		if (first[i] < 0) {
			snprintf(msg, sizeof msg,
				"%s: first clock %" PRId64 " is negative after the clock offset",
				streams[i]->relpath, first[i]);
			sys_err(err, errlen, msg);
			return -1;
		}
		if (ref == SIZE_MAX)
			ref = i;
	}
	if (ref == SIZE_MAX)
		return 0;
	size_t nbad = 0;
	int n = 0;
	msg[0] = '\0';
	for (size_t i = 0; i < nstreams; i++) {
		if (!has[i])
			continue;
		int64_t d = first[i] - first[ref];
		if (d > EMU_GATE_NS || d < -EMU_GATE_NS) {
			if (nbad++ == 0)
				n = snprintf(msg, sizeof msg, "first clocks more than 1 h apart "
					"(use a clock-offsets.txt): ");
			if (n >= 0 && (size_t) n < sizeof msg)
				n += snprintf(msg + n, sizeof msg - (size_t) n,
					"%sstream %s starts %.2f h from stream %s",
					nbad > 1 ? "; " : "", streams[i]->relpath,
					(double) d / 3600e9, streams[ref]->relpath);
		}
	}
	if (nbad > 0) {
		sys_err(err, errlen, msg);
		return -1;
	}
	return 0;
}
