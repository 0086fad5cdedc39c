#!/bin/bash
# The fmha package's table on the H200 (issue 12 item 4): every implementation of the
# attention_fwd workload that runs there, alternated in one run per profile problem
# (`python -m kernelplan.alternate attention_fwd <impls> --cuda-graph`: each checked first,
# CUDA-graph replays so a peer's Python launch cost is hidden), and the request's Nsight
# Compute comparison of CUTLASS Hopper `hopper_fmha` against the fastest peer at B=4 S=4096
# H=32 D=128 bf16 (not causal). Records and logs under $OUT, one tgz per step.
#
#   bash scripts/device/fmha-table.sh stage                  # staging calls (below)
#   bash scripts/device/fmha-table.sh check | table | floor | ncu   # one per call (<= 10 min)
#
# Bundles, made here before the calls (git-ignored, under .device/):
#   .device/a, .device/b   bash ../shared/gpu/prepare.sh nvtx nvidia-ml-py rich markdown-it-py
#                          mdurl pygments apache-tvm-ffi   (the CuTe DSL 4.8.1, jsonargparse ...)
#   .device/cutlass        bash scripts/device/stage-cutlass.sh   (the CuTeDSL example tree)
#   .device/fa4-1          bash ../shared/gpu/pack.sh fa4 flash-attn-4==4.0.0b36 \
#                              quack-kernels==0.6.5 torch-c-dlpack-ext==0.1.5 \
#                              apache-tvm-ffi==0.1.15.post2
#       (versions checked on 2026-12-01 with `pip download --no-deps`: 4.0.0b36 is the newest
#       flash-attn-4 on the registry, a pre-release (the list ends 0.0.1, 4.0.0b3 ... 4.0.0b36);
#       its METADATA asks nvidia-cutlass-dsl>=4.6.2, apache-tvm-ffi<0.2,>=0.1.11,
#       torch-c-dlpack-ext, quack-kernels>=0.5.3, einops, torch; quack-kernels 0.6.5 asks
#       nvidia-cutlass-dsl>=4.7, apache-tvm-ffi<0.2,>=0.1.6, torch-c-dlpack-ext, einops. All
#       four have cp312 manylinux or pure wheels, about 5.5 MB together: one bundle. einops is
#       in the host image (KINDS.md package list), the DSL comes with .device/b.)
#
# Calls, back to back (a machine is kept ~30 s after a call; `carry` of the device tool):
#   1. carry [".device/a", ".device/cutlass"]    bash scripts/device/fmha-table.sh stage
#   2. carry [".device/b"]                       bash scripts/device/fmha-table.sh stage
#   3. carry [".device/fa4-1"]                   bash scripts/device/fmha-table.sh stage
#      (the call that completes the fa4 set installs it into /tmp/site and imports
#      flash_attn.cute once: the log says whether FA4 is usable before any timing)
#   4. no carry    OUT=$OUT bash scripts/device/fmha-table.sh check   -> $OUT/check.tgz
#      every fmha implementation's check problems (flash_attn4 now installed) and the planted
#      faults (forward perturb, skip-launch on flash_attn4)
#   5. no carry    OUT=$OUT bash scripts/device/fmha-table.sh table   -> $OUT/table.tgz
#      the alternated table over the profile problems (D 64 and 128; S 1k, 4k, 16k with
#      b*S = 16k; causal and not; bf16: kernelplan.workloads.attention profile_problems)
#   6. no carry    OUT=$OUT bash scripts/device/fmha-table.sh floor   -> $OUT/floor.tgz
#      SDPA's math backend (the floor: it materialises S, so it is slow at S = 16k) alternated
#      with hopper_fmha only, apart from the table so the table fits one call
#   7. no carry    OUT=$OUT bash scripts/device/fmha-table.sh ncu     -> $OUT/ncu.tgz
#      Nsight Compute of hopper_fmha and of NCU_PEERS (default: flash_attn4 and sdpa_cudnn,
#      the two fastest in the orientation run, 720 and 679 TFLOP/s) at B=4 S=4096 H=32
#      D=128; name the table's fastest peer in NCU_PEERS if it is another.
# Each tgz holds logs/ (one log per command, rc in run.log) and results/ (the records); here,
# unpack it, `cp -rn results/. results/` (never overwrite a record) and keep the logs under
# results/logs/<date>-h200-fmha-table/. Override the implementations with IMPLS="..." and the
# timed rounds with REPS=N. Clocks are never changed: the records carry the clocks as found.
set -uo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
steps=("$@"); [ ${#steps[@]} -eq 0 ] && { sed -n '2,/^set -uo/p' "$0" | grep '^#'; exit 2; }
py=${PY:-python3}
IMPLS=${IMPLS:-hopper_fmha ampere_flash_attention_v2 sdpa_flash sdpa_cudnn sdpa_efficient flash_attn4}
REPS=${REPS:-30}
NCU_PEERS=${NCU_PEERS:-flash_attn4 sdpa_cudnn}
# the Nsight Compute setting (issue 12 item 4)
NCU_PROBLEM=(--b 4 --sq 4096 --h_q 32 --d_qk 128 --dtype bfloat16 --causal false)

# shellcheck source=scripts/device/lib.sh
source scripts/device/lib.sh  # stage_base, env_base, run, begin, finish
VERSION_DISTS=(nvidia-cutlass-dsl flash-attn-4 quack-kernels apache-tvm-ffi torch-c-dlpack-ext)
VERSIONS_CUDNN=1

stage() {  # install whatever bundle this call carried (each step is idempotent)
    set -e
    stage_base
    for d in .device/fa4-*; do [ -f "$d/unpack.sh" ] && bash "$d/unpack.sh"; done
    set +e
    if [ -d /tmp/site/flash_attn ] && [ -d /tmp/site/nvidia_cutlass_dsl ]; then
        ( env_setup; timeout 120 $py -c "
import importlib.metadata as md
from flash_attn.cute import flash_attn_func
print('flash_attn.cute imports:', flash_attn_func.__module__, md.version('flash-attn-4'))" ) \
            || echo "flash_attn.cute does not import (above): flash_attn4 will say so per check"
    fi
}

env_setup() {  # what .device/b/env.sh exports, without the bundle
    env_base
    export TVM_FFI_CACHE_DIR=/tmp/tvmffi
}

fm="$py -m cute_fmha"
for s in "${steps[@]}"; do case $s in
stage)
    stage ;;
check)
    begin check
    run check-fmha 420 $py -m kernelplan check fmha
    run hopper-fault-perturb 60 $fm hopper_fmha --b 2 --sq 512 --h_q 4 --d_qk 128 --check \
        --inject-fault perturb --prof_type disabled
    run fa4-fault-skip 120 $fm flash_attn4 --b 2 --sq 512 --h_q 4 --d_qk 128 \
        --inject-fault skip-launch --prof_type disabled
    finish check ;;
table)  # every implementation alternated in one run per problem, CUDA-graph replays
    begin table
    # shellcheck disable=SC2086  # IMPLS is a list of names
    run table-attention-fwd 580 $py -m kernelplan.alternate attention_fwd $IMPLS \
        --cuda-graph --reps "$REPS"
    finish table ;;
floor)  # SDPA's math backend against hopper_fmha, alternated (apart: it is slow at S = 16k)
    begin floor
    run floor-attention-fwd 580 $py -m kernelplan.alternate attention_fwd hopper_fmha sdpa_math \
        --cuda-graph --reps 10
    finish floor ;;
ncu)  # the request's Nsight Compute table at B=4 S=4096 H=32 D=128: ours and the fastest peer
    begin ncu
    for k in hopper_fmha $NCU_PEERS; do
        run "ncu-$k" 170 $fm "$k" "${NCU_PROBLEM[@]}" --prof_type ncu --ncu-pair
    done
    finish ncu ;;
*)
    echo "unknown step $s (stage, check, table, floor, ncu)" >&2; exit 2 ;;
esac; done
