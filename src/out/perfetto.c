/* SPDX-License-Identifier: MIT */
/*
 * perfetto.c - the Perfetto output: perfetto.pftrace, a protobuf Trace of
 * TracePackets with TrackEvents, written by a small encoder of the wire
 * format (no dependency).
 *
 * Tracks: one process track per process; one thread track per thread (its
 * states as slices: Running, Paused, Cooling, Warming); under each thread,
 * one track per model channel it uses, from the raw channel writes (the
 * parameter layer=raw, the default; layer=shown: from the thread view's
 * records, the values Paraver shows, a view's null closing the slice):
 *   - ovni's channels (flush, each mark type) under their PCF label, the
 *     other models' under "<model> <channel>" ("nosv subsystem", "mpi
 *     function"): a stack as nested slices (push opens a slice named by the
 *     value's label, pop closes it), a single channel as one slice per value
 *     (idle state); channels whose values have no label (task ids, ranks)
 *     are left out;
 *   - the task type channels (values from the task types: nosv and nanos6
 *     "type", openmp "label"): the running task, a slice named by its type's
 *     label;
 *   - the counter families (nosv hardware counters): a counter track
 *     "<model> <counter>" with each reported value;
 *   - a single mark type without value labels (numbers: "Item size"): a
 *     counter track under its title with each value set, 0 when unset
 *     (not slices named "1000", "1500").
 * A thread that lost events (docs/emu.md, "Traces with lost events") has a
 * slice "lost events" on its track over each lost interval (from the
 * engine's lost records, struct emu_lost_rec; its state is unknown then,
 * so no state slice is open).
 * One track per CPU (slices named after the running thread), and under it,
 * per single task type channel, "<model> <channel>": the task type of the
 * CPU's running thread, as slices.
 *
 * The task types' labels are known only at the end (emu_chan_info.dyn), and
 * an interned name must be defined before the packets that use it, so the
 * slices of the task type tracks go to a side file (fixed-size records,
 * unlinked at once, in the output directory) and are written after the rest
 * of the trace at close, named by their labels then. Memory stays bounded:
 * per (thread, channel) and per (CPU, channel) state only.
 *
 * Event names are interned (sequence 1), so a slice costs about 20 bytes.
 * Times are the Paraver times (ns from the first event). The packets follow
 * the records in time order, not the engine's batches (perfetto_records), so
 * weft emu -j's merged records give the same file.
 *
 * Field numbers from google/perfetto protos/perfetto/trace: Trace.packet 1;
 * TracePacket timestamp 8, track_event 11, trusted_packet_sequence_id 10,
 * interned_data 12, sequence_flags 13, track_descriptor 60; TrackEvent type 9,
 * name_iid 10, track_uuid 11, name 23, counter_value 30 (type COUNTER 4);
 * TrackDescriptor uuid 1, name 2, process 3, thread 4, parent_uuid 5,
 * counter 8 (CounterDescriptor, empty); ProcessDescriptor pid 1,
 * process_name 6; ThreadDescriptor pid 1, tid 2, thread_name 5;
 * InternedData event_names 2; EventName iid 1, name 2.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "out.h"
#include "out_file.h"

#define PF_BUF (1u << 20)
#define PF_SEQ 1
#define PF_MAX_INTERNED 200000u
#define SLICE_BEGIN 1
#define SLICE_END 2
#define COUNTER 4

/* How a channel is shown. */
enum {
	MODE_SKIP = 0, /* the description says show: none */
	MODE_SLICE,    /* slices named by the value's label */
	MODE_DYN,      /* slices named by a task type's label, via the side file */
	MODE_COUNTER,  /* a counter track */
	MODE_NUMBERS,  /* a counter track of a single mark type without value
	                  labels: each value set, 0 when unset */
};

/* A slice of a task type track, waiting for the labels (side file). */
struct side_rec {
	int64_t ts;
	uint64_t track;
	int64_t value;
	int32_t chan;
	int32_t type;
};

/* A task type channel's labels at close, sorted by value. */
struct dyn_name {
	int64_t value;
	const char *label;
};

/* An internal record held until no record to come can precede it
 * (perfetto_records), with its key. */
struct iq_item {
	int64_t key;
	struct emu_rec rec;
};

struct pbuf {
	uint8_t *p;
	size_t len, cap;
};

struct intern {
	char *name;
	uint64_t iid;
};

struct perfetto {
	struct out base;
	const struct emu *emu;
	const struct emu_sys *sys;
	/* the catalogue's thread state: its id (what its records carry) and
	 * the states' names */
	const struct emu_cat_entry *state;
	uint32_t state_id;
	int shown;          /* layer=shown: model channels from the thread view */
	FILE *f;            /* the temporary of file (out_file.h) */
	struct out_file file;
	char *path;         /* the final name, for messages */
	uint8_t *buf;
	size_t len;
	int werr;
	struct pbuf pkt, msg, sub;
	/* interned names: open addressing on the string */
	struct intern *names;
	size_t nnames, names_cap;
	uint64_t next_iid;
	/* state */
	size_t nchans;
	int8_t *tstate;     /* per thread: open state slice (state or -1) */
	uint8_t *lost_open; /* per thread: a "lost events" slice is open */
	uint8_t *cpu_open;  /* per CPU: a slice is open */
	uint32_t *depth;    /* per thread * chan: open slices */
	uint8_t *declared;  /* per thread * chan: track declared */
	uint8_t *mode;      /* per chan: MODE_* */
	int *task_of_chan;  /* per chan: its index among the CPU task channels, -1 */
	size_t ntask;       /* single task type channels (shown per CPU too) */
	size_t *task_chan;  /* their channel indices */
	int64_t *tcur;      /* per thread * task chan: raw value, if thas */
	uint8_t *thas;      /* ... has a value (any int64, INT64_MIN too: no sentinel) */
	int64_t *copen;     /* per CPU * task chan: open slice's value, if chas */
	uint8_t *chas;      /* ... a slice is open */
	uint8_t *cdeclared; /* per CPU * task chan: track declared */
	int64_t *rsel;      /* per CPU: running thread, -1 */
	int64_t *cpu_of;    /* per thread: the CPU it is the running thread of, -1 */
	FILE *side;         /* task type slices, written at close */
	/* the internal records not written yet (perfetto_records), and the
	 * last key of the thread stream (the thread view's and the lost
	 * records) and of the internal one */
	struct iq_item *iq;
	size_t niq, iqcap;
	int64_t tkey, ikey;
	uint64_t uuid_proc, uuid_thread, uuid_cpu, uuid_chan, uuid_ctask;
	int64_t last_ts;
};

/* ---- the wire format ---- */

static int pb_reserve(struct pbuf *b, size_t n)
{
	if (b->len + n <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap * 2 : 256;
	while (cap < b->len + n)
		cap *= 2;
	uint8_t *np = realloc(b->p, cap);
	if (np == NULL)
		return -1;
	b->p = np;
	b->cap = cap;
	return 0;
}

static size_t varint_put(uint8_t *o, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		o[n++] = (uint8_t) (v | 0x80);
		v >>= 7;
	}
	o[n++] = (uint8_t) v;
	return n;
}

static int pb_varint(struct pbuf *b, uint64_t v)
{
	if (pb_reserve(b, 10) != 0)
		return -1;
	b->len += varint_put(b->p + b->len, v);
	return 0;
}

static int pb_tag(struct pbuf *b, unsigned field, unsigned wire)
{
	return pb_varint(b, (uint64_t) field << 3 | wire);
}

static int pb_uint(struct pbuf *b, unsigned field, uint64_t v)
{
	return pb_tag(b, field, 0) | pb_varint(b, v);
}

static int pb_bytes(struct pbuf *b, unsigned field, const void *data, size_t n)
{
	if (pb_tag(b, field, 2) != 0 || pb_varint(b, n) != 0 || pb_reserve(b, n) != 0)
		return -1;
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

static int pb_str(struct pbuf *b, unsigned field, const char *s)
{
	return pb_bytes(b, field, s, strlen(s));
}

/* ---- the file ---- */

static void pf_write(struct perfetto *pf, const void *data, size_t n)
{
	if (pf->len + n > PF_BUF) {
		if (pf->len > 0 && fwrite(pf->buf, 1, pf->len, pf->f) != pf->len && !pf->werr)
			pf->werr = errno ? errno : EIO;
		pf->len = 0;
	}
	if (n > PF_BUF) {
		if (fwrite(data, 1, n, pf->f) != n && !pf->werr)
			pf->werr = errno ? errno : EIO;
		return;
	}
	memcpy(pf->buf + pf->len, data, n);
	pf->len += n;
}

/* Writes pf->pkt as Trace.packet (field 1). */
static void pf_packet(struct perfetto *pf)
{
	uint8_t hdr[12];
	size_t n = 0;
	hdr[n++] = 0x0a;
	n += varint_put(hdr + n, pf->pkt.len);
	pf_write(pf, hdr, n);
	pf_write(pf, pf->pkt.p, pf->pkt.len);
	pf->pkt.len = 0;
}

/* ---- interning ---- */

static uint64_t str_hash(const char *s)
{
	uint64_t h = UINT64_C(1469598103934665603);
	for (; *s; s++) {
		h ^= (unsigned char) *s;
		h *= UINT64_C(1099511628211);
	}
	return h;
}

static int intern_grow(struct perfetto *pf)
{
	size_t cap = pf->names_cap ? pf->names_cap * 2 : 1024;
	struct intern *n = calloc(cap, sizeof *n);
	if (n == NULL)
		return -1;
	for (size_t i = 0; i < pf->names_cap; i++) {
		if (pf->names[i].name == NULL)
			continue;
		size_t h = (size_t) str_hash(pf->names[i].name) & (cap - 1);
		while (n[h].name != NULL)
			h = (h + 1) & (cap - 1);
		n[h] = pf->names[i];
	}
	free(pf->names);
	pf->names = n;
	pf->names_cap = cap;
	return 0;
}

/* The iid of name; *fresh = 1 when it must be sent in this packet. Returns
 * 0 when the table is full (send the name inline). */
static uint64_t intern(struct perfetto *pf, const char *name, int *fresh)
{
	*fresh = 0;
	if ((pf->nnames + 1) * 2 > pf->names_cap) {
		if (pf->nnames >= PF_MAX_INTERNED || intern_grow(pf) != 0)
			goto lookup_only;
	}
	size_t h = (size_t) str_hash(name) & (pf->names_cap - 1);
	while (pf->names[h].name != NULL) {
		if (strcmp(pf->names[h].name, name) == 0)
			return pf->names[h].iid;
		h = (h + 1) & (pf->names_cap - 1);
	}
	pf->names[h].name = strdup(name);
	if (pf->names[h].name == NULL)
		return 0;
	pf->names[h].iid = pf->next_iid++;
	pf->nnames++;
	*fresh = 1;
	return pf->names[h].iid;
lookup_only:
	if (pf->names_cap == 0)
		return 0;
	h = (size_t) str_hash(name) & (pf->names_cap - 1);
	for (size_t k = 0; k < pf->names_cap && pf->names[h].name != NULL; k++) {
		if (strcmp(pf->names[h].name, name) == 0)
			return pf->names[h].iid;
		h = (h + 1) & (pf->names_cap - 1);
	}
	return 0;
}

/* ---- packets ---- */

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* The common packet, encoded straight into the output buffer: a slice
 * end, or a begin whose name is already interned (iid). */
static void pf_slice_fast(struct perfetto *pf, uint64_t ts, uint64_t track, int type,
		uint64_t iid)
{
	size_t te = 2 + 1 + varint_len(track) + (iid ? 1 + varint_len(iid) : 0);
	size_t pkt = 1 + varint_len(ts) + 2 + 2 + 1 + varint_len(te) + te;
	uint8_t b[64];
	size_t n = 0;
	b[n++] = 0x0a; /* Trace.packet */
	n += varint_put(b + n, pkt);
	b[n++] = 0x40; /* timestamp */
	n += varint_put(b + n, ts);
	b[n++] = 0x50; /* trusted_packet_sequence_id */
	b[n++] = PF_SEQ;
	b[n++] = 0x68; /* sequence_flags */
	b[n++] = 2;    /* SEQ_NEEDS_INCREMENTAL_STATE */
	b[n++] = 0x5a; /* track_event */
	n += varint_put(b + n, te);
	b[n++] = 0x48; /* type */
	b[n++] = (uint8_t) type;
	b[n++] = 0x58; /* track_uuid */
	n += varint_put(b + n, track);
	if (iid) {
		b[n++] = 0x50; /* name_iid */
		n += varint_put(b + n, iid);
	}
	pf_write(pf, b, n);
}

static int pf_slice(struct perfetto *pf, int64_t ts, uint64_t track, int type, const char *name)
{
	struct pbuf *p = &pf->pkt, *m = &pf->msg, *s = &pf->sub;
	int fresh = 0;
	uint64_t iid = 0;
	if (type == SLICE_BEGIN)
		iid = intern(pf, name, &fresh);
	if (type == SLICE_END || (iid != 0 && !fresh)) {
		pf_slice_fast(pf, (uint64_t) (ts < 0 ? 0 : ts), track, type, iid);
		return 0;
	}
	p->len = m->len = s->len = 0;
	int r = pb_uint(p, 8, (uint64_t) (ts < 0 ? 0 : ts));
	r |= pb_uint(p, 10, PF_SEQ);
	r |= pb_uint(p, 13, 2); /* SEQ_NEEDS_INCREMENTAL_STATE */
	if (fresh) {
		r |= pb_uint(s, 1, iid);
		r |= pb_str(s, 2, name);
		r |= pb_bytes(m, 2, s->p, s->len);
		r |= pb_bytes(p, 12, m->p, m->len);
		m->len = 0;
	}
	r |= pb_uint(m, 9, (uint64_t) type);
	r |= pb_uint(m, 11, track);
	if (type == SLICE_BEGIN) {
		if (iid != 0)
			r |= pb_uint(m, 10, iid);
		else
			r |= pb_str(m, 23, name);
	}
	r |= pb_bytes(p, 11, m->p, m->len);
	if (r != 0)
		return -1;
	pf_packet(pf);
	return 0;
}

/* A track descriptor: kind 0 generic, 1 process, 2 thread, 3 counter. */
static int pf_track(struct perfetto *pf, uint64_t uuid, uint64_t parent, const char *name,
		int kind, int pid, int tid, int first)
{
	struct pbuf *p = &pf->pkt, *m = &pf->msg, *s = &pf->sub;
	p->len = m->len = s->len = 0;
	int r = pb_uint(p, 10, PF_SEQ);
	if (first)
		r |= pb_uint(p, 13, 1); /* SEQ_INCREMENTAL_STATE_CLEARED */
	r |= pb_uint(m, 1, uuid);
	if (parent != 0)
		r |= pb_uint(m, 5, parent);
	if (kind == 1) {
		r |= pb_uint(s, 1, (uint64_t) (int64_t) pid);
		r |= pb_str(s, 6, name);
		r |= pb_bytes(m, 3, s->p, s->len);
	} else if (kind == 2) {
		r |= pb_uint(s, 1, (uint64_t) (int64_t) pid);
		r |= pb_uint(s, 2, (uint64_t) (int64_t) tid);
		r |= pb_str(s, 5, name);
		r |= pb_bytes(m, 4, s->p, s->len);
	} else {
		r |= pb_str(m, 2, name);
		if (kind == 3)
			r |= pb_bytes(m, 8, "", 0);
	}
	r |= pb_bytes(p, 60, m->p, m->len);
	if (r != 0)
		return -1;
	pf_packet(pf);
	return 0;
}

/* A COUNTER event: value on a counter track. */
static int pf_counter(struct perfetto *pf, int64_t ts, uint64_t track, int64_t value)
{
	struct pbuf *p = &pf->pkt, *m = &pf->msg;
	p->len = m->len = 0;
	int r = pb_uint(p, 8, (uint64_t) (ts < 0 ? 0 : ts));
	r |= pb_uint(p, 10, PF_SEQ);
	r |= pb_uint(m, 9, COUNTER);
	r |= pb_uint(m, 11, track);
	r |= pb_uint(m, 30, (uint64_t) value);
	r |= pb_bytes(p, 11, m->p, m->len);
	if (r != 0)
		return -1;
	pf_packet(pf);
	return 0;
}

/* ---- records ---- */

static uint64_t thread_uuid(const struct perfetto *pf, size_t t)
{
	return pf->uuid_thread + t;
}

static uint64_t chan_uuid(const struct perfetto *pf, size_t t, size_t ch)
{
	return pf->uuid_chan + t * pf->nchans + ch;
}

static const char *value_name(const struct emu_chan_info *c, int64_t v, char *buf, size_t len)
{
	for (size_t i = 0; i < c->nvalues; i++) {
		if (c->values != NULL && c->values[i].value == v)
			return c->values[i].label;
		if (c->mvalues != NULL && c->mvalues[i].value == v)
			return c->mvalues[i].label;
	}
	snprintf(buf, len, "%" PRId64, v);
	return buf;
}

/* The track name of a channel: ovni's (flush, marks) by their PCF label,
 * the others by model and channel (counters: model and counter name). */
static const char *chan_name(const struct emu_chan_info *c, char *buf, size_t len)
{
	if (c->model != NULL && strcmp(c->model, "ovni") == 0 && c->thread_label != NULL)
		return c->thread_label;
	snprintf(buf, len, "%s %s", c->model ? c->model : "?",
			c->counter >= 0 && c->thread_label ? c->thread_label : c->name);
	return buf;
}

static int chan_track(struct perfetto *pf, size_t t, size_t ch)
{
	size_t k = t * pf->nchans + ch;
	if (pf->declared[k])
		return 0;
	pf->declared[k] = 1;
	const struct emu_chan_info *c = emu_chan_at(pf->emu, ch);
	char buf[2 * EMU_LABEL_MAX + 128];
	return pf_track(pf, chan_uuid(pf, t, ch), thread_uuid(pf, t), chan_name(c, buf, sizeof buf),
			pf->mode[ch] == MODE_COUNTER || pf->mode[ch] == MODE_NUMBERS ? 3 : 0, 0, 0, 0);
}

/* A slice event of a task type track, kept for close. */
static int side_slice(struct perfetto *pf, int64_t ts, uint64_t track, int type, size_t ch,
		int64_t value)
{
	struct side_rec s = { ts, track, value, (int32_t) ch, type };
	if (fwrite(&s, sizeof s, 1, pf->side) != 1 && !pf->werr)
		pf->werr = errno ? errno : EIO;
	return 0;
}

static uint64_t ctask_uuid(const struct perfetto *pf, size_t c, size_t k)
{
	return pf->uuid_ctask + c * pf->ntask + k;
}

/* The CPU task track of CPU c, task channel k: now showing the task type
 * of its running thread (closes the open slice, opens the new one). */
static int cpu_task(struct perfetto *pf, int64_t ts, size_t c, size_t k)
{
	size_t i = c * pf->ntask + k;
	int64_t t = pf->rsel[c];
	size_t ti = t >= 0 ? (size_t) t * pf->ntask + k : 0;
	int has = t >= 0 && pf->thas[ti];
	int64_t v = has ? pf->tcur[ti] : 0;
	uint64_t u = ctask_uuid(pf, c, k);
	if (pf->chas[i])
		side_slice(pf, ts, u, SLICE_END, pf->task_chan[k], pf->copen[i]);
	pf->copen[i] = v;
	pf->chas[i] = (uint8_t) has;
	if (!has)
		return 0;
	if (!pf->cdeclared[i]) {
		const struct emu_chan_info *ci = emu_chan_at(pf->emu, pf->task_chan[k]);
		char buf[2 * EMU_LABEL_MAX + 128];
		pf->cdeclared[i] = 1;
		if (pf_track(pf, u, pf->uuid_cpu + c, chan_name(ci, buf, sizeof buf), 0, 0, 0, 0) != 0)
			return -1;
	}
	return side_slice(pf, ts, u, SLICE_BEGIN, pf->task_chan[k], v);
}

static int slice(struct perfetto *pf, int dyn, int64_t ts, uint64_t u, int type, size_t ch,
		int64_t v)
{
	if (dyn)
		return side_slice(pf, ts, u, type, ch, v);
	char buf[32];
	return pf_slice(pf, ts, u, type,
			type == SLICE_BEGIN ? value_name(emu_chan_at(pf->emu, ch), v, buf, sizeof buf) : NULL);
}

static int raw_rec(struct perfetto *pf, int64_t ts, const struct emu_rec *r)
{
	const struct emu_cat_entry *ce = emu_cat_of_raw(pf->emu, r);
	if (ce == NULL || ce->chan < 0)
		return 0;
	size_t ch = (size_t) ce->chan;
	size_t t = r->row;
	size_t k = t * pf->nchans + ch;
	int mode = pf->mode[ch], dyn = mode == MODE_DYN;
	if (mode == MODE_SKIP || t >= pf->sys->nthreads)
		return 0;
	if (chan_track(pf, t, ch) != 0)
		return -1;
	uint64_t u = chan_uuid(pf, t, ch);
	if (mode == MODE_COUNTER)
		return r->kind == EMU_REC_RAW_SET && !r->isnull ? pf_counter(pf, ts, u, r->value) : 0;
	if (mode == MODE_NUMBERS)
		return r->kind == EMU_REC_RAW_SET ? pf_counter(pf, ts, u, r->isnull ? 0 : r->value) : 0;
	switch (r->kind) {
	case EMU_REC_RAW_SET:
		if (pf->depth[k] > 0) {
			if (slice(pf, dyn, ts, u, SLICE_END, ch, 0) != 0)
				return -1;
			pf->depth[k] = 0;
		}
		if (!r->isnull) {
			if (slice(pf, dyn, ts, u, SLICE_BEGIN, ch, r->value) != 0)
				return -1;
			pf->depth[k] = 1;
		}
		if (pf->task_of_chan[ch] >= 0) {
			size_t tk = (size_t) pf->task_of_chan[ch];
			pf->tcur[t * pf->ntask + tk] = r->isnull ? 0 : r->value;
			pf->thas[t * pf->ntask + tk] = !r->isnull;
			if (pf->cpu_of[t] >= 0)
				return cpu_task(pf, ts, (size_t) pf->cpu_of[t], tk);
		}
		return 0;
	case EMU_REC_RAW_PUSH:
		pf->depth[k]++;
		return slice(pf, dyn, ts, u, SLICE_BEGIN, ch, r->value);
	default:
		if (pf->depth[k] == 0)
			return 0;
		pf->depth[k]--;
		return slice(pf, dyn, ts, u, SLICE_END, ch, 0);
	}
}

/* CPU c's running thread is now t (-1: none). */
static int rsel_rec(struct perfetto *pf, int64_t ts, size_t c, int64_t t)
{
	int64_t old = pf->rsel[c];
	if (old >= 0 && pf->cpu_of[old] == (int64_t) c)
		pf->cpu_of[old] = -1;
	pf->rsel[c] = t;
	if (t >= 0)
		pf->cpu_of[t] = (int64_t) c;
	int r = 0;
	for (size_t k = 0; k < pf->ntask; k++)
		r |= cpu_task(pf, ts, c, k);
	return r;
}

/* layer=shown: a record of the thread view of a model channel, drawn as
 * the raw channel's set would be (0, the view's null, closes the slice). */
static int shown_rec(struct perfetto *pf, const struct emu_prv_rec *x)
{
	struct emu_rec r = { x->time, x->value, x->row, x->chan, EMU_REC_RAW_SET, x->value == 0 };
	if (x->time > pf->last_ts)
		pf->last_ts = x->time;
	return raw_rec(pf, x->time, &r);
}

/* A lost interval of a thread begins or ends (a lost record): a slice
 * "lost events" on the thread's track. */
static int lost_rec(struct perfetto *pf, const struct emu_lost_rec *l)
{
	size_t t = l->thread;
	int begin = l->phase == EMU_LOST_BEGIN;
	int64_t ts = begin ? l->begin : l->end;
	if (t >= pf->sys->nthreads || begin == pf->lost_open[t])
		return 0;
	pf->lost_open[t] = (uint8_t) begin;
	if (ts > pf->last_ts)
		pf->last_ts = ts;
	return pf_slice(pf, ts, thread_uuid(pf, t), begin ? SLICE_BEGIN : SLICE_END,
			begin ? "lost events" : NULL);
}

/* A thread view record: a thread's state (its slice on the thread's track),
 * or with layer=shown a model channel's value. */
static int thread_rec(struct perfetto *pf, const struct emu_prv_rec *x)
{
	int r = 0;
	if (x->chan != pf->state_id)
		return pf->shown ? shown_rec(pf, x) : 0;
	size_t t = x->row;
	uint64_t u = thread_uuid(pf, t);
	if (pf->tstate[t] >= 0)
		r |= pf_slice(pf, x->time, u, SLICE_END, NULL);
	pf->tstate[t] = -1;
	if (x->value != EMU_ST_DEAD && x->value > 0 && x->value < (int64_t) pf->state->nvalues) {
		r |= pf_slice(pf, x->time, u, SLICE_BEGIN, pf->state->values[x->value].label);
		pf->tstate[t] = (int8_t) x->value;
	}
	if (x->time > pf->last_ts)
		pf->last_ts = x->time;
	return r;
}

/* An internal record: a CPU's running thread (its slice on the CPU's
 * track), or a raw channel's operation (layer=raw). */
static int internal_rec(struct perfetto *pf, const struct emu_rec *x)
{
	int r = 0;
	if (x->time > pf->last_ts)
		pf->last_ts = x->time;
	if (x->kind == EMU_REC_RSEL) {
		uint64_t u = pf->uuid_cpu + x->row;
		if (pf->cpu_open[x->row])
			r |= pf_slice(pf, x->time, u, SLICE_END, NULL);
		pf->cpu_open[x->row] = 0;
		if (x->value >= 0) {
			r |= pf_slice(pf, x->time, u, SLICE_BEGIN, pf->sys->threads[x->value].label);
			pf->cpu_open[x->row] = 1;
		}
		if (x->value < (int64_t) pf->sys->nthreads)
			r |= rsel_rec(pf, x->time, x->row, x->value);
	} else if (x->kind >= EMU_REC_RAW_SET && !pf->shown) {
		r |= raw_rec(pf, x->time, x);
	}
	return r;
}

/* The time of the thread stream's lost record l: its begin or end. */
static int64_t lost_ts(const struct emu_lost_rec *l)
{
	return l->phase == EMU_LOST_BEGIN ? l->begin : l->end;
}

/* The file is a function of the records in time order, not of where the
 * engine cuts its batches (weft emu -j hands the workers' merged records
 * in batches of its own: docs/emu.md, PARALLEL). Two streams: the thread
 * view's records with the lost records among them (by at[0]), and the
 * internal records (the CPUs' running threads, the raw channels); each
 * record gets a key, its time (a lost record: its begin or end), raised to
 * the key before it in its stream (so a stream's keys never fall), and
 * they are written in the order of the keys, the thread stream's first at
 * equal keys, each stream in its own order. The records of a batch come
 * after those of the batches before (none below their largest key), so a
 * record is written once none to come can precede it: a thread stream's
 * record at once (the internal records to come have its key or a larger
 * one), an internal record once a larger key is met; those at the largest
 * key are held (pf->iq) until the next batch or the end. */
static int perfetto_records(void *self, const struct emu_batch *b, char *err, size_t errlen)
{
	struct perfetto *pf = self;
	const struct emu_prv_rec *tv = b->prv[EMU_FILE_THREAD];
	const struct emu_rec *in = b->internal;
	size_t nt = b->nprv[EMU_FILE_THREAD], nl = b->nlost, ni = b->ninternal;
	/* the largest key of either stream after this batch */
	int64_t tk = pf->tkey, ik = pf->ikey;
	for (size_t i = 0; i < nt; i++)
		tk = tv[i].time > tk ? tv[i].time : tk;
	for (size_t j = 0; j < nl; j++)
		tk = lost_ts(&b->lost[j]) > tk ? lost_ts(&b->lost[j]) : tk;
	for (size_t k = 0; k < ni; k++)
		ik = in[k].time > ik ? in[k].time : ik;
	int64_t bound = tk > ik ? tk : ik;
	/* i, j: the thread view's and lost records taken; q, k: the held and
	 * the batch's internal records taken; tcur, icur: the keys before */
	size_t i = 0, j = 0, q = 0, k = 0;
	int64_t tcur = pf->tkey, icur = pf->ikey;
	int r = 0;
	while (r == 0) {
		int lost = j < nl && (i == nt || b->lost[j].at[0] <= i);
		int has_t = lost || i < nt;
		int64_t kt = 0, ki = 0;
		if (has_t) {
			int64_t ts = lost ? lost_ts(&b->lost[j]) : tv[i].time;
			kt = ts > tcur ? ts : tcur;
		}
		int has_i = q < pf->niq || k < ni;
		if (q < pf->niq)
			ki = pf->iq[q].key;
		else if (k < ni)
			ki = in[k].time > icur ? in[k].time : icur;
		if (has_t && (!has_i || kt <= ki)) {
			tcur = kt;
			r |= lost ? lost_rec(pf, &b->lost[j++]) : thread_rec(pf, &tv[i++]);
		} else if (has_i && (has_t || ki < bound)) {
			if (q < pf->niq) {
				r |= internal_rec(pf, &pf->iq[q++].rec);
			} else {
				icur = ki;
				r |= internal_rec(pf, &in[k++]);
			}
		} else {
			break;
		}
	}
	/* the internal records left (at the largest key) are held */
	if (r == 0 && q > 0) {
		memmove(pf->iq, pf->iq + q, (pf->niq - q) * sizeof *pf->iq);
		pf->niq -= q;
	}
	if (r == 0 && k < ni) {
		if (pf->niq + ni - k > pf->iqcap) {
			size_t cap = pf->iqcap ? pf->iqcap : 256;
			while (cap < pf->niq + ni - k)
				cap *= 2;
			struct iq_item *n = realloc(pf->iq, cap * sizeof *n);
			if (n == NULL)
				r = -1;
			else {
				pf->iq = n;
				pf->iqcap = cap;
			}
		}
		for (; r == 0 && k < ni; k++) {
			icur = in[k].time > icur ? in[k].time : icur;
			pf->iq[pf->niq].key = icur;
			pf->iq[pf->niq++].rec = in[k];
		}
	}
	pf->tkey = tk;
	pf->ikey = ik;
	if (r != 0) {
		snprintf(err, errlen, "%s: out of memory", pf->path);
		return -1;
	}
	if (pf->werr) {
		snprintf(err, errlen, "cannot write %s: %s", pf->path, strerror(pf->werr));
		return -1;
	}
	return 0;
}

static void pf_free(struct perfetto *pf)
{
	for (size_t i = 0; i < pf->names_cap; i++)
		free(pf->names[i].name);
	free(pf->names);
	free(pf->path);
	free(pf->buf);
	free(pf->pkt.p);
	free(pf->msg.p);
	free(pf->sub.p);
	free(pf->tstate);
	free(pf->lost_open);
	free(pf->cpu_open);
	free(pf->depth);
	free(pf->declared);
	free(pf->mode);
	free(pf->task_of_chan);
	free(pf->task_chan);
	free(pf->tcur);
	free(pf->copen);
	free(pf->thas);
	free(pf->chas);
	free(pf->cdeclared);
	free(pf->rsel);
	free(pf->cpu_of);
	free(pf->iq);
	if (pf->side != NULL)
		fclose(pf->side);
	if (pf->f != NULL)
		fclose(pf->f);
	out_file_discard(&pf->file);
	free(pf);
}

static int cmp_dyn_name(const void *a, const void *b)
{
	const struct dyn_name *x = a, *y = b;
	return x->value < y->value ? -1 : x->value > y->value;
}

/* The label of a task type channel's value: its task type, else a static
 * value label, else "<channel> <value>". */
static const char *dyn_label(const struct emu_chan_info *c, const struct dyn_name *names,
		size_t n, int64_t v, char *buf, size_t len)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (names[mid].value == v)
			return names[mid].label;
		if (names[mid].value < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = 0; i < c->nvalues && c->values != NULL; i++)
		if (c->values[i].value == v)
			return c->values[i].label;
	snprintf(buf, len, "%s %" PRId64, c->name, v);
	return buf;
}

/* Writes the task type slices kept in the side file, named now that the
 * task types are known. */
static int side_replay(struct perfetto *pf)
{
	if (fflush(pf->side) != 0 || fseek(pf->side, 0, SEEK_SET) != 0) {
		if (!pf->werr)
			pf->werr = errno ? errno : EIO;
		return 0;
	}
	/* Per task type channel, its task types sorted by value. */
	struct dyn_name **names = calloc(pf->nchans + 1, sizeof *names);
	size_t *nn = calloc(pf->nchans + 1, sizeof *nn);
	int r = names == NULL || nn == NULL ? -1 : 0;
	for (size_t ch = 0; ch < pf->nchans && r == 0; ch++) {
		const struct emu_chan_info *c = emu_chan_at(pf->emu, ch);
		if (pf->mode[ch] != MODE_DYN || c->dyn == NULL || c->ndyn == 0)
			continue;
		names[ch] = malloc(c->ndyn * sizeof **names);
		if (names[ch] == NULL) {
			r = -1;
			break;
		}
		for (size_t i = 0; i < c->ndyn; i++)
			names[ch][i] = (struct dyn_name) { c->dyn[i].value, c->dyn[i].label };
		nn[ch] = c->ndyn;
		qsort(names[ch], nn[ch], sizeof **names, cmp_dyn_name);
	}
	struct side_rec recs[512];
	size_t n;
	while (r == 0 && (n = fread(recs, sizeof *recs, 512, pf->side)) > 0) {
		for (size_t i = 0; i < n && r == 0; i++) {
			const struct side_rec *s = &recs[i];
			char buf[EMU_LABEL_MAX + 32];
			const char *name = NULL;
			if (s->type == SLICE_BEGIN) {
				size_t ch = (size_t) s->chan;
				name = dyn_label(emu_chan_at(pf->emu, ch), names[ch], nn[ch], s->value, buf,
						sizeof buf);
			}
			r |= pf_slice(pf, s->ts, s->track, s->type, name);
		}
	}
	if (ferror(pf->side) && !pf->werr)
		pf->werr = errno ? errno : EIO;
	for (size_t ch = 0; names != NULL && ch < pf->nchans; ch++)
		free(names[ch]);
	free(names);
	free(nn);
	return r;
}

static int perfetto_close(struct out *o, int64_t duration, char *err, size_t errlen)
{
	struct perfetto *pf = (struct perfetto *) o;
	int r = 0;
	/* the internal records held first */
	for (size_t q = 0; q < pf->niq; q++)
		r |= internal_rec(pf, &pf->iq[q].rec);
	pf->niq = 0;
	int64_t ts = duration > pf->last_ts ? duration : pf->last_ts;
	/* Close what is still open, innermost first; the task type slices
	 * (side file) then come with their labels. */
	for (size_t t = 0; t < pf->sys->nthreads; t++) {
		for (size_t ch = 0; ch < pf->nchans; ch++)
			for (uint32_t d = pf->depth[t * pf->nchans + ch]; d > 0; d--)
				r |= slice(pf, pf->mode[ch] == MODE_DYN, ts, chan_uuid(pf, t, ch), SLICE_END,
						ch, 0);
		if (pf->tstate[t] >= 0)
			r |= pf_slice(pf, ts, thread_uuid(pf, t), SLICE_END, NULL);
		if (pf->lost_open[t])
			r |= pf_slice(pf, ts, thread_uuid(pf, t), SLICE_END, NULL);
	}
	for (size_t c = 0; c < pf->sys->ncpus; c++)
		for (size_t k = 0; k < pf->ntask; k++)
			if (pf->chas[c * pf->ntask + k])
				r |= side_slice(pf, ts, ctask_uuid(pf, c, k), SLICE_END, pf->task_chan[k], 0);
	if (pf->side != NULL)
		r |= side_replay(pf);
	for (size_t c = 0; c < pf->sys->ncpus; c++)
		if (pf->cpu_open[c])
			r |= pf_slice(pf, ts, pf->uuid_cpu + c, SLICE_END, NULL);
	if (pf->len > 0 && fwrite(pf->buf, 1, pf->len, pf->f) != pf->len && !pf->werr)
		pf->werr = errno ? errno : EIO;
	if (fclose(pf->f) != 0 && !pf->werr)
		pf->werr = errno ? errno : EIO;
	pf->f = NULL;
	if (pf->werr) {
		snprintf(err, errlen, "cannot write %s: %s", pf->path, strerror(pf->werr));
		r = -1;
	} else if (r != 0) {
		snprintf(err, errlen, "%s: out of memory", pf->path);
	} else if (out_file_check(&pf->file, err, errlen) != 0) {
		r = -1;
	}
	return r ? -1 : 0;
}

static int perfetto_commit(struct out *o, char *err, size_t errlen)
{
	struct perfetto *pf = (struct perfetto *) o;
	int r = out_file_commit(&pf->file, err, errlen);
	pf_free(pf);
	return r;
}

static void perfetto_discard(struct out *o)
{
	pf_free((struct perfetto *) o);
}

static const struct out_ops perfetto_ops = {
	.name = "perfetto",
	.internal = 1,
	.lost = 1, /* the lost intervals' slices from the lost records */
	.records = perfetto_records,
	.close = perfetto_close,
	.commit = perfetto_commit,
	.discard = perfetto_discard,
};

/* The catalogue entry of the engine's channel i. */
static const struct emu_cat_entry *chan_entry(const struct emu *emu, size_t i)
{
	for (size_t k = 0; k < emu_cat_count(emu); k++)
		if (emu_cat_at(emu, k)->chan == (int) i)
			return emu_cat_at(emu, k);
	return NULL;
}

struct out *out_perfetto_open(const char *dir, const struct emu *emu,
		const struct out_params *params, char *err, size_t errlen)
{
	struct perfetto *pf = calloc(1, sizeof *pf);
	if (pf == NULL)
		goto oom;
	pf->base.ops = &perfetto_ops;
	out_file_init(&pf->file);
	pf->emu = emu;
	pf->sys = emu_system(emu);
	pf->nchans = emu_nchans(emu);
	pf->next_iid = 1;
	pf->state = emu_cat_builtin(emu, EMU_BI_STATE);
	pf->state_id = (uint32_t) pf->state->id;
	pf->shown = strcmp(out_params_get(params, "layer"), "shown") == 0;
	size_t n = strlen(dir) + 32;
	pf->path = malloc(n);
	pf->buf = malloc(PF_BUF);
	if (pf->path == NULL || pf->buf == NULL)
		goto oom;
	snprintf(pf->path, n, "%s/perfetto.pftrace", dir);
	size_t nt = pf->sys->nthreads, nc = pf->sys->ncpus;
	pf->tstate = malloc(nt + 1);
	pf->lost_open = calloc(nt + 1, 1);
	pf->cpu_open = calloc(nc + 1, 1);
	pf->depth = calloc(nt * pf->nchans + 1, sizeof *pf->depth);
	pf->declared = calloc(nt * pf->nchans + 1, 1);
	pf->mode = calloc(pf->nchans + 1, 1);
	pf->task_of_chan = malloc((pf->nchans + 1) * sizeof *pf->task_of_chan);
	pf->task_chan = calloc(pf->nchans + 1, sizeof *pf->task_chan);
	pf->rsel = malloc((nc + 1) * sizeof *pf->rsel);
	pf->cpu_of = malloc((nt + 1) * sizeof *pf->cpu_of);
	if (!pf->tstate || !pf->lost_open || !pf->cpu_open || !pf->depth || !pf->declared ||
			!pf->mode || !pf->task_of_chan || !pf->task_chan || !pf->rsel || !pf->cpu_of)
		goto oom;
	int has_dyn = 0;
	for (size_t i = 0; i < pf->nchans; i++) {
		const struct emu_chan_info *c = emu_chan_at(emu, i);
		pf->task_of_chan[i] = -1;
		/* what the catalogue says Perfetto draws */
		const struct emu_cat_entry *ce = chan_entry(emu, i);
		if (ce == NULL || ce->track == EMU_CAT_TRACK_NONE)
			pf->mode[i] = MODE_SKIP;
		else if (ce->track == EMU_CAT_TRACK_COUNTER)
			pf->mode[i] = MODE_COUNTER;
		else if (ce->kind == EMU_CAT_MARK && !ce->stack && ce->nvalues == 0)
			pf->mode[i] = MODE_NUMBERS; /* numbers, not names: "1000" is no slice */
		else if (c->dyn_values)
			pf->mode[i] = MODE_DYN;
		else
			pf->mode[i] = MODE_SLICE;
		if (pf->mode[i] == MODE_DYN) {
			has_dyn = 1;
			if (!c->stack) {
				pf->task_of_chan[i] = (int) pf->ntask;
				pf->task_chan[pf->ntask++] = i;
			}
		}
	}
	pf->tcur = malloc((nt * pf->ntask + 1) * sizeof *pf->tcur);
	pf->copen = malloc((nc * pf->ntask + 1) * sizeof *pf->copen);
	pf->thas = calloc(nt * pf->ntask + 1, 1);
	pf->chas = calloc(nc * pf->ntask + 1, 1);
	pf->cdeclared = calloc(nc * pf->ntask + 1, 1);
	if (!pf->tcur || !pf->copen || !pf->thas || !pf->chas || !pf->cdeclared)
		goto oom;
	for (size_t i = 0; i < nc; i++)
		pf->rsel[i] = -1;
	for (size_t i = 0; i < nt; i++)
		pf->cpu_of[i] = -1;
	memset(pf->tstate, -1, nt + 1);
	pf->tkey = pf->ikey = INT64_MIN;
	pf->uuid_proc = 1;
	pf->uuid_thread = pf->uuid_proc + pf->sys->nprocs;
	pf->uuid_cpu = pf->uuid_thread + nt;
	pf->uuid_chan = pf->uuid_cpu + nc;
	pf->uuid_ctask = pf->uuid_chan + nt * pf->nchans;
	if (out_file_open(&pf->file, dir, "perfetto.pftrace", err, errlen) != 0 ||
			(pf->f = out_file_stream(&pf->file, "wb", err, errlen)) == NULL) {
		pf_free(pf);
		return NULL;
	}
	if (has_dyn) {
		/* The side file: beside the output, removed at once. */
		int fd = out_file_scratch(dir, "perfetto.pftrace.tasks", err, errlen);
		if (fd < 0 || (pf->side = fdopen(fd, "w+b")) == NULL) {
			if (fd >= 0) {
				snprintf(err, errlen, "cannot create the side file of %s: %s", pf->path,
						strerror(errno));
				close(fd);
			}
			pf_free(pf);
			return NULL;
		}
	}
	int r = 0;
	char name[EMU_LABEL_MAX + 64];
	for (size_t p = 0; p < pf->sys->nprocs; p++) {
		const struct emu_proc *P = &pf->sys->procs[p];
		snprintf(name, sizeof name, "loom %s, pid %d", pf->sys->looms[P->loom].name, P->pid);
		r |= pf_track(pf, pf->uuid_proc + p, 0, name, 1, P->pid, 0, p == 0);
	}
	for (size_t t = 0; t < nt; t++) {
		const struct emu_sys_thread *T = &pf->sys->threads[t];
		r |= pf_track(pf, thread_uuid(pf, t), pf->uuid_proc + T->proc, T->label, 2,
				pf->sys->procs[T->proc].pid, T->tid, 0);
	}
	for (size_t c = 0; c < nc; c++) {
		const char *l = pf->sys->cpus[c].label;
		r |= pf_track(pf, pf->uuid_cpu + c, 0, l[0] == ' ' ? l + 1 : l, 0, 0, 0,
				pf->sys->nprocs == 0 && c == 0);
	}
	if (pf->sys->nprocs == 0 && nc == 0) {
		/* An empty trace still opens its sequence. */
		pf->pkt.len = 0;
		r |= pb_uint(&pf->pkt, 10, PF_SEQ) | pb_uint(&pf->pkt, 13, 1);
		pf_packet(pf);
	}
	if (r != 0)
		goto oom;
	return &pf->base;
oom:
	snprintf(err, errlen, "out of memory opening the Perfetto output");
	if (pf != NULL)
		pf_free(pf);
	return NULL;
}
