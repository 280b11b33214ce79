/* SPDX-License-Identifier: MIT */
/*
 * meta.c - the stream.json document of a thread (trace spec v3): building
 * it, dotted-key access ("a.b.c" is nested objects) and writing it
 * pretty-printed (4-space indent), atomically as far as a process that
 * dies can tell (meta_store).
 */
#include <stdlib.h>
#include <string.h>

#include "obs_format.h"
#include "rt_internal.h"
#include "weft_version.h"

static json_t *obj_or_die(const char *func)
{
	json_t *o = json_object();
	if (o == NULL)
		rt_die(func, "out of memory while building the stream metadata");
	return o;
}

static void set_or_die(const char *func, json_t *obj, const char *key, json_t *value)
{
	if (value == NULL || json_object_set_new(obj, key, value) != 0)
		rt_die(func, "out of memory while setting the metadata key '%s'", key);
}

json_t *rt_meta_new(const char *func, const struct rt_proc_info *info, pid_t tid)
{
	json_t *doc = obj_or_die(func);
	set_or_die(func, doc, WEFT_KEY_VERSION, json_integer(WEFT_META_VERSION));

	json_t *ovni = obj_or_die(func);
	json_t *lib = obj_or_die(func);
	set_or_die(func, lib, WEFT_KEY_LIB_VERSION, json_string(OVNI_LIB_VERSION));
	set_or_die(func, lib, WEFT_KEY_LIB_COMMIT, json_string(OVNI_GIT_COMMIT));
	set_or_die(func, ovni, WEFT_KEY_LIB, lib);
	set_or_die(func, ovni, WEFT_KEY_PART, json_string(WEFT_PART_THREAD));
	set_or_die(func, ovni, WEFT_KEY_TID, json_integer(tid));
	set_or_die(func, ovni, WEFT_KEY_PID, json_integer(info->pid));
	set_or_die(func, ovni, WEFT_KEY_LOOM, json_string(info->loom));
	set_or_die(func, ovni, WEFT_KEY_APP_ID, json_integer(info->app));
	set_or_die(func, doc, WEFT_KEY_OVNI, ovni);

	json_t *weft = obj_or_die(func);
	set_or_die(func, weft, WEFT_KEY_WEFT_VERSION, json_string(WEFT_VERSION));
	if (__atomic_load_n(&rt_clock_tsc, __ATOMIC_RELAXED))
		set_or_die(func, weft, WEFT_KEY_CLOCK, json_string(WEFT_CLOCK_TSC));
	set_or_die(func, doc, WEFT_KEY_WEFT, weft);
	return doc;
}

/* The "ovni" object of the document (re-created if a user replaced it). */
static json_t *ovni_object(const char *func, json_t *doc)
{
	json_t *ovni = json_object_get(doc, WEFT_KEY_OVNI);
	if (!json_is_object(ovni)) {
		ovni = obj_or_die(func);
		set_or_die(func, doc, WEFT_KEY_OVNI, ovni);
	}
	return ovni;
}

/* The "weft" object of the document (re-created if a user replaced it). */
static json_t *weft_object(const char *func, json_t *doc)
{
	json_t *weft = json_object_get(doc, WEFT_KEY_WEFT);
	if (!json_is_object(weft)) {
		weft = obj_or_die(func);
		set_or_die(func, doc, WEFT_KEY_WEFT, weft);
	}
	return weft;
}

/* Ring mode: weft.ring as of the last write of the ring, at every stage. */
static void meta_ring(const char *func, struct rt_thread *th)
{
	if (th->ring != NULL)
		set_or_die(func, weft_object(func, th->meta), WEFT_KEY_RING, rt_ring_json(func, th->ring));
}

/* weft.filter and weft.filtered, at every stage, when a filter is set. */
static void meta_filter(const char *func, struct rt_thread *th)
{
	if (!rt_filter_active())
		return;
	json_t *weft = weft_object(func, th->meta);
	json_t *f = obj_or_die(func);
	set_or_die(func, f, WEFT_KEY_FILTER_RULES, json_string(rt_filter_rules()));
	set_or_die(func, f, WEFT_KEY_FILTER_CALLBACK, json_boolean(rt_filter_callback()));
	set_or_die(func, weft, WEFT_KEY_FILTER, f);
	uint64_t n = __atomic_load_n(&th->filtered, __ATOMIC_RELAXED);
	set_or_die(func, weft, WEFT_KEY_FILTERED, json_integer((json_int_t) n));
}

/* WEFT_OUTPUT=off: weft.output and weft.unwritten_bytes, at every stage. */
static void meta_output(const char *func, struct rt_thread *th)
{
	if (!th->output_off)
		return;
	json_t *weft = weft_object(func, th->meta);
	set_or_die(func, weft, WEFT_KEY_OUTPUT, json_string(WEFT_OUTPUT_OFF));
	uint64_t n = __atomic_load_n(&th->unwritten, __ATOMIC_RELAXED);
	set_or_die(func, weft, WEFT_KEY_UNWRITTEN_BYTES, json_integer((json_int_t) n));
}

/* weft.index_after, at every stage: stream.idx is created at the
 * stream's second write (index.c), so it exists once the stream holds
 * more bytes of events than one write may (a reader then warns when it
 * is missing); a stream with fewer may have none. */
static void meta_index(const char *func, struct rt_thread *th)
{
	set_or_die(func, weft_object(func, th->meta), WEFT_KEY_INDEX_AFTER,
		   json_integer((json_int_t) rt_index_after(th)));
}

/* Sampling: weft.sample, at every stage, once the thread samples. */
static void meta_sample(const char *func, struct rt_thread *th)
{
	json_t *o = rt_sample_json(func, th);
	if (o != NULL)
		set_or_die(func, weft_object(func, th->meta), WEFT_KEY_SAMPLE, o);
}

/* RT_META_UPDATE's keys (and ovni.finished if final). */
static void meta_update(const char *func, struct rt_thread *th, int final)
{
	json_t *ovni = ovni_object(func, th->meta);
	json_t *req = obj_or_die(func);
	set_or_die(func, req, "ovni", json_string(OVNI_MODEL_VERSION));
	if (json_object_update(req, th->require) != 0)
		rt_die(func, "out of memory while building ovni.require of '%s'", th->json_path);
	set_or_die(func, ovni, WEFT_KEY_REQUIRE, req);
	int rank, nranks;
	if (rt_proc_rank(&rank, &nranks)) {
		set_or_die(func, ovni, WEFT_KEY_RANK, json_integer(rank));
		set_or_die(func, ovni, WEFT_KEY_NRANKS, json_integer(nranks));
	}
	if (th->loom_cpus != NULL)
		set_or_die(func, ovni, WEFT_KEY_LOOM_CPUS, json_incref(th->loom_cpus));
	if (final)
		set_or_die(func, ovni, WEFT_KEY_FINISHED, json_integer(1));
	/* Events of signal handlers that could not be stored. */
	uint64_t lost = __atomic_load_n(&th->lost, __ATOMIC_RELAXED);
	if (lost > 0)
		set_or_die(func, weft_object(func, th->meta), WEFT_KEY_LOST_EVENTS, json_integer((json_int_t) lost));
}

/* WEFT_CRASH=flush: the document with weft.cut = RT_CUT_PLACEHOLDER (and,
 * in ring mode, weft.ring = RT_RING_PLACEHOLDER: the losses change until
 * the crash), for a crash handler to fill in and write (it cannot use
 * jansson). */
static char *crash_render(const char *func, struct rt_thread *th, enum rt_meta_stage stage)
{
	if (!rt_crash_enabled)
		return NULL;
	/* A cut stream has what the tools need (ovni.require) even if the
	 * thread never called what writes it. */
	if (stage == RT_META_INITIAL)
		meta_update(func, th, 0);
	json_t *weft = weft_object(func, th->meta);
	/* The placeholders' text without their quotes. */
	char ph[RT_CUT_PLACEHOLDER_LEN];
	memcpy(ph, &RT_CUT_PLACEHOLDER[1], RT_CUT_PLACEHOLDER_LEN - 2u);
	ph[RT_CUT_PLACEHOLDER_LEN - 2u] = '\0';
	set_or_die(func, weft, WEFT_KEY_CUT, json_string(ph));
	if (th->ring != NULL) {
		char rph[RT_RING_PLACEHOLDER_LEN];
		memcpy(rph, &RT_RING_PLACEHOLDER[1], RT_RING_PLACEHOLDER_LEN - 2u);
		rph[RT_RING_PLACEHOLDER_LEN - 2u] = '\0';
		set_or_die(func, weft, WEFT_KEY_RING, json_string(rph));
	}
	char *text = json_dumps(th->meta, JSON_INDENT(4) | JSON_REAL_PRECISION(17));
	json_object_del(weft, WEFT_KEY_CUT);
	meta_ring(func, th);
	if (text == NULL || strstr(text, RT_CUT_PLACEHOLDER) == NULL
	    || (th->ring != NULL && strstr(text, RT_RING_PLACEHOLDER) == NULL))
		rt_die(func, "cannot serialize the metadata of '%s'", th->json_path);
	return text;
}

/* Writes the document text: in place (rt_write_file_over) when it is at
 * most RT_META_INPLACE_MAX bytes and not shorter than what this thread last
 * wrote, else atomically (a temporary file, then rename(2)).
 *
 * In place is as crash-safe as the rename for a process that dies: a
 * write(2) of at most one page at offset 0 goes into the page cache whole
 * or not at all (a pending fatal signal is checked before each page is
 * copied, never inside one), and since the text does not get shorter no
 * tail of the older document is left after it. A reader that races the
 * write (weft follow) may read a mixture, which it does not parse and
 * reads again. What in place saves: on ext4 a rename over an existing
 * file, like an O_TRUNC of one, starts the write-back of the file's data
 * at once (auto_da_alloc), which made 500 short threads cost 1.6 times
 * their floor (bench_write). */
#define RT_META_INPLACE_MAX 4096u
static void meta_store(const char *func, struct rt_thread *th, const char *text)
{
	size_t len = strlen(text);
	int done = 0;
	/* Once a crash handler has run (WEFT_CRASH=flush; at exit the
	 * exiting thread goes on), the file is its document, longer than
	 * json_len says: replace it whole. */
	int crashed = __atomic_load_n(&rt_crash_frozen, __ATOMIC_SEQ_CST) != 0;
	if (!crashed && len <= RT_META_INPLACE_MAX && len >= th->json_len)
		done = rt_write_file_over(func, th->json_path, text, len, th->json_len == 0);
	/* Longer than a page, shorter than before, or a first write over a
	 * file of an earlier run. */
	if (!done)
		rt_write_file_atomic(func, th->json_path, text);
	th->json_len = len;
}

void rt_meta_write(const char *func, struct rt_thread *th, enum rt_meta_stage stage)
{
	if (stage >= RT_META_UPDATE)
		meta_update(func, th, stage == RT_META_FINAL);
	meta_ring(func, th);
	meta_filter(func, th);
	meta_output(func, th);
	meta_index(func, th);
	meta_sample(func, th);
	char *text = json_dumps(th->meta, JSON_INDENT(4) | JSON_REAL_PRECISION(17));
	if (text == NULL)
		rt_die(func, "cannot serialize the metadata of '%s'", th->json_path);
	char *crash = stage != RT_META_FINAL ? crash_render(func, th, stage) : NULL;
	/* A crash handler waits for this to end, and stops the thread at the
	 * next one: it renames its own document over this one. */
	rt_crash_gate_enter(th);
	meta_store(func, th, text);
	if (crash != NULL) {
		char *old = th->crash_text;
		th->crash_text = crash;
		th->crash_cut = (size_t) (strstr(crash, RT_CUT_PLACEHOLDER) - crash);
		if (th->ring != NULL)
			th->crash_ring = (size_t) (strstr(crash, RT_RING_PLACEHOLDER) - crash);
		free(old);
	}
	rt_crash_gate_leave(th);
	free(text);
}

/* Copies the next component of key (from *pos) into a malloc'ed string;
 * dies when it is empty. Returns whether it is the last one. */
static int next_component(const char *func, const char *key, const char **pos, char **out)
{
	const char *start = *pos;
	const char *dot = strchr(start, '.');
	size_t len = dot != NULL ? (size_t) (dot - start) : strlen(start);
	if (len == 0)
		rt_die(func, "malformed attribute key '%s' (empty component)", key);
	char *c = malloc(len + 1);
	if (c == NULL)
		rt_die(func, "out of memory while parsing the attribute key '%s'", key);
	memcpy(c, start, len);
	c[len] = '\0';
	*out = c;
	*pos = dot != NULL ? dot + 1 : start + len;
	return dot == NULL;
}

void rt_meta_dotset(const char *func, json_t *doc, const char *key, json_t *value)
{
	if (key == NULL)
		rt_die(func, "the attribute key is NULL");
	if (value == NULL)
		rt_die(func, "out of memory while setting the attribute '%s'", key);
	json_t *obj = doc;
	const char *pos = key;
	for (;;) {
		char *comp;
		int last = next_component(func, key, &pos, &comp);
		if (last) {
			set_or_die(func, obj, comp, value);
			free(comp);
			return;
		}
		json_t *child = json_object_get(obj, comp);
		if (child == NULL) {
			child = obj_or_die(func);
			set_or_die(func, obj, comp, child);
		} else if (!json_is_object(child)) {
			rt_die(func, "cannot set the attribute '%s': '%s' holds a value that is not an object", key,
			       comp);
		}
		free(comp);
		obj = child;
	}
}

json_t *rt_meta_dotget(const char *func, json_t *doc, const char *key)
{
	if (key == NULL)
		rt_die(func, "the attribute key is NULL");
	json_t *obj = doc;
	const char *pos = key;
	for (;;) {
		char *comp;
		int last = next_component(func, key, &pos, &comp);
		json_t *child = json_is_object(obj) ? json_object_get(obj, comp) : NULL;
		free(comp);
		if (last || child == NULL)
			return child;
		obj = child;
	}
}
