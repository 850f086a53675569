/*
 * reorder_spread.c - orders spread over the range of costs, to test a
 * model against a network (reorder_spread, reorder.h): the rank-reordering
 * paper's Table I test.  Walks by swaps through the search's incremental
 * state (reorder_state.c) or a caller's cost.
 *
 * Pipeline position: beside the search; `collc reorder --spread` calls it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reorder_int.h"

/* --- orders spread over the range of costs ------------------------------------ */

/* A walk's state: its order cur and that order's cost.  With the
 * objective T (fn NULL) s->perm is cur and a swap re-costs only the
 * messages of the two ranks it moves (rs_swap), as annealing does; a
 * caller's cost is called on the whole order. */
typedef struct {
	rs *s;
	reorder_cost_fn fn;      /* NULL: the objective T */
	void *ctx;
	int failed;              /* fn returned a negative cost (an error); 2: out of memory */
	int32_t *cur;
	int n;
} spread_ctx;

static double sw_fn(spread_ctx *c)
{
	double t = c->fn(c->ctx, c->cur);
	if (!(t >= 0))
		c->failed = 1;
	return t;
}

/* The walk goes to perm: its cost, from scratch (a caller's cost is
 * taken as known when known >= 0). */
static double sw_start(spread_ctx *c, const int32_t *perm, double known)
{
	memcpy(c->cur, perm, sizeof *perm * (size_t)c->n);
	if (c->fn)
		return known >= 0 ? known : sw_fn(c);
	memcpy(c->s->perm, perm, sizeof *perm * (size_t)c->n);
	rs_recompute(c->s);
	return c->s->T;
}

/* Swap positions a and b of the walk's order; the cost only when asked
 * for (taking a swap back needs none). */
static double sw_swap(spread_ctx *c, int a, int b, int cost)
{
	int32_t x = c->cur[a];
	c->cur[a] = c->cur[b];
	c->cur[b] = x;
	if (!c->fn) {
		rs_swap(c->s, a, b);
		return c->s->T;
	}
	return cost ? sw_fn(c) : 0;
}

/* How far cost t is from goal (goal = INFINITY: the higher the nearer). */
static double spread_dist(double t, double goal) { return isinf(goal) ? -t : fabs(t - goal); }

static bool sw_taken(const int32_t *o, int n, const int32_t *taken, int ntaken)
{
	for (int i = 0; i < ntaken; i++)
		if (memcmp(taken + (size_t)i * (size_t)n, o, sizeof *o * (size_t)n) == 0)
			return true;
	return false;
}

/* Swap moves from perm toward an order whose cost is nearest goal: a
 * random move is kept when it brings the cost no farther (equal ones
 * drift over the plateaus that segments' maxima make) and, one time in
 * 20, when it does (out of a local extreme).  Random moves alone land
 * badly where few orders lie near goal (just above the best order: most
 * swaps of a good order cost far more), so at its start, and whenever
 * the nearest order met has not changed for 4n moves, the walk takes the
 * best of all n(n-1)/2 swaps of its start or of that order, again while
 * that gets nearer, then walks on at random (a scan counts as that many
 * moves, and is left out where it would take more than a quarter of
 * them: n > 316 on the objective T).  perm ends as the
 * nearest order met that is none of the ntaken orders in taken
 * (unchanged if every one met was), *t as its cost; stops when within
 * tol of goal or after moves moves. */
static void spread_walk(spread_ctx *c, int32_t *perm, double *t, double goal, double tol, long moves,
			uint64_t *rng, const int32_t *taken, int ntaken)
{
	int n = c->n;
	double tc = sw_start(c, perm, *t), d = spread_dist(tc, goal), bd = INFINITY;
	long pairs = (long)n * (n - 1) / 2, since = 4L * n;
	bool scanned = false;
	for (long m = 0; m < moves && bd > tol && n > 1 && !c->failed; m++, since++) {
		if (since >= 4L * n && !scanned && pairs * 4 <= moves) {
			/* at the start or stalled: the best swaps from the
			 * start or the nearest order */
			scanned = true;
			if (isfinite(bd))
				tc = sw_start(c, perm, *t);
			for (bool rs_better = true; rs_better && bd > tol && m < moves && !c->failed;) {
				int ba = -1, bb = -1;
				double bdd = bd, bt = tc;
				for (int a = 0; a < n - 1 && !c->failed; a++)
					for (int b = a + 1; b < n && !c->failed; b++, m++) {
						double t2 = sw_swap(c, a, b, 1), d2 = spread_dist(t2, goal);
						if (d2 < bdd && !sw_taken(c->cur, n, taken, ntaken))
							bdd = d2, bt = t2, ba = a, bb = b;
						sw_swap(c, a, b, 0);
					}
				if ((rs_better = ba >= 0)) {
					sw_swap(c, ba, bb, 0);
					tc = *t = bt;
					bd = bdd;
					memcpy(perm, c->cur, sizeof *perm * (size_t)n);
				}
			}
			d = spread_dist(tc, goal);
			since = 0;
			continue;
		}
		int a = (int)(rs_rng_next(rng) % (uint64_t)n), b = (int)(rs_rng_next(rng) % (uint64_t)n);
		if (a == b)
			continue;
		double t2 = sw_swap(c, a, b, 1), d2 = spread_dist(t2, goal);
		if (d2 <= d || rs_rng_unit(rng) < 0.05) {
			d = d2, tc = t2;
			if (d < bd && !sw_taken(c->cur, n, taken, ntaken)) {
				bd = d;
				*t = tc;
				since = 0;
				scanned = false;
				memcpy(perm, c->cur, sizeof *perm * (size_t)n);
			}
		} else {
			sw_swap(c, a, b, 0);
		}
	}
	/* the objective moved by differences on every swap: report the
	 * order's own, from scratch */
	if (!c->fn && !c->failed && isfinite(bd))
		*t = sw_start(c, perm, -1);
}

int reorder_spread(const cost_plan *p, const link_model *lm, double bytes, const int32_t *best, int k,
		   uint64_t seed, reorder_cost_fn fn, void *ctx, int32_t *orders, double *t, link_error *err)
{
	if (rs_check_args(p, lm, bytes, err) || (best && cost_check_perm(best, p->n, err)))
		return -1;
	if (k < 1)
		return link_errorf(err, "the number of spread orders must be at least 1");
	int n = p->n;
	rs s;
	if (rs_init(&s, p, lm, bytes, err)) {
		rs_free(&s);
		return -1;
	}
	int32_t *top = malloc(sizeof *top * ((size_t)n + 1)), *cur = malloc(sizeof *cur * ((size_t)n + 1));
	int32_t *w = malloc(sizeof *w * ((size_t)n + 1));
	if (!top || !cur || !w) {
		rs_free(&s), free(top), free(cur), free(w);
		return link_errorf(err, "out of memory");
	}
	for (int i = 0; i < n; i++)
		s.placed[i] = 1;
	spread_ctx c = { &s, fn, ctx, 0, cur, n };
	uint64_t rng = seed ^ 0x636f6c6c2d737072ULL;   /* "coll-spr" */
	/* each walk's moves: enough to cross the range at small n; a caller's
	 * cost (a simulation) costs far more than T, so it gets fewer */
	long moves = fn ? (long)n * n * 2 : (long)n * n * 50;
	moves = fn ? (moves < 300 ? 300 : moves > 2000 ? 2000 : moves)
		   : (moves < 5000 ? 5000 : moves > 200000 ? 200000 : moves);
	/* the top of the range: the highest cost of walks uphill from 4
	 * random orders (the search keeps only its best: it has no top) */
	double t_top = -1;
	for (int r = 0; r < 4 && !c.failed; r++) {
		for (int i = 0; i < n; i++)
			w[i] = i;
		for (int i = n - 1; i > 0; i--) {
			int j = (int)(rs_rng_next(&rng) % (uint64_t)(i + 1));
			int32_t x = w[i];
			w[i] = w[j];
			w[j] = x;
		}
		double tw = sw_start(&c, w, -1);
		spread_walk(&c, w, &tw, INFINITY, -INFINITY, moves, &rng, NULL, 0);
		if (tw > t_top) {
			t_top = tw;
			memcpy(top, w, sizeof *top * (size_t)n);
		}
	}
	/* the bottom: the given best order */
	for (int i = 0; i < n; i++)
		w[i] = best ? best[i] : i;
	double t_low = sw_start(&c, w, -1);
	if (t_top < t_low) {   /* nothing above best was found */
		t_top = t_low;
		memcpy(top, w, sizeof *top * (size_t)n);
	}
	/* order i walks from order i-1 (the first from best) to its point of
	 * the range, within a hundredth of the range, to an order not taken
	 * yet (where costs have few values, other orders of the same cost:
	 * the network may still tell them apart) */
	double tol = (t_top - t_low) * 0.01, tw = t_low;
	int32_t *taken = malloc(sizeof *taken * ((size_t)k + 2) * (size_t)n);
	int ntaken = 2;
	if (!taken)
		c.failed = 2;
	else
		memcpy(taken, w, sizeof *w * (size_t)n), memcpy(taken + n, top, sizeof *top * (size_t)n);
	for (int i = 1; i <= k && !c.failed; i++) {
		if (i == k) {
			memcpy(w, top, sizeof *w * (size_t)n);
			tw = t_top;
		} else {
			spread_walk(&c, w, &tw, t_low + (t_top - t_low) * i / k, tol, moves, &rng, taken, ntaken);
			memcpy(taken + (size_t)ntaken++ * (size_t)n, w, sizeof *w * (size_t)n);
		}
		memcpy(orders + (size_t)(i - 1) * (size_t)n, w, sizeof *w * (size_t)n);
		t[i - 1] = tw;
	}
	free(taken);
	rs_free(&s);
	free(top), free(cur), free(w);
	if (c.failed == 2)
		return link_errorf(err, "out of memory");
	if (c.failed)
		return link_errorf(err, "the cost of an order could not be computed");
	/* what is handed back must be orders, whatever the walks did */
	link_error e;
	for (int i = 0; i < k; i++)
		if (cost_check_perm(orders + (size_t)i * (size_t)n, n, &e))
			return link_errorf(err, "spread order %d is not an order (%s)", i + 1, e.msg);
	return 0;
}

