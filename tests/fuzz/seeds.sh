#!/bin/bash
# seeds.sh - remake the seed corpora of the runtime's harnesses
# (tests/fuzz/corpus/plan and corpus/frames) from the real programs, after
# a change of collc's JSON or of the wire format:
#
#   make build/collc build/tests/fuzz_frames && bash tests/fuzz/seeds.sh
#
# plan:   `collc show --format json` of small schedules of every collective
#         (one with a straggler role), `collc tune --json` tables (the
#         PMPI library's own invocation among them), and the PMPI layout:
#         a tune table and the schedules it names, NUL-separated
#         (plan_harness.c says why).
# frames: what a real rank 0 writes to rank 1 during 3 calls, captured by
#         fuzz_frames --capture for every call of frame_harness.c's table,
#         with and without COLL_AUTH=mac, a few dtypes and ops, as DATA and
#         as RAW records; an ABORT; and handshake messages built here with
#         auth.c's layout (a PROOF for a stranger, HELLO and VERDICT for an
#         impostor).  Every file starts with its mode byte.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
collc=$root/build/collc
frames=$root/build/tests/fuzz_frames
lib=$root/stdlib

# --- plan --------------------------------------------------------------------
out=$here/corpus/plan
rm -rf "$out"
mkdir -p "$out"
show() { "$collc" show "$lib/$1" -a "$2" -n "$3" --format json; }
while read -r file algo n; do
    show "$file" "$algo" "$n" >"$out/$algo-n$n.json"
done <<'EOF'
ring.coll ring 2
ring.coll ring 3
rhd.coll rhd 4
stragglar.coll stragglar 4
ring.coll ring_rs 3
ring.coll ring_ag 4
bruck.coll bruck_ag 3
binomial.coll binomial_bcast 4
binomial.coll binomial_reduce 3
alltoall.coll alltoall_bruck 3
alltoall.coll alltoall_pairwise 2
dbt.coll dbt 4
direct.coll direct 3
EOF
# the PMPI library's call (runtime/pmpi/pmpi.c, stdlib_texts), at n = 3
pmpi_tune() { "$collc" tune "$lib"/*.coll -n "$1" -b 1 -e 4G --alpha 5us --bw 5GB/s --ranges-only --json; }
pmpi_tune 3 >"$out/tune-pmpi-n3.json"
# two models whose allreduce switches algorithm with the size
"$collc" tune "$lib/ring.coll" "$lib/rhd.coll" -n 6 -b 1 -e 256M -f 16 --model all --ranges-only --json \
    >"$out/tune-models-n6.json"
# critical delays (StragglAR) after the ranges
"$collc" tune "$lib/ring.coll" "$lib/stragglar.coll" -n 4 -s 1MiB --json >"$out/tune-delays-n4.json"
# the PMPI layout: the tune table, then every schedule it names
{
    pmpi_tune 3
    printf '\0'
    sed -n 's/.*"algorithm": "\([a-z_0-9]*\)".*/\1/p' "$out/tune-pmpi-n3.json" | sort -u | while read -r a; do
        "$collc" show "$lib"/*.coll -a "$a" -n 3 --format json
        printf '\0'
    done
} >"$out/pmpi-n3.texts"

# --- frames ------------------------------------------------------------------
out=$here/corpus/frames
rm -rf "$out"
mkdir -p "$out"
# mode byte: 2 | call << 2 (| 1: COLL_AUTH=mac) (| dtype << 5) (| 128: max)
for call in 0 1 2 3 4 5 6 7; do
    for mac in 0 1; do
        m=$((2 | mac | call << 2))
        "$frames" --capture $m "$out/call$call-mac$mac" >/dev/null
    done
done
"$frames" --capture $((2 | 0 << 2 | 1 << 5 | 128)) "$out/call0-fp16-max" >/dev/null
"$frames" --capture $((2 | 2 << 2 | 2 << 5)) "$out/call2-int64" >/dev/null
"$frames" --capture $((3 | 6 << 2 | 3 << 5)) "$out/call6-uint8-mac1" >/dev/null
"$frames" --capture $((2 | 4 << 2)) "$out/call4-raw" raw >/dev/null
"$frames" --capture $((3 | 0 << 2)) "$out/call0-mac1-raw" raw >/dev/null

# bytes from "\xNN" escapes, for the records built by hand
b() { printf '%b' "$1"; }
u32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
nonce='\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10'
auth=$(u32 $((0x436f6c41)))   # auth.c AUTH_MAGIC "CoLA"
# an ABORT from rank 0 (tag 2, code 4 = TIMEOUT, its words), plain and sealed
b '\x02\x02\x04\x1arank 0: timed out (2.0 s)\n' >"$out/abort-mac0"
b '\x03\x02\x04\x1arank 0: timed out (2.0 s)\n' >"$out/abort-mac1"
# a stranger's PROOF (magic, rank 1, purpose, info 2, nonce, a MAC it cannot know)
proof() { b "$auth$(u32 1)$(u32 "$1")$(u32 2)$nonce$nonce"; }
{ b '\x00'; proof 1; } >"$out/stranger-rendezvous-proof"
{ b '\x04'; proof 2; } >"$out/stranger-transport-proof"
b '\x00GET / HTTP/1.0\r\n\r\n' >"$out/stranger-rendezvous-http"
# an impostor's HELLO (magic, version 2, nonce) and VERDICT (magic, status, MAC)
hello="$auth$(u32 2)$nonce"
b "\\x01$hello$auth$(u32 0)$nonce" >"$out/impostor-verdict-ok"
b "\\x01$hello$auth$(u32 1)$nonce" >"$out/impostor-verdict-refused"
b "\\x01$auth$(u32 1)$nonce" >"$out/impostor-old-version"
ls "$here/corpus/plan" "$here/corpus/frames" | grep -vc ':$' | sed 's/$/ seeds/'
