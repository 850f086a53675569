/*
 * app.c - an ordinary MPI program for tests/pmpi.test: it knows nothing of
 * coll, and is run with libcoll_mpi.so in LD_PRELOAD.
 *
 * Every collective it calls through MPI_ (which the library may serve) is
 * checked against the same call made through PMPI_ (MPI's own, never
 * interposed) on the same inputs: integers and min/max bit for bit,
 * float sums and products within the summation bound (count of ranks x
 * epsilon x the sum of magnitudes).  It mixes calls the library serves
 * (every supported datatype and op, MPI_IN_PLACE, odd counts, world and
 * duplicates of it, duplicates of duplicates) with calls it must pass
 * through (a derived datatype, a user op, a predefined op coll lacks, a
 * 16-bit reduction, a split communicator, a congruent communicator made
 * with MPI_Comm_split, non-uniform MPI_Reduce_scatter counts, mixed
 * send/receive types), and prints what the library's statistics line
 * must say ("app: expect: served ..., passed to MPI ..."), in its format.
 *
 *   app            the whole set, then "app: rank R: N checks, M wrong"
 *   app quick      the same with fewer datatypes and counts
 *   app errors     a coll failure (ranks passing different counts) on a
 *                  duplicate with MPI_ERRORS_RETURN: prints the error class
 *                  check and MPI_Error_string's text
 *   app fatal      the same failure on MPI_COMM_WORLD's default handler
 *                  (the job must abort)
 *   app roots FN   MPI_Bcast or MPI_Reduce (FN) on a duplicate with
 *                  MPI_ERRORS_RETURN, the last rank passing itself as the
 *                  root and the others rank 0: every rank must return an
 *                  error (none may hang or return MPI_SUCCESS); prints it
 *   app threads    under MPI_THREAD_MULTIPLE, two threads each run 200
 *                  allreduces on a duplicate of their own at once (each
 *                  duplicate gets its own coll communicator, so their
 *                  calls cannot pair across threads)
 * Exit status 0 when every check passed.
 */
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "statline.h"

static int rank, nranks;
static long checks, wrong;

/* What the library must count, in the order of its statistics line. */
enum { F_ALLREDUCE, F_RSB, F_RS, F_ALLGATHER, F_BCAST, F_REDUCE, F_ALLTOALL, NF };
static const char *const fname[NF] = { "MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Reduce_scatter",
	                               "MPI_Allgather", "MPI_Bcast", "MPI_Reduce", "MPI_Alltoall" };
enum { R_COMM, R_DERIVED, R_DTYPE, R_USEROP, R_OP, R_MIXED, R_COUNTS, R_INVALID, R_NOALGO, R_OFF, NR };
static const char *const rname[NR] = { "communicator", "derived datatype", "datatype", "user op", "op",
	                               "send/recv types differ", "non-uniform counts", "invalid argument",
	                               "no algorithm", "coll not set up" };
static long want_served[NF], want_passed[NR];
/* COLL_MPI_LIB without an alltoall: those calls pass as "no algorithm" */
static int no_alltoall;

#define SERVED(f) (want_served[f]++)
#define PASSED(r) (want_passed[r]++)

static void fail(const char *what, size_t i, double got, double want)
{
	if (wrong++ < 10)
		fprintf(stderr, "app: rank %d: %s: element %zu is %.17g, MPI says %.17g\n", rank, what, i, got, want);
}

/* The datatypes checked, with what reductions they allow. */
typedef struct {
	MPI_Datatype dt;
	const char *name;
	int size, is_float, is_signed;
} dtype;
static dtype dts[32];
static int ndts;

static void add(MPI_Datatype dt, const char *name, int is_float, int is_signed)
{
	int size;
	MPI_Type_size(dt, &size);
	dts[ndts++] = (dtype){ dt, name, size, is_float, is_signed };
}

static double get(const dtype *t, const void *b, size_t i)
{
	const char *p = (const char *)b + i * (size_t)t->size;
	if (t->is_float)
		return t->size == 4 ? (double)*(const float *)p : *(const double *)p;
	switch (t->size) {
	case 1: return t->is_signed ? (double)*(const int8_t *)p : (double)*(const uint8_t *)p;
	case 4: return t->is_signed ? (double)*(const int32_t *)p : (double)*(const uint32_t *)p;
	default: return t->is_signed ? (double)*(const int64_t *)p : (double)*(const uint64_t *)p;
	}
}

static void put(const dtype *t, void *b, size_t i, double v)
{
	char *p = (char *)b + i * (size_t)t->size;
	if (t->is_float) {
		if (t->size == 4)
			*(float *)p = (float)v;
		else
			*(double *)p = v;
		return;
	}
	int64_t x = (int64_t)v;
	switch (t->size) {
	case 1: *(int8_t *)p = (int8_t)x; break;
	case 4: *(int32_t *)p = (int32_t)x; break;
	default: *(int64_t *)p = x; break;
	}
}

/* Rank r's input element i for op: small values so that no product
 * overflows an 8-bit type on 4 ranks, signs mixed for signed types,
 * fractions for floats. */
static double input(const dtype *t, MPI_Op op, int r, size_t i)
{
	double v = 1 + (double)((i * 7 + (size_t)r * 3) % 3);
	if (t->is_float)
		v = op == MPI_PROD ? 1 + 0.001 * (double)((i + (size_t)r) % 97) : v + 0.1 * (double)((i * 13 + (size_t)r) % 10);
	if ((t->is_signed || t->is_float) && (i + (size_t)r) % 4 == 1)
		v = -v;
	return v;
}

static void fill(const dtype *t, MPI_Op op, void *b, size_t count, int r)
{
	for (size_t i = 0; i < count; i++)
		put(t, b, i, input(t, op, r, i));
}

/* Compare count elements of got with MPI's want. */
static void compare(const char *what, const dtype *t, MPI_Op op, const void *got, const void *want, size_t count)
{
	checks++;
	int exact = !t->is_float || op == MPI_MIN || op == MPI_MAX || op == MPI_OP_NULL;
	if (exact) {
		if (memcmp(got, want, count * (size_t)t->size) != 0)
			for (size_t i = 0; i < count; i++)
				if (get(t, got, i) != get(t, want, i)) {
					fail(what, i, get(t, got, i), get(t, want, i));
					break;
				}
		return;
	}
	double eps = t->size == 4 ? 1.2e-7 : 2.3e-16;
	for (size_t i = 0; i < count; i++) {
		double mag = 0;
		for (int r = 0; r < nranks; r++)
			mag += fabs(input(t, op, r, i));
		if (op == MPI_PROD)
			mag = fabs(get(t, want, i));
		double tol = 2.0 * nranks * eps * mag;
		if (fabs(get(t, got, i) - get(t, want, i)) > tol) {
			fail(what, i, get(t, got, i), get(t, want, i));
			return;
		}
	}
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "app: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return p;
}

/* Allreduce, reduce (out of place and in place), reduce_scatter_block
 * (both), reduce_scatter with uniform counts: each against PMPI. */
static void reductions(MPI_Comm comm, const dtype *t, MPI_Op op, size_t count, const char *opname)
{
	size_t es = (size_t)t->size, n = (size_t)nranks;
	char what[160];
	char *in = xmalloc(count * n * es), *out = xmalloc(count * n * es), *ref = xmalloc(count * n * es);
	int root = (int)(count % n);

	fill(t, op, in, count, rank);
	snprintf(what, sizeof what, "MPI_Allreduce %s %s count %zu", t->name, opname, count);
	MPI_Allreduce(in, out, (int)count, t->dt, op, comm);
	SERVED(F_ALLREDUCE);
	PMPI_Allreduce(in, ref, (int)count, t->dt, op, comm);
	compare(what, t, op, out, ref, count);
	memcpy(out, in, count * es);
	MPI_Allreduce(MPI_IN_PLACE, out, (int)count, t->dt, op, comm);
	SERVED(F_ALLREDUCE);
	strcat(what, " in place");
	compare(what, t, op, out, ref, count);

	snprintf(what, sizeof what, "MPI_Reduce %s %s count %zu root %d", t->name, opname, count, root);
	memset(out, 0, count * es);
	MPI_Reduce(in, out, (int)count, t->dt, op, root, comm);
	SERVED(F_REDUCE);
	PMPI_Reduce(in, ref, (int)count, t->dt, op, root, comm);
	if (rank == root)
		compare(what, t, op, out, ref, count);
	memcpy(out, in, count * es);
	MPI_Reduce(rank == root ? MPI_IN_PLACE : in, rank == root ? out : NULL, (int)count, t->dt, op, root, comm);
	SERVED(F_REDUCE);
	strcat(what, " in place");
	if (rank == root)
		compare(what, t, op, out, ref, count);

	/* reduce_scatter: count per rank, n*count in */
	fill(t, op, in, count * n, rank);
	snprintf(what, sizeof what, "MPI_Reduce_scatter_block %s %s recvcount %zu", t->name, opname, count);
	MPI_Reduce_scatter_block(in, out, (int)count, t->dt, op, comm);
	SERVED(F_RSB);
	PMPI_Reduce_scatter_block(in, ref, (int)count, t->dt, op, comm);
	compare(what, t, op, out, ref, count);
	memcpy(out, in, count * n * es);
	MPI_Reduce_scatter_block(MPI_IN_PLACE, out, (int)count, t->dt, op, comm);
	SERVED(F_RSB);
	strcat(what, " in place");
	compare(what, t, op, out, ref, count);

	int *counts = xmalloc(n * sizeof *counts);
	for (size_t r = 0; r < n; r++)
		counts[r] = (int)count;
	snprintf(what, sizeof what, "MPI_Reduce_scatter %s %s counts %zu", t->name, opname, count);
	MPI_Reduce_scatter(in, out, counts, t->dt, op, comm);
	SERVED(F_RS);
	compare(what, t, op, out, ref, count);
	free(counts);
	free(in);
	free(out);
	free(ref);
}

/* Bcast, allgather, alltoall (and their in-place forms) of count elements
 * of t, moved as they are. */
static void copies(MPI_Comm comm, const dtype *t, size_t count)
{
	size_t es = (size_t)t->size, n = (size_t)nranks;
	char what[160];
	char *in = xmalloc(count * n * es), *out = xmalloc(count * n * es), *ref = xmalloc(count * n * es);
	int root = (int)((count + 1) % n);
	for (size_t i = 0; i < count * n * es; i++)
		in[i] = (char)(rank * 31 + i * 7 + 1);

	snprintf(what, sizeof what, "MPI_Bcast %s count %zu root %d", t->name, count, root);
	memcpy(out, in, count * es);
	memcpy(ref, in, count * es);
	MPI_Bcast(out, (int)count, t->dt, root, comm);
	SERVED(F_BCAST);
	PMPI_Bcast(ref, (int)count, t->dt, root, comm);
	checks++;
	if (memcmp(out, ref, count * es) != 0)
		fail(what, 0, 0, 0);

	snprintf(what, sizeof what, "MPI_Allgather %s count %zu", t->name, count);
	MPI_Allgather(in, (int)count, t->dt, out, (int)count, t->dt, comm);
	SERVED(F_ALLGATHER);
	PMPI_Allgather(in, (int)count, t->dt, ref, (int)count, t->dt, comm);
	checks++;
	if (memcmp(out, ref, count * n * es) != 0)
		fail(what, 0, 0, 0);
	memset(out, 0, count * n * es);
	memcpy(out + (size_t)rank * count * es, in, count * es);
	MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, (int)count, t->dt, comm);
	SERVED(F_ALLGATHER);
	checks++;
	if (memcmp(out, ref, count * n * es) != 0)
		fail("MPI_Allgather in place", 0, 0, 0);

	snprintf(what, sizeof what, "MPI_Alltoall %s count %zu", t->name, count);
	MPI_Alltoall(in, (int)count, t->dt, out, (int)count, t->dt, comm);
	if (no_alltoall)
		PASSED(R_NOALGO);
	else
		SERVED(F_ALLTOALL);
	PMPI_Alltoall(in, (int)count, t->dt, ref, (int)count, t->dt, comm);
	checks++;
	if (memcmp(out, ref, count * n * es) != 0)
		fail(what, 0, 0, 0);
	memcpy(out, in, count * n * es);
	MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out, (int)count, t->dt, comm);
	if (no_alltoall)
		PASSED(R_NOALGO);
	else
		SERVED(F_ALLTOALL);
	checks++;
	if (memcmp(out, ref, count * n * es) != 0)
		fail("MPI_Alltoall in place", 0, 0, 0);
	free(in);
	free(out);
	free(ref);
}

static void my_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	for (int i = 0; i < *len; i++)
		((int *)inout)[i] += ((int *)in)[i];
}

/* Calls that must go to MPI, each still checked against PMPI. */
static void passed_through(void)
{
	int n = nranks, v[64], out[64], ref[64];
	for (int i = 0; i < 64; i++)
		v[i] = rank * 100 + i;
	dtype tint = { MPI_INT, "MPI_INT", 4, 0, 1 };

	/* a derived datatype: every other int, broadcast from rank 0 */
	MPI_Datatype vec;
	MPI_Type_vector(8, 1, 2, MPI_INT, &vec);
	MPI_Type_commit(&vec);
	memcpy(out, v, sizeof v);
	memcpy(ref, v, sizeof v);
	MPI_Bcast(out, 1, vec, 0, MPI_COMM_WORLD);
	PASSED(R_DERIVED);
	PMPI_Bcast(ref, 1, vec, 0, MPI_COMM_WORLD);
	compare("MPI_Bcast of a vector type", &tint, MPI_OP_NULL, out, ref, 64);
	MPI_Type_free(&vec);

	/* a user op */
	MPI_Op op;
	MPI_Op_create(my_sum, 1, &op);
	MPI_Allreduce(v, out, 17, MPI_INT, op, MPI_COMM_WORLD);
	PASSED(R_USEROP);
	PMPI_Allreduce(v, ref, 17, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	compare("MPI_Allreduce with a user op", &tint, MPI_SUM, out, ref, 17);
	MPI_Op_free(&op);

	/* a predefined op coll has not */
	MPI_Allreduce(v, out, 9, MPI_INT, MPI_BXOR, MPI_COMM_WORLD);
	PASSED(R_OP);
	PMPI_Allreduce(v, ref, 9, MPI_INT, MPI_BXOR, MPI_COMM_WORLD);
	compare("MPI_Allreduce MPI_BXOR", &tint, MPI_OP_NULL, out, ref, 9);

	/* a reduction of a type coll has not (16 bits) */
	short s[5] = { 1, 2, 3, 4, (short)rank }, so[5], sr[5];
	MPI_Allreduce(s, so, 5, MPI_SHORT, MPI_SUM, MPI_COMM_WORLD);
	PASSED(R_DTYPE);
	PMPI_Allreduce(s, sr, 5, MPI_SHORT, MPI_SUM, MPI_COMM_WORLD);
	checks++;
	if (memcmp(so, sr, sizeof so))
		fail("MPI_Allreduce MPI_SHORT", 0, 0, 0);

	/* a split communicator, and a congruent one made by split: neither
	 * is a duplicate of world */
	MPI_Comm half, all;
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
	MPI_Allreduce(v, out, 33, MPI_INT, MPI_SUM, half);
	PASSED(R_COMM);
	PMPI_Allreduce(v, ref, 33, MPI_INT, MPI_SUM, half);
	compare("MPI_Allreduce on a split communicator", &tint, MPI_SUM, out, ref, 33);
	MPI_Comm_free(&half);
	/* a duplicate freed, then a split whose handle MPI may give the
	 * freed one's: still not served */
	MPI_Comm d;
	MPI_Comm_dup(MPI_COMM_WORLD, &d);
	MPI_Allreduce(v, out, 3, MPI_INT, MPI_SUM, d);
	SERVED(F_ALLREDUCE);
	MPI_Comm_free(&d);
	MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &all);
	MPI_Allreduce(v, out, 33, MPI_INT, MPI_MAX, all);
	PASSED(R_COMM);
	PMPI_Allreduce(v, ref, 33, MPI_INT, MPI_MAX, all);
	compare("MPI_Allreduce on a congruent split", &tint, MPI_MAX, out, ref, 33);
	MPI_Comm_free(&all);

	/* MPI_Reduce_scatter with counts that differ */
	int *counts = xmalloc((size_t)n * sizeof *counts), total = 0;
	for (int r = 0; r < n; r++)
		total += counts[r] = r + 1;
	int *big = xmalloc((size_t)total * sizeof *big), *bo = xmalloc((size_t)total * sizeof *bo),
	    *br = xmalloc((size_t)total * sizeof *br);
	for (int i = 0; i < total; i++)
		big[i] = rank + i;
	MPI_Reduce_scatter(big, bo, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	PASSED(R_COUNTS);
	PMPI_Reduce_scatter(big, br, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	compare("MPI_Reduce_scatter, counts 1..n", &tint, MPI_SUM, bo, br, (size_t)rank + 1);
	free(counts);
	free(big);
	free(bo);
	free(br);

	/* allgather with send and receive types that differ but match */
	MPI_Datatype two;
	MPI_Type_contiguous(2, MPI_INT, &two);
	MPI_Type_commit(&two);
	MPI_Allgather(v, 2, MPI_INT, out, 1, two, MPI_COMM_WORLD);
	PASSED(R_MIXED);
	PMPI_Allgather(v, 2, MPI_INT, ref, 1, two, MPI_COMM_WORLD);
	compare("MPI_Allgather int x2 -> contiguous(2)", &tint, MPI_OP_NULL, out, ref, (size_t)(2 * n));
	MPI_Type_free(&two);
}

static void print_expect(void)
{
	pm_print_expect("app", fname, want_served, NF, rname, want_passed, NR);
}

/* A coll failure inside MPI: ranks pass different counts (erroneous MPI,
 * which coll detects from its message headers). */
static int errors(int fatal)
{
	MPI_Comm comm = MPI_COMM_WORLD;
	if (!fatal) {
		MPI_Comm_dup(MPI_COMM_WORLD, &comm);
		MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	}
	int v[16] = { 0 }, out[16];
	MPI_Allreduce(v, out, 16, MPI_INT, MPI_SUM, comm);   /* served: the communicator is up */
	int rc = MPI_Allreduce(v, out, rank == 0 ? 8 : 16, MPI_INT, MPI_SUM, comm);
	char s[MPI_MAX_ERROR_STRING];
	int len = 0, cls = -1;
	MPI_Error_class(rc, &cls);
	MPI_Error_string(rc, s, &len);
	printf("app: rank %d: MPI_Allreduce returned %s; class %s; \"%s\"\n", rank, rc == MPI_SUCCESS ? "MPI_SUCCESS" : "an error",
	       cls > MPI_ERR_LASTCODE ? "user-defined" : "predefined", s);
	if (!fatal)
		MPI_Comm_free(&comm);
	return rc != MPI_SUCCESS ? 0 : 1;
}

/* Ranks that disagree on the root of a served MPI_Bcast or MPI_Reduce
 * (erroneous MPI): one agreeing call first, then the last rank names
 * itself the root.  0 when this rank's call returned an error. */
static int roots(const char *fn)
{
	int bcast = strcmp(fn, "MPI_Bcast") == 0;
	if (!bcast && strcmp(fn, "MPI_Reduce") != 0) {
		printf("app: roots: want MPI_Bcast or MPI_Reduce, not %s\n", fn);
		return 1;
	}
	MPI_Comm comm;
	MPI_Comm_dup(MPI_COMM_WORLD, &comm);
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	int v[16] = { 0 }, out[16];
	int root = rank == nranks - 1 ? nranks - 1 : 0;
	int rc = bcast ? MPI_Bcast(v, 16, MPI_INT, 0, comm) : MPI_Reduce(v, out, 16, MPI_INT, MPI_SUM, 0, comm);
	if (rc == MPI_SUCCESS)
		rc = bcast ? MPI_Bcast(v, 16, MPI_INT, root, comm) : MPI_Reduce(v, out, 16, MPI_INT, MPI_SUM, root, comm);
	char s[MPI_MAX_ERROR_STRING];
	int len = 0;
	MPI_Error_string(rc, s, &len);
	printf("app: rank %d: %s with root %d returned %s; \"%s\"\n", rank, fn, root,
	       rc == MPI_SUCCESS ? "MPI_SUCCESS" : "an error", s);
	MPI_Comm_free(&comm);
	return rc != MPI_SUCCESS ? 0 : 1;
}

/* One thread of `app threads`: allreduces on its own duplicate, counts
 * that differ from the other thread's so that a cross-pairing is caught
 * by coll's header check if not by the values. */
static MPI_Comm thread_comm[2];
static long thread_wrong[2];
static void *thread_main(void *arg)
{
	int t = (int)(long)arg, count = 1000 - 3 * t, v[1000], out[1000];
	for (int it = 0; it < 200; it++) {
		for (int i = 0; i < count; i++)
			v[i] = rank * 7 + i + t * 1000 + it;
		if (MPI_Allreduce(v, out, count, MPI_INT, MPI_SUM, thread_comm[t]) != MPI_SUCCESS)
			thread_wrong[t]++;
		for (int i = 0; i < count; i++) {
			long want = 0;
			for (int r = 0; r < nranks; r++)
				want += r * 7 + i + t * 1000 + it;
			if (out[i] != want) {
				thread_wrong[t]++;
				break;
			}
		}
	}
	return NULL;
}

static int threads(int provided)
{
	if (provided < MPI_THREAD_MULTIPLE) {
		printf("app: rank %d: MPI_THREAD_MULTIPLE not provided\n", rank);
		return 1;
	}
	pthread_t th[2];
	for (int t = 0; t < 2; t++)
		MPI_Comm_dup(MPI_COMM_WORLD, &thread_comm[t]);
	for (long t = 0; t < 2; t++)
		pthread_create(&th[t], NULL, thread_main, (void *)t);
	for (int t = 0; t < 2; t++) {
		pthread_join(th[t], NULL);
		MPI_Comm_free(&thread_comm[t]);
		want_served[F_ALLREDUCE] += 200;
	}
	if (rank == 0)
		print_expect();
	printf("app: rank %d: 400 checks, %ld wrong\n", rank, thread_wrong[0] + thread_wrong[1]);
	return thread_wrong[0] + thread_wrong[1] != 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	int provided;
	MPI_Init_thread(&argc, &argv, strcmp(mode, "threads") == 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED,
	                &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	no_alltoall = getenv("APP_NO_ALLTOALL") != NULL;
	if (strcmp(mode, "threads") == 0) {
		int rc = threads(provided);
		fflush(stdout);
		MPI_Finalize();
		return rc;
	}
	if (strcmp(mode, "roots") == 0) {
		int rc = roots(argc > 2 ? argv[2] : "");
		fflush(stdout);
		MPI_Finalize();
		return rc;
	}
	if (strcmp(mode, "errors") == 0 || strcmp(mode, "fatal") == 0) {
		int rc = errors(strcmp(mode, "fatal") == 0);
		MPI_Finalize();
		return rc;
	}
	int quick = strcmp(mode, "quick") == 0;
	add(MPI_INT, "MPI_INT", 0, 1);
	add(MPI_FLOAT, "MPI_FLOAT", 1, 1);
	add(MPI_DOUBLE, "MPI_DOUBLE", 1, 1);
	add(MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", 0, 0);
	if (!quick) {
		add(MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 0, 1);
		add(MPI_INT8_T, "MPI_INT8_T", 0, 1);
		add(MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 0, 0);
		add(MPI_UINT8_T, "MPI_UINT8_T", 0, 0);
		add(MPI_INT32_T, "MPI_INT32_T", 0, 1);
		add(MPI_UNSIGNED, "MPI_UNSIGNED", 0, 0);
		add(MPI_UINT32_T, "MPI_UINT32_T", 0, 0);
		add(MPI_LONG, "MPI_LONG", 0, 1);
		add(MPI_LONG_LONG, "MPI_LONG_LONG", 0, 1);
		add(MPI_INT64_T, "MPI_INT64_T", 0, 1);
		add(MPI_UINT64_T, "MPI_UINT64_T", 0, 0);
		add(MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", 0, 0);
	}
	static const size_t all_counts[] = { 1, 7, 1003, 65537 }, quick_counts[] = { 1, 1003 };
	const size_t *counts = quick ? quick_counts : all_counts;
	int ncounts = quick ? 2 : 4;
	MPI_Op ops[] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX };
	const char *opn[] = { "MPI_SUM", "MPI_PROD", "MPI_MIN", "MPI_MAX" };

	/* world, a duplicate and a duplicate of the duplicate take turns */
	MPI_Comm dup, dup2;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Comm_dup(dup, &dup2);
	MPI_Comm comms[3] = { MPI_COMM_WORLD, dup, dup2 };
	int turn = 0;
	for (int d = 0; d < ndts; d++)
		for (int o = 0; o < 4; o++)
			for (int c = 0; c < ncounts; c++)
				reductions(comms[turn++ % 3], &dts[d], ops[o], counts[c], opn[o]);
	/* copies: any contiguous predefined type, as bytes */
	add(MPI_SHORT, "MPI_SHORT", 0, 1);
	add(MPI_CHAR, "MPI_CHAR", 0, 1);
	add(MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", 0, 0);
	for (int d = 0; d < ndts; d++)
		for (int c = 0; c < ncounts; c++)
			copies(comms[turn++ % 3], &dts[d], counts[c]);
	/* count 0 is a collective too */
	int none[1];
	MPI_Allreduce(none, none, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	SERVED(F_ALLREDUCE);
	MPI_Comm_free(&dup2);
	MPI_Comm_free(&dup);
	passed_through();
	if (rank == 0)
		print_expect();
	printf("app: rank %d: %ld checks, %ld wrong\n", rank, checks, wrong);
	fflush(stdout);
	MPI_Finalize();
	return wrong != 0;
}
