/*
 * reorder_state.c - the rank reordering search's incremental state (see
 * reorder.h for the search, reorder_int.h for what is shared): round
 * patterns, and the objective of an order kept up to date move by move,
 * so that a move re-costs only the messages of the ranks it moves.
 *
 * Pipeline position: under reorder.c (annealing, branch and bound) and
 * reorder_spread.c; it reads a cost plan and a link model's inline
 * lookups, nothing else.
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
 * which is exactly rounds.c's round time, message by message:
 * max_m [alpha_m + max(x_m, max_{s crossed} L_s/C_s)] = max(max_m (alpha_m
 * + x_m), max_s (A_s + L_s/C_s)).  A maximum whose count drops to zero is
 * marked dirty and recomputed from its pattern's messages when next read,
 * unless a value at or above it is added first (mx_add).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reorder_int.h"

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





void rs_free(rs *s)
{
	free(s->msgs), free(s->pats), free(s->ioff), free(s->inc), free(s->perm), free(s->placed);
	free(s->pair), free(s->hsum), free(s->tp), free(s->sp), free(s->load), free(s->amax);
	free(s->stamp), free(s->touched), free(s->ptouch), free(s->xmask);
	free(s->cur);
	memset(s, 0, sizeof *s);
}

/* v_m of message m between physical ranks a and b, its latency into
 * *alpha. */
static inline double rs_msg_val(const rs *s, const rs_msg *m, int a, int b, double *alpha)
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
static int rs_build_patterns(rs *s, const cost_plan *p, link_error *err)
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
double rs_cheapest(const rs *s, const rs_msg *m)
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

int rs_init(rs *s, const cost_plan *p, const link_model *lm, double bytes, link_error *err)
{
	memset(s, 0, sizeof *s);
	s->lm = lm;
	s->n = p->n;
	s->nseg = lm->nsegs;
	s->cb = bytes * p->work / p->chunks;
	if (rs_build_patterns(s, p, err))
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
			double v = m->k == lastk && m->share == lastsh ? lastv : rs_cheapest(s, m);
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
static inline void rs_seg_apply(rs *s, size_t x, int k, double al, int sign)
{
	s->load[x] += sign * k;
	if (sign > 0)
		mx_add(&s->amax[x], al);
	else
		mx_del(&s->amax[x], al);
}

/* Add or remove message i's contributions under the current perm. */
void rs_msg_apply(rs *s, int i, int sign)
{
	const rs_msg *m = &s->msgs[i];
	int j = m->pat, a = s->perm[m->src], b = s->perm[m->dst];
	double al, v = rs_msg_val(s, m, a, b, &al);
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
				rs_seg_apply(s, (size_t)j * s->nseg + (size_t)__builtin_ctzll(bits), m->k, al, sign);
		} else {
			for (int g = 0; g < s->nseg; g++)
				if (link_crosses(s->lm, &s->lm->segs[g], a, b))
					rs_seg_apply(s, (size_t)j * s->nseg + (size_t)g, m->k, al, sign);
		}
	}
	if (!s->ptouch[j]) {
		s->ptouch[j] = 1;
		s->touched[s->ntouched++] = j;
	}
}


/* T_p from the state, recomputing dirty maxima from the placed messages
 * (their values as rs_msg_apply last added them); also S_p into *sp. */
static double rs_pattern_time(rs *s, int j, double *sp)
{
	const rs_pat *pt = &s->pats[j];
	int lo = pt->first, hi = pt->first + pt->count;
	mxc *pm = &s->pair[j], *am = &s->amax[(size_t)j * s->nseg];
	if (pm->dirty) {
		pm->dirty = 0, pm->cnt = 0;
		for (int i = lo; i < hi; i++)
			if (rs_msg_in(s, &s->msgs[i]))
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
					if (rs_msg_in(s, m) &&
					    link_crosses(s->lm, &s->lm->segs[g], s->perm[m->src], s->perm[m->dst]))
						mx_add(&am[g], s->cur[i].alpha);
				}
		}
	for (int i = lo; redo && i < hi; i++)
		if (rs_msg_in(s, &s->msgs[i]))
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
void rs_settle(rs *s)
{
	for (int x = 0; x < s->ntouched; x++) {
		int j = s->touched[x];
		s->ptouch[j] = 0;
		double sp, t = rs_pattern_time(s, j, &sp);
		s->T += s->pats[j].mult * (t - s->tp[j]);
		s->S += s->pats[j].mult * (sp - s->sp[j]);
		s->tp[j] = t;
		s->sp[j] = sp;
	}
	s->ntouched = 0;
}

/* Everything from scratch for the current perm and placement. */
void rs_recompute(rs *s)
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
		if (rs_msg_in(s, &s->msgs[i]))
			rs_msg_apply(s, i, 1);
	for (int j = 0; j < s->npat; j++)
		if (!s->ptouch[j]) {
			s->ptouch[j] = 1;
			s->touched[s->ntouched++] = j;
		}
	rs_settle(s);
	s->T = s->H = s->S = 0;
	for (int j = 0; j < s->npat; j++) {
		s->T += s->pats[j].mult * s->tp[j];
		s->H += s->pats[j].mult * s->hsum[j];
		s->S += s->pats[j].mult * s->sp[j];
	}
}


/* Is a better than b (lexicographic, each within TIE)? */
bool rs_better(score a, score b)
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
void rs_touch(rs *s, const int *pos, int k, int sign)
{
	s->epoch++;
	for (int x = 0; x < k; x++)
		for (int y = s->ioff[pos[x]]; y < s->ioff[pos[x] + 1]; y++) {
			int i = s->inc[y];
			if (s->stamp[i] == s->epoch || !rs_msg_in(s, &s->msgs[i]))
				continue;
			s->stamp[i] = s->epoch;
			rs_msg_apply(s, i, sign);
		}
}

void rs_swap(rs *s, int a, int b)
{
	int pos[2] = { a, b };
	rs_touch(s, pos, 2, -1);
	int32_t t = s->perm[a];
	s->perm[a] = s->perm[b];
	s->perm[b] = t;
	rs_touch(s, pos, 2, 1);
	rs_settle(s);
}

void rs_reverse(rs *s, int a, int b, int *pos)
{
	int k = 0;
	for (int x = a; x <= b; x++)
		pos[k++] = x;
	rs_touch(s, pos, k, -1);
	for (int x = a, y = b; x < y; x++, y--) {
		int32_t t = s->perm[x];
		s->perm[x] = s->perm[y];
		s->perm[y] = t;
	}
	rs_touch(s, pos, k, 1);
	rs_settle(s);
}

/* H as the sum of the per-pattern sums (kept up to date by rs_msg_apply;
 * T and S are kept by rs_settle). */
double rs_h(const rs *s)
{
	double h = 0;
	for (int j = 0; j < s->npat; j++)
		h += s->pats[j].mult * s->hsum[j];
	return h;
}


uint64_t rs_rng_next(uint64_t *x)
{
	/* splitmix64: small, fast, and the same sequence on every machine */
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}


score rs_score(const rs *s) { return (score){ s->T, rs_h(s), s->S }; }

double rs_rng_unit(uint64_t *x) { return (double)(rs_rng_next(x) >> 11) * (1.0 / 9007199254740992.0); }

double rs_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* --- annealing ------------------------------------------------------------------ */


int rs_check_args(const cost_plan *p, const link_model *lm, double bytes, link_error *err)
{
	if (!(bytes > 0) || !isfinite(bytes))
		return link_errorf(err, "buffer size must be positive");
	if (lm->kind == LINK_MATRIX && lm->n != p->n)
		return link_errorf(err, "the link model has %d ranks but the schedule has %d", lm->n, p->n);
	/* costs within the model's range stay finite (linkmodel.h), so that
	 * the search compares numbers; a model built by link_set is checked
	 * here, one pass over n^2 pairs, small beside the search */
	return link_check_n(lm, p->n, err) || link_check_values(lm, err) ? -1 : 0;
}
