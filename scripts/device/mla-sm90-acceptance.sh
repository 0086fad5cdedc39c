#!/bin/bash
# On the GPU host (after host-setup.sh and `source .device/b/env.sh`): the reshaped core on the
# H200 (check gemm, the persistent compiled-kernel cache) and mla_decode_sm90's checks.
# Logs go to $OUT/logs, records to $OUT/results; everything is bundled as $OUT/bundle.tgz.
#   bash scripts/device/mla-sm90-acceptance.sh [core] [mla] [time]
set -uo pipefail
: "${OUT:?set OUT to a folder for logs and records}"
export CUTLASS_DIR="${CUTLASS_DIR:-/root/stage/cutlass/CuTeDSL}"
export KERNELPLAN_RESULTS="$OUT/results"
mkdir -p "$OUT/logs" "$KERNELPLAN_RESULTS"
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(core mla time)
py=python3
run() {  # run NAME CMD...: log to $OUT/logs/NAME.log, print the exit code and the tail
    local name=$1; shift
    echo "== $name: $*"
    timeout 300 "$@" > "$OUT/logs/$name.log" 2>&1
    echo "   rc=$?"; tail -n 12 "$OUT/logs/$name.log"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$OUT/logs/nvidia-smi.csv" 2>&1
mla="$py -m cute_mla mla_decode_sm90"
for s in "${steps[@]}"; do case $s in
core)
    run check-gemm $py -m kernelplan check gemm
    run jit-first-launch $py scripts/experiments/jit_cache_first_launch.py
    run compare-cross $py -m kernelplan.report compare gemm hopper_dense_gemm gemm-tutorial/fp16_gemm_0 ;;
mla)
    run mla-check-pkg $py -m kernelplan check mla mla_decode_sm90
    run mla-ref-check $py -m kernelplan check mla torch_reference
    run mla-h16-s3 $mla --b 4 --t 1000 --h 16 --s 3 --check --prof_type disabled
    run mla-h64-varlen $mla --b 8 --t 777 --h 64 --varlen true --check --prof_type disabled
    run mla-t1-empty $mla --b 2 --seqlens "[1,0]" --check --prof_type disabled
    run mla-32-4096 $mla --b 32 --t 4096 --check --prof_type disabled
    run mla-fault-wrong-page $mla --b 4 --t 1024 --inject-fault wrong-page --prof_type disabled
    run mla-fault-perturb $mla --b 4 --t 1024 --inject-fault perturb --prof_type disabled ;;
time)
    for bt in "32 4096" "128 4096" "32 16384"; do set -- $bt
        run mla-time-b$1-t$2 $mla --b $1 --t $2 --check --reps 30
        run ref-time-b$1-t$2 $py -m cute_mla torch_reference --b $1 --t $2 --reps 10 --warmup 2
    done
    run mla-time-h64 $mla --b 128 --t 4096 --h 64 --check --reps 30 ;;
esac; done
tar czf "$OUT/bundle.tgz" -C "$OUT" logs results 2>/dev/null; echo "bundle: $(du -h "$OUT/bundle.tgz" | cut -f1)"
