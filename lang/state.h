/*
 * state.h - the symbolic buffer state of a schedule: for every (rank, chunk)
 * the set of ranks whose contribution that slot holds.
 *
 * Pipeline position: the evaluator keeps a bstate next to the ir_sched it
 * is building (state_apply_round after each round) so that algorithms can
 * ask who holds what; the verifier (verify.c) replays a finished schedule on
 * a fresh bstate, using the set operations and the write staging below to
 * check every transfer.
 *
 * Sets are immutable and reference counted, so a copy shares the sender's
 * set and memory grows with the number of distinct live sets, not with
 * n * chunks * n bits.  Small sets are stored as runs of consecutive ranks
 * (ring, halving/doubling and tree partial sums are one or two runs), large
 * scattered ones as bitsets, whichever is smaller; {r}, the full set and
 * the empty set are shared singletons.  A set with n members is always the
 * shared full set and one with one member the shared {r}.
 */
#ifndef COLL_STATE_H
#define COLL_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir.h"

typedef struct bstate bstate;
typedef struct state_set state_set;   /* immutable, refcounted set of ranks */

/* The representation, owned by state.c (see there); it is here only so
 * that the one-line accessors below inline into the verifier's loop, which
 * calls them several times per transfer. */
struct state_set {
	uint32_t ref;
	uint32_t count;   /* members */
	uint32_t len;     /* words in w[]: nwords for a bitset, fewer for runs */
	uint32_t id;      /* serial, 0 once freed: lets the union memo spot reuse */
	uint64_t w[];     /* run i: low 32 bits first rank, high 32 bits one past the last */
};

_Static_assert(_Alignof(state_set) >= 2, "the cell tag bit needs sets aligned to 2");

typedef struct {
	uint32_t slot;          /* chunk * n + rank */
	int32_t tag;
	state_set *val;         /* the staged value (owned until commit) */
	state_set *old;         /* after commit: what the slot held (owned) */
} stage_ent;

/* A remembered union a | b = r.  It holds no references (that would keep
 * sets alive and cost a release per eviction); the ids tell whether the
 * three addresses still hold the same, live sets. */
typedef struct {
	const state_set *a, *b;
	state_set *r;
	uint32_t ida, idb, idr;
} memo_ent;


typedef struct slab { struct slab *next; size_t bytes; } slab;

struct bstate {
	coll_shape shape;         /* the collective: pre- and post-state rules */
	int n, chunks;
	int nwords;               /* 64-bit words of an n-bit bitset */
	/* [chunk * n + rank]: a state_set *, low bit set while a write to the
	 * slot is staged (sets are 8-aligned), so "is this slot written this
	 * round" costs nothing beyond reading the cell */
	uintptr_t *cell;
	state_set *empty, *full, **single;
	/* allocator: free lists by len, bump pointer into the newest slab */
	state_set **freelist;     /* [nwords + 1] */
	char *bump, *bump_end;
	slab *slabs;
	size_t slab_bytes;
	/* scratch for set operations */
	uint64_t *ta, *tb, *tc;   /* nwords each */
	uint64_t *runs;           /* n/2 + 2 runs */
	/* the last unions, by operand addresses: pipelined and blocked
	 * schedules compute the same union for many chunks, and answering from
	 * here makes those cells share one set instead of allocating copies */
	memo_ent *memo;           /* [1 << memo_bits] */
	int memo_bits;
	int memo_probes, memo_hits, memo_rest;   /* see MEMO_TRIAL */
	uint32_t next_id;
	/* write staging: the round's entries, and an open-addressing hash from
	 * slot to entry that is only built when a round writes a slot twice */
	stage_ent *stage;
	int nstage, capstage;
	int32_t *shash;           /* [shmask + 1], -1 = free */
	uint32_t shmask;
	bool shash_live;          /* holds every entry of this round */
	bool committed;
};

/* state.c */
/* The pre-state of s's collective (s->kind, n, chunks, root); NULL when
 * those are unusable (n < 1, chunks < 1 or not a multiple of the
 * collective's units, root out of range).  Allocation failure aborts. */
bstate *state_new(const ir_sched *s);
/* Why state_new would refuse s's shape (a message into why, returned),
 * or NULL when it would not. */
const char *state_refusal(const ir_sched *s, char *why, size_t len);
/* Bytes the cells of s's state take (the bulk of it, for the budget). */
size_t state_cell_bytes(const ir_sched *s);
/* Free the state and every set in it (NULL is fine). */
void state_free(bstate *st);
/* Apply round `round` of s with the IR's semantics (all transfers read the
 * state before the round) but no checks: bad ranks/chunks are skipped, a
 * reduce just unions.  For the evaluator's queries while it builds s. */
void state_apply_round(bstate *st, const ir_sched *s, int round);
/* The ranks in (rank, chunk)'s set, ascending, into out (room for n);
 * returns the count. */
int state_contrib(const bstate *st, int rank, int chunk, int *out);
/* Ranks holding `chunk` complete, ascending, into out (room for n). */
int state_holders(const bstate *st, int chunk, int *out);
/* Does (rank, chunk) hold any data at all? */
bool state_has(const bstate *st, int rank, int chunk);
/* Bytes the state currently holds from the allocator (cells, sets, scratch). */
size_t state_bytes(const bstate *st);

/* Sets.  Getters return borrowed references; functions returning a
 * state_set * that is not borrowed say "new reference": give it back with
 * state_set_release or hand it to state_stage. */
/* The set at (rank, chunk); both must be in range. */
static inline state_set *state_get(const bstate *st, int rank, int chunk)
{
	return (state_set *)(st->cell[(size_t)chunk * st->n + rank] & ~(uintptr_t)1);
}
/* The "complete" set of chunk c (see state_complete). */
static inline state_set *state_need(const bstate *st, int chunk)
{
	int w = coll_shape_contributor(&st->shape, chunk);
	return w < 0 ? st->full : st->single[w];
}
/* Number of ranks in a. */
static inline int state_set_count(const state_set *a) { return (int)a->count; }
/* Is rank in a (false when out of range)? */
bool state_set_has(const bstate *st, const state_set *a, int rank);
/* Do a and b share no rank? */
bool state_set_disjoint(const bstate *st, const state_set *a, const state_set *b);
/* Is a a subset of b? */
bool state_set_subset(const bstate *st, const state_set *a, const state_set *b);
/* Does (rank, chunk) hold exactly what the collective needs at the end
 * ("complete": the union of the chunk's contributors, coll_kinds.h: all n
 * for reductions, {owner} for allgather, {root} for broadcast, {source}
 * for alltoall)?  Out-of-range arguments answer false.  Inline: the
 * verifier's final check asks it of every (rank, chunk). */
static inline bool state_complete(const bstate *st, int rank, int chunk)
{
	if (rank < 0 || rank >= st->n || chunk < 0 || chunk >= st->chunks)
		return false;
	const state_set *a = state_get(st, rank, chunk), *need = state_need(st, chunk);
	/* normalisation makes the 1- and n-member sets canonical, but do not rely on it */
	return a == need || (a->count == need->count && state_set_subset(st, need, a));
}
/* a | b, a & b, a \ b: new references. */
state_set *state_set_union(bstate *st, const state_set *a, const state_set *b);
state_set *state_set_inter(bstate *st, const state_set *a, const state_set *b);
state_set *state_set_diff(bstate *st, const state_set *a, const state_set *b);
/* Take one more reference to a (returns a). */
static inline state_set *state_set_ref(state_set *a)
{
	a->ref++;
	return a;
}
/* Drop one reference (NULL is fine); the last one frees a. */
void state_set_release(bstate *st, state_set *a);
/* Format a compactly, "{0-3,5}", into buf (truncated with "..." and the
 * member count when it does not fit); returns buf. */
char *state_set_fmt(const bstate *st, const state_set *a, char *buf, size_t len);

/* Write staging: a round's writes are staged while the round's transfers
 * read the old state, then committed together.  Staging is per bstate and
 * holds at most one entry per (rank, chunk). */
/* Index of the write staged for (rank, chunk) this round, or -1. */
int state_stage_lookup(const bstate *st, uint32_t slot);   /* its slow path */
static inline int state_stage_find(const bstate *st, int rank, int chunk)
{
	uint32_t slot = (uint32_t)((size_t)chunk * st->n + rank);
	return st->cell[slot] & 1 ? state_stage_lookup(st, slot) : -1;
}
/* Stage a write of val (new reference, taken over) to (rank, chunk), which
 * has none staged yet; `tag` is the caller's (the transfer index).  Returns
 * the entry's index.  Inline (one per transfer) but for its slow path,
 * state_stage_grow: a full entry array, or a live slot hash to update. */
int state_stage_grow(bstate *st, int rank, int chunk, state_set *val, int tag);
static inline int state_stage(bstate *st, int rank, int chunk, state_set *val, int tag)
{
	if (st->nstage == st->capstage || st->shash_live)
		return state_stage_grow(st, rank, chunk, val, tag);
	uint32_t slot = (uint32_t)((size_t)chunk * st->n + rank);
	st->cell[slot] |= 1;
	st->stage[st->nstage] = (stage_ent){ .slot = slot, .tag = tag, .val = val, .old = NULL };
	return st->nstage++;
}
/* The same three for a caller that reads the cell itself: the slot of
 * (rank, chunk), its set (borrowed), whether a write to it is staged, and
 * state_stage by slot (none staged there yet). */
static inline uint32_t state_slot(const bstate *st, int rank, int chunk)
{
	return (uint32_t)((size_t)chunk * st->n + rank);
}
static inline state_set *state_at(const bstate *st, uint32_t slot)
{
	return (state_set *)(st->cell[slot] & ~(uintptr_t)1);
}
static inline bool state_staged_at(const bstate *st, uint32_t slot) { return st->cell[slot] & 1; }
static inline int state_stage_slot(bstate *st, uint32_t slot, state_set *val, int tag)
{
	if (st->nstage == st->capstage || st->shash_live)
		return state_stage_grow(st, (int)(slot % (uint32_t)st->n), (int)(slot / (uint32_t)st->n), val, tag);
	st->cell[slot] |= 1;
	st->stage[st->nstage] = (stage_ent){ .slot = slot, .tag = tag, .val = val, .old = NULL };
	return st->nstage++;
}
/* The value staged in entry i (borrowed) and its tag. */
static inline state_set *state_staged(const bstate *st, int i) { return st->stage[i].val; }
static inline int state_staged_tag(const bstate *st, int i) { return st->stage[i].tag; }
/* Replace entry i's value with val (new reference, taken over). */
void state_restage(bstate *st, int i, state_set *val);
/* Apply every staged write.  The entries stay readable until
 * state_stage_reset: state_staged gives the new value, state_overwritten
 * the value the slot held before the round. */
void state_commit(bstate *st);
/* Number of entries staged this round. */
static inline int state_nstaged(const bstate *st) { return st->nstage; }
/* The (rank, chunk) entry i writes. */
void state_staged_slot(const bstate *st, int i, int *rank, int *chunk);
/* After state_commit: what entry i's slot held before (borrowed). */
static inline state_set *state_overwritten(const bstate *st, int i) { return st->stage[i].old; }
/* Drop all entries (and the overwritten values) to start the next round. */
void state_stage_reset(bstate *st);
/* state_commit and state_stage_reset in one pass over the entries, for a
 * caller that needs neither the entries nor the overwritten values after
 * the round has landed. */
void state_land(bstate *st);

#endif
