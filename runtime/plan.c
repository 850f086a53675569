/*
 * plan.c - plan tables: build them from a schedule, check them, and
 * preprocess one rank's steps for the executor.
 *
 * coll_plan_set_build makes a plan set at run time (coll_algo_build, which
 * lowers a schedule to rank plans, is in lower.c).  coll_plan_set_check / rt_algo_check enforce the invariants listed in
 * coll_plan.h, so a bad generated table fails at coll_init with a reason
 * instead of hanging at run time.  rt_prep_build turns one rank's steps
 * into dependency counts (see exec.c for how they are used).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

/* --- building (coll_algo_build is in lower.c) ------------------------------ */

coll_plan_set *coll_plan_set_build(const char *name, int nranks, const coll_algo *const *algos, int nalgos,
                                   const coll_choice *choices, int nchoices)
{
	if (nalgos < 0 || nchoices < 0)
		return NULL;
	size_t sz = sizeof(coll_plan_set) + sizeof(coll_choice) * (size_t)nchoices +
	            sizeof(coll_algo *) * (size_t)nalgos;
	char *blk = calloc(1, sz);
	if (!blk)
		return NULL;
	coll_plan_set *s = (coll_plan_set *)blk;
	coll_choice *ch = (coll_choice *)(s + 1);
	const coll_algo **al = (const coll_algo **)(ch + nchoices);
	if (nchoices)
		memcpy(ch, choices, sizeof *ch * (size_t)nchoices);
	if (nalgos)
		memcpy(al, algos, sizeof *al * (size_t)nalgos);
	s->abi = COLL_PLAN_ABI;
	s->name = name ? name : "runtime";
	s->nranks = nranks;
	s->algos = al;
	s->nalgos = nalgos;
	s->choices = nchoices ? ch : NULL;
	s->nchoices = nchoices;
	return s;
}

void coll_plan_set_free(coll_plan_set *s) { free(s); }

/* --- checking -------------------------------------------------------------- */

#define WHY(...) (why ? (void)snprintf(why, whylen, __VA_ARGS__) : (void)0, COLL_ERR_PLAN)

/* One send or receive of the FIFO check: the pair (src, dst), the
 * step's position in its rank's list, and what it moves. */
typedef struct {
	int32_t src, dst, idx, round, chunk;
} fifo_ent;

static int fifo_pair_cmp(const fifo_ent *a, const fifo_ent *b)
{
	return a->src != b->src ? (a->src < b->src ? -1 : 1) : a->dst != b->dst ? (a->dst < b->dst ? -1 : 1) : 0;
}

static int fifo_cmp(const void *pa, const void *pb)
{
	const fifo_ent *a = pa, *b = pb;
	int c = fifo_pair_cmp(a, b);
	return c ? c : (a->idx > b->idx) - (a->idx < b->idx);
}

int rt_algo_check(const coll_algo *a, char *why, size_t whylen)
{
	if (!a || !a->name || !a->ranks)
		return WHY("algorithm with no name or no rank plans");
	const char *nm = a->name;
	int n = a->nranks, C = a->chunks;
	const coll_kind_info *ki = coll_kind_get(a->kind);
	if (!ki || n < 1 || C < 1 || a->root < 0 || a->root >= n)
		return WHY("algorithm '%s': bad kind, rank count, chunk count or root", nm);
	if ((uint64_t)C % coll_kind_units(ki, n))
		return WHY("algorithm '%s': %d chunks is not a multiple of %llu (%s of %d ranks)", nm, C,
		           (unsigned long long)coll_kind_units(ki, n), ki->name, n);
	if (a->straggler < 0 || a->straggler > n)
		return WHY("algorithm '%s': straggler role %d out of range (1 + role, 0: none)", nm, a->straggler);
	size_t total = 0;
	for (int r = 0; r < n; r++) {
		const coll_rank_plan *rp = &a->ranks[r];
		if (rp->nsteps < 0 || (rp->nsteps && !rp->steps))
			return WHY("algorithm '%s' rank %d: bad step list", nm, r);
		for (int i = 0; i < rp->nsteps; i++) {
			const coll_step *s = &rp->steps[i];
			if (s->round < 0 || (i && s->round < rp->steps[i - 1].round))
				return WHY("algorithm '%s' rank %d step %d: rounds not sorted", nm, r, i);
			if (s->kind < COLL_STEP_SEND || s->kind > COLL_STEP_RECV_REDUCE)
				return WHY("algorithm '%s' rank %d step %d: bad step kind %d", nm, r, i, s->kind);
			if (s->peer < 0 || s->peer >= n || s->peer == r)
				return WHY("algorithm '%s' rank %d step %d: bad peer %d", nm, r, i, s->peer);
			if (s->chunk < 0 || s->chunk >= C)
				return WHY("algorithm '%s' rank %d step %d: chunk %d out of range", nm, r, i, s->chunk);
		}
		total += (size_t)rp->nsteps;
	}
	/* FIFO matching: sort sends and receives by (src, dst, position in
	 * the rank's list), then compare element by element.  A sort, not a
	 * counting sort over every (src, dst) pair: that took 2 n^2 words, so
	 * a schedule of a few transfers among 8192 ranks (or a coll_init of
	 * such a job) cost 1 GiB and 9 s here; this costs the steps alone. */
	fifo_ent *snd = malloc(sizeof *snd * (total + 1)), *rcv = malloc(sizeof *rcv * (total + 1));
	size_t ns = 0, nr = 0;
	int rc = COLL_OK;
	if (!snd || !rcv) {
		rc = WHY("out of memory checking '%s'", nm);
		goto out;
	}
	for (int r = 0; r < n; r++)
		for (int i = 0; i < a->ranks[r].nsteps; i++) {
			const coll_step *s = &a->ranks[r].steps[i];
			if (s->kind == COLL_STEP_SEND)
				snd[ns++] = (fifo_ent){r, s->peer, i, s->round, s->chunk};
			else
				rcv[nr++] = (fifo_ent){s->peer, r, i, s->round, s->chunk};
		}
	qsort(snd, ns, sizeof *snd, fifo_cmp);
	qsort(rcv, nr, sizeof *rcv, fifo_cmp);
	for (size_t k = 0; k < ns || k < nr; k++) {
		const fifo_ent *x = k < ns ? &snd[k] : NULL, *y = k < nr ? &rcv[k] : NULL;
		if (!x || !y || x->src != y->src || x->dst != y->dst) {
			/* the first pair (in sorted order) whose counts differ */
			const fifo_ent *p = !y || (x && fifo_pair_cmp(x, y) < 0) ? x : y;
			size_t cs = 0, cr = 0;
			for (size_t j = 0; j < ns; j++)
				cs += fifo_pair_cmp(&snd[j], p) == 0;
			for (size_t j = 0; j < nr; j++)
				cr += fifo_pair_cmp(&rcv[j], p) == 0;
			rc = WHY("algorithm '%s': rank %d sends %zu chunk(s) to rank %d, which receives %zu", nm, p->src, cs,
			         p->dst, cr);
			goto out;
		}
		if (x->round != y->round || x->chunk != y->chunk) {
			rc = WHY("algorithm '%s': sends to rank %d (round %d chunk %d) and its receives from the sender "
			         "(round %d chunk %d) are not in the same order",
			         nm, x->dst, x->round, x->chunk, y->round, y->chunk);
			goto out;
		}
	}
out:
	free(snd), free(rcv);
	return rc;
}

coll_result coll_plan_set_check(const coll_plan_set *s, char *why, size_t whylen)
{
	if (!s || s->abi != COLL_PLAN_ABI)
		return WHY("plan set is NULL or built for another plan ABI (want %d)", COLL_PLAN_ABI);
	if (s->nalgos < 0 || (s->nalgos && !s->algos) || s->nchoices < 0 || (s->nchoices && !s->choices))
		return WHY("plan set '%s': bad algorithm or choice table", s->name ? s->name : "?");
	for (int i = 0; i < s->nalgos; i++) {
		int rc = rt_algo_check(s->algos[i], why, whylen);
		if (rc)
			return (coll_result)rc;
	}
	if (s->perm) {
		/* a permutation: every physical rank exactly once */
		char seen[4096], *sp = s->nranks <= (int)sizeof seen ? seen : calloc((size_t)s->nranks, 1);
		if (!sp)
			return WHY("out of memory checking the rank permutation");
		memset(sp, 0, s->nranks <= (int)sizeof seen ? (size_t)s->nranks : 0);
		for (int i = 0; i < s->nranks; i++) {
			int p = s->perm[i];
			if (p < 0 || p >= s->nranks || sp[p]) {
				if (sp != seen)
					free(sp);
				return WHY("plan set '%s': bad rank permutation: perm[%d] = %d %s", s->name ? s->name : "?", i, p,
				           p < 0 || p >= s->nranks ? "is not a rank" : "appears twice");
			}
			sp[p] = 1;
		}
		if (sp != seen)
			free(sp);
	}
	if (s->reorder != COLL_REORDER_NONE && s->reorder != COLL_REORDER_INIT)
		return WHY("plan set '%s': bad reorder setting %d", s->name ? s->name : "?", s->reorder);
	if (s->straggler < COLL_STRAGGLER_AUTO || s->straggler > s->nranks)
		return WHY("plan set '%s': straggler %d out of range (1 + rank, 0: none, -1: auto)",
		           s->name ? s->name : "?", s->straggler);
	if (s->ncrit < 0 || (s->ncrit && !s->crit) || (s->ncrit && s->straggler != COLL_STRAGGLER_AUTO))
		return WHY("plan set '%s': bad critical delay table (only for straggler auto)", s->name ? s->name : "?");
	for (int i = 0; i < s->ncrit; i++)
		if (!(s->crit[i].delay_s >= 0) || (i && s->crit[i].max_bytes <= s->crit[i - 1].max_bytes))
			return WHY("plan set '%s': critical delay %d: negative delay or sizes not increasing",
			           s->name ? s->name : "?", i);
	return COLL_OK;
}

/* --- hashing --------------------------------------------------------------- */

static const uint8_t hkey[16] = "coll-plan-hash-k";

uint32_t rt_algo_hash(const coll_algo *a)
{
	int32_t shape[4] = {a->kind, a->nranks, a->chunks, a->rounds};
	uint64_t h = rt_siphash(hkey, a->name, strlen(a->name)) ^ rt_siphash(hkey, shape, sizeof shape);
	return (uint32_t)(h ^ (h >> 32));
}

uint32_t rt_planset_hash(const coll_plan_set *s)
{
	uint64_t h = (uint64_t)(uint32_t)s->straggler;
	for (int i = 0; i < s->nalgos; i++) {
		const coll_algo *a = s->algos[i];
		h = h * 31 + rt_algo_hash(a) + (uint64_t)(uint32_t)a->straggler;
		for (int r = 0; r < a->nranks; r++)
			if (a->ranks[r].nsteps)
				h = h * 31 + rt_siphash(hkey, a->ranks[r].steps, sizeof(coll_step) * (size_t)a->ranks[r].nsteps);
	}
	/* every rank must switch at the same delays, and play the same order */
	if (s->ncrit)
		h = h * 31 + rt_siphash(hkey, s->crit, sizeof *s->crit * (size_t)s->ncrit);
	if (s->perm)
		h = h * 31 + rt_siphash(hkey, s->perm, sizeof *s->perm * (size_t)s->nranks);
	h = h * 31 + (uint64_t)(uint32_t)s->reorder;
	return (uint32_t)(h ^ (h >> 32));
}

/* --- preprocessing --------------------------------------------------------- */

void rt_prep_free(rt_prep *p)
{
	if (!p)
		return;
	free(p->steps);
	free(p->soff);
	free(p);
}

int rt_prep_build(coll_comm *c, const coll_algo *a, int role, rt_prep **out)
{
	int n = a->nranks, C = a->chunks;
	const coll_rank_plan *rp = &a->ranks[role];
	int ns = rp->nsteps;
	rt_prep *p = calloc(1, sizeof *p);
	int *cnt = calloc((size_t)C * 3, sizeof(int));
	if (p) {
		p->steps = malloc(sizeof *p->steps * (size_t)(ns ? ns : 1));
		p->soff = calloc((size_t)(2 * (n + 1) + 2 * ns + 2), sizeof(int));
	}
	if (!p || !cnt || !p->steps || !p->soff) {
		free(cnt);
		rt_prep_free(p);
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	}
	p->sidx = p->soff + (n + 1);
	p->roff = p->sidx + ns + 1;
	p->ridx = p->roff + (n + 1);
	p->algo = a;
	p->role = role;
	p->nsteps = ns;
	p->nrounds = ns ? rp->steps[ns - 1].round + 1 : 0;
	p->hash = rt_algo_hash(a);
	int *sends = cnt, *recvs = cnt + C, *ridx = cnt + 2 * C;
	/* Round groups: sends of a round count for that round's receives;
	 * receives of a round only count for later rounds' sends. */
	for (int i = 0; i < ns;) {
		int j = i;
		while (j < ns && rp->steps[j].round == rp->steps[i].round)
			j++;
		for (int k = i; k < j; k++)
			if (rp->steps[k].kind == COLL_STEP_SEND)
				sends[rp->steps[k].chunk]++;
		for (int k = i; k < j; k++) {
			const coll_step *s = &rp->steps[k];
			rt_xstep *x = &p->steps[k];
			x->kind = s->kind, x->peer = s->peer, x->chunk = s->chunk, x->round = s->round;
			if (s->kind == COLL_STEP_SEND) {
				x->need = recvs[s->chunk];
				x->idx = 0;
			} else {
				x->need = sends[s->chunk];
				x->idx = ridx[s->chunk]++;
			}
		}
		for (int k = i; k < j; k++)
			if (rp->steps[k].kind != COLL_STEP_SEND)
				recvs[rp->steps[k].chunk]++;
		i = j;
	}
	/* Forwarding: a receive whose chunk is next sent on (a later round:
	 * sends of the same round read the old value) gets that send as
	 * nsend, and `after` says who reads the chunk's home once the receive
	 * and nsend are done.  next[k]: the step after k on k's chunk; last[c]:
	 * chunk c's first step seen so far, walking backwards (in cnt, free
	 * again here). */
	{
		int *last = cnt, *next = malloc(sizeof(int) * (size_t)(ns ? ns : 1));
		if (!next) {
			free(cnt);
			rt_prep_free(p);
			return rt_err(c, COLL_ERR_NOMEM, "out of memory");
		}
		for (int i = 0; i < C; i++)
			last[i] = -1;
		for (int k = ns - 1; k >= 0; k--) {
			next[k] = last[rp->steps[k].chunk];
			last[rp->steps[k].chunk] = k;
		}
		for (int k = 0; k < ns; k++) {
			rt_xstep *x = &p->steps[k];
			x->nsend = -1;
			x->after = RT_AFTER_READ;
			if (rp->steps[k].kind == COLL_STEP_SEND)
				continue;
			int k1 = next[k];
			if (k1 >= 0 && rp->steps[k1].kind == COLL_STEP_SEND && rp->steps[k1].round > rp->steps[k].round) {
				x->nsend = k1;
				k1 = next[k1];
			}
			if (k1 < 0)
				x->after = RT_AFTER_NONE;
			else if (rp->steps[k1].kind == COLL_STEP_RECV_COPY)
				x->after = RT_AFTER_OVERWRITE;
		}
		free(next);
	}
	/* Per-peer lists in step order (CSR). */
	for (int k = 0; k < ns; k++)
		(rp->steps[k].kind == COLL_STEP_SEND ? p->soff : p->roff)[rp->steps[k].peer + 1]++;
	for (int q = 0; q < n; q++)
		p->soff[q + 1] += p->soff[q], p->roff[q + 1] += p->roff[q];
	int *sf = calloc((size_t)n * 2, sizeof(int));
	if (!sf) {
		free(cnt);
		rt_prep_free(p);
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	}
	for (int k = 0; k < ns; k++) {
		int q = rp->steps[k].peer;
		if (rp->steps[k].kind == COLL_STEP_SEND)
			p->sidx[p->soff[q] + sf[q]++] = k;
		else
			p->ridx[p->roff[q] + sf[n + q]++] = k;
	}
	free(sf);
	free(cnt);
	*out = p;
	return COLL_OK;
}
