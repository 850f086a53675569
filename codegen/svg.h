/*
 * svg.h - a small SVG writer: line plots (log-2 x axis, legend) and
 * timelines (one row per rank, a bar per transfer).
 *
 * Pipeline position: output only.  `collc compare --svg` plots algbw
 * against size or speedup against n, a chart per collective; `collc sim
 * --svg` draws the simulated timeline with the critical path outlined;
 * collbench can plot its results the same way.  The files are plain SVG
 * 1.1 that browsers open; nothing is loaded from elsewhere.
 */
#ifndef COLL_SVG_H
#define COLL_SVG_H

#include <stddef.h>
#include <stdio.h>

/* One line of a plot: n points (x[i], y[i]); a NaN y leaves a gap. */
typedef struct {
	const char *name;
	int n;
	const double *x, *y;
} svg_series;

typedef struct {
	const char *title, *xlabel, *ylabel;
	int logx;              /* x axis in powers of 2 */
	/* Tick labels; NULL prints %g. */
	char *(*xfmt)(double v, char *buf, size_t len);
	char *(*yfmt)(double v, char *buf, size_t len);
	double yref;           /* dashed reference line at this y; NaN: none */
} svg_plot;

/* One chart of several stacked in one document. */
typedef struct {
	svg_plot plot;
	const svg_series *series;
	int nseries;
} svg_chart;

/* A timeline bar: row `row` from t0 to t1. */
typedef struct {
	int row;
	double t0, t1;
	int style;             /* palette index; -1: grey (waiting, not joined) */
	int part;              /* 0 full row height, 1 upper half, 2 lower half */
	int outline;           /* drawn with a heavy outline (critical path) */
	const char *tip;       /* tooltip, or NULL */
} svg_bar;

typedef struct {
	const char *title;
	const char *rowfmt;    /* row label, printf with one %d: "rank %d" */
	int nrows;
	double tmax;           /* right end of the time axis (s) */
	const char *const *styles;   /* legend names of the palette entries used */
	int nstyles;
	const char *note;      /* one line under the title, or NULL */
} svg_timeline;

/* svg.c */
/* Write a complete SVG document with the line plot of ns series; a
 * series with no finite point is neither drawn nor in the legend.
 * Returns 0, or -1 when writing failed. */
int svg_line_plot(FILE *out, const svg_plot *p, const svg_series *s, int ns);
/* The same with nc line plots stacked top to bottom, each with its own
 * axes and legend (one chart alone is written as svg_line_plot does). */
int svg_line_charts(FILE *out, const svg_chart *c, int nc);
/* Write a complete SVG document with the timeline. */
int svg_timeline_draw(FILE *out, const svg_timeline *t, const svg_bar *bars, int nbars);
/* Write text with &, <, >, " escaped. */
void svg_escape(FILE *out, const char *text);

#endif
