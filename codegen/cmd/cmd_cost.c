/*
 * cmd_cost.c - `collc cost`: the predicted time of each algorithm.
 *
 * Pipeline position: command line -> flags (cmd_flags.c) -> the verified
 * schedules and their cost plans (cmd_algos.c) -> every cost model
 * (cost.h) for each size -> a block per algorithm with one line per size
 * and model, or CSV/JSON rows (cmd_report.c).  With a straggler it also
 * prints when the straggler joined and the total from the start.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "cmd.h"
#include "cmd_flags.h"

/* One algorithm's rows: a text block, or CSV/JSON rows (*first: no JSON
 * row written yet). */
static int cost_algo(const cmd_opts *o, const cmd_algo *a, const cost_model **models, int nm,
		     bool *first)
{
	if (!o->csv && !o->json) {
		cmd_describe_sched(a);
		cmd_print_links(o, o->n);
		printf("%-10s  %-7s %11s %13s %13s", "size", "model", "time", "algbw", "busbw");
		if (cmd_straggler_for(o, o->n) >= 0)
			printf(" %11s %11s", "joins at", "total");
		printf("\n");
	}
	for (int z = 0; z < o->nsizes; z++)
		for (int m = 0; m < nm; m++) {
			cost_params q = cmd_params(o, o->sizes[z], o->n);
			q.segments = cmd_segments(o, a->plan, o->sizes[z]);
			cmd_row w = { .algo = a->name, .kind = a->kind, .n = o->n, .bytes = o->sizes[z],
				      .model = models[m]->name, .speedup = NAN,
				      .straggler = q.straggler };
			link_error err;
			if (models[m]->predict(a->plan, &q, &w.r, &err))
				return cmd_input_error("%s", err.msg);
			if (o->csv)
				cmd_csv_row(stdout, &w);
			else if (o->json) {
				cmd_json_row(stdout, &w, *first);
				*first = false;
			} else {
				char s[32], t[32], ab[32], bb[32], j[32], tt[32];
				printf("%-10s  %-7s %11s %13s %13s", link_fmt_size(w.bytes, s, sizeof s),
				       w.model, cmd_fmt_time(w.r.time, t, sizeof t),
				       link_fmt_bw(w.r.algbw, ab, sizeof ab),
				       link_fmt_bw(w.r.busbw, bb, sizeof bb));
				if (q.straggler >= 0)
					printf(" %11s %11s", cmd_fmt_time(w.r.join, j, sizeof j),
					       cmd_fmt_time(w.r.total, tt, sizeof tt));
				printf("\n");
			}
		}
	return 0;
}

int cmd_cost(int argc, char **argv)
{
	cmd_opts o;
	drv_prog *p;
	cmd_algo *v;
	int nv;
	int rc = cmd_setup(argc, argv, CMD_COST, &o, &p, &v, &nv);
	/* Without -a, an algorithm that does not support n is skipped, as
	 * compare does; one named with -a must build. */
	int nbuilt = 0;
	for (int i = 0; i < nv && rc == 0; i++) {
		int b = cmd_algo_build(p, &o, &v[i], o.n, o.nalgos == 0);
		if (b == 3)
			fprintf(stderr, "collc: note: skipping %s: n=%d unsupported (%s)\n", v[i].name,
				o.n, v[i].why);
		else
			rc = b;
		nbuilt += b == 0;
	}
	if (rc == 0 && nbuilt == 0)
		rc = cmd_input_error("no algorithm in the given files supports n=%d", o.n);
	if (rc == 0) {
		const cost_model *models[4];
		int nm = cmd_models(&(cmd_opts){ .model = "all" }, models);
		if (o.csv)
			fputs(cmd_csv_header, stdout);
		else if (o.json)
			fputs("[\n", stdout);
		bool first = true, text = !o.csv && !o.json;
		for (int i = 0, blocks = 0; i < nv && rc == 0; i++) {
			if (!v[i].plan)
				continue;
			if (text && blocks++)
				printf("\n");
			rc = cost_algo(&o, &v[i], models, nm, &first);
		}
		if (o.json && rc == 0)
			fputs("\n]\n", stdout);
		if (text && o.segments > 1 && rc == 0)
			printf("# (segments apply to the sim model; rounds run each round on the whole buffer)\n");
	}
	return cmd_teardown(rc, &o, p, v, nv);
}
