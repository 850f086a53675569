/*
 * cmd.h - the collc command line: one function per subcommand, each in
 * its own file of codegen/cmd/, dispatched by collc.c.
 *
 * This is the top layer of the compiler: it parses arguments and calls
 * down into the front end (lang/driver.h: load, evaluate, verify; lang's
 * cluster checker) and the back end (codegen/: exports, cost model, code
 * generation); nothing below includes it.  argv[0] is the subcommand
 * name; each returns the process exit status: 0 on success, 1 when a
 * file, schedule or matrix is wrong, 2 on a usage error.  What each takes
 * is its flag table in cmd_flags.c, which also writes its --help.
 */
#ifndef COLL_CMD_H
#define COLL_CMD_H

#include <stdbool.h>
#include <stdio.h>

#include "choose.h"

/* cmd_check.c */
/* collc check FILE... [-a ALGO] [-n N | --n-range A..B] [-D k=v]: evaluate
 * and verify every algorithm (or ALGO) for each n. */
int cmd_check(int argc, char **argv);

/* cmd_show.c */
/* collc show FILE... [-a ALGO] -n N [--format table|json|dot] [-D k=v]:
 * print one verified schedule. */
int cmd_show(int argc, char **argv);

/* cmd_cost.c */
/* collc cost FILE... -a ALGO[,ALGO...] -n N [-s SIZE | -b -e -f] [links]:
 * one line per cost model (and size). */
int cmd_cost(int argc, char **argv);

/* cmd_sim.c */
/* collc sim FILE... -a ALGO -n N [-s SIZE] [links] [--straggler R --delay D]
 * [--segments S] [--trace] [--svg FILE]: the event-driven simulation with
 * idle times and the critical path. */
int cmd_sim(int argc, char **argv);

/* cmd_compare.c */
/* collc compare FILE... -n N [-b -e -f] [--baseline A] [--csv|--json]
 * [--svg FILE] [--n-range A..B]: algorithms x sizes (or x n). */
int cmd_compare(int argc, char **argv);

/* cmd_tune.c */
/* collc tune FILE... -n N [links]: fastest algorithm per size range, and
 * the critical straggler delay of straggler-aware algorithms. */
int cmd_tune(int argc, char **argv);

/* cmd_reorder.c */
/* collc reorder FILE... -a ALGO -n N --links MATRIX [-s SIZE] [...]: the
 * best rank order for ALGO on that network (reorder.h). */
int cmd_reorder(int argc, char **argv);

/* cmd_build.c */
/* collc build CLUSTER.coll [FILE.coll...] -o DIR [--cluster NAME] [-v]:
 * generate and compile lib<cluster>. */
int cmd_build(int argc, char **argv);

/* cmd_build.c, shared with cmd_show.c */
/* Print the rank order a library uses (collc build, collc show --perm),
 * each line starting with indent. */
void cmd_print_order(const libplan *c, const char *indent);

/* cmd_flags.c */
/* Print collc's usage (every subcommand, from its flag table) to out. */
void cmd_usage(FILE *out);
/* Take the options every subcommand takes (--stats, --max-errors N,
 * --max-memory S) out of argv wherever they are, and apply them:
 * 0, or 2 after a usage error. */
int cmd_take_common(int *argc, char **argv, bool *stats);
/* The subcommand called name, or NULL after "unknown command" (with the
 * closest name when one is near). */
int (*cmd_lookup(const char *name))(int argc, char **argv);

#endif
