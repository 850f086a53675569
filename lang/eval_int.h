/*
 * eval_int.h - what the evaluator's files share (internal to lang/; its
 * one public entry point is eval.h's eval_algorithm).
 *
 * The evaluator turns an algorithm and n into the schedule IR.  Its files:
 *   eval.c      the tree walker: statements, expressions, composition
 *               (`run`), and eval_algorithm, the entry point;
 *   fastcode.c  the fast path's compiler: blocks and int / bool
 *               expressions into flat programs (see "the fast path");
 *   vm.c        the fast path's machine, which runs those programs;
 *   builtins.c  the builtin functions and the state queries behind them.
 * They share the evaluation context (ctx), the running algorithm (inst),
 * the flow codes every statement returns, and ev_fail, the one way an
 * error is reported.  Small helpers that hot loops call from more than
 * one file are static inline here, so that the split costs the fast path
 * (vm.c) no call.  The walker's builtin calls do pay one now that bi_call
 * is no longer inlined into it: 0.5% more instructions for StragglAR at
 * n = 254, which calls push() and add() about 200,000 times on the walker.
 * Prototypes are grouped by the file that defines them.
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
	int *coff;            /* NULL, or local chunk j is the block of top-level chunks
				 cmap[coff[j] .. coff[j+1]-1] (owned; `run ... chunks`
				 with lists) */
	int ncmap;            /* local chunks cmap maps, or the parent's chunk count when cmap is NULL */
	int *rinv;            /* top-level rank -> local rank or -1 (owned) */
	int chunks;
	int xlim;             /* chunks, or 0 with coff: xfer_emit's range check then
				 sends every transfer to ev_xfer_slow, which emits blocks */
	bool chunks_set, emitted, top;
	ast_list *with;       /* `run ... with` bindings (evaluated in withv) */
	value *withv;
} inst;

/* One evaluation (eval_algorithm's): what every instance shares. */
typedef struct {
	ast_prog *prog;
	ir_sched *s;
	bstate *st;
	int applied;          /* rounds of s already applied to st */
	int *buf;             /* scratch of s->n ranks for state queries */
	eval_opts *opts;
	long long steps, max_steps;
	bool mem_over;        /* the memory budget was crossed (xalloc.h): max_steps was
			         lowered so that the next step stops with that error */
	int depth;            /* function call depth */
	bool in_round;
	int phase;
	bool failed;
	value ret;            /* value of the last `return` */
	const drv_define *defs;
	int ndefs;
	struct par *par;      /* the innermost `parallel` block running (eval.c), or NULL */
} ctx;

/* What a statement tells its caller: go on, leave the loop, go to the
 * loop's next iteration, leave the function, or stop (an error was
 * reported, or a quiet `require` failed). */
enum { FLOW_NEXT, FLOW_BREAK, FLOW_CONTINUE, FLOW_RETURN, FLOW_ERROR };
enum { FLOW_GIVEUP = -1 };   /* vm_run: an expression program gave up */

/* ---- the fast path: fastcode.c compiles, vm.c runs ---------------------------
 *
 * Rank and chunk arithmetic dominates evaluation (StragglAR at n = 1024
 * emits two million transfers, each with three such expressions, and
 * tests as many conditions), so the expressions resolve.c marks `fast`
 * (ints and bools over literals, locals, n, x[i] chains and len()) are
 * compiled on first use into a flat postfix program that runs on a small
 * stack of unboxed ints, instead of a recursive walk with a call per node.
 * An expression's program only reads (it never allocates, counts
 * references or has an effect), so when it gives up (a non-int, a missing element, an
 * overflow, a division by zero) the generic path can evaluate the same
 * expression again and report any error with its usual message.
 *
 * Blocks are compiled the same way, into one program per block with the
 * expressions of its statements inline, so that a loop body runs in one
 * dispatch loop instead of a call per statement and expression.  The
 * common statements (let, assignment, transfer, push, if, while, for,
 * break, continue) become program code; every other statement (round,
 * return, calls, ...) is an S_EXEC op that runs it on the tree walker.
 * A compiled statement computes all its operands before it has any
 * effect, so when an operand gives up, the statement (or the if / while
 * condition, or the for range) runs on the generic path instead, from
 * the start: errors and their messages are the tree walker's.  Steps are
 * counted where the tree walker counts them, so the step limit trips at
 * the same statement.
 *
 * What a value's type is, is known only at run time, and some operators
 * are also set operations (`-`, `|`, `&`, `^`): `lack & comp[u]` of two
 * sets compiles like an int `&` and gives up on every run.  A giveup
 * costs a few hundred instructions (the generic path tries the
 * expression's own program, then the walker), so a program or statement
 * that has given up FAST_MISSES times is demoted for good: an expression
 * program is no longer tried (ok = false), and a statement's code in its
 * block is replaced by S_EXECJ, which runs it on the walker directly.
 * Demotion changes speed only, never results: the walker computes
 * everything the fast path does. */
#define FAST_MISSES 16

/* A binary operator comes in seven opcodes by where its operands are.
 * The right one is popped from the stack, or (saving an instruction for
 * the most common shapes, x + 1, r % n, p < m) the constant k, local `arg`
 * or n; with the left one on the stack or, the _L? forms, in local `arg`
 * (the right one's local is then k): p < m is one instruction. */
#define F_BINOPS(X) X(ADD) X(SUB) X(MUL) X(DIV) X(MOD) X(EQ) X(NE) X(LT) X(LE) X(GT) X(GE) \
	X(BOR) X(BAND) X(BXOR) X(SHL) X(SHR) X(POW)
#define F_BINOP_OPS(X, name) X(F_##name) X(F_##name##_K) X(F_##name##_L) X(F_##name##_N) \
	X(F_##name##_LK) X(F_##name##_LL) X(F_##name##_LN)
/* An if / while condition made of comparisons, `and`, `or` compiles to
 * jumps: each comparison becomes its compare-and-jump twin (F_JLT_LL for
 * p < m), which fetches the operands as its twin does, then jumps when
 * the comparison is false, so `and` and `or` need no op and a condition
 * no S_JZ (StragglAR at n = 256 tests 165,000 conditions, with 160,000
 * `and` / `or`).  Listed last, in the order of their twins, so that twin
 * + (F_JEQ - F_EQ) is the op.
 *
 * The first compare-and-jump of a condition (every path runs it) counts
 * the if's step; the last one ends the condition: false jumps to the
 * else branch, true goes on to the then branch.  When an operand gives
 * up, the giveup code finds the last one and runs the condition on the
 * generic path, counting the step there unless the first one has. */
#define F_JCMPS(X) X(JEQ) X(JNE) X(JLT) X(JLE) X(JGT) X(JGE)

/* Every opcode, in order, as X(name) (the enum and vm_run's table of
 * labels are made from this one list).
 *
 * Statements (S_*, block programs only): s is the statement, jump targets
 * are indexes into the program.  The code of a statement's operands is
 * followed by the op that consumes them, S_SETL .. S_RINIT, which counts
 * the statement's step (after anything that can make it give up, before
 * any effect); when an operand gives up, the consumer's statement,
 * condition or range runs on the generic path instead. */
#define F_OPS(X) \
	X(F_K)        /* push k */ \
	X(F_N)        /* push the instance's n */ \
	X(F_LOCAL)    /* push local `arg`, which must hold an int */ \
	X(F_PLACE)    /* push the address of local `arg` */ \
	X(F_INDEX)    /* pop an int i and a place: push the place's element i */ \
	X(F_INDEX_K)  /* the top place's element k */ \
	X(F_INDEX_L)  /* the top place's element (local arg, an int) */ \
	X(F_LINDEX)   /* pop an int i: push the address of local arg's element i */ \
	X(F_LINDEX_L) /* push the address of local arg's element (local k, an int) */ \
	X(F_LGET)     /* F_LINDEX and F_GET: pop an int i, push local arg's element i, an int */ \
	X(F_LGET_L)   /* F_LINDEX_L and F_GET */ \
	X(F_GET)      /* pop a place holding an int: push the int */ \
	X(F_LEN)      /* pop a place: push its length */ \
	X(F_NEG) X(F_NOT) \
	X(F_AND)      /* top false: jump by arg, keeping it; else pop it */ \
	X(F_OR)       /* top true: jump by arg, keeping it; else pop it */ \
	X(F_GIVEUP)   /* give up: an operand the fast path cannot compute */ \
	X(F_END)      /* an expression's value is the top; a block's end */ \
	X(S_SETL)     /* pop an int into local arg (k: as a bool) */ \
	X(S_UPDL)     /* local arg op= popped int, op k */ \
	X(S_UPDP)     /* pop an int y and a place: the place op= y, op k */ \
	X(S_COPYL)    /* pop a place: local arg = (a reference to) its value */ \
	X(S_COPYP)    /* pop a place and a place under it: the lower one = the upper's value */ \
	X(S_PUSH)     /* pop an int (k: as a bool) and a place holding a list: append */ \
	X(S_PUSHV)    /* pop a place and a place holding a list: append the first's value */ \
	X(S_PUSHL)    /* append local k to the list in local arg (push(list, x) of two locals) */ \
	X(S_XFER)     /* pop destination, source and chunk: emit s's transfers */ \
	X(S_XFERL)    /* S_XFER of locals: chunk arg, source l[0], destination l[1] */ \
	X(S_JZ)       /* pop the condition of if / while s (count: an if, count its step): false goes on at `to` */ \
	X(S_RINIT)    /* pop hi and lo of for loop s over a range into loop k */ \
	X(S_EXEC)     /* count a step and run s generically; break jumps to arg, continue to k (-1: return the flow) */ \
	X(S_EXECJ)    /* count a step and run s (a demoted statement) generically, then go on at `to` */ \
	X(S_STEP)     /* count a step on s (a statement, a while loop's body) */ \
	X(S_JMP)      /* go on at arg */ \
	X(S_RNEXT)    /* loop k past hi: go on at arg; else local s->slot = the next int, count a step on the body */ \
	X(S_RLOOP)    /* the same at the loop's end: past hi, go on; else the next int, and back to the body at arg */ \
	X(S_COLL)     /* for loop s over a collection: evaluate it (generically) into loop k */ \
	X(S_CNEXT)    /* loop k at the end: go on at arg; else local s->slot = the next element, count a step on the body */ \
	X(S_CLOOP)    /* the same at the loop's end: at the end, go on; else the next element, and back to the body at arg */ \
	X(S_CEND)     /* loop k is over: drop its collection */ \
	F_BINOP_OPS(X, ADD) F_BINOP_OPS(X, SUB) F_BINOP_OPS(X, MUL) F_BINOP_OPS(X, DIV) \
	F_BINOP_OPS(X, MOD) F_BINOP_OPS(X, EQ) F_BINOP_OPS(X, NE) F_BINOP_OPS(X, LT) \
	F_BINOP_OPS(X, LE) F_BINOP_OPS(X, GT) F_BINOP_OPS(X, GE) \
	F_BINOP_OPS(X, BOR) F_BINOP_OPS(X, BAND) F_BINOP_OPS(X, BXOR) \
	F_BINOP_OPS(X, SHL) F_BINOP_OPS(X, SHR) F_BINOP_OPS(X, POW) \
	F_BINOP_OPS(X, JEQ) F_BINOP_OPS(X, JNE) F_BINOP_OPS(X, JLT) \
	F_BINOP_OPS(X, JLE) F_BINOP_OPS(X, JGT) F_BINOP_OPS(X, JGE)
#define F_ENUM(name) name,
enum { F_OPS(F_ENUM) };
#undef F_ENUM
/* operand modes, in the order F_BINOP_OPS lists them */
enum { F_MODE_STACK, F_MODE_K, F_MODE_L, F_MODE_N, F_MODE_LK, F_MODE_LL, F_MODE_LN };

typedef struct {
	const void *lab;   /* GCC and Clang: op's label in vm_run, set on the
			      program's first run (dispatch is then one load
			      and a jump) */
	int16_t op;
	bool count;        /* S_JZ, F_J*: the first op of an if's condition, count its step */
	bool last;         /* S_JZ, F_J*: the last op of a condition */
	int32_t arg;
	union {
		int64_t k;
		int32_t l[2];   /* S_XFERL: two more local slots */
	};
	ast *s;
	int32_t to;        /* S_JZ, F_J*: where to jump (false: the comparison); S_SETL ..
			      S_XFERL: where the statement's code starts; S_EXECJ: where to go on */
	int32_t misses;    /* S_SETL .. S_XFERL: giveups so far (see FAST_MISSES) */
} fast_op;

/* Is op one of a condition's jumps? */
static inline bool f_cond_op(int op)
{
	return op == S_JZ || op >= F_JEQ;
}

/* Deeper programs are not compiled; they stay on the generic path. */
#define FAST_STACK 32
/* Loops nested deeper in one block program run on the tree walker (their
 * bodies get programs of their own). */
#define FAST_LOOPS 8

struct fast_code {
	bool ok;        /* false: too deep to compile, or demoted: use the generic path */
	int misses;     /* an expression's giveups so far (see FAST_MISSES) */
	bool threaded;  /* the ops' labels are set */
	int nloops;     /* loop states the program needs */
	int nops;       /* length of op[] */
	fast_op op[];
};

/* eval.c */
/* Would a value of `bytes` fit in the memory budget?  Else an error at e. */
bool ev_fits(ctx *c, ast *e, size_t bytes);
/* The error of a stopped evaluation at p: the step limit, or the memory
 * budget when that is what lowered the limit. */
void ev_limit(ctx *c, srcpos p);
/* Report an error at p (then a note naming the algorithm and n) and set
 * c->failed; only the first error of a run is printed. */
void ev_fail(ctx *c, srcpos p, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* xfer_emit's rare cases: a chunk out of range (an error), or one that
 * stands for a block of chunks (in->coff): one transfer per chunk of the
 * block, in one round. */
int ev_xfer_slow(ctx *c, inst *in, ast *s, int64_t ch, int64_t a, int64_t b);
/* Run statement s, its step already counted (ex counts it first). */
int ev_stmt(ctx *c, inst *in, value *fr, ast *s);
/* An if / while / require condition: 1 or 0, or -1 after an error. */
int ev_cond(ctx *c, inst *in, value *fr, ast *e, const char *what);
/* The bounds of range r (lo .. hi) as ints: FLOW_NEXT or FLOW_ERROR. */
int ev_range_bounds(ctx *c, inst *in, value *fr, ast *r, int64_t *lo, int64_t *hi);
/* What `for` loop s iterates over (other than a range), into *out as a
 * list: FLOW_NEXT or FLOW_ERROR. */
int ev_for_coll(ctx *c, inst *in, value *fr, ast *s, value *out);

/* fastcode.c */
/* The program of fast expression e (e->fast set), or of block e
 * (A_BLOCK), compiled on first use into the program's arena. */
struct fast_code *fc_code(ctx *c, ast *e);

/* vm.c */
/* Run program fc: an expression's (its value into *out) or a block's.
 * Returns the flow of the block, FLOW_NEXT after an expression, or
 * FLOW_GIVEUP when an expression gave up. */
int vm_run(ctx *c, inst *in, value *fr, struct fast_code *fc, int64_t *out);

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

/* Count a step on `at`; false (reported) past the step limit. */
static inline bool step(ctx *c, ast *at)
{
	if (__builtin_expect(++c->steps <= c->max_steps, 1))
		return true;
	ev_limit(c, at->pos);
	return false;
}

/* Count n more steps for work proportional to n elements (copying a list,
 * a set operation, sorting): the step limit bounds work, not statements.
 * False (after the error) when that crosses the limit. */
static inline bool steps_for(ctx *c, ast *at, long long n)
{
	c->steps += n;
	if (__builtin_expect(c->steps <= c->max_steps, 1))
		return true;
	ev_limit(c, at->pos);
	return false;
}

/* Run statement s, counting a step on it. */
static inline int ex(ctx *c, inst *in, value *fr, ast *s)
{
	if (c->failed || !step(c, s))
		return FLOW_ERROR;
	return ev_stmt(c, in, fr, s);
}

/* The language's / and %: they round toward minus infinity (b != 0,
 * and not INT64_MIN / -1: the callers check). */
static inline int64_t floordiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	if (a % b != 0 && ((a < 0) != (b < 0)))
		q--;
	return q;
}

static inline int64_t floormod(int64_t a, int64_t b)
{
	int64_t r = a % b;
	if (r != 0 && ((r < 0) != (b < 0)))
		r += b;
	return r;
}

/* The language's `<<`, `>>` and `**` on ints, shared by the walker and
 * the VM: .ok false when the amount is not in 0..63, the exponent is
 * negative, or the result does not fit in 64 bits (the walker says
 * which).  A result by value, not through a pointer: in the VM that
 * pointer would point into its stack union, which UBSan's object-size
 * check refuses, or keep a local out of a register. */
typedef struct { int64_t v; bool ok; } int_result;

static inline int_result int_shl(int64_t a, int64_t b)
{
	if (b < 0 || b > 63)
		return (int_result){ 0, false };
	int64_t r = (int64_t)((uint64_t)a << b);
	return (int_result){ r, r >> b == a };   /* no bit (and no sign) lost */
}

static inline int_result int_shr(int64_t a, int64_t b)
{
	if (b < 0 || b > 63)
		return (int_result){ 0, false };
	return (int_result){ a >> b, true };   /* arithmetic, as GCC and Clang do it: floor(a / 2^b) */
}

static inline int_result int_pow(int64_t a, int64_t b)
{
	int64_t x = a, r = 1;
	if (b < 0)
		return (int_result){ 0, false };
	/* square and multiply; a square that overflows would be a factor of
	 * the result, so that overflows too (|x| >= 2 whenever it can) */
	while (b > 0) {
		if ((b & 1) && __builtin_mul_overflow(r, x, &r))
			return (int_result){ 0, false };
		b >>= 1;
		if (b && __builtin_mul_overflow(x, x, &x))
			return (int_result){ 0, false };
	}
	return (int_result){ r, true };
}

/* Are transfer s's ranks a and b in range?  Else an error. */
static inline __attribute__((always_inline)) bool xfer_ranks_ok(ctx *c, inst *in, ast *s, int64_t a, int64_t b)
{
	for (int k = 0; k < 2; k++) {
		int64_t r = k ? b : a;
		if (r < 0 || r >= in->n) {
			ev_fail(c, (k ? s->c : s->b)->pos, "%s rank %lld out of range: '%s' runs on %d ranks (0..%d)",
			        k ? "destination" : "source", (long long)r, in->algo->str, in->n, in->n - 1);
			return false;
		}
	}
	return true;
}

/* Emit transfer statement s with its operands evaluated (local chunk
 * ch from rank a to rank b), after checking their ranges.  Always
 * inlined: vm.c runs it once per transfer. */
static inline __attribute__((always_inline)) int xfer_emit(ctx *c, inst *in, ast *s, int64_t ch, int64_t a, int64_t b)
{
	if (__builtin_expect((uint64_t)ch >= (uint64_t)in->xlim, 0))
		return ev_xfer_slow(c, in, s, ch, a, b);
	if (!xfer_ranks_ok(c, in, s, a, b))
		return FLOW_ERROR;
	int gc = in->cmap ? in->cmap[ch] : (int)ch;
	int ga = in->rmap[a], gb = in->rmap[b];
	bool lone = !c->in_round;
	if (lone)
		ir_begin_round(c->s, c->phase, s->pos);
	ir_add(c->s, ga, gb, gc, s->op ? IR_REDUCE_OP : IR_COPY, s->pos);
	if (s->both)
		ir_add(c->s, gb, ga, gc, s->op ? IR_REDUCE_OP : IR_COPY, s->pos);
	if (lone)
		ir_end_round(c->s);
	in->emitted = true;
	return FLOW_NEXT;
}

#endif
