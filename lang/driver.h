/*
 * driver.h - the straight-line compiler driver every collc subcommand uses:
 * load .coll files (lex + parse + resolve), then, per request, evaluate one
 * algorithm for a concrete n into the IR and verify it.
 *
 *   drv_prog *p = drv_load(nfiles, paths);          parse + resolve all files
 *   ir_sched *s = drv_run(p, "ring", 8, defs, nd, 1);  eval + verify
 *
 * Diagnostics are printed as they are found (diag.h); functions return NULL
 * or -1 when something failed.
 */
#ifndef COLL_DRIVER_H
#define COLL_DRIVER_H

#include <stdbool.h>

#include "defs.h"
#include "ir.h"

typedef struct drv_prog drv_prog;

/* driver.c */
/* Parse and resolve every file; NULL when any has errors. */
drv_prog *drv_load(int nfiles, char *const *paths);
void drv_free(drv_prog *p);
/* Algorithms declared in the loaded files, in declaration order. */
int drv_nalgos(const drv_prog *p);
const char *drv_algo_name(const drv_prog *p, int i);
ir_kind drv_algo_kind(const drv_prog *p, int i);
/* The first file given to drv_load (for messages about the input as a whole). */
const char *drv_main_file(const drv_prog *p);
/* Where algorithm i is declared. */
srcpos drv_algo_pos(const drv_prog *p, int i);
/* Was algorithm i declared in a file given to drv_load (not imported)? */
bool drv_algo_named(const drv_prog *p, int i);
/* Index of algorithm `name`, or -1 (no message). */
int drv_find_algo(const drv_prog *p, const char *name);
/* Evaluate algorithm `algo` for n ranks with -D overrides, then verify it
 * when `verify` is set.  NULL (diagnostics printed) on any error, including
 * an algorithm that does not support n (a failed `require`). */
ir_sched *drv_run(drv_prog *p, const char *algo, int n,
		  const drv_define *defs, int ndefs, bool verify);

/* Find the standard library, where `import` looks last (after the
 * importing file's directory and each directory of $COLL_PATH):
 * $COLL_STDLIB, else ../share/coll/stdlib beside the collc binary (an
 * installed collc), else ../stdlib (the source tree's build/collc).
 * argv0 is unused when /proc/self/exe is readable. */
void drv_init_stdlib(const char *argv0);

/* Evaluation step limit (statements + loop iterations) for drv_run. */
extern long long drv_max_steps;
/* With quiet set, a failed `require` makes drv_run return NULL without a
 * message; drv_unsupported then says so and gives the requirement's text.
 * Sweeps over n use this to skip the n an algorithm does not support. */
void drv_set_quiet_require(drv_prog *p, bool quiet);
bool drv_unsupported(const drv_prog *p, const char **why);
/* Did the last drv_run stop at the step limit or the memory budget? */
bool drv_hit_limit(const drv_prog *p);
/* Names of the top-level parameters of algorithm i (its `param`s). */
int drv_algo_params(const drv_prog *p, int i, const char **names, int max);
/* The first -D name that is a parameter of no loaded algorithm, or NULL. */
const char *drv_unknown_define(const drv_prog *p, const drv_define *defs, int ndefs);
/* Parse "name=value" (value an integer) into d; -1 with a message if bad. */
int drv_parse_define(const char *arg, drv_define *d);

#endif
