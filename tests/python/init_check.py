"""init_check.py - torch.distributed.init_process_group("coll") with nothing named.

Run by tests/python.test (PYTHONPATH=runtime/python):

    /usr/bin/python3 tests/python/init_check.py N CACHE [subgroup] [tcp]

starts N worker processes of this file the way torchrun does (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT; LOCAL_RANK too), each of which calls
init_process_group("coll") with no plans configured and no COLL_PLANS, so
the backend builds the standard library's plans (rank 0) and shares them
through torch's store.  Each rank has its own plan cache, as ranks on
different hosts would: rank 0 the default one under XDG_CACHE_HOME=CACHE/xdg,
rank r > 0 COLL_PLANS_CACHE=CACHE/rank-r, and only rank 0 may run collc
(the others get COLLC=/nonexistent).  With `subgroup`, ranks 0 and 1 then
make a group of two with new_group(backend="coll"), which an earlier start
for 2 ranks has cached.  With `tcp`, init_process_group gets
init_method="tcp://MASTER_ADDR:MASTER_PORT" and rank and world_size as
arguments instead of the environment.  Workers print "ok NAME" or "FAIL NAME: ...";
the launcher prints every line of rank r's stdout and stderr as "[r] LINE"
(collrun's format, which py_checks reads) and exits non-zero if a worker did.
"""

import datetime
import os
import socket
import subprocess
import sys
import threading


def report(name, fn):
    try:
        err = fn()
    except Exception as e:
        err = "%s: %s" % (type(e).__name__, e)
    print("ok %s" % name if not err else "FAIL %s: %s" % (name, err), flush=True)


def worker(subgroup, tcp):
    import torch
    import torch.distributed as dist

    import coll.distributed  # noqa: F401 (registers the backend "coll")

    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])

    def init():
        if tcp:
            # init_method="tcp://...", rank and world_size as arguments, as a
            # batch system's script would pass them (no RANK/WORLD_SIZE)
            url = "tcp://%s:%s" % (os.environ.pop("MASTER_ADDR"), os.environ.pop("MASTER_PORT"))
            del os.environ["RANK"], os.environ["WORLD_SIZE"]
            dist.init_process_group("coll", init_method=url, rank=rank, world_size=n,
                                    timeout=datetime.timedelta(seconds=60))
        else:
            dist.init_process_group("coll", timeout=datetime.timedelta(seconds=60))
        return "" if dist.get_backend() == "coll" else "backend %r" % dist.get_backend()
    report("init", init)
    pg = dist.distributed_c10d._get_default_group()
    print("library %s" % pg.library(), flush=True)

    def expect(got, want):
        return "" if torch.equal(got, want) else "got %s, want %s" % (got.tolist()[:6], want.tolist()[:6])

    def allreduce():
        t = torch.arange(1000, dtype=torch.float32) + rank
        dist.all_reduce(t)
        return expect(t, torch.arange(1000, dtype=torch.float32) * n + n * (n - 1) // 2)

    def broadcast():
        t = torch.full((7,), rank, dtype=torch.int64)
        dist.broadcast(t, src=n - 1)
        return expect(t, torch.full((7,), n - 1, dtype=torch.int64))

    def allgather():
        out = [torch.zeros(5, dtype=torch.int32) for _ in range(n)]
        dist.all_gather(out, torch.arange(5, dtype=torch.int32) + 10 * rank)
        return expect(torch.stack(out), torch.stack([torch.arange(5, dtype=torch.int32) + 10 * r for r in range(n)]))

    report("allreduce", allreduce)
    report("broadcast", broadcast)
    report("allgather", allgather)
    if subgroup:
        def pair():
            g = dist.new_group([0, 1], backend="coll")
            if rank > 1:
                return ""
            t = torch.full((3,), rank + 1.0)
            dist.all_reduce(t, group=g)
            return expect(t, torch.full((3,), 3.0))
        report("subgroup", pair)
    # no rank leaves while another may still use rank 0's store (new_group's barrier)
    dist.barrier()
    dist.destroy_process_group()


def launch(n, cache, subgroup, tcp):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), XDG_CACHE_HOME=os.path.join(cache, "xdg"), COLL_PLANS_VERBOSE="1",
                   OMP_NUM_THREADS="1")
        env.pop("COLL_PLANS", None)
        env.pop("COLL_PLANS_CACHE", None)
        if r > 0:
            env["COLL_PLANS_CACHE"] = os.path.join(cache, "rank-%d" % r)
            env["COLLC"] = "/nonexistent/collc"
        argv = [sys.executable, os.path.abspath(__file__), "work"] + (["subgroup"] if subgroup else []) + \
            (["tcp"] if tcp else [])
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    lock = threading.Lock()

    def relay(r, p):
        for line in p.stdout:
            with lock:
                sys.stdout.write("[%d] %s" % (r, line.decode(errors="replace")))
                sys.stdout.flush()
    threads = [threading.Thread(target=relay, args=(r, p)) for r, p in enumerate(procs)]
    for t in threads:
        t.start()
    rc = 0
    for r, p in enumerate(procs):
        try:
            code = p.wait(timeout=120)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            code = "timeout"
        if code != 0:
            print("[%d] exit %s" % (r, code), flush=True)
            rc = 1
    for t in threads:
        t.join()
    return rc


if __name__ == "__main__":
    if sys.argv[1] == "work":
        worker("subgroup" in sys.argv[2:], "tcp" in sys.argv[2:])
    else:
        sys.exit(launch(int(sys.argv[1]), sys.argv[2], "subgroup" in sys.argv[3:], "tcp" in sys.argv[3:]))
