#!/bin/bash
# run.sh - AFL++ campaigns on coll's input parsers (make fuzz).
#
#   tests/fuzz/run.sh [SECONDS] [HARNESS...]      default: 60 s, every harness
#
# Harnesses (each a real program reading a file AFL writes, @@):
#   collc     collc check FILE -n 4       the lexer, parser, resolver, evaluator, verifier
#   links     collc cost ring -n 4 --links FILE   the link-matrix reader and the cost model
#   plan      fuzz_plan FILE      collc's JSON schedules and tune tables as collbench and the
#                                 PMPI library read them (runtime/planload/planload.c), several
#                                 NUL-separated as PMPI hands them out; what is accepted is
#                                 checked, preprocessed and run on a real job of up to 4
#                                 ranks (tests/fuzz/plan_harness.c)
#   frames    fuzz_frames FILE    a rank fed arbitrary bytes by a peer, on a real 2-rank tcp
#                                 job inside the harness: FILE's first byte picks a stranger
#                                 or an impostor before the handshake, or a peer after it,
#                                 with COLL_AUTH=mac or without (tests/fuzz/frame_harness.c)
# Binaries come from `make FUZZ=1` (build-fuzz/: afl-cc, coverage only, for
# speed); at the end every input AFL kept (its queue) is replayed through
# the sanitizer build (`make SAN=1`, build-san/), so a memory error that
# did not crash counts as a crash too.  Each campaign starts
# from the committed seed corpus tests/fuzz/corpus/HARNESS (tests/fuzz/seeds.sh
# remakes plan's and frames' from collc and a real rank's frames) with the
# dictionary tests/fuzz/HARNESS.dict and writes build-fuzz/afl/HARNESS.
# plan and frames run real jobs (threads and sockets on 127.0.0.1, all inside
# the harness's process): tens of executions a second, not thousands.
# At the end every crash or hang AFL kept that comes back when replayed
# (below) is copied into tests/fuzz/regress/HARNESS/ (commit them:
# tests/harden.test replays every file there through the normal and the
# sanitizer builds), and one summary line per harness is printed:
# executions, paths, crashes, hangs, how many of those did not come back,
# sanitizer findings.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-60}
shift 2>/dev/null || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(collc links plan frames)
B=$root/build-fuzz
export AFL_SKIP_CPUFREQ=1 AFL_NO_UI=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1
export ASAN_OPTIONS=abort_on_error=1:symbolize=0:detect_leaks=0
command -v afl-fuzz >/dev/null || { echo "run.sh: afl-fuzz not installed (Debian package afl++)" >&2; exit 2; }

# The command line of a harness; @@ is the input file.
cmd_of() {
    case $1 in
    collc)  echo "$B/collc check @@ -n 4 --max-steps 2000000 --max-memory 256MiB" ;;
    links)  echo "$B/collc cost $root/stdlib/ring.coll -a ring -n 4 -s 1MiB --links @@" ;;
    plan)   echo "$B/tests/fuzz_plan @@" ;;
    frames) echo "$B/tests/fuzz_frames @@" ;;
    esac
}

# The same command on the sanitizer build, for the replay.
san_cmd_of() { cmd_of "$1" | sed "s#$B/#$root/build-san/#g"; }

# Targets are named as the Makefile names them, relative to the root: an
# absolute path is another target to make, with no rule for it.
build() {
    case $1 in
    collc|links) make -C "$root" --no-print-directory SAN=1 build-san/collc >/dev/null || return 1 ;;&
    plan)        make -C "$root" --no-print-directory SAN=1 build-san/tests/fuzz_plan >/dev/null || return 1 ;;&
    frames)      make -C "$root" --no-print-directory SAN=1 build-san/tests/fuzz_frames >/dev/null || return 1 ;;&
    esac
    case $1 in
    collc|links) make -C "$root" --no-print-directory FUZZ=1 build-fuzz/collc >/dev/null || return 1 ;;
    plan)        make -C "$root" --no-print-directory FUZZ=1 build-fuzz/tests/fuzz_plan >/dev/null || return 1 ;;
    frames)      make -C "$root" --no-print-directory FUZZ=1 build-fuzz/tests/fuzz_frames >/dev/null || return 1 ;;
    esac
}

status=0
for h in "${harnesses[@]}"; do
    [ -d "$here/corpus/$h" ] || { echo "run.sh: no corpus for harness '$h'" >&2; status=2; continue; }
    build "$h" || { echo "run.sh: cannot build harness '$h'" >&2; status=1; continue; }
    out=$B/afl/$h
    rm -rf "$out"
    mkdir -p "$out"
    dict=()
    [ -f "$here/$h.dict" ] && dict=(-x "$here/$h.dict")
    # shellcheck disable=SC2046
    afl-fuzz -i "$here/corpus/$h" -o "$out" "${dict[@]}" -m none -t 3000 -V "$secs" -- $(cmd_of "$h") \
        >"$out.log" 2>&1 || { echo "run.sh: afl-fuzz failed for '$h' (see $out.log)" >&2; status=1; continue; }
    stats=$out/default/fuzzer_stats
    get() { sed -n "s/^$1 *: *//p" "$stats"; }
    mkdir -p "$here/regress/$h"
    # A crash or hang AFL saved is kept only when it comes back: replayed
    # up to 3 times, unprioritised, it must die of a signal or outlive 20
    # s once.  The plan and frames harnesses run real jobs on real
    # sockets, so a busy machine (AFL's child starved of CPU, a port taken
    # between its choice and its bind) makes findings that are the
    # machine's, not the code's; those are counted as not reproduced.
    kept=0 noise=0
    for f in "$out"/default/crashes/id:* "$out"/default/hangs/id:*; do
        [ -e "$f" ] || continue
        again=0
        for try in 1 2 3; do
            # shellcheck disable=SC2046
            timeout 20 $(cmd_of "$h" | sed "s#@@#$f#") >/dev/null 2>&1 </dev/null
            rc=$?
            if [ $rc -eq 124 ] || [ $rc -ge 128 ]; then again=1; break; fi
        done
        if [ $again = 1 ]; then
            cp "$f" "$here/regress/$h/$(basename "$(dirname "$f")")-$(date +%s)-$kept"
            kept=$((kept + 1))
        else
            noise=$((noise + 1))
        fi
    done
    # the queue through the sanitizers: a report (or a signal) is a finding
    san=0
    for f in "$out"/default/queue/id:*; do
        [ -e "$f" ] || continue
        # shellcheck disable=SC2046
        timeout 20 $(san_cmd_of "$h" | sed "s#@@#$f#") >/dev/null 2>"$out.san" </dev/null
        rc=$?
        # 124: timed out, 128+N: a signal (126/127: the program could not
        # be run, which is this script's problem, not a finding)
        if [ $rc -eq 124 ] || [ $rc -ge 128 ] || grep -q "Sanitizer\|runtime error" "$out.san"; then
            cp "$f" "$here/regress/$h/san-$(date +%s)-$san"
            san=$((san + 1))
        fi
    done
    printf '%-7s %6s s  %10s execs  %6s paths  %s crashes  %s hangs (%s not reproduced)  %s sanitizer findings  (%s kept in tests/fuzz/regress/%s)\n' \
        "$h" "$secs" "$(get execs_done)" "$(get corpus_count)" "$(get saved_crashes)" "$(get saved_hangs)" "$noise" "$san" \
        "$((kept + san))" "$h"
done
exit $status
