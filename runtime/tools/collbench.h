/*
 * collbench.h - what collbench's two files share: the options
 * (collbench_args.c parses them into `opt`, collbench.c runs by them),
 * whether this rank prints, and the few helpers of the command line that
 * the runs use too.  The tool's own header; nothing else includes it.
 */
#ifndef COLLBENCH_H
#define COLLBENCH_H

#include <stdint.h>

#include "coll.h"
#include "coll_kinds.h"

#define MAXLIST 16

typedef struct {
	const char *files[32];
	int nfiles;
	const char *defs[32];
	int ndefs;
	const char *algo, *lib, *sym;
	uint64_t minb, maxb, stepb;
	double factor;
	uint64_t counts[64];
	int ncounts;
	long iters, warmup;
	uint64_t iter_bytes;
	int check, inplace, csv, json, do_memcpy, root, kind_set;
	coll_kind kind;
	coll_dtype dts[MAXLIST];
	coll_op ops[MAXLIST];
	int ndts, nops;
	double timeout;
	const char *rails, *policy;   /* --rails, --policy: COLL_RAILS, COLL_POLICY for this run */
	int straggler, trace_straggler;  /* emulated straggler rank (-1: none) */
	double delay_ms;
	long straggler_move;             /* move it to the next rank every this many calls (0: never) */
	long straggler_stop;             /* no straggler from this call on (0: never) */
	int device;                      /* --device: device buffers */
	int gpu;                         /* --device GPU: the CUDA device (-1: rank modulo the count) */
	const char *tune;                /* --tune FILE: write a tuning file there */
	long reps;                       /* --reps: repetitions per candidate and size */
	int tune_mpi;                    /* --mpi: MPI's own collective is a candidate too */
} cb_options;

/* The options, as cb_parse_args left them (defaults for what was not given). */
extern cb_options opt;
/* Whether this rank prints: rank 0 (main sets it; 1 until then). */
extern int out_rank;

/* --- collbench_args.c ---------------------------------------------------- */
/* The integer in environment variable name, dflt when unset or empty. */
int cb_env_int(const char *name, int dflt);
/* Print "collbench: error: ..." (rank 0 only: every rank sees the same
 * usage error) and exit with status 2. */
void cb_usage_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* Is s a whole number (strtod's syntax, nothing after it)? */
int cb_is_number(const char *s);
/* Parse argv into opt, with the defaults; --help prints the usage and
 * exits 0, anything wrong is a cb_usage_error. */
void cb_parse_args(int argc, char **argv);

#endif
