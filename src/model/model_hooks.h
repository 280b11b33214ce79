/* SPDX-License-Identifier: MIT */
/* model_hooks.h - the C hooks of the built-in models (internal to src/model). */
#ifndef WEFT_MODEL_HOOKS_H
#define WEFT_MODEL_HOOKS_H

#include <inttypes.h>
#include <stddef.h>

#include "model_emu.h"
#include "weft/weft.h"

struct emu_hook_def {
	const char *name;
	emu_hook_fn fn;
};

/* ovni/ovni_hooks.c */
extern const struct emu_hook_def ovni_hooks[];
extern const size_t ovni_hooks_state_size;

#endif
