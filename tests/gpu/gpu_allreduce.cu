/*
 * gpu_allreduce.cu - GPU correctness test for a library that `collc build`
 * made from a transport nccl or cuda cluster.  Run under collrun (one
 * process per rank); compiled by tests/gpu/run.sh and tests/gpu.test
 * against one generated library with -DGPU_PLANS=NAME_gpu_plans.
 *
 *   gpu_allreduce [-a ALGO] [--counts 0,1,1000003,67108864]   check every (or one) algorithm
 *   gpu_allreduce --mismatch                                  rank 0 passes another count: an error, no hang
 *
 * Checks: fp32/fp16/bf16 sum and int32 max on device buffers, against a
 * host reference; inputs are small integers so every sum is exact in all
 * three float types.  It walks every algorithm of the plans and both
 * buffer layouts (odd counts out of place, even in place) from one program;
 * the benchmark, with every dtype and op and ncclAllReduce as the baseline,
 * is `collbench --lib DIR/libNAME.so --device`.
 * Exit status: 0 all right, 1 a wrong result or a failed call.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

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

int main(int argc, char **argv)
{
	const char *algo = NULL;
	std::vector<size_t> counts = { 0, 1, 1000003, (size_t)64 << 20 };
	bool mismatch = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-a") && i + 1 < argc)
			algo = argv[++i];
		else if (!strcmp(argv[i], "--counts") && i + 1 < argc) {
			counts.clear();
			for (char *p = strtok(argv[++i], ","); p; p = strtok(NULL, ","))
				counts.push_back(parse_size(p));
		} else if (!strcmp(argv[i], "--mismatch"))
			mismatch = true;
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
	if (!mismatch) {
		int fails = check(g, algo, counts);
		printf("rank %d: %s, device %d, transport %s: %d failed\n", rank, fails ? "FAIL" : "ok", coll_gpu_device(g),
		       coll_gpu_transport(g), fails);
		rc = fails != 0;
	} else {
		void *b;
		CK(cudaMalloc(&b, 4096 * 4));
		r = coll_gpu_allreduce(g, b, b, rank == 0 ? 4096 : 4000, COLL_FLOAT32, COLL_SUM, 0);
		printf("rank %d: mismatch -> %s: %s\n", rank, coll_strerror(r), coll_gpu_last_error(g));
		rc = r == COLL_ERR_MISMATCH ? 0 : 1;
	}
	coll_gpu_finalize(g);
	coll_finalize(comm);
	return rc;
}
