#!/bin/bash
# Steps of mla_decode_sm90's seesaw schedule on the H200, each against the one before, in ONE
# alternated run (after host-setup.sh, `source .device/b/env.sh`, and the FlashInfer bundles
# staged as in mla-table.sh):
#
#   OUT=$OUT [STEP=N] bash scripts/device/mla-sm90-steps.sh check   # -> $OUT/stepN-check.tgz
#   OUT=$OUT [SPECS=...] bash scripts/device/mla-sm90-steps.sh table # -> $OUT/steps-table.tgz
#   OUT=$OUT [STEP=N] [NCU_LARGE=0] bash scripts/device/mla-sm90-steps.sh ncu  # stepN-ncu.tgz
#
# check: mla-sm90-variant.sh's check jobs with seesaw step STEP (default 8), each check job
#   launching CHECK_LAUNCHES times (default 3; the outputs poisoned again before the last),
#   the default path's package check included.
# table: python -m kernelplan.alternate over the workload's profile problems with SPECS
#   (default: seesaw step 4 as first measured, 5 (page indices read a pair ahead), 6 (+ P by
#   stmatrix), 7 (+ evict-first page loads), 8 (+ the combine reads 4 splits per round), all
#   with the equal split rule, then step 8 and step 9 (8 without step 5) with the balanced
#   rule) and PEERS (default flashinfer_mla); each build checked first (two launches).
#   E.g. SPECS="mla_decode_sm90:schedule=seesaw,step=9 mla_decode_sm90:schedule=seesaw,step=10".
# ncu: step STEP and PEERS at (32, 4096) and, unless NCU_LARGE=0, at (128, 16384).
# Each step's logs and records in its tgz; here: unpack, `cp -rn results/. results/`, logs under
# results/logs/<date>-h200-*/. REPS (default 20) timed rounds. DRYRUN=1 parses everything on a
# CPU host. Clocks are never changed.
set -uo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
py=${PY:-python3}
PEERS=${PEERS:-flashinfer_mla}
REPS=${REPS:-20}
S="mla_decode_sm90:schedule=seesaw"
if [ -z "${SPECS:-}" ]; then
    SPECS="$S,step=4,split_rule=equal $S,step=5,split_rule=equal $S,step=6,split_rule=equal"
    SPECS="$SPECS $S,step=7,split_rule=equal $S,step=8,split_rule=equal"
    SPECS="$SPECS $S,step=8,split_rule=balanced $S,step=9,split_rule=balanced"
fi
STEP=${STEP:-8}  # the step `check` and `ncu` build

step=${1:?check, table or ncu}
case $step in
check)
    exec env VARIANT="schedule=seesaw step=$STEP" TAG="step$STEP" \
        CHECK_LAUNCHES="${CHECK_LAUNCHES:-3}" bash scripts/device/mla-sm90-variant.sh check ;;
table)
    logdir="$OUT/logs/steps-table"; mkdir -p "$logdir"
    if [ "${DRYRUN:-0}" = 1 ]; then
        "$py" -c "import sys; from kernelplan import alternate; alternate.devmod.current_device = lambda: None; sys.exit(alternate.main(sys.argv[1:] + ['--no-record']))" \
            mla_decode $SPECS $PEERS --cuda-graph --reps "$REPS" 2>&1 | tee "$logdir/table.log"
        exit 0
    fi
    export KERNELPLAN_RESULTS="$OUT/results"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw \
        --format=csv > "$logdir/nvidia-smi-start.csv" 2>&1
    "$py" -m kernelplan.alternate mla_decode $SPECS $PEERS --cuda-graph --reps "$REPS" \
        > "$logdir/table.log" 2>&1
    echo "rc=$?" >> "$logdir/table.log"
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv \
        > "$logdir/nvidia-smi-end.csv" 2>&1
    tar czf "$OUT/steps-table.tgz" -C "$OUT" logs/steps-table results
    grep "^|" "$logdir/table.log" | cut -c1-160 ;;
ncu)
    logdir="$OUT/logs/step$STEP-ncu"; mkdir -p "$logdir"
    export KERNELPLAN_RESULTS="$OUT/results"
    common=(--prof_type ncu --ncu-set full)
    [ "${DRYRUN:-0}" = 1 ] && common=(--prof_type static --help)
    if [ "${NCU_LARGE:-1}" != 0 ]; then
        "$py" -m cute_mla mla_decode_sm90 --b 128 --t 16384 --config schedule=seesaw step=$STEP \
            "${common[@]}" > "$logdir/ncu-seesaw-b128-t16384.log" 2>&1
        for peer in $PEERS; do
            "$py" -m cute_mla "$peer" --b 128 --t 16384 "${common[@]}" \
                > "$logdir/ncu-$peer-b128-t16384.log" 2>&1
        done
    fi
    "$py" -m cute_mla mla_decode_sm90 --b 32 --t 4096 --config schedule=seesaw step=$STEP \
        "${common[@]}" > "$logdir/ncu-seesaw-b32-t4096.log" 2>&1
    for peer in $PEERS; do
        "$py" -m cute_mla "$peer" --b 32 --t 4096 "${common[@]}" > "$logdir/ncu-$peer-b32-t4096.log" 2>&1
    done
    tar czf "$OUT/step$STEP-ncu.tgz" -C "$OUT" logs/step$STEP-ncu results 2>/dev/null
    grep -h "record:" "$logdir"/*.log ;;
*) echo "unknown step $step (check, table, ncu)" >&2; exit 2 ;;
esac
