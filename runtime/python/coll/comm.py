"""comm.py - the communicator and its collectives on Python buffers.

The user-facing layer of the binding: Comm wraps one coll_comm of
libcollrt.so and runs every collective of coll_kinds.def through the one
entry point coll_collective, on numpy arrays or anything else that exports
the buffer protocol (bytearray, memoryview, array.array, ...).  Element
types come from the buffer's struct-module format (numpy arrays export one
too) or from an explicit dtype= (the only way to say bfloat16, which has no
format character).  Each collective has an out-of-place form,
name(send, recv=None, ...), which allocates recv when it is not given
(a numpy array when send is one, else a memoryview over a bytearray), and
an in-place form name_(buf, ...) laid out as coll.h says.

Buffers are pinned with PyObject_GetBuffer for the length of the call, so
read-only senders (bytes) need no copy and the pointer stays valid; the
call itself runs with the GIL released (ctypes does that for CDLL
functions), so other Python threads keep running while a rank waits.
"""

import ctypes
import math
import operator
import os
import struct

from . import _native
from ._native import CollError, Config, Plans, check, load_runtime

try:   # optional: numpy arrays get numpy results
    import numpy as _np
except ImportError:   # pragma: no cover - exercised where numpy is absent
    _np = None

# coll_dtype numbers (coll.h) with their sizes.
INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64 = range(10)
DTYPES = {"int8": INT8, "uint8": UINT8, "int32": INT32, "uint32": UINT32, "int64": INT64,
          "uint64": UINT64, "float16": FLOAT16, "bfloat16": BFLOAT16, "float32": FLOAT32,
          "float64": FLOAT64}
_DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
_DTYPE_SIZE = {INT8: 1, UINT8: 1, INT32: 4, UINT32: 4, INT64: 8, UINT64: 8, FLOAT16: 2,
               BFLOAT16: 2, FLOAT32: 4, FLOAT64: 8}
# the format a freshly allocated memoryview gets for each dtype
_DTYPE_FORMAT = {INT8: "b", UINT8: "B", INT32: "i", UINT32: "I", INT64: "q", UINT64: "Q",
                 FLOAT16: "e", BFLOAT16: "H", FLOAT32: "f", FLOAT64: "d"}

# coll_op and coll_kind numbers (coll.h, coll_kinds.def).
SUM, PROD, MIN, MAX = range(4)
OPS = {"sum": SUM, "prod": PROD, "min": MIN, "max": MAX}
ALLREDUCE, REDUCE_SCATTER, ALLGATHER, BROADCAST, REDUCE, ALLTOALL = range(6)
KINDS = {"allreduce": ALLREDUCE, "reduce_scatter": REDUCE_SCATTER, "allgather": ALLGATHER,
         "broadcast": BROADCAST, "reduce": REDUCE, "alltoall": ALLTOALL}


# Integer arguments are checked here, before ctypes converts them: it keeps
# the low bits of an int too wide for a C int, so a root of 2**40 became 0.
# Ranks fit the wire header's 16-bit rank fields (runtime/rt.h): at most
# MAX_RANKS ranks.  Timeouts are seconds, finite, at most MAX_TIMEOUT (the
# runtime's own limit: rt_timeout_ms, COLL_TIMEOUT); 0 or less waits forever.
MAX_RANKS = 65536
MAX_TIMEOUT = 1e7
_UINT64_MAX = 2 ** 64 - 1


def _int_arg(name, value, lo, hi):
    """value as an int in lo..hi, else TypeError / ValueError naming the
    argument and the value given."""
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an integer, not %s (%r)" % (name, type(value).__name__, value)) from None
    if not lo <= v <= hi:
        raise ValueError("%s=%d is out of range: expected %d..%d" % (name, v, lo, hi))
    return v


def _seconds_arg(name, value, hi=MAX_TIMEOUT):
    """value as a finite float of at most hi seconds (negative and 0 pass:
    they mean "no timeout" wherever a timeout is taken)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError("%s must be a number of seconds, not %s (%r)" % (name, type(value).__name__, value)) \
            from None
    if not math.isfinite(v) or v > hi:
        raise ValueError("%s=%r is out of range: expected a finite number of seconds, at most %g (0 or less: "
                         "no timeout)" % (name, value, hi))
    return v


def dtype_of_format(fmt, itemsize):
    """The coll dtype of a struct-module buffer format (numpy's included),
    or raise TypeError saying which formats coll can reduce.  Signed and
    unsigned integers go by their size ('l' is 8 bytes on LP64 Linux)."""
    f = fmt or "B"
    if f[0] in "@=<":
        f = f[1:]
    elif f[0] in ">!":
        raise TypeError("buffer format %r is big-endian; coll reduces native (little-endian) data" % fmt)
    if len(f) == 1 and f in "bBcqQlLnNiIhHefd?":
        if f in "bc":
            return INT8 if f == "b" else UINT8
        if f == "B":
            return UINT8
        if f in "efd":
            return {"e": FLOAT16, "f": FLOAT32, "d": FLOAT64}[f]
        size = struct.calcsize(f)
        signed = f.islower()
        if size == 4:
            return INT32 if signed else UINT32
        if size == 8:
            return INT64 if signed else UINT64
    raise TypeError("buffer format %r (%d-byte items) has no coll dtype; coll has int8, uint8, int32, "
                    "uint32, int64, uint64, float16, bfloat16 (pass dtype='bfloat16' with 2-byte items), "
                    "float32 and float64" % (fmt, itemsize))


def _dtype_arg(dtype):
    if dtype is None:
        return None
    if isinstance(dtype, int) and dtype in _DTYPE_SIZE:
        return dtype
    name = getattr(dtype, "name", dtype)   # numpy dtypes and types have .name
    if isinstance(dtype, type) and _np is not None:
        name = _np.dtype(dtype).name
    if name in DTYPES:
        return DTYPES[name]
    raise TypeError("unknown dtype %r (expected one of %s)" % (dtype, ", ".join(DTYPES)))


def _op_arg(op):
    if isinstance(op, int) and op in (SUM, PROD, MIN, MAX):
        return op
    if isinstance(op, str) and op.lower() in OPS:
        return OPS[op.lower()]
    raise ValueError("unknown op %r (expected sum, prod, min or max)" % (op,))


class _PyBuffer(ctypes.Structure):
    """Py_buffer (CPython's buffer-protocol view), for PyObject_GetBuffer."""
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


_GetBuffer = ctypes.pythonapi.PyObject_GetBuffer
_GetBuffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_GetBuffer.restype = ctypes.c_int
_ReleaseBuffer = ctypes.pythonapi.PyBuffer_Release
_ReleaseBuffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_ReleaseBuffer.restype = None
_PyBUF_WRITABLE, _PyBUF_FORMAT, _PyBUF_C_CONTIGUOUS = 0x1, 0x4, 0x38


class _Pinned:
    """A buffer held for one call: address, bytes, element count, dtype."""

    def __init__(self, obj, what, writable, dtype):
        self.view = _PyBuffer()
        flags = _PyBUF_FORMAT | _PyBUF_C_CONTIGUOUS | (_PyBUF_WRITABLE if writable else 0)
        try:
            _GetBuffer(obj, ctypes.byref(self.view), flags)
        except (BufferError, ValueError) as e:   # numpy raises ValueError
            need = "a writable C-contiguous buffer" if writable else "a C-contiguous buffer"
            raise ValueError("%s must be %s: %s" % (what, need, e)) from None
        except TypeError:
            raise TypeError("%s must support the buffer protocol (numpy array, bytearray, memoryview, ...), "
                            "not %s" % (what, type(obj).__name__)) from None
        self.held = True
        v = self.view
        fmt = v.format.decode() if v.format else "B"
        self.dtype = dtype if dtype is not None else dtype_of_format(fmt, v.itemsize)
        size = _DTYPE_SIZE[self.dtype]
        if v.len % size or (dtype is not None and v.itemsize != size and v.itemsize != 1):
            self.release()
            raise TypeError("%s: %d-byte items do not make %s elements" % (what, v.itemsize,
                                                                           _DTYPE_NAMES[self.dtype]))
        self.nbytes, self.count, self.addr = v.len, v.len // size, v.buf

    def release(self):
        if self.held:
            _ReleaseBuffer(ctypes.byref(self.view))
            self.held = False


def _is_numpy(obj):
    return _np is not None and isinstance(obj, _np.ndarray)


def _new_like(send, dt, count, shape=None):
    """A fresh result buffer of `count` elements of dt: numpy when send is."""
    if _is_numpy(send) and dt != BFLOAT16:
        return _np.empty(shape if shape is not None else (count,), dtype=send.dtype)
    return memoryview(bytearray(count * _DTYPE_SIZE[dt])).cast(_DTYPE_FORMAT[dt])


class Comm:
    """A coll communicator: one per process and group of ranks.

    Comm(plans=None, rank=None, nranks=None, addr=None, secret=None,
         transport=None, timeout=None, runtime=None)

    plans: a Plans, or the path of a lib<cluster>.so from `collc build`
    (default $COLL_PLANS; without plans only barrier() works).  rank,
    nranks, addr ("host:port" of rank 0's rendezvous), secret, transport
    ("shm", "tcp", "auto") and timeout (seconds of inactivity per call)
    default to COLL_RANK, COLL_NRANKS, COLL_ADDR, COLL_SECRET,
    COLL_TRANSPORT and COLL_TIMEOUT, as collrun sets them (see from_env
    and, for a key-value store, from_store).  runtime: path of
    libcollrt.so (default: see _native.load_runtime).  Blocks until every
    rank joined; raises CollError (BOOTSTRAP, AUTH, TIMEOUT, PLAN, ...)."""

    def __init__(self, plans=None, rank=None, nranks=None, addr=None, secret=None, transport=None,
                 timeout=None, runtime=None):
        # every number checked before anything is loaded or joined
        if nranks is not None:
            nranks = _int_arg("nranks", nranks, 1, MAX_RANKS)
        if rank is not None:
            rank = _int_arg("rank", rank, 0, (nranks if nranks is not None else MAX_RANKS) - 1)
        if timeout is not None:
            timeout = _seconds_arg("timeout", timeout)
        self._lib = load_runtime(runtime)
        if plans is None and os.environ.get(_native.PLANS_ENV):
            plans = Plans()
        if plans is not None and not isinstance(plans, Plans):
            plans = Plans(plans)
        self.plans = plans
        cfg = Config(-1 if rank is None else rank, 0 if nranks is None else nranks,
                     None if addr is None else addr.encode(), None if secret is None else secret.encode(),
                     None if transport is None else transport.encode(),
                     0.0 if timeout is None else (float(timeout) if timeout > 0 else -1.0))
        self._keep = cfg   # the strings must outlive coll_init
        self._c = ctypes.c_void_p()
        rc = self._lib.coll_init(ctypes.byref(self._c), plans.address if plans else None, ctypes.byref(cfg))
        if rc:
            c = self._c.value
            self._c = ctypes.c_void_p()
            if c:
                self._lib.coll_finalize(c)
            check(self._lib, None, "coll_init", rc)

    @classmethod
    def from_env(cls, plans=None, runtime=None, **kw):
        """A communicator from COLL_RANK, COLL_NRANKS, COLL_ADDR, COLL_SECRET
        (what collrun sets); keyword arguments override single fields."""
        return cls(plans=plans, runtime=runtime, **kw)

    @classmethod
    def from_store(cls, store, rank, nranks, plans=None, prefix="coll", host=None, runtime=None, **kw):
        """A communicator whose rendezvous address and secret travel through a
        key-value store with set/get (torch.distributed.TCPStore,
        FileStore, HashStore, or any object with those methods): rank 0
        reserves a port, makes a random secret and publishes both; the
        others read them.  See bootstrap.py for the keys and the host."""
        from . import bootstrap
        nranks = _int_arg("nranks", nranks, 1, MAX_RANKS)
        rank = _int_arg("rank", rank, 0, nranks - 1)
        with bootstrap.rendezvous(store, rank, nranks, prefix=prefix, host=host) as (addr, secret, done):
            comm = cls(plans=plans, rank=rank, nranks=nranks, addr=addr, secret=secret, runtime=runtime, **kw)
            done()
        return comm

    # --- state -------------------------------------------------------------
    def _ptr(self):
        if not self._c.value:
            raise CollError("comm", 12, "communicator closed", "close() was called")
        return self._c

    @property
    def rank(self):
        return self._lib.coll_rank(self._ptr())

    @property
    def nranks(self):
        return self._lib.coll_nranks(self._ptr())

    @property
    def transport(self):
        return self._lib.coll_transport_name(self._ptr()).decode()

    @property
    def last_algo(self):
        """The algorithm the latest collective ran (None before the first)."""
        a = self._lib.coll_last_algo(self._ptr())
        return a.decode() if a else None

    def choose_algo(self, kind, nbytes):
        """The algorithm the size table picks for `nbytes` of payload of
        collective `kind` ("allreduce", ...), or None."""
        a = self._lib.coll_choose_algo(self._ptr(), KINDS[kind], _int_arg("nbytes", nbytes, 0, _UINT64_MAX))
        return a.decode() if a else None

    def set_timeout(self, seconds):
        """The per-call inactivity timeout in seconds (0 or less: none)."""
        self._lib.coll_set_timeout(self._ptr(), _seconds_arg("seconds", seconds))

    def straggler(self):
        """(rank, delay_s) of the detected persistent straggler; rank -1: none."""
        r, d = ctypes.c_int(), ctypes.c_double()
        check(self._lib, self._c, "straggler", self._lib.coll_straggler(self._ptr(), ctypes.byref(r), ctypes.byref(d)))
        return r.value, d.value

    def set_straggler(self, rank):
        """Declare the persistent straggler (-1: none); every rank must call it."""
        check(self._lib, self._c, "set_straggler",
              self._lib.coll_set_straggler(self._ptr(), _int_arg("rank", rank, -1, self.nranks - 1)))

    def emulate_straggler(self, rank, delay_ms):
        """Rank `rank` sleeps delay_ms before each collective (experiments)."""
        rank = _int_arg("rank", rank, -1, self.nranks - 1)
        delay_ms = _seconds_arg("delay_ms", delay_ms, MAX_TIMEOUT * 1000)
        if delay_ms < 0:
            raise ValueError("delay_ms=%r is out of range: expected 0 or more milliseconds" % (delay_ms,))
        check(self._lib, self._c, "emulate_straggler", self._lib.coll_emulate_straggler(self._ptr(), rank, delay_ms))

    def close(self):
        """Free the communicator (does not wait for peers); idempotent."""
        if self._c.value:
            self._lib.coll_finalize(self._c)
            self._c = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # --- the one entry point -------------------------------------------------
    def _run(self, kind, send, recv, count, dt, op=SUM, root=0, algo=None):
        """coll_collective on pinned buffers (either may be None)."""
        name = [k for k, v in KINDS.items() if v == kind][0]
        rc = self._lib.coll_collective(self._ptr(), kind, algo.encode() if algo else None,
                                       send.addr if send else None, recv.addr if recv else None,
                                       count, dt, op, root)
        check(self._lib, self._c, name, rc)

    def _call(self, kind, send, recv, dtype, op, root, algo, unit_of, inplace=None):
        """Pin send/recv, derive the API count with unit_of(send_count,
        recv_count) and run.  In place (send is recv), inplace(count)
        gives the element offsets (send, recv) into the one buffer: coll.h
        lays allgather's contribution at rank*count, reduce_scatter's
        result likewise."""
        dtype = _dtype_arg(dtype)
        op = _op_arg(op)
        pins = []
        try:
            if send is recv and send is not None:
                b = _Pinned(recv, "buffer", True, dtype)
                pins.append(b)
                count = unit_of(b.count, b.count)
                s = r = b
                if inplace is not None:
                    so, ro = inplace(count)
                    s, r = _Offset(b, so), _Offset(b, ro)
            else:
                if _is_numpy(send) and not send.flags.c_contiguous:
                    send = _np.ascontiguousarray(send)   # only read: a packed copy does
                s = _Pinned(send, "send buffer", False, dtype) if send is not None else None
                if s is not None:
                    pins.append(s)
                r = _Pinned(recv, "recv buffer", True, dtype if dtype is not None else (s.dtype if s else None)) \
                    if recv is not None else None
                if r is not None:
                    pins.append(r)
                if s is not None and r is not None and s.dtype != r.dtype:
                    raise TypeError("send buffer is %s but recv buffer is %s" % (_DTYPE_NAMES[s.dtype],
                                                                                 _DTYPE_NAMES[r.dtype]))
                count = unit_of(s.count if s else None, r.count if r else None)
            dt = (s or r).dtype
            self._run(kind, s, r, count, dt, op, root, algo)
        finally:
            for p in pins:
                p.release()

    def _n(self):
        return self.nranks

    def _root(self, root):
        return _int_arg("root", root, 0, self.nranks - 1)

    def _div(self, what, count, n):
        if count % n:
            raise ValueError("%s: %d elements do not split into %d equal blocks" % (what, count, n))
        return count // n

    @staticmethod
    def _need(what, got, want):
        if got != want:
            raise ValueError("%s: recv buffer has %d elements, needs %d" % (what, got, want))

    # --- collectives -------------------------------------------------------
    def allreduce(self, send, recv=None, op=SUM, algo=None, dtype=None):
        """recv[i] = op over ranks of send[i]; returns recv (new when None)."""
        if recv is None:
            dt = _Peek(send, dtype)
            recv = _new_like(send, dt.dtype, dt.count, getattr(send, "shape", None))

        def unit(sc, rc):
            self._need("allreduce", rc, sc)
            return sc
        self._call(ALLREDUCE, send, recv, dtype, op, 0, algo, unit)
        return recv

    def allreduce_(self, buf, op=SUM, algo=None, dtype=None):
        """In place: buf[i] = op over ranks of buf[i]; returns buf."""
        self._call(ALLREDUCE, buf, buf, dtype, op, 0, algo, lambda sc, rc: sc)
        return buf

    def reduce_scatter(self, send, recv=None, op=SUM, algo=None, dtype=None):
        """send holds nranks blocks; this rank gets the reduction of block
        `rank` in recv (new when None: send.shape[1:] for a numpy send whose
        first axis is nranks, else flat).  Returns recv."""
        n = self._n()
        if recv is None:
            dt = _Peek(send, dtype)
            k = self._div("reduce_scatter", dt.count, n)
            shape = send.shape[1:] if _is_numpy(send) and send.ndim > 1 and send.shape[0] == n else None
            recv = _new_like(send, dt.dtype, k, shape)

        def unit(sc, rc):
            k = self._div("reduce_scatter", sc, n)
            self._need("reduce_scatter", rc, k)
            return k
        self._call(REDUCE_SCATTER, send, recv, dtype, op, 0, algo, unit)
        return recv

    def reduce_scatter_(self, buf, op=SUM, algo=None, dtype=None):
        """In place: buf holds nranks blocks; block `rank` of buf becomes the
        reduction (the other blocks are scratch).  Returns that block's
        element range as a slice."""
        n, me = self._n(), self.rank
        box = {}

        def unit(sc, rc):
            box["k"] = self._div("reduce_scatter", sc, n)
            return box["k"]
        self._call(REDUCE_SCATTER, buf, buf, dtype, op, 0, algo, unit, inplace=lambda k: (0, me * k))
        return slice(me * box["k"], (me + 1) * box["k"])

    def allgather(self, send, recv=None, algo=None, dtype=None):
        """recv (nranks blocks of send's size; new when None: shape
        (nranks,) + send.shape for numpy) gets every rank's send, in rank
        order.  Returns recv."""
        n = self._n()
        if recv is None:
            dt = _Peek(send, dtype)
            shape = (n,) + tuple(send.shape) if _is_numpy(send) else None
            recv = _new_like(send, dt.dtype, n * dt.count, shape)

        def unit(sc, rc):
            self._need("allgather", rc, n * sc)
            return sc
        self._call(ALLGATHER, send, recv, dtype, SUM, 0, algo, unit)
        return recv

    def allgather_(self, buf, algo=None, dtype=None):
        """In place: buf holds nranks blocks; this rank's block (at `rank`)
        is its contribution; afterwards buf holds every rank's.  Returns buf."""
        n, me = self._n(), self.rank
        self._call(ALLGATHER, buf, buf, dtype, SUM, 0, algo, lambda sc, rc: self._div("allgather", sc, n),
                   inplace=lambda k: (me * k, 0))
        return buf

    def broadcast(self, send, recv=None, root=0, algo=None, dtype=None):
        """recv (new when None, like send) gets root's send; off the root,
        send only gives the shape and type.  Returns recv."""
        root = self._root(root)
        if recv is None:
            dt = _Peek(send, dtype)
            recv = _new_like(send, dt.dtype, dt.count, getattr(send, "shape", None))

        def unit(sc, rc):
            self._need("broadcast", rc, sc)
            return sc
        self._call(BROADCAST, send, recv, dtype, SUM, root, algo, unit)
        return recv

    def broadcast_(self, buf, root=0, algo=None, dtype=None):
        """In place: every rank's buf becomes root's.  Returns buf."""
        self._call(BROADCAST, buf, buf, dtype, SUM, self._root(root), algo, lambda sc, rc: sc)
        return buf

    def reduce(self, send, recv=None, root=0, op=SUM, algo=None, dtype=None):
        """The reduction of every rank's send lands in root's recv (new on
        the root when None).  Returns recv on the root, None elsewhere
        (a recv given off the root is left untouched)."""
        root = self._root(root)
        me = self.rank
        if me == root and recv is None:
            dt = _Peek(send, dtype)
            recv = _new_like(send, dt.dtype, dt.count, getattr(send, "shape", None))
        target = recv if me == root else None

        def unit(sc, rc):
            if rc is not None:
                self._need("reduce", rc, sc)
            return sc
        self._call(REDUCE, send, target, dtype, op, root, algo, unit)
        return target

    def reduce_(self, buf, root=0, op=SUM, algo=None, dtype=None):
        """In place: root's buf becomes the reduction of every rank's buf;
        other ranks' buf is only read.  Returns buf."""
        root = self._root(root)
        if self.rank == root:
            self._call(REDUCE, buf, buf, dtype, op, root, algo, lambda sc, rc: sc)
        else:
            self._call(REDUCE, buf, None, dtype, op, root, algo, lambda sc, rc: sc)
        return buf

    def alltoall(self, send, recv=None, algo=None, dtype=None):
        """send holds nranks blocks, block j for rank j; recv (new when None,
        like send) gets block i from rank i.  Returns recv."""
        n = self._n()
        if recv is None:
            dt = _Peek(send, dtype)
            self._div("alltoall", dt.count, n)
            recv = _new_like(send, dt.dtype, dt.count, getattr(send, "shape", None))

        def unit(sc, rc):
            self._need("alltoall", rc, sc)
            return self._div("alltoall", sc, n)
        self._call(ALLTOALL, send, recv, dtype, SUM, 0, algo, unit)
        return recv

    def alltoall_(self, buf, algo=None, dtype=None):
        """In place: block j of buf goes to rank j; block i becomes rank i's."""
        n = self._n()
        self._call(ALLTOALL, buf, buf, dtype, SUM, 0, algo, lambda sc, rc: self._div("alltoall", sc, n))
        return buf

    def barrier(self):
        """Block until every rank reached the barrier."""
        check(self._lib, self._c, "barrier", self._lib.coll_barrier(self._ptr()))

    # --- point-to-point (coll_send/coll_recv: MPI's tag matching; between
    # two ranks, messages and collectives in the same order on both) ------
    def _peer(self, what, peer):
        peer = _int_arg(what, peer, 0, self.nranks - 1)
        if peer == self.rank:
            raise ValueError("%s: rank %d is this rank" % (what, peer))
        return peer

    def send(self, buf, dest, tag=0, dtype=None):
        """Send buf to rank dest; returns when buf may be reused."""
        dest, tag = self._peer("dest", dest), _int_arg("tag", tag, 0, 2 ** 31 - 1)
        if _is_numpy(buf) and not buf.flags.c_contiguous:
            buf = _np.ascontiguousarray(buf)
        b = _Pinned(buf, "send buffer", False, _dtype_arg(dtype))
        try:
            rc = self._lib.coll_send(self._ptr(), b.addr, b.count, b.dtype, dest, tag)
        finally:
            b.release()
        check(self._lib, self._c, "send", rc)

    def recv(self, buf, source, tag=0, dtype=None):
        """Receive into buf (writable, exactly the message's size) from rank
        source.  Returns buf."""
        source, tag = self._peer("source", source), _int_arg("tag", tag, 0, 2 ** 31 - 1)
        b = _Pinned(buf, "recv buffer", True, _dtype_arg(dtype))
        try:
            rc = self._lib.coll_recv(self._ptr(), b.addr, b.count, b.dtype, source, tag)
        finally:
            b.release()
        check(self._lib, self._c, "recv", rc)
        return buf

    def sendrecv(self, send, dest, recv, source, sendtag=0, recvtag=0, dtype=None):
        """Send send to dest and receive recv from source at once (MPI_Sendrecv:
        a ring shift never waits on its neighbour).  Returns recv."""
        dest, source = self._peer("dest", dest), self._peer("source", source)
        sendtag, recvtag = _int_arg("sendtag", sendtag, 0, 2 ** 31 - 1), _int_arg("recvtag", recvtag, 0, 2 ** 31 - 1)
        if _is_numpy(send) and not send.flags.c_contiguous:
            send = _np.ascontiguousarray(send)
        s = _Pinned(send, "send buffer", False, _dtype_arg(dtype))
        try:
            r = _Pinned(recv, "recv buffer", True, _dtype_arg(dtype))
        except Exception:
            s.release()
            raise
        qs, qr = ctypes.c_void_p(), ctypes.c_void_p()
        try:
            rc = self._lib.coll_isend(self._ptr(), s.addr, s.count, s.dtype, dest, sendtag, ctypes.byref(qs))
            if rc == 0:
                rc = self._lib.coll_irecv(self._ptr(), r.addr, r.count, r.dtype, source, recvtag, ctypes.byref(qr))
            # whatever was started is finished (or failed) before the buffers go
            reqs = (ctypes.c_void_p * 2)(qs, qr)
            rc2 = self._lib.coll_waitall(self._ptr(), reqs, 2)
        finally:
            s.release()
            r.release()
        check(self._lib, self._c, "sendrecv", rc or rc2)
        return recv


class _Peek:
    """dtype and element count of a buffer without keeping it pinned."""

    def __init__(self, obj, dtype):
        if _is_numpy(obj) and not obj.flags.c_contiguous:
            obj = _np.ascontiguousarray(obj)
        p = _Pinned(obj, "send buffer", False, _dtype_arg(dtype))
        self.dtype, self.count = p.dtype, p.count
        p.release()


class _Offset:
    """A pinned buffer seen from element `off` on (in-place allgather)."""

    def __init__(self, pinned, off):
        self.dtype = pinned.dtype
        self.addr = pinned.addr + off * _DTYPE_SIZE[pinned.dtype]
        self.count = pinned.count - off
