#!/bin/bash
# Several device jobs in ONE call, in order, with what they wrote kept even when the call is cut
# short (the session's device time can end inside a call; at most 8 files come back from $OUT):
#
#   OUT=$OUT [BUDGET_S=540] bash scripts/device/queue.sh 'CMD1' 'CMD2' ...
#
# Job k runs as `bash -c "CMD"` with OUT=$WORK/jk (so each script writes its own tgz and
# records there) and its output in $WORK/jk.log; WORK is an empty or new folder outside $OUT
# (default: a fresh mktemp folder per call, so no earlier call's files are bundled). Every TICK_S (15) seconds the whole of $WORK is bundled into $OUT/partial.tgz; at the end
# into $OUT/queue.tgz (partial.tgz removed). A job is not started once BUDGET_S seconds have
# passed since the queue began (it is listed as skipped). $WORK/summary.txt: one line per job
# (rc, seconds, or skipped), plus nvidia-smi at the start and the end when it is there.
# Exit status: 0 when every job ran with rc 0, else 1; 2 on a usage error.
#
# Example (session 9's FP8 work, after the staging calls and `source .device/b/env.sh`):
#   OUT=$OUT bash scripts/device/queue.sh \
#     'FP8_STEP=24 bash scripts/device/mla-sm90-fp8.sh check14' \
#     'FORMATS=step24 bash scripts/device/mla-sm90-fp8.sh table14'
# Here, after the call: tar xzf queue.tgz (or partial.tgz), then for each jk/: `cp -rn
# jk/results/. results/` (never overwrite a record) and its logs/ under results/logs/.
set -u
[ $# -gt 0 ] || { sed -n '2,/^set -u/p' "$0" | grep '^#'; exit 2; }
[ -n "${OUT:-}" ] || { echo "set OUT to the folder whose files come back" >&2; exit 2; }
budget=${BUDGET_S:-540}
tick=${TICK_S:-15}
out=$(realpath -m "$OUT")
if [ -n "${WORK:-}" ]; then
    work=$(realpath -m "$WORK")
    if [ -e "$work" ] && [ -n "$(ls -A "$work" 2>/dev/null)" ]; then
        echo "WORK ($work) is not empty: give an empty or new folder, or none" >&2; exit 2
    fi
else
    work=$(mktemp -d /tmp/queue-work.XXXXXX) || exit 2
fi
case $work in "$out" | "$out"/*) echo "WORK must be outside OUT (got $work)" >&2; exit 2 ;; esac
mkdir -p "$work" "$out" || exit 2
OUT=$out
summary=$work/summary.txt
: > "$summary"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw \
        --format=csv > "$work/nvidia-smi-start.csv" 2>&1
fi
bundle() {  # $1: the bundle's name under $OUT, written whole, then moved into place
    tar czf "$work.tgz.tmp" -C "$work" . 2>/dev/null && mv "$work.tgz.tmp" "$OUT/$1"
}
( while sleep "$tick"; do bundle partial.tgz; done ) > /dev/null 2>&1 &
ticker=$!
start=$SECONDS
status=0
k=0
for cmd in "$@"; do
    k=$((k + 1))
    if [ $((SECONDS - start)) -ge "$budget" ]; then
        echo "j$k: skipped (${budget} s budget spent): ${cmd//$'\n'/ }" >> "$summary"
        status=1
        continue
    fi
    t0=$SECONDS
    OUT="$work/j$k" bash -c "mkdir -p \"\$OUT\" && $cmd" > "$work/j$k.log" 2>&1
    rc=$?
    echo "j$k: rc=$rc $((SECONDS - t0)) s: ${cmd//$'\n'/ }" >> "$summary"
    [ $rc -eq 0 ] || status=1
done
kill "$ticker" 2>/dev/null
wait "$ticker" 2>/dev/null
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv \
        > "$work/nvidia-smi-end.csv" 2>&1
fi
bundle queue.tgz && rm -f "$OUT/partial.tgz"
cat "$summary"
exit $status
