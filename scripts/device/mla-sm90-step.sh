#!/bin/bash
# One optimisation step of mla_decode_sm90 on the H200 in ONE device call (after
# host-setup.sh and `source .device/bl/env.sh`): every job runs in one Python process (the DSL
# is imported once, each kernel compiled once), each job's output in its own log.
#   bash scripts/device/mla-sm90-step.sh STEP JOBFILE
# JOBFILE lines: `NAME kernel ARGS...` (python -m cute_mla mla_decode_sm90 ARGS) or
# `NAME session ARGS...` (python -m kernelplan ARGS); blank lines and # comments skipped.
# Logs: $OUT/logs/STEP/NAME.log + summary.txt; records: $OUT/results; all in $OUT/STEP.tgz.
set -uo pipefail
: "${OUT:?set OUT}"
step=$1; jobs=$2
export CUTLASS_DIR="${CUTLASS_DIR:-/root/stage/cutlass/CuTeDSL}"
export KERNELPLAN_RESULTS="$OUT/results"
mkdir -p "$OUT/logs/$step" "$KERNELPLAN_RESULTS"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv \
    > "$OUT/logs/$step/nvidia-smi.csv" 2>&1
python3 - "$OUT/logs/$step" "$jobs" <<'PY'
import os, shlex, sys, time, traceback
logdir, jobfile = sys.argv[1], sys.argv[2]
from kernelplan.cli import package_main
from kernelplan.sessions import main as session_main
summary = open(os.path.join(logdir, "summary.txt"), "a")
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
        rc = (package_main("mla", ["mla_decode_sm90", *args]) if kind == "kernel"
              else session_main(args))
    except SystemExit as e:
        rc = e.code
    except BaseException:
        traceback.print_exc(); rc = "exc"
    finally:
        sys.stdout.flush(); sys.stderr.flush()
        os.dup2(so, 1); os.dup2(se, 2); os.close(fd); os.close(so); os.close(se)
    msg = f"{name}: rc={rc} {time.time() - t0:.1f}s"
    print(msg, flush=True); summary.write(msg + "\n"); summary.flush()
    tail = [l for l in open(os.path.join(logdir, name + ".log")).read().splitlines()
            if "|" in l or "PASS" in l or "FAIL" in l or "rror" in l][-6:]
    for l in tail:
        print("   ", l[:300], flush=True)
PY
tar czf "$OUT/$step.tgz" -C "$OUT" logs results 2>/dev/null; echo "bundle: $(du -h "$OUT/$step.tgz" | cut -f1)"
