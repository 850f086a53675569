/*
 * cmd_cost.h - the cost subcommands of collc: cost, sim, compare, tune.
 *
 * Pipeline position: command line -> driver (load, evaluate, verify) ->
 * cost model (cost.h) -> text, CSV, JSON or SVG.  lang/collc.c dispatches
 * here; argv[0] is the subcommand name.  Each returns the process exit
 * status: 0 on success, 1 when a file, schedule or matrix is wrong, 2 on
 * a usage error; errors are printed as "collc: error: ...".  What the
 * four share (flags, algorithm loading, row output) is in cmd_flags.h.
 */
#ifndef COLL_CMD_COST_H
#define COLL_CMD_COST_H

/* cmd_cost.c */
/* collc cost FILE... -a ALGO -n N [-s SIZE | -b -e -f] [links]: one line
 * per cost model (and size). */
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

#endif
