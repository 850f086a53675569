/*
 * lower.c - the one lowering of a schedule to rank plans: a global list of
 * transfers (src, dst, chunk, op) in rounds becomes, per rank, the ordered
 * steps that rank executes (coll_plan.h).  libcollrt uses it for plans
 * built at run time (tests, collbench's helpers, the GPU exchange); collc
 * links the same object and prints what it returns as the C plan tables
 * of a generated library (codegen/emit_c.c), so the two can never lower a
 * schedule differently.
 *
 * It depends on coll_plan.h alone (no runtime internals) so that the
 * compiler can link it without libcollrt.
 */
#include <stdlib.h>
#include <string.h>

#include "coll_plan.h"

coll_algo *coll_algo_build(const char *name, coll_kind kind, int n, int chunks, int root, const coll_xfer *x,
                           int nx)
{
	if (!name || n < 1 || chunks < 1 || nx < 0 || (nx && !x) || (unsigned)kind >= COLL_NCOLLS || root < 0 ||
	    root >= n)
		return NULL;
	int maxround = -1;
	for (int i = 0; i < nx; i++) {
		if (x[i].src < 0 || x[i].src >= n || x[i].dst < 0 || x[i].dst >= n || x[i].src == x[i].dst ||
		    x[i].chunk < 0 || x[i].chunk >= chunks || x[i].round < 0)
			return NULL;
		if (x[i].round > maxround)
			maxround = x[i].round;
	}
	/* One block: algo, rank plans, 2*nx steps, name. */
	size_t nl = strlen(name) + 1;
	size_t sz = sizeof(coll_algo) + sizeof(coll_rank_plan) * (size_t)n + sizeof(coll_step) * 2 * (size_t)nx + nl;
	char *blk = calloc(1, sz);
	int *cnt = calloc((size_t)n, sizeof(int));
	int *byround = malloc(sizeof(int) * (size_t)(nx ? nx : 1));
	int *rstart = calloc((size_t)maxround + 2, sizeof(int));
	if (!blk || !cnt || !byround || !rstart) {
		free(blk), free(cnt), free(byround), free(rstart);
		return NULL;
	}
	coll_algo *a = (coll_algo *)blk;
	coll_rank_plan *rp = (coll_rank_plan *)(a + 1);
	coll_step *steps = (coll_step *)(rp + n);
	char *nm = (char *)(steps + 2 * nx);
	memcpy(nm, name, nl);
	/* Stable counting sort of transfers by round: within a round the
	 * given order is kept, so every pair lists its sends and the matching
	 * receives in the same order (FIFO matching). */
	for (int i = 0; i < nx; i++)
		rstart[x[i].round + 1]++;
	for (int r = 0; r <= maxround; r++)
		rstart[r + 1] += rstart[r];
	for (int i = 0; i < nx; i++)
		byround[rstart[x[i].round]++] = i;
	/* Per-rank step counts, then slices of `steps`. */
	for (int i = 0; i < nx; i++)
		cnt[x[i].src]++, cnt[x[i].dst]++;
	coll_step *p = steps;
	for (int r = 0; r < n; r++) {
		rp[r].steps = p;
		p += cnt[r];
		cnt[r] = 0;
	}
	for (int k = 0; k < nx; k++) {
		const coll_xfer *t = &x[byround[k]];
		coll_step *s = (coll_step *)rp[t->src].steps + cnt[t->src]++;
		*s = (coll_step){t->round, COLL_STEP_SEND, t->dst, t->chunk};
		s = (coll_step *)rp[t->dst].steps + cnt[t->dst]++;
		*s = (coll_step){t->round, t->reduce ? COLL_STEP_RECV_REDUCE : COLL_STEP_RECV_COPY, t->src, t->chunk};
	}
	for (int r = 0; r < n; r++)
		rp[r].nsteps = cnt[r];
	a->name = nm;
	a->kind = kind;
	a->nranks = n;
	a->chunks = chunks;
	a->rounds = maxround + 1;
	a->root = root;
	a->ranks = rp;
	free(cnt), free(byround), free(rstart);
	return a;
}

void coll_algo_free(coll_algo *a) { free(a); }
