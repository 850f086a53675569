/*
 * verify.h - the schedule verifier: proves that an ir_sched implements its
 * collective, or says where and why it does not.
 *
 * Pipeline position: eval -> ir_sched -> verify -> cost / export / codegen.
 * The verifier replays the schedule on the symbolic buffer state (state.h)
 * from the collective's pre-state, checks every round (ranges, port model,
 * data present, no double counting, no conflicting writes, no copy that
 * destroys the last copy of a needed contribution) and finally the
 * collective's post-state.  Errors go through diag_error and point at the
 * transfer's statement in the .coll source.
 */
#ifndef COLL_VERIFY_H
#define COLL_VERIFY_H

#include "ir.h"

/* At most this many errors are reported for the failing round. */
#define VERIFY_MAX_ROUND_ERRORS 10

/* verify.c */
/* Verify s; returns the number of errors reported (0: verified).  Stops after
 * the first round with errors; the post-state is checked only when every
 * round is clean.  The port model counts distinct peers per rank and round
 * (several chunks to one peer are one message); ports_send / ports_recv
 * <= 0 mean "no limit". */
int verify_sched(const ir_sched *s);

#endif
