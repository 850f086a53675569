#!/bin/bash
# netns_rails.sh - two rails at once on emulated hosts (make bench-rails).
#
#   tests/bench/netns_rails.sh [-build DIR] [-n "4 8"] [-max 64M] [-iters 6] [-rounds 11] [-quick]
#                              [-calls 1000] [-flaps 10] [-queue MS]
#
# For each network -- two homogeneous rails (2 x 200 Mbit/s) and two
# heterogeneous ones (200 + 60 Mbit/s), every host link shaped with tc tbf
# (tests/netns/testbed.sh) -- and each n, ring allreduce (fp32 sum) from
# 1 KiB to MAX over: rail 0 alone, rail 1 alone (rails with one rail:
# tcp:eth0, tcp:eth1), both rails with the nezha policy (the default) and
# both with `equal` (split=equal), one rank per namespace.  Per size it
# prints each run's time and:
#   x best   the best single rail's time / the two rails' time (targets:
#            >= 1.85 from 4 MiB on the homogeneous network; >= 1/1.05 at
#            1 KiB: a small message must not pay for the second rail).
#            The best rail is the one of the higher tc rate, and on equal
#            rates (one network, measured twice) its time is the mean of
#            the two runs: taking the lower of two noisy runs picks the
#            luckier draw and favours the single rail by their scatter
#            (at 1 KiB, 8 ranks on 2 cores, rail 0 and rail 1 alone differ
#            by up to 28% in one round).  The 1 KiB line also prints the
#            ratio against the lower of the two, for comparison.
#   of sum   the two rails' summed capacity against what the split got,
#            two ways.  measured: the time the two rails would take if
#            their single-rail rates of this run simply added up,
#            1/(1/t0 + 1/t1), over the split's time -- the heterogeneous
#            target, >= 0.95 from 4 MiB.  nominal: ring busbw (size *
#            2(n-1)/n / time, what every host link carries) over the sum of
#            the tc rates.  The target is judged on measured capacity
#            because no TCP flow reaches a tbf's nominal rate: the rate
#            counts Ethernet, IP and TCP headers (about 4.5% at MTU 1500),
#            and a ring's steps leave each link idle between them, so one
#            rail alone reaches about 0.89 of its nominal rate here.
# Sizes up to 64 KiB run 300 calls, ROUNDS times interleaved (-rounds,
# 11), medians kept (the 1 KiB target is judged on the median of each
# round's own ratio); larger ones ITERS calls once.
# Then, on the homogeneous network with n = 4: the balancer (shares of
# 4 MiB messages after 100 calls against after 300, heterogeneous network;
# target within 5 points), and failover: CALLS checked 1 MiB allreduces
# (-c) while rail 0 of host 1 goes down and up FLAPS times at random
# moments (testbed.sh flap, 300 ms down / 1500 ms up on average): wrong
# elements (target 0), failovers and rejoins, the longest time from a
# rail's last sign of life to the first acknowledgement of its data on
# the survivor (target < 200 ms), and the run's throughput against a run
# of the same calls without flaps.  memcpy's rate is printed first as the
# machine's physical reference.  Exit status 0 when every target is met,
# 1 when one is not, 2 when it cannot run (not root, no namespaces,
# nothing built).  -quick: n = 4, up to 16 MiB, 200 calls, 3 flaps.
#
# -queue MS: every shaper queues at most MS ms beyond its burst
# (testbed.sh --queue); by default the testbed's 50 ms queue, on which
# every number of tests/results/rails.md was measured.  The depth moves the results
# both ways (tests/results/rails.md): a byte queued in a rail's shaper is a byte
# no scheduler can move to the other rail, and at 5 ms unequal rails (n =
# 4, 4 MiB) got 0.97 of their sum where 50 ms gives 0.88-0.95, but equal
# rails got 1.68x (n = 4) and 1.55x (n = 8) where 50 ms gave 1.87-1.89x
# (both measured before the drains' average in runtime/transport/rails/).
[ -z "${BASH_VERSION:-}" ] && exec bash "$0" "$@"
set -u
cd "$(dirname "$0")/../.."
B=build NS="4 8" MAX=64M ITERS=6 CALLS=1000 FLAPS=10 ROUNDS=11 QOPT=()
while [ $# -gt 0 ]; do
	case "$1" in
	-build) B=$2; shift ;;
	-n) NS=$2; shift ;;
	-max) MAX=$2; shift ;;
	-iters) ITERS=$2; shift ;;
	-calls) CALLS=$2; shift ;;
	-flaps) FLAPS=$2; shift ;;
	-rounds) ROUNDS=$2; shift ;;
	-queue) QOPT=(--queue "$2"); shift ;;   # testbed.sh checks the value
	-quick) NS=4 MAX=16M CALLS=200 FLAPS=3 ;;
	*) echo "netns_rails.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
case "$ROUNDS" in
''|*[!0-9]*|0) echo "netns_rails.sh: -rounds wants a positive whole number, not '$ROUNDS'" >&2; exit 2 ;;
esac
TB=tests/netns/testbed.sh
CB="$B/collbench"
CRUN="$B/collrun"
for p in "$CRUN" "$CB"; do
	[ -x "$p" ] || { echo "netns_rails.sh: $p not built (make all)" >&2; exit 2; }
done
if ! why=$($TB check 2>&1 >/dev/null); then
	echo "netns_rails.sh: skipped: $why" >&2
	exit 2
fi
PFX="rb$$"
PFX=${PFX:0:9}
trap '$TB down --prefix $PFX >/dev/null 2>&1' EXIT INT TERM
fail=0

echo "# memcpy (physical reference, one process):"
"$CB" --memcpy -b 64M -e 64M -n 5 | grep -v '^#' | sed 's/^/#   /'

# Rows "size,time_us" of several runs -> each size's median time, in size order.
median() {
	sort -t, -k1,1n -k2,2g | awk -F, '{ t[$1] = t[$1] " " $2; k[$1]++ }
	END { for (s in t) { split(substr(t[s], 2), v, " "); m = v[int((k[s] + 1) / 2)]; print s "," m } }' | sort -t, -k1,1n
}

# One collbench run on the testbed: prints its CSV rows (size,time_us).
run() {   # n rails policy extra...
	local n=$1 rails=$2 pol=$3
	shift 3
	"$CRUN" -np "$n" --timeout 900 --no-prefix --netns "${PFX}h%d" "$CB" --rails "$rails" --policy "$pol" \
		-f stdlib/ring.coll -a ring "$@" --csv 2>&1 | awk -F, '/^allreduce,/ { print $5 "," $12 }'
}

# The best single rail's time from rail 0's and rail 1's (see "x best"
# above); awk programs that use it get r0 and r1, the rails' tc rates.
BEST='
function bestrail(t0, t1) { return r0 == r1 ? (t0 + t1) / 2 : r0 > r1 ? t0 : t1 }'

for net in homogeneous heterogeneous; do
	if [ $net = homogeneous ]; then rates=200mbit,200mbit; r0=200; r1=200; else rates=200mbit,60mbit; r0=200; r1=60; fi
	for n in $NS; do
		$TB down --prefix "$PFX" >/dev/null 2>&1
		if ! $TB up -q --hosts "$n" --rails 2 --rate $rates "${QOPT[@]}" --prefix "$PFX" >/dev/null; then
			echo "netns_rails.sh: testbed.sh up failed" >&2
			exit 2
		fi
		# Small sizes are latency: 300 calls each, the four runs interleaved
		# ROUNDS times and each size's median kept, so that a 5% target is
		# not judged on one run's noise (with 8 ranks on 2 cores, rail 0
		# alone and rail 1 alone, the same network, differ by up to 28% in
		# one run: three medians still missed by that).  The 1 KiB verdict
		# is the median of each round's own ratio (the best single rail of
		# that round over both rails in it): runs next to each other share
		# the machine's moment (the times drift by 40% within a minute),
		# where a ratio of medians can pair one round's rail with
		# another's.  Rounds still scatter (0.76-1.30 in one run; 0.77-1.07
		# in another, whose median of seven, 0.948, missed the target where
		# the same rails had given 1.071 the run before), hence eleven: an
		# odd count, the median a round.  Large sizes: ITERS calls, once.
		small=(-b 1K -e 64K -f 4 -n 300 -w 20)
		large=(-b 256K -e "$MAX" -f 4 -n "$ITERS" -w 1 --iter-bytes 64M)
		a="" b="" c="" d="" pair="" pmin=""
		for rep in $(seq "$ROUNDS"); do
			ra=$(run "$n" tcp:eth0 cold=always "${small[@]}")
			rb=$(run "$n" tcp:eth1 cold=always "${small[@]}")
			rc=$(run "$n" tcp:eth0,tcp:eth1 cold=auto,split=throughput "${small[@]}")
			d+=$(run "$n" tcp:eth0,tcp:eth1 cold=auto,split=equal "${small[@]}")$'\n'
			a+=$ra$'\n' b+=$rb$'\n' c+=$rc$'\n'
			# this round's ratio against the best rail, and against the lower of the two
			read -r x y < <(printf '%s\n%s\n%s\n' "$ra" "$rb" "$rc" | awk -F, -v r0=$r0 -v r1=$r1 '$1 == 1024 { t[++k] = $2 }
				END { if (k == 3 && t[3] > 0) printf "%.3f %.3f\n", bestrail(t[1], t[2]) / t[3],
					(t[1] < t[2] ? t[1] : t[2]) / t[3] }'"$BEST")
			pair+=${x:+$x } pmin+=${y:+$y }
		done
		p1k=$(printf '1024,%s\n' $pair | median | cut -d, -f2)
		p1kmin=$(printf '1024,%s\n' $pmin | median | cut -d, -f2)
		a=$(printf '%s' "$a" | median)$'\n'$(run "$n" tcp:eth0 cold=always "${large[@]}")
		b=$(printf '%s' "$b" | median)$'\n'$(run "$n" tcp:eth1 cold=always "${large[@]}")
		c=$(printf '%s' "$c" | median)$'\n'$(run "$n" tcp:eth0,tcp:eth1 cold=auto,split=throughput "${large[@]}")
		d=$(printf '%s' "$d" | median)$'\n'$(run "$n" tcp:eth0,tcp:eth1 cold=auto,split=equal "${large[@]}")
		echo
		echo "# $net rails ($r0 + $r1 Mbit/s each way, queues: ${QOPT[1]:-default}${QOPT:+ ms}), n = $n, ring allreduce fp32; times in ms"
		echo "# of sum: ring busbw over the two rails' summed capacity, measured (each rail alone, this run) / nominal (tc rate)"
		echo "# 1 KiB, nezha x best within each round: $pair-> median ${p1k:-?} (against the lower of rail 0 and rail 1: $pmin-> ${p1kmin:-?})"
		paste -d, <(echo "$a") <(echo "$b") <(echo "$c") <(echo "$d") | awk -F, -v n="$n" -v net=$net -v p1k="${p1k:-0}" \
			-v r0=$r0 -v r1=$r1 -v cap=$(( (r0 + r1) * 125000 )) "$BEST"'
		BEGIN { printf "%12s %10s %10s %10s %10s %8s %8s %15s %15s\n", "bytes", "rail0", "rail1", "nezha", "equal",
			"nezha", "equal", "nezha", "equal"
			printf "%12s %10s %10s %10s %10s %8s %8s %15s %15s\n", "", "", "", "", "", "x best", "x best", "of sum meas/nom", "of sum meas/nom" }
		{ s = $1; ta = $2 / 1e3; tb = $4 / 1e3; tc = $6 / 1e3; td = $8 / 1e3
		  best = bestrail(ta, tb)
		  both = 1 / (1 / ta + 1 / tb)   # the time if the two rails added up perfectly
		  bw = s * 2 * (n - 1) / n
		  printf "%12d %10.3f %10.3f %10.3f %10.3f %8.2f %8.2f %7.2f/%-7.2f %7.2f/%-7.2f\n", s, ta, tb, tc, td, best / tc, best / td,
			both / tc, bw / (tc / 1e3) / cap, both / td, bw / (td / 1e3) / cap
		  if (s == 1024 && p1k < 1 / 1.05) { bad = bad " 1KiB:" p1k }
		  if (s >= 4194304 && net == "homogeneous" && best / tc < 1.85) { bad = bad " " s ":" best / tc "x" }
		  if (s >= 4194304 && net == "heterogeneous" && both / tc < 0.95) { bad = bad " " s ":" both / tc }
		}
		END { if (bad != "") { print "# target missed:" bad; exit 1 } print "# targets met" }' || fail=1
	done
done

# --- the balancer: 4 MiB shares after 100 and after 300 calls (heterogeneous) ---
$TB down --prefix "$PFX" >/dev/null 2>&1
$TB up -q --hosts 4 --rails 2 --rate 200mbit,60mbit "${QOPT[@]}" --prefix "$PFX" >/dev/null || exit 2
shares() {   # calls -> the rail-0 share of the 1 MiB class (4 MiB ring, n = 4: 1 MiB messages)
	"$CRUN" -np 4 --timeout 900 --no-prefix --netns "${PFX}h%d" "$CB" --rails tcp:eth0,tcp:eth1 \
		-f stdlib/ring.coll -a ring -b 4M -e 4M -n "$1" -w 0 2>&1 |
		awk '/# rail table +1048576 B/ { print $(NF-1) }' | tr -d %
}
s100=$(shares 100)
s300=$(shares 300)
echo
echo "# balancer (200 + 60 Mbit/s, 1 MiB messages): rail 0 share after 100 calls ${s100:-?}%, after 300 calls ${s300:-?}% (rates: $((20000 / 260))%)"
awk -v a="${s100:-0}" -v b="${s300:-100}" 'BEGIN { d = a - b; if (d < 0) d = -d
	if (d > 5) { print "# target missed: more than 5 points apart"; exit 1 } print "# target met" }' || fail=1

# --- failover ---------------------------------------------------------------------
$TB down --prefix "$PFX" >/dev/null 2>&1
$TB up -q --hosts 4 --rails 2 --rate 200mbit,200mbit "${QOPT[@]}" --prefix "$PFX" >/dev/null || exit 2
fo() {
	"$CRUN" -np 4 --timeout 1800 --no-prefix --netns "${PFX}h%d" "$CB" --rails tcp:eth0,tcp:eth1 \
		-f stdlib/ring.coll -a ring -b 1M -e 1M -n "$CALLS" -w 0 -c
}
calm=$(fo)
out=$(mktemp)
fo >"$out" 2>&1 &
job=$!
sleep 2
TESTBED_PREFIX=$PFX $TB flap --host 1 --rail 0 --count "$FLAPS" --down-ms 300 --up-ms 1500 --seed 7 >/dev/null
wait $job
echo
echo "# failover: $CALLS checked 1 MiB ring allreduces, n = 4, rail 0 of host 1 down and up $FLAPS times"
t_calm=$(printf '%s\n' "$calm" | awk '$1 == 1048576 { print $6 }')
t_flap=$(awk '$1 == 1048576 { print $6 }' "$out")
grep -E '^# (checked|rails:)' "$out" | sed 's/^/  /'
echo "  time per call: ${t_calm:-?} us without flaps, ${t_flap:-?} us with them"
awk -v f="$out" 'BEGIN { bad = ""
	while ((getline l < f) > 0) {
		if (l ~ /# checked: /) { split(l, w, " "); if (w[3] != 0) bad = bad " wrong:" w[3] }
		if (l ~ /# rails: /) { match(l, /at most [0-9.]+ ms/); m = substr(l, RSTART + 8, RLENGTH - 11) + 0
			if (m >= 200) bad = bad " reroute:" m "ms"
			match(l, /failovers [0-9]+/); if (substr(l, RSTART + 10, RLENGTH - 10) + 0 < 1) bad = bad " no-failover" }
	}
	if (bad != "") { print "# target missed:" bad; exit 1 } print "# targets met" }' || fail=1
rm -f "$out"
exit $fail
