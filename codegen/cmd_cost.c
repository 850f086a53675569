/*
 * cmd_cost.c - `collc cost`: the predicted time of one algorithm.
 *
 * Pipeline position: command line -> flags (cmd_flags.c) -> the verified
 * schedule and its cost plan (cmd_algos.c) -> every cost model
 * (cost.h) for each size -> one line per model and size, or CSV/JSON rows
 * (cmd_report.c).  With a straggler it also prints when the straggler
 * joined and the total from the start.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "cmd_cost.h"
#include "cmd_flags.h"

static const char cost_usage[] =
	"usage: collc cost FILE... -a ALGO -n N [-s SIZE | -b MIN -e MAX [-f F]]\n"
	"                  [--alpha T --bw BW | --links MATRIX] [--csv | --json]\n"
	"Predicted time of ALGO under each cost model, one line per model and size:\n"
	"  rounds  round-synchronous: sum over rounds of the slowest transfer\n"
	"  sim     event-driven: each transfer starts when its data and ports are ready\n";

int cmd_cost(int argc, char **argv)
{
	cmd_opts o;
	drv_prog *p;
	cmd_algo *v;
	int nv;
	int rc = cmd_setup(argc, argv, CMD_COST, cost_usage, true, &o, &p, &v, &nv);
	if (rc == 0)
		rc = cmd_algo_build(p, &o, &v[0], o.n, false);
	if (rc == 0) {
		const cost_model *models[4];
		int nm = cmd_models(&(cmd_opts){ .model = "all" }, models);
		if (o.csv)
			fputs(cmd_csv_header, stdout);
		else if (o.json)
			fputs("[\n", stdout);
		else {
			cmd_describe_sched(&v[0]);
			cmd_print_links(&o, o.n);
			printf("%-10s  %-7s %11s %13s %13s", "size", "model", "time", "algbw", "busbw");
			if (cmd_straggler_for(&o, o.n) >= 0)
				printf(" %11s %11s", "joins at", "total");
			printf("\n");
		}
		bool first = true;
		for (int z = 0; z < o.nsizes && rc == 0; z++)
			for (int m = 0; m < nm && rc == 0; m++) {
				cost_params q = cmd_params(&o, o.sizes[z], o.n);
				cmd_row w = { .algo = v[0].name, .kind = v[0].kind, .n = o.n, .bytes = o.sizes[z],
					      .model = models[m]->name, .speedup = NAN,
					      .straggler = q.straggler };
				link_error err;
				if (models[m]->predict(v[0].plan, &q, &w.r, &err)) {
					rc = cmd_input_error("%s", err.msg);
					break;
				}
				if (o.csv)
					cmd_csv_row(stdout, &w);
				else if (o.json) {
					cmd_json_row(stdout, &w, first);
					first = false;
				} else {
					char a[32], b[32], c[32], d[32], e[32], f[32];
					printf("%-10s  %-7s %11s %13s %13s", link_fmt_size(w.bytes, a, sizeof a),
					       w.model, link_fmt_time(w.r.time, b, sizeof b),
					       link_fmt_bw(w.r.algbw, c, sizeof c),
					       link_fmt_bw(w.r.busbw, d, sizeof d));
					if (q.straggler >= 0)
						printf(" %11s %11s", link_fmt_time(w.r.join, e, sizeof e),
						       link_fmt_time(w.r.total, f, sizeof f));
					printf("\n");
				}
			}
		if (o.json && rc == 0)
			fputs("\n]\n", stdout);
		if (!o.csv && !o.json && o.segments > 1 && rc == 0)
			printf("# (segments apply to the sim model; rounds run each round on the whole buffer)\n");
	}
	return cmd_teardown(rc, &o, p, v, nv);
}

