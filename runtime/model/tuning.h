/*
 * tuning.h - tuning files: the algorithm measured fastest per collective
 * and size on one machine, transport and rank count.
 *
 * Pipeline position: the model floor, below the compiler and the runtime.
 * `collbench --tune` measures every candidate and writes one
 * (tune_write); libcollrt reads one named by COLL_TUNING at coll_init,
 * the MPI layer reads one to choose its plans, and `collc build --tuning`
 * bakes one into a library's size table (tune_read, tune_check,
 * tune_choices).  `choose by measure` (COLL_TUNE=init) builds one in
 * memory and caches it in this format.
 *
 * Format (text, one item per line; fields separated by blanks; `#`
 * starts a comment; blank lines are ignored):
 *
 *   coll-tuning 1                       first line: the format and its version
 *   date 2026-12-02T14:00:00Z           when it was measured (one word)
 *   hosts node1 node2                   the host names of the ranks that measured it
 *                                       (several hosts lines add up)
 *   transport shm                       the transport it ran over
 *   ranks 4                             the rank count
 *   candidates allreduce direct rhd ring    every algorithm measured, per collective
 *   allreduce 1024 rhd direct=3.1us rhd=2.5us ring=4us spread=3%
 *   allreduce 4096 rhd ...              collective, bytes, the winner; then,
 *                                       for people, each candidate's median time
 *                                       and the winner's spread (max-min)/median
 *
 * The header lines come first, each once (hosts may take several lines);
 * a collective's candidates come before its rows, and its sizes
 * increase.  A row's bytes are the call's whole working buffer, count x
 * units x the dtype's size (coll_kinds.h), which is what coll_choose_algo
 * is asked about: collbench's size(B) for every collective but alltoall,
 * where it is n times that.  A size between two measured
 * sizes takes the winner of the nearer one on a log scale (the boundary
 * is their geometric mean), below the first the first's, above the last
 * the last's: tune_choices turns the rows into the runtime's size table
 * (coll_choice) by that rule.
 *
 * A tuning file fits a job when its rank count and transport are the
 * job's, the job's host names are among its hosts, and, for every
 * collective it tunes, every winner is in the plan set and every
 * algorithm of the plan set for that collective was a candidate (a plan
 * set with an algorithm nobody measured is not the one that was tuned).
 * tune_check says which of these fails, naming the file; the runtime
 * refuses a file that does not fit rather than use it.
 *
 * The candidate `mpi` (TUNE_MPI) is the MPI library's own collective
 * (collbench --tune --mpi, under mpirun).  No plan set has it: where it
 * wins, the MPI layer (libcoll_mpi.so) passes the call to MPI
 * (tune_winner), and everything else takes the fastest other candidate
 * timed in that row (tune_choices), or the plan set's own table when the
 * row times none.
 *
 * Errors are link_error values ("path:line: what and why", units.h).
 */
#ifndef COLL_TUNING_H
#define COLL_TUNING_H

#include <stdint.h>
#include <stdio.h>

#include "coll_plan.h"
#include "units.h"

#define TUNE_VERSION 1
#define TUNE_MPI "mpi"              /* the candidate that is MPI's own collective */
#define TUNE_NAME_MAX 64        /* an algorithm's or transport's name, NUL included */
#define TUNE_HOST_MAX 256       /* a host name, NUL included */
#define TUNE_MAX_HOSTS 65536
#define TUNE_MAX_CANDS 64       /* candidates per collective */
#define TUNE_MAX_ROWS 4096
#define TUNE_MAX_BYTES (4u << 20)   /* a file larger than this is refused */
#define TUNE_MAX_LINE 16384         /* a longer line is refused (the writer stays below) */
#define TUNE_HOSTS_PER_LINE 16      /* the writer's hosts lines */

typedef struct {
	int32_t kind;          /* coll_kind */
	uint64_t bytes;        /* the measured payload (the whole buffer) */
	int winner;            /* index into the kind's candidates */
	double times[TUNE_MAX_CANDS];  /* each candidate's median seconds per call; < 0: not given */
	double spread;         /* the winner's (max - min) / median over repetitions; < 0: not given */
} tune_row;

typedef struct tune_table {
	char date[64];
	char transport[TUNE_NAME_MAX];
	int32_t nranks;
	char (*hosts)[TUNE_HOST_MAX];
	int nhosts;
	/* candidates per collective (ncands[k] == 0: not tuned) */
	char cands[COLL_NCOLLS][TUNE_MAX_CANDS][TUNE_NAME_MAX];
	int ncands[COLL_NCOLLS];
	tune_row *rows;
	int nrows;
	char path[256];        /* where it was read from ("" when built in memory) */
} tune_table;

/* An empty table (every field zero), or NULL when out of memory. */
tune_table *tune_new(void);
void tune_free(tune_table *t);

/* Read a tuning file / parse its text (name: the file's name in errors).
 * 0 with *out (the caller's to tune_free), else -1 with err set. */
int tune_read(const char *path, tune_table **out, link_error *err);
int tune_parse(const char *text, size_t len, const char *name, tune_table **out, link_error *err);

/* Add a host (0, else -1 with err: too many, a bad name; a repeated one
 * is the reader's error, checked once all are in), a candidate of kind
 * (-1 also for a repeated name) and a row (its times filled by the
 * caller; NULL with err when sizes do not increase or there are too many
 * rows). */
int tune_add_host(tune_table *t, const char *host, link_error *err);
int tune_add_cand(tune_table *t, int kind, const char *algo, link_error *err);
tune_row *tune_add_row(tune_table *t, int kind, uint64_t bytes, link_error *err);

/* Write t in the format above (0, or -1 on a write error, errno set). */
int tune_write(FILE *f, const tune_table *t, const char *comment);

/* Does t fit a job: nranks ranks over transport (NULL: not checked),
 * running on these hosts (each must be among t's; NULL or 0: not
 * checked), with a plan set of nalgos algorithms (kinds[i], names[i]) for
 * nranks?  0, else -1 with err naming t's file and what differs. */
int tune_check(const tune_table *t, int nranks, const char *transport, const char *const *hosts, int nhosts,
               const int32_t *kinds, const char *const *names, int nalgos, link_error *err);

/* The size table of t (every collective it tunes, in kind order, each
 * ending with COLL_BYTES_MAX), whose algo fields point into t; a row won
 * by `mpi` counts as won by its fastest other timed candidate (none: the
 * row is left out).  The count, or -1 when out of memory; *out is the
 * caller's to free(). */
int tune_choices(const tune_table *t, coll_choice **out);

/* The winner t measured nearest to `bytes` of collective kind (the rule
 * above, `mpi` included), or NULL when t does not tune kind. */
const char *tune_winner(const tune_table *t, int kind, uint64_t bytes);

/* A fingerprint of what t makes a job do: its rows' winners and the size
 * table of tune_choices (which depends on the times of rows `mpi` won).
 * Ranks that read files of one fingerprint choose alike; never 0. */
uint32_t tune_hash(const tune_table *t);

#endif
