/*
 * state.c - the symbolic buffer state (see state.h): which contributions
 * every (rank, chunk) holds, as shared immutable sets.
 *
 * Pipeline position: used by the evaluator (queries while it builds a
 * schedule) and by the verifier (replay with checks).  The state must stay
 * small and fast at n = 1024 with ~n chunks (a million cells, millions of
 * transfers), so:
 *  - a cell is one pointer to a refcounted set; copy shares the pointer;
 *    its low bit marks a write staged in the current round;
 *  - a set is stored as runs of consecutive ranks when that is smaller than
 *    an n-bit bitset (partial sums of ring, halving/doubling and trees are
 *    one or two runs, 24-32 bytes instead of 144), as a bitset otherwise;
 *  - results are normalised: no members -> the shared empty set, n members
 *    -> the shared full set, one member -> the shared {r}, so the common
 *    "complete" sets never cost memory and compare by pointer;
 *  - sets come from per-size free lists carved out of large slabs, so there
 *    is no malloc header per set and freeing is O(1);
 *  - a small cache of recent unions (by operand address) makes schedules
 *    that repeat one pattern over many chunks (pipelines, halving/doubling)
 *    share the resulting sets, so memory follows the distinct sets;
 *  - cells are chunk-major (cell[chunk * n + rank]) because the frequent
 *    scans (holders of a chunk, "does this contribution still exist") walk
 *    all ranks of one chunk, and a ring round's src and dst cells are
 *    neighbours.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "xalloc.h"

/* The memo has up to 2^13 entries (320 KiB), fewer for small states.
 * Unions probe it in trials of MEMO_TRIAL; after one with fewer than 1 in
 * 64 hits the next MEMO_REST unions skip it. */
#define MEMO_BITS 13
#define MEMO_TRIAL 1024
#define MEMO_REST (15 * MEMO_TRIAL)

#define SLAB_BYTES (256u << 10)
#define BIG_SLAB_BYTES ((size_t)2 << 20)
_Static_assert(sizeof(slab) <= 2 * sizeof(uint64_t), "a slab's header is its first 16 bytes");

/* --- allocation ----------------------------------------------------------- */

/* Runs are used only when shorter than a bitset, so the length tells the form. */
static inline bool is_bits(const bstate *st, const state_set *a)
{
	return a->len == (uint32_t)st->nwords;
}

/* A free set's first 8 bytes (ref and count; id and len stay) hold the
 * next free set of its size; memcpy keeps that clear of aliasing rules. */
static state_set *link_get(const state_set *a)
{
	state_set *next;
	const void *p = a;
	memcpy(&next, p, sizeof next);
	return next;
}

static void link_set(state_set *a, state_set *next)
{
	void *p = a;
	memcpy(p, &next, sizeof next);
}

/* Inline: every new set comes from here, one per reduce in the verifier. */
static inline __attribute__((always_inline)) state_set *set_alloc(bstate *st, uint32_t len)
{
	state_set *a = st->freelist[len];
	if (a) {
		st->freelist[len] = link_get(a);
	} else {
		size_t sz = sizeof(state_set) + (size_t)len * sizeof(uint64_t);
		if ((size_t)(st->bump_end - st->bump) < sz) {
			/* slabs double from 4 KiB so that small states stay small;
			 * past SLAB_BYTES in all, a state is big (a ring's partial
			 * sums at n = 256: 1.8 MB) and its slabs are 2 MiB of huge
			 * pages (xalloc.h) */
			size_t want = st->slab_bytes < 4096 ? 4096 : st->slab_bytes;
			if (want >= SLAB_BYTES)
				want = BIG_SLAB_BYTES - sizeof(uint64_t) * 2;
			size_t bytes = sizeof(uint64_t) * 2 + (sz > want ? sz : want);
			slab *sl = xbig_alloc(bytes);
			sl->bytes = bytes;
			sl->next = st->slabs;
			st->slabs = sl;
			st->slab_bytes += bytes;
			st->bump = (char *)sl + sizeof(uint64_t) * 2;
			st->bump_end = (char *)sl + bytes;
		}
		a = (state_set *)(void *)st->bump;
		st->bump += sz;
	}
	a->ref = 1;
	a->len = len;
	if (++st->next_id == 0) {   /* wrapped: old memo entries could match again */
		memset(st->memo, 0, ((size_t)1 << st->memo_bits) * sizeof *st->memo);
		st->next_id = 1;
	}
	a->id = st->next_id;
	return a;
}

void state_set_release(bstate *st, state_set *a)
{
	if (a && --a->ref == 0) {
		uint32_t len = a->len;
		a->id = 0;
		link_set(a, st->freelist[len]);
		st->freelist[len] = a;
	}
}

/* --- runs and bitsets ----------------------------------------------------- */

static inline uint32_t run_lo(uint64_t r) { return (uint32_t)r; }
static inline uint32_t run_hi(uint64_t r) { return (uint32_t)(r >> 32); }
static inline uint64_t run_mk(uint32_t lo, uint32_t hi) { return lo | (uint64_t)hi << 32; }

static void bits_fill(uint64_t *w, uint32_t lo, uint32_t hi)
{
	while (lo < hi) {
		uint32_t i = lo >> 6, b = lo & 63;
		uint32_t nb = hi - lo < 64 - b ? hi - lo : 64 - b;
		w[i] |= (nb == 64 ? ~0ULL : ((1ULL << nb) - 1)) << b;
		lo += nb;
	}
}

/* First position >= pos whose bit equals `want`, or nw * 64. */
static uint32_t bits_next(const uint64_t *w, int nw, uint32_t pos, int want)
{
	int i = (int)(pos >> 6);
	if (i >= nw)
		return (uint32_t)nw * 64;
	uint64_t x = (want ? w[i] : ~w[i]) & (~0ULL << (pos & 63));
	while (!x) {
		if (++i >= nw)
			return (uint32_t)nw * 64;
		x = want ? w[i] : ~w[i];
	}
	return (uint32_t)i * 64 + (uint32_t)__builtin_ctzll(x);
}

static int bits_to_runs(const uint64_t *w, int nw, uint64_t *out)
{
	int k = 0;
	uint32_t pos = 0, end = (uint32_t)nw * 64;
	for (;;) {
		uint32_t lo = bits_next(w, nw, pos, 1);
		if (lo >= end)
			return k;
		uint32_t hi = bits_next(w, nw, lo, 0);
		out[k++] = run_mk(lo, hi);
		pos = hi;
	}
}

static int bits_count_runs(const uint64_t *w, int nw)
{
	uint64_t carry = 0;
	int k = 0;
	for (int i = 0; i < nw; i++) {
		k += __builtin_popcountll(w[i] & ~((w[i] << 1) | carry));
		carry = w[i] >> 63;
	}
	return k;
}

/* a as a bitset: its own words, or expanded into scratch. */
static const uint64_t *set_bits(const bstate *st, const state_set *a, uint64_t *scratch)
{
	if (is_bits(st, a))
		return a->w;
	memset(scratch, 0, (size_t)st->nwords * sizeof *scratch);
	for (uint32_t i = 0; i < a->len; i++)
		bits_fill(scratch, run_lo(a->w[i]), run_hi(a->w[i]));
	return scratch;
}

/* a as runs: its own, or extracted into scratch (room for n/2 + 2). */
static int set_runs(const bstate *st, const state_set *a, const uint64_t **out, uint64_t *scratch)
{
	if (!is_bits(st, a)) {
		*out = a->w;
		return (int)a->len;
	}
	*out = scratch;
	return bits_to_runs(a->w, st->nwords, scratch);
}

/* Allocate a set with `count` members given as k runs, in whichever form is
 * smaller (runs on a tie lose: bitset operations are the faster path). */
static state_set *set_build(bstate *st, const uint64_t *runs, int k, uint32_t count)
{
	state_set *a;
	if (k < st->nwords) {
		a = set_alloc(st, (uint32_t)k);
		if (k > 0)   /* the empty set is built from runs == NULL */
			memcpy(a->w, runs, (size_t)k * sizeof *runs);
	} else {
		a = set_alloc(st, (uint32_t)st->nwords);
		memset(a->w, 0, (size_t)st->nwords * sizeof *a->w);
		for (int i = 0; i < k; i++)
			bits_fill(a->w, run_lo(runs[i]), run_hi(runs[i]));
	}
	a->count = count;
	return a;
}

/* Normalised result from runs: shared sets for 0, 1 and n members. */
static state_set *set_from_runs(bstate *st, const uint64_t *runs, int k, uint32_t count)
{
	if (count == 0)
		return state_set_ref(st->empty);
	if (count == (uint32_t)st->n)
		return state_set_ref(st->full);
	if (count == 1)
		return state_set_ref(st->single[run_lo(runs[0])]);
	return set_build(st, runs, k, count);
}

static state_set *set_from_bits(bstate *st, const uint64_t *w)
{
	uint32_t count = 0;
	for (int i = 0; i < st->nwords; i++)
		count += (uint32_t)__builtin_popcountll(w[i]);
	if (count == 0)
		return state_set_ref(st->empty);
	if (count == (uint32_t)st->n)
		return state_set_ref(st->full);
	if (count == 1)
		return state_set_ref(st->single[bits_next(w, st->nwords, 0, 1)]);
	int k = bits_count_runs(w, st->nwords);
	if (k < st->nwords) {
		bits_to_runs(w, st->nwords, st->runs);
		return set_build(st, st->runs, k, count);
	}
	state_set *a = set_alloc(st, (uint32_t)st->nwords);
	a->count = count;
	memcpy(a->w, w, (size_t)st->nwords * sizeof *w);
	return a;
}

/* --- set operations ------------------------------------------------------- */

enum { OP_OR, OP_AND, OP_ANDNOT };

static inline uint32_t bound(const uint64_t *r, int i)
{
	return (i & 1) ? run_hi(r[i >> 1]) : run_lo(r[i >> 1]);
}

/* Sweep the run boundaries of a and b in order, toggling membership, and
 * emit a boundary whenever op(in a, in b) changes.  Always inlined with a
 * constant op (see set_op), so each operation gets its own loop without
 * the per-boundary tests of op: the verifier runs one per reduce. */
static inline __attribute__((always_inline)) int runs_merge(const uint64_t *a, int na, const uint64_t *b, int nb, int op,
		      uint64_t *out, uint32_t *count)
{
	int i = 0, j = 0, k = 0, ea = 2 * na, eb = 2 * nb;
	bool ina = false, inb = false, cur = false;
	uint32_t lo = 0, cnt = 0;
	while (op == OP_OR ? (i < ea || j < eb) : op == OP_AND ? (i < ea && j < eb) : i < ea) {
		uint32_t pa = i < ea ? bound(a, i) : UINT32_MAX;
		uint32_t pb = j < eb ? bound(b, j) : UINT32_MAX;
		uint32_t x = pa < pb ? pa : pb;
		if (pa == x) { ina = !ina; i++; }
		if (pb == x) { inb = !inb; j++; }
		bool in = op == OP_OR ? (ina || inb) : op == OP_AND ? (ina && inb) : (ina && !inb);
		if (in != cur) {
			if (in) {
				lo = x;
			} else {
				out[k++] = run_mk(lo, x);
				cnt += x - lo;
			}
			cur = in;
		}
	}
	*count = cnt;
	return k;
}

/* a | b over runs: take the runs by start, joining those that touch or
 * overlap.  The same maximal runs as runs_merge's OP_OR, in a third of the
 * time: a reduce in the verifier is one union, and ring-like schedules
 * unite a run or two with a single rank. */
static int runs_union(const uint64_t *a, int na, const uint64_t *b, int nb, uint64_t *out, uint32_t *count)
{
	int i = 0, j = 0, k = 0;
	uint32_t lo = 0, hi = 0, cnt = 0;
	while (i < na || j < nb) {
		uint64_t r = j >= nb || (i < na && run_lo(a[i]) <= run_lo(b[j])) ? a[i++] : b[j++];
		if (k > 0 && run_lo(r) <= hi) {
			if (run_hi(r) > hi)
				hi = run_hi(r);
			continue;
		}
		if (k > 0) {
			out[k - 1] = run_mk(lo, hi);
			cnt += hi - lo;
		}
		lo = run_lo(r);
		hi = run_hi(r);
		k++;
	}
	if (k > 0) {
		out[k - 1] = run_mk(lo, hi);
		cnt += hi - lo;
	}
	*count = cnt;
	return k;
}

static inline uint32_t set_min(const bstate *st, const state_set *a)
{
	return is_bits(st, a) ? bits_next(a->w, st->nwords, 0, 1) : run_lo(a->w[0]);
}

/* a | {x} for a in runs form: one reduce of a ring or a tree, where a
 * partial sum meets one rank's own data.  The runs are a's with x added
 * (a run grows, two runs join, or x starts one), written straight into
 * the new set instead of merged in scratch and copied; the result is the
 * one set_from_runs would give. */
static inline __attribute__((always_inline)) state_set *runs_add(bstate *st, const state_set *a, uint32_t x)
{
	const uint64_t *w = a->w;
	uint32_t len = a->len, i = 0;
	while (i < len && run_hi(w[i]) < x)
		i++;
	if (i < len && run_lo(w[i]) <= x && x < run_hi(w[i]))
		return state_set_ref((state_set *)a);   /* x is in a already */
	uint32_t before = i;   /* runs w[0 .. before) end before x */
	uint32_t lo = x, hi = x + 1;
	if (i < len && run_hi(w[i]) == x)   /* the run before x ends at x */
		lo = run_lo(w[i++]);
	if (i < len && run_lo(w[i]) == x + 1)   /* the run after x starts at x + 1 */
		hi = run_hi(w[i++]);
	uint32_t k = before + 1 + (len - i), count = a->count + 1;   /* runs w[i .. len) follow */
	if (count == (uint32_t)st->n)
		return state_set_ref(st->full);
	uint64_t *out = k < (uint32_t)st->nwords ? NULL : st->runs;   /* NULL: runs form, built in place */
	state_set *r = out ? NULL : set_alloc(st, k);
	if (!out)
		out = r->w;
	for (uint32_t j = 0; j < before; j++)
		out[j] = w[j];
	out[before] = run_mk(lo, hi);
	for (uint32_t j = before + 1; i < len; j++)
		out[j] = w[i++];
	if (!r)   /* too many runs: a bitset */
		return set_build(st, out, (int)k, count);
	r->count = count;
	return r;
}

static inline __attribute__((always_inline)) state_set *set_op(bstate *st, const state_set *a, const state_set *b, int op)
{
	if (op == OP_OR && b->count == 1 && !is_bits(st, a))
		return runs_add(st, a, set_min(st, b));
	if (op == OP_OR && a->count == 1 && !is_bits(st, b))
		return runs_add(st, b, set_min(st, a));
	if (!is_bits(st, a) && !is_bits(st, b)) {
		uint32_t count;
		int na = (int)a->len, nb = (int)b->len, k;
		if (op == OP_OR)
			k = runs_union(a->w, na, b->w, nb, st->runs, &count);
		else if (op == OP_AND)
			k = runs_merge(a->w, na, b->w, nb, OP_AND, st->runs, &count);
		else
			k = runs_merge(a->w, na, b->w, nb, OP_ANDNOT, st->runs, &count);
		return set_from_runs(st, st->runs, k, count);
	}
	const uint64_t *x = set_bits(st, a, st->ta), *y = set_bits(st, b, st->tb);
	uint64_t *z = st->tc;
	for (int i = 0; i < st->nwords; i++)
		z[i] = op == OP_OR ? (x[i] | y[i]) : op == OP_AND ? (x[i] & y[i]) : (x[i] & ~y[i]);
	return set_from_bits(st, z);
}

bool state_set_has(const bstate *st, const state_set *a, int rank)
{
	if (rank < 0 || rank >= st->n)
		return false;
	uint32_t r = (uint32_t)rank;
	if (is_bits(st, a))
		return (a->w[r >> 6] >> (r & 63)) & 1;
	uint32_t lo = 0, hi = a->len;   /* binary search for the run with lo <= r */
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (run_hi(a->w[mid]) <= r)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->len && run_lo(a->w[lo]) <= r;
}

bool state_set_disjoint(const bstate *st, const state_set *a, const state_set *b)
{
	if (a->count == 0 || b->count == 0)
		return true;
	if (a->count + b->count > (uint32_t)st->n)
		return false;
	if (a->count == 1)
		return !state_set_has(st, b, (int)set_min(st, a));
	if (b->count == 1)
		return !state_set_has(st, a, (int)set_min(st, b));
	if (!is_bits(st, a) && !is_bits(st, b)) {
		uint32_t i = 0, j = 0;
		while (i < a->len && j < b->len) {
			if (run_hi(a->w[i]) <= run_lo(b->w[j]))
				i++;
			else if (run_hi(b->w[j]) <= run_lo(a->w[i]))
				j++;
			else
				return false;
		}
		return true;
	}
	const uint64_t *x = set_bits(st, a, st->ta), *y = set_bits(st, b, st->tb);
	for (int i = 0; i < st->nwords; i++)
		if (x[i] & y[i])
			return false;
	return true;
}

bool state_set_subset(const bstate *st, const state_set *a, const state_set *b)
{
	if (a->count == 0 || a == b || b->count == (uint32_t)st->n)
		return true;
	if (a->count > b->count)
		return false;
	if (a->count == 1)
		return state_set_has(st, b, (int)set_min(st, a));
	if (!is_bits(st, a) && !is_bits(st, b)) {
		/* b's runs are maximal, so each run of a must sit inside one of them */
		uint32_t j = 0;
		for (uint32_t i = 0; i < a->len; i++) {
			while (j < b->len && run_hi(b->w[j]) <= run_lo(a->w[i]))
				j++;
			if (j == b->len || run_lo(b->w[j]) > run_lo(a->w[i]) ||
			    run_hi(b->w[j]) < run_hi(a->w[i]))
				return false;
		}
		return true;
	}
	const uint64_t *x = set_bits(st, a, st->ta), *y = set_bits(st, b, st->tb);
	for (int i = 0; i < st->nwords; i++)
		if (x[i] & ~y[i])
			return false;
	return true;
}

state_set *state_set_union(bstate *st, const state_set *a, const state_set *b)
{
	if (b->count == 0 || a->count == (uint32_t)st->n || a == b)
		return state_set_ref((state_set *)a);
	if (a->count == 0 || b->count == (uint32_t)st->n)
		return state_set_ref((state_set *)b);
	if ((uintptr_t)a > (uintptr_t)b) {   /* commutative: one entry for both orders */
		const state_set *t = a;
		a = b;
		b = t;
	}
	/* the memo pays where unions repeat; where a stretch of them (a ring's
	 * partial sums) almost never does, rest it for a while */
	if (st->memo_rest > 0) {
		st->memo_rest--;
		return set_op(st, a, b, OP_OR);
	}
	if (++st->memo_probes == MEMO_TRIAL) {
		if (st->memo_hits < MEMO_TRIAL / 64)
			st->memo_rest = MEMO_REST;
		st->memo_probes = st->memo_hits = 0;
	}
	uint64_t h = ((uint64_t)(uintptr_t)a * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)(uintptr_t)b * 0xc2b2ae3d27d4eb4fULL);
	memo_ent *m = &st->memo[h >> (64 - st->memo_bits)];
	/* a and b are live (the caller holds them); r's memory stays in a slab
	 * even when freed, so reading its id is safe */
	if (m->a == a && m->b == b && m->ida == a->id && m->idb == b->id && m->r->id == m->idr) {
		st->memo_hits++;
		return state_set_ref(m->r);
	}
	state_set *r = set_op(st, a, b, OP_OR);
	*m = (memo_ent){ .a = a, .b = b, .r = r, .ida = a->id, .idb = b->id, .idr = r->id };
	return r;
}

state_set *state_set_inter(bstate *st, const state_set *a, const state_set *b)
{
	if (a->count == 0 || b->count == (uint32_t)st->n || a == b)
		return state_set_ref((state_set *)a);
	if (b->count == 0 || a->count == (uint32_t)st->n)
		return state_set_ref((state_set *)b);
	return set_op(st, a, b, OP_AND);
}

state_set *state_set_diff(bstate *st, const state_set *a, const state_set *b)
{
	if (a->count == 0 || b->count == (uint32_t)st->n || a == b)
		return state_set_ref(st->empty);
	if (b->count == 0)
		return state_set_ref((state_set *)a);
	return set_op(st, a, b, OP_ANDNOT);
}

char *state_set_fmt(const bstate *st, const state_set *a, char *buf, size_t len)
{
	const uint64_t *runs;
	int k = set_runs(st, a, &runs, st->runs);
	size_t pos = 0;
	if (len == 0)
		return buf;
	/* room kept for the truncated ending ",...(NNNNNNNNNN ranks)}" */
	const size_t reserve = 24;
	buf[0] = '\0';
	pos += (size_t)snprintf(buf, len, "{");
	for (int i = 0; i < k && pos < len; i++) {
		char item[32];
		uint32_t lo = run_lo(runs[i]), hi = run_hi(runs[i]);
		int il = hi - lo == 1 ? snprintf(item, sizeof item, "%s%u", i ? "," : "", lo)
				      : snprintf(item, sizeof item, "%s%u-%u", i ? "," : "", lo, hi - 1);
		if (pos + (size_t)il + reserve >= len) {
			snprintf(buf + pos, len - pos, ",...(%u ranks)}", a->count);
			return buf;
		}
		memcpy(buf + pos, item, (size_t)il + 1);
		pos += (size_t)il;
	}
	if (pos < len)
		snprintf(buf + pos, len - pos, "}");
	return buf;
}

/* --- the state ------------------------------------------------------------ */

const char *state_refusal(const ir_sched *s, char *why, size_t len)
{
	const coll_kind_info *k = coll_kind_get((int)s->kind);
	if (!k)
		snprintf(why, len, "unknown collective kind %d", (int)s->kind);
	else if (s->n < 1)
		snprintf(why, len, "rank count n = %d, must be at least 1", s->n);
	else if (s->chunks < 1)
		snprintf(why, len, "chunk count %d, must be at least 1", s->chunks);
	else if ((uint64_t)s->chunks % coll_kind_units(k, s->n) != 0)
		snprintf(why, len, "%s needs the chunk count to be a multiple of %s, got %d chunks for n = %d", k->name,
			 k->units == COLL_UNITS_PAIR ? "n*n" : "n", s->chunks, s->n);
	else if (k->rooted && (s->root < 0 || s->root >= s->n))
		snprintf(why, len, "%s root %d is out of range 0..%d", k->name, s->root, s->n - 1);
	else if ((unsigned long long)s->n * (unsigned long long)s->chunks >= 0xffffffffULL)
		snprintf(why, len, "n * chunks = %llu (rank, chunk) pairs is too many to verify",
			 (unsigned long long)s->n * (unsigned long long)s->chunks);
	else
		return NULL;
	return why;
}

size_t state_cell_bytes(const ir_sched *s)
{
	return (size_t)(s->n > 0 ? s->n : 0) * (size_t)(s->chunks > 0 ? s->chunks : 0) * sizeof(uintptr_t);
}

bstate *state_new(const ir_sched *s)
{
	char why[200];
	if (state_refusal(s, why, sizeof why))
		return NULL;
	int n = s->n, C = s->chunks;
	const coll_kind_info *k = coll_kind_get((int)s->kind);
	mem_charge(state_cell_bytes(s));   /* released by state_free */

	bstate *st = xcalloc(1, sizeof *st);
	st->shape = (coll_shape){ k, n, C, k->rooted ? s->root : 0 };
	st->n = n;
	st->chunks = C;
	st->nwords = (n + 63) / 64;
	st->freelist = xcalloc((size_t)st->nwords + 1, sizeof *st->freelist);
	st->ta = xmalloc((size_t)st->nwords * sizeof(uint64_t));
	st->tb = xmalloc((size_t)st->nwords * sizeof(uint64_t));
	st->tc = xmalloc((size_t)st->nwords * sizeof(uint64_t));
	st->runs = xmalloc(((size_t)n / 2 + 2) * sizeof(uint64_t));
	st->cell = xbig_alloc((size_t)n * C * sizeof *st->cell);
	st->memo_bits = 6;
	while (st->memo_bits < MEMO_BITS && ((uint64_t)1 << st->memo_bits) < (uint64_t)n * C)
		st->memo_bits++;
	st->memo = xbig_alloc(((size_t)1 << st->memo_bits) * sizeof *st->memo);

	/* the shared sets bypass normalisation (which would return them) */
	st->empty = set_build(st, NULL, 0, 0);
	uint64_t r = run_mk(0, (uint32_t)n);
	st->full = set_build(st, &r, 1, (uint32_t)n);
	st->single = xmalloc((size_t)n * sizeof *st->single);
	for (int i = 0; i < n; i++) {
		r = run_mk((uint32_t)i, (uint32_t)i + 1);
		st->single[i] = n == 1 ? state_set_ref(st->full) : set_build(st, &r, 1, 1);
	}

	for (int c = 0; c < C; c++) {
		uintptr_t *row = st->cell + (size_t)c * n;
		int w = coll_shape_contributor(&st->shape, c);   /* -1: every rank contributes */
		for (int rk = 0; rk < n; rk++)
			row[rk] = (uintptr_t)state_set_ref(w < 0 || w == rk ? st->single[rk] : st->empty);
	}
	return st;
}

void state_free(bstate *st)
{
	if (!st)
		return;
	/* every set lives in a slab, so the slabs are all there is to free */
	for (slab *sl = st->slabs, *next; sl; sl = next) {
		next = sl->next;
		xbig_free(sl, sl->bytes);
	}
	free(st->freelist);
	free(st->ta);
	free(st->tb);
	free(st->tc);
	free(st->runs);
	mem_release((size_t)st->n * (size_t)st->chunks * sizeof *st->cell);
	xbig_free(st->cell, (size_t)st->n * (size_t)st->chunks * sizeof *st->cell);
	xbig_free(st->memo, ((size_t)1 << st->memo_bits) * sizeof *st->memo);
	free(st->shash);
	free(st->single);
	free(st->stage);
	free(st);
}

size_t state_bytes(const bstate *st)
{
	size_t cells = (size_t)st->n * st->chunks;
	return sizeof *st + st->slab_bytes + cells * sizeof *st->cell +
	       ((size_t)1 << st->memo_bits) * sizeof *st->memo +
	       (size_t)st->capstage * sizeof *st->stage +
	       (st->shash ? ((size_t)st->shmask + 1) * sizeof *st->shash : 0) +
	       ((size_t)st->nwords * 4 + (size_t)st->n / 2 + 2 + (size_t)st->n) * sizeof(uint64_t);
}

static inline bool in_range(const bstate *st, int rank, int chunk)
{
	return rank >= 0 && rank < st->n && chunk >= 0 && chunk < st->chunks;
}


int state_contrib(const bstate *st, int rank, int chunk, int *out)
{
	if (!in_range(st, rank, chunk))
		return 0;
	const uint64_t *runs;
	int k = set_runs(st, state_get(st, rank, chunk), &runs, st->runs), m = 0;
	for (int i = 0; i < k; i++)
		for (uint32_t x = run_lo(runs[i]); x < run_hi(runs[i]); x++)
			out[m++] = (int)x;
	return m;
}

int state_holders(const bstate *st, int chunk, int *out)
{
	int m = 0;
	if (chunk < 0 || chunk >= st->chunks)
		return 0;
	for (int r = 0; r < st->n; r++)
		if (state_complete(st, r, chunk))
			out[m++] = r;
	return m;
}

bool state_has(const bstate *st, int rank, int chunk)
{
	return in_range(st, rank, chunk) && state_get(st, rank, chunk)->count > 0;
}

/* --- write staging -------------------------------------------------------- */

static inline uint32_t slot_hash(uint32_t slot)
{
	return (uint32_t)(((uint64_t)slot * 0x9e3779b97f4a7c15ULL) >> 32);
}

static void shash_put(bstate *st, int i)
{
	uint32_t h = slot_hash(st->stage[i].slot) & st->shmask;
	while (st->shash[h] >= 0)
		h = (h + 1) & st->shmask;
	st->shash[h] = i;
}

/* (Re)build the hash for all entries, with room for `want` at load 1/2. */
static void shash_build(bstate *st, size_t want)
{
	size_t cap = 512;
	while (cap < 2 * want)
		cap *= 2;
	if (!st->shash || cap > (size_t)st->shmask + 1) {
		free(st->shash);
		st->shash = xmalloc(cap * sizeof *st->shash);
		st->shmask = (uint32_t)cap - 1;
	}
	memset(st->shash, 0xff, ((size_t)st->shmask + 1) * sizeof *st->shash);
	for (int i = 0; i < st->nstage; i++)
		shash_put(st, i);
	st->shash_live = true;
}

int state_stage_lookup(const bstate *st, uint32_t slot)
{
	if (!st->shash_live)   /* first second write this round; the hash is scratch */
		shash_build((bstate *)st, (size_t)st->nstage);
	for (uint32_t h = slot_hash(slot) & st->shmask;; h = (h + 1) & st->shmask) {
		int32_t i = st->shash[h];
		if (i < 0)
			return -1;
		if (st->stage[i].slot == slot)
			return i;
	}
}

int state_stage_grow(bstate *st, int rank, int chunk, state_set *val, int tag)
{
	if (st->nstage == st->capstage) {
		st->capstage = st->capstage ? 2 * st->capstage : 256;
		stage_ent *ns = realloc(st->stage, (size_t)st->capstage * sizeof *ns);
		if (!ns) {
			fputs("collc: out of memory\n", stderr);
			abort();
		}
		st->stage = ns;
	}
	uint32_t slot = (uint32_t)((size_t)chunk * st->n + rank);
	st->cell[slot] |= 1;
	st->stage[st->nstage] = (stage_ent){ .slot = slot, .tag = tag, .val = val, .old = NULL };
	st->nstage++;
	if (st->shash_live) {
		if (2 * (size_t)st->nstage > (size_t)st->shmask + 1)
			shash_build(st, (size_t)st->nstage);
		else
			shash_put(st, st->nstage - 1);
	}
	return st->nstage - 1;
}

void state_restage(bstate *st, int i, state_set *val)
{
	state_set_release(st, st->stage[i].val);
	st->stage[i].val = val;
}

void state_commit(bstate *st)
{
	for (int i = 0; i < st->nstage; i++) {
		stage_ent *e = &st->stage[i];
		e->old = (state_set *)(st->cell[e->slot] & ~(uintptr_t)1);
		st->cell[e->slot] = (uintptr_t)e->val;
	}
	st->committed = true;
}

void state_staged_slot(const bstate *st, int i, int *rank, int *chunk)
{
	*rank = (int)(st->stage[i].slot % (uint32_t)st->n);
	*chunk = (int)(st->stage[i].slot / (uint32_t)st->n);
}

void state_stage_reset(bstate *st)
{
	for (int i = 0; i < st->nstage; i++) {
		stage_ent *e = &st->stage[i];
		if (st->committed) {
			state_set_release(st, e->old);
		} else {
			state_set_release(st, e->val);
			st->cell[e->slot] &= ~(uintptr_t)1;
		}
	}
	st->nstage = 0;
	st->shash_live = false;
	st->committed = false;
}

void state_land(bstate *st)
{
	for (int i = 0; i < st->nstage; i++) {
		stage_ent *e = &st->stage[i];
		state_set *old = (state_set *)(st->cell[e->slot] & ~(uintptr_t)1);
		st->cell[e->slot] = (uintptr_t)e->val;
		state_set_release(st, old);
	}
	st->nstage = 0;
	st->shash_live = false;
	st->committed = false;
}

void state_apply_round(bstate *st, const ir_sched *s, int round)
{
	if (round < 0 || round >= s->nrounds)
		return;
	const ir_round *rd = &s->rounds[round];
	state_stage_reset(st);
	for (int t = rd->first; t < rd->first + rd->count; t++) {
		const ir_xfer *x = &s->xfers[t];
		if (!in_range(st, x->src, x->chunk) || !in_range(st, x->dst, x->chunk) || x->src == x->dst)
			continue;
		state_set *a = state_get(st, x->src, x->chunk);
		int i = state_stage_find(st, x->dst, x->chunk);
		if (x->op == IR_COPY)
			state_set_ref(a);
		else
			a = state_set_union(st, i >= 0 ? state_staged(st, i) : state_get(st, x->dst, x->chunk), a);
		if (i >= 0)
			state_restage(st, i, a);
		else
			state_stage(st, x->dst, x->chunk, a, t);
	}
	state_commit(st);
	state_stage_reset(st);
}
