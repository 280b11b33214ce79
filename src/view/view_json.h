/* SPDX-License-Identifier: MIT */
/* view_json.h - the JSON of the page and of the server's answers (page.c). */
#ifndef WEFT_VIEW_JSON_H
#define WEFT_VIEW_JSON_H

#include <stdint.h>
#include <stdio.h>

#include "view_internal.h"

/* A writer of JSON text into f (NULL: only counted), through its own
 * buffer (a stdio call per token cost 40% of weft view's time). */
#define VJ_BUF (1 << 16)
struct vj {
	FILE *f;
	uint64_t n;  /* bytes written */
	int failed;
	size_t len;  /* bytes in buf */
	char buf[VJ_BUF];
};

static inline void vj_init(struct vj *j, FILE *f)
{
	j->f = f;
	j->n = 0;
	j->failed = 0;
	j->len = 0;
}

/* The buffer written out: 0, or -1 when a write failed (then or before). */
int vj_flush(struct vj *j);

void vj_raw(struct vj *j, const char *s, size_t n);
void vj_s(struct vj *j, const char *s);
void vj_int(struct vj *j, int64_t v);
/* A JSON string that no HTML parser reads as markup (page.c). */
void vj_str(struct vj *j, const char *s);
void vj_ivs(struct vj *j, const struct view_track *t, size_t a, size_t b, int64_t prev);

#endif
