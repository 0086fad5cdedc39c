#!/bin/bash
# One optimisation step of mla_decode_sm90 on the H200 in ONE device call (after
# host-setup.sh and `source .device/bl/env.sh`): every job runs in one Python process (the DSL
# is imported once, each kernel compiled once), each job's output in its own log.
#   bash scripts/device/mla-sm90-step.sh STEP JOBFILE
# JOBFILE lines: `NAME kernel ARGS...` (python -m cute_mla mla_decode_sm90 ARGS) or
# `NAME session ARGS...` (python -m kernelplan ARGS); blank lines and # comments skipped (the
# runner is scripts/device/jobs.py: it also takes `alternate` jobs, and gives each job's rc a
# verdict: a --inject-fault job must exit 1; the exit status is 1 when one is not as expected).
# Logs: $OUT/logs/STEP/NAME.log + summary.txt; records: $OUT/results; all in $OUT/STEP.tgz.
set -uo pipefail
: "${OUT:?set OUT}"
step=$1; jobs=$2
export CUTLASS_DIR="${CUTLASS_DIR:-/root/stage/cutlass/CuTeDSL}"
export KERNELPLAN_RESULTS="$OUT/results"
mkdir -p "$OUT/logs/$step" "$KERNELPLAN_RESULTS"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv \
    > "$OUT/logs/$step/nvidia-smi.csv" 2>&1
"${PY:-python3}" "$(dirname "$0")/jobs.py" "$OUT/logs/$step" "$jobs" --tail 6
rc=$?
tar czf "$OUT/$step.tgz" -C "$OUT" logs results 2>/dev/null; echo "bundle: $(du -h "$OUT/$step.tgz" | cut -f1)"
exit $rc
