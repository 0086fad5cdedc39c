#!/bin/bash
# On the GPU host (after host-setup.sh, `source .device/b/env.sh` and the quack bundle's
# unpack.sh): issue 13's H200 parts. RMSNorm (package norm: the CUTLASS rmsnorm and Hopper
# cta_norm examples, quack, torch rms_norm, the eager formula) and the Hopper fp8 2xAcc GEMM
# against torch._scaled_mm (package gemm): checks, planted faults, one-line bad input, and the
# profile of every new implementation. Logs go to $OUT/logs, records to $OUT/results; both are
# bundled as $OUT/bundle.tgz.
#   bash scripts/device/norm-fp8-acceptance.sh [check] [faults] [badinput] [profile] [tune]
#
# Staging, here (the host has torch 2.11, triton, numpy, einops, ninja, rich, tabulate,
# nvidia-ml-py; quack-kernels 0.6.5 needs besides apache-tvm-ffi<0.2 and torch-c-dlpack-ext,
# none of which it has):
#   bash ../shared/gpu/prepare.sh nvtx nvidia-ml-py rich markdown-it-py mdurl pygments apache-tvm-ffi==0.1.15.post2
#   bash ../shared/gpu/pack.sh quack quack-kernels==0.6.5 torch-c-dlpack-ext==0.1.5
#   bash scripts/device/stage-cutlass.sh
# On the host: bash scripts/device/host-setup.sh; bash .device/quack-1/unpack.sh;
#   source .device/b/env.sh && bash scripts/device/norm-fp8-acceptance.sh
set -uo pipefail
: "${OUT:?set OUT to a folder for logs and records}"
export CUTLASS_DIR="${CUTLASS_DIR:-/root/stage/cutlass/CuTeDSL}"
export KERNELPLAN_RESULTS="$OUT/results"
mkdir -p "$OUT/logs" "$KERNELPLAN_RESULTS"
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(check faults badinput profile)
py=python3
run() {  # run NAME CMD...: log to $OUT/logs/NAME.log, print the exit code and the tail
    local name=$1; shift
    echo "== $name: $*"
    timeout 420 "$@" > "$OUT/logs/$name.log" 2>&1
    echo "   rc=$?"; tail -n 14 "$OUT/logs/$name.log"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/logs/nvidia-smi.csv" 2>&1
$py -c "import quack; print('quack-kernels', quack.__version__)" > "$OUT/logs/quack-version.log" 2>&1
NORM=(rmsnorm hopper_cta_norm quack_rmsnorm torch_rms_norm torch_eager)
FP8=(hopper_dense_gemm_fp8_2xacc torch_scaled_mm)
for s in "${steps[@]}"; do case $s in
check)  # every check problem of each workload; expected rc=0
    run check-norm $py -m kernelplan check norm
    run check-gemm $py -m kernelplan check gemm ;;
faults)  # each must FAIL (rc=1): one element moved by 4x the tolerance, or the launch skipped
    for k in "${NORM[@]}"; do run fault-perturb-$k $py -m kernelplan check norm "$k" --inject-fault perturb; done
    for k in "${FP8[@]}"; do run fault-perturb-$k $py -m kernelplan check gemm "$k" --inject-fault perturb; done
    run fault-skip-rmsnorm $py -m kernelplan check norm rmsnorm --inject-fault skip-launch
    run fault-skip-fp8 $py -m kernelplan check gemm hopper_dense_gemm_fp8_2xacc --inject-fault skip-launch ;;
badinput)  # one error line each, no record written
    before=$(find "$KERNELPLAN_RESULTS" -name '*.json' | sort | md5sum)
    run bad-rmsnorm-odd-n $py -m cute_norm rmsnorm --m 64 --n 4097 --check
    run bad-cta-odd-n $py -m cute_norm hopper_cta_norm --m 64 --n 1001 --check
    run bad-cta-block $py -m cute_norm hopper_cta_norm --m 64 --n 4096 --config threads_per_cta=1000 --check
    run bad-cta-big-n $py -m cute_norm hopper_cta_norm --m 64 --n 65536 --check
    run bad-fp8-dtype $py -m cute_gemm hopper_dense_gemm_fp8_2xacc --dtype float16 --check
    run bad-fp8-promotion $py -m cute_gemm hopper_dense_gemm_fp8_2xacc --dtype float8_e4m3fn --c_dtype float16 --config mma_promotion_interval=6 --check
    run bad-scaled-mm-batched $py -m cute_gemm torch_scaled_mm --dtype float8_e4m3fn --c_dtype bfloat16 --l 2 --check
    after=$(find "$KERNELPLAN_RESULTS" -name '*.json' | sort | md5sum)
    [ "$before" = "$after" ] && echo "records unchanged by bad input" || echo "RECORDS CHANGED" ;;
profile)  # RMSNorm: M x N in {4096, 32768} x {4096, 8192} bf16; fp8: 4096^3 and 8192^3 -> bf16
    run profile-norm $py -m kernelplan profile norm
    for k in "${FP8[@]}"; do run profile-$k $py -m kernelplan profile gemm "$k"; done
    run time-fp8-4096-fp16 $py -m cute_gemm hopper_dense_gemm_fp8_2xacc --m 4096 --n 4096 --k 4096 --dtype float8_e4m3fn --c_dtype float16 --check
    run time-scaled-mm-4096-fp16 $py -m cute_gemm torch_scaled_mm --m 4096 --n 4096 --k 4096 --dtype float8_e4m3fn --c_dtype float16 --check ;;
tune)  # the fp8 CuTe GEMM over upstream's 16 tile x cluster choices
    run tune-fp8 $py -m kernelplan profile gemm hopper_dense_gemm_fp8_2xacc --autotune ;;
*) echo "unknown step $s" ;;
esac; done
tar czf "$OUT/bundle.tgz" -C "$OUT" logs results 2>/dev/null; echo "bundle: $(du -h "$OUT/bundle.tgz" | cut -f1)"
