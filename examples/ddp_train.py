"""ddp_train.py - DistributedDataParallel training on coll's torch backend.

Trains a small MLP on synthetic data with torch's DDP, on 4 ranks of one
machine, and does one of two things:

  --compare  train two replicas from the same initial weights on the same
             batches, one with gloo and one with coll, for --steps steps, and
             check that their parameters agree within the floating-point
             bound this script computes as it goes (below); exit 1 if not;
  --time     time iterations (default) for gloo, coll ring, coll StragglAR
             and coll auto (`straggler auto`: the runtime detects the
             straggler and switches), with rank --straggler sleeping --delay
             ms before each backward pass: the same emulated persistent
             straggler for every backend.  Passes are interleaved
             (--repeats) and the median per-iteration time is printed.

Launch with collrun, which sets COLL_RANK / COLL_NRANKS / COLL_ADDR; the
script runs torch's TCPStore at COLL_ADDR (coll's own rendezvous then goes
through that store, on a port of its own):

  ./collc build examples/ddp4.coll -o build/ddp4
  PYTHONPATH=runtime/python build/collrun -np 4 /usr/bin/python3 examples/ddp_train.py \
      --plans build/ddp4/libddp4.so --compare
  PYTHONPATH=runtime/python build/collrun -np 4 /usr/bin/python3 examples/ddp_train.py \
      --plans build/ddp4/libddp4.so --time --straggler 3 --delay 20

A working torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) also
works; Debian's `python3 -m torch.distributed.run` of torch 1.13 fails
under Python 3.11 before starting any worker (an enum change breaks its
argument parsing), which is why the examples use collrun.  /usr/bin/python3
is named because Debian's torch is installed for it only.

The tolerance of --compare.  Both backends sum the same per-rank
gradients g_1..g_n (the forward and backward passes are identical, single
threaded, from identical parameters), in different orders: gloo's ring
and coll's schedules add the n contributions of an element in different
sequences.  A floating-point sum of n terms in any order is within
(n-1) u sum_r |g_r| of the exact sum (u = eps/2, the unit roundoff; Higham,
Accuracy and Stability, 4.2), so two orders differ by at most
S (n-1) eps / n after DDP's division by n (exact for n = 4), where
S = sum_r |g_r|.  An SGD step p <- p - lr g then moves the two replicas
apart by at most lr S (n-1) eps / n, plus the rounding of lr g (lr S eps / n
between two runs) and of p - lr g, which lands on neighbouring floats
once the inputs differ (eps max(|p|, |p'|)).  Per element and step that is
B = lr eps S + eps max(|p|, |p'|); the script sums B over the steps with S
measured each step (an extra backward pass on the unwrapped model and an
allreduce of |g|).  A difference in parameters then changes every later
gradient a little (to first order lr H dp per step, H the Hessian), and
that spreads a large element's rounding into small elements of the same
and other tensors, so the test is per tensor: max |p_gloo - p_coll| over a
tensor must stay within 2 x the largest accumulated B of that tensor, the
factor 2 covering the propagation for a few steps at a small learning rate.
A wrong reduction (a missing or doubled contribution) moves parameters by
about lr |g|, 10^4 times more.  The script prints the largest
|difference| / tolerance; 0 means the runs agreed bit for bit.
"""

import argparse
import datetime
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plans", default=os.environ.get("COLL_PLANS"),
                    help="the generated library for the coll backend (lib<cluster>.so for the world size)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--compare", action="store_true", help="check gloo and coll parameters agree")
    mode.add_argument("--time", action="store_true", help="time iterations (the default)")
    ap.add_argument("--coll-algo", default="ring,stragglar",
                    help="--compare: the coll allreduce algorithms to check against gloo, comma-separated "
                    "(ring, stragglar, auto: the library's choice)")
    ap.add_argument("--backends", default="gloo,ring,stragglar,auto",
                    help="what --time measures: gloo and coll algorithms (ring, stragglar, auto)")
    ap.add_argument("--steps", type=int, default=None, help="steps (--compare: 5; --time: per pass, 20)")
    ap.add_argument("--warmup", type=int, default=25, help="--time: untimed steps before each backend's passes")
    ap.add_argument("--repeats", type=int, default=3, help="--time: interleaved passes per backend")
    ap.add_argument("--straggler", type=int, default=-1, help="the rank that is late")
    ap.add_argument("--delay", type=float, default=0.0, help="its delay before each backward pass, ms")
    ap.add_argument("--width", type=int, default=1024, help="hidden width (parameters ~ 2 width^2 + ...)")
    ap.add_argument("--batch", type=int, default=4, help="samples per rank and step")
    ap.add_argument("--bucket-mb", type=float, default=64,
                    help="DDP's gradient bucket; the default holds every gradient, so each step is one allreduce")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    return ap.parse_args()


def launch_env():
    """rank, world size and a torch store, from torchrun's or collrun's environment."""
    if "RANK" in os.environ and "MASTER_ADDR" in os.environ:
        rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    elif "COLL_RANK" in os.environ:
        rank, n = int(os.environ["COLL_RANK"]), int(os.environ["COLL_NRANKS"])
        host, port = os.environ["COLL_ADDR"].rsplit(":", 1)
        port = int(port)
    else:
        sys.exit("ddp_train.py: run under collrun (COLL_RANK...) or torchrun (RANK, MASTER_ADDR...)")
    store = dist.TCPStore(host, port, n, rank == 0, timeout=datetime.timedelta(seconds=60))
    return rank, n, store


def make_model(width, seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, width), nn.Tanh(),
                         nn.Linear(width, 16))


def batches(rank, width, batch, seed):
    """An endless stream of this rank's synthetic (x, y): a fixed random
    teacher maps inputs to targets; every rank draws different inputs."""
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(width, 16, generator=g) / width ** 0.5
    g.manual_seed(seed * 1000 + rank + 1)
    while True:
        x = torch.randn(batch, width, generator=g)
        yield x, torch.tanh(x @ teacher)


def new_coll_group(plans, algo, straggler):
    import coll.distributed as cd
    algos = {"allreduce": algo} if algo and algo != "auto" else {}
    cd.configure(plans=plans, algos=algos, straggler=straggler if algo == "stragglar" and straggler >= 0 else None)
    return dist.new_group(backend="coll")


def compare(args, rank, n):
    gloo = dist.group.WORLD
    algos = [a.strip() for a in args.coll_algo.split(",")]
    groups = {"gloo": gloo}
    for a in algos:
        groups[a] = new_coll_group(args.plans, a, args.straggler)
    base = make_model(args.width, args.seed)
    replicas = {}
    for name, pg in groups.items():
        m = make_model(args.width, args.seed)
        m.load_state_dict(base.state_dict())
        replicas[name] = (DDP(m, process_group=pg), torch.optim.SGD(m.parameters(), lr=args.lr))
    loss_fn = nn.MSELoss()
    eps = torch.finfo(torch.float32).eps
    bound = [torch.zeros_like(p) for p in base.parameters()]
    steps = args.steps or 5
    data = batches(rank, args.width, args.batch, args.seed)
    for _ in range(steps):
        x, y = next(data)
        # sum_r |g_r| per element, from this step's local gradients (of gloo's
        # replica: the others' differ from them by rounding only)
        mod = replicas["gloo"][0].module
        before = [q.detach().clone() for q in mod.parameters()]
        local = torch.autograd.grad(loss_fn(mod(x), y), list(mod.parameters()))
        for b, g in zip(bound, local):
            s = g.abs()
            dist.all_reduce(s, group=gloo)
            b += args.lr * eps * s   # lr (n-1) eps S / n (the sums) + lr eps S / n (lr * g)
        for ddp, opt in replicas.values():
            opt.zero_grad()
            loss_fn(ddp(x), y).backward()
            opt.step()
        for b, p0, p1 in zip(bound, before, mod.parameters()):
            b += eps * torch.maximum(p0.abs(), p1.detach().abs())   # rounding p - lr g
    rc = 0
    for a in algos:
        worst, maxdiff, identical = 0.0, 0.0, True
        pg_, pc_ = replicas["gloo"][0].module.parameters(), replicas[a][0].module.parameters()
        for p, c, b in zip(pg_, pc_, bound):
            d = float((p.detach() - c.detach()).abs().max())
            identical &= bool(torch.equal(p, c))
            maxdiff = max(maxdiff, d)
            worst = max(worst, d / (2 * float(b.max())))
        ok = worst <= 1.0
        rc |= 0 if ok else 1
        print("rank %d: %d steps, coll %s vs gloo: max |diff| %.3g, max |diff| / tolerance %.3g (per tensor: 2 x "
              "the largest sum over steps of lr eps sum_r|g_r| + eps max(|p|, |p'|))%s: %s"
              % (rank, steps, groups[a].last_algo(), maxdiff, worst, ", bit-identical" if identical else "",
                 "ok" if ok else "MISMATCH"), flush=True)
    return rc


def timed(args, rank, pg, label):
    """Median seconds per iteration over --repeats interleaved passes (the
    caller interleaves; this runs one pass) of DDP on group pg."""
    model = make_model(args.width, args.seed)
    ddp = DDP(model, process_group=pg, bucket_cap_mb=args.bucket_mb)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = nn.MSELoss()
    data = batches(rank, args.width, args.batch, args.seed)
    late = rank == args.straggler and args.delay > 0

    def step():
        x, y = next(data)
        opt.zero_grad()
        loss = loss_fn(ddp(x), y)
        if late:
            time.sleep(args.delay / 1000.0)
        loss.backward()
        opt.step()
    return step


def time_backends(args, rank, n):
    names = [b.strip() for b in args.backends.split(",") if b.strip()]
    groups = {}
    for name in names:
        groups[name] = dist.group.WORLD if name == "gloo" else new_coll_group(args.plans, name, args.straggler)
    steps = args.steps or 20
    runners = {name: timed(args, rank, groups[name], name) for name in names}
    for name in names:   # warm up every backend (auto: long enough to detect the straggler)
        for _ in range(args.warmup):
            runners[name]()
    times = {name: [] for name in names}
    for _ in range(args.repeats):
        for name in names:
            dist.barrier(group=groups[name])
            t0 = time.perf_counter()
            for _ in range(steps):
                runners[name]()
            times[name].append((time.perf_counter() - t0) / steps)
    if rank == 0:
        nparams = sum(p.numel() for p in make_model(args.width, args.seed).parameters())
        print("%d ranks, %d parameters (%.1f MiB of fp32 gradients), batch %d, straggler rank %d delayed %g ms "
              "before each backward; %d passes x %d steps after %d warm-up steps" %
              (n, nparams, nparams * 4 / 2 ** 20, args.batch, args.straggler, args.delay, args.repeats, steps,
               args.warmup))
        for name in names:
            algo = "" if name == "gloo" else " (ran %s; detected straggler %d, delay %.1f ms)" % (
                (groups[name].last_algo(),) + tuple(x * f for x, f in zip(groups[name].straggler(), (1, 1e3))))
            label = "gloo" if name == "gloo" else "coll " + name
            print("%-16s %8.2f ms/iteration (median of %s)%s" %
                  (label, statistics.median(times[name]) * 1e3,
                   ", ".join("%.2f" % (t * 1e3) for t in times[name]), algo), flush=True)
    return 0


def main():
    args = parse()
    torch.set_num_threads(1)   # 4 ranks share this machine's cores; also keeps every run's sums identical
    rank, n, store = launch_env()
    if not args.plans:
        sys.exit("ddp_train.py: --plans (or COLL_PLANS): the library from `collc build examples/ddp4.coll -o DIR`")
    # DDP's first bucket is 1 MiB whatever bucket_cap_mb says (the comment in
    # torch/nn/parallel/distributed.py invites setting this); one bucket makes
    # one allreduce per step, which the straggler enters last every time
    dist._DEFAULT_FIRST_BUCKET_BYTES = int(args.bucket_mb * 2 ** 20)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=n)
    rc = compare(args, rank, n) if args.compare else time_backends(args, rank, n)
    dist.barrier()
    dist.destroy_process_group()
    return rc


if __name__ == "__main__":
    sys.exit(main())
