/* SPDX-License-Identifier: MIT */
/* model_tables.h - the per-model tables the registry lists (internal). */
#ifndef WEFT_MODEL_MODEL_TABLES_H
#define WEFT_MODEL_MODEL_TABLES_H

#include "model.h"

/* One per model with an event table; add new ones here and in registry.c. */
extern const struct weft_model_spec weft_model_ovni;

#endif
