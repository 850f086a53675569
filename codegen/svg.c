/*
 * svg.c - the SVG writer (see svg.h): axes with "nice" ticks, a log-2 x
 * axis for sizes and rank counts, a legend, and timelines.
 *
 * Pipeline position: output only; callers hand over finished numbers.
 * Coordinates are written with one decimal: enough for a screen, and it
 * keeps a 100 000-bar timeline at a few MB.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "svg.h"

/* Tableau's ten colours: distinct on screen and in print. */
static const char *const palette[] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
	"#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};
#define NPALETTE 10

void svg_escape(FILE *out, const char *s)
{
	for (; s && *s; s++)
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc(*s, out);
		}
}

static void begin(FILE *out, double w, double h)
{
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		     "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
		     "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
		     "font-family=\"sans-serif\" font-size=\"12\">\n"
		     "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", w, h, w, h);
}

static int end(FILE *out)
{
	fputs("</svg>\n", out);
	fflush(out);
	return ferror(out) ? -1 : 0;
}

static void text(FILE *out, double x, double y, const char *anchor, const char *extra,
		 const char *s)
{
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s>", x, y, anchor,
		extra ? " " : "", extra ? extra : "");
	svg_escape(out, s);
	fputs("</text>\n", out);
}

/* A step of 1, 2 or 5 times a power of ten giving about `want` ticks. */
static double nice_step(double span, int want)
{
	double raw = span / want, p = pow(10, floor(log10(raw))), f = raw / p;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

static char *fmt_g(double v, char *buf, size_t len)
{
	snprintf(buf, len, "%g", v);
	return buf;
}

/* The size of one line plot; stacked charts are PLOT_H apart. */
#define PLOT_W 900.0
#define PLOT_H 520.0

/* Whether series s has a point to draw. */
static int drawable(const svg_plot *p, const svg_series *s)
{
	for (int k = 0; k < s->n; k++)
		if (isfinite(p->logx ? log2(s->x[k]) : s->x[k]) && isfinite(s->y[k]))
			return 1;
	return 0;
}

/* One line plot, without the document around it. */
static void chart(FILE *out, const svg_plot *p, const svg_series *s, int ns)
{
	const double W = PLOT_W, H = PLOT_H, L = 80, R = 200, T = 50, B = 60;
	const double pw = W - L - R, ph = H - T - B;
	char *(*xfmt)(double, char *, size_t) = p->xfmt ? p->xfmt : fmt_g;
	char *(*yfmt)(double, char *, size_t) = p->yfmt ? p->yfmt : fmt_g;

	double x0 = INFINITY, x1 = -INFINITY, y1 = 0;
	for (int i = 0; i < ns; i++)
		for (int k = 0; k < s[i].n; k++) {
			double x = p->logx ? log2(s[i].x[k]) : s[i].x[k];
			if (!isfinite(x) || !isfinite(s[i].y[k]))
				continue;
			x0 = fmin(x0, x);
			x1 = fmax(x1, x);
			y1 = fmax(y1, s[i].y[k]);
		}
	if (!isfinite(x0)) {
		x0 = 0;
		x1 = 1;
	}
	if (x1 <= x0)
		x1 = x0 + 1;
	if (isfinite(p->yref))
		y1 = fmax(y1, p->yref);
	if (y1 <= 0)
		y1 = 1;
	double ystep = nice_step(y1, 6);
	y1 = ceil(y1 * 1.05 / ystep) * ystep;
#define PX(x) (L + ((x) - x0) / (x1 - x0) * pw)
#define PY(y) (T + ph - (y) / y1 * ph)

	text(out, W / 2, 28, "middle", "font-size=\"16\"", p->title ? p->title : "");
	/* grid and y ticks */
	char buf[64];
	for (double y = 0; y <= y1 * (1 + 1e-9); y += ystep) {
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			L, PY(y), L + pw, PY(y));
		text(out, L - 6, PY(y) + 4, "end", NULL, yfmt(y, buf, sizeof buf));
	}
	/* x ticks: powers of 2 on a log axis (every k-th labelled), else nice */
	if (p->logx) {
		int k0 = (int)ceil(x0 - 1e-9), k1 = (int)floor(x1 + 1e-9);
		int every = (k1 - k0) / 10 + 1;
		if (every > 2 && every < 5)
			every = 5;
		else if (every > 5)
			every = 10;
		for (int k = k0; k <= k1; k++) {
			int major = k % every == 0;
			fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n",
				PX(k), T, PX(k), T + ph, major ? "#ddd" : "#f2f2f2");
			if (major)
				text(out, PX(k), T + ph + 18, "middle", NULL, xfmt(ldexp(1, k), buf, sizeof buf));
		}
	} else {
		double xs = nice_step(x1 - x0, 8);
		for (double x = ceil(x0 / xs) * xs; x <= x1 + 1e-9 * xs; x += xs) {
			fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
				PX(x), T, PX(x), T + ph);
			text(out, PX(x), T + ph + 18, "middle", NULL, xfmt(x, buf, sizeof buf));
		}
	}
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
		     "stroke=\"black\"/>\n", L, T, pw, ph);
	text(out, L + pw / 2, H - 16, "middle", NULL, p->xlabel ? p->xlabel : "");
	char rot[80];
	snprintf(rot, sizeof rot, "transform=\"rotate(-90 %.1f %.1f)\"", 20.0, T + ph / 2);
	text(out, 20, T + ph / 2, "middle", rot, p->ylabel ? p->ylabel : "");
	if (isfinite(p->yref))
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\" "
			     "stroke-dasharray=\"6 4\"/>\n", L, PY(p->yref), L + pw, PY(p->yref));

	/* A series with no point gets no colour and no legend entry, so the
	 * legend lists exactly the lines drawn. */
	for (int i = 0, li = 0; i < ns; i++) {
		if (!drawable(p, &s[i]))
			continue;
		const char *col = palette[li % NPALETTE];
		const char *dash = li >= NPALETTE ? " stroke-dasharray=\"8 3\"" : "";
		double ly = T + 10 + 20 * li++;
		int open = 0;
		for (int k = 0; k < s[i].n; k++) {
			double x = p->logx ? log2(s[i].x[k]) : s[i].x[k], y = s[i].y[k];
			if (!isfinite(x) || !isfinite(y)) {
				if (open)
					fputs("\"/>\n", out);
				open = 0;
				continue;
			}
			if (!open)
				fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"",
					col, dash);
			fprintf(out, "%s%.1f,%.1f", open ? " " : "", PX(x), PY(y));
			open = 1;
		}
		if (open)
			fputs("\"/>\n", out);
		for (int k = 0; k < s[i].n; k++) {
			double x = p->logx ? log2(s[i].x[k]) : s[i].x[k], y = s[i].y[k];
			if (isfinite(x) && isfinite(y))
				fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
					PX(x), PY(y), col);
		}
		/* legend entry */
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
			     "stroke-width=\"3\"%s/>\n", L + pw + 15, ly, L + pw + 40, ly, col, dash);
		text(out, L + pw + 46, ly + 4, "start", NULL, s[i].name ? s[i].name : "");
	}
#undef PX
#undef PY
}

int svg_line_plot(FILE *out, const svg_plot *p, const svg_series *s, int ns)
{
	begin(out, PLOT_W, PLOT_H);
	chart(out, p, s, ns);
	return end(out);
}

int svg_line_charts(FILE *out, const svg_chart *c, int nc)
{
	if (nc == 1)
		return svg_line_plot(out, &c[0].plot, c[0].series, c[0].nseries);
	begin(out, PLOT_W, PLOT_H * (nc > 0 ? nc : 1));
	for (int i = 0; i < nc; i++) {
		fprintf(out, "<g transform=\"translate(0 %.0f)\">\n", PLOT_H * i);
		chart(out, &c[i].plot, c[i].series, c[i].nseries);
		fputs("</g>\n", out);
	}
	return end(out);
}

int svg_timeline_draw(FILE *out, const svg_timeline *t, const svg_bar *bars, int nbars)
{
	const double L = 80, R = 30, T = t->note ? 70 : 55, pw = 1100;
	double rowh = t->nrows <= 32 ? 18 : t->nrows <= 128 ? 6 : 3;
	double ph = rowh * t->nrows, legend = 30, B = 45;
	double W = L + pw + R, H = T + ph + B + legend;
	double tmax = t->tmax > 0 ? t->tmax : 1;
	char buf[64];

	begin(out, W, H);
	text(out, W / 2, 26, "middle", "font-size=\"16\"", t->title ? t->title : "");
	if (t->note)
		text(out, W / 2, 46, "middle", "fill=\"#444\"", t->note);
	/* time axis: nice ticks in s, ms, us or ns */
	double step = nice_step(tmax, 10);
	const char *unit = tmax >= 1 ? "s" : tmax >= 1e-3 ? "ms" : tmax >= 1e-6 ? "us" : "ns";
	double scale = tmax >= 1 ? 1 : tmax >= 1e-3 ? 1e3 : tmax >= 1e-6 ? 1e6 : 1e9;
	for (double x = 0; x <= tmax * (1 + 1e-9); x += step) {
		double px = L + x / tmax * pw;
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>\n",
			px, T, px, T + ph);
		snprintf(buf, sizeof buf, "%g %s", x * scale, unit);
		text(out, px, T + ph + 16, "middle", NULL, buf);
	}
	/* row labels, thinned so they stay legible */
	int every = rowh >= 12 ? 1 : (int)ceil(12 / rowh);
	for (int r = 0; r < t->nrows; r++) {
		if (r % every)
			continue;
		snprintf(buf, sizeof buf, t->rowfmt ? t->rowfmt : "%d", r);
		text(out, L - 6, T + rowh * r + rowh / 2 + 4, "end",
		     rowh < 12 ? "font-size=\"9\"" : NULL, buf);
	}
	for (int i = 0; i < nbars; i++) {
		const svg_bar *b = &bars[i];
		double x = L + b->t0 / tmax * pw, w = (b->t1 - b->t0) / tmax * pw;
		double y = T + rowh * b->row, h = rowh;
		if (b->part == 1)
			h = rowh / 2;
		else if (b->part == 2) {
			y += rowh / 2;
			h = rowh / 2;
		}
		if (w < 0.3)
			w = 0.3;
		const char *fill = b->style < 0 ? "#d9d9d9" : palette[b->style % NPALETTE];
		/* a hairline keeps back-to-back bars of one colour apart */
		fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"%s",
			x, y, w, h, fill,
			b->outline ? " stroke=\"black\" stroke-width=\"1.5\""
				   : w > 3 ? " stroke=\"white\" stroke-width=\"0.5\"" : "");
		if (b->tip) {
			fputs("><title>", out);
			svg_escape(out, b->tip);
			fputs("</title></rect>\n", out);
		} else {
			fputs("/>\n", out);
		}
	}
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
		     "stroke=\"black\"/>\n", L, T, pw, ph);
	/* legend: styles, then the outline convention */
	double lx = L, ly = T + ph + 34;
	for (int i = 0; i < t->nstyles; i++) {
		fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"%s\"/>\n",
			lx, ly - 9, palette[i % NPALETTE]);
		text(out, lx + 18, ly, "start", NULL, t->styles[i]);
		lx += 30 + 7 * strlen(t->styles[i]);
	}
	int grey = 0;
	for (int i = 0; i < nbars && !grey; i++)
		grey = bars[i].style < 0;
	if (grey) {
		fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"#d9d9d9\"/>\n",
			lx, ly - 9);
		text(out, lx + 18, ly, "start", NULL, "not joined yet");
		lx += 30 + 7 * strlen("not joined yet");
	}
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"white\" "
		     "stroke=\"black\" stroke-width=\"1.5\"/>\n", lx, ly - 9);
	text(out, lx + 18, ly, "start", NULL, "critical path (upper half: send, lower half: receive)");
	return end(out);
}
