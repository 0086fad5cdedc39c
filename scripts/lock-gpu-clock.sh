#!/bin/bash
# Lock a GPU's SM clock for steadier timings -- ONLY on a GPU you own.
#
#   bash scripts/lock-gpu-clock.sh --i-own-this-gpu [--gpu N] (--mhz MHZ | --base | --max) \
#        [-- command args...]
#
# Locks the SM clock with `nvidia-smi -i N -lgc MHZ,MHZ` (needs root), runs the command (or,
# without one, waits until Ctrl-C), and restores the default clocks with `nvidia-smi -i N -rgc`
# when it exits, however it exits (trap on EXIT, INT, TERM, HUP).
#   --base   the default applications clock (clocks.default_applications.graphics)
#   --max    the maximum SM clock (clocks.max.sm): boost, which power capping may still undercut
#
# Never on a shared machine: locking changes the GPU for every user of it. There, measure the
# GPU as found: kernelplan records the clocks seen before, during and after each timed run and
# flags throttling. Without --i-own-this-gpu this script refuses and touches nothing (it does
# not even query nvidia-smi).
set -uo pipefail

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; }

own=0 gpu=0 mhz="" mode=""
cmd=()
while [ $# -gt 0 ]; do
    case "$1" in
        --i-own-this-gpu) own=1 ;;
        --gpu) gpu="${2:?--gpu needs an index}"; shift ;;
        --mhz) mhz="${2:?--mhz needs a value}"; mode=mhz; shift ;;
        --base) mode=base ;;
        --max) mode=max ;;
        -h|--help) usage; exit 0 ;;
        --) shift; cmd=("$@"); break ;;
        *) echo "lock-gpu-clock: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

if [ "$own" != 1 ]; then
    echo "lock-gpu-clock: refusing: locking GPU clocks changes the GPU for everyone using it." >&2
    echo "  Run it only on a GPU you own, with --i-own-this-gpu. On a shared machine measure the" >&2
    echo "  GPU as found (kernelplan records the clocks and flags throttling; ncu runs with" >&2
    echo "  --clock-control none)." >&2
    exit 3
fi
if [ -z "$mode" ]; then
    echo "lock-gpu-clock: say which clock: --mhz MHZ, --base or --max" >&2
    exit 2
fi
if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "lock-gpu-clock: nvidia-smi not found (install the NVIDIA driver utilities)" >&2
    exit 2
fi
case "$mode" in
    base) q=clocks.default_applications.graphics ;;
    max) q=clocks.max.sm ;;
    *) q="" ;;
esac
if [ -n "$q" ]; then
    mhz=$(nvidia-smi -i "$gpu" --query-gpu="$q" --format=csv,noheader,nounits | head -n1 | tr -d ' ')
fi
if ! [[ "$mhz" =~ ^[0-9]+$ ]]; then
    echo "lock-gpu-clock: no usable clock for GPU $gpu (got '${mhz}')" >&2
    exit 2
fi

restored=0
restore() {
    [ "$restored" = 1 ] && return
    restored=1
    echo "lock-gpu-clock: restoring the default clocks of GPU $gpu (nvidia-smi -rgc)" >&2
    nvidia-smi -i "$gpu" -rgc >&2 || echo "lock-gpu-clock: WARNING: -rgc failed; run: sudo nvidia-smi -i $gpu -rgc" >&2
}
trap restore EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

echo "lock-gpu-clock: locking GPU $gpu SM clock at $mhz MHz (nvidia-smi -lgc $mhz,$mhz)" >&2
if ! nvidia-smi -i "$gpu" -lgc "$mhz,$mhz" >&2; then
    echo "lock-gpu-clock: -lgc failed (root needed?)" >&2
    exit 1
fi
if [ ${#cmd[@]} -gt 0 ]; then
    "${cmd[@]}"
    exit $?
fi
echo "lock-gpu-clock: locked; press Ctrl-C to restore" >&2
while true; do sleep 3600; done
