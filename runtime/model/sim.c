/*
 * sim.c - the event-driven simulation (model "sim", cost.h): each rank
 * runs its plan in order, a message starts when its data, a send port of
 * its source, a receive port of its destination and both ranks are
 * ready; with segments the buffer is pipelined.  cost_simulate adds what
 * `collc sim` reports: each rank's busy and idle time and the critical
 * path.
 *
 * Pipeline position: reads a cost_plan and a link model; without shared
 * segments one pass in program order (sim_pass), with them the fluid
 * simulation of fluid.c, which fills the same records.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"

/* --- event-driven simulation ----------------------------------------------- */

/* Round order (cost_params.round_order), as libcollrt's executor runs on
 * TCP (runtime/exec.c, "Round order"): a rank posts a send of round k
 * only once every send of its earlier rounds has left, and a receive only
 * once every receive of its earlier rounds has landed.  A schedule whose
 * rank sends in several trees at once (dbt) therefore runs level by level
 * at each rank rather than as one deep pipeline.  The rounds then run
 * round-major (every segment of round k before round k + 1), the order
 * the executor uses. Per rank and direction: the latest end among the
 * finished rounds (prev) and among the current one (cur), with the
 * records that set them. */
typedef struct {
	double prev, cur;
	int32_t prec, crec;
} sim_gate;

typedef struct {
	double *ready;     /* per (rank, chunk, segment): when its current value landed */
	int32_t *writer;   /* ... and which record wrote it, -1: initial data */
	double *sendf, *recvf;   /* per (rank, port): free from */
	int32_t *sendl, *recvl;  /* ... and the record that used it last */
	double *join;      /* per rank */
	sim_gate *gate;    /* round order: per rank, sends then receives (2n) */
	double *core;      /* one host: per rank, when its core has done the work handed to it */
} sim_state;

static void state_free(sim_state *st)
{
	free(st->ready);
	free(st->writer);
	free(st->sendf);
	free(st->recvf);
	free(st->sendl);
	free(st->recvl);
	free(st->join);
	free(st->gate);
	free(st->core);
}

static int state_alloc(sim_state *st, const cost_plan *p, int segs)
{
	size_t cells = (size_t)p->n * (size_t)p->chunks * (size_t)segs;
	st->ready = malloc(sizeof *st->ready * cells);
	st->writer = malloc(sizeof *st->writer * cells);
	st->sendf = malloc(sizeof *st->sendf * (size_t)p->n * (size_t)p->ports_send);
	st->recvf = malloc(sizeof *st->recvf * (size_t)p->n * (size_t)p->ports_recv);
	st->sendl = malloc(sizeof *st->sendl * (size_t)p->n * (size_t)p->ports_send);
	st->recvl = malloc(sizeof *st->recvl * (size_t)p->n * (size_t)p->ports_recv);
	st->join = malloc(sizeof *st->join * (size_t)p->n);
	st->gate = malloc(sizeof *st->gate * 2 * (size_t)p->n);
	st->core = malloc(sizeof *st->core * (size_t)p->n);
	if (!st->ready || !st->writer || !st->sendf || !st->recvf || !st->sendl || !st->recvl ||
	    !st->join || !st->gate || !st->core) {
		state_free(st);
		return -1;
	}
	return 0;
}

/* One pass over the whole schedule with the straggler joining at sjoin
 * (may be INFINITY: then everything that needs it never happens, which
 * is how the masked delay is found).  Fills rec (nmsgs * segments
 * records, in simulation order); returns the completion time and the end
 * of the precondition. */
static void sim_pass(const cost_plan *p, const cost_params *q, double sjoin, sim_state *st,
		     const double *host, cost_smsg *rec, double *completion, double *pre_end)
{
	const int n = p->n, C = p->chunks, S = q->segments, R = p->nrounds;
	const int ps = p->ports_send, pr = p->ports_recv;
	const double cb = q->bytes * p->work / C / S;
	size_t cells = (size_t)n * (size_t)C * (size_t)S;
	for (size_t i = 0; i < cells; i++) {
		st->ready[i] = 0;
		st->writer[i] = -1;
	}
	for (int i = 0; i < n * ps; i++) {
		st->sendf[i] = 0;
		st->sendl[i] = -1;
	}
	for (int i = 0; i < n * pr; i++) {
		st->recvf[i] = 0;
		st->recvl[i] = -1;
	}
	for (int i = 0; i < n; i++)
		st->join[i] = st->core[i] = 0;
	if (q->straggler >= 0)
		st->join[q->straggler] = sjoin;
	const int gated = q->round_order;
	sim_gate *sg = st->gate, *rg = st->gate + n;
	for (int i = 0; i < 2 * n; i++)
		st->gate[i] = (sim_gate){ 0, 0, -1, -1 };

	int nr = 0;
	double done = 0, pend = 0;
	/* Step t runs round k of segment g = t - k; earlier segments first
	 * (round-major in round order: step_rounds). */
	int nsteps = gated ? R * S : R + S - 1;
	for (int t = 0; t < nsteps; t++) {
		int g0, g1, kg = step_rounds(t, R, S, gated, &g0, &g1);
		if (gated && g0 == 0)
			for (int i = 0; i < 2 * n; i++) {   /* round kg begins: the earlier ones are "prev" */
				sim_gate *x = &st->gate[i];
				if (x->crec >= 0 && x->cur >= x->prev)
					x->prev = x->cur, x->prec = x->crec;
				x->cur = 0, x->crec = -1;
			}
		for (int g = g0; g <= g1; g++) {
			int k = gated ? kg : t - g, first = nr;
			for (int i = p->round_first[k]; i < p->round_first[k + 1]; i++) {
				const cost_pmsg *m = &p->msgs[i];
				double data = 0;
				int dw = -1;
				for (int e = m->first; e < m->first + m->count; e++) {
					size_t c = ((size_t)m->src * C + (size_t)p->chunk[e]) * S + (size_t)g;
					if (st->ready[c] > data) {
						data = st->ready[c];
						dw = st->writer[c];
					}
				}
				int a = m->src * ps + min_port(st->sendf + m->src * ps, ps);
				int b = m->dst * pr + min_port(st->recvf + m->dst * pr, pr);
				double js = st->join[m->src] > st->join[m->dst] ? st->join[m->src]
										: st->join[m->dst];
				double start = data;
				if (st->sendf[a] > start)
					start = st->sendf[a];
				if (st->recvf[b] > start)
					start = st->recvf[b];
				if (gated && sg[m->src].prev > start)
					start = sg[m->src].prev;
				if (gated && rg[m->dst].prev > start)
					start = rg[m->dst].prev;
				if (js > start)
					start = js;
				cost_smsg *r = &rec[nr];
				r->msg = i;
				r->seg = g;
				r->start = start;
				r->end = start + cost_msg_time_p(q->links, q->perm, m, m->count * cb);
				if (host) {
					/* each rank's core works through its copies and
					 * reductions in turn (cost.h, "One host"): the message
					 * lands once both ends have done their share */
					double al = link_alpha(q->links, cost_phys(q->perm, m->src), cost_phys(q->perm, m->dst));
					double *cs = &st->core[m->src], *cr = &st->core[m->dst];
					*cs = (*cs > start ? *cs : start) + host[2 * i] * cb;
					*cr = (*cr > start ? *cr : start) + host[2 * i + 1] * cb;
					double e = (*cs > *cr ? *cs : *cr) + al;
					if (e > r->end)
						r->end = e;
				}
				/* The binding constraint.  A late rank first: with a
				 * masked delay it joins exactly when the others run out
				 * of work, and "waited for the straggler" is the story;
				 * then data, the algorithm's own dependency. */
				if (start == 0) {
					r->why = COST_WAIT_NONE;
					r->pred = -1;
				} else if (start == js) {
					r->why = COST_WAIT_JOIN;
					r->pred = -1;
				} else if (start == data) {
					r->why = COST_WAIT_DATA;
					r->pred = dw;
				} else if (start == st->sendf[a]) {
					r->why = COST_WAIT_SEND;
					r->pred = st->sendl[a];
				} else if (start == st->recvf[b]) {
					r->why = COST_WAIT_RECV;
					r->pred = st->recvl[b];
				} else if (start == sg[m->src].prev) {
					r->why = COST_WAIT_SEND;
					r->pred = sg[m->src].prec;
				} else {
					r->why = COST_WAIT_RECV;
					r->pred = rg[m->dst].prec;
				}
				st->sendf[a] = st->recvf[b] = r->end;
				st->sendl[a] = st->recvl[b] = nr;
				if (gated && r->end >= sg[m->src].cur)
					sg[m->src].cur = r->end, sg[m->src].crec = nr;
				if (gated && r->end >= rg[m->dst].cur)
					rg[m->dst].cur = r->end, rg[m->dst].crec = nr;
				if (isfinite(r->end)) {
					if (r->end > done)
						done = r->end;
					if (p->pre[k] && r->end > pend)
						pend = r->end;
				}
				nr++;
			}
			/* Writes land after the round's reads (they all read the
			 * state from before the round). */
			for (int j = first; j < nr; j++) {
				const cost_pmsg *m = &p->msgs[rec[j].msg];
				for (int e = m->first; e < m->first + m->count; e++) {
					size_t c = ((size_t)m->dst * C + (size_t)p->chunk[e]) * S + (size_t)g;
					if (!p->reduce[e] || rec[j].end >= st->ready[c]) {
						st->ready[c] = rec[j].end;
						st->writer[c] = j;
					}
				}
			}
		}
	}
	*completion = done;
	*pre_end = pend;
}



/* Run the simulation (two passes for a masked delay); fills r, and rec
 * (scratch otherwise) when trace asks for the messages' times. */
static int simulate(const cost_plan *p, const cost_params *q, cost_smsg *rec, int trace, cost_result *r,
		    link_error *err)
{
	double done, pend, d = 0;
	if (q->links->nsegs > 0) {
		/* shared segments: the fluid simulation (same passes) */
		if (fluid_simulate(p, q, rec, trace, &d, &done, &pend))
			return link_errorf(err, "out of memory simulating %s", p->name);
	} else {
		sim_state st;
		double *host = NULL;
		if (cost_host_msgs(p, q->links, &host))
			return link_errorf(err, "out of memory simulating %s", p->name);
		if (state_alloc(&st, p, q->segments)) {
			free(host);
			return link_errorf(err, "out of memory simulating %s", p->name);
		}
		if (q->straggler >= 0) {
			d = q->delay;
			if (d == COST_MASKED) {
				/* Everything that can run without the straggler has
				 * ended by the last finite end of a pass without it. */
				sim_pass(p, q, INFINITY, &st, host, rec, &done, &pend);
				d = done;
			}
			sim_pass(p, q, d, &st, host, rec, &done, &pend);
		} else {
			sim_pass(p, q, 0, &st, host, rec, &done, &pend);
		}
		state_free(&st);
		free(host);
	}
	memset(r, 0, sizeof *r);
	r->join = d;
	r->total = done > d ? done : d;   /* nobody is done before everyone came */
	r->time = r->total - d;
	r->pre = pend;
	cost_finish(p, q, r);
	return cost_check_result(r, err);
}

int cost_sim_time(const cost_plan *p, const cost_params *q, cost_result *r, link_error *err)
{
	if (cost_check(p, q, err))
		return -1;
	cost_smsg *rec = malloc(sizeof *rec * ((size_t)p->nmsgs * (size_t)q->segments + 1));
	if (!rec)
		return link_errorf(err, "out of memory simulating %s", p->name);
	int rc = simulate(p, q, rec, 0, r, err);
	free(rec);
	return rc;
}

void cost_sim_free(cost_sim *sim)
{
	if (!sim)
		return;
	free(sim->msgs);
	free(sim->join);
	free(sim->busy);
	free(sim->idle);
	free(sim->done);
	free(sim->path);
	free(sim);
}

typedef struct {
	double a, b;
} interval;

static int cmp_interval(const void *x, const void *y)
{
	const interval *u = x, *v = y;
	return (u->a > v->a) - (u->a < v->a);
}

cost_sim *cost_simulate(const cost_plan *p, const cost_params *q, link_error *err)
{
	if (cost_check(p, q, err))
		return NULL;
	cost_sim *sim = calloc(1, sizeof *sim);
	int *cnt = NULL, *pos = NULL;
	interval *iv = NULL;
	if (!sim)
		goto oom;
	sim->n = p->n;
	sim->nmsgs = p->nmsgs * q->segments;
	sim->msgs = malloc(sizeof *sim->msgs * ((size_t)sim->nmsgs + 1));
	sim->join = calloc((size_t)p->n, sizeof *sim->join);
	sim->busy = calloc((size_t)p->n, sizeof *sim->busy);
	sim->idle = calloc((size_t)p->n, sizeof *sim->idle);
	sim->done = calloc((size_t)p->n, sizeof *sim->done);
	sim->path = malloc(sizeof *sim->path * ((size_t)sim->nmsgs + 1));
	if (!sim->msgs || !sim->join || !sim->busy || !sim->idle || !sim->done || !sim->path)
		goto oom;
	if (simulate(p, q, sim->msgs, 1, &sim->r, err)) {
		cost_sim_free(sim);
		return NULL;
	}
	if (q->straggler >= 0)
		sim->join[q->straggler] = sim->r.join;

	/* Busy time: the union of each rank's send and receive intervals.
	 * Sends come first in a rank's slice, then receives, each in
	 * simulation order. */
	cnt = calloc((size_t)p->n + 1, sizeof *cnt);
	pos = calloc((size_t)p->n + 1, sizeof *pos);
	iv = malloc(sizeof *iv * (2 * (size_t)sim->nmsgs + 1));
	int *nsend = calloc((size_t)p->n, sizeof *nsend);
	if (!cnt || !pos || !iv || !nsend) {
		free(nsend);
		goto oom;
	}
	for (int i = 0; i < sim->nmsgs; i++) {
		const cost_pmsg *m = &p->msgs[sim->msgs[i].msg];
		cnt[m->src + 1]++;
		cnt[m->dst + 1]++;
		nsend[m->src]++;
	}
	for (int r = 0; r < p->n; r++)
		cnt[r + 1] += cnt[r];
	for (int r = 0; r < p->n; r++)
		pos[r] = cnt[r];             /* next send slot */
	int *rpos = calloc((size_t)p->n, sizeof *rpos);
	if (!rpos) {
		free(nsend);
		goto oom;
	}
	for (int r = 0; r < p->n; r++)
		rpos[r] = cnt[r] + nsend[r];
	for (int i = 0; i < sim->nmsgs; i++) {
		const cost_pmsg *m = &p->msgs[sim->msgs[i].msg];
		interval x = { sim->msgs[i].start, sim->msgs[i].end };
		iv[pos[m->src]++] = x;
		iv[rpos[m->dst]++] = x;
	}
	for (int r = 0; r < p->n; r++) {
		interval *v = iv + cnt[r];
		int k = cnt[r + 1] - cnt[r], ns = nsend[r];
		double busy = 0, last = 0;
		for (int i = 0; i < k; i++)
			if (v[i].b > last)
				last = v[i].b;
		if (p->ports_send == 1 && p->ports_recv == 1) {
			/* One port each way: the sends are disjoint and in
			 * order, so are the receives; union = sum - overlap. */
			interval *a = v, *b = v + ns;
			int na = ns, nb = k - ns;
			for (int i = 0; i < k; i++)
				busy += v[i].b - v[i].a;
			for (int i = 0, j = 0; i < na && j < nb;) {
				double lo = a[i].a > b[j].a ? a[i].a : b[j].a;
				double hi = a[i].b < b[j].b ? a[i].b : b[j].b;
				if (hi > lo)
					busy -= hi - lo;
				if (a[i].b < b[j].b)
					i++;
				else
					j++;
			}
		} else {
			qsort(v, (size_t)k, sizeof *v, cmp_interval);
			double lo = 0, hi = -1;
			for (int i = 0; i < k; i++) {
				if (v[i].a > hi) {
					if (hi > lo)
						busy += hi - lo;
					lo = v[i].a;
					hi = v[i].b;
				} else if (v[i].b > hi) {
					hi = v[i].b;
				}
			}
			if (hi > lo)
				busy += hi - lo;
		}
		sim->busy[r] = busy;
		sim->done[r] = last;
		sim->idle[r] = sim->r.total - sim->join[r] - busy;
		if (sim->idle[r] < 0)
			sim->idle[r] = 0;
	}
	free(nsend);
	free(rpos);

	/* Critical path: from the message that ends last, follow what each
	 * one waited for. */
	int last = -1;
	for (int i = 0; i < sim->nmsgs; i++)
		if (last < 0 || sim->msgs[i].end >= sim->msgs[last].end)
			last = i;
	int np = 0;
	for (int i = last; i >= 0; i = sim->msgs[i].pred)
		sim->path[np++] = i;
	for (int i = 0; i < np / 2; i++) {
		int t = sim->path[i];
		sim->path[i] = sim->path[np - 1 - i];
		sim->path[np - 1 - i] = t;
	}
	sim->npath = np;
	free(cnt);
	free(pos);
	free(iv);
	return sim;
oom:
	link_errorf(err, "out of memory simulating %s", p->name);
	free(cnt);
	free(pos);
	free(iv);
	cost_sim_free(sim);
	return NULL;
}

