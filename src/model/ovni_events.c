/* SPDX-License-Identifier: MIT */
/* ovni_events.c - the events of the ovni model (model byte 'O'). */
#include "model_tables.h"

#define F(n, t) { n, WEFT_FIELD_##t }

static const struct weft_event_spec ovni_events[] = {
	{ "OHx", 3, { F("cpu", I32), F("tid", I32), F("tag", U64) },
	  "starts running on CPU {cpu}; created by thread {tid} with tag {tag:x}" },
	{ "OHC", 2, { F("cpu", I32), F("tag", U64) },
	  "creates a new thread for CPU {cpu} with tag {tag:x}" },
	{ "OHp", 0, { { 0 } }, "pauses (stops running)" },
	{ "OHr", 0, { { 0 } }, "resumes running" },
	{ "OHc", 0, { { 0 } }, "cools down (will pause soon)" },
	{ "OHw", 0, { { 0 } }, "warms up (will resume soon)" },
	{ "OHe", 0, { { 0 } }, "finishes: the thread ends" },
	{ "OAs", 1, { F("cpu", I32) }, "sets its own CPU affinity to CPU {cpu}" },
	{ "OAr", 2, { F("cpu", I32), F("tid", I32) },
	  "sets the CPU affinity of thread {tid} to CPU {cpu}" },
	{ "OCn", 1, { F("ncpus", I32) }, "reports {ncpus} CPUs (obsolete event)" },
	{ "OF[", 0, { { 0 } }, "starts writing its event buffer to disk" },
	{ "OF]", 0, { { 0 } }, "is done writing its event buffer to disk" },
	{ "OB.", 0, { { 0 } }, "burst: a latency probe" },
	{ "OU[", 0, { { 0 } }, "opens a region whose events may be out of order" },
	{ "OU]", 0, { { 0 } }, "closes the out-of-order region" },
	{ "OM[", 2, { F("value", I64), F("type", I32) }, "pushes {value} on mark type {type}" },
	{ "OM]", 2, { F("value", I64), F("type", I32) }, "pops {value} from mark type {type}" },
	{ "OM=", 2, { F("value", I64), F("type", I32) }, "sets mark type {type} to {value}" },
};

const struct weft_model_spec weft_model_ovni = {
	'O', "ovni", ovni_events, sizeof ovni_events / sizeof ovni_events[0],
};
