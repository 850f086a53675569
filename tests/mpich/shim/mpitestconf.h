/*
 * mpitestconf.h - what MPICH's configure would have found, for building
 * MPICH's collective tests (tests/mpich/coll/) against Open MPI's mpicc on
 * Linux without running configure (tests/mpich.test builds them).
 *
 * USE_STRICT_MPI: the MPI under test is not MPICH, so the tests keep to
 * the standard (configure's --enable-strictmpi), leaving out MPICH's
 * extensions (MPI_CHAR in bitwise reductions, MPIX_ neighbourhood calls).
 * THREAD_PACKAGE_NAME: POSIX threads, as configure picks on Linux
 * (mpithreadtest.h requires one even in single-threaded tests).
 */
#ifndef MPITESTCONF_H_INCLUDED
#define MPITESTCONF_H_INCLUDED

#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDARG_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_MPI_INIT_THREAD 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE__BOOL 1
#define USE_STRICT_MPI 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX

#endif
