"""Package-wide runs that Nox drives: ``check``, ``profile`` and ``analyze`` a package.

Each kernel whose target SM the device lacks is not run: one line says so, and ``check``
falls back to the static part (compile for its own SM and analyse the cubin).

Bad input ends a command with one ``error:`` line before any work (an unknown package or
kernel, a results folder that cannot be written, no CuTe DSL); a kernel that fails for a
reason :func:`kernelplan.errors.explain` knows (an unfinished adapter, a DSL or CUTLASS
sources other than the pins) is one ``error:`` line, the others go on, and the exit status
is 1 at the end. A DSL or sources other than the pins are warned about once per command.
An imported CUTLASS example (a plan with ``source``) while the CUTLASS sources are absent, or
``CUTLASS_DIR`` names a folder without them, is skipped with one line saying how to get them
(:func:`sources_absent`): not a failure, the other kernels run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from . import device as devmod
from .cli import die, timing_row
from .cutlass_src import CutlassSourcesMissing, check_environment, examples_dir
from .errors import KernelPlanError, NotInstalled, explain
from .plan import KernelPlan
from .records import ensure_writable, write_record
from .registry import kernel_names, load_plan_class
from .tables import markdown as _markdown
from .tables import static_table
from .workload import ShapeError


class _Failed:
    """A kernel whose adapter could not even be loaded (the error is logged once)."""

    target_sm = ()

    def __init__(self, name: str, error: KernelPlanError):
        self.name, self.error = name, error


def _plans(package: str, kernel: str | None) -> list[KernelPlan | _Failed]:
    names = [kernel] if kernel else kernel_names(package)
    out: list[KernelPlan | _Failed] = []
    for n in names:
        try:
            out.append(load_plan_class(package, n)())
        except Exception as e:
            out.append(_Failed(n, _explained(e, n)))
    return out


def sources_absent(plans: Sequence[Any]) -> tuple[list[str], CutlassSourcesMissing | None]:
    """The names of ``plans`` that import a CUTLASS example (``source`` set) when the CUTLASS
    sources are absent (or ``CUTLASS_DIR`` names a folder without them), with the error that
    says where they were looked for and how to get them; ``([], None)`` when the sources are
    there or no plan needs them. Those plans are skipped, not failed: our own kernels, the
    references and the peers need no CUTLASS sources."""
    names = [p.name for p in plans if getattr(p, "source", None)]
    if not names:
        return [], None
    try:
        examples_dir()
    except CutlassSourcesMissing as e:
        return names, e
    return [], None


def _absent_line(names: Sequence[str], e: CutlassSourcesMissing) -> str:
    """One ``skip:`` line for the implementations ``names`` that need the absent sources."""
    need = "needs" if len(names) == 1 else "need"
    return f"skip: {', '.join(names)} ({need} the CUTLASS sources): {e}"


def _explained(e: BaseException, name: str) -> KernelPlanError:
    """``e`` as the one-line error :func:`kernelplan.errors.explain` makes of it, or ``e``
    itself raised again (a bug of this project keeps its traceback)."""
    err = explain(e, name)
    if err is None:
        raise e
    return err


def _error_line(name: str, err: BaseException, problem: str | None = None) -> str:
    text = str(err)
    if text.startswith(name):
        return f"error: {text}"
    return f"error: {name}{' ' + problem if problem else ''}: {text}"


def _error_row(name: str, problem: str = "-") -> dict[str, str]:
    return {"kernel": name, "problem": problem, "result": "ERROR (above)", "rel_norm": "-",
            "record": "-"}  # fmt: skip


def _progress(total: int, label: str):
    try:
        from rich.progress import Progress
    except ImportError:
        return None
    p = Progress(transient=False)
    p.start()
    task = p.add_task(label, total=total)
    return p, task


def check_package(
    package: str,
    kernel: str | None = None,
    *,
    results_dir=None,
    record: bool = True,
    fault: str = "none",
    log=print,
) -> int:
    """Check every kernel of ``package`` at its check problems. Exit code 1 if any fails."""
    dev = devmod.current_device()
    log(f"device: {dev.name + ' (' + dev.sm + ')' if dev else 'none (no CUDA GPU)'}")
    rows, failed = [], 0
    plans = _plans(package, kernel)
    absent, missing = sources_absent(plans)
    if missing:
        log(_absent_line(absent, missing))
    for plan in plans:
        if plan.name in absent:
            rows.append(_skip_row(plan.name, "needs the CUTLASS sources (above)"))
            continue
        if isinstance(plan, _Failed):
            if isinstance(plan.error, CutlassSourcesMissing):
                log(_absent_line([plan.name], plan.error))
                rows.append(_skip_row(plan.name, "needs the CUTLASS sources (above)"))
                continue
            failed += 1
            log(_error_line(plan.name, plan.error))
            rows.append(_error_row(plan.name))
            continue
        try:
            failed += _check_one(plan, dev, rows, results_dir, record, fault, log)
        except NotInstalled as e:  # a peer missing here is reported, not failed
            log(f"skip: {e}")
            rows.append(_skip_row(plan.name, "not installed here (above)"))
        except CutlassSourcesMissing as e:  # an example loaded by other means than `source`
            log(_absent_line([plan.name], e))
            rows.append(_skip_row(plan.name, "needs the CUTLASS sources (above)"))
        except Exception as e:
            failed += 1
            log(_error_line(plan.name, _explained(e, plan.name)))
            rows.append(_error_row(plan.name))
    log(_markdown(rows))
    return 1 if failed else 0


def _check_one(plan, dev, rows, results_dir, record, fault, log) -> int:
    """``check`` for one kernel; appends its table rows; returns how many checks failed."""
    failed = 0
    probs = plan.check_problems()
    try:
        # (our builds that cannot run here are compiled and analysed below, so the line does
        # not point to --prof_type=static)
        devmod.require_plan_runs_on(plan, dev, static_hint=False)
        runnable = True
    except devmod.ArchMismatch as e:
        runnable = False
        log(
            f"skip run: {e}"
            + ("; compiled and analysed statically below" if plan.target_sm else "")
        )
    if not probs and not runnable and plan.target_sm:
        # compile-only here: its own default problem shows its footprint
        probs = [plan.default_problem()]
    if not probs:
        log(f"skip: {plan.name} takes none of the {plan.workload.name} check problems")
    target = plan.target()
    for prob in probs:
        config = plan.default_config(prob)
        if runnable:
            try:
                ok, results, info = plan.run_check(prob, config, target=target, fault=fault)
            except ShapeError as e:  # refused at run time (a backend's own rule): not taken
                log(f"skip: {plan.name} {prob.label()}: {e}")
                rows.append(_skip_row(plan.name, "not taken (above)", prob))
                continue
            for r in results:
                log(f"{plan.name} {prob.label()}: {r.line()}")
            if info.get("not_produced"):
                log(f"{plan.name}: does not produce {', '.join(info['not_produced'])}")
            failed += not ok
            rec = plan.record_base("check", prob, config, target)
            rec["check"] = {"passed": ok, "outputs": [r.to_dict() for r in results], **info}
            path = write_record(rec, results_dir) if record else None
            rows.append(
                {
                    "kernel": plan.name,
                    "problem": _short(prob),
                    "result": "PASS" if ok else "FAIL",
                    "rel_norm": f"{max(r.rel_norm for r in results):.2e}",
                    "record": path.name if path else "-",
                }
            )
        elif plan.target_sm:
            try:
                st = plan.run_static(prob, config, target)
                path = (
                    static_record(plan, prob, config, target, st, results_dir)[0]
                    if record
                    else None
                )
                rows.append(
                    {
                        "kernel": plan.name,
                        "problem": _short(prob),
                        "result": (
                            f"static ({st.get('arch', plan.target_sm[0])}): "
                            f"{st.get('registers')} regs/thread, "
                            f"{st.get('dynamic_smem_bytes')} B dynamic SMEM, "
                            f"{(st.get('categories') or {}).get('mma', 0)} MMA instr"
                        ),
                        "rel_norm": "-",
                        "record": path.name if path else "-",
                    }
                )
            except CutlassSourcesMissing:
                raise  # a skip (check_package), not a failure
            except KernelPlanError as e:
                failed += 1
                log(_error_line(plan.name, _explained(e, plan.name)))
                rows.append(
                    {
                        "kernel": plan.name,
                        "problem": _short(prob),
                        "result": "static FAILED (above)",
                        "rel_norm": "-",
                        "record": "-",
                    }
                )
            break  # the static footprint does not change with the check shapes
        else:
            rows.append(
                {
                    "kernel": plan.name,
                    "problem": _short(prob),
                    "result": "not run (needs a GPU)",
                    "rel_norm": "-",
                    "record": "-",
                }
            )
            break
    return failed


def _skip_row(name: str, why: str, prob: Any = None) -> dict[str, Any]:
    return {
        "kernel": name,
        "problem": _short(prob) if prob is not None else "-",
        "result": f"skipped: {why}",
        "rel_norm": "-",
        "record": "-",
    }


def _short(problem: Any) -> str:
    return problem.label() if hasattr(problem, "label") else str(problem)


def profile_package(
    package: str,
    kernel: str | None = None,
    *,
    autotune: bool = False,
    reps: int = 100,
    warmup: int = 10,
    cold_l2: bool = True,
    cuda_graph: bool = False,
    results_dir=None,
    record: bool = True,
    ncu_opts=None,
    shard: tuple[int, int] | None = None,
    log=print,
) -> int:
    """Time every runnable kernel of ``package`` at its profile problems; print a table.

    With ``ncu_opts`` (an ``ncu.NcuOptions``: ``profile --ncu``) each one runs under Nsight
    Compute instead and the table shows its ncu metrics (exit 1 if any run failed). With
    ``shard=(i, n)`` only the (kernel, problem) items ``i, i+n, i+2n, ...`` run: worker ``i``
    of ``profile --gpus n`` (:func:`profile_on_gpus`).
    """
    dev = devmod.current_device()
    if dev is None:
        return die("profile needs a CUDA GPU; none is visible (nox -s analyze works without one)")
    ncu_bin = None
    if ncu_opts is not None:
        from . import ncu as ncumod

        ncu_bin = ncumod.find_ncu()
    log(f"device: {dev.name} ({dev.sm}), SMs {dev.sm_count}, max clocks {dev.clocks_max}")
    plans = _plans(package, kernel)
    work, failed = [], 0
    absent, missing = sources_absent(plans)
    for plan in plans:
        if isinstance(plan, _Failed):
            if isinstance(plan.error, CutlassSourcesMissing):
                log(_absent_line([plan.name], plan.error))
                continue
            failed += 1
            log(_error_line(plan.name, plan.error))
            continue
        try:
            devmod.require_plan_runs_on(plan, dev)
        except devmod.ArchMismatch as e:
            log(f"skip: {e}")
            continue
        if plan.name in absent:
            log(_absent_line([plan.name], missing))
            continue
        work += [(plan, prob) for prob in plan.profile_problems()]
    if shard is not None:
        total = len(work)
        work = shard_items(work, *shard)
        log(f"shard {shard[0]}/{shard[1]}: {len(work)} of {total} (kernel, problem) items")
    rows = []
    prog = _progress(len(work), f"profile {package}")
    try:
        for plan, prob in work:
            try:
                row = _profile_one(plan, prob, autotune, reps, warmup, cold_l2, cuda_graph,
                                   results_dir, record, ncu_opts, ncu_bin, dev, log)  # fmt: skip
            except CutlassSourcesMissing as e:
                log(_absent_line([plan.name], e))
                row = None
            except Exception as e:
                failed += 1
                log(_error_line(plan.name, _explained(e, plan.name), _short(prob)))
                row = None
            if row is not None:
                rows.append(row)
            if prog:
                prog[0].advance(prog[1])
    finally:
        if prog:
            prog[0].stop()
    log(_markdown(rows))
    return 1 if failed else 0


def _profile_one(
    plan, prob, autotune, reps, warmup, cold_l2, cuda_graph, results_dir, record, ncu_opts,
    ncu_bin, dev, log,
) -> dict[str, Any]:  # fmt: skip
    """One (kernel, problem) of ``profile``: its table row (errors raised for the caller)."""
    config = plan.default_config(prob)
    target = plan.target()
    tune = None
    if autotune:
        config, tune = plan.autotune(prob, target=target, cold_l2=cold_l2, log=log)
    if ncu_opts is not None:
        from . import ncu as ncumod

        rec, path = ncumod.profile(
            plan,
            prob,
            config,
            target,
            ncu_opts,
            results_dir=results_dir,
            record=record,
            cold_l2=cold_l2,
            warmup=warmup,
            reps=reps,
            cuda_graph=cuda_graph,
            log=log,
            ncu=ncu_bin,
        )
        return ncumod.table_row(rec, path)
    rec, st, roof = plan.benchmark_record(
        prob,
        config,
        target=target,
        warmup=warmup,
        reps=reps,
        cold_l2=cold_l2,
        cuda_graph=cuda_graph,
        log=log,
    )
    rec["autotune"] = tune
    path = write_record(rec, results_dir) if record else None
    row = {"problem": _short(prob), **timing_row(plan, config, st, roof, dev.name)}
    row["record"] = path.name if path else "-"
    return row


def shard_items(items: Sequence[Any], index: int, count: int) -> list[Any]:
    """Worker ``index`` of ``count``'s share of ``items``, dealt round-robin (items ``index,
    index + count, ...``): every item goes to exactly one worker, and the workers' shares
    differ in length by one at most."""
    if not 0 <= index < count:
        raise KernelPlanError(f"--shard {index}/{count}: the index must be in 0..{count - 1}")
    return list(items[index::count])


def gpu_ids(count: int) -> list[str]:
    """The first ``count`` GPUs a worker may be given, as ``CUDA_VISIBLE_DEVICES`` values:
    those this process is allowed (its own ``CUDA_VISIBLE_DEVICES``), else ``0..n-1`` for the
    n GPUs NVML (or torch) counts.

    Raises:
        KernelPlanError: fewer GPUs than asked for (the message says how many there are).
    """
    import os

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [x.strip() for x in visible.split(",") if x.strip()]
    else:
        n = 0
        nv = devmod._nvml()
        if nv is not None:
            try:
                n = int(nv.nvmlDeviceGetCount())
            except Exception:
                n = 0
        if not n:
            try:
                import torch

                n = torch.cuda.device_count()
            except ImportError:
                n = 0
        ids = [str(i) for i in range(n)]
    if count > len(ids):
        raise KernelPlanError(
            f"--gpus {count}: this host shows {len(ids)} GPU(s)"
            + (f" (CUDA_VISIBLE_DEVICES={visible})" if visible is not None else "")
        )
    return ids[:count]


def _worker_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` of ``profile`` less ``--gpus`` and ``--results-dir`` (with their values)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("--gpus", "--results-dir"):
            skip = True
            continue
        if a.startswith(("--gpus=", "--results-dir=")):
            continue
        out.append(a)
    return out


def profile_on_gpus(
    argv: Sequence[str],
    gpus: Sequence[str],
    *,
    results_dir=None,
    record: bool = True,
    worker: Sequence[str] | None = None,
    log=print,
) -> int:
    """``profile --gpus N``: one worker process per GPU (``CUDA_VISIBLE_DEVICES`` set to its
    GPU), each running ``profile ... --shard i/N`` on its round-robin share of the (kernel,
    problem) items (with ``--autotune`` each item is tuned whole on one GPU, so every
    candidate of a problem is timed on the same device), its records in a folder of its own;
    then the records are merged into the results folder
    (:func:`kernelplan.records.merge_records`: never overwriting one). Each worker's output
    follows, prefixed with its GPU. ``worker`` replaces the worker command (tests).

    Returns:
        the highest worker exit status, or 1 when a record could not be merged.
    """
    import os
    import subprocess
    import tempfile
    import time
    from pathlib import Path

    from .records import merge_records

    base = list(worker) if worker else [sys.executable, "-m", "kernelplan", "profile"]
    n = len(gpus)
    tmp = Path(tempfile.mkdtemp(prefix="kernelplan-gpus-"))
    log(f"profile on {n} GPUs ({', '.join(gpus)}): one worker each, items dealt round-robin")
    t0 = time.perf_counter()
    procs = []
    for i, gpu in enumerate(gpus):
        out = tmp / f"gpu{i}"
        cmd = [*base, *_worker_argv(argv), "--shard", f"{i}/{n}"]
        cmd += ["--results-dir", str(out)] if record else []
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu}
        logf = open(tmp / f"gpu{i}.log", "w", encoding="utf-8")  # noqa: SIM115
        procs.append((i, gpu, out, logf, subprocess.Popen(cmd, env=env, stdout=logf,
                                                          stderr=subprocess.STDOUT)))  # fmt: skip
    rcs = []
    for i, gpu, _out, logf, proc in procs:
        rc = proc.wait()
        logf.close()
        rcs.append(rc)
        log(f"== worker {i} (GPU {gpu}): exit {rc}")
        for line in (tmp / f"gpu{i}.log").read_text(encoding="utf-8").splitlines():
            log(f"[gpu {gpu}] {line}")
    log(f"{n} workers: {time.perf_counter() - t0:.1f} s wall")
    refused = 0
    if record:
        for i, gpu, out, _l, _p in procs:
            if out.is_dir():
                log(f"merge worker {i} (GPU {gpu}):")
                refused += len(merge_records(out, results_dir, log=log)["refused"])
    if refused:
        log(f"the workers' files are kept in {tmp} (a record was refused)")
    else:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return max([*rcs, 1 if refused else 0])


def static_record(plan, prob, config, target, st, results_dir=None, store=None):
    """Record a static result unless a committed record already holds the same numbers.

    Returns ``(path, reused)``: the existing record (found through the compile cache's note,
    or by comparing the numbers) or the newly written one. Re-running an analysis therefore
    leaves the results folder as it was.
    """
    from pathlib import Path

    from .cache import StaticCache, matching_static_record
    from .records import results_root

    store = store if store is not None else StaticCache()
    root = Path(results_dir) if results_dir is not None else results_root()
    cache = st.get("cache") or {}
    path = store.record_under(cache["key"], root) if cache.get("hit") else None
    if path is None:  # the same numbers may already be recorded (e.g. after a harness edit)
        path = matching_static_record(root, plan, prob, config, st)
        if path is not None and cache.get("key"):
            store.note_record(cache["key"], path)
    if path is not None:
        return path, True
    rec = plan.record_base("static", prob, config, target)
    rec["static"] = st
    path = write_record(rec, results_dir)
    if cache.get("key"):
        store.note_record(cache["key"], path)
    return path, False


def analyze_package(
    package: str, kernel: str | None = None, *, results_dir=None, record: bool = True, log=print
) -> int:
    """Compile every CuTe DSL kernel of ``package`` for its own SM and analyse the cubin.

    Results come from the compile cache (:mod:`kernelplan.cache`) where nothing they depend
    on changed; the others compile in parallel worker processes (``$KERNELPLAN_JOBS``,
    default the CPU count, at most 4). A cached result that already has a record under the
    results folder is not recorded again (the line names that record). A missing cuobjdump
    stops the run at once (exit 2); a kernel that fails to compile is one ``error:`` line
    (exit 1 at the end, after the others). Prints the table, the launch constants compiled
    in, and how long it took.
    """
    import time

    from . import static
    from .cache import StaticCache, run_static_many

    t0 = time.perf_counter()
    store = StaticCache()
    items = []
    reports, failed, hits, skipped = [], 0, 0, 0
    plans = _plans(package, kernel)
    absent, missing = sources_absent(plans)
    if missing:
        log(_absent_line(absent, missing))
    for plan in plans:
        if plan.name in absent:
            skipped += 1
            continue
        if isinstance(plan, _Failed):
            if isinstance(plan.error, CutlassSourcesMissing):
                skipped += 1
                log(_absent_line([plan.name], plan.error))
                continue
            failed += 1
            log(_error_line(plan.name, plan.error))
            continue
        if not plan.target_sm:
            log(f"skip: {plan.name} is a peer, not a CuTe DSL kernel")
            continue
        try:  # what the compile workers need: an unfinished adapter fails here, as one line
            probs = plan.check_problems() or plan.profile_problems() or [plan.default_problem()]
            if not probs:
                log(f"skip: {plan.name} takes none of the {plan.workload.name} problems")
                continue
            prob = probs[0]
            config, target = plan.default_config(prob), plan.target()
            plan.tensor_specs(prob)
        except CutlassSourcesMissing as e:
            skipped += 1
            log(_absent_line([plan.name], e))
            continue
        except Exception as e:
            failed += 1
            log(_error_line(plan.name, _explained(e, plan.name)))
            continue
        items.append((plan, prob, config, target))
    for i, st, seconds in run_static_many(items):
        plan, prob, config, target = items[i]
        if isinstance(st, static.ToolMissingError):
            return die(str(st))
        if isinstance(st, CutlassSourcesMissing):
            skipped += 1
            log(_absent_line([plan.name], st))
            continue
        if isinstance(st, KernelPlanError):
            failed += 1
            log(_error_line(plan.name, _explained(st, plan.name)))
            continue
        cache = st.get("cache") or {}
        hits += bool(cache.get("hit"))
        how = (
            "cached"
            if cache.get("hit")
            else f"compiled in {st.get('compile_seconds') or 0:.1f} s (ready after {seconds:.1f} s)"
        )
        if record:
            path, reused = static_record(plan, prob, config, target, st, results_dir, store)
            log(f"{plan.name}: {how}; record{' (unchanged)' if reused else ''}: {path}")
        else:
            log(f"{plan.name}: {how}")
        reports.append(st)
    if reports:
        log(static_table(reports))
    log(
        f"{package}: {len(reports)} kernel(s) analysed in {time.perf_counter() - t0:.1f} s "
        f"({hits} from the compile cache"
        f"{', ' + str(skipped) + ' skipped: no CUTLASS sources' if skipped else ''}"
        f"{', ' + str(failed) + ' failed' if failed else ''})"
    )
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernelplan")
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("check", "profile", "analyze"):
        s = sub.add_parser(name)
        s.add_argument("package")
        s.add_argument("kernel", nargs="?")
        s.add_argument("--no-record", action="store_true")
        s.add_argument("--results-dir", default=None)
        if name == "check":
            s.add_argument(
                "--inject-fault", choices=("none", "skip-launch", "perturb"), default="none"
            )
        if name == "profile":
            s.add_argument("--autotune", action="store_true")
            s.add_argument("--reps", type=int, default=100)
            s.add_argument("--warmup", type=int, default=10)
            s.add_argument("--warm-l2", action="store_true")
            s.add_argument("--cuda-graph", action="store_true")
            s.add_argument("--ncu", action="store_true", help="run each kernel under ncu")
            s.add_argument(
                "--gpus",
                type=int,
                default=1,
                help="one worker per GPU, (kernel, problem) items dealt round-robin, records "
                "merged (default 1: this process, the current GPU)",
            )
            s.add_argument("--shard", default=None, help=argparse.SUPPRESS)  # i/N: a worker
            from .ncu import add_arguments as add_ncu_arguments

            add_ncu_arguments(s)
    sub.add_parser("list")
    a = p.parse_args(argv)
    try:
        if a.cmd == "list":
            from .registry import package_names

            for pkg in package_names():
                print(pkg + ": " + ", ".join(kernel_names(pkg)))
            return 0
        # Bad input before any work, in this order: the package and kernel names, the
        # results folder, the CuTe DSL (then one warning for a DSL or sources off the pins).
        names = kernel_names(a.package)
        if a.kernel and a.kernel not in names:
            load_plan_class(a.package, a.kernel)  # raises: the message lists the kernels
        if not a.no_record:
            ensure_writable(a.results_dir)
        check_environment()
        common = {"results_dir": a.results_dir, "record": not a.no_record}
        if a.cmd == "check":
            return check_package(a.package, a.kernel, fault=a.inject_fault, **common)
        if a.cmd == "profile":
            from .ncu import NcuOptions

            shard = _parse_shard(a.shard) if a.shard else None
            if a.gpus < 1:
                return die(f"--gpus must be at least 1 (got {a.gpus})")
            if a.gpus > 1:
                if shard is not None:
                    return die("--gpus and --shard do not go together")
                gpus = gpu_ids(a.gpus)
                args = list(sys.argv[1:] if argv is None else argv)
                args = args[args.index("profile") + 1 :]  # the worker command names it
                return profile_on_gpus(args, gpus, results_dir=a.results_dir,
                                       record=not a.no_record)  # fmt: skip
            return profile_package(
                a.package,
                a.kernel,
                autotune=a.autotune,
                reps=a.reps,
                warmup=a.warmup,
                cold_l2=not a.warm_l2,
                cuda_graph=a.cuda_graph,
                ncu_opts=NcuOptions.from_args(a) if a.ncu else None,
                shard=shard,
                **common,
            )
        return analyze_package(a.package, a.kernel, **common)
    except KernelPlanError as e:
        return die(str(e))


def _parse_shard(text: str) -> tuple[int, int]:
    i, _, n = text.partition("/")
    if not (i.isdigit() and n.isdigit() and int(n) > 0):
        raise KernelPlanError(f"--shard must be I/N with 0 <= I < N (got {text!r})")
    shard_items((), int(i), int(n))  # the range check
    return int(i), int(n)


if __name__ == "__main__":
    sys.exit(main())
