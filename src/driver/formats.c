/* SPDX-License-Identifier: MIT */
/*
 * formats.c - the output formats of src/out's registry as the driver's
 * callers see them (driver.h): names, what each writes, its parameters,
 * and the check of a "FORMAT:KEY=VALUE,..." spec, for the CLI's --help
 * and option errors (src/cli reaches src/out only through the driver).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "out.h"

size_t weft_output_count(void)
{
	return out_format_count();
}

int weft_output_at(size_t i, struct weft_output_info *info)
{
	const struct out_format *f = out_format_at(i);
	if (f == NULL)
		return -1;
	info->name = f->name;
	info->what = f->what;
	info->nparams = f->nparams;
	return 0;
}

static const char *type_text(const struct out_param *q)
{
	switch (q->type) {
	case OUT_PARAM_BOOL: return "yes|no";
	case OUT_PARAM_NAME: return "NAME";
	case OUT_PARAM_ENUM: break;
	}
	return NULL;
}

int weft_output_param(size_t i, size_t k, struct weft_output_param *param)
{
	const struct out_format *f = out_format_at(i);
	if (f == NULL || k >= f->nparams)
		return -1;
	const struct out_param *q = &f->params[k];
	param->key = q->key;
	param->def = q->def;
	param->help = q->help;
	param->choices = q->type == OUT_PARAM_ENUM ? q->choices : NULL;
	param->type = type_text(q);
	return 0;
}

int weft_output_check(const char *spec, char *err, size_t errlen)
{
	const char *colon = strchr(spec, ':');
	size_t nl = colon != NULL ? (size_t) (colon - spec) : strlen(spec);
	const struct out_format *f = NULL;
	for (size_t i = 0; i < out_format_count() && f == NULL; i++) {
		const struct out_format *g = out_format_at(i);
		if (strlen(g->name) == nl && strncmp(g->name, spec, nl) == 0)
			f = g;
	}
	if (f == NULL) {
		snprintf(err, errlen, "unknown output format '%.*s'", (int) nl, spec);
		return -1;
	}
	struct out_params *p = malloc(sizeof *p);
	if (p == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int r = out_params_parse(f, colon != NULL ? colon + 1 : NULL, p, err, errlen);
	free(p);
	return r;
}
