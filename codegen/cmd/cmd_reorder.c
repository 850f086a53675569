/*
 * cmd_reorder.c - `collc reorder`: the rank order under which a schedule
 * runs fastest on a measured (or declared) network.
 *
 *   collc reorder FILE -a ALGO -n N --links MATRIX [-s SIZE] [--time-limit T]
 *                 [--seed K] [--moves M] [--effort F] [--exact-max N] [--perm START] [--spread K]
 *                 [--json]
 *
 * Pipeline position: command line -> flags (cmd_flags.c) -> the verified
 * schedule and its cost plan (cmd_algos.c) -> the search (reorder.h) ->
 * the identity and the best order costed again by both models (cost.h,
 * with cost_params.perm) -> a report.  It prints the permutation
 * (schedule rank -> physical rank), the predicted time of the identity
 * order and of the best one under the rounds model (the objective) and
 * the event-driven simulation, the tie-breaking sums, a lower bound, and
 * "optimal" only when branch and bound finished.  --spread K adds K orders
 * spread from the best to the highest predicted time (reorder_spread):
 * the orders the rank-reordering paper measured to test its model.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "cmd_flags.h"
#include "xalloc.h"

/* The simulation is a fluid one with shared segments, whose cost grows
 * with messages x active flows: beyond this many messages it runs only
 * with --sim. */
#define SIM_MAX_MSGS 200000

typedef struct {
	double rounds, sim;    /* predicted times (sim: NaN when not run) */
} pred;

static int predict(const cmd_opts *o, const cost_plan *pl, const int32_t *perm, bool sim, pred *x)
{
	cost_params q = cmd_params(o, o->sizes[0], o->n);
	q.perm = perm;
	q.straggler = -1;
	q.segments = 1;
	cost_result r;
	link_error err;
	if (cost_rounds(pl, &q, &r, &err))
		return cmd_input_error("%s", err.msg);
	x->rounds = r.time;
	x->sim = NAN;
	if (sim) {
		q.segments = cmd_segments(o, pl, o->sizes[0]);
		if (cost_sim_time(pl, &q, &r, &err))
			return cmd_input_error("%s", err.msg);
		x->sim = r.time;
	}
	return 0;
}

/* reorder_spread's cost: the simulation, as the "sim" line reports it */
typedef struct {
	const cmd_opts *o;
	const cost_plan *pl;
	int rc;
} sim_ctx;

static double sim_cost(void *ctx, const int32_t *perm)
{
	sim_ctx *c = ctx;
	pred x;
	if (c->rc == 0)
		c->rc = predict(c->o, c->pl, perm, true, &x);
	return c->rc ? -1 : x.sim;
}

static void json_perm(const int32_t *perm, int n)
{
	printf("[");
	for (int i = 0; i < n; i++)
		printf("%s%d", i ? ", " : "", perm ? perm[i] : i);
	printf("]");
}

static void json_side(const char *name, const pred *x, double h, double s, bool comma)
{
	printf("  \"%s\": {\"rounds_s\": ", name);
	cmd_json_num(stdout, x->rounds);
	printf(", \"sim_s\": ");
	cmd_json_num(stdout, x->sim);
	printf(", \"hops_s\": ");
	cmd_json_num(stdout, h);
	printf(", \"segments_busy_s\": ");
	cmd_json_num(stdout, s);
	printf("}%s\n", comma ? "," : "");
}

static void text_line(const char *what, double a, double b)
{
	char x[32], y[32];
	printf("%-22s %12s %12s", what, cmd_fmt_time(a, x, sizeof x), cmd_fmt_time(b, y, sizeof y));
	if (a > 0 && b > 0)
		printf(" %9.3fx", a / b);
	printf("\n");
}

int cmd_reorder(int argc, char **argv)
{
	cmd_opts o;
	drv_prog *p;
	cmd_algo *v;
	int nv;
	int rc = cmd_setup(argc, argv, CMD_REORDER, &o, &p, &v, &nv);
	if (rc == 0)
		rc = cmd_algo_build(p, &o, &v[0], o.n, false);
	if (rc != 0)
		return cmd_teardown(rc, &o, p, v, nv);
	const cost_plan *pl = v[0].plan;
	/* A links file's host lines (runtime/model/README.md, "One host")
	 * are the same for every order of ranks on that host, and the
	 * search's incremental objective (reorder_state.c) charges links
	 * alone: set them aside so that its times are the rounds model's. */
	o.links.host = (link_host){ 0 };
	reorder_opts ro = { .bytes = o.sizes[0], .seed = o.seed ? o.seed : 1, .moves = o.moves,
			    .effort = o.effort,
			    .time_limit = o.time_limit > 0 ? o.time_limit : 10.0, .exact_max = o.exact_max,
			    .start = o.perm };
	reorder_result res;
	link_error err;
	if (o.exhaustive ? reorder_exhaustive(pl, &o.links, o.sizes[0], &res, &err)
			 : reorder_search(pl, &o.links, &ro, &res, &err)) {
		reorder_result_free(&res);
		return cmd_teardown(cmd_input_error("%s", err.msg), &o, p, v, nv);
	}
	bool sim = o.sim || o.links.nsegs == 0 || pl->nmsgs <= SIM_MAX_MSGS / (pl->n > 0 ? pl->n : 1);
	pred id, best;
	rc = predict(&o, pl, NULL, sim, &id);
	if (rc == 0)
		rc = predict(&o, pl, res.perm, sim, &best);
	int ns = o.spread;
	int32_t *sp = NULL;
	double *st = NULL;
	pred *spp = NULL;
	if (rc == 0 && ns > 0) {
		sp = xmalloc(sizeof *sp * (size_t)ns * (size_t)o.n);
		st = xmalloc(sizeof *st * (size_t)ns);
		spp = xmalloc(sizeof *spp * (size_t)ns);
		/* spread by the simulation where it runs: the rounds model's
		 * segment maxima leave few distinct times (ring on 4 racks of 2:
		 * two) */
		sim_ctx sc = { &o, pl, 0 };
		if (reorder_spread(pl, &o.links, o.sizes[0], res.perm, ns, ro.seed, sim ? sim_cost : NULL, &sc, sp, st,
				   &err))
			rc = sc.rc ? sc.rc : cmd_input_error("%s", err.msg);
		/* st holds each order's simulated time already: only the
		 * rounds model is left to run */
		for (int i = 0; i < ns && rc == 0; i++) {
			rc = predict(&o, pl, sp + (size_t)i * (size_t)o.n, false, &spp[i]);
			if (sim)
				spp[i].sim = st[i];
		}
	}
	if (rc == 0 && o.json) {
		printf("{\n  \"algorithm\": ");
		cmd_json_str(stdout, v[0].name);
		printf(", \"collective\": \"%s\", \"n\": %d, \"bytes\": %.0f,\n", ir_kind_names[v[0].kind], o.n,
		       o.sizes[0]);
		printf("  \"perm\": ");
		json_perm(res.perm, o.n);
		printf(",\n");
		json_side("identity", &id, res.h_identity, res.s_identity, true);
		json_side("best", &best, res.h_best, res.s_best, true);
		printf("  \"speedup_rounds\": ");
		cmd_json_num(stdout, id.rounds / best.rounds);
		printf(", \"speedup_sim\": ");
		cmd_json_num(stdout, id.sim / best.sim);
		printf(", \"lower_bound_s\": ");
		cmd_json_num(stdout, res.lower_bound);
		printf(", \"optimal\": %s, \"stopped\": %s,\n", res.optimal ? "true" : "false",
		       res.stopped ? "true" : "false");
		printf("  \"start\": \"%s\", ", res.start);
		printf("\"seed\": %llu, \"moves\": %ld, \"accepted\": %ld, \"runs\": %d, \"nodes\": %ld, "
		       "\"patterns\": %d, \"rounds\": %d, \"seconds\": %.6f",
		       (unsigned long long)ro.seed, res.moves, res.accepted, res.runs, res.nodes, res.npatterns,
		       res.nrounds, res.seconds);
		if (ns > 0) {
			printf(",\n  \"spread\": [\n");
			for (int i = 0; i < ns; i++) {
				printf("    {\"rounds_s\": ");
				cmd_json_num(stdout, spp[i].rounds);
				printf(", \"sim_s\": ");
				cmd_json_num(stdout, spp[i].sim);
				printf(", \"perm\": ");
				json_perm(sp + (size_t)i * (size_t)o.n, o.n);
				printf("}%s\n", i + 1 < ns ? "," : "");
			}
			printf("  ]");
		}
		printf("\n}\n");
	} else if (rc == 0) {
		char sz[32];
		cmd_describe_sched(&v[0]);
		cmd_print_links(&o, o.n);
		printf("# search: %d round pattern%s for %d rounds; ", res.npatterns, res.npatterns == 1 ? "" : "s",
		       res.nrounds);
		if (o.exhaustive)
			printf("exhaustive, %ld orders", res.nodes);
		else
			printf("start %s; annealing %ld moves (%ld taken) in %d run%s, seed %llu", res.start, res.moves,
			       res.accepted, res.runs, res.runs == 1 ? "" : "s", (unsigned long long)ro.seed);
		if (res.exact_ran)
			printf("; branch and bound %ld nodes%s", res.nodes, res.optimal ? ", finished" : ", cut short");
		printf("; %.3f s%s\n", res.seconds, res.stopped ? " (time limit reached)" : "");
		printf("order:");
		for (int i = 0; i < o.n; i++)
			printf(" %d", res.perm[i]);
		printf("\n# schedule rank r runs on physical rank order[r]\n");
		printf("%-22s %12s %12s %10s\n", link_fmt_size(o.sizes[0], sz, sizeof sz), "identity", "best", "speedup");
		text_line("rounds (searched)", id.rounds, best.rounds);
		if (sim)
			text_line("sim", id.sim, best.sim);
		else
			printf("%-22s not run (%d messages with shared segments: pass --sim)\n", "sim", pl->nmsgs);
		text_line("sum of hop costs", res.h_identity, res.h_best);
		if (o.links.nsegs)
			text_line("segments busy", res.s_identity, res.s_best);
		char lb[32];
		if (o.exhaustive)
			printf("lower bound            %12s optimal (every one of the %ld orders tried)\n",
			       cmd_fmt_time(res.lower_bound, lb, sizeof lb), res.nodes);
		else if (res.bound_met)
			printf("lower bound            %12s optimal (the best order meets the bound)\n",
			       cmd_fmt_time(res.lower_bound, lb, sizeof lb));
		else if (res.optimal)
			printf("lower bound            %12s optimal (branch and bound finished)\n",
			       cmd_fmt_time(res.lower_bound, lb, sizeof lb));
		else if (isfinite(res.lower_bound))
			printf("lower bound            %12s (every message at the cheapest pair; not proven optimal)\n",
			       cmd_fmt_time(res.lower_bound, lb, sizeof lb));
		if (ns > 0)
			printf("# %d orders spread from the best to the highest predicted time found\n", ns);
		for (int i = 0; i < ns; i++) {
			char x[32], y[32];
			printf("spread %3d/%-3d %12s %12s  order:", i + 1, ns, cmd_fmt_time(spp[i].rounds, x, sizeof x),
			       sim ? cmd_fmt_time(spp[i].sim, y, sizeof y) : "-");
			for (int r = 0; r < o.n; r++)
				printf(" %d", sp[(size_t)i * (size_t)o.n + (size_t)r]);
			printf("\n");
		}
	}
	free(sp), free(st), free(spp);
	reorder_result_free(&res);
	return cmd_teardown(rc, &o, p, v, nv);
}
