#!/bin/bash
# The FP8 (e4m3) latent KV cache of mla_decode_sm90 (issue 11, "Beyond: FP8 KV cache"; the
# cp.async path dequantises each page on chip into the 16-bit SMEM stages) on the H200. NOT yet
# run: written and dry-run on a CPU host (DRYRUN=1 below). One device call per step (each well
# under 10 minutes), after host-setup.sh and `source .device/bl/env.sh` (as for
# mla-sm90-step3.sh):
#
#   OUT=$OUT bash scripts/device/mla-sm90-fp8.sh check   # -> $OUT/fp8-check.tgz
#   OUT=$OUT bash scripts/device/mla-sm90-fp8.sh table   # -> $OUT/fp8-table.tgz
#   OUT=$OUT bash scripts/device/mla-sm90-fp8.sh ncu     # -> $OUT/fp8-ncu.tgz
#
# check: the package check (every check problem of the workload the kernel takes: the 16-bit
#   ones as a regression, and the two FP8 ones), then the FP8 check problems on their own
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
# ncu: Nsight Compute at (128, 4096): bf16 vs FP8 per_token at h=128 (does the dequantisation
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

jobs_check() {
    cat <<JOBS
f8-check-pkg session check mla mla_decode_sm90
f8-tok-b8-t777-varlen kernel --b 8 --t 777 --varlen true $f8 $ck
f8-blk-b4-s2-t1000-h64 kernel --b 4 --s 2 --t 1000 --h 64 $blk $ck
f8-tok-tails kernel --b 5 --seqlens [1,63,64,65,127] $f8 $ck
f8-blk-tails kernel --b 5 --seqlens [1,63,64,65,127] $blk $ck
f8-blk32-t1000 kernel --b 4 --t 1000 $blk --kv_block 32 $ck
f8-tok-fp16 kernel --b 4 --t 1000 --dtype float16 $f8 $ck
f8-blk-h16-varlen kernel --b 4 --t 300 --h 16 --varlen true $blk $ck
f8-tok-s4-h32 kernel --b 4 --s 4 --h 32 --t 1000 $f8 $ck
f8-tok-nosplit-t16384 kernel --b 2 --t 16384 $f8 --config splits=1 $ck
f8-blk-splits64 kernel --b 2 --t 8192 $blk --config splits=64 $ck
f8-tok-t1-empty kernel --b 2 --seqlens [1,0] $f8 $ck
f8-tok-fault-wrong-page kernel --b 4 --t 1024 $f8 --inject-fault wrong-page --prof_type disabled
f8-blk-fault-perturb kernel --b 4 --t 1000 --h 64 $blk --inject-fault perturb --prof_type disabled
f8-tma-refused kernel --b 4 --t 1024 $f8 --config loads=tma $ck
JOBS
}

jobs_table() {
    echo "f8-table fp8alt --shape 128,4096,128 --shape 128,4096,64 --peers ${PEERS-flashinfer_mla} --cuda-graph --reps 30"
}

jobs_ncu() {
    cat <<JOBS
f8-ncu-bf16-b128-t4096 kernel --b 128 --t 4096 --prof_type ncu --ncu-set full
f8-ncu-tok-b128-t4096 kernel --b 128 --t 4096 $f8 --prof_type ncu --ncu-set full
f8-ncu-tok-b128-t4096-h64 kernel --b 128 --t 4096 --h 64 $f8 --prof_type ncu --ncu-set full
JOBS
}

run_jobs() {  # run_jobs STEP: the jobs of STEP in ONE Python process (the DSL imported once)
    local step=$1 jobfile logdir
    jobfile=$(mktemp)
    "jobs_$step" > "$jobfile"
    if [ "${DRYRUN:-0}" = 1 ]; then
        logdir=$(mktemp -d)
    else
        : "${OUT:?set OUT to a folder for logs and records}"
        export CUTLASS_DIR="${CUTLASS_DIR:-/root/stage/cutlass/CuTeDSL}"
        export KERNELPLAN_RESULTS="$OUT/results"
        logdir="$OUT/logs/fp8-$step"
        mkdir -p "$logdir" "$KERNELPLAN_RESULTS"
        nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw \
            --format=csv > "$logdir/nvidia-smi-start.csv" 2>&1
    fi
    "$py" - "$logdir" "$jobfile" "${DRYRUN:-0}" <<'PY'
import os, shlex, sys, time, traceback
logdir, jobfile, dry = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
from kernelplan.cli import package_main, parse
from kernelplan.sessions import main as session_main
from kernelplan import alternate
from kernelplan.registry import load_plan_class
from kernelplan import ShapeError

sys.path.insert(0, os.path.join("scripts", "device"))
import mla_sm90_fp8_alt


def dry_kernel(args):
    """What the device would build for a kernel job: problem, config, supports()."""
    plan = load_plan_class("mla", "mla_decode_sm90")()
    try:
        problem, items, _run = parse(plan, args)
        cfg = plan.config(problem, items)
        plan.supports(problem)
        plan.supports_config(problem, cfg)
    except ShapeError as e:  # what the CLI answers with rc 2
        print(f"error: {e}")
        return 2
    print(f"ok {problem.label()} {cfg.to_dict()}")
    return 0


def dry_alternate(args):
    """The table's specs parsed and their configs checked; stops at the GPU check (rc 2 with
    the one line 'needs a CUDA GPU' is the expected answer on a CPU host: see below)."""
    alternate.devmod.current_device = lambda: None
    return alternate.main(args + ["--no-record"])


summary = open(os.path.join(logdir, "summary.txt"), "a")
bad = 0
for line in open(jobfile):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    name, kind, *args = shlex.split(line)
    t0 = time.time()
    sys.stdout.flush(); sys.stderr.flush()
    fd = os.open(os.path.join(logdir, name + ".log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    so, se = os.dup(1), os.dup(2)
    os.dup2(fd, 1); os.dup2(fd, 2)
    try:
        print("$", kind, " ".join(args), flush=True)
        if dry:
            rc = (dry_kernel(args) if kind == "kernel"
                  else dry_alternate(args) if kind == "alternate"
                  else mla_sm90_fp8_alt.main(args + ["--dry"]) if kind == "fp8alt" else 0)
        elif kind == "fp8alt":
            rc = mla_sm90_fp8_alt.main(args)
        elif kind == "kernel":
            rc = package_main("mla", ["mla_decode_sm90", *args])
        elif kind == "alternate":
            rc = alternate.main(args)
        else:
            rc = session_main(args)
    except SystemExit as e:
        rc = e.code
    except BaseException:
        traceback.print_exc(); rc = "exc"
    finally:
        sys.stdout.flush(); sys.stderr.flush()
        os.dup2(so, 1); os.dup2(se, 2); os.close(fd); os.close(so); os.close(se)
    if dry and kind == "alternate":  # any other refusal (a bad spec) is a failure
        text = open(os.path.join(logdir, name + ".log")).read()
        rc = 0 if rc == 2 and "needs a CUDA GPU; none is visible" in text else 1
    want = 2 if name.endswith("-refused") else 1 if ("--inject-fault" in args and not dry) else 0
    verdict = "as expected" if rc == want else f"UNEXPECTED (want rc={want})"
    bad += rc != want
    msg = f"{name}: rc={rc} {verdict} {time.time() - t0:.1f}s"
    print(msg, flush=True); summary.write(msg + "\n"); summary.flush()
    tail = [l for l in open(os.path.join(logdir, name + ".log")).read().splitlines()
            if "|" in l or "PASS" in l or "FAIL" in l or "rror" in l or l.startswith("ok ")][-10:]
    for l in tail:
        print("   ", l[:300], flush=True)
print(f"{bad} job(s) not as expected", flush=True)
summary.write(f"{bad} job(s) not as expected\n")
sys.exit(1 if bad else 0)
PY
    local rc=$?
    if [ "${DRYRUN:-0}" != 1 ]; then
        nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv \
            > "$logdir/nvidia-smi-end.csv" 2>&1
        tar czf "$OUT/fp8-$step.tgz" -C "$OUT" "logs/fp8-$step" results 2>/dev/null
        echo "bundle: $OUT/fp8-$step.tgz ($(du -h "$OUT/fp8-$step.tgz" | cut -f1))"
    fi
    return $rc
}

status=0
for s in "${steps[@]}"; do case $s in
check | table | ncu) run_jobs "$s" || status=1 ;;
*) echo "unknown step $s (check, table, ncu)" >&2; exit 2 ;;
esac; done
exit $status
