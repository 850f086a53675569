"""roots_check.py - ranks that disagree on a rooted call, and integer
arguments out of range, through the Python binding and the torch backend.

Run by tests/harden_roots.test under collrun (PYTHONPATH=runtime/python):

    collrun -np 2 /usr/bin/python3 tests/python/roots_check.py MODE PLANS_LIB

MODE:
  broadcast, reduce   every rank names itself the root of comm.broadcast_ /
                      comm.reduce_: each must raise CollError
                      COLL_ERR_MISMATCH naming both roots, at once (the
                      communicator's timeout is 30 s)
  args                the binding's integer and timeout arguments out of
                      range: a ValueError or TypeError naming the argument
                      and the value, before anything reaches C (a broadcast
                      afterwards still works)
  torch-broadcast, torch-reduce   the same disagreement through
                      torch.distributed on a "coll" process group
  torch-args          the backend's roots and straggler ranks out of range
One line per check: "ok NAME" or "FAIL NAME: ...".
"""

import datetime
import os
import re
import sys
import time

import coll


def report(name, fn):
    try:
        err = fn()
    except Exception as e:
        err = "%s: %s" % (type(e).__name__, e)
    print("ok %s" % name if not err else "FAIL %s: %s" % (name, err), flush=True)


def refused(exc, pattern, fn):
    """"" when fn() raises exc with a message matching pattern, else why not."""
    try:
        fn()
    except exc as e:
        return "" if re.search(pattern, str(e)) else "message %r does not match %r" % (str(e), pattern)
    except Exception as e:
        return "raised %s (%s), not %s" % (type(e).__name__, e, exc.__name__)
    return "no error"


def disagree(call, rank, n, fn):
    """fn() must fail at once with the roots named (each rank passed its own)."""
    t0 = time.monotonic()
    try:
        fn()
    except Exception as e:
        took = time.monotonic() - t0
        other = 1 - rank if n == 2 else None
        want = r"%s: root mismatch: rank %d passed %d, rank %d passed %d" % (call, other, other, rank, rank)
        if not re.search(want, str(e)):
            return "%s does not say %r" % (e, want)
        if "COLL_ERR_MISMATCH" not in str(e):
            return "not COLL_ERR_MISMATCH: %s" % e
        return "" if took < 10 else "took %.1f s" % took
    return "returned normally"


def binding(mode, plans, rank, n):
    import numpy as np
    if mode == "args":
        # refused before anything is loaded or joined
        report("nranks-negative", lambda: refused(ValueError, r"^nranks=-3 is out of range: expected 1\.\.65536$",
                                                  lambda: coll.Comm(plans=plans, nranks=-3)))
        t0 = time.monotonic()
        report("nranks-huge", lambda: refused(ValueError, r"^nranks=2147483647 is out of range",
                                              lambda: coll.Comm(plans=plans, nranks=2147483647))
               or ("took %.1f s" % (time.monotonic() - t0) if time.monotonic() - t0 > 2 else ""))
        report("rank-huge", lambda: refused(ValueError, r"^rank=1099511627776 is out of range: expected 0\.\.1$",
                                            lambda: coll.Comm(plans=plans, rank=2 ** 40, nranks=2)))
        report("rank-float", lambda: refused(TypeError, r"^rank must be an integer, not float",
                                             lambda: coll.Comm(plans=plans, rank=0.5, nranks=2)))
        report("timeout-nan", lambda: refused(ValueError, r"^timeout=nan is out of range",
                                              lambda: coll.Comm(plans=plans, timeout=float("nan"))))
        report("store-rank", lambda: refused(ValueError, r"^rank=5 is out of range: expected 0\.\.1$",
                                             lambda: coll.Comm.from_store(None, 5, 2, plans=plans)))
    comm = coll.Comm.from_env(plans=plans, timeout=30)
    buf = np.full(5, rank + 1, dtype=np.int32)
    if mode == "broadcast":
        report("binding-broadcast", lambda: disagree("broadcast", rank, n, lambda: comm.broadcast_(buf, root=rank)))
    elif mode == "reduce":
        report("binding-reduce", lambda: disagree("reduce", rank, n, lambda: comm.reduce_(buf, root=rank)))
    elif mode == "args":
        report("root-huge", lambda: refused(ValueError, r"^root=1099511627776 is out of range: expected 0\.\.1$",
                                            lambda: comm.broadcast_(buf, root=2 ** 40)))
        report("root-negative", lambda: refused(ValueError, r"^root=-1 is out of range",
                                                lambda: comm.reduce(buf, root=-1)))
        report("root-reduce-huge", lambda: refused(ValueError, r"^root=4294967296 is out of range",
                                                   lambda: comm.reduce_(buf, root=2 ** 32)))
        report("straggler-huge", lambda: refused(ValueError, r"^rank=1099511627776 is out of range: expected -1\.\.1$",
                                                 lambda: comm.set_straggler(2 ** 40)))
        report("emulate-inf", lambda: refused(ValueError, r"^delay_ms=inf is out of range",
                                              lambda: comm.emulate_straggler(0, float("inf"))))
        report("set-timeout-inf", lambda: refused(ValueError, r"^seconds=inf is out of range",
                                                  lambda: comm.set_timeout(float("inf"))))
        report("choose-negative", lambda: refused(ValueError, r"^nbytes=-1 is out of range",
                                                  lambda: comm.choose_algo("allreduce", -1)))
        # none of that reached the peers: a broadcast from rank 1 still works
        def still_works():
            b = np.full(5, rank + 1, dtype=np.int32)
            comm.broadcast_(b, root=1)
            return "" if (b == 2).all() else "got %s" % b.tolist()
        report("after-refusals", still_works)
    comm.close()


def torch_mode(mode, plans, rank, n):
    import torch
    import torch.distributed as dist
    import coll.distributed as cd
    cd.configure(plans=plans)
    host, port = os.environ["COLL_ADDR"].rsplit(":", 1)
    store = dist.TCPStore(host, int(port), n, rank == 0, timeout=datetime.timedelta(seconds=60))
    os.environ["COLL_TIMEOUT"] = "30"
    dist.init_process_group("coll", store=store, rank=rank, world_size=n)
    t = torch.full((5,), float(rank + 1))
    if mode == "torch-broadcast":
        report("torch-broadcast", lambda: disagree("broadcast", rank, n, lambda: dist.broadcast(t, src=rank)))
    elif mode == "torch-reduce":
        report("torch-reduce", lambda: disagree("reduce", rank, n, lambda: dist.reduce(t, dst=rank)))
    else:
        pg = dist.distributed_c10d._get_default_group()
        report("torch-root-huge", lambda: refused(Exception, r"root 1099511627776 out of range",
                                                  lambda: dist.broadcast(t, src=2 ** 40)))
        report("torch-emulate-huge", lambda: refused(ValueError, r"rank=1099511627776 is out of range: expected -1\.\.1",
                                                     lambda: pg.emulate_straggler(2 ** 40, 1.0)))

        def still_works():
            x = torch.full((5,), float(rank + 1))
            dist.broadcast(x, src=1)
            return "" if bool((x == 2).all()) else "got %s" % x.tolist()
        report("torch-after-refusals", still_works)
        dist.barrier()   # every rank done before rank 0's store goes away


def main():
    mode, plans = sys.argv[1], sys.argv[2]
    rank, n = int(os.environ["COLL_RANK"]), int(os.environ["COLL_NRANKS"])
    if mode.startswith("torch"):
        torch_mode(mode, plans, rank, n)
    else:
        binding(mode, plans, rank, n)


if __name__ == "__main__":
    main()
