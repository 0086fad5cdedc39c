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
#   tokens, s = 4, fp16, the unsplit path (`splits=1`) on a 256-page sequence (the mbarrier
#   phases wrap 128 times in one CTA), 64 splits of 2 pages, and a planted wrong-page fault
#   that must FAIL (rc=1; every other job rc=0).
# table: the default path and the variant alternated in one run at the workload's profile
#   problems (python -m kernelplan.alternate ... mla_decode_sm90 mla_decode_sm90:$VARIANT
#   --cuda-graph --reps 30; each checked first), plus EXTRA (more implementation specs, e.g.
#   mla_decode_sm90:loads=tma) and PEERS="flashinfer_mla" (peers already staged on the host:
#   see mla-table.sh for their bundles).
# ncu: Nsight Compute of the default path and the variant at (32, 4096), and of the variant at
#   (128, 16384).
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

jobs_check() {
    cat <<JOBS
v-check-pkg-default session check mla mla_decode_sm90
v-b4-t1024 kernel --b 4 --t 1024 $v --check --prof_type disabled
v-b3-t1000 kernel --b 3 --t 1000 $v --check --prof_type disabled
v-b8-t777-varlen kernel --b 8 --t 777 --varlen true $v --check --prof_type disabled
v-b4-s2-t1000 kernel --b 4 --s 2 --t 1000 $v --check --prof_type disabled
v-h64-t513 kernel --b 4 --t 513 --h 64 $v --check --prof_type disabled
v-h16-t300-varlen kernel --b 4 --t 300 --h 16 --varlen true $v --check --prof_type disabled
v-h16-s3 kernel --b 4 --t 1000 --h 16 --s 3 $v --check --prof_type disabled
v-h64-varlen kernel --b 8 --t 777 --h 64 --varlen true $v --check --prof_type disabled
v-t1-empty kernel --b 2 --seqlens [1,0] $v --check --prof_type disabled
v-tails kernel --b 5 --seqlens [1,63,64,65,127] $v --check --prof_type disabled
v-s4-h32 kernel --b 4 --s 4 --h 32 --t 1000 $v --check --prof_type disabled
v-fp16 kernel --b 4 --t 1000 --dtype float16 $v --check --prof_type disabled
v-nosplit-varlen kernel --b 8 --t 777 --varlen true --config $VARIANT splits=1 --check --prof_type disabled
v-nosplit-t16384 kernel --b 2 --t 16384 --config $VARIANT splits=1 --check --prof_type disabled
v-splits64 kernel --b 2 --t 8192 --config $VARIANT splits=64 --check --prof_type disabled
v-fault-wrong-page kernel --b 4 --t 1024 $v --inject-fault wrong-page --prof_type disabled
JOBS
}

jobs_table() {
    echo "v-table alternate mla_decode mla_decode_sm90 mla_decode_sm90:${VARIANT// /,} ${EXTRA:-} ${PEERS:-} --cuda-graph --reps 30"
}

jobs_ncu() {
    cat <<JOBS
v-ncu-default-b32-t4096 kernel --b 32 --t 4096 --prof_type ncu --ncu-set full
v-ncu-b32-t4096 kernel --b 32 --t 4096 $v --prof_type ncu --ncu-set full
v-ncu-b128-t16384 kernel --b 128 --t 16384 $v --prof_type ncu --ncu-set full
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
        logdir="$OUT/logs/$TAG-$step"
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


def dry_kernel(args):
    """What the device would build for a kernel job: problem, config, supports()."""
    plan = load_plan_class("mla", "mla_decode_sm90")()
    problem, items, _run = parse(plan, args)
    cfg = plan.config(problem, items)
    plan.supports(problem)
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
                  else dry_alternate(args) if kind == "alternate" else 0)
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
    want = 1 if ("--inject-fault" in args and not dry) else 0
    verdict = "as expected" if rc == want else f"UNEXPECTED (want rc={want})"
    bad += rc != want
    msg = f"{name}: rc={rc} {verdict} {time.time() - t0:.1f}s"
    print(msg, flush=True); summary.write(msg + "\n"); summary.flush()
    tail = [l for l in open(os.path.join(logdir, name + ".log")).read().splitlines()
            if "|" in l or "PASS" in l or "FAIL" in l or "rror" in l or l.startswith("ok ")][-8:]
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
        tar czf "$OUT/$TAG-$step.tgz" -C "$OUT" "logs/$TAG-$step" results 2>/dev/null
        echo "bundle: $OUT/$TAG-$step.tgz ($(du -h "$OUT/$TAG-$step.tgz" | cut -f1))"
    fi
    return $rc
}

status=0
for s in "${steps[@]}"; do case $s in
check | table | ncu) run_jobs "$s" || status=1 ;;
*) echo "unknown step $s (check, table, ncu)" >&2; exit 2 ;;
esac; done
exit $status
