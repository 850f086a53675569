#!/bin/bash
# netns_reorder.sh - rank reordering on the emulated cluster: probe, search,
# and measure orders against their predictions (`make bench-reorder`).
#
#   tests/bench/netns_reorder.sh [-build DIR] [-configs "8:2:11 8:4:12 16:2:13 16:4:14"]
#                                [-algos "ring rhd dbt"] [-size 16M] [-random 10] [-spread 10] [-iters 2]
#                                [-rounds 1]
#                                [-rate 100mbit] [-oversub 4] [-out DIR] [-summary]
#                                [-retest DIR2] [-sharing tcp|maxmin|alpha=K] [-jitter SIGMA]
#                                [-jitter-samples K]
#                                [-queue MS] [-cc NAME]
#
# Each config N:K:SEED is a testbed (tests/netns/testbed.sh) of N hosts in
# K racks joined by trunks oversubscribed OVERSUB:1, the hosts dealt to
# racks by `--shuffle SEED` (a scrambled placement, as a cloud's random IP
# list gives), host links shaped at RATE each way (-queue MS: every shaper
# queues MS ms beyond its burst, testbed.sh --queue; by default its 50 ms
# queue, on which tests/results/reorder.md's numbers were measured; -cc NAME: TCP's
# congestion control in every host, testbed.sh --cc, by default what the
# kernel gives a new namespace; times.csv records which ran, as
# CONFIG,tcp,NAME), one rank per host over TCP with the socket buffers
# netns_stragglar.sh explains (128 / 256 KiB).
# In it:
#   1. collprobe measures the network (its defaults: 1 MiB exchanges, the
#      fastest of 2) into probe.tsv; its time is the probe time.  2 MiB
#      predicted no better (n16r4: measured/predicted 0.95-1.25 from a
#      2 MiB probe, 0.96-1.22 from 1 MiB) and took 43.8 s where 1 MiB took
#      21.5; 512 KiB overrated every link (rank-bw 16.5 MB/s of 12.5) and
#      predicted 1.03-1.39 (these three with pair bandwidths read from a
#      slope, before the probe spent the shaper's burst first);
#   2. reorder at init is timed for each algorithm (COLL_REORDER=reprobe,
#      then a second start that reads the cache);
#   3. per algorithm: `collc reorder` on probe.tsv gives the reordered
#      order; with the identity, RANDOM random orders (seeded) and SPREAD
#      orders spread over the range of predicted times (`collc reorder
#      --spread`: the i-th about i/SPREAD of the way from the reordered
#      order's predicted time to the highest found, as the rank-reordering
#      paper chose the orders of its Table I) each order is measured
#      (collbench under COLL_PERM, SIZE bytes, 1 warm-up + ITERS calls);
#      with -rounds R every order is launched R times, interleaved (round
#      1 measures every order once, round 2 again in reverse, ...: a drift
#      of the machine over the minutes a run takes falls on every order
#      alike instead of on the orders measured last), each launch a row
#      of OUT/rounds.csv, and an order's time is the mean of its rounds;
#   4. afterwards every measured order is predicted (collc cost --perm,
#      event-driven simulation pipelined in 1 MiB pieces as the executor's
#      TCP messages are, --seg-bytes 1MiB, flows sharing a segment as
#      -sharing says: collc's --sharing, tcp by default; the time the mean
#      over K draws of TCP's luck, collc's --jitter SIGMA --jitter-samples
#      K, SIGMA 1 and K 64 by default, SIGMA 0 for the plain rule: with
#      collc's 8 draws a prediction of n8r4's orders lay 1.2% (rms; up to
#      5.5%) from its mean over 64, about the measured gap between two
#      random orders, and the ranking moved with it) on probe.tsv, and on the
#      testbed's declared network, truth.tsv, to tell probe errors from
#      model errors.  The spread orders of step 3 are walked without the
#      jitter: the walk simulates thousands of orders, and K draws each
#      would make it K times as long or more.  -summary redoes only this
#      step and the summary from OUT/results.csv (the model can change
#      without measuring again).
# Then, per config and algorithm: best vs worst measured, reordered vs the
# median random order, Spearman's rank correlation of predicted and
# measured time over the identity, the random orders and the reordered
# one (as computed, and with predictions equal
# to 3 significant digits counted as ties: orders that cross the trunks
# alike are the same order to the model, and the probe's pair-to-pair
# scatter of a fraction of a percent would otherwise rank them at random;
# max3, the highest Spearman any measurement could reach against those
# tied predictions: when most random orders cross the trunks alike, even
# a perfect model scores below 1, and ties3 = max3 says it ranked every
# order it can tell apart), the same over the reordered and the spread
# orders (the columns after `spread`, their count: the paper's test,
# orders that differ by more than the network's noise), measured /
# predicted per order (all orders), and how many are predicted within
# 15% of their measured time (in15%: |pred - meas| <= 0.15 meas).  Also
# `collc reorder`'s search time at N = 512 (ring) and 64 (rhd, dbt) on a
# scrambled 8-rack network.  Raw rows: OUT/results.csv; summary on stdout
# and in OUT/summary.txt.  -retest DIR2 (another run's OUT, same configs
# and seeds) adds how far two measurements of the same orders agree: per
# config and algorithm, over the orders both runs measured with the same
# permutation, Spearman of one run's measured times against the other's
# (no model can rank orders more consistently than that) and of this
# run's predictions against the two runs' mean.  With -rounds R >= 2 the
# summary also gives the same within the run: over the identity, random
# and reordered orders, Spearman of one round's times against another's
# (the lowest and the mean over pairs of rounds), and of one round's
# against the other rounds' mean (the mean over rounds).
# Targets (printed at the
# end): ring reordered >= 2x faster than the median random order at >= 16
# MiB on 2 racks; Spearman >= 0.9 per algorithm; predicted within 15% of
# measured; probe n = 16 < 30 s; reorder at init n = 16 < 3 s; search
# times < 10 s.
[ -z "${BASH_VERSION:-}" ] && exec bash "$0" "$@"
set -u
cd "$(dirname "$0")/../.."
B=build CONFIGS="8:2:11 8:4:12 16:2:13 16:4:14" ALGOS="ring rhd dbt" SIZE=16M RANDOM_N=10 SPREAD=10 ITERS=2 ROUNDS=1
RATE=100mbit
OVERSUB=4 OUT=
inner=0 summary=0 RETEST= SHARING=tcp JITTER=1 JSAMPLES=64 QOPT=()
args=("$@")
while [ $# -gt 0 ]; do
	case "$1" in
	-build) B=$2; shift ;;
	-configs) CONFIGS=$2; shift ;;
	-algos) ALGOS=$2; shift ;;
	-size) SIZE=$2; shift ;;
	-random) RANDOM_N=$2; shift ;;
	-spread) SPREAD=$2; shift ;;
	-iters) ITERS=$2; shift ;;
	-rounds) ROUNDS=$2; shift ;;
	-rate) RATE=$2; shift ;;
	-oversub) OVERSUB=$2; shift ;;
	-out) OUT=$2; shift ;;
	-inner) inner=1 ;;
	-summary) summary=1 ;;
	-retest) RETEST=$2; shift ;;
	-sharing) SHARING=$2; shift ;;
	-jitter) JITTER=$2; shift ;;
	-jitter-samples) JSAMPLES=$2; shift ;;
	-queue) QOPT+=(--queue "$2"); shift ;;
	-cc) QOPT+=(--cc "$2"); shift ;;
	-h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
	*) echo "netns_reorder.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
# max-min sharing takes no weights, so no draws of them either
[ "$SHARING" = maxmin ] && JITTER=0
# collc's jitter flags, none for SIGMA 0 (the plain rule)
JFLAGS=$(awk -v j="$JITTER" -v k="$JSAMPLES" 'BEGIN { if (j + 0 > 0) print "--jitter " j " --jitter-samples " k }')
[ -n "$OUT" ] || OUT=$B/bench-reorder
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export COLL_TCP_SNDBUF=131072 COLL_TCP_RCVBUF=262144
# A flow through a 4:1 trunk can wait many seconds for its turn, and a rank
# that sent ahead can find its peer's window shut that long: with the
# default 10 s rhd at 16 hosts in 4 racks failed as "unreachable".
export COLL_TIMEOUT=${COLL_TIMEOUT:-60}

# A random order of 0..n-1 (awk's generator, seeded: the same list every run).
rand_perm() {
	awk -v n="$1" -v seed="$2" 'BEGIN { srand(seed); for (i = 0; i < n; i++) p[i] = i;
		for (i = n - 1; i > 0; i--) { j = int(rand() * (i + 1)); t = p[i]; p[i] = p[j]; p[j] = t }
		s = p[0]; for (i = 1; i < n; i++) s = s "," p[i]; print s }'
}

# --- inside a testbed -----------------------------------------------------
if [ $inner = 1 ]; then
	: "${TESTBED_NETNS:?run by netns_reorder.sh}"
	n=$TESTBED_HOSTS
	tag=$CFG
	log() { echo "[$tag] $*"; }
	# the declared network: racks from the testbed, rates from its options
	{
		echo "ranks $n"
		echo "* * 100us ${TESTBED_RATE_BPS}bit/s"
		echo "rank-bw ${TESTBED_RATE_BPS}bit/s"
		for k in $(echo "$TESTBED_RACK_OF" | tr , '\n' | sort -un); do
			echo "group rack$k $(echo "$TESTBED_RACK_OF" | tr , '\n' | awk -v k="$k" '$1 == k { printf "%s ", NR - 1 }')"
			echo "uplink rack$k ${TESTBED_TRUNK_RATE_BPS}bit/s"
		done
	} > "$OUT/truth-$tag.tsv"
	log "racks $TESTBED_RACK_OF, hosts $TESTBED_RATE, trunks $TESTBED_TRUNK_RATE, tcp $TESTBED_CC"
	echo "$tag,tcp,$TESTBED_CC" >> "$OUT/times.csv"
	# 1. probe
	t0=$(date +%s.%N)
	$B/collrun -np "$n" --netns "$TESTBED_NETNS" $B/collprobe -o "$OUT/probe-$tag.tsv" 2> "$OUT/probe-$tag.log" \
		|| { cat "$OUT/probe-$tag.log"; exit 1; }
	t1=$(date +%s.%N)
	log "probe: $(grep 'probed in' "$OUT/probe-$tag.log" | sed 's/.*collprobe: //') (wall $(echo "$t1 - $t0" | bc) s)"
	grep -E 'group|uplink|rank-bw' "$OUT/probe-$tag.log" | sed "s/^.*collprobe:   /[$tag]   /"
	echo "$tag,probe,$(grep -o 'probed in [0-9.]*' "$OUT/probe-$tag.log" | awk '{print $3}')" >> "$OUT/times.csv"
	# 2. reorder at init for each algorithm (ring when none: the probe
	# is the same, the search is the algorithm's), then from the cache
	# (its files are keyed by algorithm)
	rm -rf "$OUT/cache-$tag"
	for algo in ${ALGOS:-ring}; do
		for mode in reprobe probe; do
			line=$(COLL_REORDER=$mode COLL_REORDER_VERBOSE=1 COLL_REORDER_CACHE="$OUT/cache-$tag" \
				COLL_REORDER_ALGO=$algo $B/collrun -np "$n" --netns "$TESTBED_NETNS" $B/collbench \
				-f stdlib/$algo.coll -a $algo -b 1K -e 1K -n 1 -w 0 2>&1 | grep 'reorder at init' | head -1)
			log "init $algo ($mode): ${line#*reorder at init: }"
			if [ $mode = reprobe ]; then
				pt=$(echo "$line" | sed -n 's/.*probed in \([0-9.]*\) s.*, chose in \([0-9.]*\) s.*/\1 \2/p')
				echo "$tag,init_probe_$algo,$(echo "$pt" | awk '{print $1}')" >> "$OUT/times.csv"
				echo "$tag,init_total_$algo,$(echo "$pt" | awk '{print $1 + $2}')" >> "$OUT/times.csv"
			else
				echo "$tag,init_cached_$algo,$(echo "$line" | sed -n 's/.*cache .* (\([0-9.]*\) s).*/\1/p')" \
					>> "$OUT/times.csv"
			fi
		done
	done
	# 3. orders
	ai=3
	for algo in $ALGOS; do
		# the random orders' seeds by algorithm, so -algos rhd measures the
		# orders a full run does: ring 1, rhd 2, dbt 3, others after
		case $algo in ring) a=1 ;; rhd) a=2 ;; dbt) a=3 ;; *) ai=$((ai + 1)) a=$ai ;; esac
		f=stdlib/$algo.coll
		# the spread orders by the same simulation that predicts below
		js=$($B/collc reorder "$f" -a "$algo" --links "$OUT/probe-$tag.tsv" -s "$SIZE" --json \
			$([ "$SPREAD" -gt 0 ] && echo --spread "$SPREAD") --seg-bytes 1MiB --sharing "$SHARING") || exit 1
		best=$(echo "$js" | sed -n 's/^  "perm": \[\([^]]*\)\].*/\1/p' | tr -d ' ')
		echo "$tag,search_$algo,$(echo "$js" | sed -n 's/.*"seconds": \([0-9.]*\).*/\1/p')" >> "$OUT/times.csv"
		ident=$(seq -s, 0 $((n - 1)))
		orders="reordered:$best identity:$ident"
		for r in $(seq 1 "$RANDOM_N"); do
			orders="$orders random$r:$(rand_perm "$n" $((SEED * 1000 + a * 100 + r)))"
		done
		r=0
		for sp in $(echo "$js" | sed -n 's/^    {"rounds_s".*"perm": \[\([^]]*\)\].*/\1/p' | tr -d ' '); do
			r=$((r + 1))
			orders="$orders spread$r:$sp"
		done
		kinds=() perms=()
		for o in $orders; do
			kinds+=("${o%%:*}") perms+=("${o#*:}")
		done
		m=${#kinds[@]}
		for rd in $(seq 1 "$ROUNDS"); do
			# odd rounds forward, even rounds backward (see -rounds above)
			if [ $((rd % 2)) = 1 ]; then idx=$(seq 0 $((m - 1))); else idx=$(seq $((m - 1)) -1 0); fi
			for j in $idx; do
				kind=${kinds[j]} perm=${perms[j]}
				meas=$(COLL_PERM=$perm $B/collrun -np "$n" --netns "$TESTBED_NETNS" --no-prefix $B/collbench -f "$f" -a "$algo" \
					-b "$SIZE" -e "$SIZE" -n "$ITERS" -w 1 --csv 2>/dev/null | awk -F, 'NR > 1 && $12 != "" {print $12 / 1e6; exit}')
				[ -n "$meas" ] || meas=nan
				echo "$tag,$algo,$kind,$(echo "$perm" | tr , ' '),$rd,$meas" >> "$OUT/rounds.csv"
				log "$algo $kind $perm$([ "$ROUNDS" -gt 1 ] && echo " (round $rd)"): measured $meas s"
			done
		done
		# an order's time: the mean of its rounds (nan if any failed)
		for j in $(seq 0 $((m - 1))); do
			meas=$(awk -F, -v c="$tag" -v a="$algo" -v k="${kinds[j]}" '$1 == c && $2 == a && $3 == k {
				if ($6 == "nan") bad = 1; s += $6; q++ } END { print bad || !q ? "nan" : s / q }' "$OUT/rounds.csv")
			echo "$tag,$algo,${kinds[j]},$(echo "${perms[j]}" | tr , ' '),,,$meas" >> "$OUT/results.csv"
		done
	done
	exit 0
fi

# --- the driver ------------------------------------------------------------
[ -x $B/collprobe ] && [ -x $B/collbench ] && [ -x $B/collc ] || { echo "build first: make all"; exit 2; }
status=0
if [ $summary = 0 ]; then
tests/netns/testbed.sh check >/dev/null 2>&1 || { echo "netns_reorder.sh: $(tests/netns/testbed.sh check 2>&1)"; exit 2; }
echo "config,algo,order,perm (blank-separated),pred_s,pred_declared_s,meas_s" > "$OUT/results.csv"
echo "config,algo,order,perm (blank-separated),round,meas_s" > "$OUT/rounds.csv"
: > "$OUT/times.csv"
i=0
for cfg in $CONFIGS; do
	i=$((i + 1))
	n=${cfg%%:*} rest=${cfg#*:} k=${rest%%:*} seed=${rest#*:}
	tag="n${n}r${k}"
	CFG=$tag SEED=$seed tests/netns/testbed.sh run --hosts "$n" --rate "$RATE" --racks "$k" --shuffle "$seed" \
		--oversub "$OVERSUB" "${QOPT[@]}" --prefix "rb$$x$i" -- \
		env CFG=$tag SEED=$seed bash "$0" -inner -build "$B" -algos "$ALGOS" -size "$SIZE" -random "$RANDOM_N" \
		-spread "$SPREAD" -iters "$ITERS" -rounds "$ROUNDS" -sharing "$SHARING" -out "$OUT" || status=1
done

# search times at scale (no testbed): scrambled 8-rack networks
awk -v n=512 -v k=8 -v seed=5 -v up=1600Mbit/s 'BEGIN { srand(seed); for (i = 0; i < n; i++) r[i] = int(i * k / n);
	for (i = n - 1; i > 0; i--) { j = int(rand() * (i + 1)); t = r[i]; r[i] = r[j]; r[j] = t }
	print "ranks " n; print "* * 100us 100Mbit/s"; print "rank-bw 100Mbit/s"
	for (g = 0; g < k; g++) { s = "group rack" g; for (i = 0; i < n; i++) if (r[i] == g) s = s " " i; print s; print "uplink rack" g " " up } }' \
	> "$OUT/scale512.tsv"
awk -v n=64 -v k=4 -v seed=6 -v up=400Mbit/s 'BEGIN { srand(seed); for (i = 0; i < n; i++) r[i] = int(i * k / n);
	for (i = n - 1; i > 0; i--) { j = int(rand() * (i + 1)); t = r[i]; r[i] = r[j]; r[j] = t }
	print "ranks " n; print "* * 100us 100Mbit/s"; print "rank-bw 100Mbit/s"
	for (g = 0; g < k; g++) { s = "group rack" g; for (i = 0; i < n; i++) if (r[i] == g) s = s " " i; print s; print "uplink rack" g " " up } }' \
	> "$OUT/scale64.tsv"
for x in ring:512 rhd:64 dbt:64; do
	a=${x%%:*} nn=${x#*:}
	s0=$(date +%s.%N)
	js=$($B/collc reorder stdlib/$a.coll -a "$a" --links "$OUT/scale$nn.tsv" -s 64MiB --json)
	s1=$(date +%s.%N)
	idb=$(echo "$js" | sed -n 's/.*"rounds_s": \([0-9.e+-]*\).*/\1/p' | tr '\n' ' ')
	echo "scale,search_${a}_$nn,$(echo "$s1 - $s0" | bc),$idb,$(echo "$js" | sed -n 's/.*"lower_bound_s": \([0-9.e+-]*\).*/\1/p')" >> "$OUT/times.csv"
done
fi

# --- predictions -------------------------------------------------------------
# every measured order, on the probed and on the declared network
predict() {   # links algo perm
	$B/collc cost "stdlib/$2.coll" -a "$2" --links "$1" -s "$SIZE" --seg-bytes 1MiB --perm "$3" --sharing "$SHARING" \
		$JFLAGS --csv | awk -F, '$5 == "sim" {print $6}'
}
{
	head -1 "$OUT/results.csv"
	tail -n +2 "$OUT/results.csv" | while IFS=, read -r cfg algo kind perm p1 p2 meas; do
		pc=$(echo "$perm" | tr ' ' ,)
		echo "$cfg,$algo,$kind,$perm,$(predict "$OUT/probe-$cfg.tsv" "$algo" "$pc"),$(predict "$OUT/truth-$cfg.tsv" "$algo" "$pc"),$meas"
	done
} > "$OUT/results.tmp" && mv "$OUT/results.tmp" "$OUT/results.csv"

# --- summary ---------------------------------------------------------------
AWKLIB='function spearman(x, y, m,    i, j, rx, ry, mx, my, sxy, sxx, syy) {
	for (i = 1; i <= m; i++) { rx[i] = 1; ry[i] = 1
		for (j = 1; j <= m; j++) { if (x[j] < x[i]) rx[i]++; if (x[j] == x[i] && j != i) rx[i] += 0.5
					   if (y[j] < y[i]) ry[i]++; if (y[j] == y[i] && j != i) ry[i] += 0.5 } }
	mx = 0; my = 0; for (i = 1; i <= m; i++) { mx += rx[i]; my += ry[i] } mx /= m; my /= m
	sxy = sxx = syy = 0
	for (i = 1; i <= m; i++) { sxy += (rx[i] - mx) * (ry[i] - my); sxx += (rx[i] - mx)^2; syy += (ry[i] - my)^2 }
	return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0
}
function sig3(v,    e) { if (v <= 0) return v; e = int(log(v) / log(10)); if (v < 1) e--; return sprintf("%.2f", v / 10^e) * 10^e }'
echo "predicted by: collc cost --seg-bytes 1MiB --sharing $SHARING ${JFLAGS:---jitter $JITTER}" | tee "$OUT/summary.txt"
awk -F, -v size="$SIZE" "$AWKLIB"'
function median(v, m,    i, j, t) {
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
	return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
}
# The highest Spearman any measurement could reach against x (ties in x
# cannot be ranked): the measured values sorted into the order of x.
function best_spearman(x, y, m,    i, j, t, ix, ys, yb) {
	for (i = 1; i <= m; i++) { ix[i] = i; ys[i] = y[i] }
	for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) {
		if (x[ix[j]] < x[ix[i]]) { t = ix[i]; ix[i] = ix[j]; ix[j] = t }
		if (ys[j] < ys[i]) { t = ys[i]; ys[i] = ys[j]; ys[j] = t } }
	for (i = 1; i <= m; i++) yb[ix[i]] = ys[i]
	return spearman(x, yb, m)
}
NR > 1 && $7 != "nan" { key = $1 "," $2; if (!(key in cnt)) keys[++nk] = key
	c = ++cnt[key]; P[key, c] = $5; T[key, c] = $6; M[key, c] = $7; K[key, c] = $3 }
END {
	printf "%-6s %-5s %6s %8s %8s %8s %8s %8s %6s %8s %8s %8s %8s %6s %8s %8s %13s %9s %13s\n", "config", "algo", "orders",
		"reord(s)", "medrand", "x median", "best(s)", "worst(s)", "w/b", "spearman", "ties3", "max3", "declared",
		"spread", "spearman", "ties3", "meas/pred", "in15%", "meas/declared"
	for (q = 1; q <= nk; q++) { key = keys[q]; m = cnt[key]; nr = 0; nx = 0; ns = 0; best = 1e300; worst = 0
		lo = 1e9; hi = 0; lo2 = 1e9; hi2 = 0; in15 = 0
		for (i = 1; i <= m; i++) {
			if (K[key, i] !~ /^spread/) { nx++; x[nx] = P[key, i]; y[nx] = M[key, i]; x3[nx] = sig3(P[key, i]); xt[nx] = T[key, i] }
			if (K[key, i] ~ /^spread/ || K[key, i] == "reordered") { ns++; sx[ns] = P[key, i]; sy[ns] = M[key, i]; sx3[ns] = sig3(P[key, i]) }
			if (K[key, i] ~ /^random/) r[++nr] = M[key, i]; if (K[key, i] == "reordered") ro = M[key, i]
			if (M[key, i] < best) best = M[key, i]; if (M[key, i] > worst) worst = M[key, i]
			e = M[key, i] / P[key, i]; if (e < lo) lo = e; if (e > hi) hi = e
			if (P[key, i] >= 0.85 * M[key, i] && P[key, i] <= 1.15 * M[key, i]) in15++
			e = M[key, i] / T[key, i]; if (e < lo2) lo2 = e; if (e > hi2) hi2 = e }
		med = median(r, nr); split(key, kk, ",")
		sr = spearman(x, y, nx); sr3 = spearman(x3, y, nx); ss = ns > 2 ? spearman(sx, sy, ns) : 0
		ss3 = ns > 2 ? spearman(sx3, sy, ns) : 0
		printf "%-6s %-5s %6d %8.3f %8.3f %8.2f %8.3f %8.3f %6.2f %8.3f %8.3f %8.3f %8.3f %6d %8.3f %8.3f %6.2f-%-6.2f %5d/%-3d %6.2f-%-6.2f\n",
			kk[1], kk[2], nx, ro, med, med / ro, best, worst, worst / best, sr, sr3,
			best_spearman(x3, y, nx), spearman(xt, y, nx), ns, ss, ss3, lo, hi,
			in15, m, lo2, hi2
		# the targets that rows decide (the issue: ring >= 2x the median
		# random order at >= 16 MiB on 2 racks; Spearman >= 0.9; predicted
		# within 15% of measured)
		if (kk[2] == "ring" && kk[1] ~ /r2$/ && (size ~ /G/ || (size ~ /M/ && size + 0 >= 16)))
			verdict[++nv] = sprintf("%-6s %-5s reordered %.2fx the median random order (target 2)   %s", kk[1], kk[2],
				med / ro, med / ro >= 2 ? "met" : "MISSED")
		# judged with predictions to 3 digits (ties3; the header above
		# says why), as computed beside it
		v = "MISSED"; if (ss3 >= 0.9) v = "spread met, random MISSED"; if (sr3 >= 0.9 && (ns <= 2 || ss3 >= 0.9)) v = "met"
		verdict[++nv] = sprintf("%-6s %-5s Spearman (ties3; as computed) %.3f; %.3f over random orders, %.3f; %.3f over spread orders (target 0.9)   %s",
			kk[1], kk[2], sr3, sr, ss3, ss, v)
		verdict[++nv] = sprintf("%-6s %-5s %d of %d orders predicted within 15%% of measured   %s", kk[1], kk[2], in15, m,
			in15 == m ? "met" : "MISSED") }
	print ""; print "targets:"
	for (q = 1; q <= nv; q++) print "  " verdict[q]
}' "$OUT/results.csv" | tee -a "$OUT/summary.txt"
echo | tee -a "$OUT/summary.txt"
echo "times (s): config,what,value[,identity best][,lower bound]" | tee -a "$OUT/summary.txt"
tee -a "$OUT/summary.txt" < "$OUT/times.csv"
awk -F, '$1 ~ /^n16/ && $2 == "probe" { printf "  %s probe %.1f s (target 30)   %s\n", $1, $3, $3 < 30 ? "met" : "MISSED" }
	$1 ~ /^n16/ && $2 ~ /^init_total/ { a = $2; sub(/^init_total_?/, "", a)   # runs before per-algorithm init: ring
		printf "  %s reorder at init (%s) %.2f s (target 3)   %s\n", $1, a == "" ? "ring" : a, $3, $3 < 3 ? "met" : "MISSED" }
	$1 == "scale" { printf "  %s %.2f s (target 10)   %s\n", $2, $3, $3 < 10 ? "met" : "MISSED" }' "$OUT/times.csv" |
	tee -a "$OUT/summary.txt"
if [ -n "$RETEST" ]; then
	echo | tee -a "$OUT/summary.txt"
	echo "retest against $RETEST: config algo orders, Spearman run vs run, predictions vs the runs' mean (as computed, ties3)" |
		tee -a "$OUT/summary.txt"
	awk -F, "$AWKLIB"'
	FNR == 1 { f++; next }
	f == 1 { other[$1, $2, $3, $4] = $7; next }
	($1, $2, $3, $4) in other && $7 != "nan" && other[$1, $2, $3, $4] != "nan" {
		key = $1 "," $2; if (!(key in cnt)) keys[++nk] = key
		c = ++cnt[key]; A[key, c] = other[$1, $2, $3, $4]; B[key, c] = $7; P[key, c] = $5 }
	END { for (q = 1; q <= nk; q++) { key = keys[q]; m = cnt[key]
			for (i = 1; i <= m; i++) { a[i] = A[key, i]; b[i] = B[key, i]; v[i] = (a[i] + b[i]) / 2
				p[i] = P[key, i]; p3[i] = sig3(P[key, i]) }
			split(key, kk, ",")
			printf "%-6s %-5s %6d %8.3f %8.3f %8.3f\n", kk[1], kk[2], m, spearman(a, b, m), spearman(p, v, m),
				spearman(p3, v, m) } }
	' "$RETEST/results.csv" "$OUT/results.csv" | tee -a "$OUT/summary.txt"
fi
if [ -f "$OUT/rounds.csv" ] && awk -F, 'NR > 1 && $5 > 1 { f = 1 } END { exit !f }' "$OUT/rounds.csv"; then
	echo | tee -a "$OUT/summary.txt"
	echo "rounds: config algo orders rounds, Spearman over the identity, random and reordered orders of round against round (lowest, mean over pairs), of a round against the other rounds' mean (mean over rounds)" |
		tee -a "$OUT/summary.txt"
	awk -F, "$AWKLIB"'
	NR > 1 && $3 !~ /^spread/ { key = $1 "," $2; if (!(key in no)) keys[++nk] = key
		if (!(($1, $2, $3) in oi)) oi[$1, $2, $3] = ++no[key]
		j = oi[$1, $2, $3]; V[key, $5, j] = $6; if ($5 > R[key]) R[key] = $5; if ($6 == "nan") bad[key, j] = 1 }
	END { for (q = 1; q <= nk; q++) { key = keys[q]; rr = R[key]; if (rr < 2) continue
			m = 0; for (j = 1; j <= no[key]; j++) if (!((key, j) in bad)) use[++m] = j
			lo = 2; sum = 0; np = 0; one = 0
			for (a = 1; a <= rr; a++) {
				for (i = 1; i <= m; i++) { x[i] = V[key, a, use[i]]; y[i] = 0
					for (b = 1; b <= rr; b++) if (b != a) y[i] += V[key, b, use[i]] / (rr - 1) }
				one += spearman(x, y, m) / rr
				for (b = a + 1; b <= rr; b++) {
					for (i = 1; i <= m; i++) y[i] = V[key, b, use[i]]
					s = spearman(x, y, m); sum += s; np++; if (s < lo) lo = s } }
			split(key, kk, ",")
			printf "%-6s %-5s %6d %6d %8.3f %8.3f %8.3f\n", kk[1], kk[2], m, rr, lo, sum / np, one } }
	' "$OUT/rounds.csv" | tee -a "$OUT/summary.txt"
fi
exit $status
