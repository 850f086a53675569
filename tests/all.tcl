# all.tcl - runs every tests/*.test file and prints "N passed, N failed".
#
#   tclsh tests/all.tcl [-build DIR] [-quick] [-match GLOB] [-v] [FILE.test...]
#
# Exit status is non-zero when any test failed.  Skipped tests (missing GPU,
# network namespaces, slow ones under -quick, ...) print their reason and
# are counted separately.  After each file its wall time is printed; the
# per-file times add up to the total (checked at the end).
#
# Test files are sourced at global level (their variables are globals), so
# this driver keeps its own state in procedure locals and the h namespace,
# where no test file's `set t0 ...` can reach it.
set ::root [file normalize [file join [file dirname [info script]] ..]]
set ::build [file join $::root build]
set ::quick 0
set ::verbose 0
set ::match *

namespace eval ::h {}

# Sets the globals from the command line; returns the .test files to run.
proc h::parse_args {argv} {
    set files {}
    for {set i 0} {$i < [llength $argv]} {incr i} {
        set a [lindex $argv $i]
        switch -- $a {
            -build { set ::build [file normalize [lindex $argv [incr i]]] }
            -quick { set ::quick 1 }
            -match { set ::match [lindex $argv [incr i]] }
            -v     { set ::verbose 1 }
            default { lappend files [file normalize $a] }
        }
    }
    if {![llength $files]} {
        set files [lsort [glob -directory [file join $::root tests] *.test]]
    }
    return $files
}

# Sources each file, printing its wall time; returns the exit status.
proc h::run_files {files} {
    set start [clock milliseconds]
    set sum 0
    foreach f $files {
        set ::h::testfile $f
        set t0 [clock milliseconds]
        if {[catch {uplevel #0 [list source $f]} msg opts]} {
            incr h::failed
            lappend h::failures [file tail $f]
            puts "FAIL [file tail $f]: $msg"
            puts [dict get $opts -errorinfo]
        }
        set ms [expr {[clock milliseconds] - $t0}]
        incr sum $ms
        puts [format "%-28s %6.1fs" [file tail $f] [expr {$ms / 1000.0}]]
    }
    set total [expr {[clock milliseconds] - $start}]
    # The files' times cover the run but for this loop's own few
    # milliseconds; a larger gap means a file's clock was disturbed.
    if {abs($total - $sum) > 1000 + $total / 100} {
        incr h::failed
        lappend h::failures per-file-times
        puts [format "FAIL per-file-times: the files' times add up to %.1fs, the run took %.1fs" \
                  [expr {$sum / 1000.0}] [expr {$total / 1000.0}]]
    }
    file delete -force $::tmpdir
    if {[llength $h::failures]} { puts "failed: [join $h::failures {, }]" }
    puts [format "total %.1fs" [expr {$total / 1000.0}]]
    puts "$h::passed passed, $h::failed failed, $h::skipped skipped"
    return [expr {$h::failed > 0}]
}

set files [h::parse_args $argv]
set ::pid [pid]
set ::tmpdir [file join [expr {[info exists ::env(TMPDIR)] ? $::env(TMPDIR) : "/tmp"}] coll-tests-[pid]]
file mkdir $::tmpdir
source [file join $::root tests harness.tcl]
exit [h::run_files $files]
