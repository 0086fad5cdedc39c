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
#   bash scripts/device/fmha-table.sh bwd-check | bwd | bwd-floor    # backward: NOT yet run
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
#      the two fastest in the issue's orientation run, 720 and 679 TFLOP/s) at B=4 S=4096 H=32
#      D=128; name the table's fastest peer in NCU_PEERS if it is another.
#   8. no carry    OUT=$OUT bash scripts/device/fmha-table.sh bwd-check -> $OUT/bwd-check.tgz
#   9. no carry    OUT=$OUT bash scripts/device/fmha-table.sh bwd       -> $OUT/bwd.tgz
#  10. no carry    OUT=$OUT bash scripts/device/fmha-table.sh bwd-floor -> $OUT/bwd-floor.tgz
#      The backward (attention_bwd), NOT yet run on the H200 (written and dry-run on a CPU
#      host: DRYRUN=1 below). bwd-check: every backward implementation's check problems
#      (`python -m kernelplan check fmha <impl>`, one per implementation). bwd: a planted
#      backward fault that must FAIL (rc 1: sdpa_flash_bwd, dq perturbed), then the
#      alternated table of BWD_IMPLS (default sdpa_flash_bwd sdpa_cudnn_bwd
#      sdpa_efficient_bwd flash_attn4_bwd) over the workload's backward profile problems (the
#      forward's: D 64/128, S 1k/4k/16k, causal and not, bf16), each checked at its setting
#      first, with --cuda-graph. The SDPA backward is torch.autograd.grad on a graph kept from
#      one forward at bind (cute_fmha/sdpa_bwd_common.py says why it should capture); whether
#      a CUDA graph captures it is not yet known: an implementation whose capture fails is
#      left out of the graph table with a "CUDA graph capture failed" line, and the step then
#      times those implementations again, alternated, without graphs (table-attention-bwd-
#      eager.log; its records carry host_launch_hidden false). bwd-floor: SDPA's math
#      backward (the floor; it refuses S = 16k) alternated with sdpa_flash_bwd, no graphs,
#      REPS_FLOOR (default 5) rounds.
#      DRYRUN=1 with any backward step (any machine, no GPU, no OUT): prints the commands,
#      resolves the implementations, lists which of them take each problem, parses the
#      fault command's flags and the table's arguments (stopping at "needs a CUDA GPU").
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
BWD_IMPLS=${BWD_IMPLS:-sdpa_flash_bwd sdpa_cudnn_bwd sdpa_efficient_bwd flash_attn4_bwd}
REPS_FLOOR=${REPS_FLOOR:-5}
# the planted backward fault (must fail the check: rc 1)
BWD_FAULT=(sdpa_flash_bwd --b 2 --sq 512 --h_q 4 --d_qk 128 --inject-fault perturb --prof_type disabled)
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

dry_bwd() {  # DRYRUN=1: what a backward step would run, parsed and resolved without a GPU
    echo "DRYRUN $1: would run (timeouts as in the step):"
    case $1 in
    bwd-check) for k in $BWD_IMPLS sdpa_math_bwd; do echo "  $py -m kernelplan check fmha $k"; done ;;
    bwd) echo "  $fm ${BWD_FAULT[*]}   (must FAIL: rc 1)"
         echo "  $py -m kernelplan.alternate attention_bwd $BWD_IMPLS --cuda-graph --reps $REPS"
         echo "  (then, for any capture failure: the same without --cuda-graph)" ;;
    bwd-floor) echo "  $py -m kernelplan.alternate attention_bwd sdpa_flash_bwd sdpa_math_bwd --reps $REPS_FLOOR" ;;
    esac
    # shellcheck disable=SC2086  # BWD_IMPLS is a list of names
    $py - "$1" "${BWD_FAULT[*]}" $BWD_IMPLS <<'PY'
import sys
from kernelplan import alternate
from kernelplan.cli import parse
from kernelplan.registry import load_plan_class
from kernelplan.report import resolve_implementation
from kernelplan.workloads import get

step, fault, impls = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
if step == "bwd-floor":
    impls = ["sdpa_flash_bwd", "sdpa_math_bwd"]
elif step == "bwd-check":
    impls = impls + ["sdpa_math_bwd"]
wl = get("attention_bwd")
plans = [load_plan_class(*resolve_implementation(r, "attention_bwd"))() for r in impls]
print(f"resolved: {', '.join(f'{p.package}/{p.name}' for p in plans)}")
probs = wl.check_problems() if step == "bwd-check" else wl.profile_problems()
for prob in probs:
    takes = [p.name for p in plans if p.takes(prob)]
    print(f"  {prob.label()}: {' '.join(takes) or 'none'}")
if step == "bwd":
    plan = load_plan_class("fmha", fault[0])()
    problem, items, run = parse(plan, fault[1:])
    print(f"fault: {fault[0]} {problem.label()} inject_fault={run.inject_fault}")
if step in ("bwd", "bwd-floor"):
    alternate.devmod.current_device = lambda: None
    args = ["attention_bwd", *impls, "--no-record"] + (["--cuda-graph"] if step == "bwd" else [])
    try:
        rc = alternate.main(args)
    except SystemExit as e:
        rc = e.code
    print(f"table arguments parsed; alternate rc={rc} (2, 'needs a CUDA GPU', expected here)")
PY
}

fm="$py -m cute_fmha"
for s in "${steps[@]}"; do
if [ "${DRYRUN:-0}" = 1 ]; then
    case $s in bwd|bwd-check|bwd-floor) dry_bwd "$s"; continue ;; esac
    echo "DRYRUN covers the backward steps only (bwd-check, bwd, bwd-floor); $s skipped" >&2
    continue
fi
case $s in
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
bwd-check)  # every backward implementation's check problems, one session each
    begin bwd-check
    for k in $BWD_IMPLS sdpa_math_bwd; do
        run "check-$k" 150 $py -m kernelplan check fmha "$k"
    done
    finish bwd-check ;;
bwd)  # a planted backward fault (must fail), then the alternated backward table
    begin bwd
    run bwd-fault-perturb 90 $fm "${BWD_FAULT[@]}"
    if tail -n 1 "$LOG/run.log" | grep -q "rc=1$"; then
        echo "   the planted backward fault FAILED the check, as it must"
    else
        echo "   UNEXPECTED: the planted backward fault did not fail with rc 1"
    fi
    # shellcheck disable=SC2086  # BWD_IMPLS is a list of names
    run table-attention-bwd 400 $py -m kernelplan.alternate attention_bwd $BWD_IMPLS \
        --cuda-graph --reps "$REPS"
    eager=$(grep -o "skip [a-z0-9_/]* .*CUDA graph capture failed" "$LOG/table-attention-bwd.log" \
        | awk '{print $2}' | sort -u | tr '\n' ' ')
    if [ -n "$eager" ]; then  # autograd not capturable: these again, alternated, no graphs
        echo "   capture failed for: $eager; timing them without CUDA graphs"
        # shellcheck disable=SC2086  # a list of names
        run table-attention-bwd-eager 150 $py -m kernelplan.alternate attention_bwd $eager \
            --reps "$REPS"
    fi
    finish bwd ;;
bwd-floor)  # SDPA's math backward (the floor) against sdpa_flash_bwd, alternated, no graphs
    begin bwd-floor
    run floor-attention-bwd 560 $py -m kernelplan.alternate attention_bwd sdpa_flash_bwd \
        sdpa_math_bwd --reps "$REPS_FLOOR"
    finish bwd-floor ;;
*)
    echo "unknown step $s (stage, check, table, floor, ncu, bwd-check, bwd, bwd-floor)" >&2; exit 2 ;;
esac
done
