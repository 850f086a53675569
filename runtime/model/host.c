/*
 * host.c - what one host's shared resources add (cost.h, "One host"):
 * the seconds of a rank's core each message costs its sender and its
 * receiver, and from them each round's least duration.
 *
 * Pipeline position: read by rounds.c, sim.c and fluid.c from a cost_plan
 * and a link model with link_has_host (linkmodel.h); never called without
 * one, so every prediction without a host is what it was.
 */
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"

/* Seconds per chunk byte of a rank's core: a copy (at the memory
 * bandwidth's share of one of the cores copying at once) and a reduction
 * (one core's rate), both slowed by the time-sharing of more ranks than
 * cores: a waiting rank polls and yields, so each gets cores / n of a
 * core, busy or not. */
static void host_rates(const link_model *lm, int n, double *copy, double *red)
{
	const link_host *hs = &lm->host;
	int cores = hs->cores > 0 && hs->cores < n ? hs->cores : n;
	double slow = (double)n / cores;   /* >= 1 */
	*copy = hs->mem_bw > 0 ? cores / hs->mem_bw * slow : 0;
	*red = hs->reduce_bw > 0 ? slow / hs->reduce_bw : 0;
}

int cost_host_msgs(const cost_plan *p, const link_model *lm, double **out)
{
	*out = NULL;
	if (!link_has_host(lm))
		return 0;
	double *w = calloc(2 * (size_t)p->nmsgs + 1, sizeof *w);
	if (!w)
		return -1;
	double copy, red;
	host_rates(lm, p->n, &copy, &red);
	for (int i = 0; i < p->nmsgs; i++) {
		const cost_pmsg *m = &p->msgs[i];
		int nred = 0;
		for (int e = m->first; e < m->first + m->count; e++)
			nred += p->reduce[e];
		/* the sender copies every chunk into a staging slot; the
		 * receiver copies out what it does not reduce (a reduction reads
		 * the slot in place) */
		w[2 * i] = m->count * copy;
		w[2 * i + 1] = (m->count - nred) * copy + nred * red;
	}
	*out = w;
	return 0;
}

int cost_host_rounds(const cost_plan *p, const link_model *lm, double **out)
{
	*out = NULL;
	double *w = NULL;
	if (cost_host_msgs(p, lm, &w) || !w)
		return w ? 0 : link_has_host(lm) ? -1 : 0;
	double *h = calloc((size_t)p->nrounds + 1, sizeof *h);
	double *busy = calloc((size_t)p->n + 1, sizeof *busy);
	if (!h || !busy) {
		free(w), free(h), free(busy);
		return -1;
	}
	for (int k = 0; k < p->nrounds; k++) {
		/* the round lasts as long as its busiest rank's core */
		for (int i = p->round_first[k]; i < p->round_first[k + 1]; i++) {
			busy[p->msgs[i].src] += w[2 * i];
			busy[p->msgs[i].dst] += w[2 * i + 1];
		}
		for (int i = p->round_first[k]; i < p->round_first[k + 1]; i++) {
			int r[2] = { p->msgs[i].src, p->msgs[i].dst };
			for (int j = 0; j < 2; j++) {
				if (busy[r[j]] > h[k])
					h[k] = busy[r[j]];
				busy[r[j]] = 0;
			}
		}
	}
	free(w), free(busy);
	*out = h;
	return 0;
}
