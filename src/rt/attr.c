/* SPDX-License-Identifier: MIT */
/*
 * attr.c - user attributes in the calling thread's stream.json, under
 * dotted keys ("myapp.obj.a" is {"myapp": {"obj": {"a": ...}}}).
 * ovni_attr_flush rewrites stream.json; ovni_thread_free does too.
 */
#include <math.h>
#include <stdlib.h>

#include "rt_internal.h"

int ovni_attr_has(const char *key)
{
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get("ovni_attr_has");
	return rt_meta_dotget("ovni_attr_has", th->meta, key) != NULL;
}

void ovni_attr_set_double(const char *key, double num)
{
	static const char func[] = "ovni_attr_set_double";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);
	if (!isfinite(num))
		rt_die(func, "the value of attribute '%s' is not a finite number (JSON cannot hold it)",
		       key != NULL ? key : "(null)");
	/* Whole numbers are written without a fraction ("42"), as the
	 * reference does; they still read back as doubles. */
	json_t *v;
	if (num == trunc(num) && fabs(num) < 9007199254740992.0 && !(num == 0.0 && signbit(num)))
		v = json_integer((json_int_t) num);
	else
		v = json_real(num);
	rt_meta_dotset(func, th->meta, key, v);
}

void ovni_attr_set_boolean(const char *key, int value)
{
	static const char func[] = "ovni_attr_set_boolean";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);
	rt_meta_dotset(func, th->meta, key, json_boolean(value));
}

void ovni_attr_set_str(const char *key, const char *value)
{
	static const char func[] = "ovni_attr_set_str";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);
	if (value == NULL)
		rt_die(func, "the value of attribute '%s' is NULL", key != NULL ? key : "(null)");
	json_t *v = json_string(value);
	if (v == NULL)
		rt_die(func, "the value of attribute '%s' is not valid UTF-8", key != NULL ? key : "(null)");
	rt_meta_dotset(func, th->meta, key, v);
}

void ovni_attr_set_json(const char *key, const char *json)
{
	static const char func[] = "ovni_attr_set_json";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);
	if (json == NULL)
		rt_die(func, "the JSON text of attribute '%s' is NULL", key != NULL ? key : "(null)");
	json_error_t err;
	json_t *v = json_loads(json, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
	if (v == NULL)
		rt_die(func, "the value of attribute '%s' is not valid JSON (%s, column %d)",
		       key != NULL ? key : "(null)", err.text, err.column);
	rt_meta_dotset(func, th->meta, key, v);
}

static json_t *get_or_die(const char *func, const char *key)
{
	struct rt_thread *th = rt_thread_get(func);
	json_t *v = rt_meta_dotget(func, th->meta, key);
	if (v == NULL)
		rt_die(func, "the attribute '%s' is not set", key);
	return v;
}

double ovni_attr_get_double(const char *key)
{
	static const char func[] = "ovni_attr_get_double";
	RT_KEEP_ERRNO;
	json_t *v = get_or_die(func, key);
	if (!json_is_number(v))
		rt_die(func, "the attribute '%s' is not a number", key);
	return json_number_value(v);
}

int ovni_attr_get_boolean(const char *key)
{
	static const char func[] = "ovni_attr_get_boolean";
	RT_KEEP_ERRNO;
	json_t *v = get_or_die(func, key);
	if (!json_is_boolean(v))
		rt_die(func, "the attribute '%s' is not a boolean", key);
	return json_is_true(v) ? 1 : 0;
}

const char *ovni_attr_get_str(const char *key)
{
	static const char func[] = "ovni_attr_get_str";
	RT_KEEP_ERRNO;
	json_t *v = get_or_die(func, key);
	if (!json_is_string(v))
		rt_die(func, "the attribute '%s' is not a string", key);
	return json_string_value(v);
}

char *ovni_attr_get_json(const char *key)
{
	static const char func[] = "ovni_attr_get_json";
	RT_KEEP_ERRNO;
	json_t *v = get_or_die(func, key);
	char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
	if (text == NULL)
		rt_die(func, "cannot serialize the attribute '%s'", key);
	/* json_dumps allocates with jansson's allocator, malloc by default;
	 * the caller frees the text with free(). */
	return text;
}

void ovni_attr_flush(void)
{
	static const char func[] = "ovni_attr_flush";
	RT_KEEP_ERRNO;
	struct rt_thread *th = rt_thread_get(func);
	rt_meta_write(func, th, RT_META_UPDATE);
}
