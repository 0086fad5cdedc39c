#!/bin/bash
# On the GPU host (after host-setup.sh and `source .device/b/env.sh`): the fmha package's checks
# and planted faults, and the knowledge base's runnable snippets (a deadlock must time out).
# Logs and records bundled as $OUT/bundle.tgz.   bash scripts/device/fmha-kb-acceptance.sh
set -uo pipefail
: "${OUT:?set OUT to a folder for logs and records}"
export CUTLASS_DIR="${CUTLASS_DIR:-/root/stage/cutlass/CuTeDSL}"
export KERNELPLAN_RESULTS="$OUT/results"
mkdir -p "$OUT/logs" "$KERNELPLAN_RESULTS"
py=python3
run() {  # run NAME LIMIT CMD...
    local name=$1 limit=$2; shift 2
    echo "== $name: $*"
    timeout "$limit" "$@" > "$OUT/logs/$name.log" 2>&1
    echo "   rc=$?"; tail -n 8 "$OUT/logs/$name.log"
}
fm="$py -m cute_fmha"
run kb-snippets 200 $py -m kernelplan.kb snippets run
run check-fmha 240 $py -m kernelplan check fmha
run hopper-sq-lt-sk-causal 60 $fm hopper_fmha --b 2 --sq 128 --sk 384 --h_q 4 --d_qk 128 --causal true --check --prof_type disabled
run hopper-gqa-causal 60 $fm hopper_fmha --b 2 --sq 512 --h_q 8 --h_kv 2 --d_qk 128 --causal true --check --prof_type disabled
run hopper-fault-perturb 60 $fm hopper_fmha --b 2 --sq 512 --h_q 4 --d_qk 128 --check --inject-fault perturb --prof_type disabled
run ampere-d64 60 $fm ampere_flash_attention_v2 --b 2 --sq 512 --h_q 4 --d_qk 64 --check --prof_type disabled
run ampere-fault-skip 60 $fm ampere_flash_attention_v2 --b 2 --sq 512 --h_q 4 --d_qk 64 --inject-fault skip-launch --prof_type disabled
tar czf "$OUT/bundle.tgz" -C "$OUT" logs results 2>/dev/null; echo "bundle: $(du -h "$OUT/bundle.tgz" | cut -f1)"
