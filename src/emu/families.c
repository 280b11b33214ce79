/* SPDX-License-Identifier: MIT */
/*
 * families.c - channel families sized from the trace metadata: the counters
 * a model declares in stream.json (nosv.hwc: {"0": {"name": "..."}, ...}),
 * their channels, and the event that sets them all from a jumbo payload of
 * i64 values. Also the boolean metadata a breakdown view requires.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "emu_internal.h"

#define MAX_COUNTERS 100

/* The JSON value of a dotted key of a thread's stream.json, or NULL. */
json_t *emu_thread_attr(const struct emu *e, size_t t, const char *key)
{
	const struct weft_stream *s = e->sys->threads[t].stream;
	if (s == NULL)
		return NULL;
	int n = weft_stream_attr_json(s, key, NULL, 0);
	if (n <= 0)
		return NULL;
	char *buf = malloc((size_t) n + 1);
	if (buf == NULL)
		return NULL;
	weft_stream_attr_json(s, key, buf, (size_t) n + 1);
	json_t *v = json_loads(buf, JSON_DECODE_ANY, NULL);
	free(buf);
	return v;
}

static int parse_index(const char *k, size_t n, size_t *out)
{
	char *end;
	errno = 0;
	long v = strtol(k, &end, 10);
	if (errno != 0 || end == k || *end != '\0' || v < 0 || v >= MAX_COUNTERS || (size_t) v >= n)
		return -1;
	*out = (size_t) v;
	return 0;
}

int emu_counters_setup(struct emu *e, struct model_rt *m, char *err, size_t errlen)
{
	const char *key = m->desc->counters.metadata;
	size_t ref = SIZE_MAX;
	for (size_t t = 0; t < e->nthreads; t++) {
		json_t *o = emu_thread_attr(e, t, key);
		if (o == NULL)
			continue;
		const char *rel = e->sys->threads[t].relpath;
		if (!json_is_object(o)) {
			snprintf(err, errlen, "%s: %s must be an object of counters", rel, key);
			json_decref(o);
			return -1;
		}
		size_t n = json_object_size(o);
		if (n == 0) {
			json_decref(o);
			continue;
		}
		if (ref == SIZE_MAX) {
			m->ncounters = n;
			m->counter_names = calloc(n, sizeof *m->counter_names);
			if (m->counter_names == NULL) {
				json_decref(o);
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			ref = t;
		} else if (n != m->ncounters) {
			snprintf(err, errlen, "%s: %s declares %zu counters, but %s declares %zu", rel, key,
					n, e->sys->threads[ref].relpath, m->ncounters);
			json_decref(o);
			return -1;
		}
		const char *k;
		json_t *v;
		json_object_foreach(o, k, v) {
			size_t i;
			if (parse_index(k, n, &i) != 0) {
				snprintf(err, errlen, "%s: %s: counter index '%s' must be an integer from 0 to "
						"%zu (the number of counters less one, below %d)", rel, key, k,
						n - 1, MAX_COUNTERS);
				json_decref(o);
				return -1;
			}
			json_t *nm = json_is_object(v) ? json_object_get(v, "name") : NULL;
			if (!json_is_string(nm)) {
				snprintf(err, errlen, "%s: %s.%s needs a string \"name\"", rel, key, k);
				json_decref(o);
				return -1;
			}
			const char *name = json_string_value(nm);
			if (m->counter_names[i] == NULL) {
				if ((m->counter_names[i] = strdup(name)) == NULL) {
					snprintf(err, errlen, "out of memory");
					json_decref(o);
					return -1;
				}
			} else if (strcmp(m->counter_names[i], name) != 0) {
				snprintf(err, errlen, "%s: %s.%s is named \"%s\", but \"%s\" elsewhere", rel, key,
						k, name, m->counter_names[i]);
				json_decref(o);
				return -1;
			}
		}
		json_decref(o);
	}
	return 0;
}

int emu_act_counters(struct emu *e, size_t t, struct model_rt *m)
{
	const struct weft_event *ev = e->ev;
	size_t n = m->ncounters;
	if (n == 0)
		return emu_fail(e, "no counters are declared (%s in the metadata)",
				m->desc->counters.metadata);
	if ((uint64_t) ev->jumbo_size != 8 * (uint64_t) n)
		return emu_fail(e, "%" PRIu32 " bytes of counters, but %zu counters are declared "
				"(%zu bytes)", ev->jumbo_size, n, 8 * n);
	for (size_t i = 0; i < n; i++) {
		int64_t v;
		memcpy(&v, ev->jumbo_data + 8 * i, 8);
		if (emu_raw_write(e, t, m->counter_first + i, EMU_OP_SET, v, 0) != 0)
			return -1;
	}
	return 0;
}
