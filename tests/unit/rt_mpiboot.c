/*
 * rt_mpiboot.c - an MPI application in which one rank never calls coll_init.
 *
 *   mpirun -np N rt_mpiboot ABSENT
 *
 * Rank ABSENT initialises MPI (as any rank of an MPI application does) and
 * then never bootstraps libcollrt; the other ranks call coll_init_env,
 * which bootstraps through MPI, and must get COLL_ERR_TIMEOUT once
 * COLL_BOOT_TIMEOUT passes instead of waiting forever in a collective.
 * Each of them prints "rank R: coll_init: RESULT: MESSAGE after S s" and
 * exits 0 when RESULT is the timeout.  Rank ABSENT sleeps long enough to
 * outlive them and exits without MPI_Finalize; mpirun then ends the job
 * with a failure of its own, which the test expects.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "coll.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	if (argc != 2 || !r) {
		fprintf(stderr, "usage: mpirun -np N rt_mpiboot ABSENT_RANK\n");
		return 2;
	}
	int rank = atoi(r), absent = atoi(argv[1]);
	if (rank == absent) {
		MPI_Init(&argc, &argv);
		sleep(60);
		_exit(0);
	}
	double t0 = now();
	coll_comm *comm = NULL;
	coll_result rc = coll_init_env(&comm, NULL);
	printf("rank %d: coll_init: %s: %s after %.1f s\n", rank, coll_strerror(rc), coll_last_error(NULL),
	       now() - t0);
	fflush(stdout);
	if (rc == COLL_OK)
		coll_finalize(comm);
	return rc == COLL_ERR_TIMEOUT ? 0 : 1;
}
