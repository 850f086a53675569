/*
 * cmd_tune.c - `collc tune`: which algorithm to run, and when StragglAR pays.
 *
 * Pipeline position: command line -> flags (cmd_flags.c) -> the verified
 * schedules and cost plans of every algorithm at one n (cmd_algos.c) ->
 * the chosen models -> two tables per collective: the fastest algorithm
 * for each range of sizes (the table a generated library chooses by),
 * and for every algorithm with a precondition phase (StragglAR) the
 * straggler delay above which it beats each other algorithm, searched
 * with the model (cost_critical_delay) and printed beside StragglAR's
 * closed-form rule; as text, CSV or JSON.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "cmd.h"
#include "cmd_flags.h"

/* The fastest algorithm per collective, model and range of sizes. */
static int tune_ranges(const cmd_opts *o, const cmd_algo *v, int nv, const cost_model **models,
		       int nm)
{
	int rc = 0;
	bool first = true;
	for (int m = 0; m < nm && rc == 0; m++)
		for (int k = 0; k < IR_NKINDS && rc == 0; k++) {
			int prev = -1, nk = 0;
			double from = 0;
			for (int i = 0; i < nv; i++)
				nk += (int)v[i].kind == k && v[i].plan;
			if (!nk)
				continue;
			if (!o->csv && !o->json)
				printf("\n# %s, model %s: fastest algorithm by size\n%12s %12s  %s\n",
				       ir_kind_names[k], models[m]->name, "from(B)", "to(B)", "algorithm");
			for (int z = 0; z <= o->nsizes && rc == 0; z++) {
				int best = -1;
				double bt = INFINITY;
				for (int i = 0; z < o->nsizes && i < nv; i++) {
					if ((int)v[i].kind != k || !v[i].plan)
						continue;
					cost_params q = cmd_params(o, o->sizes[z], o->n);
					q.segments = cmd_segments(o, v[i].plan, o->sizes[z]);
					cost_result r;
					link_error err;
					if (models[m]->predict(v[i].plan, &q, &r, &err)) {
						rc = cmd_input_error("%s: %s", v[i].name, err.msg);
						break;
					}
					if (r.time < bt) {
						bt = r.time;
						best = i;
					}
				}
				if (z > 0 && (z == o->nsizes || best != prev)) {
					double to = o->sizes[z - 1];
					if (o->csv)
						printf("range,%s,%s,%.0f,%.0f,%s,,,,,,,\n", ir_kind_names[k],
						       models[m]->name, from, to, v[prev].name);
					else if (o->json) {
						printf("%s  {\"collective\": \"%s\", \"model\": \"%s\", \"from_bytes\": %.0f, "
						       "\"to_bytes\": %.0f, \"algorithm\": ", first ? "" : ",\n",
						       ir_kind_names[k], models[m]->name, from, to);
						cmd_json_str(stdout, v[prev].name);
						printf("}");
						first = false;
					} else {
						char a[32], b[32];
						printf("%12.0f %12.0f  %-16s (%s .. %s)\n", from, to, v[prev].name,
						       link_fmt_size(from, a, sizeof a), link_fmt_size(to, b, sizeof b));
					}
				}
				if (z < o->nsizes && best != prev) {
					prev = best;
					from = o->sizes[z];
				}
			}
		}
	return rc;
}

/* For each algorithm with a precondition phase, the straggler delay above
 * which it beats each other algorithm of its collective. */
static int tune_delays(const cmd_opts *o, const cmd_algo *v, int nv, const cost_model **models,
		       int nm)
{
	int rc = 0;
	bool first = true;
	cost_params q0 = cmd_params(o, 1, o->n);
	if (q0.straggler < 0)
		q0.straggler = o->n - 1;
	for (int m = 0; m < nm && rc == 0; m++)
		for (int i = 0; i < nv && rc == 0; i++) {
			if (!v[i].plan || !v[i].plan->npre)
				continue;
			if (!o->csv && !o->json)
				printf("\n# %s, model %s: critical straggler delay (rank %d) above which it "
				       "beats each algorithm\n%12s  %-16s %12s %12s %12s %12s %12s\n", v[i].name,
				       models[m]->name, q0.straggler, "size(B)", "vs", "delay(us)", "rule(us)",
				       "T_RS(us)", "T_B(us)", "T_algo(us)");
			for (int z = 0; z < o->nsizes && rc == 0; z++)
				for (int j = 0; j < nv && rc == 0; j++) {
					if (j == i || !v[j].plan || v[j].kind != v[i].kind)
						continue;
					cost_params q = q0;
					q.bytes = o->sizes[z];
					q.delay = COST_MASKED;
					cost_result ra, rb;
					link_error err;
					double d = NAN;
					int found = -1;
					if (models[m]->predict(v[i].plan, &q, &ra, &err) == 0 &&
					    models[m]->predict(v[j].plan, &q, &rb, &err) == 0)
						found = cost_critical_delay(models[m], v[i].plan, v[j].plan, &q, &d, &err);
					if (found < 0) {
						rc = cmd_input_error("%s vs %s: %s", v[i].name, v[j].name, err.msg);
						break;
					}
					if (found == 1)
						d = INFINITY;
					double rule = cost_critical_delay_rule(ra.pre, rb.time, ra.time);
					if (o->csv) {
						printf("delay,%s,%s,,,%s,%s,%.0f,", ir_kind_names[v[i].kind],
						       models[m]->name, v[i].name, v[j].name, o->sizes[z]);
						if (isfinite(d))
							printf("%.17g", d);
						printf(",");
						if (isfinite(rule))
							printf("%.17g", rule);
						printf(",%.17g,%.17g,%.17g\n", ra.pre, rb.time, ra.time);
					} else if (o->json) {
						printf("%s  {\"collective\": \"%s\", \"model\": \"%s\", \"algorithm\": ",
						       first ? "" : ",\n", ir_kind_names[v[i].kind], models[m]->name);
						cmd_json_str(stdout, v[i].name);
						printf(", \"baseline\": ");
						cmd_json_str(stdout, v[j].name);
						printf(", \"bytes\": %.0f, \"straggler\": %d, \"delay_s\": ", o->sizes[z],
						       q.straggler);
						cmd_json_num(stdout, d);
						printf(", \"rule_s\": ");
						cmd_json_num(stdout, rule);
						printf(", \"t_rs_s\": ");
						cmd_json_num(stdout, ra.pre);
						printf(", \"t_base_s\": ");
						cmd_json_num(stdout, rb.time);
						printf(", \"t_algo_s\": ");
						cmd_json_num(stdout, ra.time);
						printf("}");
						first = false;
					} else {
						char ds[24] = "never", rs[24] = "never";
						if (isfinite(d))
							snprintf(ds, sizeof ds, "%.3f", d * 1e6);
						if (isfinite(rule))
							snprintf(rs, sizeof rs, "%.3f", rule * 1e6);
						printf("%12.0f  %-16s %12s %12s %12.3f %12.3f %12.3f\n", o->sizes[z],
						       v[j].name, ds, rs, ra.pre * 1e6, rb.time * 1e6, ra.time * 1e6);
					}
				}
		}
	return rc;
}

int cmd_tune(int argc, char **argv)
{
	cmd_opts o;
	drv_prog *p;
	cmd_algo *v;
	int nv;
	int rc = cmd_setup(argc, argv, CMD_TUNE, &o, &p, &v, &nv);
	for (int i = 0; i < nv && rc == 0; i++) {
		int b = cmd_algo_build(p, &o, &v[i], o.n, o.nalgos == 0);
		if (b == 3)
			fprintf(stderr, "collc: note: skipping %s: n=%d unsupported (%s)\n", v[i].name, o.n,
				v[i].why);
		else
			rc = b;
	}
	if (rc)
		return cmd_teardown(rc, &o, p, v, nv);
	const cost_model *models[4];
	int nm = cmd_models(&o, models);
	if (o.csv)
		fputs("section,collective,model,from_bytes,to_bytes,algorithm,baseline,bytes,"
		      "delay_s,rule_s,t_rs_s,t_base_s,t_algo_s\n", stdout);
	else if (o.json)
		fputs("{\"ranges\": [\n", stdout);
	else {
		printf("# collc tune: n=%d\n", o.n);
		cmd_print_links(&o, o.n);
	}
	rc = tune_ranges(&o, v, nv, models, nm);
	if (o.json)
		fputs("\n], \"critical_delays\": [\n", stdout);
	if (rc == 0 && !o.ranges_only)
		rc = tune_delays(&o, v, nv, models, nm);
	if (o.json && rc == 0)
		fputs("\n]}\n", stdout);
	return cmd_teardown(rc, &o, p, v, nv);
}
