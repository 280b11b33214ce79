/* SPDX-License-Identifier: MIT */
/*
 * opts_size.h - the size rule of the option structs of the public calls
 * (struct weft_open_opts, struct weft_follow_opts, struct weft_emulate_opts):
 * each starts with a size_t sz, the caller's sizeof (WEFT_OPTS in
 * include/weft/weft.h). docs/reader.md, "Options that grow".
 */
#ifndef WEFT_FORMAT_OPTS_SIZE_H
#define WEFT_FORMAT_OPTS_SIZE_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Copies the caller's struct src (NULL: the defaults) into dst, full bytes
 * that this library knows: the bytes past the caller's sz stay zero (the
 * defaults of the fields an older caller does not know). A larger sz is
 * accepted when every byte past full is zero. Returns 0, or -1 with the
 * reason in err (may be NULL): sz smaller than the sz field itself (0
 * included), or a non-zero byte past full, named by its offset. dst->sz is
 * set to full. */
static inline int weft_opts_take(void *dst, size_t full, const void *src, const char *name,
		char *err, size_t errlen)
{
	/* name: the call and the struct, "weft_open: struct weft_open_opts" */
	memset(dst, 0, full);
	if (src == NULL) {
		memcpy(dst, &full, sizeof full);
		return 0;
	}
	size_t sz;
	memcpy(&sz, src, sizeof sz);
	if (sz < sizeof sz) {
		if (err != NULL && errlen > 0)
			snprintf(err, errlen, "%s: sz is %zu, smaller than the sz field "
					"(%zu bytes); declare it with WEFT_OPTS", name, sz, sizeof sz);
		return -1;
	}
	const unsigned char *p = src;
	for (size_t i = full; i < sz; i++) {
		if (p[i] != 0) {
			if (err != NULL && errlen > 0)
				snprintf(err, errlen, "%s: byte %zu is not zero (sz %zu, "
						"this library knows %zu bytes)", name, i, sz, full);
			return -1;
		}
	}
	memcpy(dst, src, sz < full ? sz : full);
	memcpy(dst, &full, sizeof full);
	return 0;
}

#endif
