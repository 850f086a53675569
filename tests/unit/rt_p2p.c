/*
 * rt_p2p.c - the point-to-point test program (coll_isend, coll_irecv,
 * coll_wait...), run as N ranks under collrun:
 *
 *   rt_p2p all        every pair exchanges messages of 0 B to 9 MiB (several
 *                     fragments on every transport) with tags, received in
 *                     another order than sent (messages kept until asked),
 *                     both ways at once, around collectives; every byte checked
 *   rt_p2p size       rank 0 sends 10 ints, rank 1 receives 20: MISMATCH naming
 *                     both sizes, and the next message still arrives
 *   rt_p2p late       rank 0 calls allreduce and then sends to rank 1, which
 *                     receives before its allreduce: both fail (MISMATCH, ABORTED),
 *                     at once, not at the timeout
 *   rt_p2p early      rank 0 sends to rank 1 before its allreduce, rank 1
 *                     receives after its: both fail likewise
 *   rt_p2p bench      one-way time and bandwidth of 8 B to 16 MiB messages between
 *                     ranks 0 and 1 (ping-pong, the others idle)
 *
 * Prints "rank R: ok" or FAIL lines; exits non-zero on any failure.  Payloads
 * are a function of (sender, receiver, tag, index), so a byte in the wrong
 * place, from the wrong sender or of the wrong message shows.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_test.h"

static int rank, n, fails;
static coll_comm *comm;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint32_t word(int from, int to, int tag, size_t i)
{
	uint32_t x = (uint32_t)from * 2654435761u ^ (uint32_t)to * 40503u ^ (uint32_t)tag * 97u ^ (uint32_t)i * 2246822519u;
	return x ^ (x >> 13);
}

static void fill(uint32_t *b, size_t words, int from, int to, int tag)
{
	for (size_t i = 0; i < words; i++)
		b[i] = word(from, to, tag, i);
}

static void check(const uint32_t *b, size_t words, int from, int to, int tag)
{
	for (size_t i = 0; i < words; i++)
		if (b[i] != word(from, to, tag, i)) {
			printf("FAIL rank %d: message from %d tag %d: word %zu is %08x, want %08x\n", rank, from, tag, i, b[i],
			       word(from, to, tag, i));
			fails++;
			return;
		}
}

static int ok(coll_result rc, const char *what)
{
	if (rc == COLL_OK)
		return 1;
	printf("FAIL rank %d: %s: %s: %s\n", rank, what, coll_strerror(rc), coll_last_error(comm));
	fails++;
	return 0;
}

/* Sizes in 32-bit words: empty, tiny, odd, one fragment, several. */
static const size_t sizes[] = { 0, 1, 7, 1000, 65536, 1 << 20, 9 << 18 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* Every rank sends every other rank one message per size, tag = size
 * index; receives are posted in reverse tag order, so all but the last
 * message from each peer arrive before their receive. */
static void exchange(void)
{
	int m = (n - 1) * (int)NSIZES;
	coll_request **rq = calloc((size_t)m * 2, sizeof *rq);
	uint32_t **sb = calloc((size_t)m, sizeof *sb), **rb = calloc((size_t)m, sizeof *rb);
	int k = 0;
	for (int p = 0; p < n; p++) {
		if (p == rank)
			continue;
		for (size_t s = 0; s < NSIZES; s++, k++) {
			sb[k] = malloc(sizes[s] * 4 + 4);
			rb[k] = malloc(sizes[s] * 4 + 4);
			fill(sb[k], sizes[s], rank, p, (int)s);
			ok(coll_isend(comm, sb[k], sizes[s], COLL_UINT32, p, (int)s, &rq[k]), "coll_isend");
		}
	}
	k = 0;
	for (int p = 0; p < n; p++) {
		if (p == rank)
			continue;
		for (int s = (int)NSIZES - 1; s >= 0; s--)
			ok(coll_irecv(comm, rb[k + s], sizes[s], COLL_UINT32, p, s, &rq[m + k + s]), "coll_irecv");
		k += (int)NSIZES;
	}
	ok(coll_waitall(comm, rq, m * 2), "coll_waitall");
	for (int i = 0; i < m * 2; i++)
		if (rq[i]) {
			printf("FAIL rank %d: request %d not freed by coll_waitall\n", rank, i);
			fails++;
		}
	k = 0;
	for (int p = 0; p < n; p++) {
		if (p == rank)
			continue;
		for (size_t s = 0; s < NSIZES; s++, k++) {
			check(rb[k], sizes[s], p, rank, (int)s);
			free(sb[k]);
			free(rb[k]);
		}
	}
	free(rq);
	free(sb);
	free(rb);
}

/* A ring shift with blocking calls on one side and coll_test polling on
 * the other, then an allreduce, then messages again: the two kinds of
 * traffic in one order on every rank. */
static void around_collectives(void)
{
	int next = (rank + 1) % n, prev = (rank + n - 1) % n;
	size_t w = 300000;
	uint32_t *s = malloc(w * 4), *r = malloc(w * 4);
	fill(s, w, rank, next, 42);
	coll_request *q;
	if (!ok(coll_irecv(comm, r, w, COLL_UINT32, prev, 42, &q), "coll_irecv"))
		return;
	ok(coll_send(comm, s, w, COLL_UINT32, next, 42), "coll_send");
	int done = 0;
	ok(coll_test(comm, &q, &done), "coll_test");
	/* then coll_waitsome with a short limit until it finished */
	for (int nf = 0; !done && !nf;) {
		coll_result res = COLL_ERR_INVALID;
		if (!ok(coll_waitsome(comm, &q, 1, 5, &res, &nf), "coll_waitsome"))
			break;
		if (nf && (res != COLL_OK || q != NULL)) {
			printf("FAIL rank %d: coll_waitsome finished the receive with %s, request %s\n", rank,
			       coll_strerror(res), q ? "not freed" : "freed");
			fails++;
		}
	}
	check(r, w, prev, rank, 42);
	float x = (float)rank;
	if (ok(coll_allreduce(comm, &x, &x, 1, COLL_FLOAT, COLL_SUM), "coll_allreduce") && x != (float)(n * (n - 1) / 2)) {
		printf("FAIL rank %d: allreduce between messages gave %g\n", rank, x);
		fails++;
	}
	fill(s, w, rank, prev, 43);
	ok(coll_isend(comm, s, w, COLL_UINT32, prev, 43, &q), "coll_isend");
	ok(coll_recv(comm, r, w, COLL_UINT32, next, 43), "coll_recv");
	ok(coll_wait(comm, &q), "coll_wait");
	check(r, w, next, rank, 43);
	free(s);
	free(r);
}

/* A ring allreduce right after the messages: every rank receives from its
 * neighbour at once, so a receive the messages left posted would take the
 * ring's first message (PLAN error: "rank 1 sent round 1 ..."). */
static void ring_after(void)
{
	float v[64];
	for (int i = 0; i < 64; i++)
		v[i] = (float)(rank + i);
	if (ok(coll_allreduce_algo(comm, "ring", v, v, 64, COLL_FLOAT, COLL_SUM), "ring allreduce after messages"))
		for (int i = 0; i < 64; i++)
			if (v[i] != (float)(n * (n - 1) / 2 + n * i)) {
				printf("FAIL rank %d: ring allreduce after messages: element %d is %g\n", rank, i, v[i]);
				fails++;
				break;
			}
}

static void bad_args(void)
{
	coll_request *q = (coll_request *)&q;
	int v = 0;
	if (coll_isend(comm, &v, 1, COLL_INT32, rank, 0, &q) != COLL_ERR_INVALID || q != NULL ||
	    coll_irecv(comm, &v, 1, COLL_INT32, n, 0, &q) != COLL_ERR_INVALID ||
	    coll_isend(comm, &v, 1, COLL_INT32, (rank + 1) % n, -1, &q) != COLL_ERR_INVALID ||
	    coll_irecv(comm, NULL, 1, COLL_INT32, (rank + 1) % n, 0, &q) != COLL_ERR_INVALID) {
		printf("FAIL rank %d: a bad argument was not refused\n", rank);
		fails++;
	}
}

static void size_mismatch(void)
{
	int32_t a[20] = { 0 }, b[20] = { 0 };
	for (int i = 0; i < 20; i++)
		a[i] = 100 + i;
	if (rank == 0) {
		ok(coll_send(comm, a, 10, COLL_INT32, 1, 7), "coll_send");
		ok(coll_send(comm, a, 20, COLL_INT32, 1, 8), "coll_send");
	} else if (rank == 1) {
		coll_result rc = coll_recv(comm, b, 20, COLL_INT32, 0, 7);
		printf("rank 1: recv of 20 ints: %s: %s\n", coll_strerror(rc), coll_last_error(comm));
		if (rc != COLL_ERR_MISMATCH)
			fails++;
		if (ok(coll_recv(comm, b, 20, COLL_INT32, 0, 8), "coll_recv after the mismatch") && b[19] != 119) {
			printf("FAIL rank 1: the message after the mismatch ends in %d\n", b[19]);
			fails++;
		}
	}
}

/* rank 0: allreduce then send (late) or send then allreduce (early); rank
 * 1 does the other order.  Prints how each call ended. */
static void wrong_order(int late)
{
	int32_t v = 5;
	float x = 1;
	double t0 = now();
	coll_result r1, r2;
	if ((rank == 0) == late) {
		r1 = coll_allreduce_algo(comm, "ring", &x, &x, 1, COLL_FLOAT, COLL_SUM);
		printf("rank %d: allreduce: %s: %s\n", rank, coll_strerror(r1), r1 ? coll_last_error(comm) : "");
		r2 = rank == 0 ? coll_send(comm, &v, 1, COLL_INT32, 1, 9) : coll_recv(comm, &v, 1, COLL_INT32, 0, 9);
		printf("rank %d: %s: %s\n", rank, rank == 0 ? "send" : "recv", coll_strerror(r2));
	} else {
		r1 = rank == 0 ? coll_send(comm, &v, 1, COLL_INT32, 1, 9) : coll_recv(comm, &v, 1, COLL_INT32, 0, 9);
		printf("rank %d: %s: %s: %s\n", rank, rank == 0 ? "send" : "recv", coll_strerror(r1),
		       r1 ? coll_last_error(comm) : "");
		r2 = coll_allreduce_algo(comm, "ring", &x, &x, 1, COLL_FLOAT, COLL_SUM);
		printf("rank %d: allreduce: %s: %s\n", rank, coll_strerror(r2), r2 ? coll_last_error(comm) : "");
	}
	printf("rank %d: ended after %.2f s\n", rank, now() - t0);
	if (r1 == COLL_OK && r2 == COLL_OK)
		fails++;   /* one of the two must have failed */
}

static void bench(void)
{
	if (rank > 1)
		return;
	size_t max = (size_t)16 << 20;
	char *b = malloc(max);
	memset(b, 1, max);
	for (size_t sz = 8; sz <= max; sz *= 8) {
		int iters = sz <= 65536 ? 2000 : sz <= (1 << 20) ? 100 : 20;
		double t0 = 0;
		for (int i = -5; i < iters; i++) {
			if (i == 0)
				t0 = now();
			if (rank == 0) {
				ok(coll_send(comm, b, sz, COLL_UINT8, 1, 0), "send");
				ok(coll_recv(comm, b, sz, COLL_UINT8, 1, 0), "recv");
			} else {
				ok(coll_recv(comm, b, sz, COLL_UINT8, 0, 0), "recv");
				ok(coll_send(comm, b, sz, COLL_UINT8, 0, 0), "send");
			}
		}
		double one = (now() - t0) / iters / 2;
		/* the physical reference: one memcpy of the same bytes here */
		char *dst = malloc(sz);
		memcpy(dst, b, sz);
		double m0 = now();
		for (int i = 0; i < iters; i++) {
			memcpy(dst, b, sz);
			__asm__ volatile("" ::"r"(dst) : "memory");
		}
		double mc = (now() - m0) / iters;
		free(dst);
		if (rank == 0)
			printf("p2p %s %10zu B  %9.2f us  %8.3f GB/s  (memcpy %8.2f us, %6.2f GB/s)\n", coll_transport_name(comm),
			       sz, one * 1e6, sz / one / 1e9, mc * 1e6, sz / mc / 1e9);
	}
	free(b);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rt_p2p all | size | late | early | bench\n");
		return 2;
	}
	const char *mode = argv[1];
	/* collrun's variables, else mpirun's (the mpi transport) */
	const char *e = getenv("COLL_NRANKS"), *r = getenv("COLL_RANK");
	if (!e)
		e = getenv("OMPI_COMM_WORLD_SIZE"), r = getenv("OMPI_COMM_WORLD_RANK");
	n = e ? atoi(e) : 1;
	rank = r ? atoi(r) : 0;
	coll_algo **algos;
	int nalgos;
	coll_plan_set *ps = rtt_plan_set(n > 0 ? n : 1, &algos, &nalgos);
	coll_result rc = coll_init_env(&comm, ps);
	if (rc) {
		printf("FAIL coll_init: %s: %s\n", coll_strerror(rc), coll_last_error(NULL));
		return 1;
	}
	if (n < 2) {
		printf("FAIL rt_p2p needs 2 ranks or more\n");
		return 1;
	}
	if (!strcmp(mode, "all")) {
		bad_args();
		exchange();
		ring_after();
		around_collectives();
		exchange();
		ring_after();
	} else if (!strcmp(mode, "size")) {
		size_mismatch();
	} else if (!strcmp(mode, "late") || !strcmp(mode, "early")) {
		if (rank < 2)
			wrong_order(!strcmp(mode, "late"));
	} else if (!strcmp(mode, "bench")) {
		bench();
	} else {
		fprintf(stderr, "rt_p2p: unknown mode '%s'\n", mode);
		return 2;
	}
	if (!fails)
		printf("rank %d: ok\n", rank);
	coll_finalize(comm);
	rtt_plan_set_free(ps, algos, nalgos);
	return fails ? 1 : 0;
}
