/*
 * rounds.c - the round-synchronous estimate (model "rounds", cost.h):
 * every round lasts as long as its slowest message, or as long as its
 * busiest shared segment takes to drain, or its host takes for the
 * round's copies and reductions; rounds run back to back.
 *
 * Pipeline position: one pass over a cost_plan's messages; the rank
 * reordering search (reorder.c) evaluates the same objective
 * incrementally, and its tests hold the two equal.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"

/* --- round-synchronous ----------------------------------------------------- */

/* The slowest drain time L_s / C_s of the shared segments message m
 * crosses, given the loads of its round (0 when it crosses none). */
static double seg_drain(const link_model *lm, const int32_t *perm, const cost_pmsg *m, const double *load)
{
	int a = cost_phys(perm, m->src), b = cost_phys(perm, m->dst);
	double t = 0;
	for (int s = 0; s < lm->nsegs; s++)
		if (link_crosses(lm, &lm->segs[s], a, b) && load[s] / lm->segs[s].cap > t)
			t = load[s] / lm->segs[s].cap;
	return t;
}

/* Duration of round k.  Normally its slowest message; a rank with more
 * messages than ports queues them on its ports, so an unverified schedule
 * that overloads a rank costs what it would.  With shared segments a
 * message takes at least as long as the busiest segment it crosses needs
 * to carry the round's bytes (cost.h); load holds one double per segment. */
static double round_time(const cost_plan *p, int k, const cost_params *q, double cb,
			 double *sendf, double *recvf, double *load, const double *host)
{
	int ps = p->ports_send, pr = p->ports_recv;
	const link_model *lm = q->links;
	double t = 0;
	if (lm->nsegs) {
		memset(load, 0, sizeof *load * (size_t)lm->nsegs);
		for (int i = p->round_first[k]; i < p->round_first[k + 1]; i++) {
			const cost_pmsg *m = &p->msgs[i];
			int a = cost_phys(q->perm, m->src), b = cost_phys(q->perm, m->dst);
			for (int s = 0; s < lm->nsegs; s++)
				if (link_crosses(lm, &lm->segs[s], a, b))
					load[s] += m->count * cb;
		}
	}
	for (int i = p->round_first[k]; i < p->round_first[k + 1]; i++) {
		const cost_pmsg *m = &p->msgs[i];
		double *sf = sendf + (size_t)m->src * ps, *rf = recvf + (size_t)m->dst * pr;
		int a = min_port(sf, ps), b = min_port(rf, pr);
		double start = sf[a] > rf[b] ? sf[a] : rf[b];
		double bytes = m->count * cb, own = bytes * cost_msg_beta(lm, q->perm, m);
		if (lm->nsegs) {
			double d = seg_drain(lm, q->perm, m, load);
			if (d > own)
				own = d;
		}
		if (host && host[k] * cb > own)   /* the host's copies and reductions of the round */
			own = host[k] * cb;
		int pa = cost_phys(q->perm, m->src), pb = cost_phys(q->perm, m->dst);
		double end = start + (link_alpha(lm, pa, pb) + own);
		sf[a] = rf[b] = end;
		if (end > t)
			t = end;
	}
	for (int i = p->round_first[k]; i < p->round_first[k + 1]; i++) {
		const cost_pmsg *m = &p->msgs[i];
		memset(sendf + (size_t)m->src * ps, 0, sizeof *sendf * (size_t)ps);
		memset(recvf + (size_t)m->dst * pr, 0, sizeof *recvf * (size_t)pr);
	}
	return t;
}

int cost_rounds(const cost_plan *p, const cost_params *q, cost_result *r, link_error *err)
{
	if (cost_check(p, q, err))
		return -1;
	double *sendf = calloc((size_t)p->n * (size_t)p->ports_send, sizeof *sendf);
	double *recvf = calloc((size_t)p->n * (size_t)p->ports_recv, sizeof *recvf);
	double *load = calloc((size_t)q->links->nsegs + 1, sizeof *load);
	double *host = NULL;
	if (!sendf || !recvf || !load || cost_host_rounds(p, q->links, &host)) {
		free(sendf);
		free(recvf);
		free(load);
		return link_errorf(err, "out of memory");
	}
	double cb = q->bytes * p->work / p->chunks, tpre = 0, tmain = 0;
	for (int k = 0; k < p->nrounds; k++) {
		double t = round_time(p, k, q, cb, sendf, recvf, load, host);
		if (p->pre[k])
			tpre += t;
		else
			tmain += t;
	}
	free(sendf);
	free(recvf);
	free(load);
	free(host);
	double d = 0;
	if (q->straggler >= 0)
		d = q->delay == COST_MASKED ? tpre : q->delay;
	double begin = d > tpre ? d : tpre;   /* the others finish the precondition meanwhile */
	memset(r, 0, sizeof *r);
	r->total = begin + tmain;
	r->join = d;
	r->time = r->total - d;
	r->pre = tpre;
	cost_finish(p, q, r);
	return cost_check_result(r, err);
}

