/*
 * ir.h - the schedule IR: what an algorithm evaluates to for a concrete n.
 *
 * Pipeline position: text -> AST -> (eval) -> ir_sched -> (verify) ->
 * cost / export / code generation.  Every consumer downstream of the
 * evaluator reads only this header, so the IR is plain data: a list of
 * rounds, each a contiguous slice of the transfer array.  Transfers keep
 * the source position of the statement that emitted them so that the
 * verifier can point back into the .coll file.
 */
#ifndef COLL_IR_H
#define COLL_IR_H

#include <stdint.h>
#include <stdio.h>

#include "coll_kinds.h"
#include "diag.h"

/* The collectives a schedule can implement: the rows of the table the
 * runtime reads too (runtime/include/coll_kinds.def), in its order, so an
 * ir_kind is a coll_kind.  What each one is (root, reduction, units,
 * pre- and post-state, buffer layout) comes from coll_kinds.h through
 * ir_kind_info and ir_shape below; no stage tests kinds by name. */
typedef enum {
#define COLL_KIND(id, ...) IR_##id,
#include "coll_kinds.def"
#undef COLL_KIND
	IR_NKINDS
} ir_kind;

typedef enum { IR_COPY, IR_REDUCE_OP } ir_op;

/* One point-to-point transfer of one chunk inside a round: the receiver's
 * copy of `chunk` becomes the sender's (copy) or the reduction of both
 * (reduce).  Transfers of one round all read the state before the round. */
typedef struct {
	int32_t src, dst, chunk;
	uint32_t op : 8;     /* ir_op */
	uint32_t pos : 24;   /* index into ir_sched.poss: the emitting statement;
			        an index, not a srcpos, keeps a transfer at 16 bytes
			        (StragglAR at n = 1024 has 2 million of them) */
} ir_xfer;

/* A round: transfers [first, first+count) of ir_sched.xfers. */
typedef struct {
	int32_t first, count;
	int32_t phase;  /* index into ir_sched.phases */
	srcpos pos;     /* the round statement (or the lone transfer) */
} ir_round;

typedef struct {
	ir_kind kind;
	char *algo;          /* algorithm name (owned) */
	srcpos pos;          /* the algorithm declaration */
	int n;               /* rank count */
	int chunks;          /* chunk count C: the buffer is split in C equal parts */
	int root;            /* broadcast/reduce root, else 0 */
	int ports_send;      /* port model: distinct peers a rank may send to per round */
	int ports_recv;      /* ... and receive from per round */
	ir_xfer *xfers;
	int nxfers, capxfers;
	ir_round *rounds;
	int nrounds, caprounds;
	char **phases;       /* phase names (owned); rounds refer by index */
	int nphases;
	srcpos *poss;        /* distinct transfer positions; ir_xfer.pos indexes it */
	int nposs, capposs;
} ir_sched;

/* ir.c */
/* Collective names by kind ("allreduce", ...), from the table. */
extern const char *const ir_kind_names[IR_NKINDS];
/* "allreduce, reduce_scatter, ... or alltoall": every kind, for messages. */
const char *ir_kind_list(void);
/* "broadcast and reduce": the kinds with a root, for messages. */
const char *ir_rooted_list(void);
/* Map a collective name to its kind; returns -1 when unknown. */
int ir_kind_from_name(const char *name);
/* Allocate an empty schedule; aborts only on out-of-memory. */
ir_sched *ir_new(ir_kind kind, const char *algo, int n);
void ir_free(ir_sched *s);
/* Return the index of phase `name`, adding it if new. */
int ir_phase(ir_sched *s, const char *name);
/* Open a new (empty) round in `phase`; transfers added go into it. */
void ir_begin_round(ir_sched *s, int phase, srcpos pos);
/* Append a transfer to the last round (inline: the evaluator's hottest
 * call, one per transfer). */
void ir_grow_xfers(ir_sched *s);
/* The index of pos in s->poss, added if new. */
int ir_pos_index(ir_sched *s, srcpos pos);
static inline void ir_add(ir_sched *s, int src, int dst, int chunk, ir_op op, srcpos pos)
{
	if (s->nxfers == s->capxfers)
		ir_grow_xfers(s);
	/* most often one of the two statements seen last (a loop body with
	 * two transfer statements alternates between them) */
	int p = s->nposs - 1;
	if (p < 0 || s->poss[p].file != pos.file || s->poss[p].off != pos.off) {
		if (p >= 1 && s->poss[p - 1].file == pos.file && s->poss[p - 1].off == pos.off)
			p--;
		else
			p = ir_pos_index(s, pos);
	}
	s->xfers[s->nxfers++] = (ir_xfer){ .src = src, .dst = dst, .chunk = chunk,
					   .op = (uint32_t)op, .pos = (uint32_t)p };
	s->rounds[s->nrounds - 1].count++;
}
/* Source position of transfer x (the statement that emitted it). */
static inline srcpos ir_xfer_pos(const ir_sched *s, const ir_xfer *x) { return s->poss[x->pos]; }
/* Drop trailing rounds that ended up empty (a round with no transfers). */
void ir_end_round(ir_sched *s);
/* Parallel composition: the rounds from `start` on are nb runs of len[i]
 * rounds each, one after the other; interleave them so that round k of
 * every run forms one round (its transfers in run order, its phase and
 * position the first run's that has a round k). */
void ir_interleave(ir_sched *s, int start, const int *len, int nb);
/* What collective k is (coll_kinds.h); k must be a kind. */
static inline const coll_kind_info *ir_kind_info(ir_kind k) { return coll_kind_get((int)k); }
/* s's collective at s's shape, for the rules of coll_kinds.h. */
static inline coll_shape ir_shape(const ir_sched *s)
{
	return (coll_shape){ coll_kind_get((int)s->kind), s->n, s->chunks, s->root };
}

#endif
