"""Experiment: the first launch of a kernel in a fresh process, with the compiled-function
cache (kernelplan.jitcache) empty and populated.

Each measurement is a fresh Python process that imports torch and the DSL, plans
hopper_dense_gemm (cute_gemm, default config) at M=N=K=2048 fp16, allocates the inputs,
gets the compiled function through ``jitcache.load_or_compile`` (the call CuteKernel.compile
is to make), launches once and synchronises, then checks C against torch (fp32 matmul) and
times one more launch. Modes, in this order, over one fresh temporary cache folder and one
fresh DSL file cache (``CUTE_DSL_CACHE_DIR``), so nothing from earlier runs helps:

- ``cold``: both caches empty: trace + compile + export;
- ``warm``: the entry stored by ``cold`` is loaded (no trace, no compile), ``--warm`` times;
- ``dsl_file_cache``: ``KERNELPLAN_CACHE=off``, the DSL's own file cache warm from ``cold``
  (what a second process got before this cache: it still traces the kernel).

Prints one JSON object (per mode: the child's phases in seconds, process wall time, cache
info, the check). Needs a Hopper GPU (sm_90a) and the CUTLASS sources.

    python scripts/experiments/jit_cache_first_launch.py [--m 2048 --n 2048 --k 2048]
        [--dtype float16] [--warm 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def child(a: argparse.Namespace) -> dict:
    """One fresh process: import, plan, load or compile, first launch, check, second launch."""
    t_start = time.perf_counter()
    phases: dict[str, float] = {}

    def mark(name: str, t0: float) -> float:
        now = time.perf_counter()
        phases[name] = round(now - t0, 4)
        return now

    import torch

    from kernelplan import jitcache
    from kernelplan.kernel import STREAM, Const
    from kernelplan.registry import load_plan_class

    t = mark("import_torch_kernelplan", t_start)
    import cutlass.cute  # noqa: F401 - the DSL import, timed on its own

    t = mark("import_dsl", t)
    plan = load_plan_class("gemm", "hopper_dense_gemm")()
    problem = plan.problem(m=a.m, n=a.n, k=a.k, l=1, dtype=a.dtype)
    config = plan.default_config(problem)
    target = plan.target("sm_90a")
    kernel = plan.kernel(problem, config, target)
    inputs = plan.prepare_inputs(problem, seed=0)
    torch.cuda.synchronize()
    t = mark("plan_and_inputs", t)

    args = kernel.cute_args(inputs)
    compile_args = kernel.compile_args(args, kernel.current_stream())
    compiled, info = jitcache.load_or_compile(
        kernel.fn,
        compile_args,
        key=jitcache.cute_kernel_key(kernel),
        options=kernel.options,
        arch=target.sm,
    )
    t = mark("load_or_compile", t)

    runtime = [kernel.current_stream() if x is STREAM else x for x in args]
    runtime = [x for x in runtime if not isinstance(x, Const)]
    compiled(*runtime)
    torch.cuda.synchronize()
    t = mark("first_launch", t)
    first_launch_total = round(t - t_start, 4)

    ref = plan.reference(problem, inputs)
    out = inputs["c"].float()
    want = ref["c"].float()
    err = (out - want).abs().max().item()
    rel = ((out - want).norm() / want.norm()).item()
    t = mark("check", t)

    t0 = time.perf_counter()
    compiled(*runtime)
    torch.cuda.synchronize()
    phases["second_launch"] = round(time.perf_counter() - t0, 6)
    return {
        "since_child_start_to_first_launch_done_s": first_launch_total,
        "phases_s": phases,
        "cache": info,
        "loaded_type": type(compiled).__name__,
        "check": {"max_abs_err": err, "rel_norm_err": rel, "passed": bool(rel < 1e-2)},
    }


def run_mode(mode: str, a: argparse.Namespace, base_env: dict) -> dict:
    env = dict(base_env)
    if mode == "dsl_file_cache":
        env["KERNELPLAN_CACHE"] = "off"
    cmd = [sys.executable, __file__, "--child", "--m", str(a.m), "--n", str(a.n)]
    cmd += ["--k", str(a.k), "--dtype", a.dtype]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"mode": mode, "error": (proc.stdout + proc.stderr)[-3000:], "process_wall_s": wall}
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res.update(mode=mode, process_wall_s=round(wall, 3), stderr_tail=proc.stderr[-500:] or None)
    return res


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--m", type=int, default=2048)
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--k", type=int, default=2048)
    p.add_argument("--dtype", default="float16")
    p.add_argument("--warm", type=int, default=3, help="warm processes to time")
    p.add_argument("--keep", help="use this folder for both caches (kept afterwards)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(json.dumps(child(a)))
        return 0

    with tempfile.TemporaryDirectory(prefix="kp-jit-first-launch-") as tmp:
        folder = Path(a.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env["KERNELPLAN_CACHE"] = str(folder / "kernelplan")  # jit entries: <that>/jit
        env["CUTE_DSL_CACHE_DIR"] = str(folder / "dsl")
        env.pop("CUTE_DSL_DISABLE_FILE_CACHING", None)
        env.pop("CUTE_DSL_ARCH", None)
        runs = [run_mode("cold", a, env)]
        runs += [run_mode("warm", a, env) for _ in range(a.warm)]
        runs.append(run_mode("dsl_file_cache", a, env))

    from kernelplan.records import environment

    summary = {
        "experiment": "jit-cache-first-launch",
        "kernel": "gemm/hopper_dense_gemm (default config)",
        "problem": {"m": a.m, "n": a.n, "k": a.k, "l": 1, "dtype": a.dtype},
        "how": "one fresh process per run; times from the child's first line to the first "
        "launch synchronised (imports included); caches in a fresh temporary folder",
        "env": environment(),
        "runs": runs,
    }
    print(json.dumps(summary, indent=1, default=str))
    ok = all("error" not in r and r["check"]["passed"] for r in runs)
    ok = ok and runs[0]["cache"]["cache"] == "miss" and runs[0]["cache"].get("stored")
    ok = ok and all(r["cache"]["cache"] == "hit" for r in runs[1 : 1 + a.warm])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
