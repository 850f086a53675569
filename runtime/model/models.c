/*
 * models.c - the cost models by name (cost_models[]: "rounds", "sim")
 * and what is found by searching them: the critical straggler delay, and
 * StragglAR's closed rule to hold it against.
 *
 * Pipeline position: the top of the cost model, above rounds.c and sim.c;
 * `collc cost|compare|tune` pick models here, and `collc build` asks for
 * critical delays (codegen/choose.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"

/* --- models and derived numbers -------------------------------------------- */

const cost_model cost_models[] = {
	{ "rounds", "round-synchronous: sum over rounds of the slowest message", cost_rounds },
	{ "sim", "event-driven: transfers start when their data and ports are ready",
	  cost_sim_time },
	{ NULL, NULL, NULL },
};

const cost_model *cost_model_find(const char *name)
{
	for (const cost_model *m = cost_models; m->name; m++)
		if (strcmp(m->name, name) == 0)
			return m;
	return NULL;
}

double cost_critical_delay_rule(double t_rs, double t_base, double t_algo)
{
	if (t_algo > t_base)
		return INFINITY;
	double d = t_rs - (t_base - t_algo);
	return d > 0 ? d : 0;
}

/* algo's time minus base's, both after a straggler that joins at d. */
static int gap(const cost_model *m, const cost_plan *a, const cost_plan *b, cost_params *q,
	       double d, double *h, link_error *err)
{
	cost_result ra, rb;
	q->delay = d;
	if (m->predict(a, q, &ra, err) || m->predict(b, q, &rb, err))
		return -1;
	*h = ra.time - rb.time;
	return 0;
}

int cost_critical_delay(const cost_model *m, const cost_plan *algo, const cost_plan *base,
			const cost_params *q0, double *delay, link_error *err)
{
	cost_params q = *q0;
	if (q.straggler < 0)
		return link_errorf(err, "a critical delay needs a straggler rank");
	if (algo->n != base->n)
		return link_errorf(err, "%s has %d ranks but %s has %d", algo->name, algo->n,
			    base->name, base->n);
	/* Beyond both masked delays nothing changes any more. */
	cost_result ra, rb;
	q.delay = COST_MASKED;
	if (m->predict(algo, &q, &ra, err) || m->predict(base, &q, &rb, err))
		return -1;
	double hi = ra.join > rb.join ? ra.join : rb.join, lo = 0, hlo, hhi;
	double tol = 1e-12 * (ra.time + rb.time + hi);
	/* Each time is max(P - d, T) in the delay d: flat once the delay
	 * hides that algorithm's precondition.  So the gap is flat, then
	 * falls (algo's precondition is the longer one to hide) or rises
	 * (base's is, as the Broadcast baseline's pre-allreduce is longer
	 * than StragglAR's reduce-scatter), then flat again: monotone.  The
	 * far end decides whether algo wins for every larger delay; only
	 * then does winning at 0 mean winning from 0. */
	if (gap(m, algo, base, &q, hi, &hhi, err))
		return -1;
	if (hhi > tol)
		return 1;
	if (gap(m, algo, base, &q, 0, &hlo, err))
		return -1;
	if (hlo <= 0) {
		*delay = 0;
		return 0;
	}
	/* A falling gap, piecewise linear: regula falsi with the Illinois
	 * fix lands on the crossing in a few steps; bisection guards the
	 * rest.  Invariant: gap(lo) > 0 >= gap(hi). */
	int side = 0;
	for (int it = 0; it < 200 && hi - lo > 1e-13 * (hi + 1e-300); it++) {
		double x = lo + (hi - lo) * hlo / (hlo - hhi);
		if (!(x > lo && x < hi) || it % 8 == 7)
			x = 0.5 * (lo + hi);
		double hx;
		if (gap(m, algo, base, &q, x, &hx, err))
			return -1;
		if (hx <= 0) {
			hi = x;
			hhi = hx;
			if (side == -1)
				hlo *= 0.5;
			side = -1;
			if (hx > -tol)
				break;   /* on the crossing itself */
		} else {
			lo = x;
			hlo = hx;
			if (side == 1)
				hhi *= 0.5;
			side = 1;
		}
	}
	*delay = hi;
	return 0;
}

