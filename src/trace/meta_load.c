/* SPDX-License-Identifier: MIT */
/* meta_load.c - stream.json (v3) and metadata.json (v1) into struct weft_meta. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_internal.h"

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "unknown";
}

/* An integral number within [min, max]: 1; otherwise 0. */
static int get_int(const json_t *v, long long min, long long max, long long *out)
{
	long long x;
	if (json_is_integer(v)) {
		x = (long long) json_integer_value(v);
	} else if (json_is_real(v)) {
		double r = json_real_value(v);
		if (!(r >= (double) LLONG_MIN && r < (double) LLONG_MAX) || floor(r) != r)
			return 0;
		x = (long long) r;
	} else {
		return 0;
	}
	if (x < min || x > max)
		return 0;
	*out = x;
	return 1;
}

static int parse_root(const char *text, size_t len, const char *name, struct weft_diag *d,
		int want_version, json_t **root)
{
	json_error_t je;
	json_t *j = json_loadb(text, len, 0, &je);
	if (j == NULL && json_error_code(&je) == json_error_out_of_memory)
		return weft_oom(d, "reading the metadata of %s", name);
	if (j == NULL)
		return weft_fail(d, "%s: invalid JSON at line %d, column %d: %s", name,
				je.line, je.column, je.text);
	if (!json_is_object(j)) {
		int r = weft_fail(d, "%s: the metadata is %s, not a JSON object", name, json_kind(j));
		json_decref(j);
		return r;
	}
	json_t *v = json_object_get(j, WEFT_KEY_VERSION);
	long long ver = 0;
	int r = 0;
	if (v == NULL)
		r = weft_fail(d, "%s: missing \"version\" (expected %d)", name, want_version);
	else if (!json_is_number(v))
		r = weft_fail(d, "%s: \"version\" is %s, expected the number %d", name,
				json_kind(v), want_version);
	else if (!get_int(v, INT_MIN, INT_MAX, &ver))
		r = weft_fail(d, "%s: metadata version %g is not an integer (expected %d)", name,
				json_number_value(v), want_version);
	else if (ver != want_version)
		r = weft_fail(d, "%s: metadata version %lld, expected %d", name, ver, want_version);
	if (r != 0) {
		json_decref(j);
		return -1;
	}
	*root = j;
	return 0;
}

/* Optional int key: 0 absent, 1 present and valid, -1 strict breach. */
static int opt_int(json_t *obj, const char *key, const char *dotted, long long min,
		long long max, const char *name, struct weft_diag *d, int *has, int *out)
{
	json_t *v = json_object_get(obj, key);
	*has = 0;
	if (v == NULL)
		return 0;
	long long x;
	if (!get_int(v, min, max, &x)) {
		if (json_is_number(v))
			return weft_breach(d, "%s: %s is out of range (%lld to %lld)", name, dotted,
					min, max);
		return weft_breach(d, "%s: %s is %s, expected an integer", name, dotted,
				json_kind(v));
	}
	*has = 1;
	*out = (int) x;
	return 1;
}

static int opt_str(json_t *obj, const char *key, const char *dotted, const char *name,
		struct weft_diag *d, char **out)
{
	json_t *v = json_object_get(obj, key);
	*out = NULL;
	if (v == NULL)
		return 0;
	if (!json_is_string(v))
		return weft_breach(d, "%s: %s is %s, expected a string", name, dotted, json_kind(v));
	*out = weft_strdup(json_string_value(v));
	if (*out == NULL)
		return weft_oom(d, "reading the metadata of %s", name);
	return 1;
}

static int parse_cpus(json_t *arr, const char *dotted, const char *name, struct weft_diag *d,
		struct weft_meta *m)
{
	if (!json_is_array(arr))
		return weft_breach(d, "%s: %s is %s, expected an array", name, dotted, json_kind(arr));
	m->has_cpus = 1;
	size_t n = json_array_size(arr);
	m->cpus = weft_calloc(n, sizeof *m->cpus);
	if (m->cpus == NULL)
		return weft_oom(d, "reading the metadata of %s", name);
	m->ncpus = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *c = json_array_get(arr, i);
		if (!json_is_object(c)) {
			if (weft_breach(d, "%s: %s[%zu] is %s, expected an object", name, dotted, i,
						json_kind(c)) < 0)
				return -1;
			continue;
		}
		long long idx, phy;
		json_t *vi = json_object_get(c, WEFT_KEY_CPU_INDEX);
		json_t *vp = json_object_get(c, WEFT_KEY_CPU_PHYID);
		if (vi == NULL || !get_int(vi, 0, INT_MAX, &idx)) {
			if (weft_breach(d, "%s: %s[%zu].index is missing or not an integer >= 0",
						name, dotted, i) < 0)
				return -1;
			continue;
		}
		if (vp == NULL || !get_int(vp, 0, INT_MAX, &phy)) {
			if (weft_breach(d, "%s: %s[%zu].phyid is missing or not an integer >= 0",
						name, dotted, i) < 0)
				return -1;
			continue;
		}
		m->cpus[m->ncpus].index = (int) idx;
		m->cpus[m->ncpus].phyid = (int) phy;
		m->ncpus++;
	}
	return 0;
}

static int parse_whole_ll(const char *s, long long min, long long max, long long *out)
{
	if (*s == '\0' || (*s != '-' && (*s < '0' || *s > '9')))
		return 0;
	errno = 0;
	char *end;
	long long x = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || x < min || x > max)
		return 0;
	*out = x;
	return 1;
}

static int parse_marks(json_t *obj, const char *name, struct weft_diag *d, struct weft_meta *m)
{
	if (!json_is_object(obj))
		return weft_breach(d, "%s: ovni.mark is %s, expected an object", name, json_kind(obj));
	m->marks = weft_calloc(json_object_size(obj), sizeof *m->marks);
	if (m->marks == NULL)
		return weft_oom(d, "reading the metadata of %s", name);
	const char *key;
	json_t *val;
	json_object_foreach(obj, key, val) {
		long long type;
		if (!parse_whole_ll(key, 0, 99, &type)) {
			if (weft_breach(d, "%s: ovni.mark type '%s' is not an integer in 0..99",
						name, key) < 0)
				return -1;
			continue;
		}
		if (!json_is_object(val)) {
			if (weft_breach(d, "%s: ovni.mark.%s is %s, expected an object", name, key,
						json_kind(val)) < 0)
				return -1;
			continue;
		}
		json_t *title = json_object_get(val, WEFT_KEY_MARK_TITLE);
		json_t *ct = json_object_get(val, WEFT_KEY_MARK_CHAN_TYPE);
		if (!json_is_string(title)) {
			if (weft_breach(d, "%s: ovni.mark.%s.title is missing or not a string",
						name, key) < 0)
				return -1;
			continue;
		}
		int stack;
		if (json_is_string(ct) && strcmp(json_string_value(ct), WEFT_MARK_CHAN_STACK) == 0) {
			stack = 1;
		} else if (json_is_string(ct)
				&& strcmp(json_string_value(ct), WEFT_MARK_CHAN_SINGLE) == 0) {
			stack = 0;
		} else {
			if (weft_breach(d, "%s: ovni.mark.%s.chan_type must be \"single\" or \"stack\"",
						name, key) < 0)
				return -1;
			continue;
		}
		struct weft_mark_def *md = &m->marks[m->nmarks];
		md->type = (int32_t) type;
		md->title = weft_strdup(json_string_value(title));
		md->stack = stack;
		m->nmarks++;
		if (md->title == NULL)
			return weft_oom(d, "reading the metadata of %s", name);
		json_t *labels = json_object_get(val, WEFT_KEY_MARK_LABELS);
		if (labels == NULL)
			continue;
		if (!json_is_object(labels)) {
			if (weft_breach(d, "%s: ovni.mark.%s.labels is %s, expected an object", name,
						key, json_kind(labels)) < 0)
				return -1;
			continue;
		}
		md->labels = weft_calloc(json_object_size(labels), sizeof *md->labels);
		if (md->labels == NULL)
			return weft_oom(d, "reading the metadata of %s", name);
		const char *lk;
		json_t *lv;
		json_object_foreach(labels, lk, lv) {
			long long value;
			if (!parse_whole_ll(lk, INT64_MIN, INT64_MAX, &value)) {
				if (weft_breach(d, "%s: ovni.mark.%s.labels key '%s' is not an int64",
							name, key, lk) < 0)
					return -1;
				continue;
			}
			if (!json_is_string(lv)) {
				if (weft_breach(d, "%s: ovni.mark.%s.labels.%s is %s, expected a string",
							name, key, lk, json_kind(lv)) < 0)
					return -1;
				continue;
			}
			md->labels[md->nlabels].value = value;
			md->labels[md->nlabels].label = weft_strdup(json_string_value(lv));
			if (md->labels[md->nlabels++].label == NULL)
				return weft_oom(d, "reading the metadata of %s", name);
		}
		/* labels stay in file order (the reference's order) */
	}
	return 0;
}

int weft_meta_parse_v3(const char *text, size_t len, const char *name,
		struct weft_diag *d, struct weft_meta *m, json_t **root)
{
	memset(m, 0, sizeof *m);
	*root = NULL;
	m->version = WEFT_META_VERSION;
	json_t *j;
	if (parse_root(text, len, name, d, WEFT_META_VERSION, &j) < 0)
		return -1;
	*root = j;
	json_t *o = json_object_get(j, WEFT_KEY_OVNI);
	if (o == NULL)
		return weft_breach(d, "%s: missing the \"ovni\" object", name);
	if (!json_is_object(o))
		return weft_breach(d, "%s: \"ovni\" is %s, expected an object", name, json_kind(o));

	if (opt_str(o, WEFT_KEY_PART, "ovni.part", name, d, &m->part) < 0)
		return -1;
	if (opt_int(o, WEFT_KEY_TID, "ovni.tid", 1, INT_MAX, name, d, &m->has_tid, &m->tid) < 0)
		return -1;
	if (opt_int(o, WEFT_KEY_PID, "ovni.pid", 1, INT_MAX, name, d, &m->has_pid, &m->pid) < 0)
		return -1;
	if (opt_str(o, WEFT_KEY_LOOM, "ovni.loom", name, d, &m->loom) < 0)
		return -1;
	if (m->loom != NULL && (m->loom[0] == '\0' || strchr(m->loom, '/') != NULL)) {
		int r = weft_breach(d, "%s: ovni.loom '%s' is empty or contains '/'", name, m->loom);
		free(m->loom);
		m->loom = NULL;
		if (r < 0)
			return -1;
	}
	if (opt_int(o, WEFT_KEY_APP_ID, "ovni.app_id", 1, INT_MAX, name, d, &m->has_app_id,
				&m->app_id) < 0)
		return -1;
	if (opt_int(o, WEFT_KEY_RANK, "ovni.rank", 0, INT_MAX, name, d, &m->has_rank, &m->rank) < 0)
		return -1;
	if (opt_int(o, WEFT_KEY_NRANKS, "ovni.nranks", 1, INT_MAX, name, d, &m->has_nranks,
				&m->nranks) < 0)
		return -1;
	json_t *fin = json_object_get(o, WEFT_KEY_FINISHED);
	if (fin != NULL) {
		long long f;
		m->has_finished = 1;
		m->finished = get_int(fin, INT64_MIN, INT64_MAX, &f) ? f : -1;
	}
	json_t *req = json_object_get(o, WEFT_KEY_REQUIRE);
	if (req != NULL) {
		if (!json_is_object(req))
			return weft_breach(d, "%s: ovni.require is %s, expected an object", name,
					json_kind(req));
		m->has_require = 1;
		m->reqs = weft_calloc(json_object_size(req), sizeof *m->reqs);
		if (m->reqs == NULL)
			return weft_oom(d, "reading the metadata of %s", name);
		const char *k;
		json_t *v;
		json_object_foreach(req, k, v) {
			if (!json_is_string(v)) {
				if (weft_breach(d, "%s: ovni.require.%s is %s, expected a version string",
							name, k, json_kind(v)) < 0)
					return -1;
				continue;
			}
			m->reqs[m->nreqs].model = weft_strdup(k);
			m->reqs[m->nreqs].version = weft_strdup(json_string_value(v));
			m->nreqs++;
			if (m->reqs[m->nreqs - 1].model == NULL
					|| m->reqs[m->nreqs - 1].version == NULL)
				return weft_oom(d, "reading the metadata of %s", name);
		}
	}
	json_t *cpus = json_object_get(o, WEFT_KEY_LOOM_CPUS);
	if (cpus != NULL && parse_cpus(cpus, "ovni.loom_cpus", name, d, m) < 0)
		return -1;
	json_t *lib = json_object_get(o, WEFT_KEY_LIB);
	if (lib != NULL && !json_is_object(lib)
			&& weft_breach(d, "%s: ovni.lib is %s, expected an object", name,
				json_kind(lib)) < 0)
		return -1;
	if (lib != NULL && json_is_object(lib)) {
		if (opt_str(lib, WEFT_KEY_LIB_VERSION, "ovni.lib.version", name, d, &m->lib_version) < 0)
			return -1;
		if (opt_str(lib, WEFT_KEY_LIB_COMMIT, "ovni.lib.commit", name, d, &m->lib_commit) < 0)
			return -1;
	}
	json_t *mark = json_object_get(o, WEFT_KEY_MARK);
	if (mark != NULL && parse_marks(mark, name, d, m) < 0)
		return -1;
	return weft_meta_parse_loss(j, name, d, m);
}

int weft_meta_parse_v1(const char *text, size_t len, const char *name,
		struct weft_diag *d, struct weft_meta *m, json_t **root)
{
	memset(m, 0, sizeof *m);
	*root = NULL;
	m->version = WEFT_META_V1_VERSION;
	json_t *j;
	if (parse_root(text, len, name, d, WEFT_META_V1_VERSION, &j) < 0)
		return -1;
	*root = j;
	m->has_finished = 1;
	m->finished = 1;
	if (opt_int(j, WEFT_V1_KEY_APP_ID, "app_id", 1, INT_MAX, name, d, &m->has_app_id,
				&m->app_id) < 0)
		return -1;
	if (opt_int(j, WEFT_V1_KEY_RANK, "rank", 0, INT_MAX, name, d, &m->has_rank, &m->rank) < 0)
		return -1;
	if (opt_int(j, WEFT_V1_KEY_NRANKS, "nranks", 1, INT_MAX, name, d, &m->has_nranks,
				&m->nranks) < 0)
		return -1;
	json_t *cpus = json_object_get(j, WEFT_V1_KEY_CPUS);
	if (cpus != NULL && parse_cpus(cpus, "cpus", name, d, m) < 0)
		return -1;
	return 0;
}

void weft_meta_free(struct weft_meta *m)
{
	free(m->part);
	free(m->loom);
	for (size_t i = 0; i < m->nreqs; i++) {
		free((char *) m->reqs[i].model);
		free((char *) m->reqs[i].version);
	}
	free(m->reqs);
	free(m->cpus);
	for (size_t i = 0; i < m->nmarks; i++) {
		free(m->marks[i].title);
		for (size_t k = 0; k < m->marks[i].nlabels; k++)
			free((char *) m->marks[i].labels[k].label);
		free(m->marks[i].labels);
	}
	free(m->marks);
	free(m->lib_version);
	free(m->lib_commit);
	weft_meta_free_loss(m);
	memset(m, 0, sizeof *m);
}

/* v1: loom, pid and tid come from the loom.NAME/proc.PID/thread.TID[.obs] names. */
static int v1_identity(struct weft_trace *t, struct weft_wstream *s)
{
	struct weft_diag *d = &t->diag;
	char *dir = weft_strdup(s->obs_path);
	if (dir == NULL)
		return weft_oom(d, "reading the metadata of %s", s->obs_path);
	char *sl = strrchr(dir, '/');
	const char *file = sl ? sl + 1 : dir;
	if (sl)
		*sl = '\0';
	const char *tidstr = file + strlen(WEFT_THREAD_PREFIX);
	long long tid;
	char tbuf[64];
	snprintf(tbuf, sizeof tbuf, "%.*s", (int) strcspn(tidstr, "."), tidstr);
	char *abs = realpath(sl ? dir : ".", NULL);
	int r = 0;
	if (abs == NULL) {
		r = weft_fail(d, "%s: %s", dir, strerror(errno));
		goto out;
	}
	char *pb = strrchr(abs, '/');
	const char *procname = pb ? pb + 1 : abs;
	if (pb)
		*pb = '\0';
	char *lb = strrchr(abs, '/');
	const char *loomname = lb ? lb + 1 : abs;
	long long pid;
	if (!parse_whole_ll(tbuf, 1, INT_MAX, &tid)) {
		r = weft_breach(d, "%s: the thread id in the file name is not a number > 0",
				s->obs_path);
		goto out;
	}
	if (!parse_whole_ll(procname + strlen(WEFT_PROC_PREFIX), 1, INT_MAX, &pid)) {
		r = weft_breach(d, "%s: the v1 process directory '%s' is not proc.PID", s->obs_path,
				procname);
		goto out;
	}
	s->meta.has_tid = 1;
	s->meta.tid = (int) tid;
	s->meta.has_pid = 1;
	s->meta.pid = (int) pid;
	size_t ll = strlen(WEFT_LOOM_PREFIX);
	if (strncmp(loomname, WEFT_LOOM_PREFIX, ll) != 0 || loomname[ll] == '\0') {
		r = weft_breach(d, "%s: the v1 process directory is not inside a loom.NAME "
				"directory (found '%s')", s->obs_path, loomname);
		goto out;
	}
	s->meta.loom = weft_strdup(loomname + ll);
	if (s->meta.loom == NULL)
		r = weft_oom(d, "reading the metadata of %s", s->obs_path);
out:
	free(abs);
	free(dir);
	return r;
}

static int load_one(struct weft_trace *t, struct weft_wstream *s, struct weft_diag *d)
{
	char *text;
	size_t len;
	if (weft_read_small_file(s->json_path, 16u << 20, &text, &len, d) < 0)
		return -1;
	int r;
	if (s->pub.meta_version == WEFT_META_VERSION)
		r = weft_meta_parse_v3(text, len, s->json_path, d, &s->meta, &s->json);
	else
		r = weft_meta_parse_v1(text, len, s->json_path, d, &s->meta, &s->json);
	free(text);
	if (r < 0)
		return -1;
	if (s->pub.meta_version == WEFT_META_V1_VERSION) {
		s->meta.part = weft_strdup(WEFT_PART_THREAD);
		if (s->meta.part == NULL)
			return weft_oom(d, "reading the metadata of %s", s->json_path);
		struct weft_diag saved = t->diag;
		t->diag = *d;
		r = v1_identity(t, s);
		*d = t->diag;
		t->diag = saved;
		if (r < 0)
			return -1;
	}
	return 0;
}

int weft_load_metadata(struct weft_trace *t)
{
	for (size_t i = 0; i < t->nstreams; i++) {
		struct weft_wstream *s = t->streams[i];
		if (load_one(t, s, &t->diag) < 0)
			return -1;
		s->pub.finished = s->meta.has_finished && s->meta.finished == 1;
		s->pub.lib_version = s->meta.lib_version;
		s->pub.lib_commit = s->meta.lib_commit;
		s->pub.nreqs = s->meta.nreqs;
		s->pub.reqs = s->meta.reqs;
	}
	/* The rest of the trace around a sub-path: its problems are errors
	 * when strict; when lenient they leave the stream out, quietly (what
	 * was asked for is the path's streams). */
	for (size_t i = 0; i < t->nmstreams; i++) {
		struct weft_wstream *s = t->mstreams[i];
		char err[WEFT_ERR_MAX];
		struct weft_diag d = t->diag;
		d.warn = NULL;
		if (t->diag.mode == WEFT_LENIENT) {
			d.err = err;
			d.errlen = sizeof err;
		}
		if (load_one(t, s, &d) < 0) {
			if (t->diag.mode != WEFT_LENIENT || d.oom) {
				if (t->diag.mode == WEFT_LENIENT) /* out of memory: no breach */
					snprintf(t->errbuf, sizeof t->errbuf, "%s", err);
				t->diag.failed = 1;
				return -1;
			}
			s->meta_bad = 1;
		}
	}
	return 0;
}
