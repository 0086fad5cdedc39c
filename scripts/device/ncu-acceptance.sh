#!/bin/bash
# Issue 4's acceptance run on the H200 (after host-setup.sh and `source .device/b/env.sh`):
#   - the ncu comparison of hopper_dense_gemm (its best autotuned config, read from the committed
#     records) with torch_matmul at 8192^3 fp16 (records + markdown);
#   - timing fidelity: hopper_dense_gemm, hopper_dense_gemm_persistent and torch_matmul at 4096^3
#     and 8192^3 fp16, each under ncu with the harness timing paired in the same process
#     (--ncu-pair), plus a second harness run for the run-to-run spread; clocks as found for both
#     (ncu --clock-control none; nothing here changes a clock);
#   - planted timing traps (an empty CUDA graph, uncompiled @cute.jit calls) and their rejection;
#   - ncu bad input: a kernel filter matching nothing, ncu missing, a report that cannot be read.
# Logs go to $OUT/logs, records to $OUT/results; both come back as $OUT/bundle.tgz and the ncu
# reports as $OUT/reports.tgz (split into 15 MB parts if larger). Optional steps are skipped,
# with a line, when they would end past the time budget (BUDGET_S, default 420 s).
#   bash scripts/device/ncu-acceptance.sh
set -uo pipefail
: "${OUT:?set OUT to a folder for logs and records}"
export CUTLASS_DIR="${CUTLASS_DIR:-/root/stage/cutlass/CuTeDSL}"
export KERNELPLAN_RESULTS="$OUT/results"
export PYTHONUNBUFFERED=1
BUDGET_S="${BUDGET_S:-420}"
mkdir -p "$OUT/logs" "$KERNELPLAN_RESULTS"
py=python3
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }
run() {  # run NAME TIMEOUT CMD...: log to $OUT/logs/NAME.log, print rc and the log's tail
    local name=$1 limit=$2; shift 2
    echo "== [$(elapsed)s] $name: $*"
    timeout "$limit" "$@" > "$OUT/logs/$name.log" 2>&1
    local rc=$?
    echo "   rc=$rc"; tail -n 12 "$OUT/logs/$name.log" | sed 's/^/   | /'
    return $rc
}
in_budget() {  # in_budget STEP [SECONDS]: false (and a line) when the step may not end in budget
    if [ $(( $(elapsed) + ${2:-0} )) -ge "$BUDGET_S" ]; then
        echo "== [$(elapsed)s] SKIPPED for time: $1" | tee -a "$OUT/logs/skipped.txt"; return 1
    fi
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,clocks_event_reasons.active --format=csv > "$OUT/logs/nvidia-smi-start.csv" 2>&1
$py - > "$OUT/logs/ncu-found.log" 2>&1 <<'EOF'
from kernelplan import ncu
p = ncu.find_ncu()
print("ncu:", p, ncu.ncu_version(p))
print("ncu_report dirs:", ncu.ncu_python_dirs(p))
print("ncu_report imports:", ncu.load_ncu_report(p) is not None)
EOF
cat "$OUT/logs/ncu-found.log"

S8="--m 8192 --n 8192 --k 8192 --dtype float16"
S4="--m 4096 --n 4096 --k 4096 --dtype float16"
# The best config of hopper_dense_gemm at 8192^3 fp16: the fastest autotune row of the committed
# records (results/ of the checkout, not $OUT).
BEST=$($py -m kernelplan.report best-config gemm hopper_dense_gemm --results-dir results \
       --problem m=8192 n=8192 k=8192 dtype=float16 2> "$OUT/logs/best-config.log")
[ -n "$BEST" ] || BEST="tile_mn=128x256 cluster_mn=1x1"
echo "best config (committed autotune records): $BEST ($(cat "$OUT/logs/best-config.log"))"

RANGE=nvtx
NCU_OK=1
ncu_run() {  # ncu_run NAME KERNEL SIZEARGS [--config ...]: ncu + paired harness, one process
    local name=$1 k=$2 size=$3; shift 3
    [ "$NCU_OK" = 1 ] || { echo "== $name: skipped (ncu unusable here)"; return 1; }
    # shellcheck disable=SC2086
    run "$name" 170 $py -m cute_gemm "$k" $size "$@" --prof_type ncu --ncu-pair --ncu-range "$RANGE" --ncu-timeout 150
    local rc=$?
    if [ $rc -ne 0 ] && [ "$RANGE" = nvtx ] && grep -qE "profiled no kernel|matched no kernel" "$OUT/logs/$name.log"; then
        echo "   the NVTX filter matched nothing: again with --ncu-range profiler (kept from now on)"
        RANGE=profiler
        # shellcheck disable=SC2086
        run "$name-profiler-range" 170 $py -m cute_gemm "$k" $size "$@" --prof_type ncu --ncu-pair --ncu-range profiler --ncu-timeout 150
        rc=$?
    fi
    if [ $rc -ne 0 ] && grep -qE "Failed to initialize the profiler|ERR_NVGPUCTRPERM|LibraryNotLoaded" "$OUT/logs/$name"*.log; then
        echo "   ncu cannot read the counters on this machine: the other ncu steps are skipped"
        NCU_OK=0
    fi
    return $rc
}
bench_run() {  # bench_run NAME KERNEL SIZEARGS [--config ...]: a harness-only run
    local name=$1 k=$2 size=$3; shift 3
    # shellcheck disable=SC2086
    run "$name" 120 $py -m cute_gemm "$k" $size "$@" --prof_type annotation
}

# 1. The comparison at 8192^3 fp16 (and its fidelity rows).
# shellcheck disable=SC2086
ncu_run ncu-hopper_dense_gemm-8192 hopper_dense_gemm "$S8" --config $BEST
ncu_run ncu-torch_matmul-8192 torch_matmul "$S8"

# 2. Planted timing traps: each must be rejected with a clear message.
run guard-empty-graph 120 $py - <<'EOF'
import torch
from kernelplan.timing import TimingError, benchmark

bad = 0
# (a) a launcher that enqueues nothing, replayed as a CUDA graph
try:
    st = benchmark([lambda: None], warmup=2, reps=20, cuda_graph=True)
    print(f"(a) NOT rejected: {st.median_us:.3f} us"); bad += 1
except TimingError as e:
    print(f"(a) empty graph rejected: {e}")
# (b) the real trap: the kernel goes to a cached stream the capture does not record
x = torch.randn(1 << 24, device="cuda")
cached = torch.cuda.Stream()
def launch_on_cached_stream():
    with torch.cuda.stream(cached):
        x.mul_(1.0001)
try:
    st = benchmark([launch_on_cached_stream], warmup=2, reps=20, cuda_graph=True)
    print(f"(b) NOT rejected: {st.median_us:.3f} us"); bad += 1
except TimingError as e:
    print(f"(b) graph captured on the wrong stream rejected: {e}")
except Exception as e:  # a CUDA error here is an outcome worth reading, not a pass
    print(f"(b) other error: {type(e).__name__}: {e}"); bad += 1
# control: the same work captured on the graph's own stream is timed
def launch():
    x.mul_(1.0001)
st = benchmark([launch], warmup=2, reps=20, cuda_graph=True)
print(f"control: captured kernel timed at {st.median_us:.2f} us per launch")
raise SystemExit(bad)
EOF
run guard-uncompiled 180 $py - <<'EOF'
import functools
from kernelplan.timing import TimingError, benchmark
from tests.inhouse_axpby import axpby
from cute_gemm.hopper_dense_gemm.hopper_dense_gemm import HopperDenseGemm

plan = HopperDenseGemm()
prob = plan.problem(256, 256, 256)
host = plan.plan(prob, plan.default_config(prob)).fn  # the upstream @cute.jit host object
bad = 0
for what, fn in [("@cute.jit function", axpby), ("partial(@cute.jit)", functools.partial(axpby, 1)),
                 ("upstream HopperWgmmaGemmKernel.__call__", host.__call__)]:
    try:
        benchmark([fn], warmup=1, reps=5)
        print(f"NOT rejected: {what}"); bad += 1
    except TimingError as e:
        print(f"rejected ({what}): {e}")
    except Exception as e:
        print(f"other error ({what}): {type(e).__name__}: {e}"); bad += 1
raise SystemExit(bad)
EOF

# 3. ncu bad input: no record may appear.
before=$(find "$KERNELPLAN_RESULTS" -name '*.json' | sort | md5sum)
if in_budget "ncu filter matching no kernel" 40; then
    # shellcheck disable=SC2086
    run bad-ncu-no-kernel 180 $py -m cute_gemm hopper_dense_gemm $S4 --prof_type ncu --ncu-range "$RANGE" --ncu-kernel no_such_kernel_xyz
fi
# ncu missing: a PATH holding python3 alone, and no install folder to search
mkdir -p "$OUT/nobin" && ln -sf "$(command -v $py)" "$OUT/nobin/python3"
# shellcheck disable=SC2086
run bad-ncu-missing 120 env PATH="$OUT/nobin" KERNELPLAN_NCU_ROOTS=/nonexistent "$OUT/nobin/python3" -m cute_gemm hopper_dense_gemm $S4 --prof_type ncu
rm -rf "$OUT/nobin"
head -c 65536 /dev/urandom > "$OUT/garbage.ncu-rep"; : > "$OUT/empty.ncu-rep"
run bad-ncu-unreadable 60 $py -m kernelplan.ncu read "$OUT/garbage.ncu-rep"
run bad-ncu-empty 60 $py -m kernelplan.ncu read "$OUT/empty.ncu-rep"
run bad-ncu-absent 60 $py -m kernelplan.ncu read "$OUT/absent.ncu-rep"
rm -f "$OUT/garbage.ncu-rep" "$OUT/empty.ncu-rep"
after=$(find "$KERNELPLAN_RESULTS" -name '*.json' | sort | md5sum)
[ "$before" = "$after" ] && echo "records unchanged by bad input" | tee "$OUT/logs/bad-input-records.txt" \
    || echo "RECORDS CHANGED by bad input" | tee "$OUT/logs/bad-input-records.txt"

# 4. The rest of the fidelity matrix, then a second harness run of each for the run-to-run spread.
in_budget "ncu persistent 8192" 60 && ncu_run ncu-hopper_dense_gemm_persistent-8192 hopper_dense_gemm_persistent "$S8"
for k in hopper_dense_gemm hopper_dense_gemm_persistent torch_matmul; do
    in_budget "ncu $k 4096" 50 && ncu_run "ncu-$k-4096" "$k" "$S4"
done
# shellcheck disable=SC2086
in_budget "bench hopper 8192" 25 && bench_run bench-hopper_dense_gemm-8192 hopper_dense_gemm "$S8" --config $BEST
in_budget "bench torch 8192" 25 && bench_run bench-torch_matmul-8192 torch_matmul "$S8"
in_budget "bench persistent 8192" 25 && bench_run bench-hopper_dense_gemm_persistent-8192 hopper_dense_gemm_persistent "$S8"
for k in hopper_dense_gemm hopper_dense_gemm_persistent torch_matmul; do
    in_budget "bench $k 4096" 25 && bench_run "bench-$k-4096" "$k" "$S4"
done

# 5. The tables from the records of this run.
run compare-8192 60 $py -m kernelplan.report compare gemm hopper_dense_gemm torch_matmul \
    --problem m=8192 n=8192 k=8192 dtype=float16 --out "$OUT/logs/compare-8192-fp16.md"
run compare-4096 60 $py -m kernelplan.report compare gemm hopper_dense_gemm torch_matmul \
    --problem m=4096 n=4096 k=4096 dtype=float16 --out "$OUT/logs/compare-4096-fp16.md"
run fidelity 60 $py -m kernelplan.report fidelity gemm --record --out "$OUT/logs/fidelity.md"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,clocks_event_reasons.active --format=csv > "$OUT/logs/nvidia-smi-end.csv" 2>&1
echo "== [$(elapsed)s] done"; elapsed > "$OUT/logs/elapsed_s.txt"

# The device tool brings back at most 8 files of 16 MiB: records and logs in one, reports in another.
(cd "$OUT" && find results -name '*.ncu-rep') > "$OUT/reports.list"
if [ -s "$OUT/reports.list" ]; then
    tar czf "$OUT/reports.tgz" -C "$OUT" -T "$OUT/reports.list"
    if [ "$(stat -c %s "$OUT/reports.tgz")" -gt $((15 * 1024 * 1024)) ]; then
        split -b 15M -a 1 "$OUT/reports.tgz" "$OUT/reports.tgz.part-" && rm "$OUT/reports.tgz"
    fi
fi
tar czf "$OUT/bundle.tgz" -C "$OUT" --exclude='*.ncu-rep' logs results
rm -rf "$OUT/logs" "$OUT/results" "$OUT/reports.list"
ls -la "$OUT"
