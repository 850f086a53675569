"""torch_check.py - the torch.distributed backend "coll" against gloo.

Run by tests/python.test under collrun (PYTHONPATH=runtime/python):

    collrun -np 3 /usr/bin/python3 tests/python/torch_check.py PLANS_LIB

The default group is gloo (torch's TCPStore at collrun's MASTER_PORT); a
second group of the same ranks is coll, created through
torch.distributed.new_group(backend="coll"), so the backend's creator
runs coll's rendezvous through torch's store.  Every collective runs on
the same input tensors in both groups and the outputs must be equal
(inputs are small integers, so sums are exact in any order); where
gloo 1.13 has no implementation (reduce_scatter, the tensor forms of
allgather and reduce_scatter, list alltoall, bfloat16, AVG) the reference
is computed locally.  Point-to-point (send, recv, isend, irecv,
batch_isend_irecv), gather, scatter, uneven all_to_all_single and the
coalesced calls are checked the same way.  One line per check: "ok NAME" or "FAIL NAME: ...".
"""

import datetime
import os
import sys

import torch
import torch.distributed as dist

import coll.distributed as cd


def report(name, fn):
    try:
        err = fn()
    except Exception as e:
        err = "%s: %s" % (type(e).__name__, e)
    print("ok %s" % name if not err else "FAIL %s: %s" % (name, err), flush=True)


def same(got, want):
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        return "got %s %s %s, want %s %s %s" % (got.dtype, tuple(got.shape), got.flatten()[:6].tolist(), want.dtype,
                                                tuple(want.shape), want.flatten()[:6].tolist())
    return ""


def same_all(got, want):
    """same() over two lists of tensors: the first difference, or ""."""
    for y, x in zip(got, want):
        e = same(y, x)
        if e:
            return e
    return ""


def data(rank, count, dtype, base=0):
    return ((torch.arange(count) * 7 + rank * 3 + base) % 5 + 1).to(dtype)


def main():
    plans = sys.argv[1]
    rank, n = int(os.environ["COLL_RANK"]), int(os.environ["COLL_NRANKS"])
    # torch's store at collrun's MASTER_ADDR/MASTER_PORT (coll's own
    # rendezvous goes through the store: bootstrap.py)
    host, port = os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]
    store = dist.TCPStore(host, int(port), n, rank == 0, timeout=datetime.timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=n)
    gloo = dist.group.WORLD

    def missing_collc():
        # no plans named and no collc to build the standard library's: rank 0
        # says what it tried, the others that rank 0 could not make them
        cd.configure(plans=None)
        os.environ.pop("COLL_PLANS", None)
        os.environ["COLLC"] = "/nonexistent/collc"
        try:
            cd.create(store, rank, n, datetime.timedelta(seconds=10))
        except RuntimeError as e:
            want = ("coll backend: %sno plan library was named and there is no collc to build one from the standard "
                    "library; tried $COLLC=/nonexistent/collc (not an executable file).  Install coll"
                    % ("" if rank == 0 else "rank 0 could not make the plans: "))
            return "" if str(e).startswith(want) else "message %r" % str(e)
        finally:
            del os.environ["COLLC"]
        return "no RuntimeError"
    report("error-nocollc", missing_collc)

    cd.configure(plans=plans)
    pg = dist.new_group(backend="coll")
    report("backend", lambda: "" if (pg.name(), dist.get_backend(pg)) == ("coll", "coll")
           else "name %r, get_backend %r" % (pg.name(), dist.get_backend(pg)))

    def both(fn, *tensors):
        """Run fn(tensors..., group) on copies for gloo and for coll; return both copies."""
        a = [t.clone() for t in tensors]
        b = [t.clone() for t in tensors]
        fn(*a, gloo)
        fn(*b, pg)
        return a, b

    def vs_gloo(fn, *tensors):
        a, b = both(fn, *tensors)
        for x, y in zip(a, b):
            e = same(y, x)
            if e:
                return e
        return ""

    odd = 1001
    ops = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN,
           "product": dist.ReduceOp.PRODUCT}

    def allreduce_dtypes():
        for dt in (torch.float32, torch.float64, torch.float16, torch.int32, torch.int64, torch.int8, torch.uint8):
            e = vs_gloo(lambda t, g: dist.all_reduce(t, group=g), data(rank, odd, dt))
            if e:
                return "%s: %s" % (dt, e)
    report("allreduce-dtypes", allreduce_dtypes)

    def allreduce_ops():
        for name, op in ops.items():
            for dt in (torch.int32, torch.float64):
                e = vs_gloo(lambda t, g: dist.all_reduce(t, op=op, group=g), data(rank, 37, dt))
                if e:
                    return "%s %s: %s" % (name, dt, e)
    report("allreduce-ops", allreduce_ops)

    def allreduce_local_refs():
        t = data(rank, 19, torch.bfloat16)
        dist.all_reduce(t, group=pg)
        want = sum(data(r, 19, torch.float32) for r in range(n)).to(torch.bfloat16)
        e = same(t, want)
        if e:
            return "bfloat16: " + e
        t = data(rank, 19, torch.float32)
        dist.all_reduce(t, op=dist.ReduceOp.AVG, group=pg)
        return same(t, sum(data(r, 19, torch.float32) for r in range(n)) / n) and "avg: " + \
            same(t, sum(data(r, 19, torch.float32) for r in range(n)) / n)
    report("allreduce-bf16-avg", allreduce_local_refs)

    report("allreduce-strided", lambda: vs_gloo(lambda t, g: dist.all_reduce(t, group=g),
                                                data(rank, 35, torch.float32).view(5, 7).t()))

    def allreduce_async():
        t = data(rank, 64, torch.float32)
        w = dist.all_reduce(t, group=pg, async_op=True)
        v = w.get_future().wait()
        w.wait()
        want = sum(data(r, 64, torch.float32) for r in range(n))
        return same(t, want) or same(v[0], want)
    report("allreduce-async", allreduce_async)

    report("allreduce-coalesced", lambda: vs_gloo(lambda a, b, g: dist.all_reduce_coalesced([a, b], group=g),
                                                  data(rank, 10, torch.float32), data(rank, 3, torch.float32, 1)))
    report("broadcast", lambda: vs_gloo(lambda t, g: dist.broadcast(t, 1 % n, group=g), data(rank, odd, torch.float64)))

    def reduce():
        root = n - 1
        a, b = both(lambda t, g: dist.reduce(t, root, group=g), data(rank, 13, torch.int64))
        return same(b[0], a[0]) if rank == root else same(b[0], data(rank, 13, torch.int64))
    report("reduce", reduce)

    def all_gather():
        outs = {}
        for name, g in (("gloo", gloo), ("coll", pg)):
            outs[name] = [torch.zeros(7, dtype=torch.float32) for _ in range(n)]
            dist.all_gather(outs[name], data(rank, 7, torch.float32), group=g)
        return same_all(outs["coll"], outs["gloo"])
    report("all_gather", all_gather)

    def all_gather_into_tensor():
        out = torch.zeros(n * 7, dtype=torch.int32)
        dist.all_gather_into_tensor(out, data(rank, 7, torch.int32), group=pg)
        return same(out, torch.cat([data(r, 7, torch.int32) for r in range(n)]))
    report("all_gather_into_tensor", all_gather_into_tensor)

    def reduce_scatter():
        k = 5
        out = torch.zeros(k, dtype=torch.float32)
        dist.reduce_scatter(out, [data(rank, k, torch.float32, j) for j in range(n)], group=pg)
        e = same(out, sum(data(r, k, torch.float32, rank) for r in range(n)))
        if e:
            return "list: " + e
        out = torch.zeros(k, dtype=torch.float32)
        dist.reduce_scatter_tensor(out, data(rank, n * k, torch.float32), group=pg)
        return same(out, sum(data(r, n * k, torch.float32) for r in range(n))[rank * k:(rank + 1) * k]) and \
            "tensor: " + same(out, sum(data(r, n * k, torch.float32) for r in range(n))[rank * k:(rank + 1) * k])
    report("reduce_scatter", reduce_scatter)

    def all_to_all_single():
        outs = {}
        for name, g in (("gloo", gloo), ("coll", pg)):
            outs[name] = torch.zeros(n * 4, dtype=torch.int64)
            dist.all_to_all_single(outs[name], torch.arange(n * 4) + 100 * rank, group=g)
        return same(outs["coll"], outs["gloo"])
    report("all_to_all_single", all_to_all_single)

    def all_to_all():
        outs = [torch.zeros(3, dtype=torch.float32) for _ in range(n)]
        dist.all_to_all(outs, [torch.full((3,), float(10 * rank + j)) for j in range(n)], group=pg)
        want = [torch.full((3,), float(10 * s + rank)) for s in range(n)]
        for x, y in zip(outs, want):
            e = same(x, y)
            if e:
                return e
    report("all_to_all", all_to_all)

    report("barrier", lambda: dist.barrier(group=pg))

    # --- point-to-point, and the collectives made of messages ---------------
    nxt, prv = (rank + 1) % n, (rank - 1) % n

    def send_recv():
        """A ring shift with blocking calls (even ranks send first), 1001
        float64 and 2 MiB of int8, in both groups."""
        outs = {}
        for name, g in (("gloo", gloo), ("coll", pg)):
            res = []
            for t in (data(rank, odd, torch.float64), data(rank, 2 << 20, torch.int8)):
                r = torch.zeros_like(t)
                if rank % 2 == 0:
                    dist.send(t, nxt, group=g)
                    dist.recv(r, prv, group=g)
                else:
                    dist.recv(r, prv, group=g)
                    dist.send(t, nxt, group=g)
                res.append(r)
            outs[name] = res
        return same_all(outs["coll"], outs["gloo"])
    report("send-recv", send_recv)

    def isend_irecv_batch():
        """Every rank sends 4 MiB both ways around the ring before it
        receives: isend/irecv, then batch_isend_irecv (pipeline parallelism's
        pattern), against gloo."""
        outs = {}
        for name, g in (("gloo", gloo), ("coll", pg)):
            a, b = data(rank, 1 << 20, torch.float32), data(rank, 1 << 20, torch.float32, 2)
            ra, rb = torch.zeros_like(a), torch.zeros_like(b)
            ws = [dist.isend(a, nxt, group=g), dist.isend(b, prv, group=g),
                  dist.irecv(ra, prv, group=g), dist.irecv(rb, nxt, group=g)]
            for w in ws:
                w.wait()
            c, rc = data(rank, 3000, torch.int64, 4), torch.zeros(3000, dtype=torch.int64)
            ops = [dist.P2POp(dist.isend, c, nxt, group=g), dist.P2POp(dist.irecv, rc, prv, group=g)]
            for w in dist.batch_isend_irecv(ops):
                w.wait()
            outs[name] = [ra, rb, rc]
        return same_all(outs["coll"], outs["gloo"])
    report("isend-irecv-batch", isend_irecv_batch)

    def p2p_tags():
        """Two messages received in the other order than sent, by tag; an
        empty tensor; and a bool tensor (messages carry any dtype)."""
        x, y = data(rank, 10, torch.int32), data(rank, 20, torch.int32, 1)
        rx, ry = torch.zeros_like(x), torch.zeros_like(y)
        w1, w2 = dist.isend(x, nxt, group=pg, tag=1), dist.isend(y, nxt, group=pg, tag=2)
        dist.recv(ry, prv, group=pg, tag=2)
        dist.recv(rx, prv, group=pg, tag=1)
        w1.wait()
        w2.wait()
        e = same(rx, data(prv, 10, torch.int32)) or same(ry, data(prv, 20, torch.int32, 1))
        if e:
            return e
        z, rz = torch.zeros(0), torch.ones(0)
        b, rb = torch.arange(9) % (rank + 2) == 0, torch.zeros(9, dtype=torch.bool)
        ws = [dist.isend(z, nxt, group=pg), dist.irecv(rz, prv, group=pg),
              dist.isend(b, nxt, group=pg), dist.irecv(rb, prv, group=pg)]
        for w in ws:
            w.wait()
        return same(rz, torch.ones(0)) or same(rb, torch.arange(9) % (prv + 2) == 0)
    report("p2p-tags", p2p_tags)

    def p2p_order():
        """Rank 0 sends and then joins an allreduce; rank 1 joins the
        allreduce and then receives: the messages' own communicator keeps
        the two apart."""
        t = data(rank, 100, torch.float32)
        s = torch.zeros(100)
        if rank == 0:
            w = dist.isend(t, 1, group=pg)
            dist.all_reduce(s, group=pg)
            w.wait()
        elif rank == 1:
            dist.all_reduce(s, group=pg)
            r = torch.zeros(100)
            dist.recv(r, 0, group=pg)
            e = same(r, data(0, 100, torch.float32))
            if e:
                return e
        else:
            dist.all_reduce(s, group=pg)
        return ""
    report("p2p-order", p2p_order)

    def gather():
        root = n - 1
        outs = {}
        for name, g in (("gloo", gloo), ("coll", pg)):
            lst = [torch.zeros(6, dtype=torch.int64) for _ in range(n)] if rank == root else None
            dist.gather(data(rank, 6, torch.int64), lst, dst=root, group=g)
            outs[name] = lst or []
        return same_all(outs["coll"], outs["gloo"])
    report("gather", gather)

    def scatter():
        root = 1 % n
        outs = {}
        for name, g in (("gloo", gloo), ("coll", pg)):
            out = torch.zeros(5, dtype=torch.float32)
            lst = [data(j, 5, torch.float32, 9) for j in range(n)] if rank == root else None
            dist.scatter(out, lst, src=root, group=g)
            outs[name] = out
        return same(outs["coll"], outs["gloo"])
    report("scatter", scatter)

    def all_to_all_uneven():
        """Rank r sends (r + p) % 3 + 1 rows of 4 to rank p (self included)."""
        ins = [(rank + p) % 3 + 1 for p in range(n)]
        outs_n = [(p + rank) % 3 + 1 for p in range(n)]
        res = {}
        for name, g in (("gloo", gloo), ("coll", pg)):
            inp = (torch.arange(sum(ins) * 4) + 1000 * rank).view(-1, 4)
            out = torch.zeros(sum(outs_n), 4, dtype=torch.int64)
            dist.all_to_all_single(out, inp, outs_n, ins, group=g)
            res[name] = out
        return same(res["coll"], res["gloo"])
    report("all_to_all_single-uneven", all_to_all_uneven)

    def all_gather_coalesced():
        outs = {}
        for name, g in (("gloo", gloo), ("coll", pg)):
            lists = [[torch.zeros(3), torch.zeros(2, 2)] for _ in range(n)]
            dist.all_gather_coalesced(lists, [data(rank, 3, torch.float32), data(rank, 4, torch.float32).view(2, 2)],
                                      group=g)
            outs[name] = [t for lst in lists for t in lst]
        return same_all(outs["coll"], outs["gloo"])
    report("all_gather_coalesced", all_gather_coalesced)

    def expect(exc, text, fn):
        try:
            fn()
        except exc as e:
            return "" if str(e).startswith(text) else "message %r, want it to start with %r" % (str(e), text)
        return "no %s raised" % exc.__name__

    report("error-dtype", lambda: expect(
        ValueError, "coll: tensors of dtype Bool are not supported",
        lambda: dist.all_reduce(torch.zeros(3, dtype=torch.bool), group=pg)))
    report("error-op", lambda: expect(
        ValueError, "coll: reduce op 5 is not supported (coll has SUM, PRODUCT, MIN, MAX; AVG as SUM / size)",
        lambda: dist.all_reduce(torch.zeros(3, dtype=torch.int32), op=dist.ReduceOp.BAND, group=pg)))
    report("error-splits", lambda: expect(
        ValueError, "coll: alltoall_base: the input splits add up to %d rows, the tensor has %d" % (2 * n + 1, 2 * n),
        lambda: dist.all_to_all_single(torch.zeros(2 * n), torch.zeros(2 * n), [2] * n, [3, 2] + [2] * (n - 2),
                                       group=pg)))
    report("error-p2p", lambda: expect(
        ValueError, "coll: send: rank %d is not another rank of the group" % rank,
        lambda: dist.send(torch.zeros(2), rank, group=pg)) or expect(
        ValueError, "coll: recv without a source rank is not supported",
        lambda: dist.recv(torch.zeros(2), group=pg)))
    report("error-algo", lambda: expect(
        RuntimeError, "coll: rank %d: allreduce: no algorithm for this collective (COLL_ERR_NOALGO): no allreduce "
        "algorithm named nosuch" % rank, lambda: nosuch_algo(plans)))
    report("error-gpu", lambda: "" if pg.gpu_unavailable().startswith(
        "coll: %s has no GPU plans" % os.path.abspath(plans)) else "gpu_unavailable() = %r" % pg.gpu_unavailable())
    dist.barrier()


def nosuch_algo(plans):
    """A group forcing an allreduce algorithm the library lacks: the error
    travels from the worker thread through Work.wait()."""
    cd.configure(plans=plans, algos={"allreduce": "nosuch"})
    g = dist.new_group(backend="coll")
    cd.configure(plans=plans)
    dist.all_reduce(torch.zeros(3), group=g)


if __name__ == "__main__":
    main()
