/*
 * reorder.c - the rank reordering search (see reorder.h): round patterns,
 * incremental evaluation, simulated annealing, branch and bound; and
 * orders spread over the range of costs, to test a model against a
 * network (reorder_spread).
 *
 * Pipeline position: called with a cost plan and a physical link model by
 * `collc reorder`, `collc build` (reorder by cost) and libcollrt's reorder
 * at init; it calls nothing but the link model's inline lookups, so the
 * runtime can link it without the compiler.
 *
 * The incremental state, per pattern p (a set of messages m = (src, dst,
 * k chunks of cb bytes, share) counted mult_p times):
 *   v_m   = alpha(P s, P d) + k cb beta'(P s, P d)      (P = perm)
 *   pair  = max over m of v_m, kept as (max, count at max)
 *   per segment s: L_s = the chunks crossing it (an integer, so sums stay
 *   exact under any number of moves) and A_s = the largest alpha among
 *   them, again (max, count)
 *   T_p   = max(pair, max over s of A_s + L_s cb / C_s)
 *   H_p   = sum of v_m (recomputed from scratch now and then: it is a sum
 *           of doubles, and it only breaks ties)
 * which is exactly cost.c's round time, message by message:
 * max_m [alpha_m + max(x_m, max_{s crossed} L_s/C_s)] = max(max_m (alpha_m
 * + x_m), max_s (A_s + L_s/C_s)).  A maximum whose count drops to zero is
 * marked dirty and recomputed from its pattern's messages when next read,
 * unless a value at or above it is added first (mx_add).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reorder.h"

#define TIE 1e-9   /* relative: two objectives this close are equal */

typedef struct {
	double max;
	int cnt;
	int dirty;
} mxc;

/* A maximum with its count.  When the count drops to zero the maximum is
 * unknown (dirty) but max still bounds every value left from above, so a
 * value added at or above it is the new maximum, alone: a move removes
 * and re-adds the same values, and on uniform costs that keeps most
 * maxima clean without a rescan. */
static void mx_add(mxc *x, double v)
{
	if (x->dirty) {
		if (v >= x->max)
			x->max = v, x->cnt = 1, x->dirty = 0;
		return;
	}
	if (x->cnt == 0 || v > x->max)
		x->max = v, x->cnt = 1;
	else if (v == x->max)
		x->cnt++;
}

static void mx_del(mxc *x, double v)
{
	if (x->dirty)
		return;
	if (v == x->max && --x->cnt == 0)
		x->dirty = 1;
}

typedef struct {
	int32_t src, dst, k, share;   /* schedule ranks, chunks, cost_pmsg.share */
	int32_t pat;
} rs_msg;

typedef struct {
	int first, count;   /* its messages in rs.msgs */
	double mult;        /* rounds with this pattern */
	double gmin;        /* the largest, over its messages, of the cheapest cost a message of that size can have */
} rs_pat;

/* A message as msg_apply last added it: what finding a lost maximum
 * again reads, one record per message so a rescan walks one array. */
typedef struct {
	double val, alpha;      /* v_m, alpha */
	uint64_t bits;          /* the segments it crossed (with xmask) */
} rs_cur;

typedef struct {
	const link_model *lm;
	int n, nseg, npat, nmsg;
	double cb;              /* bytes per chunk */
	rs_msg *msgs;
	rs_pat *pats;
	int32_t *ioff, *inc;    /* per schedule rank: its messages (both ends), CSR */
	uint64_t *xmask;        /* per physical pair: the segments it crosses (bit s), when they fit */
	/* state */
	int32_t *perm;
	unsigned char *placed;  /* branch and bound: schedule rank placed (1 everywhere in annealing) */
	mxc *pair;              /* per pattern */
	double *hsum;           /* per pattern */
	double *tp;             /* per pattern: T_p */
	double *sp;             /* per pattern: S_p, the seconds its segments are busy */
	int64_t *load;          /* per pattern x segment: chunks */
	mxc *amax;              /* per pattern x segment */
	double T, H, S;         /* sums over patterns, mult included */
	rs_cur *cur;            /* per message: as last added */
	int32_t *stamp;         /* per message: last touch */
	int32_t epoch;
	int32_t *touched;       /* patterns touched by the current move */
	int ntouched;
	unsigned char *ptouch;
} rs;

static void rs_free(rs *s)
{
	free(s->msgs), free(s->pats), free(s->ioff), free(s->inc), free(s->perm), free(s->placed);
	free(s->pair), free(s->hsum), free(s->tp), free(s->sp), free(s->load), free(s->amax);
	free(s->stamp), free(s->touched), free(s->ptouch), free(s->xmask);
	free(s->cur);
	memset(s, 0, sizeof *s);
}

/* v_m of message m between physical ranks a and b, its latency into
 * *alpha. */
static inline double msg_val(const rs *s, const rs_msg *m, int a, int b, double *alpha)
{
	const link_model *lm = s->lm;
	double beta = link_beta(lm, a, b);
	if (lm->rank_bw > 0 && m->share / lm->rank_bw > beta)
		beta = m->share / lm->rank_bw;
	*alpha = link_alpha(lm, a, b);
	return *alpha + m->k * s->cb * beta;
}

/* --- patterns ----------------------------------------------------------------- */

typedef struct {
	int32_t src, dst, k, share;
} key4;

static int cmp_key(const void *x, const void *y)
{
	const key4 *a = x, *b = y;
	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	if (a->dst != b->dst)
		return a->dst < b->dst ? -1 : 1;
	if (a->k != b->k)
		return a->k < b->k ? -1 : 1;
	return (a->share > b->share) - (a->share < b->share);
}

/* Group p's rounds into patterns; fills s->msgs, s->pats, incidence. */
static int build_patterns(rs *s, const cost_plan *p, link_error *err)
{
	int R = p->nrounds, n = p->n;
	key4 *keys = malloc(sizeof *keys * ((size_t)p->nmsgs + 1));
	int *roff = malloc(sizeof *roff * ((size_t)R + 1));
	uint64_t *hash = malloc(sizeof *hash * ((size_t)R + 1));
	int *patof = malloc(sizeof *patof * ((size_t)R + 1));
	s->pats = calloc((size_t)R + 1, sizeof *s->pats);
	s->msgs = malloc(sizeof *s->msgs * ((size_t)p->nmsgs + 1));
	s->ioff = calloc((size_t)n + 2, sizeof *s->ioff);
	int rc = -1;
	if (!keys || !roff || !hash || !patof || !s->pats || !s->msgs || !s->ioff) {
		link_errorf(err, "out of memory");
		goto out;
	}
	/* each round's messages as sorted keys, and a hash of them */
	for (int k = 0; k < R; k++) {
		int a = p->round_first[k], b = p->round_first[k + 1];
		roff[k] = a;
		for (int i = a; i < b; i++)
			keys[i] = (key4){ p->msgs[i].src, p->msgs[i].dst, p->msgs[i].count, p->msgs[i].share };
		qsort(keys + a, (size_t)(b - a), sizeof *keys, cmp_key);
		uint64_t h = 1469598103934665603ULL ^ (uint64_t)(b - a);
		for (int i = a; i < b; i++) {
			h = (h ^ (uint64_t)(uint32_t)keys[i].src) * 1099511628211ULL;
			h = (h ^ (uint64_t)(uint32_t)keys[i].dst) * 1099511628211ULL;
			h = (h ^ (uint64_t)(uint32_t)keys[i].k) * 1099511628211ULL;
			h = (h ^ (uint64_t)(uint32_t)keys[i].share) * 1099511628211ULL;
		}
		hash[k] = h;
	}
	roff[R] = p->nmsgs;
	/* a round joins the first earlier pattern with the same messages
	 * (linear over patterns: schedules have few distinct ones) */
	int np = 0, nm = 0;
	for (int k = 0; k < R; k++) {
		int a = roff[k], len = roff[k + 1] - a, q = -1;
		if (len == 0) {
			patof[k] = -1;
			continue;
		}
		for (int j = 0; j < np && q < 0; j++) {
			int r0 = s->pats[j].first;   /* temporarily: its first round */
			if (hash[r0] == hash[k] && roff[r0 + 1] - roff[r0] == len &&
			    memcmp(keys + roff[r0], keys + a, sizeof *keys * (size_t)len) == 0)
				q = j;
		}
		if (q < 0) {
			q = np++;
			s->pats[q].first = k;
			s->pats[q].count = len;
		}
		s->pats[q].mult += 1;
		patof[k] = q;
	}
	for (int j = 0; j < np; j++) {
		int r0 = s->pats[j].first, a = roff[r0];
		s->pats[j].first = nm;
		for (int i = 0; i < s->pats[j].count; i++)
			s->msgs[nm++] = (rs_msg){ keys[a + i].src, keys[a + i].dst, keys[a + i].k, keys[a + i].share, j };
	}
	s->npat = np;
	s->nmsg = nm;
	/* incidence: every message under both its ranks */
	for (int i = 0; i < nm; i++) {
		s->ioff[s->msgs[i].src + 1]++;
		s->ioff[s->msgs[i].dst + 1]++;
	}
	for (int r = 0; r < n; r++)
		s->ioff[r + 1] += s->ioff[r];
	s->inc = malloc(sizeof *s->inc * (2 * (size_t)nm + 1));
	int *fill = calloc((size_t)n + 1, sizeof *fill);
	if (!s->inc || !fill) {
		free(fill);
		link_errorf(err, "out of memory");
		goto out;
	}
	for (int i = 0; i < nm; i++) {
		s->inc[s->ioff[s->msgs[i].src] + fill[s->msgs[i].src]++] = i;
		s->inc[s->ioff[s->msgs[i].dst] + fill[s->msgs[i].dst]++] = i;
	}
	free(fill);
	rc = 0;
out:
	free(keys), free(roff), free(hash), free(patof);
	return rc;
}

/* The cheapest any message of k chunks (with that share) could cost on
 * any pair: for the branch-and-bound bound. */
static double cheapest(const rs *s, const rs_msg *m)
{
	const link_model *lm = s->lm;
	double best = INFINITY;
	if (lm->kind == LINK_UNIFORM) {
		double beta = lm->beta;
		if (lm->rank_bw > 0 && m->share / lm->rank_bw > beta)
			beta = m->share / lm->rank_bw;
		return lm->alpha + m->k * s->cb * beta;
	}
	for (int a = 0; a < s->n; a++)
		for (int b = 0; b < s->n; b++) {
			if (a == b)
				continue;
			double beta = link_beta(lm, a, b);
			if (lm->rank_bw > 0 && m->share / lm->rank_bw > beta)
				beta = m->share / lm->rank_bw;
			double v = link_alpha(lm, a, b) + m->k * s->cb * beta;
			if (v < best)
				best = v;
		}
	return best;
}

static int rs_init(rs *s, const cost_plan *p, const link_model *lm, double bytes, link_error *err)
{
	memset(s, 0, sizeof *s);
	s->lm = lm;
	s->n = p->n;
	s->nseg = lm->nsegs;
	s->cb = bytes * p->work / p->chunks;
	if (build_patterns(s, p, err))
		return -1;
	size_t P = (size_t)s->npat + 1, PS = (size_t)s->npat * (size_t)s->nseg + 1;
	s->perm = malloc(sizeof *s->perm * ((size_t)s->n + 1));
	s->placed = malloc((size_t)s->n + 1);
	s->pair = calloc(P, sizeof *s->pair);
	s->hsum = calloc(P, sizeof *s->hsum);
	s->tp = calloc(P, sizeof *s->tp);
	s->sp = calloc(P, sizeof *s->sp);
	s->load = calloc(PS, sizeof *s->load);
	s->amax = calloc(PS, sizeof *s->amax);
	s->stamp = calloc((size_t)s->nmsg + 1, sizeof *s->stamp);
	s->cur = calloc((size_t)s->nmsg + 1, sizeof *s->cur);
	s->touched = malloc(sizeof *s->touched * P);
	s->ptouch = calloc(P, 1);
	if (!s->perm || !s->placed || !s->pair || !s->hsum || !s->tp || !s->sp || !s->load || !s->amax ||
	    !s->stamp || !s->cur || !s->touched || !s->ptouch)
		return link_errorf(err, "out of memory");
	/* which segments each physical pair crosses, looked up once: a move
	 * re-costs many messages, each crossing test would walk the groups */
	if (s->nseg > 0 && s->nseg <= 64 && s->n <= 1024) {
		s->xmask = calloc((size_t)s->n * (size_t)s->n, sizeof *s->xmask);
		for (int a = 0; s->xmask && a < s->n; a++)
			for (int b = 0; b < s->n; b++)
				for (int g = 0; g < s->nseg; g++)
					if (link_crosses(lm, &lm->segs[g], a, b))
						s->xmask[(size_t)a * s->n + b] |= 1ULL << g;
		/* NULL (out of memory) only makes it slower */
	}
	/* the bound's floor per pattern: with a matrix, a pass over every pair
	 * per distinct (k, share); schedules have a handful */
	for (int j = 0; j < s->npat; j++) {
		double g = 0, lastk = -1, lastsh = -1, lastv = 0;
		for (int i = s->pats[j].first; i < s->pats[j].first + s->pats[j].count; i++) {
			const rs_msg *m = &s->msgs[i];
			double v = m->k == lastk && m->share == lastsh ? lastv : cheapest(s, m);
			lastk = m->k, lastsh = m->share, lastv = v;
			if (v > g)
				g = v;
		}
		s->pats[j].gmin = g;
	}
	return 0;
}

/* Add or remove k chunks of a message with latency al where one segment
 * meets one pattern (x indexes load and amax). */
static inline void seg_apply(rs *s, size_t x, int k, double al, int sign)
{
	s->load[x] += sign * k;
	if (sign > 0)
		mx_add(&s->amax[x], al);
	else
		mx_del(&s->amax[x], al);
}

/* Add or remove message i's contributions under the current perm. */
static void msg_apply(rs *s, int i, int sign)
{
	const rs_msg *m = &s->msgs[i];
	int j = m->pat, a = s->perm[m->src], b = s->perm[m->dst];
	double al, v = msg_val(s, m, a, b, &al);
	if (sign > 0) {
		mx_add(&s->pair[j], v);
		s->hsum[j] += v;
		s->cur[i].val = v;
	} else {
		mx_del(&s->pair[j], v);
		s->hsum[j] -= v;
	}
	if (s->nseg) {
		if (sign > 0)
			s->cur[i].alpha = al;
		if (s->xmask) {
			uint64_t bits = s->xmask[(size_t)a * s->n + b];
			if (sign > 0)
				s->cur[i].bits = bits;
			/* the crossed segments only, lowest bit first */
			for (; bits; bits &= bits - 1)
				seg_apply(s, (size_t)j * s->nseg + (size_t)__builtin_ctzll(bits), m->k, al, sign);
		} else {
			for (int g = 0; g < s->nseg; g++)
				if (link_crosses(s->lm, &s->lm->segs[g], a, b))
					seg_apply(s, (size_t)j * s->nseg + (size_t)g, m->k, al, sign);
		}
	}
	if (!s->ptouch[j]) {
		s->ptouch[j] = 1;
		s->touched[s->ntouched++] = j;
	}
}

static bool msg_in(const rs *s, const rs_msg *m) { return s->placed[m->src] && s->placed[m->dst]; }

/* T_p from the state, recomputing dirty maxima from the placed messages
 * (their values as msg_apply last added them); also S_p into *sp. */
static double pattern_time(rs *s, int j, double *sp)
{
	const rs_pat *pt = &s->pats[j];
	int lo = pt->first, hi = pt->first + pt->count;
	mxc *pm = &s->pair[j], *am = &s->amax[(size_t)j * s->nseg];
	if (pm->dirty) {
		pm->dirty = 0, pm->cnt = 0;
		for (int i = lo; i < hi; i++)
			if (msg_in(s, &s->msgs[i]))
				mx_add(pm, s->cur[i].val);
	}
	/* the dirty segment maxima in one pass over the messages, where each
	 * message knows the segments it crosses */
	uint64_t redo = 0;
	for (int g = 0; g < s->nseg; g++)
		if (am[g].dirty && s->load[(size_t)j * s->nseg + g] != 0) {
			am[g].dirty = 0, am[g].cnt = 0;
			if (s->xmask)
				redo |= 1ULL << g;
			else
				for (int i = lo; i < hi; i++) {
					const rs_msg *m = &s->msgs[i];
					if (msg_in(s, m) &&
					    link_crosses(s->lm, &s->lm->segs[g], s->perm[m->src], s->perm[m->dst]))
						mx_add(&am[g], s->cur[i].alpha);
				}
		}
	for (int i = lo; redo && i < hi; i++)
		if (msg_in(s, &s->msgs[i]))
			for (uint64_t bits = s->cur[i].bits & redo; bits; bits &= bits - 1)
				mx_add(&am[__builtin_ctzll(bits)], s->cur[i].alpha);
	double t = pm->cnt ? pm->max : 0;
	*sp = 0;
	for (int g = 0; g < s->nseg; g++) {
		size_t x = (size_t)j * s->nseg + g;
		if (s->load[x] == 0)
			continue;
		*sp += s->load[x] * s->cb / s->lm->segs[g].cap;
		double v = am[g].max + s->load[x] * s->cb / s->lm->segs[g].cap;
		if (v > t)
			t = v;
	}
	return t;
}

/* Bring T and H up to date after the messages of touched patterns changed. */
static void settle(rs *s)
{
	for (int x = 0; x < s->ntouched; x++) {
		int j = s->touched[x];
		s->ptouch[j] = 0;
		double sp, t = pattern_time(s, j, &sp);
		s->T += s->pats[j].mult * (t - s->tp[j]);
		s->S += s->pats[j].mult * (sp - s->sp[j]);
		s->tp[j] = t;
		s->sp[j] = sp;
	}
	s->ntouched = 0;
}

/* Everything from scratch for the current perm and placement. */
static void recompute(rs *s)
{
	memset(s->pair, 0, sizeof *s->pair * (size_t)s->npat);
	memset(s->hsum, 0, sizeof *s->hsum * (size_t)s->npat);
	memset(s->tp, 0, sizeof *s->tp * (size_t)s->npat);
	memset(s->sp, 0, sizeof *s->sp * (size_t)s->npat);
	memset(s->load, 0, sizeof *s->load * ((size_t)s->npat * s->nseg));
	memset(s->amax, 0, sizeof *s->amax * ((size_t)s->npat * s->nseg));
	s->T = 0;
	s->ntouched = 0;
	for (int i = 0; i < s->nmsg; i++)
		if (msg_in(s, &s->msgs[i]))
			msg_apply(s, i, 1);
	for (int j = 0; j < s->npat; j++)
		if (!s->ptouch[j]) {
			s->ptouch[j] = 1;
			s->touched[s->ntouched++] = j;
		}
	settle(s);
	s->T = s->H = s->S = 0;
	for (int j = 0; j < s->npat; j++) {
		s->T += s->pats[j].mult * s->tp[j];
		s->H += s->pats[j].mult * s->hsum[j];
		s->S += s->pats[j].mult * s->sp[j];
	}
}

/* An order's score: the objective T, then the paper's sum of hop costs
 * H, then S, the seconds shared segments are busy summed over rounds:
 * with uniform per-pair costs (a probed rack network, where every pair
 * alone runs at the host rate) T moves only when the busiest trunk does
 * and H never, while S counts every message that crosses a trunk, so it
 * ranks the orders T and H cannot and gives annealing a slope there. */
typedef struct {
	double t, h, s;
} score;

/* Is a better than b (lexicographic, each within TIE)? */
static bool better(score a, score b)
{
	if (a.t < b.t * (1 - TIE))
		return true;
	if (a.t > b.t * (1 + TIE))
		return false;
	if (a.h < b.h * (1 - TIE))
		return true;
	if (a.h > b.h * (1 + TIE))
		return false;
	return a.s < b.s * (1 - TIE);
}

/* --- moves ---------------------------------------------------------------------- */

/* Remove (sign -1) or add (+1) every message incident to the ranks in
 * pos[0..k), each once (epoch stamps). */
static void touch_ranks(rs *s, const int *pos, int k, int sign)
{
	s->epoch++;
	for (int x = 0; x < k; x++)
		for (int y = s->ioff[pos[x]]; y < s->ioff[pos[x] + 1]; y++) {
			int i = s->inc[y];
			if (s->stamp[i] == s->epoch || !msg_in(s, &s->msgs[i]))
				continue;
			s->stamp[i] = s->epoch;
			msg_apply(s, i, sign);
		}
}

static void do_swap(rs *s, int a, int b)
{
	int pos[2] = { a, b };
	touch_ranks(s, pos, 2, -1);
	int32_t t = s->perm[a];
	s->perm[a] = s->perm[b];
	s->perm[b] = t;
	touch_ranks(s, pos, 2, 1);
	settle(s);
}

static void do_reverse(rs *s, int a, int b, int *pos)
{
	int k = 0;
	for (int x = a; x <= b; x++)
		pos[k++] = x;
	touch_ranks(s, pos, k, -1);
	for (int x = a, y = b; x < y; x++, y--) {
		int32_t t = s->perm[x];
		s->perm[x] = s->perm[y];
		s->perm[y] = t;
	}
	touch_ranks(s, pos, k, 1);
	settle(s);
}

/* H as the sum of the per-pattern sums (kept up to date by msg_apply;
 * T and S are kept by settle). */
static double h_now(const rs *s)
{
	double h = 0;
	for (int j = 0; j < s->npat; j++)
		h += s->pats[j].mult * s->hsum[j];
	return h;
}

static score score_now(const rs *s) { return (score){ s->T, h_now(s), s->S }; }

static uint64_t rng_next(uint64_t *x)
{
	/* splitmix64: small, fast, and the same sequence on every machine */
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double rng_unit(uint64_t *x) { return (double)(rng_next(x) >> 11) * (1.0 / 9007199254740992.0); }

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* --- annealing ------------------------------------------------------------------ */

/* The annealing energy: T first; H and S, scaled far down, give the
 * search a slope where T is flat (see score). */
typedef struct {
	double t0, h0, s0;
} scale;

static double energy(const rs *s, const scale *z)
{
	return s->T / z->t0 + 1e-3 * (h_now(s) / z->h0 + s->S / z->s0);
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
		int a = (int)(rng_next(&rng) % (uint64_t)n), b = (int)(rng_next(&rng) % (uint64_t)n);
		if (a == b)
			continue;
		do_swap(s, a, b);
		double d = energy(s, &z) - e;
		do_swap(s, a, b);
		if (d > 0)
			rise += d, nrise++;
	}
	double temp0 = nrise ? rise / nrise / 0.69314718 : 1e-3, temp_end = temp0 * 1e-4;
	double cool = pow(temp_end / temp0, 1.0 / (double)(moves > 1 ? moves : 1)), temp = temp0;
	long accepted = 0, m;
	int span = n - 1 < MAX_REVERSE ? n - 1 : MAX_REVERSE;
	for (m = 0; m < moves && n > 2; m++, temp *= cool) {
		if ((m & 1023) == 0) {
			if (deadline > 0 && now_s() > deadline) {
				r->stopped = true;
				break;
			}
			if ((m & 65535) == 0) {   /* wash out the drift of the sums */
				recompute(s);
				e = energy(s, &z);
			}
		}
		int a = (int)(rng_next(&rng) % (uint64_t)n), b;
		bool rev = (rng_next(&rng) & 1) && n > 3;
		if (rev) {
			b = a + 1 + (int)(rng_next(&rng) % (uint64_t)span);
			if (b >= n) {   /* keep the span: reverse the stretch that ends at n-1 */
				a -= b - (n - 1);
				b = n - 1;
				if (a < 0)
					a = 0;
			}
		} else {
			b = (int)(rng_next(&rng) % (uint64_t)n);
			if (a == b)
				continue;
			if (a > b) {
				int t = a;
				a = b;
				b = t;
			}
		}
		if (rev)
			do_reverse(s, a, b, pos);
		else
			do_swap(s, a, b);
		double e2 = energy(s, &z), d = e2 - e;
		if (d <= 0 || rng_unit(&rng) < exp(-d / temp)) {
			e = e2;
			accepted++;
			score sc = score_now(s);
			if (better(sc, *bs)) {
				*bs = sc;
				memcpy(best, s->perm, sizeof *best * (size_t)n);
			}
		} else if (rev) {
			do_reverse(s, a, b, pos);
		} else {
			do_swap(s, a, b);
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
	double hfloor;           /* H of every message at its cheapest */
	double *mfloor;          /* per message: its cheapest cost */
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
	if ((++x->nodes & 4095) == 0 && x->deadline > 0 && now_s() > x->deadline) {
		x->stopped = true;
		return;
	}
	if (r == n) {
		score sc = score_now(s);
		if (better(sc, x->bs)) {
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
			if (s->stamp[i] == s->epoch || !msg_in(s, &s->msgs[i]))
				continue;
			s->stamp[i] = s->epoch;
			msg_apply(s, i, 1);
			hf += s->pats[s->msgs[i].pat].mult * x->mfloor[i];
		}
		settle(s);
		x->hplaced_floor += hf;
		/* bounds: per pattern the larger of what is placed and the floor
		 * (placing more only adds messages and segment load, so every
		 * term can only grow); H likewise; S of what is placed */
		score lb = { 0, h_now(s) + (x->hfloor - x->hplaced_floor), s->S };
		for (int j = 0; j < s->npat; j++)
			lb.t += s->pats[j].mult * (s->tp[j] > s->pats[j].gmin ? s->tp[j] : s->pats[j].gmin);
		/* prune unless something below could still be better:
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
		touch_ranks(s, pos, 1, -1);
		s->placed[r] = 0;
		settle(s);
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
		x.mfloor[i] = cheapest(s, &s->msgs[i]);
		x.hfloor += s->pats[s->msgs[i].pat].mult * x.mfloor[i];
	}
	memset(s->placed, 0, (size_t)n);
	recompute(s);
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
 * - nearest neighbour: from physical rank 0, always on to the cheapest
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
		int nx = -1;
		double best = INFINITY;
		for (int j = 0; j < s->n; j++) {
			if (seen[j])
				continue;
			double c = link_time(lm, cur, j, b) + link_time(lm, j, cur, b);
			if (c < best)
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

static int check_args(const cost_plan *p, const link_model *lm, double bytes, link_error *err)
{
	if (!(bytes > 0) || !isfinite(bytes))
		return link_errorf(err, "buffer size must be positive");
	if (lm->kind == LINK_MATRIX && lm->n != p->n)
		return link_errorf(err, "the link model has %d ranks but the schedule has %d", lm->n, p->n);
	return link_check_n(lm, p->n, err);
}

int reorder_eval(const cost_plan *p, const link_model *lm, double bytes, const int32_t *perm, double *t,
		 double *h, link_error *err)
{
	if (check_args(p, lm, bytes, err) || (perm && cost_check_perm(perm, p->n, err)))
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
	recompute(&s);
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
	if (check_args(p, lm, o->bytes, err) || (o->start && cost_check_perm(o->start, p->n, err)))
		return -1;
	double t_start = now_s(), deadline = o->time_limit > 0 ? t_start + o->time_limit : 0;
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
	recompute(&s);
	score id = score_now(&s);
	r->t_identity = id.t;
	r->h_identity = id.h;
	r->s_identity = id.s;
	if (o->start) {
		memcpy(s.perm, o->start, sizeof *s.perm * (size_t)n);
		recompute(&s);
	}
	score bs = score_now(&s);
	memcpy(best, s.perm, sizeof *best * (size_t)n);
	if (better(id, bs)) {
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
	 * even when the identity scores better, as --perm START promises), or
	 * the identity */
	memcpy(cand, s.perm, sizeof *cand * (size_t)n);
	cs[0] = score_now(&s), cname[0] = r->start, ncand = 1;
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
			recompute(&s);
			score sc = score_now(&s);
			int same = 0;   /* the same order as a start already kept (one group, one rack...) */
			for (int c = 0; c < ncand && !same; c++)
				same = memcmp(cand + (size_t)c * (size_t)(n + 1), s.perm, sizeof *s.perm * (size_t)n) == 0;
			if (same)
				continue;
			int at = ncand++;   /* insertion, best first */
			while (at > 0 && better(sc, cs[at - 1])) {
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
		recompute(&s);
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
	if (rc == 0) {
		memcpy(r->perm, best, sizeof *r->perm * (size_t)n);
		/* the final numbers from scratch, not from the running sums */
		for (int i = 0; i < n; i++)
			s.perm[i] = best[i], s.placed[i] = 1;
		recompute(&s);
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
	r->seconds = now_s() - t_start;
	rs_free(&s);
	free(best);
	free(pos);
	return rc;
}

/* --- orders spread over the range of costs ------------------------------------ */

/* A walk's state: its order cur and that order's cost.  With the
 * objective T (fn NULL) s->perm is cur and a swap re-costs only the
 * messages of the two ranks it moves (do_swap), as annealing does; a
 * caller's cost is called on the whole order. */
typedef struct {
	rs *s;
	reorder_cost_fn fn;      /* NULL: the objective T */
	void *ctx;
	int failed;              /* fn returned a negative cost (an error); 2: out of memory */
	int32_t *cur;
	int n;
} spread_ctx;

static double sw_fn(spread_ctx *c)
{
	double t = c->fn(c->ctx, c->cur);
	if (!(t >= 0))
		c->failed = 1;
	return t;
}

/* The walk goes to perm: its cost, from scratch (a caller's cost is
 * taken as known when known >= 0). */
static double sw_start(spread_ctx *c, const int32_t *perm, double known)
{
	memcpy(c->cur, perm, sizeof *perm * (size_t)c->n);
	if (c->fn)
		return known >= 0 ? known : sw_fn(c);
	memcpy(c->s->perm, perm, sizeof *perm * (size_t)c->n);
	recompute(c->s);
	return c->s->T;
}

/* Swap positions a and b of the walk's order; the cost only when asked
 * for (taking a swap back needs none). */
static double sw_swap(spread_ctx *c, int a, int b, int cost)
{
	int32_t x = c->cur[a];
	c->cur[a] = c->cur[b];
	c->cur[b] = x;
	if (!c->fn) {
		do_swap(c->s, a, b);
		return c->s->T;
	}
	return cost ? sw_fn(c) : 0;
}

/* How far cost t is from goal (goal = INFINITY: the higher the nearer). */
static double spread_dist(double t, double goal) { return isinf(goal) ? -t : fabs(t - goal); }

static bool sw_taken(const int32_t *o, int n, const int32_t *taken, int ntaken)
{
	for (int i = 0; i < ntaken; i++)
		if (memcmp(taken + (size_t)i * (size_t)n, o, sizeof *o * (size_t)n) == 0)
			return true;
	return false;
}

/* Swap moves from perm toward an order whose cost is nearest goal: a
 * random move is kept when it brings the cost no farther (equal ones
 * drift over the plateaus that segments' maxima make) and, one time in
 * 20, when it does (out of a local extreme).  Random moves alone land
 * badly where few orders lie near goal (just above the best order: most
 * swaps of a good order cost far more), so at its start, and whenever
 * the nearest order met has not changed for 4n moves, the walk takes the
 * best of all n(n-1)/2 swaps of its start or of that order, again while
 * that gets nearer, then walks on at random (a scan counts as that many
 * moves, and is left out where it would take more than a quarter of
 * them: n > 316 on the objective T).  perm ends as the
 * nearest order met that is none of the ntaken orders in taken
 * (unchanged if every one met was), *t as its cost; stops when within
 * tol of goal or after moves moves. */
static void spread_walk(spread_ctx *c, int32_t *perm, double *t, double goal, double tol, long moves,
			uint64_t *rng, const int32_t *taken, int ntaken)
{
	int n = c->n;
	double tc = sw_start(c, perm, *t), d = spread_dist(tc, goal), bd = INFINITY;
	long pairs = (long)n * (n - 1) / 2, since = 4L * n;
	bool scanned = false;
	for (long m = 0; m < moves && bd > tol && n > 1 && !c->failed; m++, since++) {
		if (since >= 4L * n && !scanned && pairs * 4 <= moves) {
			/* at the start or stalled: the best swaps from the
			 * start or the nearest order */
			scanned = true;
			if (isfinite(bd))
				tc = sw_start(c, perm, *t);
			for (bool better = true; better && bd > tol && m < moves && !c->failed;) {
				int ba = -1, bb = -1;
				double bdd = bd, bt = tc;
				for (int a = 0; a < n - 1 && !c->failed; a++)
					for (int b = a + 1; b < n && !c->failed; b++, m++) {
						double t2 = sw_swap(c, a, b, 1), d2 = spread_dist(t2, goal);
						if (d2 < bdd && !sw_taken(c->cur, n, taken, ntaken))
							bdd = d2, bt = t2, ba = a, bb = b;
						sw_swap(c, a, b, 0);
					}
				if ((better = ba >= 0)) {
					sw_swap(c, ba, bb, 0);
					tc = *t = bt;
					bd = bdd;
					memcpy(perm, c->cur, sizeof *perm * (size_t)n);
				}
			}
			d = spread_dist(tc, goal);
			since = 0;
			continue;
		}
		int a = (int)(rng_next(rng) % (uint64_t)n), b = (int)(rng_next(rng) % (uint64_t)n);
		if (a == b)
			continue;
		double t2 = sw_swap(c, a, b, 1), d2 = spread_dist(t2, goal);
		if (d2 <= d || rng_unit(rng) < 0.05) {
			d = d2, tc = t2;
			if (d < bd && !sw_taken(c->cur, n, taken, ntaken)) {
				bd = d;
				*t = tc;
				since = 0;
				scanned = false;
				memcpy(perm, c->cur, sizeof *perm * (size_t)n);
			}
		} else {
			sw_swap(c, a, b, 0);
		}
	}
	/* the objective moved by differences on every swap: report the
	 * order's own, from scratch */
	if (!c->fn && !c->failed && isfinite(bd))
		*t = sw_start(c, perm, -1);
}

int reorder_spread(const cost_plan *p, const link_model *lm, double bytes, const int32_t *best, int k,
		   uint64_t seed, reorder_cost_fn fn, void *ctx, int32_t *orders, double *t, link_error *err)
{
	if (check_args(p, lm, bytes, err) || (best && cost_check_perm(best, p->n, err)))
		return -1;
	if (k < 1)
		return link_errorf(err, "the number of spread orders must be at least 1");
	int n = p->n;
	rs s;
	if (rs_init(&s, p, lm, bytes, err)) {
		rs_free(&s);
		return -1;
	}
	int32_t *top = malloc(sizeof *top * ((size_t)n + 1)), *cur = malloc(sizeof *cur * ((size_t)n + 1));
	int32_t *w = malloc(sizeof *w * ((size_t)n + 1));
	if (!top || !cur || !w) {
		rs_free(&s), free(top), free(cur), free(w);
		return link_errorf(err, "out of memory");
	}
	for (int i = 0; i < n; i++)
		s.placed[i] = 1;
	spread_ctx c = { &s, fn, ctx, 0, cur, n };
	uint64_t rng = seed ^ 0x636f6c6c2d737072ULL;   /* "coll-spr" */
	/* each walk's moves: enough to cross the range at small n; a caller's
	 * cost (a simulation) costs far more than T, so it gets fewer */
	long moves = fn ? (long)n * n * 2 : (long)n * n * 50;
	moves = fn ? (moves < 300 ? 300 : moves > 2000 ? 2000 : moves)
		   : (moves < 5000 ? 5000 : moves > 200000 ? 200000 : moves);
	/* the top of the range: the highest cost of walks uphill from 4
	 * random orders (the search keeps only its best: it has no top) */
	double t_top = -1;
	for (int r = 0; r < 4 && !c.failed; r++) {
		for (int i = 0; i < n; i++)
			w[i] = i;
		for (int i = n - 1; i > 0; i--) {
			int j = (int)(rng_next(&rng) % (uint64_t)(i + 1));
			int32_t x = w[i];
			w[i] = w[j];
			w[j] = x;
		}
		double tw = sw_start(&c, w, -1);
		spread_walk(&c, w, &tw, INFINITY, -INFINITY, moves, &rng, NULL, 0);
		if (tw > t_top) {
			t_top = tw;
			memcpy(top, w, sizeof *top * (size_t)n);
		}
	}
	/* the bottom: the given best order */
	for (int i = 0; i < n; i++)
		w[i] = best ? best[i] : i;
	double t_low = sw_start(&c, w, -1);
	if (t_top < t_low) {   /* nothing above best was found */
		t_top = t_low;
		memcpy(top, w, sizeof *top * (size_t)n);
	}
	/* order i walks from order i-1 (the first from best) to its point of
	 * the range, within a hundredth of the range, to an order not taken
	 * yet (where costs have few values, other orders of the same cost:
	 * the network may still tell them apart) */
	double tol = (t_top - t_low) * 0.01, tw = t_low;
	int32_t *taken = malloc(sizeof *taken * ((size_t)k + 2) * (size_t)n);
	int ntaken = 2;
	if (!taken)
		c.failed = 2;
	else
		memcpy(taken, w, sizeof *w * (size_t)n), memcpy(taken + n, top, sizeof *top * (size_t)n);
	for (int i = 1; i <= k && !c.failed; i++) {
		if (i == k) {
			memcpy(w, top, sizeof *w * (size_t)n);
			tw = t_top;
		} else {
			spread_walk(&c, w, &tw, t_low + (t_top - t_low) * i / k, tol, moves, &rng, taken, ntaken);
			memcpy(taken + (size_t)ntaken++ * (size_t)n, w, sizeof *w * (size_t)n);
		}
		memcpy(orders + (size_t)(i - 1) * (size_t)n, w, sizeof *w * (size_t)n);
		t[i - 1] = tw;
	}
	free(taken);
	rs_free(&s);
	free(top), free(cur), free(w);
	if (c.failed == 2)
		return link_errorf(err, "out of memory");
	if (c.failed)
		return link_errorf(err, "the cost of an order could not be computed");
	return 0;
}

int reorder_exhaustive(const cost_plan *p, const link_model *lm, double bytes, reorder_result *r, link_error *err)
{
	memset(r, 0, sizeof *r);
	r->lower_bound = NAN;
	if (check_args(p, lm, bytes, err))
		return -1;
	int n = p->n;
	if (n > 11)
		return link_errorf(err, "an exhaustive search of %d ranks would try %d! orders (at most 11)", n, n);
	double t_start = now_s();
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
	recompute(&s);
	score bs = score_now(&s);
	r->t_identity = bs.t, r->h_identity = bs.h, r->s_identity = bs.s;
	memcpy(r->perm, s.perm, sizeof *r->perm * (size_t)n);
	/* Heap's algorithm: every permutation, each one swap from the last,
	 * so each costs one incremental evaluation */
	long count = 1;
	for (int i = 1; i < n;) {
		if (c[i] < i) {
			if (i % 2 == 0)
				do_swap(&s, 0, i);
			else
				do_swap(&s, c[i], i);
			count++;
			if ((count & 65535) == 0)
				recompute(&s);
			score sc = score_now(&s);
			if (better(sc, bs)) {
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
	for (int i = 0; i < n; i++)
		s.perm[i] = r->perm[i];
	recompute(&s);
	r->n = n;
	r->t_best = s.T, r->h_best = s.H, r->s_best = s.S;
	r->lower_bound = s.T;
	r->optimal = true;
	r->nodes = count;
	r->npatterns = s.npat;
	r->nrounds = p->nrounds;
	r->start = "exhaustive";
	r->seconds = now_s() - t_start;
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
