#!/bin/bash
# Step 0 (--config splits=1) and step 1 timings at the large settings (step1.sh passed no
# --num_pages, and the CLI's default cache of 2052 pages refused them): one device call.
#   source .device/bl/env.sh && bash scripts/device/mla-sm90-step1b.sh
set -uo pipefail
jobs=$(mktemp)
cat > "$jobs" <<'JOBS'
v0-time-b128-t4096 kernel --b 128 --t 4096 --num_pages 8196 --config splits=1 --check --reps 30
s1-time-b128-t4096 kernel --b 128 --t 4096 --num_pages 8196 --check --reps 30
v0-time-b32-t16384 kernel --b 32 --t 16384 --num_pages 8196 --config splits=1 --check --reps 30
s1-time-b32-t16384 kernel --b 32 --t 16384 --num_pages 8196 --check --reps 30
v0-time-h64-b128-t4096 kernel --b 128 --t 4096 --h 64 --num_pages 8196 --config splits=1 --check --reps 30
s1-time-h64-b128-t4096 kernel --b 128 --t 4096 --h 64 --num_pages 8196 --check --reps 30
JOBS
bash "$(dirname "$0")/mla-sm90-step.sh" step1b "$jobs"
