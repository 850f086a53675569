"""stdplans.py - plans from the standard library, for a job that named none.

The torch backend needs a library made by `collc build` for the group's
rank count.  When none is configured (no configure(plans=...), no
COLL_PLANS), distributed.py asks this file for one, and it makes it the
way a user would, once per machine:

  rank 0:  finds collc and the standard library (find_tools), and looks
           in the plan cache (cache_dir) for the library of this rank
           count, keyed by a hash of the rank count, the stdlib's .coll
           files, collc and the libcollrt.a it links (cache_key).  On a
           miss it asks `collc check -n N` which stdlib algorithms hold
           for N ranks, writes a cluster that lists all of them, each
           collective's block `choose by measure` (every communicator
           times the candidates when it starts and caches the table: see
           runtime/README.md, "Choosing by measurement"), and runs
           `collc build` into a private directory, whose library it then
           renames into the cache: concurrent starts never see half a
           file.  It then puts the library's bytes in the store;
  others:  read the key and the library's SHA-256 from the store; when
           their own cache already holds that file (same host as rank 0,
           or an earlier start) they keep it, else they fetch the bytes
           and write them to their cache the same way (a temporary file,
           then rename).  So ranks on other hosts need no collc, and the
           last of them to finish removes the bytes from the store.

A failure on rank 0 (no collc, a failed build) is published too, so the
other ranks raise with rank 0's message instead of waiting for the store's
timeout.  Every error is a RuntimeError that says what was tried.

Store keys, under the group's prefix: coll/plans/lib (the bytes),
coll/plans/meta ("OK KEY NAME SHA256 SIZE" or "ERR MESSAGE"),
coll/plans/got (a counter of the ranks done with the bytes).
"""

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from . import _native
from .comm import KINDS

CACHE_ENV = "COLL_PLANS_CACHE"
VERBOSE_ENV = "COLL_PLANS_VERBOSE"
COLLC_ENV = "COLLC"
STDLIB_ENV = "COLL_STDLIB"
FORMAT = "coll-stdplans 1"   # bump when the cluster this file writes changes

# `algorithm NAME : KIND` at the start of a line (lang/README.md, Declarations)
_ALGO_RE = re.compile(r"^[ \t]*algorithm[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*:[ \t]*([a-z_]+)", re.M)
# `collc check -n N`: one line per algorithm that held
_VERIFIED_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*): n=\d+ verified", re.M)


def cache_dir():
    """The plan cache's directory, made if missing (mode 0700):
    $COLL_PLANS_CACHE, else plans/ in the directory where libcollrt keeps
    its reorder and tuning caches ($XDG_CACHE_HOME/coll, else
    ~/.cache/coll, else /tmp/coll-cache-UID)."""
    d = os.environ.get(CACHE_ENV)
    if not d:
        xdg, home = os.environ.get("XDG_CACHE_HOME"), os.environ.get("HOME")
        base = (os.path.join(xdg, "coll") if xdg else os.path.join(home, ".cache", "coll") if home
                else "/tmp/coll-cache-%d" % os.getuid())
        d = os.path.join(base, "plans")
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
    except OSError as e:
        raise RuntimeError("coll backend: cannot make the plan cache %s: %s (set %s to another directory)"
                           % (d, e.strerror or e, CACHE_ENV)) from None
    if not os.path.isdir(d):
        raise RuntimeError("coll backend: the plan cache %s is not a directory (set %s)" % (d, CACHE_ENV))
    return d


def _executable(p):
    return os.path.isfile(p) and os.access(p, os.X_OK)


def find_tools():
    """(collc, stdlib directory), found as the MPI layer finds them: $COLLC,
    else beside a libcollrt.so the package would load (`collc` in the
    build tree, `../bin/collc` in an install), else `collc` on PATH; the
    stdlib is $COLL_STDLIB, else `../share/coll/stdlib` or `../stdlib`
    beside that collc.  Raises RuntimeError listing what was tried."""
    tried, collc = [], None
    env = os.environ.get(COLLC_ENV)
    if env:
        if _executable(env):
            collc = env
        else:
            tried.append("$%s=%s (not an executable file)" % (COLLC_ENV, env))
    else:
        dirs = []
        lib = os.environ.get(_native.RUNTIME_ENV)
        if lib:
            dirs.append(lib if os.path.isdir(lib) else os.path.dirname(lib))
        # not the linker's cache: asking it runs ldconfig, and every start comes here
        dirs += [os.path.dirname(p) for p in _native.runtime_candidates(linker=False)]
        seen = set()
        for d in dirs:
            for p in (os.path.join(d, "collc"), os.path.normpath(os.path.join(d, "..", "bin", "collc"))):
                if p in seen:
                    continue
                seen.add(p)
                if _executable(p):
                    collc = p
                    break
                tried.append(p)
            if collc:
                break
        if not collc:
            collc = shutil.which("collc")
            if not collc:
                tried.append("collc on PATH")
    if not collc:
        raise RuntimeError("coll backend: no plan library was named and there is no collc to build one from the "
                           "standard library; tried %s.  Install coll (`make install`) or set %s=PATH, or name a "
                           "library: coll.distributed.configure(plans=PATH) or COLL_PLANS=PATH"
                           % (", ".join(tried), COLLC_ENV))
    collc = os.path.realpath(collc)
    std = os.environ.get(STDLIB_ENV)
    cands = [std] if std else [os.path.join(os.path.dirname(collc), "..", "share", "coll", "stdlib"),
                               os.path.join(os.path.dirname(collc), "..", "stdlib")]
    for d in cands:
        if glob.glob(os.path.join(d, "*.coll")):
            return collc, os.path.realpath(d)
    raise RuntimeError("coll backend: no standard library (.coll files) for %s; tried %s.  Set %s=DIR"
                       % (collc, ", ".join(os.path.normpath(d) for d in cands), STDLIB_ENV))


def _runtime_archive(collc):
    """The libcollrt.a `collc build` links (codegen/README.md), or None."""
    env = os.environ.get("COLL_RUNTIME_LIB")
    d = os.path.dirname(collc)
    for p in ([env] if env else [os.path.join(d, "libcollrt.a"), os.path.join(d, "..", "lib", "libcollrt.a")]):
        if os.path.isfile(p):
            return p
    return None


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cache_key(nranks, collc, files):
    """A hash of all that decides the library: the rank count, the stdlib
    files (names and contents), collc and the libcollrt.a it links."""
    h = hashlib.sha256()
    h.update(("%s\nranks %d\n" % (FORMAT, nranks)).encode())
    for f in files:
        h.update(("file %s %s\n" % (os.path.basename(f), _sha256_file(f))).encode())
    h.update(("collc %s\n" % _sha256_file(collc)).encode())
    ar = _runtime_archive(collc)
    h.update(("runtime %s\n" % (_sha256_file(ar) if ar else "none")).encode())
    return h.hexdigest()[:16]


def _run(argv, what):
    """Run argv (no shell); its stdout, or RuntimeError with its stderr."""
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        raise RuntimeError("coll backend: cannot run %s: %s" % (argv[0], e)) from None
    if p.returncode != 0 and what:
        err = p.stderr.decode(errors="replace").strip() or "no message"
        raise RuntimeError("coll backend: `%s` failed (exit %d) while %s: %s"
                           % (" ".join(argv[:2]) + " ...", p.returncode, what, err))
    return p.stdout.decode(errors="replace")


def cluster_text(name, nranks, collc, files):
    """The cluster file for nranks: every stdlib algorithm `collc check`
    verifies for nranks, in the block of its collective, `choose by
    measure` where a block has two or more."""
    kinds = {}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            for algo, kind in _ALGO_RE.findall(fh.read()):
                if kind in KINDS:
                    kinds[algo] = kind
    # exit 1 is expected: the algorithms a `require` rules out for nranks fail
    out = _run([collc, "check"] + files + ["-n", str(nranks)], None)
    ok = _VERIFIED_RE.findall(out)
    blocks = []
    for kind in KINDS:
        algos = [a for a in ok if kinds.get(a) == kind]
        if algos:
            blocks.append("  %s { %s }%s;" % (kind, ", ".join(algos), " choose by measure" if len(algos) > 1 else ""))
    if not blocks:
        raise RuntimeError("coll backend: no algorithm of the standard library %s holds for %d ranks (`%s check`)"
                           % (os.path.dirname(files[0]), nranks, collc))
    return ("# %s: every algorithm of the standard library that holds for %d ranks,\n"
            "# written by the coll Python package (stdplans.py) for `collc build`.\n"
            "cluster %s {\n  ranks %d;\n%s\n}\n" % (name, nranks, name, nranks, "\n".join(blocks)))


def _say(rank, nranks, what):
    if os.environ.get(VERBOSE_ENV, "") not in ("", "0"):
        print("coll: rank %d: plans for %d ranks: %s" % (rank, nranks, what), file=sys.stderr, flush=True)


def _check_verbose():
    v = os.environ.get(VERBOSE_ENV, "")
    if v not in ("", "0", "1"):
        raise ValueError("%s=%r: expected 0 or 1" % (VERBOSE_ENV, v))


def _install(src, dst, mode=0o755):
    """Move src onto dst atomically (rename within one directory)."""
    os.chmod(src, mode)
    os.replace(src, dst)


def build(nranks):
    """Rank 0's part: (path of the library, its cache key, its name, how it
    was got: "built in S s" or "cache")."""
    collc, stdlib = find_tools()
    files = sorted(glob.glob(os.path.join(stdlib, "*.coll")))
    key = cache_key(nranks, collc, files)
    name = "stdlib%d" % nranks
    final_dir = os.path.join(cache_dir(), "%s-%s" % (name, key))
    path = os.path.join(final_dir, "lib%s.so" % name)
    if os.path.isfile(path):
        return path, key, name, "cache %s" % path
    t0 = time.monotonic()
    os.makedirs(final_dir, mode=0o700, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".build-", dir=final_dir)
    try:
        text = cluster_text(name, nranks, collc, files)
        src = os.path.join(work, name + ".coll")
        with open(src, "w") as f:
            f.write(text)
        _run([collc, "build", src] + files + ["-o", os.path.join(work, "out")],
             "building the standard library's plans for %d ranks (stdlib %s)" % (nranks, stdlib))
        built = os.path.join(work, "out", "lib%s.so" % name)
        if not os.path.isfile(built):
            raise RuntimeError("coll backend: `%s build` made no %s" % (collc, built))
        _install(src, os.path.join(final_dir, name + ".coll"), 0o644)   # what it was built from, for people
        _install(built, path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return path, key, name, "built from %s by %s in %.2f s: %s" % (stdlib, collc, time.monotonic() - t0, path)


def _bytes(v):
    return v if isinstance(v, (bytes, bytearray)) else str(v).encode()


def plans_for(store, rank, nranks, prefix="coll/plans"):
    """The path of a standard-library plan library for nranks ranks on this
    rank, made or fetched as the file's header says.  Every rank of the
    group calls it with the same store."""
    _check_verbose()
    k_meta, k_lib, k_got = prefix + "/meta", prefix + "/lib", prefix + "/got"
    if rank == 0:
        try:
            path, key, name, how = build(nranks)
            if nranks > 1:
                with open(path, "rb") as f:
                    data = f.read()
                store.set(k_lib, data)   # the bytes first: a rank that sees meta finds them
                store.set(k_meta, "OK %s %s %s %d" % (key, name, hashlib.sha256(data).hexdigest(), len(data)))
        except Exception as e:
            if nranks > 1:
                msg = str(e)
                store.set(k_meta, "ERR " + (msg[len("coll backend: "):] if msg.startswith("coll backend: ") else msg))
            raise
        _say(rank, nranks, how)
        return path
    meta = _bytes(store.get(k_meta)).decode(errors="replace")
    if meta.startswith("ERR "):
        raise RuntimeError("coll backend: rank 0 could not make the plans: " + meta[4:])
    try:
        _, key, name, digest, size = meta.split(" ")
        size = int(size)
    except ValueError:
        raise RuntimeError("coll backend: unreadable %s in the store: %r" % (k_meta, meta[:200])) from None
    final_dir = os.path.join(cache_dir(), "%s-%s" % (name, key))
    path = os.path.join(final_dir, "lib%s.so" % name)
    if os.path.isfile(path) and os.path.getsize(path) == size and _sha256_file(path) == digest:
        how = "cache %s (the same as rank 0's)" % path
    else:
        data = _bytes(store.get(k_lib))
        if hashlib.sha256(data).hexdigest() != digest:
            raise RuntimeError("coll backend: the plan library in the store is not the one rank 0 announced "
                               "(%d bytes, SHA-256 differs)" % len(data))
        os.makedirs(final_dir, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".lib%s.so." % name, dir=final_dir)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            _install(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        how = "from rank 0 through the store (%d bytes): %s" % (len(data), path)
    # the last rank done with the bytes takes them out of the store
    if store.add(k_got, 1) == nranks - 1:
        try:
            store.delete_key(k_lib)
        except Exception:   # a store without delete: the bytes stay for the job's life
            pass
    _say(rank, nranks, how)
    return path
