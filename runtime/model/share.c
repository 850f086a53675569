/*
 * share.c - how flows share what they cross: max-min fairness
 * (progressive filling) and alpha-fairness (TCP's sharing, solved through
 * its dual prices).  cost.h says why each; the fluid simulation
 * (fluid.c) calls these at every start and end of a flow, and
 * cost_maxmin / cost_alphafair are the same allocations for tests.
 *
 * Pipeline position: the bottom of the cost model; it knows flows,
 * capacities and paths, not schedules or links.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"

/* --- max-min fair sharing -------------------------------------------------- */

/* Progressive filling with caller scratch: used[nres], nun[nres],
 * frozen[nflows].  Every unfrozen flow runs at the common `level`; raise
 * it until a flow reaches its own cap or a resource fills, freeze what
 * that binds, repeat.  At least one flow freezes per step (the binding
 * one is chosen exactly, not by a tolerance), so it ends after at most
 * nflows steps. */
void share_maxmin(int nf, const double *cap, const int *off, const int *res, int nr, const double *rcap,
		   double *rate, double *used, int *nun, unsigned char *frozen)
{
	for (int r = 0; r < nr; r++)
		used[r] = 0, nun[r] = 0;
	for (int f = 0; f < nf; f++) {
		frozen[f] = 0;
		for (int k = off[f]; k < off[f + 1]; k++)
			nun[res[k]]++;
	}
	double level = 0;
	for (int left = nf; left > 0;) {
		double inc = INFINITY;
		int bf = -1, br = -1;
		for (int f = 0; f < nf; f++)
			if (!frozen[f] && cap[f] - level < inc)
				inc = cap[f] - level, bf = f;
		for (int r = 0; r < nr; r++)
			if (nun[r] > 0 && (rcap[r] - used[r]) / nun[r] < inc)
				inc = (rcap[r] - used[r]) / nun[r], br = r, bf = -1;
		if (inc < 0)
			inc = 0;
		level += inc;
		for (int r = 0; r < nr; r++)
			used[r] += inc * nun[r];
		/* freeze the binding flow, or every flow on the binding resource,
		 * and any other that is (within rounding) at its cap or on a full
		 * resource */
		for (int f = 0; f < nf; f++) {
			if (frozen[f])
				continue;
			bool fz = f == bf || cap[f] - level <= 1e-12 * cap[f];
			for (int k = off[f]; k < off[f + 1] && !fz; k++)
				fz = res[k] == br || rcap[res[k]] - used[res[k]] <= 1e-12 * rcap[res[k]];
			if (!fz)
				continue;
			frozen[f] = 1;
			rate[f] = level;
			left--;
			for (int k = off[f]; k < off[f + 1]; k++)
				nun[res[k]]--;
		}
	}
}

int cost_maxmin(int nflows, const double *cap, const int *off, const int *res, int nres, const double *rcap,
		double *rate)
{
	double *used = malloc(sizeof *used * ((size_t)nres + 1));
	int *nun = malloc(sizeof *nun * ((size_t)nres + 1));
	unsigned char *frozen = malloc((size_t)nflows + 1);
	int rc = used && nun && frozen ? 0 : -1;
	if (rc == 0)
		share_maxmin(nflows, cap, off, res, nres, rcap, rate, used, nun, frozen);
	free(used);
	free(nun);
	free(frozen);
	return rc;
}

/* --- alpha-fair sharing (TCP) ---------------------------------------------- */

/* The alpha-fair allocation (Mo and Walrand): maximise the sum over flows
 * of x^(1-alpha) / (1-alpha), each flow at most its own cap, each
 * resource at most its capacity.  alpha = 1 is proportional fairness,
 * alpha -> infinity max-min.  TCP's congestion control comes close to
 * alpha = 2 (Massoulie and Roberts's "minimum potential delay"
 * fairness): a flow that crosses two loaded queues gets less than one
 * that shares only one of them, where max-min gives both the same.
 *
 * Flows may carry weights w_f (the sum is then of w_f x^(1-alpha) /
 * (1-alpha); the simulator's TCP rule weights by RTT, fluid_rates).
 *
 * Solved through its dual: a price p_r >= 0 per resource, each flow at
 * x_f = min(cap_f, (S_f / w_f)^(-1/alpha)) where S_f is the sum of the
 * prices on its path, and the prices set one resource at a time
 * (Gauss-Seidel) so that a priced resource is exactly full and a free
 * one is not over: a safeguarded Newton step on the resource's load,
 * which falls as its price rises.  Two things keep it near max-min's
 * cost on large schedules.  Flows with the same cap, weight and path get
 * the same rate, so they are solved as one class with a multiplicity
 * (ring at n = 512 on 8
 * racks: 512 flows, at most 64 classes that cross a trunk).  Resources
 * that the caps of their flows fit in can never bind and are left out (a
 * rank's injection bandwidth, usually).  price[] comes in as the
 * starting point (the last allocation's prices: flows come and go one at
 * a time, so a few sweeps do) and goes out as the solution. */
#define AF_SWEEPS 500      /* Gauss-Seidel sweeps at most */
#define AF_TOL 1e-7        /* relative: a price this close has converged */

int share_af_alloc(af_scratch *w, int nflows, int nres, int entries)
{
	w->hcap = 16;
	while (w->hcap < nflows)
		w->hcap *= 2;
	w->cls = malloc(sizeof *w->cls * ((size_t)nflows + 1));
	w->rep = malloc(sizeof *w->rep * ((size_t)nflows + 1));
	w->mult = malloc(sizeof *w->mult * ((size_t)nflows + 1));
	w->sum = malloc(sizeof *w->sum * ((size_t)nflows + 1));
	w->hash = malloc(sizeof *w->hash * 2 * (size_t)w->hcap);
	w->rofs = malloc(sizeof *w->rofs * ((size_t)nres + 2));
	w->rcl = malloc(sizeof *w->rcl * ((size_t)entries + 1));
	w->wc = malloc(sizeof *w->wc * ((size_t)nflows + 1));
	return w->cls && w->rep && w->mult && w->sum && w->hash && w->rofs && w->rcl && w->wc ? 0 : -1;
}

void share_af_free(af_scratch *w)
{
	free(w->cls), free(w->rep), free(w->mult), free(w->sum), free(w->hash), free(w->rofs), free(w->rcl), free(w->wc);
}

/* S^(-1/alpha), without pow() for the usual alphas */
static double af_x(double S, double alpha)
{
	return alpha == 2 ? 1 / sqrt(S) : alpha == 1 ? 1 / S : pow(S, -1 / alpha);
}

static double af_rate(double cap, double sum, double alpha)
{
	if (sum <= 0)
		return cap;
	double x = af_x(sum, alpha);
	return x < cap ? x : cap;
}

/* The price of resource r at which its load is its capacity c, the
 * other prices staying (a class's sum less old is the rest of its path);
 * 0 when it fits at price 0.  Its classes: rcl[i0 .. i1). */
static double af_price(const af_scratch *w, const double *cap, int i0, int i1, double old, double c, double alpha)
{
	double load = 0, nfl = 0, wmax = 0;
	for (int i = i0; i < i1; i++) {
		int k = w->rcl[i];
		load += w->mult[k] * af_rate(cap[w->rep[k]], (w->sum[k] - old) / w->wc[k], alpha);
		nfl += w->mult[k];
		if (w->wc[k] > wmax)
			wmax = w->wc[k];
	}
	if (load <= c)
		return 0;
	/* at (flows / c)^alpha every flow is within c / flows: not over */
	double u = nfl / c, lo = 0, hi = wmax * (alpha == 2 ? u * u : alpha == 1 ? u : pow(u, alpha));
	double p = old > lo && old < hi ? old : 0.5 * hi;
	for (int it = 0; it < 100; it++) {
		double g = -c, dg = 0;
		for (int i = i0; i < i1; i++) {
			int k = w->rcl[i];
			double S = w->sum[k] - old + p, x = af_x(S / w->wc[k], alpha), cp = cap[w->rep[k]];
			if (x < cp) {
				g += w->mult[k] * x;
				dg -= w->mult[k] * x / (alpha * S);
			} else {
				g += w->mult[k] * cp;
			}
		}
		if (g > 0)
			lo = p;
		else
			hi = p;
		if (fabs(g) <= 1e-12 * c || hi - lo <= 1e-12 * hi)
			break;
		double np = dg < 0 ? p - g / dg : 0.5 * (lo + hi);
		p = np > lo && np < hi ? np : 0.5 * (lo + hi);
	}
	return p;
}

/* Flows into classes (same cap, same resources in the same order: a
 * message's segments are listed in segment order, so the same path reads
 * the same); returns how many. */
static int af_classes(af_scratch *w, int nf, const double *cap, const double *wt, const int *off, const int *res)
{
	int nc = 0, size = 16;   /* the table in use: twice the flows, a power of two */
	while (size < 2 * nf)
		size *= 2;
	int mask = size - 1;
	memset(w->hash, 0, sizeof *w->hash * (size_t)size);
	for (int f = 0; f < nf; f++) {
		uint64_t h = 1469598103934665603ULL;
		double cf = cap[f];
		uint64_t bits;
		memcpy(&bits, &cf, sizeof bits);
		h = (h ^ bits) * 1099511628211ULL;
		double wf = wt ? wt[f] : 1;
		memcpy(&bits, &wf, sizeof bits);
		h = (h ^ bits) * 1099511628211ULL;
		for (int k = off[f]; k < off[f + 1]; k++)
			h = (h ^ (uint64_t)res[k]) * 1099511628211ULL;
		int at = (int)(h & (uint64_t)mask), c = -1;
		for (; w->hash[at]; at = (at + 1) & mask) {
			int g = w->hash[at] - 1, r = w->rep[g];
			if (cap[r] != cf || w->wc[g] != wf || off[r + 1] - off[r] != off[f + 1] - off[f] ||
			    memcmp(res + off[r], res + off[f], sizeof *res * (size_t)(off[f + 1] - off[f])))
				continue;
			c = g;
			break;
		}
		if (c < 0) {
			c = nc++;
			w->hash[at] = c + 1;
			w->rep[c] = f;
			w->mult[c] = 0;
			w->wc[c] = wf;
		}
		w->mult[c]++;
		w->cls[f] = c;
	}
	return nc;
}

void share_alphafair(af_scratch *w, int nf, const double *cap, const double *wt, const int *off, const int *res,
		      int nr, const double *rcap, double alpha, double *rate, double *price)
{
	int nc = af_classes(w, nf, cap, wt, off, res);
	for (int r = 0; r <= nr; r++)
		w->rofs[r] = 0;
	for (int c = 0; c < nc; c++)
		for (int k = off[w->rep[c]]; k < off[w->rep[c] + 1]; k++)
			w->rofs[res[k] + 1]++;
	for (int r = 0; r < nr; r++)
		w->rofs[r + 1] += w->rofs[r];
	for (int c = 0; c < nc; c++)
		for (int k = off[w->rep[c]]; k < off[w->rep[c] + 1]; k++)
			w->rcl[w->rofs[res[k]]++] = c;
	for (int r = nr; r > 0; r--)
		w->rofs[r] = w->rofs[r - 1];
	w->rofs[0] = 0;
	/* resources that cannot bind: price 0, and left out below */
	for (int r = 0; r < nr; r++) {
		double all = 0;
		for (int i = w->rofs[r]; i < w->rofs[r + 1]; i++)
			all += w->mult[w->rcl[i]] * cap[w->rep[w->rcl[i]]];
		if (all <= rcap[r])
			price[r] = -1;   /* marked; 0 again below */
	}
	for (int c = 0; c < nc; c++) {
		w->sum[c] = 0;
		for (int k = off[w->rep[c]]; k < off[w->rep[c] + 1]; k++)
			if (price[res[k]] > 0)
				w->sum[c] += price[res[k]];
	}
	for (int sweep = 0; sweep < AF_SWEEPS; sweep++) {
		double moved = 0;
		for (int r = 0; r < nr; r++) {
			if (price[r] < 0 || w->rofs[r] == w->rofs[r + 1])
				continue;
			double old = price[r];
			double p = af_price(w, cap, w->rofs[r], w->rofs[r + 1], old, rcap[r], alpha);
			if (p == old)
				continue;
			for (int i = w->rofs[r]; i < w->rofs[r + 1]; i++)
				w->sum[w->rcl[i]] += p - old;
			price[r] = p;
			double d = fabs(p - old) / fmax(p, old);
			if (d > moved)
				moved = d;
		}
		if (moved < AF_TOL)
			break;
	}
	for (int r = 0; r < nr; r++)
		if (price[r] < 0)
			price[r] = 0;
	for (int f = 0; f < nf; f++)
		rate[f] = af_rate(cap[f], w->sum[w->cls[f]] / w->wc[w->cls[f]], alpha);
}

int cost_alphafair(int nflows, const double *cap, const int *off, const int *res, int nres, const double *rcap,
		   double alpha, double *rate)
{
	af_scratch w = {0};   /* share_af_free() is safe whatever share_af_alloc() got to */
	double *price = calloc((size_t)nres + 1, sizeof *price);
	int rc = price && share_af_alloc(&w, nflows, nres, off[nflows]) == 0 ? 0 : -1;
	if (rc == 0)
		share_alphafair(&w, nflows, cap, NULL, off, res, nres, rcap, alpha, rate, price);
	share_af_free(&w);
	free(price);
	return rc;
}
