/*
 * statline.h - the statistics line libcoll_mpi.so prints at MPI_Finalize
 * under COLL_MPI_STATS=1 ("served N (MPI_Allreduce a, ...), passed to MPI
 * M (communicator b, ...)"), written from a test program's own counts so
 * that the test can compare the two as text: tests/pmpi/app.c and diff.c
 * count what they expect per function and per reason, each with its own
 * lists of names (in the library's order), and print this line with their
 * own prefix.
 */
#ifndef COLL_TESTS_PMPI_STATLINE_H
#define COLL_TESTS_PMPI_STATLINE_H

#include <stdio.h>

/* Print "WHO: expect: served ..." for served[0..nf) (names fname) and
 * passed[0..nr) (names rname); entries that are 0 are left out, as the
 * library leaves them out. */
static inline void pm_print_expect(const char *who, const char *const *fname, const long *served, int nf,
                                   const char *const *rname, const long *passed, int nr)
{
	long ns = 0, np = 0;
	char line[2048];
	size_t o = 0;
	for (int f = 0; f < nf; f++)
		ns += served[f];
	for (int r = 0; r < nr; r++)
		np += passed[r];
	o += (size_t)snprintf(line + o, sizeof line - o, "%s: expect: served %ld", who, ns);
	for (int f = 0, k = 0; f < nf; f++)
		if (served[f])
			o += (size_t)snprintf(line + o, sizeof line - o, "%s%s %ld", k++ ? ", " : " (", fname[f], served[f]);
	if (ns)
		o += (size_t)snprintf(line + o, sizeof line - o, ")");
	o += (size_t)snprintf(line + o, sizeof line - o, ", passed to MPI %ld", np);
	for (int r = 0, k = 0; r < nr; r++)
		if (passed[r])
			o += (size_t)snprintf(line + o, sizeof line - o, "%s%s %ld", k++ ? ", " : " (", rname[r], passed[r]);
	if (np)
		snprintf(line + o, sizeof line - o, ")");
	printf("%s\n", line);
}

#endif
