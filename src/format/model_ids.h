/* SPDX-License-Identifier: MIT */
/*
 * model_ids.h - the models of the ovni family by name and model byte: what
 * the reader needs to know which event bytes a trace's ovni.require allows.
 * What the models mean is in src/model.
 */
#ifndef WEFT_FORMAT_MODEL_IDS_H
#define WEFT_FORMAT_MODEL_IDS_H

#include <stddef.h>
#include <string.h>

struct weft_model_id {
	const char *name;
	char byte;
};

static const struct weft_model_id weft_model_ids[] = {
	{ "nanos6", '6' }, { "nodes", 'D' }, { "kernel", 'K' }, { "laplace", 'L' },
	{ "mpi", 'M' },
	{ "ovni", 'O' }, { "openmp", 'P' }, { "tampi", 'T' }, { "nosv", 'V' }, { "sample", 'W' },
};

/* The model byte of a known model name, or 0. */
static inline char weft_model_id_byte(const char *name)
{
	for (size_t i = 0; i < sizeof weft_model_ids / sizeof weft_model_ids[0]; i++)
		if (strcmp(weft_model_ids[i].name, name) == 0)
			return weft_model_ids[i].byte;
	return 0;
}

/* Whether b is the byte of a known model. */
static inline int weft_model_id_known_byte(unsigned char b)
{
	for (size_t i = 0; i < sizeof weft_model_ids / sizeof weft_model_ids[0]; i++)
		if ((unsigned char) weft_model_ids[i].byte == b)
			return 1;
	return 0;
}

#endif
