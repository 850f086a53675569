/*
 * rt_unit.c - single-process tests of libcollrt's pieces: fp16/bf16
 * conversions, reduction kernels for every dtype and op and their
 * non-temporal variants, SipHash against its published test vector (and
 * incrementally), plan building and checking, chunk bounds, the error
 * strings, configuration refusals (empty secret, COLL_AUTH), and
 * COLL_AUTH=mac refusing a frame injected into a link (two processes: the
 * one place this file forks).  Links the runtime's objects directly
 * (internals are local in libcollrt.a).  Prints "N passed, N failed".
 */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt.h"
#include "rt_test.h"

static int passed, failed;

#define CHECK(cond, ...)                                  \
	do {                                                  \
		if (cond)                                         \
			passed++;                                     \
		else {                                            \
			failed++;                                     \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);   \
			printf(__VA_ARGS__);                          \
			printf("\n");                                 \
		}                                                 \
	} while (0)

static void t_half(void)
{
	/* Every half round-trips through float. */
	int bad = 0;
	for (uint32_t h = 0; h < 65536; h++) {
		float f = rt_half_to_float((uint16_t)h);
		if (isnan(f))
			continue;
		if (rt_float_to_half(f) != h)
			bad++;
	}
	CHECK(bad == 0, "%d halves do not round-trip", bad);
	CHECK(rt_half_to_float(0x3c00) == 1.0f && rt_half_to_float(0xc000) == -2.0f, "half decode");
	CHECK(rt_half_to_float(0x0001) == ldexpf(1, -24), "smallest subnormal");
	CHECK(rt_float_to_half(65520.0f) == 0x7c00 && rt_float_to_half(65519.0f) == 0x7bff, "overflow rounding");
	/* Ties go to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10. */
	CHECK(rt_float_to_half(1.0f + ldexpf(1, -11)) == 0x3c00, "tie to even (down)");
	CHECK(rt_float_to_half(1.0f + 3 * ldexpf(1, -11)) == 0x3c02, "tie to even (up)");
	CHECK(isnan(rt_half_to_float(rt_float_to_half(NAN))), "nan stays nan");
	/* bf16 */
	bad = 0;
	for (uint32_t h = 0; h < 65536; h++) {
		float f = rt_bf16_to_float((uint16_t)h);
		if (!isnan(f) && rt_float_to_bf16(f) != h)
			bad++;
	}
	CHECK(bad == 0, "%d bf16 do not round-trip", bad);
	CHECK(rt_float_to_bf16(1.0f + ldexpf(1, -8)) == 0x3f80, "bf16 tie to even");
	CHECK(isnan(rt_bf16_to_float(rt_float_to_bf16(NAN))), "bf16 nan");
}

static void t_kernels(void)
{
	int8_t a8[4] = {100, -100, 5, -128}, b8[4] = {100, -100, -7, 1};
	rt_reduce2(a8, b8, 4, COLL_INT8, COLL_SUM);
	CHECK(a8[0] == -56 && a8[1] == 56 && a8[2] == -2 && a8[3] == -127, "int8 sum wraps");
	int32_t a32[3] = {INT32_MAX, -5, 7}, b32[3] = {1, 3, -9}, d32[3];
	rt_reduce3(d32, a32, b32, 3, COLL_INT32, COLL_SUM);
	CHECK(d32[0] == INT32_MIN && d32[1] == -2 && d32[2] == -2, "int32 sum wraps (no UB)");
	rt_reduce3(d32, a32, b32, 3, COLL_INT32, COLL_MIN);
	CHECK(d32[0] == 1 && d32[1] == -5 && d32[2] == -9, "int32 min");
	uint32_t u1[2] = {1u << 31, 3}, u2[2] = {2, 5};
	rt_reduce2(u1, u2, 2, COLL_UINT32, COLL_PROD);
	CHECK(u1[0] == 0 && u1[1] == 15, "uint32 prod wraps");
	uint64_t x1[2] = {UINT64_MAX, 0}, x2[2] = {1, 9};
	rt_reduce2(x1, x2, 2, COLL_UINT64, COLL_MAX);
	CHECK(x1[0] == UINT64_MAX && x1[1] == 9, "uint64 max is unsigned");
	int64_t s1[1] = {-1}, s2[1] = {1};
	rt_reduce2(s1, s2, 1, COLL_INT64, COLL_MAX);
	CHECK(s1[0] == 1, "int64 max is signed");
	uint8_t c1[1] = {200}, c2[1] = {100};
	rt_reduce2(c1, c2, 1, COLL_UINT8, COLL_SUM);
	CHECK(c1[0] == 44, "uint8 sum wraps");
	float f1[1000], f2[1000];
	for (int i = 0; i < 1000; i++)
		f1[i] = (float)i, f2[i] = 0.5f;
	rt_reduce2(f1, f2, 1000, COLL_FLOAT32, COLL_PROD);
	CHECK(f1[999] == 499.5f && f1[2] == 1.0f, "fp32 prod");
	double g1[2] = {1.5, -2}, g2[2] = {2.5, -3}, g3[2];
	rt_reduce3(g3, g1, g2, 2, COLL_FLOAT64, COLL_MAX);
	CHECK(g3[0] == 2.5 && g3[1] == -2, "fp64 max");
	uint16_t h1[2] = {rt_float_to_half(1.5f), rt_float_to_half(-2)}, h2[2] = {rt_float_to_half(2.25f),
	                                                                          rt_float_to_half(0.5f)};
	rt_reduce2(h1, h2, 2, COLL_FLOAT16, COLL_SUM);
	CHECK(rt_half_to_float(h1[0]) == 3.75f && rt_half_to_float(h1[1]) == -1.5f, "fp16 sum");
	uint16_t b1[1] = {rt_float_to_bf16(3)}, b2[1] = {rt_float_to_bf16(-4)};
	rt_reduce2(b1, b2, 1, COLL_BFLOAT16, COLL_PROD);
	CHECK(rt_bf16_to_float(b1[0]) == -12.0f, "bf16 prod");
}

static void t_siphash(void)
{
	/* Reference vector from the SipHash paper (appendix A): key 00..0f,
	 * message 00..0e. */
	uint8_t key[16], msg[15];
	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 15; i++)
		msg[i] = (uint8_t)i;
	CHECK(rt_siphash(key, msg, 15) == 0xa129ca6149be45e5ULL, "siphash test vector: %016llx",
	      (unsigned long long)rt_siphash(key, msg, 15));
	/* Incremental SipHash (COLL_AUTH=mac seals frames piece by piece)
	 * equals the one-shot value for every split of every length. */
	uint8_t buf[70];
	for (int i = 0; i < 70; i++)
		buf[i] = (uint8_t)(i * 37 + 1);
	int bad = 0;
	for (size_t len = 0; len <= 70; len++)
		for (size_t a = 0; a <= len; a++)
			for (size_t b = a; b <= len; b += 3) {
				rt_sip s;
				rt_sip_init(&s, key);
				rt_sip_update(&s, buf, a);
				rt_sip_update(&s, buf + a, b - a);
				rt_sip_update(&s, buf + b, len - b);
				bad += rt_sip_final(&s) != rt_siphash(key, buf, len);
			}
	CHECK(bad == 0, "incremental siphash differs from one-shot in %d splits", bad);
	uint8_t k1[16], k2[16];
	rt_auth_key("a", k1);
	rt_auth_key("b", k2);
	CHECK(memcmp(k1, k2, 16) != 0, "different secrets give different keys");
}

static void t_plans(void)
{
	char why[256];
	for (int n = 1; n <= 9; n++) {
		coll_algo **algos;
		int na;
		coll_plan_set *s = rtt_plan_set(n, &algos, &na);
		CHECK(s && coll_plan_set_check(s, why, sizeof why) == COLL_OK, "n=%d plan set: %s", n, why);
		CHECK(algos[0]->rounds == (n > 1 ? 2 * (n - 1) : 0), "ring rounds for n=%d: %d", n, algos[0]->rounds);
		if (n == 4) {   /* the critical delay table of `straggler auto` */
			coll_crit ok[] = {{1024, 1e-6}, {COLL_BYTES_MAX, COLL_NEVER}}, down[] = {{1024, 0}, {512, 0}};
			s->crit = ok, s->ncrit = 2;
			CHECK(coll_plan_set_check(s, why, sizeof why) == COLL_ERR_PLAN && strstr(why, "only for straggler auto"),
			      "crit without auto: %s", why);
			s->straggler = COLL_STRAGGLER_AUTO;
			CHECK(coll_plan_set_check(s, why, sizeof why) == COLL_OK, "crit with auto: %s", why);
			s->crit = down;
			CHECK(coll_plan_set_check(s, why, sizeof why) == COLL_ERR_PLAN && strstr(why, "not increasing"),
			      "crit sizes going down: %s", why);
		}
		rtt_plan_set_free(s, algos, na);
	}
	/* A send without a matching receive. */
	coll_step r0[] = {COLL_SEND(0, 1, 0)};
	coll_rank_plan rp[2] = {COLL_RANK_PLAN(r0), {NULL, 0}};
	coll_algo bad = {"bad", COLL_BROADCAST, 2, 1, 1, 0, rp, 0};
	CHECK(rt_algo_check(&bad, why, sizeof why) == COLL_ERR_PLAN && strstr(why, "receives 0"), "unmatched: %s", why);
	/* Matched counts but crossed order. */
	coll_step s0[] = {COLL_SEND(0, 1, 0), COLL_SEND(1, 1, 1)};
	coll_step s1[] = {COLL_RECV_COPY(0, 0, 1), COLL_RECV_COPY(1, 0, 0)};
	coll_rank_plan rq[2] = {COLL_RANK_PLAN(s0), COLL_RANK_PLAN(s1)};
	coll_algo crossed = {"crossed", COLL_BROADCAST, 2, 2, 2, 0, rq, 0};
	CHECK(rt_algo_check(&crossed, why, sizeof why) == COLL_ERR_PLAN && strstr(why, "same order"), "crossed: %s", why);
	/* Unsorted rounds, self peer. */
	coll_step u0[] = {COLL_SEND(1, 1, 0), COLL_SEND(0, 1, 0)};
	coll_rank_plan ru[2] = {COLL_RANK_PLAN(u0), {NULL, 0}};
	coll_algo unsorted = {"u", COLL_BROADCAST, 2, 1, 2, 0, ru, 0};
	CHECK(rt_algo_check(&unsorted, why, sizeof why) == COLL_ERR_PLAN && strstr(why, "sorted"), "unsorted: %s", why);
	coll_step self[] = {COLL_SEND(0, 0, 0)};
	coll_rank_plan rs[2] = {COLL_RANK_PLAN(self), {NULL, 0}};
	coll_algo selfp = {"s", COLL_BROADCAST, 2, 1, 1, 0, rs, 0};
	CHECK(rt_algo_check(&selfp, why, sizeof why) == COLL_ERR_PLAN && strstr(why, "bad peer"), "self: %s", why);
	/* reduce_scatter needs chunks % n == 0. */
	coll_rank_plan re[3] = {{NULL, 0}, {NULL, 0}, {NULL, 0}};
	coll_algo rsbad = {"rs", COLL_REDUCE_SCATTER, 3, 4, 0, 0, re, 0};
	CHECK(rt_algo_check(&rsbad, why, sizeof why) == COLL_ERR_PLAN, "rs chunks");
	/* coll_algo_build rejects bad transfers. */
	coll_xfer x = {0, 0, 0, 0, 0};
	CHECK(coll_algo_build("x", COLL_ALLREDUCE, 2, 1, 0, &x, 1) == NULL, "src == dst refused");
	/* Dependency counts: ring n=3, rank 0: round 1 sends chunk 2 which it
	 * received (reduce) in round 0. */
	coll_algo *ring = rtt_ring_allreduce(3);
	coll_comm dummy;
	memset(&dummy, 0, sizeof dummy);
	rt_prep *p = NULL;
	CHECK(rt_prep_build(&dummy, ring, 0, &p) == COLL_OK, "prep");
	int found = 0;
	for (int i = 0; i < p->nsteps; i++)
		if (p->steps[i].kind == COLL_STEP_SEND && p->steps[i].round == 1) {
			found = 1;
			CHECK(p->steps[i].chunk == 2 && p->steps[i].need == 1, "round-1 send needs the round-0 reduce");
		}
	CHECK(found, "round-1 send present");
	/* Sending on (nsend, after): rank 0 of ring n = 3 receives, in rounds
	 * 0..3, chunk 2 (reduce), 1 (reduce), 0 (copy), 2 (copy), and sends
	 * each of the first three on in the next round.  Chunk 2's partial sum
	 * is overwritten after it left (OVERWRITE: only the message needs
	 * it); the rest are final (NONE). */
	static const struct { int round, kind, chunk, nsend_round, after; } want[] = {
		{0, COLL_STEP_RECV_REDUCE, 2, 1, RT_AFTER_OVERWRITE},
		{1, COLL_STEP_RECV_REDUCE, 1, 2, RT_AFTER_NONE},
		{2, COLL_STEP_RECV_COPY, 0, 3, RT_AFTER_NONE},
		{3, COLL_STEP_RECV_COPY, 2, -1, RT_AFTER_NONE},
	};
	int fwd = 0;
	for (int i = 0; i < p->nsteps; i++) {
		const rt_xstep *x = &p->steps[i];
		if (x->kind == COLL_STEP_SEND) {
			CHECK(x->nsend == -1, "step %d: a send has no nsend", i);
			continue;
		}
		for (int w = 0; w < 4; w++) {
			if (want[w].round != x->round)
				continue;
			fwd++;
			const rt_xstep *y = x->nsend >= 0 ? &p->steps[x->nsend] : NULL;
			CHECK(x->kind == want[w].kind && x->chunk == want[w].chunk && x->after == want[w].after,
			      "round %d receive: kind %d chunk %d after %d", x->round, x->kind, x->chunk, x->after);
			CHECK(want[w].nsend_round < 0 ? !y
			                              : y && y->kind == COLL_STEP_SEND && y->chunk == x->chunk &&
			                                    y->round == want[w].nsend_round,
			      "round %d receive: nsend %d", x->round, x->nsend);
		}
	}
	CHECK(fwd == 4, "four receives");
	rt_prep_free(p);
	coll_algo_free(ring);
	/* A value sent on twice (a broadcast tree's inner rank): the second
	 * send reads home, so the receive must write it (READ); a send in the
	 * receive's own round carries the old value and is not its nsend. */
	coll_step b0[] = {COLL_SEND(0, 1, 0), COLL_RECV_COPY(0, 1, 0), COLL_SEND(1, 1, 0), COLL_SEND(2, 2, 0)};
	coll_rank_plan rb[3] = {COLL_RANK_PLAN(b0), {NULL, 0}, {NULL, 0}};
	coll_algo tree = {"t", COLL_BROADCAST, 3, 1, 3, 0, rb, 0};
	CHECK(rt_prep_build(&dummy, &tree, 0, &p) == COLL_OK, "prep tree");
	CHECK(p->steps[1].nsend == 2 && p->steps[1].after == RT_AFTER_READ, "tree: nsend %d after %d", p->steps[1].nsend,
	      p->steps[1].after);
	rt_prep_free(p);
}

/* Non-temporal writers (reduce.c) against the plain ones, at every
 * alignment of the destination and lengths around their block edges. */
static void t_nt(void)
{
	enum { N = 20000 };
	unsigned char *src = malloc(N + 64), *a = malloc(N + 64), *b = malloc(N + 64);
	for (int i = 0; i < N + 64; i++)
		src[i] = (unsigned char)(i * 7 + 3);
	int bad = 0;
	static const size_t lens[] = {0, 1, 15, 63, 255, 256, 257, 319, 4096, 8191, 8193, 19999};
	for (int al = 0; al < 16; al++)
		for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
			size_t len = lens[li];
			memset(a, 0xEE, N + 64);
			memset(b, 0xEE, N + 64);
			rt_copy_nt(a + al, src + 3, len);
			memcpy(b + al, src + 3, len);
			bad += memcmp(a, b, N + 64) != 0;
		}
	CHECK(bad == 0, "rt_copy_nt differs from memcpy in %d cases", bad);
	bad = 0;
	static const coll_dtype dts[] = {COLL_INT8, COLL_INT32, COLL_FLOAT16, COLL_FLOAT32, COLL_FLOAT64};
	for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
		for (int al = 0; al < 16; al += 4)
			for (size_t n = 0; n < 3000; n += 997) {
				size_t esz = coll_dtype_size(dts[d]);
				if (n * esz > N)
					continue;
				memset(a, 0xEE, N + 64);
				memset(b, 0xEE, N + 64);
				rt_reduce3_nt(a + al, src, src + 8, n, dts[d], COLL_MAX);
				rt_reduce3(b + al, src, src + 8, n, dts[d], COLL_MAX);
				bad += memcmp(a, b, N + 64) != 0;
			}
	CHECK(bad == 0, "rt_reduce3_nt differs from rt_reduce3 in %d cases", bad);
	free(src), free(a), free(b);
}

static void t_misc(void)
{
	CHECK(coll_chunk_lo(0, 3, 2) == 0 && coll_chunk_lo(7, 3, 1) == 2 && coll_chunk_lo(7, 3, 3) == 7, "chunk bounds");
	CHECK(coll_chunk_lo(UINT64_MAX, 7, 7) == UINT64_MAX, "chunk bounds do not overflow");
	for (int r = 0; r <= COLL_ERR_UNSUPPORTED; r++)
		CHECK(strcmp(coll_strerror((coll_result)r), "unknown error") != 0, "strerror(%d)", r);
	CHECK(sizeof(rt_hdr) == 64, "wire header is 64 bytes");
	CHECK(coll_dtype_size(COLL_BFLOAT16) == 2 && coll_dtype_size(COLL_NDTYPES) == 0, "dtype sizes");
	/* names and aliases from coll_dtypes.def / coll_ops.def, both ways */
	for (int d = 0; d < COLL_NDTYPES; d++)
		CHECK(coll_dtype_from_name(coll_dtype_name((coll_dtype)d)) == d, "dtype name %d", d);
	CHECK(coll_dtype_from_name("float") == COLL_FLOAT32 && coll_dtype_from_name("half") == COLL_FLOAT16 &&
	          coll_dtype_from_name("bfloat16") == COLL_BFLOAT16 && coll_dtype_from_name("") == -1 &&
	          coll_dtype_from_name("float8") == -1 && coll_dtype_from_name(NULL) == -1,
	      "dtype aliases");
	for (int o = 0; o < COLL_NOPS; o++)
		CHECK(coll_op_from_name(coll_op_name((coll_op)o)) == o, "op name %d", o);
	CHECK(coll_op_from_name("avg") == -1 && coll_op_from_name(NULL) == -1, "unknown op");
	/* COLL_POLICY's values: the units of units.def, the split modes of coll_splits.def */
	coll_rail_policy pol = COLL_RAIL_POLICY_DEFAULT;
	CHECK(coll_rail_policy_parse("cold=64KiB,split=latency,rebalance=3,tolerance=2,failover=0.25s", &pol, NULL, 0) ==
	                  COLL_OK &&
	          pol.cold_bytes == 65536 && pol.split == COLL_SPLIT_LATENCY && pol.rebalance_calls == 3 &&
	          pol.tolerance == 2 && pol.failover_ms == 250,
	      "policy with units");
	CHECK(coll_rail_policy_parse("cold=1M,split=equal,failover=300", &pol, NULL, 0) == COLL_OK &&
	          pol.cold_bytes == 1048576 && pol.split == COLL_SPLIT_EQUAL && pol.failover_ms == 300,
	      "policy, failover in ms without a unit");
	char why[200];
	const char *bad[] = { "cold=nan", "cold=1.5x", "cold=-1K", "split=fast", "failover=5ms", "failover=2.5",
		              "failover=10parsecs" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK(coll_rail_policy_parse(bad[i], &pol, why, sizeof why) == COLL_ERR_INVALID && strstr(why, "bad value"),
		      "policy '%s' refused", bad[i]);
	CHECK(rt_transport_find(NULL, "shm") && rt_transport_find(NULL, "tcp") &&
	          !rt_transport_find(NULL, "carrier-pigeon") && !rt_transport_find(NULL, "mpi"),
	      "registry (mpi only on an MPI-bootstrapped communicator)");
	/* coll_init without a rendezvous fails with a reason, not a crash. */
	coll_comm *c = NULL;
	coll_config cfg = COLL_CONFIG_INIT;
	cfg.rank = 0;
	cfg.nranks = 2;
	cfg.addr = "no-colon";
	cfg.secret = "s3cret";
	CHECK(coll_init(&c, NULL, &cfg) == COLL_ERR_BOOTSTRAP && c == NULL && strstr(coll_last_error(NULL), "host:port"),
	      "bad address: %s", coll_last_error(NULL));
	/* An empty secret is refused before anything listens, unless asked for. */
	cfg.secret = "";
	unsetenv("COLL_INSECURE");
	CHECK(coll_init(&c, NULL, &cfg) == COLL_ERR_AUTH && c == NULL &&
	          strstr(coll_last_error(NULL), "COLL_SECRET is empty") && strstr(coll_last_error(NULL), "COLL_INSECURE=1"),
	      "empty secret: %s", coll_last_error(NULL));
	setenv("COLL_INSECURE", "1", 1);
	CHECK(coll_init(&c, NULL, &cfg) == COLL_ERR_BOOTSTRAP && strstr(coll_last_error(NULL), "host:port"),
	      "empty secret with COLL_INSECURE=1 gets as far as the address: %s", coll_last_error(NULL));
	unsetenv("COLL_INSECURE");
	setenv("COLL_AUTH", "hmac", 1);
	cfg.secret = "s3cret";
	CHECK(coll_init(&c, NULL, &cfg) == COLL_ERR_INVALID && strstr(coll_last_error(NULL), "COLL_AUTH='hmac': expected none or mac"),
	      "bad COLL_AUTH: %s", coll_last_error(NULL));
	unsetenv("COLL_AUTH");
	cfg.secret = NULL;
	/* n = 1 needs no peers and no plans. */
	cfg.nranks = 1;
	CHECK(coll_init(&c, NULL, &cfg) == COLL_OK, "solo init: %s", coll_last_error(NULL));
	float in[5] = {1, 2, 3, 4, 5}, out[5] = {0};
	CHECK(coll_allreduce(c, in, out, 5, COLL_FLOAT, COLL_SUM) == COLL_OK && out[4] == 5, "solo allreduce");
	CHECK(coll_allreduce(c, in, out, 5, (coll_dtype)99, COLL_SUM) == COLL_ERR_INVALID, "bad dtype");
	CHECK(coll_broadcast(c, in, out, 5, COLL_FLOAT, 3) == COLL_ERR_INVALID, "bad root");
	coll_finalize(c);
}

/* A free TCP port on 127.0.0.1 (0: none found). */
static int free_port(void)
{
	struct sockaddr_in a = {0};
	socklen_t l = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &l) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Our socket whose local end is `at` and that is connected: the transport
 * link a peer opened to our listener (closed by now) at that address. */
static int link_at(const struct sockaddr_storage *at)
{
	for (int fd = 3; fd < 1024; fd++) {
		struct sockaddr_in l, p;
		socklen_t ll = sizeof l, pl = sizeof p;
		if (getsockname(fd, (struct sockaddr *)&l, &ll) == 0 && l.sin_family == AF_INET &&
		    l.sin_port == ((const struct sockaddr_in *)at)->sin_port && getpeername(fd, (struct sockaddr *)&p, &pl) == 0)
			return fd;
	}
	return -1;
}

/* COLL_AUTH=mac: a frame written into a TCP link behind the transport's
 * back (as someone on the path could inject one) is refused as
 * COLL_ERR_PROTOCOL naming the peer it claims to come from.  Rank 1 is a
 * child process; rank 0 (here) injects a well-formed DATA frame with a
 * plausible header and a made-up MAC into its link to rank 1, where rank
 * 1's first ring receive is waiting.  The frame format ({u32 length, u32
 * type 1 = DATA}, body, 8-byte MAC) is tcp.c's. */
static void t_mac(void)
{
	char addr[64];
	int port = free_port();
	CHECK(port > 0, "no free port");
	if (!port)
		return;
	snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
	setenv("COLL_AUTH", "mac", 1);
	coll_config cfg = COLL_CONFIG_INIT;
	cfg.nranks = 2;
	cfg.addr = addr;
	cfg.secret = "unit-mac";
	cfg.transport = "tcp";
	cfg.timeout_s = 5;
	coll_algo **algos;
	int na;
	coll_plan_set *ps = rtt_plan_set(2, &algos, &na);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		coll_comm *c;
		cfg.rank = 1;
		if (coll_init(&c, ps, &cfg) != COLL_OK)
			_exit(10);
		float x[64] = {0};
		coll_result rc = coll_allreduce_algo(c, "ring", x, x, 64, COLL_FLOAT, COLL_SUM);
		int ok = rc == COLL_ERR_PROTOCOL && strstr(coll_last_error(c), "frame 0 from rank 0 failed its integrity check");
		if (!ok)
			printf("rank 1: %s: %s\n", coll_strerror(rc), coll_last_error(c));
		fflush(stdout);
		coll_finalize(c);
		_exit(ok ? 0 : 11);
	}
	coll_comm *c = NULL;
	cfg.rank = 0;
	coll_result rc = pid > 0 ? coll_init(&c, ps, &cfg) : COLL_ERR_SYSTEM;
	CHECK(rc == COLL_OK, "mac: rank 0 init: %s", coll_last_error(NULL));
	int fd = rc == COLL_OK ? link_at(&c->boot.addrs[0]) : -1;
	CHECK(rc != COLL_OK || fd >= 0, "mac: rank 0's link to rank 1 not found");
	if (fd >= 0) {
		struct {
			uint32_t fh[2];
			rt_hdr h;
			float pay[32];
			uint64_t mac;
		} f;
		memset(&f, 0, sizeof f);
		f.fh[0] = sizeof f.h + sizeof f.pay;
		f.fh[1] = 1;
		f.h.magic = RT_HDR_MAGIC;
		f.h.seq = 1;
		f.h.count = 64;
		f.h.algo_hash = rt_algo_hash(algos[0]);
		f.h.dtype = COLL_FLOAT;
		f.h.len = sizeof f.pay;
		f.mac = 0x0123456789abcdefULL;
		CHECK(write(fd, &f, sizeof f) == (ssize_t)sizeof f, "mac: inject");
	}
	int st = 0;
	if (pid > 0)
		waitpid(pid, &st, 0);
	CHECK(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "mac: rank 1 did not refuse the injected frame (exit %d)",
	      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	coll_finalize(c);
	rtt_plan_set_free(ps, algos, na);
	unsetenv("COLL_AUTH");
}

/* Straggler detection: merging the two latest entries (straggler.c). */
static void t_late(void)
{
	rt_late l = {0, 0, -1, -1};
	rt_late_merge(&l, 100, 2);
	rt_late_merge(&l, 50, 0);
	rt_late_merge(&l, 0, 3);            /* none: ignored */
	CHECK(l.rank == 2 && l.ns == 100 && l.rank2 == 0 && l.ns2 == 50, "late 1: %d %d", l.rank, l.rank2);
	rt_late_merge(&l, 100, 2);          /* the same entry again */
	rt_late_merge(&l, 70, 1);
	CHECK(l.rank == 2 && l.rank2 == 1 && l.ns2 == 70, "late 2: %d %d", l.rank, l.rank2);
	rt_late_merge(&l, 200, 3);
	CHECK(l.rank == 3 && l.rank2 == 2 && l.ns2 == 100, "late 3: %d %d", l.rank, l.rank2);
	rt_late_merge(&l, 200, 1);          /* a tie: the higher rank is later */
	CHECK(l.rank == 3 && l.rank2 == 1, "late tie: %d %d", l.rank, l.rank2);
}

int main(void)
{
	t_late();
	t_half();
	t_kernels();
	t_siphash();
	t_plans();
	t_nt();
	t_misc();
	t_mac();
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
