/*
 * rt_coll.c - the collective test program, run as N ranks under collrun.
 *
 *   rt_coll sweep [-quick]   every collective, algorithm, dtype and op against a reference
 *   rt_coll big              16Mi-element fp32 sum and int32 max ring allreduce
 *   rt_coll kill R           rank R is SIGKILLed mid-allreduce; the others must fail fast
 *   rt_coll mismatch         rank n-1 passes a different count
 *   rt_coll badsecret        rank 1 presents the wrong secret
 *   rt_coll bench [MAXMiB]   allreduce busbw table (ring, fp32 sum)
 *   rt_coll init             coll_init, one small allreduce, finalize: says how coll_init ended
 *   rt_coll loop             1 MiB allreduces until one fails (at most 120 s), for the fault suite
 *   rt_coll order            the rank order in use (COLL_PERM, COLL_REORDER=probe, ...): every
 *                            rank's, allgathered, must be the same; prints it and its source
 *   rt_coll tuned            the size table in use (COLL_TUNING, COLL_TUNE=init): each rank's
 *                            choices on one line, which a test compares across ranks
 *   rt_coll rooted KIND      one broadcast or reduce (KIND) of RT_COLL_COUNT (1000) floats from
 *                            root RT_COLL_ROOT (0) with op RT_COLL_OP (0: sum), each read per
 *                            rank (-env), then an allreduce: how each ended, with the result
 *                            checked; exit 3 when the rooted call failed
 *
 * Options before the mode, for tests/fault.test:
 *   -env R NAME=VALUE        set NAME=VALUE in rank R's environment (R: a rank or "all") before
 *                            anything reads it, so that one rank can be misconfigured without a shell
 * and in the environment: RT_COLL_ALGO (loop: the allreduce algorithm, default ring),
 * RT_COLL_STOP=FILE (loop: every rank ends cleanly once FILE exists),
 * RT_COLL_WAIT=FILE (wait until FILE exists, at most 120 s, before coll_init).
 * Every rank prints "rank R: pid P" first.  init and loop print their outcome
 * as "rank R: ... at EPOCH_MS ..." (wall-clock milliseconds) so that a test
 * can compare it with when it injected the fault.
 *
 * Plans are built in memory for the job's n (rt_plans.c).  Inputs and the
 * reference come from runtime/tools/refdata.c, shared with collbench -c:
 * a function of (rank, index mod REF_M), so each rank precomputes the
 * reference for REF_M residues and checks every element of every output;
 * integers and float min/max bit-exact, float sums and products within
 * 2(n-1)u (refdata.h says why that bound).
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "refdata.h"
#include "rt_test.h"


static int rank, n, checks, fails;
static coll_comm *comm;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- values (refdata.c) ----------------------------------------------------- */

/* Reference over all n ranks for each residue class of i (mod REF_M): the
 * result at i depends only on i mod REF_M. */
typedef struct { uint64_t iv[REF_M]; double fv[REF_M], mag[REF_M]; } refs;

static void make_refs(refs *R, coll_dtype dt, coll_op op)
{
	for (int j = 0; j < REF_M; j++)
		ref_reduce(dt, op, n, j, &R->iv[j], &R->fv[j], &R->mag[j]);
}

static void fail(const char *what, size_t i, double got, double want)
{
	if (fails++ < 10)
		printf("FAIL %s: element %zu is %.17g, want %.17g\n", what, i, got, want);
}

/* Check buf[0..len) against the reduction at global index off + j. */
static void check_reduced(const char *what, const void *buf, size_t off, size_t len, coll_dtype dt, coll_op op,
                          const refs *R)
{
	checks++;
	int bad = 0;
	double tol_u = 2.0 * (n - 1) * ref_unit_roundoff(dt);
	for (size_t j = 0; j < len && bad < 3; j++) {
		int k = (int)((off + j) % REF_M);
		if (!ref_is_float(dt)) {
			uint64_t got = ref_load_int(dt, buf, j);
			if (got != R->iv[k])
				fail(what, off + j, (double)(int64_t)got, (double)(int64_t)R->iv[k]), bad++;
		} else {
			double got = ref_load_float(dt, buf, j), want = R->fv[k];
			double tol = (op == COLL_SUM || op == COLL_PROD) ? tol_u * R->mag[k] : 0;
			if (!(fabs(got - want) <= tol))
				fail(what, off + j, got, want), bad++;
		}
	}
}

/* Check buf[j] == input of rank `src` at global index off + j. */
static void check_input(const char *what, const void *buf, size_t off, size_t len, coll_dtype dt, int src,
                        size_t srcoff)
{
	checks++;
	int bad = 0;
	for (size_t j = 0; j < len && bad < 3; j++) {
		double want = ref_value(dt, COLL_SUM, ref_residue(src, srcoff + j));
		double got = ref_load(dt, buf, j);
		if (!ref_is_float(dt))
			want = (double)(int64_t)ref_wrap(dt, (uint64_t)(int64_t)want);
		if (got != want)
			fail(what, off + j, got, want), bad++;
	}
}

static void fill(void *buf, size_t off, size_t len, coll_dtype dt, coll_op op, int r)
{
	for (size_t j = 0; j < len; j++)
		ref_store(dt, buf, j, ref_value(dt, op, ref_residue(r, off + j)));
}

static void expect_ok(coll_result rc, const char *what)
{
	if (rc != COLL_OK) {
		printf("FAIL %s: %s: %s\n", what, coll_strerror(rc), coll_last_error(comm));
		fflush(stdout);
		exit(1);
	}
}

/* --- the collectives under test ------------------------------------------- */

static void *xmalloc(size_t b)
{
	void *p = malloc(b ? b : 1);
	if (!p) {
		printf("FAIL out of memory\n");
		exit(1);
	}
	return p;
}

static void t_allreduce(const char *algo, size_t count, coll_dtype dt, coll_op op, int inplace, const refs *R)
{
	char what[160];
	size_t es = coll_dtype_size(dt);
	snprintf(what, sizeof what, "allreduce %s n=%d count=%zu %s %s %s", algo ? algo : "auto", n, count,
	         coll_dtype_name(dt), coll_op_name(op), inplace ? "in-place" : "out-of-place");
	char *sb = xmalloc(count * es), *rb = inplace ? sb : xmalloc(count * es);
	fill(sb, 0, count, dt, op, rank);
	if (!inplace)
		memset(rb, 0xa5, count * es);
	expect_ok(coll_allreduce_algo(comm, algo, sb, rb, count, dt, op), what);
	check_reduced(what, rb, 0, count, dt, op, R);
	if (!inplace) {
		check_input(what, sb, 0, op == COLL_SUM ? count : 0, dt, rank, 0);   /* sendbuf untouched */
		free(rb);
	}
	free(sb);
}

static void t_reduce_scatter(size_t rc, coll_dtype dt, coll_op op, int inplace, const refs *R)
{
	char what[160];
	size_t es = coll_dtype_size(dt), count = rc * (size_t)n;
	snprintf(what, sizeof what, "reduce_scatter n=%d recvcount=%zu %s %s %s", n, rc, coll_dtype_name(dt),
	         coll_op_name(op), inplace ? "in-place" : "out-of-place");
	char *sb = xmalloc(count * es), *rb = inplace ? sb + rc * (size_t)rank * es : xmalloc(rc * es);
	fill(sb, 0, count, dt, op, rank);
	expect_ok(coll_reduce_scatter(comm, sb, rb, rc, dt, op), what);
	check_reduced(what, rb, rc * (size_t)rank, rc, dt, op, R);
	if (!inplace)
		free(rb);
	free(sb);
}

static void t_allgather(size_t sc, coll_dtype dt, int inplace)
{
	char what[160];
	size_t es = coll_dtype_size(dt), count = sc * (size_t)n;
	snprintf(what, sizeof what, "allgather n=%d sendcount=%zu %s %s", n, sc, coll_dtype_name(dt),
	         inplace ? "in-place" : "out-of-place");
	char *rb = xmalloc(count * es), *sb = inplace ? rb + sc * (size_t)rank * es : xmalloc(sc * es);
	memset(rb, 0x5a, count * es);
	fill(sb, sc * (size_t)rank, sc, dt, COLL_SUM, rank);
	expect_ok(coll_allgather(comm, sb, rb, sc, dt), what);
	for (int q = 0; q < n; q++)
		check_input(what, rb + sc * (size_t)q * es, sc * (size_t)q, sc, dt, q, sc * (size_t)q);
	if (!inplace)
		free(sb);
	free(rb);
}

static void t_broadcast(const char *algo, size_t count, coll_dtype dt, int root, int inplace)
{
	char what[160];
	size_t es = coll_dtype_size(dt);
	snprintf(what, sizeof what, "broadcast %s n=%d count=%zu %s root=%d %s", algo ? algo : "auto", n, count,
	         coll_dtype_name(dt), root, inplace ? "in-place" : "out-of-place");
	char *rb = xmalloc(count * es), *sb = NULL;
	memset(rb, 0x33, count * es);
	if (rank == root) {
		sb = inplace ? rb : xmalloc(count * es);
		fill(sb, 0, count, dt, COLL_SUM, root);
	}
	expect_ok(coll_broadcast_algo(comm, algo, sb, rb, count, dt, root), what);
	check_input(what, rb, 0, count, dt, root, 0);
	if (sb != rb)
		free(sb);
	free(rb);
}

static void t_reduce(const char *algo, size_t count, coll_dtype dt, coll_op op, int root, const refs *R)
{
	char what[160];
	size_t es = coll_dtype_size(dt);
	snprintf(what, sizeof what, "reduce %s n=%d count=%zu %s %s root=%d", algo ? algo : "auto", n, count,
	         coll_dtype_name(dt), coll_op_name(op), root);
	char *sb = xmalloc(count * es), *rb = rank == root ? xmalloc(count * es) : NULL;
	fill(sb, 0, count, dt, op, rank);
	expect_ok(coll_reduce_algo(comm, algo, sb, rb, count, dt, op, root), what);
	if (rank == root)
		check_reduced(what, rb, 0, count, dt, op, R);
	free(sb);
	free(rb);
}

/* Rank s's block for rank d is its input at indices [d*pc, (d+1)*pc); it
 * must land at block s of rank d's recvbuf.  In place: one buffer. */
static void t_alltoall(const char *algo, size_t pc, coll_dtype dt, int inplace)
{
	char what[160];
	size_t es = coll_dtype_size(dt), count = pc * (size_t)n;
	snprintf(what, sizeof what, "alltoall %s n=%d count=%zu %s %s", algo ? algo : "auto", n, pc,
	         coll_dtype_name(dt), inplace ? "in-place" : "out-of-place");
	char *sb = xmalloc(count * es), *rb = inplace ? sb : xmalloc(count * es);
	if (!inplace)
		memset(rb, 0x77, count * es);
	fill(sb, 0, count, dt, COLL_SUM, rank);
	expect_ok(coll_alltoall_algo(comm, algo, sb, rb, pc, dt), what);
	for (int s = 0; s < n; s++)
		check_input(what, rb + pc * (size_t)s * es, pc * (size_t)s, pc, dt, s, pc * (size_t)rank);
	if (!inplace) {
		check_input(what, sb, 0, count, dt, rank, 0);   /* sendbuf untouched */
		free(rb);
	}
	free(sb);
}

static void sweep(int quick)
{
	static refs R;
	const size_t counts[] = {0, 1, 7, 1000003};
	const coll_dtype main_dt[] = {COLL_FLOAT32, COLL_INT32};
	const coll_op main_op[] = {COLL_SUM, COLL_MAX};
	int nc = quick ? 3 : 4;
	/* Every dtype and op, ring allreduce. */
	for (int dt = 0; dt < COLL_NDTYPES; dt++)
		for (int op = 0; op < COLL_NOPS; op++) {
			make_refs(&R, (coll_dtype)dt, (coll_op)op);
			const size_t small[] = {0, 1, 7, 1003, 20011};
			for (int c = 0; c < (quick ? 4 : 5); c++)
				t_allreduce("ring", small[c], (coll_dtype)dt, (coll_op)op, 0, &R);
			t_allreduce("ring", 1003, (coll_dtype)dt, (coll_op)op, 1, &R);
			t_reduce_scatter(333, (coll_dtype)dt, (coll_op)op, 0, &R);
			if (op == 0)
				t_allgather(333, (coll_dtype)dt, 0);
		}
	/* fp32 sum and int32 max across algorithms, sizes and buffer modes. */
	for (int m = 0; m < 2; m++) {
		coll_dtype dt = main_dt[m];
		coll_op op = main_op[m];
		make_refs(&R, dt, op);
		for (int c = 0; c < nc; c++) {
			size_t count = counts[c];
			t_allreduce("ring", count, dt, op, 0, &R);
			t_allreduce("ring", count, dt, op, 1, &R);
			t_allreduce("tree", count, dt, op, 0, &R);
			t_allreduce(NULL, count, dt, op, c % 2, &R);
			t_reduce_scatter(count / (size_t)n + (count ? 1 : 0), dt, op, c % 2, &R);
			t_allgather(count / (size_t)n + (count ? 1 : 0), dt, c % 2);
			/* per peer, so n*n of them: a tenth keeps the big case near the others */
			size_t pc = count / ((size_t)n * (size_t)n * 10) + (count ? 1 : 0);
			t_alltoall("pairwise", pc, dt, 0);
			t_alltoall("bruck", pc, dt, c % 2);
			t_alltoall(NULL, pc, dt, 1);
			int roots[3] = {0, n - 1, n / 2};
			for (int ri = 0; ri < 3; ri++) {
				if (ri && roots[ri] == roots[0])
					continue;
				t_broadcast(ri == 0 ? "tree" : ri == 1 ? "chain" : NULL, count, dt, roots[ri], ri == 2);
				t_reduce(ri == 0 ? "tree" : ri == 1 ? "chain" : NULL, count, dt, op, roots[ri], &R);
			}
		}
	}
	/* The size table picks tree for small allreduce, ring for large. */
	checks++;
	const char *s = coll_choose_algo(comm, COLL_ALLREDUCE, 4096), *l = coll_choose_algo(comm, COLL_ALLREDUCE, 4097);
	if (!s || !l || strcmp(s, "tree") || strcmp(l, "ring"))
		printf("FAIL choice table: 4096 -> %s, 4097 -> %s\n", s ? s : "NULL", l ? l : "NULL"), fails++;
	/* Forcing an unknown algorithm is an error, and does not break the comm. */
	checks++;
	float x = 1;
	coll_result rc = coll_allreduce_algo(comm, "nosuch", &x, &x, 1, COLL_FLOAT, COLL_SUM);
	if (rc != COLL_ERR_NOALGO)
		printf("FAIL forcing 'nosuch' gave %s\n", coll_strerror(rc)), fails++;
}

static void big(void)
{
	static refs R;
	const size_t count = 16u << 20;
	make_refs(&R, COLL_FLOAT32, COLL_SUM);
	t_allreduce(NULL, count, COLL_FLOAT32, COLL_SUM, 0, &R);
	make_refs(&R, COLL_INT32, COLL_MAX);
	t_allreduce(NULL, count, COLL_INT32, COLL_MAX, 1, &R);
}

/* --- faults ---------------------------------------------------------------- */

static void die(int sig)
{
	(void)sig;
	kill(getpid(), SIGKILL);
}

static int kill_test(int victim)
{
	size_t count = 4u << 20;
	float *b = xmalloc(count * sizeof *b);
	for (size_t i = 0; i < count; i++)
		b[i] = 1;
	if (rank == victim) {
		signal(SIGALRM, die);
		struct itimerval it = {{0, 0}, {0, 200000}};
		setitimer(ITIMER_REAL, &it, NULL);
	}
	for (int it = 0; it < 100000; it++) {
		double t0 = now();
		coll_result rc = coll_allreduce(comm, b, b, count, COLL_FLOAT, COLL_SUM);
		if (rc != COLL_OK) {
			double dt = now() - t0;
			printf("rank %d: detected failure after %.3f s: %s: %s\n", rank, dt, coll_strerror(rc),
			       coll_last_error(comm));
			fflush(stdout);
			free(b);
			return dt < 10 ? 3 : 1;
		}
	}
	printf("FAIL rank %d: no error although rank %d was killed\n", rank, victim);
	free(b);
	return 1;
}

static int mismatch_test(void)
{
	size_t count = rank == n - 1 ? 1001 : 1000;
	float *b = xmalloc(count * sizeof *b);
	memset(b, 0, count * sizeof *b);
	coll_result rc = coll_allreduce(comm, b, b, count, COLL_FLOAT, COLL_SUM);
	printf("rank %d: %s: %s\n", rank, coll_strerror(rc), coll_last_error(comm));
	rc = rc == COLL_ERR_MISMATCH || rc == COLL_ERR_ABORTED || rc == COLL_ERR_PEER;
	/* The communicator is broken now. */
	if (coll_allreduce(comm, b, b, 1, COLL_FLOAT, COLL_SUM) != COLL_ERR_ABORTED)
		rc = 0;
	free(b);
	return rc ? 0 : 1;
}

static double epoch_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec * 1e3 + tv.tv_usec / 1e3;
}

/* The fault suite's victim and witnesses: 1 MiB allreduces (RT_COLL_ALGO,
 * default ring) until one fails; "running" after the first success, so
 * the test knows when to strike.  Exit 3: failed (what the test expects
 * of every live rank), 1: nothing failed within 120 s. */
static int loop_test(void)
{
	const char *algo = getenv("RT_COLL_ALGO") ? getenv("RT_COLL_ALGO") : "ring";
	size_t count = 256 * 1024;
	float *b = xmalloc(count * sizeof *b);
	for (size_t i = 0; i < count; i++)
		b[i] = 1;
	const char *stop = getenv("RT_COLL_STOP");
	double start = now();
	for (long it = 0; now() - start < 120; it++) {
		double t0 = now();
		coll_result rc = coll_allreduce_algo(comm, algo, b, b, count, COLL_FLOAT, COLL_SUM);
		/* every rank stops at the same call: when the stop file exists on any */
		int32_t flag = stop && access(stop, F_OK) == 0;
		if (rc == COLL_OK)
			rc = coll_allreduce(comm, &flag, &flag, 1, COLL_INT32, COLL_MAX);
		if (rc == COLL_OK && flag) {
			printf("rank %d: stopped cleanly after %ld calls\n", rank, it + 1);
			free(b);
			return 0;
		}
		if (rc != COLL_OK) {
			printf("rank %d: failed at %.0f after %.3f s in call %ld: %s: %s\n", rank, epoch_ms(), now() - t0,
			       it + 1, coll_strerror(rc), coll_last_error(comm));
			free(b);
			return 3;
		}
		if (it == 0)
			printf("rank %d: running %s\n", rank, algo);
		if (b[0] > 1e30f)   /* keep the values finite */
			for (size_t i = 0; i < count; i++)
				b[i] = 1;
	}
	printf("FAIL rank %d: no error in 120 s\n", rank);
	free(b);
	return 1;
}

static void bench(double max_mib)
{
	if (rank == 0)
		printf("%12s %12s %10s %10s %10s  (allreduce ring fp32 sum, n=%d, %s)\n", "bytes", "count", "time_us",
		       "algbw_GBs", "busbw_GBs", n, coll_transport_name(comm));
	size_t maxb = (size_t)(max_mib * 1048576);
	float *b = xmalloc(maxb), *r = xmalloc(maxb);
	memset(b, 0, maxb);
	memset(r, 0, maxb);
	for (size_t bytes = 1024; bytes <= maxb; bytes *= 4) {
		size_t count = bytes / 4;
		int iters = (int)(256.0 * 1048576 / (double)bytes);
		iters = iters < 5 ? 5 : iters > 200 ? 200 : iters;
		for (int w = 0; w < 2; w++)
			expect_ok(coll_allreduce_algo(comm, "ring", b, r, count, COLL_FLOAT, COLL_SUM), "bench");
		expect_ok(coll_barrier(comm), "barrier");
		double t0 = now();
		for (int it = 0; it < iters; it++)
			expect_ok(coll_allreduce_algo(comm, "ring", b, r, count, COLL_FLOAT, COLL_SUM), "bench");
		expect_ok(coll_barrier(comm), "barrier");
		double t = (now() - t0) / iters;
		double alg = (double)bytes / t / 1e9;
		if (rank == 0)
			printf("%12zu %12zu %10.1f %10.3f %10.3f\n", bytes, count, t * 1e6, alg, alg * 2 * (n - 1) / n);
		fflush(stdout);
	}
	free(b);
	free(r);
}

/* getenv as an int, or dflt. */
static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : dflt;
}

/* Every rank must play in the same order: allgather each rank's view of
 * it (with the communicator itself) and compare. */
static int order_test(void)
{
	const int32_t *perm;
	const char *src = coll_rank_order(comm, &perm);
	int32_t *mine = malloc(sizeof *mine * (size_t)n), *all = malloc(sizeof *all * (size_t)n * n);
	for (int i = 0; i < n; i++)
		mine[i] = perm ? perm[i] : i;
	coll_result rc = coll_allgather(comm, mine, all, (size_t)n, COLL_INT32);
	int ok = rc == COLL_OK;
	for (int r = 0; ok && r < n; r++)
		ok = memcmp(all + (size_t)r * n, mine, sizeof *mine * (size_t)n) == 0;
	printf("rank %d: order", rank);
	for (int i = 0; i < n; i++)
		printf(" %d", mine[i]);
	printf(" (%s): %s\n", src, ok ? "agreed" : rc ? coll_strerror(rc) : "DIFFERENT on some rank");
	free(mine), free(all);
	return ok ? 0 : 1;
}

/* Ranks that may disagree on a rooted call's root, count or op (set per
 * rank with -env): every rank must end alike, a success with the right
 * data or the mismatch named, never a success beside a failure. */
static int rooted_test(const char *kind)
{
	int root = env_int("RT_COLL_ROOT", 0), count = env_int("RT_COLL_COUNT", 1000);
	coll_op op = (coll_op)env_int("RT_COLL_OP", COLL_SUM);
	int bcast = !strcmp(kind, "broadcast");
	if (!bcast && strcmp(kind, "reduce")) {
		fprintf(stderr, "rt_coll: rooted: want broadcast or reduce, not '%s'\n", kind);
		return 2;
	}
	float *s = xmalloc((size_t)count * sizeof *s + 1), *r = xmalloc((size_t)count * sizeof *r + 1);
	for (int i = 0; i < count; i++)
		s[i] = (float)(rank + 1), r[i] = -1;
	double t0 = now();
	coll_result rc = bcast ? coll_broadcast(comm, s, r, (size_t)count, COLL_FLOAT, root)
	                       : coll_reduce(comm, s, r, (size_t)count, COLL_FLOAT, op, root);
	double t = now() - t0;
	int bad = 0;
	float want = bcast ? (float)(root + 1) : op == COLL_MAX ? (float)n : (float)n * (n + 1) / 2;
	for (int i = 0; rc == COLL_OK && (bcast || rank == root) && i < count; i++)
		bad += r[i] != want;
	if (rc == COLL_OK)
		printf("rank %d: %s root %d: ok after %.3f s, %d wrong\n", rank, kind, root, t, bad);
	else
		printf("rank %d: %s root %d: failed after %.3f s: %s: %s\n", rank, kind, root, t, coll_strerror(rc),
		       coll_last_error(comm));
	free(s), free(r);
	return rc != COLL_OK ? 3 : bad ? 1 : 0;
}

/* The size table in use (COLL_TUNING, COLL_TUNE=init): this rank's
 * choice for every collective at sizes 1 KiB .. 16 MiB on one line, so a
 * test can see that every rank chooses alike; then one allreduce. */
static int tuned_test(void)
{
	const char *src = coll_tuning(comm);
	printf("rank %d: tuned by %s:", rank, src ? src : "nothing");
	for (int k = 0; k < COLL_NCOLLS; k++)
		for (uint64_t b = 1024; b <= (16u << 20); b *= 4) {
			const char *a = coll_choose_algo(comm, (coll_kind)k, b);
			printf(" %s", a ? a : "-");
		}
	printf("\n");
	float x = 1;
	coll_result rc = coll_allreduce(comm, &x, &x, 1, COLL_FLOAT, COLL_SUM);
	return rc == COLL_OK && x == (float)n ? 0 : 1;
}

/* Rank 1 comes to a barrier S seconds after init, the others at once:
 * their wait is bounded by COLL_TIMEOUT from when they began it, not by
 * the bootstrap's deadline (COLL_BOOT_TIMEOUT after init), however close
 * that is (runtime.test runs it with COLL_BOOT_TIMEOUT below S). */
static int late_test(double s)
{
	if (rank == 1) {
		struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
		nanosleep(&ts, NULL);
	}
	double t0 = now();
	coll_result rc = coll_barrier(comm);
	if (rc != COLL_OK) {
		printf("FAIL rank %d: barrier after %.3f s: %s: %s\n", rank, now() - t0, coll_strerror(rc),
		       coll_last_error(comm));
		return 1;
	}
	printf("rank %d: barrier ok after %.3f s\n", rank, now() - t0);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Under mpirun there is no COLL_RANK: the MPI bootstrap takes rank and
	 * size from MPI, and so do we, for the plan set. */
	rank = env_int("COLL_RANK", env_int("OMPI_COMM_WORLD_RANK", 0));
	int a = 1;
	for (; a + 2 < argc && !strcmp(argv[a], "-env"); a += 3) {
		char *eq = strchr(argv[a + 2], '=');
		if (!eq) {
			fprintf(stderr, "rt_coll: -env %s %s: want NAME=VALUE\n", argv[a + 1], argv[a + 2]);
			return 2;
		}
		if (strcmp(argv[a + 1], "all") && atoi(argv[a + 1]) != rank)
			continue;
		*eq = 0;
		setenv(argv[a + 2], eq + 1, 1);
		*eq = '=';
	}
	if (a >= argc) {
		fprintf(stderr, "usage: rt_coll [-env R NAME=VALUE]... sweep [-quick] | big | kill R | mismatch | badsecret | "
		                "bench [MiB] | init | loop | order | rooted KIND | late [S]\n");
		return 2;
	}
	const char *mode = argv[a];
	argc -= a - 1;
	argv += a - 1;
	/* after -env: a rank may have been given another COLL_RANK / COLL_NRANKS */
	n = env_int("COLL_NRANKS", env_int("OMPI_COMM_WORLD_SIZE", 1));
	rank = env_int("COLL_RANK", env_int("OMPI_COMM_WORLD_RANK", 0));
	printf("rank %d: pid %d\n", rank, (int)getpid());
	const char *wait = getenv("RT_COLL_WAIT");
	for (double t0 = now(); wait && access(wait, F_OK) != 0 && now() - t0 < 120;) {
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	if (!strcmp(mode, "badsecret") && rank == 1)
		setenv("COLL_SECRET", "not-the-secret", 1);
	coll_algo **algos;
	int nalgos;
	coll_plan_set *ps = rtt_plan_set(n > 0 ? n : 1, &algos, &nalgos);
	double t0 = now();
	coll_result rc = coll_init_env(&comm, ps);
	if (!strcmp(mode, "badsecret")) {
		printf("rank %d: coll_init: %s: %s\n", rank, coll_strerror(rc), coll_last_error(NULL));
		int ok = rank == 1 ? rc == COLL_ERR_AUTH : rc != COLL_OK;
		coll_finalize(comm);
		rtt_plan_set_free(ps, algos, nalgos);
		return ok ? 0 : 1;
	}
	if (!strcmp(mode, "init")) {
		/* how coll_init ended, then one allreduce to show the job works */
		float x = 1;
		if (rc == COLL_OK)
			rc = coll_allreduce(comm, &x, &x, 1, COLL_FLOAT, COLL_SUM);
		if (rc == COLL_OK && x != (float)n)
			printf("FAIL rank %d: allreduce of ones gave %g, want %d\n", rank, x, n);
		if (rc == COLL_OK)
			printf("rank %d: init ok after %.3f s over %s\n", rank, now() - t0, coll_transport_name(comm));
		else
			printf("rank %d: init failed at %.0f after %.3f s: %s: %s\n", rank, epoch_ms(), now() - t0,
			       coll_strerror(rc), comm ? coll_last_error(comm) : coll_last_error(NULL));
		coll_finalize(comm);
		rtt_plan_set_free(ps, algos, nalgos);
		return rc == COLL_OK && x == (float)n ? 0 : 1;
	}
	if (rc) {
		printf("FAIL coll_init: %s: %s\n", coll_strerror(rc), coll_last_error(NULL));
		rtt_plan_set_free(ps, algos, nalgos);
		return 1;
	}
	t0 = now();
	int status = 0;
	if (!strcmp(mode, "sweep"))
		sweep(argc > 2 && !strcmp(argv[2], "-quick"));
	else if (!strcmp(mode, "big"))
		big();
	else if (!strcmp(mode, "kill"))
		status = kill_test(argc > 2 ? atoi(argv[2]) : n - 1);
	else if (!strcmp(mode, "mismatch"))
		status = mismatch_test();
	else if (!strcmp(mode, "bench"))
		bench(argc > 2 ? atof(argv[2]) : 64);
	else if (!strcmp(mode, "loop"))
		status = loop_test();
	else if (!strcmp(mode, "order"))
		status = order_test();
	else if (!strcmp(mode, "rooted"))
		status = rooted_test(argc > 2 ? argv[2] : "");
	else if (!strcmp(mode, "late"))
		status = late_test(argc > 2 ? atof(argv[2]) : 3);
	else if (!strcmp(mode, "tuned"))
		status = tuned_test();
	else {
		fprintf(stderr, "rt_coll: unknown mode '%s'\n", mode);
		status = 2;
	}
	if (!strcmp(mode, "sweep") || !strcmp(mode, "big")) {
		printf("rank %d: %s over %s: %d checks, %d failed, %.2f s\n", rank, mode, coll_transport_name(comm), checks,
		       fails, now() - t0);
		status = fails ? 1 : 0;
	}
	coll_finalize(comm);
	rtt_plan_set_free(ps, algos, nalgos);
	return status;
}
