# harness.tcl - helpers every tests/*.test file uses (SQLite/Redis style).
#
# Helpers, with their signatures:
#   collc ARGS...                         run build/collc; returns {code stdout stderr}
#   run_cmd CMD ARGS...                   run any program the same way
#   do_test NAME SCRIPT EXPECTED          SCRIPT's result must equal EXPECTED
#   do_match_test NAME SCRIPT GLOB        SCRIPT's result must match GLOB (string match)
#   do_check_test NAME FILES ARGS         `collc check FILES ARGS` exits 0
#   do_error_test NAME SOURCE EXPECTED ?ARG...?
#                                         write SOURCE to t.coll, run `collc check t.coll ARGS`
#                                         (default -n 4); the first stderr line must be EXACTLY
#                                         EXPECTED (a full "t.coll:L:C: error: ..." line) and the
#                                         exit status non-zero
#   do_fail_test NAME ARGS GLOB           collc ARGS exits non-zero, stderr matches GLOB
#   needs TAG                             true when the environment has TAG (gpu, netns, mpi,
#                                         nvcc, ...); otherwise records why and returns false.
#                                         Under -quick, `slow`, `netns` (the emulated cluster)
#                                         and `san` (the sanitizer re-runs) are false: slow
#   skip_test NAME REASON                 count a skip with its printed reason
#   tag_slow PATTERNS REASON              the tests whose names match a glob in PATTERNS are
#                                         slow: under -quick each do_* helper (through
#                                         h::selected) skips them, printing "slow: REASON"
#   will_run NAME...                      true when one of the tests NAME runs in this session
#                                         (it matches -match and is not a slow test under
#                                         -quick); guards setup done before the do_* calls
#   tmpfile NAME ?CONTENT?                path of a scratch file (written when CONTENT given)
#   slurp PATH                            the whole of a file, as text
#   wait_for SCRIPT ?TIMEOUT_MS?          poll SCRIPT until true; error after the timeout
#   with_env VARS SCRIPT                  run SCRIPT (in the caller's scope) with the environment
#                                         variables of the dict VARS set, then restore them
#   python_cmd                            the interpreter for Python tests: $PYTHON, else
#                                         /usr/bin/python3 (Debian's numpy and torch are
#                                         installed for it, not for a pyenv python3 on PATH)
#   py_collrun NP SCRIPT ARGS...          run SCRIPT under collrun -np NP with that interpreter,
#                                         the package on PYTHONPATH and the build's libcollrt.so
#                                         and torch backend named; returns {code stdout stderr}
#   py_checks OUT NAME                    per rank, in rank order, "ok" or the "FAIL NAME: ..."
#                                         line the check scripts print (tests/python/*.py), or
#                                         "missing"
#   san_env ?LEAKS?                       in the sanitizer tier, the VAR=VALUE settings (for
#                                         `env`) a program built without the sanitizers needs to
#                                         load the build's libraries; LEAKS 0 also turns leak
#                                         checks off; {} outside that tier
#   san_preload LIB                       LD_PRELOAD's value for preloading LIB (the ASan
#                                         runtime first in the sanitizer tier)
# Globals: ::root (repo root), ::build (build dir), ::quick (1 for quicktest),
#          ::tmpdir (scratch dir, removed at exit), ::san (1 in the sanitizer tier).
# Test names are area-N.M; each asserts one behaviour.  A test that does not
# fit the do_* helpers calls h::selected NAME (false when -match leaves it
# out or -quick skips it as slow) and then h::report NAME OK DETAIL.

namespace eval ::h {
    variable passed 0 failed 0 skipped 0
    variable failures {}
}

# --- the sanitizer tier --------------------------------------------------------
# `make test SAN=1` runs this suite on build-san/, where the project's
# programs and libraries are built with ASan and UBSan.  Two kinds of
# process need help there:
# - a program built without them that loads a library built with them
#   (python with libcollrt.so, an MPI program with libcoll_mpi.so
#   preloaded, a test program linked against a generated library): ASan's
#   runtime must come first in its library list, so it is preloaded
#   (san_env, san_preload);
# - processes under mpirun: OpenMPI's components leak at exit from
#   libraries it has already unloaded, which LeakSanitizer can neither name
#   nor suppress, so leak checks are off under mpirun (run_cmd).
set ::san [expr {[file tail $::build] eq "build-san"}]
# What to preload: ASan's runtime, and the C++ runtime right after it, or
# ASan cannot intercept the exceptions of a C++ library loaded later (the
# torch backend: "CHECK failed" in __cxa_throw's interceptor).
proc h::asan_lib {} {
    if {![info exists ::h::asan_lib]} {
        set cc [expr {[info exists ::env(CC)] && $::env(CC) ne "" ? $::env(CC) : "cc"}]
        set libs {}
        foreach l {libasan.so libstdc++.so.6} {
            if {![catch {exec $cc -print-file-name=$l} p] && [file exists $p]} { lappend libs $p }
        }
        set ::h::asan_lib [join $libs :]
    }
    return $::h::asan_lib
}
# ASAN_OPTIONS with `more` after what the environment already says (the later wins).
proc h::asan_opts {more} {
    if {[info exists ::env(ASAN_OPTIONS)] && $::env(ASAN_OPTIONS) ne ""} { return "$::env(ASAN_OPTIONS):$more" }
    return $more
}
proc san_env {{leaks 1}} {
    if {!$::san} { return {} }
    set e [list LD_PRELOAD=[h::asan_lib]]
    if {!$leaks} { lappend e ASAN_OPTIONS=[h::asan_opts detect_leaks=0] }
    return $e
}
proc san_preload {lib} {
    return [expr {$::san ? "[h::asan_lib]:$lib" : $lib}]
}

proc run_cmd {cmd args} {
    if {$::san} {
        foreach w [list $cmd {*}[lrange $args 0 7]] {
            if {[file tail $w] eq "mpirun"} {
                set args [list ASAN_OPTIONS=[h::asan_opts detect_leaks=0] $cmd {*}$args]
                set cmd env
                break
            }
        }
    }
    set out [file join $::tmpdir .out]
    set err [file join $::tmpdir .err]
    set code 0
    if {[catch {exec $cmd {*}$args >$out 2>$err} msg opts]} {
        set ec [dict get $opts -errorcode]
        if {[lindex $ec 0] eq "CHILDSTATUS"} {
            set code [lindex $ec 2]
        } elseif {[lindex $ec 0] eq "CHILDKILLED"} {
            set code "signal-[lindex $ec 2]"
        } else {
            set code "exec-error: $msg"
        }
    }
    set fo [open $out]; set o [read $fo]; close $fo
    set fe [open $err]; set e [read $fe]; close $fe
    return [list $code $o $e]
}

proc collc {args} {
    return [run_cmd [file join $::build collc] {*}$args]
}

proc h::report {name ok detail} {
    if {$ok} {
        incr h::passed
        if {$::verbose} { puts "ok   $name" }
    } else {
        incr h::failed
        lappend h::failures $name
        puts "FAIL $name"
        foreach line [split [string trimright $detail] \n] { puts "     $line" }
    }
}

proc do_test {name script expected} {
    if {![h::selected $name]} return
    if {[catch {uplevel 1 $script} res opts]} {
        h::report $name 0 "error: $res"
        return
    }
    h::report $name [expr {$res eq $expected}] "expected: $expected\ngot:      $res"
}

proc do_match_test {name script pattern} {
    if {![h::selected $name]} return
    if {[catch {uplevel 1 $script} res opts]} {
        h::report $name 0 "error: $res"
        return
    }
    h::report $name [string match $pattern $res] "expected to match: $pattern\ngot: $res"
}

proc do_check_test {name files args} {
    if {![h::selected $name]} return
    set r [collc check {*}$files {*}$args]
    lassign $r code out err
    h::report $name [expr {$code == 0}] "collc check $files $args -> $code\n$out$err"
}

proc do_error_test {name source expected args} {
    set cargs [expr {[llength $args] ? $args : {-n 4}}]
    if {![h::selected $name]} return
    set dir [file join $::tmpdir err]
    file mkdir $dir
    set f [open [file join $dir t.coll] w]
    puts -nonewline $f $source
    close $f
    set here [pwd]
    cd $dir
    set r [collc check t.coll {*}$cargs]
    cd $here
    lassign $r code out err
    set first [lindex [split $err \n] 0]
    set ok [expr {$code ne "0" && $first eq $expected && ![string match signal-* $code]}]
    h::report $name $ok "expected: $expected\ngot:      $first\nexit:     $code\n$err"
}

proc do_fail_test {name cmdargs pattern} {
    if {![h::selected $name]} return
    lassign [collc {*}$cmdargs] code out err
    set ok [expr {$code ne "0" && ![string match signal-* $code] && [string match $pattern $err]}]
    h::report $name $ok "exit: $code\nexpected stderr to match: $pattern\ngot: $err"
}

proc skip_test {name reason} {
    incr h::skipped
    puts "skip $name: $reason"
}

# Environment probes for tagged tests; each returns "" when available, or why not.
proc h::probe {tag} {
    switch -- $tag {
        gpu     { if {[catch {exec nvidia-smi -L}]} { return "no NVIDIA GPU (nvidia-smi -L failed)" } }
        nvcc    { if {[auto_execok nvcc] eq "" && ![info exists ::env(CUDA_HOME)]} { return "nvcc not found" } }
        mpi     { if {[auto_execok mpirun] eq ""} { return "mpirun not installed" } }
        netns   {
            if {$::quick} { return "slow: the emulated cluster (network namespaces) is skipped by quicktest" }
            if {[catch {exec id -u} uid] || $uid != 0} { return "not root" }
            if {[catch {exec ip netns add coll-probe$::pid} msg]} { return "cannot create network namespaces: $msg" }
            catch {exec ip netns del coll-probe$::pid}
        }
        slow    { if {$::quick} { return "slow test skipped by quicktest" } }
        san     {
            if {$::quick} { return "slow: the sanitizer re-run is skipped by quicktest" }
            if {![file exists [file join $::root build-san collc]]} { return "no sanitizer build" }
        }
        numpy   {
            if {[catch {exec [python_cmd] -c "import numpy"} msg]} { return "[python_cmd] cannot import numpy (apt-get install python3-numpy)" }
        }
        torch   {
            if {[catch {exec [python_cmd] -c "import torch.distributed"} msg]} { return "[python_cmd] cannot import torch (apt-get install python3-torch)" }
            if {![file exists [file join $::build python _coll_torch.so]]} { return "the torch backend is not built ([file join $::build python _coll_torch.so]; make needs libtorch-dev)" }
        }
        default { return "unknown tag $tag" }
    }
    return ""
}

proc needs {tag} {
    if {![info exists ::h::probed($tag)]} { set ::h::probed($tag) [h::probe $tag] }
    if {$::h::probed($tag) ne ""} {
        set ::h::last_skip $::h::probed($tag)
        return 0
    }
    return 1
}

# The whole of file path, as text.
proc slurp {path} {
    set f [open $path]; set c [read $f]; close $f
    return $c
}

proc tmpfile {name args} {
    set p [file join $::tmpdir $name]
    if {[llength $args]} {
        set f [open $p w]; puts -nonewline $f [lindex $args 0]; close $f
    }
    return $p
}

proc wait_for {script {timeout_ms 10000}} {
    set end [expr {[clock milliseconds] + $timeout_ms}]
    while {![uplevel 1 [list expr $script]]} {
        if {[clock milliseconds] > $end} { error "timed out after ${timeout_ms} ms waiting for: $script" }
        after 20
    }
}

proc python_cmd {} {
    if {[info exists ::env(PYTHON)] && $::env(PYTHON) ne ""} { return $::env(PYTHON) }
    return /usr/bin/python3
}

# Runs script (in the caller's scope) with the environment variables of the
# dict vars set, then puts each back as it was.  Variables are restored one
# by one: `array unset ::env` would cut the env array's link to the process
# environment, and no later `set ::env(...)` would reach a child process.
proc with_env {vars script} {
    set saved {}
    dict for {v val} $vars {
        if {[info exists ::env($v)]} { dict set saved $v $::env($v) }
        set ::env($v) $val
    }
    catch {uplevel 1 $script} res opts
    dict for {v val} $vars {
        if {[dict exists $saved $v]} { set ::env($v) [dict get $saved $v] } else { unset -nocomplain ::env($v) }
    }
    return -options $opts $res
}

proc py_collrun {np script args} {
    # CPython does not free everything at exit: no leak checks on it
    with_env [list PYTHONPATH [file join $::root runtime python] \
                  COLL_LIBCOLLRT [file join $::build libcollrt.so] \
                  COLL_TORCH_EXT [file join $::build python _coll_torch.so] \
                  OMP_NUM_THREADS 1] {
        run_cmd env {*}[san_env 0] [file join $::build collrun] -np $np --timeout 120 [python_cmd] $script {*}$args
    }
}

proc py_checks {out name} {
    set res {}
    set ranks {}
    foreach line [split $out \n] {
        if {[regexp {^\[(\d+)\] (ok|FAIL) (\S+?):?( .*)?$} $line -> r st nm rest] && $nm eq $name} {
            set got($r) [expr {$st eq "ok" ? "ok" : "FAIL $nm:$rest"}]
            if {$r ni $ranks} { lappend ranks $r }
        }
    }
    foreach r [lsort -integer [concat $ranks]] { lappend res $got($r) }
    return [expr {[llength $res] ? $res : "missing"}]
}

# Slow tests: a list of {PATTERN REASON}, filled by tag_slow.
namespace eval ::h { variable slow {} }
proc tag_slow {patterns reason} {
    foreach p $patterns { lappend ::h::slow [list $p $reason] }
}
# Why quicktest skips test NAME ("slow: ..."), or "" when it runs it.
proc h::slow_why {name} {
    if {!$::quick} { return "" }
    foreach pr $::h::slow {
        if {[string match [lindex $pr 0] $name]} { return "slow: [lindex $pr 1]" }
    }
    return ""
}
proc will_run {args} {
    foreach name $args {
        if {[string match $::match $name] && [h::slow_why $name] eq ""} { return 1 }
    }
    return 0
}

# Run only tests whose name matches the -match pattern; under -quick, a
# test tagged slow is skipped here, with its reason.
proc h::selected {name} {
    if {![string match $::match $name]} { return 0 }
    set why [h::slow_why $name]
    if {$why ne ""} {
        skip_test $name $why
        return 0
    }
    return 1
}
