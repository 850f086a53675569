/*
 * cost.c - cost plans (a schedule's transfers grouped into messages once),
 * the checks every model runs first, and what every model's result
 * derives from its time (algbw, busbw).  The models and their
 * assumptions are described in cost.h; the models themselves are
 * rounds.c, sim.c and fluid.c, their table models.c.
 *
 * Pipeline position: the entry of the cost model.  `collc
 * cost|sim|compare|tune` (codegen/cmd/), `collc build`'s size tables
 * (codegen/choose.c), the rank reordering search (reorder.c) and
 * libcollrt's reorder at init call it many times per schedule, so the
 * plan is built once and each evaluation is a single pass over the
 * messages.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"

/* --- plans ----------------------------------------------------------------- */

/* What a plan holds while cost_plan_add takes its transfers: the round
 * being gathered (its transfers are grouped into messages when a later
 * round begins, or at cost_plan_done) and the grouping's scratch. */
struct cost_plan_build {
	size_t cap;            /* transfers the arrays hold (cost_shape.nxfers) */
	size_t placed;         /* transfers grouped so far */
	int round;             /* the round being gathered; -1 before the first */
	int next_round;        /* the first round whose round_first is not set */
	coll_xfer *cur;        /* its transfers, in the order given */
	size_t ncur, capcur;
	int *head;             /* per rank: its last message of this round, -1 none (then counts) */
	int *next;             /* per message: the previous one from the same source */
	int *msg_of;           /* per transfer of the round: its message */
	size_t capmsg_of;
};

static void build_free(struct cost_plan_build *b)
{
	if (!b)
		return;
	free(b->cur);
	free(b->head);
	free(b->next);
	free(b->msg_of);
	free(b);
}

void cost_plan_free(cost_plan *p)
{
	if (!p)
		return;
	build_free(p->build);
	free(p->name);
	free(p->msgs);
	free(p->round_first);
	free(p->chunk);
	free(p->reduce);
	free(p->pre);
	free(p);
}

cost_plan *cost_plan_new(const cost_shape *sh, link_error *err)
{
	const char *name = sh->name ? sh->name : "?";
	if (sh->n < 1 || sh->chunks < 1 || sh->ports_send < 1 || sh->ports_recv < 1 || sh->nrounds < 0 ||
	    (unsigned)sh->kind >= COLL_NCOLLS) {
		link_errorf(err, "schedule %s: bad shape (n %d, chunks %d, ports %d/%d)", name, sh->n, sh->chunks,
			    sh->ports_send, sh->ports_recv);
		return NULL;
	}
	cost_plan *p = calloc(1, sizeof *p);
	if (!p)
		goto oom;
	struct cost_plan_build *b = p->build = calloc(1, sizeof *b);
	p->name = strdup(name);
	if (!b || !p->name)
		goto oom;
	p->kind = sh->kind;
	p->n = sh->n;
	p->chunks = sh->chunks;
	p->work = coll_kind_work_per_size(coll_kind_get(sh->kind), sh->n);
	p->nrounds = sh->nrounds;
	p->ports_send = sh->ports_send;
	p->ports_recv = sh->ports_recv;
	size_t nx = sh->nxfers;
	p->msgs = calloc(nx ? nx : 1, sizeof *p->msgs);
	p->round_first = calloc((size_t)sh->nrounds + 1, sizeof *p->round_first);
	p->chunk = calloc(nx ? nx : 1, sizeof *p->chunk);
	p->reduce = calloc(nx ? nx : 1, sizeof *p->reduce);
	p->pre = calloc((size_t)sh->nrounds + 1, sizeof *p->pre);
	b->head = malloc(sizeof *b->head * (size_t)sh->n);
	b->next = calloc(nx ? nx : 1, sizeof *b->next);
	if (!p->msgs || !p->round_first || !p->chunk || !p->reduce || !p->pre || !b->head || !b->next)
		goto oom;
	for (int i = 0; i < sh->n; i++)
		b->head[i] = -1;
	for (int k = 0; sh->pre && k < sh->nrounds; k++) {
		p->pre[k] = sh->pre[k] != 0;
		p->npre += p->pre[k];
	}
	b->cap = nx;
	b->round = -1;
	return p;
oom:
	link_errorf(err, "out of memory preparing schedule %s", name);
	cost_plan_free(p);
	return NULL;
}

/* Group the gathered round's transfers into messages, one per ordered
 * pair in order of first appearance (a per-source chain of the round's
 * messages keeps the lookup short even for BCube's B-1 peers), and set
 * every message's share.  Rounds skipped since the last one are empty. */
static void flush_round(cost_plan *p)
{
	struct cost_plan_build *b = p->build;
	const int k = b->round;
	if (k < 0)
		return;
	int nm = p->nmsgs;
	for (int r = b->next_round; r <= k; r++)
		p->round_first[r] = nm;
	b->next_round = k + 1;
	const int start = nm;
	int *head = b->head, *next = b->next;
	for (size_t i = 0; i < b->ncur; i++) {
		const coll_xfer *t = &b->cur[i];
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
		b->msg_of[i] = m;
		p->msgs[m].count++;
	}
	/* share: how many messages of this round the source sends and the
	 * destination receives, counted in head[] now that the chains are
	 * done with it */
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
	size_t off = b->placed;
	for (int m = start; m < nm; m++) {
		p->msgs[m].first = (int32_t)off;
		off += (size_t)p->msgs[m].count;
		p->msgs[m].count = 0;
	}
	for (size_t i = 0; i < b->ncur; i++) {
		cost_pmsg *m = &p->msgs[b->msg_of[i]];
		int e = m->first + m->count++;
		p->chunk[e] = b->cur[i].chunk;
		p->reduce[e] = b->cur[i].reduce != 0;
	}
	b->placed = off;
	b->ncur = 0;
	p->nmsgs = nm;
}

int cost_plan_add(cost_plan *p, const coll_xfer *x, size_t nx, link_error *err)
{
	struct cost_plan_build *b = p->build;
	if (!b)
		return link_errorf(err, "schedule %s: a transfer after the plan was done", p->name);
	for (size_t i = 0; i < nx; i++) {
		const coll_xfer *t = &x[i];
		if (t->round != b->round) {
			if (t->round < b->round || t->round >= p->nrounds)
				return link_errorf(err, "schedule %s: a transfer of round %d %s", p->name, t->round,
						   t->round < b->round ? "after a later round's" : "past the last round");
			flush_round(p);
			b->round = t->round;
		}
		if (t->src < 0 || t->src >= p->n || t->dst < 0 || t->dst >= p->n || t->src == t->dst || t->chunk < 0 ||
		    t->chunk >= p->chunks)
			return link_errorf(err, "schedule %s: round %d: bad transfer %d -> %d of chunk %d (n %d, chunks %d)",
					   p->name, t->round, t->src, t->dst, t->chunk, p->n, p->chunks);
		if (b->placed + b->ncur >= b->cap)
			return link_errorf(err, "schedule %s: more than the %zu transfers announced", p->name, b->cap);
		if (b->ncur == b->capcur) {
			size_t nc = b->capcur ? 2 * b->capcur : 256;
			coll_xfer *ncur = realloc(b->cur, sizeof *ncur * nc);
			if (ncur)
				b->cur = ncur;
			int *nmo = ncur ? realloc(b->msg_of, sizeof *nmo * nc) : NULL;
			if (!nmo)
				return link_errorf(err, "out of memory preparing schedule %s", p->name);
			b->msg_of = nmo;
			b->capcur = nc;
		}
		b->cur[b->ncur++] = *t;
	}
	return 0;
}

int cost_plan_done(cost_plan *p, link_error *err)
{
	(void)err;
	struct cost_plan_build *b = p->build;
	if (!b)
		return 0;
	flush_round(p);
	for (int r = b->next_round; r <= p->nrounds; r++)
		p->round_first[r] = p->nmsgs;
	build_free(b);
	p->build = NULL;
	return 0;
}

int cost_check(const cost_plan *p, const cost_params *q, link_error *err)
{
	if (p->build)
		return link_errorf(err, "schedule %s: its plan is still being built (cost_plan_done)", p->name);
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

double cost_busbw_factor(int kind, int n)
{
	return coll_kind_busbw(coll_kind_get(kind), n);
}

void cost_finish(const cost_plan *p, const cost_params *q, cost_result *r)
{
	r->algbw = r->time > 0 ? q->bytes / r->time : 0;
	r->busbw = r->algbw * cost_busbw_factor(p->kind, p->n);
}

int cost_check_result(const cost_result *r, link_error *err)
{
	if (!isfinite(r->time) || !isfinite(r->total) || !(r->time >= 0))
		return link_errorf(err, "the predicted time is not a finite number of seconds (%g s): the "
				   "latencies, bandwidths or delays are too large", r->total);
	return 0;
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
