/* SPDX-License-Identifier: MIT */
/*
 * fuzz_meta - the metadata loaders: the input as a stream.json, a v1
 * metadata.json and a clock-offsets.txt (parsed from memory), then as the
 * stream.json of one stream (or the clock-offsets.txt) of a scratch trace
 * that is opened strictly and leniently, so the merge rules run too.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void parse_all(const char *text, size_t len)
{
	char err[WEFT_ERR_MAX];
	for (int mode = 0; mode < 2; mode++) {
		struct weft_diag d = { mode ? WEFT_LENIENT : WEFT_STRICT, fz_ignore_warning, NULL,
			err, sizeof err, 0, 0 };
		struct weft_meta m;
		json_t *root;
		err[0] = '\0';
		if (weft_meta_parse_v3(text, len, "s.json", &d, &m, &root) < 0 && err[0] == '\0')
			abort();
		weft_meta_free(&m);
		if (root)
			json_decref(root);
		err[0] = '\0';
		if (weft_meta_parse_v1(text, len, "m.json", &d, &m, &root) < 0 && err[0] == '\0')
			abort();
		weft_meta_free(&m);
		if (root)
			json_decref(root);
	}
	struct weft_clkoff_row *rows;
	size_t n;
	err[0] = '\0';
	if (weft_clkoff_parse(text, len, "c.txt", &rows, &n, err, sizeof err) == 0)
		weft_clkoff_free(rows, n);
	else if (err[0] == '\0')
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	parse_all((const char *) data, size);
	fz_setup();
	static const uint8_t obs[] = {
		'o', 'v', 'n', 'i', 1, 0, 0, 0,
		0, 'O', 'H', 'p', 1, 0, 0, 0, 0, 0, 0, 0,
		0, 'O', 'H', 'r', 2, 0, 0, 0, 0, 0, 0, 0,
	};
	fz_write("loom.h.0/proc.1/thread.1/stream.obs", obs, sizeof obs);
	fz_write("loom.h.0/proc.1/thread.2/stream.obs", obs, sizeof obs);
	int as_clkoff = size > 0 && data[0] == 'r'; /* "rank hostname ..." */
	if (as_clkoff) {
		char json[512];
		int n = snprintf(json, sizeof json, fz_json, 2);
		fz_write("loom.h.0/proc.1/thread.2/stream.json", json, (size_t) n);
		fz_write("clock-offsets.txt", data, size);
	} else {
		char path[512];
		snprintf(path, sizeof path, "%s/clock-offsets.txt", fz_root);
		unlink(path);
		fz_write("loom.h.0/proc.1/thread.2/stream.json", data, size);
	}
	weft_chunk_override = 0;
	fz_read_all();
	return 0;
}
