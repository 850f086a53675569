/*
 * subproc.h - running the external tools `collc build` needs (cc, nvcc, ar)
 * with an argument vector, never through a shell: an output directory or
 * a cluster name holding a quote, a space or `$(...)` is just a string.
 */
#ifndef COLL_SUBPROC_H
#define COLL_SUBPROC_H

#include <stdbool.h>
#include <sys/types.h>

/* A growable, NULL-terminated argument vector; every string is owned. */
typedef struct {
	char **v;
	int n, cap;
} subproc_argv;

/* subproc.c */
/* Append one argument (copied), or a printf-formatted one. */
void subproc_arg(subproc_argv *a, const char *s);
void subproc_argf(subproc_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void subproc_argv_free(subproc_argv *a);
/* Start a->v[0] (looked up on PATH) with a's arguments; with quiet_err
 * its stderr goes to /dev/null.  With `echo` the command is first printed
 * to stderr, quoted so it can be pasted into a shell.  Returns the pid,
 * or -1 after printing why it could not start. */
pid_t subproc_start(const subproc_argv *a, bool quiet_err, bool echo);
/* Wait for pid; 0 when it exited with status 0, else -1 after printing
 * "collc: error: command failed (...): CMD". */
int subproc_wait(pid_t pid, const subproc_argv *a);
/* subproc_start + subproc_wait. */
int subproc_run(const subproc_argv *a, bool quiet_err, bool echo);

#endif
