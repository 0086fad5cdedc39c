#!/bin/bash
# One compile-time variant of mla_decode_sm90 on the H200, against the default path (and peers):
# VARIANT is its --config (default "loads=tma schedule=lockstep": step 3, TMA page loads;
# "schedule=seesaw" is steps 4-8, the seesaw schedule; the default path is the package default), TAG names the logs and bundles (default step3). One device call
# per step (each well under 10 minutes), after host-setup.sh and `source .device/b/env.sh`:
#
#   OUT=$OUT [VARIANT=schedule=seesaw TAG=step4] bash scripts/device/mla-sm90-variant.sh check
#   ... table | ncu                                     # -> $OUT/$TAG-<step>.tgz each
#
# check: the default path's package check (regression), then the variant at the workload's
#   check problems (NaN in every slot past a sequence's end and in the spare pages the table
#   points at past a sequence's pages), the odd shapes of steps 0-2, tails of 1/63/64/65/127
#   tokens, s = 4, fp16, keys with spikes (`--init spiky`: running maxima that jump
#   mid-sequence, at h=128 and at h=64 s=2, and on a pair plan), the unsplit path (`splits=1`)
#   on a 256-page sequence (the mbarrier phases wrap 128 times in one CTA), 64 splits of 2 pages (step 11, which plans its own
#   parts: one sequence in 66 pieces, 132 parts of 2 pages, varlen B=32, empty sequences
#   between long ones; also for the later work-list steps and cuts=costed, equal or even,
#   which with no step also run the FP8 cache's work list at varlen and mixed lengths; even
#   also checks the table's rows that the costed plan leaves uncut: h=128 (128, 4096), s=2,
#   h=64), and a planted wrong-page fault
#   that must FAIL (rc=1; every other job rc=0).
# table: the default path and the variant alternated in one run at the workload's profile
#   problems (python -m kernelplan.alternate ... mla_decode_sm90 mla_decode_sm90:$VARIANT
#   --cuda-graph --reps 30; each checked first), plus EXTRA (more implementation specs, e.g.
#   mla_decode_sm90:loads=tma) and PEERS="flashinfer_mla" (peers already staged on the host:
#   see mla-table.sh for their bundles).
# ncu: Nsight Compute of the default path and the variant at (32, 4096) and at the varlen draw
#   of B=32 (the same tokens), and of the variant at (128, 16384).
#
# Logs: $OUT/logs/$TAG-<step>/<job>.log + summary.txt; records: $OUT/results; both in the tgz.
# Here, after the call: unpack, `cp -rn results/. results/` (never overwrite a record), logs
# under results/logs/<date>-h200-mla-sm90-$TAG/. Clocks are never changed.
#
# DRYRUN=1 (any machine, no GPU): parse every job's flags and config as the device would
# (problem, config, supports), and the table's implementation specs up to the GPU check;
# nothing is compiled or run. PY overrides the interpreter (default python3).
set -uo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
steps=("$@"); [ ${#steps[@]} -eq 0 ] && { sed -n '2,/^set -uo/p' "$0" | grep '^#'; exit 2; }
py=${PY:-python3}
VARIANT=${VARIANT:-loads=tma schedule=lockstep}
TAG=${TAG:-step3}
v="--config $VARIANT"
# CHECK_LAUNCHES=N: each check job launches N times, the outputs poisoned again before the
# last (a kernel's state kept between launches, such as step 10's arrival counters)
cl="--check-launches ${CHECK_LAUNCHES:-1}"
# steps 40 and 42 (the query rows on WGMMA's N) have their own check and ncu lists
q_on_n=' step=4[02] '

# whether VARIANT's step= is one the package lists, asked of it so that a new step needs no
# edit here: `step_is work_list` (BF16_STEPS from WORK_LIST_STEP on: the 16-bit work list),
# `step_is pair_merge` (PAIR_MERGE_STEPS: clusters merging pairs through DSMEM, step 62) or
# `step_is multicast` (MULTICAST_STEPS: two m-tiles' CTAs sharing each page, step 63);
# exits when the package cannot be asked
step_is() {
    local s rc
    s=$(sed -n 's/.* step=\([0-9][0-9]*\) .*/\1/p' <<< " $VARIANT ")
    [ -n "$s" ] || return 1
    "$py" -c 'import sys
from cute_mla.mla_decode_sm90.mla_decode_sm90 import (
    BF16_STEPS, MULTICAST_STEPS, PAIR_MERGE_STEPS, WORK_LIST_STEP,
)
step, kind = int(sys.argv[1]), sys.argv[2]
ok = {
    "work_list": step in BF16_STEPS and step >= WORK_LIST_STEP,
    "pair_merge": step in PAIR_MERGE_STEPS,
    "multicast": step in MULTICAST_STEPS,
}[kind]
sys.exit(0 if ok else 3)' "$s" "$1"
    rc=$?
    [ $rc -eq 0 ] && return 0
    [ $rc -eq 3 ] && return 1
    echo "cannot ask the mla package about step $s ($1, rc=$rc): is it on PYTHONPATH?" >&2
    exit 2
}

jobs_check() {
    if [[ " $VARIANT " =~ $q_on_n ]]; then
        jobs_check_q_on_n
        return
    fi
    if step_is multicast; then
        jobs_check_multicast
        return
    fi
    jobs_check_h128
    cat <<JOBS
v-h64-t513 kernel --b 4 --t 513 --h 64 $v --check $cl --prof_type disabled
v-h16-t300-varlen kernel --b 4 --t 300 --h 16 --varlen true $v --check $cl --prof_type disabled
v-h16-s3 kernel --b 4 --t 1000 --h 16 --s 3 $v --check $cl --prof_type disabled
v-h64-varlen kernel --b 8 --t 777 --h 64 --varlen true $v --check $cl --prof_type disabled
v-t1-empty kernel --b 2 --seqlens [1,0] $v --check $cl --prof_type disabled
v-tails kernel --b 5 --seqlens [1,63,64,65,127] $v --check $cl --prof_type disabled
v-s4-h32 kernel --b 4 --s 4 --h 32 --t 1000 $v --check $cl --prof_type disabled
v-fp16 kernel --b 4 --t 1000 --dtype float16 $v --check $cl --prof_type disabled
v-spiky-b4-t1000 kernel --b 4 --t 1000 --init spiky $v --check $cl --prof_type disabled
v-spiky-h64-s2 kernel --b 8 --t 2000 --h 64 --s 2 --init spiky $v --check $cl --prof_type disabled
JOBS
    if step_is work_list || [[ " $VARIANT " =~ " cuts="(costed|equal|even|pairs)" " ]]; then
        # the work-list steps plan their own parts (no splits=): one sequence in 66 pieces (the
        # combine merges them all), 132 parts of 2 pages at h=16, the table's varlen draw,
        # empty sequences between long ones (some parts walk several sequences), and 64
        # short sequences of 0-5 pages (parts of up to 3 segments: 1-page ones, an empty one
        # between, odd and even page counts: step 12's hand-over of the next pages)
        cat <<JOBS
v-wl-b1-t16384 kernel --b 1 --t 16384 $v --check $cl --prof_type disabled
v-wl-h16-b2-t8192 kernel --b 2 --t 8192 --h 16 $v --check $cl --prof_type disabled
v-wl-b32-varlen kernel --b 32 --t 4096 --varlen true $v --check $cl --prof_type disabled
v-wl-empty kernel --b 6 --seqlens [0,3000,0,0,129,5000] $v --check $cl --prof_type disabled
v-wl-mixed kernel --b 64 --seqlens [1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300] $v --check $cl --prof_type disabled
JOBS
        if step_is pair_merge; then
            # step 62: plans whose cut sequences are all cluster pairs (h=128 with 64 of 66
            # parts and with all 66, h=64, s*h = 48 rows in the m-tile, fp16), a plan that mixes
            # pairs with combined sequences and empty ones, and the fault on a paired plan
            cat <<JOBS
v-pair-b32-t4096 kernel --b 32 --t 4096 $v --check $cl --prof_type disabled
v-pair-b33-t2048 kernel --b 33 --t 2048 $v --check $cl --prof_type disabled
v-pair-h64-b64-t2048 kernel --b 64 --t 2048 --h 64 $v --check $cl --prof_type disabled
v-pair-h16-s3-b64-t4096 kernel --b 64 --s 3 --h 16 --t 4096 $v --check $cl --prof_type disabled
v-pair-fp16-b32-t1024 kernel --b 32 --t 1024 --dtype float16 $v --check $cl --prof_type disabled
v-pair-mixed kernel --b 18 --seqlens [65,1,1000,4096,2048,3000,0,3000,2000,700,1000,1000,2048,0,700,700,3000,2000] $v --check $cl --prof_type disabled
v-pair-spiky-b32-t4096 kernel --b 32 --t 4096 --init spiky $v --check $cl --prof_type disabled
v-fault-pair-wrong-page kernel --b 32 --t 1024 $v --inject-fault wrong-page --prof_type disabled
JOBS
        fi
        if [[ " $VARIANT " =~ " cuts=even " ]]; then
            # the even cuts cut the sequences that the costed plan keeps whole at the table's
            # uncut rows (h=128 (128, 4096), s=2, h=64): check them there
            cat <<JOBS
v-even-b128-t4096 kernel --b 128 --t 4096 $v --check $cl --prof_type disabled
v-even-s2-b32-t4096 kernel --b 32 --s 2 --t 4096 $v --check $cl --prof_type disabled
v-even-h64-b128-t4096 kernel --b 128 --t 4096 --h 64 $v --check $cl --prof_type disabled
JOBS
        fi
        if [[ " $VARIANT " =~ " cuts="(costed|equal|even|pairs)" " && ! " $VARIANT " =~ " step=" ]]; then
            # the work list's cuts plan the FP8 cache's work list too (its default step 22)
            cat <<JOBS
v-wl-fp8-varlen kernel --b 32 --t 4096 --varlen true --kv_dtype float8_e4m3fn $v --check $cl --prof_type disabled
v-wl-fp8-mixed kernel --b 8 --seqlens [0,3000,5,129,0,777,64,4100] --kv_dtype float8_e4m3fn --kv_scale per_block $v --check $cl --prof_type disabled
JOBS
        fi
    else
        cat <<JOBS
v-nosplit-varlen kernel --b 8 --t 777 --varlen true --config $VARIANT splits=1 --check $cl --prof_type disabled
v-nosplit-t16384 kernel --b 2 --t 16384 --config $VARIANT splits=1 --check $cl --prof_type disabled
v-splits64 kernel --b 2 --t 8192 --config $VARIANT splits=64 --check $cl --prof_type disabled
JOBS
    fi
    cat <<JOBS
v-fault-wrong-page kernel --b 4 --t 1024 $v --inject-fault wrong-page --prof_type disabled
JOBS
}

# steps 40 and 42 (the query rows on WGMMA's N) take s*h = 16 or 32 only: their own check list,
# the same kinds of cases at h=16 (s=2 and h=32: n = 32, s=2 causal), the work list's cases
# (132 parts of 2 pages, one sequence in many pieces, empty sequences, 0-5 page mixes), the
# mbarrier phases over 256 pages of one CTA's run, and the wrong-page fault that must FAIL
jobs_check_q_on_n() {
    cat <<JOBS
v-check-pkg-default session check mla mla_decode_sm90
v-h16-b4-t1024 kernel --b 4 --t 1024 --h 16 $v --check $cl --prof_type disabled
v-h16-b3-t1000 kernel --b 3 --t 1000 --h 16 $v --check $cl --prof_type disabled
v-h16-t300-varlen kernel --b 4 --t 300 --h 16 --varlen true $v --check $cl --prof_type disabled
v-h16-t777-varlen kernel --b 8 --t 777 --h 16 --varlen true $v --check $cl --prof_type disabled
v-h16-s2 kernel --b 4 --s 2 --h 16 --t 1000 $v --check $cl --prof_type disabled
v-h32-t513 kernel --b 4 --t 513 --h 32 $v --check $cl --prof_type disabled
v-h16-t1-empty kernel --b 2 --h 16 --seqlens [1,0] $v --check $cl --prof_type disabled
v-h16-tails kernel --b 5 --h 16 --seqlens [1,63,64,65,127] $v --check $cl --prof_type disabled
v-h16-fp16 kernel --b 4 --t 1000 --h 16 --dtype float16 $v --check $cl --prof_type disabled
v-wl-h16-b1-t16384 kernel --b 1 --t 16384 --h 16 $v --check $cl --prof_type disabled
v-wl-h16-b2-t8192 kernel --b 2 --t 8192 --h 16 $v --check $cl --prof_type disabled
v-wl-h16-b32-varlen kernel --b 32 --t 4096 --h 16 --varlen true $v --check $cl --prof_type disabled
v-wl-h16-empty kernel --b 6 --h 16 --seqlens [0,3000,0,0,129,5000] $v --check $cl --prof_type disabled
v-wl-h16-mixed kernel --b 64 --h 16 --seqlens [1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300] $v --check $cl --prof_type disabled
v-h16-b128-t4096 kernel --b 128 --t 4096 --h 16 $v --check $cl --prof_type disabled
v-h16-s2-b32-t4096 kernel --b 32 --s 2 --h 16 --t 4096 $v --check $cl --prof_type disabled
v-fault-wrong-page kernel --b 4 --t 1024 --h 16 $v --inject-fault wrong-page --prof_type disabled
JOBS
}

# the check jobs at h=128 that every list starts with: the package default's check, then the
# variant at (4, 1024), 3 sequences of 1000 tokens, varlen B=8 and s=2
jobs_check_h128() {
    cat <<JOBS
v-check-pkg-default session check mla mla_decode_sm90
v-b4-t1024 kernel --b 4 --t 1024 $v --check $cl --prof_type disabled
v-b3-t1000 kernel --b 3 --t 1000 $v --check $cl --prof_type disabled
v-b8-t777-varlen kernel --b 8 --t 777 --varlen true $v --check $cl --prof_type disabled
v-b4-s2-t1000 kernel --b 4 --s 2 --t 1000 $v --check $cl --prof_type disabled
JOBS
}

# step 63 (two m-tiles' CTAs sharing each page by multicast TMA) takes an even number of
# m-tiles: h=128, s=2, 3 and 4 at h=128 (4, 6 and 8 m-tiles, causal; 3 and 4 added after the
# session-25 run), s=2 at h=64 and s=4 at h=32 (2 m-tiles whose rows are two or four query
# positions, causal limits differing between the CTAs of one cluster), s=4 at h=64 (4
# m-tiles, varlen); the same kinds of cases as jobs_check otherwise (tails, empty sequences,
# fp16, the work list's many-segment parts, the mbarrier phases over 256 pages), the table's
# uncut rows, and the wrong-page fault that must FAIL
jobs_check_multicast() {
    jobs_check_h128
    cat <<JOBS
v-h64-s2-t513 kernel --b 4 --s 2 --h 64 --t 513 $v --check $cl --prof_type disabled
v-h32-s4-t1000 kernel --b 4 --s 4 --h 32 --t 1000 $v --check $cl --prof_type disabled
v-h64-s4-varlen kernel --b 4 --s 4 --h 64 --t 300 --varlen true $v --check $cl --prof_type disabled
v-t1-empty kernel --b 2 --seqlens [1,0] $v --check $cl --prof_type disabled
v-tails kernel --b 5 --seqlens [1,63,64,65,127] $v --check $cl --prof_type disabled
v-fp16 kernel --b 4 --t 1000 --dtype float16 $v --check $cl --prof_type disabled
v-wl-b1-t16384 kernel --b 1 --t 16384 $v --check $cl --prof_type disabled
v-wl-b2-t16384 kernel --b 2 --t 16384 $v --check $cl --prof_type disabled
v-wl-b32-varlen kernel --b 32 --t 4096 --varlen true $v --check $cl --prof_type disabled
v-wl-empty kernel --b 6 --seqlens [0,3000,0,0,129,5000] $v --check $cl --prof_type disabled
v-wl-mixed kernel --b 64 --seqlens [1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300] $v --check $cl --prof_type disabled
v-mc-b128-t4096 kernel --b 128 --t 4096 $v --check $cl --prof_type disabled
v-mc-s2-b32-t4096 kernel --b 32 --s 2 --t 4096 $v --check $cl --prof_type disabled
v-mc-b32-t4096 kernel --b 32 --t 4096 $v --check $cl --prof_type disabled
v-mc-s3-t1000 kernel --b 4 --s 3 --t 1000 $v --check $cl --prof_type disabled
v-mc-s4-varlen kernel --b 4 --s 4 --t 777 --varlen true $v --check $cl --prof_type disabled
v-fault-wrong-page kernel --b 4 --t 1024 $v --inject-fault wrong-page --prof_type disabled
JOBS
}

jobs_table() {
    # WHERE (e.g. "h=16"): only the profile problems with those fields (alternate --where);
    # PROBLEMS (e.g. "b=128,t=4096,h=32 b=128,s=2,t=4096,h=16"): those problems instead of the
    # profile list (alternate --problem, one per space-separated item)
    local where=""
    for w in ${WHERE:-}; do where+=" --where $w"; done
    for w in ${PROBLEMS:-}; do where+=" --problem $w"; done
    echo "v-table alternate mla_decode mla_decode_sm90 mla_decode_sm90:${VARIANT// /,} ${EXTRA:-} ${PEERS:-} --cuda-graph --reps 30$where"
}

jobs_ncu() {
    if [[ " $VARIANT " =~ $q_on_n ]]; then
        # steps 40 and 42 take h=16 only here: the default path and the variant at the table's
        # h=16 row
        cat <<JOBS
v-ncu-default-h16-b128-t4096 kernel --b 128 --t 4096 --h 16 --prof_type ncu --ncu-set full
v-ncu-h16-b128-t4096 kernel --b 128 --t 4096 --h 16 $v --prof_type ncu --ncu-set full
JOBS
        return
    fi
    cat <<JOBS
v-ncu-default-b32-t4096 kernel --b 32 --t 4096 --prof_type ncu --ncu-set full
v-ncu-b32-t4096 kernel --b 32 --t 4096 $v --prof_type ncu --ncu-set full
v-ncu-b128-t16384 kernel --b 128 --t 16384 $v --prof_type ncu --ncu-set full
v-ncu-default-b32-varlen kernel --b 32 --t 4096 --varlen true --prof_type ncu --ncu-set full
v-ncu-b32-varlen kernel --b 32 --t 4096 --varlen true $v --prof_type ncu --ncu-set full
JOBS
}

source scripts/device/jobs.sh
run_steps "$TAG" 8 "${steps[@]}"
