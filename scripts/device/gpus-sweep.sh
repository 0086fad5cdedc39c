#!/bin/bash
# Issue 15's two-GPU sweep: `python -m kernelplan profile gemm KERNEL --autotune` on one GPU and
# then with `--gpus 2` (one worker per GPU, items dealt round-robin, records merged) on an
# nvidia-h200-x2 host; the wall time of each, the best config each picks (report best-config),
# and the records per GPU (device UUID) of the two-GPU run. NOT yet run on a two-GPU host.
#
# Calls, back to back on kind nvidia-h200-x2 (bundles as in mla-table.sh; .device/b2 holds the
# small wheels moved out of .device/b so that b and the checkout fit one transfer):
#   1. carry [".device/a", ".device/cutlass"]   bash scripts/device/mla-table.sh stage
#   2. carry [".device/b"]                      bash scripts/device/mla-table.sh stage
#   3. carry [".device/b2"]   bash .device/b2/install.sh && source .device/b/env.sh &&
#                             OUT=$OUT bash scripts/device/gpus-sweep.sh   -> $OUT/gpus-sweep.tgz
# Here: unpack, `python -m kernelplan.records merge <unpacked>/results` (never overwrites a
# record; refuses another schema or pinned commit), logs under
# results/logs/<date>-h200x2-gpus-sweep/.
#
# KERNEL (default hopper_dense_gemm) picks the sweep; DRYRUN=1 (any host) prints the commands
# and runs the two-GPU one, which must refuse in one line on a host without two GPUs.
set -uo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
py=${PY:-python3}
KERNEL=${KERNEL:-hopper_dense_gemm}
sweep=(-m kernelplan profile gemm "$KERNEL" --autotune)

if [ "${DRYRUN:-0}" = 1 ]; then
    echo "1 GPU:  $py ${sweep[*]} --results-dir <one>"
    echo "2 GPUs: $py ${sweep[*]} --gpus 2 --results-dir <two>"
    "$py" "${sweep[@]}" --gpus 2 --results-dir "$(mktemp -d)" 2>&1 | tail -n 2
    exit 0
fi
: "${OUT:?set OUT to a folder for logs and records}"
export CUTLASS_DIR="${CUTLASS_DIR:-/root/stage/cutlass/CuTeDSL}"
logs="$OUT/logs"; mkdir -p "$logs"
nvidia-smi --query-gpu=index,name,uuid,clocks.sm,clocks.max.sm --format=csv > "$logs/nvidia-smi-start.csv" 2>&1
summary="$logs/summary.md"
{
    echo "# profile gemm $KERNEL --autotune: one GPU against two"
    echo
    echo "| run | wall s | rc | records | best config |"
    echo "|---|---|---|---|---|"
} > "$summary"
for n in 1 2; do
    dir="$OUT/results-gpus$n"
    t0=$(date +%s%N)
    "$py" "${sweep[@]}" --gpus "$n" --results-dir "$dir" > "$logs/profile-gpus$n.log" 2>&1
    rc=$?
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    wall="$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
    recs=$(find "$dir" -name '*.json' 2>/dev/null | wc -l)
    best=$("$py" -m kernelplan.report best-config gemm "$KERNEL" --results-dir "$dir" 2>&1 | tail -n 1)
    echo "| --gpus $n | $wall | $rc | $recs | $best |" >> "$summary"
done
{
    echo
    echo "Records of the two-GPU run per device UUID:"
    "$py" - "$OUT/results-gpus2" <<'PY'
import collections, json, pathlib, sys
count = collections.Counter()
for f in pathlib.Path(sys.argv[1]).rglob("*.json"):
    count[(json.loads(f.read_text()).get("device") or {}).get("uuid")] += 1
for uuid, n in sorted(count.items(), key=str):
    print(f"- {uuid}: {n}")
PY
} >> "$summary"
nvidia-smi --query-gpu=index,clocks.sm --format=csv > "$logs/nvidia-smi-end.csv" 2>&1
cat "$summary"
tar czf "$OUT/gpus-sweep.tgz" -C "$OUT" logs results-gpus1 results-gpus2
rm -rf "$logs" "$OUT/results-gpus1" "$OUT/results-gpus2"
echo "bundle: $OUT/gpus-sweep.tgz"
