/*
 * reorder_int.h - what the rank reordering search's files share
 * (reorder.h is their public face): the incremental state of
 * reorder_state.c, which the search (reorder.c) and the spread of orders
 * (reorder_spread.c) move through.  Prototypes are grouped by the file
 * that defines them.
 */
#ifndef COLL_REORDER_INT_H
#define COLL_REORDER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "reorder.h"

#define TIE 1e-9   /* relative: two objectives this close are equal */

/* A maximum with its count (reorder_state.c: mx_add, mx_del). */
typedef struct {
	double max;
	int cnt;
	int dirty;
} mxc;

typedef struct {
	int32_t src, dst, k, share;   /* schedule ranks, chunks, cost_pmsg.share */
	int32_t pat;
} rs_msg;

typedef struct {
	int first, count;   /* its messages in rs.msgs */
	double mult;        /* rounds with this pattern */
	double gmin;        /* the largest, over its messages, of the cheapest cost a message of that size can have */
} rs_pat;

/* A message as rs_msg_apply last added it: what finding a lost maximum
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

/* An order's score: the objective T, then the paper's sum of hop costs
 * H, then S, the seconds shared segments are busy summed over rounds:
 * with uniform per-pair costs (a probed rack network, where every pair
 * alone runs at the host rate) T moves only when the busiest trunk does
 * and H never, while S counts every message that crosses a trunk, so it
 * ranks the orders T and H cannot and gives annealing a slope there. */
typedef struct {
	double t, h, s;
} score;

/* reorder_state.c */
/* Free what s holds; s becomes empty. */
void rs_free(rs *s);
/* The search's state for p on lm at `bytes`: patterns, per-rank
 * incidence, the identity order placed everywhere.  0 or -1 with err set
 * (out of memory); rs_free in both cases. */
int rs_init(rs *s, const cost_plan *p, const link_model *lm, double bytes, link_error *err);
/* The cheapest any message of k chunks (with that share) could cost on
 * any pair: for the branch-and-bound bound. */
double rs_cheapest(const rs *s, const rs_msg *m);
/* Add (sign +1) or remove (-1) message i's contributions under the
 * current perm. */
void rs_msg_apply(rs *s, int i, int sign);
/* Bring T and S up to date after the messages of touched patterns changed. */
void rs_settle(rs *s);
/* Everything from scratch for the current perm and placement. */
void rs_recompute(rs *s);
/* Is a better than b (lexicographic on (T, H, S), each within TIE)? */
bool rs_better(score a, score b);
/* Remove (sign -1) or add (+1) every message incident to the ranks in
 * pos[0..k), each once (epoch stamps). */
void rs_touch(rs *s, const int *pos, int k, int sign);
/* Swap the physical ranks of schedule ranks a and b, re-costing only
 * their messages. */
void rs_swap(rs *s, int a, int b);
/* Reverse perm[a..b] (a 2-opt move), pos scratch for b - a + 1 ranks. */
void rs_reverse(rs *s, int a, int b, int *pos);
/* H as the sum of the per-pattern sums (kept up to date by
 * rs_msg_apply; T and S are kept by rs_settle). */
double rs_h(const rs *s);
/* The current order's score. */
score rs_score(const rs *s);
/* splitmix64: the search's random numbers, the same on every machine. */
uint64_t rs_rng_next(uint64_t *x);
/* A uniform random number in [0, 1). */
double rs_rng_unit(uint64_t *x);
/* The search's arguments for p: a positive size, a link model of p's
 * ranks.  0 or -1 with err set. */
int rs_check_args(const cost_plan *p, const link_model *lm, double bytes, link_error *err);
/* Monotonic seconds, for time limits. */
double rs_now(void);

/* Is message m between two placed ranks (branch and bound places them
 * one by one; annealing has every rank placed)? */
static inline bool rs_msg_in(const rs *s, const rs_msg *m) { return s->placed[m->src] && s->placed[m->dst]; }

#endif
