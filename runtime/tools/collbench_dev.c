/*
 * collbench_dev.c - collbench's device side (--device, collbench_dev.h):
 * allreduce on device buffers through a library that `collc build` made
 * from a transport cuda or nccl cluster, and ncclAllReduce as the
 * baseline, with nothing of CUDA linked into collbench.
 *
 * The generated library brings the GPU stack: it links libcudart (and
 * libnccl on nccl), so once collbench has dlopened it, dlsym on its handle
 * finds cudaMalloc, ncclAllReduce and coll_gpu_* among it and its
 * dependencies.  Without a GPU the library still loads and
 * cudaGetDeviceCount says why there is no device, which dev_open reports.
 *
 * The library also carries its own copy of libcollrt, and its device
 * executor runs host collectives on the communicator handed to
 * coll_gpu_init.  That communicator must come from the same copy:
 * coll_comm is opaque, and a library generated before the last change to
 * libcollrt may lay it out differently from collbench's own copy.  So
 * every call on the communicator here (init, barrier, the result gather)
 * goes through the library's coll_* entry points as well.
 *
 * CUDA's and NCCL's types are replaced by their ABI: errors and enums are
 * int, streams and communicators void *; the few enum values used are
 * spelled out below with the header they come from.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collbench_dev.h"

/* cuda_runtime_api.h / driver_types.h */
enum { CUDA_SUCCESS = 0, CUDA_MEMCPY_HOST_TO_DEVICE = 1, CUDA_MEMCPY_DEVICE_TO_HOST = 2 };
/* nccl.h: ncclSuccess, ncclRedOp_t and ncclDataType_t */
enum { NCCL_SUCCESS = 0 };
enum { NCCL_SUM = 0, NCCL_PROD = 1, NCCL_MAX = 2, NCCL_MIN = 3 };
enum {
	NCCL_INT8 = 0, NCCL_UINT8 = 1, NCCL_INT32 = 2, NCCL_UINT32 = 3, NCCL_INT64 = 4, NCCL_UINT64 = 5,
	NCCL_FLOAT16 = 6, NCCL_FLOAT32 = 7, NCCL_FLOAT64 = 8, NCCL_BFLOAT16 = 9,
};

struct dev {
	void *lib;
	const char *path;
	const void *gpu_plans;     /* const coll_gpu_plans * */
	int want_device;           /* as passed to coll_gpu_init */
	coll_comm *comm;           /* made by the library's libcollrt */
	void *g;                   /* coll_gpu * */
	void *stream;              /* cudaStream_t */
	void *nccl;                /* ncclComm_t, or NULL (transport cuda) */
	coll_algo *gather;         /* direct allgather of the result rows */
	char err[512];

	/* the CUDA runtime */
	int (*cudaGetDeviceCount)(int *n);
	const char *(*cudaGetErrorString)(int e);
	int (*cudaSetDevice)(int dev);
	int (*cudaMalloc)(void **p, size_t bytes);
	int (*cudaFree)(void *p);
	int (*cudaMemcpy)(void *dst, const void *src, size_t bytes, int kind);
	int (*cudaMemset)(void *dst, int byte, size_t bytes);
	int (*cudaStreamCreate)(void **s);
	int (*cudaStreamDestroy)(void *s);
	int (*cudaStreamSynchronize)(void *s);
	/* NCCL: only in libraries of nccl clusters */
	int (*ncclAllReduce)(const void *sb, void *rb, size_t count, int dt, int op, void *comm, void *stream);
	const char *(*ncclGetErrorString)(int e);
	/* coll_gpu.h */
	coll_result (*coll_gpu_init)(void **g, coll_comm *comm, const void *plans, int device);
	void (*coll_gpu_finalize)(void *g);
	coll_result (*coll_gpu_allreduce_algo)(void *g, const char *algo, const void *sb, void *rb, size_t count,
	                                       coll_dtype dt, coll_op op, void *stream);
	const char *(*coll_gpu_transport)(const void *g);
	int (*coll_gpu_device)(const void *g);
	const char *(*coll_gpu_last_error)(const void *g);
	void *(*coll_gpu_nccl_comm)(const void *g);
	/* the library's libcollrt (coll.h, coll_plan.h) */
	coll_result (*coll_init_env)(coll_comm **comm, const coll_plan_set *plans);
	void (*coll_finalize)(coll_comm *comm);
	int (*coll_rank)(const coll_comm *comm);
	int (*coll_nranks)(const coll_comm *comm);
	void (*coll_set_timeout)(coll_comm *comm, double seconds);
	const char *(*coll_last_error)(const coll_comm *comm);
	const char *(*coll_choose_algo)(const coll_comm *comm, coll_kind k, uint64_t bytes);
	coll_result (*coll_barrier)(coll_comm *comm);
	coll_algo *(*coll_algo_build)(const char *name, coll_kind kind, int nranks, int chunks, int root,
	                              const coll_xfer *xfers, int nxfers);
	void (*coll_algo_free)(coll_algo *a);
	coll_result (*coll_run_algo)(coll_comm *comm, const coll_algo *algo, const void *sb, void *rb, size_t count,
	                             coll_dtype dt, coll_op op);
};

static coll_result fail(dev *d, coll_result code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static coll_result fail(dev *d, coll_result code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->err, sizeof d->err, fmt, ap);
	va_end(ap);
	return code;
}

/* A CUDA call's error as COLL_ERR_SYSTEM with the runtime's words. */
static coll_result cuda_fail(dev *d, const char *call, int e)
{
	return fail(d, COLL_ERR_SYSTEM, "%s: %s (CUDA error %d)", call, d->cudaGetErrorString(e), e);
}

/* *slot (a function pointer) := the library's (or its dependencies')
 * symbol `name`; -1 if there is none. */
static int sym(dev *d, const char *name, void *slot)
{
	void *p = dlsym(d->lib, name);
	memcpy(slot, &p, sizeof p);
	return p ? 0 : -1;
}

int dev_open(dev **out, void *lib, const char *path, const char *gpu_sym, int device, char *why, size_t whylen)
{
	*out = NULL;
	dev *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(why, whylen, "out of memory");
		return DEV_NO_RUNTIME;
	}
	d->lib = lib;
	d->path = path;
	d->want_device = device;
	d->gpu_plans = dlsym(lib, gpu_sym);
	if (!d->gpu_plans) {
		snprintf(why, whylen, "%s has no GPU plans (no symbol %s): it was built from a cluster without "
		         "`transport cuda` or `transport nccl`, so it runs on host buffers only", path, gpu_sym);
		free(d);
		return DEV_NO_PLANS;
	}
	/* The GPU plans come with the executor, and the executor with libcudart. */
	static const char *const gpu_api[] = {
	        "coll_gpu_init", "coll_gpu_finalize", "coll_gpu_allreduce_algo", "coll_gpu_transport",
	        "coll_gpu_device", "coll_gpu_last_error", "coll_gpu_nccl_comm", "coll_init_env", "coll_finalize",
	        "coll_rank", "coll_nranks", "coll_set_timeout", "coll_last_error", "coll_choose_algo",
	        "coll_barrier", "coll_algo_build", "coll_algo_free", "coll_run_algo",
	};
	void *gpu_slots[] = {
	        &d->coll_gpu_init, &d->coll_gpu_finalize, &d->coll_gpu_allreduce_algo, &d->coll_gpu_transport,
	        &d->coll_gpu_device, &d->coll_gpu_last_error, &d->coll_gpu_nccl_comm, &d->coll_init_env,
	        &d->coll_finalize, &d->coll_rank, &d->coll_nranks, &d->coll_set_timeout, &d->coll_last_error,
	        &d->coll_choose_algo, &d->coll_barrier, &d->coll_algo_build, &d->coll_algo_free, &d->coll_run_algo,
	};
	static const char *const cuda_api[] = {
	        "cudaGetDeviceCount", "cudaGetErrorString", "cudaSetDevice", "cudaMalloc", "cudaFree",
	        "cudaMemcpy", "cudaMemset", "cudaStreamCreate", "cudaStreamDestroy", "cudaStreamSynchronize",
	};
	void *cuda_slots[] = {
	        &d->cudaGetDeviceCount, &d->cudaGetErrorString, &d->cudaSetDevice, &d->cudaMalloc, &d->cudaFree,
	        &d->cudaMemcpy, &d->cudaMemset, &d->cudaStreamCreate, &d->cudaStreamDestroy,
	        &d->cudaStreamSynchronize,
	};
	for (size_t i = 0; i < sizeof gpu_api / sizeof gpu_api[0]; i++)
		if (sym(d, gpu_api[i], gpu_slots[i])) {
			snprintf(why, whylen, "%s has GPU plans but not the device API (no %s): rebuild it with collc build",
			         path, gpu_api[i]);
			free(d);
			return DEV_NO_RUNTIME;
		}
	for (size_t i = 0; i < sizeof cuda_api / sizeof cuda_api[0]; i++)
		if (sym(d, cuda_api[i], cuda_slots[i])) {
			snprintf(why, whylen, "no CUDA runtime: %s and its dependencies have no %s", path, cuda_api[i]);
			free(d);
			return DEV_NO_RUNTIME;
		}
	/* absent on transport cuda, where no baseline is timed */
	if (sym(d, "ncclAllReduce", &d->ncclAllReduce) || sym(d, "ncclGetErrorString", &d->ncclGetErrorString))
		d->ncclAllReduce = NULL;

	int n = 0, e = d->cudaGetDeviceCount(&n);
	if (e != CUDA_SUCCESS || n == 0) {
		if (e != CUDA_SUCCESS)
			snprintf(why, whylen, "no CUDA device: cudaGetDeviceCount: %s (CUDA error %d)",
			         d->cudaGetErrorString(e), e);
		else
			snprintf(why, whylen, "no CUDA device: cudaGetDeviceCount found none");
		free(d);
		return DEV_NO_DEVICE;
	}
	if (device >= n) {
		snprintf(why, whylen, "no CUDA device %d: this machine has %d (0..%d)", device, n, n - 1);
		free(d);
		return DEV_NO_DEVICE;
	}
	*out = d;
	return 0;
}

coll_result dev_init(dev *d, const coll_plan_set *plans, double timeout_s)
{
	coll_result r = d->coll_init_env(&d->comm, plans);
	if (r != COLL_OK)
		return fail(d, r, "coll_init: %s: %s", coll_strerror(r), d->coll_last_error(NULL));
	if (timeout_s != 0)
		d->coll_set_timeout(d->comm, timeout_s);
	if ((r = d->coll_gpu_init(&d->g, d->comm, d->gpu_plans, d->want_device)) != COLL_OK)
		return fail(d, r, "coll_gpu_init: %s: %s", coll_strerror(r), d->coll_gpu_last_error(NULL));
	int e;
	if ((e = d->cudaSetDevice(d->coll_gpu_device(d->g))) != CUDA_SUCCESS)
		return cuda_fail(d, "cudaSetDevice", e);
	if ((e = d->cudaStreamCreate(&d->stream)) != CUDA_SUCCESS)
		return cuda_fail(d, "cudaStreamCreate", e);
	d->nccl = d->ncclAllReduce ? d->coll_gpu_nccl_comm(d->g) : NULL;

	int n = d->coll_nranks(d->comm), nx;
	coll_xfer *xs = dev_gather_xfers(n, &nx);
	d->gather = xs ? d->coll_algo_build("collbench_gather", COLL_ALLGATHER, n, n, 0, xs, nx) : NULL;
	free(xs);
	return d->gather ? COLL_OK : fail(d, COLL_ERR_NOMEM, "out of memory");
}

int dev_rank(const dev *d) { return d->coll_rank(d->comm); }
int dev_nranks(const dev *d) { return d->coll_nranks(d->comm); }
const char *dev_transport(const dev *d) { return d->coll_gpu_transport(d->g); }
int dev_device(const dev *d) { return d->coll_gpu_device(d->g); }
int dev_has_nccl(const dev *d) { return d->nccl != NULL; }
const char *dev_error(const dev *d) { return d->err; }

const char *dev_choose_algo(const dev *d, uint64_t bytes)
{
	return d->coll_choose_algo(d->comm, COLL_ALLREDUCE, bytes);
}

coll_result dev_alloc(dev *d, void **p, size_t bytes)
{
	*p = NULL;
	int e = bytes ? d->cudaMalloc(p, bytes) : CUDA_SUCCESS;
	if (e != CUDA_SUCCESS)
		return fail(d, COLL_ERR_SYSTEM, "cudaMalloc of %zu bytes: %s (CUDA error %d)", bytes,
		            d->cudaGetErrorString(e), e);
	return COLL_OK;
}

void dev_free(dev *d, void *p)
{
	if (p)
		d->cudaFree(p);
}

coll_result dev_upload(dev *d, void *dst, const void *src, size_t bytes)
{
	int e = bytes ? d->cudaMemcpy(dst, src, bytes, CUDA_MEMCPY_HOST_TO_DEVICE) : CUDA_SUCCESS;
	return e == CUDA_SUCCESS ? COLL_OK : cuda_fail(d, "cudaMemcpy to the device", e);
}

coll_result dev_download(dev *d, void *dst, const void *src, size_t bytes)
{
	int e = bytes ? d->cudaMemcpy(dst, src, bytes, CUDA_MEMCPY_DEVICE_TO_HOST) : CUDA_SUCCESS;
	return e == CUDA_SUCCESS ? COLL_OK : cuda_fail(d, "cudaMemcpy from the device", e);
}

coll_result dev_memset(dev *d, void *dst, int byte, size_t bytes)
{
	int e = bytes ? d->cudaMemset(dst, byte, bytes) : CUDA_SUCCESS;
	return e == CUDA_SUCCESS ? COLL_OK : cuda_fail(d, "cudaMemset", e);
}

coll_result dev_allreduce(dev *d, const char *algo, const void *sb, void *rb, size_t count, coll_dtype dt, coll_op op)
{
	coll_result r = d->coll_gpu_allreduce_algo(d->g, algo, sb, rb, count, dt, op, d->stream);
	return r == COLL_OK ? COLL_OK : fail(d, r, "%s", d->coll_gpu_last_error(d->g));
}

coll_result dev_nccl_allreduce(dev *d, const void *sb, void *rb, size_t count, coll_dtype dt, coll_op op)
{
	static const int ndt[COLL_NDTYPES] = {
	        [COLL_INT8] = NCCL_INT8,       [COLL_UINT8] = NCCL_UINT8,       [COLL_INT32] = NCCL_INT32,
	        [COLL_UINT32] = NCCL_UINT32,   [COLL_INT64] = NCCL_INT64,       [COLL_UINT64] = NCCL_UINT64,
	        [COLL_FLOAT16] = NCCL_FLOAT16, [COLL_BFLOAT16] = NCCL_BFLOAT16, [COLL_FLOAT32] = NCCL_FLOAT32,
	        [COLL_FLOAT64] = NCCL_FLOAT64,
	};
	static const int nop[COLL_NOPS] = {
	        [COLL_SUM] = NCCL_SUM, [COLL_PROD] = NCCL_PROD, [COLL_MIN] = NCCL_MIN, [COLL_MAX] = NCCL_MAX,
	};
	if (!d->nccl)
		return fail(d, COLL_ERR_UNSUPPORTED, "no NCCL communicator (transport %s)", dev_transport(d));
	if ((unsigned)dt >= COLL_NDTYPES || (unsigned)op >= COLL_NOPS)
		return fail(d, COLL_ERR_INVALID, "bad dtype %d or op %d", (int)dt, (int)op);
	int e = d->ncclAllReduce(sb, rb, count, ndt[dt], nop[op], d->nccl, d->stream);
	if (e != NCCL_SUCCESS)
		return fail(d, COLL_ERR_TRANSPORT, "ncclAllReduce: %s (NCCL error %d)", d->ncclGetErrorString(e), e);
	return COLL_OK;
}

coll_result dev_sync(dev *d)
{
	int e = d->cudaStreamSynchronize(d->stream);
	return e == CUDA_SUCCESS ? COLL_OK : cuda_fail(d, "cudaStreamSynchronize", e);
}

coll_result dev_barrier(dev *d)
{
	coll_result r = d->coll_barrier(d->comm);
	return r == COLL_OK ? COLL_OK : fail(d, r, "barrier: %s", d->coll_last_error(d->comm));
}

coll_xfer *dev_gather_xfers(int n, int *nx)
{
	coll_xfer *xs = malloc(sizeof *xs * (size_t)(n * n + 1));
	*nx = 0;
	for (int s = 0; xs && s < n; s++)
		for (int t = 0; t < n; t++)
			if (s != t)
				xs[(*nx)++] = (coll_xfer){0, s, t, s, 0};
	return xs;
}

coll_result dev_gather(dev *d, const uint64_t *mine, uint64_t *all, int k)
{
	coll_result r = d->coll_run_algo(d->comm, d->gather, mine, all, (size_t)k * (size_t)dev_nranks(d),
	                                 COLL_UINT64, COLL_SUM);
	return r == COLL_OK ? COLL_OK : fail(d, r, "gathering results: %s", d->coll_last_error(d->comm));
}

void dev_close(dev *d)
{
	if (!d)
		return;
	if (d->stream)
		d->cudaStreamDestroy(d->stream);
	if (d->g)
		d->coll_gpu_finalize(d->g);
	if (d->gather)
		d->coll_algo_free(d->gather);
	if (d->comm)
		d->coll_finalize(d->comm);
	free(d);
}
