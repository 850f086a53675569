# stragglar_table.tcl - rounds of stdlib/stragglar.coll after its
# precondition, per n, against the one-port lower bound n + ceil(log2 n) - 2
# and, for even n, the rounds of the paper's own generator
# (stragglar_paper.txt beside this file: measured by running the authors'
# code, the fewer rounds of the networkx versions tried).
#
#   tclsh tests/bench/stragglar_table.tcl [-build DIR] [-compact] [-D name=value]... [N...]
#
# Default n: 3 .. 256 and 1024. Prints a Markdown table with one row per n
# (n, rounds, bound, rounds over the bound, the paper generator's rounds),
# or with -compact the two grids of tests/results/stragglar.md (the distance to the bound
# per n; for the even n the paper's generator was measured for, its
# distance beside ours), then a
# summary: the largest distance for n <= 64, n <= 256 and above, the n not
# at the bound, and how the even n compare with the paper's generator.
set root [file normalize [file join [file dirname [info script]] .. ..]]
set build [file join $root build]
set ns {}
set compact 0
set defs {}
for {set i 0} {$i < $argc} {incr i} {
    switch -- [lindex $argv $i] {
        -build { set build [file normalize [lindex $argv [incr i]]] }
        -compact { set compact 1 }
        -D { lappend defs -D [lindex $argv [incr i]] }
        default { lappend ns [lindex $argv $i] }
    }
}
if {![llength $ns]} {
    for {set n 3} {$n <= 256} {incr n} { lappend ns $n }
    lappend ns 1024
}
proc clog2 {n} { set l 0; while {(1 << $l) < $n} { incr l }; return $l }

# the paper generator's rounds per even n (the fewest of the columns)
set f [open [file join $root tests bench stragglar_paper.txt]]
foreach line [split [read $f] \n] {
    set fs [regexp -all -inline {\S+} $line]
    if {![string is integer -strict [lindex $fs 0]]} continue
    set rs [lsearch -all -inline -regexp [lrange $fs 1 end] {^\d+$}]
    if {[llength $rs]} { set paper([lindex $fs 0]) [tcl::mathfunc::min {*}$rs] }
}
close $f

foreach n $ns {
    set json [exec [file join $build collc] show [file join $root stdlib stragglar.coll] -n $n {*}$defs --format json]
    set rounds($n) [regexp -all {\{"phase": "(?!pre)[^"]*"} $json]
    set lb($n) [expr {$n + [clog2 $n] - 2}]
    set over($n) [expr {$rounds($n) - $lb($n)}]
}

if {!$compact} {
    puts "| n | rounds after the precondition | lower bound n+ceil(log2 n)-2 | over the bound | the paper's generator |"
    puts "| --- | --- | --- | --- | --- |"
    foreach n $ns {
        set p [expr {[info exists paper($n)] ? $paper($n) : "-"}]
        puts "| $n | $rounds($n) | $lb($n) | $over($n) | $p |"
    }
} else {
    # distance grid: a row per 16 n, a column per n mod 16
    set hdr "| n |"; set sep "| --- |"
    for {set j 0} {$j < 16} {incr j} { append hdr " +$j |"; append sep " --- |" }
    puts $hdr; puts $sep
    set rows {}
    foreach n $ns { if {$n <= 256} { lappend rows [expr {$n / 16 * 16}] } }
    foreach r [lsort -integer -unique $rows] {
        set line "| $r |"
        for {set j 0} {$j < 16} {incr j} {
            set n [expr {$r + $j}]
            append line [expr {[info exists over($n)] ? " $over($n) |" : " |"}]
        }
        puts $line
    }
    puts ""
    # even n the paper's generator was measured for: "ours / theirs",
    # each as rounds over the bound
    set hdr "| n |"; set sep "| --- |"
    for {set j 0} {$j < 16} {incr j 2} { append hdr " +$j |"; append sep " --- |" }
    puts $hdr; puts $sep
    set rows {}
    foreach n $ns { if {[info exists paper($n)]} { lappend rows [expr {$n / 16 * 16}] } }
    foreach r [lsort -integer -unique $rows] {
        set line "| $r |"
        for {set j 0} {$j < 16} {incr j 2} {
            set n [expr {$r + $j}]
            if {[info exists paper($n)] && [info exists over($n)]} {
                append line " $over($n) / [expr {$paper($n) - $lb($n)}] |"
            } else {
                append line " |"
            }
        }
        puts $line
    }
}
puts ""
foreach {lo hi} {3 64 65 256 257 1000000} {
    set m -1; set cnt 0
    foreach n $ns { if {$n >= $lo && $n <= $hi} { incr cnt; if {$over($n) > $m} { set m $over($n) } } }
    if {$cnt} { puts "n = $lo..[expr {$hi > 256 ? "" : $hi}] ($cnt n): at most $m over the bound" }
}
set off {}
foreach n $ns { if {$over($n)} { lappend off "$n (+$over($n))" } }
puts "not at the bound: [expr {[llength $off] ? [join $off {, }] : "none"}]"
set better 0; set same 0; set worse {}
foreach n $ns {
    if {![info exists paper($n)]} continue
    if {$rounds($n) < $paper($n)} { incr better } elseif {$rounds($n) == $paper($n)} { incr same } else { lappend worse $n }
}
puts "even n with the paper generator's rounds measured: fewer rounds at $better, as many at $same, more at [expr {[llength $worse] ? [join $worse {, }] : "none"}]"
