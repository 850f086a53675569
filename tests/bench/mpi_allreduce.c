/*
 * mpi_allreduce.c - the OpenMPI baseline of tests/bench/runtime.sh: times
 * MPI_Allreduce (fp32 sum, out of place) for sizes MIN..MAX bytes
 * (doubling) and prints one line per size on rank 0, in the same units as
 * collbench --csv: "bytes,time_us,algbw_GBs,busbw_GBs" (nccl-tests
 * definitions: algbw = bytes / time, busbw = algbw * 2(n-1)/n; time is the
 * slowest rank's average per call).
 *
 *   mpirun -np N mpi_allreduce MIN MAX [ITERS] [FACTOR] [ITER_BYTES]
 *
 * Sizes step by FACTOR (default 2); iterations scale down with size (at
 * most ITER_BYTES per size, at least 2) so that a sweep stays short.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long iters_for(size_t bytes, long maxit, double iter_bytes)
{
	long it = maxit;
	if ((double)it * (double)bytes > iter_bytes)
		it = (long)(iter_bytes / (double)bytes);
	return it < 2 ? 2 : it;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (argc < 3) {
		if (rank == 0)
			fprintf(stderr, "usage: mpi_allreduce MIN MAX [ITERS] [FACTOR] [ITER_BYTES]\n");
		MPI_Finalize();
		return 2;
	}
	size_t lo = strtoull(argv[1], NULL, 0), hi = strtoull(argv[2], NULL, 0);
	long maxit = argc > 3 ? atol(argv[3]) : 20;
	double factor = argc > 4 ? atof(argv[4]) : 2, iter_bytes = argc > 5 ? atof(argv[5]) : 1e30;
	if (!(factor > 1))
		factor = 2;
	float *sb = malloc(hi), *rb = malloc(hi);
	if (!sb || !rb) {
		fprintf(stderr, "mpi_allreduce: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (size_t i = 0; i < hi / 4; i++)
		sb[i] = (float)(i % 7);
	memset(rb, 0, hi);
	if (rank == 0)
		printf("bytes,time_us,algbw_GBs,busbw_GBs\n");
	for (size_t b = lo; b <= hi; b = (size_t)((double)b * factor)) {
		int count = (int)(b / 4);
		long it = iters_for(b, maxit, iter_bytes), w = it / 5 + 1;
		for (long i = 0; i < w; i++)
			MPI_Allreduce(sb, rb, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		for (long i = 0; i < it; i++)
			MPI_Allreduce(sb, rb, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		double t = (MPI_Wtime() - t0) / (double)it, tmax;
		MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		if (rank == 0) {
			double alg = (double)b / tmax / 1e9;
			printf("%zu,%.2f,%.3f,%.3f\n", b, tmax * 1e6, alg, alg * 2.0 * (n - 1) / n);
			fflush(stdout);
		}
		if (b == 0)
			break;
	}
	free(sb);
	free(rb);
	MPI_Finalize();
	return 0;
}
