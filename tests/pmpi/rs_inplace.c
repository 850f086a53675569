/*
 * rs_inplace.c - what MPI_Reduce_scatter_block and MPI_Reduce_scatter
 * leave in the receive buffer, for tests/mpich.test: run plainly under
 * mpirun and with libcoll_mpi.so in LD_PRELOAD, and both runs must agree.
 *
 * MPI defines only the first recvcount elements of the receive buffer as
 * the result.  In place, the input is the whole buffer (nranks blocks),
 * and MPI (Open MPI, MPICH) leaves the elements past the first block as
 * they were; out of place, the send buffer is read only, and nothing past
 * the first block of the receive buffer is written.  A library that
 * stands in for MPI must leave the same bytes, so this checks, for int,
 * float and double, sum and max, counts 0, 1, 2, 3, 7, 64 and 1001, on
 * MPI_COMM_WORLD:
 *   - the first block: the reduction of block `rank` over the ranks (the
 *     inputs are small integers, so float and double sums are exact);
 *   - in place: every byte past the first block is the caller's input;
 *   - out of place: the send buffer is unchanged, and a guard of 64 bytes
 *     after the receive block (and before it) is untouched.
 * Prints "rs_inplace: rank R: N checks, M wrong"; exit status 0 when M
 * is 0.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;
static long checks, wrong;

enum { T_INT, T_FLOAT, T_DOUBLE, NT };
static const char *const tname[NT] = { "int", "float", "double" };
#define GUARD 64

/* Rank r's input element i as a double (small integers, exact in every
 * type); the value the reduction must give is derived from it. */
static double input(int r, size_t i) { return (double)((int)((i * 7 + (size_t)r * 13) % 23) - 11); }

static size_t tsize(int t) { return t == T_INT ? sizeof(int) : t == T_FLOAT ? sizeof(float) : sizeof(double); }
static MPI_Datatype tmpi(int t) { return t == T_INT ? MPI_INT : t == T_FLOAT ? MPI_FLOAT : MPI_DOUBLE; }

static void put(int t, void *b, size_t i, double v)
{
	if (t == T_INT)
		((int *)b)[i] = (int)v;
	else if (t == T_FLOAT)
		((float *)b)[i] = (float)v;
	else
		((double *)b)[i] = v;
}

static double get(int t, const void *b, size_t i)
{
	return t == T_INT ? ((const int *)b)[i] : t == T_FLOAT ? ((const float *)b)[i] : ((const double *)b)[i];
}

static void check(int ok, const char *what, int t, const char *op, int count, int inplace, size_t i)
{
	checks++;
	if (!ok && wrong++ < 10)
		fprintf(stderr, "rs_inplace: rank %d: %s, %s %s, count %d, %s: element %zu is wrong\n", rank, what,
		        tname[t], op, count, inplace ? "in place" : "out of place", i);
}

/* One call (block: MPI_Reduce_scatter_block, else MPI_Reduce_scatter with
 * equal counts) and its checks. */
static void one(int block, int t, MPI_Op op, int count, int inplace)
{
	const char *what = block ? "MPI_Reduce_scatter_block" : "MPI_Reduce_scatter";
	const char *opname = op == MPI_SUM ? "sum" : "max";
	size_t esz = tsize(t), total = (size_t)nranks * (size_t)count;
	/* send: the input (in place: recv is it); recv: guard, block, guard */
	char *send = malloc(total * esz + 1), *before = malloc(total * esz + 1);
	char *recv = malloc(2 * GUARD + (inplace ? total : (size_t)count) * esz + 1);
	int *counts = malloc(sizeof *counts * (size_t)nranks);
	if (!send || !before || !recv || !counts) {
		fprintf(stderr, "rs_inplace: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
		return;
	}
	for (int r = 0; r < nranks; r++)
		counts[r] = count;
	char *rb = recv + GUARD, *in = inplace ? rb : send;
	memset(recv, 0xa5, 2 * GUARD + (inplace ? total : (size_t)count) * esz);
	for (size_t i = 0; i < total; i++)
		put(t, in, i, input(rank, i));
	memcpy(before, in, total * esz);
	int rc = block ? MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : send, rb, count, tmpi(t), op, MPI_COMM_WORLD)
	               : MPI_Reduce_scatter(inplace ? MPI_IN_PLACE : send, rb, counts, tmpi(t), op, MPI_COMM_WORLD);
	check(rc == MPI_SUCCESS, what, t, opname, count, inplace, 0);
	for (int i = 0; i < count; i++) {
		size_t e = (size_t)rank * (size_t)count + (size_t)i;
		double want = input(0, e);
		for (int r = 1; r < nranks; r++)
			want = op == MPI_SUM ? want + input(r, e) : (input(r, e) > want ? input(r, e) : want);
		check(get(t, rb, (size_t)i) == want, what, t, opname, count, inplace, (size_t)i);
	}
	/* past the first block: in place the input as it was, out of place
	 * the guard; and the send buffer and the guard before, as they were */
	size_t from = (size_t)count * esz, to = (inplace ? total * esz : from) + GUARD;
	for (size_t b = from; b < to; b++)
		check(rb[b] == (inplace && b < total * esz ? before[b] : (char)0xa5), what, t, opname, count, inplace,
		      b / esz);
	for (size_t b = 0; b < GUARD; b++)
		check(recv[b] == (char)0xa5, what, t, opname, count, inplace, 0);
	if (!inplace)
		check(memcmp(send, before, total * esz) == 0, what, t, opname, count, inplace, 0);
	free(send);
	free(before);
	free(recv);
	free(counts);
}

int main(int argc, char **argv)
{
	static const int counts[] = { 0, 1, 2, 3, 7, 64, 1001 };
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	for (int block = 0; block < 2; block++)
		for (int t = 0; t < NT; t++)
			for (int o = 0; o < 2; o++)
				for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
					for (int inplace = 0; inplace < 2; inplace++)
						one(block, t, o ? MPI_MAX : MPI_SUM, counts[c], inplace);
	printf("rs_inplace: rank %d: %ld checks, %ld wrong\n", rank, checks, wrong);
	MPI_Finalize();
	return wrong != 0;
}
