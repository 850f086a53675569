/*
 * emit.h - the code generators of `collc build`: a cluster's plans as C
 * plan tables for libcollrt (emit_c.c), and for a GPU target its device
 * plans as CUDA (emit_cuda.c).  Pipeline: lang/cluster.c -> choose.c ->
 * this -> cc / nvcc (codegen/cmd/cmd_build.c).
 */
#ifndef COLL_EMIT_H
#define COLL_EMIT_H

#include "choose.h"

/* emit_c.c */
/* Write DIR/NAME.h and DIR/NAME_plans.c for lp, whose host plans use
 * transport `host` (the cluster's, or "auto" for a GPU target); returns 0
 * or -1 (message printed). */
int emit_c(const libplan *lp, const char *host, const char *dir, const char *source);

/* emit_cuda.c */
/* For a GPU target: write DIR/NAME_gpu.h (the device API: NAME_gpu_init
 * and the coll_gpu.h functions) and DIR/NAME_gpu.cu (per allreduce
 * algorithm and rank, the schedule unrolled into calls of the runtime/transport/gpu
 * executor, one transfer group per fused run of rounds).  Returns 0 or -1
 * (message printed). */
int emit_cuda(const libplan *lp, const char *dir, const char *source);

#endif
