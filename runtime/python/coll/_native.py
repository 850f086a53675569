"""_native.py - finding and loading libcollrt.so and generated libraries.

The lowest layer of the Python binding: it locates the shared libraries,
declares the C prototypes of coll.h for ctypes once, and turns a failed
coll_result into a CollError carrying coll_strerror and coll_last_error.
Everything above it (comm.py, bootstrap.py, distributed.py) calls the
runtime only through the objects made here.

Two libraries are involved, as with collbench's host path:
  - libcollrt.so, the runtime, whose coll_* functions run everything;
  - a library made by `collc build` (lib<cluster>.so), read only for its
    plan set, the data symbol <cluster>_plans.  It carries a private copy
    of the runtime too; it is opened RTLD_LOCAL so that copy never
    interposes libcollrt's symbols, and the plan set is plain data checked
    by coll_init (ABI number, consistency, same set on every rank).
"""

import ctypes
import ctypes.util
import os
import sys

# coll_result numbers and names (coll.h; the numbers are ABI).
RESULT_NAMES = {
    0: "COLL_OK", 1: "COLL_ERR_INVALID", 2: "COLL_ERR_NOMEM", 3: "COLL_ERR_SYSTEM",
    4: "COLL_ERR_TIMEOUT", 5: "COLL_ERR_PEER", 6: "COLL_ERR_AUTH", 7: "COLL_ERR_MISMATCH",
    8: "COLL_ERR_NOALGO", 9: "COLL_ERR_BOOTSTRAP", 10: "COLL_ERR_TRANSPORT", 11: "COLL_ERR_PLAN",
    12: "COLL_ERR_ABORTED", 13: "COLL_ERR_PROTOCOL", 14: "COLL_ERR_UNSUPPORTED",
}

RUNTIME_ENV = "COLL_LIBCOLLRT"   # path of libcollrt.so (or of the directory holding it)
PLANS_ENV = "COLL_PLANS"         # path of a generated lib<cluster>.so


class CollError(Exception):
    """A coll_result other than COLL_OK.

    Attributes: code (the coll_result number), name ("COLL_ERR_TIMEOUT"),
    strerror (coll_strerror(code)), detail (coll_last_error: which peer,
    which step; may be empty) and call (what the binding was doing)."""

    def __init__(self, call, code, strerror, detail):
        self.call, self.code, self.strerror, self.detail = call, code, strerror, detail
        self.name = RESULT_NAMES.get(code, "COLL_ERR_%d" % code)
        msg = "%s: %s (%s)" % (call, strerror, self.name)
        if detail:
            msg += ": " + detail
        super().__init__(msg)


class LibraryNotFound(OSError):
    """libcollrt.so (or a plan library) is not where the binding looked; the
    message lists every place tried and how to say where it is."""


def _package_root():
    return os.path.dirname(os.path.abspath(__file__))


def runtime_candidates(linker=True):
    """Where libcollrt.so is looked for, in order (after an explicit path
    and $COLL_LIBCOLLRT): beside this file (a wheel from `pip install
    runtime/python` carries it there), the source tree's build directory
    (this package lives in runtime/python/coll), then PREFIX/lib for every
    ancestor PREFIX of the package (an installed package sits somewhere
    under the prefix whose lib/ holds libcollrt.so), then (linker=True)
    the dynamic linker's cache, and the usual prefixes."""
    here = _package_root()
    out = [os.path.join(here, "libcollrt.so")]
    repo = os.path.normpath(os.path.join(here, "..", "..", ".."))
    out.append(os.path.join(repo, "build", "libcollrt.so"))
    d = here
    while True:
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
        out.append(os.path.join(d, "lib", "libcollrt.so"))
    found = linker and ctypes.util.find_library("collrt")
    if found:
        out.append(found)
    for p in ("/usr/local/lib/libcollrt.so", "/usr/lib/libcollrt.so"):
        out.append(p)
    seen, uniq = set(), []
    for p in out:
        if p not in seen:
            seen.add(p)
            uniq.append(p)
    return uniq


def _declare(lib):
    """Prototypes of the coll.h functions the binding calls."""
    c_int, c_size, c_char_p, c_void_p, c_double = (ctypes.c_int, ctypes.c_size_t, ctypes.c_char_p,
                                                    ctypes.c_void_p, ctypes.c_double)
    P = c_void_p
    protos = {
        "coll_init": (c_int, [ctypes.POINTER(c_void_p), P, P]),
        "coll_finalize": (None, [P]),
        "coll_rank": (c_int, [P]),
        "coll_nranks": (c_int, [P]),
        "coll_transport_name": (c_char_p, [P]),
        "coll_set_timeout": (None, [P, c_double]),
        "coll_strerror": (c_char_p, [c_int]),
        "coll_last_error": (c_char_p, [P]),
        "coll_dtype_size": (c_size, [c_int]),
        "coll_dtype_name": (c_char_p, [c_int]),
        "coll_kind_name": (c_char_p, [c_int]),
        "coll_collective": (c_int, [P, c_int, c_char_p, P, P, c_size, c_int, c_int, c_int]),
        "coll_choose_algo": (c_char_p, [P, c_int, ctypes.c_uint64]),
        "coll_last_algo": (c_char_p, [P]),
        "coll_straggler": (c_int, [P, ctypes.POINTER(c_int), ctypes.POINTER(c_double)]),
        "coll_set_straggler": (c_int, [P, c_int]),
        "coll_emulate_straggler": (c_int, [P, c_int, c_double]),
        "coll_barrier": (c_int, [P]),
        "coll_send": (c_int, [P, P, c_size, c_int, c_int, c_int]),
        "coll_recv": (c_int, [P, P, c_size, c_int, c_int, c_int]),
        "coll_isend": (c_int, [P, P, c_size, c_int, c_int, c_int, ctypes.POINTER(c_void_p)]),
        "coll_irecv": (c_int, [P, P, c_size, c_int, c_int, c_int, ctypes.POINTER(c_void_p)]),
        "coll_waitall": (c_int, [P, ctypes.POINTER(c_void_p), c_int]),
    }
    for name, (res, args) in protos.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            raise LibraryNotFound("%s has no %s: not a libcollrt of this version" % (lib._name, name))
        f.restype, f.argtypes = res, args
    return lib


class Config(ctypes.Structure):
    """coll_config (coll.h): zero/NULL fields mean "from the environment"."""
    _fields_ = [("rank", ctypes.c_int), ("nranks", ctypes.c_int), ("addr", ctypes.c_char_p),
                ("secret", ctypes.c_char_p), ("transport", ctypes.c_char_p), ("timeout_s", ctypes.c_double),
                ("rails", ctypes.c_char_p),     # NULL: COLL_RAILS, else the plan set's
                ("policy", ctypes.c_void_p)]    # a coll_rail_policy *; NULL: the plan set's (COLL_POLICY overrides)


_runtimes = {}


def load_runtime(path=None):
    """The ctypes handle of libcollrt.so: `path` (a file or a directory), else
    $COLL_LIBCOLLRT, else the first of runtime_candidates() that exists.
    Loaded once per path.  Raises LibraryNotFound naming what was tried."""
    tried = []
    if path is None:
        path = os.environ.get(RUNTIME_ENV) or None
        origin = "$" + RUNTIME_ENV
    else:
        origin = "the runtime= argument"
    if path is not None:
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, "libcollrt.so")
        if not os.path.exists(path):
            raise LibraryNotFound("libcollrt.so: %s names %s, which does not exist" % (origin, path))
        cands = [path]
    else:
        cands = runtime_candidates()
    for p in cands:
        if p in _runtimes:
            return _runtimes[p]
        if os.path.isabs(p) and not os.path.exists(p):
            tried.append(p)
            continue
        try:
            lib = _declare(ctypes.CDLL(p, mode=ctypes.RTLD_LOCAL))
        except OSError as e:
            tried.append("%s (%s)" % (p, e))
            continue
        _runtimes[p] = lib
        return lib
    raise LibraryNotFound("libcollrt.so not found; tried: %s.  Build it with `make` in the coll "
                          "repository, or pass runtime=PATH or set %s=PATH" % (", ".join(tried), RUNTIME_ENV))


class Plans:
    """The plan set of a library made by `collc build`.

    Plans(path, symbol=None): path of lib<cluster>.so (default
    $COLL_PLANS); symbol is the plan-set symbol, by default <cluster>_plans
    for lib<cluster>.so.  The library stays loaded while this object (or a
    communicator using it) lives.  Attributes: path, symbol, name (the
    cluster), address (of the coll_plan_set), has_gpu (the library also has
    <cluster>_gpu_plans, from a `transport nccl`/`cuda` cluster)."""

    def __init__(self, path=None, symbol=None):
        if path is None:
            path = os.environ.get(PLANS_ENV)
            if not path:
                raise LibraryNotFound("no plan library: pass plans=PATH (a lib<cluster>.so from "
                                      "`collc build CLUSTER.coll -o DIR`) or set %s" % PLANS_ENV)
        path = os.path.abspath(os.fspath(path))
        if not os.path.exists(path):
            raise LibraryNotFound("plan library %s does not exist (make it with `collc build "
                                  "CLUSTER.coll -o DIR`)" % path)
        base = os.path.basename(path)
        if symbol is None:
            stem = base.split(".so")[0]
            if not stem.startswith("lib") or len(stem) <= 3:
                raise LibraryNotFound("cannot tell the plan-set symbol of %s (not lib<cluster>.so): "
                                      "pass symbol=" % path)
            symbol = stem[3:] + "_plans"
        try:
            self._lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        except OSError as e:
            raise LibraryNotFound("cannot load plan library %s: %s" % (path, e))
        try:
            self.address = ctypes.addressof(ctypes.c_char.in_dll(self._lib, symbol))
        except ValueError:
            raise LibraryNotFound("%s has no plan set %s (is it a library from `collc build`?)" % (path, symbol))
        self.path, self.symbol = path, symbol
        self.name = symbol[:-len("_plans")] if symbol.endswith("_plans") else symbol
        gpu = symbol[:-len("_plans")] + "_gpu_plans" if symbol.endswith("_plans") else None
        try:
            self.has_gpu = bool(gpu) and ctypes.c_char.in_dll(self._lib, gpu) is not None
        except ValueError:
            self.has_gpu = False

    def __repr__(self):
        return "Plans(%r, symbol=%r)" % (self.path, self.symbol)


def check(lib, comm_ptr, call, rc):
    """Raise CollError for a failed coll_result, with the details the
    runtime kept for comm_ptr (None: of the last failed coll_init)."""
    if rc == 0:
        return
    strerror = (lib.coll_strerror(rc) or b"").decode(errors="replace")
    detail = (lib.coll_last_error(comm_ptr) or b"").decode(errors="replace")
    raise CollError(call, rc, strerror, detail)


if sys.byteorder != "little":   # the buffer-format table in comm.py assumes it
    raise ImportError("coll's Python binding supports little-endian hosts only")
