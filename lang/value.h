/*
 * value.h - runtime values of the coll evaluator.
 *
 * Scalars (int, bool) are immediate; strings, lists, sets and maps are
 * reference-counted heap objects shared by reference (Python semantics).
 * Reference counting instead of an arena keeps peak memory proportional to
 * live data: StragglAR at n = 1024 builds ~10^6 temporary sets.  No value
 * contains itself (v_would_cycle), so reference counting frees everything,
 * and the operations that walk values (free, compare) use explicit stacks,
 * so nesting depth costs heap, not C stack.  Every allocation is charged
 * to the evaluation's memory budget (xalloc.h).
 * Sets are sorted, duplicate-free arrays; maps are sorted key arrays.  Both
 * order by v_cmp: first by type, then by value.
 */
#ifndef COLL_VALUE_H
#define COLL_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { V_NIL, V_INT, V_BOOL, V_STR, V_LIST, V_SET, V_MAP } vtype;

/* deep: a list or map a container (list, set, map) was ever stored in;
 * only those can reach a cycle, so v_would_cycle looks inside no other
 * (a flag, never cleared: over-approximation only costs time). */
typedef struct vobj { int32_t rc; uint8_t t, deep; } vobj;
typedef struct value { uint8_t t; union { int64_t i; vobj *o; }; } value;
typedef struct { vobj h; int32_t n, cap; value *v; } vlist;      /* V_LIST, V_SET */
typedef struct { vobj h; int32_t n, cap; value *k, *v; } vmap;   /* V_MAP */
typedef struct { vobj h; int32_t len; char s[]; } vstr;          /* V_STR */

#define V_NILV ((value){ .t = V_NIL })
static inline value v_int(int64_t i) { return (value){ .t = V_INT, .i = i }; }
static inline value v_bool(bool b) { return (value){ .t = V_BOOL, .i = b }; }
static inline bool v_isobj(value v) { return v.t >= V_STR; }
/* A list, set or map: a value that holds values. */
static inline bool v_iscont(value v) { return v.t >= V_LIST; }
static inline vlist *v_list(value v) { return (vlist *)v.o; }
static inline vmap *v_map(value v) { return (vmap *)v.o; }
static inline vstr *v_strobj(value v) { return (vstr *)v.o; }

/* value.c */
extern const char *const v_type_names[];
/* Free an object whose count reached zero (v_unref's slow path). */
void v_free(value v);

/* Take another reference (returns v for chaining).  Inline, as are the
 * other one-liners here: the evaluator's loops take and drop references
 * on every variable read, and most of those are ints with nothing to do. */
static inline value v_ref(value v)
{
	if (v_isobj(v))
		v.o->rc++;
	return v;
}

/* Drop a reference; frees the object (recursively) at zero. */
static inline void v_unref(value v)
{
	if (v_isobj(v) && --v.o->rc == 0)
		v_free(v);
}
/* The longest string, list, set or map the evaluator builds: element
 * counts are int32 everywhere, and a bound well below INT32_MAX keeps
 * sums of two lengths from overflowing. */
#define V_MAX_LEN (1 << 30)
/* A new string of the len bytes at s. */
value v_newstr(const char *s, size_t len);
/* A new string x followed by y; the caller checks the sum against V_MAX_LEN. */
value v_strcat(const vstr *x, const vstr *y);
/* An empty list or set (t = V_LIST or V_SET) with room for cap items. */
value v_newlist(vtype t, int cap);
value v_newmap(void);
/* Make room for `need` items (v_push's slow path). */
void v_grow(vlist *l, int need);
/* Append to a list, taking ownership of x.  Inline: the evaluator's
 * push() runs once per element of every list a schedule builds.  A caller
 * appending to a list that already exists must first rule out a cycle
 * (v_would_cycle). */
static inline void v_push(vlist *l, value x)
{
	if (l->n == l->cap)
		v_grow(l, l->n + 1);
	l->v[l->n++] = x;
	if (v_iscont(x))
		l->h.deep = 1;
}
/* Would storing x inside container c make c contain itself (x is c, or
 * holds it at any depth)?  Values are shared by reference, so push(l, l)
 * or m[k] = m would build a cycle that comparing, printing or freeing
 * could never finish; the evaluator refuses those with an error. */
bool v_would_cycle(value c, value x);
/* Note that a container was stored in c by a write other than v_push
 * (an element assignment). */
static inline void v_note_store(value c, value x)
{
	if (v_iscont(x))
		c.o->deep = 1;
}
/* Total order over values: type first, then value (lists lexicographic).
 * Iterative: a list nested a million deep compares without recursion. */
int v_cmp(value a, value b);
bool v_eq(value a, value b);
/* Sets: index of x or -1; insert (owned x, ignored if present); remove. */
int v_set_find(const vlist *s, value x);
void v_set_add(vlist *s, value x);
bool v_set_remove(vlist *s, value x);
/* New sets a|b, a&b, a-b. */
value v_set_union(const vlist *a, const vlist *b);
value v_set_inter(const vlist *a, const vlist *b);
value v_set_diff(const vlist *a, const vlist *b);
/* Index of int x in v[0..n) when v holds consecutive ints there (a map
 * or set keyed by chunk or rank numbers), else -1: one comparison instead
 * of a binary search. */
static inline int v_dense_find(const value *v, int n, value x)
{
	if (x.t != V_INT || n == 0 || v[0].t != V_INT)
		return -1;
	uint64_t g = (uint64_t)x.i - (uint64_t)v[0].i;
	return g < (uint64_t)n && v[g].t == V_INT && v[g].i == x.i ? (int)g : -1;
}
/* Maps: slot of key or NULL (v_map_search: by binary search, v_map_get's
 * slow path); set (owned k and x); remove. */
value *v_map_search(const vmap *m, value k);
static inline value *v_map_get(const vmap *m, value k)
{
	int i = v_dense_find(m->k, m->n, k);
	return i >= 0 ? &m->v[i] : v_map_search(m, k);
}
void v_map_set(vmap *m, value k, value x);
bool v_map_remove(vmap *m, value k);
/* Human-readable text of v (as `str` and error messages show it); the
 * result is malloc'd and truncated after `max` bytes with "...", and
 * nesting deeper than V_SHOW_DEPTH prints as "...". */
#define V_SHOW_DEPTH 1000
char *v_show(value v, size_t max);
/* Like v_show, but strings are quoted, so 5 and "5" differ (for messages). */
char *v_repr(value v, size_t max);

#endif
