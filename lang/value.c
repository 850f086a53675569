/*
 * value.c - reference-counted values for the evaluator (see value.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "value.h"
#include "xalloc.h"

const char *const v_type_names[] = { "nothing", "int", "bool", "string", "list", "set", "map" };

/* What malloc spends on a block beyond its size (its header and
 * rounding), so the budget counts what the process really holds. */
#define OVERHEAD 16

/* Bytes an object holds, for the memory budget. */
static size_t obj_bytes(value v)
{
	switch (v.t) {
	case V_STR: return sizeof(vstr) + (size_t)v_strobj(v)->len + 1 + OVERHEAD;
	case V_LIST: case V_SET: return sizeof(vlist) + (size_t)v_list(v)->cap * sizeof(value) + 2 * OVERHEAD;
	case V_MAP: return sizeof(vmap) + (size_t)v_map(v)->cap * 2 * sizeof(value) + 3 * OVERHEAD;
	default: return 0;
	}
}

/* A growable stack of values, for the walks that must not recurse. */
typedef struct {
	value *v;
	size_t n, cap;
	value small[32];
} vstack;

static void vs_push(vstack *s, value v)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		value *nv = xmalloc(cap * sizeof *nv);
		memcpy(nv, s->v, s->n * sizeof *nv);
		if (s->v != s->small)
			free(s->v);
		s->v = nv;
		s->cap = cap;
	}
	s->v[s->n++] = v;
}

static void vs_done(vstack *s)
{
	if (s->v != s->small)
		free(s->v);
}

void v_free(value v)
{
	/* children whose count drops to zero go on a stack instead of a
	 * recursive call: a list nested a million deep frees in a loop */
	vstack st = { .v = NULL, .n = 0, .cap = 32 };
	st.v = st.small;
	vs_push(&st, v);
	while (st.n) {
		value x = st.v[--st.n];
		mem_release(obj_bytes(x));
		if (x.t == V_LIST || x.t == V_SET) {
			vlist *l = v_list(x);
			for (int i = 0; i < l->n; i++)
				if (v_isobj(l->v[i]) && --l->v[i].o->rc == 0)
					vs_push(&st, l->v[i]);
			free(l->v);
		} else if (x.t == V_MAP) {
			vmap *m = v_map(x);
			for (int i = 0; i < m->n; i++) {
				if (v_isobj(m->k[i]) && --m->k[i].o->rc == 0)
					vs_push(&st, m->k[i]);
				if (v_isobj(m->v[i]) && --m->v[i].o->rc == 0)
					vs_push(&st, m->v[i]);
			}
			free(m->k);
			free(m->v);
		}
		free(x.o);
	}
	vs_done(&st);
}

bool v_would_cycle(value c, value x)
{
	if (!v_iscont(x) || !v_iscont(c))
		return false;
	if (x.o == c.o)
		return true;
	if (!x.o->deep)
		return false;
	/* depth-first over the containers reachable from x, each visited once
	 * (a shared sublist is one node, not one per path to it) */
	vstack st = { .v = NULL, .n = 0, .cap = 32 };
	st.v = st.small;
	size_t nseen = 0, capseen = 64;
	const vobj **seen = xmalloc(capseen * sizeof *seen);
	bool found = false;
	vs_push(&st, x);
	while (st.n && !found) {
		value y = st.v[--st.n];
		bool dup = false;
		for (size_t i = 0; i < nseen && !dup; i++)
			dup = seen[i] == y.o;
		if (dup)
			continue;
		if (nseen == capseen)
			seen = xrealloc(seen, (capseen *= 2) * sizeof *seen);
		seen[nseen++] = y.o;
		int n = y.t == V_MAP ? v_map(y)->n : v_list(y)->n;
		const value *e = y.t == V_MAP ? v_map(y)->v : v_list(y)->v;
		for (int i = 0; i < n && !found; i++) {
			if (!v_iscont(e[i]))
				continue;
			if (e[i].o == c.o)
				found = true;
			else if (e[i].o->deep)
				vs_push(&st, e[i]);
			else
				continue;
		}
	}
	free(seen);
	vs_done(&st);
	return found;
}

value v_newstr(const char *s, size_t len)
{
	vstr *o = xrealloc(NULL, sizeof *o + len + 1);
	o->h = (vobj){ 1, V_STR, 0 };
	o->len = (int32_t)len;
	memcpy(o->s, s, len);
	o->s[len] = '\0';
	mem_charge(sizeof *o + len + 1 + OVERHEAD);
	return (value){ .t = V_STR, .o = &o->h };
}

value v_strcat(const vstr *x, const vstr *y)
{
	size_t a = (size_t)x->len, b = (size_t)y->len;
	vstr *o = xrealloc(NULL, sizeof *o + a + b + 1);
	o->h = (vobj){ 1, V_STR, 0 };
	o->len = (int32_t)(a + b);
	memcpy(o->s, x->s, a);
	memcpy(o->s + a, y->s, b + 1);
	mem_charge(sizeof *o + a + b + 1 + OVERHEAD);
	return (value){ .t = V_STR, .o = &o->h };
}

value v_newlist(vtype t, int cap)
{
	vlist *l = xrealloc(NULL, sizeof *l);
	l->h = (vobj){ 1, (uint8_t)t, 0 };
	l->n = 0;
	l->cap = cap > 0 ? cap : 0;
	l->v = cap > 0 ? xrealloc(NULL, cap * sizeof *l->v) : NULL;
	mem_charge(sizeof *l + (size_t)l->cap * sizeof *l->v + 2 * OVERHEAD);
	return (value){ .t = (uint8_t)t, .o = &l->h };
}

value v_newmap(void)
{
	vmap *m = xrealloc(NULL, sizeof *m);
	memset(m, 0, sizeof *m);
	m->h = (vobj){ 1, V_MAP, 0 };
	mem_charge(sizeof *m + 3 * OVERHEAD);
	return (value){ .t = V_MAP, .o = &m->h };
}

void v_grow(vlist *l, int need)
{
	if (need <= l->cap)
		return;
	int cap = l->cap * 2 > need ? l->cap * 2 : (need > 4 ? need : 4);
	/* near the memory budget, grow by what is needed, not by doubling: the
	 * budget is then crossed by one element, and the evaluator stops */
	if (!mem_fits((size_t)(cap - l->cap) * sizeof *l->v))
		cap = need;
	mem_charge((size_t)(cap - l->cap) * sizeof *l->v);
	l->cap = cap;
	l->v = xrealloc(l->v, l->cap * sizeof *l->v);
}

/* Scalars and strings; containers are compared by v_cmp's walk. */
static int cmp_flat(value a, value b)
{
	if (a.t != b.t)
		return a.t < b.t ? -1 : 1;
	switch (a.t) {
	case V_INT: case V_BOOL:
		return a.i < b.i ? -1 : a.i > b.i;
	case V_STR:
		return strcmp(v_strobj(a)->s, v_strobj(b)->s);
	default:
		return 0;
	}
}

/* One pair of containers being compared: element i next (for a map,
 * 2i is key i and 2i+1 its value). */
typedef struct {
	value a, b;
	int i;
} cmp_frame;

int v_cmp(value a, value b)
{
	if (!v_iscont(a) || !v_iscont(b) || a.t != b.t)
		return cmp_flat(a, b);
	cmp_frame small[16], *fr = small;
	size_t n = 0, cap = 16;
	int r = 0;
	fr[n++] = (cmp_frame){ a, b, 0 };
	while (n && r == 0) {
		cmp_frame *f = &fr[n - 1];
		bool map = f->a.t == V_MAP;
		int na = map ? 2 * v_map(f->a)->n : v_list(f->a)->n, nb = map ? 2 * v_map(f->b)->n : v_list(f->b)->n;
		if (f->i >= na || f->i >= nb) {   /* one is a prefix of the other */
			r = na < nb ? -1 : na > nb;
			n--;
			continue;
		}
		int i = f->i++;
		value x = map ? (i % 2 ? v_map(f->a)->v[i / 2] : v_map(f->a)->k[i / 2]) : v_list(f->a)->v[i];
		value y = map ? (i % 2 ? v_map(f->b)->v[i / 2] : v_map(f->b)->k[i / 2]) : v_list(f->b)->v[i];
		if (!v_iscont(x) || !v_iscont(y) || x.t != y.t || x.o == y.o) {
			r = x.o == y.o && v_iscont(x) ? 0 : cmp_flat(x, y);
			continue;
		}
		if (n == cap) {
			cmp_frame *nf = xmalloc(2 * cap * sizeof *nf);
			memcpy(nf, fr, n * sizeof *nf);
			if (fr != small)
				free(fr);
			fr = nf;
			cap *= 2;
		}
		fr[n++] = (cmp_frame){ x, y, 0 };
	}
	if (fr != small)
		free(fr);
	return r;
}

bool v_eq(value a, value b)
{
	return v_cmp(a, b) == 0;
}


/* Binary search: index of x, or -(insertion point) - 1. */
static int bsearch_v(const value *v, int n, value x)
{
	int lo = 0, hi = n - 1;
	if (x.t == V_INT || x.t == V_BOOL) {
		/* scalar keys (chunk and rank numbers) are the common case: compare
		 * (type, value) inline, which is what v_cmp would do */
		while (lo <= hi) {
			int mid = (lo + hi) / 2;
			const value *m = &v[mid];
			if (m->t == x.t && m->i == x.i)
				return mid;
			if (m->t < x.t || (m->t == x.t && m->i < x.i)) lo = mid + 1;
			else hi = mid - 1;
		}
		return -lo - 1;
	}
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		int c = v_cmp(v[mid], x);
		if (c == 0)
			return mid;
		if (c < 0) lo = mid + 1;
		else hi = mid - 1;
	}
	return -lo - 1;
}

int v_set_find(const vlist *s, value x)
{
	int i = v_dense_find(s->v, s->n, x);
	if (i >= 0)
		return i;
	i = bsearch_v(s->v, s->n, x);
	return i >= 0 ? i : -1;
}

void v_set_add(vlist *s, value x)
{
	/* Appending in order is the common case (building from a range). */
	if (s->n == 0 || v_cmp(s->v[s->n - 1], x) < 0) {
		v_push(s, x);
		return;
	}
	int i = bsearch_v(s->v, s->n, x);
	if (i >= 0) {
		v_unref(x);
		return;
	}
	i = -i - 1;
	v_grow(s, s->n + 1);
	memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v);
	s->v[i] = x;
	s->n++;
}

bool v_set_remove(vlist *s, value x)
{
	int i = v_set_find(s, x);
	if (i < 0)
		return false;
	v_unref(s->v[i]);
	memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof *s->v);
	s->n--;
	return true;
}

/* Merge two sorted sets; keep elements according to `mode` (0 union,
 * 1 intersection, 2 difference). */
static value merge(const vlist *a, const vlist *b, int mode)
{
	/* room for the largest result, so elements are stored without a
	 * capacity check; sets of ranks and chunks (ints) compare inline */
	value r = v_newlist(V_SET, mode == 0 ? a->n + b->n : a->n);
	vlist *o = v_list(r);
	int i = 0, j = 0, c;
	while (i < a->n || j < b->n) {
		if (i >= a->n)
			c = 1;
		else if (j >= b->n)
			c = -1;
		else if (a->v[i].t == V_INT && b->v[j].t == V_INT)
			c = (a->v[i].i > b->v[j].i) - (a->v[i].i < b->v[j].i);
		else
			c = v_cmp(a->v[i], b->v[j]);
		if (c < 0) {
			if (mode != 1) o->v[o->n++] = v_ref(a->v[i]);
			i++;
		} else if (c > 0) {
			if (mode == 0) o->v[o->n++] = v_ref(b->v[j]);
			j++;
		} else {
			if (mode != 2) o->v[o->n++] = v_ref(a->v[i]);
			i++;
			j++;
		}
	}
	return r;
}

value v_set_union(const vlist *a, const vlist *b) { return merge(a, b, 0); }
value v_set_inter(const vlist *a, const vlist *b) { return merge(a, b, 1); }
value v_set_diff(const vlist *a, const vlist *b) { return merge(a, b, 2); }

value *v_map_search(const vmap *m, value k)
{
	int i = bsearch_v(m->k, m->n, k);
	return i >= 0 ? &m->v[i] : NULL;
}

void v_map_set(vmap *m, value k, value x)
{
	int i = bsearch_v(m->k, m->n, k);
	if (v_iscont(x))
		m->h.deep = 1;
	if (i >= 0) {
		v_unref(k);
		v_unref(m->v[i]);
		m->v[i] = x;
		return;
	}
	i = -i - 1;
	if (m->n == m->cap) {
		int cap = m->cap ? 2 * m->cap : 4;
		mem_charge((size_t)(cap - m->cap) * 2 * sizeof *m->k);
		m->cap = cap;
		m->k = xrealloc(m->k, m->cap * sizeof *m->k);
		m->v = xrealloc(m->v, m->cap * sizeof *m->v);
	}
	memmove(m->k + i + 1, m->k + i, (m->n - i) * sizeof *m->k);
	memmove(m->v + i + 1, m->v + i, (m->n - i) * sizeof *m->v);
	m->k[i] = k;
	m->v[i] = x;
	m->n++;
}

bool v_map_remove(vmap *m, value k)
{
	int i = bsearch_v(m->k, m->n, k);
	if (i < 0)
		return false;
	v_unref(m->k[i]);
	v_unref(m->v[i]);
	memmove(m->k + i, m->k + i + 1, (m->n - i - 1) * sizeof *m->k);
	memmove(m->v + i, m->v + i + 1, (m->n - i - 1) * sizeof *m->v);
	m->n--;
	return true;
}

typedef struct { char *p; size_t len, cap, max; } sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
	if (b->len >= b->max)
		return;
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void show(sbuf *b, value v, bool quote, int depth)
{
	char tmp[32];
	if (b->len >= b->max)   /* the rest would not be printed */
		return;
	if (depth > V_SHOW_DEPTH && v_iscont(v)) {
		put(b, "...", 3);
		return;
	}
	switch (v.t) {
	case V_NIL: put(b, "nothing", 7); break;
	case V_INT: put(b, tmp, snprintf(tmp, sizeof tmp, "%lld", (long long)v.i)); break;
	case V_BOOL: put(b, v.i ? "true" : "false", v.i ? 4 : 5); break;
	case V_STR:
		if (quote) put(b, "\"", 1);
		put(b, v_strobj(v)->s, v_strobj(v)->len);
		if (quote) put(b, "\"", 1);
		break;
	case V_LIST: case V_SET: {
		vlist *l = v_list(v);
		if (v.t == V_SET && l->n == 0) { put(b, "set()", 5); break; }
		put(b, v.t == V_LIST ? "[" : "{", 1);
		for (int i = 0; i < l->n && b->len < b->max; i++) {
			if (i) put(b, ", ", 2);
			show(b, l->v[i], true, depth + 1);
		}
		put(b, v.t == V_LIST ? "]" : "}", 1);
		break;
	}
	case V_MAP: {
		vmap *m = v_map(v);
		put(b, "{", 1);
		for (int i = 0; i < m->n && b->len < b->max; i++) {
			if (i) put(b, ", ", 2);
			show(b, m->k[i], true, depth + 1);
			put(b, ": ", 2);
			show(b, m->v[i], true, depth + 1);
		}
		put(b, "}", 1);
		break;
	}
	}
}

static char *show_top(value v, size_t max, bool quote)
{
	sbuf b = { .max = max };
	put(&b, "", 0);
	show(&b, v, quote, 0);
	if (b.len >= max) {
		b.len = max;
		b.p[b.len] = '\0';
		b.max = (size_t)-1;
		put(&b, "...", 3);
	}
	return b.p;
}

char *v_show(value v, size_t max) { return show_top(v, max, false); }
char *v_repr(value v, size_t max) { return show_top(v, max, true); }
