/*
 * reorder.h - rank reordering: which physical rank should play each rank
 * of a schedule so that the schedule runs fastest on a given network.
 *
 * Pipeline position: beside the cost model, whose rounds model it
 * minimises.  Input: a cost plan (any verified schedule: the search knows
 * no algorithm), a buffer size and a physical link model (per-pair costs
 * and shared segments, linkmodel.h: probed by collprobe or declared);
 * output: a permutation perm, schedule rank r -> physical rank perm[r],
 * the meaning of cost_params.perm and of the runtime's coll_plan_set.perm.
 * `collc reorder` (codegen/cmd/cmd_reorder.c), `collc build` for a
 * cluster with `reorder by cost` (codegen/choose.c) and libcollrt's
 * `reorder at init` (runtime/reorder.c) call it: one search on the model
 * floor, below both.  Files: reorder.c (the search and its entry points),
 * reorder_state.c (round patterns and the incremental objective),
 * reorder_spread.c (orders spread over the range of costs);
 * reorder_int.h is what they share.
 *
 * The objective is the rounds model of cost.h with the order applied:
 * T(perm) = sum over rounds of the round's time, which with shared
 * segments is the slowest of its messages, each taking alpha + max(bytes
 * * beta, the drain time of the busiest segment it crosses).  Ties on T
 * (per-pair costs alone cannot see a trunk: every ring that leaves a rack
 * has one slow hop per round) are broken by the rank-reordering paper's
 * sum of hop costs H(perm) = sum over every message of alpha + bytes *
 * beta, so that on a rack network the answer still crosses racks least.
 * A last key, S (the seconds shared segments are busy, summed over
 * rounds), separates what T and H leave tied: on a probed rack network
 * every pair alone runs at the host rate, so H is flat and T moves only
 * with the busiest trunk, while S counts every crossing.  Orders compare
 * lexicographically on (T, H, S), each within a relative 1e-9.
 *
 * Search (the paper's two stages, section IV-C):
 * - starts: the identity, the physical ranks sorted by the groups they
 *   are in (contiguous, and dealt round-robin from the groups), and a
 *   nearest-neighbour chain on pair costs;
 * - simulated annealing, run from each start in turn and then again
 *   from the best with fresh random numbers while the move budget allows
 *   (REORDER_RESTARTS, REORDER_MAX_MOVES), over permutations with swap
 *   moves (two ranks trade physical ranks) and segment reversals
 *   (positions i..j of perm reversed: a 2-opt move, the one that
 *   straightens a ring), evaluated incrementally: rounds with the same
 *   messages (src, dst, bytes) are one *pattern* counted with its
 *   multiplicity (ring: 1 pattern x 2(n-1) rounds; rhd: log2 n patterns,
 *   each reduce-scatter round matching an allgather round), and a move
 *   re-costs only the messages of the ranks it moves: per pattern the
 *   slowest message is kept as a maximum with its count, each segment's
 *   load as an integer count of chunks;
 * - then, for n <= exact_max, branch and bound over assignments of
 *   physical ranks to schedule ranks 0, 1, ..., seeded with the annealing
 *   result as the incumbent (as the paper seeds its solver with the
 *   annealing cost), pruning on a lower bound: the costs of messages
 *   whose ends are both placed, and for the rest the cheapest pair any
 *   message of their size could get.  When it finishes, the best order is
 *   proven optimal for the objective.
 * Deterministic for a given seed and move budget; the time limit only
 * stops early (reported), so results repeat unless it cuts in.
 *
 * Allocation: malloc/calloc with every failure returned as an error
 * (link_error "out of memory"): the search runs inside libcollrt, which
 * must not abort on its caller's behalf.
 */
#ifndef COLL_REORDER_H
#define COLL_REORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "cost.h"
#include "linkmodel.h"

#define REORDER_EXACT_MAX 10   /* default: branch and bound up to this many ranks */
/* Annealing runs: one run's result depends on its random numbers (rhd at
 * n = 16 on a probed 4-rack network: 4.99 s from seed 1, 3.98 and 3.91 s
 * from seeds 2 and 3, each in 0.2 s), so small instances are annealed
 * several times and the best kept: run k from the k-th best start (see
 * reorder.c, starting orders), runs past the starts from the best one
 * with other random numbers.  With 8 runs, seeds 1-10 all reached the
 * best order known on the bench's 4-rack networks (rhd and dbt, n = 8 and
 * 16); with 4, one seed in ten fell 4% short.
 *
 * The budget is counted in moves, never in seconds, so the answer for a
 * seed is the same on every machine.  A move re-costs the messages of the
 * ranks it moves, so a search gets REORDER_MAX_MOVES x 2 / d moves in all,
 * d the mean messages per rank (both ends; ring 2, rhd 2 log n): about the
 * same work for every schedule.  A run's default is 200 n^2 moves (every
 * pair of ranks proposed many times), at most an eighth of that, at least
 * REORDER_MIN_MOVES: n <= 16 gets 8 runs of 200 n^2; ring at n = 512 8 of
 * 250000, rhd at n = 64 8 of 41666.  On the bench's rhd n = 64 network,
 * two runs of 819200 moves (the whole budget, before it was divided by d)
 * found no better order than eight runs of 5000 (11.83 s predicted), and
 * eight of 50000 the best (11.58 s): once a run has settled, more moves
 * there buy less than another start. */
#define REORDER_RESTARTS 8
#define REORDER_MAX_MOVES 2000000
#define REORDER_MIN_MOVES 20000   /* a run's least default moves */

typedef struct {
	double bytes;            /* the buffer size the order is chosen for */
	uint64_t seed;           /* annealing's random numbers */
	long moves;              /* annealing moves per run; 0: a default that grows with n */
	double effort;           /* the whole budget (and so the default per run) times this; 0: 1.
				    Reorder at init uses a quarter (runtime/reorder.c says why) */
	double time_limit;       /* seconds for the whole search; 0: none */
	int exact_max;           /* branch and bound when n <= this; 0: REORDER_EXACT_MAX, < 0: never */
	const int32_t *start;    /* where annealing starts (NULL: the identity order) */
} reorder_opts;

typedef struct {
	int n;
	int32_t *perm;           /* the best order found: schedule rank -> physical rank (owned) */
	double t_identity, t_best;   /* the objective T (seconds) of the identity and the best order */
	double h_identity, h_best;   /* their sums of hop costs H (seconds) */
	double s_identity, s_best;   /* their segment busy times S (seconds; reorder.c) */
	double lower_bound;      /* a lower bound on T over every order (NaN: none computed) */
	bool optimal;            /* proven: branch and bound finished (perm minimises (T, H, S)),
				    or T met the lower bound (bound_met: T is minimal) */
	bool bound_met;
	bool exact_ran;          /* branch and bound was tried */
	bool stopped;            /* the time limit cut the search short */
	long moves, accepted;    /* annealing moves tried and taken, over all runs */
	int runs;                /* annealing runs (restarts + 1) */
	long nodes;              /* branch-and-bound nodes */
	int npatterns, nrounds;  /* distinct round patterns, rounds */
	const char *start;       /* where annealing started: "identity", "by group",
				    "nearest neighbour" or "given" (the best of them) */
	double seconds;          /* wall time of the search */
} reorder_result;

/* reorder.c */
/* Search for the best order of p's ranks on lm (a physical model of p->n
 * ranks).  0, or -1 with err set (bad arguments, out of memory); free r
 * with reorder_result_free in both cases. */
int reorder_search(const cost_plan *p, const link_model *lm, const reorder_opts *o, reorder_result *r,
		   link_error *err);
void reorder_result_free(reorder_result *r);
/* The objective (T, H) of one order (NULL: identity), as the search
 * computes it; T equals cost_rounds with cost_params.perm = perm for every
 * schedule that respects its port model.  0 or -1 with err set. */
int reorder_eval(const cost_plan *p, const link_model *lm, double bytes, const int32_t *perm, double *t,
		 double *h, link_error *err);
/* Every order of p's n <= 11 ranks (Heap's algorithm, one incremental
 * swap per order): the reference the search is tested against.  r as
 * reorder_search fills it, optimal always set. */
int reorder_exhaustive(const cost_plan *p, const link_model *lm, double bytes, reorder_result *r, link_error *err);
/* Parse an order "3,1,0,2" (or blanks between the ranks) of n ranks
 * (n <= 0: as many as listed) into a new array (*perm, free()), checked
 * to be a permutation.  0 or -1 with err set. */
int reorder_parse_perm(const char *text, int n, int32_t **perm, int *count, link_error *err);

/* reorder_spread.c */
/* A cost of one order (schedule rank -> physical rank), e.g. a
 * simulation: seconds, or negative on an error. */
typedef double (*reorder_cost_fn)(void *ctx, const int32_t *perm);
/* The rank-reordering paper's test of a cost model (its Table I): k
 * orders whose cost lies about i/k of the way from best's (NULL: the
 * identity's) to the highest cost found, i = 1..k, the k-th being that
 * highest (walks uphill from random orders: a heuristic top, not a proven
 * worst).  The cost is fn (NULL: the objective T, whose segment maxima
 * leave few distinct values; a simulation spreads better).  Random orders
 * cluster where most of them cross the network alike; these span the
 * range, so measuring them asks whether the model ranks orders that
 * differ.  Each order walks by swaps from the one before, to an order
 * that is neither best, the top nor an earlier one (where the costs have
 * few values, other orders of the same cost).  orders: k x n ranks, t:
 * their k costs.  Deterministic for a given seed.  0 or -1 with err set. */
int reorder_spread(const cost_plan *p, const link_model *lm, double bytes, const int32_t *best, int k,
		   uint64_t seed, reorder_cost_fn fn, void *ctx, int32_t *orders, double *t, link_error *err);

#endif
