/*
 * diff.c - differential test of libcoll_mpi.so, for tests/pmpi.test: one
 * MPI program run twice, plainly and with the library in LD_PRELOAD, each
 * rank writing every byte each collective leaves in its buffers; the two
 * runs' files must be equal byte for byte.
 *
 *   pmpi_diff run DIR            under mpirun: every case in a fixed order;
 *                                rank R writes DIR/rank.R, rank 0 prints
 *                                "diff: N cases" and the statistics line the
 *                                library must print ("diff: expect: ...")
 *   pmpi_diff cmp DIR1 DIR2 N    no MPI: compares DIR1/rank.R (the plain
 *                                run) with DIR2/rank.R (interposed) for
 *                                R < N; prints the cases that differ (the
 *                                name, the rank, the first differing byte's
 *                                offset in the arena and both values, how
 *                                many differ; 20 at most) and "diff: N cases
 *                                x R ranks: all equal" or "... D differ";
 *                                exit 0 when none differs
 *
 * Two kinds of difference are explained, listed (5 of each) and counted,
 * but are no failure, since there the library is right and MPI is not or
 * need not be: a reduction whose plain result is not C's arithmetic on the
 * inputs while the interposed one is, every differing byte inside the
 * result (Open MPI 4.1.4 takes MPI_UNSIGNED_LONG for signed and MPI_OFFSET
 * for unsigned in MIN and MAX, open-mpi/ompi#10525, and its AVX op
 * component saturates MPI_UNSIGNED_CHAR sums of long vectors: 1001
 * elements here, while 7 add up right); and
 * an in-place reduce-scatter whose input past the first block the plain
 * run changed and the interposed one kept, every differing byte there
 * (Open MPI's reduce-then-scatterv algorithm, chosen for tiny messages,
 * reduces the whole vector into rank 0's buffer; MPI defines only the
 * first block, the library documents that it keeps the rest).  Each run
 * records per case whether its result is C's arithmetic and whether the
 * input past the first block is kept, so this is decided from the two
 * runs' own bytes, never from a list of expected failures.
 *
 * A case is one call.  Before it, one arena holds the send buffer and the
 * receive buffer, each with SLACK bytes of canary before and after (the
 * whole arena is filled with a position-dependent pattern, then the inputs
 * written); after it, the whole arena is recorded with the call's return
 * code (the communicators use MPI_ERRORS_RETURN).  So a write outside the
 * result (past a block, into the send buffer, into a vector's gaps, into a
 * non-root's receive buffer), a wrong element or a wrong order shows as a
 * byte that differs from MPI's.
 *
 * The matrix, per communicator class (see the cases() and comm table):
 *   - reductions (MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Reduce_scatter
 *     with equal counts, MPI_Reduce): every datatype the library reduces,
 *     under each of its C and Fortran names, x SUM, PROD, MIN, MAX, x in
 *     place and not, at count 7; int, unsigned char, int64_t, float and
 *     double also at counts 0, 1 and 1001 (7 and 1001 are multiples of no
 *     rank count from 2 to 4, so blocks never divide evenly); MPI_Reduce at
 *     every root;
 *   - copies (MPI_Allgather, MPI_Alltoall, MPI_Bcast): char, byte, short,
 *     int, double, long double, double complex, MPI_2INT, MPI_FLOAT_INT and
 *     MPI_DOUBLE_INT (whose extent is not its size) at counts 0, 1, 7 and
 *     1001, in place (allgather, alltoall) and not, MPI_Bcast from every
 *     root;
 *   - communicators: MPI_COMM_WORLD gets all of the above; a duplicate, a
 *     duplicate of a duplicate and MPI_Comm_create_group of the whole group
 *     (served), MPI_Comm_split with one color (congruent, passed), a real
 *     split, the world reversed (create_group), MPI_COMM_SELF (passed) get a
 *     smaller set; an intercommunicator an MPI_Allreduce;
 *   - calls the library must pass to MPI: user ops (commutative, and a
 *     non-commutative one whose result shows the rank order), a derived
 *     datatype (vectors with gaps, MPI_BOTTOM with absolute addresses, a
 *     non-commutative op on a 2-int type), predefined ops coll lacks,
 *     16-bit and long double reductions, MPI_Reduce_scatter with unequal
 *     counts, mixed send/receive types, and erroneous calls every rank
 *     makes alike: a negative count, a bad root, a null op or datatype,
 *     MPI_IN_PLACE as the receive buffer, aliased send and receive
 *     buffers (MPI's error class, the same in both runs; for aliased
 *     buffers that class alone, since what MPI leaves in them depends on
 *     its timing); and every call with count 0 and NULL buffers.
 *
 * The inputs depend on the rank, the element's index and the case, so a
 * misplaced element or block shows.  Floating-point inputs are chosen so
 * that every order of reduction gives the same bits, since MPI lets an
 * implementation reduce in any order and coll's order is not MPI's: sums
 * and min/max take multiples of 1/4 no larger than 3 (the sum of 4 of them
 * is exact in float), products take +-1/2, +-1, +-2 and +-3 (a product of
 * 4 is exact), and no input is -0 (MIN and MAX of 0 and -0 could depend on
 * the order).  Integer products stay within int8 at 4 ranks (|x| <= 3),
 * so no signed overflow happens; unsigned types get the same values cast,
 * wrapping as C defines.
 *
 * The statistics line: each case knows whether the library serves it or
 * why it passes, so rank 0 prints what COLL_MPI_STATS=1 must say, in its
 * format (the test compares the two).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statline.h"

#define SLACK 256

static int wrank, wsize;
static FILE *out;
static long ncases;

/* --- what the library must count (the order of its statistics line) -------- */

enum { F_ALLREDUCE, F_RSB, F_RS, F_ALLGATHER, F_BCAST, F_REDUCE, F_ALLTOALL, NF };
static const char *const fname[NF] = { "MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Reduce_scatter",
	                               "MPI_Allgather", "MPI_Bcast", "MPI_Reduce", "MPI_Alltoall" };
enum { R_COMM, R_DERIVED, R_DTYPE, R_USEROP, R_OP, R_MIXED, R_COUNTS, R_INVALID, NR };
static const char *const rname[NR] = { "communicator", "derived datatype", "datatype", "user op", "op",
	                               "send/recv types differ", "non-uniform counts", "invalid argument" };
static long want_served[NF], want_passed[NR];

/* A case's fate: served as function f, or passed for reason r (SERVE(f),
 * PASS(r)). */
#define SERVE(f) (f)
#define PASS(r) (NF + (r))
static void expect(int fate)
{
	if (fate < NF)
		want_served[fate]++;
	else
		want_passed[fate - NF]++;
}

/* --- datatypes ------------------------------------------------------------------ */

/* kind: 'i' signed, 'u' unsigned, 'f' floating (reducible by size), 'x'
 * moved as bytes only */
typedef struct {
	MPI_Datatype dt;
	const char *name;
	char kind;
	int size;
	MPI_Aint extent;
} ty;

#define T(dt, kind) { dt, #dt, kind, 0, 0 }
/* every name the library reduces (runtime/pmpi/pmpi.c, init_types) */
static ty red_types[] = {
	T(MPI_SIGNED_CHAR, 'i'),   T(MPI_INT8_T, 'i'),        T(MPI_INT, 'i'),           T(MPI_INT32_T, 'i'),
	T(MPI_LONG, 'i'),          T(MPI_LONG_LONG, 'i'),     T(MPI_LONG_LONG_INT, 'i'), T(MPI_INT64_T, 'i'),
	T(MPI_AINT, 'i'),          T(MPI_OFFSET, 'i'),        T(MPI_COUNT, 'i'),         T(MPI_UNSIGNED_CHAR, 'u'),
	T(MPI_UINT8_T, 'u'),       T(MPI_UNSIGNED, 'u'),      T(MPI_UINT32_T, 'u'),      T(MPI_UNSIGNED_LONG, 'u'),
	T(MPI_UNSIGNED_LONG_LONG, 'u'), T(MPI_UINT64_T, 'u'), T(MPI_FLOAT, 'f'),         T(MPI_DOUBLE, 'f'),
	T(MPI_INTEGER, 'i'),       T(MPI_REAL, 'f'),          T(MPI_DOUBLE_PRECISION, 'f'),
};
/* the ones also run at counts 0, 1 and 1001 */
static const char *const red_big[] = { "MPI_INT", "MPI_UNSIGNED_CHAR", "MPI_INT64_T", "MPI_FLOAT", "MPI_DOUBLE" };
/* reductions the library passes: 16 bits, long double ("datatype") */
static ty red_passed[] = { T(MPI_SHORT, 'i'), T(MPI_UNSIGNED_SHORT, 'u'), T(MPI_INT16_T, 'i'), T(MPI_UINT16_T, 'u'),
	                   T(MPI_LONG_DOUBLE, 'f') };
/* copied as bytes (MPI_DOUBLE_INT has a hole: extent 16, size 12: passed) */
static ty copy_types[] = { T(MPI_CHAR, 'x'),           T(MPI_BYTE, 'x'),     T(MPI_SHORT, 'x'),
	                   T(MPI_INT, 'x'),            T(MPI_DOUBLE, 'x'),   T(MPI_LONG_DOUBLE, 'x'),
	                   T(MPI_C_DOUBLE_COMPLEX, 'x'), T(MPI_2INT, 'x'),   T(MPI_FLOAT_INT, 'x'),
	                   T(MPI_DOUBLE_INT, 'x') };
#undef T
#define NELEM(a) ((int)(sizeof a / sizeof a[0]))

static void type_sizes(ty *t, int n)
{
	for (int i = 0; i < n; i++) {
		MPI_Aint lb;
		MPI_Type_size(t[i].dt, &t[i].size);
		MPI_Type_get_extent(t[i].dt, &lb, &t[i].extent);
	}
}

/* Does the library reduce t (a coll dtype of its size and kind)? */
static int reducible(const ty *t)
{
	if (t->extent != t->size)
		return 0;
	if (t->kind == 'f')
		return t->size == 4 || t->size == 8;
	return t->size == 1 || t->size == 4 || t->size == 8;
}

static int is_big(const ty *t)
{
	for (int i = 0; i < NELEM(red_big); i++)
		if (strcmp(t->name, red_big[i]) == 0)
			return 1;
	return 0;
}

/* --- inputs --------------------------------------------------------------------- */

enum { O_SUM, O_PROD, O_MIN, O_MAX, NO };
static MPI_Op ops[NO];
static const char *const opname[NO] = { "sum", "prod", "min", "max" };

/* Rank r's element i of case `salt` under op o, as a double (exact in every
 * type; the file's comment says why these values). */
static double value(int o, int is_float, int r, size_t i, unsigned salt)
{
	size_t k = i * 7 + (size_t)r * 13 + salt;
	if (o == O_PROD) {
		static const double fp[8] = { 1, 2, -1, -0.5, 3, -2, 0.5, -3 };
		static const double ip[8] = { 1, 2, -1, -1, 3, -2, 1, -3 };
		return is_float ? fp[k % 8] : ip[k % 8];
	}
	double v = (double)((int)(k % 23) - 11);
	return is_float ? v / 4 : v;
}

static void put(const ty *t, void *b, size_t i, double v)
{
	char *p = (char *)b + i * (size_t)t->extent;
	if (t->kind == 'f' && t->size == 4) {
		float f = (float)v;
		memcpy(p, &f, 4);
	} else if (t->kind == 'f' && t->size == 8) {
		memcpy(p, &v, 8);
	} else if (t->kind == 'f') {
		/* x87 extended: 10 bytes of value; the rest is padding, which
		 * keeps the canary (the variable's own padding is garbage) */
		long double l = v;
		memcpy(p, &l, 10);
	} else {
		int64_t x = (int64_t)v;   /* little-endian: the low bytes first */
		memcpy(p, &x, (size_t)t->size < 8 ? (size_t)t->size : 8);
	}
}

/* n elements of rank r for a reduction of t under o */
static void fill_red(const ty *t, int o, void *b, size_t n, int r, unsigned salt)
{
	for (size_t i = 0; i < n; i++)
		put(t, b, i, value(o, t->kind == 'f', r, i, salt));
}

/* n bytes of rank r for a copy: every byte tells whose and where */
static void fill_bytes(void *b, size_t n, int r, unsigned salt)
{
	unsigned char *p = b;
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31 + (size_t)r * 101 + salt * 7 + 1);
}

/* --- the arena and the record ------------------------------------------------------ */

typedef struct {
	unsigned char *mem;
	size_t len;
	unsigned char *s, *r;   /* send and receive buffers, SLACK bytes of canary around each */
	/* a reduction's result, where the arena holds it, and whether it is
	 * the arithmetic of C on the inputs (1), not (0), or unchecked (-1) */
	int res_ok;
	size_t res_off, res_len;
	/* an in-place reduce-scatter's input past the first block: still the
	 * caller's (1), not (0), or not such a call (-1) */
	int keep_ok;
	size_t keep_off, keep_len;
} arena;

static size_t up64(size_t x) { return (x + 63) & ~(size_t)63; }

/* The arena's byte at offset i before the inputs are written. */
static unsigned char canary(size_t i) { return (unsigned char)(0xC5 ^ (i * 7) ^ (i >> 8)); }

static void arena_make(arena *a, size_t sbytes, size_t rbytes)
{
	a->len = 4 * SLACK + up64(sbytes) + up64(rbytes);
	a->mem = aligned_alloc(64, a->len);
	if (!a->mem) {
		fprintf(stderr, "diff: rank %d: out of memory\n", wrank);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (size_t i = 0; i < a->len; i++)
		a->mem[i] = canary(i);
	a->s = a->mem + SLACK;
	a->r = a->s + up64(sbytes) + 2 * SLACK;
	a->res_ok = a->keep_ok = -1;
	a->res_off = a->res_len = a->keep_off = a->keep_len = 0;
}

/* One record: name length (u32), name, return code (i32), the result's
 * check (i32), offset and length (u64, u64), the kept input's check,
 * offset and length (i32, u64, u64), arena length (u64), the arena. */
static void record(const char *name, int rc, arena *a)
{
	uint32_t nl = (uint32_t)strlen(name);
	int32_t c = rc, ok = a->res_ok, kok = a->keep_ok;
	uint64_t l = a->len, ro = a->res_off, rl = a->res_len, ko = a->keep_off, kl = a->keep_len;
	if (fwrite(&nl, 4, 1, out) != 1 || fwrite(name, nl, 1, out) != 1 || fwrite(&c, 4, 1, out) != 1 ||
	    fwrite(&ok, 4, 1, out) != 1 || fwrite(&ro, 8, 1, out) != 1 || fwrite(&rl, 8, 1, out) != 1 ||
	    fwrite(&kok, 4, 1, out) != 1 || fwrite(&ko, 8, 1, out) != 1 || fwrite(&kl, 8, 1, out) != 1 ||
	    fwrite(&l, 8, 1, out) != 1 || (a->len && fwrite(a->mem, a->len, 1, out) != 1)) {
		fprintf(stderr, "diff: rank %d: cannot write the record of %s\n", wrank, name);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	free(a->mem);
	a->mem = NULL;
	ncases++;
}

/* --- communicators ------------------------------------------------------------------ */

typedef struct {
	const char *name;
	MPI_Comm comm;
	int served;   /* the library serves it: the world, duplicates, congruent create_group */
	int full;     /* the whole matrix (the world), else a smaller set */
	int size, rank;
} cm;

/* --- the cases ------------------------------------------------------------------------ */

static unsigned salt;   /* one per case: different data in every case */

/* The bits of x in t's size, little-endian, at p. */
static void store(const ty *t, unsigned char *p, uint64_t x)
{
	for (int b = 0; b < t->size && b < 8; b++)
		p[b] = (unsigned char)(x >> (8 * b));
}

/* The reduction under predefined op o of every rank's element idx, as C
 * computes it in type t, written at p: integers wrap at t's width (two's
 * complement), MIN and MAX compare unsigned types as unsigned, floating
 * point is exact (the inputs are chosen so). */
static void expected(const ty *t, int o, int n, size_t idx, unsigned char *p)
{
	if (t->kind == 'f') {
		double acc = value(o, 1, 0, idx, salt);
		for (int r = 1; r < n; r++) {
			double v = value(o, 1, r, idx, salt);
			acc = o == O_SUM ? acc + v : o == O_PROD ? acc * v : o == O_MIN ? (v < acc ? v : acc) : (v > acc ? v : acc);
		}
		put(t, p, 0, acc);
		return;
	}
	uint64_t mask = t->size >= 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * t->size)) - 1;
	int64_t acc = (int64_t)value(o, 0, 0, idx, salt);
	for (int r = 1; r < n; r++) {
		int64_t v = (int64_t)value(o, 0, r, idx, salt);
		if (o == O_SUM)
			acc += v;   /* small: no int64 overflow; the width is applied by store */
		else if (o == O_PROD)
			acc *= v;
		else if (t->kind == 'i')
			acc = o == O_MIN ? (v < acc ? v : acc) : (v > acc ? v : acc);
		else {
			uint64_t uv = (uint64_t)v & mask, ua = (uint64_t)acc & mask;
			acc = (o == O_MIN ? uv < ua : uv > ua) ? v : acc;
		}
	}
	store(t, p, (uint64_t)acc);
}

/* After a reduction: mark the result's place in the arena and whether it
 * is C's arithmetic, so that the comparison can tell a result of MPI's
 * own that is wrong from the library's. */
static void check_result(arena *a, const ty *t, int o, int fn, int n, int me, int root, size_t cnt)
{
	if (fn == F_REDUCE && me != root)
		return;
	size_t first = fn == F_RSB || fn == F_RS ? (size_t)me * cnt : 0;
	unsigned char want[16];
	a->res_off = (size_t)(a->r - a->mem);
	a->res_len = cnt * (size_t)t->extent;
	a->res_ok = 1;
	for (size_t i = 0; i < cnt && a->res_ok; i++) {
		memset(want, 0, sizeof want);
		expected(t, o, n, first + i, want);
		/* long double: its 10 bytes of value, not the padding */
		size_t len = t->kind == 'f' && t->size > 8 ? 10 : (size_t)t->size;
		a->res_ok = memcmp(a->r + i * (size_t)t->extent, want, len) == 0;
	}
}

static void reduction(const cm *c, int fn, const ty *t, int o, MPI_Op op, const char *opn, int count, int inplace,
                      int root, int fate)
{
	char name[256];
	int n = c->size, me = c->rank, rc = 0;
	size_t el = (size_t)t->extent, cnt = (size_t)count;
	size_t in = fn == F_RSB || fn == F_RS ? cnt * (size_t)n : cnt;   /* input elements */
	size_t res = cnt;                                                   /* result elements */
	static const char *const short_fn[NF] = { "allreduce", "rsb", "rs", "allgather", "bcast", "reduce", "alltoall" };
	snprintf(name, sizeof name, "%s/%s/%s/%s/n%d%s", short_fn[fn], c->name, t->name, opn, count,
	         inplace ? "/inplace" : "");
	if (fn == F_REDUCE)
		snprintf(name + strlen(name), sizeof name - strlen(name), "/root%d", root);
	salt++;
	arena a;
	int ip = inplace && (fn != F_REDUCE || me == root);   /* in place at the root only */
	arena_make(&a, ip ? 0 : in * el, (ip ? in : res) * el);
	fill_red(t, o, ip ? a.r : a.s, in, me, salt);
	const void *sb = ip ? MPI_IN_PLACE : a.s;
	if (fn == F_ALLREDUCE) {
		rc = MPI_Allreduce(sb, a.r, count, t->dt, op, c->comm);
	} else if (fn == F_RSB) {
		rc = MPI_Reduce_scatter_block(sb, a.r, count, t->dt, op, c->comm);
	} else if (fn == F_RS) {
		int counts[64];
		for (int i = 0; i < n; i++)
			counts[i] = count;
		rc = MPI_Reduce_scatter(sb, a.r, counts, t->dt, op, c->comm);
	} else {
		rc = MPI_Reduce(sb, a.r, count, t->dt, op, root, c->comm);
	}
	if (op == ops[o] && rc == MPI_SUCCESS)
		check_result(&a, t, o, fn, n, me, root, cnt);
	if ((fn == F_RSB || fn == F_RS) && ip && n > 1) {
		/* the input past the first block: the caller's still? */
		size_t from = cnt * el, len = (in - cnt) * el;
		unsigned char *mine = malloc(in * el + 1);
		if (!mine) {
			fprintf(stderr, "diff: rank %d: out of memory\n", wrank);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		for (size_t i = 0; i < in * el; i++)   /* as it was before the call */
			mine[i] = canary((size_t)(a.r - a.mem) + i);
		fill_red(t, o, mine, in, me, salt);
		a.keep_off = (size_t)(a.r - a.mem) + from;
		a.keep_len = len;
		a.keep_ok = memcmp(a.r + from, mine + from, len) == 0;
		free(mine);
	}
	expect(fate);
	record(name, rc, &a);
}

/* The fate of a reduction of t under predefined op o on c. */
static int red_fate(const cm *c, int fn, const ty *t)
{
	if (!c->served)
		return PASS(R_COMM);
	return reducible(t) ? SERVE(fn) : PASS(R_DTYPE);
}

static void copy(const cm *c, int fn, const ty *t, int count, int inplace, int root)
{
	char name[256];
	int n = c->size, me = c->rank, rc;
	static const char *const short_fn[NF] = { "allreduce", "rsb", "rs", "allgather", "bcast", "reduce", "alltoall" };
	snprintf(name, sizeof name, "%s/%s/%s/n%d%s", short_fn[fn], c->name, t->name, count, inplace ? "/inplace" : "");
	if (fn == F_BCAST)
		snprintf(name + strlen(name), sizeof name - strlen(name), "/root%d", root);
	salt++;
	size_t el = (size_t)t->extent, cnt = (size_t)count;
	arena a;
	if (fn == F_BCAST) {
		arena_make(&a, 0, cnt * el);
		if (me == root)
			fill_bytes(a.r, cnt * el, me, salt);
		rc = MPI_Bcast(a.r, count, t->dt, root, c->comm);
	} else if (fn == F_ALLGATHER) {
		arena_make(&a, inplace ? 0 : cnt * el, cnt * el * (size_t)n);
		fill_bytes(inplace ? a.r + (size_t)me * cnt * el : a.s, cnt * el, me, salt);
		rc = MPI_Allgather(inplace ? MPI_IN_PLACE : a.s, count, t->dt, a.r, count, t->dt, c->comm);
	} else {
		arena_make(&a, inplace ? 0 : cnt * el * (size_t)n, cnt * el * (size_t)n);
		fill_bytes(inplace ? a.r : a.s, cnt * el * (size_t)n, me, salt);
		rc = MPI_Alltoall(inplace ? MPI_IN_PLACE : a.s, count, t->dt, a.r, count, t->dt, c->comm);
	}
	int holes = t->extent != t->size;
	expect(!c->served ? PASS(R_COMM) : holes ? PASS(R_DTYPE) : SERVE(fn));
	record(name, rc, &a);
}

/* The reductions of the matrix on c. */
static void reductions(const cm *c)
{
	static const int fns[] = { F_ALLREDUCE, F_RSB, F_RS, F_REDUCE };
	int counts[] = { 0, 1, 7, 1001 };
	for (int f = 0; f < NELEM(fns); f++)
		for (int ti = 0; ti < NELEM(red_types); ti++) {
			const ty *t = &red_types[ti];
			/* the smaller set: int and double, sum and max */
			if (!c->full && strcmp(t->name, "MPI_INT") != 0 && strcmp(t->name, "MPI_DOUBLE") != 0)
				continue;
			for (int o = 0; o < NO; o++) {
				if (!c->full && o != O_SUM && o != O_MAX)
					continue;
				for (int k = 0; k < NELEM(counts); k++) {
					if (counts[k] != 7 && !is_big(t))
						continue;
					for (int inplace = 0; inplace < 2; inplace++) {
						if (fns[f] != F_REDUCE) {
							reduction(c, fns[f], t, o, ops[o], opname[o], counts[k], inplace, 0,
							          red_fate(c, fns[f], t));
							continue;
						}
						/* every root at count 7 and 1001, root 0 or the last
						 * otherwise */
						for (int root = 0; root < c->size; root++)
							if (counts[k] == 7 || counts[k] == 1001 ||
							    root == (o % 2 ? c->size - 1 : 0))
								reduction(c, F_REDUCE, t, o, ops[o], opname[o], counts[k], inplace,
								          root, red_fate(c, F_REDUCE, t));
					}
				}
			}
		}
}

static void copies(const cm *c)
{
	static const int fns[] = { F_ALLGATHER, F_ALLTOALL, F_BCAST };
	int counts[] = { 0, 1, 7, 1001 };
	for (int f = 0; f < NELEM(fns); f++)
		for (int ti = 0; ti < NELEM(copy_types); ti++) {
			const ty *t = &copy_types[ti];
			if (!c->full && strcmp(t->name, "MPI_INT") != 0 && strcmp(t->name, "MPI_DOUBLE") != 0)
				continue;
			for (int k = 0; k < NELEM(counts); k++) {
				if (!c->full && counts[k] != 7 && counts[k] != 1001)
					continue;
				if (fns[f] == F_BCAST) {
					for (int root = 0; root < c->size; root++)
						copy(c, F_BCAST, t, counts[k], 0, root);
					continue;
				}
				for (int inplace = 0; inplace < 2; inplace++)
					copy(c, fns[f], t, counts[k], inplace, 0);
			}
		}
}

/* --- the calls the library must pass ------------------------------------------------ */

/* commutative: a sum of ints */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	for (int i = 0; i < *len; i++)
		((int *)inout)[i] += ((int *)in)[i];
}
/* non-commutative: a op b = a (the result is the lowest rank's input, so
 * an order other than MPI's shows) */
static void user_first(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	memcpy(inout, in, (size_t)*len * sizeof(long));
}
/* non-commutative on pairs: x -> a x + b composed, (a1,b1) o (a2,b2) =
 * (a1 a2, a1 b2 + b1), on a contiguous type of 2 ints */
static void user_affine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	int *x = in, *y = inout;
	for (int i = 0; i < *len; i++) {
		int a1 = x[2 * i], b1 = x[2 * i + 1], a2 = y[2 * i], b2 = y[2 * i + 1];
		y[2 * i] = a1 * a2;
		y[2 * i + 1] = a1 * b2 + b1;
	}
}

static const ty t_int = { MPI_INT, "MPI_INT", 'i', (int)sizeof(int), (MPI_Aint)sizeof(int) };

static void passed(const cm *w)
{
	int n = w->size, me = w->rank, rc, cls = 0;
	arena a;
	char name[128];
	MPI_Op usum, ufirst, uaffine;
	MPI_Op_create(user_sum, 1, &usum);
	MPI_Op_create(user_first, 0, &ufirst);
	MPI_Op_create(user_affine, 0, &uaffine);
	ty tint = t_int, tlong = { MPI_LONG, "MPI_LONG", 'i', (int)sizeof(long), (MPI_Aint)sizeof(long) };

	/* user ops, every reduction */
	for (int inplace = 0; inplace < 2; inplace++) {
		reduction(w, F_ALLREDUCE, &tint, O_SUM, usum, "usersum", 7, inplace, 0, PASS(R_USEROP));
		reduction(w, F_ALLREDUCE, &tlong, O_SUM, ufirst, "userfirst", 7, inplace, 0, PASS(R_USEROP));
		reduction(w, F_RSB, &tlong, O_SUM, ufirst, "userfirst", 7, inplace, 0, PASS(R_USEROP));
		reduction(w, F_RS, &tint, O_SUM, usum, "usersum", 7, inplace, 0, PASS(R_USEROP));
		for (int root = 0; root < n; root++)
			reduction(w, F_REDUCE, &tlong, O_SUM, ufirst, "userfirst", 7, inplace, root, PASS(R_USEROP));
	}
	/* predefined ops coll lacks; MINLOC on a pair type is a datatype first */
	reduction(w, F_ALLREDUCE, &tint, O_SUM, MPI_BXOR, "bxor", 7, 0, 0, PASS(R_OP));
	reduction(w, F_RSB, &tint, O_SUM, MPI_BAND, "band", 7, 1, 0, PASS(R_OP));
	reduction(w, F_REDUCE, &tint, O_SUM, MPI_LOR, "lor", 7, 0, n - 1, PASS(R_OP));
	{
		ty t2 = { MPI_2INT, "MPI_2INT", 'i', 8, 8 };
		reduction(w, F_ALLREDUCE, &t2, O_SUM, MPI_MINLOC, "minloc", 7, 0, 0, PASS(R_DTYPE));
	}
	/* 16-bit and long double reductions */
	for (int i = 0; i < NELEM(red_passed); i++)
		for (int o = 0; o < NO; o++)
			reduction(w, F_ALLREDUCE, &red_passed[i], o, ops[o], opname[o], 7, o % 2, 0, PASS(R_DTYPE));

	/* MPI_Reduce_scatter with unequal counts: rank i gets i+1 (sum, in
	 * place and not) */
	for (int inplace = 0; inplace < 2; inplace++) {
		int counts[64], total = 0;
		for (int i = 0; i < n; i++)
			total += counts[i] = i + 1;
		salt++;
		arena_make(&a, inplace ? 0 : (size_t)total * sizeof(int), (size_t)(inplace ? total : counts[me]) * sizeof(int));
		fill_red(&tint, O_SUM, inplace ? a.r : a.s, (size_t)total, me, salt);
		rc = MPI_Reduce_scatter(inplace ? MPI_IN_PLACE : a.s, a.r, counts, MPI_INT, MPI_SUM, w->comm);
		expect(PASS(R_COUNTS));
		snprintf(name, sizeof name, "rs/world/MPI_INT/sum/counts1..n%s", inplace ? "/inplace" : "");
		record(name, rc, &a);
	}

	/* derived datatypes: a vector with gaps (the gaps must keep their
	 * canary) in MPI_Bcast, MPI_Allgather and MPI_Alltoall */
	MPI_Datatype vec, pair;
	MPI_Type_vector(5, 1, 3, MPI_INT, &vec);
	MPI_Type_commit(&vec);
	MPI_Aint lb, vext;
	MPI_Type_get_extent(vec, &lb, &vext);
	for (int root = 0; root < n; root++) {
		salt++;
		arena_make(&a, 0, 3 * (size_t)vext);
		if (me == root)
			for (int i = 0; i < 3 * (int)vext / 4; i += 3)
				((int *)a.r)[i] = i * 11 + root + (int)salt;
		rc = MPI_Bcast(a.r, 3, vec, root, w->comm);
		expect(PASS(R_DERIVED));
		snprintf(name, sizeof name, "bcast/world/vector(5,1,3)/n3/root%d", root);
		record(name, rc, &a);
	}
	salt++;
	arena_make(&a, 2 * (size_t)vext, 2 * (size_t)vext * (size_t)n);
	for (int i = 0; i < 2 * (int)vext / 4; i += 3)
		((int *)a.s)[i] = i * 5 + me * 1000 + (int)salt;
	rc = MPI_Allgather(a.s, 2, vec, a.r, 2, vec, w->comm);
	expect(PASS(R_DERIVED));
	record("allgather/world/vector(5,1,3)/n2", rc, &a);
	salt++;
	arena_make(&a, (size_t)vext * (size_t)n, (size_t)vext * (size_t)n);
	for (int i = 0; i < (int)vext * n / 4; i += 3)
		((int *)a.s)[i] = i * 3 + me * 1000 + (int)salt;
	rc = MPI_Alltoall(a.s, 1, vec, a.r, 1, vec, w->comm);
	expect(PASS(R_DERIVED));
	record("alltoall/world/vector(5,1,3)/n1", rc, &a);
	MPI_Type_free(&vec);

	/* a non-commutative user op on a derived pair type: counted as the
	 * datatype (checked first) */
	MPI_Type_contiguous(2, MPI_INT, &pair);
	MPI_Type_commit(&pair);
	for (int root = 0; root < n; root++) {
		salt++;
		arena_make(&a, 7 * 8, 7 * 8);
		for (int i = 0; i < 14; i++)
			((int *)a.s)[i] = i % 2 ? me + i + (int)salt % 5 : 2 + (me + i) % 2;
		rc = MPI_Reduce(a.s, a.r, 7, pair, uaffine, root, w->comm);
		expect(PASS(R_DERIVED));
		snprintf(name, sizeof name, "reduce/world/contiguous(2,int)/useraffine/n7/root%d", root);
		record(name, rc, &a);
	}
	salt++;
	arena_make(&a, 0, 7 * 8);
	for (int i = 0; i < 14; i++)
		((int *)a.r)[i] = i % 2 ? me * 3 - i : 1 + (me + i) % 3;
	rc = MPI_Allreduce(MPI_IN_PLACE, a.r, 7, pair, uaffine, w->comm);
	expect(PASS(R_DERIVED));
	record("allreduce/world/contiguous(2,int)/useraffine/n7/inplace", rc, &a);

	/* mixed send and receive types: 2 MPI_INT against one MPI_2INT */
	salt++;
	arena_make(&a, 2 * sizeof(int), 2 * sizeof(int) * (size_t)n);
	((int *)a.s)[0] = me + (int)salt, ((int *)a.s)[1] = -me;
	rc = MPI_Allgather(a.s, 2, MPI_INT, a.r, 1, MPI_2INT, w->comm);
	expect(PASS(R_MIXED));
	record("allgather/world/MPI_INT*2->MPI_2INT/n1", rc, &a);
	salt++;
	arena_make(&a, 2 * sizeof(int) * (size_t)n, 2 * sizeof(int) * (size_t)n);
	fill_bytes(a.s, 2 * sizeof(int) * (size_t)n, me, salt);
	rc = MPI_Alltoall(a.s, 1, MPI_2INT, a.r, 2, MPI_INT, w->comm);
	expect(PASS(R_MIXED));
	record("alltoall/world/MPI_2INT->MPI_INT*2/n1", rc, &a);

	/* MPI_BOTTOM with a type of absolute addresses (derived) */
	{
		salt++;
		arena_make(&a, 0, 16 * sizeof(int));
		int *buf = (int *)a.r;
		for (int i = 0; i < 16; i++)
			buf[i] = me * 100 + i + (int)salt;
		MPI_Aint addr;
		MPI_Get_address(buf + 2, &addr);
		int len = 9;
		MPI_Datatype abs;
		MPI_Type_create_hindexed(1, &len, &addr, MPI_INT, &abs);
		MPI_Type_commit(&abs);
		rc = MPI_Bcast(MPI_BOTTOM, 1, abs, n - 1, w->comm);
		expect(PASS(R_DERIVED));
		record("bcast/world/MPI_BOTTOM+hindexed/root_last", rc, &a);
		MPI_Type_free(&abs);
	}

	/* invalid arguments: MPI's own error code, in both runs */
	salt++;
	arena_make(&a, 8 * sizeof(int), 8 * sizeof(int));
	rc = MPI_Allreduce(a.s, a.r, -1, MPI_INT, MPI_SUM, w->comm);
	MPI_Error_class(rc, &cls);
	expect(PASS(R_INVALID));
	record("allreduce/world/MPI_INT/sum/n-1", cls, &a);
	salt++;
	arena_make(&a, 0, 8 * sizeof(int));
	rc = MPI_Bcast(a.r, 8, MPI_INT, n, w->comm);
	MPI_Error_class(rc, &cls);
	expect(PASS(R_INVALID));
	record("bcast/world/MPI_INT/n8/root_n", cls, &a);

	/* erroneous buffers every rank passes alike: MPI_IN_PLACE as the
	 * receive buffer, send and receive buffers that alias (MPI rejects
	 * some, runs others as it runs them); the library must hand them to
	 * MPI, whatever MPI then does */
	{
		int cnts[64];
		for (int i = 0; i < n; i++)
			cnts[i] = 4;
		for (int alias = 0; alias < 2; alias++) {
			for (int f = 0; f < 5; f++) {
				static const char *const fnn[5] = { "allreduce", "rsb", "rs", "allgather", "alltoall" };
				int counts[2] = { 4, 1 };
				for (int k = 0; k < (f == 0 && alias ? 2 : 1); k++) {
					int cnt = counts[k];
					salt++;
					arena_make(&a, 4 * sizeof(int) * (size_t)n, 4 * sizeof(int) * (size_t)n);
					fill_red(&tint, O_SUM, a.s, 4 * (size_t)n, me, salt);
					fill_red(&tint, O_SUM, a.r, 4 * (size_t)n, me, salt + 1);
					void *sb = a.s, *rb = alias ? (void *)a.s : MPI_IN_PLACE;
					if (f == 0)
						rc = MPI_Allreduce(sb, rb, cnt, MPI_INT, MPI_SUM, w->comm);
					else if (f == 1)
						rc = MPI_Reduce_scatter_block(sb, rb, cnt, MPI_INT, MPI_SUM, w->comm);
					else if (f == 2)
						rc = MPI_Reduce_scatter(sb, rb, cnts, MPI_INT, MPI_SUM, w->comm);
					else if (f == 3)
						rc = MPI_Allgather(sb, cnt, MPI_INT, rb, cnt, MPI_INT, w->comm);
					else
						rc = MPI_Alltoall(sb, cnt, MPI_INT, rb, cnt, MPI_INT, w->comm);
					MPI_Error_class(rc, &cls);
					expect(PASS(R_INVALID));
					snprintf(name, sizeof name, "%s/world/MPI_INT/n%d/%s", fnn[f], cnt,
					         alias ? "send=recv" : "recv=MPI_IN_PLACE");
					/* what MPI leaves in aliased buffers depends on its timing
					 * (plain runs differ from each other): the code alone */
					if (alias)
						a.len = 0;
					record(name, cls, &a);
				}
			}
		}
	}
	/* a null op or datatype */
	salt++;
	arena_make(&a, 8 * sizeof(int), 8 * sizeof(int));
	rc = MPI_Allreduce(a.s, a.r, 8, MPI_INT, MPI_OP_NULL, w->comm);
	MPI_Error_class(rc, &cls);
	expect(PASS(R_INVALID));
	record("allreduce/world/MPI_INT/MPI_OP_NULL/n8", cls, &a);
	salt++;
	arena_make(&a, 0, 8 * sizeof(int));
	rc = MPI_Bcast(a.r, 8, MPI_DATATYPE_NULL, 0, w->comm);
	MPI_Error_class(rc, &cls);
	expect(PASS(R_INVALID));
	record("bcast/world/MPI_DATATYPE_NULL/n8/root0", cls, &a);

	/* count 0 with NULL buffers (MPI_BOTTOM here): nothing to move,
	 * served, MPI_SUCCESS */
	{
		int zeros[64] = { 0 };
		arena none = { 0 };
		int r[7];
		r[0] = MPI_Allreduce(NULL, NULL, 0, MPI_INT, MPI_SUM, w->comm);
		r[1] = MPI_Reduce_scatter_block(NULL, NULL, 0, MPI_INT, MPI_SUM, w->comm);
		r[2] = MPI_Reduce_scatter(NULL, NULL, zeros, MPI_INT, MPI_SUM, w->comm);
		r[3] = MPI_Allgather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, w->comm);
		r[4] = MPI_Bcast(NULL, 0, MPI_INT, n - 1, w->comm);
		r[5] = MPI_Reduce(NULL, NULL, 0, MPI_INT, MPI_SUM, n - 1, w->comm);
		r[6] = MPI_Alltoall(NULL, 0, MPI_INT, NULL, 0, MPI_INT, w->comm);
		static const char *const fnn[7] = { "allreduce", "rsb", "rs", "allgather", "bcast", "reduce", "alltoall" };
		for (int f = 0; f < 7; f++) {
			expect(SERVE(f));
			snprintf(name, sizeof name, "%s/world/MPI_INT/n0/NULL", fnn[f]);
			none.mem = malloc(1);
			none.len = 0;
			none.res_ok = none.keep_ok = -1;
			record(name, r[f], &none);
		}
	}

	MPI_Type_free(&pair);
	MPI_Op_free(&usum);
	MPI_Op_free(&ufirst);
	MPI_Op_free(&uaffine);
}

/* An intercommunicator (even world ranks against odd): each side gets the
 * other's sum. */
static void intercomm(void)
{
	MPI_Comm half, inter;
	MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &half);
	MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, wrank % 2 ? 0 : 1, 99, &inter);
	MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
	cm c = { "inter", inter, 0, 0, 0, 0 };
	MPI_Comm_size(half, &c.size);
	MPI_Comm_rank(half, &c.rank);
	ty tint = t_int;
	reduction(&c, F_ALLREDUCE, &tint, O_SUM, MPI_SUM, "sum", 7, 0, 0, PASS(R_COMM));
	MPI_Comm_free(&inter);
	MPI_Comm_free(&half);
}

static void print_expect(void)
{
	pm_print_expect("diff", fname, want_served, NF, rname, want_passed, NR);
}

static int run(const char *dir)
{
	char path[4096];
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	if (wsize > 64) {
		if (wrank == 0)
			fprintf(stderr, "diff: at most 64 ranks\n");
		return 2;
	}
	snprintf(path, sizeof path, "%s/rank.%d", dir, wrank);
	if (!(out = fopen(path, "wb"))) {
		fprintf(stderr, "diff: rank %d: cannot write %s\n", wrank, path);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	ops[O_SUM] = MPI_SUM, ops[O_PROD] = MPI_PROD, ops[O_MIN] = MPI_MIN, ops[O_MAX] = MPI_MAX;
	type_sizes(red_types, NELEM(red_types));
	type_sizes(red_passed, NELEM(red_passed));
	type_sizes(copy_types, NELEM(copy_types));

	/* the communicators, every one returning errors rather than aborting */
	MPI_Comm dup, dupdup, cgroup, rgroup, csplit, split;
	MPI_Group wg, rg;
	int rev[64];
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Comm_dup(dup, &dupdup);
	MPI_Comm_group(MPI_COMM_WORLD, &wg);
	MPI_Comm_create_group(MPI_COMM_WORLD, wg, 1, &cgroup);
	for (int i = 0; i < wsize; i++)
		rev[i] = wsize - 1 - i;
	MPI_Group_incl(wg, wsize, rev, &rg);
	MPI_Comm_create_group(MPI_COMM_WORLD, rg, 2, &rgroup);
	MPI_Comm_split(MPI_COMM_WORLD, 0, wrank, &csplit);
	MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, -wrank, &split);
	/* Open MPI copies MPI_COMM_WORLD's attributes to MPI_Comm_create_group's
	 * communicator, which is how the library finds a duplicate: a
	 * congruent one is then served, and only then (asked here with an
	 * attribute of our own) */
	int kv, flag = 0;
	void *val;
	MPI_Comm probe;
	MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kv, NULL);
	MPI_Comm_set_attr(MPI_COMM_WORLD, kv, &kv);
	MPI_Comm_create_group(MPI_COMM_WORLD, wg, 3, &probe);
	MPI_Comm_get_attr(probe, kv, &val, &flag);
	MPI_Comm_free(&probe);
	MPI_Comm_delete_attr(MPI_COMM_WORLD, kv);
	MPI_Comm_free_keyval(&kv);
	cm comms[] = {
		{ "world", MPI_COMM_WORLD, 1, 1, 0, 0 },  { "dup", dup, 1, 0, 0, 0 },
		{ "dupdup", dupdup, 1, 0, 0, 0 },         { "cgroup", cgroup, flag, 0, 0, 0 },
		{ "csplit", csplit, 0, 0, 0, 0 },         { "split", split, 0, 0, 0, 0 },
		{ "rgroup", rgroup, 0, 0, 0, 0 },         { "self", MPI_COMM_SELF, 0, 0, 0, 0 },
	};
	for (int i = 0; i < NELEM(comms); i++) {
		MPI_Comm_set_errhandler(comms[i].comm, MPI_ERRORS_RETURN);
		MPI_Comm_size(comms[i].comm, &comms[i].size);
		MPI_Comm_rank(comms[i].comm, &comms[i].rank);
	}
	for (int i = 0; i < NELEM(comms); i++) {
		reductions(&comms[i]);
		copies(&comms[i]);
	}
	passed(&comms[0]);
	intercomm();

	if (fclose(out) != 0) {
		fprintf(stderr, "diff: rank %d: cannot write %s\n", wrank, path);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	if (wrank == 0) {
		printf("diff: %ld cases\n", ncases);
		print_expect();
	}
	MPI_Group_free(&wg);
	MPI_Group_free(&rg);
	MPI_Comm_free(&dup);
	MPI_Comm_free(&dupdup);
	MPI_Comm_free(&cgroup);
	MPI_Comm_free(&rgroup);
	MPI_Comm_free(&csplit);
	MPI_Comm_free(&split);
	return 0;
}

/* --- the comparison (no MPI) ------------------------------------------------------------ */

typedef struct {
	char name[256];
	int32_t rc, ok, keep_ok;
	uint64_t res_off, res_len, keep_off, keep_len, len;
	unsigned char *bytes;
} rec;

/* The next record of f into r (bytes malloc'd); 0 at the end, -1 when
 * the file is cut or malformed. */
static int next(FILE *f, rec *r)
{
	uint32_t nl;
	if (fread(&nl, 4, 1, f) != 1)
		return 0;
	if (nl >= sizeof r->name || fread(r->name, nl, 1, f) != 1 || fread(&r->rc, 4, 1, f) != 1 ||
	    fread(&r->ok, 4, 1, f) != 1 || fread(&r->res_off, 8, 1, f) != 1 || fread(&r->res_len, 8, 1, f) != 1 ||
	    fread(&r->keep_ok, 4, 1, f) != 1 || fread(&r->keep_off, 8, 1, f) != 1 || fread(&r->keep_len, 8, 1, f) != 1 ||
	    fread(&r->len, 8, 1, f) != 1 || r->len > ((uint64_t)1 << 32))
		return -1;
	r->name[nl] = 0;
	if (!(r->bytes = malloc(r->len ? r->len : 1)) || (r->len && fread(r->bytes, r->len, 1, f) != 1)) {
		free(r->bytes);
		r->bytes = NULL;
		return -1;
	}
	return 1;
}

/* Compare run 1 (plain MPI) with run 2 (interposed), rank by rank.  A
 * case differs when its return code, its length or any byte of its arena
 * differs, except where run 1's reduction result is not C's arithmetic on
 * the inputs, run 2's is, and every differing byte lies in the result: MPI
 * itself is wrong there and the library right (Open MPI 4.1's MIN and MAX
 * of MPI_UNSIGNED_LONG, ...), which is listed but is no failure. */
static int compare(const char *d1, const char *d2, int nranks)
{
	long cases = 0, differ = 0, mpi_wrong = 0, mpi_scratch = 0;
	for (int rk = 0; rk < nranks; rk++) {
		char p1[4096], p2[4096];
		snprintf(p1, sizeof p1, "%s/rank.%d", d1, rk);
		snprintf(p2, sizeof p2, "%s/rank.%d", d2, rk);
		FILE *f1 = fopen(p1, "rb"), *f2 = fopen(p2, "rb");
		if (!f1 || !f2) {
			fprintf(stderr, "diff: cannot read %s\n", f1 ? p2 : p1);
			if (f1)
				fclose(f1);
			if (f2)
				fclose(f2);
			return 2;
		}
		for (long k = 0;; k++) {
			rec a = { 0 }, b = { 0 };
			int ea = next(f1, &a), eb = next(f2, &b);
			if (ea <= 0 || eb <= 0 || strcmp(a.name, b.name) != 0) {
				int same = ea == 0 && eb == 0;
				if (!same)
					printf("diff: rank %d: record %ld: %s\n", rk, k,
					       ea < 0 || eb < 0 ? "a file is cut short or malformed"
					       : ea == 0        ? "the first run has fewer cases"
					       : eb == 0        ? "the second run has fewer cases"
					                        : "the runs' cases differ");
				free(a.bytes), free(b.bytes);
				fclose(f1), fclose(f2);
				if (same)
					break;
				return 1;
			}
			if (rk == 0)
				cases++;
			const char *why = NULL;
			char detail[512] = "";
			if (a.rc != b.rc) {
				why = "return code";
				snprintf(detail, sizeof detail, "return code %d, then %d", (int)a.rc, (int)b.rc);
			} else if (a.len != b.len) {
				why = "length";
				snprintf(detail, sizeof detail, "%llu bytes, then %llu", (unsigned long long)a.len,
				         (unsigned long long)b.len);
			} else if (memcmp(a.bytes, b.bytes, a.len) != 0) {
				/* each differing byte is explained when it lies in a result
				 * MPI got wrong and the library right, or in the input of an
				 * in-place reduce-scatter past the first block that MPI used
				 * as scratch and the library kept (README: the library keeps
				 * it; MPI leaves it unspecified) */
				uint64_t at = 0, last = 0, nd = 0;
				int wrong_res = 0, scratch = 0, other = 0;
				while (a.bytes[at] == b.bytes[at])
					at++;
				for (uint64_t i = at; i < a.len; i++)
					if (a.bytes[i] != b.bytes[i]) {
						nd++, last = i;
						if (a.ok == 0 && b.ok == 1 && i >= a.res_off && i < a.res_off + a.res_len)
							wrong_res = 1;
						else if (a.keep_ok == 0 && b.keep_ok == 1 && i >= a.keep_off &&
						         i < a.keep_off + a.keep_len)
							scratch = 1;
						else
							other = 1;
					}
				/* offsets are in the arena: SLACK bytes of canary, the send
				 * buffer, 2 SLACK, the receive buffer, SLACK */
				snprintf(detail, sizeof detail,
				         "byte %llu of %llu differs (0x%02x, then 0x%02x); %llu bytes differ, the last at %llu%s%s%s%s",
				         (unsigned long long)at, (unsigned long long)a.len, a.bytes[at], b.bytes[at],
				         (unsigned long long)nd, (unsigned long long)last,
				         a.ok == 0 ? "; the first run's result is not C's arithmetic" : "",
				         b.ok == 0 ? "; the second run's result is not C's arithmetic" : "",
				         a.keep_ok == 0 ? "; the first run changed the input past the first block" : "",
				         b.keep_ok == 0 ? "; the second run changed the input past the first block" : "");
				why = other ? "bytes" : wrong_res ? "mpi" : scratch ? "scratch" : "bytes";
			}
			if (why && strcmp(why, "mpi") == 0) {
				if (mpi_wrong++ < 5)
					printf("diff: %s: rank %d: MPI's own result is wrong, the library's right: %s\n", a.name, rk,
					       detail);
			} else if (why && strcmp(why, "scratch") == 0) {
				if (mpi_scratch++ < 5)
					printf("diff: %s: rank %d: MPI overwrote the in-place input past the first block, the library "
					       "kept it: %s\n",
					       a.name, rk, detail);
			} else if (why) {
				if (differ++ < 20)
					printf("diff: %s: rank %d: %s\n", a.name, rk, detail);
			}
			free(a.bytes), free(b.bytes);
		}
	}
	printf("diff: %ld cases x %d ranks: %s", cases, nranks, differ ? "" : "all equal");
	if (differ)
		printf("%ld differ", differ);
	if (mpi_wrong)
		printf("%s%ld where MPI's own result is wrong and the library's right", differ ? ", " : " but ", mpi_wrong);
	if (mpi_scratch)
		printf("%s%ld where MPI overwrote an in-place reduce-scatter's input past the first block and the library "
		       "kept it",
		       differ || mpi_wrong ? ", " : " but ", mpi_scratch);
	printf("\n");
	return differ ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "run") == 0) {
		MPI_Init(&argc, &argv);
		int rc = run(argv[2]);
		MPI_Finalize();
		return rc;
	}
	if (argc == 5 && strcmp(argv[1], "cmp") == 0) {
		int n = atoi(argv[4]);
		if (n < 1 || n > 64) {
			fprintf(stderr, "diff: cmp: rank count '%s' is not 1 to 64\n", argv[4]);
			return 2;
		}
		return compare(argv[2], argv[3], n);
	}
	fprintf(stderr, "usage: pmpi_diff run DIR  (under mpirun)\n       pmpi_diff cmp DIR1 DIR2 NRANKS\n");
	return 2;
}
