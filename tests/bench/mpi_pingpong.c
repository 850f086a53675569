/*
 * mpi_pingpong.c - MPI_Send/MPI_Recv ping-pong between ranks 0 and 1, the
 * baseline of tests/bench/p2p.sh: one line per size, "p2p mpi BYTES B
 * US us GB/s" with the one-way time (half a round trip), the same sizes,
 * warm-up and iteration counts as rt_p2p bench (tests/unit/rt_p2p.c).
 *
 *   mpirun -np 2 --mca btl self,vader ./mpi_pingpong
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int rank;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	size_t max = (size_t)16 << 20;
	char *b = malloc(max);
	memset(b, 1, max);
	for (size_t sz = 8; sz <= max; sz *= 8) {
		int iters = sz <= 65536 ? 2000 : sz <= (1 << 20) ? 100 : 20;
		double t0 = 0;
		for (int i = -5; i < iters; i++) {
			if (i == 0)
				t0 = MPI_Wtime();
			if (rank == 0) {
				MPI_Send(b, (int)sz, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
				MPI_Recv(b, (int)sz, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else if (rank == 1) {
				MPI_Recv(b, (int)sz, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(b, (int)sz, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
			}
		}
		double one = (MPI_Wtime() - t0) / iters / 2;
		if (rank == 0)
			printf("p2p mpi %10zu B  %9.2f us  %8.3f GB/s\n", sz, one * 1e6, sz / one / 1e9);
	}
	free(b);
	MPI_Finalize();
	return 0;
}
