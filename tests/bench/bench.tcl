# bench.tcl - `make bench`: speed and memory of the compiler and the cost
# model, with the targets beside each number, then the runtime benchmark
# (tests/bench/runtime.sh) when it is there.
#
#   tclsh tests/bench/bench.tcl [-build DIR] [-only compiler|cost|runtime|tuning|p2p|torch]
#
# Every number is measured in this run.  The compiler's baseline is a
# straightforward Python implementation of StragglAR's Algorithm 1
# (stragglar_ref.py here, run on the same machine), the kind of generator
# the paper used (1.04 s for n = 256 there); run like this, most of its
# time is json.dump of the schedule (tests/results/stragglar.md sets
# collc beside the paper authors' own construct_schedule).
set root [file normalize [file join [file dirname [info script]] .. ..]]
set build [file join $root build]
set only ""
foreach {k v} $argv {
    switch -- $k { -build { set build [file normalize $v] } -only { set only $v } }
}
set collc [file join $build collc]
cd $root

# Run collc with --stats; returns {ms peak_mb}.
proc stats {args} {
    set err [file join /tmp coll-bench-[pid].err]
    exec $::collc --stats {*}$args >/dev/null 2>$err
    set f [open $err]; set e [read $f]; close $f
    file delete $err
    if {![regexp {stats: ([0-9.]+) ms, peak RSS ([0-9.]+) MB} $e -> ms mb]} { error "no stats in: $e" }
    return [list $ms $mb]
}

# Median wall ms of `reps` runs, and the largest peak RSS.
proc measure {reps args} {
    set ts {}; set peak 0
    for {set i 0} {$i < $reps} {incr i} {
        lassign [stats {*}$args] ms mb
        lappend ts $ms
        if {$mb > $peak} { set peak $mb }
    }
    set ts [lsort -real $ts]
    return [list [lindex $ts [expr {[llength $ts] / 2}]] $peak]
}

proc ispow2 {n} { expr {$n > 0 && ($n & ($n - 1)) == 0} }
proc verdict {ok} { return [expr {$ok ? "meets target" : "MISSES target"}] }

if {$only in {"" compiler}} {
    puts "== compiler: collc show stdlib/stragglar.coll --format json (median of 5)"
    if {![file exists stdlib/stragglar.coll]} {
        puts "   stdlib/stragglar.coll missing; skipped"
    } else {
        set ref [file join $root tests bench stragglar_ref.py]
        set py [auto_execok python3]
        foreach {n target_ms} {256 20 1024 500 254 1000} {
            lassign [measure 5 show stdlib/stragglar.coll -n $n --format json] ms mb
            set line [format "   n=%-5d %8.1f ms  (target < %d ms: %s)  peak RSS %.1f MB" $n $ms $target_ms \
                [verdict [expr {$ms < $target_ms}]] $mb]
            if {$n == 1024} { append line [format "  (target < 100 MB: %s)" [verdict [expr {$mb < 100}]]] }
            if {$py ne "" && [file exists $ref] && $n == 256} {   ;# the reference needs ~30 s at 1024
                set t0 [clock microseconds]
                exec {*}$py $ref $n >/dev/null
                set pyms [expr {([clock microseconds] - $t0) / 1000.0}]
                append line [format "  python reference %.1f ms, ratio %.1fx" $pyms [expr {$pyms / $ms}]]
            }
            puts $line
        }
    }
}


if {$only in {"" cost}} {
    puts "== cost model"
    if {[file exists stdlib/stragglar.coll]} {
        set out [exec $collc sim stdlib/stragglar.coll -a stragglar -n 256 -s 1GiB --straggler last --repeat 20 2>@1]
        if {[regexp {simulation run time: ([0-9.]+) ms} $out -> ms]} {
            puts [format "   simulate StragglAR n=256 1 GiB: %.2f ms per run (target < 50 ms: %s)" $ms [verdict [expr {$ms < 50}]]]
        } else {
            puts "   simulate StragglAR n=256 1 GiB: no timing in collc sim's output"

        }
    }
    set files [list stdlib/ring.coll stdlib/rhd.coll stdlib/dbt.coll stdlib/direct.coll stdlib/bcube.coll stdlib/broadcast.coll]
    set t0 [clock microseconds]
    exec $collc compare {*}$files -n 64 -b 1KiB -e 4GiB -f 2 >/dev/null
    set ms [expr {([clock microseconds] - $t0) / 1000.0}]
    puts [format "   compare 6 allreduce algorithms x 23 sizes (1 KiB..4 GiB), n=64: %.0f ms (target < 2000 ms: %s)" \
        $ms [verdict [expr {$ms < 2000}]]]
}

if {$only in {"" runtime}} {
    set rt [file join $root tests bench runtime.sh]
    if {[file exists $rt]} {
        puts "== runtime"
        exec sh $rt $build >@stdout 2>@stderr
    }
    set hm [file join $root tests bench hostmodel.sh]
    if {[file exists $hm]} {
        puts "== cost model on one host (shm): the choice against every candidate measured"
        exec sh $hm $build >@stdout 2>@stderr
    }
}

if {$only in {"" tuning}} {
    set tn [file join $root tests bench tuning.sh]
    if {[file exists $tn]} {
        puts "== choosing by measurement (tests/bench/tuning.sh; target: the choice within 10% of the fastest)"
        exec bash $tn -build $build >@stdout 2>@stderr
    }
}

if {$only in {"" p2p}} {
    puts "== point-to-point messages against Open MPI's MPI_Send/MPI_Recv (tests/bench/p2p.sh; ping-pong, one-way us)"
    exec bash [file join $root tests bench p2p.sh] -build $build >@stdout 2>@stderr
}

if {$only in {"" torch}} {
    set tb [file join $root tests bench torch_bench.py]
    set ext [file join $build python _coll_torch.so]
    if {[catch {exec /usr/bin/python3 -c "import torch.distributed"}] || ![file exists $ext]} {
        puts "== torch backend against gloo: skipped (no torch, or $ext not built)"
    } else {
        puts "== torch backend against gloo, 4 ranks (tests/bench/torch_bench.py; above 1x: coll is faster)"
        set out [file join /tmp coll-bench-torch-[pid]]
        exec [file join $build collc] build [file join $root examples ddp4.coll] -o $out
        set env(PYTHONPATH) [file join $root runtime python]
        exec [file join $build collrun] -np 4 --timeout 900 /usr/bin/python3 $tb [file join $out libddp4.so] \
            >@stdout 2>@stderr
        file delete -force $out
    }
}
