/*
 * eval.c - the evaluator: algorithm + n -> schedule IR.
 *
 * Pipeline position: resolved AST -> (this file) -> ir_sched -> verify.
 * A tree walker, except that blocks and int / bool expressions are
 * compiled on first use (fastcode.c) into flat programs that fall back on
 * the walker for everything they do not cover (see "the fast path" in
 * eval_int.h).
 * Variables live in per-call frames indexed by the slots resolve.c
 * assigned.  Transfers are appended to the IR as they execute.  Builtin
 * calls, the state queries among them, are builtins.c's.  Composition
 * (`run`) evaluates another algorithm in a child instance whose rank and
 * chunk maps translate into the top-level schedule's numbering (a child's
 * chunk may stand for a block of chunks).  Parallel composition
 * (`parallel { run ...; run ...; }`) evaluates its runs one after the
 * other, each appending its rounds, and then interleaves those rounds
 * (ir_interleave): their rank groups are disjoint, so no run reads or
 * writes what another writes, and the order in which they were evaluated
 * (which the state queries saw) cannot differ from the interleaved one.
 *
 * Error handling: the first error is printed (with a note naming the
 * algorithm and n), sets `failed`, and every evaluation function returns
 * promptly from then on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_int.h"
#include "state.h"
#include "value.h"
#include "xalloc.h"

#define MAX_DEPTH 1000
#define MAX_RANGE 100000000LL

void ev_fail(ctx *c, srcpos p, const char *fmt, ...)
{
	if (c->failed)
		return;
	c->failed = true;
	va_list ap;
	va_start(ap, fmt);
	diag_verror(p, fmt, ap);
	va_end(ap);
	diag_note(c->s->pos, "while evaluating algorithm '%s' for n = %d", c->s->algo, c->s->n);
}

/* "an int", "a list": the type with its article, for messages. */
static const char *a_tname(value v)
{
	static const char *const with_article[] = { "nothing", "an int", "a bool", "a string", "a list", "a set", "a map" };
	return with_article[v.t];
}

static value ev(ctx *c, inst *in, value *fr, ast *e);
static int block(ctx *c, inst *in, value *fr, ast *b);
void ev_limit(ctx *c, srcpos p)
{
	c->opts->limit = true;
	if (c->mem_over)
		ev_fail(c, p, "memory budget exceeded (%zu MiB in use; raise it with --max-memory)", mem_used >> 20);
	else
		ev_fail(c, p, "step limit exceeded (%lld steps); is there a runaway loop? (raise it with --max-steps)",
		        c->max_steps);
}

/* The evaluation running, for the memory budget's hook (one at a time). */
static ctx *running;

/* Crossing the budget (xalloc.h) stops the evaluation at its next step. */
static void over_budget(void)
{
	if (running && !running->mem_over) {
		running->mem_over = true;
		running->max_steps = running->steps;
	}
}

/* A value of `bytes` about to be built at e: within the budget, or an
 * error (before allocating anything). */
bool ev_fits(ctx *c, ast *e, size_t bytes)
{
	if (mem_fits(bytes))
		return true;
	c->opts->limit = true;
	ev_fail(c, e->pos, "memory budget exceeded: this needs %zu MiB more, %zu MiB are in use (raise it with "
	        "--max-memory)", bytes >> 20, mem_used >> 20);
	return false;
}

static void run_inst(ctx *c, inst *in);

/* ---- arithmetic ---------------------------------------------------------- */

static const char *opname(int op)
{
	static const char *names[] = {
		[OP_NEG] = "-", [OP_NOT] = "not", [OP_ADD] = "+", [OP_SUB] = "-", [OP_MUL] = "*",
		[OP_DIV] = "/", [OP_MOD] = "%", [OP_EQ] = "==", [OP_NE] = "!=", [OP_LT] = "<",
		[OP_LE] = "<=", [OP_GT] = ">", [OP_GE] = ">=", [OP_IN] = "in", [OP_NOTIN] = "not in",
		[OP_UNION] = "|", [OP_INTER] = "&", [OP_XOR] = "^", [OP_SHL] = "<<", [OP_SHR] = ">>",
		[OP_POW] = "**",
	};
	return names[op];
}

static bool member(value coll, value x, bool *ok)
{
	*ok = true;
	switch (coll.t) {
	case V_LIST:
		for (int i = 0; i < v_list(coll)->n; i++)
			if (v_eq(v_list(coll)->v[i], x))
				return true;
		return false;
	case V_SET:
		return v_set_find(v_list(coll), x) >= 0;
	case V_MAP:
		return v_map_get(v_map(coll), x) != NULL;
	default:
		*ok = false;
		return false;
	}
}

/* Apply a binary operator; consumes neither operand. */
static value binop(ctx *c, ast *e, int op, value a, value b)
{
	int64_t r;
	if (a.t == V_INT && b.t == V_INT) {
		switch (op) {
		case OP_ADD: if (__builtin_add_overflow(a.i, b.i, &r)) goto overflow; return v_int(r);
		case OP_SUB: if (__builtin_sub_overflow(a.i, b.i, &r)) goto overflow; return v_int(r);
		case OP_MUL: if (__builtin_mul_overflow(a.i, b.i, &r)) goto overflow; return v_int(r);
		case OP_DIV: case OP_MOD:
			if (b.i == 0) {
				ev_fail(c, e->pos, "%s by zero", op == OP_DIV ? "division" : "modulo");
				return V_NILV;
			}
			if (a.i == INT64_MIN && b.i == -1)
				goto overflow;
			return v_int(op == OP_DIV ? floordiv(a.i, b.i) : floormod(a.i, b.i));
		case OP_LT: return v_bool(a.i < b.i);
		case OP_LE: return v_bool(a.i <= b.i);
		case OP_GT: return v_bool(a.i > b.i);
		case OP_GE: return v_bool(a.i >= b.i);
		case OP_UNION: return v_int(a.i | b.i);
		case OP_INTER: return v_int(a.i & b.i);
		case OP_XOR: return v_int(a.i ^ b.i);
		case OP_SHL: case OP_SHR:
			if (b.i < 0 || b.i > 63) {
				ev_fail(c, e->pos, "shift by %lld in '%s'; the amount must be in 0..63", (long long)b.i, opname(op));
				return V_NILV;
			}
			int_result sh = (op == OP_SHL ? int_shl : int_shr)(a.i, b.i);
			if (!sh.ok)
				goto overflow;
			return v_int(sh.v);
		case OP_POW:
			if (b.i < 0) {
				ev_fail(c, e->pos, "negative exponent in '**' (%lld ** %lld); ints have no fractions",
				        (long long)a.i, (long long)b.i);
				return V_NILV;
			}
			int_result pw = int_pow(a.i, b.i);
			if (!pw.ok)
				goto overflow;
			return v_int(pw.v);
		default: break;
		}
	}
	switch (op) {
	case OP_EQ: return v_bool(v_eq(a, b));
	case OP_NE: return v_bool(!v_eq(a, b));
	case OP_IN: case OP_NOTIN: {
		if (b.t == V_LIST && !steps_for(c, e, v_list(b)->n))   /* a scan; sets and maps search */
			return V_NILV;
		bool ok, m = member(b, a, &ok);
		if (ok)
			return v_bool(op == OP_IN ? m : !m);
		ev_fail(c, e->pos, "'%s' needs a list, set or map on its right, found %s", opname(op), tname(b));
		return V_NILV;
	}
	case OP_LT: case OP_LE: case OP_GT: case OP_GE:
		if (a.t == V_STR && b.t == V_STR) {
			int k = v_cmp(a, b);
			return v_bool(op == OP_LT ? k < 0 : op == OP_LE ? k <= 0 : op == OP_GT ? k > 0 : k >= 0);
		}
		break;
	case OP_ADD:
		if (a.t == V_STR && b.t == V_STR) {
			vstr *x = v_strobj(a), *y = v_strobj(b);
			if ((int64_t)x->len + y->len > V_MAX_LEN) {
				ev_fail(c, e->pos, "string too long: '+' of %d and %d characters exceeds %d", (int)x->len,
				        (int)y->len, V_MAX_LEN);
				return V_NILV;
			}
			if (!ev_fits(c, e, (size_t)x->len + (size_t)y->len) || !steps_for(c, e, (x->len + y->len) / 16))
				return V_NILV;
			return v_strcat(x, y);
		}
		if (a.t == V_LIST && b.t == V_LIST) {
			vlist *x = v_list(a), *y = v_list(b);
			if ((int64_t)x->n + y->n > V_MAX_LEN) {
				ev_fail(c, e->pos, "list too long: '+' of %d and %d elements exceeds %d", (int)x->n, (int)y->n,
				        V_MAX_LEN);
				return V_NILV;
			}
			if (!ev_fits(c, e, ((size_t)x->n + (size_t)y->n) * sizeof(value)) || !steps_for(c, e, x->n + y->n))
				return V_NILV;
			value l = v_newlist(V_LIST, x->n + y->n);
			for (int i = 0; i < x->n; i++) v_push(v_list(l), v_ref(x->v[i]));
			for (int i = 0; i < y->n; i++) v_push(v_list(l), v_ref(y->v[i]));
			return l;
		}
		break;
	case OP_SUB: case OP_UNION: case OP_INTER: case OP_XOR:
		if (a.t == V_SET && b.t == V_SET) {
			size_t na = (size_t)v_list(a)->n, nb = (size_t)v_list(b)->n;
			bool grows = op == OP_UNION || op == OP_XOR;
			if (!ev_fits(c, e, (grows ? 2 * (na + nb) : na) * sizeof(value)) || !steps_for(c, e, (long long)(na + nb)))
				return V_NILV;
			if (op == OP_XOR) {   /* symmetric difference: (a - b) | (b - a) */
				value x = v_set_diff(v_list(a), v_list(b)), y = v_set_diff(v_list(b), v_list(a));
				value r = v_set_union(v_list(x), v_list(y));
				v_unref(x);
				v_unref(y);
				return r;
			}
			return op == OP_SUB ? v_set_diff(v_list(a), v_list(b))
			     : op == OP_UNION ? v_set_union(v_list(a), v_list(b)) : v_set_inter(v_list(a), v_list(b));
		}
		break;
	}
	ev_fail(c, e->pos, "operator '%s' cannot combine %s and %s", opname(op), tname(a), tname(b));
	return V_NILV;
overflow:
	ev_fail(c, e->pos, "integer overflow in '%s' (%lld %s %lld)", opname(op), (long long)a.i, opname(op),
	        (long long)b.i);
	return V_NILV;
}

/* ---- the fast path, from the walker's side ------------------------------- */

/* Expression program fc gave up (or is demoted): count it, and demote it
 * at FAST_MISSES (a set operation, most likely).  Out of line, so that
 * fast_eval stays small enough to inline. */
static __attribute__((noinline)) bool fast_missed(struct fast_code *fc)
{
	if (fc->ok && ++fc->misses == FAST_MISSES)
		fc->ok = false;
	return false;
}

/* Run fast expression e (e->fast set) into *out (a bool as 0 / 1); false
 * when the fast path gives up. */
static bool fast_eval(ctx *c, inst *in, value *fr, ast *e, int64_t *out)
{
	struct fast_code *fc = fc_code(c, e);
	if (fc->ok && vm_run(c, in, fr, fc, out) == FLOW_NEXT)
		return true;
	return fast_missed(fc);
}

/* Box a fast expression's result, or false to take the generic path. */
static bool fast_value(ctx *c, inst *in, value *fr, ast *e, value *out)
{
	int64_t x;
	if (!fast_eval(c, in, fr, e, &x))
		return false;
	*out = e->fast == FAST_BOOL ? v_bool(x != 0) : v_int(x);
	return true;
}

/* The value a local or a fast element expression (x, x[i], m[k][j]) names,
 * without touching reference counts; NULL when the element does not exist
 * or is not indexable by an int (the generic path then reports why). */
static value *peek(ctx *c, inst *in, value *fr, ast *e)
{
	if (e->kind == A_NAME)
		return &fr[e->slot];
	value *p = peek(c, in, fr, e->a);
	int64_t i;
	if (!p || !fast_eval(c, in, fr, e->b, &i))
		return NULL;
	if (p->t == V_LIST)
		return i >= 0 && i < v_list(*p)->n ? &v_list(*p)->v[i] : NULL;
	if (p->t == V_MAP)
		return v_map_get(v_map(*p), v_int(i));
	return NULL;
}

/* ---- expressions --------------------------------------------------------- */

static value call(ctx *c, inst *in, value *fr, ast *e)
{
	int na = e->list.n;
	value argv[8], *args = na <= 8 ? argv : malloc(na * sizeof *args);
	int got = 0;
	value res = V_NILV;
	for (; got < na; got++) {
		args[got] = ev(c, in, fr, e->list.v[got]);
		if (c->failed)
			goto out;
	}
	if (e->bind == B_BUILTIN) {
		res = bi_call(c, in, e, args, na);
		goto out;
	}
	ast *fn = e->target;
	if (c->depth >= MAX_DEPTH) {
		ev_fail(c, e->pos, "calls nested deeper than %d (unbounded recursion in '%s'?)", MAX_DEPTH, fn->str);
		goto out;
	}
	value *nf = calloc(fn->slot ? fn->slot : 1, sizeof *nf);
	for (int i = 0; i < na; i++) {
		nf[fn->list.v[i]->slot] = args[i];
		args[i] = V_NILV;
	}
	c->depth++;
	int flow = block(c, in, nf, fn->b);
	c->depth--;
	if (flow == FLOW_RETURN) {
		res = c->ret;
		c->ret = V_NILV;
	}
	for (int i = 0; i < fn->slot; i++)
		v_unref(nf[i]);
	free(nf);
out:
	for (int i = 0; i < got; i++)
		v_unref(args[i]);
	if (args != argv)
		free(args);
	return res;
}

static value ev(ctx *c, inst *in, value *fr, ast *e)
{
	if (c->failed)
		return V_NILV;
	value v;
	/* names and elements are cheaper on their own generic cases */
	if (e->fast && e->kind != A_NAME && e->kind != A_INDEX && e->kind != A_INT && fast_value(c, in, fr, e, &v))
		return v;
	switch (e->kind) {
	case A_INT:
		return v_int(e->ival);
	case A_BOOL:
		return v_bool(e->ival != 0);
	case A_STR:
		return v_newstr(e->str, strlen(e->str));
	case A_NAME:
		switch (e->bind) {
		case B_LOCAL:
			return v_ref(fr[e->slot]);
		case B_N:
			return v_int(in->n);
		case B_ROOT:
			if (!ir_kind_info((ir_kind)in->kind)->rooted) {
				ev_fail(c, e->pos, "'root' is only defined in %s algorithms, not in %s '%s'", ir_rooted_list(),
				        ir_kind_names[in->kind], in->algo->str);
				return V_NILV;
			}
			return v_int(in->root);
		}
		return V_NILV;
	case A_LIST: case A_SET: {
		value l = v_newlist(e->kind == A_LIST ? V_LIST : V_SET, e->list.n);
		for (int i = 0; i < e->list.n && !c->failed; i++) {
			value x = ev(c, in, fr, e->list.v[i]);
			if (c->failed) {
				v_unref(x);
				break;
			}
			if (e->kind == A_LIST) {
				v_push(v_list(l), x);
				continue;
			} else if (!is_key(x)) {
				ev_fail(c, e->list.v[i]->pos, "set elements must be ints, bools or strings, found %s", tname(x));
				v_unref(x);
			} else {
				v_set_add(v_list(l), x);
			}
		}
		if (c->failed) {
			v_unref(l);
			return V_NILV;
		}
		return l;
	}
	case A_MAP: {
		value m = v_newmap();
		for (int i = 0; i < e->list.n && !c->failed; i++) {
			value k = ev(c, in, fr, e->list.v[i]->a);
			value x = ev(c, in, fr, e->list.v[i]->b);
			if (!c->failed && !is_key(k))
				ev_fail(c, e->list.v[i]->a->pos, "map keys must be ints, bools or strings, found %s", tname(k));
			if (c->failed) {
				v_unref(k);
				v_unref(x);
				break;
			}
			v_map_set(v_map(m), k, x);
		}
		if (c->failed) {
			v_unref(m);
			return V_NILV;
		}
		return m;
	}
	case A_RANGE: {
		int64_t lo, hi;
		value a = ev(c, in, fr, e->a), b = ev(c, in, fr, e->b);
		if (c->failed || !want_int(c, a, e->a, "range start", &lo) || !want_int(c, b, e->b, "range end", &hi)) {
			v_unref(a);
			v_unref(b);
			return V_NILV;
		}
		if (hi >= lo && hi - lo >= MAX_RANGE) {
			ev_fail(c, e->pos, "range %lld .. %lld has more than %lld elements", (long long)lo, (long long)hi,
			        MAX_RANGE);
			return V_NILV;
		}
		int64_t len = hi >= lo ? hi - lo + 1 : 0;
		if (!ev_fits(c, e, (size_t)len * sizeof(value)) || !steps_for(c, e, len))
			return V_NILV;
		value l = v_newlist(V_LIST, (int)len);
		for (int64_t i = lo; i <= hi; i++)
			v_push(v_list(l), v_int(i));
		return l;
	}
	case A_UNOP: {
		value a = ev(c, in, fr, e->a);
		if (c->failed)
			return V_NILV;
		if (e->op == OP_NOT) {
			bool t = want_bool(c, a, e->a, "operand of 'not'");
			v_unref(a);
			return c->failed ? V_NILV : v_bool(!t);
		}
		int64_t x;
		if (!want_int(c, a, e->a, "operand of unary '-'", &x)) {
			v_unref(a);
			return V_NILV;
		}
		if (x == INT64_MIN) {
			ev_fail(c, e->pos, "integer overflow in unary '-'");
			return V_NILV;
		}
		return v_int(-x);
	}
	case A_AND: case A_OR: {
		value a = ev(c, in, fr, e->a);
		bool x = !c->failed && want_bool(c, a, e->a, e->kind == A_AND ? "operand of 'and'" : "operand of 'or'");
		v_unref(a);
		if (c->failed || x == (e->kind == A_OR))
			return v_bool(x);
		value b = ev(c, in, fr, e->b);
		bool y = !c->failed && want_bool(c, b, e->b, e->kind == A_AND ? "operand of 'and'" : "operand of 'or'");
		v_unref(b);
		return v_bool(y);
	}
	case A_BINOP: {
		value a = ev(c, in, fr, e->a);
		value b = ev(c, in, fr, e->b);
		value r = c->failed ? V_NILV : binop(c, e, e->op, a, b);
		v_unref(a);
		v_unref(b);
		return r;
	}
	case A_CALL:
		return call(c, in, fr, e);
	case A_INDEX: {
		value *p = e->fast ? peek(c, in, fr, e) : NULL;
		if (p)
			return v_ref(*p);
		value a = ev(c, in, fr, e->a);
		value i = ev(c, in, fr, e->b);
		value r = V_NILV;
		if (c->failed)
			goto done;
		if (a.t == V_LIST) {
			int64_t k;
			if (!want_int(c, i, e->b, "list index", &k))
				goto done;
			if (k < 0 || k >= v_list(a)->n) {
				ev_fail(c, e->pos, "index %lld out of range for a list of length %d", (long long)k, v_list(a)->n);
				goto done;
			}
			r = v_ref(v_list(a)->v[k]);
		} else if (a.t == V_MAP) {
			value *p = v_map_get(v_map(a), i);
			if (!p) {
				char *s = v_repr(i, 60);
				ev_fail(c, e->pos, "key %s not in map (test with 'in' first)", s);
				free(s);
				goto done;
			}
			r = v_ref(*p);
		} else {
			ev_fail(c, e->pos, "cannot index %s; only lists and maps can be indexed", a_tname(a));
		}
	done:
		v_unref(a);
		v_unref(i);
		return r;
	}
	default:
		break;
	}
	ev_fail(c, e->pos, "internal error: unexpected node %d in an expression", e->kind);
	return V_NILV;
}

/* ---- statements ---------------------------------------------------------- */

/* An if / while / require condition: 1 or 0, or -1 after an error. */
int ev_cond(ctx *c, inst *in, value *fr, ast *e, const char *what)
{
	int64_t x;
	if (e->fast == FAST_BOOL && fast_eval(c, in, fr, e, &x))
		return x != 0;
	value v = ev(c, in, fr, e);
	bool t = !c->failed && want_bool(c, v, e, what);
	v_unref(v);
	return c->failed ? -1 : t;
}

/* x = e and x op= e where x is a local or an existing element and e an
 * int the fast path computes: done in place, without evaluating the
 * target's container and key as values.  False: take the generic path
 * (which also reports any error). */
static bool assign_fast(ctx *c, inst *in, value *fr, ast *s)
{
	int64_t x, y;
	if (s->b->fast != FAST_INT || (s->a->kind != A_NAME && !s->a->fast))
		return false;
	value *slot = s->a->kind == A_NAME ? &fr[s->a->slot] : peek(c, in, fr, s->a);
	if (!slot || (s->op != OP_SET && slot->t != V_INT) || !fast_eval(c, in, fr, s->b, &y))
		return false;
	x = slot->i;
	switch (s->op) {
	case OP_SET: x = y; break;
	case OP_ADD: if (__builtin_add_overflow(x, y, &x)) return false; break;
	case OP_SUB: if (__builtin_sub_overflow(x, y, &x)) return false; break;
	case OP_MUL: if (__builtin_mul_overflow(x, y, &x)) return false; break;
	case OP_DIV: case OP_MOD:
		if (y == 0 || (x == INT64_MIN && y == -1))
			return false;
		x = s->op == OP_DIV ? floordiv(x, y) : floormod(x, y);
		break;
	default:
		return false;
	}
	v_unref(*slot);
	*slot = v_int(x);
	return true;
}

static int assign(ctx *c, inst *in, value *fr, ast *s)
{
	if (assign_fast(c, in, fr, s))
		return FLOW_NEXT;
	value x = ev(c, in, fr, s->b);
	if (c->failed)
		return FLOW_ERROR;
	value *slot = NULL, cont = V_NILV, key = V_NILV;
	if (s->a->kind == A_NAME) {
		slot = &fr[s->a->slot];
	} else {
		cont = ev(c, in, fr, s->a->a);
		key = ev(c, in, fr, s->a->b);
		if (c->failed)
			goto out;
		if (cont.t == V_LIST) {
			int64_t k;
			if (!want_int(c, key, s->a->b, "list index", &k))
				goto out;
			if (k < 0 || k >= v_list(cont)->n) {
				ev_fail(c, s->a->pos, "index %lld out of range for a list of length %d", (long long)k,
				        v_list(cont)->n);
				goto out;
			}
			slot = &v_list(cont)->v[k];
		} else if (cont.t == V_MAP) {
			if (!is_key(key)) {
				ev_fail(c, s->a->b->pos, "map keys must be ints, bools or strings, found %s", tname(key));
				goto out;
			}
			slot = v_map_get(v_map(cont), key);
			if (!slot) {
				if (s->op != OP_SET) {
					char *t = v_repr(key, 60);
					ev_fail(c, s->a->pos, "key %s not in map", t);
					free(t);
					goto out;
				}
				if (v_would_cycle(cont, x)) {
					ev_fail(c, s->pos, "this would make the map contain itself; values are shared by "
					        "reference, so store a copy");
					goto out;
				}
				v_map_set(v_map(cont), v_ref(key), x);
				x = V_NILV;
				goto out;
			}
		} else {
			ev_fail(c, s->a->pos, "cannot assign into %s; only lists and maps have elements", a_tname(cont));
			goto out;
		}
	}
	if (s->op != OP_SET) {
		value r = binop(c, s, s->op, *slot, x);
		v_unref(x);
		x = r;
		if (c->failed)
			goto out;
	}
	if (v_iscont(cont)) {   /* into an element: no cycles (value.h) */
		if (v_would_cycle(cont, x)) {
			ev_fail(c, s->pos, "this would make the %s contain itself; values are shared by reference, so "
			        "store a copy", cont.t == V_MAP ? "map" : "list");
			goto out;
		}
		v_note_store(cont, x);
	}
	v_unref(*slot);
	*slot = x;
	x = V_NILV;
out:
	v_unref(x);
	v_unref(cont);
	v_unref(key);
	return c->failed ? FLOW_ERROR : FLOW_NEXT;
}

/* Run a loop body once; maps the body's flow to the loop's. */
static int body(ctx *c, inst *in, value *fr, ast *b, bool *stop)
{
	int f = step(c, b) ? block(c, in, fr, b) : FLOW_ERROR;
	*stop = f == FLOW_BREAK || f == FLOW_RETURN || f == FLOW_ERROR;
	return f == FLOW_BREAK || f == FLOW_CONTINUE ? FLOW_NEXT : f;
}

/* The bounds of range r (lo .. hi) as ints. */
int ev_range_bounds(ctx *c, inst *in, value *fr, ast *r, int64_t *lo, int64_t *hi)
{
	value a = ev(c, in, fr, r->a), b = ev(c, in, fr, r->b);
	bool ok = !c->failed && want_int(c, a, r->a, "range start", lo) && want_int(c, b, r->b, "range end", hi);
	v_unref(a);
	v_unref(b);
	return ok ? FLOW_NEXT : FLOW_ERROR;
}

/* What `for` loop s iterates over (other than a range), into *out as a
 * list: a list itself, iterated live like Python (elements pushed during
 * the loop are visited); for a set or a map (its keys) a snapshot, so the
 * body may add to or remove from it. */
int ev_for_coll(ctx *c, inst *in, value *fr, ast *s, value *out)
{
	value coll = ev(c, in, fr, s->a);
	if (c->failed)
		return FLOW_ERROR;
	if (coll.t == V_LIST) {
		*out = coll;
		return FLOW_NEXT;
	}
	if (coll.t != V_SET && coll.t != V_MAP) {
		ev_fail(c, s->a->pos, "'for' needs a range, list, set or map, found %s", tname(coll));
		v_unref(coll);
		return FLOW_ERROR;
	}
	vlist *l = coll.t == V_SET ? v_list(coll) : NULL;
	int n = l ? l->n : v_map(coll)->n;
	value snap = v_newlist(V_LIST, n);
	for (int i = 0; i < n; i++)
		v_push(v_list(snap), v_ref(l ? l->v[i] : v_map(coll)->k[i]));
	v_unref(coll);
	*out = snap;
	return FLOW_NEXT;
}

static int for_loop(ctx *c, inst *in, value *fr, ast *s)
{
	value *var = &fr[s->slot];
	bool stop = false;
	int f = FLOW_NEXT;
	if (s->a->kind == A_RANGE) {
		/* counted loop without materialising the list */
		int64_t lo, hi;
		if (ev_range_bounds(c, in, fr, s->a, &lo, &hi) != FLOW_NEXT)
			return FLOW_ERROR;
		for (int64_t i = lo; i <= hi && !stop; i++) {
			v_unref(*var);
			*var = v_int(i);
			f = body(c, in, fr, s->b, &stop);
		}
		return f;
	}
	value coll;
	if (ev_for_coll(c, in, fr, s, &coll) != FLOW_NEXT)
		return FLOW_ERROR;
	for (int i = 0; i < v_list(coll)->n && !stop; i++) {
		v_unref(*var);
		*var = v_ref(v_list(coll)->v[i]);
		f = body(c, in, fr, s->b, &stop);
	}
	v_unref(coll);
	return f;
}

/* Evaluate an int-valued expression into *out; false on error. */
static bool int_of(ctx *c, inst *in, value *fr, ast *e, const char *what, int64_t *out)
{
	if (c->failed)
		return false;
	/* plain int locals (most transfer operands) need no program at all */
	if (e->kind == A_NAME && e->bind == B_LOCAL && fr[e->slot].t == V_INT) {
		*out = fr[e->slot].i;
		return true;
	}
	if (e->fast == FAST_INT && fast_eval(c, in, fr, e, out))
		return true;
	value v = ev(c, in, fr, e);
	bool ok = !c->failed && want_int(c, v, e, what, out);
	v_unref(v);
	return ok;
}

static int xfer(ctx *c, inst *in, value *fr, ast *s)
{
	int64_t ch, a, b;
	if (!int_of(c, in, fr, s->a, "chunk", &ch) || !int_of(c, in, fr, s->b, "source rank", &a) ||
	    !int_of(c, in, fr, s->c, "destination rank", &b))
		return FLOW_ERROR;
	return xfer_emit(c, in, s, ch, a, b);
}

/* A list (or set) of distinct ints in 0..lim-1, for `run ... on/chunks`. */
static int *index_list(ctx *c, inst *in, value *fr, ast *e, int lim, const char *what, int *len)
{
	value v = ev(c, in, fr, e);
	if (c->failed)
		return NULL;
	if (v.t != V_LIST && v.t != V_SET) {
		ev_fail(c, e->pos, "'run ... %s' needs a list of %s, found %s", what, what, tname(v));
		v_unref(v);
		return NULL;
	}
	vlist *l = v_list(v);
	int *out = malloc((l->n + 1) * sizeof *out);
	char *seen = calloc(lim + 1, 1);
	for (int i = 0; i < l->n; i++) {
		value x = l->v[i];
		if (x.t != V_INT || x.i < 0 || x.i >= lim || seen[x.i]) {
			char *t = v_repr(x, 40);
			ev_fail(c, e->pos, "'run ... %s': element %d is %s; expected distinct %s in 0..%d", what, i, t, what,
			        lim - 1);
			free(t);
			free(out);
			out = NULL;
			break;
		}
		seen[x.i] = 1;
		out[i] = (int)x.i;
	}
	if (out && l->n == 0) {
		ev_fail(c, e->pos, "'run ... %s' needs at least one element", what);
		free(out);
		out = NULL;
	}
	*len = l->n;
	free(seen);
	v_unref(v);
	return out;
}

/* The top-level chunks local chunk ch of `in` stands for: *len of them
 * from the returned array, or ch itself in *one. */
static const int *chunk_block(const inst *in, int ch, int *one, int *len)
{
	if (in->coff) {
		*len = in->coff[ch + 1] - in->coff[ch];
		return in->cmap + in->coff[ch];
	}
	*one = in->cmap ? in->cmap[ch] : ch;
	*len = 1;
	return one;
}

/* `run ... chunks CHUNKS`: the callee's chunk j is the caller's chunk
 * CHUNKS[j] (an int) or the block of them CHUNKS[j] (a list or set of
 * ints); no caller chunk twice.  Into sub's maps in top-level chunks
 * (cmap, and coff unless every block is one chunk); false after an error. */
static bool chunk_map(ctx *c, inst *in, value *fr, ast *e, inst *sub)
{
	value v = ev(c, in, fr, e);
	if (c->failed)
		return false;
	if (v.t != V_LIST && v.t != V_SET) {
		ev_fail(c, e->pos, "'run ... chunks' needs a list of chunks (or of blocks of chunks), found %s", tname(v));
		v_unref(v);
		return false;
	}
	vlist *l = v_list(v);
	char *seen = xcalloc((size_t)in->chunks + 1, 1);
	int total = 0;   /* top-level chunks in all the blocks */
	bool blocks = false;
	for (int i = 0; i < l->n && !c->failed; i++) {
		value x = l->v[i];
		bool block = x.t == V_LIST || x.t == V_SET;
		vlist *b = block ? v_list(x) : NULL;
		blocks |= block;
		if (block && b->n == 0)
			ev_fail(c, e->pos, "'run ... chunks': block %d is empty", i);
		for (int k = 0; k < (block ? b->n : 1) && !c->failed; k++) {
			value y = block ? b->v[k] : x;
			if (y.t != V_INT || y.i < 0 || y.i >= in->chunks || seen[y.i]) {
				char *t = v_repr(y, 40);
				if (block)
					ev_fail(c, e->pos, "'run ... chunks': block %d holds %s; expected distinct chunks in 0..%d, "
					        "each in one block", i, t, in->chunks - 1);
				else
					ev_fail(c, e->pos, "'run ... chunks': element %d is %s; expected distinct chunks in 0..%d%s",
					        i, t, in->chunks - 1, blocks || y.t == V_INT ? "" : " (or lists of them: blocks)");
				free(t);
				break;
			}
			seen[y.i] = 1;
			int one, len;
			chunk_block(in, (int)y.i, &one, &len);
			total += len;
		}
	}
	if (!c->failed && l->n == 0)
		ev_fail(c, e->pos, "'run ... chunks' needs at least one element");
	free(seen);
	if (c->failed) {
		v_unref(v);
		return false;
	}
	sub->cmap = xmalloc((size_t)total * sizeof *sub->cmap + 1);
	sub->coff = xmalloc(((size_t)l->n + 1) * sizeof *sub->coff);
	sub->ncmap = l->n;
	int at = 0;
	for (int i = 0; i < l->n; i++) {
		value x = l->v[i];
		bool block = x.t == V_LIST || x.t == V_SET;
		sub->coff[i] = at;
		for (int k = 0; k < (block ? v_list(x)->n : 1); k++) {
			int one, len;
			const int *p = chunk_block(in, (int)(block ? v_list(x)->v[k] : x).i, &one, &len);
			memcpy(sub->cmap + at, p, (size_t)len * sizeof *p);
			at += len;
		}
	}
	sub->coff[l->n] = at;
	if (at == l->n) {   /* every block one chunk: a plain map */
		free(sub->coff);
		sub->coff = NULL;
	}
	v_unref(v);
	return true;
}

int ev_xfer_slow(ctx *c, inst *in, ast *s, int64_t ch, int64_t a, int64_t b)
{
	if (ch < 0 || ch >= in->chunks) {
		ev_fail(c, s->a->pos, "chunk %lld out of range: '%s' has %d chunk%s (0..%d)", (long long)ch, in->algo->str,
		        in->chunks, in->chunks == 1 ? "" : "s", in->chunks - 1);
		return FLOW_ERROR;
	}
	if (!xfer_ranks_ok(c, in, s, a, b))
		return FLOW_ERROR;
	int op = s->op ? IR_REDUCE_OP : IR_COPY, ga = in->rmap[a], gb = in->rmap[b];
	bool lone = !c->in_round;
	if (lone)
		ir_begin_round(c->s, c->phase, s->pos);
	for (int k = in->coff[ch]; k < in->coff[ch + 1]; k++) {
		ir_add(c->s, ga, gb, in->cmap[k], (ir_op)op, s->pos);
		if (s->both)
			ir_add(c->s, gb, ga, in->cmap[k], (ir_op)op, s->pos);
	}
	if (lone)
		ir_end_round(c->s);
	in->emitted = true;
	return FLOW_NEXT;
}

/* A `parallel` block being run: the runs in it so far, each a branch of
 * consecutive rounds, which the block's end interleaves. */
typedef struct par {
	inst *in;             /* the instance running the block */
	int start;            /* the schedule's round count when it began */
	int *owner;           /* the instance's rank -> the branch that runs on it, or -1 */
	struct branch { int first, end; ast *run; } *br;
	int nbr;
} par;

/* An error at p with a note at `other` before the usual one naming the
 * algorithm (ev_fail's). */
static void ev_fail_note(ctx *c, srcpos p, srcpos other, const char *note, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void ev_fail_note(ctx *c, srcpos p, srcpos other, const char *note, const char *fmt, ...)
{
	if (c->failed)
		return;
	c->failed = true;
	va_list ap;
	va_start(ap, fmt);
	diag_verror(p, fmt, ap);
	va_end(ap);
	diag_note(other, "%s", note);
	diag_note(c->s->pos, "while evaluating algorithm '%s' for n = %d", c->s->algo, c->s->n);
}

static int run_stmt(ctx *c, inst *in, value *fr, ast *s)
{
	if (c->in_round) {
		ev_fail(c, s->pos, "'run' inside a round; a composed algorithm emits its own rounds");
		return FLOW_ERROR;
	}
	int nr = 0;
	int *ranks = index_list(c, in, fr, s->a, in->n, "ranks", &nr);
	if (!ranks)
		return FLOW_ERROR;
	/* in a `parallel` of this instance: a branch, on ranks of its own */
	par *p = c->par && c->par->in == in ? c->par : NULL;
	for (int i = 0; p && i < nr; i++) {
		int b = p->owner[ranks[i]];
		if (b < 0)
			continue;
		ev_fail_note(c, s->a->pos, p->br[b].run->pos, "the earlier run is here", "'run %s' shares rank %d with an "
		             "earlier run in this 'parallel' ('run %s'); runs in parallel need disjoint ranks", s->str,
		             ranks[i], p->br[b].run->str);
		free(ranks);
		return FLOW_ERROR;
	}
	inst sub = { .algo = s->target, .kind = s->target->kindof, .n = nr, .chunks = 1, .xlim = 1,
		     .with = &s->list };
	if (s->b && !chunk_map(c, in, fr, s->b, &sub)) {
		free(ranks);
		return FLOW_ERROR;
	}
	sub.rmap = malloc(nr * sizeof *sub.rmap);
	for (int i = 0; i < nr; i++)
		sub.rmap[i] = in->rmap[ranks[i]];
	sub.rinv = malloc(c->s->n * sizeof *sub.rinv);
	for (int i = 0; i < c->s->n; i++)
		sub.rinv[i] = -1;
	for (int i = 0; i < nr; i++)
		sub.rinv[sub.rmap[i]] = i;
	if (!s->b && in->cmap) {   /* the caller's own map, as it is */
		int len = in->coff ? in->coff[in->chunks] : in->chunks;
		sub.cmap = xmalloc((size_t)len * sizeof *sub.cmap + 1);
		memcpy(sub.cmap, in->cmap, (size_t)len * sizeof *sub.cmap);
		if (in->coff) {
			sub.coff = xmalloc(((size_t)in->chunks + 1) * sizeof *sub.coff);
			memcpy(sub.coff, in->coff, ((size_t)in->chunks + 1) * sizeof *sub.coff);
		}
		sub.ncmap = in->chunks;
	} else if (!s->b) {
		sub.ncmap = in->chunks;
	}
	sub.withv = calloc(s->list.n + 1, sizeof *sub.withv);
	for (int i = 0; i < s->list.n && !c->failed; i++)
		sub.withv[i] = ev(c, in, fr, s->list.v[i]->a);
	for (int i = 0; i < s->list.n && !c->failed; i++) {
		if (strcmp(s->list.v[i]->str, "root") == 0) {
			int64_t r;
			if (want_int(c, sub.withv[i], s->list.v[i]->a, "root", &r)) {
				if (r < 0 || r >= nr)
					ev_fail(c, s->list.v[i]->a->pos, "root %lld out of range 0..%d", (long long)r, nr - 1);
				sub.root = (int)r;
			}
		}
	}
	sub.xlim = sub.coff ? 0 : sub.chunks;
	in->emitted = true;   /* the caller's chunk count is now fixed */
	int first = c->s->nrounds;
	if (!c->failed)
		run_inst(c, &sub);
	if (p && !c->failed) {
		p->br = xrealloc(p->br, ((size_t)p->nbr + 1) * sizeof *p->br);
		p->br[p->nbr] = (struct branch){ first, c->s->nrounds, s };
		for (int i = 0; i < nr; i++)
			p->owner[ranks[i]] = p->nbr;
		p->nbr++;
	}
	for (int i = 0; i < s->list.n; i++)
		v_unref(sub.withv[i]);
	free(sub.withv);
	free(sub.rmap);
	free(sub.rinv);
	free(sub.cmap);
	free(sub.coff);
	free(ranks);
	return c->failed ? FLOW_ERROR : FLOW_NEXT;
}

/* The end of a `parallel` block: every round since it began must come
 * from one of its runs, and runs must agree on the phase of each round
 * they share; then their rounds are interleaved. */
static void par_merge(ctx *c, par *p)
{
	ir_sched *S = c->s;
	int at = p->start;
	for (int b = 0; b <= p->nbr; b++) {
		int upto = b < p->nbr ? p->br[b].first : S->nrounds;
		if (at < upto) {   /* only a function call gets a transfer here (resolve.c) */
			const ir_round *rd = &S->rounds[at];
			srcpos pos = rd->count ? ir_xfer_pos(S, &S->xfers[rd->first]) : rd->pos;
			ev_fail(c, pos, "transfer inside 'parallel' (through a function call); there, rounds come only from "
			        "'run' statements (put the transfers in an algorithm and run it)");
			return;
		}
		if (b < p->nbr)
			at = p->br[b].end;
	}
	int *len = xmalloc(((size_t)p->nbr + 1) * sizeof *len), longest = 0;
	for (int b = 0; b < p->nbr; b++) {
		len[b] = p->br[b].end - p->br[b].first;
		longest = len[b] > longest ? len[b] : longest;
	}
	for (int k = 0; k < longest && !c->failed; k++) {
		int first = -1;   /* the first branch with a round k */
		for (int b = 0; b < p->nbr && !c->failed; b++) {
			if (k >= len[b])
				continue;
			if (first < 0) {
				first = b;
				continue;
			}
			int pa = S->rounds[p->br[first].first + k].phase, pb = S->rounds[p->br[b].first + k].phase;
			if (pa == pb)
				continue;
			ev_fail_note(c, p->br[b].run->pos, p->br[first].run->pos, "the earlier run is here", "round %d of "
			             "'run %s' is in phase \"%s\", but round %d of an earlier run in this 'parallel' ('run %s') "
			             "is in phase \"%s\"; runs in parallel share their rounds, so they must agree on phases", k,
			             p->br[b].run->str, S->phases[pb], k, p->br[first].run->str, S->phases[pa]);
		}
	}
	if (!c->failed && p->nbr >= 2) {
		/* the state queries may have seen these rounds in evaluation order;
		 * the order changes nothing (disjoint ranks), so bring the state to
		 * their end and count them as applied in the new order */
		bool seen = c->st && c->applied > p->start;
		while (seen && c->applied < S->nrounds)
			state_apply_round(c->st, S, c->applied++);
		ir_interleave(S, p->start, len, p->nbr);
		if (seen)
			c->applied = S->nrounds;
	}
	free(len);
}

static int parallel_stmt(ctx *c, inst *in, value *fr, ast *s)
{
	if (c->in_round) {
		ev_fail(c, s->pos, "'parallel' inside a round; the runs in it emit their own rounds");
		return FLOW_ERROR;
	}
	if (c->par && c->par->in == in) {   /* through a function call (resolve.c catches the rest) */
		ev_fail(c, s->pos, "'parallel' inside another 'parallel'; put all the runs in one");
		return FLOW_ERROR;
	}
	par p = { .in = in, .start = c->s->nrounds };
	p.owner = xmalloc((size_t)in->n * sizeof *p.owner);
	for (int i = 0; i < in->n; i++)
		p.owner[i] = -1;
	par *outer = c->par;
	c->par = &p;
	int f = block(c, in, fr, s->b);
	c->par = outer;
	if (!c->failed)
		par_merge(c, &p);
	free(p.owner);
	free(p.br);
	return c->failed ? FLOW_ERROR : f;
}

static int param(ctx *c, inst *in, value *fr, ast *s)
{
	value v = V_NILV;
	bool set = false;
	if (in->top) {
		for (int i = 0; i < c->ndefs; i++)
			if (strcmp(c->defs[i].name, s->str) == 0) {
				v = v_int(c->defs[i].value);
				set = true;
			}
	} else {
		for (int i = 0; i < in->with->n; i++)
			if (strcmp(in->with->v[i]->str, s->str) == 0) {
				v = v_ref(in->withv[i]);
				set = true;
			}
	}
	if (!set) {
		v = ev(c, in, fr, s->a);
		if (c->failed)
			return FLOW_ERROR;
	}
	v_unref(fr[s->slot]);
	fr[s->slot] = v;
	return FLOW_NEXT;
}

static int chunks_stmt(ctx *c, inst *in, value *fr, ast *s)
{
	int64_t k;
	if (!int_of(c, in, fr, s->a, "chunk count", &k))
		return FLOW_ERROR;
	if (in->emitted) {
		ev_fail(c, s->pos, "'chunks' after the first transfer; the chunk count must be fixed before any round");
		return FLOW_ERROR;
	}
	if (in->chunks_set) {   /* the reference: once, before any transfer */
		ev_fail(c, s->pos, "'chunks' a second time; the chunk count is set once");
		return FLOW_ERROR;
	}
	if (k < 1 || k > (1 << 20)) {
		ev_fail(c, s->a->pos, "chunk count %lld out of range 1..%d", (long long)k, 1 << 20);
		return FLOW_ERROR;
	}
	if (in->top) {
		c->s->chunks = (int)k;
		if (c->st) {   /* the state was shaped for the old count */
			state_free(c->st);
			c->st = NULL;
		}
	} else if (in->cmap && k != in->ncmap) {
		ev_fail(c, s->pos, "'%s' declares %lld chunks but 'run' maps %d", in->algo->str, (long long)k, in->ncmap);
		return FLOW_ERROR;
	} else if (!in->cmap && k > in->ncmap) {
		ev_fail(c, s->pos, "'%s' declares %lld chunks but its caller has only %d (map them with 'run ... chunks')",
		        in->algo->str, (long long)k, in->ncmap);
		return FLOW_ERROR;
	}
	in->chunks = (int)k;
	in->xlim = in->coff ? 0 : in->chunks;
	in->chunks_set = true;
	return FLOW_NEXT;
}

/* Run statement s (its step already counted). */
int ev_stmt(ctx *c, inst *in, value *fr, ast *s)
{
	switch (s->kind) {
	case A_LET: {
		value v = ev(c, in, fr, s->a);
		if (c->failed) {
			v_unref(v);
			return FLOW_ERROR;
		}
		v_unref(fr[s->slot]);
		fr[s->slot] = v;
		return FLOW_NEXT;
	}
	case A_ASSIGN:
		return assign(c, in, fr, s);
	case A_IF: {
		int t = ev_cond(c, in, fr, s->a, "'if' condition");
		if (t < 0)
			return FLOW_ERROR;
		if (t)
			return block(c, in, fr, s->b);
		return s->c ? block(c, in, fr, s->c) : FLOW_NEXT;
	}
	case A_FOR:
		return for_loop(c, in, fr, s);
	case A_WHILE:
		for (;;) {
			int t = ev_cond(c, in, fr, s->a, "'while' condition");
			if (t < 0)
				return FLOW_ERROR;
			if (!t)
				return FLOW_NEXT;
			bool stop;
			int f = body(c, in, fr, s->b, &stop);
			if (stop)
				return f;
		}
	case A_BREAK:
		return FLOW_BREAK;
	case A_CONTINUE:
		return FLOW_CONTINUE;
	case A_RETURN:
		v_unref(c->ret);
		c->ret = s->a ? ev(c, in, fr, s->a) : V_NILV;
		return c->failed ? FLOW_ERROR : FLOW_RETURN;
	case A_REQUIRE: {
		value v = ev(c, in, fr, s->a);
		bool t = !c->failed && want_bool(c, v, s->a, "'require' condition");
		v_unref(v);
		if (c->failed || t)
			return c->failed ? FLOW_ERROR : FLOW_NEXT;
		value m = ev(c, in, fr, s->b);
		if (c->failed)
			return FLOW_ERROR;
		if (m.t != V_STR) {
			ev_fail(c, s->b->pos, "'require' needs a string message, found %s", a_tname(m));
			v_unref(m);
			return FLOW_ERROR;
		}
		char *msg = v_show(m, 200);
		v_unref(m);
		if (c->opts->quiet_require) {
			c->opts->unsupported = true;
			snprintf(c->opts->why, sizeof c->opts->why, "%s", msg);
			c->failed = true;
		} else {
			ev_fail(c, s->pos, "requirement failed: %s", msg);
		}
		free(msg);
		return FLOW_ERROR;
	}
	case A_PARAM:
		return param(c, in, fr, s);
	case A_CHUNKS:
		return chunks_stmt(c, in, fr, s);
	case A_PORTS: {
		int64_t ps, pr;
		if (!int_of(c, in, fr, s->a, "port count", &ps))
			return FLOW_ERROR;
		pr = ps;
		if (s->b && !int_of(c, in, fr, s->b, "port count", &pr))
			return FLOW_ERROR;
		if (ps < 1 || pr < 1 || ps > 1 << 20 || pr > 1 << 20) {
			ev_fail(c, s->pos, "port counts must be at least 1, found %lld, %lld", (long long)ps, (long long)pr);
			return FLOW_ERROR;
		}
		if (in->top) {   /* a composed algorithm runs under its caller's port model */
			c->s->ports_send = (int)ps;
			c->s->ports_recv = (int)pr;
		}
		return FLOW_NEXT;
	}
	case A_ROUND: {
		if (c->in_round) {
			ev_fail(c, s->pos, "'round' inside another round; a round is a flat set of transfers");
			return FLOW_ERROR;
		}
		ir_begin_round(c->s, c->phase, s->pos);
		c->in_round = true;
		int f = block(c, in, fr, s->b);
		c->in_round = false;
		ir_end_round(c->s);
		return f;
	}
	case A_PHASE: {
		value v = ev(c, in, fr, s->a);
		if (c->failed)
			return FLOW_ERROR;
		if (v.t != V_STR) {
			ev_fail(c, s->a->pos, "phase name must be a string, found %s", tname(v));
			v_unref(v);
			return FLOW_ERROR;
		}
		int old = c->phase;
		c->phase = ir_phase(c->s, v_strobj(v)->s);
		v_unref(v);
		int f = block(c, in, fr, s->b);
		c->phase = old;
		return f;
	}
	case A_XFER:
		return xfer(c, in, fr, s);
	case A_RUN:
		return run_stmt(c, in, fr, s);
	case A_PARALLEL:
		return parallel_stmt(c, in, fr, s);
	case A_EXPR:
		v_unref(ev(c, in, fr, s->a));
		return c->failed ? FLOW_ERROR : FLOW_NEXT;
	default:
		ev_fail(c, s->pos, "internal error: unexpected node %d as a statement", s->kind);
		return FLOW_ERROR;
	}
}

static int block(ctx *c, inst *in, value *fr, ast *b)
{
	struct fast_code *fc = fc_code(c, b);
	if (fc->ok)
		return vm_run(c, in, fr, fc, NULL);
	for (int i = 0; i < b->list.n; i++) {
		int f = ex(c, in, fr, b->list.v[i]);
		if (f != FLOW_NEXT)
			return f;
	}
	return FLOW_NEXT;
}

static void run_inst(ctx *c, inst *in)
{
	if (c->depth >= MAX_DEPTH) {
		ev_fail(c, in->algo->pos, "algorithms composed deeper than %d ('run' recursion in '%s'?)", MAX_DEPTH,
		        in->algo->str);
		return;
	}
	value *fr = calloc(in->algo->slot ? in->algo->slot : 1, sizeof *fr);
	c->depth++;
	block(c, in, fr, in->algo->b);
	c->depth--;
	for (int i = 0; i < in->algo->slot; i++)
		v_unref(fr[i]);
	free(fr);
}

ir_sched *eval_algorithm(ast_prog *prog, ast *algo, int n, const drv_define *defs, int ndefs, eval_opts *opts)
{
	ir_sched *s = ir_new((ir_kind)algo->kindof, algo->str, n);
	s->pos = algo->pos;
	ctx c = { .prog = prog, .s = s, .opts = opts, .defs = defs, .ndefs = ndefs, .max_steps = opts->max_steps };
	ctx *outer = running;
	running = &c;
	mem_over_hook = over_budget;
	c.phase = ir_phase(s, "main");
	c.buf = malloc((n + 1) * sizeof *c.buf);
	inst top = { .algo = algo, .kind = algo->kindof, .n = n, .chunks = 1, .xlim = 1, .top = true };
	top.rmap = malloc(n * sizeof *top.rmap);
	for (int i = 0; i < n; i++)
		top.rmap[i] = i;
	for (int i = 0; i < ndefs; i++) {
		if (strcmp(defs[i].name, "root") != 0)
			continue;
		if (!ir_kind_info((ir_kind)algo->kindof)->rooted)
			continue;
		if (defs[i].value < 0 || defs[i].value >= n)
			ev_fail(&c, (srcpos){ 0 }, "-D root=%lld out of range 0..%d", defs[i].value, n - 1);
		top.root = (int)defs[i].value;
	}
	s->root = top.root;
	if (!c.failed)
		run_inst(&c, &top);
	opts->steps = c.steps;
	v_unref(c.ret);
	free(top.rmap);
	free(c.buf);
	state_free(c.st);
	running = outer;
	if (c.failed) {
		ir_free(s);
		return NULL;
	}
	return s;
}
