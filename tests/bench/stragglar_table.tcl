# stragglar_table.tcl - rounds of stdlib/stragglar.coll after its
# precondition, per n, against the one-port lower bound n + ceil(log2 n) - 2
# and the paper's n + 2 ceil(log2 n) - 2 target for non-powers of two.
#
#   tclsh tests/bench/stragglar_table.tcl [-build DIR] [N...]
#
# Prints a Markdown table (the one in README.md).
set root [file normalize [file join [file dirname [info script]] .. ..]]
set build [file join $root build]
set ns {}
for {set i 0} {$i < $argc} {incr i} {
    if {[lindex $argv $i] eq "-build"} { set build [file normalize [lindex $argv [incr i]]] } else { lappend ns [lindex $argv $i] }
}
if {![llength $ns]} {
    for {set n 3} {$n <= 64} {incr n} { lappend ns $n }
    lappend ns 128 254 256 1024
}
proc clog2 {n} { set l 0; while {(1 << $l) < $n} { incr l }; return $l }
puts "| n | rounds after the precondition | lower bound n+ceil(log2 n)-2 | over the bound | paper's target n+2ceil(log2 n)-2 |"
puts "| --- | --- | --- | --- | --- |"
foreach n $ns {
    set json [exec [file join $build collc] show [file join $root stdlib stragglar.coll] -n $n --format json]
    set main [regexp -all {\{"phase": "(?!pre)[^"]*"} $json]
    set lb [expr {$n + [clog2 $n] - 2}]
    set paper [expr {$n + 2 * [clog2 $n] - 2}]
    puts "| $n | $main | $lb | [expr {$main - $lb}] | $paper |"
}
