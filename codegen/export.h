/*
 * export.h - plain exports of the schedule IR: JSON for other tools, a
 * rounds x ranks text table for people, and a Graphviz graph.
 *
 * Pipeline position: back end, after verification; reads an ir_sched and
 * writes text, nothing else.  `collc show` uses the table, `collc export`
 * all three.
 */
#ifndef COLL_EXPORT_H
#define COLL_EXPORT_H

#include <stdio.h>

#include "ir.h"

/* export.c */
/* The IR as JSON, one round per line; a stable format:
 * {"collective": "allreduce", "algorithm": "ring", "n": 4, "chunks": 4,
 *  "root": 0, "ports": {"send": 1, "recv": 1}, "rounds": [{"phase": "main",
 *  "transfers": [{"src": 0, "dst": 1, "chunk": 3, "op": "reduce"}, ...]}, ...]} */
void export_json(FILE *out, const ir_sched *s);
/* One row per round, one column per rank: what the rank sends that round
 * ("c3>1", "+c3>1" for a reduce, "." when idle), then a summary line. */
void export_table(FILE *out, const ir_sched *s);
/* A Graphviz digraph: one lane of nodes per rank, one row per step; an
 * edge per transfer from (src, before round t) to (dst, after round t). */
void export_dot(FILE *out, const ir_sched *s);

#endif
