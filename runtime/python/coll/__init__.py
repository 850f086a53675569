"""coll - Python binding of libcollrt, the coll runtime (ctypes, no compiled code).

    import numpy as np, coll
    comm = coll.Comm.from_env(plans="out/liblab4.so")   # under collrun, or:
    comm = coll.Comm.from_store(store, rank, nranks, plans="out/liblab4.so")
    y = comm.allreduce(np.arange(10, dtype=np.float32))  # or comm.allreduce_(x) in place

The package is layered: _native.py finds and loads libcollrt.so and the
plan sets of libraries made by `collc build`; comm.py is the communicator
and its collectives on numpy arrays and other buffers; bootstrap.py carries
the rendezvous address and secret through a key-value store; distributed.py
is the torch.distributed backend "coll" (a C++ ProcessGroup built by
`make`, imported only when torch is).  Errors from the runtime are
CollError, with coll_strerror and coll_last_error in the message.
"""

from ._native import CollError, LibraryNotFound, Plans, load_runtime, runtime_candidates
from .comm import (ALLGATHER, ALLREDUCE, ALLTOALL, BROADCAST, DTYPES, KINDS, MAX, MIN, OPS, PROD, REDUCE,
                   REDUCE_SCATTER, SUM, Comm, dtype_of_format)

__all__ = ["CollError", "LibraryNotFound", "Plans", "Comm", "load_runtime", "runtime_candidates",
           "dtype_of_format", "DTYPES", "OPS", "KINDS", "SUM", "PROD", "MIN", "MAX", "ALLREDUCE",
           "REDUCE_SCATTER", "ALLGATHER", "BROADCAST", "REDUCE", "ALLTOALL"]
