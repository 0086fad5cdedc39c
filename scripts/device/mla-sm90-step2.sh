#!/bin/bash
# Step 2 (each warpgroup computes S for its own 32 tokens of the page; the row max and P meet
# in SMEM): checks, timings and Nsight Compute in one device call:
#   source .device/bl/env.sh && bash scripts/device/mla-sm90-step2.sh
set -uo pipefail
jobs=$(mktemp)
cat > "$jobs" <<'JOBS'
s2-check-pkg session check mla mla_decode_sm90
s2-h16-s3 kernel --b 4 --t 1000 --h 16 --s 3 --check --prof_type disabled
s2-h64-varlen kernel --b 8 --t 777 --h 64 --varlen true --check --prof_type disabled
s2-t1-empty kernel --b 2 --seqlens [1,0] --check --prof_type disabled
s2-nosplit-varlen kernel --b 8 --t 777 --varlen true --config splits=1 --check --prof_type disabled
s2-fault-wrong-page kernel --b 4 --t 1024 --inject-fault wrong-page --prof_type disabled
s2-time-b32-t4096 kernel --b 32 --t 4096 --check --reps 30
s2-time-b128-t4096 kernel --b 128 --t 4096 --num_pages 8196 --check --reps 30
s2-time-b32-t16384 kernel --b 32 --t 16384 --num_pages 8196 --check --reps 30
s2-time-h64-b128-t4096 kernel --b 128 --t 4096 --h 64 --num_pages 8196 --check --reps 30
s2-ncu-b32-t4096 kernel --b 32 --t 4096 --prof_type ncu --ncu-set full
s2-ncu-b128-t4096 kernel --b 128 --t 4096 --num_pages 8196 --prof_type ncu --ncu-set full
JOBS
bash "$(dirname "$0")/mla-sm90-step.sh" step2 "$jobs"
