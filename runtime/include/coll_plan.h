/*
 * coll_plan.h - the plan tables a generated library hands to libcollrt.
 *
 * A schedule (the compiler's IR: rounds of transfers (src, dst, chunk, op))
 * is lowered to one *rank plan* per rank: the ordered steps that rank does.
 * `collc build` writes them as static const initialisers, one line per step:
 *
 *     static const coll_step ring_n4_r1[] = {
 *         COLL_SEND  (0, 2, 1),          // round 0: send chunk 1 to rank 2
 *         COLL_RECV_REDUCE(0, 0, 0),     // round 0: chunk 0 op= rank 0's chunk 0
 *         ...
 *     };
 *     static const coll_rank_plan ring_n4_ranks[] = { COLL_RANK_PLAN(ring_n4_r0), ... };
 *     static const coll_algo ring_n4 = {
 *         .name = "ring", .kind = COLL_ALLREDUCE, .nranks = 4, .chunks = 4,
 *         .rounds = 6, .root = 0, .ranks = ring_n4_ranks };
 *     static const coll_algo *const lab8_algos[] = { &ring_n4, ... };
 *     static const coll_choice lab8_choices[] = {
 *         { COLL_ALLREDUCE, 65536, "rhd" }, { COLL_ALLREDUCE, COLL_BYTES_MAX, "ring" } };
 *     const coll_plan_set lab8_plans = {
 *         .abi = COLL_PLAN_ABI, .name = "lab8", .nranks = 4, .algos = lab8_algos, .nalgos = 3,
 *         .choices = lab8_choices, .nchoices = 2, .transport = "tcp" };
 *
 * The same structures can be built in memory at run time with
 * coll_algo_build() from a global transfer list (that is what the tests do).
 *
 * Semantics the runtime relies on (coll_init checks them, COLL_ERR_PLAN):
 *   - the buffer of `count` elements is split into `chunks` chunks; chunk c
 *     is elements [c*count/chunks, (c+1)*count/chunks) (any count, also 0);
 *   - a rank's steps are sorted by round; all transfers of a round read the
 *     state from before the round (the runtime receives into a staging slot
 *     and applies it only after that round's sends of the chunk left);
 *   - for every pair (a, b), a's SEND steps to b and b's RECV steps from a
 *     list the same (round, chunk) in the same order: messages between two
 *     ranks are matched in FIFO order;
 *   - reduce_scatter/allgather: chunks is a multiple of nranks and rank r
 *     owns chunks [r*chunks/nranks, (r+1)*chunks/nranks).
 */
#ifndef COLL_PLAN_H
#define COLL_PLAN_H

#include <stdint.h>

#include "coll.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when the layout of these structures changes (4: the plan set's
 * transport; 5: rank reordering at init, coll_plan_set.reorder*;
 * 6: rails and their policy; 7: tuning at init, coll_plan_set.tune_kinds). */
#define COLL_PLAN_ABI 7

typedef enum {
	COLL_STEP_SEND = 0,         /* send my chunk to peer */
	COLL_STEP_RECV_COPY = 1,    /* my chunk := peer's chunk */
	COLL_STEP_RECV_REDUCE = 2   /* my chunk := my chunk OP peer's chunk */
} coll_step_kind;

/* One step of one rank. */
typedef struct {
	int32_t round;   /* schedule round, non-decreasing along a rank's list */
	int32_t kind;    /* coll_step_kind */
	int32_t peer;    /* the other rank */
	int32_t chunk;   /* 0 .. chunks-1 */
} coll_step;

#define COLL_SEND(round, peer, chunk)        { (round), COLL_STEP_SEND, (peer), (chunk) }
#define COLL_RECV_COPY(round, peer, chunk)   { (round), COLL_STEP_RECV_COPY, (peer), (chunk) }
#define COLL_RECV_REDUCE(round, peer, chunk) { (round), COLL_STEP_RECV_REDUCE, (peer), (chunk) }

typedef struct {
	const coll_step *steps;
	int32_t nsteps;
} coll_rank_plan;

#define COLL_RANK_PLAN(arr) { (arr), (int32_t)(sizeof(arr) / sizeof((arr)[0])) }

/* One algorithm for one collective at one rank count. */
typedef struct {
	const char *name;              /* "ring", "rhd", ... (unique per kind) */
	int32_t kind;                  /* coll_kind */
	int32_t nranks;
	int32_t chunks;                /* C >= 1 */
	int32_t rounds;                /* number of rounds (informational) */
	int32_t root;                  /* broadcast/reduce root, else 0 */
	const coll_rank_plan *ranks;   /* nranks entries */
	/* 1 + the role a persistent straggler plays, 0: none (the zero
	 * default).  Set for algorithms whose first rounds (phase "pre...")
	 * are a precondition among every other role, such as StragglAR (role
	 * nranks-1).  The runtime maps the plan set's straggler onto it. */
	int32_t straggler;
} coll_algo;

/* Size -> algorithm: for collective `kind`, the first entry (in table
 * order) with payload bytes <= max_bytes wins.  Payload is the full buffer,
 * count * dtype size (reduce_scatter: nranks*recvcount elements). */
#define COLL_BYTES_MAX UINT64_MAX
typedef struct {
	int32_t kind;        /* coll_kind */
	uint64_t max_bytes;
	const char *algo;
} coll_choice;

/* `straggler auto`: the straggler delay (seconds) from which the straggler
 * algorithm beats the algorithm the size table would choose, for messages
 * up to max_bytes (the first entry that fits wins, as for coll_choice);
 * COLL_NEVER where it never does.  From the cost model at build time. */
#define COLL_NEVER 1e300
typedef struct {
	uint64_t max_bytes;
	double delay_s;
} coll_crit;

struct coll_plan_set {
	uint32_t abi;                  /* COLL_PLAN_ABI */
	const char *name;              /* cluster name, e.g. "lab8" */
	int32_t nranks;
	const coll_algo *const *algos;
	int32_t nalgos;
	const coll_choice *choices;    /* may be NULL: first algo of a kind wins */
	int32_t nchoices;
	/* The rank order (cluster setting `reorder by cost`): perm[r] is the
	 * physical rank (the application's, coll_rank) that plays schedule
	 * rank r of every algorithm; NULL = identity.  The runtime applies it
	 * where roles meet physical ranks (comm.c, exec.c), so results are the
	 * identity order's: it changes who does what, never what is computed.
	 * COLL_PERM and COLL_REORDER in the environment override it. */
	const int32_t *perm;
	/* The persistent straggler (cluster setting `straggler`): 1 + its
	 * physical rank; COLL_STRAGGLER_NONE (0, the default) or
	 * COLL_STRAGGLER_AUTO (-1: detect it at run time and switch to an
	 * algorithm with a straggler role while its delay exceeds the
	 * critical delay for the message size, crit). */
	int32_t straggler;
	const coll_crit *crit;         /* `straggler auto` only, else NULL */
	int32_t ncrit;
	/* The cluster's transport ("shm", "tcp", "mpi", "auto"), or NULL: what
	 * coll_init uses when neither its config nor COLL_TRANSPORT names one,
	 * so coll_init_env and NAME_init agree.  Appended in ABI 4. */
	const char *transport;
	/* Appended in ABI 5. */
	/* `reorder at init`: probe the network when a communicator starts,
	 * choose the order with the cost model in libcollrt, and cache it per
	 * host list (runtime/reorder.c).  COLL_REORDER_NONE (0, the default)
	 * or COLL_REORDER_INIT.  The order is chosen for reorder_algo (an
	 * allreduce of this set; NULL: the size table's choice) at
	 * reorder_bytes (0: 64 MiB). */
	int32_t reorder;
	const char *reorder_algo;
	uint64_t reorder_bytes;
	/* The cluster's rails ("tcp:eth0,tcp:eth1": TRANSPORT[:WHERE] each),
	 * or NULL: one network, the transport above.  COLL_RAILS overrides it.
	 * Appended in ABI 6. */
	const char *rails;
	/* How messages use the rails (NULL: COLL_RAIL_POLICY_DEFAULT);
	 * COLL_POLICY overrides its fields. */
	const coll_rail_policy *policy;
	/* Appended in ABI 7.  `choose by measure`: the collectives (bit k:
	 * coll_kind k) whose size table the communicator measures when it
	 * starts, caching it per host list (runtime/tuneinit.c); 0: none.
	 * COLL_TUNE=init measures every collective, COLL_TUNE=off none. */
	uint32_t tune_kinds;
};
#define COLL_STRAGGLER_NONE 0
#define COLL_STRAGGLER_AUTO (-1)
#define COLL_REORDER_NONE 0
#define COLL_REORDER_INIT 1

#define COLL_PLAN_SET(name, n, algos, choices)                                     \
	{ COLL_PLAN_ABI, (name), (n), (algos), (int32_t)(sizeof(algos) / sizeof((algos)[0])), \
	  (choices), (int32_t)(sizeof(choices) / sizeof((choices)[0])), NULL, COLL_STRAGGLER_NONE, NULL, 0, NULL, \
	  COLL_REORDER_NONE, NULL, 0, NULL, NULL, 0 }
/* The same with a declared straggler (1 + its rank). */
#define COLL_PLAN_SET_STRAGGLER(name, n, algos, choices, straggler)              \
	{ COLL_PLAN_ABI, (name), (n), (algos), (int32_t)(sizeof(algos) / sizeof((algos)[0])), \
	  (choices), (int32_t)(sizeof(choices) / sizeof((choices)[0])), NULL, (straggler), NULL, 0, NULL, \
	  COLL_REORDER_NONE, NULL, 0, NULL, NULL, 0 }
/* `straggler auto` with its table of critical delays (a coll_crit array). */
#define COLL_PLAN_SET_AUTO(name, n, algos, choices, crit)                          \
	{ COLL_PLAN_ABI, (name), (n), (algos), (int32_t)(sizeof(algos) / sizeof((algos)[0])), \
	  (choices), (int32_t)(sizeof(choices) / sizeof((choices)[0])), NULL, COLL_STRAGGLER_AUTO, \
	  (crit), (int32_t)(sizeof(crit) / sizeof((crit)[0])), NULL, COLL_REORDER_NONE, NULL, 0, NULL, NULL, 0 }

/* --- building plans at run time ------------------------------------------ */

/* One transfer of a schedule, as the compiler's IR holds it. */
typedef struct {
	int32_t round, src, dst, chunk;
	int32_t reduce;   /* 0: copy, 1: reduce */
} coll_xfer;

/* Lower a global schedule (transfers in any round order) into a heap
 * coll_algo with one sorted step list per rank; the order of transfers
 * within a round is kept, so FIFO matching holds.  `name` is copied.
 * Does not block.  Returns NULL on out-of-memory or a bad argument (rank
 * or chunk out of range, src == dst).  Free with coll_algo_free. */
COLL_API coll_algo *coll_algo_build(const char *name, coll_kind kind, int nranks, int chunks,
                                    int root, const coll_xfer *xfers, int nxfers);
COLL_API void coll_algo_free(coll_algo *a);

/* A heap plan set over `algos` (borrowed: they must outlive the set) with
 * an optional choice table (copied).  NULL on out-of-memory.  Free with
 * coll_plan_set_free (which frees neither the algos nor their names). */
COLL_API coll_plan_set *coll_plan_set_build(const char *name, int nranks, const coll_algo *const *algos,
                                            int nalgos, const coll_choice *choices, int nchoices);
COLL_API void coll_plan_set_free(coll_plan_set *s);

/* Check a plan set: ranks, peers and chunks in range, steps sorted by
 * round, sends and receives of every pair matched in FIFO order, chunk
 * ownership for reduce_scatter/allgather.  Does not block.  Returns COLL_OK
 * or COLL_ERR_PLAN, writing a one-line reason to why[0..whylen) if given. */
COLL_API coll_result coll_plan_set_check(const coll_plan_set *s, char *why, size_t whylen);

/* Execute an algorithm not in the communicator's plan set (e.g. one built
 * at run time).  `count` is the full working count (reduce_scatter:
 * nranks*recvcount; allgather: nranks*sendcount); buffers as for the
 * matching coll_ call.  Blocking; errors as the collectives plus PLAN. */
COLL_API coll_result coll_run_algo(coll_comm *comm, const coll_algo *algo, const void *sendbuf,
                                   void *recvbuf, size_t count, coll_dtype dt, coll_op op);

#ifdef __cplusplus
}
#endif
#endif
