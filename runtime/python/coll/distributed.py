"""distributed.py - registers the torch.distributed backend "coll".

    import coll.distributed                      # registers "coll" (torch 1.13's register_backend)
    torch.distributed.init_process_group("coll") # the standard library's plans (stdplans.py), or first:
    coll.distributed.configure(plans="out/libddp4.so", algos={"allreduce": "ring"})   # or COLL_PLANS=...

The backend itself is C++ (runtime/python/torch/ProcessGroupColl.cpp, a
c10d ProcessGroup built by `make` into build/python/_coll_torch.so).  This
file finds and imports that extension and supplies the creator function
torch calls with (store, rank, world_size, timeout): when no plan library
is named it has stdplans.py make (rank 0) or fetch (the others, through
that store) the standard library's; it runs coll's rendezvous through the
store (bootstrap.py: rank 0 publishes its address and a secret) and
constructs the ProcessGroup, which calls coll_init.

Settings, from configure() or else the environment:
  plans      COLL_PLANS       lib<cluster>.so from `collc build` for world_size ranks; without one,
                              the standard library's plans, built and cached (stdplans.py)
  symbol     COLL_PLANS_SYMBOL its plan-set symbol (default <cluster>_plans)
  algos      COLL_ALGO        force algorithms: "ring" (allreduce) or "allreduce=ring,broadcast=binomial_bcast"
  transport  COLL_TRANSPORT   shm, tcp or auto (read by libcollrt itself)
  straggler  COLL_STRAGGLER   declare the persistent straggler rank (coll_set_straggler)
The per-call inactivity timeout is torch's group timeout unless
COLL_TIMEOUT is set.
"""

import importlib.machinery
import importlib.util
import inspect
import os

import torch.distributed as dist

from . import bootstrap, stdplans
from ._native import PLANS_ENV, LibraryNotFound
from .comm import MAX_RANKS, MAX_TIMEOUT, _int_arg

EXT_ENV = "COLL_TORCH_EXT"   # path of _coll_torch.so
_settings = {}
_ext = None


def extension_candidates():
    """Where the compiled backend is looked for (after $COLL_TORCH_EXT):
    beside this file (an installed package), then the source tree's
    build/python/."""
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.normpath(os.path.join(here, "..", "..", ".."))
    return [os.path.join(here, "_coll_torch.so"), os.path.join(repo, "build", "python", "_coll_torch.so")]


def load_extension(path=None):
    """Import the C++ backend module (once); raises LibraryNotFound with the
    places tried and how to build it."""
    global _ext
    if _ext is not None:
        return _ext
    path = path or os.environ.get(EXT_ENV)
    cands = [path] if path else extension_candidates()
    for p in cands:
        if os.path.exists(p):
            loader = importlib.machinery.ExtensionFileLoader("coll._coll_torch", p)
            spec = importlib.util.spec_from_file_location("coll._coll_torch", p, loader=loader)
            mod = importlib.util.module_from_spec(spec)
            loader.exec_module(mod)
            _ext = mod
            return mod
    raise LibraryNotFound("the coll torch backend (_coll_torch.so) is not built; tried %s.  Run `make` in "
                          "the coll repository (it needs Debian's libtorch-dev) or set %s"
                          % (", ".join(cands), EXT_ENV))


def _parse_algos(text):
    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        if "=" in item:
            k, v = item.split("=", 1)
            out[k.strip()] = v.strip()
        else:
            out["allreduce"] = item
    return out


def configure(plans=None, symbol=None, algos=None, transport=None, straggler=None):
    """Settings for the process groups created after this call (see the
    file's header); None leaves a setting to the environment."""
    for k, v in (("plans", plans), ("symbol", symbol), ("algos", algos), ("transport", transport),
                 ("straggler", straggler)):
        if v is None:
            _settings.pop(k, None)
        else:
            _settings[k] = v


def _setting(name, env, conv=str):
    if name in _settings:
        return _settings[name]
    v = os.environ.get(env)
    if not v:
        return None
    try:
        return conv(v)
    except ValueError:
        raise ValueError("%s=%r: expected %s" % (env, v, "an integer" if conv is int else "a value")) from None


def create(store, rank, size, timeout):
    """The creator torch calls for init_process_group("coll") and
    new_group(backend="coll"): store rendezvous, then ProcessGroupColl."""
    # the numbers first, named, before they reach C (see comm.py's _int_arg)
    size = _int_arg("world_size", size, 1, MAX_RANKS)
    rank = _int_arg("rank", rank, 0, size - 1)
    straggler = _setting("straggler", "COLL_STRAGGLER", int)
    if straggler is not None:
        straggler = _int_arg("straggler", straggler, -1, size - 1)
    # torch's group timeout; one past what coll counts (timedelta.max) means none
    timeout_s = timeout.total_seconds()
    timeout_s = 0.0 if os.environ.get("COLL_TIMEOUT") else -1.0 if timeout_s > MAX_TIMEOUT else timeout_s
    ext = load_extension()
    plans = _setting("plans", PLANS_ENV)
    if not plans:
        # none named: the standard library's, built by rank 0 (once per
        # machine, then cached) and shared through the store
        plans = stdplans.plans_for(store, rank, size)
    algos = _settings.get("algos")
    if algos is None:
        algos = _parse_algos(os.environ.get("COLL_ALGO", ""))
    elif isinstance(algos, str):
        algos = _parse_algos(algos)
    # two communicators: the collectives', and one for send/recv (whose
    # order against collectives torch programs do not keep; see
    # ProcessGroupColl's constructor)
    with bootstrap.rendezvous(store, rank, size) as (addr, secret, done), \
            bootstrap.rendezvous(store, rank, size, prefix="coll/p2p") as (p2p_addr, p2p_secret, p2p_done):
        pg = ext.ProcessGroupColl(rank, size, os.path.abspath(plans), addr, secret,
                                  symbol=_setting("symbol", "COLL_PLANS_SYMBOL") or "",
                                  transport=_settings.get("transport") or "", timeout_s=timeout_s,
                                  algos=dict(algos), straggler=-1 if straggler is None else straggler,
                                  p2p_addr=p2p_addr, p2p_secret=p2p_secret)
        done()
        p2p_done()
    return pg


def register():
    """Register the backend "coll" with torch.distributed (idempotent)."""
    if "COLL" in dist.Backend._plugins:
        return
    # torch >= 2.0 asks which devices a backend serves (and warns when not
    # told); Debian's 1.13 has no such argument.  coll serves both: CUDA
    # tensors go to the device executor when the plan library has GPU plans.
    if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
        dist.Backend.register_backend("coll", create, devices=["cpu", "cuda"])
    else:
        dist.Backend.register_backend("coll", create)


register()
