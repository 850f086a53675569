#!/bin/sh
# run.sh - the GPU tests and benchmark, for a machine with an NVIDIA GPU.
#
#   tests/gpu/run.sh [BUILD_DIR]      (default build; run `make` first)
#   GPU_STEPS="bench torch" tests/gpu/run.sh     (only those steps)
#
# Builds, with collc, a transport cuda cluster holding every stdlib
# allreduce algorithm that verifies for n = 2, 3 and 4, and runs
# tests/gpu/gpu_allreduce.cu under collrun with n ranks on one GPU (CUDA
# IPC): fp32/fp16/bf16 sum and int32 max, counts 0, 1, 1000003 and 64 Mi,
# against a host reference; a count mismatch (must be an error on every
# rank, not a hang); and the benchmark, `collbench --device` (fp32 sum,
# 1 KiB .. 256 MiB, every result checked).  Then, with as many ranks as
# there are GPUs (at least 2), the same through a transport nccl cluster,
# where collbench also times ncclAllReduce in the same run as the baseline
# (the "x nccl" column: its time / ours).  Last, when $PYTHON (default
# python3) has a torch built with CUDA, the torch backend is compiled
# against that torch and tests/gpu/torch_cuda_check.py reduces CUDA
# tensors through it on 2 ranks.  COLL_CUDA_ARCH defaults to native here;
# BENCH_FLAGS replaces the benchmark's sizes and checks.
#
# Several ranks on one GPU are several processes, which the GPU time-slices
# unless the MPS daemon runs: that puts a floor of ~0.5 ms (2 ranks) under
# every call.  Start `nvidia-cuda-mps-control -d` first for the numbers a
# GPU per rank would give (runtime/README.md, "GPUs"; tests/results/gpu.md).
# GPU_STEPS picks steps from "ipc mismatch bench nccl torch" (default all;
# each builds the libraries it needs), for a short lease on a GPU machine.
# GPU_KEEP=DIR builds in DIR and leaves it (DIR/ipcN/libipcN.so, ...), so
# that collbench --device can be run on those libraries by hand.
# Prints a summary; exits 1 if anything failed, 0 otherwise (77 when there
# is no GPU).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$root/${1:-build}" && pwd)
collc=$build/collc collrun=$build/collrun collbench=$build/collbench
bench_flags=${BENCH_FLAGS:--b 1K -e 256M -f 4 -c}
steps=" ${GPU_STEPS:-ipc mismatch bench nccl torch} "
if [ -n "${GPU_KEEP:-}" ]; then   # the libraries stay there, for collbench by hand
	work=$GPU_KEEP
	mkdir -p "$work"
else
	work=${TMPDIR:-/tmp}/coll-gpu.$$
	mkdir -p "$work"
	trap 'rm -rf "$work"' EXIT
fi
export COLL_CUDA_ARCH=${COLL_CUDA_ARCH:-native}
export COLL_TIMEOUT=${COLL_TIMEOUT:-120}

if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "skip: no NVIDIA GPU (nvidia-smi -L failed)"
	exit 77
fi
if [ -n "${CUDA_HOME:-}" ]; then nvcc=$CUDA_HOME/bin/nvcc; else nvcc=$(command -v nvcc); fi
[ -x "$nvcc" ] || { echo "error: nvcc not found (PATH or CUDA_HOME)"; exit 1; }
ngpu=$(nvidia-smi -L | grep -c '^GPU')
passed=0 failed=0 summary=""

note() { summary="$summary$1
"; }
result() {   # NAME STATUS
	if [ "$2" = 0 ]; then passed=$((passed + 1)); note "ok   $1"; else failed=$((failed + 1)); note "FAIL $1"; fi
}

# cluster FILE NAME N TRANSPORT: every stdlib allreduce algorithm verified for N
cluster() {
	algos=$("$collc" check "$root"/stdlib/*.coll -n "$3" 2>/dev/null | sed -n 's/^\([a-z_0-9]*\): n=[0-9]* verified.*/\1/p' |
		while read -r a; do grep -q "^algorithm $a : allreduce" "$root"/stdlib/*.coll && echo "$a"; done | paste -sd, -)
	{
		for f in "$root"/stdlib/*.coll; do echo "import \"$f\";"; done
		echo "cluster $2 { ranks $3; transport $4; allreduce { $algos } choose by cost; }"
	} >"$1"
}

# build_and_link NAME N TRANSPORT -> $work/NAME/libNAME.so and $work/NAME/gpu_allreduce
build_and_link() {
	cluster "$work/$1.coll" "$1" "$2" "$3"
	"$collc" build "$work/$1.coll" -o "$work/$1" >"$work/$1.log" 2>&1 || { cat "$work/$1.log"; return 1; }
	"$nvcc" -std=c++17 -O2 -arch="$COLL_CUDA_ARCH" -I"$work/$1" -DGPU_PLANS="$1_gpu_plans" \
		"$root/tests/gpu/gpu_allreduce.cu" -L"$work/$1" -l"$1" -Xlinker -rpath,"$work/$1" \
		-o "$work/$1/gpu_allreduce" 2>&1
}

# have NAME N STEP: the transport cuda library and test program NAME for N
# ranks, built by an earlier step or now; a failed build fails STEP
have() {
	[ -x "$work/$1/gpu_allreduce" ] || build_and_link "$1" "$2" cuda >/dev/null 2>&1 ||
		{ result "$3: build $1" 1; return 1; }
}

# want STEP: whether GPU_STEPS names it
want() {
	case $steps in *" $1 "*) return 0 ;; esac
	return 1
}

# bench NAME N: collbench --device on $work/NAME/libNAME.so with N ranks
bench() {
	echo "--- collbench --device, $1, $2 ranks"
	# shellcheck disable=SC2086 # bench_flags is a list of flags
	"$collrun" -np "$2" "$collbench" --lib "$work/$1/lib$1.so" --device $bench_flags
}

for n in 2 3 4; do
	want ipc || break
	name=ipc$n
	if build_and_link $name $n cuda; then
		"$collrun" -np $n "$work/$name/gpu_allreduce" >"$work/$name.out" 2>&1
		st=$?
		grep -E '^\[[0-9]+\] (FAIL|rank)' "$work/$name.out" | head -20
		result "cuda IPC, $n ranks on one GPU: every allreduce algorithm ($(grep -c '^\[0\] ok' "$work/$name.out") cases on rank 0)" $st
	else
		result "cuda IPC, $n ranks: build" 1
	fi
done
if want mismatch && have ipc3 3 mismatch; then
	timeout 60 "$collrun" -np 3 "$work/ipc3/gpu_allreduce" --mismatch >"$work/mm.out" 2>&1
	st=$?; cat "$work/mm.out"
	result "cuda IPC: a count mismatch is an error on every rank" $st
fi
if want bench && have ipc2 2 bench; then
	bench ipc2 2
	result "collbench --device, cuda IPC, 2 ranks on one GPU (checked)" $?
fi

if want nccl && [ "$ngpu" -ge 2 ]; then
	if build_and_link nccl$ngpu $ngpu nccl; then
		"$collrun" -np "$ngpu" "$work/nccl$ngpu/gpu_allreduce" >"$work/nccl.out" 2>&1
		st=$?
		grep -E '^\[[0-9]+\] (FAIL|rank)' "$work/nccl.out" | head -20
		result "nccl, $ngpu ranks on $ngpu GPUs: every allreduce algorithm" $st
		bench nccl$ngpu "$ngpu"
		result "collbench --device, nccl, $ngpu ranks, ncclAllReduce in the same run (checked)" $?
	else
		result "nccl, $ngpu ranks: build" 1
	fi
elif want nccl; then
	note "skip nccl: $ngpu GPU(s); transport nccl needs a GPU per rank (at least 2)"
fi

# torch_check: the torch backend (runtime/python/torch) built against this
# machine's torch, which Debian's libtorch-dev 1.13 in the Makefile is not,
# then CUDA tensors through it on 2 ranks of the ipc2 library
torch_check() {
	py=${PYTHON:-python3}
	if ! "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
		note "skip torch: $py has no torch with CUDA"
		return
	fi
	inc=$("$py" -c 'import sysconfig, torch.utils.cpp_extension as c
print(" ".join("-isystem " + p for p in c.include_paths() + [sysconfig.get_paths()["include"]]))')
	lib=$("$py" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
	abi=$("$py" -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))')
	ver=$("$py" -c 'import torch; print(torch.__version__)')
	# shellcheck disable=SC2086 # inc is a list of flags
	if ! g++ -std=c++17 -O2 -fPIC -shared -Wall -Wextra -D_GLIBCXX_USE_CXX11_ABI="$abi" $inc -I"$root/runtime/include" \
		"$root/runtime/python/torch/ProcessGroupColl.cpp" -L"$lib" -Wl,-rpath,"$lib" -ltorch -ltorch_cpu -lc10 \
		-ltorch_python -ldl -pthread -o "$work/_coll_torch.so" >"$work/torch.log" 2>&1; then
		grep error "$work/torch.log" | head -20
		result "torch backend: build against torch $ver" 1
		return
	fi
	echo "--- torch backend, CUDA tensors, 2 ranks"
	COLL_TORCH_EXT="$work/_coll_torch.so" PYTHONPATH="$root/runtime/python${PYTHONPATH:+:$PYTHONPATH}" \
		timeout 120 "$collrun" -np 2 "$py" "$root/tests/gpu/torch_cuda_check.py" "$work/ipc2/libipc2.so"
	result "torch backend, torch $ver: allreduce of CUDA tensors" $?
}
if want torch; then
	if have ipc2 2 torch; then torch_check; fi
fi

echo "--- summary"
printf '%s' "$summary"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
