/*
 * choose.h - what a generated library chooses by: for every collective of
 * a checked cluster (lang/cluster.h), the size -> algorithm table, and
 * under `straggler auto` the straggler delay, per message size, from which
 * the straggler algorithm beats the table's choice.  Thresholds come from
 * the cluster; `choose by cost` and the critical delays from the cost
 * model (cost.h) under the cluster's link model.
 *
 * Pipeline: lang/cluster.c (cluster_desc) -> choose.c (libplan) ->
 * emit_c.c, emit_cuda.c (emit.h) -> collc build.
 */
#ifndef COLL_CHOOSE_H
#define COLL_CHOOSE_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "ir.h"
#include "tuning.h"

/* Sizes up to max_bytes (inclusive) of collective kind use algorithm algo. */
typedef struct {
	ir_kind kind;
	uint64_t max_bytes;
	int algo;             /* index into libplan.algos */
} lib_choice;

#define LIB_NCRIT 33   /* critical delays for 1 B .. 4 GiB, powers of two */

typedef struct {
	const cluster_desc *d;        /* the checked cluster (borrowed) */
	const cluster_entry *algos;   /* d->entries: every algorithm of the library */
	int nalgos;
	lib_choice *choices;          /* collective by collective, sizes ascending */
	int nchoices;
	/* `straggler auto`: the straggler algorithm (index into algos) and,
	 * for sizes up to 2^k bytes, the delay (s) from which it beats
	 * algos[crit_base[k]], the size table's choice (INFINITY: never). */
	int straggler_algo;
	double crit[LIB_NCRIT];
	int crit_base[LIB_NCRIT];
	/* `reorder by cost`: the rank order (schedule rank -> physical rank,
	 * owned; NULL: identity), chosen for algos[reorder_algo] at
	 * reorder_bytes by the search of reorder.h under the cluster's link
	 * model, with the predicted times of both orders (rounds model, the
	 * objective, and the simulation), and whether it is proven optimal.
	 * The size table and critical delays are then costed in that order.
	 * `reorder at init` fills reorder_algo and reorder_bytes only. */
	int32_t *perm;
	int reorder_algo;             /* -1: none */
	uint64_t reorder_bytes;
	double t_identity, t_best, sim_identity, sim_best;
	bool optimal;
	/* `collc build --tuning FILE` (borrowed; NULL: none): the size
	 * table of every collective it tunes comes from it, not from the
	 * cluster's `below`/`choose by cost` */
	const tune_table *tuning;
} libplan;

/* choose.c */
/* The size tables and critical delays of d, the collectives that tuning
 * (NULL: none) tunes chosen by it.  0, or -1 after printing a diagnostic
 * at the cluster line concerned (a link model or cost model failure, a
 * tuning file that does not fit the cluster). */
int libplan_make(const cluster_desc *d, const tune_table *tuning, libplan *lp);
void libplan_free(libplan *lp);

#endif
