/* SPDX-License-Identifier: MIT */
/*
 * view_picture.h - `weft view --png/--svg/--pdf`: a picture of a window of
 * a trace's timeline (src/view/picture.h; docs/view.md, "Pictures"). cmd_view.c
 * parses the options and calls view_picture_run.
 */
#ifndef WEFT_CLI_VIEW_PICTURE_H
#define WEFT_CLI_VIEW_PICTURE_H

#include <stddef.h>

struct view_picture_req {
	const char *trace;
	const char *const *models; /* --model files, NULL-terminated; NULL: none */
	const char *from, *to;     /* --from/--to as given; NULL: not given */
	const char *channel;       /* --channel: a catalogue name; NULL: ovni.thread.state */
	const char *png, *svg, *pdf; /* files to write; NULL: not asked */
	unsigned width, height;    /* --size WxH; 0: the default */
	int all_models;            /* -a: every model enabled */
};

/* 0, or -1 with a one-sentence reason in err. */
int view_picture_run(const struct view_picture_req *r, char *err, size_t errlen);

/* --size WxH read into *w, *h (checked as view_picture_run checks them):
 * 0, or -1 with the reason in err. */
int view_picture_parse_size(const char *s, unsigned *w, unsigned *h, char *err, size_t errlen);

#endif
