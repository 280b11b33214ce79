/* SPDX-License-Identifier: MIT */
/*
 * registry.c - the one list of models: the built-in descriptions (compiled
 * in, see cmake/embed_models.cmake), loaded on first use in model-byte
 * order, then the models a user adds from files.
 */
#include <errno.h>
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

static struct weft_model_spec *models[MAX_MODELS];
static size_t nmodels;
static int loaded;
static const struct weft_model_spec *by_code[256];

static void free_all(void)
{
	for (size_t i = 0; i < nmodels; i++)
		weft_model_free(models[i]);
	nmodels = 0;
	memset(by_code, 0, sizeof by_code);
}

static int cmp_byte(const void *a, const void *b)
{
	const struct weft_model_spec *x = *(struct weft_model_spec *const *) a;
	const struct weft_model_spec *y = *(struct weft_model_spec *const *) b;
	return (unsigned char) x->code - (unsigned char) y->code;
}

static int add(struct weft_model_spec *m, char *err, size_t errlen)
{
	if (weft_model_collide(m, (const struct weft_model_spec *const *) models, nmodels, err,
				errlen) != 0) {
		weft_model_free(m);
		return -1;
	}
	if (nmodels == MAX_MODELS) {
		snprintf(err, errlen, "%s: too many models (at most %d)", m->source, MAX_MODELS);
		weft_model_free(m);
		return -1;
	}
	models[nmodels++] = m;
	by_code[(unsigned char) m->code] = m;
	return 0;
}

int weft_models_load(char *err, size_t errlen)
{
	if (loaded)
		return 0;
	loaded = 1;
	atexit(free_all);
	for (size_t i = 0; i < weft_nbuiltin_texts; i++) {
		char name[128];
		snprintf(name, sizeof name, "built-in %s", weft_builtin_texts[i].name);
		struct weft_model_spec *m = weft_model_parse(weft_builtin_texts[i].text,
				weft_builtin_texts[i].len, name, err, errlen);
		if (m == NULL || add(m, err, errlen) != 0) {
			free_all();
			return -1;
		}
	}
	qsort(models, nmodels, sizeof *models, cmp_byte);
	return 0;
}

int weft_models_add_file(const char *path, char *err, size_t errlen)
{
	if (weft_models_load(err, errlen) != 0)
		return -1;
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
	return add(m, err, errlen);
}

static void ensure(void)
{
	if (!loaded) {
		char err[512];
		if (weft_models_load(err, sizeof err) != 0)
			fprintf(stderr, "weft: the built-in models are broken: %s\n", err);
	}
}

size_t weft_model_count(void)
{
	ensure();
	return nmodels;
}

const struct weft_model_spec *weft_model_at(size_t i)
{
	ensure();
	return i < nmodels ? models[i] : NULL;
}

const struct weft_model_spec *weft_model_by_code(char code)
{
	ensure();
	return by_code[(unsigned char) code];
}

const struct weft_model_spec *weft_model_by_name(const char *name)
{
	ensure();
	for (size_t i = 0; i < nmodels; i++)
		if (strcmp(models[i]->name, name) == 0)
			return models[i];
	return NULL;
}

const struct weft_event_spec *weft_model_event(const char mcv[3])
{
	const struct weft_model_spec *m = weft_model_by_code(mcv[0]);
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
