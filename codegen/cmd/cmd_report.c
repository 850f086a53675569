/*
 * cmd_report.c - output the cost subcommands share.
 *
 * Pipeline position: the last step of `collc cost`, `sim`, `compare` and
 * `tune`, for what more than one of them prints: result rows as CSV and
 * JSON (one format for cost and compare, so a tool reads either), the
 * "# links: ..." and "# ALGO (collective): ..." header lines, and the
 * opening and closing of an --svg file with its errors reported once,
 * and how every one of them writes a time.
 * What only one command prints stays in that command's file.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "cmd_flags.h"

void cmd_json_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.17g", v);
	else
		fputs("null", f);
}

void cmd_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

const char cmd_csv_header[] =
	"algorithm,collective,n,bytes,model,time_s,algbw,busbw,speedup,total_s,straggler,join_s\n";

void cmd_csv_row(FILE *f, const cmd_row *w)
{
	/* full precision: the rows are for tools, and tests compare them */
	fprintf(f, "%s,%s,%d,%.0f,%s,%.17g,%.17g,%.17g,", w->algo, ir_kind_names[w->kind], w->n,
		w->bytes, w->model, w->r.time, w->r.algbw / 1e9, w->r.busbw / 1e9);
	if (isfinite(w->speedup))
		fprintf(f, "%.17g", w->speedup);
	fprintf(f, ",%.17g,", w->r.total);
	if (w->straggler >= 0)
		fprintf(f, "%d,%.17g", w->straggler, w->r.join);
	else
		fputc(',', f);
	fputc('\n', f);
}

void cmd_json_row(FILE *f, const cmd_row *w, bool first)
{
	fputs(first ? "  {" : ",\n  {", f);
	fputs("\"algorithm\": ", f);
	cmd_json_str(f, w->algo);
	fprintf(f, ", \"collective\": \"%s\", \"n\": %d, \"bytes\": %.0f, \"model\": \"%s\", ",
		ir_kind_names[w->kind], w->n, w->bytes, w->model);
	fputs("\"time_s\": ", f);
	cmd_json_num(f, w->r.time);
	fputs(", \"algbw\": ", f);
	cmd_json_num(f, w->r.algbw / 1e9);
	fputs(", \"busbw\": ", f);
	cmd_json_num(f, w->r.busbw / 1e9);
	fputs(", \"speedup\": ", f);
	cmd_json_num(f, w->speedup);
	fputs(", \"total_s\": ", f);
	cmd_json_num(f, w->r.total);
	fputs(", \"straggler\": ", f);
	if (w->straggler >= 0)
		fprintf(f, "%d", w->straggler);
	else
		fputs("null", f);
	fputs(", \"join_s\": ", f);
	cmd_json_num(f, w->straggler >= 0 ? w->r.join : NAN);
	fputc('}', f);
}

void cmd_print_links(const cmd_opts *o, int n)
{
	char d[256], t[32];
	printf("# links: %s", link_describe(&o->links, d, sizeof d));
	int sg = cmd_straggler_for(o, n);
	if (sg >= 0) {
		if (o->have_delay)
			printf("; straggler: rank %d, delay %s", sg, cmd_fmt_time(o->delay, t, sizeof t));
		else
			printf("; straggler: rank %d, delay long enough to hide what it can", sg);
	}
	if (o->segments > 1)
		printf("; %d segments", o->segments);
	printf("\n");
}

void cmd_describe_sched(const cmd_algo *a)
{
	const cost_plan *p = a->plan;
	printf("# %s (%s): n=%d, %d chunks, %d rounds", a->name, ir_kind_names[a->kind], p->n,
	       p->chunks, p->nrounds);
	if (p->npre)
		printf(" (%d in a precondition phase)", p->npre);
	printf(", %d messages, ports %d/%d\n", p->nmsgs, p->ports_send, p->ports_recv);
}

int cmd_open_out(const char *path, FILE **f)
{
	*f = fopen(path, "w");
	if (!*f)
		return cmd_input_error("cannot write %s: %m", path);
	return 0;
}

int cmd_close_out(const char *path, FILE *f, int rc)
{
	if (fclose(f) != 0 || rc)
		return cmd_input_error("writing %s failed", path);
	return 0;
}

char *cmd_fmt_time(double s, char *buf, size_t len)
{
	if (fabs(s) < 0.5e-12)
		s = 0;
	else if (fabs(s) < 1e-6)
		s = round(s * 1e12) * 1e-12;   /* ns with at most 3 decimals */
	return link_fmt_time(s, buf, len);
}
