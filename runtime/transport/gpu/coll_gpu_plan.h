/*
 * coll_gpu_plan.h - what the generated NAME_gpu.cu hands to the device
 * executor (coll_gpu.cu), the device counterpart of coll_plan.h.
 *
 * emit_cuda.c unrolls every allreduce schedule of the cluster into one C
 * function per rank.  The schedule's rounds are fused into *groups*: a
 * round joins the group before it when none of its sends reads a chunk
 * that a receive of the group wrote on the sending rank, so fusing cannot
 * change what is sent.  Every rank runs every group (also an empty one:
 * the cuda transport puts host barriers at group boundaries), as
 *
 *     CG_BEGIN(x, 0);             // group 0: round 0
 *     CG_SEND(x, 2, 1);           //   chunk 1 -> rank 2
 *     CG_RECV(x, 0, 0, 0);        //   chunk 0 <- rank 0 into staging slot 0
 *     CG_RECV_DIRECT(x, 3, 2);    //   chunk 2 <- rank 3 straight into the buffer
 *     CG_END(x);                  // transfers of the group complete (ncclGroupEnd)
 *     CG_REDUCE(x, 0, 0);         // chunk 0 op= slot 0 (kernel)
 *     CG_COPY(x, 1, 1);           // chunk 1 := slot 1
 *
 * Receives land in staging slots (applied after the group, in schedule
 * order, so every transfer reads the state from before its round) unless
 * the rank touches that chunk nowhere else in the group; then straight into
 * the buffer.  Messages between two ranks keep the schedule's order on
 * both sides, which is how NCCL pairs them.
 */
#ifndef COLL_GPU_PLAN_H
#define COLL_GPU_PLAN_H

#include "coll_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

#define COLL_GPU_PLAN_ABI 1

typedef struct cg_run cg_run;   /* one call in progress (coll_gpu.cu) */
typedef coll_result cg_rank_fn(cg_run *x);

/* One algorithm at the cluster's rank count. */
typedef struct {
	const char *name;
	int32_t kind;           /* coll_kind; only COLL_ALLREDUCE runs on the device so far */
	int32_t nranks, chunks, rounds, groups;
	int32_t slots;          /* staging slots the busiest (rank, group) needs */
	cg_rank_fn *const *rank_fns;   /* nranks entries */
} cg_algo;

struct coll_gpu_plans {
	uint32_t abi;           /* COLL_GPU_PLAN_ABI */
	const char *name;       /* cluster name */
	int32_t nranks;
	const char *transport;  /* "nccl" or "cuda" */
	uint64_t align;         /* chunk padding in bytes, a power of two >= 16 */
	const cg_algo *const *algos;
	int32_t nalgos;
	const coll_choice *choices;   /* size -> algorithm, as coll_plan.h */
	int32_t nchoices;
};

/* The executor's primitives (coll_gpu.cu); each returns a coll_result and
 * records details on the executor.  Group numbers must come in order. */
COLL_API coll_result cg_begin(cg_run *x, int group);
COLL_API coll_result cg_send(cg_run *x, int peer, int chunk);
COLL_API coll_result cg_recv(cg_run *x, int peer, int chunk, int slot);
COLL_API coll_result cg_recv_direct(cg_run *x, int peer, int chunk);
COLL_API coll_result cg_end(cg_run *x);
COLL_API coll_result cg_apply(cg_run *x, int chunk, int slot, int reduce);

#define CG_TRY(e) do { coll_result cg_rc_ = (e); if (cg_rc_ != COLL_OK) return cg_rc_; } while (0)
#define CG_BEGIN(x, g)                CG_TRY(cg_begin((x), (g)))
#define CG_SEND(x, peer, chunk)       CG_TRY(cg_send((x), (peer), (chunk)))
#define CG_RECV(x, peer, chunk, slot) CG_TRY(cg_recv((x), (peer), (chunk), (slot)))
#define CG_RECV_DIRECT(x, peer, chunk) CG_TRY(cg_recv_direct((x), (peer), (chunk)))
#define CG_END(x)                     CG_TRY(cg_end(x))
#define CG_REDUCE(x, chunk, slot)     CG_TRY(cg_apply((x), (chunk), (slot), 1))
#define CG_COPY(x, chunk, slot)       CG_TRY(cg_apply((x), (chunk), (slot), 0))

#ifdef __cplusplus
}
#endif
#endif
