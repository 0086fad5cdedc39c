#!/bin/bash
# The pdl package on the H200 (no package registry there): check, then the PDL A/B.
# Before: scripts/device/host-setup.sh on that host (DSL wheels, CuTeDSL examples), and the
# apache-tvm-ffi cp312 wheel staged in .device/b beside the DSL wheels (see the package's
# devlog, knowledge/kernels/programmatic-dependent-launch.md, and the report that added this).
#   OUT=<folder> bash packages/pdl/h200-pdl.sh [setup] [check] [ab] [plain] [upstream]
# Logs go to $OUT/logs, records to $OUT/results (copy them into results/ afterwards); both
# come back as one bundle, $OUT/pdl-bundle.tgz.
set -uo pipefail
: "${OUT:?set OUT to a folder for logs and records}"
export CUTLASS_DIR="${CUTLASS_DIR:-/root/stage/cutlass/CuTeDSL}"
export KERNELPLAN_RESULTS="$OUT/results"
mkdir -p "$OUT/logs" "$KERNELPLAN_RESULTS"
# env.sh installs the wheels of .device/b into /tmp/site once per host: add the tvm-ffi wheel
# where that happened before it was staged.
source .device/b/env.sh || exit 3
[ -d /tmp/site/tvm_ffi ] || python3 -m pip install -q --no-index --no-deps --no-compile \
    --target /tmp/site .device/b/apache_tvm_ffi-*.whl || exit 3
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(setup check ab plain upstream)
py=python3
kp=(-m cute_pdl programmatic_dependent_launch)
run() {  # run NAME CMD...: log to $OUT/logs/NAME.log, print the exit code and the tail
    local name=$1; shift
    echo "== $name: $*"
    "$@" > "$OUT/logs/$name.log" 2>&1
    echo "   rc=$?"; tail -n 15 "$OUT/logs/$name.log"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem \
    --format=csv > "$OUT/logs/nvidia-smi.csv" 2>&1
for s in "${steps[@]}"; do case $s in
setup)  # what the run depends on (torch >= 2.10 needs no torch-c-dlpack-ext)
    run versions $py -c "import tvm_ffi, torch, cutlass; print('tvm_ffi', tvm_ffi.__version__,
'torch', torch.__version__, 'dlpack_c_api', hasattr(torch.Tensor, '__dlpack_c_exchange_api__'),
'cutlass', cutlass.__version__)" ;;
check)  # both check problems (256x256, 250x300) with PDL on; off; a fault that must fail (rc=1)
    run check-pdl-on $py -m kernelplan check pdl
    run check-pdl-off $py "${kp[@]}" --M 250 --N 300 --check --prof_type disabled \
        --config use_pdl=false
    run fault-skip $py -m kernelplan check pdl --inject-fault skip-launch ;;
ab)  # the A/B, CUDA-graph replay (the default), alternated twice; each record has its check
    for i in 1 2; do for pdl in true false; do
        run ab-256-pdl-$pdl-$i $py "${kp[@]}" --M 256 --N 256 --reps 200 --check \
            --config use_pdl=$pdl
        run ab-8192-pdl-$pdl-$i $py "${kp[@]}" --M 8192 --N 8192 --check --config use_pdl=$pdl
    done; done ;;
plain)  # the same A/B with plain launches (no graph): host cost in every sample
    for pdl in true false; do
        run plain-256-pdl-$pdl $py "${kp[@]}" --M 256 --N 256 --reps 200 \
            --config use_pdl=$pdl cuda_graph=false
    done ;;
upstream)  # the tutorial's own benchmark (CUDA graphs, 10 workspaces: warm L2), for fidelity
    for flag in "" --use_pdl; do
        run upstream${flag:+-pdl} $py "$CUTLASS_DIR/dsl_tutorials/programmatic_dependent_launch.py" \
            --benchmark --iterations 200 $flag
    done ;;
*) echo "unknown step $s" ;;
esac; done
tar czf "$OUT/pdl-bundle.tgz" -C "$OUT" logs results && rm -rf "$OUT/logs" "$OUT/results"
