/*
 * gpu_allreduce.cu - GPU correctness test and benchmark for a library that
 * `collc build` made from a transport nccl or cuda cluster.  Run under
 * collrun (one process per rank); compiled by tests/gpu/run.sh against one
 * generated library with -DGPU_PLANS=NAME_gpu_plans.
 *
 *   gpu_allreduce [-a ALGO] [--counts 0,1,1000003,67108864]   check every (or one) algorithm
 *   gpu_allreduce --mismatch                                  rank 0 passes another count: an error, no hang
 *   gpu_allreduce --bench [-a ALGO] [-b 1K] [-e 256M] [-f 2] [-n ITERS]
 *
 * Checks: fp32/fp16/bf16 sum and int32 max on device buffers, against a
 * host reference; inputs are small integers so every sum is exact in all
 * three float types.  The bench prints nccl-tests-style rows (size, time,
 * algbw, busbw = algbw x 2(n-1)/n) and on the nccl transport times
 * ncclAllReduce on the same communicator in the same run as the baseline.
 * Exit status: 0 all right, 1 a wrong result or a failed call.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>
#ifdef COLL_GPU_NCCL
#include <nccl.h>
#endif

#include "coll_gpu_plan.h"

extern "C" const coll_gpu_plans GPU_PLANS;

static int rank, nranks;

#define CK(call)                                                                            \
	do {                                                                                \
		cudaError_t e_ = (call);                                                    \
		if (e_ != cudaSuccess) {                                                    \
			printf("rank %d: %s: %s\n", rank, #call, cudaGetErrorString(e_));  \
			exit(1);                                                            \
		}                                                                           \
	} while (0)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Input of rank r at index i: small integers, exact in fp16 and bf16 sums. */
static int val_sum(int r, size_t i) { return (int)((i * 7 + (size_t)r * 13) % 11) - 5; }
static int val_max(int r, size_t i) { return (int)((i * 2654435761u + (size_t)r * 97) % 100003) - 50000; }

static void fill(coll_dtype dt, int r, size_t count, std::vector<unsigned char> &h)
{
	h.resize(count * coll_dtype_size(dt) + 1);
	for (size_t i = 0; i < count; i++) {
		switch (dt) {
		case COLL_FLOAT32: ((float *)h.data())[i] = (float)val_sum(r, i); break;
		case COLL_FLOAT16: ((__half *)h.data())[i] = __float2half((float)val_sum(r, i)); break;
		case COLL_BFLOAT16: ((__nv_bfloat16 *)h.data())[i] = __float2bfloat16((float)val_sum(r, i)); break;
		default: ((int32_t *)h.data())[i] = val_max(r, i); break;
		}
	}
}

/* Wrong elements of out against the host reference. */
static size_t verify(coll_dtype dt, size_t count, const std::vector<unsigned char> &h)
{
	size_t bad = 0;
	for (size_t i = 0; i < count; i++) {
		double want = dt == COLL_INT32 ? -1e18 : 0, got;
		for (int r = 0; r < nranks; r++)
			want = dt == COLL_INT32 ? (val_max(r, i) > want ? val_max(r, i) : want) : want + val_sum(r, i);
		switch (dt) {
		case COLL_FLOAT32: got = ((const float *)h.data())[i]; break;
		case COLL_FLOAT16: got = __half2float(((const __half *)h.data())[i]); break;
		case COLL_BFLOAT16: got = __bfloat162float(((const __nv_bfloat16 *)h.data())[i]); break;
		default: got = ((const int32_t *)h.data())[i]; break;
		}
		if (got != want && bad++ < 3)
			printf("rank %d: %s[%zu] = %g, want %g\n", rank, coll_dtype_name(dt), i, got, want);
	}
	return bad;
}

static int check(coll_gpu *g, const char *only, const std::vector<size_t> &counts)
{
	static const struct { coll_dtype dt; coll_op op; } cases[] = {
		{ COLL_FLOAT32, COLL_SUM }, { COLL_FLOAT16, COLL_SUM }, { COLL_BFLOAT16, COLL_SUM }, { COLL_INT32, COLL_MAX },
	};
	int fails = 0;
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	for (int a = 0; a < GPU_PLANS.nalgos; a++) {
		const char *name = GPU_PLANS.algos[a]->name;
		if (only && strcmp(only, name) != 0)
			continue;
		for (size_t c : counts)
			for (auto &k : cases) {
				size_t bytes = c * coll_dtype_size(k.dt);
				std::vector<unsigned char> h;
				fill(k.dt, rank, c, h);
				void *sb, *rb;
				CK(cudaMalloc(&sb, bytes + 16));
				CK(cudaMalloc(&rb, bytes + 16));
				CK(cudaMemcpy(sb, h.data(), bytes, cudaMemcpyHostToDevice));
				CK(cudaMemset(rb, 0xff, bytes + 16));
				/* odd counts: out of place; even: in place */
				void *in = c % 2 ? sb : rb;
				if (in == rb)
					CK(cudaMemcpy(rb, sb, bytes, cudaMemcpyDeviceToDevice));
				coll_result r = coll_gpu_allreduce_algo(g, name, in, rb, c, k.dt, k.op, s);
				size_t bad = 0;
				if (r == COLL_OK) {
					CK(cudaStreamSynchronize(s));
					CK(cudaMemcpy(h.data(), rb, bytes, cudaMemcpyDeviceToHost));
					bad = verify(k.dt, c, h);
				}
				bool ok = r == COLL_OK && bad == 0;
				fails += !ok;
				printf("%s %s %s %s n=%d count=%zu%s%s\n", ok ? "ok" : "FAIL", name, coll_dtype_name(k.dt),
				       coll_op_name(k.op), nranks, c, r ? ": " : "", r ? coll_gpu_last_error(g) : "");
				CK(cudaFree(sb));
				CK(cudaFree(rb));
				if (r != COLL_OK)
					return fails;
			}
	}
	CK(cudaStreamDestroy(s));
	return fails;
}

static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	if (*end == 'K') v *= 1024;
	if (*end == 'M') v *= 1024 * 1024;
	if (*end == 'G') v *= 1024.0 * 1024 * 1024;
	return (size_t)v;
}

static int bench(coll_gpu *g, coll_comm *comm, const char *algo, size_t minb, size_t maxb, double f, int iters)
{
	cudaStream_t s;
	CK(cudaStreamCreate(&s));
	void *sb, *rb;
	CK(cudaMalloc(&sb, maxb));
	CK(cudaMalloc(&rb, maxb));
	CK(cudaMemset(sb, 0, maxb));
	if (rank == 0)
		printf("# allreduce fp32 sum on device buffers, %d ranks, transport %s; busbw = algbw x 2(n-1)/n\n"
		       "# %12s %10s %10s %10s %10s %12s %10s %8s\n", nranks, coll_gpu_transport(g), "bytes", "algo",
		       "time_us", "algbw", "busbw", "nccl_us", "nccl_busbw", "ratio");
	for (size_t b = minb; b <= maxb; b = (size_t)(b * f) > b ? (size_t)(b * f) : b + 1) {
		size_t count = b / 4;
		double t[2] = { 0, 0 };
		for (int which = 0; which < 2; which++) {
			void *nc = coll_gpu_nccl_comm(g);
			if (which == 1 && !nc)
				break;
			for (int it = -2; it < iters; it++) {
				if (it == 0) {
					CK(cudaStreamSynchronize(s));
					coll_barrier(comm);
					t[which] = now();
				}
				if (which == 0) {
					coll_result r = coll_gpu_allreduce_algo(g, algo, sb, rb, count, COLL_FLOAT32, COLL_SUM, s);
					if (r != COLL_OK) {
						printf("rank %d: allreduce failed: %s\n", rank, coll_gpu_last_error(g));
						return 1;
					}
				}
#ifdef COLL_GPU_NCCL
				else if (ncclAllReduce(sb, rb, count, ncclFloat, ncclSum, (ncclComm_t)nc, s) != ncclSuccess) {
					printf("rank %d: ncclAllReduce failed\n", rank);
					return 1;
				}
#endif
			}
			CK(cudaStreamSynchronize(s));
			t[which] = (now() - t[which]) / iters * 1e6;
		}
		double bus = 2.0 * (nranks - 1) / nranks;
		if (rank == 0) {
			const char *used = algo && *algo ? algo : coll_choose_algo(comm, COLL_ALLREDUCE, count * 4);
			if (t[1] > 0)
				printf("  %12zu %10s %10.1f %10.2f %10.2f %12.1f %10.2f %8.2f\n", count * 4, used ? used : "-",
				       t[0], count * 4 / t[0] / 1e3, count * 4 / t[0] / 1e3 * bus, t[1],
				       count * 4 / t[1] / 1e3 * bus, t[0] / t[1]);
			else
				printf("  %12zu %10s %10.1f %10.2f %10.2f %12s %10s %8s\n", count * 4, used ? used : "-", t[0],
				       count * 4 / t[0] / 1e3, count * 4 / t[0] / 1e3 * bus, "-", "-", "-");
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *algo = NULL;
	std::vector<size_t> counts = { 0, 1, 1000003, (size_t)64 << 20 };
	int mode = 0, iters = 20;   /* 0 check, 1 mismatch, 2 bench */
	size_t minb = 1024, maxb = (size_t)256 << 20;
	double f = 2;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-a") && i + 1 < argc)
			algo = argv[++i];
		else if (!strcmp(argv[i], "--counts") && i + 1 < argc) {
			counts.clear();
			for (char *p = strtok(argv[++i], ","); p; p = strtok(NULL, ","))
				counts.push_back(parse_size(p));
		} else if (!strcmp(argv[i], "--mismatch"))
			mode = 1;
		else if (!strcmp(argv[i], "--bench"))
			mode = 2;
		else if (!strcmp(argv[i], "-b") && i + 1 < argc)
			minb = parse_size(argv[++i]);
		else if (!strcmp(argv[i], "-e") && i + 1 < argc)
			maxb = parse_size(argv[++i]);
		else if (!strcmp(argv[i], "-f") && i + 1 < argc)
			f = atof(argv[++i]);
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else {
			fprintf(stderr, "gpu_allreduce: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	coll_comm *comm;
	/* no host plans: the GPU executor needs only barriers and its own exchange */
	coll_result r = coll_init_env(&comm, NULL);
	if (r != COLL_OK) {
		printf("coll_init_env: %s: %s\n", coll_strerror(r), coll_last_error(NULL));
		return 1;
	}
	rank = coll_rank(comm);
	nranks = coll_nranks(comm);
	coll_gpu *g;
	if ((r = coll_gpu_init(&g, comm, &GPU_PLANS, -1)) != COLL_OK) {
		printf("rank %d: coll_gpu_init: %s: %s\n", rank, coll_strerror(r), coll_gpu_last_error(NULL));
		coll_finalize(comm);
		return 1;
	}
	int rc = 0;
	if (mode == 0) {
		int fails = check(g, algo, counts);
		printf("rank %d: %s, device %d, transport %s: %d failed\n", rank, fails ? "FAIL" : "ok", coll_gpu_device(g),
		       coll_gpu_transport(g), fails);
		rc = fails != 0;
	} else if (mode == 1) {
		void *b;
		CK(cudaMalloc(&b, 4096 * 4));
		r = coll_gpu_allreduce(g, b, b, rank == 0 ? 4096 : 4000, COLL_FLOAT32, COLL_SUM, 0);
		printf("rank %d: mismatch -> %s: %s\n", rank, coll_strerror(r), coll_gpu_last_error(g));
		rc = r == COLL_ERR_MISMATCH ? 0 : 1;
	} else
		rc = bench(g, comm, algo, minb, maxb, f, iters);
	coll_gpu_finalize(g);
	coll_finalize(comm);
	return rc;
}
