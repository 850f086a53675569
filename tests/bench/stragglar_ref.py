#!/usr/bin/env python3
"""stragglar_ref.py - a plain Python generator of StragglAR's schedule for
power-of-two n (Algorithm 1 of the StragglAR paper, the same construction
as stdlib/stragglar.coll), written the way a reference generator would be:
dicts and lists, then the schedule printed as JSON in collc's format.

`make bench` times it beside `collc show stdlib/stragglar.coll --format
json` for the same n, as the baseline measured in the same run (the paper
reports 1.04 s for its generator at n = 256).  Most of that time is the
JSON output (json.dump of every transfer, the precondition's included);
with --time it builds the schedule only and prints the seconds that took,
the figure to set beside the paper authors' construct_schedule, which does
not print (tests/results/stragglar.md).

Usage: stragglar_ref.py N [--time]
"""
import json
import sys
import time


def stragglar(n):
    m = n - 1                      # ranks 0..m-1; straggler m
    s = m
    L = n.bit_length() - 1
    rounds = []
    # precondition: ring reduce-scatter among 0..m-1, rank r ends with chunk r
    for step in range(m - 1):
        rounds.append(("pre-reduce-scatter",
                       [(r, (r + 1) % m, (r - step - 1) % m, "reduce") for r in range(m)]))
    mem = {}
    fresh = 2 * L - 1
    for r in range(L):
        xs = [(r, s, r, "reduce"), (s, r, r, "reduce")]
        got = []
        for c in range(r):
            for h in mem[c]:
                if c == r - 1:
                    g = r - 1 + L
                else:
                    g = fresh
                    fresh += 1
                xs.append((h, g, c, "copy"))
                got.append((g, c))
        rounds.append(("main", xs))
        for g, c in got:
            mem[c].append(g)
        mem[r] = [r]
    for r in range(L, m + L - 1):
        old = r - L
        P = mem[old]
        free = {}
        for c in range(max(old + 1, 0), min(r - 1, m - 1) + 1):
            free[c] = list(mem[c]) + ([s] if c == m - 1 and r >= m else [])
        window = [p for p in P if r < p < r + L and p < m]
        rest = [p for p in P if p != r and p not in window]
        pairs = [(p, free[p - L].pop(), p - L) for p in window]
        c = old + 1
        for p in rest:
            while not free[c]:
                c += 1
            pairs.append((p, free[c].pop(), c))
        xs = [(r, s, r, "reduce"), (s, r, r, "reduce")] if r < m else []
        for p, q, cq in pairs:
            if q != s:
                xs.append((p, q, old, "copy"))
            xs.append((q, p, cq, "copy"))
        rounds.append(("main", xs))
        del mem[old]
        for p, q, cq in pairs:
            mem[cq].append(p)
        if r < m:
            mem[r] = [r]
    return rounds


def main():
    n = int(sys.argv[1])
    if n < 4 or n & (n - 1):
        sys.exit("stragglar_ref.py: n must be a power of two >= 4")
    if sys.argv[2:] == ["--time"]:
        t0 = time.perf_counter()
        stragglar(n)
        print("%.3f s" % (time.perf_counter() - t0))
        return
    rounds = stragglar(n)
    out = {"collective": "allreduce", "algorithm": "stragglar", "n": n, "chunks": n - 1,
           "rounds": [{"phase": ph, "transfers": [{"src": a, "dst": b, "chunk": c, "op": op}
                                                   for a, b, c, op in xs]} for ph, xs in rounds]}
    json.dump(out, sys.stdout)


main()
