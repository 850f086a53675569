/*
 * rt_planlib.c - a plan set written by hand in the form `collc build` will
 * emit (static const tables, coll_plan.h), compiled into librtlib.so so
 * that `collbench --lib build/tests/librtlib.so` can be tested before the
 * generator exists.  Four ranks; allreduce "direct" (every rank reduces
 * its own chunk from all, then sends it to all) up to 64 KiB and "ring"
 * (reduce-scatter then allgather) above; allgather "ring".
 */
#include "coll_plan.h"

static const coll_step ring_n4_r0[] = {
	COLL_SEND(0, 1, 3),
	COLL_RECV_REDUCE(0, 3, 2),
	COLL_SEND(1, 1, 2),
	COLL_RECV_REDUCE(1, 3, 1),
	COLL_SEND(2, 1, 1),
	COLL_RECV_REDUCE(2, 3, 0),
	COLL_SEND(3, 1, 0),
	COLL_RECV_COPY(3, 3, 3),
	COLL_SEND(4, 1, 3),
	COLL_RECV_COPY(4, 3, 2),
	COLL_SEND(5, 1, 2),
	COLL_RECV_COPY(5, 3, 1),
};
static const coll_step ring_n4_r1[] = {
	COLL_SEND(0, 2, 0),
	COLL_RECV_REDUCE(0, 0, 3),
	COLL_SEND(1, 2, 3),
	COLL_RECV_REDUCE(1, 0, 2),
	COLL_SEND(2, 2, 2),
	COLL_RECV_REDUCE(2, 0, 1),
	COLL_SEND(3, 2, 1),
	COLL_RECV_COPY(3, 0, 0),
	COLL_SEND(4, 2, 0),
	COLL_RECV_COPY(4, 0, 3),
	COLL_SEND(5, 2, 3),
	COLL_RECV_COPY(5, 0, 2),
};
static const coll_step ring_n4_r2[] = {
	COLL_SEND(0, 3, 1),
	COLL_RECV_REDUCE(0, 1, 0),
	COLL_SEND(1, 3, 0),
	COLL_RECV_REDUCE(1, 1, 3),
	COLL_SEND(2, 3, 3),
	COLL_RECV_REDUCE(2, 1, 2),
	COLL_SEND(3, 3, 2),
	COLL_RECV_COPY(3, 1, 1),
	COLL_SEND(4, 3, 1),
	COLL_RECV_COPY(4, 1, 0),
	COLL_SEND(5, 3, 0),
	COLL_RECV_COPY(5, 1, 3),
};
static const coll_step ring_n4_r3[] = {
	COLL_SEND(0, 0, 2),
	COLL_RECV_REDUCE(0, 2, 1),
	COLL_SEND(1, 0, 1),
	COLL_RECV_REDUCE(1, 2, 0),
	COLL_SEND(2, 0, 0),
	COLL_RECV_REDUCE(2, 2, 3),
	COLL_SEND(3, 0, 3),
	COLL_RECV_COPY(3, 2, 2),
	COLL_SEND(4, 0, 2),
	COLL_RECV_COPY(4, 2, 1),
	COLL_SEND(5, 0, 1),
	COLL_RECV_COPY(5, 2, 0),
};
static const coll_rank_plan ring_n4_ranks[] = {COLL_RANK_PLAN(ring_n4_r0), COLL_RANK_PLAN(ring_n4_r1), COLL_RANK_PLAN(ring_n4_r2), COLL_RANK_PLAN(ring_n4_r3)};
static const coll_algo ring_n4 = {.name = "ring", .kind = COLL_ALLREDUCE, .nranks = 4, .chunks = 4, .rounds = 6, .root = 0, .ranks = ring_n4_ranks};

static const coll_step direct_n4_r0[] = {
	COLL_SEND(0, 1, 1),
	COLL_SEND(0, 2, 2),
	COLL_SEND(0, 3, 3),
	COLL_RECV_REDUCE(0, 1, 0),
	COLL_RECV_REDUCE(0, 2, 0),
	COLL_RECV_REDUCE(0, 3, 0),
	COLL_SEND(1, 1, 0),
	COLL_SEND(1, 2, 0),
	COLL_SEND(1, 3, 0),
	COLL_RECV_COPY(1, 1, 1),
	COLL_RECV_COPY(1, 2, 2),
	COLL_RECV_COPY(1, 3, 3),
};
static const coll_step direct_n4_r1[] = {
	COLL_SEND(0, 0, 0),
	COLL_SEND(0, 2, 2),
	COLL_SEND(0, 3, 3),
	COLL_RECV_REDUCE(0, 0, 1),
	COLL_RECV_REDUCE(0, 2, 1),
	COLL_RECV_REDUCE(0, 3, 1),
	COLL_SEND(1, 0, 1),
	COLL_SEND(1, 2, 1),
	COLL_SEND(1, 3, 1),
	COLL_RECV_COPY(1, 0, 0),
	COLL_RECV_COPY(1, 2, 2),
	COLL_RECV_COPY(1, 3, 3),
};
static const coll_step direct_n4_r2[] = {
	COLL_SEND(0, 0, 0),
	COLL_SEND(0, 1, 1),
	COLL_SEND(0, 3, 3),
	COLL_RECV_REDUCE(0, 0, 2),
	COLL_RECV_REDUCE(0, 1, 2),
	COLL_RECV_REDUCE(0, 3, 2),
	COLL_SEND(1, 0, 2),
	COLL_SEND(1, 1, 2),
	COLL_SEND(1, 3, 2),
	COLL_RECV_COPY(1, 0, 0),
	COLL_RECV_COPY(1, 1, 1),
	COLL_RECV_COPY(1, 3, 3),
};
static const coll_step direct_n4_r3[] = {
	COLL_SEND(0, 0, 0),
	COLL_SEND(0, 1, 1),
	COLL_SEND(0, 2, 2),
	COLL_RECV_REDUCE(0, 0, 3),
	COLL_RECV_REDUCE(0, 1, 3),
	COLL_RECV_REDUCE(0, 2, 3),
	COLL_SEND(1, 0, 3),
	COLL_SEND(1, 1, 3),
	COLL_SEND(1, 2, 3),
	COLL_RECV_COPY(1, 0, 0),
	COLL_RECV_COPY(1, 1, 1),
	COLL_RECV_COPY(1, 2, 2),
};
static const coll_rank_plan direct_n4_ranks[] = {COLL_RANK_PLAN(direct_n4_r0), COLL_RANK_PLAN(direct_n4_r1), COLL_RANK_PLAN(direct_n4_r2), COLL_RANK_PLAN(direct_n4_r3)};
static const coll_algo direct_n4 = {.name = "direct", .kind = COLL_ALLREDUCE, .nranks = 4, .chunks = 4, .rounds = 2, .root = 0, .ranks = direct_n4_ranks};

static const coll_step ringag_n4_r0[] = {
	COLL_SEND(0, 1, 0),
	COLL_RECV_COPY(0, 3, 3),
	COLL_SEND(1, 1, 3),
	COLL_RECV_COPY(1, 3, 2),
	COLL_SEND(2, 1, 2),
	COLL_RECV_COPY(2, 3, 1),
};
static const coll_step ringag_n4_r1[] = {
	COLL_SEND(0, 2, 1),
	COLL_RECV_COPY(0, 0, 0),
	COLL_SEND(1, 2, 0),
	COLL_RECV_COPY(1, 0, 3),
	COLL_SEND(2, 2, 3),
	COLL_RECV_COPY(2, 0, 2),
};
static const coll_step ringag_n4_r2[] = {
	COLL_SEND(0, 3, 2),
	COLL_RECV_COPY(0, 1, 1),
	COLL_SEND(1, 3, 1),
	COLL_RECV_COPY(1, 1, 0),
	COLL_SEND(2, 3, 0),
	COLL_RECV_COPY(2, 1, 3),
};
static const coll_step ringag_n4_r3[] = {
	COLL_SEND(0, 0, 3),
	COLL_RECV_COPY(0, 2, 2),
	COLL_SEND(1, 0, 2),
	COLL_RECV_COPY(1, 2, 1),
	COLL_SEND(2, 0, 1),
	COLL_RECV_COPY(2, 2, 0),
};
static const coll_rank_plan ringag_n4_ranks[] = {COLL_RANK_PLAN(ringag_n4_r0), COLL_RANK_PLAN(ringag_n4_r1), COLL_RANK_PLAN(ringag_n4_r2), COLL_RANK_PLAN(ringag_n4_r3)};
static const coll_algo ringag_n4 = {.name = "ring", .kind = COLL_ALLGATHER, .nranks = 4, .chunks = 4, .rounds = 3, .root = 0, .ranks = ringag_n4_ranks};

static const coll_algo *const rtlib_algos[] = {&direct_n4, &ring_n4, &ringag_n4};
static const coll_choice rtlib_choices[] = {{COLL_ALLREDUCE, 65536, "direct"}, {COLL_ALLREDUCE, COLL_BYTES_MAX, "ring"}};
/* The symbol collbench --lib looks for in librtlib.so. */
extern const coll_plan_set rtlib_plans;
const coll_plan_set rtlib_plans = COLL_PLAN_SET("rtlib", 4, rtlib_algos, rtlib_choices);
