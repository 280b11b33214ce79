/* SPDX-License-Identifier: MIT */
/* picture.c - a timeline window drawn with cairo (picture.h). */
#include <cairo.h>
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <fontconfig/fontconfig.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out.h"
#include "picture.h"

/* Values 0 to 22 take the colours of weft's .pcf (out_colors: what Paraver
 * shows them in); others a colour from a hash of the value. */
#define NPAL ((size_t) OUT_NCOLORS)

void picture_color(int64_t value, double rgb[3])
{
	unsigned char c[3];
	if (value > 0 && (uint64_t) value < NPAL) {
		memcpy(c, out_colors[value], 3);
	} else {
		uint64_t x = (uint64_t) value * 0x9e3779b97f4a7c15u;
		x ^= x >> 31;
		x *= 0xbf58476d1ce4e5b9u;
		x ^= x >> 29;
		/* not too dark, not too light: each channel in [40, 230] */
		for (int k = 0; k < 3; k++)
			c[k] = (unsigned char) (40 + (x >> (8 * k)) % 191);
	}
	for (int k = 0; k < 3; k++)
		rgb[k] = c[k] / 255.0;
}

/* ---- the output buffer ---- */

struct buf {
	unsigned char *p;
	size_t n, cap;
	int oom;
};

static int buf_add(struct buf *b, const void *d, size_t n)
{
	if (b->oom)
		return -1;
	if (n == 0)
		return 0;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap < b->n + n)
			cap *= 2;
		unsigned char *q = realloc(b->p, cap);
		if (q == NULL) {
			b->oom = 1;
			return -1;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
	return 0;
}

static cairo_status_t buf_write(void *closure, const unsigned char *data, unsigned int len)
{
	return buf_add(closure, data, len) == 0 ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

/* ---- text: drawn by cairo, or in an SVG kept as <text> elements ---- */

struct draw {
	cairo_t *cr;
	double fs; /* font size */
	struct buf *svg_text; /* SVG: the <text> elements, else NULL */
};

/* XML text: & < > " ' escaped (s is clean(): valid UTF-8, no control
 * character, which XML 1.0 does not allow). */
static void xml_escaped(struct buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char) *s;
		switch (c) {
		case '&': buf_add(b, "&amp;", 5); break;
		case '<': buf_add(b, "&lt;", 4); break;
		case '>': buf_add(b, "&gt;", 4); break;
		case '"': buf_add(b, "&quot;", 6); break;
		case '\'': buf_add(b, "&#39;", 5); break;
		default:
			if (c < 0x20 && c != '\t')
				buf_add(b, "?", 1);
			else
				buf_add(b, s, 1);
		}
	}
}

/* The length of the valid UTF-8 sequence at s (1 to 4), or 0 (an invalid
 * byte, an overlong form, a surrogate, past U+10FFFF). */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
	if (n == 0 || c > 0xf4)
		return 0;
	unsigned cp = c & (0x3fu >> (n - 1));
	for (size_t k = 1; k < n; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[k] & 0x3fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
			(cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Text that cairo and XML take: s itself when it is valid UTF-8 without
 * control characters, else a copy (in *tmp, to free) with '?' for each
 * invalid byte or control character. */
static const char *clean(const char *s, char **tmp)
{
	*tmp = NULL;
	const unsigned char *u = (const unsigned char *) s;
	size_t i = 0, n;
	while (u[i] != '\0' && u[i] >= 0x20 && u[i] != 0x7f && (n = utf8_len(u + i)) != 0)
		i += n;
	if (u[i] == '\0')
		return s;
	char *c = strdup(s);
	if (c == NULL)
		return "?";
	unsigned char *w = (unsigned char *) c;
	for (i = 0; w[i] != '\0';) {
		n = w[i] >= 0x20 && w[i] != 0x7f ? utf8_len(w + i) : 0;
		if (n == 0) {
			w[i++] = '?';
			continue;
		}
		i += n;
	}
	*tmp = c;
	return c;
}

static double text_width(struct draw *d, const char *s)
{
	char *tmp;
	cairo_text_extents_t e;
	cairo_text_extents(d->cr, clean(s, &tmp), &e);
	free(tmp);
	return e.x_advance;
}

/* Text with its baseline at y; anchor 0: starts at x, 1: centred, 2: ends. */
static void text(struct draw *d, double x, double y, const char *raw, int anchor)
{
	char *tmp;
	const char *s = clean(raw, &tmp);
	if (d->svg_text != NULL) {
		char head[200];
		snprintf(head, sizeof head, "<text x=\"%.2f\" y=\"%.2f\" font-family=\"sans-serif\" "
				"font-size=\"%.2f\" fill=\"#202020\" text-anchor=\"%s\">", x, y, d->fs,
				anchor == 0 ? "start" : anchor == 1 ? "middle" : "end");
		buf_add(d->svg_text, head, strlen(head));
		xml_escaped(d->svg_text, s);
		buf_add(d->svg_text, "</text>\n", 8);
		free(tmp);
		return;
	}
	double w = anchor ? text_width(d, s) : 0;
	cairo_move_to(d->cr, x - (anchor == 1 ? w / 2 : anchor == 2 ? w : 0), y);
	cairo_set_source_rgb(d->cr, 0.125, 0.125, 0.125);
	cairo_show_text(d->cr, s);
	cairo_new_path(d->cr);
	free(tmp);
}

/* Shortens s (into buf) to fit max_w, with "..." at its end. */
static const char *fit(struct draw *d, const char *s, double max_w, char *buf, size_t len)
{
	if (text_width(d, s) <= max_w)
		return s;
	size_t n = strlen(s);
	if (n >= len)
		n = len - 1;
	while (n > 0) {
		n--;
		while (n > 0 && ((unsigned char) s[n] & 0xc0) == 0x80)
			n--; /* not inside a UTF-8 sequence */
		snprintf(buf, len, "%.*s...", (int) n, s);
		if (text_width(d, buf) <= max_w)
			return buf;
	}
	return "";
}

/* ---- time ---- */

static void fmt_time(char *buf, size_t len, double ns, double step)
{
	static const struct { double div; const char *unit; } u[] = {
		{ 1e9, "s" }, { 1e6, "ms" }, { 1e3, "\xc2\xb5s" }, { 1, "ns" },
	};
	size_t k = 0;
	while (k + 1 < sizeof u / sizeof u[0] && step < u[k].div)
		k++;
	double v = ns / u[k].div;
	double s = step / u[k].div;
	int dec = s >= 1 || u[k].div == 1 ? 0 : s >= 0.1 ? 1 : s >= 0.01 ? 2 : 3;
	snprintf(buf, len, "%.*f %s", dec, v, u[k].unit);
}

/* A duration with three significant digits in the largest unit it holds
 * one of: "672 s", "39.3 s", "25.8 ms", "81 ns". */
static void fmt_dur(char *buf, size_t len, double ns)
{
	static const struct { double div; const char *unit; } u[] = {
		{ 1e9, "s" }, { 1e6, "ms" }, { 1e3, "\xc2\xb5s" }, { 1, "ns" },
	};
	size_t k = 0;
	while (k + 1 < sizeof u / sizeof u[0] && ns < u[k].div)
		k++;
	double v = ns / u[k].div;
	int dec = u[k].div == 1 || v >= 100 ? 0 : v >= 10 ? 1 : 2;
	snprintf(buf, len, "%.*f %s", dec, v, u[k].unit);
}

static double nice_step(double span, double nticks)
{
	double raw = span / (nticks > 1 ? nticks : 1);
	if (raw < 1)
		return 1;
	double p = pow(10, floor(log10(raw)));
	double m = raw / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void value_text(const struct picture_value *v, char *buf, size_t len)
{
	if (v->label != NULL)
		snprintf(buf, len, "%s", v->label);
	else
		snprintf(buf, len, "%" PRId64, v->value);
}

/* ---- the drawing ---- */

static void fill_rect(cairo_t *cr, double x, double y, double w, double h, const double rgb[3])
{
	cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
	cairo_rectangle(cr, x, y, w, h);
	cairo_fill(cr);
}

static void draw_rows(struct draw *d, const struct picture *p, double x0, double x1, double y0,
		double y1)
{
	cairo_t *cr = d->cr;
	double rh = (y1 - y0) / (double) (p->nrows ? p->nrows : 1);
	double gap = rh >= 6 ? rh * 0.12 : 0;
	double tw = x1 - x0;
	double span = p->span > 0 ? (double) p->span : 1;
	for (size_t r = 0; r < p->nrows; r++) {
		const struct picture_row *row = &p->rows[r];
		double ry = y0 + rh * (double) r;
		if (r > 0 && row->group != p->rows[r - 1].group) {
			cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
			cairo_rectangle(cr, x0 - 4, floor(ry) - 1, tw + 4, 1);
			cairo_fill(cr);
		}
		double last_px = -1;
		for (size_t i = 0; i < row->n; i++) {
			if (row->v[i] == 0)
				continue;
			int64_t a = row->t[i], b = i + 1 < row->n ? row->t[i + 1] : p->span;
			if (a < 0)
				a = 0;
			if (b > p->span)
				b = p->span;
			if (b <= a && !(b == a && i + 1 == row->n))
				continue;
			double xa = x0 + tw * (double) a / span, xb = x0 + tw * (double) b / span;
			/* an interval narrower than a pixel, in a pixel drawn already */
			if (xb - xa < 1 && floor(xa) <= last_px)
				continue;
			if (xb - xa < 1)
				xb = xa + 1;
			double rgb[3];
			picture_color(row->v[i], rgb);
			fill_rect(cr, floor(xa), floor(ry + gap / 2), ceil(xb) - floor(xa),
					fmax(1, floor(rh - gap)), rgb);
			last_px = ceil(xb) - 1;
		}
	}
	if (rh >= d->fs * 0.9) {
		char b[256];
		for (size_t r = 0; r < p->nrows; r++) {
			double ry = y0 + rh * (double) r;
			text(d, x0 - 6, ry + rh / 2 + d->fs * 0.35,
					fit(d, p->rows[r].label, x0 - 10, b, sizeof b), 2);
		}
	}
}

static void draw_axis(struct draw *d, const struct picture *p, double x0, double x1, double y)
{
	cairo_t *cr = d->cr;
	cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
	cairo_rectangle(cr, x0, y, x1 - x0, 1);
	cairo_fill(cr);
	double span = p->span > 0 ? (double) p->span : 1;
	double step = nice_step(span, (x1 - x0) / (d->fs * 9));
	double first = ceil((double) p->origin / step) * step;
	char b[64];
	for (double t = first; t <= (double) p->origin + span + step * 1e-9; t += step) {
		double x = x0 + (x1 - x0) * (t - (double) p->origin) / span;
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		cairo_rectangle(cr, floor(x), y, 1, 5);
		cairo_fill(cr);
		fmt_time(b, sizeof b, t, step);
		text(d, x, y + 6 + d->fs, b, 1);
	}
	fmt_dur(b, sizeof b, span);
	char cap[128];
	snprintf(cap, sizeof cap, "time after the trace's first event (window: %s)", b);
	text(d, x1, y + 8 + d->fs * 2.2, cap, 2);
}

static void draw_legend(struct draw *d, const struct picture *p, double x0, double x1, double y0,
		double y1)
{
	double lh = d->fs * 1.5, sw = d->fs;
	text(d, x0, y0 + d->fs, "Legend", 0);
	double y = y0 + lh * 1.3;
	size_t rows = y1 > y ? (size_t) ((y1 - y) / lh) : 0;
	if (rows == 0)
		return;
	double colw = fmax(d->fs * 14, (x1 - x0) / 2);
	size_t cols = (size_t) ((x1 - x0) / colw);
	if (cols == 0)
		cols = 1;
	size_t fits = rows * cols;
	size_t shown = p->nvalues <= fits ? p->nvalues : fits - 1;
	char b[256], t[256];
	for (size_t i = 0; i < shown; i++) {
		double x = x0 + colw * (double) (i / rows), yy = y + lh * (double) (i % rows);
		double rgb[3];
		picture_color(p->values[i].value, rgb);
		fill_rect(d->cr, floor(x), floor(yy), sw, sw, rgb);
		value_text(&p->values[i], b, sizeof b);
		text(d, x + sw + 6, yy + sw * 0.85, fit(d, b, colw - sw - 12, t, sizeof t), 0);
	}
	if (shown < p->nvalues) {
		snprintf(b, sizeof b, "... %zu more values", p->nvalues - shown);
		text(d, x0 + colw * (double) (shown / rows), y + lh * (double) (shown % rows) + sw * 0.85,
				b, 0);
	}
}

static void draw_bars(struct draw *d, const struct picture *p, double x0, double x1, double y0,
		double y1)
{
	text(d, x0, y0 + d->fs, "Time per value in the window (all rows)", 0);
	double bh = d->fs * 1.5;
	double y = y0 + bh * 1.3;
	size_t fits = y1 > y ? (size_t) ((y1 - y) / bh) : 0;
	size_t n = p->nvalues < fits ? p->nvalues : fits;
	int64_t total = 0, max = 1;
	for (size_t i = 0; i < p->nvalues; i++) {
		total += p->values[i].time;
		if (p->values[i].time > max)
			max = p->values[i].time;
	}
	double lw = (x1 - x0) * 0.3, nw = d->fs * 11;
	double bx = x0 + lw + 6, bw = x1 - nw - bx;
	if (bw < 10)
		return;
	char b[256], t[256], num[64];
	for (size_t i = 0; i < n; i++) {
		const struct picture_value *v = &p->values[i];
		double yy = y + bh * (double) i;
		value_text(v, b, sizeof b);
		text(d, x0 + lw, yy + d->fs * 0.95, fit(d, b, lw - 4, t, sizeof t), 2);
		double rgb[3];
		picture_color(v->value, rgb);
		double w = bw * (double) v->time / (double) max;
		fill_rect(d->cr, floor(bx), floor(yy), fmax(1, floor(w)), floor(bh * 0.8), rgb);
		fmt_dur(num, sizeof num, (double) v->time);
		snprintf(b, sizeof b, "%s (%.1f%%)", num,
				total > 0 ? 100.0 * (double) v->time / (double) total : 0.0);
		text(d, bx + fmax(1, floor(w)) + 6, yy + d->fs * 0.95, b, 0);
	}
}

static void draw_all(struct draw *d, const struct picture *p, double W, double H)
{
	cairo_t *cr = d->cr;
	cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, d->fs);
	double pad = d->fs;
	char b[512];
	text(d, pad, pad + d->fs, fit(d, p->title, W - 2 * pad, b, sizeof b), 0);
	/* the label column */
	double lw = 0;
	for (size_t r = 0; r < p->nrows; r++) {
		double w = text_width(d, p->rows[r].label);
		if (w > lw)
			lw = w;
	}
	lw = fmin(lw + 12, W * 0.25);
	/* the timeline's box on whole pixels (tests/view/picture.py finds it so) */
	double x0 = floor(pad + lw + 0.5), x1 = floor(W - pad * 2 + 0.5);
	double bottom = fmax(H * 0.3, d->fs * 8);
	double axis_h = d->fs * 3.6;
	double y0 = floor(pad * 2 + d->fs * 1.5 + 0.5), y1 = floor(H - bottom - axis_h + 0.5);
	if (y1 < y0 + 1)
		y1 = y0 + 1;
	draw_rows(d, p, x0, x1, y0, y1);
	draw_axis(d, p, x0, x1, y1 + 2);
	double by0 = H - bottom + pad * 0.5, by1 = H - pad;
	draw_legend(d, p, pad, W * 0.4, by0, by1);
	draw_bars(d, p, W * 0.42, W - pad, by0, by1);
}

int picture_render(const struct picture *p, enum picture_format fmt, unsigned width,
		unsigned height, unsigned char **out, size_t *outlen, char *err, size_t errlen)
{
	struct buf b = { 0 }, svg_text = { 0 };
	double W = width, H = height;
	cairo_surface_t *s;
	if (fmt == PICTURE_PNG)
		s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int) width, (int) height);
	else if (fmt == PICTURE_SVG)
		s = cairo_svg_surface_create_for_stream(buf_write, &b, W, H);
	else
		s = cairo_pdf_surface_create_for_stream(buf_write, &b, W, H);
	if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
		snprintf(err, errlen, "cannot draw the picture: %s",
				cairo_status_to_string(cairo_surface_status(s)));
		cairo_surface_destroy(s);
		return -1;
	}
	if (fmt == PICTURE_PDF)
		cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_CREATOR, "weft view");
	struct draw d = { cairo_create(s), 0, fmt == PICTURE_SVG ? &svg_text : NULL };
	d.fs = fmin(fmax(fmin(W, H) / 70.0, 9.0), 28.0);
	draw_all(&d, p, W, H);
	cairo_status_t st = cairo_status(d.cr);
	cairo_destroy(d.cr);
	if (st == CAIRO_STATUS_SUCCESS && fmt == PICTURE_PNG)
		st = cairo_surface_write_to_png_stream(s, buf_write, &b);
	cairo_surface_finish(s);
	if (st == CAIRO_STATUS_SUCCESS)
		st = cairo_surface_status(s);
	cairo_surface_destroy(s);
	if (st != CAIRO_STATUS_SUCCESS || b.oom || svg_text.oom) {
		snprintf(err, errlen, "cannot draw the picture: %s",
				b.oom || svg_text.oom ? "out of memory" : cairo_status_to_string(st));
		free(b.p);
		free(svg_text.p);
		return -1;
	}
	if (fmt == PICTURE_SVG) {
		/* the text elements go before the closing tag */
		static const char end[] = "</svg>";
		size_t k = b.n;
		while (k >= sizeof end - 1 && memcmp(b.p + k - (sizeof end - 1), end, sizeof end - 1) != 0)
			k--;
		if (k < sizeof end - 1) {
			snprintf(err, errlen, "cannot draw the picture: cairo's SVG has no </svg>");
			free(b.p);
			free(svg_text.p);
			return -1;
		}
		struct buf o = { 0 };
		buf_add(&o, b.p, k - (sizeof end - 1));
		buf_add(&o, "<g id=\"weft-text\">\n", 19);
		buf_add(&o, svg_text.p, svg_text.n);
		buf_add(&o, "</g>\n", 5);
		buf_add(&o, b.p + k - (sizeof end - 1), b.n - (k - (sizeof end - 1)));
		free(b.p);
		free(svg_text.p);
		if (o.oom) {
			free(o.p);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		b = o;
	}
	*out = b.p;
	*outlen = b.n;
	return 0;
}

void picture_free(struct picture *p)
{
	for (size_t r = 0; r < p->nrows; r++) {
		free(p->rows[r].label);
		free(p->rows[r].t);
		free(p->rows[r].v);
	}
	for (size_t i = 0; i < p->nvalues; i++)
		free(p->values[i].label);
	free(p->rows);
	free(p->values);
	free(p->title);
	memset(p, 0, sizeof *p);
}

void picture_end(void)
{
	/* cairo's font caches hold fontconfig's patterns: freed first */
	cairo_debug_reset_static_data();
	FcFini();
}
