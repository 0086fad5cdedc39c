"""Command lines: one kernel (``uv run gemm <kernel> ...``), and package-wide sessions
(``python -m kernelplan check|profile|analyze <package> [kernel]``) that Nox drives."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from . import device as devmod
from .errors import KernelPlanError
from .plan import (
    PROF_TYPES,
    KernelPlan,
    ShapeError,
    config_label,
    die,
    parse_config_overrides,
    static_table,
)


def _common_run_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("run")
    g.add_argument("--check", action="store_true", help="check against the PyTorch reference")
    g.add_argument(
        "--prof_type",
        "--prof-type",
        choices=PROF_TYPES,
        default="annotation",
        help="disabled: run (and check) only; annotation: NVTX ranges + timings; "
        "static: compile for the target SM and analyse the cubin (no GPU needed); "
        "ncu: Nsight Compute metrics",
    )
    g.add_argument("--autotune", action="store_true", help="time every config, keep the best")
    g.add_argument(
        "--config",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="config overrides, e.g. tile_mn=128x256 cluster_mn=1x1",
    )
    g.add_argument("--warmup", type=int, default=10)
    g.add_argument("--reps", type=int, default=100)
    g.add_argument(
        "--warm-l2",
        action="store_true",
        help="reuse one input set (default: rotate copies so L2 is cold)",
    )
    g.add_argument("--cuda-graph", action="store_true", help="time CUDA-graph replays")
    g.add_argument(
        "--seed", type=int, default=None, help="input seed for --check (default: fresh random)"
    )
    g.add_argument(
        "--inject-fault",
        choices=("none", "skip-launch", "perturb"),
        default="none",
        help="plant a defect to show --check fails",
    )
    g.add_argument("--arch", default=None, help="SM for --prof_type=static (default: target)")
    g.add_argument("--no-record", action="store_true", help="do not write a result record")
    g.add_argument("--results-dir", default=None, help="where records go (default: results/)")
    from .ncu import add_arguments as add_ncu_arguments

    add_ncu_arguments(p)


def build_parser(plan: KernelPlan, prog: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog or f"{plan.package} {plan.name}",
        description=plan.description or plan.name,
    )
    plan.add_problem_arguments(p)
    _common_run_args(p)
    return p


def _print_table(rows: list[dict[str, Any]], title: str) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain text where rich is absent
        print(title)
        for r in rows:
            print("  " + "  ".join(f"{k}={v}" for k, v in r.items()))
        return
    t = Table(title=title)
    for k in rows[0]:
        t.add_column(k, justify="right" if k not in ("kernel", "config", "device") else "left")
    for r in rows:
        t.add_row(*[str(v) for v in r.values()])
    Console().print(t)


def timing_row(plan: KernelPlan, problem, config, st, roof, device_name) -> dict[str, Any]:
    return {
        "kernel": plan.name,
        "config": config_label(config),
        "median_us": f"{st.median_us:.1f}",
        "p10-p90_us": f"{st.p10_us:.1f}-{st.p90_us:.1f}",
        "TFLOP/s": f"{roof.tflops:.1f}",
        "%peak": f"{roof.pct_peak_tflops:.1f}" if roof.pct_peak_tflops is not None else "n/a",
        "GB/s": f"{roof.gbps:.0f}",
        "device": device_name or "?",
    }


def run_kernel(plan: KernelPlan, args: argparse.Namespace, *, log=print) -> int:
    """One kernel, as the CLI flags say. Returns the exit code (see benchmark_kernel_argparse)."""
    from .records import write_record

    problem = plan.problem_from_args(args)
    plan.validate(problem)
    overrides = parse_config_overrides(args.config)
    unknown = sorted(set(overrides) - plan.known_config_keys(problem))
    if unknown:
        known = ", ".join(sorted(plan.known_config_keys(problem)))
        raise ShapeError(f"{plan.name}: unknown config key(s) {', '.join(unknown)}; known: {known}")
    config = {**plan.default_config(problem), **overrides}
    plan.validate_config(problem, config)
    record_dir = args.results_dir
    if not args.no_record:
        from .records import ensure_writable

        ensure_writable(record_dir)  # before any work: a result must never be lost at the end

    def save(rec):
        if args.no_record:
            return None
        path = write_record(rec, record_dir)
        log(f"record: {path}")
        return path

    if args.prof_type == "static":
        rec = plan.record_base("static", problem, config)
        rec["static"] = plan.run_static(problem, config, args.arch)
        log(static_table([rec["static"]]))
        save(rec)
        return 0

    if args.prof_type == "ncu":  # a missing profiler is a setup error: say so before anything
        from .ncu import find_ncu

        find_ncu()
    dev = devmod.current_device()
    devmod.require_runs_on(plan.name, plan.target_sm, dev)
    rc = 0
    if args.autotune:
        log(f"{plan.name}: autotuning {len(plan._autotune_configs(problem))} configs")
        config, tune_rows = plan.autotune(problem, cold_l2=not args.warm_l2, log=log)
    else:
        tune_rows = None

    check_part = None
    if args.check or args.inject_fault != "none":
        ok, results, info = plan.run_check(problem, config, seed=args.seed, fault=args.inject_fault)
        for r in results:
            log(f"{plan.name} {config_label(config)}: {r.line()}")
        check_part = {"passed": ok, "outputs": [r.to_dict() for r in results], **info}
        if not ok:
            rc = 1
        if args.prof_type == "disabled":
            rec = plan.record_base("check", problem, config)
            rec["check"] = check_part
            save(rec)
            return rc

    if args.prof_type == "ncu":
        from . import ncu

        return ncu.run_under_ncu(plan, problem, config, args, log=log) or rc
    if args.prof_type == "disabled":
        kernel = plan.plan(problem, config)
        kernel.bind(plan.prepare_inputs(problem, seed=0))()
        import torch

        torch.cuda.synchronize()
        log(f"{plan.name}: ran once (prof_type=disabled: no timing)")
        return rc

    rec, st, roof = plan.benchmark_record(
        problem,
        config,
        warmup=args.warmup,
        reps=args.reps,
        cold_l2=not args.warm_l2,
        cuda_graph=args.cuda_graph,
        log=log,
    )
    rec.update(check=check_part, autotune=tune_rows)
    _print_table(
        [timing_row(plan, problem, config, st, roof, dev.name if dev else None)],
        f"{plan.package}: {problem}",
    )
    save(rec)
    return rc


def run_kernel_cli(
    plan: KernelPlan, argv: Sequence[str] | None = None, prog: str | None = None
) -> int:
    args = build_parser(plan, prog).parse_args(argv)
    try:
        return run_kernel(plan, args)
    except KernelPlanError as e:
        return die(str(e))
    except NotImplementedError as e:  # a scaffolded adapter whose TODOs are still open
        return die(f"{plan.name} is not finished: {str(e).splitlines()[0] if str(e) else e!r}")


def package_main(package: str, argv: Sequence[str] | None = None) -> int:
    """``uv run <package> <kernel> [args]`` and ``<package> --list``."""
    from .registry import kernel_names, load_plan_class

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        names = kernel_names(package)
    except KernelPlanError as e:
        return die(str(e))
    if not argv or argv[0] in ("-h", "--help", "--list", "list"):
        print(f"usage: {package} <kernel> [options]   ({package} <kernel> --help for options)")
        print("kernels:")
        for n in names:
            print(f"  {n}")
        return 0 if argv else 2
    try:
        cls = load_plan_class(package, argv[0])
    except KernelPlanError as e:
        return die(str(e))
    return run_kernel_cli(cls(), argv[1:], prog=f"{package} {argv[0]}")
