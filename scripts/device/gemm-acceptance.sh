#!/bin/bash
# The gemm package's acceptance run on a GPU host (after host-setup.sh and `source .device/b/env.sh`).
# Logs go to $OUT/logs, result records to $OUT/results (copy them into results/ afterwards).
#   bash scripts/device/gemm-acceptance.sh [check] [faults] [badinput] [profile] [graph] [power] [jit]
set -uo pipefail
: "${OUT:?set OUT to a folder for logs and records}"
export CUTLASS_DIR="${CUTLASS_DIR:-/root/stage/cutlass/CuTeDSL}"
export KERNELPLAN_RESULTS="$OUT/results"
mkdir -p "$OUT/logs" "$KERNELPLAN_RESULTS"
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(check faults badinput profile)
py=python3
run() {  # run NAME CMD...: log to $OUT/logs/NAME.log, print the exit code
    local name=$1; shift
    echo "== $name: $*"
    "$@" > "$OUT/logs/$name.log" 2>&1
    local rc=$?
    echo "   rc=$rc"; tail -n 25 "$OUT/logs/$name.log"
    return 0
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/logs/nvidia-smi.csv" 2>&1
for s in "${steps[@]}"; do case $s in
check)
    run check-gemm $py -m kernelplan check gemm
    run check-bf16 $py -m cute_gemm hopper_dense_gemm --dtype bfloat16 --m 1000 --n 1112 --k 1024 --check --prof_type disabled
    run check-bf16-persistent $py -m cute_gemm hopper_dense_gemm_persistent --dtype bfloat16 --m 1024 --n 512 --k 768 --l 3 --check --prof_type disabled ;;
faults)
    run fault-perturb $py -m kernelplan check gemm hopper_dense_gemm --inject-fault perturb
    run fault-skip $py -m kernelplan check gemm hopper_dense_gemm_persistent --inject-fault skip-launch ;;
badinput)
    before=$(find "$KERNELPLAN_RESULTS" -name '*.json' | sort | md5sum)
    run bad-m0 $py -m cute_gemm hopper_dense_gemm --m 0 --check
    run bad-dtype $py -m cute_gemm hopper_dense_gemm --dtype float32 --check
    run bad-align $py -m cute_gemm hopper_dense_gemm --k 100 --check
    run bad-tile $py -m cute_gemm hopper_dense_gemm --config tile_mn=96x256 --check
    run bad-sources env CUTLASS_DIR=/nonexistent $py -m cute_gemm hopper_dense_gemm --check
    run bad-arch $py -m cute_gemm dense_gemm --check
    after=$(find "$KERNELPLAN_RESULTS" -name '*.json' | sort | md5sum)
    [ "$before" = "$after" ] && echo "records unchanged by bad input" || echo "RECORDS CHANGED" ;;
profile)
    run profile-gemm $py -m kernelplan profile gemm --autotune ;;
graph)  # CUDA-graph replay through the per-kernel module entry (python -m cute_gemm.<kernel>)
    run graph-hopper $py -m cute_gemm.hopper_dense_gemm --m 4096 --n 4096 --k 4096 --cuda-graph --config tile_mn=128x256 cluster_mn=2x1
    run graph-torch $py -m cute_gemm.torch_matmul --m 4096 --n 4096 --k 4096 --cuda-graph ;;
power)  # the same kernel and work, random-normal vs small-integer inputs, alternated
    for i in 1 2; do for init in randn randint; do
        run power-$init-$i $py -m cute_gemm hopper_dense_gemm --m 8192 --n 8192 --k 8192 --init $init --config tile_mn=128x256 cluster_mn=1x1
    done; done ;;
jit)
    run jit-overhead $py scripts/experiments/jit_call_overhead.py ;;
*) python3 -c "$s" ;;
esac; done
# The device tool brings back at most 8 files: bundle logs and records into one.
tar czf "$OUT/gemm-bundle.tgz" -C "$OUT" logs results && rm -rf "$OUT/logs" "$OUT/results"
