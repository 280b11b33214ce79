/* SPDX-License-Identifier: MIT */
/*
 * palette.c - the colours of the values 0 to OUT_NCOLORS - 1 in every
 * output that draws them: the .pcf's DEFAULT_SEMANTIC table (what Paraver
 * shows them in) and weft view's pictures, so that a value has one colour
 * in both.
 */
#include "out.h"

const unsigned char out_colors[OUT_NCOLORS][3] = {
	{ 0, 0, 0 }, { 0, 130, 200 }, { 217, 217, 217 }, { 230, 25, 75 },
	{ 60, 180, 75 }, { 255, 225, 25 }, { 245, 130, 48 }, { 145, 30, 180 },
	{ 70, 240, 240 }, { 240, 50, 230 }, { 210, 245, 60 }, { 250, 190, 212 },
	{ 0, 128, 128 }, { 128, 128, 128 }, { 220, 190, 255 }, { 170, 110, 40 },
	{ 255, 250, 200 }, { 128, 0, 0 }, { 170, 255, 195 }, { 128, 128, 0 },
	{ 255, 215, 180 }, { 0, 0, 128 }, { 0, 0, 255 },
};
