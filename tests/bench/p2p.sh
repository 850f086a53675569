#!/bin/bash
# p2p.sh - coll's point-to-point messages (coll_send/coll_recv, rt_p2p bench)
# against Open MPI's MPI_Send/MPI_Recv, a ping-pong between two ranks on one
# host, measured in the same run.
#
#   tests/bench/p2p.sh [[-build] DIR] [-r 3]
#
# Each pass runs coll over shm, coll over tcp (loopback) and Open MPI with
# shared memory (btl self,vader), interleaved; the table shows each
# column's median one-way time (half a round trip, us) over the passes,
# coll shm / MPI as a ratio (above 1: coll is slower), and one memcpy of
# the same bytes on this machine as the physical reference.
[ -z "${BASH_VERSION:-}" ] && exec bash "$0" "$@"
set -u
cd "$(dirname "$0")/../.."
B=build REPS=3
while [ $# -gt 0 ]; do
	case "$1" in
	-build) B=$2; shift ;;
	-r) REPS=$2; shift ;;
	-*) echo "p2p.sh: unknown option $1" >&2; exit 2 ;;
	*) B=$1 ;;
	esac
	shift
done
OUT=$B/bench
mkdir -p "$OUT"
[ -x "$B/tests/rt_p2p" ] || { echo "p2p.sh: $B/tests/rt_p2p not built (make rt-tests)" >&2; exit 1; }
HAVE_MPI=0
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
	mpicc -O2 -o "$OUT/mpi_pingpong" tests/bench/mpi_pingpong.c && HAVE_MPI=1
fi
ROOTFLAG=""
[ "$(id -u)" = 0 ] && ROOTFLAG=--allow-run-as-root
rm -f "$OUT"/p2p_*.txt
for ((rep = 1; rep <= REPS; rep++)); do
	for tp in shm tcp; do
		"$B/collrun" -np 2 --no-prefix --timeout 300 --transport $tp "$B/tests/rt_p2p" bench |
			grep '^p2p ' >>"$OUT/p2p_$tp.txt" || { echo "p2p.sh: rt_p2p over $tp failed" >&2; exit 1; }
	done
	if [ $HAVE_MPI = 1 ]; then
		mpirun $ROOTFLAG --oversubscribe --mca btl self,vader -np 2 "$OUT/mpi_pingpong" >>"$OUT/p2p_mpi.txt" ||
			{ echo "p2p.sh: mpi_pingpong failed" >&2; exit 1; }
	fi
done
# median one-way us per size: file -> "bytes us" lines
med() { awk '{print $3, $5}' "$1" | sort -k1,1n -k2,2g | awk '
	function flush() { if (k) printf "%s %s\n", key, (k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2) }
	$1 != key { flush(); key = $1; k = 0 }
	{ v[++k] = $2 }
	END { flush() }'; }
memcpy_us() { awk '{print $3, $(NF-3)}' "$OUT/p2p_shm.txt" | sort -k1,1n -k2,2g | awk '$1 != k {k = $1; print}'; }
med "$OUT/p2p_shm.txt" >"$OUT/p2p_shm.med"
med "$OUT/p2p_tcp.txt" >"$OUT/p2p_tcp.med"
[ $HAVE_MPI = 1 ] && med "$OUT/p2p_mpi.txt" >"$OUT/p2p_mpi.med" || : >"$OUT/p2p_mpi.med"
memcpy_us >"$OUT/p2p_memcpy.med"
echo "# ping-pong between 2 ranks, one-way us, medians of $REPS passes$([ $HAVE_MPI = 1 ] || echo '; no MPI here')"
printf "%10s %10s %10s %10s %9s %10s\n" bytes "coll shm" "coll tcp" "Open MPI" "shm/MPI" memcpy
join "$OUT/p2p_shm.med" "$OUT/p2p_tcp.med" | join -a 1 - "$OUT/p2p_mpi.med" | join - "$OUT/p2p_memcpy.med" |
	awk 'NF == 5 { printf "%10d %10.2f %10.2f %10.2f %9.2f %10.2f\n", $1, $2, $3, $4, $2 / $4, $5 }
	     NF == 4 { printf "%10d %10.2f %10.2f %10s %9s %10.2f\n", $1, $2, $3, "-", "-", $4 }'
