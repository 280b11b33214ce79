/* SPDX-License-Identifier: MIT */
/*
 * fuzz_model.c - libFuzzer target for the model description loader
 * (src/model/model_load.c): any input is either a model or a refusal with
 * "NAME:LINE: reason"; never a crash, a leak or a hang.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[1024];
	err[0] = '\0';
	struct weft_model_spec *m = weft_model_parse((const char *) data, size, "fuzz.yaml", err,
			sizeof err);
	if (m == NULL) {
		if (strncmp(err, "fuzz.yaml", 9) != 0)
			__builtin_trap(); /* every refusal names the file */
		return 0;
	}
	/* Describe every event with a payload of zeros. */
	static const uint8_t zeros[64];
	char buf[256];
	for (size_t i = 0; i < m->nevents; i++)
		weft_event_describe(&m->events[i], zeros, sizeof zeros, buf, sizeof buf);
	weft_model_free(m);
	return 0;
}
