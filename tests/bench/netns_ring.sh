#!/bin/bash
# netns_ring.sh - ring allreduce across emulated hosts on a shaped network.
#
#   tests/bench/netns_ring.sh [-build DIR] [-n 4] [-size 64M] [-rate 200mbit] [-iters 3]
#
# Builds a testbed of n hosts (tests/netns/testbed.sh: one network namespace
# per host, one rail, every host link shaped with tc tbf at RATE each way),
# runs collbench's stdlib ring allreduce (fp32 sum, out of place) with one
# rank per namespace over TCP (collrun --netns), and prints busbw and its
# ratio to the shaped link rate.  Ring allreduce's busbw (size * 2(n-1)/n /
# time) equals the rate every host link carries, so the ratio says how much
# of the link the runtime uses; the target is >= 0.85.  Exit status 0 when
# the target is met, 1 when not, 2 when it cannot run (not root, no
# namespaces, nothing built).  Tears the testbed down in every case.
[ -z "${BASH_VERSION:-}" ] && exec bash "$0" "$@"
set -u
cd "$(dirname "$0")/../.."
B=build N=4 SIZE=64M RATE=200mbit ITERS=3 TARGET=0.85
inner=0
while [ $# -gt 0 ]; do
	case "$1" in
	-build) B=$2; shift ;;
	-n) N=$2; shift ;;
	-size) SIZE=$2; shift ;;
	-rate) RATE=$2; shift ;;
	-iters) ITERS=$2; shift ;;
	--inner) inner=1 ;;
	*) echo "netns_ring.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
TB=tests/netns/testbed.sh

if [ $inner = 0 ]; then
	for p in "$B/collrun" "$B/collbench"; do
		[ -x "$p" ] || { echo "netns_ring.sh: $p not built (make all)" >&2; exit 2; }
	done
	if ! why=$($TB check 2>&1 >/dev/null); then
		echo "netns_ring.sh: skipped: $why" >&2
		exit 2
	fi
	exec $TB run --hosts "$N" --rate "$RATE" -q -- "$0" -build "$B" -n "$N" -size "$SIZE" -rate "$RATE" \
		-iters "$ITERS" --inner
fi

# Inside the testbed: TESTBED_NETNS, TESTBED_RATE_BPS, ... are set.
echo "# testbed $TESTBED_PREFIX: $N hosts, host links shaped at $TESTBED_RATE each way (tbf), transport tcp"
csv=$(COLL_TRANSPORT=tcp "$B/collrun" -np "$N" --timeout 600 --no-prefix --netns "$TESTBED_NETNS" \
	"$B/collbench" -f stdlib/ring.coll -a ring -b "$SIZE" -e "$SIZE" -n "$ITERS" -w 1 --csv)
rc=$?
line=$(printf '%s\n' "$csv" | grep '^allreduce,' | tail -1)
if [ $rc != 0 ] || [ -z "$line" ]; then
	printf '%s\n' "$csv"
	echo "netns_ring.sh: collbench failed (exit $rc)" >&2
	exit 2
fi
# collective,algorithm,transport,n,bytes,count,dtype,op,root,inplace,iters,time_us,...
printf '%s\n' "$line" | awk -F, -v n="$N" -v bps="$TESTBED_RATE_BPS" -v target="$TARGET" '{
	bytes = $5; t = $12 / 1e6
	busbw = bytes * 2 * (n - 1) / n / t            # bytes/s
	ratio = busbw * 8 / bps
	printf "ring allreduce n=%d size=%d B: time %.3f s, algbw %.2f MB/s, busbw %.2f MB/s = %.1f Mbit/s\n",
		n, bytes, t, bytes / t / 1e6, busbw / 1e6, busbw * 8 / 1e6
	printf "shaped link rate %.1f Mbit/s; busbw / link rate = %.3f (target >= %.2f): %s\n",
		bps / 1e6, ratio, target, (ratio >= target ? "ok" : "BELOW TARGET")
	if (ratio < target) exit 1
}'
