/* SPDX-License-Identifier: MIT */
/*
 * mark.c - marks: user-defined channels. Types and labels go to the
 * calling thread's stream.json under ovni.mark.<type>; push, pop and set
 * emit OM[ OM] OM= with a 12-byte payload (i64 value, then i32 type).
 */
#include <inttypes.h>
#include <stdio.h>

#include "obs_format.h"
#include "rt_internal.h"

#define MARK_PAYLOAD_SIZE 12u

void ovni_mark_type(int32_t type, long flags, const char *title)
{
	static const char func[] = "ovni_mark_type";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);
	if (title == NULL || title[0] == '\0')
		rt_die(func, "the title of mark type %" PRId32 " is empty", type);
	if ((flags & ~(long) OVNI_MARK_STACK) != 0)
		rt_die(func, "unknown flags 0x%lx for mark type %" PRId32, (unsigned long) flags, type);
	const char *chan = (flags & OVNI_MARK_STACK) ? WEFT_MARK_CHAN_STACK : WEFT_MARK_CHAN_SINGLE;

	char key[64];
	snprintf(key, sizeof key, WEFT_KEY_OVNI "." WEFT_KEY_MARK ".%" PRId32, type);
	json_t *old = rt_meta_dotget(func, th->meta, key);
	if (old != NULL) {
		const char *otitle = json_string_value(json_object_get(old, WEFT_KEY_MARK_TITLE));
		const char *ochan = json_string_value(json_object_get(old, WEFT_KEY_MARK_CHAN_TYPE));
		if (otitle == NULL || ochan == NULL || strcmp(otitle, title) != 0 || strcmp(ochan, chan) != 0)
			rt_die(func, "mark type %" PRId32 " is already defined with another title or flags", type);
		return;
	}
	json_t *def = json_object();
	if (def == NULL || json_object_set_new(def, WEFT_KEY_MARK_TITLE, json_string(title)) != 0
	    || json_object_set_new(def, WEFT_KEY_MARK_CHAN_TYPE, json_string(chan)) != 0)
		rt_die(func, "out of memory while defining mark type %" PRId32, type);
	rt_meta_dotset(func, th->meta, key, def);
	rt_meta_touch(func, th);
}

void ovni_mark_label(int32_t type, int64_t value, const char *label)
{
	static const char func[] = "ovni_mark_label";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);
	if (label == NULL || label[0] == '\0')
		rt_die(func, "the label of value %" PRId64 " of mark type %" PRId32 " is empty", value, type);
	char key[128];
	snprintf(key, sizeof key, WEFT_KEY_OVNI "." WEFT_KEY_MARK ".%" PRId32, type);
	if (rt_meta_dotget(func, th->meta, key) == NULL)
		rt_die(func, "mark type %" PRId32 " is not defined (call ovni_mark_type first)", type);
	snprintf(key, sizeof key, WEFT_KEY_OVNI "." WEFT_KEY_MARK ".%" PRId32 "." WEFT_KEY_MARK_LABELS ".%" PRId64,
		 type, value);
	json_t *v = json_string(label);
	if (v == NULL)
		rt_die(func, "the label of value %" PRId64 " of mark type %" PRId32 " is not valid UTF-8", value, type);
	rt_meta_dotset(func, th->meta, key, v);
}

static void mark_emit(const char *func, char op, int32_t type, int64_t value)
{
	uint8_t payload[MARK_PAYLOAD_SIZE];
	memcpy(payload, &value, sizeof value);
	memcpy(payload + sizeof value, &type, sizeof type);
	const char mcv[3] = {'O', 'M', op};
	rt_emit_raw(func, weft_ev_size_code(MARK_PAYLOAD_SIZE), mcv, rt_clock_now(), payload, sizeof payload,
		    NULL, 0);
}

void ovni_mark_push(int32_t type, int64_t value)
{
	mark_emit("ovni_mark_push", '[', type, value);
}

void ovni_mark_pop(int32_t type, int64_t value)
{
	mark_emit("ovni_mark_pop", ']', type, value);
}

void ovni_mark_set(int32_t type, int64_t value)
{
	mark_emit("ovni_mark_set", '=', type, value);
}
