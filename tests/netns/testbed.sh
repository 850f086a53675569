#!/bin/bash
# testbed.sh - an emulated cluster on one machine with Linux network namespaces.
#
#   testbed.sh up --hosts N [--rails R] [--rate 200mbit[,60mbit...]] [--mtu 9000]
#                 [--racks K [--rack-of 0,1,1,0,... | --shuffle SEED]]
#                 [--trunk-rate 100mbit[,...] | --oversub F] [--queue MS]
#                 [--cc NAME] [--prefix NAME] [--dry-run]
#                                           (--dry-run: check the options and print what
#                                           `info` would, building nothing; no root needed)
#   testbed.sh down [--prefix NAME] [--stale]
#   testbed.sh run [up options] -- CMD...   up, run CMD, always down (also on failure,
#                                           SIGINT, SIGTERM); exits with CMD's status
#   testbed.sh check                        can namespaces be made here?  prints why not
#   testbed.sh ping [--prefix NAME]         every host pings every other on every rail
#   testbed.sh rate [--prefix NAME] [--from I] [--to J] [--rail R] [--seconds S]
#                   [--pairs I:J,I:J...]    measure TCP throughput host I -> host J
#                                           (--pairs: those flows at once, each against
#                                           its max-min fair share of the shaped links)
#   testbed.sh info [--prefix NAME]         hosts, rails, racks and addresses of a testbed
#   testbed.sh link [--prefix NAME] --host I --rail R [--admin] down|up
#                                           take host I's link on rail R down / up
#   testbed.sh flap [--prefix NAME] --host I --rail R [--count 10] [--down-ms 300]
#                   [--up-ms 700] [--seed S] [--admin]
#                                           take it down and up at random moments
#
# Host i is network namespace PREFIXh<i> (so `collrun --netns PREFIXh%d`
# starts rank i in host i).  Per rail r there is a bridge; each host has a
# veth pair per rail (eth<r> inside the host, address 10.77.<r>.<i+1>/24)
# into that rail's bridge.  Both directions of every host link are shaped
# with tc tbf at the rail's rate: the host-side end limits what the host
# sends, the bridge-side end what it receives.  Bandwidth only: netem is not
# used (no delay).  Each tbf lets ~10 ms of traffic through at once (its
# burst) and queues what comes faster: by default up to 50 ms of traffic
# with the burst (at least 256 KiB), a deep queue, the one the results
# pages' measurements ran on (tests/results/); --queue MS queues at most MS ms beyond the burst
# (at least two packets), e.g. --queue 5 for fq_codel's 5 ms target, what
# a Linux host's own NIC queue holds under load.  The depth matters
# wherever a sender cannot take back what it has queued:
# tests/results/rails.md measures a split over unequal rails at several depths.
#
# Congestion control.  --cc NAME sets TCP's congestion control in every
# host (net.ipv4.tcp_congestion_control, one per namespace; NAME one of
# the kernel's tcp_available_congestion_control, e.g. cubic, bbr, reno,
# and, as Linux requires of a namespace other than the root one, listed in
# the root namespace's net.ipv4.tcp_allowed_congestion_control, which
# the testbed leaves as it is: it is the machine's policy).
# Without it a host gets what the kernel gives a new namespace, the root
# namespace's setting on current kernels: Debian's default is cubic, but
# a machine tuned for bbr passes that on.  It changes how flows sharing a
# shaped link divide it, so benchmarks that compare against a model of
# that sharing (netns_reorder.sh) record it; TESTBED_CC says which ran.
#
# Rates.  --rate takes one tc rate for every rail or a comma list with one
# per rail (--rate 200mbit,60mbit: rail 0 at 200, rail 1 at 60 Mbit/s);
# --trunk-rate likewise.  Without --rails the number of rails is the length
# of the longer list.
#
# Racks.  With --racks K (K >= 2) every rack has its own bridge per rail,
# joined to a spine bridge by a trunk veth shaped in both directions.  Hosts
# go to racks in blocks of consecutive ranks (host i in rack i*K/N), or as
# --rack-of L says (L[i] is host i's rack, 0..K-1, every rack used; --racks
# may then be left out), or, with --shuffle SEED, scrambled the way a cloud
# places VMs: the same rack sizes as the blocks (equal when K divides N,
# else differing by one) dealt to hosts by a Fisher-Yates shuffle driven by
# a MINSTD generator seeded with SEED, so the same seed gives the same
# placement on every machine.  Trunks run at --trunk-rate (default
# 100mbit), or, with --oversub F, at (hosts in the largest rack x host rate
# of the rail) / F: --oversub 1 is a non-blocking rack, --oversub 4 one
# whose hosts can together send 4 times what its trunk carries.
#
# Links.  `link ... down` sets the bridge-side end of host I's rail-R veth
# (PREFIXh<I>r<R> in the root namespace) down: the host's eth<R> loses
# carrier (NO-CARRIER), as when a cable or a switch port fails; nothing
# crosses it either way, the host keeps its address and route, and a TCP
# connection over it stalls rather than resets.  With --admin it instead
# sets eth<R> inside the host down, as `ip link set eth1 down` on a real
# NIC: the kernel also drops the host's route for 10.77.<R>.0/24, so new
# connections and datagrams on that rail fail at once with "Network is
# unreachable"; established connections still stall, not reset.  `link ...
# up` brings both ends up (the route comes back by itself).  `flap` does
# --count cycles of: wait an up time, down, wait a down time, up; each time
# is drawn uniformly from [0.5, 1.5] x its --up-ms / --down-ms, from --seed
# (default: a random seed, printed).  It prints "flap: +MS down|up" per
# change (MS since it started), and leaves the link up when it ends, fails
# or is interrupted.  Both work from any process while `run` runs a
# command: `run` exports TESTBED_PREFIX, which `link`, `flap`, `ping`,
# `rate` and `info` use when --prefix is not given.
#
# What TCP does meanwhile (measured at 100 Mbit/s, kernel 6.18, default
# sysctls; details in tests/netns/README.md):
# the connection stalls, nothing errors, and it carries on after `up`:
# within 1 s when the sender's own link was down, but after up to the
# doubled retransmission timeout when the receiver's was (3.6 s after a
# 10 s outage, 24 s after 30 s).  A write fails only after ~930 s
# (tcp_retries2; EHOSTUNREACH), or after TCP_USER_TIMEOUT if set; a reader
# blocked in read() never returns on its own.  A new connect() fails after
# ~3 s (EHOSTUNREACH, ARP unanswered), or at once after --admin down.
#
# Names: namespaces PREFIXh<i>; links in the root namespace PREFIXh<i>r<r>
# (host links), PREFIXb<r> / PREFIXk<k>b<r> / PREFIXs<r> (bridges),
# PREFIXt<k>r<r> / PREFIXu<k>r<r> (trunk ends).  PREFIX is [a-z][a-z0-9]*, at
# most 9 characters; `up` and `down` default to "coll", `run` to tb<pid>,
# the other commands to $TESTBED_PREFIX or else "coll".
# `up` first removes what a previous testbed of the same prefix left, and
# `run` / `down --stale` remove tb<pid> testbeds whose process is gone, and
# testbeds brought up with TESTBED_OWNER=PID in the environment (recorded;
# `run` sets it to itself) whose owner is gone.
# Nothing gets an address in the root namespace: traffic stays between the
# namespaces.
#
# `run` exports to CMD (and `info` prints; the file /run/coll-testbed-PREFIX.env
# holds them while the testbed is up):
#   TESTBED_PREFIX, TESTBED_NETNS (e.g. tb123h%d), TESTBED_HOSTS,
#   TESTBED_RAILS, TESTBED_RACKS, TESTBED_MTU
#   TESTBED_RATE, TESTBED_RATE_BPS (bits/s)   rail 0's host link rate
#   TESTBED_RATE_<r>, TESTBED_RATE_BPS_<r>    rail r's, for every rail
#   TESTBED_RATES                            all rails' rates, comma separated
#   TESTBED_TRUNK_RATE, TESTBED_TRUNK_RATE_BPS, TESTBED_TRUNK_RATE_<r>,
#   TESTBED_TRUNK_RATE_BPS_<r>, TESTBED_TRUNK_RATES   the same for trunks
#   TESTBED_OVERSUB                          F of --oversub, or empty
#   TESTBED_QUEUE_MS                         MS of --queue, or empty (the default queue)
#   TESTBED_CC                               TCP congestion control in the hosts (--cc or the kernel's; --dry-run: --cc or empty)
#   TESTBED_RACK_OF                          host i's rack, comma separated (0,1,1,0)
#   TESTBED_IFACES                           rail r's interface in every host (eth0,eth1)
#   TESTBED_ADDRS_RAIL<r>                    host i's address on rail r, comma
#                                            separated in host order (10.77.<r>.<i+1>)
#   TESTBED_ADDR0                            host 0's rail-0 address (collrun's rendezvous)
#   TESTBED_NETTOOL                          the probe program (tests/netns/nettool.c)
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

PREFIX= HOSTS= RAILS= RACKS= RATE=200mbit TRUNK_RATE= OVERSUB= MTU=9000
RACK_OF= SHUFFLE= QUEUE_MS= CC= DRY_RUN=0 FROM=0 TO=1 RAIL=0 SECONDS=3 STALE=0 PAIRS=
HOST= COUNT=10 DOWN_MS=300 UP_MS=700 SEED= ADMIN=0
CMD=() POS=()

parse() {
    while [ $# -gt 0 ]; do
        case $1 in
            --hosts) HOSTS=${2:-}; shift 2 ;;
            --rails) RAILS=${2:-}; shift 2 ;;
            --racks) RACKS=${2:-}; shift 2 ;;
            --rate) RATE=${2:-}; shift 2 ;;
            --trunk-rate) TRUNK_RATE=${2:-}; shift 2 ;;
            --oversub) OVERSUB=${2:-}; shift 2 ;;
            --rack-of) RACK_OF=${2:-}; shift 2 ;;
            --shuffle) SHUFFLE=${2:-}; shift 2 ;;
            --mtu) MTU=${2:-}; shift 2 ;;
            --queue) QUEUE_MS=${2:-}; shift 2 ;;
            --cc) CC=${2:-}; shift 2 ;;
            --prefix) PREFIX=${2:-}; shift 2 ;;
            --from) FROM=${2:-}; shift 2 ;;
            --to) TO=${2:-}; shift 2 ;;
            --pairs) PAIRS=${2:-}; shift 2 ;;
            --rail) RAIL=${2:-}; shift 2 ;;
            --seconds) SECONDS=${2:-}; shift 2 ;;
            --host) HOST=${2:-}; shift 2 ;;
            --count) COUNT=${2:-}; shift 2 ;;
            --down-ms) DOWN_MS=${2:-}; shift 2 ;;
            --up-ms) UP_MS=${2:-}; shift 2 ;;
            --seed) SEED=${2:-}; shift 2 ;;
            --admin) ADMIN=1; shift ;;
            --stale) STALE=1; shift ;;
            --dry-run) DRY_RUN=1; shift ;;
            -q|--quiet) QUIET=1; shift ;;
            --) shift; CMD=("$@"); break ;;
            -*) die "unknown argument '$1' (see the header of $0)" ;;
            *) POS+=("$1"); shift ;;
        esac
    done
}
no_pos() { [ ${#POS[@]} = 0 ] || die "unexpected argument '${POS[0]}' (see the header of $0)"; }

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
# (at least 64 KiB so one GSO super-packet fits); queue ~50 ms with the
# burst, or --queue's milliseconds beyond it (see the header).
shape() {
    local ns=$1 dev=$2 rate=$3 bps burst limit
    bps=$(rate_bps "$rate")
    burst=$((bps / 8 / 100)); [ $burst -ge 65536 ] || burst=65536
    if [ -n "$QUEUE_MS" ]; then
        limit=$((burst + bps / 8 * QUEUE_MS / 1000)); [ $limit -ge $((burst + 2 * MTU)) ] || limit=$((burst + 2 * MTU))
    else
        limit=$((bps / 8 / 20)); [ $limit -ge 262144 ] || limit=262144
    fi
    tc ${ns:+-n "$ns"} qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" limit "$limit"
}

addr_of() { echo "10.77.$2.$(($1 + 1))"; }   # host rail

# bits/s -> the shortest tc rate string (200000000 -> 200mbit).
fmt_rate() {
    local b=$1
    if [ $((b % 1000000000)) = 0 ] && [ "$b" -gt 0 ]; then echo "$((b / 1000000000))gbit"
    elif [ $((b % 1000000)) = 0 ] && [ "$b" -gt 0 ]; then echo "$((b / 1000000))mbit"
    elif [ $((b % 1000)) = 0 ] && [ "$b" -gt 0 ]; then echo "$((b / 1000))kbit"
    else echo "${b}bit"; fi
}

# MINSTD (Park-Miller): the same numbers from the same seed on every
# machine, unlike awk's rand() or bash's $RANDOM.  Sets RNG.
rng_seed() { RNG=$(( $1 % 2147483646 + 1 )); rng_next; rng_next; rng_next; }
rng_next() { RNG=$(( RNG * 48271 % 2147483647 )); }

# One value per rail from a comma list of one or RAILS values: RATES or
# TRUNKS (tc strings) and RATES_BPS or TRUNKS_BPS.  $1 the option name,
# $2 the list, $3 the array name.
per_rail() {
    local opt=$1 list=$2 name=$3 r v b vals
    IFS=, read -ra vals <<<"$list"
    [ ${#vals[@]} = 1 ] || [ ${#vals[@]} = "$RAILS" ] ||
        die "$opt '$list' gives ${#vals[@]} rates for $RAILS rail(s): give one for all rails or one per rail"
    for r in $(seq 0 $((RAILS - 1))); do
        v=${vals[0]}; [ ${#vals[@]} = 1 ] || v=${vals[$r]}
        b=$(rate_bps "$v") || exit 1
        [ "$b" -gt 0 ] || die "$opt: rate '$v' must be positive"
        eval "${name}[$r]=\$v; ${name}_BPS[$r]=\$b"
    done
}

# Which rack each host is in (RACKOF[i]) and how many racks (RACKS), from
# --racks, --rack-of and --shuffle.
place_hosts() {
    local i j t k max=0 seen
    if [ -n "$RACK_OF" ]; then
        [ -z "$SHUFFLE" ] || die "give --rack-of or --shuffle, not both"
        IFS=, read -ra RACKOF <<<"$RACK_OF"
        [ ${#RACKOF[@]} = "$HOSTS" ] ||
            die "--rack-of '$RACK_OF' places ${#RACKOF[@]} host(s), but there are $HOSTS"
        for k in "${RACKOF[@]}"; do
            isnum "$k" || die "--rack-of '$RACK_OF': '$k' is not a rack number"
            [ "$k" -lt "$max" ] || max=$((k + 1))
        done
        [ -z "$RACKS" ] || [ "$RACKS" = "$max" ] ||
            die "--rack-of '$RACK_OF' uses racks 0..$((max - 1)) but --racks is $RACKS"
        RACKS=$max
        seen=" ${RACKOF[*]} "
        for k in $(seq 0 $((RACKS - 1))); do
            [[ $seen == *" $k "* ]] || die "--rack-of '$RACK_OF': rack $k has no host (racks are numbered 0..K-1, each used)"
        done
        return
    fi
    [ -n "$RACKS" ] || RACKS=1
    isnum "$RACKS" && [ "$RACKS" -ge 1 ] && [ "$RACKS" -le "$HOSTS" ] || die "--racks must be 1..hosts"
    # Blocks of consecutive hosts, sizes differing by at most one.
    for i in $(seq 0 $((HOSTS - 1))); do RACKOF[$i]=$((i * RACKS / HOSTS)); done
    if [ -n "$SHUFFLE" ]; then
        isnum "$SHUFFLE" || die "--shuffle takes a seed, a non-negative integer (got '$SHUFFLE')"
        [ "$RACKS" -ge 2 ] || die "--shuffle needs --racks K with K >= 2"
        rng_seed "$SHUFFLE"
        for ((i = HOSTS - 1; i > 0; i--)); do
            rng_next; j=$((RNG % (i + 1)))
            t=${RACKOF[$i]}; RACKOF[$i]=${RACKOF[$j]}; RACKOF[$j]=$t
        done
    fi
}

# Everything `up` needs, checked: RAILS, RATES, TRUNKS, RACKS, RACKOF.
configure() {
    isnum "$HOSTS" && [ "$HOSTS" -ge 1 ] && [ "$HOSTS" -le 250 ] || die "need --hosts N with 1 <= N <= 250"
    local nr nt vals
    IFS=, read -ra vals <<<"$RATE"; nr=${#vals[@]}
    IFS=, read -ra vals <<<"$TRUNK_RATE"; nt=${#vals[@]}
    if [ -z "$RAILS" ]; then RAILS=1; [ "$nr" -le "$RAILS" ] || RAILS=$nr; [ "$nt" -le "$RAILS" ] || RAILS=$nt; fi
    isnum "$RAILS" && [ "$RAILS" -ge 1 ] && [ "$RAILS" -le 9 ] || die "--rails must be 1..9"
    isnum "$MTU" && [ "$MTU" -ge 576 ] || die "bad --mtu '$MTU'"
    [ -z "$QUEUE_MS" ] || { isnum "$QUEUE_MS" && [ "$QUEUE_MS" -le 1000 ]; } ||
        die "bad --queue '$QUEUE_MS' (want milliseconds, 0..1000)"
    [ -z "$CC" ] || [[ $CC =~ ^[a-z][a-z0-9_]{0,15}$ ]] || die "bad --cc '$CC' (want a congestion control's name, e.g. cubic)"
    per_rail --rate "$RATE" RATES
    place_hosts
    if [ -n "$OVERSUB" ]; then
        [ -z "$TRUNK_RATE" ] || die "give --trunk-rate or --oversub, not both"
        [[ $OVERSUB =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v f="$OVERSUB" 'BEGIN{exit !(f > 0)}' ||
            die "--oversub takes a positive number (got '$OVERSUB')"
        [ "$RACKS" -ge 2 ] || die "--oversub needs racks (--racks K >= 2, --rack-of or --shuffle)"
        local k size=0 n r b list=
        for k in $(seq 0 $((RACKS - 1))); do
            n=0; for r in "${RACKOF[@]}"; do [ "$r" != "$k" ] || n=$((n + 1)); done
            [ "$n" -le "$size" ] || size=$n
        done
        for r in $(seq 0 $((RAILS - 1))); do
            b=$(awk -v n="$size" -v b="${RATES_BPS[$r]}" -v f="$OVERSUB" 'BEGIN{printf "%.0f", n * b / f}')
            [ "$b" -ge 1000 ] || die "--oversub $OVERSUB leaves the trunks below 1 kbit/s"
            list+=${list:+,}$(fmt_rate "$b")
        done
        per_rail --oversub "$list" TRUNKS
    else
        per_rail --trunk-rate "${TRUNK_RATE:-100mbit}" TRUNKS
    fi
}

build_net() {
    local P=$PREFIX i r k ns br
    for r in $(seq 0 $((RAILS - 1))); do
        if [ "$RACKS" -gt 1 ]; then
            ip link add "${P}s$r" type bridge; ip link set "${P}s$r" mtu "$MTU" up
            for k in $(seq 0 $((RACKS - 1))); do
                ip link add "${P}k${k}b$r" type bridge; ip link set "${P}k${k}b$r" up
                ip link add "${P}t${k}r$r" mtu "$MTU" type veth peer name "${P}u${k}r$r" mtu "$MTU"
                ip link set "${P}t${k}r$r" master "${P}k${k}b$r" up
                ip link set "${P}u${k}r$r" master "${P}s$r" up
                shape "" "${P}t${k}r$r" "${TRUNKS[$r]}"   # spine -> rack
                shape "" "${P}u${k}r$r" "${TRUNKS[$r]}"   # rack -> spine
            done
        else
            ip link add "${P}b$r" type bridge; ip link set "${P}b$r" up
        fi
    done
    for i in $(seq 0 $((HOSTS - 1))); do
        ns=${P}h$i
        ip netns add "$ns"
        ip -n "$ns" link set lo up
        # /proc/sys/net is the namespace of whoever reads it: write it from inside
        if [ -n "$CC" ] && ! ip netns exec "$ns" tee /proc/sys/net/ipv4/tcp_congestion_control <<<"$CC" >/dev/null 2>&1; then
            echo "cannot set congestion control '$CC' in a namespace: it must be available" \
                "($(cat /proc/sys/net/ipv4/tcp_available_congestion_control)) and allowed" \
                "($(cat /proc/sys/net/ipv4/tcp_allowed_congestion_control); the root namespace's" \
                "net.ipv4.tcp_allowed_congestion_control lists what other namespaces may use)" >&2
            return 1
        fi
        for r in $(seq 0 $((RAILS - 1))); do
            if [ "$RACKS" -gt 1 ]; then br=${P}k${RACKOF[$i]}b$r; else br=${P}b$r; fi
            ip link add "${P}h${i}r$r" mtu "$MTU" type veth peer name "eth$r" mtu "$MTU" netns "$ns"
            ip link set "${P}h${i}r$r" master "$br" up
            ip -n "$ns" addr add "$(addr_of "$i" "$r")/24" dev "eth$r"
            ip -n "$ns" link set "eth$r" up
            shape "$ns" "eth$r" "${RATES[$r]}"            # what host i sends on rail r
            shape "" "${P}h${i}r$r" "${RATES[$r]}"        # what host i receives on rail r
        done
    done
}

# The environment file's lines: what `run` exports and `info` prints.
print_env() {
    local P=$PREFIX r i list ifs=
    {
        echo "TESTBED_PREFIX=$P"
        echo "TESTBED_NETNS=${P}h%d"
        echo "TESTBED_HOSTS=$HOSTS"
        echo "TESTBED_RAILS=$RAILS"
        echo "TESTBED_RACKS=$RACKS"
        echo "TESTBED_MTU=$MTU"
        echo "TESTBED_QUEUE_MS=$QUEUE_MS"
        echo "TESTBED_CC=$CC"
        echo "TESTBED_RATE=${RATES[0]}"
        echo "TESTBED_RATE_BPS=${RATES_BPS[0]}"
        echo "TESTBED_RATES=$(IFS=,; echo "${RATES[*]}")"
        for r in $(seq 0 $((RAILS - 1))); do
            echo "TESTBED_RATE_$r=${RATES[$r]}"
            echo "TESTBED_RATE_BPS_$r=${RATES_BPS[$r]}"
        done
        echo "TESTBED_TRUNK_RATE=${TRUNKS[0]}"
        echo "TESTBED_TRUNK_RATE_BPS=${TRUNKS_BPS[0]}"
        echo "TESTBED_TRUNK_RATES=$(IFS=,; echo "${TRUNKS[*]}")"
        for r in $(seq 0 $((RAILS - 1))); do
            echo "TESTBED_TRUNK_RATE_$r=${TRUNKS[$r]}"
            echo "TESTBED_TRUNK_RATE_BPS_$r=${TRUNKS_BPS[$r]}"
        done
        echo "TESTBED_OVERSUB=$OVERSUB"
        echo "TESTBED_RACK_OF=$(IFS=,; echo "${RACKOF[*]}")"
        for r in $(seq 0 $((RAILS - 1))); do ifs+=${ifs:+,}eth$r; done
        echo "TESTBED_IFACES=$ifs"
        for r in $(seq 0 $((RAILS - 1))); do
            list=; for i in $(seq 0 $((HOSTS - 1))); do list+=${list:+,}$(addr_of "$i" "$r"); done
            echo "TESTBED_ADDRS_RAIL$r=$list"
        done
        echo "TESTBED_ADDR0=$(addr_of 0 0)"
        echo "TESTBED_NETTOOL=$NETTOOL"
        echo "TESTBED_OWNER=${TESTBED_OWNER:-}"
    }
}

# "200mbit" when every rail has that rate, else "200mbit,60mbit".
one_or_list() {
    local v
    for v in "$@"; do [ "$v" = "$1" ] || { (IFS=,; echo "$*"); return; }; done
    echo "$1"
}

cmd_up() {
    no_pos
    [ -n "$PREFIX" ] || PREFIX=coll
    check_prefix
    configure
    if [ "$DRY_RUN" = 1 ]; then print_env; print_info; return; fi
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
    local P=$PREFIX trunks=
    # what the hosts run: --cc's, or what the kernel gave a new namespace
    CC=$(ip netns exec "${P}h0" cat /proc/sys/net/ipv4/tcp_congestion_control)
    print_env >"/run/coll-testbed-$P.env"
    if [ "$RACKS" -gt 1 ]; then
        trunks=", trunks $(one_or_list "${TRUNKS[@]}")"
        [ -z "$OVERSUB" ] || trunks+=" (oversubscription $OVERSUB)"
    fi
    log "testbed $P: $HOSTS hosts, $RAILS rail(s), $RACKS rack(s), host links $(one_or_list "${RATES[@]}") each way$trunks, mtu $MTU${QUEUE_MS:+, queue $QUEUE_MS ms}, tcp $CC"
    log "namespaces ${P}h%d (collrun --netns ${P}h%d); rank 0 rendezvous address $(addr_of 0 0)"
    [ -n "${QUIET:-}" ] || print_addrs
}

load_env() {
    [ -n "$PREFIX" ] || PREFIX=${TESTBED_PREFIX:-coll}
    check_prefix
    [ -r "/run/coll-testbed-$PREFIX.env" ] || die "no testbed '$PREFIX' is up (no /run/coll-testbed-$PREFIX.env)"
    set -a; . "/run/coll-testbed-$PREFIX.env"; set +a
    HOSTS=$TESTBED_HOSTS RAILS=$TESTBED_RAILS RACKS=$TESTBED_RACKS
    IFS=, read -ra RACKOF <<<"$TESTBED_RACK_OF"
}

print_addrs() {
    local i r line
    for i in $(seq 0 $((HOSTS - 1))); do
        line="  ${PREFIX}h$i"
        [ "$RACKS" -gt 1 ] && line+="  rack ${RACKOF[$i]}"
        for r in $(seq 0 $((RAILS - 1))); do line+="  rail$r $(addr_of "$i" "$r")"; done
        echo "$line"
    done
}

# After the environment: each host's addresses and each rack's hosts.
print_info() {
    echo "host i, rail r: interface eth<r> in namespace ${PREFIX}h<i>, address 10.77.<r>.<i+1>/24"
    print_addrs
    local k i line
    if [ "$RACKS" -gt 1 ]; then
        for k in $(seq 0 $((RACKS - 1))); do
            line="  rack $k:"
            for i in $(seq 0 $((HOSTS - 1))); do [ "${RACKOF[$i]}" != "$k" ] || line+=" h$i"; done
            echo "$line"
        done
    fi
}

cmd_info() {
    no_pos; load_env
    cat "/run/coll-testbed-$PREFIX.env"
    print_info
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

# What each of the flows "I:J ..." on rail RAIL should get: the max-min
# fair share of the shaped links it crosses (host I's uplink, host J's
# downlink and, between racks, I's rack's trunk up and J's rack's trunk
# down), one number (Mbit/s) per line.
fair_shares() {
    local f i j v=TESTBED_RATE_BPS_$RAIL t=TESTBED_TRUNK_RATE_BPS_$RAIL bps tbps
    bps=${!v} tbps=${!t}
    for f in "$@"; do
        i=${f%:*} j=${f#*:}
        echo "flow u$i d$j$([ "${RACKOF[$i]}" != "${RACKOF[$j]}" ] && echo " tu${RACKOF[$i]} td${RACKOF[$j]}")"
    done | awk -v bps="$bps" -v tbps="$tbps" '
        { n++; for (k = 2; k <= NF; k++) { on[n, $k] = 1; links[$k] = 1 } }
        END {
            for (l in links) cap[l] = (l ~ /^t/) ? tbps : bps
            left = n
            while (left > 0) {
                best = -1
                for (l in links) {
                    m = 0
                    for (f = 1; f <= n; f++) if (!done[f] && on[f, l]) m++
                    if (!m) continue
                    s = cap[l] / m
                    if (best < 0 || s < best) { best = s; bl = l }
                }
                for (f = 1; f <= n; f++) if (!done[f] && on[f, bl]) { got[f] = best; done[f] = 1; left-- }
                for (l in links) for (f = 1; f <= n; f++) if (on[f, l] && done[f] && !charged[f, l]) { cap[l] -= got[f]; charged[f, l] = 1 }
            }
            for (f = 1; f <= n; f++) printf "%.1f\n", got[f] / 1e6
        }'
}

cmd_rate() {
    no_pos; load_env; build_nettool
    isnum "$RAIL" && [ "$RAIL" -lt "$RAILS" ] || die "--rail must be below $RAILS"
    local flows=() f i j k n
    if [ -n "$PAIRS" ]; then IFS=, read -ra flows <<<"$PAIRS"; else flows=("$FROM:$TO"); fi
    for f in "${flows[@]}"; do
        i=${f%:*} j=${f#*:}
        isnum "$i" && isnum "$j" && [ "$i" -lt "$HOSTS" ] && [ "$j" -lt "$HOSTS" ] && [ "$i" != "$j" ] ||
            die "bad flow '$f': want I:J (--from I --to J), different hosts below $HOSTS"
    done
    n=${#flows[@]}
    local port=$((15000 + $$ % 10000)) tmp sinks=() senders=() bad=0
    tmp=$(mktemp -d /tmp/tb-rate.XXXXXX) || die "mktemp failed"
    for k in $(seq 0 $((n - 1))); do
        f=${flows[$k]}; j=${f#*:}
        ip netns exec "${PREFIX}h$j" "$NETTOOL" sink $((port + k)) 30 >"$tmp/sink$k" 2>&1 &
        sinks+=($!)
    done
    for k in $(seq 0 $((n - 1))); do
        f=${flows[$k]}; i=${f%:*} j=${f#*:}
        ip netns exec "${PREFIX}h$i" "$NETTOOL" send "$(addr_of "$j" "$RAIL")" $((port + k)) "$SECONDS" 2>"$tmp/send$k" &
        senders+=($!)
    done
    for k in "${!senders[@]}"; do wait "${senders[$k]}" || { bad=1; cat "$tmp/send$k" >&2; }; done
    [ $bad = 0 ] || kill "${sinks[@]}" 2>/dev/null
    for k in "${sinks[@]}"; do wait "$k"; done
    local out mbit got=() exp
    for k in $(seq 0 $((n - 1))); do
        out=$(cat "$tmp/sink$k"); mbit=${out##*mbit }
        [[ $mbit =~ ^[0-9.]+$ ]] || { rm -rf "$tmp"; die "no measurement for flow ${flows[$k]}: $out"; }
        got+=("$mbit")
    done
    rm -rf "$tmp"
    [ $bad = 0 ] || die "send failed"
    mapfile -t exp < <(fair_shares "${flows[@]}")
    for k in $(seq 0 $((n - 1))); do
        f=${flows[$k]}
        awk -v m="${got[$k]}" -v e="${exp[$k]}" -v f="${f%:*}" -v t="${f#*:}" -v r="$RAIL" \
            'BEGIN{printf "rate h%s -> h%s rail %s: %.1f Mbit/s, shaped %.0f Mbit/s, ratio %.3f\n", f, t, r, m, e, m/e}'
    done
    if [ "$n" -gt 1 ]; then
        printf '%s\n' "${got[@]}" | paste -d' ' - <(printf '%s\n' "${exp[@]}") |
            awk -v n="$n" -v r="$RAIL" '{m += $1; e += $2}
                END{printf "rate total of %d flows rail %s: %.1f Mbit/s, shaped %.0f Mbit/s, ratio %.3f\n", n, r, m, e, m/e}'
    fi
}

# Host HOST's link on rail RAIL: check the arguments.
check_link_args() {
    isnum "$HOST" && [ "$HOST" -lt "$HOSTS" ] || die "need --host I with I below $HOSTS"
    isnum "$RAIL" && [ "$RAIL" -lt "$RAILS" ] || die "--rail must be below $RAILS"
}

# link_set up|down: see "Links" in the header.  Waits (up to 2 s) until the
# host's eth<r> reports the new state, so that a caller may rely on it.
link_set() {
    local ns=${PREFIX}h$HOST dev=eth$RAIL br=${PREFIX}h${HOST}r$RAIL i st
    if [ "$1" = down ]; then
        if [ "$ADMIN" = 1 ]; then ip -n "$ns" link set "$dev" down; else ip link set "$br" down; fi || return 1
    else
        ip link set "$br" up && ip -n "$ns" link set "$dev" up || return 1
    fi
    for ((i = 0; i < 100; i++)); do
        st=$(ip -n "$ns" -o link show "$dev" 2>/dev/null)
        if [ "$1" = up ]; then [[ $st == *"state UP"* ]] && return 0
        else [[ $st == *"state UP"* ]] || return 0; fi
        sleep 0.02
    done
    echo "$ME: warning: $ns $dev did not report $1 within 2 s: $st" >&2
}

cmd_link() {
    load_env; check_link_args
    [ ${#POS[@]} = 1 ] && [[ ${POS[0]} == up || ${POS[0]} == down ]] || die "link needs 'up' or 'down'"
    link_set "${POS[0]}" || die "cannot set ${PREFIX}h$HOST rail $RAIL ${POS[0]}"
    log "link ${PREFIX}h$HOST rail $RAIL: ${POS[0]}$([ "$ADMIN" = 1 ] && [ "${POS[0]}" = down ] && echo " (admin: eth$RAIL down inside the host)")"
}

# MS = a uniform draw from [M/2, 3M/2] ms.
draw_ms() { rng_next; MS=$(( $1 / 2 + RNG % ($1 + 1) )); }
# In the background and waited for: bash runs a trap only once the
# foreground command ends, so a plain `sleep 20` would hold flap's TERM
# (and the link's coming back up) for up to 20 s; `wait` is interrupted.
sleep_ms() {
    sleep "$(($1 / 1000)).$(printf %03d $(($1 % 1000)))" &
    SLEEP_PID=$!
    wait "$SLEEP_PID"
    SLEEP_PID=
}
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
sleep_until() { local d=$(( $1 - $(now_ms) )); [ "$d" -le 0 ] || sleep_ms "$d"; }

cmd_flap() {
    no_pos; load_env; check_link_args
    isnum "$COUNT" && isnum "$DOWN_MS" && isnum "$UP_MS" || die "--count, --down-ms and --up-ms take non-negative integers"
    if [ -z "$SEED" ]; then SEED=$(( (RANDOM << 15 | RANDOM) ^ $$ )); fi
    isnum "$SEED" || die "--seed takes a non-negative integer (got '$SEED')"
    rng_seed "$SEED"
    local t0 next c what="${PREFIX}h$HOST rail $RAIL"
    # Whatever happens, the link is left up.
    trap 'link_set up >/dev/null 2>&1' EXIT
    flap_stop() {
        trap '' INT TERM; [ -n "${SLEEP_PID:-}" ] && kill "$SLEEP_PID" 2>/dev/null; link_set up >/dev/null 2>&1
        echo "flap: interrupted; $what left up" >&2; trap - EXIT; exit "$1"
    }
    trap 'flap_stop 130' INT
    trap 'flap_stop 143' TERM
    t0=$(now_ms); next=$t0
    log "flap: $what, $COUNT cycles, up ~${UP_MS} ms, down ~${DOWN_MS} ms, seed $SEED"
    # Changes are due at times drawn from the start, so that the time the
    # ip commands take does not lengthen the intervals.
    for c in $(seq 1 "$COUNT"); do
        draw_ms "$UP_MS"; next=$((next + MS)); sleep_until "$next"
        link_set down || die "cannot take $what down"
        log "flap: +$(( $(now_ms) - t0 )) ms down"
        draw_ms "$DOWN_MS"; next=$((next + MS)); sleep_until "$next"
        link_set up || die "cannot bring $what up"
        log "flap: +$(( $(now_ms) - t0 )) ms up"
    done
}

cmd_run() {
    [ "$DRY_RUN" = 0 ] || die "--dry-run is for up, not run"
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
        parse "$@"; no_pos; [ -n "$PREFIX" ] || PREFIX=coll; check_prefix
        [ "$(id -u)" = 0 ] || die "must run as root"
        [ $STALE = 1 ] && sweep_stale
        teardown "$PREFIX" && log "testbed $PREFIX: down" ;;
    run) parse "$@"; no_pos; cmd_run ;;
    check)
        why=$(why_not)
        if [ -n "$why" ]; then echo "$ME: cannot build a testbed here: $why" >&2; exit 1; fi
        echo "ok: network namespaces, veth, bridges and tc tbf are available" ;;
    ping) parse "$@"; no_pos; cmd_ping ;;
    rate) parse "$@"; cmd_rate ;;
    info) parse "$@"; cmd_info ;;
    link) parse "$@"; cmd_link ;;
    flap) parse "$@"; cmd_flap ;;
    -h|--help|help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' ;;
    *) echo "usage: $ME up|down|run|check|ping|rate|info|link|flap ... (see $ME --help)" >&2; exit 2 ;;
esac
