/*
 * cluster.h - a `cluster` declaration checked by the front end into a
 * typed description: every setting validated, every included algorithm
 * evaluated and verified for the cluster's rank count.  No syntax tree
 * leaves lang/: the back end (codegen/choose.c, the emitters, collc build)
 * reads only this.
 *
 * Pipeline: parse (A_CLUSTER) -> cluster.c (settings, entries, schedules)
 * -> cluster_desc -> codegen/choose.c (size table, critical delays) ->
 * emit_c.c / emit_cuda.c.
 */
#ifndef COLL_LANG_CLUSTER_H
#define COLL_LANG_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "coll.h"
#include "driver.h"
#include "ir.h"
#include "linkmodel.h"

/* What `transport NAME` can name: a host transport of libcollrt (the rows
 * of runtime/include/coll_transports.def), `auto`, or a GPU target whose
 * device code a code generator writes (emit_cuda.c). */
typedef struct {
	const char *name;
	const char *host;     /* the transport the host plans use: name, or "auto" for GPU targets */
	bool gpu;             /* device plans (emit_cuda.c, nvcc) */
	bool nccl;            /* the device plans call NCCL */
	bool rail;            /* it can be one of several rails (coll_transports.def) */
	int round_order;      /* libcollrt runs plans over it in round order (coll_transports.def);
			         -1: `auto`, the cluster decides (codegen/choose.c) */
} cluster_target;

/* One algorithm listed in a collective block. */
typedef struct {
	char *algo;           /* the algorithm's name */
	char *label;          /* its name in the library: algo, or algo_k1v1... when one block
			         lists it with different parameters (owned) */
	drv_define *defs;     /* its parameters (owned, names too) */
	int ndefs;
	uint64_t below;       /* `below SIZE`; 0: none */
	srcpos pos, below_pos;
	bool aside;           /* `straggler auto`: a straggler algorithm without `below`,
			         outside the size table (chosen only while a straggler is seen) */
	ir_sched *s;          /* verified for the cluster's rank count (owned) */
	int straggler_role;   /* the rank absent from the precondition ("pre..." rounds), -1: none */
} cluster_entry;

/* One `collective { ... } [choose by cost]` block: entries [first, first+count). */
typedef struct {
	ir_kind kind;
	srcpos pos;
	bool by_cost;
	bool by_measure;      /* `choose by measure`: by cost here, measured at init (by_cost too) */
	int first, count;
} cluster_block;

/* The longest cluster or algorithm name a library takes: they name its
 * files and C symbols. */
#define CLUSTER_MAX_NAME 64

#define CLUSTER_STRAGGLER_NONE (-1)
#define CLUSTER_STRAGGLER_AUTO (-2)

/* `reorder by cost;` (collc build searches the order and bakes it into
 * the library) or `reorder at init;` (the library probes and searches
 * when a communicator starts). */
typedef enum { CLUSTER_REORDER_NONE, CLUSTER_REORDER_COST, CLUSTER_REORDER_INIT } cluster_reorder;

typedef struct {
	char *name;
	srcpos pos;
	int ranks;
	const cluster_target *target;   /* `transport` (default auto) */
	uint64_t align;       /* GPU targets: device chunk padding in bytes (default 1024) */
	double alpha, bw;     /* link model for `choose by cost` and critical delays */
	char *links;          /* or a link matrix file, relative paths resolved (owned), NULL;
				 read and checked for the rank count by cluster_check */
	srcpos links_pos;     /* the setting's value */
	char *rails;          /* `rails { tcp "eth0"; tcp "eth1"; }` as libcollrt takes it:
			         "tcp:eth0,tcp:eth1" (owned); NULL: one network */
	bool has_policy;      /* `policy NAME;`: policy holds it (else the runtime's default) */
	coll_rail_policy policy;   /* its name is owned */
	int straggler;        /* `straggler R`: R; CLUSTER_STRAGGLER_NONE or _AUTO */
	srcpos straggler_pos; /* the setting's value */
	cluster_reorder reorder;
	srcpos reorder_pos;
	char *reorder_algo;   /* `reorder_algo NAME;`: the algorithm to order for (owned), NULL:
				 the allreduce the size table picks at reorder_size */
	uint64_t reorder_size;   /* `reorder_size "64MiB";` (0: 64 MiB) */
	link_model segs;      /* the shared segments declared here (`group rack0 "0 3";`, `uplink`,
				 `segment`, `rank_bw`), read from their links-file lines (linkmodel.h);
				 only its groups, segments and rank_bw mean anything */
	srcpos *group_pos;    /* where each of segs' groups was declared */
	int ndecls;           /* how many such settings */
	cluster_entry *entries;
	int nentries;
	cluster_block *blocks;
	int nblocks;
} cluster_desc;

/* cluster.c */
/* Check cluster `name` (NULL: the first declared in a file given to
 * drv_load) of p into d.  Errors point into the cluster file, with a note
 * at the entry that included a failing algorithm.  Returns 0, or -1 after
 * printing diagnostics (d is then empty). */
int cluster_check(drv_prog *p, const char *name, cluster_desc *d);
void cluster_desc_free(cluster_desc *d);
/* The target named `name`, or NULL. */
const cluster_target *cluster_target_find(const char *name);

#endif
