#!/bin/bash
# testbed.sh - an emulated cluster on one machine with Linux network namespaces.
#
#   testbed.sh up --hosts N [--rails R] [--racks K] [--rate 200mbit] [--trunk-rate 100mbit]
#                 [--mtu 9000] [--prefix NAME]
#   testbed.sh down [--prefix NAME] [--stale]
#   testbed.sh run [up options] -- CMD...   up, run CMD, always down (also on failure,
#                                           SIGINT, SIGTERM); exits with CMD's status
#   testbed.sh check                        can namespaces be made here?  prints why not
#   testbed.sh ping [--prefix NAME]         every host pings every other on every rail
#   testbed.sh rate [--prefix NAME] [--from I] [--to J] [--rail R] [--seconds S]
#                                           measure TCP throughput host I -> host J
#   testbed.sh info [--prefix NAME]         hosts, rails and addresses of a running testbed
#
# Host i is network namespace PREFIXh<i> (so `collrun --netns PREFIXh%d`
# starts rank i in host i).  Per rail r there is a bridge; each host has a
# veth pair per rail (eth<r> inside the host, addresses 10.77.<r>.<i+1>/24)
# into that rail's bridge.  Both directions of every host link are shaped
# with tc tbf at --rate: the host-side end limits what the host sends, the
# bridge-side end what it receives.  With --racks K (K >= 2) hosts are split
# into K contiguous racks; each rack has its own bridge per rail, joined to
# a spine bridge by a trunk veth shaped at --trunk-rate in both directions.
# Bandwidth only: netem is not used (no delay).
#
# Names: namespaces PREFIXh<i>; links in the root namespace PREFIXh<i>r<r>
# (host links), PREFIXb<r> / PREFIXk<k>b<r> / PREFIXs<r> (bridges),
# PREFIXt<k>r<r> / PREFIXu<k>r<r> (trunk ends).  PREFIX is [a-z][a-z0-9]*, at
# most 9 characters; `up` and `down` default to "coll", `run` to tb<pid>.
# `up` first removes what a previous testbed of the same prefix left, and
# `run` / `down --stale` remove tb<pid> testbeds whose process is gone, and
# testbeds brought up with TESTBED_OWNER=PID in the environment (recorded;
# `run` sets it to itself) whose owner is gone.
# Nothing gets an address in the root namespace: traffic stays between the
# namespaces.
#
# `run` exports to CMD: TESTBED_PREFIX, TESTBED_NETNS (e.g. tb123h%d),
# TESTBED_HOSTS, TESTBED_RAILS, TESTBED_RACKS, TESTBED_RATE, TESTBED_RATE_BPS
# (bits/s), TESTBED_TRUNK_RATE, TESTBED_ADDR0 (host 0's rail-0 address, the
# rendezvous address for collrun) and TESTBED_NETTOOL (the probe program).
#
# TESTBED_SIMULATE_NO_NETNS=REASON makes `check` (and so every command that
# builds something) fail as if namespaces could not be made, for tests.
set -u
export LC_ALL=C
ME=$(basename "$0")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
NETTOOL_DIR=${TESTBED_BUILD:-$ROOT/build/netns}
NETTOOL=$NETTOOL_DIR/nettool

die() { echo "$ME: error: $*" >&2; exit 1; }
log() { [ -n "${QUIET:-}" ] || echo "$*"; }

PREFIX= HOSTS= RAILS=1 RACKS=1 RATE=200mbit TRUNK_RATE=100mbit MTU=9000
FROM=0 TO=1 RAIL=0 SECONDS=3 STALE=0
CMD=()

parse() {
    while [ $# -gt 0 ]; do
        case $1 in
            --hosts) HOSTS=${2:-}; shift 2 ;;
            --rails) RAILS=${2:-}; shift 2 ;;
            --racks) RACKS=${2:-}; shift 2 ;;
            --rate) RATE=${2:-}; shift 2 ;;
            --trunk-rate) TRUNK_RATE=${2:-}; shift 2 ;;
            --mtu) MTU=${2:-}; shift 2 ;;
            --prefix) PREFIX=${2:-}; shift 2 ;;
            --from) FROM=${2:-}; shift 2 ;;
            --to) TO=${2:-}; shift 2 ;;
            --rail) RAIL=${2:-}; shift 2 ;;
            --seconds) SECONDS=${2:-}; shift 2 ;;
            --stale) STALE=1; shift ;;
            -q|--quiet) QUIET=1; shift ;;
            --) shift; CMD=("$@"); break ;;
            *) die "unknown argument '$1' (see the header of $0)" ;;
        esac
    done
}

isnum() { case $1 in ''|*[!0-9]*) return 1 ;; esac; }

# Rate strings as tc takes them (200mbit, 1gbit, 500kbit, 100000bit) -> bits/s.
rate_bps() {
    local r=${1,,} n u
    n=${r%%[a-z]*}; u=${r#"$n"}
    isnum "$n" || die "bad rate '$1' (want e.g. 200mbit)"
    case $u in
        bit|'') echo $((n)) ;;
        kbit) echo $((n * 1000)) ;;
        mbit) echo $((n * 1000000)) ;;
        gbit) echo $((n * 1000000000)) ;;
        *) die "bad rate unit in '$1' (bit, kbit, mbit or gbit)" ;;
    esac
}

check_prefix() {
    [[ $PREFIX =~ ^[a-z][a-z0-9]{0,8}$ ]] ||
        die "bad --prefix '$PREFIX': want [a-z][a-z0-9]*, at most 9 characters (interface names are limited to 15)"
}

# Why namespaces cannot be made here ("" when they can).
why_not() {
    if [ -n "${TESTBED_SIMULATE_NO_NETNS:-}" ]; then
        echo "network namespaces unavailable (simulated: $TESTBED_SIMULATE_NO_NETNS)"; return
    fi
    [ "$(id -u)" = 0 ] || { echo "must run as root (uid is $(id -u)): creating network namespaces, veth pairs and tc qdiscs needs CAP_NET_ADMIN and CAP_SYS_ADMIN"; return; }
    command -v ip >/dev/null || { echo "'ip' not found (apt-get install iproute2)"; return; }
    command -v tc >/dev/null || { echo "'tc' not found (apt-get install iproute2)"; return; }
    local p=tbchk$$ out
    if ! out=$(ip netns add "${p}n" 2>&1); then
        echo "cannot create network namespaces: ip netns add: $out"; return
    fi
    if ! out=$(ip link add "${p}a" type veth peer name "${p}b" netns "${p}n" 2>&1); then
        ip netns del "${p}n" 2>/dev/null
        echo "cannot create veth pairs: $out"; return
    fi
    if ! out=$(tc qdisc add dev "${p}a" root tbf rate 100mbit burst 32kb latency 50ms 2>&1); then
        ip link del "${p}a" 2>/dev/null; ip netns del "${p}n" 2>/dev/null
        echo "cannot add a tc tbf qdisc (sch_tbf missing?): $out"; return
    fi
    if ! out=$(ip link add "${p}br" type bridge 2>&1); then
        ip link del "${p}a" 2>/dev/null; ip netns del "${p}n" 2>/dev/null
        echo "cannot create bridges: $out"; return
    fi
    ip link del "${p}br" 2>/dev/null; ip link del "${p}a" 2>/dev/null; ip netns del "${p}n" 2>/dev/null
}

require_netns() {
    local why; why=$(why_not)
    [ -z "$why" ] || die "$why"
}

build_nettool() {
    if [ ! -x "$NETTOOL" ] || [ "$HERE/nettool.c" -nt "$NETTOOL" ]; then
        mkdir -p "$NETTOOL_DIR" && ${CC:-cc} -O2 -Wall -o "$NETTOOL.$$" "$HERE/nettool.c" &&
            mv -f "$NETTOOL.$$" "$NETTOOL" || die "cannot build $NETTOOL"
    fi
}

# Our namespaces and root-namespace links for PREFIX.
list_ns() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1h[0-9]+\$"; }
list_links() {
    ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' |
        grep -E "^$1(h[0-9]+r[0-9]+|b[0-9]+|k[0-9]+b[0-9]+|s[0-9]+|[tu][0-9]+r[0-9]+)\$"
}

teardown() {
    local p=$1 x i
    for x in $(list_ns "$p"); do ip netns del "$x" 2>/dev/null; done
    for x in $(list_links "$p"); do ip link del "$x" 2>/dev/null; done
    # Namespace deletion (and with it the veth peers) is asynchronous.
    for i in $(seq 50); do
        [ -z "$(list_ns "$p")$(list_links "$p")" ] && break
        sleep 0.1
        for x in $(list_links "$p"); do ip link del "$x" 2>/dev/null; done
    done
    rm -f "/run/coll-testbed-$p.env"
    [ -z "$(list_ns "$p")$(list_links "$p")" ] || { echo "$ME: warning: left behind: $(list_ns "$p") $(list_links "$p")" >&2; return 1; }
}

# tb<pid> testbeds whose pid is dead.
sweep_stale() {
    local p pid
    for p in $( { ip netns list 2>/dev/null | awk '{print $1}'; ip -o link show 2>/dev/null | awk -F': ' '{print $2}'; } |
                sed -nE 's/^(tb[0-9]+)(h[0-9]+.*|b[0-9]+|k[0-9]+b[0-9]+|s[0-9]+|[tu][0-9]+r[0-9]+)(@.*)?$/\1/p' | sort -u); do
        pid=${p#tb}
        if ! kill -0 "$pid" 2>/dev/null; then
            log "removing stale testbed $p (pid $pid is gone)"
            teardown "$p"
        fi
    done
    # Testbeds brought up with TESTBED_OWNER=PID whose owner is gone.
    local f owner
    for f in /run/coll-testbed-*.env; do
        [ -r "$f" ] || continue
        owner=$(sed -n 's/^TESTBED_OWNER=//p' "$f")
        p=$(sed -n 's/^TESTBED_PREFIX=//p' "$f")
        if isnum "$owner" && [[ $p =~ ^[a-z][a-z0-9]{0,8}$ ]] && ! kill -0 "$owner" 2>/dev/null; then
            log "removing stale testbed $p (its owner, pid $owner, is gone)"
            teardown "$p"
        fi
    done
}

# tbf on DEV (optionally in namespace NS) at RATE: burst ~10 ms of traffic
# (at least 64 KiB so one GSO super-packet fits), queue ~50 ms.
shape() {
    local ns=$1 dev=$2 rate=$3 bps burst limit
    bps=$(rate_bps "$rate")
    burst=$((bps / 8 / 100)); [ $burst -ge 65536 ] || burst=65536
    limit=$((bps / 8 / 20)); [ $limit -ge 262144 ] || limit=262144
    tc ${ns:+-n "$ns"} qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" limit "$limit"
}

addr_of() { echo "10.77.$2.$(($1 + 1))"; }   # host rail

build_net() {
    local P=$PREFIX i r k per ns br
    per=$(( (HOSTS + RACKS - 1) / RACKS ))
    for r in $(seq 0 $((RAILS - 1))); do
        if [ "$RACKS" -gt 1 ]; then
            ip link add "${P}s$r" type bridge; ip link set "${P}s$r" mtu "$MTU" up
            for k in $(seq 0 $((RACKS - 1))); do
                ip link add "${P}k${k}b$r" type bridge; ip link set "${P}k${k}b$r" up
                ip link add "${P}t${k}r$r" mtu "$MTU" type veth peer name "${P}u${k}r$r" mtu "$MTU"
                ip link set "${P}t${k}r$r" master "${P}k${k}b$r" up
                ip link set "${P}u${k}r$r" master "${P}s$r" up
                shape "" "${P}t${k}r$r" "$TRUNK_RATE"   # spine -> rack
                shape "" "${P}u${k}r$r" "$TRUNK_RATE"   # rack -> spine
            done
        else
            ip link add "${P}b$r" type bridge; ip link set "${P}b$r" up
        fi
    done
    for i in $(seq 0 $((HOSTS - 1))); do
        ns=${P}h$i
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        for r in $(seq 0 $((RAILS - 1))); do
            if [ "$RACKS" -gt 1 ]; then br=${P}k$((i / per))b$r; else br=${P}b$r; fi
            ip link add "${P}h${i}r$r" mtu "$MTU" type veth peer name "eth$r" mtu "$MTU" netns "$ns"
            ip link set "${P}h${i}r$r" master "$br" up
            ip -n "$ns" addr add "$(addr_of "$i" "$r")/24" dev "eth$r"
            ip -n "$ns" link set "eth$r" up
            shape "$ns" "eth$r" "$RATE"            # what host i sends on rail r
            shape "" "${P}h${i}r$r" "$RATE"        # what host i receives on rail r
        done
    done
}

cmd_up() {
    [ -n "$PREFIX" ] || PREFIX=coll
    check_prefix
    isnum "$HOSTS" && [ "$HOSTS" -ge 1 ] && [ "$HOSTS" -le 250 ] || die "need --hosts N with 1 <= N <= 250"
    isnum "$RAILS" && [ "$RAILS" -ge 1 ] && [ "$RAILS" -le 9 ] || die "--rails must be 1..9"
    isnum "$RACKS" && [ "$RACKS" -ge 1 ] && [ "$RACKS" -le "$HOSTS" ] || die "--racks must be 1..hosts"
    isnum "$MTU" && [ "$MTU" -ge 576 ] || die "bad --mtu '$MTU'"
    local bps tbps; bps=$(rate_bps "$RATE") && tbps=$(rate_bps "$TRUNK_RATE") || exit 1
    require_netns
    build_nettool
    teardown "$PREFIX" >/dev/null 2>&1   # leftovers of an earlier testbed with this prefix
    [ -n "${IN_RUN:-}" ] || trap 'trap "" INT TERM; echo "$ME: interrupted, tearing down $PREFIX" >&2; teardown "$PREFIX"; exit 130' INT TERM
    ( set -e; build_net ); local rc=$?
    if [ $rc != 0 ]; then
        teardown "$PREFIX" >/dev/null 2>&1
        die "building testbed $PREFIX failed (see above); removed what was made"
    fi
    [ -n "${IN_RUN:-}" ] || trap - INT TERM
    local P=$PREFIX
    cat >"/run/coll-testbed-$P.env" <<EOF
TESTBED_PREFIX=$P
TESTBED_NETNS=${P}h%d
TESTBED_HOSTS=$HOSTS
TESTBED_RAILS=$RAILS
TESTBED_RACKS=$RACKS
TESTBED_RATE=$RATE
TESTBED_RATE_BPS=$bps
TESTBED_TRUNK_RATE=$TRUNK_RATE
TESTBED_TRUNK_RATE_BPS=$tbps
TESTBED_ADDR0=$(addr_of 0 0)
TESTBED_NETTOOL=$NETTOOL
TESTBED_OWNER=${TESTBED_OWNER:-}
EOF
    log "testbed $P: $HOSTS hosts, $RAILS rail(s), $RACKS rack(s), host links $RATE each way$([ "$RACKS" -gt 1 ] && echo ", trunks $TRUNK_RATE"), mtu $MTU"
    log "namespaces ${P}h%d (collrun --netns ${P}h%d); rank 0 rendezvous address $(addr_of 0 0)"
    [ -n "${QUIET:-}" ] || print_addrs
}

load_env() {
    [ -n "$PREFIX" ] || PREFIX=coll
    check_prefix
    [ -r "/run/coll-testbed-$PREFIX.env" ] || die "no testbed '$PREFIX' is up (no /run/coll-testbed-$PREFIX.env)"
    set -a; . "/run/coll-testbed-$PREFIX.env"; set +a
    HOSTS=$TESTBED_HOSTS RAILS=$TESTBED_RAILS RACKS=$TESTBED_RACKS
}

print_addrs() {
    local i r per line
    per=$(( (HOSTS + RACKS - 1) / RACKS ))
    for i in $(seq 0 $((HOSTS - 1))); do
        line="  ${PREFIX}h$i"
        [ "$RACKS" -gt 1 ] && line+="  rack $((i / per))"
        for r in $(seq 0 $((RAILS - 1))); do line+="  rail$r $(addr_of "$i" "$r")"; done
        echo "$line"
    done
}

cmd_ping() {
    load_env; build_nettool
    local i j r bad=0 n=0
    for r in $(seq 0 $((RAILS - 1))); do
        for i in $(seq 0 $((HOSTS - 1))); do
            for j in $(seq 0 $((HOSTS - 1))); do
                [ "$i" = "$j" ] && continue
                n=$((n + 1))
                if ! ip netns exec "${PREFIX}h$i" "$NETTOOL" ping "$(addr_of "$j" "$r")" 3000 >/dev/null 2>&1; then
                    echo "FAIL rail $r: ${PREFIX}h$i cannot reach ${PREFIX}h$j ($(addr_of "$j" "$r"))"
                    bad=$((bad + 1))
                fi
            done
        done
    done
    echo "ping: $((n - bad))/$n host pairs reachable over $RAILS rail(s)"
    [ $bad = 0 ]
}

cmd_rate() {
    load_env; build_nettool
    isnum "$FROM" && isnum "$TO" && [ "$FROM" -lt "$HOSTS" ] && [ "$TO" -lt "$HOSTS" ] && [ "$FROM" != "$TO" ] ||
        die "--from and --to must be different hosts below $HOSTS"
    isnum "$RAIL" && [ "$RAIL" -lt "$RAILS" ] || die "--rail must be below $RAILS"
    local port=$((15000 + $$ % 10000)) out exp
    ip netns exec "${PREFIX}h$TO" "$NETTOOL" sink $port 30 >"/tmp/tb-sink.$$" 2>&1 &
    local sink=$!
    ip netns exec "${PREFIX}h$FROM" "$NETTOOL" send "$(addr_of "$TO" "$RAIL")" $port "$SECONDS" || { kill $sink 2>/dev/null; rm -f "/tmp/tb-sink.$$"; die "send failed"; }
    wait $sink; out=$(cat "/tmp/tb-sink.$$"); rm -f "/tmp/tb-sink.$$"
    local mbit=${out##*mbit }
    [[ $mbit =~ ^[0-9.]+$ ]] || die "no measurement: $out"
    # The bottleneck: the host links, or the trunks when the hosts are in different racks.
    local per=$(( (HOSTS + RACKS - 1) / RACKS )) b=$TESTBED_RATE_BPS
    if [ "$RACKS" -gt 1 ] && [ $((FROM / per)) != $((TO / per)) ] && [ "$TESTBED_TRUNK_RATE_BPS" -lt "$b" ]; then
        b=$TESTBED_TRUNK_RATE_BPS
    fi
    exp=$(awk -v b="$b" 'BEGIN{printf "%.0f", b/1e6}')
    awk -v m="$mbit" -v e="$exp" -v f="$FROM" -v t="$TO" -v r="$RAIL" \
        'BEGIN{printf "rate h%s -> h%s rail %s: %.1f Mbit/s, shaped %s Mbit/s, ratio %.3f\n", f, t, r, m, e, m/e}'
}

cmd_run() {
    if [ -z "$PREFIX" ]; then PREFIX=tb$$; fi
    TESTBED_OWNER=$$
    [ ${#CMD[@]} -gt 0 ] || die "run needs -- CMD..."
    require_netns
    sweep_stale
    local child= rc
    on_signal() {
        trap '' INT TERM
        echo "$ME: got signal, stopping and tearing down testbed $PREFIX" >&2
        [ -n "$child" ] && kill -TERM "$child" 2>/dev/null && { sleep 0.5; kill -KILL "$child" 2>/dev/null; }
        teardown "$PREFIX"
        exit "$1"
    }
    trap 'teardown "$PREFIX" >/dev/null 2>&1' EXIT
    trap 'on_signal 130' INT
    trap 'on_signal 143' TERM
    trap 'on_signal 129' HUP
    IN_RUN=1 cmd_up
    set -a; . "/run/coll-testbed-$PREFIX.env"; set +a
    "${CMD[@]}" &
    child=$!
    wait "$child"; rc=$?
    child=
    teardown "$PREFIX" || rc=${rc/#0/1}
    trap - EXIT
    exit "$rc"
}

sub=${1:-}; [ $# -gt 0 ] && shift
case $sub in
    up) parse "$@"; cmd_up ;;
    down)
        parse "$@"; [ -n "$PREFIX" ] || PREFIX=coll; check_prefix
        [ "$(id -u)" = 0 ] || die "must run as root"
        [ $STALE = 1 ] && sweep_stale
        teardown "$PREFIX" && log "testbed $PREFIX: down" ;;
    run) parse "$@"; cmd_run ;;
    check)
        why=$(why_not)
        if [ -n "$why" ]; then echo "$ME: cannot build a testbed here: $why" >&2; exit 1; fi
        echo "ok: network namespaces, veth, bridges and tc tbf are available" ;;
    ping) parse "$@"; cmd_ping ;;
    rate) parse "$@"; cmd_rate ;;
    info) parse "$@"; load_env; cat "/run/coll-testbed-$PREFIX.env"; print_addrs ;;
    -h|--help|help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
    *) echo "usage: $ME up|down|run|check|ping|rate|info ... (see $ME --help)" >&2; exit 2 ;;
esac
