"""torch_bench.py - the torch backend "coll" against gloo, per call, in one run.

    make && tclsh tests/bench/bench.tcl -only torch
    # or by hand (N ranks; PLANS: a lib<cluster>.so from collc build for N):
    PYTHONPATH=runtime/python build/collrun -np 4 /usr/bin/python3 tests/bench/torch_bench.py PLANS

Both groups hold the same ranks (gloo is the default group, coll a second
one), and every measurement alternates between them: R rounds, each timing
a batch of calls on gloo and then on coll (or the other way round, every
other round), so that load on the machine falls on both alike.  Per call
it prints the median over rounds of rank 0's time per call, the ratio
gloo / coll (above 1: coll is faster) and, as the physical reference beside
every ratio, the time of one memcpy of the same bytes on this machine.

Calls: all_reduce (fp32 sum), broadcast, all_gather (the list form),
all_to_all_single, and a send/recv ping-pong between ranks 0 and 1 (the
others idle; one-way time), at 64 KiB and 4 MiB (BYTES: comma-separated).
"""

import datetime
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import coll.distributed as cd


def memcpy_s(nbytes):
    a = torch.ones(nbytes // 4)
    b = torch.empty_like(a)
    b.copy_(a)
    ts = []
    for _ in range(9):
        t0 = time.perf_counter()
        for _ in range(10):
            b.copy_(a)
        ts.append((time.perf_counter() - t0) / 10)
    return statistics.median(ts)


def main():
    plans = sys.argv[1]
    sizes = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "65536,4194304").split(",")]
    rounds = int(os.environ.get("BENCH_ROUNDS", "7"))
    rank, n = int(os.environ["COLL_RANK"]), int(os.environ["COLL_NRANKS"])
    # torch's store at collrun's MASTER_ADDR/MASTER_PORT (coll's own
    # rendezvous goes through the store: bootstrap.py)
    host, port = os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]
    store = dist.TCPStore(host, int(port), n, rank == 0, timeout=datetime.timedelta(seconds=120))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=n)
    cd.configure(plans=plans)
    groups = {"gloo": dist.group.WORLD, "coll": dist.new_group(backend="coll")}

    def calls(nbytes):
        k = nbytes // 4
        x = torch.ones(k)
        outs = [torch.empty(k) for _ in range(n)]
        a2a_in, a2a_out = torch.ones(k - k % n), torch.empty(k - k % n)
        r = torch.empty(k)

        def pingpong(g):
            if rank == 0:
                dist.send(x, 1, group=g)
                dist.recv(r, 1, group=g)
            elif rank == 1:
                dist.recv(r, 0, group=g)
                dist.send(x, 0, group=g)
        return [
            ("all_reduce", lambda g: dist.all_reduce(x, group=g), 1),
            ("broadcast", lambda g: dist.broadcast(x, 0, group=g), 1),
            ("all_gather", lambda g: dist.all_gather(outs, x, group=g), 1),   # gloo 1.13 has no tensor form
            ("all_to_all", lambda g: dist.all_to_all_single(a2a_out, a2a_in, group=g), 1),
            ("send/recv", pingpong, 2),   # two one-way messages per call
        ]

    if rank == 0:
        print("# torch %s, %d ranks, %d rounds; per call: median of rank 0's time per round" %
              (torch.__version__, n, rounds), flush=True)
        print("%-11s %9s %11s %11s %8s %12s" % ("call", "bytes", "gloo", "coll", "gloo/coll", "memcpy"), flush=True)
    for nbytes in sizes:
        ref = memcpy_s(nbytes)
        for name, fn, per in calls(nbytes):
            for g in groups.values():   # warm-up, and the batch size from gloo's pace
                fn(g)
            dist.barrier()
            t0 = time.perf_counter()
            fn(groups["gloo"])
            one = time.perf_counter() - t0
            t = torch.tensor([one], dtype=torch.float64)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            batch = max(3, min(200, int(0.05 / max(t.item(), 1e-6))))
            times = {"gloo": [], "coll": []}
            for rd in range(rounds):
                order = ["gloo", "coll"] if rd % 2 == 0 else ["coll", "gloo"]
                for b in order:
                    dist.barrier()
                    t0 = time.perf_counter()
                    for _ in range(batch):
                        fn(groups[b])
                    times[b].append((time.perf_counter() - t0) / batch / per)
            if rank == 0:
                gl, co = statistics.median(times["gloo"]), statistics.median(times["coll"])
                print("%-11s %9d %9.1f us %9.1f us %8.2fx %9.1f us" % (name, nbytes, gl * 1e6, co * 1e6, gl / co,
                                                                      ref * 1e6), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
