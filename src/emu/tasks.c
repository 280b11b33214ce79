/* SPDX-License-Identifier: MIT */
/*
 * tasks.c - the task machinery of the models that have a tasks: section
 * (nosv, nanos6, openmp): task types per process (their Paraver value is a
 * hash of the label), tasks per process with their creation flags, bodies
 * (the executions of a task) and each thread's stack of bodies. A body
 * operation is classified by the running body before and after it
 * (x X e E p r), and the model's view channels are set or cleared from it.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "emu_internal.h"

#define LABEL_MAX 512

enum bstate { B_CREATED, B_RUNNING, B_PAUSED, B_DEAD };
static const char *const bstate_names[] = { "Created", "Running", "Paused", "Dead" };

struct task;

/* A body: the one body of a task (b1, inside its task) or one of the bodies
 * of a parallel task (inside a struct pbody). */
struct body {
	uint32_t id;
	uint8_t state;
	uint8_t used; /* executed at least once */
	uint8_t own;  /* 1: the b1 of its task; 0: in a struct pbody */
};

struct pbody {
	struct body b;
	struct task *task;
};

struct ttype {
	uint32_t id;
	char *label;
	int64_t gid;
};

/* 32 bytes: a trace may create millions, and each is fresh memory (the
 * kernel zeroes it, and a VM's host may fault it in). */
struct task {
	uint32_t next;      /* hash chain: the next task's number + 1, 0: none */
	uint32_t id;
	uint32_t proc;
	uint32_t flags;
	const struct ttype *type; /* owned by the process's type list, never moved */
	union {
		struct body b1; /* non-parallel: the one body */
		uint32_t par;   /* parallel: its bodies, T->par[par] */
	} u;
};
_Static_assert(sizeof(struct task) == 32, "two tasks take one cache line");

/* The bodies of a parallel task, by creation. */
struct par {
	struct pbody **pb;
	uint32_t npb, cap;
};

struct tlist {
	struct ttype **v;
	size_t n, cap;
};

struct bstack {
	struct body **v;
	size_t n, cap;
};

/* Tasks are numbered in creation order; number n is task n % SLAB_TASKS
 * of slab n / SLAB_TASKS. */
#define SLAB_SHIFT 16
#define SLAB_TASKS (1u << SLAB_SHIFT)

struct tasks_rt {
	struct tlist *types;   /* per process */
	uint32_t *tab;         /* hash of (proc, id): a task's number + 1, chained */
	size_t mask, count;
	struct task **slabs;   /* SLAB_TASKS tasks each */
	size_t nslabs, slabcap;
	struct par *par;       /* the bodies of the parallel tasks */
	size_t npar, parcap;
	struct bstack *stacks; /* per thread */
	size_t view_ch[EMU_TASK_VIEW_MAX]; /* the engine channel of each task view */
	struct task *ev_task;  /* the task of the current event */
	uint64_t ev_seq;
	int relax_warned;
	size_t nprocs, nthreads;
};

/* ---- the type hash: Bob Jenkins' 1996 hash (lookup2), as the reference
 * takes it from uthash, then the reference's mapping to a Paraver value ---- */

#define MIX(a, b, c) do { \
	a -= b; a -= c; a ^= (c >> 13); \
	b -= c; b -= a; b ^= (a << 8); \
	c -= a; c -= b; c ^= (b >> 13); \
	a -= b; a -= c; a ^= (c >> 12); \
	b -= c; b -= a; b ^= (a << 16); \
	c -= a; c -= b; c ^= (b >> 5); \
	a -= b; a -= c; a ^= (c >> 3); \
	b -= c; b -= a; b ^= (a << 10); \
	c -= a; c -= b; c ^= (b >> 15); \
} while (0)

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

uint32_t emu_type_hash(const char *s, size_t len)
{
	const unsigned char *k = (const unsigned char *) s;
	uint32_t a = 0x9e3779b9u, b = 0x9e3779b9u, c = 0xfeedbeefu;
	size_t n = len;
	while (n >= 12) {
		a += le32(k);
		b += le32(k + 4);
		c += le32(k + 8);
		MIX(a, b, c);
		k += 12;
		n -= 12;
	}
	c += (uint32_t) len;
	switch (n) {
	case 11: c += (uint32_t) k[10] << 24; /* fall through */
	case 10: c += (uint32_t) k[9] << 16; /* fall through */
	case 9: c += (uint32_t) k[8] << 8; /* fall through */
	case 8: b += (uint32_t) k[7] << 24; /* fall through */
	case 7: b += (uint32_t) k[6] << 16; /* fall through */
	case 6: b += (uint32_t) k[5] << 8; /* fall through */
	case 5: b += k[4]; /* fall through */
	case 4: a += (uint32_t) k[3] << 24; /* fall through */
	case 3: a += (uint32_t) k[2] << 16; /* fall through */
	case 2: a += (uint32_t) k[1] << 8; /* fall through */
	case 1: a += k[0]; /* fall through */
	default: break;
	}
	MIX(a, b, c);
	return c;
}

int64_t emu_type_gid(const char *label, size_t len)
{
	uint32_t h = emu_type_hash(label, len);
	uint32_t gid = (h + 666u) & 0x7fffffffu;
	if (gid < 1000)
		gid += 1000;
	return gid;
}

int64_t emu_type_gid_of(const char *label)
{
	return emu_type_gid(label, strlen(label));
}

/* ---- state ---- */

int emu_tasks_create(struct emu *e, struct model_rt *m)
{
	struct tasks_rt *T = calloc(1, sizeof *T);
	if (T == NULL)
		return -1;
	m->tasks = T;
	T->nprocs = e->sys->nprocs;
	T->nthreads = e->nthreads;
	T->types = calloc(e->sys->nprocs + 1, sizeof *T->types);
	T->stacks = calloc(e->nthreads + 1, sizeof *T->stacks);
	for (size_t i = 0; i < m->desc->tasks.nview && i < EMU_TASK_VIEW_MAX; i++)
		T->view_ch[i] = m->chan_of_desc[m->desc->tasks.view[i].chan];
	T->mask = 255;
	T->tab = calloc(T->mask + 1, sizeof *T->tab);
	if (T->types == NULL || T->stacks == NULL || T->tab == NULL)
		return -1;
	return 0;
}

void emu_tasks_destroy(struct model_rt *m)
{
	struct tasks_rt *T = m->tasks;
	if (T == NULL)
		return;
	for (size_t i = 0; i < T->nslabs; i++)
		free(T->slabs[i]);
	free(T->slabs);
	for (size_t i = 0; i < T->npar; i++) {
		for (size_t b = 0; b < T->par[i].npb; b++)
			free(T->par[i].pb[b]);
		free(T->par[i].pb);
	}
	free(T->par);
	free(T->tab);
	if (T->types != NULL) {
		for (size_t p = 0; p < T->nprocs; p++) {
			for (size_t i = 0; i < T->types[p].n; i++) {
				free(T->types[p].v[i]->label);
				free(T->types[p].v[i]);
			}
			free(T->types[p].v);
		}
	}
	free(T->types);
	if (T->stacks != NULL)
		for (size_t t = 0; t < T->nthreads; t++)
			free(T->stacks[t].v);
	free(T->stacks);
	free(T);
	m->tasks = NULL;
}

/* The big arrays of the tasks (slabs, the table) are given huge pages where
 * the system gives them on request: their pages are then faulted in 2 MiB at
 * a time, not 4 KiB. Freed with free(). */
#define HUGE_PAGE (2u << 20)

static void *huge_alloc(size_t size)
{
	size_t n = (size + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
	void *p = aligned_alloc(HUGE_PAGE, n);
#ifdef MADV_HUGEPAGE
	if (p != NULL)
		madvise(p, n, MADV_HUGEPAGE);
#endif
	return p;
}

/* n zeroed pointers of the task table. */
static uint32_t *table_alloc(size_t n)
{
	if (n * sizeof(uint32_t) < HUGE_PAGE)
		return calloc(n, sizeof(uint32_t));
	uint32_t *t = huge_alloc(n * sizeof *t);
	if (t != NULL)
		memset(t, 0, n * sizeof *t);
	return t;
}

/* Task number n. */
static inline struct task *task_at(const struct tasks_rt *T, uint32_t n)
{
	return &T->slabs[n >> SLAB_SHIFT][n & (SLAB_TASKS - 1)];
}

/* The task of a body. */
static inline struct task *body_task(const struct body *b)
{
	if (b->own)
		return (struct task *) (void *) ((char *) (uintptr_t) b - offsetof(struct task, u.b1));
	return ((const struct pbody *) (const void *) b)->task;
}

/* Consecutive ids (a runtime numbers its tasks) take consecutive slots, so
 * that the table is walked in order rather than missed in the cache at each
 * task; blocks of 256 ids, and the processes, are spread by Fibonacci
 * hashing. */
static size_t task_hash(size_t proc, uint32_t id, size_t mask)
{
	uint64_t x = ((uint64_t) proc << 32 | id >> 8) * UINT64_C(0x9e3779b97f4a7c15);
	return (size_t) ((x >> 32) + id) & mask;
}

static struct task *task_find(const struct tasks_rt *T, size_t proc, uint32_t id)
{
	for (uint32_t n = T->tab[task_hash(proc, id, T->mask)]; n != 0;) {
		struct task *k = task_at(T, n - 1);
		if (k->id == id && k->proc == proc)
			return k;
		n = k->next;
	}
	return NULL;
}

/* Inserts task number num (its id and process set) in the table. */
static int task_insert(struct tasks_rt *T, uint32_t num)
{
	if (T->count + 1 > T->mask + 1) {
		size_t nm = T->mask * 2 + 1;
		uint32_t *nt = table_alloc(nm + 1);
		if (nt == NULL)
			return -1;
		for (size_t i = 0; i <= T->mask; i++) {
			uint32_t x = T->tab[i];
			while (x != 0) {
				struct task *k = task_at(T, x - 1);
				uint32_t n = k->next;
				size_t h = task_hash(k->proc, k->id, nm);
				k->next = nt[h];
				nt[h] = x;
				x = n;
			}
		}
		free(T->tab);
		T->tab = nt;
		T->mask = nm;
	}
	struct task *k = task_at(T, num);
	size_t h = task_hash(k->proc, k->id, T->mask);
	k->next = T->tab[h];
	T->tab[h] = num + 1;
	T->count++;
	return 0;
}

static const struct ttype *type_find(const struct tasks_rt *T, size_t proc, uint32_t id)
{
	const struct tlist *l = &T->types[proc];
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i]->id == id)
			return l->v[i];
	return NULL;
}

static int u32_at(struct emu *e, size_t off, uint32_t *out)
{
	const struct weft_event *ev = e->ev;
	if (off + 4 > ev->payload_size)
		return emu_fail(e, "payload of %" PRIu32 " bytes has no 32-bit field at offset %zu",
				ev->payload_size, off);
	memcpy(out, ev->payload + off, 4);
	return 0;
}

/* ---- types ---- */

int emu_act_type_create(struct emu *e, size_t t, struct model_rt *m)
{
	struct tasks_rt *T = m->tasks;
	const struct weft_event *ev = e->ev;
	size_t proc = e->thr[t].proc;
	uint32_t id = 0;
	if (u32_at(e, 4, &id) != 0)
		return -1;
	if (type_find(T, proc, id) != NULL)
		return emu_fail(e, "task type %" PRIu32 " is already defined in process %d", id,
				e->thr[t].pid);
	if (id == 0)
		return emu_fail(e, "task type id 0 is not allowed");
	const uint8_t *lab = ev->payload + 8;
	size_t max = ev->payload_size > 8 ? ev->payload_size - 8 : 0;
	const void *nul = max ? memchr(lab, 0, max) : NULL;
	size_t len = nul ? (size_t) ((const uint8_t *) nul - lab) : max;
	if (len >= LABEL_MAX)
		return emu_fail(e, "task type %" PRIu32 ": its label of %zu bytes is too long (at most "
				"%d)", id, len, LABEL_MAX - 1);
	struct ttype *ty = calloc(1, sizeof *ty);
	if (ty == NULL)
		return emu_fail(e, "out of memory");
	char buf[64];
	if (len == 0) {
		snprintf(buf, sizeof buf, "(unlabeled task type %" PRIu32 ")", id);
		ty->label = strdup(buf);
	} else {
		ty->label = malloc(len + 1);
		if (ty->label != NULL) {
			memcpy(ty->label, lab, len);
			ty->label[len] = '\0';
		}
	}
	struct tlist *l = &T->types[proc];
	if (ty->label == NULL || emu_grow((void **) &l->v, &l->cap, l->n + 1, sizeof *l->v) != 0) {
		free(ty->label);
		free(ty);
		return emu_fail(e, "out of memory");
	}
	ty->id = id;
	ty->gid = emu_type_gid(ty->label, strlen(ty->label));
	l->v[l->n++] = ty;
	return 0;
}

int emu_tasks_type_gid(struct emu *e, size_t t, struct model_rt *m, uint32_t id, int64_t *gid)
{
	const struct ttype *ty = type_find(m->tasks, e->thr[t].proc, id);
	if (ty == NULL)
		return emu_fail(e, "task type %" PRIu32 " does not exist in process %d", id,
				e->thr[t].pid);
	*gid = ty->gid;
	return 0;
}

int emu_tasks_event_gid(struct emu *e, struct model_rt *m, int64_t *gid)
{
	struct tasks_rt *T = m->tasks;
	if (T->ev_seq != e->seq || T->ev_task == NULL)
		return emu_fail(e, "model description: task-gid used by an event without a task action "
				"before it");
	*gid = T->ev_task->type->gid;
	return 0;
}

/* ---- tasks ---- */

int emu_act_task_create(struct emu *e, size_t t, struct model_rt *m, const struct emu_action *a)
{
	struct tasks_rt *T = m->tasks;
	size_t proc = e->thr[t].proc;
	uint32_t id = 0, type = 0;
	if (u32_at(e, 0, &id) != 0 || u32_at(e, 4, &type) != 0)
		return -1;
	if ((a->task_flags & EMU_TF_NONZERO_ID) && id == 0)
		return emu_fail(e, "task id 0 is not allowed");
	if ((a->task_flags & EMU_TF_NONZERO_ID) && type == 0)
		return emu_fail(e, "task type id 0 is not allowed");
	if (task_find(T, proc, id) != NULL)
		return emu_fail(e, "task %" PRIu32 " already exists in process %d", id, e->thr[t].pid);
	const struct ttype *ty = type_find(T, proc, type);
	if (ty == NULL)
		return emu_fail(e, "task %" PRIu32 ": task type %" PRIu32 " does not exist in process %d",
				id, type, e->thr[t].pid);
	if (T->count >= UINT32_MAX - 1)
		return emu_fail(e, "too many tasks (%zu)", T->count);
	uint32_t num = (uint32_t) T->count;
	if ((num & (SLAB_TASKS - 1)) == 0 && (num >> SLAB_SHIFT) == T->nslabs) {
		struct task *sl = NULL;
		if (emu_grow((void **) &T->slabs, &T->slabcap, T->nslabs + 1, sizeof *T->slabs) != 0 ||
				(sl = huge_alloc(SLAB_TASKS * sizeof *sl)) == NULL)
			return emu_fail(e, "out of memory");
		T->slabs[T->nslabs++] = sl;
	}
	uint32_t flags = a->task_flags & (EMU_TF_PARALLEL | EMU_TF_RESURRECT | EMU_TF_PAUSE |
			EMU_TF_RELAX);
	uint32_t par = 0;
	if (flags & EMU_TF_PARALLEL) {
		if (emu_grow((void **) &T->par, &T->parcap, T->npar + 1, sizeof *T->par) != 0)
			return emu_fail(e, "out of memory");
		par = (uint32_t) T->npar;
		T->par[T->npar++] = (struct par) { NULL, 0, 0 };
	}
	struct task *k = task_at(T, num);
	*k = (struct task) { .id = id, .proc = (uint32_t) proc, .flags = flags, .type = ty };
	if (flags & EMU_TF_PARALLEL)
		k->u.par = par;
	else
		k->u.b1 = (struct body) { .id = 1, .own = 1 };
	if (task_insert(T, num) != 0) {
		if (flags & EMU_TF_PARALLEL)
			T->npar--;
		return emu_fail(e, "out of memory");
	}
	return 0;
}

static struct body *body_find(const struct tasks_rt *T, struct task *k, uint32_t bid)
{
	if (!(k->flags & EMU_TF_PARALLEL))
		return k->u.b1.used ? &k->u.b1 : NULL;
	const struct par *P = &T->par[k->u.par];
	for (size_t i = 0; i < P->npb; i++)
		if (P->pb[i]->b.id == bid)
			return &P->pb[i]->b;
	return NULL;
}

static struct body *body_new(struct emu *e, struct tasks_rt *T, struct task *k, uint32_t bid)
{
	if (!(k->flags & EMU_TF_PARALLEL)) {
		k->u.b1.used = 1;
		return &k->u.b1;
	}
	struct par *P = &T->par[k->u.par];
	struct pbody *b = calloc(1, sizeof *b);
	size_t cap = P->cap;
	if (b == NULL || emu_grow((void **) &P->pb, &cap, P->npb + 1, sizeof *P->pb) != 0) {
		free(b);
		emu_fail(e, "out of memory");
		return NULL;
	}
	b->b.id = bid;
	b->b.used = 1;
	b->task = k;
	P->cap = (uint32_t) cap;
	P->pb[P->npb++] = b;
	return &b->b;
}

static struct body *running(struct tasks_rt *T, size_t t)
{
	struct bstack *s = &T->stacks[t];
	if (s->n == 0)
		return NULL;
	struct body *b = s->v[s->n - 1];
	return b->state == B_RUNNING ? b : NULL;
}

static int view_write(struct emu *e, size_t t, struct model_rt *m, const struct body *b)
{
	const struct emu_tasks_desc *td = &m->desc->tasks;
	const struct emu_proc *P = &e->sys->procs[e->thr[t].proc];
	if (b != NULL && body_task(b)->id == 0 && td->nview > 0)
		return emu_fail(e, "task id 0 cannot run");
	size_t chs[EMU_TASK_VIEW_MAX];
	int64_t vs[EMU_TASK_VIEW_MAX];
	size_t n = 0;
	const struct tasks_rt *T = m->tasks;
	const struct task *k = b != NULL ? body_task(b) : NULL;
	for (size_t i = 0; i < td->nview; i++) {
		size_t ch = T->view_ch[i];
		int64_t v = 0;
		switch (td->view[i].src) {
		case EMU_TSRC_BODY_ID: v = b ? b->id : 0; break;
		case EMU_TSRC_TASK_ID: v = k ? k->id : 0; break;
		case EMU_TSRC_TYPE_GID: v = k ? k->type->gid : 0; break;
		case EMU_TSRC_APP_ID: v = P->app_id; break;
		case EMU_TSRC_RANK1:
			if (P->rank < 0)
				continue;
			v = P->rank + 1;
			break;
		}
		chs[n] = ch;
		vs[n++] = v;
	}
	return emu_raw_set_n(e, t, chs, vs, n, b == NULL);
}

static const char *const op_names[] = { "execute", "end", "pause", "resume" };

int emu_act_task(struct emu *e, size_t t, struct model_rt *m, const struct emu_action *a)
{
	struct tasks_rt *T = m->tasks;
	const struct emu_tasks_desc *td = &m->desc->tasks;
	size_t proc = e->thr[t].proc;
	int64_t idv, bidv = 0;
	int isnull;
	if (emu_get_val_u32(e, &a->val, &idv, &isnull) != 0)
		return -1;
	if (td->body_from_payload && emu_get_val_u32(e, &a->arg, &bidv, &isnull) != 0)
		return -1;
	uint32_t id = (uint32_t) idv;
	struct task *k = task_find(T, proc, id);
	if (k == NULL)
		return emu_fail(e, "task %" PRIu32 " does not exist in process %d", id, e->thr[t].pid);
	T->ev_task = k;
	T->ev_seq = e->seq;
	uint32_t bid = 1;
	if (td->body_from_payload) {
		if (k->flags & EMU_TF_PARALLEL) {
			if (bidv == 0)
				return emu_fail(e, "task %" PRIu32 " is parallel: its body id must not be 0",
						id);
			bid = (uint32_t) bidv;
		} else if (bidv != 0) {
			return emu_fail(e, "task %" PRIu32 " is not parallel: its body id must be 0, not %"
					PRId64, id, bidv);
		}
	}
	struct bstack *s = &T->stacks[t];
	struct body *before = running(T, t);
	struct body *b = body_find(T, k, bid);
	char bname[64];
#define BNAME (snprintf(bname, sizeof bname, "body %" PRIu32 " of task %" PRIu32, bid, id), bname)
	if (a->task_op != EMU_TASK_EXECUTE) {
		if (b == NULL)
			return emu_fail(e, "cannot %s %s: it never ran", op_names[a->task_op], BNAME);
		if (s->n == 0 || s->v[s->n - 1] != b)
			return emu_fail(e, "cannot %s %s: it is not the innermost body of thread %s",
					op_names[a->task_op], BNAME, emu_tname(e, t));
	}
	char cls;
	switch (a->task_op) {
	case EMU_TASK_EXECUTE:
		if (b != NULL && b->state == B_DEAD && !(k->flags & EMU_TF_RESURRECT))
			return emu_fail(e, "cannot execute %s: it has ended and the task cannot run again",
					BNAME);
		if (b != NULL && b->state != B_DEAD && b->state != B_CREATED)
			return emu_fail(e, "cannot execute %s: it is %s", BNAME, bstate_names[b->state]);
		if (before != NULL) {
			if (!(body_task(before)->flags & EMU_TF_RELAX))
				return emu_fail(e, "cannot execute %s over body %" PRIu32 " of task %" PRIu32
						", which is running on thread %s", BNAME, before->id,
						body_task(before)->id, emu_tname(e, t));
			if (!T->relax_warned)
				emu_warn(e, t, "%s runs over body %" PRIu32 " of task %" PRIu32 " (nested "
						"without a pause; warned once)", BNAME, before->id,
						body_task(before)->id);
			T->relax_warned = 1;
		}
		if (b == NULL && (b = body_new(e, T, k, bid)) == NULL)
			return -1;
		if (emu_grow((void **) &s->v, &s->cap, s->n + 1, sizeof *s->v) != 0)
			return emu_fail(e, "out of memory");
		s->v[s->n++] = b;
		b->state = B_RUNNING;
		cls = before != NULL ? 'X' : 'x';
		break;
	case EMU_TASK_END:
		if (b->state != B_RUNNING)
			return emu_fail(e, "cannot end %s: it is %s", BNAME, bstate_names[b->state]);
		b->state = B_DEAD;
		s->n--;
		cls = running(T, t) != NULL ? 'E' : 'e';
		break;
	case EMU_TASK_PAUSE:
		if (!(k->flags & EMU_TF_PAUSE))
			return emu_fail(e, "cannot pause %s: the task cannot be paused", BNAME);
		if (b->state != B_RUNNING)
			return emu_fail(e, "cannot pause %s: it is %s", BNAME, bstate_names[b->state]);
		b->state = B_PAUSED;
		cls = 'p';
		break;
	default:
		if (b->state != B_PAUSED)
			return emu_fail(e, "cannot resume %s: it is %s", BNAME, bstate_names[b->state]);
		b->state = B_RUNNING;
		cls = 'r';
		break;
	}
	if (td->has_body_chan) {
		size_t ch = m->chan_of_desc[td->body_chan];
		if (a->task_op == EMU_TASK_EXECUTE &&
				emu_raw_write(e, t, ch, EMU_OP_PUSH, td->body_value, 0) != 0)
			return -1;
		if (a->task_op == EMU_TASK_END &&
				emu_raw_write(e, t, ch, EMU_OP_POP, td->body_value, 0) != 0)
			return -1;
	}
	if (td->nview == 0)
		return 0;
	struct body *after = running(T, t);
	switch (cls) {
	case 'x':
	case 'r':
		return view_write(e, t, m, after);
	case 'X':
	case 'E':
		if (before != NULL && after != NULL && body_task(before) == body_task(after))
			return emu_fail(e, "task %" PRIu32 " switches to itself", body_task(after)->id);
		return view_write(e, t, m, after);
	default:
		return view_write(e, t, m, NULL);
	}
}

/* ---- the PCF values ---- */

int emu_tasks_pcf_values(struct emu *e, struct model_rt *m)
{
	struct tasks_rt *T = m->tasks;
	size_t total = 0;
	for (size_t p = 0; p < e->sys->nprocs; p++)
		total += T->types[p].n;
	free(m->dyn);
	m->dyn = calloc(total + 1, sizeof *m->dyn);
	m->ndyn = 0;
	if (m->dyn == NULL) {
		snprintf(e->err, sizeof e->err, "out of memory");
		e->failed = 1;
		return -1;
	}
	int r = 0;
	for (size_t p = 0; p < e->sys->nprocs && r == 0; p++) {
		for (size_t i = 0; i < T->types[p].n; i++) {
			const struct ttype *ty = T->types[p].v[i];
			size_t k;
			for (k = 0; k < m->ndyn; k++)
				if (m->dyn[k].value == ty->gid)
					break;
			if (k < m->ndyn) {
				if (strcmp(m->dyn[k].label, ty->label) == 0)
					continue;
				if (!e->failed) {
					snprintf(e->err, sizeof e->err, "%s task types '%s' and '%s' have the "
							"same Paraver value %" PRId64 " (a hash collision of their "
							"labels); rename one of them", m->desc->name,
							m->dyn[k].label, ty->label, ty->gid);
					e->failed = 1;
				}
				r = -1;
				break;
			}
			m->dyn[m->ndyn].value = ty->gid;
			m->dyn[m->ndyn].label = ty->label;
			m->ndyn++;
		}
	}
	for (size_t c = m->chan_first; c < m->chan_first + m->nchans; c++) {
		if (e->chans[c].desc->values_from_types) {
			e->chans[c].info.dyn = m->dyn;
			e->chans[c].info.ndyn = m->ndyn;
		}
	}
	m->dyn_ok = r == 0;
	return r;
}
