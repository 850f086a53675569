/*
 * vm.c - the fast path's virtual machine: runs the programs fastcode.c
 * compiles (see "the fast path" in eval_int.h), with threaded dispatch
 * under GCC and Clang and a switch elsewhere.
 *
 * Pipeline position: part of the evaluator; eval.c runs every block and
 * fast expression through vm_run, and vm_run hands back to the tree
 * walker (ex, ev_cond, ev_range_bounds, ev_for_coll) whatever a program
 * does not do itself or gives up on.  It is the evaluator's hottest
 * loop: the helpers it shares with the walker (step, xfer_emit, ...) are
 * static inline in eval_int.h so that they stay inlined here.
 */
#include <stdint.h>

#include "eval_int.h"
#include "value.h"

/* The state of one compiled for loop. */
typedef struct {
	int64_t next, hi;     /* over a range */
	value coll;           /* over a collection: a list (sets and maps are
				 iterated over a snapshot, as the tree walker does) */
	int i;
} fast_loop;

/* The address of *p's element x, or NULL: there is none. */
static inline value *f_elem(value *p, int64_t x)
{
	if (p->t == V_LIST)
		return x >= 0 && x < v_list(*p)->n ? &v_list(*p)->v[x] : NULL;
	if (p->t == V_MAP)
		return v_map_get(v_map(*p), v_int(x));
	return NULL;
}

/* Statement op `at` of fc (S_SETL .. S_XFERL) gave up once more; at
 * FAST_MISSES, demote the statement: from then on its first op runs it on
 * the walker and skips the rest of its code.  Apart from vm_run, whose
 * registers its hot ops need. */
static __attribute__((noinline)) void f_miss(struct fast_code *fc, int at, const void *lab)
{
	fast_op *o = &fc->op[at];
	if (++o->misses != FAST_MISSES)
		return;
	fast_op *first = &fc->op[o->to];
	*first = (fast_op){ .op = S_EXECJ, .s = o->s, .to = at + 1, .lab = lab };
}

int vm_run(ctx *c, inst *in, value *fr, struct fast_code *fc, int64_t *out)
{
	union { int64_t i; value *p; } st[FAST_STACK], *sp = st;
	fast_loop loop[FAST_LOOPS];
	const fast_op *ops = fc->op, *o = ops;
	value *p, v;
	vlist *l;
	int64_t x, y;
	int_result r;
	int f = FLOW_NEXT, t;
	for (int i = 0; i < fc->nloops; i++)
		loop[i].coll = V_NILV;

	/* Dispatch: with GCC and Clang every op ends in an indirect jump of
	 * its own to its successor's label address, which the op holds
	 * (cheaper than a switch, and the branch predictor learns what
	 * follows each kind of op); elsewhere, a switch. */
#ifdef __GNUC__
#define F_LABEL(name) &&L_##name,
	static const void *const labels[] = { F_OPS(F_LABEL) };
#undef F_LABEL
	if (!fc->threaded) {
		for (int i = 0; i < fc->nops; i++)
			fc->op[i].lab = labels[fc->op[i].op];
		fc->threaded = true;
	}
#define CASE(name) L_##name
#define DISPATCH() goto *o->lab
#define EXECJ_LABEL labels[S_EXECJ]
#else
#define EXECJ_LABEL NULL
#define CASE(name) case name
#define DISPATCH() goto dispatch
#endif
#define NEXT() do { o++; DISPATCH(); } while (0)
#define JUMP(to) do { o = ops + (to); DISPATCH(); } while (0)
	/* a consumer counts its statement's step once nothing can make it
	 * give up any more */
#define COUNT(at) do { if (c->failed || !step(c, (at))) { f = FLOW_ERROR; goto done; } } while (0)

#ifdef __GNUC__
	DISPATCH();
	{
#else
dispatch:
	switch (o->op) {
#endif
	CASE(F_K): (sp++)->i = o->k; NEXT();
	CASE(F_N): (sp++)->i = in->n; NEXT();
	CASE(F_LOCAL):
		if (fr[o->arg].t != V_INT)
			goto giveup;
		(sp++)->i = fr[o->arg].i;
		NEXT();
	CASE(F_PLACE): (sp++)->p = &fr[o->arg]; NEXT();
	CASE(F_INDEX_K):
		x = o->k;
		goto index;
	CASE(F_INDEX_L):
		if (fr[o->arg].t != V_INT)
			goto giveup;
		x = fr[o->arg].i;
		goto index;
	CASE(F_INDEX):
		x = (--sp)->i;
	index:
		p = sp[-1].p;
	element:   /* replace the top with the address of *p's element x */
		if (!(p = f_elem(p, x)))
			goto giveup;
		sp[-1].p = p;
		NEXT();
	CASE(F_LINDEX):
		x = sp[-1].i;
		p = &fr[o->arg];
		goto element;
	CASE(F_LINDEX_L):
		if (fr[o->k].t != V_INT)
			goto giveup;
		x = fr[o->k].i;
		p = &fr[o->arg];
		sp++;
		goto element;
	CASE(F_LGET):
		x = sp[-1].i;
		p = &fr[o->arg];
		goto get;
	CASE(F_LGET_L):
		if (fr[o->k].t != V_INT)
			goto giveup;
		x = fr[o->k].i;
		p = &fr[o->arg];
		sp++;
	get:   /* *p's element x, an int */
		p = f_elem(p, x);
		if (!p || p->t != V_INT)
			goto giveup;
		sp[-1].i = p->i;
		NEXT();
	CASE(F_GET):
		p = sp[-1].p;
		if (p->t != V_INT)
			goto giveup;
		sp[-1].i = p->i;
		NEXT();
	CASE(F_LEN):
		p = sp[-1].p;
		if (p->t == V_LIST || p->t == V_SET)
			sp[-1].i = v_list(*p)->n;
		else if (p->t == V_MAP)
			sp[-1].i = v_map(*p)->n;
		else if (p->t == V_STR)
			sp[-1].i = v_strobj(*p)->len;
		else
			goto giveup;
		NEXT();
	CASE(F_NEG):
		if (sp[-1].i == INT64_MIN)
			goto giveup;
		sp[-1].i = -sp[-1].i;
		NEXT();
	CASE(F_NOT): sp[-1].i = !sp[-1].i; NEXT();
	CASE(F_AND):
		if (!sp[-1].i)
			o += o->arg;
		else
			sp--;
		NEXT();
	CASE(F_OR):
		if (sp[-1].i)
			o += o->arg;
		else
			sp--;
		NEXT();
	CASE(F_GIVEUP):
		goto giveup;
	CASE(F_END):
		if (out)
			*out = sp[-1].i;
		goto done;

	CASE(S_SETL):
		COUNT(o->s);
		v_unref(fr[o->arg]);
		fr[o->arg] = o->k ? v_bool(sp[-1].i != 0) : v_int(sp[-1].i);
		sp--;
		NEXT();
	CASE(S_UPDL):
		p = &fr[o->arg];
		y = (--sp)->i;
		goto update;
	CASE(S_UPDP):
		y = (--sp)->i;
		p = (--sp)->p;
	update:
		if (p->t != V_INT)
			goto giveup;
		x = p->i;
		switch (o->k) {
		case OP_ADD: if (__builtin_add_overflow(x, y, &x)) goto giveup; break;
		case OP_SUB: if (__builtin_sub_overflow(x, y, &x)) goto giveup; break;
		case OP_MUL: if (__builtin_mul_overflow(x, y, &x)) goto giveup; break;
		case OP_DIV: case OP_MOD:
			if (y == 0 || (x == INT64_MIN && y == -1))
				goto giveup;
			x = o->k == OP_DIV ? floordiv(x, y) : floormod(x, y);
			break;
		default:   /* OP_SET (an element) */
			x = y;
			break;
		}
		COUNT(o->s);
		p->i = x;
		NEXT();
	CASE(S_COPYL):
		COUNT(o->s);
		v = v_ref(*(--sp)->p);
		v_unref(fr[o->arg]);
		fr[o->arg] = v;
		NEXT();
	CASE(S_COPYP):
		if (v_iscont(*sp[-1].p))   /* into an element: the walker checks for a cycle */
			goto giveup;
		COUNT(o->s);
		v = v_ref(*(--sp)->p);
		p = (--sp)->p;
		v_unref(*p);
		*p = v;
		NEXT();
	CASE(S_PUSH):
		x = (--sp)->i;
		p = (--sp)->p;
		if (p->t != V_LIST)
			goto giveup;
		COUNT(o->s);
		v_push(v_list(*p), o->k ? v_bool(x != 0) : v_int(x));
		NEXT();
	CASE(S_PUSHV):
		v = *sp[-1].p;
		p = sp[-2].p;
		if (p->t != V_LIST || v_iscont(v))   /* a container: the walker checks for a cycle */
			goto giveup;
		COUNT(o->s);
		sp -= 2;
		v_push(v_list(*p), v_ref(v));
		NEXT();
	CASE(S_PUSHL):
		p = &fr[o->arg];
		if (p->t != V_LIST || v_iscont(fr[o->k]))
			goto giveup;
		COUNT(o->s);
		v_push(v_list(*p), v_ref(fr[o->k]));
		NEXT();
	CASE(S_XFER):
		COUNT(o->s);
		sp -= 3;
		if (xfer_emit(c, in, o->s, sp[0].i, sp[1].i, sp[2].i) != FLOW_NEXT) {
			f = FLOW_ERROR;
			goto done;
		}
		NEXT();
	CASE(S_XFERL):
		if (fr[o->arg].t != V_INT || fr[o->l[0]].t != V_INT || fr[o->l[1]].t != V_INT)
			goto giveup;
		COUNT(o->s);
		if (xfer_emit(c, in, o->s, fr[o->arg].i, fr[o->l[0]].i, fr[o->l[1]].i) != FLOW_NEXT) {
			f = FLOW_ERROR;
			goto done;
		}
		NEXT();
	CASE(S_JZ):
		t = (--sp)->i != 0;
	jump_if_false:
		if (o->count)
			COUNT(o->s);
		if (!t)
			JUMP(o->to);
		NEXT();
	CASE(S_RINIT):
		sp -= 2;
		loop[o->k].next = sp[0].i;
		loop[o->k].hi = sp[1].i;
		NEXT();
	CASE(S_EXEC):
		f = ex(c, in, fr, o->s);
		if (f == FLOW_NEXT)
			NEXT();
		if (f == FLOW_BREAK && o->arg >= 0) {
			f = FLOW_NEXT;
			JUMP(o->arg);
		}
		if (f == FLOW_CONTINUE && o->k >= 0) {
			f = FLOW_NEXT;
			JUMP(o->k);
		}
		goto done;
	CASE(S_EXECJ):
		if ((f = ex(c, in, fr, o->s)) != FLOW_NEXT)
			goto done;
		JUMP(o->to);
	CASE(S_STEP):
		COUNT(o->s);
		NEXT();
	CASE(S_JMP):
		JUMP(o->arg);
	CASE(S_RNEXT):
		if (loop[o->k].next > loop[o->k].hi)
			JUMP(o->arg);
		v_unref(fr[o->s->slot]);
		fr[o->s->slot] = v_int(loop[o->k].next++);
		if (!step(c, o->s->b)) {
			f = FLOW_ERROR;
			goto done;
		}
		NEXT();
	CASE(S_RLOOP):
		if (loop[o->k].next > loop[o->k].hi)
			NEXT();
		v_unref(fr[o->s->slot]);
		fr[o->s->slot] = v_int(loop[o->k].next++);
		if (!step(c, o->s->b)) {
			f = FLOW_ERROR;
			goto done;
		}
		JUMP(o->arg);
	CASE(S_COLL): {
		/* into a local, not &loop[o->k].coll: a pointer into loop[]
		 * passed to another file would make the compiler assume that
		 * every call (v_unref's v_free) may change loop[] */
		value coll;
		if ((f = ev_for_coll(c, in, fr, o->s, &coll)) != FLOW_NEXT)
			goto done;
		loop[o->k].coll = coll;
		loop[o->k].i = 0;
		NEXT();
	}
	CASE(S_CNEXT):
		l = v_list(loop[o->k].coll);
		if (loop[o->k].i >= l->n)
			JUMP(o->arg);
		v_unref(fr[o->s->slot]);
		fr[o->s->slot] = v_ref(l->v[loop[o->k].i++]);
		if (!step(c, o->s->b)) {
			f = FLOW_ERROR;
			goto done;
		}
		NEXT();
	CASE(S_CLOOP):
		l = v_list(loop[o->k].coll);
		if (loop[o->k].i >= l->n)
			NEXT();
		v_unref(fr[o->s->slot]);
		fr[o->s->slot] = v_ref(l->v[loop[o->k].i++]);
		if (!step(c, o->s->b)) {
			f = FLOW_ERROR;
			goto done;
		}
		JUMP(o->arg);
	CASE(S_CEND):
		v_unref(loop[o->k].coll);
		loop[o->k].coll = V_NILV;
		NEXT();

	/* binary operators: fetch the operands by mode (the left one onto the
	 * stack, the right one into y), then apply */
#define F_BINOP_CASES(name) \
	CASE(F_##name): y = (--sp)->i; goto do_##name; \
	CASE(F_##name##_K): y = o->k; goto do_##name; \
	CASE(F_##name##_L): \
		if (fr[o->arg].t != V_INT) \
			goto giveup; \
		y = fr[o->arg].i; \
		goto do_##name; \
	CASE(F_##name##_N): y = in->n; goto do_##name; \
	CASE(F_##name##_LK): y = o->k; goto left_##name; \
	CASE(F_##name##_LL): \
		if (fr[o->k].t != V_INT) \
			goto giveup; \
		y = fr[o->k].i; \
		goto left_##name; \
	CASE(F_##name##_LN): \
		y = in->n; \
	left_##name: \
		if (fr[o->arg].t != V_INT) \
			goto giveup; \
		(sp++)->i = fr[o->arg].i; \
		goto do_##name;
	F_BINOPS(F_BINOP_CASES)
	F_JCMPS(F_BINOP_CASES)
#undef F_BINOP_CASES
#ifndef __GNUC__
	default:   /* the compiler emits no other opcode */
		goto giveup;
#endif
	}
	/* left operand (the top of the stack) op y */
do_ADD: if (__builtin_add_overflow(sp[-1].i, y, &sp[-1].i)) goto giveup; NEXT();
do_SUB: if (__builtin_sub_overflow(sp[-1].i, y, &sp[-1].i)) goto giveup; NEXT();
do_MUL: if (__builtin_mul_overflow(sp[-1].i, y, &sp[-1].i)) goto giveup; NEXT();
do_DIV:
	x = sp[-1].i;
	if (y == 0 || (x == INT64_MIN && y == -1))
		goto giveup;
	sp[-1].i = floordiv(x, y);
	NEXT();
do_MOD:
	x = sp[-1].i;
	if (y == 0 || (x == INT64_MIN && y == -1))
		goto giveup;
	sp[-1].i = floormod(x, y);
	NEXT();
do_EQ: sp[-1].i = sp[-1].i == y; NEXT();
do_NE: sp[-1].i = sp[-1].i != y; NEXT();
do_LT: sp[-1].i = sp[-1].i < y; NEXT();
do_LE: sp[-1].i = sp[-1].i <= y; NEXT();
do_GT: sp[-1].i = sp[-1].i > y; NEXT();
do_GE: sp[-1].i = sp[-1].i >= y; NEXT();
do_BOR: sp[-1].i |= y; NEXT();
do_BAND: sp[-1].i &= y; NEXT();
do_BXOR: sp[-1].i ^= y; NEXT();
	/* shifts and powers: the rules of eval_int.h's int_shl, int_shr,
	 * int_pow, which return their result rather than store it */
do_SHL: r = int_shl(sp[-1].i, y); goto int_result;
do_SHR: r = int_shr(sp[-1].i, y); goto int_result;
do_POW: r = int_pow(sp[-1].i, y);
int_result:
	if (!r.ok)
		goto giveup;
	sp[-1].i = r.v;
	NEXT();
	/* compare-and-jump: pop the left operand, then as S_JZ */
do_JEQ: t = (--sp)->i == y; goto jump_if_false;
do_JNE: t = (--sp)->i != y; goto jump_if_false;
do_JLT: t = (--sp)->i < y; goto jump_if_false;
do_JLE: t = (--sp)->i <= y; goto jump_if_false;
do_JGT: t = (--sp)->i > y; goto jump_if_false;
do_JGE: t = (--sp)->i >= y; goto jump_if_false;

	/* an operand gave up: nothing has happened yet, so find the op that
	 * consumes it and run what that stands for on the generic path, then
	 * go on after it */
giveup:
	for (t = 0;; o++) {   /* t: the step of an if is still to count */
		if (f_cond_op(o->op)) {
			t |= o->count;
			if (o->last)
				break;
		} else if (o->op >= S_SETL && o->op <= S_RINIT) {
			break;
		} else if (o->op == F_END) {
			f = FLOW_GIVEUP;   /* an expression program */
			goto done;
		}
	}
	sp = st;
	if (f_cond_op(o->op)) {
		if (t)
			COUNT(o->s);
		t = ev_cond(c, in, fr, o->s->a, o->s->kind == A_IF ? "'if' condition" : "'while' condition");
		if (t < 0) {
			f = FLOW_ERROR;
			goto done;
		}
		if (!t)
			JUMP(o->to);
	} else if (o->op == S_RINIT) {
		int64_t lo, hi;   /* locals for the reason S_COLL gives */
		f = ev_range_bounds(c, in, fr, o->s->a, &lo, &hi);
		if (f != FLOW_NEXT)
			goto done;
		loop[o->k].next = lo;
		loop[o->k].hi = hi;
	} else {
		if (o->to >= 0)
			f_miss(fc, (int)(o - ops), EXECJ_LABEL);
		if ((f = ex(c, in, fr, o->s)) != FLOW_NEXT)
			goto done;
	}
	NEXT();
#undef CASE
#undef DISPATCH
#undef EXECJ_LABEL
#undef NEXT
#undef JUMP
#undef COUNT
done:
	for (int i = 0; i < fc->nloops; i++)
		v_unref(loop[i].coll);
	return f;
}
