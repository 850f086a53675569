"""binding_check.py - the Python binding's collectives and errors, on every rank.

Run by tests/python.test under collrun (PYTHONPATH=runtime/python):

    collrun -np 3 python3 tests/python/binding_check.py PLANS_LIB STOREDIR

Every check prints one line, "ok NAME" or "FAIL NAME: what differed", and
the Tcl test of NAME asserts that every rank printed "ok NAME".  Inputs
are a function of (rank, element), so each rank computes the expected
result of a collective with numpy on its own; the values stay small
integers so that every dtype sums exactly, in any order.
"""

import array
import os
import sys
import time

import numpy as np

import coll

INTS = ["int8", "uint8", "int32", "uint32", "int64", "uint64"]
FLOATS = ["float16", "float32", "float64"]


def data(rank, count, dtype, base=0):
    """Rank r's input: small values that differ per rank and element."""
    v = (np.arange(count) * 7 + rank * 3 + base) % 5 + 1
    return v.astype(dtype)


def report(name, fn):
    try:
        err = fn()
    except Exception as e:   # the check's exception is its failure text
        err = "%s: %s" % (type(e).__name__, e)
    print("ok %s" % name if not err else "FAIL %s: %s" % (name, err), flush=True)


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(got, want):
        return "got %s %s %s, want %s %s %s" % (got.dtype, got.shape, got.ravel()[:8], want.dtype, want.shape,
                                                want.ravel()[:8])
    return ""


def all_inputs(n, count, dtype, base=0):
    return [data(r, count, dtype, base) for r in range(n)]


OPS = {"sum": lambda xs: np.sum(xs, axis=0), "prod": lambda xs: np.prod(xs, axis=0),
       "min": lambda xs: np.min(xs, axis=0), "max": lambda xs: np.max(xs, axis=0)}


class DirStore:
    """The smallest key-value store with set/get/delete_key: files in a
    directory (get polls), standing in for torch's stores."""

    def __init__(self, d):
        self.d = d
        os.makedirs(d, exist_ok=True)

    def set(self, k, v):
        p = os.path.join(self.d, k.replace("/", "_"))
        with open(p + ".tmp", "w") as f:
            f.write(v)
        os.replace(p + ".tmp", p)

    def get(self, k):
        p = os.path.join(self.d, k.replace("/", "_"))
        for _ in range(3000):
            if os.path.exists(p):
                with open(p) as f:
                    return f.read().encode()
            time.sleep(0.01)
        raise TimeoutError(k)

    def delete_key(self, k):
        os.unlink(os.path.join(self.d, k.replace("/", "_")))


def main():
    plans, storedir = sys.argv[1], sys.argv[2]
    c = coll.Comm.from_env(plans=plans)
    r, n = c.rank, c.nranks
    odd = 1001   # not a multiple of any chunk count

    # allreduce: every dtype with sum, then the other ops
    def allreduce_dtypes():
        for dt in INTS + FLOATS:
            e = same(c.allreduce(data(r, odd, dt)), OPS["sum"](all_inputs(n, odd, dt)).astype(dt))
            if e:
                return dt + ": " + e
    report("allreduce-dtypes", allreduce_dtypes)

    def allreduce_ops():
        for op in ("prod", "min", "max"):
            for dt in ("int8", "uint32", "float16", "float64"):
                e = same(c.allreduce(data(r, 37, dt), op=op), OPS[op](all_inputs(n, 37, dt)).astype(dt))
                if e:
                    return "%s %s: %s" % (op, dt, e)
    report("allreduce-ops", allreduce_ops)

    def allreduce_inplace():
        x = data(r, odd, "float32")
        y = c.allreduce_(x)
        return ("returned another object" if y is not x else "") or same(x, OPS["sum"](all_inputs(n, odd, "float32")))
    report("allreduce-inplace", allreduce_inplace)

    def allreduce_bf16():
        # bfloat16 has no buffer format: uint16 bit patterns with dtype=
        f32 = data(r, 21, "float32")
        bits = (f32.view(np.uint32) >> 16).astype(np.uint16)
        got = c.allreduce(bits, dtype="bfloat16")
        want = (OPS["sum"](all_inputs(n, 21, "float32")).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
        return same(np.frombuffer(got, dtype=np.uint16), want)
    report("allreduce-bfloat16", allreduce_bf16)

    def allreduce_buffers():
        # array.array, a read-only bytes sender and a count of 0
        a = array.array("d", data(r, 5, "float64").tolist())
        got = c.allreduce(a)
        e = same(np.frombuffer(got, dtype=np.float64), OPS["sum"](all_inputs(n, 5, "float64")))
        if e:
            return "array.array: " + e
        got = c.allreduce(bytes(data(r, 6, "uint8")))
        e = same(np.frombuffer(got, dtype=np.uint8), OPS["sum"](all_inputs(n, 6, "uint8")).astype(np.uint8))
        if e:
            return "bytes: " + e
        return same(c.allreduce(np.zeros(0, dtype=np.float32)), np.zeros(0, dtype=np.float32))
    report("allreduce-buffers", allreduce_buffers)

    def allreduce_algo():
        c.allreduce(data(r, 9, "float32"), algo="ring")
        return "" if c.last_algo == "ring" else "last_algo %r" % c.last_algo
    report("allreduce-algo", allreduce_algo)

    def reduce_scatter():
        k = 7
        for dt in ("int32", "float32", "float64"):
            want = OPS["sum"](all_inputs(n, n * k, dt))[r * k:(r + 1) * k]
            e = same(c.reduce_scatter(data(r, n * k, dt)), want.astype(dt))
            if e:
                return dt + ": " + e
            buf = data(r, n * k, dt)
            sl = c.reduce_scatter_(buf)
            e = same(buf[sl], want.astype(dt))
            if e:
                return dt + " in place: " + e
    report("reduce_scatter", reduce_scatter)

    def allgather():
        k = 5
        for dt in ("uint8", "int64", "float16"):
            want = np.stack(all_inputs(n, k, dt))
            e = same(c.allgather(data(r, k, dt)), want)
            if e:
                return dt + ": " + e
            buf = np.zeros(n * k, dtype=dt)
            buf[r * k:(r + 1) * k] = data(r, k, dt)
            c.allgather_(buf)
            e = same(buf, want.ravel())
            if e:
                return dt + " in place: " + e
    report("allgather", allgather)

    def broadcast():
        root = 1 % n
        want = data(root, odd, "float64")
        e = same(c.broadcast(data(r, odd, "float64"), root=root), want)
        if e:
            return e
        buf = data(r, odd, "float64")
        c.broadcast_(buf, root=root)
        return same(buf, want) and "in place: " + same(buf, want)
    report("broadcast", broadcast)

    def reduce():
        root = n - 1
        want = OPS["max"](all_inputs(n, 13, "int32"))
        got = c.reduce(data(r, 13, "int32"), root=root, op="max")
        e = same(got, want) if r == root else ("" if got is None else "non-root got %r" % (got,))
        if e:
            return e
        buf = data(r, 13, "int32")
        c.reduce_(buf, root=root, op="max")
        return same(buf, want if r == root else data(r, 13, "int32"))
    report("reduce", reduce)

    def alltoall():
        k = 3
        send = np.arange(n * k, dtype=np.int64) + 100 * r        # block j (for rank j): 100 r + j k ..
        want = np.concatenate([np.arange(r * k, (r + 1) * k) + 100 * s for s in range(n)]).astype(np.int64)
        e = same(c.alltoall(send), want)
        if e:
            return e
        buf = send.copy()
        c.alltoall_(buf)
        return same(buf, want) and "in place: " + same(buf, want)
    report("alltoall", alltoall)

    report("barrier", lambda: c.barrier())

    def messages():
        """A ring shift with sendrecv (1001 float64), then send/recv in rank
        order with two tags received the other way round."""
        nxt, prv = (r + 1) % n, (r - 1) % n
        got = c.sendrecv(data(r, 1001, "float64"), nxt, np.zeros(1001), prv)
        e = same(got, data(prv, 1001, "float64"))
        if e:
            return "sendrecv: " + e
        if n < 2:
            return ""
        if r == 0:
            c.send(data(0, 7, "int32"), 1, tag=1)
            c.send(data(0, 5, "int32", 1), 1, tag=2)
        elif r == 1:
            b = c.recv(np.zeros(5, dtype=np.int32), 0, tag=2)
            a = c.recv(np.zeros(7, dtype=np.int32), 0, tag=1)
            return same(a, data(0, 7, "int32")) or same(b, data(0, 5, "int32", 1))
        return ""
    report("messages", messages)

    def from_store():
        with coll.Comm.from_store(DirStore(storedir), r, n, plans=plans) as c2:
            return same(c2.allreduce(data(r, 11, "float32")), OPS["sum"](all_inputs(n, 11, "float32")))
    report("from_store", from_store)

    # errors: the exception and its text, the same on every rank
    def expect(exc, text, fn):
        try:
            fn()
        except exc as e:
            return "" if str(e).startswith(text) else "message %r, want it to start with %r" % (str(e), text)
        return "no %s raised" % exc.__name__

    report("error-noalgo", lambda: expect(
        coll.CollError, "allreduce: no algorithm for this collective (COLL_ERR_NOALGO): no allreduce algorithm "
        "named nosuch for %d ranks in the plan set" % n,
        lambda: c.allreduce(np.zeros(4, np.float32), algo="nosuch")))

    def error_fields():
        try:
            c.allreduce(np.zeros(4, np.float32), algo="nosuch")
        except coll.CollError as e:
            got = (e.code, e.name, e.call, e.detail)
            want = (8, "COLL_ERR_NOALGO", "allreduce", "no allreduce algorithm named nosuch for %d ranks in the "
                    "plan set" % n)
            return "" if got == want else "fields %r, want %r" % (got, want)
        return "no CollError"
    report("error-fields", error_fields)

    report("error-dtype", lambda: expect(
        TypeError, "buffer format 'h' (2-byte items) has no coll dtype", lambda: c.allreduce(np.zeros(4, np.int16))))
    # a strided sender is packed into a copy; a strided receiver is an error
    report("strided-send", lambda: same(c.allreduce(data(r, 10, "float64")[::2]),
                                        OPS["sum"](all_inputs(n, 10, "float64"))[::2]))
    report("error-contiguous", lambda: expect(
        ValueError, "buffer must be a writable C-contiguous buffer: ndarray is not C-contiguous",
        lambda: c.allreduce_(np.arange(10.0)[::2])))
    report("error-count", lambda: expect(
        ValueError, "allreduce: recv buffer has 4 elements, needs 5",
        lambda: c.allreduce(np.zeros(5, np.float32), np.zeros(4, np.float32))))
    report("error-split", lambda: expect(
        ValueError, "alltoall: %d elements do not split into %d equal blocks" % (n + 1, n),
        lambda: c.alltoall(np.zeros(n + 1, np.float32))))
    report("error-readonly", lambda: expect(
        ValueError, "buffer must be a writable C-contiguous buffer", lambda: c.allreduce_(b"abc")))
    report("error-runtime", lambda: expect(
        coll.LibraryNotFound, "libcollrt.so: the runtime= argument names /nonexistent/libcollrt.so, which does "
        "not exist", lambda: coll.Comm(plans=plans, runtime="/nonexistent/libcollrt.so")))
    report("error-plans", lambda: expect(
        coll.LibraryNotFound, "%s has no plan set nosuch_plans" % os.path.abspath(plans),
        lambda: coll.Plans(plans, symbol="nosuch_plans")))
    # a plan set for n ranks in a job of one: coll_init's error, before any rendezvous
    report("error-init", lambda: expect(
        coll.CollError, "coll_init: no algorithm for this collective (COLL_ERR_NOALGO): rank 0: plan set '%s' is "
        "for %d ranks, job has 1" % (coll.Plans(plans).name, n),
        lambda: coll.Comm(plans=plans, rank=0, nranks=1, addr="127.0.0.1:1")))
    c.close()
    report("closed", lambda: expect(coll.CollError, "comm: communicator closed", lambda: c.barrier()))


if __name__ == "__main__":
    main()
