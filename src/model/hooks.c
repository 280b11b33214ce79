/* SPDX-License-Identifier: MIT */
/*
 * hooks.c - finds the C hooks of the built-in models by name, and the calls
 * a hook makes to the engine, which go through the ops table the engine put
 * in the context (src/model links nothing of src/emu).
 */
#include <string.h>

#include "model_hooks.h"

emu_hook_fn emu_hook_by_name(const char *name, size_t *thread_state_size)
{
	for (size_t i = 0; ovni_hooks[i].name != NULL; i++)
		if (strcmp(ovni_hooks[i].name, name) == 0) {
			*thread_state_size = ovni_hooks_state_size;
			return ovni_hooks[i].fn;
		}
	return NULL;
}

int emu_hook_fail(struct emu_hook_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = ctx->ops->fail(ctx, fmt, ap);
	va_end(ap);
	return r;
}

void emu_hook_warn(struct emu_hook_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ctx->ops->warn(ctx, fmt, ap);
	va_end(ap);
}

void emu_hook_info(struct emu_hook_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ctx->ops->info(ctx, fmt, ap);
	va_end(ap);
}

enum emu_state emu_hook_thread_state(const struct emu_hook_ctx *ctx)
{
	return ctx->ops->thread_state(ctx);
}

int emu_hook_lint(const struct emu_hook_ctx *ctx)
{
	return ctx->ops->lint(ctx);
}
