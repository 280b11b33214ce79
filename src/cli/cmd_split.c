/* SPDX-License-Identifier: MIT */
/*
 * cmd_split.c - `weft split TRACE --by process|thread|task -o DIR`: a trace
 * in Laplace's per-process layout (docs/export.md, "Laplace"): a directory
 * per process, a file per thread (or per runtime task, or one per process),
 * the kernel's events in one kernel-thread file per process, one record a
 * line in Laplace's tagged text form, and an index file. The tasks of nosv,
 * nanos6 and openmp are found through the models' descriptions (their
 * task-create and task actions), not by MCVs written here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "laplace.h"
#include "obs_format.h"

static const char usage[] =
	"Usage: weft split [--by process|thread|task] -o DIR [--model FILE]... [-q] TRACE\n"
	"\n"
	"Write the trace at TRACE in Laplace's per-process layout (docs/export.md,\n"
	"\"Laplace\"): a directory per process, a file per task, one record a line in\n"
	"Laplace's tagged text form (type tag, clock in 16 hexadecimal digits, fields):\n"
	"  r w i R W I  a memory reference (the laplace model of weft import laplace):\n"
	"               tag clock length vpage cpage\n"
	"  other tags   a kernel record of an imported Laplace trace, as it was read\n"
	"  e            any other event: e clock MCV flags payload (the flags byte\n"
	"               and the payload in hexadecimal, '-' when empty), so that\n"
	"               weft import laplace gives the event back exactly\n"
	"The events of the kernel model (and an imported kernel-thread trace) go to\n"
	"one file per process, DIR/PROC/kernel. DIR/index names the columns and lists\n"
	"every file with its count of records.\n"
	"\n"
	"Options:\n"
	"  --by process|thread|task  what a file holds (default thread):\n"
	"               thread: the events of one thread (thread.TID, or the name of\n"
	"               an imported Laplace file);\n"
	"               process: every event of the process (process);\n"
	"               task: each runtime task of nosv, nanos6 and openmp followed\n"
	"               across the threads that ran it (task.MODEL.ID: the events\n"
	"               naming the task and those emitted while it runs, its\n"
	"               innermost one when tasks nest); the rest by thread\n"
	"  -o, --output DIR  the output directory: absent or empty; built beside it\n"
	"               (.DIR.weft-XXXXXX) and renamed to DIR once complete\n"
	"  --model FILE  add the model FILE describes (repeatable; docs/models.md):\n"
	"               its tasks are followed too\n"
	"  -q, --quiet  no summary line on stdout\n"
	"  -h, --help   show this help\n"
	"\n"
	"Processes are named proc.PID (loom.LOOM.proc.PID when two looms have the\n"
	"same PID), or by the laplace.dir and laplace.file keys of an imported trace.\n"
	"Exit status: 0 success, 1 trace error (nothing is left at DIR), 2 usage\n"
	"error.\n";

enum { SPLIT_BY, SPLIT_OUTPUT, SPLIT_MODEL, SPLIT_QUIET };

static const struct cli_opt split_opts[] = {
	{ "by", 0, "process|thread|task", SPLIT_BY },
	{ "output", 'o', "DIR", SPLIT_OUTPUT },
	{ "model", 0, "FILE", SPLIT_MODEL },
	{ "quiet", 'q', NULL, SPLIT_QUIET },
	{ NULL, 0, NULL, 0 },
};

enum split_by { BY_THREAD, BY_PROCESS, BY_TASK };
static const char *const by_names[] = { "thread", "process", "task" };

struct split_args {
	enum split_by by;
	const char *out;
	int quiet;
	struct cli_models mf;
};

static int split_opt(void *ctx, int id, const char *opt, const char *val)
{
	struct split_args *a = ctx;
	switch (id) {
	case SPLIT_BY:
		for (int i = 0; i < 3; i++) {
			if (strcmp(val, by_names[i]) == 0) {
				a->by = (enum split_by) i;
				return 0;
			}
		}
		fprintf(stderr, "weft split: %s '%s': process, thread or task expected; run "
				"`weft split --help`\n", opt, val);
		return 2;
	case SPLIT_OUTPUT: a->out = val; break;
	case SPLIT_MODEL: a->mf.files[a->mf.n++] = val; break;
	case SPLIT_QUIET: a->quiet = 1; break;
	default: abort();
	}
	return 0;
}

/* ---- the task events of the models (from their descriptions) ---- */

enum top_kind { TOP_NONE = 0, TOP_CREATE, TOP_IN, TOP_OUT };

struct taskops {
	/* per model byte: NULL, or 65536 entries (category, value) of
	 * kind | offset << 2 */
	uint32_t *by[256];
	const char *name[256];
};

static int taskops_build(struct taskops *T, const struct weft_registry *reg)
{
	memset(T, 0, sizeof *T);
	for (size_t i = 0; i < weft_model_count(reg); i++) {
		const struct weft_model_spec *ms = weft_model_at(reg, i);
		const struct emu_model_desc *d = ms->emu;
		if (d == NULL || !d->tasks.present)
			continue;
		unsigned char b = (unsigned char) ms->code;
		for (size_t k = 0; k < d->nevents; k++) {
			const struct emu_event_desc *e = &d->events[k];
			for (size_t a = 0; a < e->nactions; a++) {
				const struct emu_action *x = &e->actions[a];
				uint32_t kind = 0, off = 0;
				if (x->op == EMU_OP_TASK_CREATE) {
					kind = TOP_CREATE;
				} else if (x->op == EMU_OP_TASK && (x->val.src == EMU_VAL_U32
							|| x->val.src == EMU_VAL_I32)) {
					kind = x->task_op == EMU_TASK_EXECUTE || x->task_op ==
						EMU_TASK_RESUME ? TOP_IN : TOP_OUT;
					off = (uint32_t) x->val.k;
				} else {
					continue;
				}
				if (e->mcv[2] == '*')
					continue; /* a task event has an MCV of its own */
				if (T->by[b] == NULL) {
					T->by[b] = calloc(65536, sizeof *T->by[b]);
					if (T->by[b] == NULL)
						return -1;
					T->name[b] = ms->name;
				}
				unsigned cv = (unsigned) (unsigned char) e->mcv[1] << 8 |
					(unsigned char) e->mcv[2];
				T->by[b][cv] = kind | off << 2;
				break;
			}
		}
	}
	return 0;
}

static void taskops_free(struct taskops *T)
{
	for (int b = 0; b < 256; b++)
		free(T->by[b]);
}

/* ---- the output files ---- */

struct sfile {
	size_t proc;
	char name[LAP_NAME_MAX + 1];
	char *buf;
	size_t len, cap;
	int created;
	uint64_t nrec;
};

struct sproc {
	char name[LAP_NAME_MAX + 1];
	int made; /* its directory exists */
	long kernel; /* its kernel file, -1: none yet */
	long whole;  /* --by process: its file */
};

struct sstream {
	const struct weft_stream *s;
	size_t proc;
	long file;   /* its thread file */
	int kernel;  /* an imported kernel-thread trace */
	int framed;  /* an imported stream: its first OHx and last OHe are
	                weft import's frame (left out) */
	long *stack; /* --by task: the files of the tasks it runs, innermost last */
	size_t n, cap;
};

#define SPLIT_BUFFERED (16u << 20)

struct split {
	struct lap_outdir od;
	struct sproc *procs;
	size_t nprocs;
	struct sstream *streams;
	size_t nstreams;
	struct sfile *files;
	size_t nfiles, capfiles;
	uint32_t *hash; /* file index + 1, 0: empty */
	size_t hcap;
	size_t buffered;
	int failed;
};

static uint64_t file_key(size_t proc, const char *name)
{
	uint64_t h = 1469598103934665603ull ^ proc;
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char) *p) * 1099511628211ull;
	return h;
}

static int rehash(struct split *S)
{
	size_t cap = S->hcap ? S->hcap * 2 : 1024;
	uint32_t *h = calloc(cap, sizeof *h);
	if (h == NULL)
		return -1;
	for (size_t i = 0; i < S->nfiles; i++) {
		size_t k = file_key(S->files[i].proc, S->files[i].name) & (cap - 1);
		while (h[k] != 0)
			k = (k + 1) & (cap - 1);
		h[k] = (uint32_t) i + 1;
	}
	free(S->hash);
	S->hash = h;
	S->hcap = cap;
	return 0;
}

/* The file named name in process proc, made on first use; -1 when out of
 * memory. */
static long file_get(struct split *S, size_t proc, const char *name)
{
	if (S->hcap == 0 || (S->nfiles + 1) * 2 > S->hcap) {
		if (S->nfiles >= UINT32_MAX / 2 || rehash(S) != 0)
			return -1;
	}
	size_t k = file_key(proc, name) & (S->hcap - 1);
	while (S->hash[k] != 0) {
		struct sfile *f = &S->files[S->hash[k] - 1];
		if (f->proc == proc && strcmp(f->name, name) == 0)
			return (long) S->hash[k] - 1;
		k = (k + 1) & (S->hcap - 1);
	}
	if (S->nfiles == S->capfiles) {
		size_t cap = S->capfiles ? S->capfiles * 2 : 64;
		struct sfile *nf = realloc(S->files, cap * sizeof *nf);
		if (nf == NULL)
			return -1;
		S->files = nf;
		S->capfiles = cap;
	}
	struct sfile *f = &S->files[S->nfiles];
	memset(f, 0, sizeof *f);
	f->proc = proc;
	snprintf(f->name, sizeof f->name, "%s", name);
	S->hash[k] = (uint32_t) S->nfiles + 1;
	return (long) S->nfiles++;
}

/* Appends the file's buffer to it on disk (created at the first call). */
static int file_flush(struct split *S, struct sfile *f)
{
	if (f->created && f->len == 0)
		return 0;
	struct sproc *p = &S->procs[f->proc];
	char path[4096 + 2 * LAP_NAME_MAX + 8];
	snprintf(path, sizeof path, "%s/%s", S->od.tmp, p->name);
	if (!p->made) {
		if (mkdir(path, 0777) != 0) {
			fprintf(stderr, "weft split: cannot create %s: %s\n", path, strerror(errno));
			return -1;
		}
		p->made = 1;
	}
	size_t dl = strlen(path);
	snprintf(path + dl, sizeof path - dl, "/%s", f->name);
	int fd = f->created ? open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC)
		: lap_create(path);
	if (fd < 0) {
		fprintf(stderr, "weft split: cannot %s %s: %s\n", f->created ? "open" : "create",
				path, strerror(errno));
		return -1;
	}
	f->created = 1;
	size_t off = 0;
	while (off < f->len) {
		ssize_t w = write(fd, f->buf + off, f->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fprintf(stderr, "weft split: cannot write %s: %s\n", path,
					w < 0 ? strerror(errno) : "no space written");
			close(fd);
			return -1;
		}
		off += (size_t) w;
	}
	if (close(fd) != 0) {
		fprintf(stderr, "weft split: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	S->buffered -= f->len;
	f->len = 0;
	if (f->cap > 65536) { /* a large buffer given back */
		free(f->buf);
		f->buf = NULL;
		f->cap = 0;
	}
	return 0;
}

static int flush_all(struct split *S)
{
	for (size_t i = 0; i < S->nfiles; i++)
		if (S->files[i].len > 0 && file_flush(S, &S->files[i]) != 0)
			return -1;
	return 0;
}

/* Room for n more bytes in file f's buffer. */
static char *file_room(struct sfile *f, size_t n)
{
	if (f->cap - f->len < n) {
		size_t cap = f->cap ? f->cap : 256;
		while (cap - f->len < n)
			cap *= 2;
		char *nb = realloc(f->buf, cap);
		if (nb == NULL)
			return NULL;
		f->buf = nb;
		f->cap = cap;
	}
	return f->buf + f->len;
}

/* ---- a record ---- */

/* The record of ev (a line) at p; returns its end. Room: 64 + twice the
 * payload. */
static char *record(char *p, const struct weft_event *ev)
{
	unsigned char m = (unsigned char) ev->mcv[0], c = (unsigned char) ev->mcv[1],
		      v = (unsigned char) ev->mcv[2];
	if (m == LAP_BYTE && ev->jumbo && c == LAP_CAT_REF && v != 0 &&
			strchr(LAP_REF_TAGS, v) != NULL && ev->jumbo_size == LAP_REF_DATA) {
		const uint8_t *d = ev->jumbo_data;
		uint64_t cpage = weft_load_u64(d);
		uint32_t vpage = weft_load_u32(d + 8), len = weft_load_u32(d + 12);
		if (len <= 0xf && vpage <= 0xfffff) {
			*p++ = (char) v;
			*p++ = ' ';
			p = lap_hex64(p, (uint64_t) ev->rclock);
			*p++ = ' ';
			*p++ = lap_hex[len];
			*p++ = ' ';
			for (int i = 4; i >= 0; i--)
				*p++ = lap_hex[(vpage >> (4 * i)) & 0xf];
			*p++ = ' ';
			p = lap_hex64(p, cpage);
			*p++ = '\n';
			return p;
		}
	}
	if (m == LAP_BYTE && ev->jumbo && c == LAP_CAT_KREC && lap_krec_tag(v) &&
			ev->jumbo_size >= 1 && ev->jumbo_data[ev->jumbo_size - 1] == 0) {
		const char *t = (const char *) ev->jumbo_data;
		size_t n = ev->jumbo_size - 1;
		if (memchr(t, 0, n) == NULL && memchr(t, '\n', n) == NULL) {
			*p++ = (char) v;
			*p++ = ' ';
			p = lap_hex64(p, (uint64_t) ev->rclock);
			if (n > 0) {
				*p++ = ' ';
				memcpy(p, t, n);
				p += n;
			}
			*p++ = '\n';
			return p;
		}
	}
	*p++ = LAP_TAG_EVENT;
	*p++ = ' ';
	p = lap_hex64(p, (uint64_t) ev->rclock);
	*p++ = ' ';
	if (m > 0x20 && m < 0x7f && c > 0x20 && c < 0x7f && v > 0x20 && v < 0x7f) {
		*p++ = (char) m;
		*p++ = (char) c;
		*p++ = (char) v;
	} else {
		*p++ = '0';
		*p++ = 'x';
		for (int i = 0; i < 3; i++) {
			unsigned char b = (unsigned char) ev->mcv[i];
			*p++ = lap_hex[b >> 4];
			*p++ = lap_hex[b & 0xf];
		}
	}
	*p++ = ' ';
	*p++ = lap_hex[ev->flags >> 4];
	*p++ = lap_hex[ev->flags & 0xf];
	*p++ = ' ';
	const uint8_t *d = ev->jumbo ? ev->jumbo_data : ev->payload;
	uint32_t n = ev->jumbo ? ev->jumbo_size : ev->payload_size;
	if (n == 0)
		*p++ = '-';
	for (uint32_t i = 0; i < n; i++) {
		*p++ = lap_hex[d[i] >> 4];
		*p++ = lap_hex[d[i] & 0xf];
	}
	*p++ = '\n';
	return p;
}

/* ---- the system: process directories, stream files ---- */

/* A name from a stream's stream.json key (a JSON string of a valid name)
 * into out; 1 found, 0 absent, -1 present but not a name. */
static int attr_name(const struct weft_stream *s, const char *key, char *out)
{
	char buf[LAP_NAME_MAX + 8];
	int n = weft_stream_attr_json(s, key, buf, sizeof buf);
	if (n == 0)
		return 0;
	if ((size_t) n >= sizeof buf || n < 3 || buf[0] != '"' || buf[n - 1] != '"')
		return -1;
	buf[n - 1] = '\0';
	if (!lap_name_ok(buf + 1))
		return -1;
	strcpy(out, buf + 1);
	return 1;
}

/* "weft split: PATH<what>", PATH (from the trace) escaped. */
static void split_err(const char *path, const char *what)
{
	char msg[4096 + 256];
	snprintf(msg, sizeof msg, "%s%s", path, what);
	cli_message("split", "", msg);
}

static int cmp_stream(const void *a, const void *b)
{
	const struct sstream *x = a, *y = b;
	return x->s < y->s ? -1 : x->s > y->s;
}

static int split_system(struct split *S, const struct weft_trace *t, enum split_by by)
{
	size_t np = 0;
	for (size_t l = 0; l < weft_nlooms(t); l++)
		np += weft_loom_at(t, l)->nprocs;
	S->procs = calloc(np + 1, sizeof *S->procs);
	S->nstreams = weft_nstreams(t);
	S->streams = calloc(S->nstreams + 1, sizeof *S->streams);
	if (S->procs == NULL || S->streams == NULL)
		return -1;
	size_t si = 0;
	for (size_t l = 0; l < weft_nlooms(t); l++) {
		const struct weft_loom *L = weft_loom_at(t, l);
		for (size_t k = 0; k < L->nprocs; k++) {
			const struct weft_proc *P = L->procs[k];
			struct sproc *sp = &S->procs[S->nprocs];
			sp->kernel = sp->whole = -1;
			int named = 0, dup = 0;
			for (size_t i = 0; i < P->nthreads && !named; i++) {
				int r = attr_name(P->threads[i]->stream, "laplace.dir", sp->name);
				if (r < 0) {
					split_err(P->threads[i]->stream->relpath, "/stream.json: "
							"laplace.dir is not a name of letters, digits, "
							"'.', '_', '-' and '+'");
					return -2;
				}
				named = r;
			}
			for (size_t l2 = 0; l2 < weft_nlooms(t) && !named; l2++) {
				const struct weft_loom *L2 = weft_loom_at(t, l2);
				for (size_t k2 = 0; l2 != l && k2 < L2->nprocs; k2++)
					dup |= L2->procs[k2]->pid == P->pid;
			}
			if (!named && dup && lap_name_ok(L->name) && strlen(L->name) < 100)
				snprintf(sp->name, sizeof sp->name, "loom.%s.proc.%d", L->name, P->pid);
			else if (!named && dup)
				snprintf(sp->name, sizeof sp->name, "loom%zu.proc.%d", l, P->pid);
			else if (!named)
				snprintf(sp->name, sizeof sp->name, "proc.%d", P->pid);
			for (size_t q = 0; q < S->nprocs; q++) {
				if (strcmp(S->procs[q].name, sp->name) == 0) {
					fprintf(stderr, "weft split: two processes have the directory "
							"name %s\n", sp->name);
					return -2;
				}
			}
			for (size_t i = 0; i < P->nthreads; i++) {
				const struct weft_stream *s = P->threads[i]->stream;
				if (s == NULL || si == S->nstreams)
					continue;
				struct sstream *ss = &S->streams[si++];
				ss->s = s;
				ss->proc = S->nprocs;
				char name[LAP_NAME_MAX + 1], kb[16];
				int r = attr_name(s, "laplace.file", name);
				if (r < 0) {
					split_err(s->relpath, "/stream.json: laplace.file is not a "
							"name of letters, digits, '.', '_', '-' and '+'");
					return -2;
				}
				if (r == 0)
					snprintf(name, sizeof name, "thread.%d", P->threads[i]->tid);
				ss->framed = r == 1;
				ss->kernel = weft_stream_attr_json(s, "laplace.kernel", kb, sizeof kb)
					== 4 && strcmp(kb, "true") == 0;
				if (ss->kernel || by == BY_THREAD) {
					ss->file = file_get(S, S->nprocs, ss->kernel && r == 0 ?
							LAP_KERNEL_FILE : name);
					if (ss->file < 0)
						return -1;
				} else {
					ss->file = -1; /* --by task: made when an event needs it */
				}
			}
			if (by == BY_PROCESS && (sp->whole = file_get(S, S->nprocs, "process")) < 0)
				return -1;
			S->nprocs++;
		}
	}
	S->nstreams = si;
	qsort(S->streams, S->nstreams, sizeof *S->streams, cmp_stream);
	return 0;
}

static struct sstream *stream_of(struct split *S, const struct weft_stream *s)
{
	size_t lo = 0, hi = S->nstreams;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (S->streams[mid].s == s)
			return &S->streams[mid];
		if (S->streams[mid].s < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The thread file of ss (--by task: made at its first event). */
static long thread_file(struct split *S, struct sstream *ss)
{
	if (ss->file >= 0)
		return ss->file;
	const struct weft_thread *th = ss->s->thread;
	char name[LAP_NAME_MAX + 1];
	if (attr_name(ss->s, "laplace.file", name) != 1)
		snprintf(name, sizeof name, "thread.%d", th->tid);
	ss->file = file_get(S, ss->proc, name);
	return ss->file;
}

/* The file of ev. */
static long target(struct split *S, struct sstream *ss, const struct weft_event *ev,
		enum split_by by, const struct taskops *T, char kbyte)
{
	struct sproc *p = &S->procs[ss->proc];
	if (ss->kernel)
		return ss->file;
	if (ev->mcv[0] == kbyte && kbyte != 0) {
		if (p->kernel < 0)
			p->kernel = file_get(S, ss->proc, LAP_KERNEL_FILE);
		return p->kernel;
	}
	if (by == BY_PROCESS)
		return p->whole;
	if (by == BY_THREAD)
		return ss->file;
	const uint32_t *tab = T->by[(unsigned char) ev->mcv[0]];
	uint32_t op = tab == NULL ? 0 : tab[(unsigned) (unsigned char) ev->mcv[1] << 8 |
		(unsigned char) ev->mcv[2]];
	uint32_t off = op >> 2;
	if ((op & 3) == TOP_NONE || ev->jumbo || (uint64_t) off + 4 > ev->payload_size)
		return ss->n > 0 ? ss->stack[ss->n - 1] : thread_file(S, ss);
	char name[LAP_NAME_MAX + 1];
	snprintf(name, sizeof name, "task.%s.%" PRIu32, T->name[(unsigned char) ev->mcv[0]],
			weft_load_u32(ev->payload + off));
	long f = file_get(S, ss->proc, name);
	if (f < 0)
		return -1;
	if ((op & 3) == TOP_IN) {
		if (ss->n == ss->cap) {
			size_t cap = ss->cap ? ss->cap * 2 : 8;
			long *ns = realloc(ss->stack, cap * sizeof *ns);
			if (ns == NULL)
				return -1;
			ss->stack = ns;
			ss->cap = cap;
		}
		ss->stack[ss->n++] = f;
	} else if ((op & 3) == TOP_OUT) {
		for (size_t i = ss->n; i > 0; i--) {
			if (ss->stack[i - 1] == f) {
				memmove(&ss->stack[i - 1], &ss->stack[i],
						(ss->n - i) * sizeof *ss->stack);
				ss->n--;
				break;
			}
		}
	}
	return f;
}

/* A line of the index: a file by its directory and name. */
struct ixline {
	const char *dir, *name;
	uint64_t nrec;
};

static int cmp_ixline(const void *a, const void *b)
{
	const struct ixline *x = a, *y = b;
	int c = strcmp(x->dir, y->dir);
	return c != 0 ? c : strcmp(x->name, y->name);
}

static int write_index(struct split *S, enum split_by by)
{
	struct ixline *ord = malloc((S->nfiles + 1) * sizeof *ord);
	if (ord == NULL)
		return -1;
	for (size_t i = 0; i < S->nfiles; i++)
		ord[i] = (struct ixline) { S->procs[S->files[i].proc].name, S->files[i].name,
			S->files[i].nrec };
	qsort(ord, S->nfiles, sizeof *ord, cmp_ixline);
	char path[4096 + 16];
	snprintf(path, sizeof path, "%s/%s", S->od.tmp, LAP_INDEX_FILE);
	int fd = lap_create(path);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	if (f == NULL) {
		fprintf(stderr, "weft split: cannot create %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(ord);
		return -2;
	}
	lap_index_head(f, by_names[by]);
	for (size_t i = 0; i < S->nfiles; i++)
		fprintf(f, "%s/%s %" PRIu64 "\n", ord[i].dir, ord[i].name, ord[i].nrec);
	free(ord);
	if (ferror(f) | (fclose(f) != 0)) {
		fprintf(stderr, "weft split: cannot write %s\n", path);
		return -2;
	}
	return 0;
}

static int split_run(struct split *S, struct weft_trace *t, const struct split_args *a,
		const struct weft_registry *reg, uint64_t *nrec)
{
	struct taskops T;
	if (taskops_build(&T, reg) != 0)
		return -1;
	const struct weft_model_spec *km = weft_model_by_name(reg, "kernel");
	char kbyte = km != NULL ? km->code : 0;
	int r = split_system(S, t, a->by);
	struct weft_event ev;
	int n = 0;
	while (r == 0 && (n = weft_next(t, &ev)) > 0) {
		struct sstream *ss = stream_of(S, ev.stream);
		if (ss == NULL) {
			split_err(ev.stream->relpath, ": a stream without a thread");
			r = -2;
			break;
		}
		if (ss->framed && ((ev.offset == WEFT_OBS_HEADER_SIZE && memcmp(ev.mcv, "OHx", 3)
							== 0) || (memcmp(ev.mcv, "OHe", 3) == 0 &&
							ev.offset + WEFT_EV_HEADER_SIZE +
							ev.payload_size == ss->s->obs_size)))
			continue;
		long fi = target(S, ss, &ev, a->by, &T, kbyte);
		if (fi < 0) {
			r = -1;
			break;
		}
		struct sfile *f = &S->files[fi];
		uint32_t psz = ev.jumbo ? ev.jumbo_size : ev.payload_size;
		size_t need = 64 + 2 * (size_t) psz;
		char *p = file_room(f, need);
		if (p == NULL) {
			r = -1;
			break;
		}
		size_t len = (size_t) (record(p, &ev) - p);
		f->len += len;
		f->nrec++;
		(*nrec)++;
		S->buffered += len;
		if (S->buffered > SPLIT_BUFFERED && flush_all(S) != 0)
			r = -2;
	}
	if (r == 0 && n < 0) {
		cli_message("split", "", weft_error(t));
		r = -2;
	}
	/* every file, the empty ones too */
	for (size_t i = 0; r == 0 && i < S->nfiles; i++)
		if (file_flush(S, &S->files[i]) != 0)
			r = -2;
	if (r == 0)
		r = write_index(S, a->by);
	taskops_free(&T);
	return r;
}

int weft_cmd_split(int argc, char **argv)
{
	struct split_args a;
	memset(&a, 0, sizeof a);
	cli_models_init(&a.mf, argc);
	const char **pos = cli_operands(argc), *path = NULL;
	int npos = 0;
	int r = cli_opts_parse("split", split_opts, argc, argv, split_opt, &a, pos, &npos);
	if (r == CLI_OPTS_HELP)
		fputs(usage, stdout);
	if (r == 0)
		r = cli_one_path("split", pos, npos, &path);
	else
		free(pos);
	if (r == 0 && a.out == NULL)
		r = cli_usage_error("split", "missing -o DIR (the output directory)");
	if (r != 0) {
		free(a.mf.files);
		return r == CLI_OPTS_HELP ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	}
	struct weft_registry *reg = cli_registry("split", &a.mf);
	if (reg == NULL)
		return CLI_EXIT_TRACE;
	WEFT_OPTS(weft_open_opts, o);
	o.mode = WEFT_LENIENT;
	o.clock = WEFT_CLOCK_RAW;
	o.backwards = WEFT_BACKWARDS_ERROR;
	o.sort = WEFT_SORT_REGIONS;
	struct weft_trace *t = cli_open_opts("split", path, &o);
	if (t == NULL) {
		weft_registry_free(reg);
		return CLI_EXIT_TRACE;
	}
	struct split S;
	memset(&S, 0, sizeof S);
	uint64_t nrec = 0;
	int code = CLI_EXIT_TRACE;
	if (lap_outdir_open("split", &S.od, a.out) == 0) {
		int rr = split_run(&S, t, &a, reg, &nrec);
		if (rr == -1)
			fprintf(stderr, "weft split: out of memory\n");
		if (lap_outdir_close("split", &S.od, rr == 0) == 0) {
			code = CLI_EXIT_OK;
			if (!a.quiet)
				printf("%s: %zu process%s, %zu file%s, %" PRIu64 " record%s\n",
						S.od.out, S.nprocs, S.nprocs == 1 ? "" : "es",
						S.nfiles, S.nfiles == 1 ? "" : "s", nrec,
						nrec == 1 ? "" : "s");
		}
	}
	for (size_t i = 0; i < S.nfiles; i++)
		free(S.files[i].buf);
	for (size_t i = 0; i < S.nstreams; i++)
		free(S.streams[i].stack);
	free(S.files);
	free(S.hash);
	free(S.procs);
	free(S.streams);
	weft_close(t);
	weft_registry_free(reg);
	return code;
}
