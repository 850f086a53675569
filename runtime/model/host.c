/*
 * host.c - what one host's shared resources add (cost.h, "One host"):
 * the seconds of a rank's core each message costs its sender and its
 * receiver, and from them each round's least duration.
 *
 * Pipeline position: read by rounds.c, sim.c and fluid.c from a cost_plan
 * and a link model with link_has_host (linkmodel.h); never called without
 * one, so every prediction without a host is what it was.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"

#define HOST_REDUCE_TRAFFIC 1.5   /* a reduction's memory traffic per byte, in copies (3 bytes / 2) */

/* Seconds per chunk byte of a rank's core: a copy (at the memory
 * bandwidth's share of one of the cores copying at once) and a reduction
 * (one core's rate, but no faster than its memory traffic allows: it
 * reads two bytes and writes one where a copy reads one and writes one,
 * so HOST_REDUCE_TRAFFIC copies' worth of the share), both slowed by the
 * time-sharing of more ranks than cores: a waiting rank polls and yields,
 * so each gets cores / n of a core, busy or not.  The probe's reduce-bw
 * is one core's alone (the others idle); in a collective every core
 * reduces at once and the memory, not the core, sets the pace: at n = 2
 * on the 2-core development VM, where one core summed at 27-35 GB/s and
 * two copied 22-38 GB/s together, ring and direct (half the bytes
 * reduced, half copied out) measured 20-35% faster than broadcast (all
 * of them reduced) from 1 MiB up, which the alone rate ranked the other
 * way round. */
static void host_rates(const link_model *lm, int n, double *copy, double *red)
{
	const link_host *hs = &lm->host;
	int cores = hs->cores > 0 && hs->cores < n ? hs->cores : n;
	double slow = (double)n / cores;   /* >= 1 */
	*copy = hs->mem_bw > 0 ? cores / hs->mem_bw * slow : 0;
	*red = hs->reduce_bw > 0 ? slow / hs->reduce_bw : 0;
	if (*red < HOST_REDUCE_TRAFFIC * *copy)
		*red = HOST_REDUCE_TRAFFIC * *copy;
}

/* One rank's use of one chunk: a transfer seen from one of its ends. */
typedef struct {
	int32_t rank, chunk, round;
	int32_t kind;   /* 0 send, 1 receive-copy, 2 receive-reduce: a round's sends read the old value */
	int32_t t;      /* the transfer (index into p->chunk) */
} host_use;

static int use_cmp(const void *x, const void *y)
{
	const host_use *a = x, *b = y;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->chunk != b->chunk)
		return a->chunk < b->chunk ? -1 : 1;
	if (a->round != b->round)
		return a->round < b->round ? -1 : 1;
	if ((a->kind > 0) != (b->kind > 0))
		return a->kind > 0 ? 1 : -1;
	return a->t < b->t ? -1 : a->t > b->t;
}

/* Per transfer of p, 1 when its sender's copy into the slot costs nothing
 * (*out, malloc'd): the executor's sending on from the message (exec.c,
 * "Sending on from the message"; plan.c gives a receive its nsend and
 * after).  A receive whose chunk the same rank next sends, in a later
 * round, computes its result straight into the outgoing message; when the
 * next use after that send is a receive-copy that overwrites the chunk
 * (RT_AFTER_OVERWRITE: ring's forwarded partial sums), the home is not
 * written at all and the send costs no copy.  Otherwise the home is
 * written from the message instead of the message from the home: the
 * same copy, so nothing is saved.  0, or -1 out of memory. */
static int host_fused(const cost_plan *p, uint8_t **out)
{
	int nt = 0;
	for (int i = 0; i < p->nmsgs; i++)
		nt += p->msgs[i].count;
	uint8_t *free_in = calloc((size_t)nt + 1, 1);
	host_use *u = malloc(sizeof *u * (2 * (size_t)nt + 1));
	if (!free_in || !u) {
		free(free_in), free(u);
		return -1;
	}
	int k = 0;
	for (int i = 0; i < p->nmsgs; i++) {
		const cost_pmsg *m = &p->msgs[i];
		for (int e = m->first; e < m->first + m->count; e++) {
			u[k++] = (host_use){ m->src, p->chunk[e], m->round, 0, e };
			u[k++] = (host_use){ m->dst, p->chunk[e], m->round, 1 + p->reduce[e], e };
		}
	}
	qsort(u, (size_t)k, sizeof *u, use_cmp);
	for (int j = 0; j + 2 < k; j++) {
		const host_use *a = &u[j], *b = &u[j + 1], *c = &u[j + 2];
		if (a->kind == 0 || b->kind != 0 || b->rank != a->rank || b->chunk != a->chunk || b->round <= a->round ||
		    c->rank != a->rank || c->chunk != a->chunk || c->kind != 1)
			continue;
		free_in[b->t] = 1;
	}
	free(u);
	*out = free_in;
	return 0;
}

int cost_host_msgs(const cost_plan *p, const link_model *lm, double **out)
{
	*out = NULL;
	if (!link_has_host(lm))
		return 0;
	double *w = calloc(2 * (size_t)p->nmsgs + 1, sizeof *w);
	uint8_t *fused = NULL;
	if (!w || host_fused(p, &fused)) {
		free(w);
		return -1;
	}
	double copy, red;
	host_rates(lm, p->n, &copy, &red);
	for (int i = 0; i < p->nmsgs; i++) {
		const cost_pmsg *m = &p->msgs[i];
		int nred = 0, nin = 0;
		for (int e = m->first; e < m->first + m->count; e++)
			nred += p->reduce[e], nin += !fused[e];
		/* the sender copies every chunk into a staging slot but those
		 * sent on from the message that brought them (host_fused); the
		 * receiver copies out what it does not reduce (a reduction reads
		 * the slot in place) */
		w[2 * i] = nin * copy;
		w[2 * i + 1] = (m->count - nred) * copy + nred * red;
	}
	free(fused);
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
