"""torch_cuda_check.py - the torch.distributed backend "coll" on CUDA tensors.

Run by tests/gpu/run.sh under collrun, with a plan library built from a
`transport cuda` (or nccl) cluster and the extension built against the
machine's torch:

    COLL_TORCH_EXT=.../_coll_torch.so PYTHONPATH=runtime/python \
        collrun -np 2 python3 tests/gpu/torch_cuda_check.py PLANS_LIB

The default group is coll (init_process_group("coll") through torch's
TCPStore at collrun's COLL_ADDR).  Each check reduces CUDA tensors and
compares with the sum computed on the host (inputs are small integers, so
sums are exact in every dtype).  One line per check, "ok NAME" or
"FAIL NAME: ...", then the mean time of a 1 KiB and a 64 MiB fp32
allreduce; exits 1 if any check failed.
"""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

import coll.distributed as cd


def data(rank, count, dtype):
    return ((torch.arange(count) * 7 + rank * 3) % 5 + 1).to(dtype)


def main():
    plans = sys.argv[1]
    rank, n = int(os.environ["COLL_RANK"]), int(os.environ["COLL_NRANKS"])
    host, port = os.environ["COLL_ADDR"].rsplit(":", 1)
    torch.cuda.set_device(rank % torch.cuda.device_count())
    store = dist.TCPStore(host, int(port), n, rank == 0, timeout=datetime.timedelta(seconds=60))
    cd.configure(plans=plans)
    dist.init_process_group("coll", store=store, rank=rank, world_size=n)
    failed = 0

    def report(name, fn):
        nonlocal failed
        try:
            err = fn()
        except Exception as e:
            err = "%s: %s" % (type(e).__name__, e)
        failed += bool(err)
        print("ok %s" % name if not err else "FAIL %s: %s" % (name, err), flush=True)

    def check(t, want):
        got = t.cpu()
        if got.dtype != want.dtype or not torch.equal(got, want):
            return "got %s, want %s" % (got.flatten()[:6].tolist(), want.flatten()[:6].tolist())
        return ""

    def dtypes():
        for dt in (torch.float32, torch.float16, torch.bfloat16, torch.int32):
            for count in (1, 1000003):
                t = data(rank, count, dt).cuda()
                dist.all_reduce(t)
                e = check(t, sum(data(r, count, torch.float32) for r in range(n)).to(dt))
                if e:
                    return "%s count %d: %s" % (dt, count, e)
    report("allreduce-dtypes", dtypes)

    def ops():
        t = data(rank, 4099, torch.int32).cuda()
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        e = check(t, torch.stack([data(r, 4099, torch.int32) for r in range(n)]).max(0).values)
        if e:
            return "max: " + e
        t = data(rank, 4099, torch.float32).cuda()
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        e = check(t, sum(data(r, 4099, torch.float32) for r in range(n)) / n)
        return e and "avg: " + e
    report("allreduce-max-avg", ops)

    def after_kernel():
        # the input is written by a kernel still queued on torch's stream
        t = torch.zeros(1 << 22, device="cuda")
        for _ in range(20):
            t += rank + 1
        w = dist.all_reduce(t, async_op=True)
        w.wait()
        want = torch.full((1 << 22,), float(20 * sum(r + 1 for r in range(n))))
        return check(t, want)
    report("allreduce-after-kernel", after_kernel)

    def empty():
        t = torch.empty(0, device="cuda")
        dist.all_reduce(t)
        return "" if t.numel() == 0 else "numel %d" % t.numel()
    report("allreduce-empty", empty)

    for size in (1 << 10, 64 << 20):
        t = torch.ones(size // 4, device="cuda")
        iters = 200 if size < (1 << 20) else 20
        for _ in range(5):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        us = (time.perf_counter() - t0) / iters * 1e6
        if rank == 0:
            print("time %d bytes: %.1f us" % (size, us), flush=True)
    dist.destroy_process_group()
    print("%d failed" % failed, flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
