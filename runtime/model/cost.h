/*
 * cost.h - predicted time of a schedule, from the schedule itself.
 *
 * Pipeline position: the model floor (runtime/model/), below the compiler
 * and the runtime alike.  Input: a schedule as the neutral transfer list
 * of coll_plan.h (coll_xfer: round, src, dst, chunk, copy or reduce),
 * handed over round by round to a cost_plan builder (cost_plan_new,
 * cost_plan_add, cost_plan_done) by collc (codegen/costplan.c, from its
 * verified IR) or by libcollrt (runtime/reorder.c, from a rank plan), a
 * buffer size and a link model (linkmodel.h); output: a time, algbw and
 * busbw, and for the simulator the timeline, each rank's idle time and
 * the critical path.  No algorithm has a formula here: every schedule,
 * including one a user has just written, is costed by walking its
 * rounds, and the papers' closed forms are tests of this code
 * (tests/unit/test_cost.c), not its source.
 *
 * Files, from the top: models.c (the models' table, the critical
 * delay), rounds.c (model "rounds"), sim.c (model "sim" and what `collc
 * sim` reports), fluid.c (the simulation with shared segments), share.c
 * (max-min and alpha-fair allocations), cost.c (plans and checks);
 * cost_int.h is what they share.
 * Allocation is plain malloc, every failure an error returned (a library
 * must not abort on its caller's behalf).
 *
 * Shared conventions of both models:
 * - Chunk bytes = working buffer bytes / chunks, where the working buffer
 *   is the size asked for (nccl-tests' size: the larger of a rank's send
 *   and receive buffers), times n for alltoall (coll_kinds.h).  Transfers of one round between
 *   the same ordered pair travel as one message (one alpha, their bytes
 *   summed), as the language defines; a message from i to j of b bytes
 *   takes alpha_ij + b * beta_ij and holds one send port of i and one
 *   receive port of j (ports_send / ports_recv of the schedule).  With a
 *   shared rank bandwidth (link_model.rank_bw) a rank's k messages of a
 *   round each get at most rank_bw / k (the fluid simulation under TCP
 *   sharing: see "A rank's link under TCP").
 * - Rounds whose phase name starts with "pre" (StragglAR's reduce-scatter
 *   precondition, the Broadcast baseline's allreduce) are the work the
 *   other ranks can do while a straggler is late.
 * - A straggler (rank R, delay D) joins at time D; everyone else at 0.
 *   `time` is measured from when the last rank joined (D, or 0 without a
 *   straggler): it is the time the delay did not hide, which is what
 *   StragglAR's Table 1, its section 4.2 critical-delay rule and nccl-tests'
 *   algbw refer to.  `total` is measured from 0.
 * - COST_MASKED as the delay means "long enough": the straggler joins when
 *   everything that does not need it has finished (the paper's assumption
 *   of a delay that hides the precondition).
 *
 * Models (cost_models[], chosen by name, same shape: parameters + hook):
 * - "rounds": round-synchronous.  Every round lasts as long as its slowest
 *   message; rounds run back to back.  Precondition rounds run among the
 *   other ranks from time 0; the first other round starts at
 *   max(D, precondition time).  Ignores segments.
 * - "sim": event-driven.  Each rank runs its plan in order (no barrier per
 *   round): a message starts when its source holds every chunk it sends
 *   (the last write to that (rank, chunk) in an earlier round has landed),
 *   a send port of the source and a receive port of the destination are
 *   free, and both ranks have joined.  With S segments the buffer is cut
 *   into S pieces that run through the schedule one after the other
 *   (segment g runs round k in step k + g), so later rounds of early
 *   segments overlap earlier rounds of late ones.  A reduce lands when
 *   both the message and the receiver's own copy are there; reductions
 *   cost nothing.
 *
 * One host (link_model.host, linkmodel.h; host.c).  Over shared memory
 * the ranks' copies and reductions, not links, take the time.  Each
 * message costs its sender's core a copy of its bytes into a staging slot
 * and its receiver's a copy out, or for reduced chunks a reduction that
 * reads the slot in place.  A copy runs at mem_bw / k per core (k =
 * min(cores, n) cores copying at once share the memory bandwidth), a
 * reduction at reduce_bw but no faster than 1.5 copies (it reads two
 * bytes and writes one; reduce_bw is one core's rate alone); with more
 * ranks than cores each rank's core runs at cores / n of its speed
 * whether the rank is busy or waiting (waiting ranks poll and yield:
 * measured, trees whose busiest rank did twice the average ran 1.4-1.5x
 * ring's time at n = 4 on 2 cores).  The executor's sending on from the
 * message (exec.c) is counted: a chunk its sender received in an earlier
 * round, whose next use at that rank is this send and the use after it a
 * receive-copy (RT_AFTER_OVERWRITE: ring's partial sums), is reduced
 * straight into the outgoing message and costs no copy in.
 * "rounds": a round lasts at least as long as its busiest rank's core
 * needs for the round's work.  "sim": each rank's core is a clock that
 * every message it sends or receives advances by its work, from the
 * message's start at the earliest, and the message lands alpha after
 * both ends' clocks; the fluid simulation (shared segments) takes the
 * rounds model's per-round least duration instead.  Not modelled: a
 * per-message CPU cost, caches, several hosts.  Ties: candidates the
 * host model prices the same (ring, rhd, direct, bcube at n = 2) keep the
 * order collc tune finds them in; nothing prefers fewer messages yet.
 *
 * Rank orders: cost_params.perm says which physical rank plays each
 * schedule rank (perm[r], NULL: r itself).  Link costs and shared
 * segments are physical (what a probe measured between hosts), so a
 * message of the schedule from a to b is charged as one from perm[a] to
 * perm[b]; the rank reordering search (reorder.h) minimises over perm.
 *
 * Shared segments (linkmodel.h: a rack's uplink, a trunk, a NIC): the
 * messages crossing one at the same time divide its capacity, in one of
 * two ways (cost_params.share_alpha).  Max-min fairness (0): a flow
 * limited elsewhere (its own link, another segment) takes only what it
 * can use, and the others share the rest equally, as a switch's fair
 * queueing gives; an equal split would leave that capacity idle.  Or
 * alpha-fairness (COST_TCP_ALPHA, 2; collc's default with --links): the
 * allocation that maximises the sum of x^(1-alpha)/(1-alpha), which is
 * what TCP's congestion control comes close to (Kelly; Massoulie and
 * Roberts): a flow that crosses two loaded segments gets less than one
 * that crosses one of them, where max-min gives both the same.  That
 * difference is what orders rings that cross oversubscribed trunks alike:
 * on 4 racks of 2 hosts (4:1 trunks) rings whose every rack sends two
 * flows out measured about 10 s at 16 MiB, and those mixing racks that
 * send one and two 10.6-12.2 s, over five runs; max-min calls them all
 * equal.  When every flow is limited by the same segment the two agree.
 * TCP's rate also goes as 1/RTT, and on a loaded shaper the RTT is mostly
 * queue, met by the data and by its acknowledgements on the way back;
 * share_rtt (collc's `--sharing tcp`, the default with --links) weights
 * each flow by 1/RTT^2 (the weight in Reno's utility, -1/(RTT^2 x)),
 * counting its RTT in the loaded segments of both ways.  A round trace
 * on that network showed why: a ring whose two slowest flows each cross
 * two loaded trunks, and whose acknowledgements queue behind the other's
 * data, moved them at about 2 MB/s of a 6.2 MB/s trunk while the flows
 * sharing their trunks with one loaded segment each way took the rest
 * (measured 12.4-12.9 s; unweighted alpha = 2 predicted 10.04 s, the
 * weighted 10.91).
 *
 * Which flow of a crowded segment TCP favours is luck, and it changes from
 * one call to the next (steady flows between the same hosts: one moved
 * 4.5 to 23.3 Mbit/s over six 10 s runs).  The fluid allocation gives each
 * flow its expected share, but a round ends with its slowest flow, and
 * when flows crossing two loaded segments draw unequal shares one
 * segment idles while another still works: the expected time is above
 * the time of the expected shares.  share_jitter (collc's `--jitter
 * SIGMA`) multiplies each connection's weight in each round by
 * e^(SIGMA z), z a standard normal drawn from a hash of (its schedule
 * ranks, the round, the draw), and the simulated time is the mean of
 * share_samples such runs.  A hash, so a run repeats exactly; schedule
 * ranks, so every order meets the same draws (common random numbers):
 * orders the network cannot tell apart get the same time, where draws per
 * host pair parted them by about 1%, the spread between the orders a
 * search must rank.  Weights go into the rate as
 * w^(1/alpha), so SIGMA = 1 at alpha = 2 spreads a flow's log-rate by
 * about 0.5: the 2 s rates of the flows crossing a 4:1 trunk spread by
 * 0.18-0.58 (log), more over a round's second (tests/results/reorder.md).
 * Only the fluid simulation (shared segments) draws.
 * - "rounds": a message of b bytes takes alpha + max(b * beta, L_s / C_s
 *   for every segment s it crosses), L_s being the bytes all messages of
 *   its round put through s and C_s its capacity: a round cannot end
 *   before its busiest segment has drained.  For a round of equal
 *   messages sharing one bottleneck this is what either sharing gives.
 * - "sim": a fluid simulation.  A message, once its data and ports are
 *   ready, is a flow whose rate the allocation (max-min or alpha-fair)
 *   over every active flow gives (recomputed whenever a flow starts or
 *   ends), capped by its own pair bandwidth (and rank_bw / share, or
 *   under TCP sharing as below); it lands alpha after its last byte
 *   left.  Without segments both models are exactly what they were (the
 *   segment-free code paths run).
 *
 * A rank's link under TCP (the fluid simulation with alpha-fair sharing
 * and a rank bandwidth).  rank_bw / share as a fixed cap splits a rank's
 * link evenly between the messages of its round, but TCP does not: where
 * one of them also crosses a loaded trunk it gets less of the link than
 * one from the same rack.  In dbt's first round on 2 racks (n8r2, order
 * 5,3,2,1,4,6,0,7, 16 MiB, COLL_TRACE_ROUNDS) the same-rack flows into a
 * rank moved their 8 MiB in 0.91-1.09 s and the cross-rack ones in
 * 1.72-1.75 s, the trunk partly idle meanwhile; the even split predicts
 * 1.34 s for both, and the order 5.5 s where it took 6.6.  So a rank's way
 * out and its way in are resources of the allocation as segments are
 * (capacity rank_bw, alpha-fair, counted in the RTT), and of the fixed cap
 * stays how fast one of share flows runs once the others are done:
 * COST_TCP_TAKEBACK x rank_bw / share (at most rank_bw).  TCP does not take
 * the whole link back at once (BBR raises its rate by a quarter per eight
 * round trips, and a shaper's queue makes those long), and neither end
 * fits the stored dbt runs: with half the link (the old cap) their n8r2
 * and n16r2 orders ranked at Spearman 0.68-0.92, with the whole link one
 * n16r2 order came out 20% fast; 1.4-1.6 ranked those at 0.72-0.97 with
 * every order within 15%, and the 4-rack runs alike, so 1.5, their middle
 * (tests/results/reorder.md).  ring and rhd send one message a round each
 * way, which this leaves as they were.
 *
 * Round order (cost_params.round_order; collc's default with --links):
 * both simulations then run as libcollrt's executor does on TCP: a rank's
 * sends of round k start only after all its sends of earlier rounds, its
 * receives after all its earlier receives, the segments of a round before
 * the next round's (round-major).  Without it a rank that works in two
 * trees at once (dbt) pipelines through both, which the executor does not
 * do on TCP: dbt on the emulated cluster measured 1.06-1.75x the
 * free-running prediction, 0.98-1.09x the round-ordered one.
 */
#ifndef COLL_COST_H
#define COLL_COST_H

#include <stdint.h>

#include "coll_kinds.h"
#include "coll_plan.h"
#include "linkmodel.h"

#define COST_MASKED (-1.0)   /* cost_params.delay: a delay that hides all it can */

/* One message of a plan: the transfers of one round from src to dst. */
typedef struct {
	int32_t src, dst;
	int32_t round;         /* index into the schedule's rounds */
	int32_t first, count;  /* its transfers: plan->chunk/op[first .. first+count) */
	int32_t share;         /* messages its source sends or its destination
				  receives in this round, whichever is more */
} cost_pmsg;

/* What the model needs to know of a schedule besides its transfers. */
typedef struct {
	const char *name;      /* the algorithm, for messages (copied) */
	int kind;              /* coll_kind */
	int n, chunks;
	int ports_send, ports_recv;   /* the port model: peers a rank sends to (receives from) per round */
	int nrounds;
	size_t nxfers;         /* transfers in all, at most (the arrays are sized once) */
	const uint8_t *pre;    /* per round: 1 for a precondition round (below; copied); NULL: none */
} cost_shape;

struct cost_plan_build;

/* A schedule prepared for costing; built once, evaluated for many sizes
 * and link models. */
typedef struct {
	char *name;            /* the algorithm (owned) */
	int kind;              /* coll_kind */
	int n, chunks, nrounds;
	int work;              /* working buffer / asked size: n for alltoall, else 1 */
	int ports_send, ports_recv;
	int nmsgs;
	cost_pmsg *msgs;       /* round by round, in program order within a round */
	int *round_first;      /* messages of round k: [round_first[k], round_first[k+1]) */
	int32_t *chunk;        /* per transfer: chunk index */
	uint8_t *reduce;       /* per transfer: 1 reduce, 0 copy */
	uint8_t *pre;          /* per round: 1 when it is a precondition round */
	int npre;              /* how many rounds are precondition rounds */
	struct cost_plan_build *build;   /* while cost_plan_add takes transfers; NULL once done */
} cost_plan;

typedef struct {
	double bytes;              /* buffer size */
	const link_model *links;
	int straggler;             /* rank that joins late; -1: none */
	double delay;              /* its delay (s), or COST_MASKED */
	int segments;              /* pipelining (sim only); 1 = none */
	int round_order;           /* sim: a rank's sends (receives) of a round wait
				      until all its earlier rounds' sends have left
				      (receives landed), as libcollrt runs on TCP */
	const int32_t *perm;       /* schedule rank r runs on physical rank perm[r]; NULL: r */
	double share_alpha;        /* sim: flows share a segment alpha-fairly (COST_TCP_ALPHA
				      as TCP does; at most 8); 0: max-min */
	int share_rtt;             /* sim, with share_alpha: weight each flow by 1/RTT^2, its
				      RTT the loaded segments its data and acknowledgements
				      pass (TCP's rate goes as 1/RTT; see above) */
	double share_jitter;       /* sim, with share_alpha: each connection's weight in a
				      round times e^(share_jitter z), z standard normal; the
				      time is the mean of share_samples draws (see above); 0: none */
	int share_samples;         /* draws with share_jitter (0: COST_JITTER_SAMPLES) */
} cost_params;

#define COST_TCP_ALPHA 2.0   /* TCP's sharing as an alpha-fair allocation (see above) */
#define COST_TCP_TAKEBACK 1.5 /* one of k >= 2 flows of a rank's round runs at most 1.5/k of its link
				 (above; at most 2, so never above the link) */
#define COST_JITTER_SAMPLES 8  /* draws of TCP's luck (share_jitter) by default */
#define COST_JITTER_MAX 4.0    /* share_jitter at most (one standard deviation: a 55x weight) */

/* The draws share_jitter averages over. */
static inline int cost_jitter_samples(const cost_params *q)
{
	return q->share_samples > 0 ? q->share_samples : COST_JITTER_SAMPLES;
}

typedef struct {
	double time;               /* completion - when the last rank joined (s) */
	double total;              /* completion measured from 0 (s) */
	double join;               /* when the last rank joined (s) */
	double pre;                /* precondition: rounds model, its duration; sim,
				      when its last transfer ended (0 if none) */
	double algbw, busbw;       /* bytes / time, and algbw * busbw factor (B/s) */
} cost_result;

/* The physical rank of schedule rank r under perm (NULL: r). */
static inline int cost_phys(const int32_t *perm, int r) { return perm ? perm[r] : r; }
/* The inverse bandwidth message m gets on its own: its pair's (physical
 * ranks under perm), capped at takeback x rank_bw / share when ranks
 * share theirs (takeback 1 but in the fluid simulation under TCP: "A
 * rank's link under TCP", above). */
static inline double cost_msg_beta_at(const link_model *lm, const int32_t *perm, const cost_pmsg *m, double takeback)
{
	double beta = link_beta(lm, cost_phys(perm, m->src), cost_phys(perm, m->dst));
	if (lm->rank_bw > 0 && m->share / (takeback * lm->rank_bw) > beta)
		beta = m->share / (takeback * lm->rank_bw);
	return beta;
}
static inline double cost_msg_beta(const link_model *lm, const int32_t *perm, const cost_pmsg *m)
{
	return cost_msg_beta_at(lm, perm, m, 1);
}
/* Seconds for message m of `bytes` under lm and perm: alpha_ij + bytes *
 * beta (cost_msg_beta), not counting shared segments. */
static inline double cost_msg_time_p(const link_model *lm, const int32_t *perm, const cost_pmsg *m, double bytes)
{
	return link_alpha(lm, cost_phys(perm, m->src), cost_phys(perm, m->dst)) + bytes * cost_msg_beta(lm, perm, m);
}
/* The same in the identity order. */
static inline double cost_msg_time(const link_model *lm, const cost_pmsg *m, double bytes)
{
	return cost_msg_time_p(lm, NULL, m, bytes);
}

/* Why a simulated message started when it did (the binding constraint). */
typedef enum {
	COST_WAIT_NONE,            /* started at 0 */
	COST_WAIT_DATA,            /* a chunk it sends had just landed */
	COST_WAIT_SEND,            /* its source's send port was busy */
	COST_WAIT_RECV,            /* its destination's receive port was busy */
	COST_WAIT_JOIN             /* a rank had not joined yet (straggler) */
} cost_wait;

/* One simulated message. */
typedef struct {
	int32_t msg;               /* index into plan->msgs */
	int32_t seg;               /* segment */
	double bytes, start, end;
	int32_t pred;              /* sim message it waited for, -1 none */
	uint8_t why;               /* cost_wait */
} cost_smsg;

typedef struct {
	cost_result r;
	int n, nmsgs;
	cost_smsg *msgs;           /* in simulation order */
	double *join;              /* per rank: when it joined */
	double *busy;              /* per rank: time sending or receiving */
	double *idle;              /* per rank: completion - join - busy */
	double *done;              /* per rank: end of its last message */
	int *path, npath;          /* critical path, first to last (indices into msgs) */
} cost_sim;

typedef int (*cost_predict_fn)(const cost_plan *p, const cost_params *q,
			       cost_result *r, link_error *err);

typedef struct {
	const char *name;          /* "rounds", "sim" */
	const char *what;          /* one line for --help and reports */
	cost_predict_fn predict;
} cost_model;

/* cost.c */
/* Building a plan: cost_plan_new with the schedule's shape, then its
 * transfers through cost_plan_add (one call or many, in rounds that never
 * go back; within a round in program order, which is the order messages
 * between two ranks are matched in), then cost_plan_done.  Each returns
 * NULL or -1 with err set: a bad shape, a transfer naming a rank or chunk
 * out of range or src == dst (an unverified schedule), rounds out of
 * order, more transfers than the shape said, out of memory.  After an
 * error the plan is still to be freed with cost_plan_free. */
cost_plan *cost_plan_new(const cost_shape *sh, link_error *err);
int cost_plan_add(cost_plan *p, const coll_xfer *x, size_t nx, link_error *err);
int cost_plan_done(cost_plan *p, link_error *err);
void cost_plan_free(cost_plan *p);
/* Check q against p (size, segments, straggler rank, link matrix size);
 * every entry point below does this first. */
int cost_check(const cost_plan *p, const cost_params *q, link_error *err);
/* Is perm (n entries) a permutation of 0..n-1?  0, or -1 with a message. */
int cost_check_perm(const int32_t *perm, int n, link_error *err);

/* nccl-tests' busbw factor: allreduce 2(n-1)/n, reduce_scatter and
 * allgather (n-1)/n, broadcast and reduce 1. */
double cost_busbw_factor(int kind, int n);

/* rounds.c */
/* Round-synchronous estimate (model "rounds"). */
int cost_rounds(const cost_plan *p, const cost_params *q, cost_result *r, link_error *err);

/* sim.c */
/* Event-driven simulation (model "sim"), result only. */
int cost_sim_time(const cost_plan *p, const cost_params *q, cost_result *r, link_error *err);
/* Event-driven simulation with the timeline, idle times and critical
 * path.  NULL with err set on bad parameters.  Free with cost_sim_free. */
cost_sim *cost_simulate(const cost_plan *p, const cost_params *q, link_error *err);
void cost_sim_free(cost_sim *sim);

/* models.c */
/* The models, ending with a NULL name. */
extern const cost_model cost_models[];
/* The model called `name`, or NULL. */
const cost_model *cost_model_find(const char *name);
/* The smallest straggler delay at which `algo` takes no longer than `base`
 * after the straggler joins (both judged by model m, straggler and size
 * from q; q->delay is ignored).  Returns 0 and sets *delay, 1 when algo
 * never catches up (not even with the delay masking all it can), -1 on
 * error.  Found by searching the model, not by a formula. */
int cost_critical_delay(const cost_model *m, const cost_plan *algo, const cost_plan *base,
			const cost_params *q, double *delay, link_error *err);
/* StragglAR section 4.2's rule: algo wins when the delay is at least
 * t_rs - max(t_base - t_algo, 0), t_rs being algo's precondition time and
 * t_algo, t_base the times after the straggler joins with the
 * precondition hidden.  Returns that bound (>= 0), or INFINITY when
 * t_algo > t_base (then no delay is enough; the rule as printed assumes
 * t_algo <= t_base). */
double cost_critical_delay_rule(double t_rs, double t_base, double t_algo);

/* share.c */
/* Max-min fair rates (progressive filling): nflows flows, flow f capped
 * at cap[f] (> 0) and crossing the resources res[off[f] .. off[f+1]) of
 * nres resources with capacities rcap[] (> 0).  Every flow gets the
 * largest rate such that no resource is over capacity and no flow could
 * get more without taking from one that has less.  Writes rate[f].
 * Returns 0, or -1 when out of memory. */
int cost_maxmin(int nflows, const double *cap, const int *off, const int *res, int nres, const double *rcap,
		double *rate);
/* The same flows and resources shared alpha-fairly (0 < alpha <= 8, where
 * its prices, about (flows / capacity)^alpha, stay well inside a double;
 * see the top of this file).  Writes rate[f].  0, or -1 when out of memory. */
int cost_alphafair(int nflows, const double *cap, const int *off, const int *res, int nres, const double *rcap,
		   double alpha, double *rate);

#endif
