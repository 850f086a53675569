/*
 * matching.c - maximum-weight matching on general graphs (see matching.h).
 *
 * Edmonds' blossom algorithm in the primal-dual form of Galil (1986): stages
 * grow alternating trees from every exposed vertex along tight edges,
 * shrink odd cycles into blossoms, and when stuck change the duals by the
 * largest delta that keeps them feasible.  Each stage costs O(n^2 + m) and
 * there are at most n/2 + 1 of them, so O(n^3) on dense graphs.
 *
 * Representation: edge k has endpoints 2k and 2k+1; endpoint p belongs to
 * vertex endp[p] and its partner end is p^1.  Storing mates and labels as
 * endpoints (not vertices) records which edge was used, which augmenting
 * through nested blossoms needs.  Top-level blossoms of size 1 are the
 * vertices themselves (ids 0..n-1); real blossoms use ids n..2n-1.
 *
 * Duals are kept doubled (dual[v] = 2*u_v, dual[b] = z_b) so an edge's slack
 * is dual[i] + dual[j] - 2*w.  With integer weights every vertex reachable
 * from an exposed vertex by tight edges shares the parity of the exposed
 * vertices, so the slack of an edge between two S-blossoms is even and the
 * halving in delta3 is exact: everything stays in int64.
 *
 * Memory: one O(n + m) block per call (see layout()) plus the blossoms'
 * child lists, which grow on demand and are reused; stages only reset
 * arrays.  Out of memory unwinds with longjmp to match_max_weight, which
 * frees everything, so no helper has to propagate errors.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "matching.h"

/* Build with -DMATCH_NO_JUMPSTART=1 to test the algorithm from an empty
 * matching (the jump start hides most augmentations on easy inputs). */
#ifndef MATCH_NO_JUMPSTART
#define MATCH_NO_JUMPSTART 0
#endif
/* -DMATCH_DEBUG=1 re-derives cached slacks and fails on any mismatch. */
#ifndef MATCH_DEBUG
#define MATCH_DEBUG 0
#endif

/* Vertex/blossom labels.  BREAD marks S-blossoms already on a path in
 * scan_blossom; it is always cleared before scan_blossom returns. */
enum { FREE = 0, S = 1, T = 2, BREAD = 4 };

typedef struct {
	int *v;
	int len, cap;
} ivec;

typedef struct {
	int n, m;
	int *endp;        /* 2m: endpoint -> vertex */
	int64_t *wt2;     /* m: twice the weight, the unit slack() works in */
	int *adjstart;    /* n+1: CSR over the adj* arrays */
	int *adjp;        /* 2m: remote endpoint of each edge at a vertex */
	int *adjv;        /* 2m: remote vertex, copied so scanning a vertex
			     reads only sequential memory and small arrays */
	int64_t *adjw2;   /* 2m: wt2 of the edge, copied likewise */
	int *mate;        /* n: remote endpoint of the matched edge, or -1 */
	int *label;       /* 2n: FREE/S/T for top-level blossoms; for vertices
			     inside a T-blossom, T marks "reached" */
	int *labelend;    /* 2n: endpoint through which the label came, -1 root */
	int *inblossom;   /* n: top-level blossom containing the vertex */
	int *parent;      /* 2n: enclosing blossom or -1 */
	int *base;        /* 2n: base vertex; -1 marks an unused blossom id */
	int *bestedge;    /* 2n: least-slack edge to an S-blossom, or -1 */
	int64_t *bslack;  /* 2n: slack of bestedge, kept current through dual
			     updates so comparisons need no edge lookups */
	int64_t *dual;    /* 2n */
	unsigned char *allow; /* m: edge known tight this stage */
	ivec *childs;     /* 2n, used for n..2n-1: sub-blossoms around the cycle,
			     starting with the one holding the base */
	ivec *endps;      /* endps[b].v[i] joins childs[i] to childs[i+1] */
	ivec *best;       /* least-slack edge to each neighbouring S-blossom */
	unsigned char *best_ok; /* 2n: best[b] valid (S-blossom made this stage) */
	int *unused, nunused;
	int *queue, qlen; /* S vertices whose edges still need scanning */
	/* scratch, each sized so no stage ever allocates */
	int *lstack;      /* 2n: DFS for leaves() */
	int *lbuf;        /* n: leaves() output */
	int *path;        /* n */
	int *pathe;       /* n */
	int *path2;       /* n */
	int *path2e;      /* n */
	int *bestto;      /* 2n, all -1 between uses */
	int64_t *besttos; /* 2n: slack of bestto */
	int *touched;     /* 2n */
	int *stack;       /* 2n */
	int *stackv;      /* 2n */
	jmp_buf oom;
	void **allocs;    /* everything malloc'ed, for one-shot cleanup */
	int nallocs, capallocs;
} mctx;

/* Unwind to match_max_weight: 1 = out of memory, 2 = broken invariant
 * (a bug here, reported rather than risking a wrong matching). */
static void fail(mctx *c, int why)
{
	longjmp(c->oom, why);
}

static void *take(mctx *c, size_t nmemb, size_t size)
{
	if (c->nallocs == c->capallocs) {
		int ncap = c->capallocs ? 2 * c->capallocs : 64;
		void **na = realloc(c->allocs, (size_t)ncap * sizeof *na);
		if (!na)
			fail(c, 1);
		c->allocs = na;
		c->capallocs = ncap;
	}
	void *p = malloc(nmemb ? nmemb * size : 1);
	if (!p)
		fail(c, 1);
	c->allocs[c->nallocs++] = p;
	return p;
}

/* Grow a child/best list; the old buffer stays on the cleanup list, which
 * is fine because growth is geometric. */
static void reserve(mctx *c, ivec *a, int need)
{
	if (need <= a->cap)
		return;
	int ncap = a->cap ? 2 * a->cap : 8;
	while (ncap < need)
		ncap *= 2;
	int *nv = take(c, (size_t)ncap, sizeof *nv);
	if (a->len)
		memcpy(nv, a->v, (size_t)a->len * sizeof *nv);
	a->v = nv;
	a->cap = ncap;
}

static inline int64_t slack(const mctx *c, int k)
{
	return c->dual[c->endp[2 * k]] + c->dual[c->endp[2 * k + 1]] -
	       c->wt2[k];
}

/* Vertices of blossom b, written to out; returns how many. */
static int leaves(mctx *c, int b, int *out)
{
	if (b < c->n) {
		out[0] = b;
		return 1;
	}
	int sp = 0, cnt = 0;
	c->lstack[sp++] = b;
	while (sp) {
		int x = c->lstack[--sp];
		const ivec *ch = &c->childs[x];
		for (int i = 0; i < ch->len; i++) {
			int s = ch->v[i];
			if (s < c->n)
				out[cnt++] = s;
			else
				c->lstack[sp++] = s;
		}
	}
	return cnt;
}

/* Index i in a cyclic list of length len, for i in (-len, len). */
static inline int cyc(int i, int len)
{
	return i < 0 ? i + len : i;
}

static int index_of(const ivec *a, int x)
{
	for (int i = 0; i < a->len; i++)
		if (a->v[i] == x)
			return i;
	return -1;
}

/* Label w's top-level blossom t, reached through endpoint p; a T label
 * immediately passes S on to the blossom matched to its base. */
static void assign_label(mctx *c, int w, int t, int p)
{
	for (;;) {
		int b = c->inblossom[w];
		c->label[w] = c->label[b] = t;
		c->labelend[w] = c->labelend[b] = p;
		c->bestedge[w] = c->bestedge[b] = -1;
		if (t == S) {
			int k = leaves(c, b, c->lbuf);
			if (c->qlen + k > c->n)
				fail(c, 2); /* each vertex turns S once a stage */
			memcpy(c->queue + c->qlen, c->lbuf, (size_t)k * sizeof(int));
			c->qlen += k;
			return;
		}
		int mp = c->mate[c->base[b]];
		w = c->endp[mp];
		t = S;
		p = mp ^ 1;
	}
}

/* Walk up the trees from S-vertices v and w in lock step; return the base
 * of the blossom where the paths meet, or -1 if they reach two different
 * roots (an augmenting path). */
static int scan_blossom(mctx *c, int v, int w)
{
	int np = 0, found = -1;
	while (v != -1 || w != -1) {
		int b = c->inblossom[v];
		if (c->label[b] & BREAD) {
			found = c->base[b];
			break;
		}
		c->path[np++] = b;
		c->label[b] = S | BREAD;
		if (c->labelend[b] == -1) {
			v = -1;
		} else {
			v = c->endp[c->labelend[b]];
			b = c->inblossom[v];
			v = c->endp[c->labelend[b]];
		}
		if (w != -1) {
			int t = v;
			v = w;
			w = t;
		}
	}
	for (int i = 0; i < np; i++)
		c->label[c->path[i]] = S;
	return found;
}

/* Consider edge k (from the blossom's leaves or a child's best list) for
 * the new blossom b's least-slack edge to each other S-blossom. */
static inline void best_candidate(mctx *c, int b, int k, int *ntouched)
{
	int j = c->endp[2 * k + 1];
	if (c->inblossom[j] == b)
		j = c->endp[2 * k];
	int bj = c->inblossom[j];
	if (bj == b || c->label[bj] != S)
		return;
	int64_t s = slack(c, k);
	if (c->bestto[bj] == -1) {
		c->bestto[bj] = k;
		c->besttos[bj] = s;
		c->touched[(*ntouched)++] = bj;
	} else if (s < c->besttos[bj]) {
		c->bestto[bj] = k;
		c->besttos[bj] = s;
	}
}

/* Shrink the odd cycle closed by tight edge k through base into a new
 * S-blossom. */
static void add_blossom(mctx *c, int bv_base, int k)
{
	int n = c->n;
	int v = c->endp[2 * k], w = c->endp[2 * k + 1];
	int bb = c->inblossom[bv_base], bv = c->inblossom[v],
	    bw = c->inblossom[w];
	int b = c->unused[--c->nunused];
	c->base[b] = bv_base;
	c->parent[b] = -1;
	c->parent[bb] = b;

	/* Walk both tree paths down to the base's blossom. */
	int nv1 = 0, nw1 = 0;
	while (bv != bb) {
		c->parent[bv] = b;
		c->path[nv1] = bv;
		c->pathe[nv1++] = c->labelend[bv];
		bv = c->inblossom[c->endp[c->labelend[bv]]];
	}
	while (bw != bb) {
		c->parent[bw] = b;
		c->path2[nw1] = bw;
		c->path2e[nw1++] = c->labelend[bw] ^ 1;
		bw = c->inblossom[c->endp[c->labelend[bw]]];
	}
	int len = 1 + nv1 + nw1;
	ivec *ch = &c->childs[b], *ep = &c->endps[b];
	ch->len = ep->len = 0;
	reserve(c, ch, len);
	reserve(c, ep, len);
	ch->len = ep->len = len;
	ch->v[0] = bb;
	for (int i = 1; i <= nv1; i++)
		ch->v[i] = c->path[nv1 - i];
	for (int i = 0; i < nv1; i++)
		ep->v[i] = c->pathe[nv1 - 1 - i];
	ep->v[nv1] = 2 * k;
	for (int i = 0; i < nw1; i++) {
		ch->v[nv1 + 1 + i] = c->path2[i];
		ep->v[nv1 + 1 + i] = c->path2e[i];
	}

	c->label[b] = S;
	c->labelend[b] = c->labelend[bb];
	c->dual[b] = 0;

	/* Former T vertices become S and must be scanned. */
	int nl = leaves(c, b, c->lbuf);
	for (int i = 0; i < nl; i++) {
		int x = c->lbuf[i];
		if (c->label[c->inblossom[x]] == T) {
			if (c->qlen >= n)
				fail(c, 2);
			c->queue[c->qlen++] = x;
		}
		c->inblossom[x] = b;
	}

	/* Merge the children's least-slack edges to other S-blossoms; a child
	 * without a valid list contributes all edges of its vertices. */
	int ntouched = 0;
	for (int ci = 0; ci < len; ci++) {
		int s = ch->v[ci];
		if (s >= n && c->best_ok[s]) {
			const ivec *bl = &c->best[s];
			for (int i = 0; i < bl->len; i++)
				best_candidate(c, b, bl->v[i], &ntouched);
		} else {
			/* Same as best_candidate, but the adjacency arrays
			 * already hold the far vertex and the weight. */
			int cnt = leaves(c, s, c->lbuf);
			for (int li = 0; li < cnt; li++) {
				int x = c->lbuf[li];
				int64_t dx = c->dual[x];
				for (int a = c->adjstart[x]; a < c->adjstart[x + 1]; a++) {
					int bj = c->inblossom[c->adjv[a]];
					if (bj == b || c->label[bj] != S)
						continue;
					int64_t sl = dx + c->dual[c->adjv[a]] - c->adjw2[a];
					if (c->bestto[bj] == -1) {
						c->touched[ntouched++] = bj;
					} else if (sl >= c->besttos[bj]) {
						continue;
					}
					c->bestto[bj] = c->adjp[a] >> 1;
					c->besttos[bj] = sl;
				}
			}
		}
		if (s >= n) {
			c->best_ok[s] = 0;
			c->best[s].len = 0;
		}
		c->bestedge[s] = -1;
	}
	ivec *bl = &c->best[b];
	bl->len = 0;
	reserve(c, bl, ntouched);
	int be = -1;
	int64_t bs = 0;
	for (int i = 0; i < ntouched; i++) {
		int bj = c->touched[i];
		int kk = c->bestto[bj];
		c->bestto[bj] = -1;
		bl->v[bl->len++] = kk;
		int64_t s = c->besttos[bj];
		if (be == -1 || s < bs) {
			be = kk;
			bs = s;
		}
	}
	c->best_ok[b] = 1;
	c->bestedge[b] = be;
	c->bslack[b] = bs;
}

static void release_blossom(mctx *c, int b)
{
	c->label[b] = c->labelend[b] = -1;
	c->childs[b].len = c->endps[b].len = 0;
	c->base[b] = -1;
	c->best[b].len = 0;
	c->best_ok[b] = 0;
	c->bestedge[b] = -1;
	c->unused[c->nunused++] = b;
}

/* Make every child of b a top-level blossom.  At the end of a stage,
 * children with zero dual are expanded too (iteratively, not recursively,
 * so deep nesting cannot exhaust the C stack). */
static void free_children(mctx *c, int b, int endstage)
{
	int n = c->n, sp = 0;
	c->stack[sp++] = b;
	while (sp) {
		int x = c->stack[--sp];
		const ivec *ch = &c->childs[x];
		for (int i = 0; i < ch->len; i++) {
			int s = ch->v[i];
			c->parent[s] = -1;
			if (s < n) {
				c->inblossom[s] = s;
			} else if (endstage && c->dual[s] == 0) {
				c->stack[sp++] = s;
			} else {
				int cnt = leaves(c, s, c->lbuf);
				for (int li = 0; li < cnt; li++)
					c->inblossom[c->lbuf[li]] = s;
			}
		}
		if (x != b)
			release_blossom(c, x);
	}
}

/* Dissolve top-level blossom b.  Mid-stage b is a T-blossom whose dual hit
 * zero: its children along the even path from the entry to the base keep
 * the tree alternating, the other children lose their labels unless a
 * vertex in them was reached by a tight edge. */
static void expand_blossom(mctx *c, int b, int endstage)
{
	free_children(c, b, endstage);
	if (!endstage && c->label[b] == T) {
		const ivec *ch = &c->childs[b];
		const int *C = ch->v, *E = c->endps[b].v;
		int L = ch->len;
		int entry = c->inblossom[c->endp[c->labelend[b] ^ 1]];
		int j = index_of(ch, entry), jstep, et;
		if (j & 1) {
			j -= L;
			jstep = 1;
			et = 0;
		} else {
			jstep = -1;
			et = 1;
		}
		int p = c->labelend[b];
		while (j != 0) {
			int q = E[cyc(j - et, L)];
			c->label[c->endp[p ^ 1]] = FREE;
			c->label[c->endp[q ^ et ^ 1]] = FREE;
			assign_label(c, c->endp[p ^ 1], T, p);
			c->allow[q >> 1] = 1;
			j += jstep;
			p = E[cyc(j - et, L)] ^ et;
			c->allow[p >> 1] = 1;
			j += jstep;
		}
		int bv = C[cyc(j, L)];
		c->label[c->endp[p ^ 1]] = c->label[bv] = T;
		c->labelend[c->endp[p ^ 1]] = c->labelend[bv] = p;
		c->bestedge[bv] = -1;
		j += jstep;
		while (C[cyc(j, L)] != entry) {
			bv = C[cyc(j, L)];
			j += jstep;
			if (c->label[bv] == S)
				continue;
			int cnt = leaves(c, bv, c->lbuf), x = -1;
			for (int li = 0; li < cnt; li++)
				if (c->label[c->lbuf[li]] != FREE) {
					x = c->lbuf[li];
					break;
				}
			if (x != -1) {
				c->label[x] = FREE;
				c->label[c->endp[c->mate[c->base[bv]]]] = FREE;
				assign_label(c, x, T, c->labelend[x]);
			}
		}
	}
	release_blossom(c, b);
}

/* Swap matched and unmatched edges inside blossom b so that vertex v
 * becomes its base.  Sub-blossoms are independent of each other, so the
 * nested work goes on an explicit stack in any order. */
static void augment_blossom(mctx *c, int b0, int v0)
{
	int n = c->n, sp = 0;
	c->stack[sp] = b0;
	c->stackv[sp++] = v0;
	while (sp) {
		--sp;
		int b = c->stack[sp], v = c->stackv[sp];
		int t = v;
		while (c->parent[t] != b)
			t = c->parent[t];
		if (t >= n) {
			c->stack[sp] = t;
			c->stackv[sp++] = v;
		}
		ivec *ch = &c->childs[b], *ep = &c->endps[b];
		int L = ch->len;
		int i = index_of(ch, t), j = i, jstep, et;
		if (i & 1) {
			j -= L;
			jstep = 1;
			et = 0;
		} else {
			jstep = -1;
			et = 1;
		}
		while (j != 0) {
			j += jstep;
			t = ch->v[cyc(j, L)];
			int p = ep->v[cyc(j - et, L)] ^ et;
			if (t >= n) {
				c->stack[sp] = t;
				c->stackv[sp++] = c->endp[p];
			}
			j += jstep;
			t = ch->v[cyc(j, L)];
			if (t >= n) {
				c->stack[sp] = t;
				c->stackv[sp++] = c->endp[p ^ 1];
			}
			c->mate[c->endp[p]] = p ^ 1;
			c->mate[c->endp[p ^ 1]] = p;
		}
		/* Rotate so the child holding v comes first. */
		if (i) {
			memcpy(c->lbuf, ch->v, (size_t)i * sizeof(int));
			memmove(ch->v, ch->v + i, (size_t)(L - i) * sizeof(int));
			memcpy(ch->v + L - i, c->lbuf, (size_t)i * sizeof(int));
			memcpy(c->lbuf, ep->v, (size_t)i * sizeof(int));
			memmove(ep->v, ep->v + i, (size_t)(L - i) * sizeof(int));
			memcpy(ep->v + L - i, c->lbuf, (size_t)i * sizeof(int));
		}
		c->base[b] = v;
	}
}

/* Flip the augmenting path through tight edge k between two trees. */
static void augment_matching(mctx *c, int k)
{
	int n = c->n;
	for (int side = 0; side < 2; side++) {
		int s = c->endp[2 * k + side], p = 2 * k + 1 - side;
		for (;;) {
			int bs = c->inblossom[s];
			if (bs >= n)
				augment_blossom(c, bs, s);
			c->mate[s] = p;
			if (c->labelend[bs] == -1)
				break;
			int t = c->endp[c->labelend[bs]];
			int bt = c->inblossom[t];
			s = c->endp[c->labelend[bt]];
			int j = c->endp[c->labelend[bt] ^ 1];
			if (bt >= n)
				augment_blossom(c, bt, j);
			c->mate[j] = c->labelend[bt];
			p = c->labelend[bt] ^ 1;
		}
	}
}

/* Use tight edge from S-vertex v to endpoint p: grow the tree, make a
 * blossom, or augment (returns 1). */
static int use_tight(mctx *c, int v, int p)
{
	int w = c->endp[p], bw = c->inblossom[w];
	if (c->label[bw] == FREE) {
		assign_label(c, w, T, p ^ 1);
	} else if (c->label[bw] == S) {
		int base = scan_blossom(c, v, w);
		if (base >= 0) {
			add_blossom(c, base, p >> 1);
		} else {
			augment_matching(c, p >> 1);
			return 1;
		}
	} else if (c->label[w] == FREE) {
		/* w sits inside a T-blossom; remember how to reach it in case
		 * the blossom is expanded later this stage. */
		c->label[w] = T;
		c->labelend[w] = p ^ 1;
	}
	return 0;
}

/* Scan all edges of S-vertex v; returns 1 if it augmented. */
static int scan_vertex(mctx *c, int v)
{
	const int *adjp = c->adjp, *adjv = c->adjv;
	const int64_t *dual = c->dual, *adjw2 = c->adjw2;
	int *inb = c->inblossom, *label = c->label, *bestedge = c->bestedge;
	int64_t *bslack = c->bslack;
	unsigned char *allow = c->allow;
	int64_t dv = dual[v];
	int bv = inb[v];
	for (int a = c->adjstart[v], e = c->adjstart[v + 1]; a < e; a++) {
		int w = adjv[a], bw = inb[w];
		if (bv == bw)
			continue;
		int p = adjp[a], k = p >> 1;
		int64_t ks = dv + dual[w] - adjw2[a];
		if (ks <= 0 || allow[k]) {
			allow[k] = 1;
			if (use_tight(c, v, p))
				return 1;
			bv = inb[v]; /* a new blossom may have swallowed v */
		} else if (label[bw] == S) {
			if (bestedge[bv] == -1 || ks < bslack[bv]) {
				bestedge[bv] = k;
				bslack[bv] = ks;
			}
		} else if (label[w] == FREE) {
			if (bestedge[w] == -1 || ks < bslack[w]) {
				bestedge[w] = k;
				bslack[w] = ks;
			}
		}
	}
	return 0;
}

/* One stage: grow trees from all exposed vertices until an augmentation
 * (returns 1) or until the duals prove the matching optimal (returns 0). */
static int stage(mctx *c, bool maxcard)
{
	int n = c->n;
	memset(c->label, 0, 2 * (size_t)n * sizeof(int));
	memset(c->bestedge, -1, 2 * (size_t)n * sizeof(int));
	for (int b = n; b < 2 * n; b++)
		c->best_ok[b] = 0;
	memset(c->allow, 0, (size_t)c->m);
	c->qlen = 0;
	for (int v = 0; v < n; v++)
		if (c->mate[v] == -1 && c->label[c->inblossom[v]] == FREE)
			assign_label(c, v, S, -1);

	for (;;) {
		while (c->qlen)
			if (scan_vertex(c, c->queue[--c->qlen]))
				return 1;

		/* Largest dual change that keeps every slack >= 0. */
		int type = -1, dedge = -1, dblossom = -1;
		int64_t delta = 0;
		if (!maxcard) {
			type = 1;
			delta = c->dual[0];
			for (int v = 1; v < n; v++)
				if (c->dual[v] < delta)
					delta = c->dual[v];
		}
		for (int v = 0; v < n; v++) {
			if (c->bestedge[v] != -1 &&
			    c->label[c->inblossom[v]] == FREE) {
				int64_t d = c->bslack[v];
				if (MATCH_DEBUG && d != slack(c, c->bestedge[v]))
					fail(c, 2);
				if (type == -1 || d < delta) {
					delta = d;
					type = 2;
					dedge = c->bestedge[v];
				}
			}
		}
		for (int b = 0; b < 2 * n; b++) {
			if (c->bestedge[b] != -1 && c->parent[b] == -1 &&
			    c->label[b] == S) {
				int64_t d = c->bslack[b];
				if (MATCH_DEBUG && d != slack(c, c->bestedge[b]))
					fail(c, 2);
				if (d & 1)
					fail(c, 2); /* parity argument above */
				d /= 2;
				if (type == -1 || d < delta) {
					delta = d;
					type = 3;
					dedge = c->bestedge[b];
				}
			}
		}
		for (int b = n; b < 2 * n; b++) {
			if (c->base[b] >= 0 && c->parent[b] == -1 &&
			    c->label[b] == T &&
			    (type == -1 || c->dual[b] < delta)) {
				delta = c->dual[b];
				type = 4;
				dblossom = b;
			}
		}
		if (type == -1) {
			/* maxcard and nothing left to grow: optimal. */
			type = 1;
			delta = c->dual[0];
			for (int v = 1; v < n; v++)
				if (c->dual[v] < delta)
					delta = c->dual[v];
			if (delta < 0)
				delta = 0;
		}

		/* Cached best slacks move with the duals: an edge from a
		 * free vertex to an S-vertex loses delta, one between two
		 * S-blossoms loses 2*delta, one from a vertex inside a
		 * T-blossom to an S-vertex keeps its slack. */
		for (int v = 0; v < n; v++) {
			int l = c->label[c->inblossom[v]];
			if (l == S) {
				c->dual[v] -= delta;
				if (c->inblossom[v] == v && c->bestedge[v] != -1)
					c->bslack[v] -= 2 * delta;
			} else if (l == T) {
				c->dual[v] += delta;
			} else if (c->bestedge[v] != -1) {
				c->bslack[v] -= delta;
			}
		}
		for (int b = n; b < 2 * n; b++) {
			if (c->base[b] >= 0 && c->parent[b] == -1) {
				if (c->label[b] == S) {
					c->dual[b] += delta;
					if (c->bestedge[b] != -1)
						c->bslack[b] -= 2 * delta;
				} else if (c->label[b] == T) {
					c->dual[b] -= delta;
				}
			}
		}

		if (type == 1)
			return 0;
		if (type == 4) {
			expand_blossom(c, dblossom, 0);
			continue;
		}
		/* The edge is now tight; use it from its S end directly
		 * (re-queueing the vertex would rescan all its edges). */
		c->allow[dedge] = 1;
		int i = c->endp[2 * dedge], p = 2 * dedge + 1;
		if (c->label[c->inblossom[i]] != S) {
			i = c->endp[p];
			p ^= 1;
		}
		if (c->inblossom[i] != c->inblossom[c->endp[p]] &&
		    use_tight(c, i, p))
			return 1;
	}
}

static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Keep the edges the algorithm needs (positive weights unless maxcard) and
 * build the adjacency arrays; returns the largest kept weight, at least 0.
 * Parallel edges are kept as they are: the algorithm is correct on
 * multigraphs and a lighter copy can never be preferred to the heavier
 * one, so collapsing them would only cost time on every call. */
static int64_t build_graph(mctx *c, int ne, const int *eu, const int *ev,
			   const int64_t *w, bool maxcard)
{
	int n = c->n;
	int64_t maxw = 0;
	int *start = c->adjstart, *fill = c->lstack; /* lstack: 2n >= n+1 */
	memset(start, 0, ((size_t)n + 1) * sizeof(int));
	for (int i = 0; i < ne; i++) {
		if (!maxcard && w[i] <= 0)
			continue;
		start[eu[i] + 1]++;
		start[ev[i] + 1]++;
		if (w[i] > maxw)
			maxw = w[i];
	}
	for (int v = 0; v < n; v++)
		start[v + 1] += start[v];
	memcpy(fill, start, ((size_t)n + 1) * sizeof(int));
	for (int i = 0, k = 0; i < ne; i++) {
		if (!maxcard && w[i] <= 0)
			continue;
		int a = eu[i], b = ev[i];
		int64_t w2 = 2 * w[i];
		c->endp[2 * k] = a;
		c->endp[2 * k + 1] = b;
		c->wt2[k] = w2;
		int fa = fill[a]++, fb = fill[b]++;
		c->adjp[fa] = 2 * k + 1;
		c->adjv[fa] = b;
		c->adjw2[fa] = w2;
		c->adjp[fb] = 2 * k;
		c->adjv[fb] = a;
		c->adjw2[fb] = w2;
		k++;
	}
	return maxw;
}

/* Place every fixed-size array in one block (base NULL: just measure).
 * One big allocation instead of thirty keeps malloc from returning the
 * memory to the kernel between calls, which a caller running once per
 * round would otherwise pay for in page faults. */
static size_t layout(mctx *c, char *base)
{
	size_t n = (size_t)c->n, n2 = 2 * n, m = (size_t)c->m, off = 0;
#define CARVE(field, count)                                                 \
	do {                                                                \
		if (base)                                                   \
			c->field = (void *)(base + off);                    \
		off += ((count) * sizeof *c->field + 7) & ~(size_t)7;       \
	} while (0)
	CARVE(adjw2, 2 * m);
	CARVE(wt2, m);
	CARVE(dual, n2);
	CARVE(bslack, n2);
	CARVE(besttos, n2);
	CARVE(childs, n2);
	CARVE(endps, n2);
	CARVE(best, n2);
	CARVE(endp, 2 * m);
	CARVE(adjp, 2 * m);
	CARVE(adjv, 2 * m);
	CARVE(adjstart, n + 1);
	CARVE(mate, n);
	CARVE(label, n2);
	CARVE(labelend, n2);
	CARVE(inblossom, n);
	CARVE(parent, n2);
	CARVE(base, n2);
	CARVE(bestedge, n2);
	CARVE(unused, n);
	CARVE(queue, n);
	CARVE(lstack, n2);
	CARVE(lbuf, n);
	CARVE(path, n);
	CARVE(pathe, n);
	CARVE(path2, n);
	CARVE(path2e, n);
	CARVE(bestto, n2);
	CARVE(touched, n2);
	CARVE(stack, n2);
	CARVE(stackv, n2);
	CARVE(allow, m);
	CARVE(best_ok, n2);
#undef CARVE
	return off;
}

static int solve(mctx *c, int nv, int m, int ne, const int *eu,
		 const int *ev, const int64_t *w, bool maxcard, int *mate)
{
	int n = nv;
	size_t n2 = 2 * (size_t)n;
	c->n = n;
	c->m = m;
	layout(c, take(c, layout(c, NULL), 1));
	int64_t maxw = build_graph(c, ne, eu, ev, w, maxcard);
	memset(c->childs, 0, n2 * sizeof(ivec));
	memset(c->endps, 0, n2 * sizeof(ivec));
	memset(c->best, 0, n2 * sizeof(ivec));
	memset(c->best_ok, 0, n2);
	for (size_t i = 0; i < n2; i++) {
		c->parent[i] = -1;
		c->base[i] = i < (size_t)n ? (int)i : -1;
		c->bestto[i] = -1;
		c->labelend[i] = -1;
		c->dual[i] = i < (size_t)n ? maxw : 0;
	}
	c->nunused = 0;
	for (int b = 2 * n - 1; b >= n; b--)
		c->unused[c->nunused++] = b;
	for (int v = 0; v < n; v++) {
		c->mate[v] = -1;
		c->inblossom[v] = v;
	}

	/* Jump start: with every dual at maxw the edges of weight maxw are
	 * tight, and any matching of tight edges satisfies all invariants
	 * (matched edges tight, exposed duals equal and minimal), so match
	 * them greedily instead of spending a stage on each. */
	int exposed = MATCH_NO_JUMPSTART ? 0 : n;
	for (int k = 0; k < c->m && exposed > 1; k++) {
		int a = c->endp[2 * k], b = c->endp[2 * k + 1];
		if (c->wt2[k] == 2 * maxw && c->mate[a] == -1 && c->mate[b] == -1) {
			c->mate[a] = 2 * k + 1;
			c->mate[b] = 2 * k;
			exposed -= 2;
		}
	}

	while (stage(c, maxcard)) {
		/* S-blossoms with zero dual are no longer needed. */
		for (int b = n; b < 2 * n; b++)
			if (c->parent[b] == -1 && c->base[b] >= 0 &&
			    c->label[b] == S && c->dual[b] == 0)
				expand_blossom(c, b, 1);
	}

	for (int v = 0; v < n; v++)
		mate[v] = c->mate[v] >= 0 ? c->endp[c->mate[v]] : -1;
	return 0;
}

int match_max_weight(int nv, int ne, const int *eu, const int *ev,
		     const int64_t *w, bool maxcard, int *mate,
		     char *err, size_t errlen)
{
	if (nv < 0)
		return bad(err, errlen, "matching: negative vertex count %d", nv);
	if (ne < 0)
		return bad(err, errlen, "matching: negative edge count %d", ne);
	if (nv > INT_MAX / 2 - 1 || ne > INT_MAX / 2 - 1)
		return bad(err, errlen, "matching: graph too large (%d vertices, %d edges)", nv, ne);
	if (nv > 0 && !mate)
		return bad(err, errlen, "matching: mate array is NULL");
	if (ne > 0 && (!eu || !ev || !w))
		return bad(err, errlen, "matching: edge arrays are NULL");
	for (int i = 0; i < ne; i++) {
		if (eu[i] < 0 || eu[i] >= nv || ev[i] < 0 || ev[i] >= nv)
			return bad(err, errlen, "matching: edge %d (%d, %d) has a vertex outside 0..%d",
				   i, eu[i], ev[i], nv - 1);
		if (eu[i] == ev[i])
			return bad(err, errlen, "matching: edge %d is a self-loop on vertex %d", i, eu[i]);
		if (w[i] > MATCH_MAX_WEIGHT || w[i] < -MATCH_MAX_WEIGHT)
			return bad(err, errlen, "matching: edge %d weight %lld is beyond +-2^40",
				   i, (long long)w[i]);
	}
	if (nv == 0)
		return 0;
	int kept = 0;
	for (int i = 0; i < ne; i++)
		kept += maxcard || w[i] > 0;

	mctx *c = calloc(1, sizeof *c);
	if (!c)
		return bad(err, errlen, "matching: out of memory");
	int rc;
	switch (setjmp(c->oom)) { /* a context where the standard allows setjmp */
	case 0:
		rc = solve(c, nv, kept, ne, eu, ev, w, maxcard, mate);
		break;
	case 1:
		rc = bad(err, errlen, "matching: out of memory");
		break;
	default:
		rc = bad(err, errlen, "matching: internal error (broken invariant)");
		break;
	}
	for (int i = 0; i < c->nallocs; i++)
		free(c->allocs[i]);
	free(c->allocs);
	free(c);
	return rc;
}
