# all.tcl - runs every tests/*.test file and prints "N passed, N failed".
#
#   tclsh tests/all.tcl [-build DIR] [-quick] [-match GLOB] [-v] [FILE.test...]
#
# Exit status is non-zero when any test failed.  Skipped tests (missing GPU,
# network namespaces, ...) print their reason and are counted separately.
set ::root [file normalize [file join [file dirname [info script]] ..]]
set ::build [file join $::root build]
set ::quick 0
set ::verbose 0
set ::match *
set files {}
for {set i 0} {$i < $argc} {incr i} {
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
set ::pid [pid]
set ::tmpdir [file join [expr {[info exists ::env(TMPDIR)] ? $::env(TMPDIR) : "/tmp"}] coll-tests-[pid]]
file mkdir $::tmpdir
source [file join $::root tests harness.tcl]

set start [clock milliseconds]
foreach ::h::testfile $files {
    set t0 [clock milliseconds]
    if {[catch {source $::h::testfile} msg opts]} {
        incr h::failed
        lappend h::failures [file tail $::h::testfile]
        puts "FAIL [file tail $::h::testfile]: $msg"
        puts [dict get $opts -errorinfo]
    }
    puts [format "%-28s %6.1fs" [file tail $::h::testfile] [expr {([clock milliseconds] - $t0) / 1000.0}]]
}
file delete -force $::tmpdir
if {[llength $h::failures]} { puts "failed: [join $h::failures {, }]" }
puts [format "total %.1fs" [expr {([clock milliseconds] - $start) / 1000.0}]]
puts "$h::passed passed, $h::failed failed, $h::skipped skipped"
exit [expr {$h::failed > 0}]
