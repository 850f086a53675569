/*
 * rt_plans.c - schedules for the runtime tests, built in memory for any n.
 *
 * Each builder writes the global transfer list exactly as a .coll file
 * would (see stdlib/ring.coll in DESIGN.md) and lowers it with
 * coll_algo_build, the run-time twin of `collc build`'s tables.
 */
#include <stdlib.h>

#include "rt_test.h"

typedef struct { coll_xfer *x; int n, cap; } xl;

static void add(xl *l, int round, int src, int dst, int chunk, int reduce)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->x = realloc(l->x, sizeof *l->x * (size_t)l->cap);
		if (!l->x)
			abort();
	}
	l->x[l->n++] = (coll_xfer){round, src, dst, chunk, reduce};
}

static coll_algo *done(xl *l, const char *name, coll_kind k, int n, int chunks)
{
	coll_algo *a = coll_algo_build(name, k, n, chunks, 0, l->x, l->n);
	free(l->x);
	return a;
}

coll_algo *rtt_ring_allreduce(int n)
{
	xl l = {0};
	int round = 0;
	for (int s = 0; s < n - 1; s++, round++)
		for (int r = 0; r < n; r++)
			add(&l, round, r, (r + 1) % n, ((r - s) % n + n) % n, 1);
	for (int s = 0; s < n - 1; s++, round++)
		for (int r = 0; r < n; r++)
			add(&l, round, r, (r + 1) % n, ((r - s + 1) % n + n) % n, 0);
	return done(&l, "ring", COLL_ALLREDUCE, n, n);
}

coll_algo *rtt_ring_reduce_scatter(int n)
{
	xl l = {0};
	for (int s = 0; s < n - 1; s++)
		for (int r = 0; r < n; r++)
			add(&l, s, r, (r + 1) % n, ((r - s - 1) % n + n) % n, 1);
	return done(&l, "ring", COLL_REDUCE_SCATTER, n, n);
}

coll_algo *rtt_ring_allgather(int n)
{
	xl l = {0};
	for (int s = 0; s < n - 1; s++)
		for (int r = 0; r < n; r++)
			add(&l, s, r, (r + 1) % n, ((r - s) % n + n) % n, 0);
	return done(&l, "ring", COLL_ALLGATHER, n, n);
}

/* Binomial tree rooted at 0: in round k, ranks below 2^k send to r + 2^k. */
static int bcast_tree(xl *l, int n, int round0)
{
	int round = round0;
	for (int d = 1; d < n; d *= 2, round++)
		for (int r = 0; r < d && r + d < n; r++)
			add(l, round, r, r + d, 0, 0);
	return round;
}

static int reduce_tree(xl *l, int n, int round0)
{
	int round = round0;
	for (int d = 1; d < n; d *= 2, round++)
		for (int r = d; r < n; r += 2 * d)
			add(l, round, r, r - d, 0, 1);
	return round;
}

coll_algo *rtt_tree_broadcast(int n)
{
	xl l = {0};
	bcast_tree(&l, n, 0);
	return done(&l, "tree", COLL_BROADCAST, n, 1);
}

coll_algo *rtt_tree_reduce(int n)
{
	xl l = {0};
	reduce_tree(&l, n, 0);
	return done(&l, "tree", COLL_REDUCE, n, 1);
}

coll_algo *rtt_tree_allreduce(int n)
{
	xl l = {0};
	bcast_tree(&l, n, reduce_tree(&l, n, 0));
	return done(&l, "tree", COLL_ALLREDUCE, n, 1);
}

/* Chunk c leaves rank i for rank i+1 in round c + i: a pipeline. */
coll_algo *rtt_chain_broadcast(int n, int chunks)
{
	xl l = {0};
	for (int c = 0; c < chunks; c++)
		for (int i = 0; i + 1 < n; i++)
			add(&l, c + i, i, i + 1, c, 0);
	return done(&l, "chain", COLL_BROADCAST, n, chunks);
}

coll_algo *rtt_chain_reduce(int n, int chunks)
{
	xl l = {0};
	for (int c = 0; c < chunks; c++)
		for (int i = n - 1; i > 0; i--)
			add(&l, c + (n - 1 - i), i, i - 1, c, 1);
	return done(&l, "chain", COLL_REDUCE, n, chunks);
}

/* Rank s's block for rank d is chunk s*n + d; in round k-1 every rank r
 * sends its block for r+k straight there. */
coll_algo *rtt_pairwise_alltoall(int n)
{
	xl l = {0};
	for (int k = 1; k < n; k++)
		for (int r = 0; r < n; r++)
			add(&l, k - 1, r, (r + k) % n, r * n + (r + k) % n, 0);
	return done(&l, "pairwise", COLL_ALLTOALL, n, n * n);
}

/* Bruck: in round i, blocks whose distance to their destination has bit i
 * set hop 2^i ranks on; a block's position is its source plus the bits of
 * its distance already travelled. */
coll_algo *rtt_bruck_alltoall(int n)
{
	xl l = {0};
	int round = 0;
	for (int hop = 1; hop < n; hop *= 2, round++)
		for (int src = 0; src < n; src++)
			for (int dist = 1; dist < n; dist++)
				if (dist & hop) {
					int at = (src + (dist & (hop - 1))) % n;
					add(&l, round, at, (at + hop) % n, src * n + (src + dist) % n, 0);
				}
	return done(&l, "bruck", COLL_ALLTOALL, n, n * n);
}

coll_plan_set *rtt_plan_set(int n, coll_algo ***algos, int *nalgos)
{
	coll_algo **a = calloc(11, sizeof *a);
	int k = 0;
	a[k++] = rtt_ring_allreduce(n);
	a[k++] = rtt_tree_allreduce(n);
	a[k++] = rtt_ring_reduce_scatter(n);
	a[k++] = rtt_ring_allgather(n);
	a[k++] = rtt_tree_broadcast(n);
	a[k++] = rtt_chain_broadcast(n, 4);
	a[k++] = rtt_tree_reduce(n);
	a[k++] = rtt_chain_reduce(n, 4);
	a[k++] = rtt_pairwise_alltoall(n);
	a[k++] = rtt_bruck_alltoall(n);
	for (int i = 0; i < k; i++)
		if (!a[i])
			abort();
	static const coll_choice ch[] = {
		{COLL_ALLREDUCE, 4096, "tree"},
		{COLL_ALLREDUCE, COLL_BYTES_MAX, "ring"},
		{COLL_BROADCAST, 65536, "tree"},
		{COLL_BROADCAST, COLL_BYTES_MAX, "chain"},
		{COLL_REDUCE, 65536, "tree"},
		{COLL_REDUCE, COLL_BYTES_MAX, "chain"},
		{COLL_ALLTOALL, 8192, "bruck"},
		{COLL_ALLTOALL, COLL_BYTES_MAX, "pairwise"},
	};
	coll_plan_set *s = coll_plan_set_build("rtt", n, (const coll_algo *const *)a, k, ch,
	                                       (int)(sizeof ch / sizeof ch[0]));
	*algos = a;
	*nalgos = k;
	return s;
}

void rtt_plan_set_free(coll_plan_set *s, coll_algo **algos, int nalgos)
{
	coll_plan_set_free(s);
	for (int i = 0; i < nalgos; i++)
		coll_algo_free(algos[i]);
	free(algos);
}
