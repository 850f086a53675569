#!/bin/bash
# hostmodel.sh - how often the cost model picks the fastest algorithm on one
# host over shared memory, with and without the host model (memory
# bandwidth, reduce rate, cores; runtime/model/README.md, "One host").
#
#   tests/bench/hostmodel.sh [[-build] DIR] [-n "2 4"] [-t "allreduce"] [-b 1K] [-e 64M] [-r 5]
#
# (bench.tcl runs it as `sh hostmodel.sh DIR`; it re-executes itself in bash.)
# For each rank count n and collective (default allreduce; also
# reduce_scatter, allgather, broadcast, alltoall):
#   1. collprobe over shm measures the host (pairs, memory bandwidth, the
#      reduce rate of a core, the cores) into DIR/bench/host-nN.tsv;
#   2. every stdlib algorithm of the collective is timed with collbench
#      (fp32 sum, out of place, sizes x4), the candidates interleaved and
#      the whole set repeated -r times (default 5); the table shows each
#      one's median, and the spread (largest / smallest median ratio of
#      the passes, in %) of the fastest;
#   3. the host-aware model's choice (`collc tune --links DIR/bench/host-nN.tsv`)
#      and the uniform model's (`--alpha 5us --bw 5GB/s`, collc's flags
#      before the host model) are looked up per size, with their measured
#      medians and how far each is above the fastest (the miss, %).
# memcpy's bandwidth (collbench --memcpy, one process) is beside each size.
# Target: the host-aware choice within 10% of the fastest at every size.
# Never an assertion: a shared 2-core machine is too noisy for one.
# Raw CSVs are kept in DIR/bench/hostmodel/.
[ -z "${BASH_VERSION:-}" ] && exec bash "$0" "$@"
set -u
cd "$(dirname "$0")/../.."
B=build NS="2 4" COLLS=allreduce MIN=1K MAX=64M REPS=5
while [ $# -gt 0 ]; do
	case "$1" in
	-build) B=$2; shift ;;
	-n) NS=$2; shift ;;
	-t) COLLS=$2; shift ;;
	-r) REPS=$2; shift ;;
	-b) MIN=$2; shift ;;
	-e) MAX=$2; shift ;;
	-*) echo "hostmodel.sh: unknown option $1" >&2; exit 2 ;;
	*) B=$1 ;;
	esac
	shift
done
OUT=$B/bench/hostmodel
mkdir -p "$OUT"
bytes() { case "$1" in *K) echo $((${1%K} * 1024)) ;; *M) echo $((${1%M} * 1048576)) ;; *G) echo $((${1%G} * 1073741824)) ;; *) echo "$1" ;; esac; }
human() { awk -v b="$1" 'BEGIN { if (b >= 1073741824) printf "%gG", b / 1073741824; else if (b >= 1048576) printf "%gM", b / 1048576; else if (b >= 1024) printf "%gK", b / 1024; else printf "%d", b }'; }
LO=$(bytes $MIN) HI=$(bytes $MAX)
for x in collc collbench collrun collprobe; do
	if [ ! -x "$B/$x" ]; then
		make --no-print-directory -s B="$B" "$B/$x" >/dev/null || { echo "hostmodel.sh: cannot build $B/$x" >&2; exit 1; }
	fi
done
export COLL_TRANSPORT=shm
UNIFORM="--alpha 5us --bw 5GB/s"

# The stdlib algorithms of a collective at n (those collc can run for n).
algos() { # coll n
	"$B/collc" compare stdlib/*.coll -n "$2" $UNIFORM -s 1K --csv 2>/dev/null |
		awk -F, -v c="$1" 'NR > 1 && $2 == c {print $1}' | sort -u
}
# The file that defines an algorithm.
file_of() { grep -l "^algorithm $1 *:" stdlib/*.coll | head -1; }
# collc tune's choice for size b from its --ranges-only --csv output in file f
choice() { awk -F, -v c="$2" -v b="$3" '$1 == "range" && $2 == c && $4 <= b && b <= $5 {print $6; exit}' "$1"; }

echo "# hostmodel: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load:$(uptime | sed 's/.*load average://')"
echo "# sizes $MIN..$MAX x4, fp32 sum, out of place, transport shm, $REPS passes, candidates interleaved"
"$B/collbench" --memcpy -b $LO -e $HI -f 4 -n 50 -w 3 --iter-bytes $((4 << 30)) --csv 2>/dev/null |
	awk -F, 'NR > 1 {print $5 "," $13}' >"$OUT/memcpy.csv"

for n in $NS; do
	t0=$(date +%s.%N)
	"$B/collrun" -np $n --no-prefix "$B/collprobe" -o "$OUT/host-n$n.tsv" >"$OUT/probe-n$n.log" 2>&1 ||
		{ echo "hostmodel.sh: collprobe failed at n=$n: $(tail -3 "$OUT/probe-n$n.log")" >&2; exit 1; }
	t1=$(date +%s.%N)
	echo "# n=$n: probed in $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s:" \
		$(grep -E '^(mem-bw|reduce-bw|cores|\* +\*)' "$OUT/host-n$n.tsv" | tr '\t' ' ' | sed 's/  */ /g' | paste -sd';' -)
	"$B/collc" tune stdlib/*.coll -n $n --links "$OUT/host-n$n.tsv" -b $LO -e $HI -f 4 --ranges-only --csv \
		>"$OUT/tune-host-n$n.csv" 2>/dev/null
	"$B/collc" tune stdlib/*.coll -n $n $UNIFORM -b $LO -e $HI -f 4 --ranges-only --csv \
		>"$OUT/tune-uniform-n$n.csv" 2>/dev/null
	for coll in $COLLS; do
		cands=$(algos $coll $n)
		rm -f "$OUT/$coll-n$n"_*.csv
		for ((rep = 1; rep <= REPS; rep++)); do
			# rotate the order each pass, so no candidate always runs first
			set -- $cands
			for ((i = 1; i < rep; i++)); do set -- "$@" "$1"; shift; done
			for a in "$@"; do
				f=$(file_of $a)
				timeout 300 "$B/collrun" -np $n --no-prefix "$B/collbench" -f "$f" -a $a -t $coll \
					-b $LO -e $HI -f 4 -n 50 -w 3 --iter-bytes $((1 << 30)) --csv >"$OUT/raw.csv" 2>"$OUT/raw.err" ||
					{ echo "#   $a n=$n pass $rep failed: $(tail -1 "$OUT/raw.err")"; continue; }
				awk -F, -v r=$rep '$1 != "collective" && NF > 12 {print $5 "," r "," $12}' "$OUT/raw.csv" \
					>>"$OUT/$coll-n${n}_$a.csv"
			done
		done
		echo
		echo "# $coll, n=$n: time in us (median of $REPS passes); spread: the fastest's largest / smallest pass - 1"
		printf "%6s %8s | %-16s %9s %6s | %-16s %9s %6s | %-16s %9s %6s\n" size "memcpy" fastest "us" spread \
			"host model" "us" "miss" "uniform model" "us" "miss"
		for ((b = LO; b <= HI; b *= 4)); do
			best="" bt="" bs=""
			for a in $cands; do
				[ -f "$OUT/$coll-n${n}_$a.csv" ] || continue
				read -r m s < <(awk -F, -v b=$b '$1 == b {print $3}' "$OUT/$coll-n${n}_$a.csv" | sort -g |
					awk '{v[++k] = $1} END { if (!k) exit
					m = k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
					printf "%.2f %.0f\n", m, 100 * (v[k] / v[1] - 1) }')
				[ -n "${m:-}" ] || continue
				echo "$a $m" >>"$OUT/med.tmp"
				if [ -z "$bt" ] || awk -v x="$m" -v y="$bt" 'BEGIN {exit !(x < y)}'; then best=$a bt=$m bs=$s; fi
			done
			med() { awk -v a="$1" '$1 == a {print $2; exit}' "$OUT/med.tmp"; }
			miss() { awk -v x="$1" -v y="$bt" 'BEGIN { if (x == "") print "-"; else printf "%.0f%%", 100 * (x / y - 1) }'; }
			hc=$(choice "$OUT/tune-host-n$n.csv" $coll $b) uc=$(choice "$OUT/tune-uniform-n$n.csv" $coll $b)
			ht=$(med "$hc") ut=$(med "$uc")
			printf "%6s %8s | %-16s %9s %5s%% | %-16s %9s %6s | %-16s %9s %6s\n" $(human $b) \
				"$(awk -F, -v b=$b '$1 == b {print $2 "GB/s"}' "$OUT/memcpy.csv")" "$best" "$bt" "$bs" \
				"${hc:--}" "${ht:--}" "$(miss "$ht")" "${uc:--}" "${ut:--}" "$(miss "$ut")"
			rm -f "$OUT/med.tmp"
		done
	done
done
