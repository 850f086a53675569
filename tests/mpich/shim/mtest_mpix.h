/*
 * mtest_mpix.h - empty: in MPICH's tree this header is generated from
 * MPICH's own bindings (MPIX_ prototypes); MPICH's test/mpi/autogen.sh
 * likewise makes it empty when building the tests for another MPI.
 */
