/*
 * test_verify.c - unit tests of the symbolic buffer state (lang/state.c),
 * the verifier (lang/verify.c) and the IR exports (codegen/export.c).
 *
 * Pipeline position: tests only; builds schedules by hand with ir_new /
 * ir_begin_round / ir_add, the way the evaluator does, so the verifier is
 * tested without the front end.  Every error test captures stderr and
 * matches the message text.  The last part times the verifier on big
 * schedules (n = 1024) and prints peak RSS; it never fails on timings.
 *
 *   cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -Ilang -Icodegen \
 *      tests/unit/test_verify.c lang/state.c lang/verify.c lang/ir.c \
 *      lang/diag.c codegen/export.c -o /tmp/test_verify && /tmp/test_verify
 *
 * Flags: -v prints every captured diagnostic and the exports; -q skips the
 * n = 1024 timings.  Exits non-zero when a check fails.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "export.h"
#include "ir.h"
#include "state.h"
#include "verify.h"

static int checks, fails;
static bool verbose;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		checks++;                                                      \
		if (!(cond)) {                                                 \
			fails++;                                               \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);            \
			printf(__VA_ARGS__);                                   \
			putchar('\n');                                         \
		}                                                              \
	} while (0)

/* A fake .coll source so that diagnostics carry file:line:col and a caret. */
static const char *SRC =
	"algorithm ring : allreduce {\n"
	"  chunks n;\n"
	"  for s in 0 .. n-2 {\n"
	"    round { for r in 0 .. n-1 { reduce (r - s + n) % n : r -> (r + 1) % n; } }\n"
	"  }\n"
	"  for s in 0 .. n-2 {\n"
	"    round { for r in 0 .. n-1 { copy (r - s + 1 + n) % n : r -> (r + 1) % n; } }\n"
	"  }\n"
	"}\n";
static src_file *F;
static srcpos P_ALGO, P_RS_ROUND, P_REDUCE, P_AG_ROUND, P_COPY;

static srcpos at(const char *needle, int nth)
{
	const char *p = F->text;
	for (int i = 0; i <= nth; i++)
		p = strstr(i ? p + 1 : p, needle);
	return (srcpos){ F, (uint32_t)(p - F->text) };
}

static ir_sched *mk(ir_kind k, const char *name, int n, int chunks)
{
	ir_sched *s = ir_new(k, name, n);
	s->chunks = chunks;
	s->pos = P_ALGO;
	return s;
}

static void reduce(ir_sched *s, int a, int b, int c) { ir_add(s, a, b, c, IR_REDUCE_OP, P_REDUCE); }
static void copy(ir_sched *s, int a, int b, int c) { ir_add(s, a, b, c, IR_COPY, P_COPY); }

/* --- correct schedules ------------------------------------------------------ */

/* Ring allreduce (DESIGN.md's stdlib/ring.coll), chunks = n; `perm` maps ring
 * positions to ranks (NULL: identity) to get scattered contribution sets. */
static ir_sched *ring_allreduce_perm(int n, const int *perm)
{
	ir_sched *s = mk(IR_ALLREDUCE, "ring", n, n);
	int rs = ir_phase(s, "main"), ag = ir_phase(s, "allgather");
#define P(i) (perm ? perm[(i)] : (i))
	for (int st = 0; st <= n - 2; st++) {
		ir_begin_round(s, rs, P_RS_ROUND);
		for (int r = 0; r < n; r++)
			reduce(s, P(r), P((r + 1) % n), (r - st + n) % n);
	}
	for (int st = 0; st <= n - 2; st++) {
		ir_begin_round(s, ag, P_AG_ROUND);
		for (int r = 0; r < n; r++)
			copy(s, P(r), P((r + 1) % n), (r - st + 1 + n) % n);
	}
#undef P
	return s;
}

static ir_sched *ring_allreduce(int n) { return ring_allreduce_perm(n, NULL); }

/* Ring allgather with k chunks per rank, all k to the next rank each round. */
static ir_sched *ring_allgather(int n, int k)
{
	ir_sched *s = mk(IR_ALLGATHER, "ring_ag", n, n * k);
	for (int st = 0; st <= n - 2; st++) {
		ir_begin_round(s, 0, P_AG_ROUND);
		for (int r = 0; r < n; r++)
			for (int j = 0; j < k; j++)
				copy(s, r, (r + 1) % n, ((r - st + n) % n) * k + j);
	}
	return s;
}

/* Ring reduce-scatter: chunk c travels from rank c+1 around to its owner c. */
static ir_sched *ring_reduce_scatter(int n)
{
	ir_sched *s = mk(IR_REDUCE_SCATTER, "ring_rs", n, n);
	for (int st = 0; st <= n - 2; st++) {
		ir_begin_round(s, 0, P_RS_ROUND);
		for (int r = 0; r < n; r++)
			reduce(s, r, (r + 1) % n, (r - st - 1 + 2 * n) % n);
	}
	return s;
}

/* Binomial-tree broadcast of `chunks` chunks, one round per chunk and level
 * (no pipelining: the port model allows one transfer per rank per round). */
static ir_sched *tree_broadcast(int n, int root, int chunks)
{
	ir_sched *s = mk(IR_BROADCAST, "binomial", n, chunks);
	s->root = root;
	for (int c = 0; c < chunks; c++)
		for (int d = 1; d < n; d *= 2) {
			ir_begin_round(s, 0, P_RS_ROUND);
			for (int v = 0; v < d && v + d < n; v++)
				copy(s, (v + root) % n, (v + d + root) % n, c);
		}
	return s;
}

/* Pipelined chain broadcast, chunks = n - 1: chunk c leaves rank r at
 * round c + r, so about n^2 transfers over 2n rounds. */
static ir_sched *chain_broadcast(int n)
{
	ir_sched *s = mk(IR_BROADCAST, "chain", n, n - 1);
	for (int t = 0; t < 2 * n - 3; t++) {
		ir_begin_round(s, 0, P_AG_ROUND);
		for (int r = 0; r < n - 1; r++)
			if (t - r >= 0 && t - r < n - 1)
				copy(s, r, r + 1, t - r);
	}
	return s;
}

/* Binomial-tree reduce to root: the broadcast tree run backwards. */
static ir_sched *tree_reduce(int n, int root)
{
	ir_sched *s = mk(IR_REDUCE, "binomial", n, 1);
	s->root = root;
	int top = 1;
	while (top < n)
		top *= 2;
	for (int d = top / 2; d >= 1; d /= 2) {
		ir_begin_round(s, 0, P_RS_ROUND);
		for (int v = d; v < 2 * d && v < n; v++)
			reduce(s, (v + root) % n, (v - d + root) % n, 0);
	}
	return s;
}

/* Recursive halving (reduce-scatter) then doubling (allgather), n a power of
 * two, chunks = n; a rank moves n/2^(k+1) chunks per round, all to one peer,
 * which the one-port model counts as one message. */
static ir_sched *rhd_allreduce(int n)
{
	ir_sched *s = mk(IR_ALLREDUCE, "rhd", n, n);
	int rs = ir_phase(s, "halving"), ag = ir_phase(s, "doubling");
	for (int d = n / 2; d >= 1; d /= 2) {         /* rank keeps the half of its block that holds it */
		ir_begin_round(s, rs, P_RS_ROUND);
		for (int r = 0; r < n; r++) {
			int peer = r ^ d, lo = (peer / d) * d;
			for (int c = lo; c < lo + d; c++)
				reduce(s, r, peer, c);
		}
	}
	for (int d = 1; d < n; d *= 2) {
		ir_begin_round(s, ag, P_AG_ROUND);
		for (int r = 0; r < n; r++) {
			int peer = r ^ d, lo = (r / d) * d;
			for (int c = lo; c < lo + d; c++)
				copy(s, r, peer, c);
		}
	}
	return s;
}

/* --- running the verifier with stderr captured ------------------------------ */

static char captured[16384];
static int capture_fd = -1;

/* Run verify_sched with fd 2 pointed at a scratch file, into `captured`. */
static int verify_capture(const ir_sched *s)
{
	if (capture_fd < 0)
		capture_fd = fileno(tmpfile());
	if (ftruncate(capture_fd, 0) != 0)
		perror("ftruncate");
	fflush(stderr);
	int saved = dup(2);
	dup2(capture_fd, 2);
	lseek(2, 0, SEEK_SET);
	int n = verify_sched(s);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ssize_t got = pread(capture_fd, captured, sizeof captured - 1, 0);
	captured[got > 0 ? got : 0] = '\0';
	return n;
}

static void expect_ok(const char *name, ir_sched *s)
{
	int e = verify_capture(s);
	CHECK(e == 0, "%s: expected to verify, got %d errors:\n%s", name, e, captured);
	ir_free(s);
}

/* Expect errors; every `want` (NULL-terminated) must occur in the output. */
static void expect_err(const char *name, ir_sched *s, int nerr, ...)
{
	int e = verify_capture(s);
	CHECK(nerr < 0 ? e > 0 : e == nerr, "%s: expected %d errors, got %d:\n%s", name, nerr, e, captured);
	va_list ap;
	va_start(ap, nerr);
	for (const char *w; (w = va_arg(ap, const char *));)
		CHECK(strstr(captured, w) != NULL, "%s: missing \"%s\" in:\n%s", name, w, captured);
	va_end(ap);
	if (verbose)
		printf("--- %s (%d error%s)\n%s", name, e, e == 1 ? "" : "s", captured);
	ir_free(s);
}

/* A copy of s without transfer `drop` (-1: none) and with dst of `redirect`
 * replaced by `newdst`. */
static ir_sched *mutate(const ir_sched *s, int drop, int redirect, int newdst)
{
	ir_sched *m = mk(s->kind, s->algo, s->n, s->chunks);
	m->root = s->root;
	m->ports_send = s->ports_send;
	m->ports_recv = s->ports_recv;
	for (int i = 0; i < s->nphases; i++)
		ir_phase(m, s->phases[i]);
	for (int r = 0; r < s->nrounds; r++) {
		const ir_round *rd = &s->rounds[r];
		ir_begin_round(m, rd->phase, rd->pos);
		for (int t = rd->first; t < rd->first + rd->count; t++) {
			if (t == drop)
				continue;
			const ir_xfer *x = &s->xfers[t];
			ir_add(m, x->src, t == redirect ? newdst : x->dst, x->chunk, (ir_op)x->op, ir_xfer_pos(s, x));
		}
		ir_end_round(m);
	}
	return m;
}

/* --- tests ------------------------------------------------------------------ */

static void test_correct(void)
{
	char name[64];
	for (int n = 2; n <= 64; n++) {
		snprintf(name, sizeof name, "ring allreduce n=%d", n);
		expect_ok(name, ring_allreduce(n));
	}
	for (int n = 1; n <= 33; n++)
		for (int root = 0; root < n; root += 1 + n / 3) {
			snprintf(name, sizeof name, "broadcast n=%d root=%d", n, root);
			expect_ok(name, tree_broadcast(n, root, 2));
			snprintf(name, sizeof name, "reduce n=%d root=%d", n, root);
			expect_ok(name, tree_reduce(n, root));
		}
	for (int n = 2; n <= 33; n++) {
		snprintf(name, sizeof name, "allgather n=%d", n);
		expect_ok(name, ring_allgather(n, 1));
		snprintf(name, sizeof name, "allgather n=%d 3 chunks/rank", n);
		expect_ok(name, ring_allgather(n, 3));
		snprintf(name, sizeof name, "reduce_scatter n=%d", n);
		expect_ok(name, ring_reduce_scatter(n));
	}
	for (int n = 2; n <= 64; n *= 2) {
		snprintf(name, sizeof name, "rhd allreduce n=%d", n);
		expect_ok(name, rhd_allreduce(n));
	}
	int perm[] = { 3, 0, 6, 1, 5, 2, 4 };
	expect_ok("ring over a permuted order n=7", ring_allreduce_perm(7, perm));
	expect_ok("empty allreduce n=1", mk(IR_ALLREDUCE, "nothing", 1, 1));
	expect_ok("empty broadcast n=1", mk(IR_BROADCAST, "nothing", 1, 4));
	expect_ok("chain broadcast n=9", chain_broadcast(9));

	/* two reduces into one slot in one round are fine when disjoint */
	ir_sched *s = mk(IR_REDUCE, "star", 3, 1);
	s->ports_recv = 2;
	ir_begin_round(s, 0, P_RS_ROUND);
	reduce(s, 1, 0, 0);
	reduce(s, 2, 0, 0);
	expect_ok("two disjoint reduces into one slot", s);

	/* a copy may overwrite a contribution that lives on elsewhere (swap) */
	s = mk(IR_ALLREDUCE, "swap", 2, 1);
	ir_begin_round(s, 0, P_RS_ROUND);
	copy(s, 0, 1, 0);
	copy(s, 1, 0, 0);
	ir_begin_round(s, 0, P_RS_ROUND);
	reduce(s, 0, 1, 0);
	ir_begin_round(s, 0, P_AG_ROUND);
	copy(s, 1, 0, 0);
	expect_ok("swap by two copies in one round", s);
}

static void test_broken(void)
{
	ir_sched *ring = ring_allreduce(5);   /* 8 rounds of 5: RS 0..3, AG 4..7 */

	/* a wrong final state points at the transfer that last wrote the
	 * slot, with a note at the algorithm ... */
	expect_err("dropped transfer", mutate(ring, 5 * 7 + 3, -1, 0), 1,
		   "test.coll:4:33: error: after round 7 (the last), rank 4 chunk 1 holds {1-4}, but allreduce needs {0-4}; "
		   "the last write to it was this reduce from rank 3 in round 2\n"
		   "      round { for r in 0 .. n-1 { reduce (r - s + n) % n : r -> (r + 1) % n; } }\n"
		   "                                  ^\n"
		   "test.coll:1:1: note: while verifying algorithm 'ring' for n = 5\n"
		   "  algorithm ring : allreduce {\n"
		   "  ^\n", NULL);
	/* ... naming the phase of that round when it has one */
	ir_sched *part = mk(IR_ALLREDUCE, "part", 3, 1);
	ir_begin_round(part, ir_phase(part, "gather"), P_RS_ROUND);
	reduce(part, 1, 0, 0);
	expect_err("wrong final state, phase named", part, 1,
		   "test.coll:4:33: error: after round 0 (the last), rank 0 chunk 0 holds {0-1}, but allreduce needs {0-2}; "
		   "the last write to it was this reduce from rank 1 in round 0 (phase gather) (and 2 more (rank, chunk) "
		   "pairs are wrong)", NULL);

	/* round 0 twice: every receiver already counted what it gets again */
	ir_sched *	dbl = mk(IR_ALLREDUCE, "ring", 5, 5);
	for (int rep = 0; rep < 2; rep++) {
		ir_begin_round(dbl, 0, P_RS_ROUND);
		for (int r = 0; r < 5; r++)
			reduce(dbl, r, (r + 1) % 5, r);
	}
	expect_err("doubled reduce", dbl, 5,
		   "test.coll:4:33: error: round 1: reduce of chunk 0 from rank 0 to rank 1 counts contributions {0} twice "
		   "(rank 1 holds {0-1}, rank 0 sends {0})",
		   "      round { for r in 0 .. n-1 { reduce (r - s + n) % n : r -> (r + 1) % n; } }\n"
		   "                                  ^\n", NULL);

	expect_err("wrong destination", mutate(ring, -1, 0, 2), 1,
		   "round 0: rank 2 receives from 2 peers (ranks {0-1}) in this round, but the port model allows 1", NULL);

	ir_sched *b = mk(IR_BROADCAST, "flat", 3, 1);
	ir_begin_round(b, 0, P_RS_ROUND);
	copy(b, 0, 1, 0);
	copy(b, 0, 2, 0);
	expect_err("port violation", b, 1,
		   "test.coll:7:33: error: round 0: rank 0 sends to 2 peers (ranks {1-2}) in this round, but the port model allows 1",
		   NULL);

	/* one port error per round, however many ranks are over the model:
	 * all-pairs under one port is one error naming the others, not 8 */
	ir_sched *ap = mk(IR_ALLREDUCE, "allpairs", 4, 4);
	ir_begin_round(ap, 0, P_RS_ROUND);
	for (int r = 0; r < 4; r++)
		for (int d = 0; d < 4; d++)
			if (d != r)
				reduce(ap, r, d, d);
	expect_err("every rank over the port model", ap, 1,
		   "test.coll:4:33: error: round 0: rank 0 sends to 3 peers (ranks {1-3}) in this round, but the port model "
		   "allows 1 (also over the port model in this round: ranks {1-3} sending, ranks {0-3} receiving)", NULL);
	ap = mk(IR_ALLREDUCE, "allpairs", 4, 4);
	ap->ports_send = 3;
	ir_begin_round(ap, 0, P_RS_ROUND);
	for (int r = 0; r < 4; r++)
		for (int d = 0; d < 4; d++)
			if (d != r)
				reduce(ap, r, d, d);
	expect_err("every rank over the receive ports", ap, 1,
		   "round 0: rank 2 receives from 3 peers (ranks {0-1,3}) in this round, but the port model allows 1 "
		   "(also over the port model in this round: ranks {0-1,3} receiving)", NULL);

	/* ports count peers, not chunks: many chunks to one peer are one message */
	b = mk(IR_BROADCAST, "bulk", 3, 4);
	ir_begin_round(b, 0, P_RS_ROUND);
	for (int c = 0; c < 4; c++)
		copy(b, 0, 1, c);
	ir_begin_round(b, 0, P_RS_ROUND);
	for (int c = 0; c < 4; c++) {
		copy(b, 0, 2, c);   /* interleaved with another pair: still 1 peer each */
		copy(b, 1, 0, c);
	}
	expect_ok("bulk copies to one peer per round, pairs interleaved", b);
	b = mk(IR_BROADCAST, "bulk", 3, 4);
	ir_begin_round(b, 0, P_RS_ROUND);
	for (int c = 0; c < 4; c++)
		copy(b, 0, 1, c);
	ir_begin_round(b, 0, P_RS_ROUND);
	for (int c = 0; c < 4; c++) {
		copy(b, 0, 2, c);
		copy(b, 1, 2, 3 - c);
	}
	expect_err("two peers into one rank", b, -1,
		   "round 1: rank 2 receives from 2 peers (ranks {0-1}) in this round, but the port model allows 1",
		   "conflicting writes to rank 2 chunk 3", NULL);
	b = mk(IR_BROADCAST, "bulk", 3, 4);
	for (int r = 1; r < 3; r++) {
		ir_begin_round(b, 0, P_RS_ROUND);
		for (int c = 0; c < 4; c++)
			copy(b, r - 1, r, c);
	}
	expect_ok("bulk chain broadcast under one port", b);

	ir_sched *d = mk(IR_ALLREDUCE, "clobber", 3, 1);
	ir_begin_round(d, 0, P_RS_ROUND);
	reduce(d, 1, 2, 0);
	ir_begin_round(d, 0, P_RS_ROUND);
	copy(d, 2, 0, 0);
	expect_err("copy destroys the only contribution", d, 1,
		   "round 1: copy of chunk 0 from rank 2 to rank 0 destroys the only copy of contributions {0} "
		   "(rank 0 held {0}, rank 2 sends {1-2})", NULL);

	ir_sched *g = mk(IR_ALLGATHER, "bad_ag", 3, 3);
	int ph = ir_phase(g, "gather");
	ir_begin_round(g, ph, P_AG_ROUND);
	reduce(g, 0, 1, 0);
	expect_err("reduce in a collective that copies", g, 1,
		   "round 0 (phase gather): reduce of chunk 0 from rank 0 to rank 1: allgather only copies data, "
		   "there is no op to reduce with (use copy)", NULL);

	g = mk(IR_ALLGATHER, "bad_ag", 3, 3);
	ir_begin_round(g, 0, P_AG_ROUND);
	copy(g, 0, 2, 1);
	expect_err("send without data", g, 1,
		   "round 0: copy of chunk 1 from rank 0 to rank 2: rank 0 holds no data for chunk 1", NULL);

	ir_sched *c = mk(IR_ALLREDUCE, "conflict", 3, 1);
	c->ports_recv = 2;
	ir_begin_round(c, 0, P_RS_ROUND);
	reduce(c, 1, 0, 0);
	copy(c, 2, 0, 0);
	expect_err("conflicting writes", c, 1,
		   "round 0: conflicting writes to rank 0 chunk 0: reduce from rank 1 and copy from rank 2 in the same round",
		   "note: the reduce from rank 1 is here", NULL);

	ir_sched *tw = mk(IR_ALLREDUCE, "twice", 3, 1);
	tw->ports_recv = tw->ports_send = 2;
	ir_begin_round(tw, 0, P_RS_ROUND);
	reduce(tw, 1, 2, 0);
	ir_begin_round(tw, 0, P_RS_ROUND);
	reduce(tw, 2, 0, 0);
	reduce(tw, 1, 0, 0);
	expect_err("two reduces in one round carry the same contribution", tw, 1,
		   "round 1: reduce of chunk 0 from rank 1 to rank 0 counts contributions {1} twice "
		   "(rank 2 also reduces {1-2} into rank 0 in this round)", NULL);

	ir_sched *o = mk(IR_ALLREDUCE, "range", 4, 2);
	ir_begin_round(o, 0, P_RS_ROUND);
	reduce(o, 7, 1, 0);
	reduce(o, 2, 2, 0);
	copy(o, 3, 0, 2);
	expect_err("out of range and self-send", o, 3,
		   "round 0: reduce of chunk 0 from rank 7 to rank 1: source rank 7 is out of range 0..3",
		   "round 0: reduce of chunk 0 from rank 2 to rank 2: a rank cannot send to itself",
		   "round 0: copy of chunk 2 from rank 3 to rank 0: chunk 2 is out of range 0..1 (2 chunks)", NULL);

	ir_sched *rs = ring_reduce_scatter(4);
	expect_ok("reduce_scatter, copied", mutate(rs, -1, -1, 0));
	rs->nrounds--;
	expect_err("reduce_scatter one round short", rs, 1,
		   "test.coll:1:1: error: after round 1 (the last), rank 0 chunk 0 was never written; it holds {0}, but "
		   "reduce_scatter needs {0-3} (and 3 more (rank, chunk) pairs are wrong)", NULL);

	expect_err("empty schedule", mk(IR_ALLREDUCE, "nothing", 2, 1), 1,
		   "test.coll:1:1: error: with no rounds, rank 0 chunk 0 was never written; it holds {0}, but allreduce "
		   "needs {0-1}", NULL);
	CHECK(strstr(captured, "note:") == NULL, "a note beside an error at the algorithm:\n%s", captured);
	expect_err("bad chunk count", mk(IR_ALLGATHER, "odd", 2, 3), 1,
		   "algorithm odd: allgather needs the chunk count to be a multiple of n, got 3 chunks for n = 2", NULL);
	ir_sched *br = mk(IR_BROADCAST, "b", 2, 1);
	br->root = 2;
	expect_err("bad root", br, 1, "algorithm b: broadcast root 2 is out of range 0..1", NULL);

	/* many errors in one round: at most VERIFY_MAX_ROUND_ERRORS, then a note */
	ir_sched *many = mk(IR_ALLGATHER, "many", 30, 30);
	many->ports_send = many->ports_recv = 0;   /* unlimited */
	ir_begin_round(many, 0, P_AG_ROUND);
	for (int r = 1; r < 30; r++)
		copy(many, r, 0, 0);   /* each reads a chunk its sender lacks */
	expect_err("error cap", many, VERIFY_MAX_ROUND_ERRORS,
		   "note: round 0: further errors in this round not shown", NULL);

	/* errors in rounds 0 and 1: only round 0 is reported */
	ir_sched *two = mk(IR_ALLREDUCE, "two", 3, 1);
	ir_begin_round(two, 0, P_RS_ROUND);
	reduce(two, 0, 0, 0);
	ir_begin_round(two, 0, P_RS_ROUND);
	reduce(two, 1, 1, 0);
	expect_err("stop after the first bad round", two, 1, "round 0:", NULL);
	CHECK(strstr(captured, "round 1") == NULL, "round 1 reported after a bad round 0:\n%s", captured);

	ir_free(ring);
}

static void test_state(void)
{
	ir_sched *s = ring_allreduce(6);
	bstate *st = state_new(s);
	int out[64];
	char buf[64];
	for (int r = 0; r < 5; r++)   /* the reduce-scatter half */
		state_apply_round(st, s, r);
	/* chunk c is complete on rank c-1 after n-1 steps; partial elsewhere */
	int k = state_holders(st, 3, out);
	CHECK(k == 1 && out[0] == 2, "holders of chunk 3 after RS: %d ranks, first %d", k, k ? out[0] : -1);
	k = state_contrib(st, 4, 3, out);
	CHECK(k == 2 && out[0] == 3 && out[1] == 4, "rank 4 chunk 3 after RS holds %d ranks", k);
	CHECK(!state_complete(st, 4, 3) && state_complete(st, 2, 3) && state_has(st, 4, 3), "complete/has");
	k = state_contrib(st, 1, 3, out);
	state_set_fmt(st, state_get(st, 1, 3), buf, sizeof buf);
	CHECK(strcmp(buf, "{0-1,3-5}") == 0 && k == 5, "rank 1 chunk 3 formats as %s", buf);
	for (int r = 5; r < s->nrounds; r++)
		state_apply_round(st, s, r);
	for (int c = 0; c < 6; c++)
		CHECK(state_holders(st, c, out) == 6, "chunk %d not everywhere after ring", c);
	CHECK(!state_has(st, 6, 0) && !state_complete(st, 0, 6) && state_contrib(st, -1, 0, out) == 0,
	      "out-of-range queries answer false / 0");
	state_free(st);
	ir_free(s);

	/* sets: runs and bitsets, formatting, truncation */
	s = mk(IR_ALLREDUCE, "x", 200, 1);
	st = state_new(s);
	state_set *acc = state_set_ref(state_get(st, 0, 0));
	for (int r = 2; r < 200; r += 3) {   /* scattered: ends as a bitset */
		state_set *u = state_set_union(st, acc, state_get(st, r, 0));
		state_set_release(st, acc);
		acc = u;
	}
	CHECK(state_set_count(acc) == 67, "count %d", state_set_count(acc));
	CHECK(state_set_has(st, acc, 197) && !state_set_has(st, acc, 198), "has");
	char big[80];
	state_set_fmt(st, acc, big, sizeof big);
	CHECK(strncmp(big, "{0,2,5,8,", 9) == 0 && strstr(big, "...(67 ranks)}"), "truncated format %s", big);
	state_set *d = state_set_diff(st, state_need(st, 0), acc);
	CHECK(state_set_count(d) == 133 && state_set_disjoint(st, d, acc) && !state_set_subset(st, acc, d),
	      "diff %d", state_set_count(d));
	state_set *all = state_set_union(st, d, acc);
	CHECK(all == state_need(st, 0), "union of complements is the shared full set");
	state_set *none = state_set_inter(st, d, acc);
	CHECK(state_set_count(none) == 0, "inter");
	state_set *lo = state_set_ref(state_get(st, 10, 0));
	for (int r = 11; r < 150; r++) {   /* contiguous: stays one run */
		state_set *u = state_set_union(st, lo, state_get(st, r, 0));
		state_set_release(st, lo);
		lo = u;
	}
	state_set_fmt(st, lo, buf, sizeof buf);
	CHECK(strcmp(buf, "{10-149}") == 0, "run %s", buf);
	state_set *mixed = state_set_inter(st, lo, acc);   /* runs x bitset */
	CHECK(state_set_count(mixed) == 47 && state_set_subset(st, mixed, lo) && state_set_subset(st, mixed, acc),
	      "mixed inter %d", state_set_count(mixed));
	state_set *one = state_set_inter(st, lo, state_get(st, 20, 0));
	CHECK(one == state_get(st, 20, 0), "a one-member result is the shared {r}");
	state_set *sets[] = { acc, d, all, none, lo, mixed, one };
	for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
		state_set_release(st, sets[i]);
	state_free(st);
	ir_free(s);
}

/* Random sets against bool arrays: every operation, both representations
 * (few runs vs scattered) and the mixed cases, n around word boundaries. */
static unsigned rng = 2463534242u;
static unsigned rnd(unsigned m)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng % m;
}

static state_set *random_set(bstate *st, int n, bool *ref)
{
	state_set *a = state_set_diff(st, state_need(st, 0), state_need(st, 0));   /* {} */
	memset(ref, 0, (size_t)n);
	int kind = (int)rnd(4), pieces = kind == 0 ? 0 : kind == 1 ? 1 + (int)rnd(3) : (int)rnd((unsigned)n + 1);
	for (int p = 0; p < pieces; p++) {
		int lo = (int)rnd((unsigned)n), len = kind == 3 ? 1 : 1 + (int)rnd((unsigned)(n - lo));
		for (int r = lo; r < lo + len; r++) {
			state_set *u = state_set_union(st, a, state_get(st, r, 0));
			state_set_release(st, a);
			a = u;
			ref[r] = true;
		}
	}
	return a;
}

static bool same_set(const bstate *st, const state_set *a, const bool *ref, int n)
{
	int k = 0;
	for (int r = 0; r < n; r++) {
		if (state_set_has(st, a, r) != ref[r])
			return false;
		k += ref[r];
	}
	return k == state_set_count(a);
}

static void test_sets_random(void)
{
	static const int ns[] = { 1, 2, 5, 63, 64, 65, 127, 130, 200, 1024 };
	for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
		int n = ns[ni], bad = 0;
		ir_sched *s = mk(IR_ALLREDUCE, "sets", n, 1);
		bstate *st = state_new(s);
		bool *ra = malloc((size_t)n), *rb = malloc((size_t)n), *rc = malloc((size_t)n);
		for (int it = 0; it < 400 && bad < 5; it++) {
			state_set *a = random_set(st, n, ra), *b = random_set(st, n, rb);
			bool dis = true, sub = true;
			for (int r = 0; r < n; r++) {
				dis &= !(ra[r] && rb[r]);
				sub &= !ra[r] || rb[r];
			}
			int ok = same_set(st, a, ra, n) && same_set(st, b, rb, n) &&
				 state_set_disjoint(st, a, b) == dis && state_set_subset(st, a, b) == sub;
			for (int op = 0; op < 3; op++) {
				state_set *c = op == 0 ? state_set_union(st, a, b) : op == 1 ? state_set_inter(st, a, b)
											  : state_set_diff(st, a, b);
				for (int r = 0; r < n; r++)
					rc[r] = op == 0 ? (ra[r] || rb[r]) : op == 1 ? (ra[r] && rb[r]) : (ra[r] && !rb[r]);
				ok &= same_set(st, c, rc, n);
				state_set_release(st, c);
			}
			if (!ok)
				bad++;
			state_set_release(st, a);
			state_set_release(st, b);
		}
		CHECK(bad == 0, "random set operations disagree with the reference at n=%d", n);
		free(ra);
		free(rb);
		free(rc);
		state_free(st);
		ir_free(s);
	}
}

/* A reference verifier on plain bool arrays, straight from the rules in
 * DESIGN.md; random small schedules must get the same verdict from both. */
static bool naive_ok(const ir_sched *s)
{
	int n = s->n, C = s->chunks, ok = 1;
	bool *H = calloc((size_t)n * C * n, 1), *N = malloc((size_t)n * C * n), *need = calloc((size_t)C * n, 1);
#define AT(A, r, c, k) A[((size_t)(r) * C + (c)) * n + (k)]
	/* written out per collective on purpose: an oracle independent of
	 * coll_kinds.h, which the verifier reads */
	bool copies_only = s->kind == IR_ALLGATHER || s->kind == IR_BROADCAST || s->kind == IR_ALLTOALL;
	for (int c = 0; c < C; c++)
		for (int r = 0; r < n; r++) {
			int owner = C >= n ? c / (C / n) : 0, src = C >= n * n ? c / (C / (n * n)) / n : 0;
			int own = s->kind == IR_ALLGATHER ? owner : s->kind == IR_BROADCAST ? s->root
				: s->kind == IR_ALLTOALL ? src : r;
			if (own == r)
				AT(H, r, c, r) = true;
			for (int k = 0; k < n; k++)
				need[(size_t)c * n + k] = s->kind == IR_ALLGATHER ? k == owner
							 : s->kind == IR_BROADCAST ? k == s->root
							 : s->kind == IR_ALLTOALL ? k == src : true;
		}
	for (int i = 0; i < s->nrounds && ok; i++) {
		const ir_round *rd = &s->rounds[i];
		int sends[64] = { 0 }, recvs[64] = { 0 };
		bool pair[64][64] = { { false } };
		memcpy(N, H, (size_t)n * C * n);
		for (int t = rd->first; t < rd->first + rd->count && ok; t++) {
			const ir_xfer *x = &s->xfers[t];
			if (x->src < 0 || x->src >= n || x->dst < 0 || x->dst >= n || x->chunk < 0 || x->chunk >= C ||
			    x->src == x->dst) {
				ok = 0;
				break;
			}
			if (!pair[x->src][x->dst]) {   /* ports count distinct peers */
				pair[x->src][x->dst] = true;
				if (++sends[x->src] > s->ports_send || ++recvs[x->dst] > s->ports_recv) {
					ok = 0;
					break;
				}
			}
			bool any = false;
			for (int k = 0; k < n; k++)
				any |= AT(H, x->src, x->chunk, k);
			if (!any)
				ok = 0;
			/* other writes to the slot in this round */
			for (int u = rd->first; u < t; u++) {
				const ir_xfer *y = &s->xfers[u];
				if (y->dst != x->dst || y->chunk != x->chunk)
					continue;
				if (x->op == IR_COPY || y->op == IR_COPY)
					ok = 0;
				for (int k = 0; k < n; k++)
					if (AT(H, x->src, x->chunk, k) && AT(H, y->src, y->chunk, k))
						ok = 0;
			}
			if (x->op != IR_COPY && copies_only)
				ok = 0;
			if (x->op == IR_COPY) {
				for (int k = 0; k < n; k++)
					AT(N, x->dst, x->chunk, k) = AT(H, x->src, x->chunk, k);
			} else {
				bool bany = false;
				for (int k = 0; k < n; k++) {
					bany |= AT(H, x->dst, x->chunk, k);
					if (AT(H, x->dst, x->chunk, k) && AT(H, x->src, x->chunk, k))
						ok = 0;
					AT(N, x->dst, x->chunk, k) |= AT(H, x->src, x->chunk, k);
				}
				if (!bany)
					ok = 0;
			}
		}
		/* a needed contribution that existed before the round must survive it */
		for (int c = 0; c < C && ok; c++)
			for (int k = 0; k < n; k++) {
				bool before = false, after = false;
				for (int r = 0; r < n; r++) {
					before |= AT(H, r, c, k);
					after |= AT(N, r, c, k);
				}
				if (need[(size_t)c * n + k] && before && !after)
					ok = 0;
			}
		memcpy(H, N, (size_t)n * C * n);
	}
	for (int r = 0; r < n && ok; r++)
		for (int c = 0; c < C; c++) {
			bool constrained = s->kind == IR_REDUCE_SCATTER ? c / (C / n) == r
					   : s->kind == IR_REDUCE ? r == s->root
					   : s->kind == IR_ALLTOALL ? C >= n * n && c / (C / (n * n)) % n == r : true;
			for (int k = 0; constrained && k < n; k++)
				if (AT(H, r, c, k) != need[(size_t)c * n + k])
					ok = 0;
		}
#undef AT
	free(H);
	free(N);
	free(need);
	return ok;
}

static void test_random_schedules(void)
{
	int agree = 0, passed = 0, disagree = 0;
	for (int it = 0; it < 30000; it++) {
		int n = 2 + (int)rnd(4);
		ir_kind k = (ir_kind)rnd(IR_NKINDS);
		int C = (k == IR_REDUCE_SCATTER || k == IR_ALLGATHER) ? n * (1 + (int)rnd(2))
			: k == IR_ALLTOALL ? n * n : 1 + (int)rnd(3);
		ir_sched *s = mk(k, "random", n, C);
		s->root = (int)rnd((unsigned)n);
		s->ports_send = 1 + (int)rnd(2);
		s->ports_recv = 1 + (int)rnd(2);
		/* mostly legal-looking moves (sender has data, mostly reduce into
		 * non-empty / copy into empty) so that some schedules pass */
		bstate *st = state_new(s);
		int nr = 1 + (int)rnd(3 * (unsigned)n);
		for (int r = 0; r < nr; r++) {
			ir_begin_round(s, 0, P_RS_ROUND);
			int nt = (int)rnd((unsigned)n + 1);
			for (int t = 0; t < nt; t++) {
				int a = (int)rnd((unsigned)n), b = (int)rnd((unsigned)n), c = (int)rnd((unsigned)C);
				if (rnd(8) && (!state_has(st, a, c) || a == b))
					continue;
				ir_op op = rnd(8) == 0 ? (ir_op)rnd(2)
					   : state_has(st, b, c) && k != IR_ALLGATHER && k != IR_BROADCAST && k != IR_ALLTOALL
					   ? IR_REDUCE_OP : IR_COPY;
				ir_add(s, a, b, c, op, op == IR_COPY ? P_COPY : P_REDUCE);
			}
			ir_end_round(s);
			if (s->nrounds > 0 && s->rounds[s->nrounds - 1].count > 0 && r < s->nrounds)
				state_apply_round(st, s, s->nrounds - 1);
		}
		state_free(st);
		bool want = naive_ok(s);
		int got = verify_capture(s);
		if ((got == 0) == want)
			agree++;
		else if (disagree++ < 3)
			printf("FAIL random schedule %d: reference says %s, verify_sched %d errors:\n%s", it,
			       want ? "ok" : "bad", got, captured);
		passed += want;
		ir_free(s);
	}
	CHECK(disagree == 0, "verify_sched disagrees with the reference on %d random schedules", disagree);
	CHECK(passed > 100, "only %d random schedules were correct; the generator needs tuning", passed);
	if (verbose)
		printf("random schedules: %d agree (%d correct), %d disagree\n", agree, passed, disagree);
}

static void test_exports(void)
{
	ir_sched *s = ring_allreduce(4);
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	export_json(m, s);
	fclose(m);
	const char *head = "{\"collective\": \"allreduce\", \"algorithm\": \"ring\", \"n\": 4, \"chunks\": 4, \"root\": 0, "
			   "\"ports\": {\"send\": 1, \"recv\": 1}, \"rounds\": [\n"
			   "  {\"phase\": \"main\", \"transfers\": [{\"src\": 0, \"dst\": 1, \"chunk\": 0, \"op\": \"reduce\"}, ";
	CHECK(strncmp(buf, head, strlen(head)) == 0, "json:\n%s", buf);
	CHECK(strstr(buf, "{\"phase\": \"allgather\", \"transfers\": [{\"src\": 0, \"dst\": 1, \"chunk\": 1, \"op\": \"copy\"}"),
	      "json allgather:\n%s", buf);
	CHECK(len > 3 && strcmp(buf + len - 3, "]}\n") == 0, "json ending");
	if (verbose)
		printf("--- export_json\n%s", buf);
	free(buf);

	m = open_memstream(&buf, &len);
	export_table(m, s);
	fclose(m);
	CHECK(strstr(buf, "round  phase      r0     r1     r2     r3\n") &&
	      strstr(buf, "    0  main       +c0>1  +c1>2  +c2>3  +c3>0\n") &&
	      strstr(buf, "    5  allgather  c3>1   c0>2   c1>3   c2>0\n") &&
	      strstr(buf, "6 rounds, 24 transfers (12 copy, 12 reduce), max per rank: 6 sent (rank 0), 6 received (rank 0)"),
	      "table:\n%s", buf);
	if (verbose)
		printf("--- export_table\n%s", buf);
	free(buf);

	m = open_memstream(&buf, &len);
	export_dot(m, s);
	fclose(m);
	CHECK(strncmp(buf, "digraph \"ring\" {", 16) == 0 && strstr(buf, "n0_0 -> n1_1 [label=\"0:+0\"") &&
	      strstr(buf, "n3_5 -> n0_6 [label=\"5:2\""), "dot:\n%s", buf);
	if (verbose)
		printf("--- export_dot\n%s", buf);
	free(buf);
	ir_free(s);

	/* a table with an idle rank and a multi-transfer cell */
	s = mk(IR_BROADCAST, "b", 3, 2);
	s->ports_send = 2;
	ir_begin_round(s, 0, P_RS_ROUND);
	copy(s, 0, 1, 0);
	copy(s, 0, 2, 1);
	m = open_memstream(&buf, &len);
	export_table(m, s);
	fclose(m);
	CHECK(strstr(buf, "round  r0         r1  r2\n    0  c0>1,c1>2  .   .\n"), "table 2:\n%s", buf);
	free(buf);
	ir_free(s);
}

/* --- timings ---------------------------------------------------------------- */

static double now(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long maxrss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* Verify one big schedule in a child process so that each case's peak RSS
 * is its own: RSS after building the IR, after verifying, and the state's
 * own peak bytes (from a replay with state_apply_round). */
static void time_case(const char *name, ir_sched *(*build)(int), int n)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		ir_sched *s = build(n);
		long rss_ir = maxrss_kb();
		double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
		int e = verify_sched(s);
		double t1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_PROCESS_CPUTIME_ID);
		long rss_v = maxrss_kb();
		bstate *st = state_new(s);
		size_t peak = state_bytes(st);
		double t2 = now(CLOCK_PROCESS_CPUTIME_ID);
		for (int r = 0; r < s->nrounds; r++) {
			state_apply_round(st, s, r);
			size_t b = state_bytes(st);
			if (b > peak)
				peak = b;
		}
		double t3 = now(CLOCK_PROCESS_CPUTIME_ID);
		printf("%s, n=%d chunks=%d: %d rounds, %d transfers\n"
		       "  verify: %d errors, %.3f s CPU (%.0f ns/transfer), %.3f s wall; state_apply_round replay %.3f s CPU\n"
		       "  memory: state peak %.1f MB; peak RSS %.1f MB after building the IR (%.1f MB of it the "
		       "transfer array), %.1f MB after verify\n",
		       name, s->n, s->chunks, s->nrounds, s->nxfers, e, c1 - c0, (c1 - c0) * 1e9 / s->nxfers, t1 - t0,
		       t3 - t2, peak / 1048576.0, rss_ir / 1024.0, s->capxfers * sizeof(ir_xfer) / 1048576.0,
		       rss_v / 1024.0);
		fflush(stdout);
		state_free(st);
		ir_free(s);
		_exit(e != 0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s n=%d did not verify", name, n);
}

static int *g_perm;
static ir_sched *ring_scattered(int n)
{
	return ring_allreduce_perm(n, g_perm);
}

static void test_timings(void)
{
	time_case("ring allreduce", ring_allreduce, 1024);
	time_case("ring reduce_scatter", ring_reduce_scatter, 1024);
	time_case("chain broadcast", chain_broadcast, 1024);
	time_case("rhd allreduce", rhd_allreduce, 1024);
	/* the worst case for memory: ring over a pseudo-random order makes
	 * every partial sum a scattered set, i.e. a bitset */
	int n = 1024;
	g_perm = malloc(n * sizeof *g_perm);
	for (int i = 0; i < n; i++)
		g_perm[i] = i;
	unsigned x = 12345;
	for (int i = n - 1; i > 0; i--) {
		x = x * 1103515245u + 12345u;
		int j = (int)((x >> 8) % (unsigned)(i + 1)), t = g_perm[i];
		g_perm[i] = g_perm[j];
		g_perm[j] = t;
	}
	time_case("ring, shuffled rank order", ring_scattered, n);
	free(g_perm);
}

int main(int argc, char **argv)
{
	bool quick = false;
	diag_max_errors = 0;   /* every case's errors are captured, across many cases */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-v") == 0)
			verbose = true;
		else if (strcmp(argv[i], "-q") == 0)
			quick = true;
	}
	/* diagnostics are captured per schedule and flushed at the end of each
	 * capture; unbuffered, every fprintf piece would be its own write(2) */
	static char errbuf[1 << 16];
	setvbuf(stderr, errbuf, _IOFBF, sizeof errbuf);
	F = diag_from_string("test.coll", SRC);
	P_ALGO = at("algorithm", 0);
	P_RS_ROUND = at("round {", 0);
	P_REDUCE = at("reduce (", 0);
	P_AG_ROUND = at("round {", 1);
	P_COPY = at("copy (", 0);

	test_correct();
	test_broken();
	test_state();
	test_sets_random();
	test_random_schedules();
	test_exports();
	if (!quick)
		test_timings();
	printf("%d checks, %d failed\n", checks, fails);
	diag_free_file(F);
	return fails != 0;
}
