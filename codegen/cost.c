/*
 * cost.c - the round-synchronous estimate, the event-driven simulator and
 * what is derived from them (busbw, critical straggler delay).  The models
 * and their assumptions are described in cost.h.
 *
 * Pipeline position: reads a verified schedule (through a cost_plan, which
 * groups each round's transfers into messages once) and a link model;
 * `collc cost|sim|compare|tune` (codegen/cmd/), `collc build`'s size tables
 * (choose.c) and the rank reordering
 * search call it many times per schedule, so the plan is built once and
 * each evaluation is a single pass over the messages.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "xalloc.h"

/* Bounds that keep a simulation within a few hundred MB. */
#define MAX_CELLS (1L << 24)     /* rank x chunk x segment ready times */
#define MAX_RECORDS (1L << 23)   /* simulated messages */


/* --- plans ----------------------------------------------------------------- */

void cost_plan_free(cost_plan *p)
{
	if (!p)
		return;
	free(p->msgs);
	free(p->round_first);
	free(p->chunk);
	free(p->op);
	free(p->pre);
	free(p);
}

cost_plan *cost_plan_new(const ir_sched *s, link_error *err)
{
	if (s->n < 1 || s->chunks < 1 || s->ports_send < 1 || s->ports_recv < 1) {
		link_errorf(err, "schedule %s: bad shape (n %d, chunks %d, ports %d/%d)", s->algo,
		     s->n, s->chunks, s->ports_send, s->ports_recv);
		return NULL;
	}
	cost_plan *p = xcalloc(1, sizeof *p);
	int *head = NULL, *next = NULL, *msg_of = NULL;
	if (!p)
		goto oom;
	p->s = s;
	p->n = s->n;
	p->chunks = s->chunks;
	p->work = coll_kind_work_per_size(ir_kind_info(s->kind), s->n);
	p->nrounds = s->nrounds;
	p->ports_send = s->ports_send;
	p->ports_recv = s->ports_recv;
	size_t nx = (size_t)s->nxfers;
	p->msgs = xcalloc(nx, sizeof *p->msgs);
	p->round_first = xcalloc((size_t)s->nrounds + 1, sizeof *p->round_first);
	p->chunk = xcalloc(nx, sizeof *p->chunk);
	p->op = xcalloc(nx, sizeof *p->op);
	p->pre = xcalloc((size_t)s->nrounds, sizeof *p->pre);
	head = malloc(sizeof *head * (size_t)s->n);
	next = xcalloc(nx, sizeof *next);
	msg_of = xcalloc(nx, sizeof *msg_of);
	if (!p->msgs || !p->round_first || !p->chunk || !p->op || !p->pre || !head ||
	    !next || !msg_of)
		goto oom;
	for (int i = 0; i < s->n; i++)
		head[i] = -1;

	int nm = 0, off = 0;
	for (int k = 0; k < s->nrounds; k++) {
		const ir_round *rd = &s->rounds[k];
		if (rd->first < 0 || rd->count < 0 || rd->first + rd->count > s->nxfers) {
			link_errorf(err, "schedule %s: round %d has bad transfer indices", s->algo, k);
			goto bad;
		}
		int ph = rd->phase;
		p->pre[k] = ph >= 0 && ph < s->nphases && strncmp(s->phases[ph], "pre", 3) == 0;
		p->npre += p->pre[k];
		p->round_first[k] = nm;
		int start = nm;
		/* Group by (src, dst) in order of first appearance: a per-source
		 * chain of this round's messages keeps the lookup short even for
		 * BCube's B-1 peers. */
		for (int x = rd->first; x < rd->first + rd->count; x++) {
			const ir_xfer *t = &s->xfers[x];
			if (t->src < 0 || t->src >= s->n || t->dst < 0 || t->dst >= s->n ||
			    t->src == t->dst || t->chunk < 0 || t->chunk >= s->chunks) {
				link_errorf(err, "schedule %s: round %d: bad transfer %d -> %d of chunk %d "
				     "(n %d, chunks %d)", s->algo, k, t->src, t->dst, t->chunk,
				     s->n, s->chunks);
				goto bad;
			}
			int m;
			for (m = head[t->src]; m >= 0; m = next[m])
				if (p->msgs[m].dst == t->dst)
					break;
			if (m < 0) {
				m = nm++;
				p->msgs[m] = (cost_pmsg){ .src = t->src, .dst = t->dst, .round = k };
				next[m] = head[t->src];
				head[t->src] = m;
			}
			msg_of[x - rd->first] = m;
			p->msgs[m].count++;
		}
		/* share: how many messages of this round the source sends and
		 * the destination receives, counted in head[] now that the
		 * chains are done with it */
		for (int m = start; m < nm; m++)
			head[p->msgs[m].src] = 0;
		for (int m = start; m < nm; m++)
			head[p->msgs[m].src]++;
		for (int m = start; m < nm; m++)
			p->msgs[m].share = head[p->msgs[m].src];
		for (int m = start; m < nm; m++)
			head[p->msgs[m].dst] = 0;
		for (int m = start; m < nm; m++)
			head[p->msgs[m].dst]++;
		for (int m = start; m < nm; m++)
			if (head[p->msgs[m].dst] > p->msgs[m].share)
				p->msgs[m].share = head[p->msgs[m].dst];
		for (int m = start; m < nm; m++) {
			head[p->msgs[m].src] = -1;
			head[p->msgs[m].dst] = -1;
		}
		for (int m = start; m < nm; m++) {
			p->msgs[m].first = off;
			off += p->msgs[m].count;
			p->msgs[m].count = 0;
		}
		for (int x = rd->first; x < rd->first + rd->count; x++) {
			cost_pmsg *m = &p->msgs[msg_of[x - rd->first]];
			int e = m->first + m->count++;
			p->chunk[e] = s->xfers[x].chunk;
			p->op[e] = s->xfers[x].op;
		}
	}
	p->round_first[s->nrounds] = nm;
	p->nmsgs = nm;
	free(head);
	free(next);
	free(msg_of);
	return p;
oom:
	link_errorf(err, "out of memory preparing schedule %s", s->algo);
bad:
	free(head);
	free(next);
	free(msg_of);
	cost_plan_free(p);
	return NULL;
}

int cost_check(const cost_plan *p, const cost_params *q, link_error *err)
{
	if (!(q->bytes > 0) || !isfinite(q->bytes))
		return link_errorf(err, "buffer size must be positive");
	if (!q->links)
		return link_errorf(err, "no link model");
	if (link_check_n(q->links, p->n, err))
		return -1;
	if (q->segments < 1)
		return link_errorf(err, "segments must be >= 1, not %d", q->segments);
	if (q->straggler < -1 || q->straggler >= p->n)
		return link_errorf(err, "straggler rank %d out of range for %d ranks", q->straggler, p->n);
	if (q->delay != COST_MASKED && !(q->delay >= 0 && isfinite(q->delay)))
		return link_errorf(err, "straggler delay must be >= 0");
	if (q->perm && cost_check_perm(q->perm, p->n, err))
		return -1;
	if (!(q->share_jitter >= 0 && q->share_jitter <= COST_JITTER_MAX))
		return link_errorf(err, "jitter must be between 0 and %g, not %g", COST_JITTER_MAX, q->share_jitter);
	if (q->share_jitter > 0 && !(q->share_alpha > 0))
		return link_errorf(err, "jitter draws weights, which only alpha-fair sharing (tcp, alpha=K) takes");
	if (q->share_samples < 0 || q->share_samples > 4096)
		return link_errorf(err, "jitter samples must be between 1 and 4096, not %d", q->share_samples);
	if ((double)p->n * p->chunks * q->segments > (double)MAX_CELLS ||
	    (double)p->nmsgs * q->segments > (double)MAX_RECORDS)
		return link_errorf(err, "%d segments of %d messages over %d ranks x %d chunks is "
			    "more than the simulator holds; use fewer segments",
			    q->segments, p->nmsgs, p->n, p->chunks);
	return 0;
}

double cost_busbw_factor(ir_kind kind, int n)
{
	return coll_kind_busbw(ir_kind_info(kind), n);
}

static void finish(const cost_plan *p, const cost_params *q, cost_result *r)
{
	r->algbw = r->time > 0 ? q->bytes / r->time : 0;
	r->busbw = r->algbw * cost_busbw_factor(p->s->kind, p->n);
}

/* --- round-synchronous ----------------------------------------------------- */

/* Earliest-free port among a rank's ports. */
static int min_port(const double *free_at, int nports)
{
	int best = 0;
	for (int i = 1; i < nports; i++)
		if (free_at[i] < free_at[best])
			best = i;
	return best;
}

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
			 double *sendf, double *recvf, double *load)
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
	double *sendf = xcalloc((size_t)p->n * (size_t)p->ports_send, sizeof *sendf);
	double *recvf = xcalloc((size_t)p->n * (size_t)p->ports_recv, sizeof *recvf);
	double *load = xcalloc((size_t)q->links->nsegs + 1, sizeof *load);
	if (!sendf || !recvf || !load) {
		free(sendf);
		free(recvf);
		free(load);
		return link_errorf(err, "out of memory");
	}
	double cb = q->bytes * p->work / p->chunks, tpre = 0, tmain = 0;
	for (int k = 0; k < p->nrounds; k++) {
		double t = round_time(p, k, q, cb, sendf, recvf, load);
		if (p->pre[k])
			tpre += t;
		else
			tmain += t;
	}
	free(sendf);
	free(recvf);
	free(load);
	double d = 0;
	if (q->straggler >= 0)
		d = q->delay == COST_MASKED ? tpre : q->delay;
	double begin = d > tpre ? d : tpre;   /* the others finish the precondition meanwhile */
	memset(r, 0, sizeof *r);
	r->total = begin + tmain;
	r->join = d;
	r->time = r->total - d;
	r->pre = tpre;
	finish(p, q, r);
	return 0;
}

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

/* The (round, first and last segment) of step t: diagonal (segment g runs
 * round k at step k + g, earlier segments first) or, in round order,
 * round-major (step t is round t / S, segment t % S). */
static int step_rounds(int t, int R, int S, int gated, int *g0, int *g1)
{
	if (gated) {
		*g0 = *g1 = t % S;
		return t / S;
	}
	*g0 = t - R + 1 > 0 ? t - R + 1 : 0;
	*g1 = t < S - 1 ? t : S - 1;
	return -1;
}

typedef struct {
	double *ready;     /* per (rank, chunk, segment): when its current value landed */
	int32_t *writer;   /* ... and which record wrote it, -1: initial data */
	double *sendf, *recvf;   /* per (rank, port): free from */
	int32_t *sendl, *recvl;  /* ... and the record that used it last */
	double *join;      /* per rank */
	sim_gate *gate;    /* round order: per rank, sends then receives (2n) */
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
	if (!st->ready || !st->writer || !st->sendf || !st->recvf || !st->sendl || !st->recvl ||
	    !st->join || !st->gate) {
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
		     cost_smsg *rec, double *completion, double *pre_end)
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
		st->join[i] = 0;
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
					if (p->op[e] == IR_COPY || rec[j].end >= st->ready[c]) {
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

/* --- max-min fair sharing -------------------------------------------------- */

/* Progressive filling with caller scratch: used[nres], nun[nres],
 * frozen[nflows].  Every unfrozen flow runs at the common `level`; raise
 * it until a flow reaches its own cap or a resource fills, freeze what
 * that binds, repeat.  At least one flow freezes per step (the binding
 * one is chosen exactly, not by a tolerance), so it ends after at most
 * nflows steps. */
static void maxmin(int nf, const double *cap, const int *off, const int *res, int nr, const double *rcap,
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
		maxmin(nflows, cap, off, res, nres, rcap, rate, used, nun, frozen);
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

static int af_alloc(af_scratch *w, int nflows, int nres, int entries)
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

static void af_free(af_scratch *w)
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

static void alphafair(af_scratch *w, int nf, const double *cap, const double *wt, const int *off, const int *res,
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
	af_scratch w = {0};   /* af_free() is safe whatever af_alloc() got to */
	double *price = calloc((size_t)nres + 1, sizeof *price);
	int rc = price && af_alloc(&w, nflows, nres, off[nflows]) == 0 ? 0 : -1;
	if (rc == 0)
		alphafair(&w, nflows, cap, NULL, off, res, nres, rcap, alpha, rate, price);
	af_free(&w);
	free(price);
	return rc;
}

int cost_check_perm(const int32_t *perm, int n, link_error *err)
{
	unsigned char *seen = calloc((size_t)n + 1, 1);
	if (!seen)
		return link_errorf(err, "out of memory");
	for (int i = 0; i < n; i++) {
		if (perm[i] < 0 || perm[i] >= n || seen[perm[i]]) {
			int bad = perm[i];
			free(seen);
			return link_errorf(err, "rank order: %d %s", bad,
					   bad < 0 || bad >= n ? "is not a rank" : "appears twice");
		}
		seen[perm[i]] = 1;
	}
	free(seen);
	return 0;
}

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
} fluid;

static void fluid_free(fluid *f)
{
	free(f->pofs), free(f->pred), free(f->ptype), free(f->sofs), free(f->succ);
	free(f->mofs), free(f->mseg), free(f->left), free(f->rmsg), free(f->rseg), free(f->rem), free(f->cap), free(f->rate);
	free(f->used), free(f->rcap), free(f->nun), free(f->foff), free(f->fres), free(f->frozen);
	free(f->price), free(f->bofs), free(f->bseg), free(f->wt), free(f->luck);
	af_free(&f->af);
	free(f->active), free(f->apos), free(f->heap);
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
					wnext[nw] = p->op[e] == IR_COPY ? -1 : head[c];
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
		afrc = !f->price || af_alloc(&f->af, nr, f->nres, nms * S);
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
		maxmin(na, f->cap, f->foff, f->fres, ns, f->rcap, f->rate, f->used, f->nun, f->frozen);
		return;
	}
	/* without the RTT weights, the draw's luck is the only weight */
	const double *w = NULL;
	if (!q->share_rtt && f->luck) {
		for (int a = 0; a < na; a++)
			f->wt[a] = f->luck[f->rmsg[f->active[a]]];
		w = f->wt;
	}
	alphafair(&f->af, na, f->cap, w, f->foff, f->fres, ns, f->rcap, q->share_alpha, f->rate, f->price);
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
	 * (README, "Rank reordering"), Reno's utility being the reason for
	 * the form, not a claim about which congestion control runs.
	 * "Priced" includes a segment filled exactly, whose price is then
	 * whatever rounding leaves (1e-30 or 0): a trunk that one flow fills
	 * at its own cap.  Counting every full segment as loaded instead, or
	 * only prices above rounding, moved predictions by up to 4% and
	 * ranked the stored runs of README "Rank reordering" worse: 9 of 12
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
	alphafair(&f->af, na, f->cap, f->wt, f->foff, f->fres, ns, f->rcap, q->share_alpha, f->rate, f->price);
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

/* Run the simulation (two passes for a masked delay); fills r, and rec
 * (scratch otherwise) when trace asks for the messages' times. */
static int simulate(const cost_plan *p, const cost_params *q, cost_smsg *rec, int trace, cost_result *r,
		    link_error *err)
{
	double done, pend, d = 0;
	if (q->links->nsegs > 0) {
		/* shared segments: the fluid simulation (same passes) */
		fluid f;
		memset(&f, 0, sizeof f);
		if (fluid_build(p, q, &f)) {
			fluid_free(&f);
			return link_errorf(err, "out of memory simulating %s", p->s->algo);
		}
		if (q->share_jitter > 0) {
			/* the mean over the draws; for a trace, rec is the
			 * draw whose time is nearest it, run again (cost.h) */
			int k = cost_jitter_samples(q), near = 0;
			double *t = malloc(sizeof *t * (size_t)k);
			if (!t) {
				fluid_free(&f);
				return link_errorf(err, "out of memory simulating %s", p->s->algo);
			}
			double sd = 0, sp = 0, sj = 0;
			for (int i = 0; i < k; i++) {
				fluid_run(p, q, &f, i, rec, &d, &done, &pend);
				t[i] = done - d;
				sd += done, sp += pend, sj += d;
			}
			const double mean = (sd - sj) / k;
			for (int i = 1; i < k; i++)
				if (fabs(t[i] - mean) < fabs(t[near] - mean))
					near = i;
			if (trace && near != k - 1)
				fluid_run(p, q, &f, near, rec, &d, &done, &pend);
			free(t);
			done = sd / k, pend = sp / k, d = sj / k;
		} else {
			fluid_run(p, q, &f, 0, rec, &d, &done, &pend);
		}
		fluid_free(&f);
	} else {
		sim_state st;
		if (state_alloc(&st, p, q->segments))
			return link_errorf(err, "out of memory simulating %s", p->s->algo);
		if (q->straggler >= 0) {
			d = q->delay;
			if (d == COST_MASKED) {
				/* Everything that can run without the straggler has
				 * ended by the last finite end of a pass without it. */
				sim_pass(p, q, INFINITY, &st, rec, &done, &pend);
				d = done;
			}
			sim_pass(p, q, d, &st, rec, &done, &pend);
		} else {
			sim_pass(p, q, 0, &st, rec, &done, &pend);
		}
		state_free(&st);
	}
	memset(r, 0, sizeof *r);
	r->join = d;
	r->total = done > d ? done : d;   /* nobody is done before everyone came */
	r->time = r->total - d;
	r->pre = pend;
	finish(p, q, r);
	return 0;
}

int cost_sim_time(const cost_plan *p, const cost_params *q, cost_result *r, link_error *err)
{
	if (cost_check(p, q, err))
		return -1;
	cost_smsg *rec = malloc(sizeof *rec * ((size_t)p->nmsgs * (size_t)q->segments + 1));
	if (!rec)
		return link_errorf(err, "out of memory simulating %s", p->s->algo);
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
	cost_sim *sim = xcalloc(1, sizeof *sim);
	int *cnt = NULL, *pos = NULL;
	interval *iv = NULL;
	if (!sim)
		goto oom;
	sim->n = p->n;
	sim->nmsgs = p->nmsgs * q->segments;
	sim->msgs = malloc(sizeof *sim->msgs * ((size_t)sim->nmsgs + 1));
	sim->join = xcalloc((size_t)p->n, sizeof *sim->join);
	sim->busy = xcalloc((size_t)p->n, sizeof *sim->busy);
	sim->idle = xcalloc((size_t)p->n, sizeof *sim->idle);
	sim->done = xcalloc((size_t)p->n, sizeof *sim->done);
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
	cnt = xcalloc((size_t)p->n + 1, sizeof *cnt);
	pos = xcalloc((size_t)p->n + 1, sizeof *pos);
	iv = malloc(sizeof *iv * (2 * (size_t)sim->nmsgs + 1));
	int *nsend = xcalloc((size_t)p->n, sizeof *nsend);
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
	int *rpos = xcalloc((size_t)p->n, sizeof *rpos);
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
	link_errorf(err, "out of memory simulating %s", p->s->algo);
	free(cnt);
	free(pos);
	free(iv);
	cost_sim_free(sim);
	return NULL;
}

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
		return link_errorf(err, "%s has %d ranks but %s has %d", algo->s->algo, algo->n,
			    base->s->algo, base->n);
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
