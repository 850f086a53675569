"""app.py - an mpi4py program for tests/pmpi.test, run with libcoll_mpi.so
in LD_PRELOAD under Debian's /usr/bin/python3 (python3-mpi4py).

The same idea as app.c from Python: the buffer-based collectives mpi4py
maps one to one onto MPI (Allreduce, Reduce, Reduce_scatter_block,
Reduce_scatter, Bcast, Allgather, Alltoall) with every datatype and op the
library serves, MPI_IN_PLACE and odd counts, on COMM_WORLD and a Dup of it;
then calls it must pass to MPI (a user op, a derived datatype, a split
communicator).  Inputs are a function of (rank, index), so every rank
computes the expected result itself: integers exactly, floats within the
summation bound.  Buffers are array.array objects (no numpy needed).
Prints "app.py: expect: served ..." (rank 0) in the statistics line's format
and "app.py: rank R: N checks, M wrong"; exits 1 when a check failed.
"""
import sys
from array import array

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, n = comm.Get_rank(), comm.Get_size()
checks = wrong = 0
FUNCS = ["MPI_Allreduce", "MPI_Reduce_scatter_block", "MPI_Reduce_scatter", "MPI_Allgather", "MPI_Bcast",
         "MPI_Reduce", "MPI_Alltoall"]
REASONS = ["communicator", "derived datatype", "datatype", "user op", "op", "send/recv types differ",
           "non-uniform counts", "invalid argument", "no algorithm", "coll not set up"]
served = dict.fromkeys(FUNCS, 0)
passed = dict.fromkeys(REASONS, 0)

# typecode, MPI datatype, float?, bytes
TYPES = [("b", MPI.INT8_T, False, 1), ("B", MPI.UINT8_T, False, 1), ("i", MPI.INT, False, 4),
         ("I", MPI.UNSIGNED, False, 4), ("q", MPI.INT64_T, False, 8), ("Q", MPI.UINT64_T, False, 8),
         ("l", MPI.LONG, False, 8), ("f", MPI.FLOAT, True, 4), ("d", MPI.DOUBLE, True, 8)]
OPS = [(MPI.SUM, "sum"), (MPI.PROD, "prod"), (MPI.MIN, "min"), (MPI.MAX, "max")]


def value(tc, isf, op, r, i):
    v = 1 + (i * 7 + r * 3) % 3
    if isf:
        v = 1 + 0.001 * ((i + r) % 97) if op == "prod" else v + 0.1 * ((i * 13 + r) % 10)
    if tc not in "BIQ" and (i + r) % 4 == 1:
        v = -v
    return array(tc, [v])[0]   # as the buffer holds it (float32 rounds)


def expect(tc, isf, op, i):
    vals = [value(tc, isf, op, r, i) for r in range(n)]
    if op == "sum":
        return sum(vals)
    if op == "prod":
        p = 1
        for v in vals:
            p *= v
        return p
    return min(vals) if op == "min" else max(vals)


def check(what, got, tc, isf, op, idx):
    """got[k] against the reduction of element idx[k]."""
    global checks, wrong
    checks += 1
    eps = 1.2e-7 if tc == "f" else 2.3e-16
    for k, i in enumerate(idx):
        want = expect(tc, isf, op, i)
        if isf and op in ("sum", "prod"):
            mag = sum(abs(value(tc, isf, op, r, i)) for r in range(n)) if op == "sum" else abs(want)
            ok = abs(got[k] - want) <= 2 * n * eps * mag
        else:
            ok = got[k] == (want if isf else int(want))
        if not ok:
            wrong += 1
            print(f"app.py: rank {rank}: {what}: element {i} is {got[k]}, expected {want}", file=sys.stderr)
            return


def reductions(c, tc, mt, isf, op, opname, count):
    inp = array(tc, [value(tc, isf, opname, rank, i) for i in range(count * n)])
    allidx = range(count)
    out = array(tc, bytes(len(inp) * inp.itemsize))
    c.Allreduce([inp, count, mt], [out, count, mt], op=op)
    served["MPI_Allreduce"] += 1
    check(f"Allreduce {tc} {opname} {count}", out, tc, isf, opname, allidx)
    buf = array(tc, inp[:count])
    c.Allreduce(MPI.IN_PLACE, [buf, mt], op=op)
    served["MPI_Allreduce"] += 1
    check(f"Allreduce in place {tc} {opname} {count}", buf, tc, isf, opname, allidx)
    root = count % n
    out = array(tc, bytes(count * inp.itemsize))
    c.Reduce([inp, count, mt], [out, mt] if rank == root else None, op=op, root=root)
    served["MPI_Reduce"] += 1
    if rank == root:
        check(f"Reduce {tc} {opname} {count}", out, tc, isf, opname, allidx)
    mine = range(rank * count, (rank + 1) * count)
    out = array(tc, bytes(count * inp.itemsize))
    c.Reduce_scatter_block([inp, mt], [out, mt], op=op)
    served["MPI_Reduce_scatter_block"] += 1
    check(f"Reduce_scatter_block {tc} {opname} {count}", out, tc, isf, opname, mine)
    buf = array(tc, inp)
    c.Reduce_scatter_block(MPI.IN_PLACE, [buf, mt], op=op)
    served["MPI_Reduce_scatter_block"] += 1
    check(f"Reduce_scatter_block in place {tc} {opname} {count}", buf[:count], tc, isf, opname, mine)
    out = array(tc, bytes(count * inp.itemsize))
    c.Reduce_scatter([inp, mt], [out, mt], recvcounts=[count] * n, op=op)
    served["MPI_Reduce_scatter"] += 1
    check(f"Reduce_scatter {tc} {opname} {count}", out, tc, isf, opname, mine)


def copies(c, tc, mt, count):
    global checks, wrong
    isz = array(tc).itemsize

    def item(r, i):
        return (r * 31 + i * 7 + 1) % 100

    inp = array(tc, [item(rank, i) for i in range(count * n)])
    root = (count + 1) % n
    buf = array(tc, inp[:count]) if rank == root else array(tc, bytes(count * isz))
    c.Bcast([buf, mt], root=root)
    served["MPI_Bcast"] += 1
    checks += 1
    if list(buf) != [item(root, i) for i in range(count)]:
        wrong += 1
        print(f"app.py: rank {rank}: Bcast {tc} {count} wrong", file=sys.stderr)
    out = array(tc, bytes(count * n * isz))
    c.Allgather([inp, count, mt], [out, mt])
    served["MPI_Allgather"] += 1
    checks += 1
    if list(out) != [item(r, i) for r in range(n) for i in range(count)]:
        wrong += 1
        print(f"app.py: rank {rank}: Allgather {tc} {count} wrong", file=sys.stderr)
    out = array(tc, bytes(count * n * isz))
    c.Alltoall([inp, mt], [out, mt])
    served["MPI_Alltoall"] += 1
    checks += 1
    if list(out) != [item(r, rank * count + i) for r in range(n) for i in range(count)]:
        wrong += 1
        print(f"app.py: rank {rank}: Alltoall {tc} {count} wrong", file=sys.stderr)


def passed_through():
    global checks, wrong
    v = array("i", [rank * 100 + i for i in range(16)])
    out = array("i", bytes(4 * 16))
    # a user op: a sum written in Python
    def pysum(a, b, dt):
        x, y = array("i"), array("i")
        x.frombytes(bytes(a))
        y.frombytes(bytes(b))
        b[:] = array("i", [p + q for p, q in zip(x, y)]).tobytes()

    mysum = MPI.Op.Create(pysum, commute=True)
    comm.Allreduce([v, MPI.INT], [out, MPI.INT], op=mysum)
    passed["user op"] += 1
    mysum.Free()
    checks += 1
    if list(out) != [sum(r * 100 + i for r in range(n)) for i in range(16)]:
        wrong += 1
        print(f"app.py: rank {rank}: Allreduce with a user op wrong", file=sys.stderr)
    # a derived datatype: every other int
    vec = MPI.INT.Create_vector(4, 1, 2).Commit()
    buf = array("i", v) if rank == 0 else array("i", bytes(4 * 16))
    comm.Bcast([buf, 1, vec], root=0)
    passed["derived datatype"] += 1
    vec.Free()
    checks += 1
    if [buf[i] for i in range(0, 8, 2)] != [i for i in range(0, 8, 2)]:
        wrong += 1
        print(f"app.py: rank {rank}: Bcast of a vector type wrong", file=sys.stderr)
    # a split communicator
    half = comm.Split(rank % 2, rank)
    half.Allreduce([v, MPI.INT], [out, MPI.INT], op=MPI.SUM)
    passed["communicator"] += 1
    checks += 1
    members = [r for r in range(n) if r % 2 == rank % 2]
    if list(out) != [sum(r * 100 + i for r in members) for i in range(16)]:
        wrong += 1
        print(f"app.py: rank {rank}: Allreduce on a split communicator wrong", file=sys.stderr)
    half.Free()


def main():
    dup = comm.Dup()
    comms = [comm, dup]
    turn = 0
    for tc, mt, isf, _ in TYPES:
        for op, opname in OPS:
            for count in (1, 7, 1003):
                reductions(comms[turn % 2], tc, mt, isf, op, opname, count)
                turn += 1
    for tc, mt, _, _ in TYPES + [("h", MPI.SHORT, False, 2)]:
        for count in (1, 1003):
            copies(comms[turn % 2], tc, mt, count)
            turn += 1
    dup.Free()
    passed_through()
    if rank == 0:
        s = ", ".join(f"{f} {served[f]}" for f in FUNCS if served[f])
        p = ", ".join(f"{r} {passed[r]}" for r in REASONS if passed[r])
        print(f"app.py: expect: served {sum(served.values())} ({s}), passed to MPI {sum(passed.values())} ({p})")
    print(f"app.py: rank {rank}: {checks} checks, {wrong} wrong")
    sys.stdout.flush()
    return 1 if wrong else 0


sys.exit(main())
