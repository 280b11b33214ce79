/* SPDX-License-Identifier: MIT */
/*
 * registry.c - the lists of models. The built-in descriptions (compiled in,
 * see cmake/embed_models.cmake) are parsed once, on first use, under
 * pthread_once, in model-byte order, and never change after; a run's
 * registry (weft_registry_new) shares them and adds the models its user
 * gives as files. No other state: registries of different runs (threads)
 * are independent.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model.h"

struct weft_builtin_text {
	const char *name;
	const char *text;
	size_t len;
};
extern const struct weft_builtin_text weft_builtin_texts[];
extern const size_t weft_nbuiltin_texts;

#define MAX_MODELS 64
#define MAX_MODEL_FILE (16u << 20)

/* A registry: the built-in models (shared, see below), then a run's own. */
struct weft_registry {
	struct weft_model_spec *models[MAX_MODELS];
	size_t nmodels;
	size_t nshared; /* models[0..nshared) belong to the built-in registry */
	const struct weft_model_spec *by_code[256];
};

/* The built-in models: parsed once, under pthread_once, by the first caller
 * that needs them; read-only afterwards (every registry shares them). */
static struct weft_registry builtin;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;
static char builtin_err[1024];
static int builtin_ok;

static void free_models(struct weft_registry *r)
{
	for (size_t i = r->nshared; i < r->nmodels; i++)
		weft_model_free(r->models[i]);
	r->nmodels = r->nshared;
}

static void free_builtin(void)
{
	free_models(&builtin);
}

static int cmp_byte(const void *a, const void *b)
{
	const struct weft_model_spec *x = *(struct weft_model_spec *const *) a;
	const struct weft_model_spec *y = *(struct weft_model_spec *const *) b;
	return (unsigned char) x->code - (unsigned char) y->code;
}

static int add(struct weft_registry *r, struct weft_model_spec *m, char *err, size_t errlen)
{
	if (weft_model_collide(m, (const struct weft_model_spec *const *) r->models, r->nmodels,
				err, errlen) != 0) {
		weft_model_free(m);
		return -1;
	}
	if (r->nmodels == MAX_MODELS) {
		snprintf(err, errlen, "%s: too many models (at most %d)", m->source, MAX_MODELS);
		weft_model_free(m);
		return -1;
	}
	r->models[r->nmodels++] = m;
	r->by_code[(unsigned char) m->code] = m;
	return 0;
}

static void load_builtin(void)
{
	for (size_t i = 0; i < weft_nbuiltin_texts; i++) {
		char name[128];
		snprintf(name, sizeof name, "built-in %s", weft_builtin_texts[i].name);
		struct weft_model_spec *m = weft_model_parse(weft_builtin_texts[i].text,
				weft_builtin_texts[i].len, name, builtin_err, sizeof builtin_err);
		if (m == NULL || add(&builtin, m, builtin_err, sizeof builtin_err) != 0) {
			free_builtin();
			memset(builtin.by_code, 0, sizeof builtin.by_code);
			return;
		}
	}
	qsort(builtin.models, builtin.nmodels, sizeof *builtin.models, cmp_byte);
	builtin_ok = 1;
	atexit(free_builtin);
}

const struct weft_registry *weft_registry_builtin(char *err, size_t errlen)
{
	pthread_once(&builtin_once, load_builtin);
	if (!builtin_ok) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s", builtin_err);
		return NULL;
	}
	return &builtin;
}

/* r, or the built-in registry when r is NULL (NULL when that is broken). */
static const struct weft_registry *reg(const struct weft_registry *r)
{
	return r != NULL ? r : weft_registry_builtin(NULL, 0);
}

struct weft_registry *weft_registry_new(char *err, size_t errlen)
{
	const struct weft_registry *b = weft_registry_builtin(err, errlen);
	if (b == NULL)
		return NULL;
	struct weft_registry *r = malloc(sizeof *r);
	if (r == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	*r = *b;
	r->nshared = r->nmodels;
	return r;
}

void weft_registry_free(struct weft_registry *r)
{
	if (r == NULL)
		return;
	free_models(r);
	free(r);
}

int weft_registry_add_file(struct weft_registry *r, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		snprintf(err, errlen, "%s: cannot open the model file: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		fclose(f);
		return -1;
	}
	if ((uint64_t) st.st_size > MAX_MODEL_FILE) {
		snprintf(err, errlen, "%s: the model file is larger than %u MiB", path,
				MAX_MODEL_FILE >> 20);
		fclose(f);
		return -1;
	}
	size_t n = (size_t) st.st_size;
	char *text = malloc(n + 1);
	if (text == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		fclose(f);
		return -1;
	}
	size_t got = fread(text, 1, n, f);
	int rerr = ferror(f);
	fclose(f);
	if (rerr || got != n) {
		snprintf(err, errlen, "%s: cannot read the model file", path);
		free(text);
		return -1;
	}
	text[n] = '\0';
	struct weft_model_spec *m = weft_model_parse(text, n, path, err, errlen);
	free(text);
	if (m == NULL)
		return -1;
	return add(r, m, err, errlen);
}

size_t weft_model_count(const struct weft_registry *r)
{
	r = reg(r);
	return r != NULL ? r->nmodels : 0;
}

const struct weft_model_spec *weft_model_at(const struct weft_registry *r, size_t i)
{
	r = reg(r);
	return r != NULL && i < r->nmodels ? r->models[i] : NULL;
}

const struct weft_model_spec *weft_model_by_code(const struct weft_registry *r, char code)
{
	r = reg(r);
	return r != NULL ? r->by_code[(unsigned char) code] : NULL;
}

const struct weft_model_spec *weft_model_by_name(const struct weft_registry *r, const char *name)
{
	r = reg(r);
	for (size_t i = 0; r != NULL && i < r->nmodels; i++)
		if (strcmp(r->models[i]->name, name) == 0)
			return r->models[i];
	return NULL;
}

const struct weft_event_spec *weft_model_event(const struct weft_registry *r, const char mcv[3])
{
	const struct weft_model_spec *m = weft_model_by_code(r, mcv[0]);
	if (m == NULL)
		return NULL;
	const struct weft_event_spec *wild = NULL;
	for (size_t i = 0; i < m->nevents; i++) {
		const struct weft_event_spec *e = &m->events[i];
		if (e->mcv[1] != mcv[1] || e->desc[0] == '\0')
			continue;
		if (e->mcv[2] == mcv[2])
			return e;
		if (e->mcv[2] == '*')
			wild = e;
	}
	return wild;
}
