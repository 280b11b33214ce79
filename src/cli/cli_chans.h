/* SPDX-License-Identifier: MIT */
/*
 * cli_chans.h - the channels an event of a model given with --model writes,
 * by their catalogue names (docs/emu.md, THE CHANNEL CATALOGUE): what
 * `weft dump --model` prints after such an event's description and what
 * `weft top --model` counts per channel. The names are made as the
 * catalogue makes a model channel's (src/emu/catalogue.c: "<model>.<channel>",
 * lower case, a character other than a letter, digit, '_', '-' or '.' made
 * '_'), so they are those of `weft sql`'s channel table, weft.emulate() and
 * Perfetto's "<model> <channel>" tracks (tests/python/test_channels.py).
 */
#ifndef WEFT_CLI_CHANS_H
#define WEFT_CLI_CHANS_H

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "model_emu.h"

/* The model of byte code when it is one of r that is not built in (one
 * given with --model: a user model cannot take a built-in byte), else
 * NULL. */
static inline const struct weft_model_spec *cli_user_model(const struct weft_registry *r,
		char code)
{
	char err[256];
	const struct weft_registry *b = weft_registry_builtin(err, sizeof err);
	if (r == NULL || (b != NULL && weft_model_by_code(b, code) != NULL))
		return NULL;
	const struct weft_model_spec *m = weft_model_by_code(r, code);
	return m != NULL && m->emu != NULL ? m : NULL;
}

/* The emulation's description of mcv in model m: the event of that exact
 * MCV, else the one whose value is '*'; NULL when none. */
static inline const struct emu_event_desc *cli_emu_event(const struct weft_model_spec *m,
		const char *mcv)
{
	const struct emu_event_desc *any = NULL;
	for (size_t i = 0; i < m->emu->nevents; i++) {
		const struct emu_event_desc *e = &m->emu->events[i];
		if (e->mcv[0] != mcv[0] || e->mcv[1] != mcv[1])
			continue;
		if (e->mcv[2] == mcv[2])
			return e;
		if (e->mcv[2] == '*')
			any = e;
	}
	return any;
}

/* The catalogue name of channel ch of model m, into buf (len > 0). */
static inline void cli_chan_name(const struct weft_model_spec *m, size_t ch, char *buf,
		size_t len)
{
	snprintf(buf, len, "%s.%s", m->emu->name, m->emu->chans[ch].name);
	for (char *p = buf; *p; p++) {
		unsigned char c = (unsigned char) *p;
		if (isupper(c))
			*p = (char) tolower(c);
		else if (!isalnum(c) && c != '_' && c != '-' && c != '.')
			*p = '_';
	}
}

/* The channels (indexes in m->emu->chans) that an event of mcv writes
 * (set, push or pop; a channel once, in the order of the actions), when a
 * model given with --model describes it: how many, at most max, in ch;
 * *model the model. 0 for every other MCV. */
static inline size_t cli_user_chans(const struct weft_registry *r, const char *mcv,
		const struct weft_model_spec **model, size_t *ch, size_t max)
{
	const struct weft_model_spec *m = cli_user_model(r, mcv[0]);
	const struct emu_event_desc *e = m != NULL ? cli_emu_event(m, mcv) : NULL;
	size_t n = 0;
	for (size_t i = 0; e != NULL && i < e->nactions && n < max; i++) {
		const struct emu_action *a = &e->actions[i];
		if (a->op != EMU_OP_SET && a->op != EMU_OP_PUSH && a->op != EMU_OP_POP)
			continue;
		if (a->chan >= m->emu->nchans || m->emu->chans[a->chan].family != EMU_FAMILY_NONE)
			continue;
		size_t k = 0;
		while (k < n && ch[k] != a->chan)
			k++;
		if (k == n)
			ch[n++] = a->chan;
	}
	*model = m;
	return n;
}

#endif /* WEFT_CLI_CHANS_H */
