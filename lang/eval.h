/*
 * eval.h - the evaluator: runs one algorithm for a concrete n into the
 * schedule IR (see ir.h).  Internal to the front end; driver.c is its
 * only caller.
 */
#ifndef COLL_EVAL_H
#define COLL_EVAL_H

#include <stdbool.h>

#include "ast.h"
#include "defs.h"
#include "ir.h"

typedef struct {
	long long max_steps;   /* evaluation step limit (statements + iterations) */
	bool quiet_require;    /* a failed `require` is "unsupported n", not printed */
	bool unsupported;      /* out: the run stopped at a failed `require` */
	char why[256];         /* out: that requirement's message */
	long long steps;       /* out: steps used */
	bool limit;            /* out: stopped by the step limit or the memory budget */
} eval_opts;

/* eval.c */
/* Evaluate algorithm `algo` (an A_ALGO of prog) for n ranks with -D
 * overrides.  Returns the schedule, or NULL after printing diagnostics
 * (or, with quiet_require, after a failed requirement). */
ir_sched *eval_algorithm(ast_prog *prog, ast *algo, int n,
			 const drv_define *defs, int ndefs, eval_opts *opts);

#endif
