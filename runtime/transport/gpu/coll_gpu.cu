/*
 * coll_gpu.cu - the device executor behind coll_gpu.h: runs the unrolled
 * schedules of a generated NAME_gpu.cu (coll_gpu_plan.h) on device buffers.
 *
 * It is compiled by nvcc when `collc build` builds a transport nccl or cuda
 * cluster (with -DCOLL_GPU_NCCL=1 for nccl), so libcollrt itself never
 * needs CUDA.  The host communicator (coll.h) is the control plane: a ring
 * allgather built here with coll_algo_build and run with coll_run_algo
 * carries the init exchange (device, host, NCCL unique id), the per-call
 * header that every rank checks (count, dtype, op, algorithm: a mismatch is
 * COLL_ERR_MISMATCH on every rank, never a hang) and the CUDA IPC handles.
 *
 * nccl: each group of the schedule is one ncclGroupStart/End of
 * ncclSend/ncclRecv on the executor's stream; received chunks are applied
 * after the group by the reduction kernels below (or copies) on the same
 * stream, so stream order sequences them against the transfers; events
 * join the caller's stream at entry and exit.  Nothing blocks the host.
 *
 * cuda: every rank owns a work buffer exported with cudaIpcGetMemHandle and
 * mapped by the others.  A receive pulls the peer's chunk with
 * cudaMemcpyAsync.  Host barriers at group begin (everyone finished
 * applying the previous group) and group end (everyone finished pulling)
 * keep the round semantics: every transfer reads the state from before its
 * round.  They run over the communicator's transport (host_barrier), and
 * several ranks sharing one GPU need MPS to be fast (runtime/README.md, "GPUs").
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef COLL_GPU_NCCL
#include <nccl.h>
#endif

#include "coll_gpu_plan.h"

#define INFO_MAGIC 0x43475055u   /* "CGPU" */
#define CALL_MAGIC 0x43474331u   /* "CGC1" */

struct coll_gpu {
	coll_comm *comm;
	const coll_gpu_plans *plans;
	int rank, n, device, nsm;
	bool nccl;
	bool check;                 /* exchange and compare a header per call */
	size_t align;
	cudaStream_t s;
	cudaEvent_t ev_in, ev_out;
	coll_algo *ag;              /* host ring allgather of bytes (n > 1) */
	coll_result broken;
	uint32_t seq;
	char err[480];
	void *staging;
	size_t staging_len;
	void *work;                 /* cuda: this rank's exported buffer */
	size_t work_len;
	char **peer_work;           /* cuda: every rank's work buffer, mapped (n entries) */
	uint8_t *bar;               /* cuda: host_barrier's n bytes */
#ifdef COLL_GPU_NCCL
	ncclComm_t nc;
#endif
};

struct cg_run {
	coll_gpu *g;
	char *buf;                  /* the working buffer: recvbuf (nccl) or work (cuda) */
	size_t esize, count, per;   /* per: elements per padded chunk */
	size_t slot_bytes;
	coll_dtype dt;
	coll_op op;
	int group;
};

static coll_result gerr(coll_gpu *g, coll_result code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static coll_result gerr(coll_gpu *g, coll_result code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g->err, sizeof g->err, fmt, ap);
	va_end(ap);
	return code;
}

/* The details of this thread's last failed coll_gpu_init. */
static __thread char init_err[480];

#define CU(g, call)                                                                                   \
	do {                                                                                          \
		cudaError_t e_ = (call);                                                              \
		if (e_ != cudaSuccess)                                                                \
			return gerr((g), COLL_ERR_SYSTEM, "%s: %s", #call, cudaGetErrorString(e_));   \
	} while (0)
#ifdef COLL_GPU_NCCL
#define NC(g, call)                                                                                   \
	do {                                                                                          \
		ncclResult_t e_ = (call);                                                             \
		if (e_ != ncclSuccess)                                                                \
			return gerr((g), COLL_ERR_TRANSPORT, "%s: %s", #call, ncclGetErrorString(e_)); \
	} while (0)
#endif

/* --- reduction kernels ----------------------------------------------------- */

/* fp16 and bf16 are reduced in float and rounded to nearest even, as the
 * host runtime does; the other types in their own arithmetic. */
template <typename T> struct num {
	typedef T acc;
	static __device__ acc ld(T v) { return v; }
	static __device__ T st(acc a) { return (T)a; }
};
template <> struct num<__half> {
	typedef float acc;
	static __device__ acc ld(__half v) { return __half2float(v); }
	static __device__ __half st(acc a) { return __float2half_rn(a); }
};
template <> struct num<__nv_bfloat16> {
	typedef float acc;
	static __device__ acc ld(__nv_bfloat16 v) { return __bfloat162float(v); }
	static __device__ __nv_bfloat16 st(acc a) { return __float2bfloat16_rn(a); }
};

template <int OP, typename A> __device__ __forceinline__ A combine(A a, A b)
{
	if (OP == COLL_SUM)
		return a + b;
	if (OP == COLL_PROD)
		return a * b;
	if (OP == COLL_MIN)
		return b < a ? b : a;
	return a < b ? b : a;
}

template <typename T, int OP> __device__ __forceinline__ T apply1(T a, T b)
{
	return num<T>::st(combine<OP>(num<T>::ld(a), num<T>::ld(b)));
}

/* dst[i] = dst[i] OP src[i], i < n.  16-byte vector loads and stores when
 * both pointers allow (padded chunks and staging slots always do; only an
 * unaligned user buffer falls back to one element per thread). */
template <typename T, int OP> __global__ void reduce_kernel(T *dst, const T *src, size_t n)
{
	constexpr int V = 16 / sizeof(T);
	size_t tid = blockIdx.x * (size_t)blockDim.x + threadIdx.x, stride = (size_t)gridDim.x * blockDim.x;
	size_t done = 0;
	if ((((uintptr_t)dst | (uintptr_t)src) & 15) == 0) {
		size_t nv = n / V;
		uint4 *d4 = reinterpret_cast<uint4 *>(dst);
		const uint4 *s4 = reinterpret_cast<const uint4 *>(src);
		for (size_t i = tid; i < nv; i += stride) {
			uint4 a = d4[i], b = s4[i];
			T *ta = reinterpret_cast<T *>(&a);
			const T *tb = reinterpret_cast<const T *>(&b);
#pragma unroll
			for (int k = 0; k < V; k++)
				ta[k] = apply1<T, OP>(ta[k], tb[k]);
			d4[i] = a;
		}
		done = nv * V;
	}
	for (size_t i = done + tid; i < n; i += stride)
		dst[i] = apply1<T, OP>(dst[i], src[i]);
}

template <typename T, int OP> static cudaError_t launch1(void *dst, const void *src, size_t n, int nsm, cudaStream_t s)
{
	size_t per_block = 256 * (16 / sizeof(T));
	size_t blocks = (n + per_block - 1) / per_block;
	size_t cap = (size_t)(nsm > 0 ? nsm : 1) * 8;
	if (blocks > cap)
		blocks = cap;
	if (blocks == 0)
		blocks = 1;
	reduce_kernel<T, OP><<<(unsigned)blocks, 256, 0, s>>>((T *)dst, (const T *)src, n);
	return cudaGetLastError();
}

template <typename T> static cudaError_t launch_op(coll_op op, void *d, const void *s, size_t n, int nsm, cudaStream_t st)
{
	switch (op) {
	case COLL_SUM: return launch1<T, COLL_SUM>(d, s, n, nsm, st);
	case COLL_PROD: return launch1<T, COLL_PROD>(d, s, n, nsm, st);
	case COLL_MIN: return launch1<T, COLL_MIN>(d, s, n, nsm, st);
	default: return launch1<T, COLL_MAX>(d, s, n, nsm, st);
	}
}

static cudaError_t launch_reduce(coll_dtype dt, coll_op op, void *d, const void *s, size_t n, int nsm, cudaStream_t st)
{
	switch (dt) {
	case COLL_INT8: return launch_op<int8_t>(op, d, s, n, nsm, st);
	case COLL_UINT8: return launch_op<uint8_t>(op, d, s, n, nsm, st);
	case COLL_INT32: return launch_op<int32_t>(op, d, s, n, nsm, st);
	case COLL_UINT32: return launch_op<uint32_t>(op, d, s, n, nsm, st);
	case COLL_INT64: return launch_op<int64_t>(op, d, s, n, nsm, st);
	case COLL_UINT64: return launch_op<uint64_t>(op, d, s, n, nsm, st);
	case COLL_FLOAT16: return launch_op<__half>(op, d, s, n, nsm, st);
	case COLL_BFLOAT16: return launch_op<__nv_bfloat16>(op, d, s, n, nsm, st);
	case COLL_FLOAT32: return launch_op<float>(op, d, s, n, nsm, st);
	default: return launch_op<double>(op, d, s, n, nsm, st);
	}
}

/* --- host exchange ------------------------------------------------------- */

/* Every rank's `len` bytes of `mine` into all[rank*len] over the host
 * communicator.  Blocking; errors are the host communicator's. */
static coll_result host_allgather(coll_gpu *g, const void *mine, void *all, size_t len)
{
	if (g->n == 1) {
		memcpy(all, mine, len);
		return COLL_OK;
	}
	coll_result r = coll_run_algo(g->comm, g->ag, mine, all, len * (size_t)g->n, COLL_UINT8, COLL_SUM);
	if (r != COLL_OK)
		return gerr(g, r, "host exchange over the communicator failed: %s", coll_last_error(g->comm));
	return COLL_OK;
}

/* Every rank reached this group boundary.  One byte each through the same
 * ring allgather, so over the communicator's transport (shm on one node),
 * not coll_barrier: that runs over the bootstrap's TCP star through rank 0,
 * and two of those per group made a 1 KiB allreduce on one GPU take
 * ~600 us. */
static coll_result host_barrier(coll_gpu *g, int group)
{
	uint8_t one = 1;
	coll_result r = host_allgather(g, &one, g->bar, 1);
	if (r == COLL_OK)
		return r;
	char why[sizeof g->err];
	memcpy(why, g->err, sizeof why);
	return gerr(g, r, "group %d: barrier: %s", group, why);
}

static coll_algo *ring_allgather(int n)
{
	int nx = n * (n - 1);
	coll_xfer *x = (coll_xfer *)calloc(nx > 0 ? nx : 1, sizeof *x);
	if (!x)
		return NULL;
	int k = 0;
	for (int s = 0; s < n - 1; s++)
		for (int r = 0; r < n; r++)
			x[k++] = coll_xfer{ s, r, (r + 1) % n, ((r - s) % n + n) % n, 0 };
	coll_algo *a = coll_algo_build("coll_gpu_exchange", COLL_ALLGATHER, n, n, 0, x, nx);
	free(x);
	return a;
}

/* --- init ----------------------------------------------------------------- */

typedef struct {
	uint32_t magic;
	int32_t status;          /* coll_result of this rank's local setup */
	int32_t nccl, device;
	uint64_t align;
	char host[64];
	char pci[32];
	char why[160];
	uint8_t id[128];         /* rank 0: the NCCL unique id */
} init_info;

static size_t env_align(size_t dflt)
{
	const char *e = getenv("COLL_GPU_ALIGN");
	if (!e || !*e)
		return dflt;
	char *end;
	unsigned long long v = strtoull(e, &end, 0);
	if (*end == 'K' || *end == 'k')
		v <<= 10;
	return v >= 16 && v <= (1u << 24) && !(v & (v - 1)) ? (size_t)v : 0;
}

/* The part of init that involves only this rank; its result travels in
 * the exchange so that every rank fails together. */
static coll_result local_setup(coll_gpu *g, int device, init_info *me)
{
	const char *tp = getenv("COLL_GPU_TRANSPORT");
	tp = tp && *tp ? tp : g->plans->transport;
	if (strcmp(tp, "nccl") != 0 && strcmp(tp, "cuda") != 0)
		return gerr(g, COLL_ERR_TRANSPORT, "unknown GPU transport '%s' (expected nccl or cuda)", tp);
	g->nccl = strcmp(tp, "nccl") == 0;
#ifndef COLL_GPU_NCCL
	if (g->nccl)
		return gerr(g, COLL_ERR_UNSUPPORTED, "this library was built for transport cuda, without NCCL");
#endif
	g->align = env_align((size_t)g->plans->align);
	if (g->align == 0)
		return gerr(g, COLL_ERR_INVALID, "COLL_GPU_ALIGN must be a power of two from 16 to 16M");
	int ndev = 0;
	cudaError_t e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev == 0)
		return gerr(g, COLL_ERR_UNSUPPORTED, "no CUDA device: %s",
			    e != cudaSuccess ? cudaGetErrorString(e) : "the device count is 0");
	g->device = device >= 0 ? device : g->rank % ndev;
	if (g->device >= ndev)
		return gerr(g, COLL_ERR_INVALID, "device %d out of range (%d devices)", g->device, ndev);
	CU(g, cudaSetDevice(g->device));
	CU(g, cudaDeviceGetAttribute(&g->nsm, cudaDevAttrMultiProcessorCount, g->device));
	CU(g, cudaDeviceGetPCIBusId(me->pci, sizeof me->pci, g->device));
	CU(g, cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking));
	CU(g, cudaEventCreateWithFlags(&g->ev_in, cudaEventDisableTiming));
	CU(g, cudaEventCreateWithFlags(&g->ev_out, cudaEventDisableTiming));
#ifdef COLL_GPU_NCCL
	if (g->nccl && g->rank == 0) {
		ncclUniqueId id;
		NC(g, ncclGetUniqueId(&id));
		static_assert(sizeof id <= sizeof me->id, "NCCL unique id too large");
		memcpy(me->id, &id, sizeof id);
	}
#endif
	return COLL_OK;
}

extern "C" coll_result coll_gpu_init(coll_gpu **out, coll_comm *comm, const coll_gpu_plans *plans, int device)
{
	if (!out || !comm || !plans)
		return COLL_ERR_INVALID;
	*out = NULL;
	if (plans->abi != COLL_GPU_PLAN_ABI || plans->nranks != coll_nranks(comm))
		return COLL_ERR_PLAN;
	coll_gpu *g = (coll_gpu *)calloc(1, sizeof *g);
	if (!g)
		return COLL_ERR_NOMEM;
	g->comm = comm;
	g->plans = plans;
	g->rank = coll_rank(comm);
	g->n = coll_nranks(comm);
	const char *chk = getenv("COLL_GPU_CHECK");
	g->check = !(chk && strcmp(chk, "0") == 0);
	if (g->n > 1 && !(g->ag = ring_allgather(g->n))) {
		free(g);
		return COLL_ERR_NOMEM;
	}
	init_info *all = (init_info *)calloc((size_t)g->n, sizeof *all), me;
	memset(&me, 0, sizeof me);
	if (!all) {
		coll_gpu_finalize(g);
		return COLL_ERR_NOMEM;
	}
	me.magic = INFO_MAGIC;
	me.status = local_setup(g, device, &me);
	memcpy(me.why, g->err, sizeof me.why - 1);   /* me is zeroed: stays terminated */
	me.nccl = g->nccl;
	me.device = g->device;
	me.align = g->align;
	gethostname(me.host, sizeof me.host - 1);
	coll_result r = host_allgather(g, &me, all, sizeof me);
	for (int i = 0; i < g->n && r == COLL_OK; i++) {
		const init_info *o = &all[i];
		if (o->magic != INFO_MAGIC)
			r = gerr(g, COLL_ERR_PROTOCOL, "rank %d sent a malformed GPU init record", i);
		else if (o->status != COLL_OK)
			r = i == g->rank ? (coll_result)o->status
					 : gerr(g, (coll_result)o->status, "rank %d: GPU setup failed: %s", i, o->why);
		else if (o->nccl != me.nccl || o->align != me.align)
			r = gerr(g, COLL_ERR_MISMATCH, "rank %d uses transport %s, align %llu; rank %d %s, %llu", i,
				 o->nccl ? "nccl" : "cuda", (unsigned long long)o->align, g->rank, me.nccl ? "nccl" : "cuda",
				 (unsigned long long)me.align);
		else if (!me.nccl && strcmp(o->host, me.host) != 0)
			r = gerr(g, COLL_ERR_TRANSPORT, "transport cuda needs every rank on one node, but rank %d is on %s "
				 "and rank %d on %s (use transport nccl)", i, o->host, g->rank, me.host);
		else if (me.nccl && i != g->rank && strcmp(o->host, me.host) == 0 && strcmp(o->pci, me.pci) == 0)
			r = gerr(g, COLL_ERR_TRANSPORT, "transport nccl needs a GPU per rank, but ranks %d and %d share "
				 "%s; run fewer ranks or COLL_GPU_TRANSPORT=cuda", i, g->rank, me.pci);
	}
#ifdef COLL_GPU_NCCL
	if (r == COLL_OK && g->nccl) {
		ncclUniqueId id;
		memcpy(&id, all[0].id, sizeof id);
		ncclResult_t e = ncclCommInitRank(&g->nc, g->n, id, g->rank);
		if (e != ncclSuccess) {
			g->nc = NULL;
			r = gerr(g, COLL_ERR_TRANSPORT, "ncclCommInitRank: %s", ncclGetErrorString(e));
		}
	}
#endif
	if (r == COLL_OK && !g->nccl &&
	    (!(g->peer_work = (char **)calloc((size_t)g->n, sizeof *g->peer_work)) ||
	     !(g->bar = (uint8_t *)calloc((size_t)g->n, 1))))
		r = COLL_ERR_NOMEM;
	free(all);
	if (r != COLL_OK) {
		memcpy(init_err, g->err, sizeof init_err);   /* g goes: coll_gpu_last_error(NULL) keeps it */
		coll_gpu_finalize(g);
		return r;
	}
	*out = g;
	return COLL_OK;
}

/* Unmap the peers' work buffers (cuda transport). */
static void close_peers(coll_gpu *g)
{
	for (int i = 0; g->peer_work && i < g->n; i++) {
		if (g->peer_work[i] && i != g->rank)
			cudaIpcCloseMemHandle(g->peer_work[i]);
		g->peer_work[i] = NULL;
	}
}

extern "C" void coll_gpu_finalize(coll_gpu *g)
{
	if (!g)
		return;
	if (g->s)
		cudaStreamSynchronize(g->s);
#ifdef COLL_GPU_NCCL
	if (g->nc)
		ncclCommDestroy(g->nc);
#endif
	close_peers(g);
	free(g->peer_work);
	free(g->bar);
	if (g->work)
		cudaFree(g->work);
	if (g->staging)
		cudaFree(g->staging);
	if (g->ev_in)
		cudaEventDestroy(g->ev_in);
	if (g->ev_out)
		cudaEventDestroy(g->ev_out);
	if (g->s)
		cudaStreamDestroy(g->s);
	if (g->ag)
		coll_algo_free(g->ag);
	free(g);
}

extern "C" const char *coll_gpu_transport(const coll_gpu *g) { return g && g->nccl ? "nccl" : "cuda"; }
extern "C" int coll_gpu_device(const coll_gpu *g) { return g ? g->device : -1; }
extern "C" size_t coll_gpu_align(const coll_gpu *g) { return g ? g->align : 0; }
extern "C" const char *coll_gpu_last_error(const coll_gpu *g) { return g ? g->err : init_err; }
extern "C" void *coll_gpu_nccl_comm(const coll_gpu *g)
{
#ifdef COLL_GPU_NCCL
	return g && g->nccl ? (void *)g->nc : NULL;
#else
	(void)g;
	return NULL;
#endif
}

/* --- the primitives the generated code calls ------------------------------ */

/* Elements [c*per, min((c+1)*per, count)) as a byte offset and length. */
static size_t chunk_at(const cg_run *x, int c, size_t *len)
{
	size_t lo = (size_t)c * x->per, hi = lo + x->per;
	lo = lo < x->count ? lo : x->count;
	hi = hi < x->count ? hi : x->count;
	*len = (hi - lo) * x->esize;
	return lo * x->esize;
}

extern "C" coll_result cg_begin(cg_run *x, int group)
{
	coll_gpu *g = x->g;
	x->group = group;
#ifdef COLL_GPU_NCCL
	if (g->nccl) {
		NC(g, ncclGroupStart());
		return COLL_OK;
	}
#endif
	/* every rank has applied the previous group before anyone pulls */
	CU(g, cudaStreamSynchronize(g->s));
	return host_barrier(g, group);
}

extern "C" coll_result cg_send(cg_run *x, int peer, int chunk)
{
	size_t len, off = chunk_at(x, chunk, &len);
	if (len == 0)
		return COLL_OK;
#ifdef COLL_GPU_NCCL
	coll_gpu *g = x->g;
	if (g->nccl)
		NC(g, ncclSend(x->buf + off, len, ncclInt8, peer, g->nc, g->s));
#else
	(void)peer;
	(void)off;
#endif
	return COLL_OK;   /* cuda: the receiver pulls */
}

static coll_result recv_into(cg_run *x, int peer, int chunk, char *dst)
{
	coll_gpu *g = x->g;
	size_t len, off = chunk_at(x, chunk, &len);
	if (len == 0)
		return COLL_OK;
#ifdef COLL_GPU_NCCL
	if (g->nccl) {
		NC(g, ncclRecv(dst, len, ncclInt8, peer, g->nc, g->s));
		return COLL_OK;
	}
#endif
	CU(g, cudaMemcpyAsync(dst, g->peer_work[peer] + off, len, cudaMemcpyDeviceToDevice, g->s));
	return COLL_OK;
}

extern "C" coll_result cg_recv(cg_run *x, int peer, int chunk, int slot)
{
	return recv_into(x, peer, chunk, (char *)x->g->staging + (size_t)slot * x->slot_bytes);
}

extern "C" coll_result cg_recv_direct(cg_run *x, int peer, int chunk)
{
	size_t len;
	return recv_into(x, peer, chunk, x->buf + chunk_at(x, chunk, &len));
}

extern "C" coll_result cg_end(cg_run *x)
{
	coll_gpu *g = x->g;
#ifdef COLL_GPU_NCCL
	if (g->nccl) {
		NC(g, ncclGroupEnd());
		return COLL_OK;
	}
#endif
	/* every pull of the group is done before anyone changes its buffer */
	CU(g, cudaStreamSynchronize(g->s));
	return host_barrier(g, x->group);
}

extern "C" coll_result cg_apply(cg_run *x, int chunk, int slot, int reduce)
{
	coll_gpu *g = x->g;
	size_t len, off = chunk_at(x, chunk, &len);
	if (len == 0)
		return COLL_OK;
	char *src = (char *)g->staging + (size_t)slot * x->slot_bytes;
	if (reduce)
		CU(g, launch_reduce(x->dt, x->op, x->buf + off, src, len / x->esize, g->nsm, g->s));
	else
		CU(g, cudaMemcpyAsync(x->buf + off, src, len, cudaMemcpyDeviceToDevice, g->s));
	return COLL_OK;
}

/* --- allreduce ------------------------------------------------------------ */

typedef struct {
	uint32_t magic, seq;
	uint64_t count;
	int32_t dtype, op, status;
	uint32_t algo_hash;
	int32_t grow;             /* cuda: this rank re-exports its work buffer */
	char algo[44];
} call_hdr;

static uint32_t fnv(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static const cg_algo *pick(const coll_gpu *g, const char *name, size_t bytes)
{
	const coll_gpu_plans *p = g->plans;
	if (!name || !*name) {
		name = NULL;
		for (int i = 0; i < p->nchoices && !name; i++)
			if (p->choices[i].kind == COLL_ALLREDUCE && bytes <= p->choices[i].max_bytes)
				name = p->choices[i].algo;
		if (!name && p->nalgos > 0)
			name = p->algos[0]->name;
	}
	for (int i = 0; name && i < p->nalgos; i++)
		if (p->algos[i]->kind == COLL_ALLREDUCE && strcmp(p->algos[i]->name, name) == 0)
			return p->algos[i];
	return NULL;
}

static coll_result grow(coll_gpu *g, void **p, size_t *have, size_t need)
{
	if (*have >= need)
		return COLL_OK;
	/* cudaFree synchronises the device, so work still queued on the old
	 * buffer finishes first */
	if (*p)
		CU(g, cudaFree(*p));
	*p = NULL;
	*have = 0;
	CU(g, cudaMalloc(p, need));
	*have = need;
	return COLL_OK;
}

/* cuda: export the work buffer and map every peer's (all ranks call it
 * when any rank grew). */
static coll_result exchange_handles(coll_gpu *g)
{
	cudaIpcMemHandle_t mine, *all = (cudaIpcMemHandle_t *)calloc((size_t)g->n, sizeof *all);
	if (!all)
		return gerr(g, COLL_ERR_NOMEM, "out of memory");
	cudaError_t e = cudaIpcGetMemHandle(&mine, g->work);
	coll_result r = e == cudaSuccess ? COLL_OK
					 : gerr(g, COLL_ERR_SYSTEM, "cudaIpcGetMemHandle: %s", cudaGetErrorString(e));
	if (r == COLL_OK)
		r = host_allgather(g, &mine, all, sizeof mine);
	close_peers(g);
	for (int i = 0; i < g->n && r == COLL_OK; i++) {
		if (i == g->rank) {
			g->peer_work[i] = (char *)g->work;
			continue;
		}
		void *p = NULL;
		e = cudaIpcOpenMemHandle(&p, all[i], cudaIpcMemLazyEnablePeerAccess);
		if (e != cudaSuccess)
			r = gerr(g, COLL_ERR_TRANSPORT, "cudaIpcOpenMemHandle of rank %d's buffer: %s", i,
				 cudaGetErrorString(e));
		else
			g->peer_work[i] = (char *)p;
	}
	free(all);
	return r;
}

static coll_result allreduce(coll_gpu *g, const char *name, const void *sb, void *rb, size_t count, coll_dtype dt,
			     coll_op op, cudaStream_t stream)
{
	size_t esize = coll_dtype_size(dt), bytes = count * esize;
	const cg_algo *a = NULL;
	call_hdr me;
	memset(&me, 0, sizeof me);
	me.magic = CALL_MAGIC;
	me.seq = g->seq++;
	me.count = count;
	me.dtype = dt;
	me.op = op;
	if (esize == 0 || (unsigned)op >= COLL_NOPS || (count > 0 && (!sb || !rb)))
		me.status = gerr(g, COLL_ERR_INVALID, "bad argument: dtype %d, op %d, %s buffer", (int)dt, (int)op,
				 count > 0 && (!sb || !rb) ? "NULL" : "valid");
	else if (g->n > 1 && !(a = pick(g, name, bytes)))
		me.status = gerr(g, COLL_ERR_NOALGO, "no allreduce algorithm %s%s%s for %d ranks on the device",
				 name && *name ? "named '" : "for this size", name && *name ? name : "",
				 name && *name ? "'" : "", g->n);
	snprintf(me.algo, sizeof me.algo, "%s", a ? a->name : "");
	me.algo_hash = a ? fnv(a->name) ^ (uint32_t)a->chunks * 31u ^ (uint32_t)a->groups : 0;
	me.grow = !g->nccl && me.status == COLL_OK && g->work_len < bytes;
	bool anygrow = me.grow;
	if (g->n > 1 && (g->check || !g->nccl)) {
		call_hdr *all = (call_hdr *)calloc((size_t)g->n, sizeof *all);
		if (!all)
			return gerr(g, COLL_ERR_NOMEM, "out of memory");
		coll_result r = host_allgather(g, &me, all, sizeof me);
		for (int i = 0; i < g->n && r == COLL_OK; i++) {
			const call_hdr *o = &all[i];
			anygrow |= o->grow != 0;
			if (o->magic != CALL_MAGIC)
				r = gerr(g, COLL_ERR_PROTOCOL, "rank %d sent a malformed call header", i);
			else if (o->status != COLL_OK)
				r = i == g->rank ? (coll_result)o->status
						 : gerr(g, COLL_ERR_ABORTED, "rank %d's allreduce failed before it started", i);
			else if (o->seq != me.seq || o->count != me.count || o->dtype != me.dtype || o->op != me.op ||
				 o->algo_hash != me.algo_hash)
				r = gerr(g, COLL_ERR_MISMATCH, "allreduce #%u: rank %d passed count %llu, %s, %s, '%s' "
					 "(%s buffer %llu bytes) but rank %d count %llu, %s, %s, '%s'", me.seq, i,
					 (unsigned long long)o->count, coll_dtype_name((coll_dtype)o->dtype),
					 coll_op_name((coll_op)o->op), o->algo, "device",
					 (unsigned long long)(o->count * coll_dtype_size((coll_dtype)o->dtype)), g->rank,
					 (unsigned long long)me.count, coll_dtype_name(dt), coll_op_name(op), me.algo);
		}
		free(all);
		if (r != COLL_OK)
			return r;
	} else if (me.status != COLL_OK)
		return (coll_result)me.status;
	if (count == 0)
		return COLL_OK;
	if (g->n == 1) {
		if (sb != rb)
			CU(g, cudaMemcpyAsync(rb, sb, bytes, cudaMemcpyDeviceToDevice, stream));
		return COLL_OK;
	}
	cg_run x;
	memset(&x, 0, sizeof x);
	x.g = g;
	x.esize = esize;
	x.count = count;
	x.dt = dt;
	x.op = op;
	size_t quantum = g->align / esize;   /* elements: align is a power of two >= 16 >= esize */
	x.per = (count + (size_t)a->chunks - 1) / (size_t)a->chunks;
	x.per = (x.per + quantum - 1) / quantum * quantum;
	x.slot_bytes = x.per * esize;
	coll_result r = grow(g, &g->staging, &g->staging_len, (size_t)(a->slots > 0 ? a->slots : 1) * x.slot_bytes);
	if (r != COLL_OK)
		return r;
	if (!g->nccl) {
		if (me.grow && (r = grow(g, &g->work, &g->work_len, bytes)) != COLL_OK)
			return r;
		if (anygrow && (r = exchange_handles(g)) != COLL_OK)
			return r;
	}
	CU(g, cudaEventRecord(g->ev_in, stream));
	CU(g, cudaStreamWaitEvent(g->s, g->ev_in, 0));
	x.buf = (char *)(g->nccl ? rb : g->work);
	if (sb != x.buf)
		CU(g, cudaMemcpyAsync(x.buf, sb, bytes, cudaMemcpyDeviceToDevice, g->s));
	r = a->rank_fns[g->rank](&x);
	if (r != COLL_OK)
		return r;
	if (x.buf != rb)
		CU(g, cudaMemcpyAsync(rb, x.buf, bytes, cudaMemcpyDeviceToDevice, g->s));
	CU(g, cudaEventRecord(g->ev_out, g->s));
	CU(g, cudaStreamWaitEvent(stream, g->ev_out, 0));
	return COLL_OK;
}

extern "C" coll_result coll_gpu_allreduce_algo(coll_gpu *g, const char *algo, const void *sendbuf, void *recvbuf,
					       size_t count, coll_dtype dt, coll_op op, cudaStream_t stream)
{
	if (!g)
		return COLL_ERR_INVALID;
	if (g->broken != COLL_OK)
		return gerr(g, COLL_ERR_ABORTED, "an earlier device collective failed (%s)", coll_strerror(g->broken));
	coll_result r = allreduce(g, algo, sendbuf, recvbuf, count, dt, op, stream);
	if (r != COLL_OK)
		g->broken = r;
	return r;
}

extern "C" coll_result coll_gpu_allreduce(coll_gpu *g, const void *sendbuf, void *recvbuf, size_t count,
					  coll_dtype dt, coll_op op, cudaStream_t stream)
{
	return coll_gpu_allreduce_algo(g, NULL, sendbuf, recvbuf, count, dt, op, stream);
}
