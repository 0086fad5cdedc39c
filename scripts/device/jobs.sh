# shellcheck shell=bash
# What mla-sm90-variant.sh and mla-sm90-fp8.sh share; source it after `cd` to the repository
# root and after setting `py` and defining jobs_STEP (prints STEP's job lines: see jobs.py).
#   run_steps PREFIX TAIL STEP...   run_jobs PREFIX-STEP STEP TAIL for each STEP (check, table,
#                               ncu), then exits: 1 when a step had a job not as expected,
#                               2 at an unknown step.
#   run_jobs NAME STEP [TAIL]   STEP's jobs in ONE Python process (scripts/device/jobs.py; the DSL
#                               imported once), TAIL log lines echoed per job; on the device
#                               (needs OUT): logs in $OUT/logs/NAME/<job>.log + summary.txt,
#                               records in $OUT/results, both bundled into $OUT/NAME.tgz;
#                               with DRYRUN=1 (any machine): every job parsed, nothing run,
#                               logs in a temporary folder. Returns 1 when a job's rc is not
#                               the expected one.

run_jobs() {
    local name=$1 step=$2 tail=${3:-10} jobfile logdir dry=()
    jobfile=$(mktemp)
    "jobs_$step" > "$jobfile"
    if [ "${DRYRUN:-0}" = 1 ]; then
        logdir=$(mktemp -d)
        dry=(--dry)
    else
        : "${OUT:?set OUT to a folder for logs and records}"
        export CUTLASS_DIR="${CUTLASS_DIR:-/root/stage/cutlass/CuTeDSL}"
        export KERNELPLAN_RESULTS="$OUT/results"
        logdir="$OUT/logs/$name"
        mkdir -p "$logdir" "$KERNELPLAN_RESULTS"
        nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw \
            --format=csv > "$logdir/nvidia-smi-start.csv" 2>&1
    fi
    "$py" scripts/device/jobs.py "$logdir" "$jobfile" --tail "$tail" "${dry[@]}"
    local rc=$?
    if [ "${DRYRUN:-0}" != 1 ]; then
        nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv \
            > "$logdir/nvidia-smi-end.csv" 2>&1
        tar czf "$OUT/$name.tgz" -C "$OUT" "logs/$name" results 2>/dev/null
        echo "bundle: $OUT/$name.tgz ($(du -h "$OUT/$name.tgz" | cut -f1))"
    fi
    return $rc
}

run_steps() {
    local prefix=$1 tail=$2 status=0 s
    shift 2
    # every step name first: a typo must not cost the device call the steps before it
    for s in "$@"; do
        if ! declare -F "jobs_$s" > /dev/null; then
            echo "unknown step $s (the script's steps: $(declare -F | sed -n 's/^declare -f jobs_//p' | tr '\n' ' ' | sed 's/ $//'))" >&2
            exit 2
        fi
    done
    for s in "$@"; do run_jobs "$prefix-$s" "$s" "$tail" || status=1; done
    exit $status
}
