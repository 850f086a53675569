#!/bin/bash
# snapshot.sh - record what collc prints for every stdlib algorithm over a
# range of rank counts, so that two builds can be compared byte for byte.
#
#   tests/snapshot.sh BUILD OUTDIR     e.g. tests/snapshot.sh build ../snap-before
#   diff -r ../snap-before ../snap-after
#
# For restructurings that must not change a result: show (table, json,
# dot), check, cost (rounds and sim, uniform and on a rack network, with a
# straggler, pipelined, jittered), sim (trace and SVG), compare (csv,
# json, svg, --n-range), tune, reorder (search, --json, --spread,
# --exhaustive) and build (every generated source) of the stdlib and of
# clusters that use each build-time choice (choose by cost, reorder by
# cost, straggler auto, rails and policies, GPU transports).  Each command
# writes its stdout, stderr and exit status to one file named after it;
# wall times are never recorded.  A few minutes on 2 cores.
set -u
[ $# -eq 2 ] || { echo "usage: $0 BUILD OUTDIR" >&2; exit 2; }
BUILD=$(cd "$1" && pwd) || exit 2
OUT=$2
COLLC=$BUILD/collc
SRC=$(cd "$(dirname "$0")/.." && pwd)
STD=$SRC/stdlib
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
WORK=$(mktemp -d) || exit 2
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 2

# A search's wall time (reorder's "; 0.004 s" and "seconds") is the one
# thing that differs from run to run.
WALL='s/; [0-9.]+ s$/; WALL s/; s/"seconds": [0-9.]+/"seconds": WALL/'

# run NAME ARGS...: collc ARGS, its output in $OUT/NAME (paths of the
# work folder written as WORK, so the record does not depend on it)
run() {
	local name=$1; shift
	{ "$COLLC" "$@" 2>&1; echo "exit $?"; } | sed -E "s|$WORK|WORK|g; s|$SRC|SRC|g; $WALL" >"$OUT/$name"
}

# algorithm:file:rank counts it supports (bcube needs powers of B = 2 by default)
ALGOS="ring:ring 2 3 4 5 7 8 13 16
ring_rs:ring 2 4 7 8
ring_ag:ring 2 4 7 8
rhd:rhd 2 3 4 6 8 12 16
dbt:dbt 2 3 4 5 8 11 16
direct:direct 2 4 7 8
bcube:bcube 2 4 8 16
hier:hier 4 6 8 16
torus:torus 4 6 8 16
stragglar:stragglar 3 4 5 6 7 8 11 16
broadcast:broadcast 3 4 8
binomial_bcast:binomial 2 4 7 8
binomial_reduce:binomial 2 4 7 8
bruck_ag:bruck 2 4 7 8
alltoall_pairwise:alltoall 2 4 7 8
alltoall_direct:alltoall 2 4 7 8
alltoall_bruck:alltoall 2 4 7 8"

# Networks: racks of 4 (uplinks at half a host's rate), a per-pair matrix.
cat >racks8.tsv <<'EOF'
ranks 8
* * 100us 100Mbit/s
rank-bw 100Mbit/s
group r0 0 3 5 6
group r1 1 2 4 7
uplink r0 50Mbit/s
uplink r1 50Mbit/s
EOF
cat >racks16.tsv <<'EOF'
ranks 16
* * 100us 100Mbit/s
rank-bw 100Mbit/s
group r0 5 6 7 15
group r1 2 11 13 14
group r2 1 3 4 12
group r3 0 8 9 10
uplink r0 100Mbit/s
uplink r1 100Mbit/s
uplink r2 100Mbit/s
uplink r3 100Mbit/s
segment t r0 <-> r1 80Mbit/s
EOF
awk 'BEGIN { print "ranks 8"; for (i = 0; i < 8; i++) for (j = 0; j < 8; j++) if (i != j)
	printf "%d %d %dus %dGbit/s\n", i, j, 2 + (i * 7 + j * 3) % 11, 1 + (i + 2 * j) % 9 }' >matrix8.tsv

while IFS= read -r line; do
	algo=${line%%:*}; rest=${line#*:}; file=$STD/${rest%% *}.coll; ns=${rest#* }
	run "check-$algo" check "$file" -a "$algo" --n-range 2..16
	for n in $ns; do
		run "show-$algo-$n" show "$file" -a "$algo" -n "$n"
		run "show-json-$algo-$n" show "$file" -a "$algo" -n "$n" --format json
		run "show-dot-$algo-$n" show "$file" -a "$algo" -n "$n" --format dot
		run "cost-$algo-$n" cost "$file" -a "$algo" -n "$n" -b 1KiB -e 1GiB -f 64
		run "cost-bw-$algo-$n" cost "$file" -a "$algo" -n "$n" -s 1MiB -s 256MiB --alpha 5us --bw 10GB/s \
			--rank-bw 8GB/s --segments 4
		run "sim-$algo-$n" sim "$file" -a "$algo" -n "$n" -s 4MiB --trace --svg "$OUT/sim-$algo-$n.svg"
		if [ "$n" = 8 ]; then
			for m in racks8 matrix8; do
				run "cost-$m-$algo" cost "$file" -a "$algo" --links $m.tsv -s 16MiB --seg-bytes 1MiB --csv
				run "cost-$m-jit-$algo" cost "$file" -a "$algo" --links $m.tsv -s 16MiB --jitter 0.5 \
					--json
				run "cost-$m-mm-$algo" cost "$file" -a "$algo" --links $m.tsv -s 4MiB --sharing maxmin \
					--round-order off
				run "reorder-$m-$algo" reorder "$file" -a "$algo" --links $m.tsv -s 16MiB --json
				run "reorder-$m-spread-$algo" reorder "$file" -a "$algo" --links $m.tsv -s 16MiB --spread 3 \
					--sim --seg-bytes 4MiB
			done
			run "reorder-exh-$algo" reorder "$file" -a "$algo" --links racks8.tsv -s 1MiB --exhaustive
		fi
		if [ "$n" = 16 ]; then
			run "cost-racks16-$algo" cost "$file" -a "$algo" --links racks16.tsv -s 64MiB --seg-bytes 1MiB
			run "reorder-racks16-$algo" reorder "$file" -a "$algo" --links racks16.tsv -s 64MiB --effort 0.25
		fi
	done
done <<<"$ALGOS"

AR="$STD/ring.coll $STD/rhd.coll $STD/dbt.coll $STD/direct.coll $STD/stragglar.coll $STD/broadcast.coll"
for n in 4 8 16; do
	run "compare-$n" compare $AR -n "$n" -b 1KiB -e 1GiB -f 32 --csv
	run "compare-json-$n" compare $AR -n "$n" -b 1KiB -e 1GiB -f 32 --json --model all \
		--straggler last --svg "$OUT/compare-$n.svg"
	run "compare-sg-$n" compare $AR -a ring,rhd,stragglar -n "$n" -b 1MiB -e 1GiB -f 32 --straggler last
	run "tune-$n" tune $AR $STD/alltoall.coll $STD/binomial.coll -n "$n" --alpha 5us --bw 5GB/s
	run "tune-json-$n" tune $AR -n "$n" --json --straggler last --delay 1ms
done
run "compare-nrange" compare $STD/ring.coll $STD/stragglar.coll -a ring,stragglar --n-range 4..32 -s 1GiB \
	--svg "$OUT/compare-nrange.svg"
run "tune-racks16" tune $STD/ring.coll $STD/rhd.coll $STD/dbt.coll --links racks16.tsv --ranges-only

# Clusters: each build-time choice, and the generated sources.
cat >cl.coll <<'EOF'
import "ring.coll";
import "rhd.coll";
import "dbt.coll";
import "stragglar.coll";
import "binomial.coll";
import "alltoall.coll";
import "policies.coll";
cluster bycost { ranks 8; transport tcp; alpha "5us"; bw "10GB/s";
  allreduce { ring, rhd, dbt } choose by cost; alltoall { alltoall_pairwise, alltoall_bruck } choose by cost; }
cluster reord { ranks 8; transport tcp; links "racks8.tsv"; reorder by cost; allreduce { ring, rhd } choose by cost; }
cluster racks { ranks 8; transport auto; group r0 "0 1 2 3"; group r1 "4 5 6 7"; uplink r0 "1Gbit/s";
  uplink r1 "1Gbit/s"; rank_bw "10Gbit/s"; allreduce { ring, rhd, dbt } choose by cost; }
cluster sauto { ranks 6; transport shm; straggler auto; allreduce { ring below 1KiB; stragglar; }
  broadcast { binomial_bcast; } }
cluster sfixed { ranks 6; transport shm; straggler 2; allreduce { stragglar; } }
cluster railed { ranks 4; transport tcp; rails { tcp "127.0.0.1"; tcp "lo"; } policy nezha; allreduce { ring; } }
cluster atinit { ranks 4; transport tcp; reorder at init; reorder_algo ring; allreduce { ring, rhd } choose by cost; }
cluster gnccl { ranks 2; transport nccl; allreduce { ring, rhd } choose by cost; }
cluster gcuda { ranks 3; transport cuda; align 4KiB; allreduce { ring, rhd, dbt, stragglar } choose by cost; }
EOF
cp "$SRC/examples/lab4.coll" "$SRC/examples/ddp4.coll" .
CLUSTERS="bycost reord racks sauto sfixed railed atinit"
# GPU clusters need nvcc (collc build says so and stops otherwise)
if command -v nvcc >/dev/null 2>&1 || [ -n "${CUDA_HOME:-}" ]; then CLUSTERS="$CLUSTERS gnccl gcuda"; fi
for c in $CLUSTERS; do
	run "build-$c" build cl.coll --cluster $c -o "b-$c"
done
run "build-lab4" build lab4.coll -o b-lab4
run "build-ddp4" build ddp4.coll -o b-ddp4
# the generated files (NAME.h, NAME_plans.c, NAME_gpu.*), not the runtime's
# headers a build copies beside them
for d in b-*; do
	for f in "$d/${d#b-}".h "$d/${d#b-}"_*; do
		case $f in *.so|*.a|*.o) continue ;; esac
		[ -e "$f" ] && sed "s|$WORK|WORK|g; s|$SRC|SRC|g" "$f" >"$OUT/gen-${d#b-}-$(basename "$f")"
	done
done
echo "snapshot: $(ls "$OUT" | wc -l) files in $OUT"
