/*
 * fastcode.c - the fast path's compiler: a block, or an int / bool
 * expression resolve.c marked `fast`, into a flat program of the ops that
 * eval_int.h lists (see "the fast path" there), compiled the first time
 * the evaluator meets it and kept on its AST node.
 *
 * Pipeline position: part of the evaluator; eval.c asks for programs,
 * vm.c runs them.  The compiler reads the AST and never evaluates: it
 * decides, per statement, whether the program does it itself or hands it
 * back to the tree walker (S_EXEC), and where each op counts its step.
 * It is apart from the VM because the two share only the op set and the
 * program layout: what an op means is fixed in eval_int.h, which op to
 * use is chosen here, and how it runs is vm.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "eval_int.h"
#include "xalloc.h"

typedef struct {
	fast_op *v;
	int n, cap, depth, max;
	int loops, maxloops;  /* compiled loops around the statement being compiled */
	int brk;              /* breaks of the innermost compiled loop to patch: a
			         chain through their arg fields, -1 ends it */
	int cont;             /* where its continue goes; -1: no compiled loop */
} fast_buf;

static int f_emit(fast_buf *b, int op, int32_t arg, int64_t k, int push)
{
	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 16;
		b->v = xrealloc(b->v, (size_t)b->cap * sizeof *b->v);
	}
	b->v[b->n] = (fast_op){ .op = op, .arg = arg, .k = k };
	b->depth += push;
	if (b->depth > b->max)
		b->max = b->depth;
	return b->n++;
}

/* A statement op: like f_emit, with the statement it stands for. */
static int f_stmt_op(fast_buf *b, int op, ast *s, int32_t arg, int64_t k, int push)
{
	int at = f_emit(b, op, arg, k, push);
	b->v[at].s = s;
	if (op >= S_SETL && op <= S_XFERL)
		b->v[at].to = -1;   /* not demotable until f_stmt says where it starts */
	return at;
}

static void f_value(fast_buf *b, const ast *e);

/* Code that pushes the address of the value place e names. */
static void f_place(fast_buf *b, const ast *e)
{
	if (e->kind == A_NAME) {
		f_emit(b, F_PLACE, e->slot, 0, 1);
		return;
	}
	if (e->a->kind == A_NAME && e->b->kind != A_INT) {   /* x[i]: one op for x and the element */
		if (e->b->kind == A_NAME && e->b->bind == B_LOCAL) {
			f_emit(b, F_LINDEX_L, e->a->slot, e->b->slot, 1);
		} else {
			f_value(b, e->b);
			f_emit(b, F_LINDEX, e->a->slot, 0, 0);
		}
		return;
	}
	f_place(b, e->a);
	if (e->b->kind == A_INT) {
		f_emit(b, F_INDEX_K, 0, e->b->ival, 0);
	} else if (e->b->kind == A_NAME && e->b->bind == B_LOCAL) {
		f_emit(b, F_INDEX_L, e->b->slot, 0, 0);
	} else {
		f_value(b, e->b);
		f_emit(b, F_INDEX, 0, 0, -1);
	}
}

/* Code that pushes the int or bool value of fast expression e. */
static void f_value(fast_buf *b, const ast *e)
{
	static const int16_t binops[] = {
		[OP_ADD] = F_ADD, [OP_SUB] = F_SUB, [OP_MUL] = F_MUL, [OP_DIV] = F_DIV, [OP_MOD] = F_MOD,
		[OP_EQ] = F_EQ, [OP_NE] = F_NE, [OP_LT] = F_LT, [OP_LE] = F_LE, [OP_GT] = F_GT, [OP_GE] = F_GE,
		[OP_UNION] = F_BOR, [OP_INTER] = F_BAND, [OP_XOR] = F_BXOR, [OP_SHL] = F_SHL, [OP_SHR] = F_SHR,
		[OP_POW] = F_POW,
	};
	const ast *r;
	switch (e->kind) {
	case A_INT: case A_BOOL:
		f_emit(b, F_K, 0, e->kind == A_BOOL ? e->ival != 0 : e->ival, 1);
		break;
	case A_NAME:
		if (e->bind == B_N)
			f_emit(b, F_N, 0, 0, 1);
		else
			f_emit(b, F_LOCAL, e->slot, 0, 1);
		break;
	case A_INDEX:
		f_place(b, e);
		/* x[i] is common enough (StragglAR's left[c - lo]) to save
		 * F_GET's dispatch */
		if (b->v[b->n - 1].op == F_LINDEX || b->v[b->n - 1].op == F_LINDEX_L)
			b->v[b->n - 1].op += F_LGET - F_LINDEX;
		else
			f_emit(b, F_GET, 0, 0, 0);
		break;
	case A_CALL:   /* len(place) */
		f_place(b, e->list.v[0]);
		f_emit(b, F_LEN, 0, 0, 0);
		break;
	case A_UNOP:
		f_value(b, e->a);
		f_emit(b, e->op == OP_NEG ? F_NEG : F_NOT, 0, 0, 0);
		break;
	case A_BINOP:
		r = e->b;
		if (e->a->kind == A_NAME && e->a->bind == B_LOCAL && (r->kind == A_INT || r->kind == A_NAME)) {
			if (r->kind == A_INT)
				f_emit(b, binops[e->op] + F_MODE_LK, e->a->slot, r->ival, 1);
			else if (r->bind == B_LOCAL)
				f_emit(b, binops[e->op] + F_MODE_LL, e->a->slot, r->slot, 1);
			else   /* B_N */
				f_emit(b, binops[e->op] + F_MODE_LN, e->a->slot, 0, 1);
			break;
		}
		f_value(b, e->a);
		if (r->kind == A_INT)
			f_emit(b, binops[e->op] + F_MODE_K, 0, r->ival, 0);
		else if (r->kind == A_NAME && r->bind == B_LOCAL)
			f_emit(b, binops[e->op] + F_MODE_L, r->slot, 0, 0);
		else if (r->kind == A_NAME)   /* B_N */
			f_emit(b, binops[e->op] + F_MODE_N, 0, 0, 0);
		else {
			f_value(b, r);
			f_emit(b, binops[e->op], 0, 0, -1);
		}
		break;
	default: {   /* A_AND, A_OR */
		f_value(b, e->a);
		int at = b->n;
		f_emit(b, e->kind == A_AND ? F_AND : F_OR, 0, 0, -1);
		f_value(b, e->b);
		b->v[at].arg = b->n - at - 1;
		break;
	}
	}
}

static bool f_is_local(const ast *e)
{
	return e->kind == A_NAME && e->bind == B_LOCAL;
}

/* Is e a place the fast path can address: a local or x[i][j] over one? */
static bool f_is_place(const ast *e)
{
	return f_is_local(e) || (e->kind == A_INDEX && e->fast);
}

static void f_block(fast_buf *b, const ast *blk);

/* A loop: `head` (already emitted) starts the first iteration and
 * counts a step on the body, which follows.  At its end, `tail` does the
 * same for every later iteration, jumping back to the body (a for loop's
 * S_RLOOP or S_CLOOP of statement s: one op per iteration instead of a
 * jump to head and head), or is S_JMP back to head (a while loop).
 * Breaks go to the exit, which is `exit_op` (emitted here unless F_END:
 * S_CEND drops the loop's collection), continues to head.  Returns the
 * exit, for the caller to point head's way out at. */
static int f_loop(fast_buf *b, int head, const ast *body, int tail, ast *s, int exit_op)
{
	int brk = b->brk, cont = b->cont;
	b->brk = -1;
	b->cont = head;
	b->loops++;
	f_block(b, body);
	b->loops--;
	if (tail == S_JMP)
		f_emit(b, S_JMP, head, 0, 0);
	else
		f_stmt_op(b, tail, s, head + 1, b->loops, 0);
	int exit = b->n;
	if (exit_op != F_END)
		f_emit(b, exit_op, 0, b->loops, 0);
	for (int i = b->brk, next; i >= 0; i = next) {
		next = b->v[i].arg;
		b->v[i].arg = exit;
	}
	b->brk = brk;
	b->cont = cont;
	return exit;
}

static bool f_is_cmp(const ast *e)
{
	return e->kind == A_BINOP && e->op >= OP_EQ && e->op <= OP_GE;
}

/* Can fast condition e compile to jumps: comparisons under and / or? */
static bool f_jumpable(const ast *e)
{
	if (e->kind == A_AND || e->kind == A_OR)
		return f_jumpable(e->a) && f_jumpable(e->b);
	return f_is_cmp(e);
}

/* Point the jumps of chain `at` (linked through their `to`) at `to`. */
static void f_patch(fast_buf *b, int at, int to)
{
	for (int next; at >= 0; at = next) {
		next = b->v[at].to;
		b->v[at].to = to;
	}
}

/* Jumps for condition e (f_jumpable) of statement s that go to the chain
 * *jumps when e == sense and on after their code otherwise; returns the
 * last op. */
static int f_branch(fast_buf *b, const ast *e, ast *s, bool sense, int *jumps)
{
	static const int8_t inverse[] = {   /* jump when true = jump when the inverse is false */
		[OP_EQ] = OP_NE, [OP_NE] = OP_EQ, [OP_LT] = OP_GE, [OP_LE] = OP_GT, [OP_GT] = OP_LE, [OP_GE] = OP_LT,
	};
	int on = -1, at;   /* on: the chain to the code after e */
	if (f_is_cmp(e)) {
		f_value(b, e);   /* ends with the comparison */
		at = b->n - 1;
		b->v[at].op += F_JEQ - F_EQ;
		if (sense)
			b->v[at].op += (inverse[e->op] - e->op) * (F_NE - F_EQ);
		b->v[at].s = s;
		b->v[at].to = *jumps;
		*jumps = at;
		b->depth--;      /* the twin pops the result too */
		return at;
	}
	/* a and b: false when a is; a or b: true when a is */
	bool short_sense = e->kind == A_OR;
	f_branch(b, e->a, s, short_sense, short_sense == sense ? jumps : &on);
	at = f_branch(b, e->b, s, sense, jumps);
	f_patch(b, on, b->n);
	return at;
}

/* A condition of if / while s: its code and jumps (S_JZ at the end, or
 * compare-and-jump ops), which count a step on s first if `step` (an
 * if).  Returns the chain of jumps to where a false condition goes on,
 * for the caller to f_patch. */
static int f_cond(fast_buf *b, ast *s, bool step)
{
	const ast *e = s->a;
	int jumps = -1, first = b->n, last;
	if (e->fast == FAST_BOOL && f_jumpable(e)) {
		last = f_branch(b, e, s, false, &jumps);
		while (!f_cond_op(b->v[first].op))
			first++;
	} else {
		if (e->fast == FAST_BOOL)
			f_value(b, e);
		else
			f_emit(b, F_GIVEUP, 0, 0, 1);
		last = first = jumps = f_stmt_op(b, S_JZ, s, 0, 0, -1);
		b->v[last].to = -1;
	}
	b->v[first].count = step;
	b->v[last].last = true;
	return jumps;
}

/* Compile statement s; false: it is not one the program does itself. */
static bool f_stmt_inline(fast_buf *b, ast *s)
{
	int at, jz, exit;   /* program indexes (b->v moves as it grows) */
	ast *t, *e;
	switch (s->kind) {
	case A_LET:
		if (f_is_place(s->a)) {
			f_place(b, s->a);
			f_stmt_op(b, S_COPYL, s, s->slot, 0, -1);
		} else if (s->a->fast) {
			f_value(b, s->a);
			f_stmt_op(b, S_SETL, s, s->slot, s->a->fast == FAST_BOOL, -1);
		} else {
			return false;
		}
		return true;
	case A_ASSIGN:
		t = s->a;
		e = s->b;
		if (!f_is_place(t))
			return false;
		if (s->op == OP_SET && f_is_place(e)) {
			if (t->kind == A_NAME) {
				f_place(b, e);
				f_stmt_op(b, S_COPYL, s, t->slot, 0, -1);
			} else {
				f_place(b, t);
				f_place(b, e);
				f_stmt_op(b, S_COPYP, s, 0, 0, -2);
			}
		} else if (t->kind == A_NAME && s->op == OP_SET && e->fast) {
			f_value(b, e);
			f_stmt_op(b, S_SETL, s, t->slot, e->fast == FAST_BOOL, -1);
		} else if (t->kind == A_NAME && e->fast == FAST_INT) {
			f_value(b, e);
			f_stmt_op(b, S_UPDL, s, t->slot, s->op, -1);
		} else if (e->fast == FAST_INT) {
			f_place(b, t);
			f_value(b, e);
			f_stmt_op(b, S_UPDP, s, 0, s->op, -2);
		} else {
			return false;
		}
		return true;
	case A_XFER:
		if (s->a->fast != FAST_INT || s->b->fast != FAST_INT || s->c->fast != FAST_INT)
			return false;
		if (f_is_local(s->a) && f_is_local(s->b) && f_is_local(s->c)) {
			at = f_stmt_op(b, S_XFERL, s, s->a->slot, 0, 0);
			b->v[at].l[0] = s->b->slot;
			b->v[at].l[1] = s->c->slot;
			return true;
		}
		f_value(b, s->a);
		f_value(b, s->b);
		f_value(b, s->c);
		f_stmt_op(b, S_XFER, s, 0, 0, -3);
		return true;
	case A_EXPR:   /* push(list, x) */
		e = s->a;
		if (e->kind != A_CALL || e->bind != B_BUILTIN || e->slot != BI_PUSH || e->list.n != 2 ||
		    !f_is_place(e->list.v[0]) || (!f_is_place(e->list.v[1]) && !e->list.v[1]->fast))
			return false;
		if (f_is_local(e->list.v[0]) && f_is_local(e->list.v[1])) {
			f_stmt_op(b, S_PUSHL, s, e->list.v[0]->slot, e->list.v[1]->slot, 0);
			return true;
		}
		f_place(b, e->list.v[0]);
		if (f_is_place(e->list.v[1])) {
			f_place(b, e->list.v[1]);
			f_stmt_op(b, S_PUSHV, s, 0, 0, -2);
		} else {
			f_value(b, e->list.v[1]);
			f_stmt_op(b, S_PUSH, s, 0, e->list.v[1]->fast == FAST_BOOL, -2);
		}
		return true;
	case A_IF:
		jz = f_cond(b, s, true);
		f_block(b, s->b);
		if (s->c) {
			at = f_emit(b, S_JMP, 0, 0, 0);
			f_patch(b, jz, b->n);
			f_block(b, s->c);
			b->v[at].arg = b->n;
		} else {
			f_patch(b, jz, b->n);
		}
		return true;
	case A_WHILE:
		if (b->loops == FAST_LOOPS)
			return false;
		f_stmt_op(b, S_STEP, s, 0, 0, 0);
		at = b->n;
		jz = f_cond(b, s, false);
		f_stmt_op(b, S_STEP, s->b, 0, 0, 0);
		exit = f_loop(b, at, s->b, S_JMP, s, F_END);
		f_patch(b, jz, exit);
		return true;
	case A_FOR:
		if (b->loops == FAST_LOOPS)
			return false;
		if (b->loops + 1 > b->maxloops)
			b->maxloops = b->loops + 1;
		f_stmt_op(b, S_STEP, s, 0, 0, 0);
		if (s->a->kind == A_RANGE) {
			if (s->a->a->fast == FAST_INT && s->a->b->fast == FAST_INT) {
				f_value(b, s->a->a);
				f_value(b, s->a->b);
			} else {
				f_emit(b, F_GIVEUP, 0, 0, 2);
			}
			f_stmt_op(b, S_RINIT, s, 0, b->loops, -2);
			at = f_stmt_op(b, S_RNEXT, s, 0, b->loops, 0);
			exit = f_loop(b, at, s->b, S_RLOOP, s, F_END);
		} else {
			f_stmt_op(b, S_COLL, s, 0, b->loops, 0);
			at = f_stmt_op(b, S_CNEXT, s, 0, b->loops, 0);
			exit = f_loop(b, at, s->b, S_CLOOP, s, S_CEND);
		}
		b->v[at].arg = exit;
		return true;
	case A_BREAK: case A_CONTINUE:
		if (b->cont < 0)
			return false;   /* the loop is outside this block: return the flow */
		f_stmt_op(b, S_STEP, s, 0, 0, 0);
		if (s->kind == A_CONTINUE) {
			f_emit(b, S_JMP, b->cont, 0, 0);
		} else {
			b->brk = f_emit(b, S_JMP, b->brk, 0, 0);
		}
		return true;
	default:
		return false;
	}
}

static void f_stmt(fast_buf *b, ast *s)
{
	int start = b->n;
	if (f_stmt_inline(b, s)) {
		/* a statement that ends in its consumer: where its code starts,
		 * for the VM to demote it (FAST_MISSES) */
		fast_op *last = &b->v[b->n - 1];
		if (last->op >= S_SETL && last->op <= S_XFERL && last->s == s)
			last->to = start;
		return;
	}
	if (b->cont < 0)
		f_stmt_op(b, S_EXEC, s, -1, -1, 0);
	else   /* its break joins the chain of the loop's breaks */
		b->brk = f_stmt_op(b, S_EXEC, s, b->brk, b->cont, 0);
}

static void f_block(fast_buf *b, const ast *blk)
{
	for (int i = 0; i < blk->list.n; i++)
		f_stmt(b, blk->list.v[i]);
}

struct fast_code *fc_code(ctx *c, ast *e)
{
	if (!e->code) {
		fast_buf b = { .brk = -1, .cont = -1 };
		if (e->kind == A_BLOCK)
			f_block(&b, e);
		else
			f_value(&b, e);
		f_emit(&b, F_END, 0, 0, 0);
		struct fast_code *fc = arena_alloc(c->prog->arena, sizeof *fc + (size_t)b.n * sizeof *b.v);
		fc->ok = b.max <= FAST_STACK;
		fc->nloops = b.maxloops;
		fc->nops = b.n;
		memcpy(fc->op, b.v, (size_t)b.n * sizeof *b.v);
		free(b.v);
		e->code = fc;
	}
	return e->code;
}
