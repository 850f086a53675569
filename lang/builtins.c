/*
 * builtins.c - the builtin functions of the language (len, min, sorted,
 * push, max_weight_matching, the state queries holds / has / contrib /
 * holders / owner, ...), called by the tree walker (eval.c) with their
 * arguments evaluated.
 *
 * Pipeline position: part of the evaluator (resolved AST -> ir_sched);
 * resolve.c has already checked each call's name and argument count, so
 * what is left to check here is the arguments' types and ranges.  The
 * state queries read the symbolic buffer state (state.c), which is
 * brought up to date lazily, only when an algorithm asks, so algorithms
 * that never ask pay nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_int.h"
#include "matching.h"
#include "state.h"
#include "value.h"
#include "xalloc.h"

/* ---- symbolic state queries -------------------------------------------- */

/* Bring the buffer state up to the last closed round. */
static bstate *state(ctx *c)
{
	if (!c->st) {   /* state_ready made sure this works */
		c->st = state_new(c->s);
		c->applied = 0;
	}
	int closed = c->s->nrounds - (c->in_round ? 1 : 0);
	while (c->applied < closed)
		state_apply_round(c->st, c->s, c->applied++);
	return c->st;
}

/* Can the symbolic state of the schedule so far be built for a query at
 * e (a chunk count that fits the collective, memory for its cells)?
 * Else an error. */
static bool state_ready(ctx *c, ast *e)
{
	if (c->st)
		return true;
	char why[160];
	if (state_refusal(c->s, why, sizeof why)) {
		ev_fail(c, e->pos, "cannot answer a state query: %s", why);
		return false;
	}
	return ev_fits(c, e, state_cell_bytes(c->s));
}

/* contrib() of a chunk that stands for a block of chunks: what rank r
 * holds of every chunk of the block (the intersection), so that the block
 * is complete when all its chunks are. */
static int contrib_block(ctx *c, inst *in, int r, int ch)
{
	int n = c->s->n, lo = in->coff[ch], hi = in->coff[ch + 1], m = 0;
	int *cnt = xcalloc((size_t)n, sizeof *cnt);
	bstate *st = state(c);
	for (int k = lo; k < hi; k++) {
		int got = state_contrib(st, in->rmap[r], in->cmap[k], c->buf);
		for (int i = 0; i < got; i++)
			cnt[c->buf[i]]++;
	}
	for (int q = 0; q < n; q++)   /* ascending top-level ranks ... */
		if (cnt[q] == hi - lo && in->rinv[q] >= 0)
			c->buf[m++] = in->rinv[q];
	free(cnt);
	for (int i = 1; i < m; i++)   /* ... into ascending local ones */
		for (int j = i; j > 0 && c->buf[j - 1] > c->buf[j]; j--) {
			int t = c->buf[j]; c->buf[j] = c->buf[j - 1]; c->buf[j - 1] = t;
		}
	return m;
}

/* Contributions of local (r, ch) as local ranks, into c->buf; count. */
static int contrib(ctx *c, inst *in, int r, int ch)
{
	if (in->coff)
		return contrib_block(c, in, r, ch);
	int gc = in->cmap ? in->cmap[ch] : ch;
	int k = state_contrib(state(c), in->rmap[r], gc, c->buf);
	if (in->top)
		return k;
	int m = 0;
	for (int i = 0; i < k; i++)
		if (in->rinv[c->buf[i]] >= 0)
			c->buf[m++] = in->rinv[c->buf[i]];
	/* local order follows the rank map, which need not be ascending */
	for (int i = 1; i < m; i++)
		for (int j = i; j > 0 && c->buf[j - 1] > c->buf[j]; j--) {
			int t = c->buf[j]; c->buf[j] = c->buf[j - 1]; c->buf[j - 1] = t;
		}
	return m;
}

/* Does local (r, ch) hold everything this instance's collective needs? */
static bool holds(ctx *c, inst *in, int r, int ch)
{
	if (in->top)
		return state_complete(state(c), r, in->cmap ? in->cmap[ch] : ch);
	int k = contrib(c, in, r, ch);
	/* complete: every rank's contribution, or the one contributor's (coll_kinds.h) */
	const coll_shape sh = { ir_kind_info((ir_kind)in->kind), in->n, in->chunks, in->root };
	if ((uint64_t)in->chunks < coll_kind_units(sh.k, in->n))
		return false;   /* too few chunks for the collective: the verifier says so */
	int w = coll_shape_contributor(&sh, ch);
	return w < 0 ? k == in->n : k == 1 && c->buf[0] == w;
}

/* ---- builtins ------------------------------------------------------------ */

static int cmp_values(const void *a, const void *b)
{
	return v_cmp(*(const value *)a, *(const value *)b);
}

/* Elements of a list, set or map (keys) as a borrowed array. */
static bool elems(ctx *c, ast *e, value v, const char *fn, value **out, int *n)
{
	if (v.t == V_LIST || v.t == V_SET) {
		*out = v_list(v)->v;
		*n = v_list(v)->n;
		return true;
	}
	if (v.t == V_MAP) {
		*out = v_map(v)->k;
		*n = v_map(v)->n;
		return true;
	}
	ev_fail(c, e->pos, "%s() needs a list, set or map, found %s", fn, tname(v));
	return false;
}

/* Check a local rank / chunk argument of a state query. */
static bool want_rank(ctx *c, inst *in, value v, ast *e, int *out)
{
	int64_t i;
	if (!want_int(c, v, e, "rank", &i))
		return false;
	if (i < 0 || i >= in->n) {
		ev_fail(c, e->pos, "rank %lld out of range 0..%d", (long long)i, in->n - 1);
		return false;
	}
	*out = (int)i;
	return true;
}

static bool want_chunk(ctx *c, inst *in, value v, ast *e, int *out)
{
	int64_t i;
	if (!want_int(c, v, e, "chunk", &i))
		return false;
	if (i < 0 || i >= in->chunks) {
		ev_fail(c, e->pos, "chunk %lld out of range 0..%d", (long long)i, in->chunks - 1);
		return false;
	}
	*out = (int)i;
	return true;
}

static value set_of_buf(const int *b, int k)
{
	value s = v_newlist(V_SET, k);
	for (int i = 0; i < k; i++)
		v_push(v_list(s), v_int(b[i]));
	return s;
}

static value matching(ctx *c, ast *e, value edges, bool maxcard)
{
	if (edges.t != V_LIST) {
		ev_fail(c, e->pos, "max_weight_matching() needs a list of [u, v, w] edges, found %s", tname(edges));
		return V_NILV;
	}
	vlist *l = v_list(edges);
	int ne = l->n, nv = 0;
	/* calloc: GCC 12, inlining this into bi_call, cannot see that the
	 * loop below writes every element match_max_weight reads */
	int *eu = calloc(ne + 1, sizeof *eu), *evv = calloc(ne + 1, sizeof *evv);
	int64_t *w = calloc(ne + 1, sizeof *w);
	value res = V_NILV;
	for (int i = 0; i < ne; i++) {
		value t = l->v[i];
		vlist *q = t.t == V_LIST ? v_list(t) : NULL;
		if (!q || q->n != 3 || q->v[0].t != V_INT || q->v[1].t != V_INT || q->v[2].t != V_INT) {
			char *s = v_repr(t, 60);
			ev_fail(c, e->pos, "max_weight_matching(): edge %d is %s, expected [u, v, w] of ints", i, s);
			free(s);
			goto out;
		}
		int64_t u = q->v[0].i, v = q->v[1].i;
		if (u < 0 || v < 0 || u > 1000000 || v > 1000000 || q->v[2].i < 0 ||
		    q->v[2].i >= MATCH_MAX_WEIGHT) {
			ev_fail(c, e->pos, "max_weight_matching(): edge %d has a vertex outside 0..1000000 or a weight outside 0..2^40", i);
			goto out;
		}
		eu[i] = (int)u;
		evv[i] = (int)v;
		w[i] = q->v[2].i;
		if (u + 1 > nv) nv = (int)u + 1;
		if (v + 1 > nv) nv = (int)v + 1;
	}
	int *mate = malloc((nv + 1) * sizeof *mate);
	char err[200];
	if (match_max_weight(nv, ne, eu, evv, w, maxcard, mate, err, sizeof err) != 0) {
		ev_fail(c, e->pos, "max_weight_matching(): %s", err);
	} else {
		res = v_newlist(V_LIST, 0);
		for (int u = 0; u < nv; u++) {
			if (mate[u] > u) {
				value p = v_newlist(V_LIST, 2);
				v_push(v_list(p), v_int(u));
				v_push(v_list(p), v_int(mate[u]));
				v_push(v_list(res), p);
			}
		}
	}
	free(mate);
out:
	free(eu);
	free(evv);
	free(w);
	return res;
}

value bi_call(ctx *c, inst *in, ast *e, value *a, int na)
{
	const char *fn = e->str;
	int r, ch;
	int64_t x;
	switch (e->slot) {
	case BI_LEN:
		switch (a[0].t) {
		case V_STR: return v_int(v_strobj(a[0])->len);
		case V_LIST: case V_SET: return v_int(v_list(a[0])->n);
		case V_MAP: return v_int(v_map(a[0])->n);
		default: break;
		}
		ev_fail(c, e->pos, "len() needs a list, set, map or string, found %s", tname(a[0]));
		return V_NILV;
	case BI_MIN: case BI_MAX: {
		value *v = a;
		int n = na;
		if (na == 1 && !elems(c, e, a[0], fn, &v, &n))
			return V_NILV;
		if (n == 0) {
			ev_fail(c, e->pos, "%s() of an empty collection", fn);
			return V_NILV;
		}
		value best = v[0];
		for (int i = 0; i < n; i++) {
			if (v[i].t != v[0].t || (v[i].t != V_INT && v[i].t != V_STR)) {
				ev_fail(c, e->pos, "%s() compares ints or strings, found %s", fn, tname(v[i]));
				return V_NILV;
			}
			int k = v_cmp(v[i], best);
			if (e->slot == BI_MIN ? k < 0 : k > 0)
				best = v[i];
		}
		return v_ref(best);
	}
	case BI_ABS:
		if (!want_int(c, a[0], e->list.v[0], "abs() argument", &x))
			return V_NILV;
		if (x == INT64_MIN) {
			ev_fail(c, e->pos, "integer overflow in abs()");
			return V_NILV;
		}
		return v_int(x < 0 ? -x : x);
	case BI_LOG2: case BI_CLOG2: case BI_ISPOW2: {
		if (!want_int(c, a[0], e->list.v[0], "argument", &x))
			return V_NILV;
		if (e->slot == BI_ISPOW2)
			return v_bool(x > 0 && (x & (x - 1)) == 0);
		if (x < 1) {
			ev_fail(c, e->pos, "%s() of %lld; it needs an int >= 1", fn, (long long)x);
			return V_NILV;
		}
		int l = 63 - __builtin_clzll((unsigned long long)x);
		if (e->slot == BI_CLOG2 && (x & (x - 1)) != 0)
			l++;
		return v_int(l);
	}
	case BI_SORTED: case BI_LIST: case BI_KEYS: case BI_SET: {
		value *v = NULL;
		int n = 0;
		if (na == 1) {
			if (e->slot == BI_KEYS && a[0].t != V_MAP) {
				ev_fail(c, e->pos, "keys() needs a map, found %s", tname(a[0]));
				return V_NILV;
			}
			if (!elems(c, e, a[0], fn, &v, &n))
				return V_NILV;
		}
		/* a copy of n elements (sorting: n log n comparisons) */
		if (!ev_fits(c, e, (size_t)n * sizeof(value)) ||
		    !steps_for(c, e, e->slot == BI_SORTED && n > 1 ? (long long)n * (64 - __builtin_clzll((unsigned long long)n)) : n))
			return V_NILV;
		if (e->slot == BI_SET) {
			value s = v_newlist(V_SET, n);
			for (int i = 0; i < n; i++) {
				if (!is_key(v[i])) {
					ev_fail(c, e->pos, "set elements must be ints, bools or strings, found %s", tname(v[i]));
					v_unref(s);
					return V_NILV;
				}
				v_set_add(v_list(s), v_ref(v[i]));
			}
			return s;
		}
		value l = v_newlist(V_LIST, n);
		for (int i = 0; i < n; i++)
			v_push(v_list(l), v_ref(v[i]));
		if (e->slot == BI_SORTED && a[0].t == V_LIST) {
			/* insertion sort is stable and fast on the nearly sorted lists
			 * schedules produce; fall back to qsort for long ones */
			vlist *q = v_list(l);
			if (q->n > 64) {
				qsort(q->v, q->n, sizeof *q->v, cmp_values);
			} else {
				for (int i = 1; i < q->n; i++)
					for (int j = i; j > 0 && v_cmp(q->v[j - 1], q->v[j]) > 0; j--) {
						value t = q->v[j]; q->v[j] = q->v[j - 1]; q->v[j - 1] = t;
					}
			}
		}
		return l;
	}
	case BI_PUSH:
		if (a[0].t != V_LIST) {
			ev_fail(c, e->pos, "push() needs a list, found %s", tname(a[0]));
			return V_NILV;
		}
		if (v_would_cycle(a[0], a[1])) {
			ev_fail(c, e->pos, "push() would make the list contain itself; values are shared by reference, "
			        "so push a copy (list(x))");
			return V_NILV;
		}
		v_push(v_list(a[0]), v_ref(a[1]));
		return V_NILV;
	case BI_POP:
		if (a[0].t != V_LIST || v_list(a[0])->n == 0) {
			ev_fail(c, e->pos, a[0].t != V_LIST ? "pop() needs a list, found %s" : "pop() from an empty %s",
			        tname(a[0]));
			return V_NILV;
		}
		return v_list(a[0])->v[--v_list(a[0])->n];   /* the list's reference moves to the caller */
	case BI_ADD:
		if (a[0].t != V_SET || !is_key(a[1])) {
			ev_fail(c, e->pos, a[0].t != V_SET ? "add() needs a set, found %s"
			        : "set elements must be ints, bools or strings, found %s",
			        tname(a[0].t != V_SET ? a[0] : a[1]));
			return V_NILV;
		}
		v_set_add(v_list(a[0]), v_ref(a[1]));
		return V_NILV;
	case BI_REMOVE:
		if (a[0].t == V_SET)
			return v_bool(v_set_remove(v_list(a[0]), a[1]));
		if (a[0].t == V_MAP)
			return v_bool(v_map_remove(v_map(a[0]), a[1]));
		ev_fail(c, e->pos, "remove() needs a set or a map, found %s", tname(a[0]));
		return V_NILV;
	case BI_STR: {
		if (!ev_fits(c, e, 1 << 20))
			return V_NILV;
		char *s = v_show(a[0], 1 << 20);
		if (!steps_for(c, e, (long long)strlen(s) / 16)) {
			free(s);
			return V_NILV;
		}
		value v = v_newstr(s, strlen(s));
		free(s);
		return v;
	}
	case BI_PRINT:
		for (int i = 0; i < na; i++) {
			char *s = v_show(a[i], 1 << 20);
			fprintf(stderr, "%s%s", i ? " " : "", s);
			free(s);
		}
		fputc('\n', stderr);
		return V_NILV;
	case BI_MATCHING:
		if (na == 2 && a[1].t != V_BOOL) {
			ev_fail(c, e->pos, "max_weight_matching(): the second argument (max cardinality) must be a bool, found %s",
			        tname(a[1]));
			return V_NILV;
		}
		return matching(c, e, a[0], na == 2 && a[1].i);
	case BI_HOLDS: case BI_HAS: case BI_CONTRIB:
		if (!want_rank(c, in, a[0], e->list.v[0], &r) || !want_chunk(c, in, a[1], e->list.v[1], &ch) ||
		    !state_ready(c, e))
			return V_NILV;
		if (e->slot == BI_HOLDS)
			return v_bool(holds(c, in, r, ch));
		if (e->slot == BI_HAS)
			return v_bool(contrib(c, in, r, ch) > 0);
		return set_of_buf(c->buf, contrib(c, in, r, ch));
	case BI_HOLDERS: {
		if (!want_chunk(c, in, a[0], e->list.v[0], &ch) || !state_ready(c, e))
			return V_NILV;
		if (in->top)
			return set_of_buf(c->buf, state_holders(state(c), in->cmap ? in->cmap[ch] : ch, c->buf));
		value s = v_newlist(V_SET, 0);
		for (int q = 0; q < in->n; q++)
			if (holds(c, in, q, ch))
				v_push(v_list(s), v_int(q));
		return s;
	}
	case BI_OWNER:
		if (!want_chunk(c, in, a[0], e->list.v[0], &ch))
			return V_NILV;
		if (in->chunks % in->n != 0) {
			ev_fail(c, e->pos, "owner() needs the chunk count (%d) to be a multiple of n (%d)", in->chunks, in->n);
			return V_NILV;
		}
		return v_int(ch / (in->chunks / in->n));
	case BI_NCHUNKS:
		return v_int(in->chunks);
	}
	return V_NILV;
}
