/* SPDX-License-Identifier: MIT */
/*
 * loss.c - what a stream says it lost: the weft.* keys of stream.json that
 * libovni writes when events were dropped (weft.lost_events), when the run
 * was cut by WEFT_CRASH=flush (weft.cut), in flight-recorder mode
 * (weft.ring), by a filter at the source (weft.filter, weft.filtered) and
 * in the perturbation mode (weft.output, weft.unwritten_bytes). The keys are defined in src/format/obs_format.h; this file
 * checks them and turns their raw clocks into trace clocks.
 *
 * Each key is checked as strictly as ovni's own: a malformed value is a
 * breach (an error in strict mode; in lenient mode a warning, and the key
 * is left out), naming the file and the key.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_internal.h"

/* A non-negative integer that fits an int64: 1, else 0. */
static int get_count(const json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return 0;
	*out = (uint64_t) json_integer_value(v);
	return 1;
}

static int get_clock(const json_t *v, int64_t *out)
{
	if (!json_is_integer(v))
		return 0;
	*out = (int64_t) json_integer_value(v);
	return 1;
}

static int parse_cut(json_t *cut, const char *name, struct weft_diag *d, struct weft_meta *m)
{
	if (!json_is_object(cut))
		return weft_breach(d, "%s: weft.cut is not an object", name);
	json_t *by = json_object_get(cut, WEFT_KEY_CUT_BY);
	json_t *sig = json_object_get(cut, WEFT_KEY_CUT_SIGNAL);
	json_t *clk = json_object_get(cut, WEFT_KEY_CUT_CLOCK);
	const char *bys = json_is_string(by) ? json_string_value(by) : "";
	int kind = strcmp(bys, WEFT_CUT_BY_SIGNAL) == 0 ? WEFT_END_SIGNAL
		: strcmp(bys, WEFT_CUT_BY_EXIT) == 0 ? WEFT_END_EXIT : 0;
	if (kind == 0)
		return weft_breach(d, "%s: weft.cut.by is not \"" WEFT_CUT_BY_SIGNAL "\" nor \""
				WEFT_CUT_BY_EXIT "\"", name);
	uint64_t signo = 0;
	if (kind == WEFT_END_SIGNAL && (!get_count(sig, &signo) || signo == 0 || signo > 1024))
		return weft_breach(d, "%s: weft.cut.signal is missing or not a signal number",
				name);
	if (kind == WEFT_END_EXIT && sig != NULL)
		return weft_breach(d, "%s: weft.cut.signal is set but weft.cut.by is \""
				WEFT_CUT_BY_EXIT "\"", name);
	int64_t c;
	if (!get_clock(clk, &c))
		return weft_breach(d, "%s: weft.cut.clock is missing or not an integer", name);
	m->end_by = kind;
	m->end_signal = (int) signo;
	m->end_clock = c;
	return 0;
}

/* One entry of weft.ring.lost: [C0, C1, n, b] or [C0, C1, n, b, offset]. */
static int parse_run(json_t *e, size_t k, const char *name, struct weft_diag *d,
		struct weft_lost_run *r)
{
	size_t n = json_is_array(e) ? json_array_size(e) : 0;
	if (n != 4 && n != 5)
		return weft_breach(d, "%s: weft.ring.lost[%zu] is not an array of 4 or 5 integers "
				"[first clock, last clock, events, bytes(, offset)]", name, k);
	if (!get_clock(json_array_get(e, 0), &r->first) || !get_clock(json_array_get(e, 1), &r->last)
			|| !get_count(json_array_get(e, 2), &r->events)
			|| !get_count(json_array_get(e, 3), &r->bytes)
			|| (n == 5 && !get_count(json_array_get(e, 4), &r->offset)))
		return weft_breach(d, "%s: weft.ring.lost[%zu] holds a value that is not a "
				"non-negative integer (or a clock)", name, k);
	if (r->first > r->last)
		return weft_breach(d, "%s: weft.ring.lost[%zu]: first clock %" PRId64 " is after "
				"last clock %" PRId64, name, k, r->first, r->last);
	if (r->events > UINT64_MAX / WEFT_EV_HEADER_SIZE || r->events == 0 || r->bytes < r->events * (uint64_t) WEFT_EV_HEADER_SIZE)
		return weft_breach(d, "%s: weft.ring.lost[%zu]: %" PRIu64 " events cannot take "
				"%" PRIu64 " bytes", name, k, r->events, r->bytes);
	r->has_offset = n == 5;
	return 0;
}

static int parse_ring(json_t *ring, const char *name, struct weft_diag *d, struct weft_meta *m)
{
	if (!json_is_object(ring))
		return weft_breach(d, "%s: weft.ring is not an object", name);
	uint64_t size, nev, nby;
	if (!get_count(json_object_get(ring, WEFT_KEY_RING_SIZE), &size) || size == 0)
		return weft_breach(d, "%s: weft.ring.size is missing or not a positive integer",
				name);
	if (!get_count(json_object_get(ring, WEFT_KEY_RING_LOST_EVENTS), &nev))
		return weft_breach(d, "%s: weft.ring.lost_events is missing or not a non-negative "
				"integer", name);
	if (!get_count(json_object_get(ring, WEFT_KEY_RING_LOST_BYTES), &nby))
		return weft_breach(d, "%s: weft.ring.lost_bytes is missing or not a non-negative "
				"integer", name);
	json_t *lost = json_object_get(ring, WEFT_KEY_RING_LOST);
	if (!json_is_array(lost))
		return weft_breach(d, "%s: weft.ring.lost is missing or not an array", name);
	size_t n = json_array_size(lost);
	if (n > WEFT_RING_MAX_RUNS)
		return weft_breach(d, "%s: weft.ring.lost has %zu entries, more than %d", name, n,
				WEFT_RING_MAX_RUNS);
	struct weft_lost_run *runs = NULL;
	if (n > 0 && (runs = calloc(n, sizeof *runs)) == NULL)
		return weft_fail(d, "%s: out of memory while reading weft.ring", name);
	uint64_t sev = 0, sby = 0;
	uint64_t prev_off = 0;
	for (size_t k = 0; k < n; k++) {
		if (parse_run(json_array_get(lost, k), k, name, d, &runs[k]) < 0) {
			free(runs);
			return -1;
		}
		if (runs[k].has_offset && (runs[k].offset < prev_off
					|| (k > 0 && !runs[k - 1].has_offset))) {
			uint64_t off = runs[k].offset;
			free(runs);
			return weft_breach(d, "%s: weft.ring.lost[%zu]: offset %" PRIu64 " goes back",
					name, k, off);
		}
		if (runs[k].has_offset)
			prev_off = runs[k].offset;
		sev += runs[k].events; /* each < 2^63: no wrap over 1024 of them */
		sby += runs[k].bytes;
	}
	if (sev != nev || sby != nby) {
		free(runs);
		return weft_breach(d, "%s: weft.ring.lost adds up to %" PRIu64 " events and %" PRIu64
				" bytes, but weft.ring.lost_events is %" PRIu64 " and "
				"weft.ring.lost_bytes %" PRIu64, name, sev, sby, nev, nby);
	}
	m->ring = 1;
	m->ring_size = size;
	m->ring_lost_events = nev;
	m->ring_lost_bytes = nby;
	m->nruns = n;
	m->runs = runs;
	return 0;
}

/* weft.filter and weft.filtered (both or neither). */
static int parse_filter(json_t *w, const char *name, struct weft_diag *d, struct weft_meta *m)
{
	json_t *f = json_object_get(w, WEFT_KEY_FILTER);
	json_t *n = json_object_get(w, WEFT_KEY_FILTERED);
	if (f == NULL && n == NULL)
		return 0;
	if (!json_is_object(f))
		return weft_breach(d, "%s: weft.filter is missing or not an object (weft.filtered "
				"is set)", name);
	json_t *rules = json_object_get(f, WEFT_KEY_FILTER_RULES);
	json_t *cb = json_object_get(f, WEFT_KEY_FILTER_CALLBACK);
	if (!json_is_string(rules))
		return weft_breach(d, "%s: weft.filter.rules is missing or not a string", name);
	if (!json_is_boolean(cb))
		return weft_breach(d, "%s: weft.filter.callback is missing or not a boolean", name);
	uint64_t count;
	if (!get_count(n, &count))
		return weft_breach(d, "%s: weft.filtered is missing or not a non-negative integer",
				name);
	char *r = strdup(json_string_value(rules));
	if (r == NULL)
		return weft_fail(d, "%s: out of memory while reading weft.filter", name);
	free(m->filter_rules);
	m->filter_rules = r;
	m->has_filter = 1;
	m->filter_callback = json_is_true(cb);
	m->filtered = count;
	return 0;
}

/* weft.output and weft.unwritten_bytes. */
static int parse_output(json_t *w, const char *name, struct weft_diag *d, struct weft_meta *m)
{
	json_t *o = json_object_get(w, WEFT_KEY_OUTPUT);
	json_t *b = json_object_get(w, WEFT_KEY_UNWRITTEN_BYTES);
	if (o == NULL && b == NULL)
		return 0;
	if (!json_is_string(o) || strcmp(json_string_value(o), WEFT_OUTPUT_OFF) != 0)
		return weft_breach(d, "%s: weft.output is missing or not \"" WEFT_OUTPUT_OFF "\"", name);
	if (!get_count(b, &m->unwritten_bytes))
		return weft_breach(d, "%s: weft.unwritten_bytes is missing or not a non-negative "
				"integer", name);
	m->output_off = 1;
	return 0;
}

int weft_meta_parse_loss(json_t *root, const char *name, struct weft_diag *d,
		struct weft_meta *m)
{
	json_t *w = json_object_get(root, WEFT_KEY_WEFT);
	if (w == NULL)
		return 0;
	if (!json_is_object(w))
		return weft_breach(d, "%s: \"weft\" is not an object", name);
	json_t *v = json_object_get(w, WEFT_KEY_LOST_EVENTS);
	if (v != NULL) {
		if (!get_count(v, &m->dropped))
			return weft_breach(d, "%s: weft.lost_events is not a non-negative integer",
					name);
	}
	v = json_object_get(w, WEFT_KEY_CUT);
	if (v != NULL && parse_cut(v, name, d, m) < 0)
		return -1;
	v = json_object_get(w, WEFT_KEY_RING);
	if (v != NULL && parse_ring(v, name, d, m) < 0)
		return -1;
	if (parse_filter(w, name, d, m) < 0 || parse_output(w, name, d, m) < 0)
		return -1;
	v = json_object_get(w, WEFT_KEY_INDEX_AFTER);
	if (v != NULL) {
		if (!get_count(v, &m->index_after))
			return weft_breach(d, "%s: weft.index_after is not a non-negative integer",
					name);
		m->has_index_after = 1;
	}
	return 0;
}

void weft_meta_free_loss(struct weft_meta *m)
{
	free(m->filter_rules);
	m->filter_rules = NULL;
	free(m->runs);
	m->runs = NULL;
	m->nruns = 0;
}

/* raw + off, the sum kept inside int64 (the clocks of a loss are only
 * reported, never ordered by). */
static int64_t to_sclock(int64_t raw, const struct weft_wstream *w)
{
	int64_t s;
	if (w->drift_ppb != 0) {
		if (!weft_clk_drift(raw, w->clkoff, w->drift_t0, w->drift_ppb, &s))
			return raw > w->drift_t0 ? INT64_MAX : INT64_MIN;
		return s;
	}
	if (__builtin_add_overflow(raw, w->clkoff, &s))
		return w->clkoff > 0 ? INT64_MAX : INT64_MIN;
	return s;
}

int weft_stream_loss(const struct weft_trace *t, size_t i, struct weft_loss *out)
{
	if (i >= t->nstreams)
		return 0;
	const struct weft_wstream *s = t->streams[i];
	const struct weft_meta *m = &s->meta;
	if (out != NULL) {
		memset(out, 0, sizeof *out);
		out->end_by = m->end_by;
		out->end_signal = m->end_signal;
		out->end_sclock = to_sclock(m->end_clock, s);
		out->dropped = m->dropped;
		out->ring = m->ring;
		out->ring_size = m->ring_size;
		out->lost_events = m->ring_lost_events;
		out->lost_bytes = m->ring_lost_bytes;
		out->nruns = m->nruns;
		out->filter = m->has_filter;
		out->filter_rules = m->filter_rules != NULL ? m->filter_rules : "";
		out->filter_callback = m->filter_callback;
		out->filtered = m->filtered;
		out->output_off = m->output_off;
		out->unwritten_bytes = m->unwritten_bytes;
	}
	return m->end_by != 0 || m->dropped > 0 || m->ring || m->has_filter || m->output_off;
}

void weft_filter_describe(const struct weft_loss *l, char *buf, size_t n)
{
	const char *r = l->filter && l->filter_rules != NULL ? l->filter_rules : "";
	int cb = l->filter && l->filter_callback;
	if (r[0] != '\0' && cb)
		snprintf(buf, n, "WEFT_FILTER='%s' and the program's filter callback", r);
	else if (r[0] != '\0')
		snprintf(buf, n, "WEFT_FILTER='%s'", r);
	else if (cb)
		snprintf(buf, n, "the program's filter callback");
	else if (n > 0)
		buf[0] = '\0';
}

int weft_stream_lost_run(const struct weft_trace *t, size_t i, size_t k,
		struct weft_lost_run *out)
{
	if (i >= t->nstreams || k >= t->streams[i]->meta.nruns)
		return 0;
	const struct weft_wstream *s = t->streams[i];
	*out = s->meta.runs[k];
	out->first_sclock = to_sclock(out->first, s);
	out->last_sclock = to_sclock(out->last, s);
	return 1;
}

const char *weft_signal_name(int signo)
{
	switch (signo) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGILL: return "SIGILL";
	case SIGFPE: return "SIGFPE";
	case SIGABRT: return "SIGABRT";
	case SIGTERM: return "SIGTERM";
	case SIGINT: return "SIGINT";
	case SIGKILL: return "SIGKILL";
	case SIGUSR1: return "SIGUSR1";
	case SIGUSR2: return "SIGUSR2";
	default: return NULL;
	}
}

void weft_meta_unfinished_why(const struct weft_meta *m, char *buf, size_t n)
{
	const char *sn = weft_signal_name(m->end_signal);
	if (m->end_by == WEFT_END_SIGNAL)
		snprintf(buf, n, "cut by signal %d%s%s%s at clock %" PRId64 " (the process died; "
				"WEFT_CRASH=flush wrote the events buffered before it), so ovni.finished "
				"is missing", m->end_signal, sn ? " (" : "", sn ? sn : "", sn ? ")" : "",
				m->end_clock);
	else if (m->end_by == WEFT_END_EXIT)
		snprintf(buf, n, "cut at exit at clock %" PRId64 " (the process exited without "
				"ovni_proc_fini; WEFT_CRASH=flush wrote the events buffered before "
				"it), so ovni.finished is missing", m->end_clock);
	else
		snprintf(buf, n, "ovni.finished is missing (the thread did not end with "
				"ovni_thread_free)");
}

int weft_stream_unfinished_why(const struct weft_trace *t, size_t i, char *buf, size_t n)
{
	if (i >= t->nstreams || !t->streams[i]->unfinished)
		return 0;
	weft_meta_unfinished_why(&t->streams[i]->meta, buf, n);
	return 1;
}
