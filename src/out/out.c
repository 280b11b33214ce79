/* SPDX-License-Identifier: MIT */
/* out.c - the part of the output interface shared by every format. */
#include "out.h"

struct emu_sink out_sink(struct out *o)
{
	struct emu_sink s = { o, o->ops->records, o->ops->internal };
	return s;
}

int out_close(struct out *o, int64_t duration, char *err, size_t errlen)
{
	if (o == NULL)
		return 0;
	return o->ops->close(o, duration, err, errlen);
}
