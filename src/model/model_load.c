/* SPDX-License-Identifier: MIT */
/*
 * model_load.c - reads a model description (YAML, docs/models.md) into the
 * dump table and the emulation description. Parsing is libyaml's; this file
 * walks the document and checks every key and value, so that a malformed
 * file is refused with its line and what is wrong.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "model.h"

#define MAX_FLAGS 8
#define MAX_ACTIONS 8

struct box {
	struct weft_model_spec spec; /* first: freed through it */
	void **ptrs;
	size_t nptrs, cap;
	struct weft_model_prv *prv; /* the Paraver types it writes */
	size_t nprv;
};

struct skey {
	const char *s;
	size_t i;
};

struct vkey {
	int64_t v;
	size_t i;
};

struct ld {
	yaml_document_t doc;
	const char *name;
	char *err;
	size_t errlen;
	struct box *box;
	struct emu_model_desc *m;
	struct emu_chan_desc *chans;
	size_t nchans;
	/* The channel names sorted (find_chan), and each channel's labelled
	 * values sorted (pairs); see "duplicates". */
	struct skey *names;
	struct vkey **vsorted;
	/* The event of each MCV (category << 8 | value), plus one; 0: none
	 * (while parsing only). */
	uint32_t *mcv_event;
	const char *flags[MAX_FLAGS];
	size_t nflags;
	struct emu_event_desc *ev;
	struct weft_event_spec *spec;
	size_t nev, evcap;
	size_t hooks_state;
	size_t prvcap;
	unsigned marks_line; /* the family of mark types: the line of its channel */
	const char *marks_name;
};

/* ---- memory ---- */

static void *ld_alloc(struct ld *L, size_t n)
{
	struct box *b = L->box;
	if (b->nptrs == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		void **np = realloc(b->ptrs, cap * sizeof *np);
		if (np == NULL)
			return NULL;
		b->ptrs = np;
		b->cap = cap;
	}
	void *p = calloc(1, n ? n : 1);
	if (p != NULL)
		b->ptrs[b->nptrs++] = p;
	return p;
}

static char *ld_strdup(struct ld *L, const char *s)
{
	size_t n = strlen(s);
	char *p = ld_alloc(L, n + 1);
	if (p != NULL)
		memcpy(p, s, n + 1);
	return p;
}

const struct weft_model_prv *weft_model_prv_types(const struct weft_model_spec *m, size_t *n)
{
	const struct box *b = (const struct box *) m;
	*n = b->nprv;
	return b->prv;
}

void weft_model_free(struct weft_model_spec *m)
{
	struct box *b = (struct box *) m;
	if (b == NULL)
		return;
	for (size_t i = 0; i < b->nptrs; i++)
		free(b->ptrs[i]);
	free(b->ptrs);
	free(b);
}

/* ---- errors ---- */

__attribute__((format(printf, 3, 4)))
static int bad(struct ld *L, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n != NULL)
		snprintf(L->err, L->errlen, "%s:%zu: %s", L->name, n->start_mark.line + 1, msg);
	else
		snprintf(L->err, L->errlen, "%s: %s", L->name, msg);
	return -1;
}

__attribute__((format(printf, 3, 4)))
static int bad_at(struct ld *L, unsigned line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(L->err, L->errlen, "%s:%u: %s", L->name, line, msg);
	return -1;
}

static int oom(struct ld *L)
{
	snprintf(L->err, L->errlen, "%s: out of memory", L->name);
	return -1;
}

/* ---- nodes ---- */

static yaml_node_t *node(struct ld *L, yaml_node_item_t i)
{
	return yaml_document_get_node(&L->doc, i);
}

static const char *scalar(const yaml_node_t *n)
{
	return n != NULL && n->type == YAML_SCALAR_NODE ? (const char *) n->data.scalar.value : NULL;
}

static int is_null(const yaml_node_t *n)
{
	const char *s = scalar(n);
	return s != NULL && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
		(strcmp(s, "null") == 0 || strcmp(s, "~") == 0 || s[0] == '\0');
}

static size_t seq_len(const yaml_node_t *n)
{
	return (size_t) (n->data.sequence.items.top - n->data.sequence.items.start);
}

static yaml_node_t *seq_at(struct ld *L, const yaml_node_t *n, size_t i)
{
	return node(L, n->data.sequence.items.start[i]);
}

static int want_map(struct ld *L, const yaml_node_t *n, const char *what)
{
	if (n == NULL || n->type != YAML_MAPPING_NODE)
		return bad(L, n, "%s must be a mapping (key: value lines)", what);
	return 0;
}

static int want_seq(struct ld *L, const yaml_node_t *n, const char *what)
{
	if (n == NULL || n->type != YAML_SEQUENCE_NODE)
		return bad(L, n, "%s must be a list", what);
	return 0;
}

/* The text of a key that must be there: refused at the map's line when
 * missing. */
static const char *need_str(struct ld *L, const yaml_node_t *map, const char *key,
		const char *what);

static const char *want_str(struct ld *L, const yaml_node_t *n, const char *what)
{
	const char *s = scalar(n);
	if (s == NULL || is_null(n)) {
		bad(L, n, "%s must be a text", what);
		return NULL;
	}
	return s;
}

static yaml_node_t *get(struct ld *L, const yaml_node_t *map, const char *key);

static const char *need_str(struct ld *L, const yaml_node_t *map, const char *key,
		const char *what)
{
	yaml_node_t *v = get(L, map, key);
	if (v == NULL) {
		bad(L, map, "%s has no '%s:'", what, key);
		return NULL;
	}
	return want_str(L, v, key);
}

/* The distance between a and b (insertions, deletions, substitutions, swaps
 * of neighbours: 1 each), for a key's did-you-mean; SIZE_MAX for words of
 * 32 bytes or more. */
static size_t key_distance(const char *a, const char *b)
{
	enum { W = 33 };
	size_t la = strlen(a), lb = strlen(b), d[W * W];
	if (la >= W || lb >= W)
		return SIZE_MAX;
	for (size_t i = 0; i <= la; i++)
		d[i * W] = i;
	for (size_t j = 0; j <= lb; j++)
		d[j] = j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			size_t v = d[(i - 1) * W + j - 1] + (a[i - 1] != b[j - 1]);
			v = d[(i - 1) * W + j] + 1 < v ? d[(i - 1) * W + j] + 1 : v;
			v = d[i * W + j - 1] + 1 < v ? d[i * W + j - 1] + 1 : v;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]
					&& d[(i - 2) * W + j - 2] + 1 < v)
				v = d[(i - 2) * W + j - 2] + 1;
			d[i * W + j] = v;
		}
	return d[la * W + lb];
}

/* Checks that every key of map n is in keys (NULL-terminated); an unknown
 * one near a known one (as weft's options: at most 1 edit up to 4 bytes, 2
 * up to 8, 3 beyond) is named with it. */
static int check_keys(struct ld *L, const yaml_node_t *n, const char *what,
		const char *const *keys)
{
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(L, p->key);
		const char *ks = scalar(k);
		if (ks == NULL)
			return bad(L, k, "%s: a key must be a plain word", what);
		size_t i;
		for (i = 0; keys[i] != NULL; i++)
			if (strcmp(keys[i], ks) == 0)
				break;
		if (keys[i] == NULL) {
			size_t len = strlen(ks), best = len <= 4 ? 2 : len <= 8 ? 3 : 4;
			const char *near = NULL;
			for (i = 0; keys[i] != NULL; i++) {
				size_t dist = key_distance(ks, keys[i]);
				if (dist < best) {
					best = dist;
					near = keys[i];
				}
			}
			if (near != NULL)
				return bad(L, k, "%s: unknown key '%s' (did you mean '%s'?)", what,
						ks, near);
			return bad(L, k, "%s: unknown key '%s'", what, ks);
		}
		for (yaml_node_pair_t *q = n->data.mapping.pairs.start; q < p; q++) {
			const char *qs = scalar(node(L, q->key));
			if (qs != NULL && strcmp(qs, ks) == 0)
				return bad(L, k, "%s: key '%s' given twice", what, ks);
		}
	}
	return 0;
}

static yaml_node_t *get(struct ld *L, const yaml_node_t *map, const char *key)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const char *ks = scalar(node(L, p->key));
		if (ks != NULL && strcmp(ks, key) == 0)
			return node(L, p->value);
	}
	return NULL;
}

static int parse_int(struct ld *L, const yaml_node_t *n, const char *what, int64_t lo, int64_t hi,
		int64_t *out)
{
	const char *s = scalar(n);
	if (s == NULL || s[0] == '\0')
		return bad(L, n, "%s must be an integer", what);
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (errno != 0 || *end != '\0')
		return bad(L, n, "%s must be an integer, not '%s'", what, s);
	if (v < lo || v > hi)
		return bad(L, n, "%s must be between %" PRId64 " and %" PRId64 ", not %lld", what,
				lo, hi, v);
	*out = v;
	return 0;
}

static int parse_bool(struct ld *L, const yaml_node_t *n, const char *what, int *out)
{
	const char *s = scalar(n);
	if (s != NULL && strcmp(s, "true") == 0) {
		*out = 1;
		return 0;
	}
	if (s != NULL && strcmp(s, "false") == 0) {
		*out = 0;
		return 0;
	}
	return bad(L, n, "%s must be true or false", what);
}

static int parse_enum(struct ld *L, const yaml_node_t *n, const char *what,
		const char *const *names, int *out)
{
	const char *s = scalar(n);
	char list[256];
	size_t k = 0;
	list[0] = '\0';
	for (int i = 0; names[i] != NULL; i++) {
		if (s != NULL && strcmp(s, names[i]) == 0) {
			*out = i;
			return 0;
		}
		k += (size_t) snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", names[i]);
		if (k >= sizeof list)
			k = sizeof list - 1;
	}
	return bad(L, n, "%s must be one of %s, not '%s'", what, list, s ? s : "(not a word)");
}

static int valid_name(const char *s)
{
	if (s[0] == '\0')
		return 0;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
				(*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.'))
			return 0;
	return 1;
}

static int parse_version(const char *s)
{
	unsigned a, b, c;
	char tail;
	return sscanf(s, "%u.%u.%u%c", &a, &b, &c, &tail) == 3;
}

/* ---- duplicates ----
 * A list is checked once it is read (or when another mistake stops it
 * early): its keys sorted with their positions, the first duplicate is the
 * item of smallest position that has an equal key before it, the one a
 * check of each item against the ones before it would have found first. */

static int cmp_skey(const void *a, const void *b)
{
	const struct skey *x = a, *y = b;
	int c = strcmp(x->s, y->s);
	return c != 0 ? c : (x->i > y->i) - (x->i < y->i);
}

static int cmp_vkey(const void *a, const void *b)
{
	const struct vkey *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* Sorts k[0..n) and returns the position of the first duplicate, or n. */
static size_t first_dup_s(struct skey *k, size_t n)
{
	size_t first = n;
	qsort(k, n, sizeof *k, cmp_skey);
	for (size_t j = 1; j < n; j++)
		if (strcmp(k[j].s, k[j - 1].s) == 0 && k[j].i < first)
			first = k[j].i;
	return first;
}

static size_t first_dup_v(struct vkey *k, size_t n)
{
	size_t first = n;
	qsort(k, n, sizeof *k, cmp_vkey);
	for (size_t j = 1; j < n; j++)
		if (k[j].v == k[j - 1].v && k[j].i < first)
			first = k[j].i;
	return first;
}

/* ---- Paraver types ---- */

static unsigned line_of(const yaml_node_t *n)
{
	return (unsigned) n->start_mark.line + 1;
}

/* A text of the model's allocation, or NULL. */
__attribute__((format(printf, 2, 3)))
static char *ld_printf(struct ld *L, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *s = n >= 0 ? ld_alloc(L, (size_t) n + 1) : NULL;
	if (s != NULL) {
		va_start(ap, fmt);
		vsnprintf(s, (size_t) n + 1, fmt, ap);
		va_end(ap);
	}
	return s;
}

/* Records that the model writes types lo..hi (none when lo > hi), what
 * (from ld_printf) being the part that writes them. */
static int add_prv(struct ld *L, int64_t lo, int64_t hi, const yaml_node_t *at, int marks,
		const char *what)
{
	struct box *b = L->box;
	if (b->nprv == L->prvcap) {
		size_t cap = L->prvcap ? 2 * L->prvcap : 16;
		struct weft_model_prv *np = ld_alloc(L, cap * sizeof *np);
		if (np == NULL)
			return oom(L);
		if (b->nprv)
			memcpy(np, b->prv, b->nprv * sizeof *np);
		b->prv = np;
		L->prvcap = cap;
	}
	if (what == NULL)
		return oom(L);
	b->prv[b->nprv++] = (struct weft_model_prv) { (int32_t) lo, (int32_t) hi, line_of(at),
		what, marks };
	return 0;
}

struct span {
	int32_t lo, hi;
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

/* Whether two of p[0..n) share a type (tmp: room for n spans). */
static int any_overlap(const struct weft_model_prv *p, size_t n, struct span *tmp)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (p[i].lo <= p[i].hi)
			tmp[k++] = (struct span) { p[i].lo, p[i].hi };
	qsort(tmp, k, sizeof *tmp, cmp_span);
	for (size_t j = 1; j < k; j++) {
		if (tmp[j].lo <= tmp[j - 1].hi)
			return 1;
		if (tmp[j].hi < tmp[j - 1].hi)
			tmp[j].hi = tmp[j - 1].hi; /* the greatest end so far */
	}
	return 0;
}

/* Refuses the first type range (in the order of the file) that shares a type
 * with one before it: the shortest prefix of the list with an overlap is
 * found by bisection, O(n log^2 n). */
static int check_prv(struct ld *L)
{
	const struct weft_model_prv *p = L->box->prv;
	size_t n = L->box->nprv;
	struct span *tmp = malloc((n + 1) * sizeof *tmp);
	if (tmp == NULL)
		return oom(L);
	if (!any_overlap(p, n, tmp)) {
		free(tmp);
		return 0;
	}
	size_t lo = 2, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (any_overlap(p, mid, tmp))
			hi = mid;
		else
			lo = mid + 1;
	}
	free(tmp);
	const struct weft_model_prv *j = &p[lo - 1];
	for (size_t i = 0; i + 1 < lo; i++)
		if (p[i].lo <= p[i].hi && p[i].lo <= j->hi && j->lo <= p[i].hi)
			return bad_at(L, j->line, "Paraver type %d of %s is taken by %s (line %u)",
					p[i].lo > j->lo ? p[i].lo : j->lo, j->what, p[i].what, p[i].line);
	return bad_at(L, j->line, "Paraver types of %s overlap", j->what); /* not reached */
}

/* ---- channels ---- */

static const char *const kind_names[] = { "single", "stack", NULL };
static const char *const dup_names[] = { "allow", "refuse", NULL };
static const char *const view_names[] = { "run", "act", "any", NULL };
static const char *const policy_names[] = { "skipdup", "skipdupnull", "emitdup", NULL };
static const char *const lint_names[] = { "no", "complete", "always", NULL };
static const char *const family_names[] = { "none", "marks", NULL };

static char *labels(struct ld *L, const char *prefix, enum emu_track t, int cpu)
{
	const char *suffix = cpu || t == EMU_TRACK_RUN ? " of the RUNNING thread" :
		t == EMU_TRACK_ACT ? " of the ACTIVE thread" : " ";
	size_t n = strlen(prefix) + strlen(suffix) + 1;
	char *s = ld_alloc(L, n);
	if (s != NULL)
		snprintf(s, n, "%s%s", prefix, suffix);
	return s;
}

/* The channel named s, or -1 (once the names are sorted: index_names). */
static long chan_named(const struct ld *L, const char *s)
{
	size_t lo = 0, hi = L->names != NULL ? L->nchans : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(L->names[mid].s, s);
		if (c == 0)
			return (long) L->names[mid].i;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int find_chan(struct ld *L, const yaml_node_t *n, size_t *out)
{
	const char *s = scalar(n);
	long c = s != NULL ? chan_named(L, s) : -1;
	if (c < 0)
		return bad(L, n, "no channel named '%s' in this model", s ? s : "(not a word)");
	*out = (size_t) c;
	return 0;
}

/* Sorts the names of the first n channels into L->names; refuses the first
 * name given twice (at its `name:` in the list `list`, or at `at` for the
 * channel past the list: the counters family). */
static int index_names(struct ld *L, size_t n, const yaml_node_t *list, const yaml_node_t *at)
{
	struct skey *k = ld_alloc(L, (n + 1) * sizeof *k);
	if (k == NULL)
		return oom(L);
	for (size_t i = 0; i < n; i++)
		k[i] = (struct skey) { L->chans[i].name, i };
	size_t d = first_dup_s(k, n);
	if (d < n) {
		if (list != NULL && d < seq_len(list))
			return bad(L, get(L, seq_at(L, list, d), "name"), "channel '%s' is declared twice",
					L->chans[d].name);
		size_t u = 0; /* the channel the family's name clashes with */
		while (u + 1 < n && strcmp(L->chans[u].name, L->chans[d].name) != 0)
			u++;
		return bad(L, at, "the counters family is the channel named '%s', and so is channel "
				"'%s' (line %u)", L->chans[d].name, L->chans[u].name,
				list != NULL && u < seq_len(list) ?
				line_of(get(L, seq_at(L, list, u), "name")) : line_of(at));
	}
	L->names = k;
	L->nchans = n;
	return 0;
}

/* Refuses the first value of v[0..n) labelled twice; keeps the values
 * sorted for the channel's pairs. */
static int check_values(struct ld *L, const yaml_node_t *n, const struct emu_value_label *v,
		size_t nv, size_t ci)
{
	struct vkey *k = ld_alloc(L, (nv + 1) * sizeof *k);
	if (k == NULL)
		return oom(L);
	for (size_t i = 0; i < nv; i++)
		k[i] = (struct vkey) { v[i].value, i };
	size_t d = first_dup_v(k, nv);
	if (d < nv)
		return bad(L, seq_at(L, n, d), "value %" PRId64 " is labelled twice", v[d].value);
	L->vsorted[ci] = k;
	return 0;
}

static int parse_values(struct ld *L, const yaml_node_t *n, struct emu_chan_desc *c, size_t ci)
{
	if (want_seq(L, n, "values") != 0)
		return -1;
	size_t nv = seq_len(n);
	struct emu_value_label *v = ld_alloc(L, (nv + 1) * sizeof *v);
	if (v == NULL)
		return oom(L);
	for (size_t i = 0; i < nv; i++) {
		yaml_node_t *e = seq_at(L, n, i);
		const char *lab = NULL;
		if (e->type != YAML_SEQUENCE_NODE || seq_len(e) != 2)
			bad(L, e, "a value label must be [VALUE, LABEL]");
		else if (parse_int(L, seq_at(L, e, 0), "a labelled value", INT32_MIN, INT32_MAX,
					&v[i].value) == 0)
			lab = want_str(L, seq_at(L, e, 1), "a value label");
		if (lab == NULL) {
			/* a value labelled twice before it is the first mistake */
			check_values(L, n, v, i, ci);
			return -1;
		}
		if ((v[i].label = ld_strdup(L, lab)) == NULL)
			return oom(L);
	}
	if (check_values(L, n, v, nv, ci) != 0)
		return -1;
	c->values = v;
	c->nvalues = nv;
	return 0;
}

static int parse_channel(struct ld *L, const yaml_node_t *n, struct emu_chan_desc *c, size_t ci)
{
	static const char *const keys[] = { "name", "kind", "duplicates", "view", "prv", "policy",
		"cpu-policy", "label", "values", "values-from", "initial", "cpu-fallback", "zero",
		"lint-empty", "family", "show", NULL };
	if (want_map(L, n, "a channel") != 0 || check_keys(L, n, "channel", keys) != 0)
		return -1;
	yaml_node_t *v;
	const char *name = need_str(L, n, "name", "a channel");
	if (name == NULL)
		return -1;
	if (!valid_name(name))
		return bad(L, get(L, n, "name"), "channel name '%s': use letters, digits, '_' and '-'",
				name);
	/* a name given twice: index_names */
	if ((c->name = ld_strdup(L, name)) == NULL)
		return oom(L);
	int x;
	c->kind = EMU_CHAN_SINGLE;
	c->dup = EMU_DUP_ALLOW;
	c->track = EMU_TRACK_RUN;
	c->thread_policy = c->cpu_policy = EMU_POL_SKIPDUP;
	if ((v = get(L, n, "kind")) != NULL) {
		if (parse_enum(L, v, "kind", kind_names, &x) != 0)
			return -1;
		c->kind = (enum emu_chan_kind) x;
	}
	if ((v = get(L, n, "duplicates")) != NULL) {
		if (parse_enum(L, v, "duplicates", dup_names, &x) != 0)
			return -1;
		c->dup = (enum emu_dup) x;
	}
	if ((v = get(L, n, "view")) != NULL) {
		if (parse_enum(L, v, "view", view_names, &x) != 0)
			return -1;
		c->track = (enum emu_track) x;
	}
	if ((v = get(L, n, "policy")) != NULL) {
		if (parse_enum(L, v, "policy", policy_names, &x) != 0)
			return -1;
		c->thread_policy = c->cpu_policy = (enum emu_policy) x;
	}
	if ((v = get(L, n, "cpu-policy")) != NULL) {
		if (parse_enum(L, v, "cpu-policy", policy_names, &x) != 0)
			return -1;
		c->cpu_policy = (enum emu_policy) x;
	}
	int64_t k;
	if ((v = get(L, n, "prv")) != NULL) {
		if (parse_int(L, v, "prv (the Paraver type)", 0, 99999999, &k) != 0)
			return -1;
		c->prv_type = (int) k;
	}
	if ((v = get(L, n, "family")) != NULL) {
		if (parse_enum(L, v, "family", family_names, &x) != 0)
			return -1;
		c->family = x == 1 ? EMU_FAMILY_MARK_TYPES : EMU_FAMILY_NONE;
	}
	if (c->family == EMU_FAMILY_MARK_TYPES) {
		/* the engine finds a mark type's channel among every model's */
		if (L->marks_line != 0)
			return bad(L, get(L, n, "family"), "channel '%s' is a second family of mark types "
					"(channel '%s', line %u, is the first): a trace's mark types have one family",
					c->name, L->marks_name, L->marks_line);
		L->marks_line = line_of(get(L, n, "family"));
		L->marks_name = c->name;
		int lo = c->prv_type, hi = c->prv_type + WEFT_MODEL_MARK_TYPES - 1;
		if (lo == 0 ? add_prv(L, 1, 0, get(L, n, "family"), 1,
					ld_printf(L, "channel '%s'", c->name)) != 0 :
				add_prv(L, lo, hi, get(L, n, "prv"), 1, ld_printf(L, "channel '%s' (types %d "
						"to %d, one per mark type)", c->name, lo, hi)) != 0)
			return -1;
	} else if (c->prv_type > 0 && add_prv(L, c->prv_type, c->prv_type, get(L, n, "prv"), 0,
				ld_printf(L, "channel '%s'", c->name)) != 0) {
		return -1;
	}
	const char *lab = c->name;
	if ((v = get(L, n, "label")) != NULL && (lab = want_str(L, v, "label")) == NULL)
		return -1;
	if (c->prv_type > 0 && get(L, n, "label") == NULL && c->family == EMU_FAMILY_NONE)
		return bad(L, get(L, n, "prv"), "channel '%s' has a Paraver type (prv) but no label",
				c->name);
	if ((c->thread_label = labels(L, lab, c->track, 0)) == NULL ||
			(c->cpu_label = labels(L, lab, c->track, 1)) == NULL)
		return oom(L);
	if ((v = get(L, n, "values")) != NULL && parse_values(L, v, c, ci) != 0)
		return -1;
	if ((v = get(L, n, "values-from")) != NULL) {
		static const char *const from[] = { "task-types", NULL };
		if (parse_enum(L, v, "values-from", from, &x) != 0)
			return -1;
		c->values_from_types = 1;
	}
	if ((v = get(L, n, "initial")) != NULL) {
		if (parse_int(L, v, "initial", INT64_MIN, INT64_MAX, &c->initial) != 0)
			return -1;
		c->has_initial = 1;
	}
	if ((v = get(L, n, "cpu-fallback")) != NULL) {
		if (parse_int(L, v, "cpu-fallback", INT64_MIN, INT64_MAX, &c->fallback) != 0)
			return -1;
		c->has_fallback = 1;
	}
	if ((v = get(L, n, "zero")) != NULL && parse_bool(L, v, "zero", &c->zero_ok) != 0)
		return -1;
	if ((v = get(L, n, "show")) != NULL) {
		static const char *const shows[] = { "auto", "slices", "counter", "none", NULL };
		if (parse_enum(L, v, "show", shows, &x) != 0)
			return -1;
		c->show = (enum emu_show) x;
	}
	if ((v = get(L, n, "lint-empty")) != NULL) {
		if (parse_enum(L, v, "lint-empty", lint_names, &x) != 0)
			return -1;
		if (x != 0 && c->kind != EMU_CHAN_STACK)
			return bad(L, v, "lint-empty needs a stack channel ('%s' is single)", c->name);
		c->lint_empty = (enum emu_lint_empty) x;
	}
	return 0;
}

/* ---- values and actions ---- */

/* VALUE: integer, null, u32@N, i32@N, u64@N, i64@N, type-gid@N, task-gid. */
static int parse_val(struct ld *L, const yaml_node_t *n, struct emu_val *out)
{
	const char *s = scalar(n);
	if (s == NULL)
		return bad(L, n, "a value must be an integer, null or a payload field such as u32@0");
	if (is_null(n)) {
		out->src = EMU_VAL_NULL;
		return 0;
	}
	if (strcmp(s, "task-gid") == 0) {
		out->src = EMU_VAL_TASK_GID;
		return 0;
	}
	static const struct {
		const char *p;
		enum emu_val_src src;
		int size;
	} fields[] = {
		{ "u32@", EMU_VAL_U32, 4 }, { "i32@", EMU_VAL_I32, 4 }, { "u64@", EMU_VAL_U64, 8 },
		{ "i64@", EMU_VAL_I64, 8 }, { "type-gid@", EMU_VAL_TYPE_GID, 4 },
	};
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		size_t pl = strlen(fields[i].p);
		if (strncmp(s, fields[i].p, pl) != 0)
			continue;
		char *end;
		errno = 0;
		long off = strtol(s + pl, &end, 10);
		if (errno != 0 || *end != '\0' || end == s + pl || off < 0 || off > 65536)
			return bad(L, n, "'%s': the offset after '@' must be a byte offset 0..65536", s);
		out->src = fields[i].src;
		out->k = off;
		return 0;
	}
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (errno != 0 || *end != '\0' || s[0] == '\0')
		return bad(L, n, "'%s' is not a value: use an integer, null or a payload field "
				"(u32@N, i32@N, u64@N, i64@N, type-gid@N, task-gid)", s);
	out->src = EMU_VAL_CONST;
	out->k = v;
	return 0;
}

static int flag_index(struct ld *L, const yaml_node_t *n, size_t *out)
{
	const char *s = want_str(L, n, "a flag name");
	if (s == NULL)
		return -1;
	if (!valid_name(s))
		return bad(L, n, "flag name '%s': use letters, digits, '_' and '-'", s);
	for (size_t i = 0; i < L->nflags; i++)
		if (strcmp(L->flags[i], s) == 0) {
			*out = i;
			return 0;
		}
	if (L->nflags == MAX_FLAGS)
		return bad(L, n, "too many flags (at most %d)", MAX_FLAGS);
	if ((L->flags[L->nflags] = ld_strdup(L, s)) == NULL)
		return oom(L);
	*out = L->nflags++;
	return 0;
}

static const char *const state_names[] = { "unknown", "running", "paused", "dead", "cooling",
	"warming", NULL };

static int parse_rw(struct ld *L, const yaml_node_t *v, enum emu_op op, struct emu_action *a)
{
	if (v->type != YAML_SEQUENCE_NODE || seq_len(v) < 2 || seq_len(v) > 3)
		return bad(L, v, "%s needs [CHANNEL, VALUE]", op == EMU_OP_SET ? "set" :
				op == EMU_OP_PUSH ? "push" : "pop");
	a->op = op;
	if (find_chan(L, seq_at(L, v, 0), &a->chan) != 0 || parse_val(L, seq_at(L, v, 1), &a->val) != 0)
		return -1;
	const struct emu_chan_desc *c = &L->chans[a->chan];
	if (c->family == EMU_FAMILY_COUNTERS)
		return bad(L, seq_at(L, v, 0), "channel 'counters' is the counters family: only the "
				"counters action writes it");
	if (c->family == EMU_FAMILY_MARK_TYPES) {
		if (seq_len(v) != 3)
			return bad(L, v, "channel '%s' is a family of mark types: give the member as "
					"a third item, such as i32@8", c->name);
		if (parse_val(L, seq_at(L, v, 2), &a->sel) != 0)
			return -1;
	} else {
		if (seq_len(v) == 3)
			return bad(L, v, "a third item selects a family member, and '%s' is not a family",
					c->name);
		if (op == EMU_OP_SET && c->kind != EMU_CHAN_SINGLE)
			return bad(L, v, "channel '%s' is a stack: use push and pop", c->name);
		if (op != EMU_OP_SET && c->kind != EMU_CHAN_STACK)
			return bad(L, v, "channel '%s' is single: use set", c->name);
	}
	if (op == EMU_OP_POP && a->val.src == EMU_VAL_NULL)
		return bad(L, v, "pop needs the value expected on top, not null");
	return 0;
}

static int parse_action(struct ld *L, const yaml_node_t *n, struct emu_action *a)
{
	if (n->type != YAML_MAPPING_NODE ||
			n->data.mapping.pairs.top - n->data.mapping.pairs.start != 1)
		return bad(L, n, "an action is one 'name: arguments' line, such as push: [stack, 1]");
	yaml_node_pair_t *p = n->data.mapping.pairs.start;
	yaml_node_t *k = node(L, p->key), *v = node(L, p->value);
	const char *ks = scalar(k);
	if (ks == NULL)
		return bad(L, k, "an action name must be a word");
	if (strcmp(ks, "set") == 0)
		return parse_rw(L, v, EMU_OP_SET, a);
	if (strcmp(ks, "push") == 0)
		return parse_rw(L, v, EMU_OP_PUSH, a);
	if (strcmp(ks, "pop") == 0)
		return parse_rw(L, v, EMU_OP_POP, a);
	if (strcmp(ks, "flag") == 0) {
		if (v->type != YAML_SEQUENCE_NODE || seq_len(v) != 2)
			return bad(L, v, "flag needs [FLAG, 0 or 1]");
		int64_t x;
		a->op = EMU_OP_FLAG;
		if (flag_index(L, seq_at(L, v, 0), &a->flag) != 0 ||
				parse_int(L, seq_at(L, v, 1), "a flag value", 0, 1, &x) != 0)
			return -1;
		a->val.src = EMU_VAL_CONST;
		a->val.k = x;
		return 0;
	}
	if (strcmp(ks, "thread-start") == 0) {
		a->op = EMU_OP_THREAD_START;
		return parse_val(L, v, &a->val);
	}
	if (strcmp(ks, "affinity") == 0) {
		a->op = EMU_OP_AFFINITY_SELF;
		return parse_val(L, v, &a->val);
	}
	if (strcmp(ks, "affinity-remote") == 0) {
		if (v->type != YAML_SEQUENCE_NODE || seq_len(v) != 2)
			return bad(L, v, "affinity-remote needs [CPU, TID]");
		a->op = EMU_OP_AFFINITY_REMOTE;
		if (parse_val(L, seq_at(L, v, 0), &a->val) != 0)
			return -1;
		return parse_val(L, seq_at(L, v, 1), &a->arg);
	}
	if (strcmp(ks, "thread-state") == 0) {
		static const char *const keys[] = { "to", "from", NULL };
		if (want_map(L, v, "thread-state") != 0 || check_keys(L, v, "thread-state", keys) != 0)
			return -1;
		int x;
		a->op = EMU_OP_THREAD_STATE;
		if (parse_enum(L, get(L, v, "to"), "to", state_names, &x) != 0)
			return -1;
		a->to = (enum emu_state) x;
		yaml_node_t *from = get(L, v, "from");
		if (want_seq(L, from, "from") != 0)
			return -1;
		for (size_t i = 0; i < seq_len(from); i++) {
			if (parse_enum(L, seq_at(L, from, i), "a state", state_names, &x) != 0)
				return -1;
			a->from |= EMU_STM(x);
		}
		return 0;
	}
	if (strcmp(ks, "hook") == 0) {
		const char *h = want_str(L, v, "hook");
		if (h == NULL)
			return -1;
		size_t st = 0;
		a->op = EMU_OP_HOOK;
		a->hook = emu_hook_by_name(h, &st);
		if (a->hook == NULL)
			return bad(L, v, "no built-in hook named '%s'", h);
		if (st > L->hooks_state)
			L->hooks_state = st;
		return 0;
	}
	if (strcmp(ks, "type-create") == 0) {
		if (want_map(L, v, "type-create") != 0 || check_keys(L, v, "type-create",
					(const char *const[]) { NULL }) != 0)
			return -1;
		a->op = EMU_OP_TYPE_CREATE;
		return 0;
	}
	if (strcmp(ks, "counters") == 0) {
		if (want_map(L, v, "counters") != 0 || check_keys(L, v, "counters",
					(const char *const[]) { NULL }) != 0)
			return -1;
		a->op = EMU_OP_COUNTERS;
		return 0;
	}
	if (strcmp(ks, "task-create") == 0) {
		static const char *const keys[] = { "flags", "nonzero-id", NULL };
		static const char *const fnames[] = { "parallel", "resurrect", "pause", "relax", NULL };
		if (want_map(L, v, "task-create") != 0 || check_keys(L, v, "task-create", keys) != 0)
			return -1;
		a->op = EMU_OP_TASK_CREATE;
		yaml_node_t *f = get(L, v, "flags");
		if (f != NULL) {
			if (want_seq(L, f, "flags") != 0)
				return -1;
			for (size_t i = 0; i < seq_len(f); i++) {
				int x;
				if (parse_enum(L, seq_at(L, f, i), "a task flag", fnames, &x) != 0)
					return -1;
				a->task_flags |= 1u << x;
			}
		}
		yaml_node_t *nz = get(L, v, "nonzero-id");
		int on = 0;
		if (nz != NULL && parse_bool(L, nz, "nonzero-id", &on) != 0)
			return -1;
		if (on)
			a->task_flags |= EMU_TF_NONZERO_ID;
		return 0;
	}
	if (strcmp(ks, "task") == 0) {
		static const char *const keys[] = { "op", "id", "body", NULL };
		static const char *const ops[] = { "execute", "end", "pause", "resume", NULL };
		if (want_map(L, v, "task") != 0 || check_keys(L, v, "task", keys) != 0)
			return -1;
		int x;
		a->op = EMU_OP_TASK;
		if (parse_enum(L, get(L, v, "op"), "op", ops, &x) != 0)
			return -1;
		a->task_op = (enum emu_task_op) x;
		yaml_node_t *id = get(L, v, "id");
		if (id == NULL)
			return bad(L, v, "task needs id: (the task id, such as u32@0)");
		if (parse_val(L, id, &a->val) != 0)
			return -1;
		yaml_node_t *b = get(L, v, "body");
		if (b != NULL && parse_val(L, b, &a->arg) != 0)
			return -1;
		return 0;
	}
	return bad(L, k, "unknown action '%s' (set, push, pop, flag, type-create, task-create, "
			"task, counters, thread-start, thread-state, affinity, affinity-remote, hook)", ks);
}

/* ---- events ---- */

static const struct {
	const char *name;
	enum weft_field_type type;
	uint32_t size;
} ftypes[] = {
	{ "u8", WEFT_FIELD_U8, 1 }, { "u16", WEFT_FIELD_U16, 2 }, { "u32", WEFT_FIELD_U32, 4 },
	{ "u64", WEFT_FIELD_U64, 8 }, { "i8", WEFT_FIELD_I8, 1 }, { "i16", WEFT_FIELD_I16, 2 },
	{ "i32", WEFT_FIELD_I32, 4 }, { "i64", WEFT_FIELD_I64, 8 }, { "str", WEFT_FIELD_STR, 0 },
};

static int new_event(struct ld *L, const yaml_node_t *at, const char *mcv, size_t *out)
{
	if (strlen(mcv) != 3)
		return bad(L, at, "MCV '%s' must be three characters", mcv);
	for (int i = 0; i < 3; i++)
		if ((unsigned char) mcv[i] < 0x21 || (unsigned char) mcv[i] > 0x7e)
			return bad(L, at, "MCV '%s' must be printable characters without spaces", mcv);
	if (mcv[0] != L->m->byte)
		return bad(L, at, "MCV '%s' does not start with the model byte '%c'", mcv, L->m->byte);
	if (mcv[1] == '*')
		return bad(L, at, "MCV '%s': only the value (third byte) may be '*'", mcv);
	uint32_t *slot = &L->mcv_event[(unsigned char) mcv[1] << 8 | (unsigned char) mcv[2]];
	if (*slot != 0)
		return bad(L, at, "event %s is described twice", mcv);
	if (L->nev == L->evcap) {
		size_t cap = L->evcap ? L->evcap * 2 : 64;
		struct emu_event_desc *ne = ld_alloc(L, cap * sizeof *ne);
		struct weft_event_spec *ns = ld_alloc(L, cap * sizeof *ns);
		if (ne == NULL || ns == NULL)
			return oom(L);
		if (L->nev) {
			memcpy(ne, L->ev, L->nev * sizeof *ne);
			memcpy(ns, L->spec, L->nev * sizeof *ns);
		}
		L->ev = ne;
		L->spec = ns;
		L->evcap = cap;
	}
	size_t i = L->nev++;
	*slot = (uint32_t) i + 1;
	memcpy(L->ev[i].mcv, mcv, 3);
	memcpy(L->spec[i].mcv, mcv, 3);
	L->ev[i].lint_size = -1;
	*out = i;
	return 0;
}

/* Checks the placeholders of a description against the fields. */
static int check_desc(struct ld *L, const yaml_node_t *n, const char *d, struct weft_event_spec *s)
{
	for (const char *p = d; *p; p++) {
		if (*p != '%')
			continue;
		if (p[1] == '%') {
			p++;
			s->has_placeholders = 1;
			continue;
		}
		const char *open = p + 1;
		if (*open == 'x')
			open++;
		if (*open != '{')
			return bad(L, n, "desc: '%%' must be followed by {FIELD}, x{FIELD} or %%");
		const char *close = strchr(open, '}');
		if (close == NULL)
			return bad(L, n, "desc: '{' without its '}'");
		size_t len = (size_t) (close - open - 1), k;
		for (k = 0; k < s->nfields; k++)
			if (strlen(s->fields[k].name) == len && strncmp(s->fields[k].name, open + 1, len) == 0)
				break;
		if (k == s->nfields)
			return bad(L, n, "desc: no field named '%.*s' in args", (int) len, open + 1);
		if (open[-1] == 'x' && s->fields[k].type == WEFT_FIELD_STR)
			return bad(L, n, "desc: %%x{%s} needs an integer field", s->fields[k].name);
		s->has_placeholders = 1;
		p = close;
	}
	return 0;
}

static int parse_event(struct ld *L, const yaml_node_t *n)
{
	static const char *const keys[] = { "mcv", "name", "args", "jumbo", "desc", "size", "do",
		"warn", "lint", NULL };
	if (want_map(L, n, "an event") != 0 || check_keys(L, n, "event", keys) != 0)
		return -1;
	const char *mcv = need_str(L, n, "mcv", "an event");
	if (mcv == NULL)
		return -1;
	size_t i = 0;
	if (new_event(L, get(L, n, "mcv"), mcv, &i) != 0)
		return -1;
	struct emu_event_desc *e = &L->ev[i];
	struct weft_event_spec *s = &L->spec[i];
	yaml_node_t *v;
	if ((v = get(L, n, "jumbo")) != NULL && parse_bool(L, v, "jumbo", &e->jumbo) != 0)
		return -1;
	uint32_t off = e->jumbo ? 4 : 0;
	int has_str = 0;
	if ((v = get(L, n, "args")) != NULL) {
		if (want_seq(L, v, "args") != 0)
			return -1;
		if (seq_len(v) > WEFT_MODEL_MAX_FIELDS)
			return bad(L, v, "at most %d args", WEFT_MODEL_MAX_FIELDS);
		for (size_t k = 0; k < seq_len(v); k++) {
			yaml_node_t *a = seq_at(L, v, k);
			const char *as = want_str(L, a, "an arg");
			if (as == NULL)
				return -1;
			char type[16], name[64], tail;
			if (sscanf(as, "%15s %63s %c", type, name, &tail) != 2)
				return bad(L, a, "arg '%s' must be 'TYPE NAME', such as 'u32 taskid'", as);
			size_t t;
			for (t = 0; t < sizeof ftypes / sizeof ftypes[0]; t++)
				if (strcmp(ftypes[t].name, type) == 0)
					break;
			if (t == sizeof ftypes / sizeof ftypes[0])
				return bad(L, a, "arg type '%s' is not one of u8 u16 u32 u64 i8 i16 i32 "
						"i64 str", type);
			if (has_str)
				return bad(L, a, "a str arg can only be the last one");
			for (const char *c = name; *c; c++)
				if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
						(*c >= '0' && *c <= '9') || *c == '_'))
					return bad(L, a, "arg name '%s': use letters, digits and '_'", name);
			for (size_t q = 0; q < k; q++)
				if (strcmp(s->fields[q].name, name) == 0)
					return bad(L, a, "arg '%s' is named twice", name);
			if ((s->fields[k].name = ld_strdup(L, name)) == NULL)
				return oom(L);
			s->fields[k].type = ftypes[t].type;
			s->fields[k].offset = off;
			off += ftypes[t].size;
			has_str |= ftypes[t].type == WEFT_FIELD_STR;
			s->nfields = k + 1;
		}
	}
	if (e->jumbo && s->nfields == 0)
		return bad(L, n, "a jumbo event needs args");
	if (!e->jumbo && !has_str)
		e->lint_size = (int) off;
	if ((v = get(L, n, "lint")) != NULL) {
		static const char *const lk[] = { "args", "any", NULL };
		int x;
		if (parse_enum(L, v, "lint", lk, &x) != 0)
			return -1;
		if (x == 1)
			e->lint_size = -1;
	}
	const char *d = "";
	if ((v = get(L, n, "desc")) != NULL && (d = want_str(L, v, "desc")) == NULL)
		return -1;
	if (check_desc(L, v, d, s) != 0)
		return -1;
	if ((s->desc = ld_strdup(L, d)) == NULL)
		return oom(L);
	char what[160];
	const char *nm = NULL;
	if ((v = get(L, n, "name")) != NULL && (nm = want_str(L, v, "name")) == NULL)
		return -1;
	if (nm != NULL)
		snprintf(what, sizeof what, "%s (%s)", mcv, nm);
	else
		snprintf(what, sizeof what, "%s", mcv);
	if ((e->what = ld_strdup(L, what)) == NULL)
		return oom(L);
	if ((v = get(L, n, "size")) != NULL) {
		const char *ss = want_str(L, v, "size");
		if (ss == NULL)
			return -1;
		char opc[3];
		unsigned long sz;
		char tail;
		if (sscanf(ss, "%2s %lu %c", opc, &sz, &tail) != 2 || sz > 65536 ||
				(strcmp(opc, "==") != 0 && strcmp(opc, ">=") != 0))
			return bad(L, v, "size must be \"== N\" or \">= N\" (N bytes of payload), not '%s'",
					ss);
		e->size_rule = opc[0] == '=' ? EMU_SIZE_EXACT : EMU_SIZE_ATLEAST;
		e->size = (uint32_t) sz;
	}
	if ((v = get(L, n, "warn")) != NULL) {
		const char *w = want_str(L, v, "warn");
		if (w == NULL)
			return -1;
		if (get(L, n, "do") != NULL)
			return bad(L, v, "an event with warn: is accepted without effect; it cannot have do:");
		if ((e->warn = ld_strdup(L, w)) == NULL)
			return oom(L);
	}
	if ((v = get(L, n, "do")) != NULL) {
		if (want_seq(L, v, "do") != 0)
			return -1;
		size_t na = seq_len(v);
		if (na > MAX_ACTIONS)
			return bad(L, v, "at most %d actions per event", MAX_ACTIONS);
		struct emu_action *acts = ld_alloc(L, (na + 1) * sizeof *acts);
		if (acts == NULL)
			return oom(L);
		for (size_t k = 0; k < na; k++) {
			if (parse_action(L, seq_at(L, v, k), &acts[k]) != 0)
				return -1;
			const struct emu_action *a = &acts[k];
			if ((a->op == EMU_OP_TASK || a->op == EMU_OP_TASK_CREATE ||
					a->op == EMU_OP_TYPE_CREATE || a->val.src == EMU_VAL_TYPE_GID ||
					a->val.src == EMU_VAL_TASK_GID) && !L->m->tasks.present)
				return bad(L, seq_at(L, v, k), "event %s uses tasks or task types, but the "
						"model has no tasks: section", mcv);
			if (a->op == EMU_OP_COUNTERS && !L->m->has_counters)
				return bad(L, seq_at(L, v, k), "event %s sets counters, but the model has no "
						"counters: section", mcv);
			if ((acts[k].op == EMU_OP_TYPE_CREATE || acts[k].op == EMU_OP_COUNTERS) &&
					!e->jumbo)
				return bad(L, seq_at(L, v, k), "this action reads a jumbo payload: the "
						"event needs jumbo: true");
			if (acts[k].op == EMU_OP_TASK_CREATE && (e->size_rule == EMU_SIZE_ANY ||
					e->size < 8))
				return bad(L, seq_at(L, v, k), "task-create reads 8 payload bytes: give the "
						"event size: \">= 8\" or \"== 8\"");
		}
		e->actions = acts;
		e->nactions = na;
	}
	return 0;
}

static int parse_pair(struct ld *L, const yaml_node_t *n)
{
	if (n->type != YAML_SEQUENCE_NODE || seq_len(n) != 4)
		return bad(L, n, "a pair must be [ENTER, LEAVE, CHANNEL, VALUE]");
	size_t ch = 0;
	int64_t val;
	if (find_chan(L, seq_at(L, n, 2), &ch) != 0 ||
			parse_int(L, seq_at(L, n, 3), "a pair's value", INT32_MIN, INT32_MAX, &val) != 0)
		return -1;
	const struct emu_chan_desc *c = &L->chans[ch];
	if (c->kind != EMU_CHAN_STACK || c->family != EMU_FAMILY_NONE)
		return bad(L, seq_at(L, n, 2), "a pair pushes and pops: channel '%s' must be a stack",
				c->name);
	const char *label = NULL;
	const struct vkey *k = L->vsorted[ch];
	for (size_t lo = 0, hi = k != NULL ? c->nvalues : 0; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;
		if (k[mid].v == val) {
			label = c->values[k[mid].i].label;
			break;
		}
		if (k[mid].v < val)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (label == NULL)
		return bad(L, seq_at(L, n, 3), "value %" PRId64 " has no label in channel '%s'", val,
				c->name);
	for (int side = 0; side < 2; side++) {
		yaml_node_t *m = seq_at(L, n, (size_t) side);
		const char *mcv = want_str(L, m, "a pair's MCV");
		size_t i = 0;
		if (mcv == NULL || new_event(L, m, mcv, &i) != 0)
			return -1;
		struct emu_action *a = ld_alloc(L, sizeof *a);
		size_t dl = strlen(label) + 16;
		char *desc = ld_alloc(L, dl), *what = ld_alloc(L, dl + 8);
		if (a == NULL || desc == NULL || what == NULL)
			return oom(L);
		a->op = side == 0 ? EMU_OP_PUSH : EMU_OP_POP;
		a->chan = ch;
		a->val.src = EMU_VAL_CONST;
		a->val.k = val;
		snprintf(desc, dl, "%s %s", side == 0 ? "enters" : "leaves", label);
		snprintf(what, dl + 8, "%s (%s)", mcv, desc);
		/* '%' in a label must not read as a placeholder. */
		L->spec[i].desc = desc;
		L->spec[i].has_placeholders = strchr(desc, '%') != NULL;
		if (L->spec[i].has_placeholders) {
			char *esc = ld_alloc(L, 2 * strlen(desc) + 1), *w = esc;
			if (esc == NULL)
				return oom(L);
			for (const char *p = desc; *p; p++) {
				*w++ = *p;
				if (*p == '%')
					*w++ = '%';
			}
			L->spec[i].desc = esc;
		}
		L->ev[i].what = what;
		L->ev[i].lint_size = 0;
		L->ev[i].actions = a;
		L->ev[i].nactions = 1;
	}
	return 0;
}

/* ---- sections ---- */

static int parse_tasks(struct ld *L, const yaml_node_t *n)
{
	static const char *const keys[] = { "body-id", "body-channel", "view", "pcf-after-error", NULL };
	if (want_map(L, n, "tasks") != 0 || check_keys(L, n, "tasks", keys) != 0)
		return -1;
	struct emu_tasks_desc *t = &L->m->tasks;
	t->present = 1;
	t->pcf_after_error = 1;
	yaml_node_t *v;
	int x;
	if ((v = get(L, n, "body-id")) != NULL) {
		static const char *const b[] = { "one", "payload", NULL };
		if (parse_enum(L, v, "body-id", b, &x) != 0)
			return -1;
		t->body_from_payload = x;
	}
	if ((v = get(L, n, "body-channel")) != NULL) {
		if (v->type != YAML_SEQUENCE_NODE || seq_len(v) != 2)
			return bad(L, v, "body-channel must be [CHANNEL, VALUE]");
		if (find_chan(L, seq_at(L, v, 0), &t->body_chan) != 0 ||
				parse_int(L, seq_at(L, v, 1), "the body value", 1, INT32_MAX,
					&t->body_value) != 0)
			return -1;
		if (L->chans[t->body_chan].kind != EMU_CHAN_STACK ||
				L->chans[t->body_chan].family != EMU_FAMILY_NONE)
			return bad(L, v, "body-channel '%s' must be a stack (not a family)",
					L->chans[t->body_chan].name);
		t->has_body_chan = 1;
	}
	if ((v = get(L, n, "view")) != NULL) {
		static const char *const src[] = { "body-id", "task-id", "type-gid", "app-id",
			"rank+1", NULL };
		if (want_seq(L, v, "view") != 0)
			return -1;
		if (seq_len(v) > EMU_TASK_VIEW_MAX)
			return bad(L, v, "at most %d view channels", EMU_TASK_VIEW_MAX);
		for (size_t i = 0; i < seq_len(v); i++) {
			yaml_node_t *e = seq_at(L, v, i);
			if (e->type != YAML_SEQUENCE_NODE || seq_len(e) != 2)
				return bad(L, e, "a view entry must be [CHANNEL, SOURCE]");
			if (find_chan(L, seq_at(L, e, 0), &t->view[i].chan) != 0 ||
					parse_enum(L, seq_at(L, e, 1), "a view source", src, &x) != 0)
				return -1;
			if (L->chans[t->view[i].chan].kind != EMU_CHAN_SINGLE ||
					L->chans[t->view[i].chan].family != EMU_FAMILY_NONE)
				return bad(L, e, "view channel '%s' must be single (not a family)",
						L->chans[t->view[i].chan].name);
			t->view[i].src = (enum emu_task_src) x;
			t->nview = i + 1;
		}
	}
	if ((v = get(L, n, "pcf-after-error")) != NULL &&
			parse_bool(L, v, "pcf-after-error", &t->pcf_after_error) != 0)
		return -1;
	return 0;
}

static int parse_counters(struct ld *L, const yaml_node_t *n)
{
	static const char *const keys[] = { "metadata", "prv", "view", NULL };
	if (want_map(L, n, "counters") != 0 || check_keys(L, n, "counters", keys) != 0)
		return -1;
	const char *md = need_str(L, n, "metadata", "counters");
	if (md == NULL)
		return -1;
	struct emu_chan_desc *c = &L->chans[L->nchans];
	int64_t k;
	if (parse_int(L, get(L, n, "prv"), "counters: prv", 1, 99999999, &k) != 0)
		return -1;
	c->name = "counters";
	c->family = EMU_FAMILY_COUNTERS;
	c->kind = EMU_CHAN_SINGLE;
	c->dup = EMU_DUP_ALLOW;
	c->prv_type = (int) k;
	c->thread_policy = c->cpu_policy = EMU_POL_SKIPDUPNULL;
	c->zero_ok = 1;
	c->track = EMU_TRACK_ACT;
	yaml_node_t *v;
	int x;
	if ((v = get(L, n, "view")) != NULL) {
		if (parse_enum(L, v, "view", view_names, &x) != 0)
			return -1;
		c->track = (enum emu_track) x;
	}
	L->m->has_counters = 1;
	if ((L->m->counters.metadata = ld_strdup(L, md)) == NULL)
		return oom(L);
	L->m->counters.chan = L->nchans++;
	int lo = c->prv_type, hi = c->prv_type + WEFT_MODEL_COUNTERS - 1;
	return add_prv(L, lo, hi, get(L, n, "prv"), 0, ld_printf(L, "the counters (types %d to %d, "
				"one per counter)", lo, hi));
}

static int parse_breakdown(struct ld *L, const yaml_node_t *n)
{
	static const char *const keys[] = { "prv", "label", "kind", "requires", NULL };
	if (want_map(L, n, "breakdown") != 0 || check_keys(L, n, "breakdown", keys) != 0)
		return -1;
	struct emu_breakdown_desc *b = &L->m->breakdown;
	int64_t k;
	int x;
	if (parse_int(L, get(L, n, "prv"), "breakdown: prv", 1, 99999999, &k) != 0)
		return -1;
	b->prv_type = (int) k;
	if (add_prv(L, k, k, get(L, n, "prv"), 0, ld_printf(L, "the breakdown view")) != 0 ||
			check_prv(L) != 0)
		return -1;
	const char *lab = need_str(L, n, "label", "breakdown");
	if (lab == NULL || (b->label = ld_strdup(L, lab)) == NULL)
		return lab == NULL ? -1 : oom(L);
	static const char *const kinds[] = { "task", "label", NULL };
	if (parse_enum(L, get(L, n, "kind"), "breakdown: kind", kinds, &x) != 0)
		return -1;
	b->kind = x == 0 ? EMU_BD_TASK : EMU_BD_LABEL;
	yaml_node_t *v;
	if ((v = get(L, n, "requires")) != NULL) {
		const char *r = want_str(L, v, "breakdown: requires");
		if (r == NULL || (b->requires = ld_strdup(L, r)) == NULL)
			return r == NULL ? -1 : oom(L);
	}
	/* The inputs, by the channel names the task models use. */
	static const char *const in_task[] = { "subsystem", "type", "idle" };
	static const char *const in_label[] = { "subsystem", "label", NULL };
	const char *const *in = b->kind == EMU_BD_TASK ? in_task : in_label;
	size_t *dst[3] = { &b->subsystem, &b->type, &b->idle };
	for (int i = 0; i < 3; i++) {
		if (in[i] == NULL)
			continue;
		long c = chan_named(L, in[i]);
		if (c < 0 || L->chans[c].family != EMU_FAMILY_NONE)
			return bad(L, n, "a %s breakdown reads channel '%s', which this model lacks",
					b->kind == EMU_BD_TASK ? "task" : "label", in[i]);
		*dst[i] = (size_t) c;
	}
	if (b->kind == EMU_BD_TASK) {
		if (!L->m->tasks.has_body_chan)
			return bad(L, n, "a task breakdown needs tasks: body-channel");
		b->body_value = L->m->tasks.body_value;
	}
	return 0;
}

static int parse_guard(struct ld *L, const yaml_node_t *n)
{
	static const char *const keys[] = { "state", "unless-flag", NULL };
	if (want_map(L, n, "guard") != 0 || check_keys(L, n, "guard", keys) != 0)
		return -1;
	yaml_node_t *v;
	if ((v = get(L, n, "state")) != NULL) {
		static const char *const st[] = { "any", "active", "running", NULL };
		int x;
		if (parse_enum(L, v, "guard: state", st, &x) != 0)
			return -1;
		L->m->guard_states = x == 0 ? 0 : x == 1 ? EMU_STM_ACTIVE : EMU_STM(EMU_ST_RUNNING);
	}
	if ((v = get(L, n, "unless-flag")) != NULL) {
		size_t f;
		if (flag_index(L, v, &f) != 0)
			return -1;
		L->m->guard_flag = (int) f;
	}
	return 0;
}

/* thread-end: MCV, one of the model's events (not a wildcard) whose actions
 * take the thread to Dead. */
static int parse_thread_end(struct ld *L, const yaml_node_t *v)
{
	if (v->type != YAML_SCALAR_NODE)
		return bad(L, v, "thread-end must be the MCV of one of the model's events");
	const char *mcv = (const char *) v->data.scalar.value;
	size_t i = L->nev;
	if (strlen(mcv) == 3 && mcv[0] == L->m->byte && mcv[2] != '*' &&
			L->mcv_event[(unsigned char) mcv[1] << 8 | (unsigned char) mcv[2]] != 0)
		i = L->mcv_event[(unsigned char) mcv[1] << 8 | (unsigned char) mcv[2]] - 1;
	if (i == L->nev)
		return bad(L, v, "thread-end: %s is not an event of the model", mcv);
	int dead = 0;
	for (size_t k = 0; k < L->ev[i].nactions; k++)
		dead |= L->ev[i].actions[k].op == EMU_OP_THREAD_STATE &&
			L->ev[i].actions[k].to == EMU_ST_DEAD;
	if (!dead)
		return bad(L, v, "thread-end: event %s does not end the thread "
				"(no thread-state: {to: dead})", mcv);
	L->m->has_thread_end = 1;
	L->m->thread_end = i;
	return 0;
}

static int parse_model(struct ld *L, const yaml_node_t *root)
{
	static const char *const keys[] = { "weft-model", "name", "byte", "version", "title",
		"guard", "channels", "events", "pairs", "tasks", "counters", "breakdown",
		"always-enabled", "all-models", "end-check", "thread-end", NULL };
	if (root == NULL)
	{
		snprintf(L->err, L->errlen, "%s:1: the file is empty (a model needs weft-model, name, "
				"byte, version and events)", L->name);
		return -1;
	}
	if (want_map(L, root, "a model description") != 0 ||
			check_keys(L, root, "model", keys) != 0)
		return -1;
	struct emu_model_desc *m = L->m;
	struct weft_model_spec *s = &L->box->spec;
	yaml_node_t *v = get(L, root, "weft-model");
	int64_t fmt;
	if (v == NULL)
		return bad(L, root, "missing 'weft-model: 1' (the format version)");
	if (parse_int(L, v, "weft-model (the format version)", 0, INT32_MAX, &fmt) != 0)
		return -1;
	if (fmt != 1)
		return bad(L, v, "format version %" PRId64 ": this weft reads model files of format 1",
				fmt);
	const char *name = need_str(L, root, "name", "the model");
	if (name == NULL)
		return -1;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
			return bad(L, get(L, root, "name"), "name '%s': use lower-case letters, digits "
					"and '_' (what ovni_thread_require accepts)", name);
	const char *byte = need_str(L, root, "byte", "the model");
	if (byte == NULL)
		return -1;
	if (strlen(byte) != 1 || (unsigned char) byte[0] < 0x21 || (unsigned char) byte[0] > 0x7e)
		return bad(L, get(L, root, "byte"), "byte must be one printable character, not '%s'",
				byte);
	const char *ver = need_str(L, root, "version", "the model");
	if (ver == NULL)
		return -1;
	if (!parse_version(ver))
		return bad(L, get(L, root, "version"), "version must be major.minor.patch, not '%s'",
				ver);
	if ((m->name = ld_strdup(L, name)) == NULL || (m->version = ld_strdup(L, ver)) == NULL)
		return oom(L);
	m->byte = byte[0];
	m->guard_flag = -1;
	s->name_line = (unsigned) get(L, root, "name")->start_mark.line + 1;
	s->byte_line = (unsigned) get(L, root, "byte")->start_mark.line + 1;
	s->name = m->name;
	s->code = m->byte;
	s->version = m->version;
	s->title = "";
	if ((v = get(L, root, "title")) != NULL) {
		const char *t = want_str(L, v, "title");
		if (t == NULL || (s->title = ld_strdup(L, t)) == NULL)
			return t == NULL ? -1 : oom(L);
	}
	if ((v = get(L, root, "guard")) != NULL && parse_guard(L, v) != 0)
		return -1;
	if ((v = get(L, root, "always-enabled")) != NULL &&
			parse_bool(L, v, "always-enabled", &m->always_enabled) != 0)
		return -1;
	if ((v = get(L, root, "all-models")) != NULL) {
		int in_all = 1;
		if (parse_bool(L, v, "all-models", &in_all) != 0)
			return -1;
		m->not_in_all = !in_all;
	}
	if ((v = get(L, root, "end-check")) != NULL) {
		static const char *const ends[] = { "none", "threads-dead", NULL };
		int x;
		if (parse_enum(L, v, "end-check", ends, &x) != 0)
			return -1;
		m->end_threads_dead = x == 1;
	}
	size_t nch = 0;
	if ((v = get(L, root, "channels")) != NULL) {
		if (want_seq(L, v, "channels") != 0)
			return -1;
		nch = seq_len(v);
	}
	L->chans = ld_alloc(L, (nch + 2) * sizeof *L->chans);
	L->vsorted = ld_alloc(L, (nch + 2) * sizeof *L->vsorted);
	L->mcv_event = calloc(65536, sizeof *L->mcv_event); /* freed by weft_model_parse */
	if (L->chans == NULL || L->vsorted == NULL || L->mcv_event == NULL)
		return oom(L);
	yaml_node_t *list = v;
	for (size_t i = 0; i < nch; i++) {
		if (parse_channel(L, seq_at(L, list, i), &L->chans[i], i) != 0) {
			/* a name given twice before is the first mistake (index_names
			 * writes L->err only then) */
			index_names(L, i + (L->chans[i].name != NULL), list, NULL);
			return -1;
		}
	}
	if (index_names(L, nch, list, NULL) != 0)
		return -1;
	if ((v = get(L, root, "counters")) != NULL && (parse_counters(L, v) != 0 ||
				index_names(L, L->nchans, list, v) != 0))
		return -1;
	if (check_prv(L) != 0)
		return -1;
	if ((v = get(L, root, "tasks")) != NULL && parse_tasks(L, v) != 0)
		return -1;
	if ((v = get(L, root, "pairs")) != NULL) {
		if (want_seq(L, v, "pairs") != 0)
			return -1;
		for (size_t i = 0; i < seq_len(v); i++)
			if (parse_pair(L, seq_at(L, v, i)) != 0)
				return -1;
	}
	if ((v = get(L, root, "events")) != NULL) {
		if (want_seq(L, v, "events") != 0)
			return -1;
		for (size_t i = 0; i < seq_len(v); i++)
			if (parse_event(L, seq_at(L, v, i)) != 0)
				return -1;
	}
	if (L->nev == 0)
		return bad(L, root, "the model has no events (events: or pairs:)");
	int uses_tasks = 0;
	for (size_t i = 0; i < L->nev; i++)
		for (size_t k = 0; k < L->ev[i].nactions; k++) {
			const struct emu_action *a = &L->ev[i].actions[k];
			uses_tasks |= a->op == EMU_OP_TASK || a->op == EMU_OP_TASK_CREATE ||
				a->op == EMU_OP_TYPE_CREATE || a->val.src == EMU_VAL_TYPE_GID ||
				a->val.src == EMU_VAL_TASK_GID;
			if (a->op == EMU_OP_COUNTERS && !m->has_counters)
				return bad(L, root, "event %s sets counters, but the model has no counters: "
						"section", L->ev[i].mcv);
			if (a->op == EMU_OP_TASK && a->task_op == EMU_TASK_EXECUTE &&
					m->tasks.body_from_payload && a->arg.src == EMU_VAL_NULL)
				return bad(L, root, "event %s: with body-id: payload, task needs body:",
						L->ev[i].mcv);
		}
	if (uses_tasks && !m->tasks.present)
		return bad(L, root, "events use tasks or task types, but the model has no tasks: section");
	if ((v = get(L, root, "breakdown")) != NULL && parse_breakdown(L, v) != 0)
		return -1;
	if ((v = get(L, root, "thread-end")) != NULL && parse_thread_end(L, v) != 0)
		return -1;
	m->chans = L->chans;
	m->nchans = L->nchans;
	m->events = L->ev;
	m->nevents = L->nev;
	m->thread_state_size = L->hooks_state;
	if (L->nflags) {
		const char **f = ld_alloc(L, L->nflags * sizeof *f);
		if (f == NULL)
			return oom(L);
		memcpy(f, L->flags, L->nflags * sizeof *f);
		m->flags = f;
		m->nflags = L->nflags;
	}
	s->events = L->spec;
	s->nevents = L->nev;
	s->emu = m;
	return 0;
}

/* ---- the YAML document ---- */

/* A model needs 7 levels (model, events, event, do, action, thread-state,
 * from); libyaml's scanner checks every open flow level at each token, so
 * that unbounded nesting costs time squared in its depth (100000 brackets:
 * 45 s). */
#define MAX_DEPTH 32
/* Nodes (scalars, lists, mappings) of one file: 300000 value labels are
 * 900000 of them; at the limit the loader holds about 185 MB. */
#define MAX_NODES 1000000

static void yaml_failed(struct ld *L, const yaml_parser_t *p)
{
	size_t line = p->problem_mark.line + 1;
	char opened[64] = "";
	if (p->error == YAML_MEMORY_ERROR) {
		oom(L);
		return;
	}
	if (p->context != NULL && p->context_mark.line != p->problem_mark.line)
		snprintf(opened, sizeof opened, " (begun at line %zu)", p->context_mark.line + 1);
	snprintf(L->err, L->errlen, "%s:%zu: not valid YAML: %s%s%s%s", L->name, line,
			p->problem ? p->problem : "parse error", p->context ? " " : "",
			p->context ? p->context : "", opened);
}

/* Builds L->doc from the parser's events, up to the end of the first
 * document (none: an empty document), refusing nesting deeper than
 * MAX_DEPTH, more than MAX_NODES nodes, and anchors and aliases (a file
 * of a few aliases of aliases would be walked as billions of nodes). */
static int compose(struct ld *L, yaml_parser_t *p)
{
	int stack[MAX_DEPTH];
	int key[MAX_DEPTH]; /* in a mapping: the key waiting for its value, or 0 */
	size_t depth = 0, nodes = 0;
	int r = -1;
	if (!yaml_document_initialize(&L->doc, NULL, NULL, NULL, 1, 1))
		return oom(L);
	for (;;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(p, &ev)) {
			yaml_failed(L, p);
			return -1;
		}
		size_t line = ev.start_mark.line + 1;
		const yaml_char_t *anchor = NULL, *tag = NULL;
		int id = 0, done = 0;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
		case YAML_DOCUMENT_END_EVENT:
			done = 1;
			r = 0;
			break;
		case YAML_ALIAS_EVENT:
			snprintf(L->err, L->errlen, "%s:%zu: a YAML alias (*%s): a model file has no "
					"anchors or aliases", L->name, line, (const char *) ev.data.alias.anchor);
			done = 1;
			break;
		case YAML_SCALAR_EVENT:
			anchor = ev.data.scalar.anchor;
			tag = ev.data.scalar.tag;
			break;
		case YAML_SEQUENCE_START_EVENT:
			anchor = ev.data.sequence_start.anchor;
			tag = ev.data.sequence_start.tag;
			break;
		case YAML_MAPPING_START_EVENT:
			anchor = ev.data.mapping_start.anchor;
			tag = ev.data.mapping_start.tag;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--; /* the parser pairs them */
			break;
		default:
			break;
		}
		if (!done && anchor != NULL) {
			snprintf(L->err, L->errlen, "%s:%zu: a YAML anchor (&%s): a model file has no "
					"anchors or aliases", L->name, line, (const char *) anchor);
			done = 1;
		} else if (!done && (ev.type == YAML_SCALAR_EVENT ||
					ev.type == YAML_SEQUENCE_START_EVENT ||
					ev.type == YAML_MAPPING_START_EVENT)) {
			if (++nodes > MAX_NODES) {
				snprintf(L->err, L->errlen, "%s:%zu: more than %d YAML nodes (values, lists "
						"and mappings) in one model", L->name, line, MAX_NODES);
				done = 1;
			} else if (ev.type != YAML_SCALAR_EVENT && depth == MAX_DEPTH) {
				snprintf(L->err, L->errlen, "%s:%zu: lists and mappings nested deeper than "
						"%d levels", L->name, line, MAX_DEPTH);
				done = 1;
			} else if (ev.type == YAML_SCALAR_EVENT) {
				id = yaml_document_add_scalar(&L->doc, tag, ev.data.scalar.value,
						(int) ev.data.scalar.length, ev.data.scalar.style);
			} else if (ev.type == YAML_SEQUENCE_START_EVENT) {
				id = yaml_document_add_sequence(&L->doc, tag, ev.data.sequence_start.style);
			} else {
				id = yaml_document_add_mapping(&L->doc, tag, ev.data.mapping_start.style);
			}
			if (!done && id == 0) {
				oom(L);
				done = 1;
			}
		}
		if (id != 0) {
			yaml_node_t *n = node(L, id);
			n->start_mark = ev.start_mark;
			n->end_mark = ev.end_mark;
			int ok = 1;
			if (depth > 0) {
				int parent = stack[depth - 1];
				if (node(L, parent)->type == YAML_SEQUENCE_NODE) {
					ok = yaml_document_append_sequence_item(&L->doc, parent, id);
				} else if (key[depth - 1] == 0) {
					key[depth - 1] = id;
				} else {
					ok = yaml_document_append_mapping_pair(&L->doc, parent,
							key[depth - 1], id);
					key[depth - 1] = 0;
				}
			}
			if (!ok) {
				oom(L);
				done = 1;
			} else if (ev.type != YAML_SCALAR_EVENT) {
				stack[depth] = id;
				key[depth++] = 0;
			}
		}
		yaml_event_delete(&ev);
		if (done)
			return r;
	}
}

struct weft_model_spec *weft_model_parse(const char *text, size_t len, const char *name,
		char *err, size_t errlen)
{
	struct ld L;
	memset(&L, 0, sizeof L);
	L.name = name;
	L.err = err;
	L.errlen = errlen;
	L.box = calloc(1, sizeof *L.box);
	if (L.box == NULL) {
		snprintf(err, errlen, "%s: out of memory", name);
		return NULL;
	}
	L.m = ld_alloc(&L, sizeof *L.m);
	char *src = ld_strdup(&L, name);
	if (L.m == NULL || src == NULL) {
		oom(&L);
		weft_model_free(&L.box->spec);
		return NULL;
	}
	L.box->spec.source = src;
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p)) {
		oom(&L);
		weft_model_free(&L.box->spec);
		return NULL;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *) text, len);
	int r = compose(&L, &p);
	if (r == 0)
		r = parse_model(&L, yaml_document_get_root_node(&L.doc));
	if (r == 0) {
		/* One document per file: what follows the first is only read up to
		 * the start of a second one. */
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			yaml_failed(&L, &p);
			r = -1;
		} else {
			if (ev.type == YAML_DOCUMENT_START_EVENT) {
				snprintf(err, errlen, "%s:%zu: a second YAML document; a model file holds one",
						name, ev.start_mark.line + 1);
				r = -1;
			}
			yaml_event_delete(&ev);
		}
	}
	free(L.mcv_event);
	yaml_document_delete(&L.doc);
	yaml_parser_delete(&p);
	if (r != 0) {
		weft_model_free(&L.box->spec);
		return NULL;
	}
	return &L.box->spec;
}
