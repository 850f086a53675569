/*
 * coll_kinds.h - what each collective is: the rows of coll_kinds.def as a
 * table, and the rules derived from them that the compiler (verifier,
 * cost model, code generator) and the runtime (argument checks, buffer
 * layout, benchmark) share, so that no stage keeps its own copy.
 *
 * Vocabulary (see coll_kinds.def for the row fields):
 *   - the *working buffer* of a call is the whole data the collective
 *     moves, W = U * ucount elements: U units (1, n or n*n) of ucount
 *     elements each.  ucount is the count the API takes (allreduce's
 *     count, reduce_scatter's recvcount, allgather's sendcount,
 *     alltoall's count per peer);
 *   - a schedule splits W into C chunks (C a multiple of U); chunk c is
 *     elements [coll_chunk_lo(W, C, c), coll_chunk_lo(W, C, c + 1)) and
 *     belongs to unit c / (C / U);
 *   - before the call, chunk c's contributors hold their data for it
 *     (pre-state: rank r holds {r} for chunk c when r contributes);
 *     after it, its targets hold the union of every contributor's data
 *     (post-state);
 *   - a rank's sendbuf holds the chunks it contributes and its recvbuf
 *     the chunks it targets, each packed in chunk order (the whole
 *     working buffer when every rank, or the root, holds every chunk).
 *
 * Everything here is static inline: the header serves the compiler, which
 * does not link libcollrt, as well as the runtime and the tools.
 */
#ifndef COLL_KINDS_H
#define COLL_KINDS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { COLL_UNITS_ONE, COLL_UNITS_RANK, COLL_UNITS_PAIR } coll_units;
typedef enum { COLL_WHO_ALL, COLL_WHO_ROOT, COLL_WHO_OWNER, COLL_WHO_SRC, COLL_WHO_DST } coll_who;

typedef struct {
	const char *name;     /* "allreduce" */
	const char *cname;    /* "COLL_ALLREDUCE": the enumerator, for generated C */
	unsigned char rooted, reduces;
	unsigned char units;  /* coll_units */
	unsigned char contrib, target;   /* coll_who */
	unsigned char bus_a, bus_b;
} coll_kind_info;

/* The row of collective k, or NULL when k is not one. */
static inline const coll_kind_info *coll_kind_get(int k)
{
	static const coll_kind_info table[] = {
#define COLL_KIND(id, name, rooted, reduces, units, contrib, target, bus_a, bus_b)                   \
	{ name, "COLL_" #id, rooted, reduces, COLL_UNITS_##units, COLL_WHO_##contrib, COLL_WHO_##target, \
	  bus_a, bus_b },
#include "coll_kinds.def"
#undef COLL_KIND
	};
	return k >= 0 && k < (int)(sizeof table / sizeof table[0]) ? &table[k] : 0;
}

/* Units of a call on n ranks: 1, n or n*n. */
static inline uint64_t coll_kind_units(const coll_kind_info *k, int n)
{
	return k->units == COLL_UNITS_ONE ? 1 : k->units == COLL_UNITS_RANK ? (uint64_t)n : (uint64_t)n * (uint64_t)n;
}

/* How many times the working buffer is the size a user states for a call
 * (nccl-tests' "size": the larger of a rank's send and receive buffers):
 * n for alltoall, whose n*n units make n per rank, else 1. */
static inline int coll_kind_work_per_size(const coll_kind_info *k, int n)
{
	return k->units == COLL_UNITS_PAIR ? n : 1;
}

/* nccl-tests' bus bandwidth factor: busbw = algbw * factor. */
static inline double coll_kind_busbw(const coll_kind_info *k, int n)
{
	return n < 1 ? 0 : k->bus_a * (double)(n - 1) / n + k->bus_b;
}

/* Element c*W/C rounded down: where chunk c of C starts in a working
 * buffer of W elements (any W, also 0 or not a multiple of C). */
static inline uint64_t coll_chunk_lo(uint64_t W, int C, int c)
{
	return (uint64_t)(((unsigned __int128)W * (unsigned)c) / (unsigned)C);
}

/* A collective at a concrete shape: n ranks, C chunks, a root. */
typedef struct {
	const coll_kind_info *k;
	int n, chunks, root;
} coll_shape;

/* The unit chunk c belongs to (chunks must be a multiple of the units). */
static inline int coll_shape_unit(const coll_shape *s, int c)
{
	return (int)((uint64_t)c / ((uint64_t)s->chunks / coll_kind_units(s->k, s->n)));
}

/* The one rank `who` names for chunk c, or -1 when it names every rank. */
static inline int coll_shape_who(const coll_shape *s, int who, int c)
{
	switch (who) {
	case COLL_WHO_ROOT: return s->root;
	case COLL_WHO_OWNER: return coll_shape_unit(s, c);
	case COLL_WHO_SRC: return coll_shape_unit(s, c) / s->n;
	case COLL_WHO_DST: return coll_shape_unit(s, c) % s->n;
	default: return -1;
	}
}

/* Pre-state: does rank r hold data of chunk c before the call (its own
 * contribution {r})? */
static inline int coll_shape_contributes(const coll_shape *s, int r, int c)
{
	int w = coll_shape_who(s, s->k->contrib, c);
	return w < 0 || w == r;
}

/* The single contributor of chunk c, or -1 when every rank contributes:
 * the post-state's "complete" chunk is {it}, or all ranks. */
static inline int coll_shape_contributor(const coll_shape *s, int c)
{
	return coll_shape_who(s, s->k->contrib, c);
}

/* Post-state: must rank r hold chunk c, complete, after the call? */
static inline int coll_shape_targets(const coll_shape *s, int r, int c)
{
	int w = coll_shape_who(s, s->k->target, c);
	return w < 0 || w == r;
}

/* Where chunk c (starting at element lo of the working buffer, units of
 * ucount elements) sits in a buffer packed for `who`: the whole working
 * buffer for ALL and ROOT, else the chunks of the rank's units in order. */
static inline uint64_t coll_shape_packed(const coll_shape *s, int who, int c, uint64_t lo, uint64_t ucount)
{
	uint64_t u = (uint64_t)coll_shape_unit(s, c), within = lo - u * ucount;
	switch (who) {
	case COLL_WHO_OWNER: return within;
	case COLL_WHO_SRC: return (u % (uint64_t)s->n) * ucount + within;  /* by destination */
	case COLL_WHO_DST: return (u / (uint64_t)s->n) * ucount + within;  /* by source */
	default: return lo;
	}
}

/* Element offset of chunk c in rank r's sendbuf, or -1 when r does not
 * contribute it (lo, ucount as for coll_shape_packed). */
static inline int64_t coll_shape_send_offset(const coll_shape *s, int r, int c, uint64_t lo, uint64_t ucount)
{
	return coll_shape_contributes(s, r, c) ? (int64_t)coll_shape_packed(s, s->k->contrib, c, lo, ucount) : -1;
}

/* Element offset of chunk c in rank r's recvbuf, or -1 when r is not one
 * of its targets. */
static inline int64_t coll_shape_recv_offset(const coll_shape *s, int r, int c, uint64_t lo, uint64_t ucount)
{
	return coll_shape_targets(s, r, c) ? (int64_t)coll_shape_packed(s, s->k->target, c, lo, ucount) : -1;
}

#ifdef __cplusplus
}
#endif
#endif
