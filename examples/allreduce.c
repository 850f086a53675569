/*
 * allreduce.c - the smallest program that uses a generated coll library:
 * every rank contributes rank+1 in each element, sums with allreduce and
 * checks the result.  Build and run (from the repository root):
 *
 *   build/collc build examples/lab4.coll -o build/doc/lab4
 *   cc -O2 -Ibuild/doc/lab4 examples/allreduce.c -Lbuild/doc/lab4 -llab4 -Wl,-rpath,'$ORIGIN' \
 *      -o build/doc/lab4/allreduce
 *   build/collrun -np 4 build/doc/lab4/allreduce
 */
#include <stdio.h>
#include <stdlib.h>

#include "lab4.h"

int main(void)
{
	coll_comm *comm;
	coll_result r = lab4_init(&comm);
	if (r != COLL_OK) {
		fprintf(stderr, "init: %s: %s\n", coll_strerror(r), coll_last_error(NULL));
		return 1;
	}
	int rank = coll_rank(comm), n = coll_nranks(comm);
	size_t count = 1 << 20;
	float *buf = malloc(count * sizeof *buf);
	for (size_t i = 0; i < count; i++)
		buf[i] = (float)(rank + 1);
	/* in place; the library picks rhd or ring by size (see lab4.coll) */
	r = coll_allreduce(comm, buf, buf, count, COLL_FLOAT32, COLL_SUM);
	if (r != COLL_OK) {
		fprintf(stderr, "allreduce: %s: %s\n", coll_strerror(r), coll_last_error(comm));
		return 1;
	}
	float want = (float)n * (n + 1) / 2;
	size_t bad = 0;
	for (size_t i = 0; i < count; i++)
		bad += buf[i] != want;
	printf("rank %d: %zu floats summed with %s, %s\n", rank, count,
	       coll_choose_algo(comm, COLL_ALLREDUCE, count * sizeof *buf), bad ? "WRONG" : "ok");
	free(buf);
	coll_finalize(comm);
	return bad != 0;
}
