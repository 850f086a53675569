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
/* Check that the names emit_c and emit_cuda write bare are C identifiers;
 * 0, or -1 with an error printed. */
int emit_check_names(const libplan *lp, const char *host);

/* emit_cuda.c */
/* For a GPU target: write DIR/NAME_gpu.h (the device API: NAME_gpu_init
 * and the coll_gpu.h functions) and DIR/NAME_gpu.cu (per allreduce
 * algorithm and rank, the schedule unrolled into calls of the runtime/transport/gpu
 * executor, one transfer group per fused run of rounds).  Returns 0 or -1
 * (message printed). */
int emit_cuda(const libplan *lp, const char *dir, const char *source);

/* emit_str.c */
/* s as a C string literal, quotes included: every byte survives as it is
 * and nothing ends the literal early (see emit_str.c).  Free the result. */
char *emit_cstr(const char *s);
/* s as text for the inside of a C comment: the same escapes, and neither
 * "*" "/" nor a line break of s reaches the file.  Free the result. */
char *emit_comment(const char *s);
/* Is s a C identifier?  What the emitters write bare (the cluster's and
 * algorithms' names, which the lexer makes identifiers) must be one. */
bool emit_is_ident(const char *s);

#endif
