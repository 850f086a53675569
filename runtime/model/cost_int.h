/*
 * cost_int.h - what the cost model's files share (cost.h is their public
 * face): limits of a simulation, the result's derived numbers, the fluid
 * simulation's entry, and the allocations of share.c with their scratch.
 * Prototypes are grouped by the file that defines them.
 */
#ifndef COLL_COST_INT_H
#define COLL_COST_INT_H

#include "cost.h"

/* Bounds that keep a simulation within a few hundred MB. */
#define MAX_CELLS (1L << 24)     /* rank x chunk x segment ready times */
#define MAX_RECORDS (1L << 23)   /* simulated messages */

/* Earliest-free port among a rank's ports. */
static inline int min_port(const double *free_at, int nports)
{
	int best = 0;
	for (int i = 1; i < nports; i++)
		if (free_at[i] < free_at[best])
			best = i;
	return best;
}

/* The (round, first and last segment) of step t of a pipelined run
 * (sim.c's sim_pass and fluid.c walk the same steps): diagonal (segment g
 * runs round k at step k + g, earlier segments first) or, in round order,
 * round-major (step t is round t / S, segment t % S). */
static inline int step_rounds(int t, int R, int S, int gated, int *g0, int *g1)
{
	if (gated) {
		*g0 = *g1 = t % S;
		return t / S;
	}
	*g0 = t - R + 1 > 0 ? t - R + 1 : 0;
	*g1 = t < S - 1 ? t : S - 1;
	return -1;
}

/* cost.c */
/* Fill r's algbw and busbw from its time. */
void cost_finish(const cost_plan *p, const cost_params *q, cost_result *r);
/* The net under every model's result: 0, or -1 with err set when its
 * time is not finite (inputs within linkmodel.h's range never make one,
 * but a delay or a model built by link_set may). */
int cost_check_result(const cost_result *r, link_error *err);

/* host.c */
/* Per message i of p, the seconds per chunk byte of its sender's core
 * (*out)[2i] and of its receiver's (*out)[2i+1] (cost.h, "One host");
 * *out malloc'd, NULL when lm says nothing of a host.  0, or -1 out of
 * memory. */
int cost_host_msgs(const cost_plan *p, const link_model *lm, double **out);
/* Per round of p, the seconds per chunk byte its busiest rank's core
 * needs (nrounds entries).  Same contract. */
int cost_host_rounds(const cost_plan *p, const link_model *lm, double **out);

/* fluid.c */
/* The simulation with shared segments (q->links->nsegs > 0): one run, or
 * the mean over share_jitter's draws, records in rec (with trace, those of
 * the draw nearest the mean).  *d the straggler's join, *done the
 * completion, *pend the precondition's end.  0, or -1 out of memory. */
int fluid_simulate(const cost_plan *p, const cost_params *q, cost_smsg *rec, int trace, double *d, double *done,
		   double *pend);

/* share.c */
/* The alpha-fair solver's scratch, sized for the most flows, resources
 * and path entries it will see (share_af_alloc); share_af_free is safe on
 * a zeroed one whatever share_af_alloc got to. */
typedef struct {
	int *cls;      /* [flows] its class */
	int *rep;      /* [flows] a class's first flow */
	int *mult;     /* [flows] a class's flows */
	double *sum;   /* [flows] a class's price sum */
	int *hash;     /* [2 * hcap] class index + 1, 0 empty */
	int hcap;      /* a power of two >= the most flows */
	int *rofs;     /* [resources + 1] */
	int *rcl;      /* [path entries] the classes on each resource */
	double *wc;    /* [flows] a class's weight */
} af_scratch;
int share_af_alloc(af_scratch *w, int nflows, int nres, int entries);
void share_af_free(af_scratch *w);
/* cost_maxmin with the caller's scratch: used[nres], nun[nres], frozen[nflows]. */
void share_maxmin(int nf, const double *cap, const int *off, const int *res, int nr, const double *rcap,
		  double *rate, double *used, int *nun, unsigned char *frozen);
/* cost_alphafair with flow weights wt (NULL: all 1) and the caller's
 * scratch; price[nr] comes in as the starting point (the last
 * allocation's) and goes out as the solution. */
void share_alphafair(af_scratch *w, int nf, const double *cap, const double *wt, const int *off, const int *res,
		     int nr, const double *rcap, double alpha, double *rate, double *price);

#endif
