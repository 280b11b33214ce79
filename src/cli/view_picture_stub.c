/* SPDX-License-Identifier: MIT */
/* view_picture_stub.c - view_picture_run where the pictures are not built. */
#include <stdio.h>

#include "view_picture.h"

int view_picture_run(const struct view_picture_req *r, char *err, size_t errlen)
{
	(void) r;
	snprintf(err, errlen, "pictures are not built in this branch");
	return -1;
}
