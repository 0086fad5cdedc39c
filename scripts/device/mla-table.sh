#!/bin/bash
# The mla package's table on the H200: `python -m kernelplan check mla` and
# `python -m kernelplan profile mla` over every implementation of the mla_decode workload
# (torch_reference, mla_decode_sm90, the two CUTLASS Blackwell decodes (static there),
# flashinfer_mla, tilegym_mla), records and logs under $OUT.
#
#   bash scripts/device/mla-table.sh stage                       # staging calls (below)
#   bash scripts/device/mla-table.sh check | profile | extras    # one per call (<= 10 min each)
#   bash scripts/device/mla-table.sh check-each | profile-each  # one kernel at a time, if the
#                                                                # whole package overruns a call
#
# Bundles, made here before the calls (git-ignored, under .device/):
#   .device/a, .device/b      bash ../shared/gpu/prepare.sh nvtx nvidia-ml-py rich markdown-it-py
#                             mdurl pygments apache-tvm-ffi   (the CuTe DSL 4.8.1 + jsonargparse ...)
#   .device/cutlass           bash scripts/device/stage-cutlass.sh   (the CuTeDSL example tree)
#   .device/fi-1, .device/fi-2   bash ../shared/gpu/pack.sh fi flashinfer-python==0.7.2.post1
#                             apache-tvm-ffi==0.1.15.post2   (43.2 MiB + 19.2 MiB)
#   .device/c1, .device/c2    bash ../shared/gpu/prepare-cutile.sh tilegym==1.5.1   (33 + 41 MB)
# (results/logs/2026-12-01-h200-mla-peers/NOTE.md: the same staging, done once before.)
#
# Calls, back to back (a machine is kept ~30 s after a call; `carry` of the device tool):
#   1. carry [".device/a", ".device/cutlass"]    bash scripts/device/mla-table.sh stage
#   2. carry [".device/b"]                       bash scripts/device/mla-table.sh stage
#   3. carry [".device/fi-1"]                    bash scripts/device/mla-table.sh stage
#   4. carry [".device/fi-2", ".device/c1"]      bash scripts/device/mla-table.sh stage
#   5. carry [".device/c2"]                      bash scripts/device/mla-table.sh stage
#      (the stage call that completes the FlashInfer set, call 4, also JIT-builds FlashInfer's
#      fa3 and fa2 MLA modules, ~17-19 s each, with the host's nvcc and no cuTile on PATH, into
#      /tmp/fiws; later processes load them in ~0.02 s. Call 5 finds them built.)
#   6. no carry    OUT=$OUT bash scripts/device/mla-table.sh check     -> $OUT/check.tgz
#   7. no carry    OUT=$OUT bash scripts/device/mla-table.sh profile   -> $OUT/profile.tgz
#   8. no carry    OUT=$OUT bash scripts/device/mla-table.sh extras    -> $OUT/extras.tgz
#      extras: flashinfer_mla with --cuda-graph (whether FlashInfer's launch captures), fa2 at
#      the profile problems, tilegym_mla with the gather outside the timing (gather=at_bind: the
#      probe's kernel-only figure) and with --cuda-graph, planted faults that must fail.
# Each tgz holds logs/ (one log per command, rc in run.log) and results/ (the records); here,
# unpack it, `cp -rn results/. results/` (never overwrite a record) and keep the logs under
# results/logs/<date>-h200-mla-table/.
# Clocks are never changed: the records carry the clocks as found.
set -uo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
steps=("$@"); [ ${#steps[@]} -eq 0 ] && { sed -n '2,/^set -uo/p' "$0" | grep '^#'; exit 2; }
py=${PY:-python3}

# shellcheck source=scripts/device/lib.sh
source scripts/device/lib.sh  # stage_base, env_base, run, begin, finish
VERSION_DISTS=(nvidia-cutlass-dsl flashinfer-python apache-tvm-ffi tilegym cuda-tile nvidia-cuda-tileiras)

stage() {  # install whatever bundle this call carried (each step is idempotent)
    set -e
    stage_base
    for d in .device/fi-* .device/quack-*; do [ -f "$d/unpack.sh" ] && bash "$d/unpack.sh"; done
    [ -d .device/c1 ] && bash .device/c1/stage.sh
    [ -d .device/c2 ] && (source .device/c2/cutile-env.sh && echo "cuTile in /tmp/cutile-site")
    set +e
    if [ -d /tmp/site/flashinfer ] && [ -d /tmp/site/nvidia_cutlass_dsl ]; then
        warm_flashinfer
    fi
}

env_setup() {  # what .device/b/env.sh and .device/c2/cutile-env.sh export, without the bundles
    env_base
    export FLASHINFER_WORKSPACE_BASE=/tmp/fiws TVM_FFI_CACHE_DIR=/tmp/tvmffi MAX_JOBS=16
    # FlashInfer's plan() JIT needs nvcc through CUDA_HOME (the adapter sets it around plan());
    # tilegym_mla unsets CUDA_HOME/CUDA_PATH itself around its compiling call
    export KERNELPLAN_FLASHINFER_CUDA_HOME="${KERNELPLAN_FLASHINFER_CUDA_HOME:-/usr/local/cuda}"
}

cutile_path() {  # cuTile after the rest: tileiras with its own ptxas first on PATH
    if [ -d /tmp/cutile-site/cuda/tile ]; then
        export PATH="/tmp/cutile-site/nvidia/cu13/bin:$PATH"
        export PYTHONPATH="/tmp/cutile-site:$PYTHONPATH"
    else
        echo "no cuTile in /tmp/cutile-site: tilegym_mla will report what to install" >&2
    fi
}

warm_flashinfer() {  # JIT-build FlashInfer's MLA modules once, before cuTile is on PATH
    ( env_setup
      export CUDA_HOME=/usr/local/cuda
      timeout 300 $py - <<'EOF'
import time
from cute_mla.flashinfer_mla import FlashInferMla
plan = FlashInferMla()
p = plan.problem(b=2, t=128)
for backend in ("fa3", "fa2"):
    t0 = time.perf_counter()
    k = plan.kernel(p, plan.config(p, {"backend": backend}), plan.target())
    k.bind(plan.prepare_inputs(p, seed=0))
    print(f"flashinfer {backend}: planned (JIT or cache) in {time.perf_counter() - t0:.1f} s")
EOF
    ) || echo "warm_flashinfer failed (see above); check will report it per kernel"
}

begin_hook() {  # begin (lib.sh) calls it after env_setup: cuTile after the rest
    cutile_path
}

problems_argv() {  # KERNEL [CONFIG...]: one line of CLI flags per profile problem it takes
    $py - "$@" <<'EOF'
import sys
from kernelplan.registry import load_plan_class
plan = load_plan_class("mla", sys.argv[1])()
for p in plan.profile_problems():
    d = p.to_dict()
    flags = [f"--{k}={str(v).lower() if isinstance(v, bool) else v}"
             for k, v in d.items() if v is not None and k not in ("softmax_scale", "num_pages")]
    print(" ".join(flags))
EOF
}

for s in "${steps[@]}"; do case $s in
stage)
    stage ;;
check)
    begin check
    run check-mla 560 $py -m kernelplan check mla
    finish check ;;
profile)
    begin profile
    run profile-mla 560 $py -m kernelplan profile mla
    finish profile ;;
table)  # every implementation alternated in one run per problem, CUDA-graph replays (host hidden)
    begin table
    run table-mla 580 $py -m kernelplan.alternate mla_decode torch_reference mla_decode_sm90 \
        flashinfer_mla tilegym_mla --cuda-graph --reps 30
    finish table ;;
ncu)  # the request's Nsight Compute table at B=32 T=4096: ours, the fastest peer, cuTile
    begin ncu
    for k in mla_decode_sm90 flashinfer_mla tilegym_mla; do
        run "ncu-$k" 280 $py -m cute_mla "$k" --b 32 --t 4096 --prof_type ncu --ncu-pair
    done
    finish ncu ;;
norm)  # issue 13's H200 parts (norm package, fp8 GEMM): scripts/device/norm-fp8-acceptance.sh
    begin norm
    OUT="$W" bash scripts/device/norm-fp8-acceptance.sh check faults badinput profile \
        > "$LOG/norm-fp8.log" 2>&1; echo "   rc=$?"; tail -n 40 "$LOG/norm-fp8.log"
    finish norm ;;
check-each)  # the same, one process per kernel (when the whole package does not fit a call)
    begin check-each
    for k in torch_reference mla_decode_sm90 cutlass_mla_decode_fp16 cutlass_mla_decode_fp8 \
             flashinfer_mla tilegym_mla; do
        run "check-$k" 300 $py -m kernelplan check mla "$k"
    done
    finish check-each ;;
profile-each)  # the same, one process per kernel (when the whole package does not fit a call)
    begin profile-each
    for k in torch_reference mla_decode_sm90 flashinfer_mla tilegym_mla; do
        run "profile-$k" 300 $py -m kernelplan profile mla "$k"
    done
    finish profile-each ;;
extras)
    begin extras
    fi="$py -m cute_mla flashinfer_mla"; tg="$py -m cute_mla tilegym_mla"
    # does FlashInfer's launch capture in a CUDA graph? (a record each; an error line if not)
    run fi-graph-profile 240 $py -m kernelplan profile mla flashinfer_mla --cuda-graph
    run tg-graph-b32-t4096 120 $tg --b 32 --t 4096 --cuda-graph
    # FlashInfer fa2 at the profile problems (the notes' second backend)
    i=0; while read -r flags; do i=$((i + 1))
        run "fi-fa2-$i" 120 $fi $flags --config backend=fa2
    done < <(problems_argv flashinfer_mla)
    # TileGym with the gather outside the timing: the op's kernels alone (compare with profile)
    i=0; while read -r flags; do i=$((i + 1))
        run "tg-at-bind-$i" 120 $tg $flags --config gather=at_bind
    done < <(problems_argv tilegym_mla)
    # planted faults: each must FAIL its check (rc=1)
    run fi-fault-wrong-page 120 $fi --b 4 --t 1024 --inject-fault wrong-page --prof_type disabled
    run fi-fault-skip 120 $fi --b 4 --t 1024 --inject-fault skip-launch --prof_type disabled
    run fi-fault-perturb 120 $fi --b 8 --t 777 --varlen true --inject-fault perturb --prof_type disabled
    run tg-fault-wrong-page 120 $tg --b 4 --t 1024 --inject-fault wrong-page --prof_type disabled
    run tg-fault-skip 120 $tg --b 4 --t 1024 --inject-fault skip-launch --prof_type disabled
    # refusals, one line each, nothing recorded
    run tg-refuse-varlen 60 $tg --b 8 --t 777 --varlen true --check
    run tg-refuse-causal 60 $tg --b 4 --s 2 --t 1000 --check
    finish extras ;;
*) echo "unknown step $s (stage, check, profile, table, ncu, norm, check-each, profile-each, extras)" >&2; exit 2 ;;
esac; done
