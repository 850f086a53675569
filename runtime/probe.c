/*
 * probe.c - measure the network between every pair of ranks (coll_probe):
 * the per-pair latencies and bandwidths and the shared segments (groups
 * of ranks and their uplinks) that rank reordering costs orders with.
 *
 * Pipeline position: under the public API, over it.  libcollrt has no
 * point-to-point calls, so a probe round is a plan (coll_algo_build) run
 * with coll_run_algo over the communicator's own transport, whatever it is
 * (shm, tcp, mpi): what is measured is what collectives will see,
 * executor included.  collprobe (runtime/tools/collprobe.c) calls
 * coll_probe and writes the result as a links file; `reorder at init`
 * (reorder.c) calls rt_probe and searches the result in memory.
 *
 * Protocol.  The ranks play a round-robin tournament (the circle method:
 * n-1 rounds for even n, n for odd with a bye, each a perfect matching),
 * so n(n-1)/2 pairs take O(n) rounds instead of O(n^2):
 *   1. latency: per round, `pings` calls of a plan in which every pair
 *      ping-pongs a 64-byte message once; each rank times its own calls,
 *      and half the 10th percentile of those round trips (the paper's
 *      filter for interference) is the pair's latency as this rank saw it;
 *   2. bandwidth: per round, after a barrier (so that the pairs start
 *      together), one untimed call in which every pair exchanges half of
 *      `bytes` each way at once, then `reps` timed calls of `bytes`, back
 *      to back; the rate of the flow a rank received is `bytes` over
 *      their median call (less the latency).  The untimed call spends
 *      what a rate limiter lets through in a burst after a pause, so the
 *      timed ones see the steady rate a long collective gets (why the
 *      median: at its computation in rt_probe): timed after a
 *      barrier, a 1 MiB exchange on a 100 Mbit/s tbf link (12.4 MB/s
 *      each way, measured over whole allreduces) read 14.1 MB/s, and the
 *      slope of 1 MiB and 512 KiB calls, which should cancel the burst,
 *      12.4-15.8: how full the bucket is after a barrier varies from call
 *      to call, and a slope doubles that noise.
 *   3. the rows are gathered to rank 0, which symmetrises them (a pair's
 *      cost the larger of its two directions, as the paper does, unless
 *      `directions`) and infers groups: two ranks are close when their
 *      exchange ran near the fastest rate seen (within 25%; concurrent
 *      flows of a round that share an oversubscribed trunk come out
 *      slower, which is what gives racks away) and their sets of close
 *      ranks mostly agree (Jaccard >= 1/2, so one lucky uncontended
 *      cross-rack exchange does not merge two racks); groups are the
 *      connected components of that relation;
 *   4. each group's uplink: a call in which min(|G|, n-|G|) members
 *      exchange `bytes` with as many ranks outside G (spread over the
 *      other groups) at once, in reps + 1 calls (two of half the bytes if
 *      reps is 1); total bytes over the slowest flow's time in the best
 *      call is what G's uplink carries, and it becomes a segment when
 *      that is below 80% of what the flows would get on their own links.
 *      Each call after a barrier, without step 2's untimed call: the
 *      trunk carries several flows' bytes, so a burst after the pause is
 *      a small part of it (2-3%), and a slope of two sizes, which these
 *      were once read from, doubled their noise (4 probes of one 6.25
 *      MB/s trunk: slopes 4.9-8.1 MB/s).  Uplinks within 15% of the
 *      median uplink are given the median.
 * Pairs measured concurrently under a shared trunk report less than the
 * pair gets alone, so a pair between two groups is given the fastest
 * rate measured between those groups: the segments account for sharing.
 * Every rank runs the same calls in the same order; only rank 0 decides.
 *
 * The host (rt_probe_host, over shm only: every rank on one host).  What
 * limits a collective there is what the ranks share (linkmodel.h, "One
 * host"), measured directly rather than through the transport:
 *   - cores: the CPUs rank 0 may run on (sched_getaffinity);
 *   - mem-bw: k = min(n, cores) ranks memcpy RT_PROBE_HOST_BYTES at once,
 *     RT_PROBE_HOST_REPS times after a barrier; k x bytes x reps over the
 *     slowest rank's time (a buffer larger than the slots and most
 *     caches: collectives copy every byte from a user buffer);
 *   - reduce-bw: rank 0 alone sums RT_PROBE_HOST_BYTES of fp32 into as
 *     many (dst += src, what a receiver does with a slot) the same number
 *     of times, the others waiting.
 * About 30 ms on the 2-core development VM (copying 8 MiB 4 times on two
 * cores at a few GB/s each, then reducing it on one).
 * The communicator's rank order is set aside while probing: it measures
 * physical pairs.
 */
#include <math.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

#define PROBE_SMALL 64   /* bytes of a ping */

/* The circle method: in round t of np players (np even), player np-1
 * meets t and every other r meets (2t - r) mod (np - 1).  -1: a bye (the
 * dummy player of an odd n). */
static int partner(int r, int t, int n)
{
	int np = n + (n & 1), m = np - 1, p;
	if (r == m)
		p = t;
	else if (r == t)
		p = m;
	else
		p = ((2 * t - r) % m + m) % m;
	return p >= n ? -1 : p;
}

static int nrounds(int n) { return n + (n & 1) - 1; }

static int cmp_double(const void *x, const void *y)
{
	double u = *(const double *)x, v = *(const double *)y;
	return (u > v) - (u < v);
}

/* The median of v[k] (k >= 1), sorting v. */
static double median(double *v, int k)
{
	qsort(v, (size_t)k, sizeof *v, cmp_double);
	return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

/* reps calls of an exchange plan moving each way `half` bytes per chunk
 * (buf holds 2 * half), every call's time in each[reps].  warm 0: each
 * call after a barrier; else one barrier, an untimed call moving `warm`
 * bytes each way, then the reps calls back to back. */
static int time_exchange(coll_comm *c, const coll_algo *xch, char *buf, size_t half, int reps, size_t warm,
			 double *each)
{
	int rc = COLL_OK;
	for (int k = 0; k < reps && rc == COLL_OK; k++) {
		if (k == 0 || !warm)
			rc = coll_barrier(c);
		if (k == 0 && warm && rc == COLL_OK)
			rc = coll_run_algo(c, xch, buf, buf, 2 * warm, COLL_UINT8, COLL_SUM);
		int64_t t0 = rt_now_ns();
		if (rc == COLL_OK)
			rc = coll_run_algo(c, xch, buf, buf, 2 * half, COLL_UINT8, COLL_SUM);
		each[k] = (double)(rt_now_ns() - t0) * 1e-9;
	}
	return rc;
}

/* A plan over pairs (a[i], b[i]): ping-pong (pong = 1: a -> b in round 0,
 * b -> a in round 1, one chunk) or exchange (both ways in round 0, a's
 * chunk 0 and b's chunk 1).  Broadcast-shaped (any kind would do: the
 * runtime checks a plan's structure, not its collective), so that probe
 * calls do not count as allreduces for straggler detection. */
static coll_algo *pair_plan(const char *name, int n, const int *a, const int *b, int np, int pong)
{
	coll_xfer *x = malloc(sizeof *x * (2 * (size_t)np + 1));
	if (!x)
		return NULL;
	int k = 0;
	for (int i = 0; i < np; i++) {
		x[k++] = (coll_xfer){ 0, a[i], b[i], 0, 0 };
		x[k++] = (coll_xfer){ pong ? 1 : 0, b[i], a[i], pong ? 0 : 1, 0 };
	}
	coll_algo *al = coll_algo_build(name, COLL_BROADCAST, n, pong ? 1 : 2, 0, x, k);
	free(x);
	return al;
}

/* The pairs of tournament round t. */
static int round_pairs(int n, int t, int *a, int *b)
{
	int np = 0;
	for (int r = 0; r < n; r++) {
		int p = partner(r, t, n);
		if (p > r)
			a[np] = r, b[np++] = p;
	}
	return np;
}

/* Gather len bytes from every rank to rank 0 (all[n*len] there): one round
 * in which every other rank sends its block to rank 0, as an allgather-
 * shaped plan whose other ranks receive nothing. */
static int gather0(coll_comm *c, const void *mine, void *all, size_t len)
{
	int n = c->n;
	if (n == 1) {
		memcpy(all, mine, len);
		return COLL_OK;
	}
	coll_xfer *x = malloc(sizeof *x * (size_t)n);
	char *sb = malloc(len + 1), *rb = malloc(len * (size_t)n + 1);
	coll_algo *al = NULL;
	int rc = COLL_ERR_NOMEM;
	if (x && sb && rb) {
		for (int r = 1; r < n; r++)
			x[r - 1] = (coll_xfer){ 0, r, 0, r, 0 };
		al = coll_algo_build("probe_gather", COLL_ALLGATHER, n, n, 0, x, n - 1);
	}
	if (al) {
		memcpy(sb, mine, len);
		rc = coll_run_algo(c, al, sb, rb, len * (size_t)n, COLL_UINT8, COLL_SUM);
		if (rc == COLL_OK && c->rank == 0)
			memcpy(all, rb, len * (size_t)n);
	} else {
		rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
	}
	coll_algo_free(al);
	free(x), free(sb), free(rb);
	return rc;
}

int rt_probe_bcast(coll_comm *c, void *buf, size_t len)
{
	int n = c->n;
	if (n == 1 || len == 0)
		return COLL_OK;
	/* binomial tree from rank 0: in round k, ranks below 2^k send to r + 2^k */
	coll_xfer *x = malloc(sizeof *x * (size_t)n);
	if (!x)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	int k = 0, nx = 0;
	for (int d = 1; d < n; d <<= 1, k++)
		for (int r = 0; r < d && r + d < n; r++)
			x[nx++] = (coll_xfer){ k, r, r + d, 0, 0 };
	coll_algo *al = coll_algo_build("probe_bcast", COLL_BROADCAST, n, 1, 0, x, nx);
	free(x);
	if (!al)
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	int32_t *save = c->perm;   /* rank 0 is physical rank 0 here */
	c->perm = NULL;
	int32_t *savi = c->inv;
	c->inv = NULL;
	int rc = coll_run_algo(c, al, buf, buf, len, COLL_UINT8, COLL_SUM);
	c->perm = save, c->inv = savi;
	coll_algo_free(al);
	return rc;
}

void rt_probe_free(rt_probe_result *r)
{
	free(r->alpha), free(r->bw), free(r->group), free(r->uplink), free(r->uplink_read);
	memset(r, 0, sizeof *r);
}

/* Step 3 at rank 0: groups from the symmetrised bandwidths (see above). */
static int infer_groups(int n, const double *bw, int *group)
{
	double *v = malloc(sizeof *v * ((size_t)n * n + 2));
	unsigned char *close = calloc((size_t)n * n + 1, 1);
	int *stack = malloc(sizeof *stack * ((size_t)n + 1));
	if (!v || !close || !stack) {
		free(v), free(close), free(stack);
		return -1;
	}
	int k = 0;
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			v[k++] = bw[i * n + j];
	qsort(v, (size_t)k, sizeof *v, cmp_double);
	double top = k ? v[(k - 1) - (k - 1) / 10] : 0;   /* the 90th percentile: uncontended */
	for (int i = 0; i < n; i++) {
		close[i * n + i] = 1;
		for (int j = 0; j < n; j++)
			if (i != j && bw[i * n + j] >= 0.75 * top)
				close[i * n + j] = 1;
	}
	for (int i = 0; i < n; i++)
		group[i] = -1;
	int ng = 0;
	for (int s = 0; s < n; s++) {
		if (group[s] >= 0)
			continue;
		int sp = 0;
		stack[sp++] = s;
		group[s] = ng;
		while (sp) {
			int i = stack[--sp];
			for (int j = 0; j < n; j++) {
				if (group[j] >= 0 || !close[i * n + j])
					continue;
				int both = 0, either = 0;
				for (int x = 0; x < n; x++) {
					both += close[i * n + x] && close[j * n + x];
					either += close[i * n + x] || close[j * n + x];
				}
				if (2 * both >= either) {
					group[j] = ng;
					stack[sp++] = j;
				}
			}
		}
		ng++;
	}
	free(close), free(stack);
	/* groups only where they are plain: the typical exchange inside a
	 * group at least 1.5x the typical one between groups (noise on a busy
	 * host makes some pairs slow at random; a trunk makes every crossing
	 * pair slow).  One group, or nothing but single ranks: no structure. */
	int ki = 0, kx = 0;
	double *vx = v + (size_t)n * n / 2 + 1;   /* the second half of v */
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			if (group[i] == group[j])
				v[ki++] = bw[i * n + j];
			else
				vx[kx++] = bw[i * n + j];
		}
	qsort(v, (size_t)ki, sizeof *v, cmp_double);
	qsort(vx, (size_t)kx, sizeof *vx, cmp_double);
	bool plain = ki > 0 && kx > 0 && v[ki / 2] >= 1.5 * vx[kx / 2];
	free(v);
	/* a group of one rank says nothing a per-pair cost does not (its
	 * uplink is its own link): such ranks stay outside every group */
	int *size = calloc((size_t)ng + 1, sizeof *size), *renum = calloc((size_t)ng + 1, sizeof *renum);
	if (!size || !renum) {
		free(size), free(renum);
		return -1;
	}
	for (int i = 0; i < n; i++)
		size[group[i]]++;
	int kept = 0;
	for (int g = 0; g < ng; g++)
		renum[g] = size[g] >= 2 ? kept++ : -1;
	for (int i = 0; i < n; i++)
		group[i] = renum[group[i]];
	free(size), free(renum);
	if (kept < 2 || !plain) {
		for (int i = 0; i < n; i++)
			group[i] = -1;
		return 0;
	}
	return kept;
}

int rt_probe_host(coll_comm *c, double *mem_bw, double *reduce_bw, int *cores)
{
	*mem_bw = *reduce_bw = 0;
	*cores = 0;
	int n = c->n, me = c->rank, ncpu = 1, rc = COLL_OK;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		ncpu = CPU_COUNT(&set);
	/* rank 0's count decides who copies: every rank must agree */
	int32_t nc = ncpu;
	if ((rc = rt_probe_bcast(c, &nc, sizeof nc)) != COLL_OK)
		return rc;
	int k = n < nc ? n : nc;
	const size_t B = RT_PROBE_HOST_BYTES;
	char *src = malloc(B), *dst = malloc(B);
	double *all = me == 0 ? malloc(sizeof *all * (size_t)n + 1) : NULL;
	double mine = 0, red = 0;
	if (!src || !dst || (me == 0 && !all)) {
		free(src), free(dst), free(all);
		return rt_err(c, COLL_ERR_NOMEM, "out of memory");
	}
	/* fp32 ones: a sum of them stays finite and normal however often it runs */
	for (size_t i = 0; i < B / sizeof(float); i++)
		((float *)src)[i] = ((float *)dst)[i] = 1.0f;
	rc = coll_barrier(c);
	if (rc == COLL_OK && me < k) {
		int64_t t0 = rt_now_ns();
		for (int r = 0; r < RT_PROBE_HOST_REPS; r++) {
			memcpy(dst, src, B);
			__asm__ __volatile__("" : : "r"(dst) : "memory");   /* keep every pass */
		}
		mine = (double)(rt_now_ns() - t0) * 1e-9;
	}
	if (rc == COLL_OK)
		rc = gather0(c, &mine, all, sizeof mine);
	if (rc == COLL_OK && me == 0) {
		int64_t t0 = rt_now_ns();
		for (int r = 0; r < RT_PROBE_HOST_REPS; r++)
			rt_reduce2(dst, src, B / sizeof(float), COLL_FLOAT, COLL_SUM);
		red = (double)(rt_now_ns() - t0) * 1e-9;
	}
	if (rc == COLL_OK)
		rc = coll_barrier(c);
	if (rc == COLL_OK && me == 0) {
		double slow = 0;
		for (int r = 0; r < k; r++)
			slow = fmax(slow, all[r]);
		*mem_bw = (double)k * (double)B * RT_PROBE_HOST_REPS / fmax(slow, 1e-9);
		*reduce_bw = (double)B * RT_PROBE_HOST_REPS / fmax(red, 1e-9);
		*cores = ncpu;
	}
	free(src), free(dst), free(all);
	return rc;
}

int rt_probe(coll_comm *c, const coll_probe_config *cfg0, rt_probe_result *res)
{
	static const coll_probe_config dflt = COLL_PROBE_CONFIG_INIT;
	const coll_probe_config *cfg = cfg0 ? cfg0 : &dflt;
	memset(res, 0, sizeof *res);
	int n = c->n, me = c->rank, R = nrounds(n);
	int pings = cfg->pings > 0 ? cfg->pings : dflt.pings;
	int reps = cfg->reps > 0 ? cfg->reps : dflt.reps;
	size_t S = cfg->bytes >= 1024 ? cfg->bytes : dflt.bytes;
	/* over shm the first calls after the barrier pay for ranks that went
	 * to sleep waiting in it: with 3 reps the median read 0.1-0.5 GB/s
	 * where a hot exchange moves 13-16 GB/s (2 ranks, 2-core VM), which
	 * made every link, not the host, the model's limit; the calls are
	 * cheap there, so take enough that the median is a hot one */
	if (reps < RT_PROBE_SHM_REPS && strcmp(coll_transport_name(c), "shm") == 0)
		reps = RT_PROBE_SHM_REPS;
	if (n == 1)
		return COLL_OK;
	/* measure physical pairs: the rank order is set aside meanwhile */
	int32_t *save = c->perm, *savi = c->inv;
	c->perm = c->inv = NULL;
	int rc = COLL_OK;
	int *pa = malloc(sizeof *pa * (size_t)n), *pb = malloc(sizeof *pb * (size_t)n);
	double *row = calloc(2 * (size_t)n + 1, sizeof *row);   /* my latency to each, bandwidth from each */
	double *samples = malloc(sizeof *samples * (size_t)pings), *calls = malloc(sizeof *calls * (size_t)reps);
	char *buf = malloc(2 * S + PROBE_SMALL);
	double *all = me == 0 ? malloc(sizeof *all * 2 * (size_t)n * n + 1) : NULL;
	int32_t *grp = malloc(sizeof *grp * (size_t)n);
	if (!pa || !pb || !row || !samples || !calls || !buf || !grp || (me == 0 && !all)) {
		rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
		goto out;
	}
	memset(buf, 0, 2 * S + PROBE_SMALL);
	/* where the time goes, for the reports (res->t_*) */
	double t_ping = 0, t_pair = 0;
	int64_t t_up0 = 0;
	/* 1, 2: latency and bandwidth, round by round */
	for (int t = 0; t < R && rc == COLL_OK; t++) {
		int np = round_pairs(n, t, pa, pb), peer = partner(me, t, n);
		coll_algo *lat = pair_plan("probe_ping", n, pa, pb, np, 1);
		coll_algo *xch = pair_plan("probe_bw", n, pa, pb, np, 0);
		if (!lat || !xch) {
			coll_algo_free(lat), coll_algo_free(xch);
			rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
			break;
		}
		int64_t tp = rt_now_ns();
		for (int k = 0; k < pings && rc == COLL_OK; k++) {
			int64_t t0 = rt_now_ns();
			rc = coll_run_algo(c, lat, buf, buf, PROBE_SMALL, COLL_UINT8, COLL_SUM);
			samples[k] = (double)(rt_now_ns() - t0) * 1e-9;
		}
		t_ping += (double)(rt_now_ns() - tp) * 1e-9;
		double alpha = 0;
		if (rc == COLL_OK && peer >= 0) {
			qsort(samples, (size_t)pings, sizeof *samples, cmp_double);
			alpha = samples[(pings - 1) / 10] / 2;
			row[peer] = alpha;
		}
		/* the median call: on a busy host both tails are wrong.  A rank
		 * descheduled between two calls lets a rate limiter refill its
		 * bucket and the next call goes through fast (the fastest of 2
		 * read a 12.4 MB/s link at 13.2 MB/s, 1 probe in 6 with three
		 * busy loops on 2 cores); timing the calls as one block fixed
		 * that, but a rank descheduled longer than the bucket covers
		 * counts the pause at no rate (10.4 MB/s in one CI run).  The
		 * median of 3 drops one call of either kind. */
		tp = rt_now_ns();
		if (rc == COLL_OK)
			rc = time_exchange(c, xch, buf, S, reps, S / 2, calls);
		t_pair += (double)(rt_now_ns() - tp) * 1e-9;
		if (rc == COLL_OK && peer >= 0) {
			double tf = median(calls, reps);
			row[n + peer] = (double)S / (tf - alpha > 1e-9 ? tf - alpha : 1e-9);
		}
		coll_algo_free(lat), coll_algo_free(xch);
	}
	/* 3: rows to rank 0, which infers the groups and tells everyone */
	if (rc == COLL_OK)
		rc = gather0(c, row, all, sizeof *row * 2 * (size_t)n);
	int ng = 0;
	if (rc == COLL_OK && me == 0) {
		res->n = n;
		res->alpha = malloc(sizeof *res->alpha * (size_t)n * n);
		res->bw = malloc(sizeof *res->bw * (size_t)n * n);
		res->group = malloc(sizeof *res->group * (size_t)n);
		if (!res->alpha || !res->bw || !res->group) {
			rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
		} else {
			/* all[i*2n + j]: i's latency to j; all[i*2n + n + j]: bandwidth j -> i */
			for (int i = 0; i < n; i++)
				for (int j = 0; j < n; j++) {
					res->alpha[i * n + j] = i == j ? 0 : all[(size_t)i * 2 * n + j];
					res->bw[i * n + j] = i == j ? INFINITY : all[(size_t)j * 2 * n + n + i];
				}
			/* symmetric for the grouping; the paper's max cost */
			double *sym = malloc(sizeof *sym * (size_t)n * n);
			if (!sym) {
				rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
			} else {
				for (int i = 0; i < n; i++)
					for (int j = 0; j < n; j++)
						sym[i * n + j] = fmin(res->bw[i * n + j], res->bw[j * n + i]);
				/* ranks that all share one host and network namespace
				 * have no network between them to find groups in (what
				 * differs between their pairs there is CPU scheduling) */
				bool one_host = true;
				for (int r = 1; r < n && c->hosts; r++)
					one_host &= strcmp(c->hosts[r].boot_id, c->hosts[0].boot_id) == 0 &&
						    c->hosts[r].netns == c->hosts[0].netns;
				ng = cfg->groups && !one_host ? infer_groups(n, sym, res->group) : 0;
				if (ng < 0)
					rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
				if (!cfg->groups || one_host)
					for (int i = 0; i < n; i++)
						res->group[i] = -1;
				free(sym);
			}
		}
		for (int i = 0; rc == COLL_OK && i < n; i++)
			grp[i] = res->group[i];
	}
	int32_t ngw = ng;
	if (rc == COLL_OK)
		rc = rt_probe_bcast(c, &ngw, sizeof ngw);
	if (rc == COLL_OK && ngw > 0)
		rc = rt_probe_bcast(c, grp, sizeof *grp * (size_t)n);
	/* 4: each group's uplink, with concurrent flows out of it */
	/* calls per group: one more than a pair gets, to catch one that TCP
	 * shared well (a flow that stalls on a lost tail halves a call's
	 * reading); where reps is 1 (reorder at init, which has 3 s for
	 * everything at n = 16) two calls of half the bytes */
	const int ureps = reps > 1 ? reps + 1 : 2;
	const size_t ubytes = reps > 1 ? S : S / 2;
	double *times = calloc((size_t)ngw * ureps + 1, sizeof *times), *tall = NULL;   /* per group and call */
	int *msz = calloc((size_t)ngw + 1, sizeof *msz);
	if (!times || !msz) {
		free(times), free(msz);
		rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
		goto out;
	}
	t_up0 = rt_now_ns();
	for (int g = 0; g < ngw && rc == COLL_OK; g++) {
		/* members in order; outsiders dealt round-robin from the other
		 * groups so that no single other group's downlink is the limit */
		int nin = 0, nout = 0;
		for (int r = 0; r < n; r++)
			if (grp[r] == g)
				pa[nin++] = r;
		{
			/* key: (index within its own group, group) -- the first of
			 * every other group, then the second, ...; ranks in no group
			 * count as one more group */
			int *idx = calloc((size_t)ngw + 2, sizeof *idx);
			int64_t *key = malloc(sizeof *key * (size_t)n);
			if (!idx || !key) {
				free(idx), free(key);
				rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
				break;
			}
			for (int r = 0; r < n; r++) {
				if (grp[r] == g)
					continue;
				int k = grp[r] < 0 ? ngw : grp[r];
				key[nout] = ((int64_t)idx[k]++ << 40) | ((int64_t)k << 20) | r;
				nout++;
			}
			for (int i = 1; i < nout; i++)   /* insertion sort: n is small next to the probe */
				for (int j = i; j > 0 && key[j - 1] > key[j]; j--) {
					int64_t t = key[j];
					key[j] = key[j - 1];
					key[j - 1] = t;
				}
			for (int i = 0; i < nout; i++)
				pb[i] = (int)(key[i] & 0xfffff);
			free(idx), free(key);
		}
		int m = nin < nout ? nin : nout;
		msz[g] = m;
		coll_algo *xch = pair_plan("probe_uplink", n, pa, pb, m, 0);
		if (!xch) {
			rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
			break;
		}
		int mine = 0;
		for (int i = 0; i < m; i++)
			mine |= pa[i] == me || pb[i] == me;
		/* one size, one more call than a pair gets: see step 4 above */
		rc = time_exchange(c, xch, buf, ubytes, ureps, 0, times + (size_t)g * ureps);
		if (!mine)
			memset(times + (size_t)g * ureps, 0, sizeof *times * (size_t)ureps);
		coll_algo_free(xch);
	}
	if (rc == COLL_OK && ngw > 0) {
		tall = me == 0 ? malloc(sizeof *tall * (size_t)n * ngw * ureps + 1) : NULL;
		if (me == 0 && !tall)
			rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
		else
			rc = gather0(c, times, tall, sizeof *times * (size_t)ngw * ureps);
	}
	if (rc == COLL_OK && me == 0) {
		res->t_ping = t_ping, res->t_pair = t_pair, res->t_uplink = (double)(rt_now_ns() - t_up0) * 1e-9;
		res->ngroups = ngw;
		res->uplink = calloc((size_t)ngw + 1, sizeof *res->uplink);
		res->uplink_read = calloc((size_t)ngw + 1, sizeof *res->uplink_read);
		double *v = malloc(sizeof *v * (size_t)n + 1);
		if (!res->uplink || !res->uplink_read || !v) {
			free(v);
			rc = rt_err(c, COLL_ERR_NOMEM, "out of memory");
			goto times_out;
		}
		/* a rank's own rate: its fastest exchange (the median over ranks) */
		for (int i = 0; i < n; i++) {
			v[i] = 0;
			for (int j = 0; j < n; j++)
				if (i != j && res->bw[j * n + i] > v[i])
					v[i] = res->bw[j * n + i];
		}
		qsort(v, (size_t)n, sizeof *v, cmp_double);
		res->rank_bw = v[n / 2];
		for (int g = 0; g < ngw; g++) {
			/* total bytes over the slowest flow's time, in the call where
			 * that was least: the same call for every flow, since TCP
			 * seldom shares a trunk evenly in one call, and each flow's
			 * own fastest call would pair the lucky flow of one call
			 * with that of another (4 probes of a 6.25 MB/s trunk read
			 * up to 7.45) */
			double slow = INFINITY;
			for (int k = 0; k < ureps; k++) {
				double sk = 0;
				for (int r = 0; r < n; r++)
					sk = fmax(sk, tall[((size_t)r * ngw + g) * ureps + k]);
				slow = fmin(slow, sk);
			}
			double cap = msz[g] * (double)ubytes / (slow > 1e-9 ? slow : 1e-9);
			res->uplink[g] = cap < 0.8 * msz[g] * res->rank_bw ? cap : 0;
			res->uplink_read[g] = cap;
		}
		/* Uplinks within RT_PROBE_SAME_UPLINK of their median are given the
		 * median: six probes of four identical 6.25 MB/s trunks read
		 * 5.3-6.4 MB/s, and differences of that size are what the
		 * simulator's TCP sharing orders rings by (2 hosts per rack: the
		 * mixed orders measured 10-20% slower), so unequal readings of
		 * equal trunks ranked them at random. */
		int nu = 0;
		for (int g = 0; g < ngw; g++)
			if (res->uplink[g] > 0)
				v[nu++] = res->uplink[g];
		if (nu > 1) {
			double med = median(v, nu);
			for (int g = 0; g < ngw; g++)
				if (res->uplink[g] > 0 && fabs(res->uplink[g] / med - 1) <= RT_PROBE_SAME_UPLINK)
					res->uplink[g] = med;
		}
		free(v);
		/* pairs between two groups: what one flow alone would get, the
		 * least of a rank's own rate and the two uplinks (the segments
		 * charge the sharing), or the fastest rate measured between the
		 * groups if that is more (the others shared a trunk while
		 * measured, so they say less than a pair gets alone) */
		for (int g = 0; g < ngw; g++)
			for (int h = 0; h < ngw; h++) {
				if (g == h)
					continue;
				double top = res->rank_bw;
				if (res->uplink[g] > 0 && res->uplink[g] < top)
					top = res->uplink[g];
				if (res->uplink[h] > 0 && res->uplink[h] < top)
					top = res->uplink[h];
				for (int i = 0; i < n; i++)
					for (int j = 0; j < n; j++)
						if (res->group[i] == g && res->group[j] == h && res->bw[i * n + j] > top)
							top = res->bw[i * n + j];
				for (int i = 0; i < n; i++)
					for (int j = 0; j < n; j++)
						if (res->group[i] == g && res->group[j] == h)
							res->bw[i * n + j] = top;
			}
		/* symmetrise: a pair costs the larger of its two directions */
		if (!cfg->directions)
			for (int i = 0; i < n; i++)
				for (int j = i + 1; j < n; j++) {
					double al = fmax(res->alpha[i * n + j], res->alpha[j * n + i]);
					double b = fmin(res->bw[i * n + j], res->bw[j * n + i]);
					res->alpha[i * n + j] = res->alpha[j * n + i] = al;
					res->bw[i * n + j] = res->bw[j * n + i] = b;
				}
	}
times_out:
	free(times), free(tall), free(msz);
out:
	c->perm = save, c->inv = savi;
	free(pa), free(pb), free(row), free(samples), free(calls), free(buf), free(all), free(grp);
	if (rc)
		rt_probe_free(res);
	return rc;
}
