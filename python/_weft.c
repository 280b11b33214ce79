/* SPDX-License-Identifier: MIT */
/*
 * _weft.c - the C part of the Python module `weft` (python/weft/__init__.py
 * is the rest): a trace opened with libweft's reader, its system as plain
 * tuples, its events in batches of NumPy columns filled at C speed, the
 * payload fields of the models' events, and the emulation through the
 * driver of `weft emu` (src/driver), its records collected by an output of
 * our own (the driver's open_output hook: out.h) into NumPy columns, with
 * the channels' names, Paraver labels and value labels from the emulator's
 * channel catalogue (src/emu/catalogue.h) and the rows' labels.
 *
 * Nothing here may abort the interpreter: every allocation is checked (a
 * failure is MemoryError), every weft error is a weft.Error carrying weft's
 * message, and warnings (which libweft may report from its read-ahead
 * thread) are queued under a lock and handed to Python with the GIL held.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <structmember.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "weft/weft.h"
#include "driver.h"
#include "model.h"
#include "out.h"
#include "raw_iv.h"

PyMODINIT_FUNC PyInit__weft(void);

static PyObject *WeftError; /* set by the package: weft.Error */

/* Raises weft.Error (or the class the package registered) with msg;
 * MemoryError with it when weft ran out of memory. */
static PyObject *raise_weft(const char *msg)
{
	if (strstr(msg, "out of memory") != NULL)
		PyErr_SetString(PyExc_MemoryError, msg);
	else
		PyErr_SetString(WeftError != NULL ? WeftError : PyExc_RuntimeError, msg);
	return NULL;
}

/* Raises weft.Error for a failed open or emulation of the trace at path,
 * with warnings (a list, or NULL) as its attribute. The package's class
 * splits the message with a pattern, which cannot tell where a file name
 * ends when it has spaces or colons, or neither a dot nor a slash
 * ("trace: No such file or directory"); a message that starts with path
 * (then ": " or "/") names the path or a file under it: the file is the
 * text up to the first ": " after path, then "offset N: " is the offset,
 * and the rest the reason. */
static PyObject *raise_weft_at(const char *msg, const char *path, PyObject *warnings)
{
	if (strstr(msg, "out of memory") != NULL)
		return raise_weft(msg);
	PyObject *cls = WeftError != NULL ? WeftError : PyExc_RuntimeError;
	PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t) strlen(msg), "surrogateescape");
	PyObject *exc = text != NULL ? PyObject_CallFunctionObjArgs(cls, text, NULL) : NULL;
	Py_XDECREF(text);
	if (exc == NULL)
		return NULL;
	int bad = warnings != NULL && PyObject_SetAttrString(exc, "warnings", warnings) != 0;
	size_t plen = strlen(path);
	const char *end = plen > 0 && strncmp(msg, path, plen) == 0
		&& (msg[plen] == ':' || msg[plen] == '/') ? strstr(msg + plen, ": ") : NULL;
	if (!bad && end != NULL && WeftError != NULL) {
		const char *reason = end + 2;
		long long offset = -1;
		if (strncmp(reason, "offset ", 7) == 0 && reason[7] >= '0' && reason[7] <= '9') {
			const char *q = reason + 7;
			long long v = 0;
			while (*q >= '0' && *q <= '9' && v <= (LLONG_MAX - 9) / 10)
				v = v * 10 + (*q++ - '0');
			if (q[0] == ':' && q[1] == ' ') {
				offset = v;
				reason = q + 2;
			}
		}
		PyObject *file = PyUnicode_DecodeUTF8(msg, (Py_ssize_t) (end - msg), "surrogateescape");
		PyObject *why = PyUnicode_DecodeUTF8(reason, (Py_ssize_t) strlen(reason), "surrogateescape");
		PyObject *off = Py_None;
		if (offset >= 0)
			off = PyLong_FromLongLong(offset);
		else
			Py_INCREF(off);
		bad = file == NULL || why == NULL || off == NULL
			|| PyObject_SetAttrString(exc, "file", file) != 0
			|| PyObject_SetAttrString(exc, "offset", off) != 0
			|| PyObject_SetAttrString(exc, "reason", why) != 0;
		Py_XDECREF(file);
		Py_XDECREF(why);
		Py_XDECREF(off);
	}
	if (!bad)
		PyErr_SetObject(cls, exc);
	Py_DECREF(exc);
	return NULL;
}

/* ---- warnings, queued from any thread ---- */

struct warnq {
	pthread_mutex_t mu;
	char *text; /* messages, each ended by '\0' */
	size_t len, cap;
	size_t dropped; /* lost for lack of memory */
};

static void warnq_push(void *ctx, const char *msg)
{
	struct warnq *q = ctx;
	size_t n = strlen(msg) + 1;
	pthread_mutex_lock(&q->mu);
	if (q->len + n > q->cap) {
		size_t cap = q->cap ? q->cap : 1024;
		while (cap < q->len + n)
			cap *= 2;
		char *p = realloc(q->text, cap);
		if (p == NULL) {
			q->dropped++;
			pthread_mutex_unlock(&q->mu);
			return;
		}
		q->text = p;
		q->cap = cap;
	}
	memcpy(q->text + q->len, msg, n);
	q->len += n;
	pthread_mutex_unlock(&q->mu);
}

/* Hands the queued warnings to sink (a list: appended; else a callable:
 * called with each). -1 with a Python error set. */
static int warnq_deliver(struct warnq *q, PyObject *list, PyObject *cb)
{
	pthread_mutex_lock(&q->mu);
	char *text = q->text;
	size_t len = q->len, dropped = q->dropped;
	q->text = NULL;
	q->len = q->cap = 0;
	q->dropped = 0;
	pthread_mutex_unlock(&q->mu);
	int r = 0;
	for (size_t i = 0; i < len && r == 0;) {
		size_t n = strlen(text + i);
		PyObject *s = PyUnicode_DecodeUTF8(text + i, (Py_ssize_t) n, "backslashreplace");
		if (s == NULL) {
			r = -1;
			break;
		}
		if (list != NULL && PyList_Append(list, s) != 0)
			r = -1;
		if (r == 0 && cb != NULL && cb != Py_None) {
			PyObject *x = PyObject_CallOneArg(cb, s);
			if (x == NULL)
				r = -1;
			Py_XDECREF(x);
		}
		Py_DECREF(s);
		i += n + 1;
	}
	free(text);
	if (r == 0 && dropped > 0) {
		PyErr_NoMemory();
		r = -1;
	}
	return r;
}

/* ---- the models of a call: a registry (src/model/model.h) in a capsule ---- */

#define REGISTRY_CAPSULE "weft.registry"

static void registry_free(PyObject *cap)
{
	weft_registry_free(PyCapsule_GetPointer(cap, REGISTRY_CAPSULE));
}

/* registry(paths): the built-in models and those of the model files at
 * paths (a sequence of str or bytes, in order), as a capsule; the loader's
 * message (FILE:LINE: reason) as weft.Error for a malformed file. */
static PyObject *m_registry(PyObject *Py_UNUSED(mod), PyObject *arg)
{
	PyObject *seq = PySequence_Fast(arg, "model files: a sequence of paths");
	if (seq == NULL)
		return NULL;
	char err[WEFT_ERR_MAX];
	struct weft_registry *r = weft_registry_new(err, sizeof err);
	if (r == NULL) {
		Py_DECREF(seq);
		return raise_weft(err);
	}
	Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *b = NULL;
		if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, i), &b)) {
			weft_registry_free(r);
			Py_DECREF(seq);
			return NULL;
		}
		int bad = weft_registry_add_file(r, PyBytes_AS_STRING(b), err, sizeof err);
		Py_DECREF(b);
		if (bad != 0) {
			weft_registry_free(r);
			Py_DECREF(seq);
			return raise_weft(err);
		}
	}
	Py_DECREF(seq);
	PyObject *cap = PyCapsule_New(r, REGISTRY_CAPSULE, registry_free);
	if (cap == NULL)
		weft_registry_free(r);
	return cap;
}

/* The registry of a capsule (or of None: the built-in models, NULL), into
 * *r; 0 with a TypeError if obj is neither. */
static int registry_of(PyObject *obj, const struct weft_registry **r)
{
	if (obj == Py_None) {
		*r = NULL;
		return 1;
	}
	*r = PyCapsule_GetPointer(obj, REGISTRY_CAPSULE);
	return *r != NULL;
}

/* ---- the Trace type ---- */

struct smap {
	const struct weft_stream *s;
	int32_t stream;
	int32_t thread;
};

typedef struct {
	PyObject_HEAD
	struct weft_trace *t;
	struct warnq wq;
	PyObject *warnings; /* list of str */
	PyObject *warn_cb;  /* callable or None */
	PyObject *models;   /* its models: a registry capsule, or None (built-in) */
	size_t nstreams;
	struct smap *map;   /* sorted by stream pointer */
	struct weft_ref *refs;
	uint8_t *pay;       /* payload bytes of the batch being read */
	size_t paycap;
	int busy;           /* a read is running (another thread must wait) */
	int ended;          /* the iteration reached the end or an error */
} TraceObject;

#define REFS 4096

static int smap_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) ((const struct smap *) a)->s;
	uintptr_t y = (uintptr_t) ((const struct smap *) b)->s;
	return x < y ? -1 : x > y;
}

static void Trace_dealloc(TraceObject *self)
{
	if (self->t != NULL)
		weft_close(self->t);
	free(self->map);
	free(self->refs);
	free(self->pay);
	free(self->wq.text);
	pthread_mutex_destroy(&self->wq.mu);
	Py_XDECREF(self->warnings);
	Py_XDECREF(self->warn_cb);
	Py_XDECREF(self->models);
	Py_TYPE(self)->tp_free((PyObject *) self);
}

static int trace_ok(TraceObject *self)
{
	if (self->t == NULL) {
		PyErr_SetString(PyExc_ValueError, "the trace is closed");
		return 0;
	}
	if (self->busy) {
		PyErr_SetString(PyExc_RuntimeError, "the trace is being read by another thread");
		return 0;
	}
	return 1;
}

static int deliver(TraceObject *self)
{
	return warnq_deliver(&self->wq, self->warnings, self->warn_cb);
}

static PyObject *Trace_close(TraceObject *self, PyObject *Py_UNUSED(args))
{
	if (self->busy) {
		PyErr_SetString(PyExc_RuntimeError, "the trace is being read by another thread");
		return NULL;
	}
	if (self->t != NULL) {
		weft_close(self->t);
		self->t = NULL;
	}
	if (deliver(self) != 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *str_or_none(const char *s)
{
	if (s == NULL)
		Py_RETURN_NONE;
	return PyUnicode_DecodeUTF8(s, (Py_ssize_t) strlen(s), "surrogateescape");
}

/* Looms: (name, hostname, clock_offset, has_rank, rank_min, cpus, procs) with
 * cpus [(index, phyid)] and procs [(pid, app_id, rank, nranks, [(tid, stream
 * index or -1)])]. Streams: (relpath, obs_path, meta_version, thread index
 * or -1, obs_size, finished, lib_version, lib_commit, [(model, version)],
 * clock_offset, json_path). Marks: (type, title, stack, [(value, label)]). */
static PyObject *Trace_system(TraceObject *self, PyObject *Py_UNUSED(args))
{
	if (!trace_ok(self))
		return NULL;
	struct weft_trace *t = self->t;
	PyObject *looms = NULL, *streams = NULL, *marks = NULL, *res = NULL;
	if ((looms = PyList_New(0)) == NULL || (streams = PyList_New(0)) == NULL
			|| (marks = PyList_New(0)) == NULL)
		goto out;
	for (size_t i = 0; i < weft_nlooms(t); i++) {
		const struct weft_loom *l = weft_loom_at(t, i);
		PyObject *cpus = PyList_New((Py_ssize_t) l->ncpus);
		PyObject *procs = PyList_New((Py_ssize_t) l->nprocs);
		if (cpus == NULL || procs == NULL) {
			Py_XDECREF(cpus);
			Py_XDECREF(procs);
			goto out;
		}
		int bad = 0;
		for (size_t c = 0; c < l->ncpus && !bad; c++) {
			PyObject *x = Py_BuildValue("(ii)", l->cpus[c].index, l->cpus[c].phyid);
			if (x == NULL)
				bad = 1;
			else
				PyList_SET_ITEM(cpus, (Py_ssize_t) c, x);
		}
		for (size_t p = 0; p < l->nprocs && !bad; p++) {
			const struct weft_proc *pr = l->procs[p];
			PyObject *ths = PyList_New((Py_ssize_t) pr->nthreads);
			if (ths == NULL) {
				bad = 1;
				break;
			}
			for (size_t k = 0; k < pr->nthreads && !bad; k++) {
				const struct weft_thread *th = pr->threads[k];
				struct smap key = { th->stream, 0, 0 }, *m = NULL;
				if (th->stream != NULL)
					m = bsearch(&key, self->map, self->nstreams, sizeof *m, smap_cmp);
				PyObject *x = Py_BuildValue("(ii)", th->tid, m ? (int) m->stream : -1);
				if (x == NULL)
					bad = 1;
				else
					PyList_SET_ITEM(ths, (Py_ssize_t) k, x);
			}
			PyObject *x = bad ? NULL : Py_BuildValue("(iiiiN)", pr->pid, pr->app_id,
					pr->rank, pr->nranks, ths);
			if (x == NULL) {
				if (!bad)
					ths = NULL; /* stolen by N even on failure */
				Py_XDECREF(ths);
				bad = 1;
			} else {
				PyList_SET_ITEM(procs, (Py_ssize_t) p, x);
			}
		}
		PyObject *name = bad ? NULL : str_or_none(l->name);
		PyObject *host = name == NULL ? NULL : str_or_none(l->hostname);
		PyObject *x = host == NULL ? NULL : Py_BuildValue("(NNLiiNN)", name, host,
				(long long) l->clock_offset, l->has_rank, l->rank_min, cpus, procs);
		if (x == NULL) {
			if (host == NULL) {
				Py_XDECREF(name);
				Py_DECREF(cpus);
				Py_DECREF(procs);
			}
			goto out;
		}
		int r = PyList_Append(looms, x);
		Py_DECREF(x);
		if (r != 0)
			goto out;
	}
	for (size_t i = 0; i < self->nstreams; i++) {
		const struct weft_stream *s = weft_stream_at(t, i);
		int32_t thread = -1;
		for (size_t k = 0; k < self->nstreams; k++)
			if (self->map[k].stream == (int32_t) i)
				thread = self->map[k].thread;
		PyObject *reqs = PyList_New((Py_ssize_t) s->nreqs);
		if (reqs == NULL)
			goto out;
		for (size_t k = 0; k < s->nreqs; k++) {
			PyObject *x = Py_BuildValue("(NN)", str_or_none(s->reqs[k].model),
					str_or_none(s->reqs[k].version));
			if (x == NULL) {
				Py_DECREF(reqs);
				goto out;
			}
			PyList_SET_ITEM(reqs, (Py_ssize_t) k, x);
		}
		PyObject *x = Py_BuildValue("(NNiiKiNNNLN)", str_or_none(s->relpath),
				str_or_none(s->obs_path), s->meta_version, (int) thread,
				(unsigned long long) s->obs_size, s->finished, str_or_none(s->lib_version),
				str_or_none(s->lib_commit), reqs, (long long) s->clock_offset,
				str_or_none(weft_stream_json_path(t, i)));
		if (x == NULL)
			goto out;
		int r = PyList_Append(streams, x);
		Py_DECREF(x);
		if (r != 0)
			goto out;
	}
	for (size_t i = 0; i < weft_nmark_types(t); i++) {
		const struct weft_mark_type *m = weft_mark_type_at(t, i);
		PyObject *labels = PyList_New((Py_ssize_t) m->nlabels);
		if (labels == NULL)
			goto out;
		for (size_t k = 0; k < m->nlabels; k++) {
			PyObject *x = Py_BuildValue("(LN)", (long long) m->labels[k].value,
					str_or_none(m->labels[k].label));
			if (x == NULL) {
				Py_DECREF(labels);
				goto out;
			}
			PyList_SET_ITEM(labels, (Py_ssize_t) k, x);
		}
		PyObject *x = Py_BuildValue("(iNiN)", (int) m->type, str_or_none(m->title), m->stack,
				labels);
		if (x == NULL)
			goto out;
		int r = PyList_Append(marks, x);
		Py_DECREF(x);
		if (r != 0)
			goto out;
	}
	res = Py_BuildValue("(OOO)", looms, streams, marks);
out:
	Py_XDECREF(looms);
	Py_XDECREF(streams);
	Py_XDECREF(marks);
	return res;
}

/* stream_attr(i, key): the attribute's JSON text, or None. */
static PyObject *Trace_stream_attr(TraceObject *self, PyObject *args)
{
	Py_ssize_t i;
	const char *key;
	if (!PyArg_ParseTuple(args, "ns", &i, &key))
		return NULL;
	if (!trace_ok(self))
		return NULL;
	if (i < 0 || (size_t) i >= self->nstreams) {
		PyErr_SetString(PyExc_IndexError, "stream index out of range");
		return NULL;
	}
	const struct weft_stream *s = weft_stream_at(self->t, (size_t) i);
	char small[256];
	int n = weft_stream_attr_json(s, key, small, sizeof small);
	if (n == 0)
		Py_RETURN_NONE;
	if ((size_t) n < sizeof small)
		return PyUnicode_DecodeUTF8(small, n, "surrogateescape");
	char *buf = malloc((size_t) n + 1);
	if (buf == NULL)
		return PyErr_NoMemory();
	weft_stream_attr_json(s, key, buf, (size_t) n + 1);
	PyObject *r = PyUnicode_DecodeUTF8(buf, n, "surrogateescape");
	free(buf);
	return r;
}

static PyObject *new_array(npy_intp n, int type)
{
	return PyArray_SimpleNew(1, &n, type);
}

/* Shrinks a 1-d array to n elements (its only reference is ours). */
static int shrink(PyObject *a, npy_intp n)
{
	PyArray_Dims d = { &n, 1 };
	PyObject *r = PyArray_Resize((PyArrayObject *) a, &d, 0, NPY_CORDER);
	if (r == NULL)
		return -1;
	Py_DECREF(r);
	return 0;
}

enum { C_RCLOCK, C_SCLOCK, C_FLAGS, C_MODEL, C_CAT, C_VAL, C_STREAM, C_THREAD, C_POFF,
	C_OFFSET, NCOLS };
static const char *const col_names[NCOLS] = { "rclock", "sclock", "flags", "model", "category",
	"value", "stream", "thread", "payload_offset", "offset" };
static const int col_types[NCOLS] = { NPY_INT64, NPY_INT64, NPY_UINT8, NPY_UINT8, NPY_UINT8,
	NPY_UINT8, NPY_INT32, NPY_INT32, NPY_INT64, NPY_UINT64 };

/* The fill loop, without the GIL: up to cap events into the columns.
 * Returns the count, or -1 (weft_error) / -2 (out of memory). */
static long fill(TraceObject *self, void *const *col, size_t cap, int offsets, size_t *paylen,
		int *end)
{
	int64_t *rclock = col[C_RCLOCK], *sclock = col[C_SCLOCK], *poff = col[C_POFF];
	uint8_t *flags = col[C_FLAGS], *model = col[C_MODEL], *cat = col[C_CAT], *val = col[C_VAL];
	int32_t *stream = col[C_STREAM], *thread = col[C_THREAD];
	uint64_t *off = offsets ? col[C_OFFSET] : NULL;
	size_t n = 0, plen = 0;
	const struct weft_stream *last = NULL;
	int32_t last_s = -1, last_t = -1;
	poff[0] = 0;
	while (n < cap) {
		size_t want = cap - n < REFS ? cap - n : REFS;
		long r = weft_next_refs(self->t, self->refs, want);
		if (r < 0) {
			*paylen = plen;
			return n > 0 ? (long) n : -1; /* the error again next call */
		}
		if (r == 0) {
			*end = 1;
			break;
		}
		for (long i = 0; i < r; i++) {
			const struct weft_ref *ref = &self->refs[i];
			const uint8_t *raw = ref->raw;
			if (ref->stream != last) {
				struct smap key = { ref->stream, 0, 0 };
				struct smap *m = bsearch(&key, self->map, self->nstreams, sizeof *m,
						smap_cmp);
				last = ref->stream;
				last_s = m ? m->stream : -1;
				last_t = m ? m->thread : -1;
			}
			uint8_t f = raw[0];
			int64_t c;
			memcpy(&c, raw + 4, sizeof c);
			rclock[n] = c;
			sclock[n] = (int64_t) ((uint64_t) c + (uint64_t) ref->stream->clock_offset);
			flags[n] = f;
			model[n] = raw[1];
			cat[n] = raw[2];
			val[n] = raw[3];
			stream[n] = last_s;
			thread[n] = last_t;
			uint32_t ps = weft_ref_payload_size(ref);
			if (ps > 0) {
				if (plen + ps > self->paycap) {
					size_t nc = self->paycap ? self->paycap : 1u << 16;
					while (nc < plen + ps)
						nc *= 2;
					uint8_t *p = realloc(self->pay, nc);
					if (p == NULL)
						return -2;
					self->pay = p;
					self->paycap = nc;
				}
				memcpy(self->pay + plen, raw + 12, ps);
				plen += ps;
			}
			poff[n + 1] = (int64_t) plen;
			if (off != NULL) {
				struct weft_event ev;
				weft_ref_event(self->t, ref, &ev);
				off[n] = ev.offset;
			}
			n++;
		}
	}
	*paylen = plen;
	return (long) n;
}

/* read(max, offsets=False): a dict of columns of the next events (at most
 * max), or None at the end. */
static PyObject *Trace_read(TraceObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "max", "offsets", NULL };
	Py_ssize_t max = 1 << 20;
	int offsets = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|np", kwlist, &max, &offsets))
		return NULL;
	if (!trace_ok(self))
		return NULL;
	if (max <= 0) {
		PyErr_SetString(PyExc_ValueError, "max must be positive");
		return NULL;
	}
	if (self->ended) {
		if (deliver(self) != 0)
			return NULL;
		Py_RETURN_NONE;
	}
	PyObject *cols[NCOLS] = { 0 };
	void *data[NCOLS] = { 0 };
	PyObject *res = NULL;
	for (int c = 0; c < NCOLS; c++) {
		if (c == C_OFFSET && !offsets)
			continue;
		cols[c] = new_array(max + (c == C_POFF), col_types[c]);
		if (cols[c] == NULL)
			goto out;
		data[c] = PyArray_DATA((PyArrayObject *) cols[c]);
	}
	size_t paylen = 0;
	int end = 0;
	long n;
	self->busy = 1;
	Py_BEGIN_ALLOW_THREADS
	n = fill(self, data, (size_t) max, offsets, &paylen, &end);
	Py_END_ALLOW_THREADS
	self->busy = 0;
	if (deliver(self) != 0)
		goto out;
	if (n == -2) {
		PyErr_NoMemory();
		goto out;
	}
	if (n < 0) {
		self->ended = 1;
		raise_weft(weft_error(self->t));
		goto out;
	}
	if (n == 0 && end) {
		self->ended = 1;
		res = Py_None;
		Py_INCREF(res);
		goto out;
	}
	for (int c = 0; c < NCOLS; c++)
		if (cols[c] != NULL && n < max && shrink(cols[c], n + (c == C_POFF)) != 0)
			goto out;
	PyObject *pay = new_array((npy_intp) paylen, NPY_UINT8);
	if (pay == NULL)
		goto out;
	if (paylen > 0)
		memcpy(PyArray_DATA((PyArrayObject *) pay), self->pay, paylen);
	if ((res = PyDict_New()) == NULL) {
		Py_DECREF(pay);
		goto out;
	}
	int bad = PyDict_SetItemString(res, "payload", pay) != 0;
	Py_DECREF(pay);
	for (int c = 0; c < NCOLS && !bad; c++)
		if (cols[c] != NULL)
			bad = PyDict_SetItemString(res, col_names[c], cols[c]) != 0;
	if (bad)
		Py_CLEAR(res);
	if (end)
		self->ended = 1;
out:
	for (int c = 0; c < NCOLS; c++)
		Py_XDECREF(cols[c]);
	return res;
}

/* counters(): (nevents, first_clock, last_clock, nbackwards in regions,
 * outside, ncut, nsorted). */
static PyObject *Trace_counters(TraceObject *self, PyObject *Py_UNUSED(args))
{
	if (!trace_ok(self))
		return NULL;
	struct weft_trace *t = self->t;
	return Py_BuildValue("(KLLKKnK)", (unsigned long long) weft_nevents(t),
			(long long) weft_first_clock(t), (long long) weft_last_clock(t),
			(unsigned long long) weft_nbackwards(t, 1),
			(unsigned long long) weft_nbackwards(t, 0), (Py_ssize_t) weft_ncut(t),
			(unsigned long long) weft_nsorted(t));
}

/* cut(i): None, or (header, offset, bytes, why) for a stream found cut;
 * unfinished(i): bool. */
static PyObject *Trace_cut(TraceObject *self, PyObject *args)
{
	Py_ssize_t i;
	if (!PyArg_ParseTuple(args, "n", &i) || !trace_ok(self))
		return NULL;
	struct weft_cut_info ci;
	if (i < 0 || !weft_stream_cut(self->t, (size_t) i, &ci))
		Py_RETURN_NONE;
	return Py_BuildValue("(iKKN)", ci.header, (unsigned long long) ci.offset,
			(unsigned long long) ci.bytes, str_or_none(ci.why));
}

static PyObject *Trace_unfinished(TraceObject *self, PyObject *args)
{
	Py_ssize_t i;
	if (!PyArg_ParseTuple(args, "n", &i) || !trace_ok(self))
		return NULL;
	return PyBool_FromLong(i >= 0 && weft_stream_unfinished(self->t, (size_t) i));
}

static PyMethodDef Trace_methods[] = {
	{ "close", (PyCFunction) Trace_close, METH_NOARGS, "Closes the trace." },
	{ "system", (PyCFunction) Trace_system, METH_NOARGS, "The system as tuples." },
	{ "stream_attr", (PyCFunction) Trace_stream_attr, METH_VARARGS,
		"A stream.json attribute by dotted key, as JSON text, or None." },
	{ "read", (PyCFunction) (void (*)(void)) Trace_read, METH_VARARGS | METH_KEYWORDS,
		"The next events as a dict of NumPy columns, or None at the end." },
	{ "counters", (PyCFunction) Trace_counters, METH_NOARGS, "Counters of the reading." },
	{ "cut", (PyCFunction) Trace_cut, METH_VARARGS, "How stream i was cut, or None." },
	{ "unfinished", (PyCFunction) Trace_unfinished, METH_VARARGS,
		"Stream i was accepted without ovni.finished." },
	{ NULL, NULL, 0, NULL },
};

static PyMemberDef Trace_members[] = {
	{ "warnings", T_OBJECT_EX, offsetof(TraceObject, warnings), READONLY,
		"The warnings so far (list of str)." },
	{ NULL, 0, 0, 0, NULL },
};

static PyTypeObject TraceType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "weft._weft.Trace",
	.tp_basicsize = sizeof(TraceObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "An open trace (see weft.open).",
	.tp_dealloc = (destructor) Trace_dealloc,
	.tp_methods = Trace_methods,
	.tp_members = Trace_members,
};

/* open(path, mode, clock, readahead, all_models, backwards, sort,
 * sort_look_back, cut, accept_unfinished, seek, seek_clock, warn, models:
 * a registry capsule or None) */
static PyObject *m_open(PyObject *Py_UNUSED(mod), PyObject *args)
{
	PyObject *pathobj, *warn, *models;
	int mode, clock, readahead, all_models, backwards, sort, cut, accept_unfinished, seek;
	Py_ssize_t look_back;
	long long seek_clock;
	if (!PyArg_ParseTuple(args, "O&iiiiiiniiiLOO", PyUnicode_FSConverter, &pathobj, &mode,
			&clock, &readahead, &all_models, &backwards, &sort, &look_back, &cut,
			&accept_unfinished, &seek, &seek_clock, &warn, &models))
		return NULL;
	const struct weft_registry *reg;
	if (!registry_of(models, &reg)) {
		Py_DECREF(pathobj);
		return NULL;
	}
	TraceObject *self = PyObject_New(TraceObject, &TraceType);
	if (self == NULL) {
		Py_DECREF(pathobj);
		return NULL;
	}
	self->t = NULL;
	memset(&self->wq, 0, sizeof self->wq);
	pthread_mutex_init(&self->wq.mu, NULL);
	self->map = NULL;
	self->refs = NULL;
	self->pay = NULL;
	self->paycap = 0;
	self->busy = 0;
	self->ended = 0;
	self->nstreams = 0;
	self->warn_cb = warn;
	Py_INCREF(warn);
	self->models = models;
	Py_INCREF(models);
	self->warnings = PyList_New(0);
	self->refs = malloc(REFS * sizeof *self->refs);
	if (self->warnings == NULL || self->refs == NULL) {
		int oom = self->refs == NULL;
		Py_DECREF(pathobj);
		Py_DECREF(self);
		return oom ? PyErr_NoMemory() : NULL;
	}
	struct weft_open_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.mode = (enum weft_mode) mode;
	o.warn = warnq_push;
	o.warn_ctx = &self->wq;
	o.clock = (enum weft_clock) clock;
	o.readahead = (enum weft_readahead) readahead;
	o.all_models = all_models;
	o.backwards = (enum weft_backwards) backwards;
	o.sort = (enum weft_sort) sort;
	o.sort_look_back = (size_t) look_back;
	o.cut = (enum weft_cut) cut;
	o.accept_unfinished = accept_unfinished;
	o.seek = seek;
	o.seek_clock = seek_clock;
	char err[WEFT_ERR_MAX];
	const char *path = PyBytes_AS_STRING(pathobj);
	struct weft_trace *t;
	Py_BEGIN_ALLOW_THREADS
	t = weft_open(path, &o, err, sizeof err);
	Py_END_ALLOW_THREADS
	self->t = t;
	if (deliver(self) != 0) {
		Py_DECREF(pathobj);
		Py_DECREF(self);
		return NULL;
	}
	if (t == NULL) {
		/* the warnings before the failure go with the exception */
		raise_weft_at(err, path, self->warnings);
		Py_DECREF(pathobj);
		Py_DECREF(self);
		return NULL;
	}
	Py_DECREF(pathobj);
	size_t ns = weft_nstreams(t);
	self->nstreams = ns;
	self->map = calloc(ns ? ns : 1, sizeof *self->map);
	if (self->map == NULL) {
		Py_DECREF(self);
		return PyErr_NoMemory();
	}
	for (size_t i = 0; i < ns; i++) {
		self->map[i].s = weft_stream_at(t, i);
		self->map[i].stream = (int32_t) i;
		self->map[i].thread = -1;
	}
	qsort(self->map, ns, sizeof *self->map, smap_cmp);
	/* thread index: looms, processes, threads in the order weft gives */
	int32_t ti = 0;
	for (size_t i = 0; i < weft_nlooms(t); i++) {
		const struct weft_loom *l = weft_loom_at(t, i);
		for (size_t p = 0; p < l->nprocs; p++)
			for (size_t k = 0; k < l->procs[p]->nthreads; k++, ti++) {
				const struct weft_thread *th = l->procs[p]->threads[k];
				struct smap key = { th->stream, 0, 0 };
				struct smap *m = th->stream ? bsearch(&key, self->map, ns, sizeof *m,
						smap_cmp) : NULL;
				if (m != NULL)
					m->thread = ti;
			}
	}
	return (PyObject *) self;
}

/* ---- the models' event table ---- */

/* The registry of models (a capsule, or None: the built-in models) into
 * *r, ready; 0 with the exception set. */
static int models_ready(PyObject *models, const struct weft_registry **r)
{
	if (!registry_of(models, r))
		return 0;
	char err[WEFT_ERR_MAX];
	if (*r == NULL && weft_registry_builtin(err, sizeof err) == NULL) {
		raise_weft(err);
		return 0;
	}
	return 1;
}

static const char *const ftype_names[] = { "i8", "i16", "i32", "i64", "u8", "u16", "u32",
	"u64", "str" };

/* event_spec(mcv bytes, models=None): None, or (desc, [(name, type,
 * offset)]). */
static PyObject *m_event_spec(PyObject *Py_UNUSED(mod), PyObject *args)
{
	const char *mcv;
	Py_ssize_t n;
	PyObject *models = Py_None;
	if (!PyArg_ParseTuple(args, "y#|O", &mcv, &n, &models))
		return NULL;
	if (n != 3) {
		PyErr_SetString(PyExc_ValueError, "an MCV is 3 bytes");
		return NULL;
	}
	const struct weft_registry *reg;
	if (!models_ready(models, &reg))
		return NULL;
	const struct weft_event_spec *e = weft_model_event(reg, mcv);
	if (e == NULL)
		Py_RETURN_NONE;
	PyObject *fl = PyList_New((Py_ssize_t) e->nfields);
	if (fl == NULL)
		return NULL;
	for (size_t i = 0; i < e->nfields; i++) {
		PyObject *x = Py_BuildValue("(Nsk)", str_or_none(e->fields[i].name),
				ftype_names[e->fields[i].type], (unsigned long) e->fields[i].offset);
		if (x == NULL) {
			Py_DECREF(fl);
			return NULL;
		}
		PyList_SET_ITEM(fl, (Py_ssize_t) i, x);
	}
	return Py_BuildValue("(NN)", str_or_none(e->desc), fl);
}

/* describe(mcv, payload, models=None): the text `weft dump` prints, or
 * None (no model describes it, or the payload is too short). */
static PyObject *m_describe(PyObject *Py_UNUSED(mod), PyObject *args)
{
	const char *mcv, *pay;
	Py_ssize_t n, pn;
	PyObject *models = Py_None;
	if (!PyArg_ParseTuple(args, "y#y#|O", &mcv, &n, &pay, &pn, &models))
		return NULL;
	if (n != 3) {
		PyErr_SetString(PyExc_ValueError, "an MCV is 3 bytes");
		return NULL;
	}
	const struct weft_registry *reg;
	if (!models_ready(models, &reg))
		return NULL;
	const struct weft_event_spec *e = weft_model_event(reg, mcv);
	if (e == NULL)
		Py_RETURN_NONE;
	char small[1024];
	long len = weft_event_describe(e, (const uint8_t *) pay, (size_t) pn, small, sizeof small);
	if (len < 0)
		Py_RETURN_NONE;
	if ((size_t) len < sizeof small)
		return PyUnicode_DecodeUTF8(small, len, "surrogateescape");
	char *buf = malloc((size_t) len + 1);
	if (buf == NULL)
		return PyErr_NoMemory();
	weft_event_describe(e, (const uint8_t *) pay, (size_t) pn, buf, (size_t) len + 1);
	PyObject *r = PyUnicode_DecodeUTF8(buf, len, "surrogateescape");
	free(buf);
	return r;
}

/* ---- the emulation ---- */

/* An interval table: row, Paraver type, start, end, value. Each column is a
 * mapping of its own (col_resize), handed to NumPy as it is. */
struct ivcol {
	int32_t *row, *type;
	int64_t *start, *end, *value;
	size_t n, cap;
};

enum { IV_ROW, IV_TYPE, IV_START, IV_END, IV_VALUE, IV_NCOLS };

/* Column k of c, and the size of its elements. */
static void **iv_col(struct ivcol *c, int k, size_t *size)
{
	switch (k) {
	case IV_ROW:
		*size = sizeof *c->row;
		return (void **) &c->row;
	case IV_TYPE:
		*size = sizeof *c->type;
		return (void **) &c->type;
	case IV_START:
		*size = sizeof *c->start;
		return (void **) &c->start;
	case IV_END:
		*size = sizeof *c->end;
		return (void **) &c->end;
	default:
		*size = sizeof *c->value;
		return (void **) &c->value;
	}
}

/* A raw interval whose end is not known yet. */
#define IV_OPEN INT64_MIN

/* A channel of a view, copied from its catalogue entry at the close (the
 * emulator is gone when Python reads it). */
struct vchan {
	int type;
	char *name, *label;  /* catalogue name; Paraver label in this view */
	size_t n;
	int64_t *vals;
	char **vlabels;
};

/* A batch queued for the collector's thread: the views' records and the
 * internal ones (the engine's arrays, valid for EMU_BATCH_KEEP further
 * batches, emu.h). */
struct cjob {
	const struct emu_prv_rec *prv[EMU_MAX_VIEWS];
	size_t nprv[EMU_MAX_VIEWS];
	const struct emu_rec *in;
	size_t nin;
};

/* A raw interval of the group being made (those of one start): its place,
 * its sort key and its catalogue id. */
struct rgkey {
	uint32_t row;
	int32_t type;
	uint32_t id;
	size_t j;
};

/* An output of our own (out.h), given to the driver through its
 * open_output hook. It builds each view's intervals as the records arrive,
 * in a thread of its own beside the emulation, and in the emulation's when
 * its queue is full (coll_step; as the Paraver output writes; no GIL: plain
 * malloc and maps): a record with a value
 * other than 0 opens an interval, which the next record of its row and
 * catalogue entry ends (those still open end at the close, at the
 * emulation's duration); pend holds, per row and entry, the open
 * interval's index (-1: none). The raw layer (raw_iv.h) is made the same
 * way, in the order of the records: an interval takes its place when it
 * opens (raw_iv's open hook; rpend: per thread and entry, its index) and
 * gets its end when raw_iv puts it; the intervals of one start (a group)
 * are put in the order of row and type once a later start comes, those of
 * no length left out (the rows come sorted by start, row and type, with
 * no sort at the close; should a start come before the group's, the close
 * sorts them all: raw_sort). At the close, the view's channels (from the
 * catalogue) and row labels (without Paraver's leading space). Owned by
 * m_emulate, not freed by the close. */
struct coll {
	struct out base;
	const struct emu *emu;
	size_t nviews, ncat;
	int32_t *ptype;        /* per catalogue id: its Paraver type */
	struct ivcol v[EMU_MAX_VIEWS];
	int64_t *pend[EMU_MAX_VIEWS]; /* prow[k] * ncat */
	size_t prow[EMU_MAX_VIEWS];
	struct raw_ivs raw;
	struct ivcol rc;
	int raw_ok;
	int64_t *rpend;        /* raw.nrows * ncat */
	size_t g0;             /* the group: rc's rows from g0 on */
	uint32_t *gid;         /* their catalogue ids */
	size_t gidcap;
	struct rgkey *gkey;    /* the group's keys, and a copy of its rows */
	struct ivrow { int32_t row, type; int64_t start, end, value; } *grow;
	size_t gkeycap;
	int gunsorted;         /* the group's rows are not in order */
	uint64_t gempty;       /* raw.nempty when the group began */
	int raw_unordered;     /* a start came before the group's */
	int64_t raw_last;      /* the latest start (the group's) */
	char *name[EMU_MAX_VIEWS];
	struct vchan *ch[EMU_MAX_VIEWS];
	size_t nch[EMU_MAX_VIEWS];
	char **rows[EMU_MAX_VIEWS];
	size_t nrows[EMU_MAX_VIEWS];
	int64_t duration;
	int closed;
	/* the collector's thread and its queue (as paraver_prv.c's writer) */
	pthread_t th;
	int th_ok, sync_ok, stop;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct cjob jobs[EMU_BATCH_KEEP];
	uint64_t pushed, done; /* batches queued, and done in all parts */
	size_t nparts;         /* the views, then the raw layer */
	uint64_t pdone[EMU_MAX_VIEWS + 1];
	int pbusy[EMU_MAX_VIEWS + 1];
	int failed;            /* set once, with why */
	char why[256];
	char rawwhy[256];      /* raw_put's complaint */
};

/* A huge page; a column of more than COL_SMALL bytes is mapped in steps
 * of one. */
#define COL_HUGE ((size_t) 2 << 20)
#define COL_SMALL ((size_t) 128 << 10)

/* The bytes of the mapping of a column of n elements of size bytes:
 * pages, or huge pages past COL_SMALL. */
static size_t col_bytes(size_t n, size_t size)
{
	size_t b = n * size, unit = b > COL_SMALL ? COL_HUGE : (size_t) sysconf(_SC_PAGESIZE);
	return (b + unit - 1) / unit * unit;
}

/* A new mapping of len bytes; from COL_HUGE on, aligned to it and advised
 * to use huge pages (transparent huge pages, where the system gives them
 * on request). NULL when out of memory. */
static void *col_map(size_t len)
{
	int prot = PROT_READ | PROT_WRITE, fl = MAP_PRIVATE | MAP_ANONYMOUS;
	if (len < COL_HUGE) {
		void *q = mmap(NULL, len, prot, fl, -1, 0);
		return q == MAP_FAILED ? NULL : q;
	}
	char *q = mmap(NULL, len + COL_HUGE, prot, fl, -1, 0);
	if (q == MAP_FAILED)
		return NULL;
	size_t head = (COL_HUGE - (uintptr_t) q % COL_HUGE) % COL_HUGE;
	if (head > 0)
		munmap(q, head);
	munmap(q + head + len, COL_HUGE - head);
	q += head;
#ifdef MADV_HUGEPAGE
	(void) madvise(q, len, MADV_HUGEPAGE); /* a hint: refused is fine */
#endif
	return q;
}

/* Column *p, a mapping of old bytes (0: none), made one of new bytes (0:
 * unmapped; both col_bytes): 0, or -1 with *p as it was. It grows in place
 * or moves with mremap (no copy), in huge pages once large: the columns of
 * the 2M-event bench trace, 160 MB, took some 40,000 faults of 4 KiB pages
 * (in the collector's thread, malloc's memory), and as many pages to free
 * with the arrays. */
static int col_resize(void **p, size_t old, size_t new)
{
	void *q;
	if (new == old)
		return 0;
	if (new == 0) {
		munmap(*p, old);
		*p = NULL;
		return 0;
	}
	if (old > 0 && (new < old || old >= COL_HUGE || new < COL_HUGE)) {
		q = mremap(*p, old, new, MREMAP_MAYMOVE);
		if (q == MAP_FAILED)
			return -1;
	} else { /* new, or become large: mapped aligned, the few pages copied */
		if ((q = col_map(new)) == NULL)
			return -1;
		if (old > 0) {
			memcpy(q, *p, old);
			munmap(*p, old);
		}
	}
	*p = q;
	return 0;
}

/* Room for need intervals (doubling from 16 Ki). */
static int ivcol_grow(struct ivcol *c, size_t need)
{
	size_t cap = c->cap ? c->cap : (size_t) 1 << 14;
	while (cap < need)
		cap *= 2;
	for (int k = 0; k < IV_NCOLS; k++) {
		size_t size;
		void **p = iv_col(c, k, &size);
		if (col_resize(p, col_bytes(c->cap, size), col_bytes(cap, size)) == 0)
			continue;
		while (k-- > 0) { /* back as they were (a shrink stays in place) */
			p = iv_col(c, k, &size);
			col_resize(p, col_bytes(cap, size), col_bytes(c->cap, size));
		}
		return -1;
	}
	c->cap = cap;
	return 0;
}

static void ivcol_free(struct ivcol *c)
{
	for (int k = 0; k < IV_NCOLS; k++) {
		size_t size;
		void **p = iv_col(c, k, &size);
		if (*p != NULL)
			col_resize(p, col_bytes(c->cap, size), 0);
	}
	memset(c, 0, sizeof *c);
}

/* Room in view k's open-interval table for row `row` (rows grow in
 * doubling steps; new slots hold none). */
static int pend_rows(struct coll *c, size_t k, size_t row)
{
	size_t n = c->prow[k] ? c->prow[k] : 64;
	while (n <= row)
		n *= 2;
	int64_t *p = realloc(c->pend[k], n * c->ncat * sizeof *p);
	if (p == NULL)
		return -1;
	for (size_t i = c->prow[k] * c->ncat; i < n * c->ncat; i++)
		p[i] = -1;
	c->pend[k] = p;
	c->prow[k] = n;
	return 0;
}

static int rgkey_cmp(const void *a, const void *b)
{
	const struct rgkey *x = a, *y = b;
	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* The group of raw intervals (rc's rows from g0 on, of one start) made
 * final: those of no length left out (their end unknown and their value
 * no longer held: at_close, their end unknown), the others in the order
 * of row and Paraver type (the catalogue id after: two entries of a type
 * are not expected), the index of those still open moved with them. */
static int raw_group_done(struct coll *c, int at_close)
{
	struct ivcol *r = &c->rc;
	size_t g0 = c->g0, m = r->n - g0;
	/* the rows came in order and none ended where it began: as they are */
	int as_is = !at_close && !c->gunsorted && c->raw.nempty == c->gempty;
	c->gunsorted = 0;
	c->gempty = c->raw.nempty;
	if (m == 0 || as_is) {
		c->g0 = r->n;
		return 0;
	}
	if (m > c->gkeycap) {
		size_t cap = c->gkeycap ? c->gkeycap : 64;
		while (cap < m)
			cap *= 2;
		struct rgkey *k = realloc(c->gkey, cap * sizeof *k);
		if (k != NULL)
			c->gkey = k;
		struct ivrow *w = realloc(c->grow, cap * sizeof *w);
		if (w != NULL)
			c->grow = w;
		if (k == NULL || w == NULL)
			return -1;
		c->gkeycap = cap;
	}
	size_t live = 0;
	int sorted = 1;
	for (size_t j = g0; j < g0 + m; j++) {
		uint32_t id = c->gid[j - g0];
		int64_t *slot = &c->rpend[(size_t) r->row[j] * c->ncat + id];
		if (r->end[j] == IV_OPEN && (at_close || *slot != (int64_t) j ||
				!raw_ivs_holds(&c->raw, (uint32_t) r->row[j], id, r->start[j]))) {
			if (*slot == (int64_t) j)
				*slot = -1;
			sorted = 0;
			continue;
		}
		struct rgkey *k = &c->gkey[live++];
		*k = (struct rgkey) { (uint32_t) r->row[j], r->type[j], id, j };
		if (live > 1 && rgkey_cmp(k - 1, k) > 0)
			sorted = 0;
	}
	r->n = c->g0 = g0 + live; /* the next group begins after it */
	if (sorted)
		return 0;
	if (live > 16) {
		qsort(c->gkey, live, sizeof *c->gkey, rgkey_cmp);
	} else { /* a few (one thread's writes at one time, mostly): by insertion */
		for (size_t i = 1; i < live; i++) {
			struct rgkey k = c->gkey[i];
			size_t x = i;
			for (; x > 0 && rgkey_cmp(&c->gkey[x - 1], &k) > 0; x--)
				c->gkey[x] = c->gkey[x - 1];
			c->gkey[x] = k;
		}
	}
	for (size_t i = 0; i < live; i++) {
		size_t j = c->gkey[i].j;
		c->grow[i] = (struct ivrow) { r->row[j], r->type[j], r->start[j], r->end[j],
			r->value[j] };
	}
	for (size_t i = 0; i < live; i++) {
		size_t j = g0 + i;
		const struct ivrow *w = &c->grow[i];
		r->row[j] = w->row;
		r->type[j] = w->type;
		r->start[j] = w->start;
		r->end[j] = w->end;
		r->value[j] = w->value;
		if (w->end == IV_OPEN)
			c->rpend[(size_t) w->row * c->ncat + c->gkey[i].id] = (int64_t) j;
	}
	return 0;
}

/* raw_iv's open hook: a raw interval takes its place. */
static int raw_open(void *ctx, uint32_t row, size_t id, int64_t start, int64_t value)
{
	struct coll *c = ctx;
	struct ivcol *r = &c->rc;
	if (r->n > c->g0 && start != r->start[c->g0] && !c->raw_unordered) {
		if (start < r->start[c->g0])
			c->raw_unordered = 1; /* the close sorts them */
		else if (!c->gunsorted && c->raw.nempty == c->gempty)
			c->g0 = r->n; /* raw_group_done's as_is, inline (most groups) */
		else if (raw_group_done(c, 0) != 0)
			return -1;
	}
	if (c->raw_unordered)
		c->g0 = r->n; /* no group */
	else
		c->raw_last = start;
	size_t gi = r->n - c->g0;
	if (gi == c->gidcap) {
		size_t cap = c->gidcap ? 2 * c->gidcap : 64;
		uint32_t *g = realloc(c->gid, cap * sizeof *g);
		if (g == NULL)
			return -1;
		c->gid = g;
		c->gidcap = cap;
	}
	if (r->n == r->cap && ivcol_grow(r, r->n + 1) != 0)
		return -1;
	size_t j = r->n++;
	r->row[j] = (int32_t) row;
	r->type[j] = c->ptype[id];
	r->start[j] = start;
	r->end[j] = IV_OPEN;
	r->value[j] = value;
	c->gid[gi] = (uint32_t) id;
	c->rpend[(size_t) row * c->ncat + id] = (int64_t) j;
	if (gi > 0 && !c->gunsorted) {
		struct rgkey a = { (uint32_t) r->row[j - 1], r->type[j - 1], c->gid[gi - 1], 0 };
		struct rgkey b = { row, r->type[j], (uint32_t) id, 0 };
		c->gunsorted = rgkey_cmp(&a, &b) > 0;
	}
	return 0;
}

/* raw_iv's put: the raw interval open since start ends. */
static int raw_put(void *ctx, uint32_t row, size_t id, int64_t start, int64_t end, int64_t value)
{
	struct coll *c = ctx;
	struct ivcol *r = &c->rc;
	int64_t j = c->rpend[(size_t) row * c->ncat + id];
	if (j < 0 || (size_t) j >= r->n || r->start[j] != start || r->value[j] != value) {
		snprintf(c->rawwhy, sizeof c->rawwhy, "the raw interval of thread row %"
				PRIu32 " ending at %" PRId64 " was not opened", row, end);
		return -1;
	}
	r->end[j] = end;
	return 0;
}

/* Part p of a batch (coll_step): view p's records (p < nviews), else the
 * raw records. 0, or -1 with why. */
static int coll_part(struct coll *c, size_t p, const struct cjob *b, char *why, size_t whylen)
{
	if (p == c->nviews) {
		for (size_t i = 0; i < b->nin; i++) {
			const struct emu_rec *x = &b->in[i];
			if (x->kind < EMU_REC_RAW_SET || x->kind > EMU_REC_RAW_POP ||
					raw_ivs_rec(&c->raw, x, raw_put, c) == 0)
				continue;
			snprintf(why, whylen, "%s", c->rawwhy[0] != '\0' ? c->rawwhy :
					"out of memory while keeping the records of the emulation");
			return -1;
		}
		return 0;
	}
	struct ivcol *v = &c->v[p];
	const struct emu_prv_rec *r = b->prv[p];
	size_t n = b->nprv[p];
	if (v->n + n > v->cap && ivcol_grow(v, v->n + n) != 0)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		/* the entry's id, its Paraver type from ptype (as the Paraver
		 * writer's table) */
		size_t id = r[i].chan;
		if (id >= c->ncat) {
			snprintf(why, whylen, "a record of the %s view (row %" PRIu32 ") has no "
					"channel in the catalogue", emu_view_at(c->emu, p)->name, r[i].row);
			return -1;
		}
		if (r[i].row >= c->prow[p] && pend_rows(c, p, r[i].row) != 0)
			goto oom;
		int64_t *slot = &c->pend[p][(size_t) r[i].row * c->ncat + id];
		if (*slot >= 0)
			v->end[*slot] = r[i].time;
		if (r[i].value == 0) {
			*slot = -1;
			continue;
		}
		size_t j = v->n++;
		v->row[j] = (int32_t) r[i].row;
		v->type[j] = c->ptype[id];
		v->start[j] = r[i].time;
		v->value[j] = r[i].value;
		*slot = (int64_t) j;
	}
	return 0;
oom:
	snprintf(why, whylen, "out of memory while keeping the records of the emulation");
	return -1;
}

/* Under mu (released while working): one part of a queued batch, the one
 * furthest behind that no thread is on, in the collector's thread or in
 * the emulation's when the queue is full or at the close (as the Paraver
 * output's emulation thread writes when its writer lags): 1, or 0 when
 * there is none. Each part (a view, the raw layer) takes the batches in
 * order, in one thread at a time; a batch is done when all its parts are. */
static int coll_step(struct coll *c)
{
	size_t p = SIZE_MAX;
	for (size_t q = 0; q < c->nparts; q++)
		if (!c->pbusy[q] && c->pdone[q] < c->pushed &&
				(p == SIZE_MAX || c->pdone[q] < c->pdone[p]))
			p = q;
	if (p == SIZE_MAX)
		return 0;
	const struct cjob *j = &c->jobs[c->pdone[p] % EMU_BATCH_KEEP];
	int skip = c->failed;
	c->pbusy[p] = 1;
	pthread_mutex_unlock(&c->mu);
	char why[sizeof c->why];
	int r = skip ? 0 : coll_part(c, p, j, why, sizeof why);
	pthread_mutex_lock(&c->mu);
	if (r != 0 && !c->failed) {
		c->failed = 1;
		memcpy(c->why, why, sizeof why);
	}
	c->pbusy[p] = 0;
	c->pdone[p]++;
	uint64_t done = c->pdone[0];
	for (size_t q = 1; q < c->nparts; q++)
		done = c->pdone[q] < done ? c->pdone[q] : done;
	c->done = done;
	pthread_cond_broadcast(&c->cv);
	return 1;
}

static void *coll_thread(void *arg)
{
	struct coll *c = arg;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		if (coll_step(c))
			continue;
		if (c->stop && c->done == c->pushed)
			break;
		pthread_cond_wait(&c->cv, &c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Does the batches still queued, with the collector's thread (skip: a
 * failed run, they are only let go), and stops the thread (again:
 * nothing). */
static void coll_stop(struct coll *c, int skip)
{
	if (!c->th_ok)
		return;
	pthread_mutex_lock(&c->mu);
	if (skip)
		c->failed = 1;
	while (c->done < c->pushed)
		if (!coll_step(c))
			pthread_cond_wait(&c->cv, &c->mu);
	c->stop = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->th, NULL);
	c->th_ok = 0;
}

/* A batch, queued as it is: its arrays stay valid while it waits (at most
 * EMU_BATCH_KEEP batches in flight, emu.h). */
static int coll_records(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct coll *c = self;
	pthread_mutex_lock(&c->mu);
	/* a full queue: this thread does parts of it too */
	while (c->pushed - c->done == EMU_BATCH_KEEP)
		if (!coll_step(c))
			pthread_cond_wait(&c->cv, &c->mu);
	struct cjob *j = &c->jobs[c->pushed % EMU_BATCH_KEEP];
	for (size_t k = 0; k < EMU_MAX_VIEWS; k++) {
		j->prv[k] = b->prv[k];
		j->nprv[k] = k < c->nviews ? b->nprv[k] : 0;
	}
	j->in = b->internal;
	j->nin = b->ninternal;
	c->pushed++;
	if (!c->th_ok) /* without the thread, each batch is done here */
		while (coll_step(c))
			;
	else if (c->pushed - c->done >= 3) /* wake it for a few, not each one */
		pthread_cond_broadcast(&c->cv);
	int failed = c->failed;
	if (failed)
		snprintf(err, errlen, "%s", c->why);
	pthread_mutex_unlock(&c->mu);
	return failed ? -1 : 0;
}

/* A raw interval's sort key (raw_sort). */
struct rkey {
	int64_t start;
	int32_t row, type;
	size_t idx;
};

static int rkey_cmp(const void *a, const void *b)
{
	const struct rkey *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

/* The raw intervals in the order of start, row and type, when they did not
 * come in the order of their start (not expected: the records come in
 * the order of time): 0, or -1 when out of memory. */
static int raw_sort(struct ivcol *r)
{
	size_t n = r->n;
	struct rkey *k = malloc((n + 1) * sizeof *k);
	int64_t *tmp = malloc((n + 1) * sizeof *tmp);
	if (k == NULL || tmp == NULL) {
		free(k);
		free(tmp);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		k[i] = (struct rkey) { r->start[i], r->row[i], r->type[i], i };
	qsort(k, n, sizeof *k, rkey_cmp);
	int64_t *c64[] = { r->start, r->end, r->value };
	for (size_t x = 0; x < 3; x++) {
		for (size_t i = 0; i < n; i++)
			tmp[i] = c64[x][k[i].idx];
		memcpy(c64[x], tmp, n * sizeof *tmp);
	}
	int32_t *c32[] = { r->row, r->type }, *t32 = (int32_t *) tmp;
	for (size_t x = 0; x < 2; x++) {
		for (size_t i = 0; i < n; i++)
			t32[i] = c32[x][k[i].idx];
		memcpy(c32[x], t32, n * sizeof *t32);
	}
	free(k);
	free(tmp);
	return 0;
}

/* The raw layer done, at the close (raw_ivs_end has ended what was held):
 * the last group, and those no longer held that never ended (a start at
 * or after duration) left out; a layer that came out of order sorted. */
static int raw_finish(struct coll *c, int64_t duration)
{
	struct ivcol *r = &c->rc;
	if (!c->raw_unordered && raw_group_done(c, 1) != 0)
		return -1;
	if (!c->raw_unordered && (r->n == 0 || duration > c->raw_last))
		return 0;
	size_t n = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (r->end[i] == IV_OPEN)
			continue;
		r->row[n] = r->row[i];
		r->type[n] = r->type[i];
		r->start[n] = r->start[i];
		r->end[n] = r->end[i];
		r->value[n++] = r->value[i];
	}
	r->n = n;
	return c->raw_unordered && n > 1 ? raw_sort(r) : 0;
}

static char *dup_or_null(const char *s, int *oom)
{
	if (s == NULL)
		return NULL;
	char *d = strdup(s);
	if (d == NULL)
		*oom = 1;
	return d;
}

/* Channel k of a view: entry c, with n value labels (vals, labels given
 * by get(i)). */
static int vchan_fill(struct vchan *v, const struct emu_cat_entry *c, size_t view, size_t n)
{
	int oom = 0;
	v->type = c->prv_type;
	v->name = dup_or_null(c->name, &oom);
	v->label = dup_or_null(view == EMU_FILE_CPU ? c->cpu_label : c->thread_label, &oom);
	v->vals = calloc(n + 1, sizeof *v->vals);
	v->vlabels = calloc(n + 1, sizeof *v->vlabels);
	if (oom || v->vals == NULL || v->vlabels == NULL)
		return -1;
	return 0;
}

static void vchan_value(struct vchan *v, int64_t value, const char *label, int *oom)
{
	v->vals[v->n] = value;
	v->vlabels[v->n++] = dup_or_null(label, oom);
}

/* The channels of view k: the catalogue's entries whose records of a
 * Paraver type it holds (the first of a type, as emu_cat_by_type), with
 * their value labels (the task types' too, known now). */
static int coll_chans(struct coll *c, size_t k)
{
	const struct emu *emu = c->emu;
	size_t n = emu_cat_count(emu);
	c->ch[k] = calloc(n + 1, sizeof *c->ch[k]);
	if (c->ch[k] == NULL)
		return -1;
	int oom = 0;
	for (size_t i = 0; i < n && !oom; i++) {
		const struct emu_cat_entry *e = emu_cat_at(emu, i);
		if (!(e->scope & EMU_SCOPE_VIEW(k)) || emu_cat_by_type(emu, k, e->prv_type) != e)
			continue;
		struct vchan *v = &c->ch[k][c->nch[k]++];
		const struct emu_value_label *bv = NULL;
		size_t nbv = 0;
		if (e->bd_view >= 0 && !emu_view_values(emu, (size_t) e->bd_view, &bv, &nbv))
			nbv = 0;
		size_t ndyn = e->info != NULL ? e->info->ndyn : 0;
		if (vchan_fill(v, e, k, e->nvalues + ndyn + nbv) != 0)
			return -1;
		for (size_t j = 0; j < e->nvalues; j++) {
			if (e->values != NULL)
				vchan_value(v, e->values[j].value, e->values[j].label, &oom);
			else
				vchan_value(v, e->mvalues[j].value, e->mvalues[j].label, &oom);
		}
		for (size_t j = 0; j < ndyn; j++)
			vchan_value(v, e->info->dyn[j].value, e->info->dyn[j].label, &oom);
		for (size_t j = 0; j < nbv; j++)
			vchan_value(v, bv[j].value, bv[j].label, &oom);
	}
	return oom ? -1 : 0;
}

/* The row labels of view k, without Paraver's leading space (" CPU 0.1");
 * a breakdown view whose labels were not completed has none (its .row is
 * empty). */
static int coll_rows(struct coll *c, size_t k)
{
	const struct emu_sys *sys = emu_system(c->emu);
	const struct emu_view *v = emu_view_at(c->emu, k);
	const struct emu_value_label *vals;
	size_t nv, n = v->nrows;
	if (v->breakdown && !emu_view_values(c->emu, k, &vals, &nv))
		n = 0;
	c->rows[k] = calloc(n + 1, sizeof *c->rows[k]);
	if (c->rows[k] == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char buf[64];
		const char *l = buf;
		if (k == EMU_FILE_THREAD)
			l = sys->threads[i].label;
		else if (k == EMU_FILE_CPU)
			l = sys->cpus[i].label;
		else
			emu_view_row_label(c->emu, k, i, buf, sizeof buf);
		while (*l == ' ')
			l++;
		if ((c->rows[k][i] = strdup(l)) == NULL)
			return -1;
		c->nrows[k] = i + 1;
	}
	return 0;
}

static int coll_close(struct out *o, int64_t duration, char *err, size_t errlen)
{
	struct coll *c = (struct coll *) o;
	coll_stop(c, 0);
	if (c->failed) {
		snprintf(err, errlen, "%s", c->why);
		return -1;
	}
	c->duration = duration;
	c->closed = 1;
	if (raw_ivs_end(&c->raw, duration, raw_put, c) != 0 || raw_finish(c, duration) != 0) {
		snprintf(err, errlen, "%s", c->rawwhy[0] != '\0' ? c->rawwhy :
				"out of memory while keeping the records of the emulation");
		return -1;
	}
	for (size_t k = 0; k < c->nviews; k++) {
		/* the intervals still open end with the emulation */
		for (size_t i = 0; i < c->prow[k] * c->ncat; i++)
			if (c->pend[k][i] >= 0)
				c->v[k].end[c->pend[k][i]] = duration;
		c->name[k] = strdup(emu_view_at(c->emu, k)->name);
		if (c->name[k] == NULL || coll_chans(c, k) != 0 || coll_rows(c, k) != 0) {
			snprintf(err, errlen, "out of memory while naming the timelines");
			return -1;
		}
	}
	return 0;
}

/* A failed run: the thread stopped before the engine's arrays go. */
static void coll_discard(struct out *o)
{
	coll_stop((struct coll *) o, 1);
}

static const struct out_ops coll_ops = {
	.name = "python", .internal = EMU_SINK_INT_RAW, .records = coll_records, .close = coll_close,
	.discard = coll_discard,
};

static void coll_clear(struct coll *c);

/* Opened for each run of the driver: a run given up for one that sorts on
 * read (weft_emulate) is forgotten. */
static struct out *coll_open(void *ctx, const struct emu *emu, char *err, size_t errlen)
{
	struct coll *c = ctx;
	coll_clear(c);
	c->base.ops = &coll_ops;
	c->emu = emu;
	c->nviews = emu_nviews(emu);
	if (c->nviews > EMU_MAX_VIEWS)
		c->nviews = EMU_MAX_VIEWS;
	c->nparts = c->nviews + 1;
	c->ncat = emu_cat_count(emu);
	for (size_t k = 0; k < c->nviews; k++) {
		size_t rows = emu_view_at(emu, k)->nrows;
		if (pend_rows(c, k, rows > 0 ? rows - 1 : 0) != 0) {
			snprintf(err, errlen, "out of memory opening the emulation's output");
			return NULL;
		}
	}
	if (raw_ivs_init(&c->raw, emu) != 0) {
		snprintf(err, errlen, "out of memory opening the emulation's output");
		raw_ivs_free(&c->raw);
		return NULL;
	}
	c->raw_ok = 1;
	c->raw.open = raw_open;
	c->rpend = malloc((c->raw.nrows * c->ncat + 1) * sizeof *c->rpend);
	c->ptype = malloc((c->ncat + 1) * sizeof *c->ptype);
	if (c->rpend == NULL || c->ptype == NULL) {
		snprintf(err, errlen, "out of memory opening the emulation's output");
		return NULL;
	}
	for (size_t i = 0; i < c->raw.nrows * c->ncat; i++)
		c->rpend[i] = -1;
	for (size_t i = 0; i < c->ncat; i++)
		c->ptype[i] = emu_cat_at(emu, i)->prv_type;
	if (pthread_mutex_init(&c->mu, NULL) != 0 || pthread_cond_init(&c->cv, NULL) != 0) {
		snprintf(err, errlen, "cannot start the emulation's output: %s", strerror(errno));
		return NULL;
	}
	c->sync_ok = 1;
	/* without a thread, the batches are done in the emulation's */
	c->th_ok = pthread_create(&c->th, NULL, coll_thread, c) == 0;
	return &c->base;
}

/* Frees what c holds and empties it. */
static void coll_clear(struct coll *c)
{
	coll_stop(c, 1);
	if (c->sync_ok) {
		pthread_mutex_destroy(&c->mu);
		pthread_cond_destroy(&c->cv);
	}
	if (c->raw_ok)
		raw_ivs_free(&c->raw);
	ivcol_free(&c->rc);
	free(c->rpend);
	free(c->ptype);
	free(c->gid);
	free(c->gkey);
	free(c->grow);
	for (size_t k = 0; k < EMU_MAX_VIEWS; k++) {
		ivcol_free(&c->v[k]);
		free(c->pend[k]);
		free(c->name[k]);
		for (size_t i = 0; i < c->nch[k]; i++) {
			struct vchan *v = &c->ch[k][i];
			free(v->name);
			free(v->label);
			for (size_t j = 0; j < v->n; j++)
				free(v->vlabels[j]);
			free(v->vals);
			free(v->vlabels);
		}
		free(c->ch[k]);
		for (size_t i = 0; i < c->nrows[k]; i++)
			free(c->rows[k][i]);
		free(c->rows[k]);
	}
	memset(c, 0, sizeof *c);
}

static void coll_free(struct coll *c)
{
	coll_clear(c);
	free(c);
}

/* A column's mapping, its length the capsule's context (col_resize). */
static void unmap_capsule(PyObject *cap)
{
	munmap(PyCapsule_GetPointer(cap, NULL), (size_t) (uintptr_t) PyCapsule_GetContext(cap));
}

/* The collected column *data (n elements of size bytes, a mapping for cap
 * of them) as a NumPy array that owns it (no copy: copying 5.7 M records
 * was a fifth of the run, mostly in page faults), its unused pages given
 * back; *data is then NULL, not freed by coll_free. An empty column, or
 * out of memory: a new array, *data left to coll_free. */
static PyObject *column(void **data, size_t n, size_t cap, int type, size_t size)
{
	if (n == 0 || *data == NULL)
		return new_array((npy_intp) n, type);
	PyObject *capsule = PyCapsule_New(*data, NULL, unmap_capsule);
	if (capsule == NULL)
		return NULL;
	npy_intp dim = (npy_intp) n;
	PyObject *a = PyArray_SimpleNewFromData(1, &dim, type, *data);
	if (a == NULL) {
		/* the capsule would unmap the data, which coll_free unmaps */
		PyCapsule_SetDestructor(capsule, NULL);
		Py_DECREF(capsule);
		return NULL;
	}
	size_t pg = (size_t) sysconf(_SC_PAGESIZE);
	size_t len = col_bytes(cap, size), keep = (n * size + pg - 1) / pg * pg;
	if (keep < len && mremap(*data, len, keep, 0) != MAP_FAILED) /* in place */
		len = keep;
	*data = NULL;
	PyCapsule_SetContext(capsule, (void *) (uintptr_t) len);
	if (PyArray_SetBaseObject((PyArrayObject *) a, capsule) != 0) {
		/* the reference to the capsule is stolen even on failure: it
		 * unmaps the data */
		Py_DECREF(a);
		return NULL;
	}
	return a;
}

/* A view's channels: [(type, name, Paraver label, {value: label})]. */
static PyObject *coll_chan_list(const struct coll *c, size_t k)
{
	PyObject *list = PyList_New(0);
	for (size_t i = 0; list != NULL && i < c->nch[k]; i++) {
		const struct vchan *v = &c->ch[k][i];
		PyObject *d = PyDict_New();
		for (size_t j = 0; d != NULL && j < v->n; j++) {
			PyObject *key = PyLong_FromLongLong(v->vals[j]);
			PyObject *val = str_or_none(v->vlabels[j]);
			if (key == NULL || val == NULL || PyDict_SetItem(d, key, val) != 0)
				Py_CLEAR(d);
			Py_XDECREF(key);
			Py_XDECREF(val);
		}
		PyObject *x = d == NULL ? NULL : Py_BuildValue("(iNNN)", v->type, str_or_none(v->name),
				str_or_none(v->label), d);
		if (d != NULL && x == NULL)
			Py_DECREF(d);
		if (x == NULL || PyList_Append(list, x) != 0)
			Py_CLEAR(list);
		Py_XDECREF(x);
	}
	return list;
}

static PyObject *coll_row_list(const struct coll *c, size_t k)
{
	PyObject *list = PyList_New((Py_ssize_t) c->nrows[k]);
	for (size_t i = 0; list != NULL && i < c->nrows[k]; i++) {
		PyObject *s = str_or_none(c->rows[k][i]);
		if (s == NULL)
			Py_CLEAR(list);
		else
			PyList_SET_ITEM(list, (Py_ssize_t) i, s);
	}
	return list;
}

/* An interval table's columns as NumPy arrays that own them: (row, type,
 * start, end, value). */
static PyObject *ivcol_arrays(struct ivcol *c)
{
	void *row = c->row, *type = c->type, *start = c->start, *end = c->end,
		*value = c->value;
	PyObject *x = Py_BuildValue("(NNNNN)",
			column(&row, c->n, c->cap, NPY_INT32, sizeof *c->row),
			column(&type, c->n, c->cap, NPY_INT32, sizeof *c->type),
			column(&start, c->n, c->cap, NPY_INT64, sizeof *c->start),
			column(&end, c->n, c->cap, NPY_INT64, sizeof *c->end),
			column(&value, c->n, c->cap, NPY_INT64, sizeof *c->value));
	c->row = row;
	c->type = type;
	c->start = start;
	c->end = end;
	c->value = value;
	return x;
}

/* The views and the raw layer: ([(name, (row, type, start, end, value),
 * duration, channels, row labels)], (row, type, start, end, value))
 * (coll_chan_list, coll_row_list). */
static PyObject *coll_views(struct coll *c)
{
	PyObject *raw = ivcol_arrays(&c->rc);
	if (raw == NULL)
		return NULL;
	PyObject *list = PyList_New(0);
	for (size_t k = 0; list != NULL && k < c->nviews; k++) {
		PyObject *x = Py_BuildValue("(NNLNN)", str_or_none(c->name[k]),
				ivcol_arrays(&c->v[k]), (long long) c->duration,
				coll_chan_list(c, k), coll_row_list(c, k));
		if (x == NULL || PyList_Append(list, x) != 0)
			Py_CLEAR(list);
		Py_XDECREF(x);
	}
	if (list == NULL) {
		Py_DECREF(raw);
		return NULL;
	}
	return Py_BuildValue("(NN)", list, raw);
}

/* emulate(path, lint, breakdown, all_models, salvage, has_from, from,
 * from_rel, has_to, to, to_rel, warn list, models: a registry capsule or
 * None, jobs: weft emu -j, 1 to 4096): runs weft_emulate() with our collecting output and no output
 * format, the GIL released (runs in several threads go on at once); returns
 * the views (coll_views). */
static PyObject *m_emulate(PyObject *Py_UNUSED(mod), PyObject *args)
{
	PyObject *pathobj, *list, *models;
	int lint, bd, all, salvage, has_from, from_rel, has_to, to_rel, jobs;
	long long from, to;
	if (!PyArg_ParseTuple(args, "O&iiiiiLiiLiO!Oi", PyUnicode_FSConverter, &pathobj,
			&lint, &bd, &all, &salvage, &has_from, &from, &from_rel, &has_to, &to,
			&to_rel, &PyList_Type, &list, &models, &jobs))
		return NULL;
	const struct weft_registry *reg;
	if (!registry_of(models, &reg)) {
		Py_DECREF(pathobj);
		return NULL;
	}
	struct coll *c = calloc(1, sizeof *c);
	if (c == NULL) {
		Py_DECREF(pathobj);
		return PyErr_NoMemory();
	}
	struct warnq q;
	memset(&q, 0, sizeof q);
	pthread_mutex_init(&q.mu, NULL);
	static const char *const formats[] = { NULL };
	struct weft_emulate_opts o;
	memset(&o, 0, sizeof o);
	o.sz = sizeof o;
	o.path = PyBytes_AS_STRING(pathobj);
	/* no file is written: the trace directory is only checked */
	o.formats = formats;
	o.open_output = coll_open;
	o.hook_ctx = c;
	/* the tables follow each view's records and each thread's raw
	 * records in time order, not the batches: made by -j's workers too,
	 * which keep the raw channels' records for them */
	o.open_output_merged = 1;
	o.open_output_internal = EMU_SINK_INT_RAW;
	o.lint = lint;
	o.breakdown = bd;
	o.all_models = all;
	o.models = reg; /* kept alive by args until the call returns */
	o.salvage = salvage;
	o.warn = warnq_push;
	o.ctx = &q;
	o.has_from = has_from;
	o.from = from;
	o.from_rel = from_rel;
	o.has_to = has_to;
	o.to = to;
	o.to_rel = to_rel;
	o.jobs = jobs;
	char err[WEFT_ERR_MAX + 256];
	int r;
	Py_BEGIN_ALLOW_THREADS
	r = weft_emulate(&o, err, sizeof err);
	Py_END_ALLOW_THREADS
	int d = warnq_deliver(&q, list, NULL);
	free(q.text);
	pthread_mutex_destroy(&q.mu);
	PyObject *res = NULL;
	if (d != 0)
		;
	else if (r != 0)
		raise_weft_at(err, PyBytes_AS_STRING(pathobj), NULL);
	else
		res = coll_views(c);
	Py_DECREF(pathobj);
	coll_free(c);
	return res;
}

/* set_error_class(cls): the class weft errors are raised as. */
static PyObject *m_set_error_class(PyObject *Py_UNUSED(mod), PyObject *cls)
{
	if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *) cls,
			(PyTypeObject *) PyExc_Exception)) {
		PyErr_SetString(PyExc_TypeError, "an exception class is needed");
		return NULL;
	}
	Py_INCREF(cls);
	Py_XSETREF(WeftError, cls);
	Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
	{ "open", m_open, METH_VARARGS, "Opens a trace (use weft.open)." },
	{ "event_spec", m_event_spec, METH_VARARGS, "The models' table entry for an MCV." },
	{ "describe", m_describe, METH_VARARGS, "An event's description, as weft dump." },
	{ "emulate", m_emulate, METH_VARARGS, "Runs weft_emulate (use weft.emulate)." },
	{ "registry", m_registry, METH_O, "The built-in models and those of model files." },
	{ "set_error_class", m_set_error_class, METH_O, "The exception class of weft errors." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT, "_weft", "The C part of the weft module.", -1, module_methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__weft(void)
{
	import_array();
	if (PyType_Ready(&TraceType) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&module_def);
	if (m == NULL)
		return NULL;
	Py_INCREF(&TraceType);
	if (PyModule_AddObject(m, "Trace", (PyObject *) &TraceType) != 0) {
		Py_DECREF(&TraceType);
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
