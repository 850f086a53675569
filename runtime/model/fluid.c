/*
 * fluid.c - the event-driven simulation with shared segments (model
 * "sim" on a link model that declares segments, cost.h): each message is
 * a flow whose rate the fair allocation over every active flow gives
 * (share.c), recomputed whenever a flow starts or ends, optionally
 * averaged over draws of TCP's luck (share_jitter).
 *
 * Pipeline position: called by sim.c's simulate() in place of its
 * segment-free pass; it fills the same records, in the same order.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"

/* --- fluid simulation (shared segments) ------------------------------------ */

/* With shared segments a message's duration depends on what else is in
 * flight, so the simulation is event-driven in time rather than a pass in
 * program order: records (message x segment, in the same program order as
 * sim_pass) first get their static predecessors (the writers of the
 * chunks they send, the previous message on their send and receive
 * ports), then a discrete-event loop starts each record once its
 * predecessors have landed and both ranks have joined, runs every active
 * one as a flow at its fair rate (max-min or alpha-fair, share_alpha),
 * and lands it alpha after its last byte.  Ports: a rank's k-th send
 * waits for its (k - ports)-th, which for one port (every stdlib
 * algorithm but bcube, direct and alltoall) is exactly sim_pass's rule. */

enum { FL_START, FL_LAND };
enum { DEP_DATA, DEP_SEND, DEP_RECV };

typedef struct {
	double t;
	int32_t rec;
	int32_t kind;
} fl_event;

static bool ev_before(const fl_event *a, const fl_event *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	if (a->kind != b->kind)
		return a->kind > b->kind;   /* landings first: they free what starts need */
	return a->rec < b->rec;
}

static void ev_push(fl_event *h, int *n, fl_event e)
{
	int i = (*n)++;
	while (i > 0 && ev_before(&e, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = e;
}

static fl_event ev_pop(fl_event *h, int *n)
{
	fl_event top = h[0], last = h[--*n];
	int i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && ev_before(&h[c + 1], &h[c]))
			c++;
		if (!ev_before(&h[c], &last))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n > 0)
		h[i] = last;
	return top;
}

typedef struct {
	int nr;                /* records */
	int32_t *pofs, *pred;  /* predecessors of record j: pred[pofs[j] .. pofs[j+1]) */
	uint8_t *ptype;        /* DEP_* of each */
	int32_t *sofs, *succ;  /* successors (the reverse) */
	int32_t *mofs, *mseg;  /* per message: the shared segments it crosses */
	int32_t *bofs, *bseg;  /* per message: those its reverse (dst -> src) crosses; share_rtt only */
	double *wt;            /* per active flow: its weight; share_rtt or share_jitter only */
	double *luck;          /* per message: its weight in this draw; share_jitter only */
	int32_t *left;         /* predecessors not yet landed */
	int32_t *rmsg, *rseg;  /* per record: its message and pipeline segment */
	double *rem, *cap, *rate, *used, *rcap, *price;
	int *nun, *foff, *fres;
	int nres;              /* resources: the link model's segments, then with
				  fluid_nic each physical rank's way out, then its way in */
	af_scratch af;         /* alpha-fair sharing's */
	unsigned char *frozen;
	int32_t *active, *apos;
	fl_event *heap;
	double *host;          /* per round: the host's seconds per chunk byte (host.c); NULL: none */
} fluid;

static void fluid_free(fluid *f)
{
	free(f->pofs), free(f->pred), free(f->ptype), free(f->sofs), free(f->succ);
	free(f->mofs), free(f->mseg), free(f->left), free(f->rmsg), free(f->rseg), free(f->rem), free(f->cap), free(f->rate);
	free(f->used), free(f->rcap), free(f->nun), free(f->foff), free(f->fres), free(f->frozen);
	free(f->price), free(f->bofs), free(f->bseg), free(f->wt), free(f->luck);
	share_af_free(&f->af);
	free(f->active), free(f->apos), free(f->heap), free(f->host);
}

/* Append to a growable int32 array. */
static int push32(int32_t **a, int *n, int *cap, int32_t v)
{
	if (*n == *cap) {
		int nc = *cap ? 2 * *cap : 256;
		int32_t *na = realloc(*a, sizeof *na * (size_t)nc);
		if (!na)
			return -1;
		*a = na;
		*cap = nc;
	}
	(*a)[(*n)++] = v;
	return 0;
}

/* A predecessor edge of the record being built. */
static int add_pred(fluid *f, int *np, int *pcap, uint8_t **ptype, int *tcap, int32_t rec, uint8_t type)
{
	if (push32(&f->pred, np, pcap, rec))
		return -1;
	if (*np > *tcap) {
		int nc = *pcap;
		uint8_t *nt = realloc(*ptype, (size_t)nc);
		if (!nt)
			return -1;
		*ptype = nt;
		*tcap = nc;
	}
	(*ptype)[*np - 1] = type;
	return 0;
}

/* Whether the fluid simulation shares each rank's own link as a resource
 * (cost.h, "A rank's link under TCP"): TCP sharing and a rank bandwidth. */
static int fluid_nic(const cost_params *q)
{
	return q->share_alpha > 0 && q->links->rank_bw > 0;
}

/* The shared segments each message of p crosses, from its source to its
 * destination (back: the other way, as its acknowledgements go), in
 * segment order, then with fluid_nic its source's way out and its
 * destination's way in (resources nsegs + rank, nsegs + n + rank):
 * (*seg)[(*ofs)[i] .. (*ofs)[i+1]) for message i.  How many in all, or -1
 * out of memory. */
static int msg_segs(const cost_plan *p, const cost_params *q, int back, int32_t **ofs, int32_t **seg)
{
	const link_model *lm = q->links;
	const int ns = lm->nsegs, nic = fluid_nic(q);
	int n = 0, cap = 0;
	if (!(*ofs = malloc(sizeof **ofs * ((size_t)p->nmsgs + 1))))
		return -1;
	for (int i = 0; i < p->nmsgs; i++) {
		(*ofs)[i] = n;
		int a = cost_phys(q->perm, p->msgs[i].src), b = cost_phys(q->perm, p->msgs[i].dst);
		if (back) {
			int t = a;
			a = b, b = t;
		}
		for (int s = 0; s < ns; s++)
			if (link_crosses(lm, &lm->segs[s], a, b) && push32(seg, &n, &cap, s))
				return -1;
		if (nic && (push32(seg, &n, &cap, ns + a) || push32(seg, &n, &cap, ns + p->n + b)))
			return -1;
	}
	(*ofs)[p->nmsgs] = n;
	return n;
}

/* The static dependencies of every record (program order as sim_pass). */
static int fluid_build(const cost_plan *p, const cost_params *q, fluid *f)
{
	const int n = p->n, C = p->chunks, S = q->segments, R = p->nrounds;
	const int ps = p->ports_send, pr = p->ports_recv;
	const link_model *lm = q->links;
	size_t cells = (size_t)n * (size_t)C * (size_t)S;
	int nr = p->nmsgs * S, np = 0, pcap = 0;
	f->nr = nr;
	int32_t *head = malloc(sizeof *head * (cells + 1));     /* per cell: its writer list */
	int32_t *wrec = NULL, *wnext = NULL;                     /* writer entries: record, next */
	int nw = 0, wcap = 0;
	int32_t *lasts = malloc(sizeof *lasts * ((size_t)n * ps + 1));
	int32_t *lastr = malloc(sizeof *lastr * ((size_t)n * pr + 1));
	int32_t *nsend = calloc((size_t)n + 1, sizeof *nsend), *nrecv = calloc((size_t)n + 1, sizeof *nrecv);
	int32_t *stamp = malloc(sizeof *stamp * ((size_t)nr + 1));
	/* round order: per rank, the last-segment records of its latest round
	 * with sends (receives), gl[r * gmax ..] with gn[r] of them; the
	 * first n for sends, the next n for receives */
	const int gated = q->round_order;
	int gmax = 1;
	int32_t *gn = NULL, *gl = NULL, *gk = NULL;
	f->rmsg = malloc(sizeof *f->rmsg * ((size_t)nr + 1));
	f->rseg = malloc(sizeof *f->rseg * ((size_t)nr + 1));
	f->pofs = malloc(sizeof *f->pofs * ((size_t)nr + 1));
	uint8_t *ptype = NULL;
	int tcap = 0;
	int rc = -1;
	if (!head || !lasts || !lastr || !nsend || !nrecv || !stamp || !f->rmsg || !f->rseg || !f->pofs)
		goto out;
	if (gated) {
		int32_t *cnt = calloc(2 * (size_t)n + 1, sizeof *cnt);
		if (!cnt)
			goto out;
		for (int k = 0; k < R; k++) {
			for (int i = p->round_first[k]; i < p->round_first[k + 1]; i++)
				cnt[p->msgs[i].src]++, cnt[n + p->msgs[i].dst]++;
			for (int i = p->round_first[k]; i < p->round_first[k + 1]; i++) {
				gmax = cnt[p->msgs[i].src] > gmax ? cnt[p->msgs[i].src] : gmax;
				gmax = cnt[n + p->msgs[i].dst] > gmax ? cnt[n + p->msgs[i].dst] : gmax;
			}
			for (int i = p->round_first[k]; i < p->round_first[k + 1]; i++)
				cnt[p->msgs[i].src] = cnt[n + p->msgs[i].dst] = 0;
		}
		free(cnt);
		gn = calloc(2 * (size_t)n + 1, sizeof *gn);
		gk = malloc(sizeof *gk * (2 * (size_t)n + 1));
		gl = malloc(sizeof *gl * (2 * (size_t)n * (size_t)gmax + 1));
		if (!gn || !gk || !gl)
			goto out;
		for (int i = 0; i < 2 * n; i++)
			gk[i] = -1;
	}
	for (size_t i = 0; i < cells; i++)
		head[i] = -1;
	for (int i = 0; i < n * ps; i++)
		lasts[i] = -1;
	for (int i = 0; i < n * pr; i++)
		lastr[i] = -1;
	for (int i = 0; i < nr; i++)
		stamp[i] = -1;
	int j = 0;
	int nsteps = gated ? R * S : R + S - 1;
	for (int t = 0; t < nsteps; t++) {
		int g0, g1, kg = step_rounds(t, R, S, gated, &g0, &g1);
		for (int g = g0; g <= g1; g++) {
			int k = gated ? kg : t - g, first = j;
			int nk = p->round_first[k + 1] - p->round_first[k];
			for (int i = p->round_first[k]; i < p->round_first[k + 1]; i++, j++) {
				const cost_pmsg *m = &p->msgs[i];
				f->rmsg[j] = i;
				f->rseg[j] = g;
				f->pofs[j] = np;
				/* round order: segment g follows segment g - 1 of the
				 * same message (one stream); segment 0 follows every
				 * last segment of the rank's latest earlier round, which
				 * followed theirs: all earlier rounds, transitively */
				if (gated && g > 0 && add_pred(f, &np, &pcap, &ptype, &tcap, j - nk, DEP_SEND))
					goto out;
				if (gated && g > 0)
					stamp[j - nk] = j;
				for (int d = 0; gated && g == 0 && d < 2; d++) {
					int w = d == 0 ? m->src : n + m->dst;
					for (int x = 0; x < gn[w]; x++) {
						int32_t y = gl[(size_t)w * gmax + x];
						if (stamp[y] == j)
							continue;
						stamp[y] = j;
						if (add_pred(f, &np, &pcap, &ptype, &tcap, y, d == 0 ? DEP_SEND : DEP_RECV))
							goto out;
					}
				}
				for (int e = m->first; e < m->first + m->count; e++) {
					size_t c = ((size_t)m->src * C + (size_t)p->chunk[e]) * S + (size_t)g;
					for (int w = head[c]; w >= 0; w = wnext[w])
						if (stamp[wrec[w]] != j) {
							stamp[wrec[w]] = j;
							if (add_pred(f, &np, &pcap, &ptype, &tcap, wrec[w], DEP_DATA))
								goto out;
						}
				}
				int32_t *ls = &lasts[m->src * ps + nsend[m->src]++ % ps];
				int32_t *lr = &lastr[m->dst * pr + nrecv[m->dst]++ % pr];
				int32_t deps[2] = { *ls, *lr };
				for (int d = 0; d < 2; d++) {
					if (deps[d] < 0 || stamp[deps[d]] == j)
						continue;
					stamp[deps[d]] = j;
					if (add_pred(f, &np, &pcap, &ptype, &tcap, deps[d], d == 0 ? DEP_SEND : DEP_RECV))
						goto out;
				}
				*ls = j;
				*lr = j;
			}
			/* writes land after the round's reads: a copy replaces the
			 * cell's writer list, a reduce joins it (the value is ready
			 * when all of them have landed, as in sim_pass) */
			for (int x = first; x < j; x++) {
				const cost_pmsg *m = &p->msgs[f->rmsg[x]];
				for (int e = m->first; e < m->first + m->count; e++) {
					size_t c = ((size_t)m->dst * C + (size_t)p->chunk[e]) * S + (size_t)g;
					if (nw == wcap) {
						int nc = wcap ? 2 * wcap : 256;
						int32_t *a = realloc(wrec, sizeof *a * (size_t)nc);
						if (a)
							wrec = a;
						int32_t *b = realloc(wnext, sizeof *b * (size_t)nc);
						if (b)
							wnext = b;
						if (!a || !b)
							goto out;
						wcap = nc;
					}
					wrec[nw] = x;
					wnext[nw] = !p->reduce[e] ? -1 : head[c];
					head[c] = nw++;
				}
			}
			/* round order: round k's last segments become its ranks'
			 * latest round */
			for (int x = first; gated && g == S - 1 && x < j; x++) {
				const cost_pmsg *m = &p->msgs[f->rmsg[x]];
				for (int d = 0; d < 2; d++) {
					int w = d == 0 ? m->src : n + m->dst;
					if (gk[w] != k)
						gk[w] = k, gn[w] = 0;
					gl[(size_t)w * gmax + gn[w]++] = x;
				}
			}
		}
	}
	f->pofs[nr] = np;
	f->ptype = ptype;
	ptype = NULL;
	/* successors: the reverse of pred */
	f->sofs = calloc((size_t)nr + 2, sizeof *f->sofs);
	f->succ = malloc(sizeof *f->succ * ((size_t)np + 1));
	f->left = malloc(sizeof *f->left * ((size_t)nr + 1));
	if (!f->sofs || !f->succ || !f->left)
		goto out;
	for (int x = 0; x < np; x++)
		f->sofs[f->pred[x] + 1]++;
	for (int x = 0; x < nr; x++)
		f->sofs[x + 1] += f->sofs[x];
	for (int x = 0; x < nr; x++) {
		f->left[x] = f->pofs[x + 1] - f->pofs[x];
		for (int y = f->pofs[x]; y < f->pofs[x + 1]; y++)
			f->succ[f->sofs[f->pred[y]]++] = x;   /* sofs[r] runs up to r's end */
	}
	for (int x = nr; x > 0; x--)
		f->sofs[x] = f->sofs[x - 1];
	f->sofs[0] = 0;
	/* the segments each message crosses (physical ranks), and for TCP's
	 * RTT those its acknowledgements cross */
	int nms = msg_segs(p, q, 0, &f->mofs, &f->mseg);
	if (nms < 0 || (q->share_rtt && msg_segs(p, q, 1, &f->bofs, &f->bseg) < 0))
		goto out;
	f->nres = lm->nsegs + (fluid_nic(q) ? 2 * n : 0);
	size_t nrr = (size_t)nr + 1, ns = (size_t)f->nres + 1;
	f->rem = malloc(sizeof *f->rem * nrr);
	f->cap = malloc(sizeof *f->cap * nrr);
	f->rate = malloc(sizeof *f->rate * nrr);
	f->frozen = malloc(nrr);
	f->foff = malloc(sizeof *f->foff * (nrr + 1));
	f->fres = malloc(sizeof *f->fres * ((size_t)nms * (size_t)S + 1));
	f->used = malloc(sizeof *f->used * ns);
	f->rcap = malloc(sizeof *f->rcap * ns);
	f->nun = malloc(sizeof *f->nun * ns);
	/* alpha-fair sharing's prices and scratch, only where it runs (at
	 * most every record in flight at once) */
	int afrc = 0;
	if (q->share_alpha > 0) {
		f->price = calloc(ns, sizeof *f->price);
		afrc = !f->price || share_af_alloc(&f->af, nr, f->nres, nms * S);
	}
	const int weighted = q->share_rtt || q->share_jitter > 0;
	if (weighted)
		f->wt = malloc(sizeof *f->wt * nrr);
	if (q->share_jitter > 0)
		f->luck = malloc(sizeof *f->luck * ((size_t)p->nmsgs + 1));
	f->active = malloc(sizeof *f->active * nrr);
	f->apos = malloc(sizeof *f->apos * nrr);
	f->heap = malloc(sizeof *f->heap * (2 * nrr));
	if (!f->rem || !f->cap || !f->rate || !f->frozen || !f->foff || !f->fres || !f->used || !f->rcap ||
	    !f->nun || afrc || (weighted && !f->wt) || (q->share_jitter > 0 && !f->luck) || !f->active || !f->apos || !f->heap)
		goto out;
	if (cost_host_rounds(p, lm, &f->host))
		goto out;
	for (int s = 0; s < lm->nsegs; s++)
		f->rcap[s] = lm->segs[s].cap;
	for (int s = lm->nsegs; s < f->nres; s++)
		f->rcap[s] = lm->rank_bw;
	rc = 0;
out:
	free(head), free(wrec), free(wnext), free(lasts), free(lastr), free(nsend), free(nrecv), free(stamp);
	free(ptype), free(gn), free(gl), free(gk);
	return rc;
}

/* Record j starts at t (its predecessors landed, both ranks joined by
 * js): note why it started then, and make it a flow (or, with no bytes,
 * land it alpha later). */
static void start_rec(const cost_plan *p, const cost_params *q, fluid *f, cost_smsg *rec, int j, double t,
		      double js, int *na, int *nh)
{
	cost_smsg *r = &rec[j];
	r->start = t;
	/* the binding constraint, in sim_pass's order of preference */
	double best[3] = { -1, -1, -1 };
	int who[3] = { -1, -1, -1 };
	for (int x = f->pofs[j]; x < f->pofs[j + 1]; x++) {
		int y = f->pred[x], ty = f->ptype[x];
		if (rec[y].end > best[ty])
			best[ty] = rec[y].end, who[ty] = y;
	}
	if (t == 0)
		r->why = COST_WAIT_NONE, r->pred = -1;
	else if (t == js)
		r->why = COST_WAIT_JOIN, r->pred = -1;
	else if (t == best[DEP_DATA])
		r->why = COST_WAIT_DATA, r->pred = who[DEP_DATA];
	else if (t == best[DEP_SEND])
		r->why = COST_WAIT_SEND, r->pred = who[DEP_SEND];
	else
		r->why = COST_WAIT_RECV, r->pred = who[DEP_RECV];
	const cost_pmsg *m = &p->msgs[f->rmsg[j]];
	if (!(r->bytes > 0)) {
		double alpha = link_alpha(q->links, cost_phys(q->perm, m->src), cost_phys(q->perm, m->dst));
		ev_push(f->heap, nh, (fl_event){ t + alpha, j, FL_LAND });
		return;
	}
	int a = (*na)++;
	f->active[a] = j;
	/* with fluid_nic the rank's link is a resource; what stays of its
	 * cap is how much of it one of share flows takes back (cost.h) */
	f->cap[a] = 1 / cost_msg_beta_at(q->links, q->perm, m, fluid_nic(q) && m->share > 1 ? COST_TCP_TAKEBACK : 1);
	/* no faster than the host's copies and reductions of its round:
	 * count chunk pieces in at least host x piece bytes */
	if (f->host && f->host[m->round] > 0 && m->count / f->host[m->round] < f->cap[a])
		f->cap[a] = m->count / f->host[m->round];
	f->rate[a] = 0;
}

/* A 64-bit mix of x (splitmix64's finaliser): a hash whose bits pass for
 * random, so draws need no generator state and repeat exactly. */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* TCP's luck for message m in draw k (cost.h, share_jitter): e^(sigma z),
 * z a standard normal (Box-Muller) from a hash of the connection's
 * schedule ranks, m's round and k.  Schedule ranks, not physical: every
 * order then meets the same draws (common random numbers), so two orders
 * the network cannot tell apart (hosts of one rack swapped) get the same
 * time, and a difference between orders is the orders', not the draws'. */
static double jitter_weight(const cost_plan *p, const cost_params *q, int m, int k)
{
	const cost_pmsg *pm = &p->msgs[m];
	uint64_t h = mix64(((uint64_t)(uint32_t)pm->src << 32) | (uint32_t)pm->dst);
	h = mix64(h ^ ((uint64_t)(uint32_t)pm->round << 32 | (uint32_t)k));
	double u1 = ((h >> 11) + 0.5) / 9007199254740992.0;   /* (0, 1): 53 bits */
	double u2 = (double)(mix64(h) >> 11) / 9007199254740992.0;
	double z = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
	return exp(q->share_jitter * z);
}

/* Recompute the rates of the active flows (shared over the segments as
 * cost_params.share_alpha says).
 * Active slot a holds record active[a], its own cap cap[a] and its rate
 * rate[a]. */
static void fluid_rates(const cost_params *q, fluid *f, int na)
{
	/* A rank's link (fluid_nic) whose flows' caps fit in it cannot bind:
	 * it is left out of their paths, so that flows that differ only in
	 * their ranks still make one class (alphafair; ring's flows, all
	 * round).  f->used holds the caps' sums: only max-min uses it.
	 * Where the caps do not fit (dbt: k flows at 1.5/k each) the link
	 * stays in, and each flow is then a class of its own.  Adding such
	 * links only once an allocation without them overfills them (the
	 * same optimum: the problem is convex) did not get dbt's speed back
	 * at n = 64 (2.5 s either way): there they do bind. */
	const int nl = q->links->nsegs;
	if (f->nres > nl) {
		for (int r = nl; r < f->nres; r++)
			f->used[r] = 0;
		for (int a = 0; a < na; a++) {
			int m = f->rmsg[f->active[a]];
			for (int x = f->mofs[m]; x < f->mofs[m + 1]; x++)
				if (f->mseg[x] >= nl)
					f->used[f->mseg[x]] += f->cap[a];
		}
	}
	int k = 0;
	for (int a = 0; a < na; a++) {
		int m = f->rmsg[f->active[a]];
		f->foff[a] = k;
		for (int x = f->mofs[m]; x < f->mofs[m + 1]; x++) {
			int r = f->mseg[x];
			if (r < nl || f->used[r] > f->rcap[r])
				f->fres[k++] = r;
		}
	}
	f->foff[na] = k;
	const int ns = f->nres;
	if (q->share_alpha <= 0 || ns == 0) {
		share_maxmin(na, f->cap, f->foff, f->fres, ns, f->rcap, f->rate, f->used, f->nun, f->frozen);
		return;
	}
	/* without the RTT weights, the draw's luck is the only weight */
	const double *w = NULL;
	if (!q->share_rtt && f->luck) {
		for (int a = 0; a < na; a++)
			f->wt[a] = f->luck[f->rmsg[f->active[a]]];
		w = f->wt;
	}
	share_alphafair(&f->af, na, f->cap, w, f->foff, f->fres, ns, f->rcap, q->share_alpha, f->rate, f->price);
	if (!q->share_rtt)
		return;
	/* TCP's rate goes as 1/RTT, and on a loaded segment the RTT is mostly
	 * its queue: weight each flow by 1/RTT^2 (alpha = 2's utility,
	 * -1/(RTT^2 x), is Reno's) with its RTT counted in the loaded
	 * segments its data and its acknowledgements (dst -> src) pass.
	 * Which are loaded (priced) comes from the unweighted allocation of
	 * the same flows, just made, so the rates depend on the flows in
	 * flight alone, not on the events before.  The testbeds it was
	 * fitted on ran BBR, one run CUBIC; it predicts both about equally
	 * (tests/results/reorder.md), Reno's utility being the reason for
	 * the form, not a claim about which congestion control runs.
	 * "Priced" includes a segment filled exactly, whose price is then
	 * whatever rounding leaves (1e-30 or 0): a trunk that one flow fills
	 * at its own cap.  Counting every full segment as loaded instead, or
	 * only prices above rounding, moved predictions by up to 4% and
	 * ranked the stored runs of tests/results/reorder.md worse: 9 of 12
	 * cells at Spearman >= 0.9 either way, against 10 with this rule. */
	for (int a = 0; a < na; a++) {
		int m = f->rmsg[f->active[a]], loaded = 0;
		for (int x = f->mofs[m]; x < f->mofs[m + 1]; x++)
			loaded += f->price[f->mseg[x]] > 0;
		for (int x = f->bofs[m]; x < f->bofs[m + 1]; x++)
			loaded += f->price[f->bseg[x]] > 0;
		double rtt = loaded > 1 ? loaded : 1;
		f->wt[a] = 1 / (rtt * rtt);
		if (f->luck)
			f->wt[a] *= f->luck[m];
	}
	share_alphafair(&f->af, na, f->cap, f->wt, f->foff, f->fres, ns, f->rcap, q->share_alpha, f->rate, f->price);
}

/* One fluid pass with the straggler joining at sjoin (may be INFINITY),
 * filling rec[] (indexed in program order, like sim_pass). */
static int fluid_pass(const cost_plan *p, const cost_params *q, double sjoin, fluid *f, cost_smsg *rec,
		      double *completion, double *pre_end)
{
	const int nr = f->nr;
	const double cb = q->bytes * p->work / p->chunks / q->segments;
	int na = 0, nh = 0;
	double now = 0, done = 0, pend = 0;
	for (int j = 0; j < nr; j++) {
		const cost_pmsg *m = &p->msgs[f->rmsg[j]];
		f->left[j] = f->pofs[j + 1] - f->pofs[j];
		f->rem[j] = m->count * cb;
		rec[j] = (cost_smsg){ .msg = f->rmsg[j], .seg = f->rseg[j], .bytes = m->count * cb,
				      .start = INFINITY, .end = INFINITY, .pred = -1, .why = COST_WAIT_NONE };
	}
	int strag = q->straggler;
#define JOIN(r) ((r) == strag ? sjoin : 0.0)
	/* start record j at time t (its predecessors have landed by then) */
#define READY(j, t) do {                                                                        		const cost_pmsg *m_ = &p->msgs[f->rmsg[j]];                                     		double js_ = JOIN(m_->src) > JOIN(m_->dst) ? JOIN(m_->src) : JOIN(m_->dst);     		if (js_ > (t)) {                                                                			if (isfinite(js_))                                                      				ev_push(f->heap, &nh, (fl_event){ js_, (j), FL_START });        		} else {                                                                        			start_rec(p, q, f, rec, (j), (t), js_, &na, &nh);                       			dirty = 1;                                                              		}                                                                               	} while (0)
	int dirty = 0;
	for (int j = 0; j < nr; j++)
		if (f->left[j] == 0)
			READY(j, 0.0);
	while (na > 0 || nh > 0) {
		if (dirty) {
			fluid_rates(q, f, na);
			dirty = 0;
		}
		/* the next event: a flow's last byte, or a landing or a join */
		double tnext = nh ? f->heap[0].t : INFINITY;
		int first = -1;
		for (int a = 0; a < na; a++) {
			double t = now + f->rem[f->active[a]] / f->rate[a];
			if (t < tnext)
				tnext = t, first = a;
		}
		double dt = tnext - now;
		for (int a = 0; a < na; a++)
			f->rem[f->active[a]] -= f->rate[a] * dt;
		now = tnext;
		/* flows that have sent their last byte land alpha later */
		for (int a = 0; a < na;) {
			int j = f->active[a];
			if (a != first && f->rem[j] > 1e-9 * rec[j].bytes) {
				a++;
				continue;
			}
			if (a == first)
				first = -1;
			f->rem[j] = 0;
			const cost_pmsg *m = &p->msgs[f->rmsg[j]];
			double alpha = link_alpha(q->links, cost_phys(q->perm, m->src), cost_phys(q->perm, m->dst));
			ev_push(f->heap, &nh, (fl_event){ now + alpha, j, FL_LAND });
			/* swap-remove the slot */
			na--;
			if (first == na)
				first = a;
			f->active[a] = f->active[na];
			f->cap[a] = f->cap[na];
			f->rate[a] = f->rate[na];
			dirty = 1;
		}
		while (nh > 0 && f->heap[0].t <= now) {
			fl_event e = ev_pop(f->heap, &nh);
			if (e.kind == FL_START) {
				start_rec(p, q, f, rec, e.rec, now, e.t, &na, &nh);
				dirty = 1;
				continue;
			}
			cost_smsg *r = &rec[e.rec];
			r->end = e.t;
			if (e.t > done)
				done = e.t;
			if (p->pre[p->msgs[f->rmsg[e.rec]].round] && e.t > pend)
				pend = e.t;
			for (int x = f->sofs[e.rec]; x < f->sofs[e.rec + 1]; x++) {
				int s2 = f->succ[x];
				if (--f->left[s2] == 0)
					READY(s2, now);
			}
		}
	}
#undef READY
#undef JOIN
	*completion = done;
	*pre_end = pend;
	return 0;
}

/* One fluid run in draw k (two passes for a masked delay): the
 * straggler's join in *d, completion and precondition end as fluid_pass.
 * The draw's luck is each message's for the whole run, so it is drawn
 * here once, not at every event. */
static void fluid_run(const cost_plan *p, const cost_params *q, fluid *f, int k, cost_smsg *rec, double *d,
		      double *done, double *pend)
{
	if (f->luck)
		for (int m = 0; m < p->nmsgs; m++)
			f->luck[m] = jitter_weight(p, q, m, k);
	*d = 0;
	if (q->straggler >= 0) {
		*d = q->delay;
		if (*d == COST_MASKED) {
			fluid_pass(p, q, INFINITY, f, rec, done, pend);
			*d = *done;
		}
		fluid_pass(p, q, *d, f, rec, done, pend);
	} else {
		fluid_pass(p, q, 0, f, rec, done, pend);
	}
}

int fluid_simulate(const cost_plan *p, const cost_params *q, cost_smsg *rec, int trace, double *d, double *done,
		   double *pend)
{
	fluid f;
	memset(&f, 0, sizeof f);
	if (fluid_build(p, q, &f)) {
		fluid_free(&f);
		return -1;
	}
	if (q->share_jitter > 0) {
		/* the mean over the draws; for a trace, rec is the
		 * draw whose time is nearest it, run again (cost.h) */
		int k = cost_jitter_samples(q), near = 0;
		double *t = malloc(sizeof *t * (size_t)k);
		if (!t) {
			fluid_free(&f);
			return -1;
		}
		double sd = 0, sp = 0, sj = 0;
		for (int i = 0; i < k; i++) {
			fluid_run(p, q, &f, i, rec, d, done, pend);
			t[i] = *done - *d;
			sd += *done, sp += *pend, sj += *d;
		}
		const double mean = (sd - sj) / k;
		for (int i = 1; i < k; i++)
			if (fabs(t[i] - mean) < fabs(t[near] - mean))
				near = i;
		if (trace && near != k - 1)
			fluid_run(p, q, &f, near, rec, d, done, pend);
		free(t);
		*done = sd / k, *pend = sp / k, *d = sj / k;
	} else {
		fluid_run(p, q, &f, 0, rec, d, done, pend);
	}
	fluid_free(&f);
	return 0;
}
