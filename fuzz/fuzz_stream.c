/* SPDX-License-Identifier: MIT */
/*
 * fuzz_stream - the binary stream decoder: the in-memory decoder on the
 * input, then the input split into two stream.obs files of a scratch trace
 * read through small chunks (chunk ends, jumbo growth) and merged.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count(void *ctx, const struct weft_event *ev)
{
	uint64_t *n = ctx;
	*n += ev->payload_size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[512];
	uint64_t n = 0;
	why[0] = '\0';
	if (weft_decode_buffer(data, size, count, &n, why, sizeof why) < 0 && why[0] == '\0')
		abort();
	fz_setup();
	/* Split: the first byte says where; each half gets a valid header unless
	 * the input starts with 'o' (then the input's own bytes are the header). */
	size_t cut = size ? (size_t) data[0] * size / 256 : 0;
	static uint8_t buf[1 << 20];
	for (int s = 0; s < 2; s++) {
		const uint8_t *p = s ? data + cut : data;
		size_t len = s ? size - cut : cut;
		size_t k = 0;
		if (!(size && data[0] == 'o')) {
			memcpy(buf, WEFT_OBS_MAGIC, WEFT_OBS_MAGIC_LEN);
			weft_store_u32(buf + WEFT_OBS_MAGIC_LEN, WEFT_OBS_VERSION);
			k = WEFT_OBS_HEADER_SIZE;
		}
		if (len > sizeof buf - k)
			len = sizeof buf - k;
		memcpy(buf + k, p, len);
		char rel[64];
		snprintf(rel, sizeof rel, "loom.h.0/proc.1/thread.%d/stream.obs", s + 1);
		fz_write(rel, buf, k + len);
	}
	weft_chunk_override = WEFT_EV_MAX_NORMAL_SIZE + (size ? data[size - 1] % 64 : 0);
	fz_read_all();
	return 0;
}
