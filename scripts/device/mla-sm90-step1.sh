#!/bin/bash
# Step 0 (v0's code path, --config splits=1) timings and step 1 (split-KV + combine) checks,
# timings and an Nsight Compute profile, in one device call:
#   source .device/bl/env.sh && bash scripts/device/mla-sm90-step1.sh
set -uo pipefail
jobs=$(mktemp)
cat > "$jobs" <<'JOBS'
v0-time-b32-t4096 kernel --b 32 --t 4096 --config splits=1 --check --reps 30
v0-time-b128-t4096 kernel --b 128 --t 4096 --config splits=1 --reps 30
v0-time-b32-t16384 kernel --b 32 --t 16384 --config splits=1 --reps 30
v0-time-h64-b128-t4096 kernel --b 128 --t 4096 --h 64 --config splits=1 --reps 30
s1-check-pkg session check mla mla_decode_sm90
s1-h16-s3 kernel --b 4 --t 1000 --h 16 --s 3 --check --prof_type disabled
s1-h64-varlen kernel --b 8 --t 777 --h 64 --varlen true --check --prof_type disabled
s1-t1-empty kernel --b 2 --seqlens [1,0] --check --prof_type disabled
s1-fault-wrong-page kernel --b 4 --t 1024 --inject-fault wrong-page --prof_type disabled
s1-time-b32-t4096 kernel --b 32 --t 4096 --check --reps 30
s1-time-b128-t4096 kernel --b 128 --t 4096 --check --reps 30
s1-time-b32-t16384 kernel --b 32 --t 16384 --check --reps 30
s1-time-h64-b128-t4096 kernel --b 128 --t 4096 --h 64 --check --reps 30
s1-ncu-b32-t4096 kernel --b 32 --t 4096 --prof_type ncu --ncu-set detailed
JOBS
bash "$(dirname "$0")/mla-sm90-step.sh" step1 "$jobs"
