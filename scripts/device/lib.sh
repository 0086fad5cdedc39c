# shellcheck shell=bash
# What the device scripts (fmha-table.sh, mla-table.sh) share; source it after `cd` to the
# repository root and after setting `py`. Defines:
#   stage_base        the bundles every table needs: .device/a (staging), .device/cutlass (the
#                     CuTeDSL example tree under /root/stage/cutlass), .device/b (the DSL)
#   env_base          the exports every run needs (sources on PYTHONPATH, the DSL in /tmp/site,
#                     its nvcc on PATH, CUTLASS_DIR); a script's env_setup adds its own
#   run NAME TIMEOUT CMD...   log to $LOG/NAME.log; the rc and the log's tail printed
#   begin STEP        a fresh logs/results pair under $OUT/STEP; calls the script's env_setup,
#                     then begin_hook if the script defines one; logs the versions of
#                     torch and of the distributions in VERSION_DISTS (cuDNN's too when
#                     VERSIONS_CUDNN=1)
#   finish STEP       bundle $OUT/STEP into $OUT/STEP.tgz

stage_base() {  # each step is idempotent; errors stop the script (the caller's `set -e`)
    if [ -d .device/a ]; then bash .device/a/stage.sh; fi
    if [ -d .device/cutlass ]; then
        mkdir -p /root/stage/cutlass
        tar xzf .device/cutlass/cutedsl.tgz -C /root/stage/cutlass
        cp .device/cutlass/CUTLASS_COMMIT /root/stage/cutlass/CuTeDSL/
        echo "CuTeDSL examples at /root/stage/cutlass/CuTeDSL ($(cat .device/cutlass/CUTLASS_COMMIT))"
    fi
    if [ -d .device/b ]; then (source .device/b/env.sh && echo "DSL in /tmp/site"); fi
}

env_base() {  # what .device/b/env.sh exports, without the bundle
    [ -d /tmp/site/nvidia_cutlass_dsl ] || { echo "no DSL in /tmp/site: run the stage calls first" >&2; exit 3; }
    local src
    src=$(find "$(pwd)" -maxdepth 4 -type d -name src -not -path '*/.*' -not -path '*/third_party/*' | tr '\n' ':')
    export PYTHONPATH="${src}/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages"
    local nvd; nvd=$(ls -d /tmp/site/nvidia/cu*/bin 2>/dev/null | head -1)
    [ -n "$nvd" ] && export PATH="$nvd:$PATH"
    export PYTHONUNBUFFERED=1
    export CUTLASS_DIR="${CUTLASS_DIR:-/root/stage/cutlass/CuTeDSL}"
}

LOG=""
run() {  # run NAME TIMEOUT CMD...: log to $LOG/NAME.log; the rc and the log's tail printed
    local name=$1 limit=$2; shift 2
    echo "== $(date -u +%H:%M:%S) $name: $*" | tee -a "$LOG/run.log"
    timeout "$limit" "$@" > "$LOG/$name.log" 2>&1
    local rc=$?
    echo "   rc=$rc" | tee -a "$LOG/run.log"; tail -n 25 "$LOG/$name.log"
}

begin() {  # begin STEP: a fresh logs/results pair under $OUT/STEP
    : "${OUT:?set OUT to a folder for logs and records}"
    env_setup
    if declare -F begin_hook > /dev/null; then begin_hook; fi
    W="$OUT/$1"; LOG="$W/logs"; mkdir -p "$LOG" "$W/results"
    export KERNELPLAN_RESULTS="$W/results"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw --format=csv > "$LOG/nvidia-smi-start.csv" 2>&1
    VERSIONS_CUDNN=${VERSIONS_CUDNN:-0} $py - "${VERSION_DISTS[@]}" > "$LOG/versions.log" 2>&1 <<'EOF'
import importlib.metadata as md, os, sys, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0))
if os.environ["VERSIONS_CUDNN"] == "1":
    print("cudnn", torch.backends.cudnn.version())
for d in sys.argv[1:]:
    try:
        print(d, md.version(d))
    except md.PackageNotFoundError:
        print(d, "not installed")
EOF
    cat "$LOG/versions.log"
}

finish() {  # bundle $OUT/STEP into $OUT/STEP.tgz (the device tool brings back at most 8 files)
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > "$LOG/nvidia-smi-end.csv" 2>&1
    tar czf "$OUT/$1.tgz" -C "$W" logs results && rm -rf "$W"
    echo "bundle: $OUT/$1.tgz ($(du -h "$OUT/$1.tgz" | cut -f1))"
}
