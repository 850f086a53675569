#!/bin/bash
# pmpi.sh - one unmodified MPI program, its MPI_Allreduce served by
# OpenMPI and then by coll through libcoll_mpi.so, measured in the same run.
#
#   tests/bench/pmpi.sh [[-build] DIR] [-n "2 4"] [-b 1K] [-e 64M] [-r 3] [-x VAR=VALUE ...]
#
# Columns: OpenMPI, coll (through the interposer), x MPI (coll / OpenMPI),
# coll lib (collbench), x lib (coll / coll lib: what the MPI layer costs),
# memcpy (GB/s).
#
# The program is tests/bench/mpi_allreduce.c (fp32 sum, out of place; the
# OpenMPI baseline of runtime.sh), run under mpirun with shared memory
# (btl self,vader) as it is, and again with -x LD_PRELOAD=DIR/libcoll_mpi.so
# (stdlib plans chosen by collc tune, transport auto: shm); -x settings are
# passed to the coll runs (COLL_MPI_LIB=..., COLL_TRANSPORT=...).  A third
# run per pass is coll's own library without MPI: collbench over shm under
# collrun with every stdlib algorithm, choosing by size (what the
# interposer's stdlib plans do, without the MPI layer around them).  Each
# pass runs the three, interleaved; the table shows each column's median
# busbw (GB/s, nccl-tests definition) over the passes, sizes x4 from -b to
# -e, and memcpy's bandwidth on this machine as the physical reference
# beside the ratios (collbench --memcpy, measured in the same run).
[ -z "${BASH_VERSION:-}" ] && exec bash "$0" "$@"
set -u
cd "$(dirname "$0")/../.."
B=build NS="2 4" MIN=1K MAX=64M REPS=3 XS=()
while [ $# -gt 0 ]; do
	case "$1" in
	-build) B=$2; shift ;;
	-n) NS=$2; shift ;;
	-r) REPS=$2; shift ;;
	-b) MIN=$2; shift ;;
	-e) MAX=$2; shift ;;
	-x) XS+=(-x "$2"); shift ;;
	-*) echo "pmpi.sh: unknown option $1" >&2; exit 2 ;;
	*) B=$1 ;;
	esac
	shift
done
OUT=$B/bench
mkdir -p "$OUT"
bytes() { case "$1" in *K) echo $((${1%K} * 1024)) ;; *M) echo $((${1%M} * 1048576)) ;; *G) echo $((${1%G} * 1073741824)) ;; *) echo "$1" ;; esac; }
LO=$(bytes $MIN) HI=$(bytes $MAX)
LIB=$(cd "$B" && pwd)/libcoll_mpi.so
[ -f "$LIB" ] || { echo "pmpi.sh: $LIB not built (make pmpi)" >&2; exit 1; }
mpicc -O2 -o "$OUT/mpi_allreduce" tests/bench/mpi_allreduce.c || exit 1
ROOTFLAG=""
[ "$(id -u)" = 0 ] && ROOTFLAG=--allow-run-as-root

for ((rep = 1; rep <= REPS; rep++)); do
	for n in $NS; do
		FILES=()
		for f in stdlib/*.coll; do FILES+=(-f "$f"); done
		"$B/collrun" -np $n --no-prefix --timeout 900 "$B/collbench" "${FILES[@]}" -b $LO -e $HI -f 4 \
			>"$OUT/pmpi_lib_n${n}_r$rep.raw" 2>"$OUT/pmpi_lib_n${n}_r$rep.err" ||
			{ echo "pmpi.sh: collbench n=$n failed:" >&2; cat "$OUT/pmpi_lib_n${n}_r$rep.err" >&2; exit 1; }
		awk '/^ *[0-9]/ {print $1 "," $9}' "$OUT/pmpi_lib_n${n}_r$rep.raw" >"$OUT/pmpi_lib_n${n}_r$rep.csv"
		for how in mpi coll; do
			pre=()
			[ $how = coll ] && pre=(-x LD_PRELOAD="$LIB" "${XS[@]}")
			mpirun $ROOTFLAG --oversubscribe --mca btl self,vader -np $n "${pre[@]}" "$OUT/mpi_allreduce" $LO $HI 200 4 \
				$((1 << 30)) >"$OUT/pmpi_${how}_n${n}_r$rep.raw" 2>"$OUT/pmpi_${how}_n${n}_r$rep.err" ||
				{ echo "pmpi.sh: $how n=$n failed:" >&2; cat "$OUT/pmpi_${how}_n${n}_r$rep.err" >&2; exit 1; }
			awk -F, 'NR > 1 {print $1 "," $4}' "$OUT/pmpi_${how}_n${n}_r$rep.raw" >"$OUT/pmpi_${how}_n${n}_r$rep.csv"
		done
	done
done
median() { # file... -> bytes,median
	cat "$@" | sort -t, -k1,1n -k2,2g | awk -F, '
		function flush() { if (k) printf "%s,%s\n", key, (k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2) }
		$1 != key { flush(); key = $1; k = 0 }
		{ v[++k] = $2 }
		END { flush() }'
}
look() { awk -F, -v b="$2" '$1 == b {print $2; exit}' "$1"; }
human() { awk -v b="$1" 'BEGIN { if (b >= 1048576) printf "%gM", b / 1048576; else if (b >= 1024) printf "%gK", b / 1024; else printf "%d", b }'; }
"$B/collbench" --memcpy -b $LO -e $HI -f 4 | awk '/^ *[0-9]/ {print $1 "," $9}' >"$OUT/pmpi_memcpy.csv"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
echo "# MPI_Allreduce fp32 sum (tests/bench/mpi_allreduce.c), busbw GB/s, medians of $REPS passes"
echo "# coll: through libcoll_mpi.so; coll lib: collbench with the stdlib, no MPI; memcpy: one process here"
printf "%3s %6s %9s %9s %7s %9s %9s %9s\n" n size OpenMPI coll "x MPI" "coll lib" "x lib" memcpy
for n in $NS; do
	median "$OUT"/pmpi_mpi_n${n}_r*.csv >"$OUT/pmpi_mpi_n$n.csv"
	median "$OUT"/pmpi_coll_n${n}_r*.csv >"$OUT/pmpi_coll_n$n.csv"
	median "$OUT"/pmpi_lib_n${n}_r*.csv >"$OUT/pmpi_lib_n$n.csv"
	for ((b = LO; b <= HI; b *= 4)); do
		m=$(look "$OUT/pmpi_mpi_n$n.csv" $b) c=$(look "$OUT/pmpi_coll_n$n.csv" $b) l=$(look "$OUT/pmpi_lib_n$n.csv" $b)
		mc=$(look "$OUT/pmpi_memcpy.csv" $b)
		printf "%3s %6s %9s %9s %7s %9s %9s %9s\n" $n $(human $b) "${m:--}" "${c:--}" "$(ratio "$c" "$m")" "${l:--}" \
			"$(ratio "$c" "$l")" "${mc:--}"
	done
done
