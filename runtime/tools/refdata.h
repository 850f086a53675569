/*
 * refdata.h - the reference side of a correctness check of a collective:
 * inputs that are exact in every dtype, their encodings, and the expected
 * reduction, all written independently of the runtime's kernels and
 * conversions (reduce.c), so that a wrong kernel cannot agree with itself.
 * collbench -c and the rt_coll test program share it.
 *
 * Rank r's input at global index i is ref_value(dt, op, ref_residue(r,
 * i)): a function of i mod REF_M only (REF_M = 1021, prime, so chunk and
 * segment edges never line up with it), which lets each rank precompute
 * the expected result for REF_M residues and check every output element.
 * Consecutive indices step the residue by REF_STEP.
 *
 * Exactness: integer results are bit-exact (sums and products wrap mod
 * 2^bits in both), float min/max too.  A float sum or product over n
 * ranks, in any order and association, rounding to precision u after each
 * of the n-1 operations, is within gamma_{n-1} ~ (n-1)u of the exact value
 * relative to sum|x_i| (sums) or |prod x_i| (products) (Higham, Accuracy
 * and Stability of Numerical Algorithms, 2nd ed., 3.1 and 4.2).  The
 * reference is computed in double, itself within that bound for fp64, so
 * checkers allow 2(n-1)u with u = ref_unit_roundoff(dt).  Inputs are in
 * [-1, 1] for sums and [0.5, 1.5] for products, so nothing overflows or
 * goes subnormal.
 */
#ifndef COLL_TOOLS_REFDATA_H
#define COLL_TOOLS_REFDATA_H

#include <stddef.h>
#include <stdint.h>

#include "coll.h"

#define REF_M 1021
#define REF_STEP 17

int ref_is_float(coll_dtype dt);
int ref_is_signed(coll_dtype dt);
/* The residue of rank r's input at global index i. */
int ref_residue(int r, uint64_t i);
/* The input for residue k (exactly representable in dt). */
double ref_value(coll_dtype dt, coll_op op, int k);
/* Element i of buf: v stored as dt (fp16 and bf16 encoded here). */
void ref_store(coll_dtype dt, void *buf, size_t i, double v);
/* Element i of an integer buf as its 64-bit pattern, sign-extended for
 * signed types; of a float buf, as a double. */
uint64_t ref_load_int(coll_dtype dt, const void *buf, size_t i);
double ref_load_float(coll_dtype dt, const void *buf, size_t i);
/* Either, as a double (integers through their signed 64-bit value). */
double ref_load(coll_dtype dt, const void *buf, size_t i);
/* A 64-bit result truncated to an integer dt, sign-extended. */
uint64_t ref_wrap(coll_dtype dt, uint64_t v);
/* The unit roundoff u of a float dt (2^-53 for anything else). */
double ref_unit_roundoff(coll_dtype dt);

/* The result at residue j of reducing ranks 0 .. nranks-1's inputs with
 * op: *iv for an integer dt (wrapped, sign-extended), *fv in double, and
 * *mag the scale a float result's error bound is relative to. */
void ref_reduce(coll_dtype dt, coll_op op, int nranks, int j, uint64_t *iv, double *fv, double *mag);

#endif
