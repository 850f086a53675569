#!/bin/bash
# tuning.sh - how good is a choice: the algorithm chosen by measurement
# (collbench --tune) and the one the cost model chooses, each timed against
# the fastest candidate of an independent measurement in the same run; the
# time a start takes to tune at init, and from its cache.
#
#   tests/bench/tuning.sh [-build DIR] [-n "2 4"] [-tcp "4 8"] [-netns "4 8"] [-rate 1gbit]
#                         [-b 1K] [-e 64M] [-r 5] [-t COLL]
#
# For each rank count over shm (-n), over tcp on this host (-tcp), and over
# tcp on the emulated cluster (-netns: one host per rank, links shaped at
# -rate; tests/netns/README.md; root; sizes up to -e's 4M at most there):
#   1. collbench --tune A: every stdlib candidate of the collective (-t,
#      default allreduce), sizes -b..-e by 4, -r interleaved repetitions,
#      medians: the measured choice per size;
#   2. collbench --tune B, the same again: the reference;
#   3. for each size, B's fastest candidate and its time; A's choice and
#      the cost model's (collc tune, the PMPI library's default link model
#      --alpha 5us --bw 5GB/s), each priced at its time in B: the miss is
#      that time over the fastest's, minus one.
# A miss below the fastest's spread in B is noise, not a wrong choice:
# the table prints the spread beside it.  Then tuning at init
# (COLL_TUNE=init, rt_coll) at each rank count: the first start (measures,
# writes the cache) and the second (reads it), as rank 0 reports them.
# memcpy's bandwidth (collbench --memcpy, 64 MiB) is printed first, the
# machine's load with it.
[ -z "${BASH_VERSION:-}" ] && exec bash "$0" "$@"
set -u
cd "$(dirname "$0")/../.."
B=build NS="2 4" TCPS="" NETNS="" RATE=1gbit MIN=1K MAX=64M REPS=5 COLL=allreduce INNER=""
while [ $# -gt 0 ]; do
	case "$1" in
	-netns) NETNS=$2; shift ;;
	-rate) RATE=$2; shift ;;
	--inner) INNER=$2; shift ;;
	-build) B=$2; shift ;;
	-n) NS=$2; shift ;;
	-tcp) TCPS=$2; shift ;;
	-r) REPS=$2; shift ;;
	-b) MIN=$2; shift ;;
	-e) MAX=$2; shift ;;
	-t) COLL=$2; shift ;;
	*) echo "tuning.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
OUT=$B/bench/tuning
mkdir -p "$OUT"
CB=$B/collbench CRUN=$B/collrun COLLC=$B/collc RTC=$B/tests/rt_coll
for f in "$CB" "$CRUN" "$COLLC" "$RTC"; do
	[ -x "$f" ] || { echo "tuning.sh: $f not built (make all rt-tests)" >&2; exit 1; }
done
NSARGS=()
if [ -n "$INNER" ]; then   # inside the emulated cluster: tcp across its hosts
	NSARGS=(--netns "$TESTBED_NETNS")
fi
[ -z "$INNER" ] && echo "# tuning.sh: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$INNER" ] && "$CB" --memcpy -b 64M -e 64M -n 5 | awk '$1 ~ /^[0-9]+$/ {printf "# memcpy 64 MiB: %s GB/s\n", $NF == "N/A" ? $(NF-1) : $NF}'

# Per size of a tuning file: "bytes winner cand=us ..." with times in us.
rows() { awk -v c="$COLL" '$1 == c {line = $2 " " $3; for (i = 4; i <= NF; i++) if ($i ~ /=.*us$/) {sub(/us$/, "", $i); line = line " " $i} print line}' "$1"; }
# Per size of a tuning file: "bytes spread".
spreads() { awk -v c="$COLL" '$1 == c {for (i = 4; i <= NF; i++) if ($i ~ /^spread=/) {sub(/^spread=/, "", $i); print $2, $i}}' "$1"; }

report() { # tp n
	local tp=$1 n=$2 a=$OUT/$1-n$2-A.tune b=$OUT/$1-n$2-B.tune
	for f in $a $b; do
		"$CRUN" -np $n --timeout 600 --transport $tp "${NSARGS[@]}" "$CB" --tune $f -f stdlib/*.coll -t $COLL -b $MIN -e $MAX -f 4 \
			--reps $REPS >"$f.log" 2>&1 || { echo "tuning.sh: collbench --tune $tp n=$n failed:" >&2; tail -5 "$f.log" >&2; return 1; }
	done
	# the model's choice per size: collc tune's ranges
	"$COLLC" tune stdlib/*.coll -n $n --alpha 5us --bw 5GB/s --ranges-only -b $MIN -e $MAX -f 4 2>/dev/null |
		awk -v c="$COLL" '/^# / {on = ($2 == c ",")} on && $1 ~ /^[0-9]+$/ {print $1, $2, $3}' >"$OUT/$tp-n$n.model"
	spreads $b >"$OUT/$tp-n$n.spread"
	echo
	echo "# $COLL over $tp, n=$n: us per call in run B (median of $REPS); each choice priced at its time in B"
	printf "%10s %-16s %9s %7s | %-16s %7s | %-16s %7s\n" bytes fastest us spread measured miss model miss
	join <(rows $a | sort -k1,1) <(rows $b | sort -k1,1) | sort -k1,1n |
	awk -v model="$OUT/$tp-n$n.model" -v sf="$OUT/$tp-n$n.spread" '
		BEGIN {
			while ((getline l < model) > 0) { split(l, m, " "); nm++; lo[nm] = m[1]; hi[nm] = m[2]; al[nm] = m[3] }
			while ((getline l < sf) > 0) { split(l, m, " "); sp[m[1]] = m[2] }
		}
		function model_choice(bytes,   i) { for (i = 1; i <= nm; i++) if (bytes + 0 >= lo[i] + 0 && bytes + 0 <= hi[i] + 0) return al[i]; return "?" }
		{
			# bytes winnerA cand=us... winnerB cand=us...
			bytes = $1; wa = $2; i = 3; split("", tb)
			while (i <= NF && $i ~ /=/) i++
			wb = $i; i++
			while (i <= NF && $i ~ /=/) { split($i, kv, "="); tb[kv[1]] = kv[2]; i++ }
			tbest = tb[wb]; wm = model_choice(bytes)
			ma = (wa in tb) ? tb[wa] / tbest - 1 : 9.99
			mm = (wm in tb) ? tb[wm] / tbest - 1 : 9.99
			printf "%10d %-16s %9.2f %7s | %-16s %6.1f%% | %-16s %6.1f%%\n", bytes, wb, tbest, (bytes in sp) ? sp[bytes] : "-", wa, 100 * ma, wm, 100 * mm
			n++; ok += ma <= 0.10; okm += mm <= 0.10
			if (ma > worst) worst = ma
			if (mm > worstm) worstm = mm
		}
		END { printf "# measured choice within 10%% of the fastest at %d of %d sizes (worst miss %.1f%%); model at %d of %d (worst %.1f%%)\n", ok, n, 100 * worst, okm, n, 100 * worstm }'
}

if [ -n "$INNER" ]; then
	echo "# emulated cluster $TESTBED_PREFIX: $INNER hosts, links shaped at $TESTBED_RATE each way"
	report tcp $INNER
	cache=$OUT/cache-netns-$INNER
	rm -rf "$cache"
	t=()
	for i in 1 2; do
		s=$(COLL_TUNE=init COLL_TUNE_CACHE=$cache COLL_TUNE_VERBOSE=1 "$CRUN" -np $INNER --timeout 120 --transport tcp \
			"${NSARGS[@]}" "$RTC" tuned 2>&1 | sed -n 's/.*choose by measure: .*(\([0-9.]*\) s)$/\1/p' | head -1)
		t+=("${s:--}")
	done
	echo "# tuning at init on the emulated cluster, n=$INNER: first start ${t[0]} s, second (cache) ${t[1]} s"
	exit 0
fi
for n in $NS; do report shm $n; done
for n in $TCPS; do report tcp $n; done
for n in $NETNS; do
	if ! why=$(tests/netns/testbed.sh check 2>&1 >/dev/null); then
		echo "# emulated cluster skipped: $why"
		break
	fi
	e=$MAX
	[ "$(awk -v a="$MAX" 'BEGIN { print (a ~ /[MG]$/ && (a ~ /G$/ || a + 0 > 4)) }')" = 1 ] && e=4M
	tests/netns/testbed.sh run --hosts $n --rate $RATE -q -- "$0" -build "$B" -b $MIN -e $e -r $REPS -t $COLL --inner $n
done

# Tuning at init: rt_coll's plan set (every collective with two or more
# algorithms: allreduce, broadcast, reduce, alltoall), first and second start.
echo
echo "# tuning at init (COLL_TUNE=init, rt_coll's plan set, sizes 1 KiB, 32 KiB, 1 MiB): rank 0's time"
printf "%-4s %3s %10s %10s\n" tp n first second
for spec in $(for n in $NS 8; do echo shm:$n; done; for n in $TCPS; do echo tcp:$n; done); do
	tp=${spec%%:*} n=${spec#*:}
	cache=$OUT/cache-$tp-$n
	rm -rf "$cache"
	t=()
	for i in 1 2; do
		s=$(COLL_TUNE=init COLL_TUNE_CACHE=$cache COLL_TUNE_VERBOSE=1 "$CRUN" -np $n --timeout 120 --transport $tp "$RTC" tuned 2>&1 |
			sed -n 's/.*choose by measure: .*(\([0-9.]*\) s)$/\1/p' | head -1)
		t+=("${s:--}")
	done
	printf "%-4s %3s %9ss %9ss\n" $tp $n "${t[0]}" "${t[1]}"
done
