"""Experiment: what a timing loop measures when it calls a ``@cute.jit`` function directly
instead of the object ``cute.compile`` returns.

Times, on the host (``time.perf_counter`` around each call followed by a device sync), three
ways of running the in-house ``axpby`` kernel (tests/inhouse_axpby.py) over 2^20 fp32
elements: (1) the ``@cute.jit`` function called directly, (2) the compiled function, (3) the
compiled function's kernel alone by CUDA events. Writes one record (package "experiments",
kernel "jit-call-overhead"). Needs a CUDA GPU.

    python scripts/experiments/jit_call_overhead.py [--reps 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--n", type=int, default=1 << 20)
    args = p.parse_args()

    import cuda.bindings.driver as cuda
    import cutlass
    import cutlass.cute as cute
    import torch

    from kernelplan.device import current_device
    from kernelplan.records import environment, write_record
    from kernelplan.timing import benchmark, summarize
    from tests.inhouse_axpby import AxpbyPlan, axpby

    plan = AxpbyPlan()
    prob = {"n": args.n, "dtype": "float32"}
    kernel = plan.plan(prob, {})
    inputs = plan.prepare_inputs(prob, seed=0)
    cute_args = kernel.cute_args(inputs)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    x, y = cute_args[0], cute_args[1]
    alpha = cutlass.Float32(1.0)

    def host_times(fn, reps):
        out = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            out.append((time.perf_counter() - t0) * 1e6)
        return out

    t0 = time.perf_counter()
    compiled = cute.compile(axpby, x, y, alpha, stream)
    compile_s = time.perf_counter() - t0
    direct = host_times(lambda: axpby(x, y, alpha, stream), args.reps)
    comp = host_times(lambda: compiled(x, y, alpha, stream), args.reps)
    launch = kernel.bind(inputs)
    ev = benchmark([launch], warmup=5, reps=max(args.reps, 20))
    d, c = (
        summarize(direct, warmup=0, workspaces=1, cuda_graph=False),
        summarize(comp, warmup=0, workspaces=1, cuda_graph=False),
    )
    dev = current_device()
    rec = {
        "kind": "experiment",
        "package": "experiments",
        "kernel": "jit-call-overhead",
        "problem": prob,
        "device": dev.to_dict() if dev else None,
        "env": environment(),
        "compile_seconds": compile_s,
        "host_us_direct_jit_call": d.to_dict(with_samples=False),
        "host_us_compiled_call": c.to_dict(with_samples=False),
        "event_us_kernel": ev.to_dict(with_samples=False),
        "ratio_direct_over_compiled_median": d.median_us / c.median_us,
    }
    path = write_record(rec)
    print(f"direct @cute.jit call: median {d.median_us:.1f} us per call (host, synced)")
    print(f"compiled call:         median {c.median_us:.1f} us per call (host, synced)")
    print(f"kernel (CUDA events):  median {ev.median_us:.2f} us")
    print(f"record: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
