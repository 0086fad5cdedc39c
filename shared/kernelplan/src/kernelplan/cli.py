"""The single-kernel command: ``uv run <package> <kernel> [options]``,
``python -m <package>.<kernel> [options]`` and ``python -m kernelplan.cli <package> <kernel>``.

The problem flags are derived from the workload's problem dataclass by jsonargparse (an
argparse-compatible library that builds options from type hints and docstrings, and reports
a bad value as one message we print as one line); the config is ``--config key=value ...``
parsed against the implementation's typed config (``tile_mn=128,256`` or ``128x256``; a key
given twice is refused), and a tuple problem flag takes the same comma list
(``--seqlens 1,2,3``, or ``[1,2,3]``). The help shows docstrings without Sphinx roles. One
runner (:func:`run`) serves this command, the package sessions (:mod:`kernelplan.sessions`)
and the Nsight Compute child, which re-runs this same command (:func:`child_argv`).

Exit codes: 0 ok, 1 a check failed, 2 bad input or a kernel that cannot run here (one
``error:`` line on stderr, nothing recorded).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import inspect
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from . import device as devmod
from .errors import KernelPlanError, explain
from .plan import PROF_TYPES, KernelPlan
from .tables import show, static_table
from .workload import Config, Problem

FAULTS = ("none", "skip-launch", "perturb")
#: printed by the Nsight Compute child before its JSON summary line
CHILD_MARK = "KERNELPLAN-NCU-CHILD "


def die(msg: str, code: int = 2) -> int:
    """Print one ``error:`` line and return ``code``."""
    print(f"error: {msg}", file=sys.stderr)
    return code


def _run_options(p) -> None:
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
        action="extend",  # a second --config adds its items (a key given twice is refused)
        default=[],
        metavar="KEY=VALUE",
        help="config items of this implementation (tuples as 128,256 or 128x256)",
    )
    g.add_argument("--warmup", type=int, default=10)
    g.add_argument("--reps", type=int, default=100)
    g.add_argument(
        "--warm-l2", action="store_true", help="reuse one input set (default: rotate copies)"
    )
    g.add_argument("--cuda-graph", action="store_true", help="time CUDA-graph replays")
    g.add_argument("--seed", type=int, default=None, help="input seed for --check")
    g.add_argument(
        "--check-launches",
        "--check_launches",
        type=int,
        default=1,
        help="--check: launch this many times on the same inputs, outputs poisoned again "
        "before the last (state kept between launches is checked too)",
    )
    g.add_argument(
        "--inject-fault",
        default="none",
        help="plant a defect, --check must fail: skip-launch, perturb, or one of the "
        "workload's input faults",
    )
    g.add_argument("--arch", default=None, help="SM to compile for (default: the target)")
    g.add_argument(
        "--sm_count",
        "--sm-count",
        default=None,
        help="SM count a persistent kernel sizes its grid for (default: this GPU's when its SM "
        "matches, else the target's usual part)",
    )
    g.add_argument("--no-record", action="store_true", help="do not write a result record")
    g.add_argument("--results-dir", default=None, help="where records go (default: results/)")
    g.add_argument("--ncu-child", default=None, help=argparse.SUPPRESS)
    from .ncu import add_arguments as add_ncu_arguments

    add_ncu_arguments(p)


_ROLE = re.compile(r":(?:py:)?(?:func|data|mod|class|meth|attr|obj|exc|const):`[~.]*([^`]+)`")
#: help text that states its option's default itself ("(default: the target)", "none
#: (default): ...", "(default 1800)"): the formatter does not add a second one
_STATES_DEFAULT = re.compile(r"\(default\b|\bdefault\)")


def plain(text: str) -> str:
    """Docstring markup for the terminal: Sphinx roles (``:func:`choose_splits```,
    ``:data:`SPARE_PAGES```, ``:mod:`.seesaw```) become the bare name."""
    return _ROLE.sub(r"\1", text)


def _help_formatter():
    """jsonargparse's help formatter, with Sphinx roles stripped from the help texts, the
    description and the epilog, and no "default: ..." added where the text states one."""
    from jsonargparse import DefaultHelpFormatter

    class HelpFormatter(DefaultHelpFormatter):
        def _get_help_string(self, action) -> str:
            text = super()._get_help_string(action)
            own = action.help or ""
            if own and _STATES_DEFAULT.search(own) and text.startswith(own):
                extra = text[len(own) :]
                extra = re.sub(r"(, )?default: %\(default\)s", "", extra).replace("(, ", "(")
                text = own + ("" if extra.strip() in ("", "()") else extra)
            return text

        def _expand_help(self, action) -> str:
            return plain(super()._expand_help(action))

        def _format_text(self, text: str) -> str:
            return super()._format_text(plain(text))

    return HelpFormatter


def build_parser(plan: KernelPlan, prog: str | None = None):
    """The parser: the workload's problem fields as flags (``--m``, ``--b``, ...), then the
    run options."""
    from jsonargparse import ArgumentParser

    p = ArgumentParser(
        prog=prog or f"{plan.package} {plan.name}",
        description=f"{plan.description or plan.name} [workload {plan.workload.name}]",
        formatter_class=_help_formatter(),
        exit_on_error=False,
        allow_abbrev=False,  # jsonargparse deprecates abbreviated options (a warning, not a line)
        env_prefix="KERNELPLAN_CLI",
        default_env=False,
    )
    cls = plan.problem_class()
    p.add_class_arguments(cls, nested_key=None, as_group=True)
    keys = plan.config_type.field_names()
    p.epilog = (
        f"--config keys of {plan.name}: {', '.join(keys)} (defaults: "
        f"{plan.default_config(plan.default_problem()).label()})"
        if keys
        else f"{plan.name} takes no --config"
    )
    # what the keys mean: the config class's own docstring (a dataclass without one gets a
    # generated "Name(field: type = ...)" line, which says nothing the line above does not)
    doc = inspect.getdoc(plan.config_type) if keys else None
    if doc and not doc.startswith(plan.config_type.__name__ + "("):
        p.epilog += ". " + " ".join(doc.split())
    # the implementation's own defaults, except for fields the problem derives from others
    # (declared None: c_dtype from dtype, num_pages from the lengths, a softmax scale from the
    # head dims), so that e.g. --t 8192 does not keep the default problem's page count
    derived = {f.name for f in dataclasses.fields(cls) if f.default is None}
    defaults = plan.default_problem().to_dict()
    p.set_defaults({k: v for k, v in defaults.items() if k not in derived})
    _run_options(p)
    return p


def _one_line(e: BaseException) -> str:
    """jsonargparse's multi-line message as one line (``--b: Expected a <class 'int'>...``);
    a value that matches no member of an ``X | None`` field says what to write instead, a bad
    bool says ``--varlen expects true or false, got 'maybe'``, a value outside a Literal field's
    choices ``--init: one of randn, spiky (got 'spiky2')``."""
    text = " ".join(ln.strip() for ln in str(e).splitlines() if ln.strip())
    text = text.replace('Parser key "', "--").replace('":', ":", 1)
    bad_bool = re.fullmatch(r"(--\S+): Expected a <class 'bool'>\. Got value: (.*)", text)
    if bad_bool:
        return f"{bad_bool.group(1)} expects true or false, got {bad_bool.group(2)!r}"
    bad_choice = re.fullmatch(
        r"(--\S+): Expected a typing\.Literal\[(.*?)\]\. Got value: ?(.*)", text
    )
    if bad_choice:  # a Literal field (--init, --kv_scale): name the choices plainly
        choices = ", ".join(c.strip().strip("'\"") for c in bad_choice.group(2).split(","))
        return f"{bad_choice.group(1)}: one of {choices} (got {bad_choice.group(3)!r})"
    if "Union subtypes" in text:
        flag = text.split(":", 1)[0]
        got = re.search(r"(?:Got|Given) value: (\S+)", text)
        shown = f" (got {got.group(1)})" if got else ""
        if "tuple" in text:
            return f"{flag}: expected a list such as 1,2,3 or [1,2,3], or null{shown}"
        if "<class 'float'>" in text:
            return f"{flag}: expected a finite number such as 0.0417, or null{shown}"
        if "<class 'int'>" in text:
            return f"{flag}: expected an integer, or null{shown}"
        return f"{flag}: not a valid value{shown}; see --help for its type"
    return text


def _tuple_fields(cls: type) -> set[str]:
    """The problem fields typed as a tuple (``tuple[int, ...]``, also ``| None``)."""
    import typing

    out = set()
    for name, hint in typing.get_type_hints(cls).items():
        kinds = [hint, *typing.get_args(hint)]
        if any(k is tuple or typing.get_origin(k) is tuple for k in kinds):
            out.add(name)
    return out


def _lists(argv: Sequence[str], fields: set[str]) -> list[str]:
    """``argv`` with a tuple field's comma list (``--seqlens 1,2,3``, as ``--config`` takes
    tuples) or single number written as the list jsonargparse parses (``[1,2,3]``);
    ``[1,2,3]`` and ``null`` stay."""
    flags = {f"--{f}" for f in fields}

    def bare(value: str) -> bool:  # "1,2,3" or a single "5"; not "[1,2,3]", "null", a flag
        v = value.strip()
        return "," in v and v[:1] not in "[(" or re.fullmatch(r"\d+", v) is not None

    out, after_flag = [], False
    for arg in argv:
        flag, eq, value = arg.partition("=")
        if after_flag and bare(arg):
            arg = f"[{arg}]"
        elif flag in flags and eq and bare(value):
            arg = f"{flag}=[{value}]"
        out.append(arg)
        after_flag = arg in flags
    return out


def parse(plan: KernelPlan, argv: Sequence[str], prog: str | None = None):
    """(problem, config items, run options) from ``argv``.

    Raises:
        KernelPlanError: a flag or value the parser rejects (one line).
        SystemExit: ``--help`` (exit 0).
    """
    from jsonargparse import ArgumentError

    parser = build_parser(plan, prog)
    try:
        ns = parser.parse_args(_lists(argv, _tuple_fields(plan.problem_class())))
    except ArgumentError as e:
        raise KernelPlanError(_one_line(e)) from None
    fields = plan.problem_class().field_names()
    values = {f: ns[f] for f in fields if f in ns}
    problem = plan.problem(values)
    items: dict[str, str] = {}
    for item in ns["config"] or []:
        for part in [item] if item.count("=") <= 1 else _split_items(item):
            if "=" not in part:
                raise KernelPlanError(f"--config expects key=value, got {part!r}")
            k, v = (x.strip() for x in part.split("=", 1))
            if k in items:  # the last one winning silently builds what was not asked for
                raise KernelPlanError(
                    f"--config {k} given twice ({k}={items[k]}, {k}={v}): give each key once"
                )
            items[k] = v
    keys = ns.keys()  # a jsonargparse Namespace: iterating it is not iterating its keys
    run = argparse.Namespace(**{k.replace("-", "_"): ns[k] for k in keys if k not in fields})
    return problem, items, run


def _split_items(item: str) -> list[str]:
    """``a=1 b=2`` passed as one quoted string."""
    return item.split()


def run(
    plan: KernelPlan,
    problem: Problem,
    items: Mapping[str, str],
    opts: argparse.Namespace,
    *,
    log=print,
) -> int:
    """One implementation at one problem, as the options say. The runner every command uses.

    Returns the exit code (0 ok, 1 a failed check); raises KernelPlanError for bad input or a
    kernel that cannot run here, before anything is recorded.
    """
    from .cutlass_src import check_environment
    from .records import ensure_writable, write_record

    if opts.prof_type == "static" and (opts.check or opts.autotune or opts.inject_fault != "none"):
        raise KernelPlanError(
            "--check, --autotune and --inject-fault run the kernel; --prof_type static only "
            "compiles it: drop them, or run on a GPU of its SM"
        )
    if opts.reps < 1 or opts.warmup < 0:
        raise KernelPlanError(
            f"--reps must be >= 1 and --warmup >= 0 (got {opts.reps}, {opts.warmup})"
        )
    faults = (*FAULTS, *plan.workload.input_faults)
    if opts.check_launches < 1:
        raise KernelPlanError(f"--check-launches {opts.check_launches}: give 1 or more launches")
    if opts.inject_fault not in faults:
        raise KernelPlanError(f"--inject-fault {opts.inject_fault}: one of {', '.join(faults)}")
    config = plan.config(problem, items)
    target = plan.target(opts.arch, opts.sm_count)
    build = plan.build_label(problem, config, target)
    if build and not opts.ncu_child:
        log(f"{plan.name} builds: {build}")
    record = not opts.no_record and not opts.ncu_child
    if record:
        ensure_writable(opts.results_dir)  # before any work: a result must never be lost
    check_environment(need_dsl=bool(plan.target_sm))  # no DSL: one line; off the pins: warned

    def save(rec: dict[str, Any]) -> None:
        if record:
            log(f"record: {write_record(rec, opts.results_dir)}")

    if opts.prof_type == "static":
        from .sessions import static_record

        st = plan.run_static(problem, config, target)
        log(static_table([st]))
        cache = st.get("cache") or {}
        if cache.get("hit"):
            log(f"{plan.name}: served from the compile cache ({cache.get('entry')})")
        if record:
            path, reused = static_record(plan, problem, config, target, st, opts.results_dir)
            same = " (unchanged: the same numbers are already recorded)" if reused else ""
            log(f"record{same}: {path}")
        return 0

    if opts.prof_type == "ncu":  # a missing profiler is a setup error: say so before anything
        from .ncu import find_ncu

        find_ncu()
    dev = devmod.current_device()
    devmod.require_plan_runs_on(plan, dev)
    if opts.ncu_child:
        return _child(plan, problem, config, target, opts)
    rc = 0
    tune_rows = None
    if opts.autotune:
        log(f"{plan.name}: autotuning {len(plan.autotune_configs(problem))} configs")
        config, tune_rows = plan.autotune(problem, target=target, cold_l2=not opts.warm_l2, log=log)

    check_part = None
    if opts.check or opts.inject_fault != "none":
        ok, results, info = plan.run_check(
            problem, config, target=target, seed=opts.seed, fault=opts.inject_fault,
            launches=opts.check_launches,
        )  # fmt: skip
        for r in results:
            log(f"{plan.name} {config.label()}: {r.line()}")
        if info.get("not_produced"):
            log(f"{plan.name}: does not produce {', '.join(info['not_produced'])} (not checked)")
        check_part = {"passed": ok, "outputs": [r.to_dict() for r in results], **info}
        rc = 0 if ok else 1
        if opts.prof_type == "disabled":
            rec = plan.record_base("check", problem, config, target)
            rec["check"] = check_part
            save(rec)
            return rc

    if opts.prof_type == "ncu":
        from . import ncu

        return ncu.run_under_ncu(plan, problem, config, target, opts, log=log) or rc
    if opts.prof_type == "disabled":
        import torch

        plan.kernel(problem, config, target).bind(plan.prepare_inputs(problem, seed=0))()
        torch.cuda.synchronize()
        log(f"{plan.name}: ran once (prof_type=disabled: no timing)")
        return rc

    rec, st, roof = plan.benchmark_record(
        problem,
        config,
        target=target,
        warmup=opts.warmup,
        reps=opts.reps,
        cold_l2=not opts.warm_l2,
        cuda_graph=opts.cuda_graph,
        log=log,
    )
    rec.update(check=check_part, autotune=tune_rows)
    show([timing_row(plan, config, st, roof, dev.name if dev else None)], problem.label())
    save(rec)
    return rc


def timing_row(plan: KernelPlan, config: Config, st, roof, device_name) -> dict[str, Any]:
    return {
        "kernel": plan.name,
        "config": config.label(),
        "median_us": f"{st.median_us:.1f}",
        "p10-p90_us": f"{st.p10_us:.1f}-{st.p90_us:.1f}",
        "TFLOP/s": f"{roof.tflops:.1f}",
        "%peak": f"{roof.pct_peak_tflops:.1f}" if roof.pct_peak_tflops is not None else "n/a",
        "GB/s": f"{roof.gbps:.0f}",
        "device": device_name or "?",
    }


# -- the Nsight Compute child: this same command, a few launches ----------------------------
def child_argv(
    plan: KernelPlan,
    problem: Problem,
    config: Config,
    target,
    *,
    reps: int,
    cold_l2: bool = True,
    range_mode: str = "nvtx",
) -> list[str]:
    """The command ncu launches: this CLI for the same implementation, problem, config and
    target, with ``--ncu-child`` (warm-up 1, ``reps`` launches, no record)."""
    cls = type(plan)
    head = [sys.executable, "-m", "kernelplan.cli"]
    if _registered(plan):
        head += [plan.package, plan.name]
    else:
        head += ["--plan", f"{cls.__module__}:{cls.__qualname__}"]
    args = [f"--{k}={_flag_value(v)}" for k, v in problem.to_dict().items()]
    if config.to_dict():
        args += ["--config", *(f"{k}={_flag_value(v)}" for k, v in config.to_dict().items())]
    args += ["--arch", target.sm, "--sm_count", str(target.sm_count)]
    args += ["--warmup", "1", "--reps", str(reps), "--ncu-child", range_mode]
    if not cold_l2:
        args.append("--warm-l2")
    return head + args


def _flag_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (list, tuple)):
        return json.dumps(list(v))
    if hasattr(v, "name") and hasattr(v, "value"):  # an enum member
        return v.name
    return str(v)


def _registered(plan: KernelPlan) -> bool:
    from .registry import load_plan_class

    try:
        return load_plan_class(plan.package, plan.name) is type(plan)
    except Exception:
        return False


def _child(plan, problem, config, target, opts) -> int:
    """Under ncu: the harness's timed region for a few launches; prints one summary line."""
    from . import annotate
    from .ncu import profiler_range

    os.environ["KERNELPLAN_CLOCK_SAMPLER"] = "0"
    if opts.ncu_child == "profiler":
        orig = annotate.nvtx_range

        def ranged(name, *args, **kwargs):
            return profiler_range(orig, name, *args, **kwargs)

        annotate.nvtx_range = ranged
    st = plan.run_benchmark(
        problem,
        config,
        target=target,
        warmup=opts.warmup,
        reps=opts.reps,
        cold_l2=not opts.warm_l2,
        cuda_graph=False,  # unless the implementation's config times graph replays
        annotate=True,
    )
    summary = {"reps": st.reps, "workspaces": st.workspaces, "cuda_graph": st.cuda_graph}
    print(CHILD_MARK + json.dumps(summary))
    return 0


# -- entry points -----------------------------------------------------------------------------
@contextlib.contextmanager
def _argv_hidden():
    """Run with ``sys.argv`` reduced to the program name. The DSL parses ``sys.argv`` on
    every compile for its own ``-diagnostic`` flag with a plain ``argparse`` parser
    (nvidia-cutlass-dsl 4.8.1, ``cutlass/base_dsl/dsl.py``, ``_get_diagnostic_arg_parser``);
    argparse's prefix matching reads our ``--h 16`` (query heads) as ``--help``, prints the
    DSL's usage and exits 0 in the middle of a compile: a silent false success. Our flags are
    parsed already, so the DSL is shown none of them."""
    saved = sys.argv
    sys.argv = saved[:1]
    try:
        yield
    finally:
        sys.argv = saved


def run_argv(plan: KernelPlan, argv: Sequence[str], prog: str | None = None, *, log=print) -> int:
    """Parse ``argv`` for ``plan`` and :func:`run` it; every error is one line, exit 2."""
    try:
        problem, items, opts = parse(plan, argv, prog)
        with _argv_hidden():
            return run(plan, problem, items, opts, log=log)
    except KernelPlanError as e:
        return die(str(explain(e, plan.name)))  # with what differs from the pins, if anything
    except Exception as e:  # an unfinished adapter, or a failure while off the pins: one line
        err = explain(e, plan.name)
        if err is None:
            raise
        return die(str(err))


def kernel_main(cls: type[KernelPlan], argv: Sequence[str] | None = None) -> int:
    """``python -m <package>.<kernel> [options]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_argv(cls(), argv, prog=f"python -m {cls.__module__.rsplit('.', 1)[0]}")


def package_main(package: str, argv: Sequence[str] | None = None) -> int:
    """``uv run <package> <kernel> [options]`` and ``<package> --list``."""
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
    return run_argv(cls(), argv[1:], prog=f"{package} {argv[0]}")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kernelplan.cli <package> <kernel> [options]`` or ``--plan module:Class``."""
    import importlib

    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) >= 2 and argv[0] == "--plan":
        modname, _, qual = argv[1].partition(":")
        try:
            obj: Any = importlib.import_module(modname)
            for part in qual.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as e:
            return die(f"cannot import the implementation {argv[1]}: {e}")
        return run_argv(obj(), argv[2:])
    if not argv:
        return die("usage: python -m kernelplan.cli <package> <kernel> [options]")
    return package_main(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main())
