/*
 * fake_gpu.c - a stand-in for a GPU library of `collc build`, on host
 * memory, so that collbench --device (runtime/tools/collbench_dev.c) can
 * be tested end to end on machines without a GPU (tests/gpu.test).
 *
 * Linked against a host library that collc built (NAME_plans and its
 * libcollrt), it adds what collbench resolves with dlsym in a real
 * transport cuda or nccl library: NAME_gpu_plans (-DGPU_PLANS=...), the
 * coll_gpu.h API, the CUDA runtime calls and ncclAllReduce/
 * ncclGetErrorString.  "Device" memory is malloc'd; coll_gpu_allreduce_algo
 * and ncclAllReduce run the host allreduce (coll_allreduce_algo) on the
 * communicator collbench handed to coll_gpu_init.  ncclAllReduce maps
 * NCCL's dtype and op numbers (nccl.h) back on its own, so a wrong mapping
 * in collbench gives wrong results that -c reports.
 *
 * The environment picks the case:
 *   FAKE_GPU_COUNT=N        cudaGetDeviceCount's answer (default 1; 0: none)
 *   FAKE_GPU_TRANSPORT=T    "nccl" (default: there is an NCCL baseline) or "cuda"
 *   FAKE_GPU_CORRUPT=1      coll_gpu_allreduce_algo flips element 0's bits
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll.h"
#include "coll_plan.h"

#define API __attribute__((visibility("default")))

#ifndef GPU_PLANS
#error "compile with -DGPU_PLANS=NAME_gpu_plans"
#endif

API const char GPU_PLANS[] = "fake GPU plans";

typedef struct {
	coll_comm *comm;
	int device;
} fake_gpu;

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : dflt;
}

static int is_nccl(void)
{
	const char *t = getenv("FAKE_GPU_TRANSPORT");
	return !t || !*t || strcmp(t, "nccl") == 0;
}

/* --- the CUDA runtime: errors are ints, 100 is cudaErrorNoDevice ------------ */

API int cudaGetDeviceCount(int *n)
{
	*n = env_int("FAKE_GPU_COUNT", 1);
	return *n > 0 ? 0 : 100;
}
API const char *cudaGetErrorString(int e) { return e == 100 ? "no CUDA-capable device is detected" : "fake CUDA error"; }
API int cudaSetDevice(int d) { return d >= 0 && d < env_int("FAKE_GPU_COUNT", 1) ? 0 : 101; }
API int cudaMalloc(void **p, size_t n) { return (*p = malloc(n)) ? 0 : 2; }
API int cudaFree(void *p) { free(p); return 0; }
API int cudaMemcpy(void *d, const void *s, size_t n, int kind) { (void)kind; memmove(d, s, n); return 0; }
API int cudaMemset(void *d, int b, size_t n) { memset(d, b, n); return 0; }
API int cudaStreamCreate(void **s) { *s = malloc(1); return *s ? 0 : 2; }
API int cudaStreamDestroy(void *s) { free(s); return 0; }
API int cudaStreamSynchronize(void *s) { (void)s; return 0; }

/* --- coll_gpu.h ---------------------------------------------------------------- */

API coll_result coll_gpu_init(void **g, coll_comm *comm, const void *plans, int device)
{
	if (plans != (const void *)GPU_PLANS)
		return COLL_ERR_INVALID;
	fake_gpu *f = calloc(1, sizeof *f);
	if (!f)
		return COLL_ERR_NOMEM;
	f->comm = comm;
	f->device = device < 0 ? 0 : device;
	*g = f;
	return COLL_OK;
}
API void coll_gpu_finalize(void *g) { free(g); }
API coll_result coll_gpu_allreduce_algo(void *g, const char *algo, const void *sb, void *rb, size_t count,
                                        coll_dtype dt, coll_op op, void *stream)
{
	(void)stream;
	fake_gpu *f = g;
	coll_result r = coll_allreduce_algo(f->comm, algo, sb, rb, count, dt, op);
	if (r == COLL_OK && count && env_int("FAKE_GPU_CORRUPT", 0))
		((unsigned char *)rb)[0] ^= 0x5a;
	return r;
}
API const char *coll_gpu_transport(const void *g) { (void)g; return is_nccl() ? "nccl" : "cuda"; }
API int coll_gpu_device(const void *g) { return ((const fake_gpu *)g)->device; }
API const char *coll_gpu_last_error(const void *g) { (void)g; return "fake coll_gpu error"; }
API void *coll_gpu_nccl_comm(const void *g) { return is_nccl() ? ((const fake_gpu *)g)->comm : NULL; }

/* --- NCCL: ncclDataType_t and ncclRedOp_t as nccl.h numbers them ------------- */

API int ncclAllReduce(const void *sb, void *rb, size_t count, int ndt, int nop, void *comm, void *stream)
{
	static const coll_dtype dts[] = {COLL_INT8,    COLL_UINT8,   COLL_INT32,   COLL_UINT32,  COLL_INT64,
	                                 COLL_UINT64,  COLL_FLOAT16, COLL_FLOAT32, COLL_FLOAT64, COLL_BFLOAT16};
	static const coll_op ops[] = {COLL_SUM, COLL_PROD, COLL_MAX, COLL_MIN};
	(void)stream;
	if (ndt < 0 || ndt > 9 || nop < 0 || nop > 3)
		return 4;   /* ncclInvalidArgument */
	return coll_allreduce(comm, sb, rb, count, dts[ndt], ops[nop]) == COLL_OK ? 0 : 3;
}
API const char *ncclGetErrorString(int e) { return e == 4 ? "invalid argument" : "fake NCCL error"; }
