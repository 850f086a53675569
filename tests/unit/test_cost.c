/*
 * test_cost.c - the cost model (runtime/model/)
 * against the closed forms of the papers, on schedules built by hand.
 *
 * The papers' formulas are tests of the model, not its source: each
 * schedule below is built transfer by transfer (the same shapes the stdlib
 * .coll files produce), checked to be a correct collective by a small
 * bitset verifier, and then costed; the cost must equal the formula.
 *
 *   1. StragglAR Table 1 (uniform alpha, beta; power-of-2 n = 4 .. 256):
 *      Ring 2(n-1) a + 2(n-1)/n s b, RH/D 2 log n a + 2(n-1)/n s b,
 *      StragglAR (precondition hidden by the delay) (n + log n - 2)(a +
 *      s/(n-1) b), Broadcast baseline (its allreduce precondition hidden)
 *      log n (a + s b); to 1e-9 relative, by both models.
 *   2. The rank-reordering paper, section IV-A, on random per-pair
 *      matrices; the assumptions each formula makes are written next to
 *      its test (test_reorder_*).
 *   3. Simulated StragglAR vs ring at n = 256, 1 GiB, 3 us, 450 GB/s: the
 *      speedup and the critical straggler delay against StragglAR section
 *      4.2's rule; a bottleneck link shows on the critical path;
 *      pipelining; bad units and matrices give clear errors.
 *
 * Build (from the repository root) and run:
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Ilang -Icodegen -Iruntime/model -Iruntime/include -o test_cost \
 *      tests/unit/test_cost.c codegen/costplan.c lang/ir.c lang/xalloc.c runtime/model/\*.c -lm
 *   ./test_cost        exit status 0 iff every check passed
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cost.h"
#include "costplan.h"
#include "ir.h"
#include "linkmodel.h"

static int failures, checks;
static const srcpos nopos;

#define GiB 1073741824.0
#define MiB 1048576.0
#define KiB 1024.0

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
	checks++;
	if (ok)
		return;
	failures++;
	va_list ap;
	va_start(ap, fmt);
	fputs("FAIL: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
}

static int close_rel(double got, double want, double tol)
{
	return fabs(got - want) <= tol * fabs(want) || (want == 0 && fabs(got) < 1e-300);
}

static void check_rel(const char *what, double got, double want, double tol)
{
	check(close_rel(got, want, tol), "%s: got %.15g, want %.15g (rel err %.3g)", what, got,
	      want, want ? fabs(got - want) / fabs(want) : fabs(got));
}

static int ilog2(int n)
{
	int k = 0;
	while ((1 << (k + 1)) <= n)
		k++;
	return k;
}

/* --- schedules built by hand ---------------------------------------------- */

static void add(ir_sched *s, int a, int b, int c, ir_op op)
{
	ir_add(s, a, b, c, op, nopos);
}

/* Ring reduce-scatter over ranks 0 .. m-1 with m chunks (ring_rs in
 * stdlib/ring.coll): chunk c ends complete on rank c.  Used alone and as
 * StragglAR's precondition on the n-1 non-stragglers. */
static void ring_rs_on(ir_sched *s, int m, int phase)
{
	for (int st = 0; st <= m - 2; st++) {
		ir_begin_round(s, phase, nopos);
		for (int r = 0; r < m; r++)
			add(s, r, (r + 1) % m, ((r - st - 1) % m + m) % m, IR_REDUCE_OP);
	}
}

static void ring_ag_on(ir_sched *s, int m, int phase)
{
	for (int st = 0; st <= m - 2; st++) {
		ir_begin_round(s, phase, nopos);
		for (int r = 0; r < m; r++)
			add(s, r, (r + 1) % m, ((r - st) % m + m) % m, IR_COPY);
	}
}

static ir_sched *gen_ring(int n)
{
	ir_sched *s = ir_new(IR_ALLREDUCE, "ring", n);
	s->chunks = n;
	int ph = ir_phase(s, "main");
	ring_rs_on(s, n, ph);
	ring_ag_on(s, n, ph);
	return s;
}

/* Recursive halving (reduce-scatter) with distance doubling: round i pairs
 * j with j ^ 2^i, which keeps the chunks whose bit i is its own and
 * reduces the other half of its block (n / 2^(i+1) chunks) into the
 * partner; rank j ends with chunk j.  `ag` appends the mirror-image
 * recursive-doubling allgather (distances 2^(L-1) .. 1). */
static ir_sched *gen_rhd(int n, int ag)
{
	int L = ilog2(n);
	ir_sched *s = ir_new(ag ? IR_ALLREDUCE : IR_REDUCE_SCATTER, ag ? "rhd" : "rhd_rs", n);
	s->chunks = n;
	int ph = ir_phase(s, "main");
	for (int i = 0; i < L; i++) {
		ir_begin_round(s, ph, nopos);
		int low = (1 << i) - 1;   /* bits already settled */
		for (int j = 0; j < n; j++) {
			int p = j ^ (1 << i);
			for (int c = 0; c < n; c++)
				if ((c & low) == (j & low) && ((c >> i) & 1) == ((p >> i) & 1))
					add(s, j, p, c, IR_REDUCE_OP);
		}
	}
	if (ag)
		for (int i = L - 1; i >= 0; i--) {
			ir_begin_round(s, ph, nopos);
			int mask = (2 << i) - 1;
			for (int j = 0; j < n; j++) {
				int p = j ^ (1 << i);
				/* j holds the chunks agreeing with it on bits 0 .. i */
				for (int c = 0; c < n; c++)
					if ((c & mask) == (j & mask))
						add(s, j, p, c, IR_COPY);
			}
		}
	return s;
}

/* BCube reduce-scatter for N = B^L, least significant digit first: in
 * round i (digit weight w = B^i) rank j sends to each of its B-1 peers
 * (digit i replaced by t) the part of its block whose digit i is t. */
static ir_sched *gen_bcube_rs(int B, int L)
{
	int n = 1;
	for (int i = 0; i < L; i++)
		n *= B;
	ir_sched *s = ir_new(IR_REDUCE_SCATTER, "bcube_rs", n);
	s->chunks = n;
	s->ports_send = s->ports_recv = B - 1;
	int ph = ir_phase(s, "main");
	for (int i = 0, w = 1; i < L; i++, w *= B) {
		ir_begin_round(s, ph, nopos);
		for (int j = 0; j < n; j++) {
			int d = (j / w) % B;
			for (int t = 0; t < B; t++) {
				if (t == d)
					continue;
				int p = j + (t - d) * w;
				for (int c = 0; c < n; c++)
					if (c % w == j % w && (c / w) % B == t)
						add(s, j, p, c, IR_REDUCE_OP);
			}
		}
	}
	return s;
}

/* The tree of the double binary tree formula: ranks lo .. hi rooted at
 * (lo + hi) / 2, the two halves hanging below it.  Edges are emitted by
 * depth, one round per level; `shift` relabels rank r as (r - shift) mod n
 * (the mirrored tree is shift 1). */
static int tree_root(int lo, int hi) { return (lo + hi) / 2; }

static void tree_edges(int lo, int hi, int depth, int want, int shift, int n, ir_sched *s,
		       int *any)
{
	if (lo >= hi)
		return;
	int m = tree_root(lo, hi);
	int kids[2][2] = { { lo, m - 1 }, { m + 1, hi } };
	for (int k = 0; k < 2; k++) {
		int a = kids[k][0], b = kids[k][1];
		if (a > b)
			continue;
		if (depth == want) {
			add(s, ((m - shift) % n + n) % n, ((tree_root(a, b) - shift) % n + n) % n, 0,
			    IR_COPY);
			*any = 1;
		}
		tree_edges(a, b, depth + 1, want, shift, n, s, any);
	}
}

static ir_sched *gen_tree_bcast(int n, int shift)
{
	ir_sched *s = ir_new(IR_BROADCAST, shift ? "dbt_mirror" : "dbt_tree", n);
	s->root = ((tree_root(0, n - 1) - shift) % n + n) % n;
	s->ports_send = 2;   /* a parent feeds both children at once */
	int ph = ir_phase(s, "main");
	for (int d = 0;; d++) {
		int any = 0;
		ir_begin_round(s, ph, nopos);
		tree_edges(0, n - 1, 0, d, shift, n, s, &any);
		if (!any) {
			ir_end_round(s);
			break;
		}
	}
	return s;
}

/* One message of the whole buffer travelling once around the ring,
 * 0 -> n-1 -> n-2 -> ... -> 1 -> 0, each hop after the previous: a
 * reduce to root 0 (the chain reduces, the last hop hands back). */
static ir_sched *gen_ring_traverse(int n)
{
	ir_sched *s = ir_new(IR_REDUCE, "ring_traverse", n);
	int ph = ir_phase(s, "main");
	for (int k = 0; k < n; k++) {
		ir_begin_round(s, ph, nopos);
		add(s, (n - k) % n, (n - k - 1) % n, 0, k == n - 1 ? IR_COPY : IR_REDUCE_OP);
	}
	return s;
}

/* A chain broadcast 0 -> 1 -> ... -> n-1 of one chunk (for pipelining). */
static ir_sched *gen_chain(int n)
{
	ir_sched *s = ir_new(IR_BROADCAST, "chain", n);
	int ph = ir_phase(s, "main");
	for (int k = 0; k + 1 < n; k++) {
		ir_begin_round(s, ph, nopos);
		add(s, k, k + 1, 0, IR_COPY);
	}
	return s;
}

/* StragglAR (Algorithm 1 of the paper, power-of-2 n, straggler n-1):
 * precondition = ring reduce-scatter among ranks 0 .. n-2 (phase
 * "pre-reduce-scatter"), then n + log n - 2 rounds in which rank r
 * exchanges chunk r with the straggler in round r and the fully reduced
 * chunks double among the others (P_r / Q_r matching with the critical
 * window rule: a rank due to meet the straggler within log n - 1 rounds
 * receives the second-oldest active chunk). */
static ir_sched *gen_stragglar(int n)
{
	int L = ilog2(n), sg = n - 1;
	ir_sched *s = ir_new(IR_ALLREDUCE, "stragglar", n);
	s->chunks = n - 1;
	ring_rs_on(s, n - 1, ir_phase(s, "pre-reduce-scatter"));
	int ph = ir_phase(s, "main");
	int *act = malloc(sizeof *act * (size_t)n), *P = malloc(sizeof *P * (size_t)n);
	int *Q = malloc(sizeof *Q * (size_t)n), *used = malloc(sizeof *used * (size_t)n);
	int *pu = malloc(sizeof *pu * (size_t)n), *pv = malloc(sizeof *pv * (size_t)n);
	for (int i = 0; i < n; i++)
		act[i] = -1;
	for (int r = 0; r <= n + L - 3; r++) {
		ir_begin_round(s, ph, nopos);
		if (r <= n - 2) {
			add(s, r, sg, r, IR_REDUCE_OP);
			add(s, sg, r, r, IR_REDUCE_OP);
		}
		if (r < L) {
			/* Phase 1: everyone gets a chunk. */
			int nnew = 0;
			if (r > 0) {
				add(s, r - 1, r - 1 + L, r - 1, IR_COPY);
				pu[nnew] = r - 1 + L;
				pv[nnew++] = r - 1;
			}
			int g = 2 * L - 1;
			for (int u = 0; u < n - 1; u++) {
				if (act[u] < 0 || u == r - 1 || u == r)
					continue;
				while (g < n - 1 && act[g] >= 0)
					g++;
				if (g >= n - 1) {
					fprintf(stderr, "gen_stragglar: no free target\n");
					abort();
				}
				add(s, u, g, act[u], IR_COPY);
				pu[nnew] = g++;
				pv[nnew++] = act[u];
			}
			for (int i = 0; i < nnew; i++)
				act[pu[i]] = pv[i];
		} else {
			/* Phase 2: careful doubling of active chunks. */
			int old = r - L, np = 0, nq = 0, npair = 0;
			for (int u = 0; u < n - 1; u++) {
				if (act[u] == old)
					P[np++] = u;
				else
					Q[nq++] = u;
			}
			if (r > n - 2) {
				Q[nq++] = sg;
				act[sg] = n - 2;
			} else {
				int k = 0;
				while (k < np && P[k] != r)
					k++;
				if (k == np) {
					fprintf(stderr, "gen_stragglar: invariant broken at n=%d r=%d\n", n, r);
					abort();
				}
				memmove(P + k, P + k + 1, sizeof *P * (size_t)(np - k - 1));
				np--;
			}
			for (int i = 0; i < nq; i++)
				used[i] = 0;
			int *inwin = calloc((size_t)np + 1, sizeof *inwin);
			for (int i = 0; i < np; i++)
				if (P[i] >= r + 1 && P[i] <= r + L - 1) {
					int q = 0;
					while (q < nq && (used[q] || act[Q[q]] != old + 1))
						q++;
					if (q == nq) {
						fprintf(stderr, "gen_stragglar: window unmatched n=%d r=%d\n", n, r);
						abort();
					}
					used[q] = 1;
					inwin[i] = 1;
					pu[npair] = P[i];
					pv[npair++] = Q[q];
				}
			for (int i = 0, q = 0; i < np; i++) {
				if (inwin[i])
					continue;
				while (q < nq && used[q])
					q++;
				used[q] = 1;
				pu[npair] = P[i];
				pv[npair++] = Q[q];
			}
			free(inwin);
			for (int i = 0; i < npair; i++) {
				if (pv[i] != sg)   /* the straggler already has every chunk */
					add(s, pu[i], pv[i], old, IR_COPY);
				add(s, pv[i], pu[i], act[pv[i]], IR_COPY);
			}
			for (int i = 0; i < npair; i++)
				act[pu[i]] = act[pv[i]];
		}
		if (r <= n - 2)
			act[r] = r;
	}
	free(act);
	free(P);
	free(Q);
	free(used);
	free(pu);
	free(pv);
	return s;
}

/* StragglAR's Broadcast baseline (stdlib/broadcast.coll): the others
 * allreduce with the ring meanwhile ("pre-allreduce"), then rank 0 and the
 * straggler exchange whole buffers, then the holders double. */
static ir_sched *gen_bcast_baseline(int n)
{
	ir_sched *s = ir_new(IR_ALLREDUCE, "broadcast", n);
	s->chunks = n - 1;
	int pre = ir_phase(s, "pre-allreduce");
	ring_rs_on(s, n - 1, pre);
	ring_ag_on(s, n - 1, pre);
	int ph = ir_phase(s, "main");
	ir_begin_round(s, ph, nopos);
	for (int c = 0; c < n - 1; c++) {
		add(s, 0, n - 1, c, IR_REDUCE_OP);
		add(s, n - 1, 0, c, IR_REDUCE_OP);
	}
	int *have = malloc(sizeof *have * (size_t)n), nh = 2, next = 1;
	have[0] = 0;
	have[1] = n - 1;
	while (next <= n - 2) {
		ir_begin_round(s, ph, nopos);
		int got = nh;
		for (int h = 0; h < got && next <= n - 2; h++) {
			for (int c = 0; c < n - 1; c++)
				add(s, have[h], next, c, IR_COPY);
			have[nh++] = next++;
		}
	}
	free(have);
	return s;
}

/* --- a small verifier: is the hand-built schedule the collective? -------- */

static int verify(const ir_sched *s)
{
	int n = s->n, C = s->chunks, W = (n + 63) / 64;
	uint64_t *st = calloc((size_t)n * C * W, sizeof *st);
	uint64_t *tmp = calloc((size_t)(s->nxfers + 1) * W, sizeof *tmp);
	uint64_t *full = calloc((size_t)W, sizeof *full);
	int ok = 1;
	for (int r = 0; r < n; r++)
		full[r / 64] |= 1ull << (r % 64);
#define CELL(r, c) (st + ((size_t)(r) * C + (size_t)(c)) * W)
	for (int r = 0; r < n; r++)
		for (int c = 0; c < C; c++) {
			if (s->kind == IR_BROADCAST) {
				if (r == s->root)
					memcpy(CELL(r, c), full, sizeof *full * W);
			} else {
				CELL(r, c)[r / 64] |= 1ull << (r % 64);
			}
		}
	for (int k = 0; k < s->nrounds && ok; k++) {
		const ir_round *rd = &s->rounds[k];
		for (int x = 0; x < rd->count; x++) {
			const ir_xfer *t = &s->xfers[rd->first + x];
			uint64_t *a = CELL(t->src, t->chunk), *b = CELL(t->dst, t->chunk);
			for (int w = 0; w < W; w++) {
				if (t->op == IR_REDUCE_OP && (a[w] & b[w])) {
					printf("verify %s n=%d: round %d: %d -> %d chunk %d double counts\n",
					       s->algo, n, k, t->src, t->dst, t->chunk);
					ok = 0;
				}
				tmp[(size_t)x * W + w] = t->op == IR_REDUCE_OP ? a[w] | b[w] : a[w];
			}
		}
		for (int x = 0; x < rd->count; x++) {
			const ir_xfer *t = &s->xfers[rd->first + x];
			uint64_t *b = CELL(t->dst, t->chunk);
			for (int w = 0; w < W; w++)
				b[w] = t->op == IR_REDUCE_OP ? b[w] | tmp[(size_t)x * W + w]
							     : tmp[(size_t)x * W + w];
		}
	}
	for (int r = 0; r < n && ok; r++)
		for (int c = 0; c < C && ok; c++) {
			int need = 1;
			if (s->kind == IR_REDUCE_SCATTER)
				need = c / (s->chunks / s->n) == r;
			else if (s->kind == IR_REDUCE)
				need = r == s->root;
			if (need && memcmp(CELL(r, c), full, sizeof *full * W) != 0) {
				printf("verify %s n=%d: rank %d chunk %d incomplete at the end\n", s->algo,
				       n, r, c);
				ok = 0;
			}
		}
#undef CELL
	free(st);
	free(tmp);
	free(full);
	return ok;
}

/* --- helpers ---------------------------------------------------------------- */

static double predict(const char *model, const cost_plan *p, const link_model *lm, double bytes,
		      int straggler, double delay)
{
	cost_params q = { .bytes = bytes, .links = lm, .straggler = straggler, .delay = delay,
			  .segments = 1 };
	cost_result r;
	link_error err;
	if (cost_model_find(model)->predict(p, &q, &r, &err)) {
		printf("FAIL: %s on %s: %s\n", model, p->name, err.msg);
		failures++;
		return NAN;
	}
	return r.time;
}

static cost_plan *plan(const ir_sched *s)
{
	link_error err;
	cost_plan *p = costplan_from_ir(s, &err);
	if (!p) {
		printf("FAIL: plan %s: %s\n", s->algo, err.msg);
		exit(1);
	}
	return p;
}

static uint64_t rng = 88172645463325252ull;
static double urand(void)   /* xorshift64*, uniform in [0, 1) */
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (double)((rng * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

/* A random asymmetric matrix: alpha 1..50 us, bandwidth 1..100 GB/s. */
static void random_matrix(link_model *lm, int n)
{
	link_error err;
	link_matrix(lm, n, 0, 1, &err);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j)
				link_set(lm, i, j, (1 + 49 * urand()) * 1e-6, (1 + 99 * urand()) * 1e9);
}

/* The paper's c_ij(S): the cost of moving S bytes from i to j. */
static double c(const link_model *lm, int i, int j, double S)
{
	return link_time(lm, i, j, S);
}

/* --- 1. StragglAR Table 1 ---------------------------------------------------- */

static void test_table1(void)
{
	const double sizes[] = { 1 * KiB, 1 * MiB, 12345678, 1 * GiB, 4 * GiB };
	const double ab[][2] = { { 3e-6, 450e9 }, { 0.5e-6, 25e9 }, { 20e-6, 1.25e9 }, { 0, 100e9 } };
	const char *models[] = { "rounds", "sim" };
	int bad_before = failures;
	for (int L = 2; L <= 8; L++) {
		int n = 1 << L;
		ir_sched *s[4] = { gen_ring(n), gen_rhd(n, 1), gen_stragglar(n), gen_bcast_baseline(n) };
		for (int i = 0; i < 4; i++)
			check(verify(s[i]), "%s n=%d is not a correct allreduce", s[i]->algo, n);
		check(s[2]->nrounds - (n - 2) == n + L - 2, "stragglar n=%d: %d rounds after the "
		      "precondition, want n + log n - 2 = %d", n, s[2]->nrounds - (n - 2), n + L - 2);
		cost_plan *p[4];
		for (int i = 0; i < 4; i++)
			p[i] = plan(s[i]);
		for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++)
			for (size_t u = 0; u < sizeof ab / sizeof *ab; u++) {
				link_model lm;
				link_error err;
				link_uniform(&lm, ab[u][0], ab[u][1], &err);
				double a = ab[u][0], b = 1 / ab[u][1], S = sizes[z];
				double want[4] = {
					2 * (n - 1) * a + 2.0 * (n - 1) / n * S * b,
					2 * L * a + 2.0 * (n - 1) / n * S * b,
					(n + L - 2) * a + (double)(n + L - 2) / (n - 1) * S * b,
					L * a + L * S * b,
				};
				for (int m = 0; m < 2; m++)
					for (int i = 0; i < 4; i++) {
						/* the straggler-aware ones with the precondition hidden */
						int sg = i >= 2 ? n - 1 : -1;
						double got = predict(models[m], p[i], &lm, S, sg, COST_MASKED);
						char what[128];
						snprintf(what, sizeof what, "Table 1 %s n=%d S=%.0f a=%g bw=%g (%s)",
							 s[i]->algo, n, S, a, ab[u][1], models[m]);
						check_rel(what, got, want[i], 1e-9);
					}
				/* without a straggler StragglAR pays its precondition:
				 * (n-2) rounds of the ring on n-1 ranks, chunk S/(n-1) */
				double rs = (n - 2) * (a + S / (n - 1) * b);
				check_rel("stragglar with its precondition (rounds)",
					  predict("rounds", p[2], &lm, S, -1, 0), rs + want[2], 1e-9);
				link_free(&lm);
			}
		for (int i = 0; i < 4; i++) {
			cost_plan_free(p[i]);
			ir_free(s[i]);
		}
	}
	printf("table 1: ring, rhd, stragglar, broadcast for n = 4 .. 256, 5 sizes, 4 alpha/beta "
	       "pairs, 2 models: %s\n", failures == bad_before ? "ok" : "FAILED");
}

/* --- 2. The rank-reordering paper, section IV-A ------------------------------ */

/* Ring: C_r(N, c, S) = sum_{i=0}^{N-1} c_{i,i-1}(S).
 * Assumptions the formula makes: every hop of the ring is charged once,
 * in sequence, with the whole S: it is the time of one message of S bytes
 * travelling once around the ring (i -> i-1), each hop starting when the
 * previous one has delivered.  That is the schedule gen_ring_traverse
 * builds, and both our models must give exactly the sum.  (The standard
 * ring allreduce is not this: every step moves S/N on all hops at once,
 * so the slowest hop gates each of its 2(N-1) steps; our models give
 * 2(N-1) max_i c_{i,i+1}(S/N) for it, checked below as well.  The paper
 * uses the formula to rank orders, not to predict time.) */
static void test_reorder_ring(void)
{
	for (int n = 4; n <= 64; n *= 2)
		for (int rep = 0; rep < 3; rep++) {
			link_model lm;
			random_matrix(&lm, n);
			double S = rep == 0 ? 1 * MiB : 256 * MiB;
			ir_sched *s = gen_ring_traverse(n), *ring = gen_ring(n);
			check(verify(s), "ring_traverse n=%d is not a reduce", n);
			cost_plan *p = plan(s), *pr = plan(ring);
			double want = 0;
			for (int i = 0; i < n; i++)
				want += c(&lm, i, (i - 1 + n) % n, S);
			check_rel("reorder ring C_r (rounds)", predict("rounds", p, &lm, S, -1, 0), want, 1e-12);
			check_rel("reorder ring C_r (sim)", predict("sim", p, &lm, S, -1, 0), want, 1e-12);
			double worst = 0;
			for (int i = 0; i < n; i++)
				if (c(&lm, i, (i + 1) % n, S / n) > worst)
					worst = c(&lm, i, (i + 1) % n, S / n);
			check_rel("ring allreduce on a matrix (rounds)", predict("rounds", pr, &lm, S, -1, 0),
				  2 * (n - 1) * worst, 1e-12);
			check_rel("ring allreduce on a matrix (sim)", predict("sim", pr, &lm, S, -1, 0),
				  2 * (n - 1) * worst, 1e-12);
			cost_plan_free(p);
			cost_plan_free(pr);
			ir_free(s);
			ir_free(ring);
			link_free(&lm);
		}
}

/* Halving-doubling: C_hd = sum_{i=0}^{log N - 1} MAX_{j} c_{j,j+2^i}(S/2^{i+1}).
 * Assumptions: (a) the formula is one half of the allreduce, the
 * reduce-scatter by recursive halving with distance doubling (round i:
 * partner at distance 2^i, S/2^{i+1} bytes each way); the allgather is its
 * mirror image with the same terms, so the allreduce costs 2 C_hd.
 * (b) "MAX over j = 0 .. N/2-1 of c_{j,j+2^i}" means over the N/2 pairs
 * that exchange in round i, {j, j + 2^i} for the j whose bit i is clear
 * (read literally, j = 0 .. N/2-1 names pairs such as (1, 2) that never
 * talk).  (c) c is symmetric, as the paper makes it (c_ij <- max(c_ij,
 * c_ji)): both directions of an exchange run at once, so a pair costs the
 * slower direction.  (d) Rounds are lockstep: the round-synchronous model.
 * (The simulator may be faster: a pair that is done early moves on.) */
static void test_reorder_hd(void)
{
	for (int n = 4; n <= 64; n *= 2)
		for (int rep = 0; rep < 3; rep++) {
			link_model lm;
			random_matrix(&lm, n);
			double S = rep == 0 ? 1 * MiB : 256 * MiB;
			ir_sched *rs = gen_rhd(n, 0), *ar = gen_rhd(n, 1);
			check(verify(rs) && verify(ar), "rhd n=%d is wrong", n);
			cost_plan *p = plan(rs), *pa = plan(ar);
			double want = 0;
			for (int i = 0; (1 << i) < n; i++) {
				double mx = 0, bytes = S / (1 << (i + 1));
				for (int j = 0; j < n; j++) {
					if (j & (1 << i))
						continue;
					int k = j + (1 << i);
					double cs = fmax(c(&lm, j, k, bytes), c(&lm, k, j, bytes));
					if (cs > mx)
						mx = cs;
				}
				want += mx;
			}
			check_rel("reorder halving-doubling C_hd (rounds)",
				  predict("rounds", p, &lm, S, -1, 0), want, 1e-12);
			check_rel("reorder halving-doubling allreduce = 2 C_hd (rounds)",
				  predict("rounds", pa, &lm, S, -1, 0), 2 * want, 1e-12);
			check(predict("sim", p, &lm, S, -1, 0) <= want * (1 + 1e-12),
			      "halving-doubling: the simulation is slower than lockstep");
			cost_plan_free(p);
			cost_plan_free(pa);
			ir_free(rs);
			ir_free(ar);
			link_free(&lm);
		}
}

/* Double binary tree: C_dbt = T(0, N-1, S),
 *   T(i, j, S) = 0 if i >= j, else MAX(c_{m,l}(S/2) + T(i, m-1), c_{m,r}(S/2) + T(m+1, j))
 * with m = (i + j) / 2 and l, r the roots of the two halves.
 * Assumptions: (a) a tree over ranks i .. j is rooted at m = floor((i+j)/2)
 * with the subtrees of i .. m-1 and m+1 .. j below it (the paper's child
 * indices are the roots of those halves; an empty half has no edge);
 * (b) each of the two trees carries half the buffer, S/2, in one piece
 * (no pipelining); (c) the formula is one pass (the broadcast down the
 * tree; the reduce up is its mirror image), and a subtree starts as soon
 * as its own edge has delivered, while a parent feeds both children at
 * once (two send ports): that is the event-driven simulation, not
 * lockstep rounds (which sum each level's slowest edge and can only be
 * slower); (d) the mirrored tree relabels rank r as r - 1; the paper's
 * C_dbt costs the first tree, and we check both trees separately. */
static double dbt_T(const link_model *lm, int i, int j, double S, int shift, int n)
{
	if (i >= j)
		return 0;
	int m = tree_root(i, j);
	double best = 0;
	int kids[2][2] = { { i, m - 1 }, { m + 1, j } };
	for (int k = 0; k < 2; k++) {
		int a = kids[k][0], b = kids[k][1];
		if (a > b)
			continue;
		double v = c(lm, ((m - shift) % n + n) % n, ((tree_root(a, b) - shift) % n + n) % n, S / 2) +
			   dbt_T(lm, a, b, S, shift, n);
		if (v > best)
			best = v;
	}
	return best;
}

static void test_reorder_dbt(void)
{
	for (int n = 4; n <= 64; n *= 2)
		for (int shift = 0; shift <= 1; shift++)
			for (int rep = 0; rep < 3; rep++) {
				link_model lm;
				random_matrix(&lm, n);
				double S = rep == 0 ? 1 * MiB : 256 * MiB;
				ir_sched *s = gen_tree_bcast(n, shift);
				check(verify(s), "dbt tree n=%d shift=%d is not a broadcast", n, shift);
				cost_plan *p = plan(s);
				double want = dbt_T(&lm, 0, n - 1, S, shift, n);
				/* the IR's buffer is the tree's half: S/2 */
				check_rel(shift ? "reorder dbt mirrored tree (sim)" : "reorder dbt C_dbt (sim)",
					  predict("sim", p, &lm, S / 2, -1, 0), want, 1e-12);
				check(predict("rounds", p, &lm, S / 2, -1, 0) >= want * (1 - 1e-12),
				      "dbt: lockstep rounds faster than the longest path");
				cost_plan_free(p);
				ir_free(s);
				link_free(&lm);
			}
}

/* BCube: C_b = sum_{i=0}^{log_B N - 1} MAX_{j} MAX_{k=1}^{B} c_{j,j+kB^i}(S/B^{i+1}).
 * Assumptions: (a) as for halving-doubling, the formula is the
 * reduce-scatter half, lockstep rounds, least significant digit first;
 * (b) j + k B^i means j's peer whose i-th base-B digit is advanced by k
 * (mod B), i.e. its B-1 peers, k = 1 .. B-1 (k = B would name j itself
 * or a rank of another group); the MAX runs over every rank j (the
 * paper's j < N/B counts groups); (c) a rank talks to its B-1 peers in
 * parallel (B-1 ports, one link each), so a round costs its slowest
 * message. */
static void test_reorder_bcube(void)
{
	const int cases[][2] = { { 2, 3 }, { 2, 5 }, { 3, 2 }, { 3, 3 }, { 4, 2 }, { 4, 3 }, { 5, 2 } };
	for (size_t t = 0; t < sizeof cases / sizeof *cases; t++)
		for (int rep = 0; rep < 2; rep++) {
			int B = cases[t][0], L = cases[t][1];
			ir_sched *s = gen_bcube_rs(B, L);
			int n = s->n;
			check(verify(s), "bcube B=%d n=%d is not a reduce-scatter", B, n);
			link_model lm;
			random_matrix(&lm, n);
			double S = rep == 0 ? 1 * MiB : 256 * MiB;
			cost_plan *p = plan(s);
			double want = 0;
			for (int i = 0, w = 1; i < L; i++, w *= B) {
				double mx = 0, bytes = S / (w * B);
				for (int j = 0; j < n; j++)
					for (int k = 1; k < B; k++) {
						int d = (j / w) % B, peer = j + (((d + k) % B) - d) * w;
						if (c(&lm, j, peer, bytes) > mx)
							mx = c(&lm, j, peer, bytes);
					}
				want += mx;
			}
			char what[64];
			snprintf(what, sizeof what, "reorder bcube C_b B=%d N=%d (rounds)", B, n);
			check_rel(what, predict("rounds", p, &lm, S, -1, 0), want, 1e-12);
			cost_plan_free(p);
			ir_free(s);
			link_free(&lm);
		}
}

/* --- 3. the simulator ------------------------------------------------------- */

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void test_stragglar_256(void)
{
	const int n = 256, L = 8;
	const double a = 3e-6, bw = 450e9, S = 1 * GiB, b = 1 / bw;
	link_model lm;
	link_error err;
	link_uniform(&lm, a, bw, &err);
	ir_sched *sar = gen_stragglar(n), *ring = gen_ring(n), *rhd = gen_rhd(n, 1);
	ir_sched *bc = gen_bcast_baseline(n);
	cost_plan *ps = plan(sar), *pr = plan(ring), *ph = plan(rhd), *pb = plan(bc);
	cost_params q = { .bytes = S, .links = &lm, .straggler = n - 1, .delay = COST_MASKED,
			  .segments = 1 };

	double t0 = now();
	cost_sim *sim = cost_simulate(ps, &q, &err);
	double dt = now() - t0;
	if (!sim) {
		check(0, "simulate stragglar: %s", err.msg);
		return;
	}
	double t_sar = sim->r.time, t_ring = predict("sim", pr, &lm, S, n - 1, COST_MASKED);
	double closed = (2 * (n - 1) * a + 2.0 * (n - 1) / n * S * b) /
			((n + L - 2) * a + (double)(n + L - 2) / (n - 1) * S * b);
	printf("n=256, 1 GiB, 3 us, 450 GB/s: stragglar %.6f ms, ring %.6f ms, simulated speedup "
	       "%.4fx (closed form %.4fx); simulation took %.1f ms\n",
	       t_sar * 1e3, t_ring * 1e3, t_ring / t_sar, closed, dt * 1e3);
	check_rel("simulated speedup of stragglar over ring at n=256", t_ring / t_sar, closed, 1e-9);
	check(closed > 1.9 && closed < 2.0, "closed-form speedup %.3f is not about 1.9x", closed);
	check(sim->npath >= n + L - 2, "critical path has %d messages, want >= %d", sim->npath,
	      n + L - 2);
	/* the straggler is busy all the time after joining */
	check(sim->idle[n - 1] < 1e-12, "straggler idle %.3g s after joining", sim->idle[n - 1]);
	cost_sim_free(sim);

	/* Critical delay: the search over the simulator against the rule of
	 * section 4.2, T_delay >= T_RS - max(T_B - T_SAR, 0), with the terms
	 * from the same simulator (T_RS: when the precondition ends). */
	ir_sched *base[3] = { ring, rhd, bc };
	cost_plan *pbase[3] = { pr, ph, pb };
	for (int i = 0; i < 3; i++) {
		cost_result rs, rb;
		q.delay = COST_MASKED;
		cost_sim_time(ps, &q, &rs, &err);
		cost_sim_time(pbase[i], &q, &rb, &err);
		double rule = cost_critical_delay_rule(rs.pre, rb.time, rs.time), found;
		int rc = cost_critical_delay(cost_model_find("sim"), ps, pbase[i], &q, &found, &err);
		printf("critical delay vs %-9s: simulated %s%.6f ms, rule %.6f ms (T_RS %.6f ms, "
		       "T_B %.6f ms, T_SAR %.6f ms)\n", base[i]->algo, rc ? "never " : "",
		       rc ? 0 : found * 1e3, rule * 1e3, rs.pre * 1e3, rb.time * 1e3, rs.time * 1e3);
		if (isinf(rule))
			check(rc == 1, "critical delay vs %s: rule says never, search found %g", base[i]->algo, found);
		else
			check(rc == 0 && fabs(found - rule) <= 1e-9 * rs.pre,
			      "critical delay vs %s: simulated %.12g, rule %.12g", base[i]->algo, found, rule);
		/* and the rounds model agrees with its own closed forms */
		double rr = 0;
		if (i == 0) {
			rc = cost_critical_delay(cost_model_find("rounds"), ps, pr, &q, &rr, &err);
			double t_rs = (n - 2) * (a + S / (n - 1) * b);
			double t_b = 2 * (n - 1) * a + 2.0 * (n - 1) / n * S * b;
			double t_s = (n + L - 2) * (a + S / (n - 1) * b);
			check(rc == 0 && close_rel(rr, t_rs - (t_b - t_s), 1e-9),
			      "rounds critical delay vs ring %.12g, closed form %.12g", rr, t_rs - (t_b - t_s));
		}
	}
	/* below the critical delay ring wins, above it stragglar does */
	{
		double d;
		cost_critical_delay(cost_model_find("sim"), ps, pr, &q, &d, &err);
		double lo = predict("sim", ps, &lm, S, n - 1, d * 0.9) - predict("sim", pr, &lm, S, n - 1, d * 0.9);
		double hi = predict("sim", ps, &lm, S, n - 1, d * 1.1) - predict("sim", pr, &lm, S, n - 1, d * 1.1);
		check(lo > 0 && hi < 0, "around the critical delay: gap %.3g below, %.3g above", lo, hi);
	}
	cost_plan_free(ps);
	cost_plan_free(pr);
	cost_plan_free(ph);
	cost_plan_free(pb);
	ir_free(sar);
	ir_free(ring);
	ir_free(rhd);
	ir_free(bc);
	link_free(&lm);
}

static void test_bottleneck(void)
{
	const int n = 8;
	link_model lm;
	link_error err;
	link_matrix(&lm, n, 3e-6, 450e9, &err);
	link_set(&lm, 3, 4, 3e-6, 45e9);   /* one link ten times slower */
	ir_sched *s = gen_ring(n);
	cost_plan *p = plan(s);
	cost_params q = { .bytes = 64 * MiB, .links = &lm, .straggler = -1, .segments = 1 };
	cost_sim *sim = cost_simulate(p, &q, &err);
	int on = 0;
	for (int i = 0; i < sim->npath; i++) {
		const cost_pmsg *m = &p->msgs[sim->msgs[sim->path[i]].msg];
		on += m->src == 3 && m->dst == 4;
	}
	check(on == 2 * (n - 1), "bottleneck 3 -> 4: %d of the %d critical messages use it, want %d",
	      on, sim->npath, 2 * (n - 1));
	check_rel("ring with a bottleneck = 2(n-1) slow hops", sim->r.time,
		  2 * (n - 1) * link_time(&lm, 3, 4, 64 * MiB / n), 1e-12);
	cost_sim_free(sim);
	cost_plan_free(p);
	ir_free(s);
	link_free(&lm);
}

static void test_segments(void)
{
	const int n = 8;
	link_model lm;
	link_error err;
	link_uniform(&lm, 3e-6, 450e9, &err);
	ir_sched *s = gen_chain(n);
	cost_plan *p = plan(s);
	for (int S = 1; S <= 64; S *= 4) {
		cost_params q = { .bytes = 256 * MiB, .links = &lm, .straggler = -1, .segments = S };
		cost_result r;
		cost_sim_time(p, &q, &r, &err);
		double want = (n - 1 + S - 1) * link_time(&lm, 0, 1, 256 * MiB / S);
		char what[64];
		snprintf(what, sizeof what, "pipelined chain, %d segments", S);
		check_rel(what, r.time, want, 1e-12);
	}
	/* ring is already a pipeline: segments only add latency */
	ir_sched *ring = gen_ring(n);
	cost_plan *pr = plan(ring);
	cost_params q = { .bytes = 256 * MiB, .links = &lm, .straggler = -1, .segments = 4 };
	cost_result r4, r1;
	cost_sim_time(pr, &q, &r4, &err);
	q.segments = 1;
	cost_sim_time(pr, &q, &r1, &err);
	check(r4.time >= r1.time, "ring with 4 segments faster than unsegmented");
	cost_plan_free(pr);
	ir_free(ring);
	cost_plan_free(p);
	ir_free(s);
	link_free(&lm);
}

/* Round order (cost_params.round_order): rank 0 sends chunk 0 to rank 1
 * in round 0 and chunk 1 to rank 2 in round 1, with two send ports.  Free
 * running, both sends start at once; in round order the second waits for
 * the first.  And a pipelined chain (one send round per rank) keeps its
 * pipeline.  Both simulations: the pass (no shared segments) and the
 * fluid one (a segment that never binds). */
static void test_round_order(void)
{
	ir_sched *s = ir_new(IR_BROADCAST, "fanout", 3);
	s->chunks = 2;
	s->ports_send = 2;
	int ph = ir_phase(s, "main");
	ir_begin_round(s, ph, nopos);
	add(s, 0, 1, 0, IR_COPY);
	ir_begin_round(s, ph, nopos);
	add(s, 0, 2, 1, IR_COPY);
	ir_end_round(s);
	cost_plan *p = plan(s);
	const int n = 6;
	ir_sched *chain = gen_chain(n);
	cost_plan *pc = plan(chain);
	for (int fluid = 0; fluid < 2; fluid++) {
		link_model lm;
		link_error err;
		link_uniform(&lm, 0, 1e9, &err);
		if (fluid && (link_declare(&lm, "group g 0", &err) != 1 ||
			      link_declare(&lm, "uplink g 1000GB/s", &err) != 1))
			check(0, "declaring a segment: %s", err.msg);
		double t = 64 * MiB / 2 / 1e9;
		for (int on = 0; on < 2; on++) {
			cost_params q = { .bytes = 64 * MiB, .links = &lm, .straggler = -1, .segments = 1,
					  .round_order = on };
			cost_result r;
			if (cost_sim_time(p, &q, &r, &err))
				check(0, "fanout: %s", err.msg);
			char what[96];
			snprintf(what, sizeof what, "two sends of rank 0 in rounds 0 and 1, %s, round order %s",
				 fluid ? "fluid" : "pass", on ? "on" : "off");
			check_rel(what, r.time, on ? 2 * t : t, 1e-12);
			q.segments = 8;
			if (cost_sim_time(pc, &q, &r, &err))
				check(0, "chain: %s", err.msg);
			snprintf(what, sizeof what, "pipelined chain, 8 segments, %s, round order %s",
				 fluid ? "fluid" : "pass", on ? "on" : "off");
			check_rel(what, r.time, (n - 1 + 8 - 1) * (64 * MiB / 8 / 1e9), 1e-9);
		}
		link_free(&lm);
	}
	cost_plan_free(pc);
	ir_free(chain);
	cost_plan_free(p);
	ir_free(s);
}

static void test_straggler_ring(void)
{
	/* ring with a rank 5 ms late: the others cannot finish before it, and
	 * everything after it joins takes the full ring time */
	const int n = 16;
	link_model lm;
	link_error err;
	link_uniform(&lm, 3e-6, 450e9, &err);
	ir_sched *s = gen_ring(n);
	cost_plan *p = plan(s);
	double t = predict("sim", p, &lm, 1 * GiB, -1, 0);
	cost_params q = { .bytes = 1 * GiB, .links = &lm, .straggler = 5, .delay = 5e-3, .segments = 1 };
	cost_sim *sim = cost_simulate(p, &q, &err);
	check_rel("ring after a straggler joins", sim->r.time, t, 1e-12);
	check_rel("ring total with a straggler", sim->r.total, 5e-3 + t, 1e-12);
	check(sim->idle[0] > 0 && sim->idle[5] < 1e-12, "idle: rank 0 %.3g, straggler %.3g",
	      sim->idle[0], sim->idle[5]);
	int joins = 0;
	for (int i = 0; i < sim->npath; i++)
		joins += sim->msgs[sim->path[i]].why == COST_WAIT_JOIN;
	check(joins == 1 && sim->msgs[sim->path[0]].why == COST_WAIT_JOIN,
	      "critical path should start at the straggler joining");
	cost_sim_free(sim);
	cost_plan_free(p);
	ir_free(s);
	link_free(&lm);
}

/* --- 4. units and matrices ------------------------------------------------- */

static void expect_err(int rc, const link_error *err, const char *want)
{
	check(rc == -1 && strstr(err->msg, want) != NULL, "want error containing \"%s\", got rc %d \"%s\"",
	      want, rc, rc ? err->msg : "");
}

static char *write_tmp(const char *text)
{
	static char path[64];
	strcpy(path, "/tmp/test_cost_XXXXXX");
	int fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

static void test_units(void)
{
	link_error err;
	double v;
	check(link_parse_size("1GiB", &v, &err) == 0 && v == GiB, "1GiB");
	check(link_parse_size("4G", &v, &err) == 0 && v == 4 * GiB, "4G (nccl-tests)");
	check(link_parse_size("1.5KB", &v, &err) == 0 && v == 1500, "1.5KB");
	check(link_parse_size("8", &v, &err) == 0 && v == 8, "8");
	check(link_parse_time("3us", &v, &err) == 0 && v == 3e-6, "3us");
	check(link_parse_time("9.45ms", &v, &err) == 0 && close_rel(v, 9.45e-3, 1e-15), "9.45ms");
	check(link_parse_time("0", &v, &err) == 0 && v == 0, "0");
	check(link_parse_bw("450GB/s", &v, &err) == 0 && v == 450e9, "450GB/s");
	check(link_parse_bw("100Gbit/s", &v, &err) == 0 && v == 12.5e9, "100Gbit/s");
	check(link_parse_bw("1 GiB/s", &v, &err) == 0 && v == GiB, "1 GiB/s");
	expect_err(link_parse_size("12XB", &v, &err), &err,
		   "bad size '12XB': unknown unit 'XB' (use B, KB, MB, GB, KiB, MiB, GiB)");
	expect_err(link_parse_size("1.3B", &v, &err), &err, "not a whole number of bytes");
	expect_err(link_parse_size("-4KiB", &v, &err), &err, "must be positive");
	expect_err(link_parse_size("KiB", &v, &err), &err, "expected a number");
	expect_err(link_parse_time("3", &v, &err), &err, "missing unit");
	expect_err(link_parse_time("3 fortnights", &v, &err), &err, "unknown unit 'fortnights'");
	expect_err(link_parse_bw("0GB/s", &v, &err), &err, "must be positive");
	expect_err(link_parse_bw("-1GB/s", &v, &err), &err, "must be positive");
	expect_err(link_parse_bw("450GB", &v, &err), &err, "unknown unit 'GB'");
	expect_err(link_parse_bw("inf GB/s", &v, &err), &err, "expected a number");

	link_model lm;
	char *path = write_tmp("# two ranks\n0\t1\t3us\t450GB/s\n1 0 5us 100GB/s  # back\n");
	check(link_read_matrix(&lm, path, &err) == 0 && lm.n == 2 &&
	      close_rel(link_time(&lm, 1, 0, 1e9), 5e-6 + 1e-2, 1e-15), "read a 2-rank matrix: %s", err.msg);
	link_free(&lm);
	unlink(path);
	path = write_tmp("ranks 4\n* * 3us 450GB/s\n2 3 9us 1GB/s\n2 * 4us 2GB/s\n");
	check(link_read_matrix(&lm, path, &err) == 0 && lm.n == 4 && link_alpha(&lm, 2, 3) == 9e-6 &&
	      link_alpha(&lm, 2, 0) == 4e-6 && link_alpha(&lm, 0, 2) == 3e-6, "wildcards: %s", err.msg);
	check(link_check_n(&lm, 8, &err) == -1 && strstr(err.msg, "has 4 ranks but the schedule has 8"),
	      "n mismatch: %s", err.msg);
	link_free(&lm);
	unlink(path);
	struct {
		const char *text, *want;
	} bad[] = {
		{ "0 1 3us 450GB/s\n1 2 3us 450GB/s\n2 0 3us 450GB/s\n", ": missing pair 0 -> 2 and 2 more" },
		{ "0 1 3us 450GB/s\n1 0 3us 0GB/s\n", ":2: bad bandwidth '0GB/s': must be positive" },
		{ "0 1 3us 450GB/s\n1 0 3us -5GB/s\n", ":2: bad bandwidth '-5GB/s': must be positive" },
		{ "0 1 3xs 450GB/s\n", ":1: bad time '3xs': unknown unit 'xs'" },
		{ "0 1 3us\n", ":1: expected 'src dst alpha bandwidth', found 3 fields" },
		{ "0 1 3us 1GB/s\n0 1 3us 1GB/s\n", ":2: pair 0 -> 1 given twice (also line 1)" },
		{ "ranks 2\n0 5 3us 1GB/s\n", ":2: rank 5 out of range for 2 ranks" },
		{ "* * 3us 1GB/s\n", "add a line 'ranks N'" },
		{ "x 1 3us 1GB/s\n", ":1: bad source rank 'x'" },
		{ "# nothing\n", "no links" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		path = write_tmp(bad[i].text);
		int rc = link_read_matrix(&lm, path, &err);
		const char *want = bad[i].want;
		check(rc == -1 && strstr(err.msg, want) && strncmp(err.msg, path, strlen(path)) == 0,
		      "matrix case %zu: want \"%s\", got \"%s\"", i, want, rc ? err.msg : "(accepted)");
		unlink(path);
	}
	check(link_read_matrix(&lm, "/nonexistent/links.tsv", &err) == -1 &&
	      strstr(err.msg, "cannot open"), "missing file: %s", err.msg);

	/* a matrix written out reads back the same */
	link_model a, b2;
	random_matrix(&a, 5);
	char tpl[] = "/tmp/test_cost_wXXXXXX";
	int fd = mkstemp(tpl);
	FILE *f = fdopen(fd, "w");
	link_write_matrix(f, &a, 5);
	fclose(f);
	int same = link_read_matrix(&b2, tpl, &err) == 0;
	for (int i = 0; same && i < 5; i++)
		for (int j = 0; j < 5; j++)
			if (i != j && !close_rel(link_time(&b2, i, j, 1e6), link_time(&a, i, j, 1e6), 1e-10))
				same = 0;
	check(same, "matrix round trip: %s", err.msg);
	unlink(tpl);
	link_free(&a);
	link_free(&b2);

	/* a schedule and a matrix of different sizes */
	ir_sched *s = gen_ring(8);
	cost_plan *p = plan(s);
	link_matrix(&lm, 4, 1e-6, 1e9, &err);
	cost_params q = { .bytes = 1e6, .links = &lm, .straggler = -1, .segments = 1 };
	cost_result r;
	expect_err(cost_rounds(p, &q, &r, &err), &err, "has 4 ranks but the schedule has 8");
	link_free(&lm);
	link_uniform(&lm, 1e-6, 1e9, &err);
	q.straggler = 8;
	expect_err(cost_sim_time(p, &q, &r, &err), &err, "straggler rank 8 out of range");
	q.straggler = -1;
	q.segments = 0;
	expect_err(cost_sim_time(p, &q, &r, &err), &err, "segments must be >= 1");
	link_free(&lm);
	check(link_uniform(&lm, 1e-6, 0, &err) == -1, "uniform with zero bandwidth accepted");
	cost_plan_free(p);
	ir_free(s);
}

/* A shared injection bandwidth: the one-shot "direct" allreduce (every
 * rank sends its n-1 chunks at once, ports n-1) costs 2 a + 2 s/n b when
 * links run in parallel, 2 a + 2 (n-1)/n s b when a rank's bandwidth is
 * shared (the two costs stdlib/direct.coll states); a one-port schedule
 * is unaffected when rank_bw equals the link bandwidth. */
static void test_rank_bw(void)
{
	const int n = 16;
	const double a = 3e-6, bw = 450e9, S = 1 * GiB;
	ir_sched *s = ir_new(IR_ALLREDUCE, "direct", n);
	s->chunks = n;
	s->ports_send = s->ports_recv = n - 1;
	int ph = ir_phase(s, "main");
	ir_begin_round(s, ph, nopos);
	for (int r = 0; r < n; r++)
		for (int d = 0; d < n; d++)
			if (d != r)
				add(s, r, d, d, IR_REDUCE_OP);
	ir_begin_round(s, ph, nopos);
	for (int d = 0; d < n; d++)
		for (int r = 0; r < n; r++)
			if (r != d)
				add(s, d, r, d, IR_COPY);
	check(verify(s), "direct is not an allreduce");
	cost_plan *p = plan(s);
	link_model lm;
	link_error err;
	link_uniform(&lm, a, bw, &err);
	for (int m = 0; m < 2; m++) {
		const char *model = m ? "sim" : "rounds";
		check_rel("direct, independent links", predict(model, p, &lm, S, -1, 0),
			  2 * a + 2 * S / n / bw, 1e-12);
		link_set_rank_bw(&lm, bw, &err);
		check_rel("direct, shared rank bandwidth", predict(model, p, &lm, S, -1, 0),
			  2 * a + 2.0 * (n - 1) / n * S / bw, 1e-12);
		link_set_rank_bw(&lm, 0, &err);
	}
	ir_sched *ring = gen_ring(n);
	cost_plan *pr = plan(ring);
	double t0 = predict("sim", pr, &lm, S, -1, 0);
	link_set_rank_bw(&lm, bw, &err);
	check_rel("ring with rank bw = link bw", predict("sim", pr, &lm, S, -1, 0), t0, 1e-15);
	link_free(&lm);
	cost_plan_free(pr);
	ir_free(ring);
	cost_plan_free(p);
	ir_free(s);
}

static void test_busbw(void)
{
	check_rel("busbw allreduce", cost_busbw_factor(IR_ALLREDUCE, 8), 1.75, 1e-15);
	check_rel("busbw reduce_scatter", cost_busbw_factor(IR_REDUCE_SCATTER, 8), 0.875, 1e-15);
	check_rel("busbw allgather", cost_busbw_factor(IR_ALLGATHER, 8), 0.875, 1e-15);
	check_rel("busbw broadcast", cost_busbw_factor(IR_BROADCAST, 8), 1, 1e-15);
	check_rel("busbw reduce", cost_busbw_factor(IR_REDUCE, 8), 1, 1e-15);
}

int main(void)
{
	test_units();
	test_busbw();
	test_rank_bw();
	test_table1();
	test_reorder_ring();
	test_reorder_hd();
	test_reorder_dbt();
	test_reorder_bcube();
	printf("reordering paper IV-A: ring, halving-doubling, double binary tree, bcube on random "
	       "matrices: done\n");
	test_stragglar_256();
	test_bottleneck();
	test_segments();
	test_round_order();
	test_straggler_ring();
	printf("%d checks, %d failed\n", checks, failures);
	return failures != 0;
}
