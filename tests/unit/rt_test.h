/*
 * rt_test.h - helpers shared by the runtime's C tests (tests/unit/rt_*.c):
 * schedules built in memory for any n (what `collc build` will emit as
 * static tables), and a reference for every dtype and op.
 */
#ifndef RT_TEST_H
#define RT_TEST_H

#include "coll.h"
#include "coll_plan.h"

/* rt_plans.c: heap algorithms for n ranks (free with coll_algo_free). */
coll_algo *rtt_ring_allreduce(int n);        /* "ring": reduce-scatter + allgather, C = n */
coll_algo *rtt_tree_allreduce(int n);        /* "tree": binomial reduce to 0 + binomial broadcast, C = 1 */
coll_algo *rtt_ring_reduce_scatter(int n);   /* "ring", C = n, rank r ends with chunk r */
coll_algo *rtt_ring_allgather(int n);        /* "ring", C = n */
coll_algo *rtt_tree_broadcast(int n);        /* "tree": binomial from root 0, C = 1 */
coll_algo *rtt_chain_broadcast(int n, int chunks); /* "chain": pipelined 0 -> 1 -> ... -> n-1 */
coll_algo *rtt_tree_reduce(int n);           /* "tree": binomial to root 0, C = 1 */
coll_algo *rtt_chain_reduce(int n, int chunks);    /* "chain": pipelined n-1 -> ... -> 0 */
coll_algo *rtt_pairwise_alltoall(int n);     /* "pairwise": n-1 shifted exchanges, C = n*n */
coll_algo *rtt_bruck_alltoall(int n);        /* "bruck": ceil(log2 n) rounds of forwarding, C = n*n */
/* All of the above in one plan set, with allreduce choosing "tree" up to
 * 4 KiB and "ring" above, alltoall "bruck" up to 8 KiB, "pairwise" above.  *algos receives the array to free later. */
coll_plan_set *rtt_plan_set(int n, coll_algo ***algos, int *nalgos);
void rtt_plan_set_free(coll_plan_set *s, coll_algo **algos, int nalgos);

#endif
