/*
 * eval_int.h - what the evaluator's files share (internal to lang/; its
 * one public entry point is eval.h's eval_algorithm).
 *
 * The evaluator turns an algorithm and n into the schedule IR.  Its files:
 *   eval.c      the tree walker: statements, expressions, composition
 *               (`run`), and eval_algorithm, the entry point;
 *   builtins.c  the builtin functions and the state queries behind them.
 * They share the evaluation context (ctx), the running algorithm (inst),
 * the flow codes every statement returns, and ev_fail, the one way an
 * error is reported.  Small helpers that hot loops call from more than
 * one file are static inline here, so that splitting the evaluator into
 * files costs no call.  Prototypes are grouped by the file that defines
 * them.
 */
#ifndef COLL_EVAL_INT_H
#define COLL_EVAL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "ast.h"
#include "diag.h"
#include "eval.h"
#include "ir.h"
#include "state.h"
#include "value.h"

/* One running algorithm: the top level or a composed `run`. */
typedef struct inst {
	ast *algo;
	int kind;             /* ir_kind of this algorithm's collective */
	int n, root;
	int *rmap;            /* local rank -> top-level rank (owned) */
	int *cmap;            /* local chunk -> top-level chunk (owned); NULL: identity */
	int ncmap;            /* entries in cmap, or the parent's chunk count when cmap is NULL */
	int *rinv;            /* top-level rank -> local rank or -1 (owned) */
	int chunks;
	bool chunks_set, emitted, top;
	ast_list *with;       /* `run ... with` bindings (evaluated in withv) */
	value *withv;
} inst;

typedef struct {
	ast_prog *prog;
	ir_sched *s;
	bstate *st;
	int applied;          /* rounds of s already applied to st */
	int *buf;             /* scratch of s->n ranks for state queries */
	eval_opts *opts;
	long long steps, max_steps;
	int depth;            /* function call depth */
	bool in_round;
	int phase;
	bool failed;
	value ret;            /* value of the last `return` */
	const drv_define *defs;
	int ndefs;
} ctx;

/* What a statement tells its caller: go on, leave the loop, go to the
 * loop's next iteration, leave the function, or stop (an error was
 * reported, or a quiet `require` failed). */
enum { FLOW_NEXT, FLOW_BREAK, FLOW_CONTINUE, FLOW_RETURN, FLOW_ERROR };

/* eval.c */
/* Report an error at p (then a note naming the algorithm and n) and set
 * c->failed; only the first error of a run is printed. */
void ev_fail(ctx *c, srcpos p, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* builtins.c */
/* Builtin call e (e->bind == B_BUILTIN, e->slot its BI_*) on the na
 * evaluated arguments a, which it borrows; V_NILV after an error. */
value bi_call(ctx *c, inst *in, ast *e, value *a, int na);

/* ---- helpers for every file ------------------------------------------------ */

static inline const char *tname(value v) { return v_type_names[v.t]; }

/* Check that v is an int; `what` names it in the message. */
static inline bool want_int(ctx *c, value v, ast *e, const char *what, int64_t *out)
{
	if (v.t == V_INT) {
		*out = v.i;
		return true;
	}
	ev_fail(c, e->pos, "%s must be an int, found %s", what, tname(v));
	return false;
}

static inline bool want_bool(ctx *c, value v, ast *e, const char *what)
{
	if (v.t == V_BOOL)
		return v.i != 0;
	ev_fail(c, e->pos, "%s must be a bool, found %s", what, tname(v));
	return false;
}

/* Can v be a set element or a map key? */
static inline bool is_key(value v) { return v.t == V_INT || v.t == V_BOOL || v.t == V_STR; }

#endif
