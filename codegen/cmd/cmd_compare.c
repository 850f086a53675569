/*
 * cmd_compare.c - `collc compare`: algorithms x sizes, or algorithms x n.
 *
 * Pipeline position: command line -> flags (cmd_flags.c) -> the verified
 * schedules and cost plans of every algorithm (cmd_algos.c), rebuilt for
 * each n of an --n-range -> the chosen models for each size -> a table
 * per collective of time, algbw, busbw and speedup over the baseline of
 * the same collective, or CSV/JSON rows (cmd_report.c), and with --svg a
 * line chart (svg.h): algbw against size, or speedup against n.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "cmd_flags.h"
#include "svg.h"

static char *fmt_size_tick(double v, char *buf, size_t len)
{
	return link_fmt_size(v, buf, len);
}

static char *fmt_int_tick(double v, char *buf, size_t len)
{
	snprintf(buf, len, "%.0f", v);
	return buf;
}

/* The n of an --n-range: powers of 2 and the midpoints between them, or
 * every step-th n. */
static int n_list(const cmd_opts *o, int **out)
{
	int *v = malloc(sizeof *v * (size_t)(o->nhi - o->nlo + 2)), k = 0;
	for (int n = o->nlo; n <= o->nhi; n++) {
		bool take;
		if (o->nstep > 0)
			take = (n - o->nlo) % o->nstep == 0;
		else {
			int p = 1;
			while (p * 2 <= n)
				p *= 2;
			take = n == p || (p >= 2 && n == p + p / 2);
		}
		if (take)
			v[k++] = n;
	}
	*out = v;
	return k;
}

static int emit_rows(const cmd_opts *o, cmd_row *rows, int nrows, bool by_n)
{
	if (o->csv) {
		fputs(cmd_csv_header, stdout);
		for (int i = 0; i < nrows; i++)
			cmd_csv_row(stdout, &rows[i]);
		return 0;
	}
	if (o->json) {
		fputs("[\n", stdout);
		for (int i = 0; i < nrows; i++)
			cmd_json_row(stdout, &rows[i], i == 0);
		fputs(nrows ? "\n]\n" : "]\n", stdout);
		return 0;
	}
	int kind = -1;
	for (int i = 0; i < nrows; i++) {
		const cmd_row *w = &rows[i];
		if ((int)w->kind != kind) {
			kind = (int)w->kind;
			printf("# %s\n", ir_kind_names[kind]);
			printf("%12s  %-16s %-7s %14s %12s %12s %9s\n", by_n ? "n" : "size(B)", "algorithm",
			       "model", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "speedup");
		}
		char sp[16] = "-";
		if (isfinite(w->speedup))
			snprintf(sp, sizeof sp, "%.3f", w->speedup);
		if (by_n)
			printf("%12d", w->n);
		else
			printf("%12.0f", w->bytes);
		printf("  %-16s %-7s %14.2f %12.2f %12.2f %9s\n", w->algo, w->model, w->r.time * 1e6,
		       w->r.algbw / 1e9, w->r.busbw / 1e9, sp);
	}
	return 0;
}

/* A row's point: algbw against size, or speedup against n (NaN where
 * its collective has no baseline). */
static double row_x(const cmd_row *w, bool by_n)
{
	return by_n ? w->n : w->bytes;
}

static double row_y(const cmd_row *w, bool by_n)
{
	return by_n ? w->speedup : w->r.algbw / 1e9;
}

/* One chart per collective: an allgather's algbw or an allreduce's
 * speedup over ring says nothing about the other collective's, so their
 * curves never share axes.  In each, one series per (algorithm, model)
 * with a point to draw, in first-appearance order. */
static int plot_rows(const cmd_opts *o, const cmd_row *rows, int nrows, bool by_n, double bytes)
{
	svg_chart charts[IR_NKINDS];
	char titles[IR_NKINDS][200];
	svg_series *s = calloc((size_t)nrows + 1, sizeof *s);
	char **names = calloc((size_t)nrows + 1, sizeof *names);
	double *xs = malloc(sizeof *xs * ((size_t)nrows + 1)), *ys = malloc(sizeof *ys * ((size_t)nrows + 1));
	int *owner = malloc(sizeof *owner * ((size_t)nrows + 1));
	bool multi = strcmp(o->model, "all") == 0;
	int nc = 0, ns = 0, off = 0;
	char d[128], sz[32];
	link_describe(&o->links, d, sizeof d);
	for (int kind = 0; kind < IR_NKINDS; kind++) {
		int first = ns, nk = 0;
		for (int i = 0; i < nrows; i++) {
			if ((int)rows[i].kind != kind)
				continue;
			nk++;
			if (!isfinite(row_y(&rows[i], by_n)))
				continue;
			int k;
			for (k = first; k < ns; k++)
				if (strcmp(rows[owner[k]].algo, rows[i].algo) == 0 &&
				    strcmp(rows[owner[k]].model, rows[i].model) == 0)
					break;
			if (k == ns)
				owner[ns++] = i;
		}
		if (ns == first) {
			if (nk)
				fprintf(stderr, "collc: note: %s: no chart for %s: the baseline '%s' is not "
					"one of its algorithms (see --baseline)\n", o->svg, ir_kind_names[kind],
					o->baseline);
			continue;
		}
		for (int k = first; k < ns; k++) {
			const cmd_row *f = &rows[owner[k]];
			char buf[96];
			if (multi)
				snprintf(buf, sizeof buf, "%s (%s)", f->algo, f->model);
			else
				snprintf(buf, sizeof buf, "%s", f->algo);
			names[k] = strdup(buf);
			s[k].name = names[k];
			s[k].x = xs + off;
			s[k].y = ys + off;
			for (int i = 0; i < nrows; i++)
				if (strcmp(rows[i].algo, f->algo) == 0 && strcmp(rows[i].model, f->model) == 0) {
					xs[off] = row_x(&rows[i], by_n);
					ys[off] = row_y(&rows[i], by_n);
					off++;
					s[k].n++;
				}
		}
		svg_plot pl = { .logx = 1, .yref = NAN, .title = titles[nc] };
		if (by_n) {
			snprintf(titles[nc], sizeof titles[nc], "%s: speedup over %s at %s (%s)",
				 ir_kind_names[kind], o->baseline, link_fmt_size(bytes, sz, sizeof sz), d);
			pl.xlabel = "ranks (n)";
			pl.ylabel = "speedup";
			pl.xfmt = fmt_int_tick;
			pl.yref = 1;
		} else {
			snprintf(titles[nc], sizeof titles[nc], "%s: algbw by size, n=%d (%s)",
				 ir_kind_names[kind], o->n, d);
			pl.xlabel = "buffer size";
			pl.ylabel = "algbw (GB/s)";
			pl.xfmt = fmt_size_tick;
		}
		charts[nc++] = (svg_chart){ .plot = pl, .series = s + first, .nseries = ns - first };
	}
	int rc;
	FILE *f;
	if (nc == 0)
		rc = cmd_input_error("%s: nothing to plot: no collective has its baseline '%s' here",
				     o->svg, o->baseline);
	else if ((rc = cmd_open_out(o->svg, &f)) == 0)
		rc = cmd_close_out(o->svg, f, svg_line_charts(f, charts, nc));
	for (int k = 0; k < ns; k++)
		free(names[k]);
	free(names);
	free(s);
	free(xs);
	free(ys);
	free(owner);
	return rc;
}

/* Rows for algorithms v (already built for n) at every size and model;
 * speedup against the baseline of the same collective. */
static int compare_at(const cmd_opts *o, cmd_algo *v, int nv, int n, const double *sizes, int nsizes,
		      cmd_row **rows, int *nrows, int *cap)
{
	const cost_model *models[4];
	int nm = cmd_models(o, models);
	for (int k = 0; k < IR_NKINDS; k++) {
		int base = -1;
		for (int i = 0; i < nv; i++)
			if ((int)v[i].kind == k && v[i].plan && strcmp(v[i].name, o->baseline) == 0)
				base = i;
		for (int z = 0; z < nsizes; z++)
			for (int m = 0; m < nm; m++) {
				cost_params q = cmd_params(o, sizes[z], n);
				link_error err;
				cost_result rb;
				if (base >= 0)
					q.segments = cmd_segments(o, v[base].plan, sizes[z]);
				bool have_base = base >= 0 &&
						 models[m]->predict(v[base].plan, &q, &rb, &err) == 0;
				for (int i = 0; i < nv; i++) {
					if ((int)v[i].kind != k || !v[i].plan)
						continue;
					if (*nrows == *cap) {
						*cap = *cap ? 2 * *cap : 256;
						*rows = realloc(*rows, sizeof **rows * (size_t)*cap);
					}
					cmd_row *w = &(*rows)[(*nrows)++];
					*w = (cmd_row){ .algo = v[i].name, .kind = v[i].kind, .n = n, .bytes = sizes[z],
							.model = models[m]->name, .straggler = q.straggler };
					q.segments = cmd_segments(o, v[i].plan, sizes[z]);
					if (models[m]->predict(v[i].plan, &q, &w->r, &err))
						return cmd_input_error("%s: %s", v[i].name, err.msg);
					w->speedup = have_base && w->r.time > 0 ? rb.time / w->r.time : NAN;
				}
			}
	}
	return 0;
}

int cmd_compare(int argc, char **argv)
{
	cmd_opts o;
	drv_prog *p;
	cmd_algo *v;
	int nv, nrows = 0, cap = 0;
	cmd_row *rows = NULL;
	int rc = cmd_setup(argc, argv, CMD_COMPARE, &o, &p, &v, &nv);
	if (rc == 0 && !o.have_nrange) {
		for (int i = 0; i < nv && rc == 0; i++) {
			int b = cmd_algo_build(p, &o, &v[i], o.n, o.nalgos == 0);
			if (b == 3)
				fprintf(stderr, "collc: note: skipping %s: n=%d unsupported (%s)\n", v[i].name,
					o.n, v[i].why);
			else
				rc = b;
		}
		if (rc == 0)
			rc = compare_at(&o, v, nv, o.n, o.sizes, o.nsizes, &rows, &nrows, &cap);
		if (rc == 0) {
			if (!o.csv && !o.json) {
				printf("# collc compare: n=%d, model %s, baseline %s\n", o.n, o.model, o.baseline);
				cmd_print_links(&o, o.n);
			}
			emit_rows(&o, rows, nrows, false);
			if (o.svg)
				rc = plot_rows(&o, rows, nrows, false, 0);
		}
	} else if (rc == 0) {
		int *ns, nn = n_list(&o, &ns);
		for (int t = 0; t < nn && rc == 0; t++) {
			for (int i = 0; i < nv && rc == 0; i++) {
				int b = cmd_algo_build(p, &o, &v[i], ns[t], true);
				if (b == 3)
					fprintf(stderr, "collc: note: skipping %s at n=%d (%s)\n", v[i].name, ns[t],
						v[i].why);
				else
					rc = b;
			}
			if (rc == 0)
				rc = compare_at(&o, v, nv, ns[t], o.sizes, 1, &rows, &nrows, &cap);
		}
		free(ns);
		if (rc == 0) {
			/* group by collective, then algorithm, then n */
			cmd_row *sorted = malloc(sizeof *sorted * ((size_t)nrows + 1));
			int k = 0;
			for (int kind = 0; kind < IR_NKINDS; kind++)
				for (int i = 0; i < nv; i++)
					for (int j = 0; j < nrows; j++)
						if ((int)rows[j].kind == kind && rows[j].algo == v[i].name &&
						    v[i].kind == (ir_kind)kind)
							sorted[k++] = rows[j];
			free(rows);
			rows = sorted;
			nrows = k;
			if (!o.csv && !o.json) {
				char sz[32];
				printf("# collc compare: n=%d..%d, %s, model %s, baseline %s\n", o.nlo, o.nhi,
				       link_fmt_size(o.sizes[0], sz, sizeof sz), o.model, o.baseline);
				cmd_print_links(&o, o.nhi);
			}
			emit_rows(&o, rows, nrows, true);
			if (o.svg)
				rc = plot_rows(&o, rows, nrows, true, o.sizes[0]);
		}
	}
	free(rows);
	return cmd_teardown(rc, &o, p, v, nv);
}

