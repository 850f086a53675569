/*
 * resolve.c - name binding, the pass between parsing and evaluation.
 *
 * Every variable gets a frame slot (so the evaluator indexes an array
 * instead of searching by name), every call is bound to a user function
 * or a builtin with its arity checked, and statements that only make
 * sense in some places (return, break, param, round) are checked here,
 * before anything runs, so such mistakes are reported for every n alike.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "ir.h"

static const struct {
	const char *name;
	int min, max;   /* argument counts; max -1: any */
} builtins[BI_COUNT] = {
	[BI_LEN] = { "len", 1, 1 },       [BI_MIN] = { "min", 1, -1 },
	[BI_MAX] = { "max", 1, -1 },      [BI_ABS] = { "abs", 1, 1 },
	[BI_LOG2] = { "log2", 1, 1 },     [BI_CLOG2] = { "clog2", 1, 1 },
	[BI_ISPOW2] = { "ispow2", 1, 1 }, [BI_SORTED] = { "sorted", 1, 1 },
	[BI_LIST] = { "list", 1, 1 },     [BI_SET] = { "set", 0, 1 },
	[BI_KEYS] = { "keys", 1, 1 },     [BI_PUSH] = { "push", 2, 2 },
	[BI_POP] = { "pop", 1, 1 },       [BI_ADD] = { "add", 2, 2 },
	[BI_REMOVE] = { "remove", 2, 2 }, [BI_STR] = { "str", 1, 1 },
	[BI_PRINT] = { "print", 0, -1 },  [BI_MATCHING] = { "max_weight_matching", 1, 2 },
	[BI_HOLDS] = { "holds", 2, 2 },   [BI_HAS] = { "has", 2, 2 },
	[BI_CONTRIB] = { "contrib", 2, 2 }, [BI_HOLDERS] = { "holders", 1, 1 },
	[BI_OWNER] = { "owner", 1, 1 },   [BI_NCHUNKS] = { "nchunks", 0, 0 },
};

typedef struct {
	const char *name;
	int slot;
	srcpos pos;         /* where it was declared, for "already declared" notes */
} binding;

/* Resolver state for one algorithm or function body. */
typedef struct {
	ast_prog *prog;
	ast *unit;          /* the A_ALGO or A_FN being resolved */
	binding *scope;     /* visible names, innermost last */
	int nscope, capscope;
	int block;          /* scope[block ..] are the names of the innermost block */
	int nslots;
	int loops;          /* enclosing loops */
	int rounds;         /* enclosing round blocks */
	int parallels;      /* enclosing parallel blocks */
	int depth;          /* block nesting below the unit's body */
} resolver;

static int errors;

static ast *find_decl(ast_prog *p, ast_kind kind, const char *name)
{
	for (int i = 0; i < p->decls.n; i++) {
		ast *d = p->decls.v[i];
		if (d->kind == kind && strcmp(d->str, name) == 0)
			return d;
	}
	return NULL;
}

static void err(srcpos pos, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void err(srcpos pos, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_verror(pos, fmt, ap);
	va_end(ap);
	errors++;
}

/* Does algorithm a take parameter `name`: one of its top-level `param`s,
 * or `root` for a rooted collective? */
static bool algo_has_param(const ast *a, const char *name)
{
	if (a->kindof >= 0 && ir_kind_info((ir_kind)a->kindof)->rooted && strcmp(name, "root") == 0)
		return true;
	for (int j = 0; a->b && j < a->b->list.n; j++)
		if (a->b->list.v[j]->kind == A_PARAM && strcmp(a->b->list.v[j]->str, name) == 0)
			return true;
	return false;
}

/* "its parameters are B, root" / "it has no parameters", for messages. */
static const char *param_list(const ast *a, char *buf, size_t len)
{
	size_t at = 0;
	int k = 0;
	buf[0] = '\0';
	for (int j = 0; a->b && j < a->b->list.n && at < len; j++)
		if (a->b->list.v[j]->kind == A_PARAM)
			at += (size_t)snprintf(buf + at, len - at, "%s%s", k++ ? ", " : "its parameters are ",
					       a->b->list.v[j]->str);
	if (at < len && a->kindof >= 0 && ir_kind_info((ir_kind)a->kindof)->rooted)
		at += (size_t)snprintf(buf + at, len - at, "%sroot", k++ ? ", " : "its parameters are ");
	if (!k)
		snprintf(buf, len, "it has no parameters");
	return buf;
}

static int declare(resolver *r, const char *name, srcpos pos)
{
	if (r->nscope == r->capscope) {
		r->capscope = r->capscope ? 2 * r->capscope : 16;
		r->scope = realloc(r->scope, r->capscope * sizeof *r->scope);
	}
	r->scope[r->nscope] = (binding){ name, r->nslots, pos };
	r->nscope++;
	return r->nslots++;
}

static int lookup(resolver *r, const char *name)
{
	for (int i = r->nscope - 1; i >= 0; i--)
		if (strcmp(r->scope[i].name, name) == 0)
			return r->scope[i].slot;
	return -1;
}

static void expr(resolver *r, ast *e);
static void expr_inner(resolver *r, ast *e);
static void stmt(resolver *r, ast *s);

static void exprs(resolver *r, ast_list *l)
{
	for (int i = 0; i < l->n; i++)
		expr(r, l->v[i]);
}

static void name(resolver *r, ast *e)
{
	int slot = lookup(r, e->str);
	if (slot >= 0) {
		e->bind = B_LOCAL;
		e->slot = slot;
	} else if (strcmp(e->str, "n") == 0) {
		e->bind = B_N;
	} else if (strcmp(e->str, "root") == 0) {
		int k = r->unit->kind == A_ALGO ? r->unit->kindof : -1;
		if (k >= 0 && !ir_kind_info((ir_kind)k)->rooted)
			err(e->pos, "'root' is only defined in %s algorithms, not in %s '%s'", ir_rooted_list(),
			    ir_kind_names[k], r->unit->str);
		e->bind = B_ROOT;
	} else {
		err(e->pos, "undefined name '%s'%s", e->str,
		    find_decl(r->prog, A_FN, e->str) ? " (a function: call it with parentheses)" : "");
	}
}

static void call(resolver *r, ast *e)
{
	exprs(r, &e->list);
	ast *fn = find_decl(r->prog, A_FN, e->str);
	if (fn) {
		e->bind = B_FN;
		e->target = fn;
		if (fn->list.n != e->list.n) {
			diag_error(e->pos, "function '%s' takes %d argument%s, %d given", e->str,
				   fn->list.n, fn->list.n == 1 ? "" : "s", e->list.n);
			errors++;
		}
		return;
	}
	for (int i = 0; i < BI_COUNT; i++) {
		if (strcmp(builtins[i].name, e->str) != 0)
			continue;
		e->bind = B_BUILTIN;
		e->slot = i;
		int n = e->list.n;
		if (n < builtins[i].min || (builtins[i].max >= 0 && n > builtins[i].max)) {
			if (builtins[i].min == builtins[i].max)
				diag_error(e->pos, "builtin '%s' takes %d argument%s, %d given", e->str,
					   builtins[i].min, builtins[i].min == 1 ? "" : "s", n);
			else if (builtins[i].max < 0)
				diag_error(e->pos, "builtin '%s' takes at least %d argument%s, %d given", e->str,
					   builtins[i].min, builtins[i].min == 1 ? "" : "s", n);
			else
				diag_error(e->pos, "builtin '%s' takes %d to %d arguments, %d given", e->str,
					   builtins[i].min, builtins[i].max, n);
			errors++;
		}
		return;
	}
	err(e->pos, "unknown function '%s'%s", e->str,
	    find_decl(r->prog, A_ALGO, e->str) ? " (an algorithm: use 'run')" : "");
}

/* Deeper expressions than this are rejected here, before the recursive
 * evaluator could run out of C stack on them. */
#define MAX_EXPR_DEPTH 2000

static void expr(resolver *r, ast *e)
{
	static int depth;
	if (depth >= MAX_EXPR_DEPTH) {
		if (depth++ == MAX_EXPR_DEPTH)
			err(e->pos, "expression nested too deeply (more than %s levels)%s", "2000", "");
		depth--;
		return;
	}
	depth++;
	expr_inner(r, e);
	depth--;
}

/* Is e a local or a chain of int indexes into one (x, x[i], m[k][j])? */
static bool is_place(const ast *e)
{
	if (e->kind == A_NAME)
		return e->bind == B_LOCAL;
	return e->kind == A_INDEX && is_place(e->a) && e->b->fast == FAST_INT;
}

/* The fast-path type of e (ast_fast), its operands already marked.  Marked
 * once here so that the evaluator never tries its fast path on an
 * expression that cannot take it (a call, a string) only to evaluate it
 * again the slow way. */
static int fast_type(const ast *e)
{
	int a = e->a ? e->a->fast : FAST_NO, b = e->b ? e->b->fast : FAST_NO;
	switch (e->kind) {
	case A_INT:
		return FAST_INT;
	case A_BOOL:
		return FAST_BOOL;
	case A_NAME:
		return e->bind == B_LOCAL || e->bind == B_N ? FAST_INT : FAST_NO;
	case A_INDEX:
		return is_place(e) ? FAST_INT : FAST_NO;
	case A_CALL:
		return e->bind == B_BUILTIN && e->slot == BI_LEN && e->list.n == 1 && is_place(e->list.v[0])
		       ? FAST_INT : FAST_NO;
	case A_UNOP:
		if (e->op == OP_NEG)
			return a == FAST_INT ? FAST_INT : FAST_NO;
		return a == FAST_BOOL ? FAST_BOOL : FAST_NO;
	case A_BINOP:
		if (a != FAST_INT || b != FAST_INT)
			return FAST_NO;
		/* `|` `&` `^` may be set operations: decided at run time, when
		 * the fast path gives up on a local that holds a set */
		if ((e->op >= OP_ADD && e->op <= OP_MOD) || (e->op >= OP_UNION && e->op <= OP_POW))
			return FAST_INT;
		return e->op >= OP_EQ && e->op <= OP_GE ? FAST_BOOL : FAST_NO;
	case A_AND: case A_OR:
		return a == FAST_BOOL && b == FAST_BOOL ? FAST_BOOL : FAST_NO;
	default:
		return FAST_NO;
	}
}

static void expr_inner(resolver *r, ast *e)
{
	switch (e->kind) {
	case A_INT: case A_BOOL: case A_STR:
		break;
	case A_NAME:
		name(r, e);
		break;
	case A_LIST: case A_SET: case A_MAP:
		exprs(r, &e->list);
		break;
	case A_CALL:
		call(r, e);
		break;
	default:   /* A_RANGE, A_UNOP, A_BINOP, A_AND, A_OR, A_INDEX, map entries */
		if (e->a) expr(r, e->a);
		if (e->b) expr(r, e->b);
		break;
	}
	e->fast = fast_type(e);
}

static void block(resolver *r, ast *b)
{
	int mark = r->nscope, outer = r->block;
	r->block = mark;
	r->depth++;
	for (int i = 0; i < b->list.n; i++)
		stmt(r, b->list.v[i]);
	r->depth--;
	r->nscope = mark;
	r->block = outer;
}

/* The binding of `name` declared in the innermost block, or NULL.  A
 * second `let` of a name in one block is refused: it would silently
 * start a new variable where an assignment was almost certainly meant
 * (shadowing in an inner block stays legal, as in C). */
static const binding *in_block(resolver *r, const char *name)
{
	for (int i = r->nscope - 1; i >= r->block; i--)
		if (strcmp(r->scope[i].name, name) == 0)
			return &r->scope[i];
	return NULL;
}

static void stmt(resolver *r, ast *s)
{
	switch (s->kind) {
	case A_LET: {
		expr(r, s->a);   /* before declaring: `let x = x + 1` reads the outer x */
		const binding *old = in_block(r, s->str);
		if (old) {
			err(s->pos, "'%s' is already declared in this block (assign it with '%s = ...', or use another name)",
			    s->str, s->str);
			diag_note(old->pos, "'%s' is declared here", s->str);
		}
		s->slot = declare(r, s->str, s->pos);
		break;
	}
	case A_ASSIGN:
		if (s->a->kind != A_NAME && s->a->kind != A_INDEX) {
			err(s->a->pos, "cannot assign to this expression; assign to a variable or an element x[i]");
			break;
		}
		if (s->a->kind == A_NAME && lookup(r, s->a->str) < 0 &&
		    strcmp(s->a->str, "n") != 0 && strcmp(s->a->str, "root") != 0) {
			err(s->a->pos, "assignment to undeclared variable '%s' (declare it with 'let %s = ...')",
			    s->a->str, s->a->str);
			break;
		}
		if (s->a->kind == A_NAME && lookup(r, s->a->str) < 0) {
			err(s->a->pos, "'%s' is fixed by the compiler and cannot be assigned%s", s->a->str, "");
			break;
		}
		expr(r, s->a);
		expr(r, s->b);
		break;
	case A_IF:
		expr(r, s->a);
		block(r, s->b);
		if (s->c)
			block(r, s->c);
		break;
	case A_FOR: {
		expr(r, s->a);
		int mark = r->nscope;
		s->slot = declare(r, s->str, s->d->pos);
		r->loops++;
		block(r, s->b);
		r->loops--;
		r->nscope = mark;
		break;
	}
	case A_WHILE:
		expr(r, s->a);
		r->loops++;
		block(r, s->b);
		r->loops--;
		break;
	case A_BREAK: case A_CONTINUE:
		if (!r->loops)
			err(s->pos, "'%s' outside a loop%s", s->kind == A_BREAK ? "break" : "continue", "");
		break;
	case A_RETURN:
		if (r->unit->kind != A_FN)
			err(s->pos, "'return' outside a function (algorithm '%s' ends at its closing brace)%s",
			    r->unit->str, "");
		if (s->a)
			expr(r, s->a);
		break;
	case A_REQUIRE:
		expr(r, s->a);
		expr(r, s->b);
		/* a literal that is not a string can be refused now, before the
		 * requirement ever fails (other expressions are checked then) */
		if (s->b->kind == A_INT || s->b->kind == A_BOOL || s->b->kind == A_LIST || s->b->kind == A_SET ||
		    s->b->kind == A_MAP || s->b->kind == A_RANGE)
			err(s->b->pos, "'require' needs a string message, such as \"ring needs n >= 2\"");
		break;
	case A_PARAM:
		if (r->unit->kind != A_ALGO || r->depth != 1)
			err(s->pos, "'param %s' must be at the top level of an algorithm", s->str);
		expr(r, s->a);
		if (lookup(r, s->str) >= 0)
			err(s->pos, "parameter '%s' is already declared%s", s->str, "");
		s->slot = declare(r, s->str, s->pos);
		break;
	case A_CHUNKS: case A_PORTS:
		expr(r, s->a);
		if (s->b)
			expr(r, s->b);
		break;
	case A_ROUND:
		if (r->rounds)
			err(s->pos, "'round' inside another round; a round is a flat set of transfers");
		else if (r->parallels)
			err(s->pos, "'round' inside 'parallel'; there, rounds come only from 'run' statements (put the "
			    "transfers in an algorithm and run it)");
		r->rounds++;
		block(r, s->b);
		r->rounds--;
		break;
	case A_PHASE:
		expr(r, s->a);
		block(r, s->b);
		break;
	case A_XFER:
		if (r->parallels && !r->rounds)
			err(s->pos, "transfer inside 'parallel'; there, rounds come only from 'run' statements (put the "
			    "transfers in an algorithm and run it)");
		expr(r, s->a);
		expr(r, s->b);
		expr(r, s->c);
		break;
	case A_RUN: {
		ast *algo = find_decl(r->prog, A_ALGO, s->str);
		if (!algo)
			err(s->pos, "unknown algorithm '%s' in 'run'", s->str);
		if (r->rounds)
			err(s->pos, "'run' inside a round; a composed algorithm emits its own rounds");
		s->target = algo;
		expr(r, s->a);
		if (s->b)
			expr(r, s->b);
		for (int i = 0; i < s->list.n; i++) {
			ast *w = s->list.v[i];
			expr(r, w->a);
			/* `with k = v` must name a `param` of the callee (or its root):
			 * a misspelt name would silently keep the default */
			if (algo && !algo_has_param(algo, w->str)) {
				char have[256];
				err(w->pos, "'%s' has no parameter '%s' (%s)", algo->str, w->str, param_list(algo, have, sizeof have));
			}
		}
		break;
	}
	case A_PARALLEL:
		if (r->rounds)
			err(s->pos, "'parallel' inside a round; the runs in it emit their own rounds");
		else if (r->parallels)
			err(s->pos, "'parallel' inside another 'parallel'; put all the runs in one");
		r->parallels++;
		block(r, s->b);
		r->parallels--;
		break;
	case A_EXPR:
		expr(r, s->a);
		if (s->a->kind != A_CALL)
			err(s->pos, "this expression has no effect; only calls may stand as statements");
		break;
	default:
		break;
	}
}

static void unit(ast_prog *p, ast *u)
{
	resolver r = { .prog = p, .unit = u };
	if (u->kind == A_FN) {
		for (int i = 0; i < u->list.n; i++) {
			for (int j = 0; j < i; j++)
				if (strcmp(u->list.v[i]->str, u->list.v[j]->str) == 0)
					err(u->list.v[i]->pos, "duplicate parameter '%s' in function '%s'",
					    u->list.v[i]->str, u->str);
			u->list.v[i]->slot = declare(&r, u->list.v[i]->str, u->list.v[i]->pos);
		}
	}
	block(&r, u->b);
	u->slot = r.nslots;
	free(r.scope);
}

int resolve_prog(ast_prog *p)
{
	errors = 0;
	for (int i = 0; i < p->decls.n; i++) {
		ast *d = p->decls.v[i];
		if (d->kind == A_IMPORT)
			continue;
		for (int j = 0; j < i; j++) {
			ast *o = p->decls.v[j];
			if (o->kind == d->kind && strcmp(o->str, d->str) == 0) {
				err(d->pos, "%s '%s' is already declared", d->kind == A_ALGO ? "algorithm"
				    : d->kind == A_FN ? "function" : "cluster", d->str);
				diag_note(o->pos, "first declared here");
				break;
			}
		}
		if (d->kind == A_ALGO) {
			d->kindof = ir_kind_from_name(d->a->str);
			if (d->kindof < 0)
				err(d->a->pos, "unknown collective '%s' (expected %s)", d->a->str, ir_kind_list());
		}
	}
	for (int i = 0; i < p->decls.n; i++)
		if (p->decls.v[i]->kind == A_ALGO || p->decls.v[i]->kind == A_FN)
			unit(p, p->decls.v[i]);
	return errors;
}
