/*
 * collbench_dev.h - collbench's device side (collbench --device): the
 * calls it makes on a library that `collc build` generated from a
 * transport cuda or nccl cluster, with the CUDA runtime, NCCL and the
 * library's own libcollrt all resolved at run time (collbench_dev.c), so
 * collbench builds and runs on machines without CUDA.
 *
 * Every call that can fail returns a coll_result and leaves the details in
 * dev_error(d); device pointers are plain void * (CUDA's types are not
 * available here).  One dev is used by one thread.
 */
#ifndef COLLBENCH_DEV_H
#define COLLBENCH_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "coll.h"
#include "coll_plan.h"

typedef struct dev dev;

/* Why dev_open failed; each comes with a message in `why`. */
enum {
	DEV_NO_PLANS = 1,   /* the library has no GPU plans (a host-only cluster) */
	DEV_NO_RUNTIME,     /* the CUDA runtime or the library's GPU API is missing */
	DEV_NO_DEVICE,      /* no usable CUDA device (none, no driver, or GPU out of range) */
};

/* Look up the GPU plans `gpu_sym` and the GPU API in the dlopened library
 * `lib` (its file name `path`, for messages), load the CUDA runtime's
 * entry points from its dependencies and check that CUDA sees a device
 * (`device` < 0: the rank's, rank modulo the device count, else that
 * index).  Local to this process: no communication.  Returns 0 with *d
 * set, or a DEV_NO_* with a message in why. */
int dev_open(dev **d, void *lib, const char *path, const char *gpu_sym, int device, char *why, size_t whylen);

/* Join the job (the library's coll_init_env with the host plan set
 * `plans`, borrowed) and create the device executor; collective over the
 * ranks.  timeout_s != 0 sets the communicator's inactivity timeout. */
coll_result dev_init(dev *d, const coll_plan_set *plans, double timeout_s);

/* After dev_init: this rank, the rank count, the transport ("cuda" or
 * "nccl"), the CUDA device used, and whether the NCCL baseline exists
 * (the nccl transport: ncclAllReduce on the executor's communicator). */
int dev_rank(const dev *d);
int dev_nranks(const dev *d);
const char *dev_transport(const dev *d);
int dev_device(const dev *d);
int dev_has_nccl(const dev *d);

/* The algorithm the library chooses for an allreduce of `bytes`. */
const char *dev_choose_algo(const dev *d, uint64_t bytes);

/* Device memory: allocate (*p = NULL for 0 bytes is not an error),
 * free (NULL allowed), copy host -> device and device -> host
 * (synchronous), set bytes. */
coll_result dev_alloc(dev *d, void **p, size_t bytes);
void dev_free(dev *d, void *p);
coll_result dev_upload(dev *d, void *dst, const void *src, size_t bytes);
coll_result dev_download(dev *d, void *dst, const void *src, size_t bytes);
coll_result dev_memset(dev *d, void *dst, int byte, size_t bytes);

/* Enqueue one allreduce of device buffers on the dev's stream: through
 * the library's coll_gpu_allreduce_algo (algo NULL: chosen by size), or
 * ncclAllReduce (only when dev_has_nccl).  dev_sync waits for the stream. */
coll_result dev_allreduce(dev *d, const char *algo, const void *sb, void *rb, size_t count, coll_dtype dt, coll_op op);
coll_result dev_nccl_allreduce(dev *d, const void *sb, void *rb, size_t count, coll_dtype dt, coll_op op);
coll_result dev_sync(dev *d);

/* Host-side collectives over the library's communicator: a barrier, and
 * every rank's k uint64 values into all (k x nranks, rank-major). */
coll_result dev_barrier(dev *d);
coll_result dev_gather(dev *d, const uint64_t *mine, uint64_t *all, int k);
/* The transfers of the results gather on n ranks (every rank sends its
 * chunk to every other), malloc'd, count in *nx; NULL: out of memory.
 * The host sweep builds its gather from them too. */
coll_xfer *dev_gather_xfers(int n, int *nx);

/* The details of the last failure. */
const char *dev_error(const dev *d);

/* Free the executor, the stream and the communicator; NULL allowed.  The
 * library stays loaded. */
void dev_close(dev *d);

#endif
