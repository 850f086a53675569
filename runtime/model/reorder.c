/*
 * reorder.c - the rank reordering search (see reorder.h): simulated
 * annealing from several starting orders, then branch and bound for small
 * n; every order of small n (reorder_exhaustive), the objective of one
 * order (reorder_eval), and orders as the user writes them
 * (reorder_parse_perm).
 *
 * Pipeline position: called with a cost plan and a physical link model by
 * `collc reorder`, `collc build` (reorder by cost) and libcollrt's reorder
 * at init; it moves through the incremental state of reorder_state.c and
 * calls nothing but the link model's inline lookups, so the runtime links
 * it without the compiler.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reorder_int.h"

/* The annealing energy: T first; H and S, scaled far down, give the
 * search a slope where T is flat (see score). */
typedef struct {
	double t0, h0, s0;
} scale;

static double energy(const rs *s, const scale *z)
{
	return s->T / z->t0 + 1e-3 * (rs_h(s) / z->h0 + s->S / z->s0);
}

/* Reversals span at most this many ranks: each costs the messages of every
 * rank it moves, and short ones already straighten a ring locally while
 * swaps move ranks across it. */
#define MAX_REVERSE 12

static void anneal(rs *s, uint64_t seed, long moves, double deadline, reorder_result *r, int32_t *best,
		   score *bs, int *pos)
{
	int n = s->n;
	uint64_t rng = seed ^ 0x636f6c6c2d726f21ULL;   /* "coll-ro!" */
	scale z = { s->T > 0 ? s->T : 1, s->H > 0 ? s->H : 1, s->S > 0 ? s->S : 1 };
	double e = energy(s, &z);
	/* the starting temperature: the mean energy rise of some random
	 * moves, so that about half of the uphill ones are taken at first */
	double rise = 0;
	int nrise = 0;
	for (int x = 0; x < 64 && n > 2; x++) {
		int a = (int)(rs_rng_next(&rng) % (uint64_t)n), b = (int)(rs_rng_next(&rng) % (uint64_t)n);
		if (a == b)
			continue;
		rs_swap(s, a, b);
		double d = energy(s, &z) - e;
		rs_swap(s, a, b);
		if (d > 0)
			rise += d, nrise++;
	}
	double temp0 = nrise ? rise / nrise / 0.69314718 : 1e-3, temp_end = temp0 * 1e-4;
	double cool = pow(temp_end / temp0, 1.0 / (double)(moves > 1 ? moves : 1)), temp = temp0;
	long accepted = 0, m;
	int span = n - 1 < MAX_REVERSE ? n - 1 : MAX_REVERSE;
	for (m = 0; m < moves && n > 2; m++, temp *= cool) {
		if ((m & 1023) == 0) {
			if (deadline > 0 && rs_now() > deadline) {
				r->stopped = true;
				break;
			}
			if ((m & 65535) == 0) {   /* wash out the drift of the sums */
				rs_recompute(s);
				e = energy(s, &z);
			}
		}
		int a = (int)(rs_rng_next(&rng) % (uint64_t)n), b;
		bool rev = (rs_rng_next(&rng) & 1) && n > 3;
		if (rev) {
			b = a + 1 + (int)(rs_rng_next(&rng) % (uint64_t)span);
			if (b >= n) {   /* keep the span: reverse the stretch that ends at n-1 */
				a -= b - (n - 1);
				b = n - 1;
				if (a < 0)
					a = 0;
			}
		} else {
			b = (int)(rs_rng_next(&rng) % (uint64_t)n);
			if (a == b)
				continue;
			if (a > b) {
				int t = a;
				a = b;
				b = t;
			}
		}
		if (rev)
			rs_reverse(s, a, b, pos);
		else
			rs_swap(s, a, b);
		double e2 = energy(s, &z), d = e2 - e;
		if (d <= 0 || rs_rng_unit(&rng) < exp(-d / temp)) {
			e = e2;
			accepted++;
			score sc = rs_score(s);
			if (rs_better(sc, *bs)) {
				*bs = sc;
				memcpy(best, s->perm, sizeof *best * (size_t)n);
			}
		} else if (rev) {
			rs_reverse(s, a, b, pos);
		} else {
			rs_swap(s, a, b);
		}
	}
	r->moves += m;
	r->accepted += accepted;
}

/* --- branch and bound ----------------------------------------------------------- */

typedef struct {
	rs *s;
	score bs;                /* incumbent */
	int32_t *best;
	unsigned char *used;     /* physical ranks taken */
	double hfloor;           /* H of every message at its rs_cheapest */
	double *mfloor;          /* per message: its rs_cheapest cost */
	double hplaced_floor;    /* sum of mfloor over placed messages (x mult) */
	long nodes;
	double deadline;
	bool stopped;
} bb;

static void bb_rec(bb *x, int r)
{
	rs *s = x->s;
	int n = s->n;
	if (x->stopped)
		return;
	if ((++x->nodes & 4095) == 0 && x->deadline > 0 && rs_now() > x->deadline) {
		x->stopped = true;
		return;
	}
	if (r == n) {
		score sc = rs_score(s);
		if (rs_better(sc, x->bs)) {
			x->bs = sc;
			memcpy(x->best, s->perm, sizeof *x->best * (size_t)n);
		}
		return;
	}
	int pos[1] = { r };
	for (int P = 0; P < n && !x->stopped; P++) {
		if (x->used[P])
			continue;
		x->used[P] = 1;
		s->perm[r] = P;
		s->placed[r] = 1;
		/* add the messages this placement completes */
		s->epoch++;
		double hf = 0;
		for (int y = s->ioff[r]; y < s->ioff[r + 1]; y++) {
			int i = s->inc[y];
			if (s->stamp[i] == s->epoch || !rs_msg_in(s, &s->msgs[i]))
				continue;
			s->stamp[i] = s->epoch;
			rs_msg_apply(s, i, 1);
			hf += s->pats[s->msgs[i].pat].mult * x->mfloor[i];
		}
		rs_settle(s);
		x->hplaced_floor += hf;
		/* bounds: per pattern the larger of what is placed and the floor
		 * (placing more only adds messages and segment load, so every
		 * term can only grow); H likewise; S of what is placed */
		score lb = { 0, rs_h(s) + (x->hfloor - x->hplaced_floor), s->S };
		for (int j = 0; j < s->npat; j++)
			lb.t += s->pats[j].mult * (s->tp[j] > s->pats[j].gmin ? s->tp[j] : s->pats[j].gmin);
		/* prune unless something below could still be rs_better:
		 * lexicographically, a bound is beaten only where it is not
		 * worse in an earlier key */
		bool prune = lb.t > x->bs.t * (1 + TIE);
		if (!prune && lb.t >= x->bs.t * (1 - TIE)) {
			prune = lb.h > x->bs.h * (1 + TIE);
			if (!prune && lb.h >= x->bs.h * (1 - TIE))
				prune = lb.s >= x->bs.s * (1 - TIE);
		}
		if (!prune)
			bb_rec(x, r + 1);
		/* take it back */
		rs_touch(s, pos, 1, -1);
		s->placed[r] = 0;
		rs_settle(s);
		x->hplaced_floor -= hf;
		x->used[P] = 0;
	}
}

static int exact(rs *s, double deadline, reorder_result *r, int32_t *best, score *bs, link_error *err)
{
	int n = s->n;
	bb x = { .s = s, .bs = *bs, .best = best, .deadline = deadline };
	x.used = calloc((size_t)n + 1, 1);
	x.mfloor = malloc(sizeof *x.mfloor * ((size_t)s->nmsg + 1));
	if (!x.used || !x.mfloor) {
		free(x.used), free(x.mfloor);
		return link_errorf(err, "out of memory");
	}
	for (int i = 0; i < s->nmsg; i++) {
		x.mfloor[i] = rs_cheapest(s, &s->msgs[i]);
		x.hfloor += s->pats[s->msgs[i].pat].mult * x.mfloor[i];
	}
	memset(s->placed, 0, (size_t)n);
	rs_recompute(s);
	bb_rec(&x, 0);
	for (int i = 0; i < n; i++)
		s->placed[i] = 1;
	r->nodes = x.nodes;
	r->exact_ran = true;
	if (x.stopped)
		r->stopped = true;
	else
		r->optimal = true;
	*bs = x.bs;
	free(x.used), free(x.mfloor);
	return 0;
}

/* --- starting orders ---------------------------------------------------------- */

/* Annealing starts from the best of a few constructions (identity, and
 * three that put physical neighbours at schedule ranks a fixed distance
 * apart, which is what ring, halving/doubling and trees all reward):
 * - by group: physical ranks sorted by the groups they belong to (all of
 *   rack0, then all of rack1, ...; ties by rank), for models with groups;
 * - by group, strided: the same ranks dealt round-robin from the groups
 *   (rack0's first, rack1's first, ..., rack0's second, ...), so members
 *   of a group sit G schedule ranks apart.  Halving/doubling wants either,
 *   depending on which of its distances carry the most bytes, and one is
 *   not reached from the other by swaps and reversals without passing
 *   orders far worse than both (rhd at n = 16 on 4 scrambled racks:
 *   annealing from the contiguous start stuck at 5.03 s in 3 runs of 8
 *   where the strided order is 4.03 s);
 * - nearest neighbour: from physical rank 0, always on to the rs_cheapest
 *   unvisited pair (alpha + bytes beta at the schedule's largest message,
 *   both directions), for per-pair models where groups are only implicit. */
static const link_model *cmp_lm;

static int cmp_groups(const void *x, const void *y)
{
	int a = *(const int32_t *)x, b = *(const int32_t *)y;
	const link_model *lm = cmp_lm;
	for (int g = 0; g < lm->ngroups; g++) {
		bool ia = a < lm->groups[g].len && lm->groups[g].in[a];
		bool ib = b < lm->groups[g].len && lm->groups[g].in[b];
		if (ia != ib)
			return ia ? -1 : 1;
	}
	return (a > b) - (a < b);
}

static void start_by_group(const rs *s, int32_t *perm)
{
	for (int i = 0; i < s->n; i++)
		perm[i] = i;
	cmp_lm = s->lm;
	qsort(perm, (size_t)s->n, sizeof *perm, cmp_groups);
}

static bool same_groups(const link_model *lm, int a, int b)
{
	for (int g = 0; g < lm->ngroups; g++)
		if ((a < lm->groups[g].len && lm->groups[g].in[a]) != (b < lm->groups[g].len && lm->groups[g].in[b]))
			return false;
	return true;
}

/* by group, strided: blocks of equal membership from start_by_group,
 * dealt one at a time from each in turn.  false: out of memory. */
static bool start_strided(const rs *s, int32_t *perm)
{
	int n = s->n, nb = 0;
	int32_t *sorted = malloc(sizeof *sorted * ((size_t)n + 1));
	int *first = malloc(sizeof *first * ((size_t)n + 1)), *at = malloc(sizeof *at * ((size_t)n + 1));
	if (!sorted || !first || !at) {
		free(sorted), free(first), free(at);
		return false;
	}
	start_by_group(s, sorted);
	for (int i = 0; i < n; i++)
		if (i == 0 || !same_groups(s->lm, sorted[i - 1], sorted[i]))
			first[nb++] = i;
	first[nb] = n;
	memcpy(at, first, sizeof *at * (size_t)nb);
	for (int k = 0; k < n;)
		for (int b = 0; b < nb; b++)
			if (at[b] < first[b + 1])
				perm[k++] = sorted[at[b]++];
	free(sorted), free(first), free(at);
	return true;
}

static void start_nearest(const rs *s, int32_t *perm, unsigned char *seen)
{
	const link_model *lm = s->lm;
	double b = 0;
	for (int i = 0; i < s->nmsg; i++)
		if (s->msgs[i].k * s->cb > b)
			b = s->msgs[i].k * s->cb;
	memset(seen, 0, (size_t)s->n);
	int cur = 0;
	for (int i = 0; i < s->n; i++) {
		perm[i] = cur;
		seen[cur] = 1;
		/* the first unvisited rank unless one is cheaper: whatever the
		 * costs (all equal, all huge), the chain goes on to a rank not
		 * yet in it, never to -1 */
		int nx = -1;
		double best = INFINITY;
		for (int j = 0; j < s->n; j++) {
			if (seen[j])
				continue;
			double c = link_time(lm, cur, j, b) + link_time(lm, j, cur, b);
			if (nx < 0 || c < best)
				best = c, nx = j;
		}
		cur = nx;
	}
}

/* --- entry points --------------------------------------------------------------- */

void reorder_result_free(reorder_result *r)
{
	free(r->perm);
	memset(r, 0, sizeof *r);
}

int reorder_eval(const cost_plan *p, const link_model *lm, double bytes, const int32_t *perm, double *t,
		 double *h, link_error *err)
{
	if (rs_check_args(p, lm, bytes, err) || (perm && cost_check_perm(perm, p->n, err)))
		return -1;
	rs s;
	if (rs_init(&s, p, lm, bytes, err)) {
		rs_free(&s);
		return -1;
	}
	for (int i = 0; i < p->n; i++) {
		s.perm[i] = perm ? perm[i] : i;
		s.placed[i] = 1;
	}
	rs_recompute(&s);
	*t = s.T;
	*h = s.H;
	rs_free(&s);
	return 0;
}

int reorder_search(const cost_plan *p, const link_model *lm, const reorder_opts *o, reorder_result *r,
		   link_error *err)
{
	memset(r, 0, sizeof *r);
	r->lower_bound = NAN;
	if (rs_check_args(p, lm, o->bytes, err) || (o->start && cost_check_perm(o->start, p->n, err)))
		return -1;
	double t_start = rs_now(), deadline = o->time_limit > 0 ? t_start + o->time_limit : 0;
	int n = p->n;
	rs s;
	if (rs_init(&s, p, lm, o->bytes, err)) {
		rs_free(&s);
		return -1;
	}
	int32_t *best = malloc(sizeof *best * ((size_t)n + 1));
	int *pos = malloc(sizeof *pos * ((size_t)n + 1));
	r->perm = malloc(sizeof *r->perm * ((size_t)n + 1));
	if (!best || !pos || !r->perm) {
		rs_free(&s), free(best), free(pos);
		return link_errorf(err, "out of memory");
	}
	r->n = n;
	r->npatterns = s.npat;
	r->nrounds = p->nrounds;
	for (int i = 0; i < n; i++)
		s.perm[i] = i, s.placed[i] = 1;
	rs_recompute(&s);
	score id = rs_score(&s);
	r->t_identity = id.t;
	r->h_identity = id.h;
	r->s_identity = id.s;
	if (o->start) {
		memcpy(s.perm, o->start, sizeof *s.perm * (size_t)n);
		rs_recompute(&s);
	}
	score bs = rs_score(&s);
	memcpy(best, s.perm, sizeof *best * (size_t)n);
	if (rs_better(id, bs)) {
		bs = id;
		for (int i = 0; i < n; i++)
			best[i] = i;
	}
	r->start = o->start ? "given" : "identity";
	/* the starts, best first: annealing run k begins at cand[k], and
	 * runs beyond them at the best again (with their own random numbers) */
	enum { NSTART = 4 };
	int32_t *cand = malloc(sizeof *cand * (size_t)NSTART * ((size_t)n + 1));
	score cs[NSTART];
	const char *cname[NSTART];
	int ncand = 0;
	if (!cand) {
		rs_free(&s), free(best), free(pos);
		return link_errorf(err, "out of memory");
	}
	/* the first start is s.perm: the given order (annealing starts there
	 * even when the identity scores rs_better, as --perm START promises), or
	 * the identity */
	memcpy(cand, s.perm, sizeof *cand * (size_t)n);
	cs[0] = rs_score(&s), cname[0] = r->start, ncand = 1;
	if (!o->start) {
		unsigned char *seen = malloc((size_t)n + 1);
		static const char *const names[] = { "by group", "by group, strided", "nearest neighbour" };
		for (int k = 0; k < 3 && seen; k++) {
			if (k < 2 && lm->ngroups == 0)
				continue;
			if (k == 0) {
				start_by_group(&s, s.perm);
			} else if (k == 1) {
				if (!start_strided(&s, s.perm))
					continue;   /* out of memory: one start fewer */
			} else {
				start_nearest(&s, s.perm, seen);
			}
			rs_recompute(&s);
			score sc = rs_score(&s);
			int same = 0;   /* the same order as a start already kept (one group, one rack...) */
			for (int c = 0; c < ncand && !same; c++)
				same = memcmp(cand + (size_t)c * (size_t)(n + 1), s.perm, sizeof *s.perm * (size_t)n) == 0;
			if (same)
				continue;
			int at = ncand++;   /* insertion, best first */
			while (at > 0 && rs_better(sc, cs[at - 1])) {
				memcpy(cand + (size_t)at * (size_t)(n + 1), cand + (size_t)(at - 1) * (size_t)(n + 1),
				       sizeof *cand * (size_t)n);
				cs[at] = cs[at - 1], cname[at] = cname[at - 1];
				at--;
			}
			memcpy(cand + (size_t)at * (size_t)(n + 1), s.perm, sizeof *cand * (size_t)n);
			cs[at] = sc, cname[at] = names[k];
		}
		free(seen);
		bs = cs[0];
		r->start = cname[0];
		memcpy(best, cand, sizeof *best * (size_t)n);
	}
	/* annealing: REORDER_RESTARTS runs (see reorder.h), one per start, best
	 * first, then from the best again with other random numbers; the
	 * default budget of a run grows with n^2 (every pair of ranks proposed
	 * many times) within the search's share of REORDER_MAX_MOVES */
	long total = REORDER_MAX_MOVES, moves = o->moves;
	double dbar = 2.0 * s.nmsg / n;   /* messages a moved rank re-costs */
	if (dbar > 2)
		total = (long)((double)REORDER_MAX_MOVES * 2 / dbar);
	if (o->effort > 0)
		total = (long)((double)total * o->effort);
	if (moves <= 0) {
		moves = (long)n * n * 200;
		long share = total / REORDER_RESTARTS;
		if (moves > share)
			moves = share;
		if (moves < REORDER_MIN_MOVES)
			moves = REORDER_MIN_MOVES;
	}
	for (int k = 0; k < REORDER_RESTARTS && !r->stopped; k++) {
		if (k > 0 && (long)(k + 1) * moves > total)
			break;
		memcpy(s.perm, cand + (size_t)(k < ncand ? k : 0) * (size_t)(n + 1), sizeof *s.perm * (size_t)n);
		rs_recompute(&s);
		/* run 0 keeps the seed's own stream */
		anneal(&s, o->seed + (uint64_t)k * 0x9e3779b97f4a7c15ULL, moves, deadline, r, best, &bs, pos);
		r->runs++;
	}
	free(cand);
	int exact_max = o->exact_max == 0 ? REORDER_EXACT_MAX : o->exact_max;
	int rc = 0;
	if (n <= exact_max && !r->stopped) {
		memcpy(s.perm, best, sizeof *s.perm * (size_t)n);
		rc = exact(&s, deadline, r, best, &bs, err);
	}
	/* what is handed back must be an order, whatever the search did */
	link_error e;
	if (rc == 0 && cost_check_perm(best, n, &e))
		rc = link_errorf(err, "the search produced an invalid order (%s): no order given", e.msg);
	if (rc == 0) {
		memcpy(r->perm, best, sizeof *r->perm * (size_t)n);
		/* the final numbers from scratch, not from the running sums */
		for (int i = 0; i < n; i++)
			s.perm[i] = best[i], s.placed[i] = 1;
		rs_recompute(&s);
		r->t_best = s.T;
		r->h_best = s.H;
		r->s_best = s.S;
		double lb = 0;
		for (int j = 0; j < s.npat; j++)
			lb += s.pats[j].mult * s.pats[j].gmin;
		r->lower_bound = r->optimal ? r->t_best : lb;
		/* an order that meets the bound is optimal in T, proven */
		if (!r->optimal && r->t_best <= lb * (1 + TIE)) {
			r->optimal = true;
			r->bound_met = true;
		}
	}
	r->seconds = rs_now() - t_start;
	rs_free(&s);
	free(best);
	free(pos);
	return rc;
}


int reorder_exhaustive(const cost_plan *p, const link_model *lm, double bytes, reorder_result *r, link_error *err)
{
	memset(r, 0, sizeof *r);
	r->lower_bound = NAN;
	if (rs_check_args(p, lm, bytes, err))
		return -1;
	int n = p->n;
	if (n > 11)
		return link_errorf(err, "an exhaustive search of %d ranks would try %d! orders (at most 11)", n, n);
	double t_start = rs_now();
	rs s;
	if (rs_init(&s, p, lm, bytes, err)) {
		rs_free(&s);
		return -1;
	}
	int *c = calloc((size_t)n + 1, sizeof *c);
	r->perm = malloc(sizeof *r->perm * ((size_t)n + 1));
	if (!c || !r->perm) {
		free(c);
		rs_free(&s);
		return link_errorf(err, "out of memory");
	}
	for (int i = 0; i < n; i++)
		s.perm[i] = i, s.placed[i] = 1;
	rs_recompute(&s);
	score bs = rs_score(&s);
	r->t_identity = bs.t, r->h_identity = bs.h, r->s_identity = bs.s;
	memcpy(r->perm, s.perm, sizeof *r->perm * (size_t)n);
	/* Heap's algorithm: every permutation, each one swap from the last,
	 * so each costs one incremental evaluation */
	long count = 1;
	for (int i = 1; i < n;) {
		if (c[i] < i) {
			if (i % 2 == 0)
				rs_swap(&s, 0, i);
			else
				rs_swap(&s, c[i], i);
			count++;
			if ((count & 65535) == 0)
				rs_recompute(&s);
			score sc = rs_score(&s);
			if (rs_better(sc, bs)) {
				bs = sc;
				memcpy(r->perm, s.perm, sizeof *r->perm * (size_t)n);
			}
			c[i]++;
			i = 1;
		} else {
			c[i] = 0;
			i++;
		}
	}
	link_error e;
	if (cost_check_perm(r->perm, n, &e)) {
		link_errorf(err, "the search produced an invalid order (%s): no order given", e.msg);
		free(c);
		rs_free(&s);
		return -1;
	}
	for (int i = 0; i < n; i++)
		s.perm[i] = r->perm[i];
	rs_recompute(&s);
	r->n = n;
	r->t_best = s.T, r->h_best = s.H, r->s_best = s.S;
	r->lower_bound = s.T;
	r->optimal = true;
	r->nodes = count;
	r->npatterns = s.npat;
	r->nrounds = p->nrounds;
	r->start = "exhaustive";
	r->seconds = rs_now() - t_start;
	free(c);
	rs_free(&s);
	return 0;
}

int reorder_parse_perm(const char *text, int n, int32_t **perm, int *count, link_error *err)
{
	*perm = NULL;
	*count = 0;
	int cap = 16, k = 0;
	int32_t *v = malloc(sizeof *v * (size_t)cap);
	if (!v)
		return link_errorf(err, "out of memory");
	const char *p = text;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == ',' || *p == '\n' || *p == '\r')
			p++;
		if (!*p)
			break;
		char *end;
		long x = strtol(p, &end, 10);
		if (end == p || x < 0 || x > 65535 || (*end && *end != ',' && *end != ' ' && *end != '\t' &&
							*end != '\n' && *end != '\r')) {
			free(v);
			return link_errorf(err, "rank order: '%.20s' is not a rank number", p);
		}
		if (k == cap) {
			cap *= 2;
			int32_t *nv = realloc(v, sizeof *nv * (size_t)cap);
			if (!nv) {
				free(v);
				return link_errorf(err, "out of memory");
			}
			v = nv;
		}
		v[k++] = (int32_t)x;
		p = end;
	}
	if (n > 0 && k != n) {
		free(v);
		return link_errorf(err, "rank order: %d rank%s listed, %d expected", k, k == 1 ? "" : "s", n);
	}
	if (k == 0 || cost_check_perm(v, k, err)) {
		free(v);
		return k == 0 ? link_errorf(err, "rank order: empty") : -1;
	}
	*perm = v;
	*count = k;
	return 0;
}

