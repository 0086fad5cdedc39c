#!/bin/bash
# The FP8 (e4m3) latent KV cache of mla_decode_sm90 (issue 11, "Beyond: FP8 KV cache"; the
# cp.async path and the seesaw producer warpgroup dequantise each page on chip into the 16-bit
# SMEM stages) on the H200: run in sessions 3 (check, table) and 6 (check14, table14, ncu14;
# results/logs/2026-12-01-h200-session6/NOTE.md). One device call per step (each well
# under 10 minutes), after host-setup.sh and `source .device/bl/env.sh` (as for
# mla-sm90-step3.sh):
#
#   OUT=$OUT bash scripts/device/mla-sm90-fp8.sh check   # -> $OUT/fp8-check.tgz
#   OUT=$OUT bash scripts/device/mla-sm90-fp8.sh table   # -> $OUT/fp8-table.tgz
#   OUT=$OUT bash scripts/device/mla-sm90-fp8.sh ncu     # -> $OUT/fp8-ncu.tgz
#   OUT=$OUT bash scripts/device/mla-sm90-fp8.sh check14 table14 ncu14   # the seesaw FP8 build
#       (check14, ncu14: step FP8_STEP, default 22; table14: the entries of FORMATS, default
#       fp8 = step 22 against the lockstep build: see mla_sm90_fp8_alt.py's FORMAT_SETS)
#   FP8_STEP=15 FORMATS=step15 OUT=$OUT bash ... check14 table14 ncu14   # an older step
#
# check: the package check (every check problem of the workload the kernel takes: the 16-bit
#   ones as a regression, and the FP8 ones on the default build: seesaw step 22 at h=128 and
#   h=64, step 46 at h=16 since session 18), then the
#   lockstep FP8 build (--config schedule=lockstep, every job below): the FP8 check problems
#   (per_token: B=8 T=777 varlen h=128; per_block 128: B=4 s=2 T=1000 h=64), tails of
#   1/63/64/65/127 tokens for both granularities (NaN values and NaN scales past the end),
#   kv_block 32 (a scale per 16-value vector), fp16, h=16 varlen, s=4 causal, the unsplit path
#   on a 256-page sequence, 64 splits of 2 pages, an empty sequence; planted faults that must
#   FAIL (rc=1): a wrong page (per_token) and a perturbed output (per_block); and the TMA path
#   with the FP8 cache, which must be refused in one line (rc=2).
# table: mla_decode_sm90 on the bf16 cache vs on the FP8 cache (per_token, per_block) vs
#   PEERS (default flashinfer_mla, on the bf16 cache: FlashInfer's FP8 MLA needs an FP8 rope
#   cache, another problem) alternated in one run at h=128 and h=64, (B, T) = (128, 4096)
#   (scripts/device/mla_sm90_fp8_alt.py; each entry checked first; --cuda-graph --reps 30).
# ncu: Nsight Compute at (128, 4096): bf16 vs FP8 per_token (lockstep) at h=128 (does the dequantisation
#   compete with the MMAs?) and FP8 per_token at h=64 (DRAM bytes and throughput).
#
# Logs: $OUT/logs/fp8-<step>/<job>.log + summary.txt; records: $OUT/results; both in the tgz.
# Here, after the call: unpack, `cp -rn results/. results/` (never overwrite a record), logs
# under results/logs/<date>-h200-mla-sm90-fp8/. Clocks are never changed.
#
# DRYRUN=1 (any machine, no GPU): parse every job's flags and config as the device would
# (problem, config, supports; a refusal job must be refused), and the table's entries; nothing
# is compiled or run. PY overrides the interpreter (default python3).
set -uo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
steps=("$@"); [ ${#steps[@]} -eq 0 ] && { sed -n '2,/^set -uo/p' "$0" | grep '^#'; exit 2; }
py=${PY:-python3}
f8="--kv_dtype float8_e4m3fn"
blk="--kv_dtype float8_e4m3fn --kv_scale per_block"
ck="--check --prof_type disabled"
ls="--config schedule=lockstep"

jobs_check() {
    cat <<JOBS
f8-check-pkg session check mla mla_decode_sm90
f8-tok-b8-t777-varlen kernel --b 8 --t 777 --varlen true $f8 $ls $ck
f8-blk-b4-s2-t1000-h64 kernel --b 4 --s 2 --t 1000 --h 64 $blk $ls $ck
f8-tok-tails kernel --b 5 --seqlens [1,63,64,65,127] $f8 $ls $ck
f8-blk-tails kernel --b 5 --seqlens [1,63,64,65,127] $blk $ls $ck
f8-blk32-t1000 kernel --b 4 --t 1000 $blk --kv_block 32 $ls $ck
f8-tok-fp16 kernel --b 4 --t 1000 --dtype float16 $f8 $ls $ck
f8-blk-h16-varlen kernel --b 4 --t 300 --h 16 --varlen true $blk $ls $ck
f8-tok-s4-h32 kernel --b 4 --s 4 --h 32 --t 1000 $f8 $ls $ck
f8-tok-nosplit-t16384 kernel --b 2 --t 16384 $f8 --config schedule=lockstep splits=1 $ck
f8-blk-splits64 kernel --b 2 --t 8192 $blk --config schedule=lockstep splits=64 $ck
f8-tok-t1-empty kernel --b 2 --seqlens [1,0] $f8 $ls $ck
f8-tok-fault-wrong-page kernel --b 4 --t 1024 $f8 --inject-fault wrong-page $ls --prof_type disabled
f8-blk-fault-perturb kernel --b 4 --t 1000 --h 64 $blk --inject-fault perturb $ls --prof_type disabled
f8-tma-refused kernel --b 4 --t 1024 $f8 --config schedule=lockstep loads=tma $ck
JOBS
}

# the seesaw FP8 build (steps 14-24: a dequantising producer warpgroup; FP8_STEP, default 22):
# the same formats, tails, dtypes and shapes as `check`, 3 launches per check (state kept
# between launches is checked), the work list's cases (one sequence in many pieces, empty
# sequences between long ones, 64 short ones, the table's settings), the planted faults, and
# the refusals (another seesaw step, a split count; step 14 on a 16-bit cache)
jobs_check14() {
    local v="--config schedule=seesaw step=${FP8_STEP:-22}"
    local c="--check --check-launches 3 --prof_type disabled"
    cat <<JOBS
s14-tok-b8-t777-varlen kernel --b 8 --t 777 --varlen true $f8 $v $c
s14-blk-b4-s2-t1000-h64 kernel --b 4 --s 2 --t 1000 --h 64 $blk $v $c
s14-tok-tails kernel --b 5 --seqlens [1,63,64,65,127] $f8 $v $c
s14-blk-tails kernel --b 5 --seqlens [1,63,64,65,127] $blk $v $c
s14-blk32-t1000 kernel --b 4 --t 1000 $blk --kv_block 32 $v $c
s14-blk16-t1000 kernel --b 4 --t 1000 $blk --kv_block 16 $v $c
s14-tok-fp16 kernel --b 4 --t 1000 --dtype float16 $f8 $v $c
s14-blk-h16-varlen kernel --b 4 --t 300 --h 16 --varlen true $blk $v $c
s14-tok-s4-h32 kernel --b 4 --s 4 --h 32 --t 1000 $f8 $v $c
s14-tok-t1-empty kernel --b 2 --seqlens [1,0] $f8 $v $c
s14-tok-b1-t16384 kernel --b 1 --t 16384 $f8 $v $c
s14-blk-empty kernel --b 6 --seqlens [0,3000,0,0,129,5000] $blk $v $c
s14-tok-mixed kernel --b 16 --seqlens [1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300] $f8 $v $c
s14-tok-b32-t4096 kernel --b 32 --t 4096 $f8 $v $c
s14-tok-b32-varlen kernel --b 32 --t 4096 --varlen true $f8 $v $c
s14-blk-b128-t4096 kernel --b 128 --t 4096 $blk $v $c
s14-tok-b128-t4096-h64 kernel --b 128 --t 4096 --h 64 $f8 $v $c
s14-tok-fault-wrong-page kernel --b 4 --t 1024 $f8 $v --inject-fault wrong-page --prof_type disabled
s14-blk-fault-perturb kernel --b 4 --t 1000 --h 64 $blk $v --inject-fault perturb --prof_type disabled
s14-step9-refused kernel --b 4 --t 1024 $f8 --config schedule=seesaw step=9 $c
s14-splits-refused kernel --b 4 --t 1024 $f8 --config schedule=seesaw splits=2 $c
s14-bf16-refused kernel --b 4 --t 1024 --config step=14 $c
JOBS
}

# the seesaw FP8 builds timed (FORMATS, default fp8: ours on bf16 (step 11), FP8 lockstep and
# step 22, per_token and per_block) with PEERS on bf16, alternated at h=128 (128, 4096) and
# (32, 4096) and h=64 (128, 4096)
jobs_table14() {
    echo "s14-table fp8alt --formats ${FORMATS:-fp8} --shape 128,4096,128 --shape 32,4096,128 --shape 128,4096,64 --peers '${PEERS-flashinfer_mla}' --cuda-graph --reps 30"
}

# the seesaw FP8 build (FP8_STEP, default 22) under Nsight Compute at (128, 4096): h=128, h=64
jobs_ncu14() {
    cat <<JOBS
s14-ncu-tok-b128-t4096 kernel --b 128 --t 4096 $f8 --config schedule=seesaw step=${FP8_STEP:-22} --prof_type ncu --ncu-set full
s14-ncu-tok-b128-t4096-h64 kernel --b 128 --t 4096 --h 64 $f8 --config schedule=seesaw step=${FP8_STEP:-22} --prof_type ncu --ncu-set full
JOBS
}

# steps 43 and 44 (q_on_n_fp8.py: s*h = 16, the e4m3 page dequantised into the WGMMA register
# A operand; FP8_STEP, default 43): h=16 shapes of both granularities (kv_block 128 and 256),
# tails of 1/63/64/65/127 tokens (NaN values and NaN scales past the end), fp16, the work
# list's cases (one sequence in 264 pieces, empty sequences between long ones, 64 short ones,
# varlen B=32, the table's (128, 4096)), 3 launches per check, the planted faults, and the
# refusals (h=64, kv_block 32, the 16-bit cache)
jobs_check43() {
    local v="--config step=${FP8_STEP:-43}"
    local c="--check --check-launches 3 --prof_type disabled"
    local blk=$blk kb256="--kv_block 256"
    # steps 45-47 fold the scale into P (and S^T): per_token only (their per_block jobs run
    # per_token, and per_block must be refused)
    if [ "${FP8_STEP:-43}" -ge 45 ]; then
        blk=$f8 kb256=""
        echo "q8-s${FP8_STEP}-per-block-refused kernel --b 4 --t 1024 --h 16 --kv_dtype float8_e4m3fn --kv_scale per_block $v $c"
    fi
    cat <<JOBS
q8-tok-h16-b4-t1024 kernel --b 4 --t 1024 --h 16 $f8 $v $c
q8-blk-h16-b3-t1000 kernel --b 3 --t 1000 --h 16 $blk $v $c
q8-tok-h16-b8-t777-varlen kernel --b 8 --t 777 --h 16 --varlen true $f8 $v $c
q8-tok-h16-tails kernel --b 5 --h 16 --seqlens [1,63,64,65,127] $f8 $v $c
q8-blk-h16-tails kernel --b 5 --h 16 --seqlens [1,63,64,65,127] $blk $v $c
q8-blk256-h16 kernel --b 4 --t 1000 --h 16 $blk $kb256 $v $c
q8-tok-h16-fp16 kernel --b 4 --t 1000 --h 16 --dtype float16 $f8 $v $c
q8-tok-h16-t1-empty kernel --b 2 --h 16 --seqlens [1,0] $f8 $v $c
q8-tok-h16-b1-t16384 kernel --b 1 --t 16384 --h 16 $f8 $v $c
q8-blk-h16-empty kernel --b 6 --h 16 --seqlens [0,3000,0,0,129,5000] $blk $v $c
q8-tok-h16-mixed kernel --b 16 --h 16 --seqlens [1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300] $f8 $v $c
q8-tok-h16-b32-varlen kernel --b 32 --t 4096 --h 16 --varlen true $f8 $v $c
q8-tok-h16-b128-t4096 kernel --b 128 --t 4096 --h 16 $f8 $v $c
q8-blk-h16-b128-t4096 kernel --b 128 --t 4096 --h 16 $blk $v $c
q8-tok-fault-wrong-page kernel --b 4 --t 1024 --h 16 $f8 $v --inject-fault wrong-page --prof_type disabled
q8-blk-fault-perturb kernel --b 4 --t 1000 --h 16 $blk $v --inject-fault perturb --prof_type disabled
q8-h64-refused kernel --b 4 --t 1024 --h 64 $f8 $v $c
q8-blk32-refused kernel --b 4 --t 1024 --h 16 $blk --kv_block 32 $v $c
q8-bf16-refused kernel --b 4 --t 1024 --h 16 $v $c
JOBS
}

# step 49 (s*h = 64: two warpgroups on each page, the e4m3 page dequantised into the register
# A operand; per_token only; FP8_STEP, default 49: 49 to 52) checked: h=64 shapes, s=4 h=16 and s=2 h=32 causal (s*h = 64),
# tails of 1/63/64/65/127 tokens (NaN values and NaN scales past the end), fp16, the work
# list's cases (one sequence in 132 pieces, empty sequences between long ones, short ones,
# varlen B=32, the table's (128, 4096)), 3 launches per check, the planted faults, and the
# refusals (h=16, per_block, the 16-bit cache)
jobs_check49() {
    local v="--config step=${FP8_STEP:-49}"
    local c="--check --check-launches 3 --prof_type disabled"
    cat <<JOBS
q49-h64-b4-t1024 kernel --b 4 --t 1024 --h 64 $f8 $v $c
q49-h64-b8-t777-varlen kernel --b 8 --t 777 --h 64 --varlen true $f8 $v $c
q49-h64-tails kernel --b 5 --h 64 --seqlens [1,63,64,65,127] $f8 $v $c
q49-h64-fp16 kernel --b 4 --t 1000 --h 64 --dtype float16 $f8 $v $c
q49-h64-t1-empty kernel --b 2 --h 64 --seqlens [1,0] $f8 $v $c
q49-h64-b1-t16384 kernel --b 1 --t 16384 --h 64 $f8 $v $c
q49-h64-empty kernel --b 6 --h 64 --seqlens [0,3000,0,0,129,5000] $f8 $v $c
q49-h64-mixed kernel --b 16 --h 64 --seqlens [1,64,65,129,0,200,5,300,1,64,65,129,0,200,5,300] $f8 $v $c
q49-s4-h16-causal kernel --b 4 --s 4 --t 1000 --h 16 --causal true $f8 $v $c
q49-s2-h32-causal kernel --b 4 --s 2 --t 777 --h 32 --causal true $f8 $v $c
q49-h64-b32-varlen kernel --b 32 --t 4096 --h 64 --varlen true $f8 $v $c
q49-h64-b128-t4096 kernel --b 128 --t 4096 --h 64 $f8 $v $c
q49-fault-wrong-page kernel --b 4 --t 1024 --h 64 $f8 $v --inject-fault wrong-page --prof_type disabled
q49-fault-perturb kernel --b 4 --t 1000 --h 64 $f8 $v --inject-fault perturb --prof_type disabled
q49-h16-refused kernel --b 4 --t 1024 --h 16 $f8 $v $c
q49-per-block-refused kernel --b 4 --t 1024 --h 64 --kv_dtype float8_e4m3fn --kv_scale per_block $v $c
q49-bf16-refused kernel --b 4 --t 1024 --h 64 $v $c
JOBS
}

# step 49 timed (FORMATS, default h64: ours on bf16 (step 11), the FP8 default (step 22) and
# step 49) with PEERS on bf16, alternated at h=64, (B, T) = (128, 4096) and (32, 4096), or at
# SHAPES (B,T pairs, space-separated: "64,4096 128,8192")
jobs_table49() {
    local shapes="" bt
    for bt in ${SHAPES:-128,4096 32,4096}; do shapes="$shapes --shape $bt,64"; done
    echo "q49-table fp8alt --formats ${FORMATS:-h64}$shapes --peers '${PEERS-flashinfer_mla}' --cuda-graph --reps 30"
}

# step FP8_STEP (default 49), the FP8 default (22) and the 16-bit default under Nsight Compute
# at h=64 (128, 4096); NCU_ONLY=1: the first only
jobs_ncu49() {
    local s=${FP8_STEP:-49}
    echo "q49-ncu-s$s-h64-b128-t4096 kernel --b 128 --t 4096 --h 64 $f8 --config step=$s --prof_type ncu --ncu-set full"
    [ -n "${NCU_ONLY:-}" ] && return
    cat <<JOBS
q49-ncu-s22-h64-b128-t4096 kernel --b 128 --t 4096 --h 64 $f8 --prof_type ncu --ncu-set full
q49-ncu-bf16-h64-b128-t4096 kernel --b 128 --t 4096 --h 64 --prof_type ncu --ncu-set full
JOBS
}

# steps 43 and 44 timed (FORMATS, default step43: ours on bf16 (step 42 at h=16), the FP8
# default (step 22), steps 43 and 44 at both granularities) with PEERS on bf16, alternated at
# h=16, (B, T) = (128, 4096) and (32, 4096)
jobs_table43() {
    echo "q8-table fp8alt --formats ${FORMATS:-step43} --shape 128,4096,16 --shape 32,4096,16 --peers '${PEERS-flashinfer_mla}' --cuda-graph --reps 30"
}

# steps 43 and 44 and the 16-bit default (step 42) under Nsight Compute at h=16 (128, 4096)
jobs_ncu43() {
    cat <<JOBS
q8-ncu-bf16-h16-b128-t4096 kernel --b 128 --t 4096 --h 16 --prof_type ncu --ncu-set full
q8-ncu-s43-h16-b128-t4096 kernel --b 128 --t 4096 --h 16 $f8 --config step=43 --prof_type ncu --ncu-set full
q8-ncu-s44-h16-b128-t4096 kernel --b 128 --t 4096 --h 16 $f8 --config step=44 --prof_type ncu --ncu-set full
JOBS
}

# steps 45 and 46 under Nsight Compute at h=16 (128, 4096), beside ncu43's rows
jobs_ncu45() {
    echo "q8-ncu-s45-h16-b128-t4096 kernel --b 128 --t 4096 --h 16 $f8 --config step=45 --prof_type ncu --ncu-set full"
    echo "q8-ncu-s46-h16-b128-t4096 kernel --b 128 --t 4096 --h 16 $f8 --config step=46 --prof_type ncu --ncu-set full"
}

# step 47 and the 16-bit default under Nsight Compute at h=16 (128, 4096)
jobs_ncu47() {
    echo "q8-ncu-s47-h16-b128-t4096 kernel --b 128 --t 4096 --h 16 $f8 --config step=47 --prof_type ncu --ncu-set full"
    echo "q8-ncu-bf16-h16-b128-t4096 kernel --b 128 --t 4096 --h 16 --prof_type ncu --ncu-set full"
}

# steps 48 and 47 and the 16-bit default under Nsight Compute at h=16 (128, 4096)
jobs_ncu48() {
    echo "q8-ncu-s48-h16-b128-t4096 kernel --b 128 --t 4096 --h 16 $f8 --config step=48 --prof_type ncu --ncu-set full"
    jobs_ncu47
}

# step FP8_STEP (default 50) and the FP8 default (22) under Nsight Compute at h=64 (32, 4096),
# where the two-warpgroup builds trail step 22 (session 19)
jobs_ncu49s() {
    local s=${FP8_STEP:-50}
    echo "q49s-ncu-s$s-h64-b32-t4096 kernel --b 32 --t 4096 --h 64 $f8 --config step=$s --prof_type ncu --ncu-set full"
    echo "q49s-ncu-s22-h64-b32-t4096 kernel --b 32 --t 4096 --h 64 $f8 --prof_type ncu --ncu-set full"
}

# the FP8 default at s*h = 64 (no --config): step 57 at h=64 s=1 from 128 sequences on (fixed,
# varlen with empty sequences), step 22 at 127 and at s=4 h=16 causal (57 there until session
# 20's last commit, when the default left s > 1 untimed: this job's run in window 4 built 57)
jobs_checkdef() {
    local c="--check --check-launches 3 --prof_type disabled"
    cat <<JOBS
fdef-h64-b128-t4096 kernel --b 128 --t 4096 --h 64 $f8 $c
fdef-h64-b128-varlen kernel --b 128 --t 1000 --h 64 --varlen true $f8 $c
fdef-s4-h16-b128-causal kernel --b 128 --s 4 --t 500 --h 16 --causal true $f8 $c
fdef-h64-b127 kernel --b 127 --t 500 --h 64 $f8 $c
JOBS
}

# the defaults (format set "defaults": bf16, FP8 per_token and per_block, no --config) with
# PEERS on bf16, alternated at h=128, h=64 and h=16, the issue's (B, T) = (128, 4096), and at
# h=64 (32, 4096)
jobs_tabledef() {
    echo "fdef-table fp8alt --formats defaults --shape 128,4096,128 --shape 128,4096,64 --shape 32,4096,64 --shape 128,4096,16 --peers '${PEERS-flashinfer_mla}' --cuda-graph --reps 30"
}

jobs_table() {
    echo "f8-table fp8alt --shape 128,4096,128 --shape 128,4096,64 --peers '${PEERS-flashinfer_mla}' --cuda-graph --reps 30"
}

jobs_ncu() {
    cat <<JOBS
f8-ncu-bf16-b128-t4096 kernel --b 128 --t 4096 --prof_type ncu --ncu-set full
f8-ncu-tok-b128-t4096 kernel --b 128 --t 4096 $f8 $ls --prof_type ncu --ncu-set full
f8-ncu-tok-b128-t4096-h64 kernel --b 128 --t 4096 --h 64 $f8 $ls --prof_type ncu --ncu-set full
JOBS
}

source scripts/device/jobs.sh
run_steps "${TAG:-fp8}" 10 "${steps[@]}"
