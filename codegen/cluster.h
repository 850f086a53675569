/*
 * cluster.h - a `cluster` declaration evaluated: the verified schedule of
 * every algorithm it includes for its rank count, and the size -> algorithm
 * table.  Pipeline: driver (parse, eval, verify) -> cluster.c -> emit_c.c.
 */
#ifndef COLL_CLUSTER_H
#define COLL_CLUSTER_H

#include <stdint.h>

#include "driver.h"
#include "ir.h"

typedef struct {
	ir_sched *s;          /* verified for the cluster's rank count (owned) */
	char *label;          /* algorithm name as the library knows it (owned) */
	int straggler_role;   /* the rank absent from the precondition ("pre..." rounds), -1: none */
} cluster_algo;

/* Sizes up to max_bytes (inclusive) of collective kind use algorithm algo. */
typedef struct {
	ir_kind kind;
	uint64_t max_bytes;
	int algo;             /* index into cluster.algos */
} cluster_choice;

#define CLUSTER_NCRIT 33   /* critical delays for 1 B .. 4 GiB, powers of two */

typedef struct {
	char *name;
	srcpos pos;
	int ranks;
	char *transport;      /* shm, tcp, mpi, auto, nccl or cuda */
	uint64_t align;       /* nccl/cuda: device chunk padding in bytes (default 1024) */
	double alpha, bw;     /* link model for `choose by cost` */
	char *links;          /* or a link matrix file (owned), NULL */
	cluster_algo *algos;
	int nalgos;
	cluster_choice *choices;
	int nchoices;
	int straggler;        /* `straggler R`: R; CLUSTER_STRAGGLER_NONE or _AUTO */
	srcpos straggler_pos; /* the setting's value */
	/* `straggler auto`: the straggler algorithm (index into algos) and,
	 * for sizes up to 2^k bytes, the delay (s) from which it beats
	 * algos[crit_base[k]], the size table's choice (INFINITY: never). */
	int straggler_algo;
	double crit[CLUSTER_NCRIT];
	int crit_base[CLUSTER_NCRIT];
} cluster;
#define CLUSTER_STRAGGLER_NONE (-1)
#define CLUSTER_STRAGGLER_AUTO (-2)

/* cluster.c */
/* Evaluate cluster `name` (NULL: the first) of p.  Every included algorithm
 * is evaluated and verified for the cluster's rank count; errors point into
 * the cluster file.  Returns 0, or -1 after printing diagnostics. */
int cluster_eval(drv_prog *p, const char *name, cluster *out);
void cluster_free(cluster *c);

/* emit_c.c */
/* Write DIR/NAME.h and DIR/NAME_plans.c for c; returns 0 or -1 (message printed). */
int emit_c(const cluster *c, const char *dir, const char *source);

/* emit_cuda.c */
/* For a transport nccl or cuda cluster: write DIR/NAME_gpu.h (the device
 * API: NAME_gpu_init and the coll_gpu.h functions) and DIR/NAME_gpu.cu (per
 * allreduce algorithm and rank, the schedule unrolled into calls of the
 * runtime/gpu executor, one transfer group per fused run of rounds).
 * Returns 0 or -1 (message printed). */
int emit_cuda(const cluster *c, const char *dir, const char *source);
/* True when c's transport needs the CUDA generator (nccl or cuda). */
bool cluster_is_gpu(const cluster *c);

#endif
