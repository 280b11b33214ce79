/* SPDX-License-Identifier: MIT */
/*
 * rt_sig.h - checking a stream written while signal handlers emitted: the
 * thread's own events are marks of type RT_SIG_MAIN whose values count
 * 0, 1, 2, ... in order; the handlers' are marks of type RT_SIG_HANDLER,
 * each value at most once. (A jumbo event whose data starts like a mark
 * payload, value then type, counts as such a mark.) Every clock is not older than the one before,
 * OF[ and OF] alternate, and every handler event is either in the stream
 * or counted in weft.lost_events of stream.json.
 */
#ifndef WEFT_TESTS_RT_SIG_H
#define WEFT_TESTS_RT_SIG_H

#include <inttypes.h>
#include <jansson.h>

#include "ovni.h"
#include "rt_test.h"

#define RT_SIG_MAIN 1
#define RT_SIG_HANDLER 2

/* A mark event OM= of a type with a value, as ovni_mark_set writes it. */
static inline void rt_sig_mark_ev(struct ovni_ev *ev, int32_t type, int64_t value, uint64_t clock)
{
	memset(ev, 0, sizeof *ev);
	ovni_ev_set_mcv(ev, "OM=");
	ovni_ev_set_clock(ev, clock);
	uint8_t payload[12];
	memcpy(payload, &value, sizeof value);
	memcpy(payload + sizeof value, &type, sizeof type);
	ovni_payload_add(ev, payload, (int) sizeof payload);
}

struct rt_sig_result {
	uint64_t nmain;      /* main events found */
	uint64_t nhandler;   /* handler events found */
	uint64_t lost;       /* weft.lost_events */
	uint64_t npairs;     /* OF[/OF] pairs */
	uint64_t in_flush;   /* handler events between OF[ and OF] */
	uint64_t nevents;    /* all events */
	char why[256];       /* first problem, "" if none */
};

/* weft.lost_events of a stream.json (0 if absent; UINT64_MAX if the
 * file cannot be read). */
static inline uint64_t rt_sig_lost(const char *json_path)
{
	json_error_t err;
	json_t *doc = json_load_file(json_path, 0, &err);
	if (doc == NULL)
		return UINT64_MAX;
	json_t *v = json_object_get(json_object_get(doc, "weft"), "lost_events");
	uint64_t lost = json_is_integer(v) ? (uint64_t) json_integer_value(v) : 0;
	json_decref(doc);
	return lost;
}

/* Checks the stream of a thread directory; nhandler_emitted handler
 * events were emitted with values 0 .. nhandler_emitted - 1, and nmain
 * main events. Returns 0 and fills r, or -1 with r->why. */
static inline int rt_sig_check(const char *thread_dir, uint64_t nmain, uint64_t nhandler_emitted,
			       struct rt_sig_result *r)
{
	memset(r, 0, sizeof *r);
	char *obs = rt_test_path("%s/stream.obs", thread_dir);
	char *json = rt_test_path("%s/stream.json", thread_dir);
	struct rt_test_stream s;
	rt_test_stream_load(&s, obs);
	uint8_t *seen = calloc(nhandler_emitted + 1, 1);
	uint64_t last = 0;
	int in_flush = 0;
	int rc = 0;
	r->nevents = s.nev;
	for (size_t k = 0; k < s.nev && rc == 0; k++) {
		struct rt_test_ev *e = &s.ev[k];
		if (e->clock < last) {
			snprintf(r->why, sizeof r->why, "event %zu (%s, offset %zu): clock %" PRIu64 " goes back from %" PRIu64,
				 k, e->mcv, e->offset, e->clock, last);
			if (getenv("RT_SIG_DEBUG") != NULL) {
				for (size_t j = k >= 4 ? k - 4 : 0; j < k + 12 && j < s.nev; j++) {
					int64_t v = 0;
					int32_t ty = 0;
					if (s.ev[j].payload_size == 12) {
						memcpy(&v, s.ev[j].payload, sizeof v);
						memcpy(&ty, s.ev[j].payload + 8, sizeof ty);
					}
					fprintf(stderr, "  %zu: %s @%zu clock %" PRIu64 " type %d value %" PRId64 "\n", j,
						s.ev[j].mcv, s.ev[j].offset, s.ev[j].clock, (int) ty, v);
				}
			}
			rc = -1;
			break;
		}
		last = e->clock;
		if (strcmp(e->mcv, "OF[") == 0 || strcmp(e->mcv, "OF]") == 0) {
			int begin = e->mcv[2] == '[';
			if (begin == in_flush) {
				snprintf(r->why, sizeof r->why, "event %zu: %s without its pair", k, e->mcv);
				rc = -1;
			}
			in_flush = begin;
			if (!begin)
				r->npairs++;
			continue;
		}
		int jumbo = weft_ev_is_jumbo(e->flags);
		if (jumbo ? e->payload_size < 12 : strcmp(e->mcv, "OM=") != 0 || e->payload_size != 12) {
			snprintf(r->why, sizeof r->why, "event %zu: unexpected %s with %zu payload bytes", k, e->mcv,
				 e->payload_size);
			rc = -1;
			break;
		}
		int64_t value;
		int32_t type;
		memcpy(&value, e->payload, sizeof value);
		memcpy(&type, e->payload + sizeof value, sizeof type);
		if (type == RT_SIG_MAIN) {
			if ((uint64_t) value != r->nmain) {
				snprintf(r->why, sizeof r->why, "event %zu: main event %" PRId64 ", expected %" PRIu64, k,
					 value, r->nmain);
				rc = -1;
			}
			r->nmain++;
		} else if (type == RT_SIG_HANDLER) {
			if (value < 0 || (uint64_t) value >= nhandler_emitted || seen[value]) {
				snprintf(r->why, sizeof r->why, "event %zu: handler event %" PRId64 " %s", k, value,
					 value >= 0 && (uint64_t) value < nhandler_emitted ? "seen twice"
											     : "never emitted");
				rc = -1;
			} else {
				seen[value] = 1;
			}
			r->nhandler++;
			if (in_flush)
				r->in_flush++;
		} else {
			snprintf(r->why, sizeof r->why, "event %zu: mark of type %d", k, (int) type);
			rc = -1;
		}
	}
	if (rc == 0 && r->nmain != nmain) {
		snprintf(r->why, sizeof r->why, "%" PRIu64 " main events, expected %" PRIu64, r->nmain, nmain);
		rc = -1;
	}
	r->lost = rt_sig_lost(json);
	if (rc == 0 && r->lost == UINT64_MAX) {
		snprintf(r->why, sizeof r->why, "cannot read %s", json);
		rc = -1;
	}
	if (rc == 0 && r->nhandler + r->lost != nhandler_emitted) {
		snprintf(r->why, sizeof r->why,
			 "%" PRIu64 " handler events found + %" PRIu64 " lost, but %" PRIu64 " emitted", r->nhandler,
			 r->lost, nhandler_emitted);
		rc = -1;
	}
	free(seen);
	rt_test_stream_free(&s);
	free(obs);
	free(json);
	return rc;
}

/* Runs "$WEFT_BIN check DIR": 1 if it accepts the trace (and its output
 * has want, if not NULL), 0 if not (its output is printed either way), -1
 * if WEFT_BIN is not usable. */
static inline int rt_sig_weft_check_has(const char *dir, const char *want)
{
	const char *bin = getenv("WEFT_BIN");
	if (bin == NULL || access(bin, X_OK) != 0)
		return -1;
	char *cmd = rt_test_path("'%s' check '%s' 2>&1", bin, dir);
	FILE *p = popen(cmd, "r");
	free(cmd);
	if (p == NULL)
		return 0;
	char out[4096];
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	int status = pclose(p);
	int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	fprintf(stderr, "%s", out);
	if (ok && want != NULL && strstr(out, want) == NULL) {
		fprintf(stderr, "weft check: the output does not say '%s'\n", want);
		ok = 0;
	}
	return ok;
}

static inline int rt_sig_weft_check(const char *dir)
{
	return rt_sig_weft_check_has(dir, NULL);
}

#endif
