/* SPDX-License-Identifier: MIT */
/*
 * ctf_meta.c - the TSDL metadata of `weft export ctf` (plain text, CTF
 * 1.8): the integer types, the trace (UUID, the byte order of the machine
 * that wrote the ovni trace, which is this one's: the payloads are copied
 * as they are), its environment (the ovni trace, its looms and their clock
 * offsets), the clock (ns, its offset the trace's: a timestamp plus the
 * offset is the event's clock with its loom's offset applied, the clock
 * weft emu orders by), the one stream class (the layout ctf_packet.c
 * writes) and the event classes (ctf_class.c): a model's event named
 * "MODEL:MCV", its fields named and typed from the model's description.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctf_internal.h"
#include "weft_version.h"

/* TSDL's keywords and the type names below: a field with one of these
 * names (or one starting with '_' or a digit) is written with a leading
 * '_', which CTF readers remove. */
static const char *const reserved[] = {
	"align", "callsite", "const", "char", "clock", "double", "enum", "env", "event",
	"floating_point", "float", "integer", "int", "long", "short", "signed", "stream",
	"string", "struct", "trace", "typealias", "typedef", "unsigned", "variant", "void",
	"_Bool", "_Complex", "_Imaginary", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
	"int8_t", "int16_t", "int32_t", "int64_t", "uint64_clock_t", NULL,
};

static void put_ident(FILE *f, const char *name)
{
	int under = name[0] == '_' || (name[0] >= '0' && name[0] <= '9');
	for (size_t i = 0; !under && reserved[i] != NULL; i++)
		under = strcmp(reserved[i], name) == 0;
	fprintf(f, "%s%s", under ? "_" : "", name);
}

/* A string literal: '"' and '\' escaped, control bytes as '?'. */
static void put_str(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char) s[i];
		if (ch == '"' || ch == '\\')
			fputc('\\', f);
		fputc(ch < 0x20 || ch == 0x7f ? '?' : ch, f);
	}
	fputc('"', f);
}

static const char *const type_of[] = {
	[WEFT_FIELD_I8] = "int8_t", [WEFT_FIELD_I16] = "int16_t",
	[WEFT_FIELD_I32] = "int32_t", [WEFT_FIELD_I64] = "int64_t",
	[WEFT_FIELD_U8] = "uint8_t", [WEFT_FIELD_U16] = "uint16_t",
	[WEFT_FIELD_U32] = "uint32_t", [WEFT_FIELD_U64] = "uint64_t",
	[WEFT_FIELD_STR] = "string",
};

static void put_class(FILE *f, const struct ctf_class *k)
{
	const struct weft_event_spec *s = k->spec;
	fprintf(f, "\nevent {\n\tname = ");
	char name[80];
	int n = snprintf(name, sizeof name, "%s:%c%c%c", k->model->name, s->mcv[0], s->mcv[1],
			s->mcv[2]);
	put_str(f, name, n < (int) sizeof name ? (size_t) n : sizeof name - 1);
	fprintf(f, ";\n\tid = %" PRIu32 ";\n\tstream_id = 0;\n", k->id);
	if (s->nfields == 0 && !k->wildcard && !k->jumbo) {
		fprintf(f, "};\n");
		return;
	}
	fprintf(f, "\tfields := struct {\n");
	if (k->wildcard) {
		fprintf(f, "\t\tuint8_t ");
		put_ident(f, k->vname);
		fprintf(f, ";\n");
	}
	for (size_t i = 0; i < s->nfields; i++) {
		fprintf(f, "\t\t%s ", type_of[s->fields[i].type]);
		put_ident(f, s->fields[i].name);
		fprintf(f, ";\n");
	}
	if (k->jumbo) {
		fprintf(f, "\t\tuint32_t ");
		put_ident(f, k->rname);
		fprintf(f, "_size;\n\t\tuint8_t ");
		put_ident(f, k->rname);
		fprintf(f, "[");
		put_ident(f, k->rname);
		fprintf(f, "_size];\n");
	}
	fprintf(f, "\t};\n};\n");
}

static const char header[] =
	CTF_META_SIGNATURE " " WEFT_VERSION " from an ovni trace: docs/export.md */\n"
	"\n"
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"typealias integer { size = 8; align = 8; signed = true; } := int8_t;\n"
	"typealias integer { size = 16; align = 8; signed = true; } := int16_t;\n"
	"typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
	"typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n";

static const char stream_class[] =
	"\ntypealias integer { size = 64; align = 8; signed = false; "
	"map = clock.monotonic.value; } := uint64_clock_t;\n"
	"\n"
	"stream {\n"
	"\tid = 0;\n"
	"\tevent.header := struct {\n"
	"\t\tuint16_t id;\n"
	"\t\tuint64_clock_t timestamp;\n"
	"\t};\n"
	"\tpacket.context := struct {\n"
	"\t\tuint64_clock_t timestamp_begin;\n"
	"\t\tuint64_clock_t timestamp_end;\n"
	"\t\tuint64_t content_size;\n"
	"\t\tuint64_t packet_size;\n"
	"\t\tuint64_t packet_seq_num;\n"
	"\t\tuint64_t events_discarded;\n"
	"\t\tuint32_t loom_id;\n"
	"\t\tint32_t pid;\n"
	"\t\tint32_t tid;\n"
	"\t\tint32_t rank;\n"
	"\t\tstring loom;\n"
	"\t\tstring path;\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"weft:raw\";\n"
	"\tid = 0;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tuint8_t model;\n"
	"\t\tuint8_t category;\n"
	"\t\tuint8_t value;\n"
	"\t\tuint8_t payload_size;\n"
	"\t\tuint8_t payload[payload_size];\n"
	"\t};\n"
	"};\n"
	"\n"
	"event {\n"
	"\tname = \"weft:raw_jumbo\";\n"
	"\tid = 1;\n"
	"\tstream_id = 0;\n"
	"\tfields := struct {\n"
	"\t\tuint8_t model;\n"
	"\t\tuint8_t category;\n"
	"\t\tuint8_t value;\n"
	"\t\tuint32_t jumbo_size;\n"
	"\t\tuint8_t jumbo[jumbo_size];\n"
	"\t};\n"
	"};\n";

static void put_uuid(FILE *f, const uint8_t *u)
{
	fputc('"', f);
	for (int i = 0; i < 16; i++)
		fprintf(f, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", u[i]);
	fputc('"', f);
}

int ctf_meta_write(struct export_dir *d, const struct ctf_meta_info *m, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (f == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	fputs(header, f);
	static const uint16_t one = 1;
	int le = *(const uint8_t *) &one == 1;
	fprintf(f, "\ntrace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = ");
	put_uuid(f, m->uuid);
	fprintf(f, ";\n\tbyte_order = %s;\n", le ? "le" : "be");
	fprintf(f, "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n"
			"\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t};\n};\n");

	fprintf(f, "\nenv {\n\tdomain = \"ovni\";\n\ttracer_name = \"weft\";\n"
			"\tweft_version = \"" WEFT_VERSION "\";\n\ttrace_path = ");
	put_str(f, m->trace_path, strlen(m->trace_path));
	size_t nl = weft_nlooms(m->trace);
	fprintf(f, ";\n\tlooms = %zu;\n", nl);
	for (size_t i = 0; i < nl; i++) {
		const struct weft_loom *l = weft_loom_at(m->trace, i);
		fprintf(f, "\tloom_%zu = ", i);
		put_str(f, l->name, strlen(l->name));
		fprintf(f, ";\n\tloom_%zu_clock_offset = %" PRId64 ";\n", i, l->clock_offset);
	}
	fprintf(f, "};\n");

	/* the offset: offset_s whole seconds (floor) and offset ns in [0, 1e9) */
	int64_t s = m->clock_base / 1000000000, ns = m->clock_base % 1000000000;
	if (ns < 0) {
		s -= 1;
		ns += 1000000000;
	}
	fprintf(f, "\nclock {\n\tname = monotonic;\n\tuuid = ");
	put_uuid(f, m->uuid);
	fprintf(f, ";\n\tdescription = \"the ovni trace's clock (CLOCK_MONOTONIC of its "
			"looms, ns), its looms' clock offsets applied\";\n"
			"\tfreq = 1000000000;\n\tprecision = 1;\n\toffset_s = %" PRId64
			";\n\toffset = %" PRId64 ";\n\tabsolute = false;\n};\n", s, ns);
	fputs(stream_class, f);
	for (size_t i = 0; i < ctf_classes_count(m->classes); i++)
		put_class(f, ctf_class_at(m->classes, i));
	if (fclose(f) != 0 || text == NULL) {
		free(text);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	int fd = ctf_dir_create(d, "metadata", err, errlen);
	if (fd < 0) {
		free(text);
		return -1;
	}
	int r = ctf_write_all(fd, text, len);
	if (close(fd) != 0)
		r = -1;
	free(text);
	if (r != 0) {
		snprintf(err, errlen, "%s/metadata: cannot write: %s", d->tmp, strerror(errno));
		return -1;
	}
	return 0;
}
