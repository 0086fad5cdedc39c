"""Stage 6, the design: every value of the entry call decided. A traced literal, DSL type or
enum member is a Config field with the example's default; a value of a workload problem field
is ``problem.<field>``; tensors come from the workload's specs, the stream is ``STREAM``,
``max_active_clusters`` is derived from the cluster shape; anything else is a named TODO. Into
a new package, the example's remaining flags become the workload stub's problem fields."""

from __future__ import annotations

import ast
import contextlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import KernelPlanError
from .astutil import src
from .entry import Param, call_map
from .trace import Value

if TYPE_CHECKING:
    from .example import Example
    from .workspace import PackageWorkload

#: Example flags the harness replaces (tolerances, repetitions, reference skipping, cold L2).
HARNESS_FLAGS = {
    "tolerance", "atol", "rtol", "warmup_iterations", "iterations", "skip_ref_check",
    "use_cold_l2", "benchmark", "perf_test", "print_rtol_stats", "no_print_rtol_stats",
}  # fmt: skip
WORKLOAD = "workload.py"  # a new package's workload stub
TUNING_RE = re.compile(
    r"tile|tiler|cluster|stage|thread|swizzle|raster|acc_dtype|2cta|tma_store|prefetch|"
    r"block_size|atom_layout|promotion|persistent|split_k|occupancy|num_warps|copy_bits|"
    r"warpgroup|pingpong"
)


@dataclass
class Field:
    name: str
    type: str
    default: Any
    why: str
    kind: str  # lit | dtype | enum


@dataclass
class Todo:
    name: str
    what: str
    where: str  # the file it is in


@dataclass
class Design:
    config: list[Field]
    problem: list[Field]  # new package: the workload stub's problem fields
    ctor: list[tuple[str, str]]  # (parameter, expression)
    call: list[str]  # argument expressions of the entry call
    locals: list[tuple[str, Todo]]  # values plan() must compute
    tensors: list[str]
    override_tensors: bool
    todos: list[Todo]
    dropped: list[str]  # example flags the adapter does not offer (the workload has them)
    clusters: str | None  # cluster-size expression when max_active_clusters is passed


def _py_type(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float, str)):
        return type(v).__name__
    if (
        isinstance(v, tuple)
        and v
        and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    ):
        return "tuple[int, ...]"
    return "Any"


def _field(name: str, v: Value, why: str) -> Field:
    return Field(name, "str" if v.kind != "lit" else _py_type(v.value), v.value, why, v.kind)


def _torch_name(dsl: str) -> str:
    from .. import dtypes

    with contextlib.suppress(KernelPlanError, KeyError):
        return dtypes.storage_of(dsl)
    return dsl


def _is_tensor(p: Param) -> bool:
    ann = p.annotation or ""
    return "Tensor" in ann or (
        not ann and p.default is None and p.kind == "positional" and p.name != "stream"
    )


def design(ex: Example, adapter: str, pw: PackageWorkload | None) -> Design:
    """Every value of the entry call decided (see the module docstring); ``pw`` is the
    package's workload, None for a new package (whose ``workload.py`` is a stub)."""
    e, tr = ex.entry, ex.tracer
    problem_fields = set(pw.problem_fields) if pw else set()
    config: list[Field] = []
    todos: list[Todo] = []
    locals_: list[tuple[str, Todo]] = []
    used_flags: set[str] = set()
    wanted_flags: set[str] = set()

    def value(p: Param, arg: ast.expr | None) -> str:
        v = tr.trace(arg) if arg is not None else None
        if v is None:  # upstream does not pass it: the signature's own default, if a value
            leaf = tr.leaf(p.default) if p.default is not None else None
            v = leaf or Value("todo", why="upstream passes nothing and it has no default value")
            if leaf:
                v.why = f"its default in the signature (`{p.name}={src(p.default, 40)}`)"
        used_flags.update(v.flags if v.kind != "todo" else [])
        wanted_flags.update(v.flags if v.kind == "todo" else [])
        name = next(
            (f for f in v.flags if f in problem_fields),
            p.name if p.name in problem_fields else None,
        )
        if name and v.kind != "todo":
            return f"dtypes.cute_type(problem.{name})" if v.kind == "dtype" else f"problem.{name}"
        if v.kind == "todo":
            ann = p.annotation or ""
            if "." in ann and ann.split(".")[0] in tr.modules - {"typing"}:
                v.why += f"; it is a member of `{ann}` (`mod.{ann}.<NAME>`)"
            t = Todo(p.name, f"{v.why}; compute it here from `problem` and `config`", adapter)
            todos.append(t)
            locals_.append((p.name, t))
            return p.name
        config.append(_field(p.name, v, v.why))
        if v.kind == "dtype":
            return f"dtypes.cute_type(config.{p.name})"
        if v.kind == "enum":
            return f"mod.{v.enum}[config.{p.name}]"
        return f"config.{p.name}"

    ctor: list[tuple[str, str]] = []
    if e.ctor_class and e.ctor_params is None:
        why = "is inherited from a class outside the example's files: pass its arguments"
        todos.append(Todo("constructor", f"`{e.ctor_class}.__init__` {why}", adapter))
    passed = call_map(
        e.ctor_params or [], e.ctor_call, list(e.ctor_call.args) if e.ctor_call else []
    )
    for p in e.ctor_params or []:
        if p.kind in ("vararg", "varkw"):
            continue
        if p.name not in passed and p.default is not None and tr.leaf(p.default) is None:
            continue  # an expression default (a lambda): upstream's own
        ctor.append((p.name, value(p, passed.get(p.name))))

    passed = call_map(e.call_params, e.compile_call, e.compile_args)
    call: list[str] = []
    tensors: list[str] = []
    clusters = None
    params = [p for p in e.call_params if p.kind in ("positional", "kwonly")]
    last = max(
        (i for i, p in enumerate(params) if p.name in passed or p.default is None), default=-1
    )
    for p in params[: last + 1]:
        ann = p.annotation or ""
        if p.name == e.object_param:
            expr = "obj"
        elif "CUstream" in ann or p.name == "stream":
            expr = "STREAM"
        elif _is_tensor(p):
            tensors.append(p.name)
            expr = f"t[{p.name!r}]"
        elif "max_active_clusters" in p.name:
            cl = next(
                (f.name for f in config if "cluster" in f.name and f.type.startswith("tuple")), None
            )
            if cl:
                clusters = f"math.prod(config.{cl})"
                expr = "clusters"
            else:
                t = Todo(
                    p.name,
                    "no config field holds the cluster shape: max_active_clusters(size, target)",
                    adapter,
                )
                todos.append(t)
                locals_.append((p.name, t))
                expr = p.name
        else:
            expr = value(p, passed.get(p.name))
        call.append(f"Const({expr})" if "Constexpr" in ann else expr)

    # tunables upstream reads only inside a computed value: config fields, so the TODO can use them
    for dest in sorted(wanted_flags - used_flags - problem_fields):
        f = tr.flags.get(dest)
        if (
            f
            and TUNING_RE.search(dest)
            and f.value.kind != "todo"
            and dest not in {c.name for c in config}
        ):
            config.append(_field(dest, f.value, f.value.why + "; read by a TODO below"))
            used_flags.add(dest)

    remaining = [f for d, f in tr.flags.items() if d not in used_flags and d not in HARNESS_FLAGS]
    problem: list[Field] = []
    dropped: list[str] = []
    if pw is None:  # a new package: the remaining flags are the workload's problem
        taken = {c.name for c in config}
        for f in remaining:
            v = f.value
            if f.dest in taken:
                continue
            if v.kind == "todo" or v.value is None:
                problem.append(Field(f.dest, "Any", None, v.why, "todo"))
                todos.append(Todo(f.dest, f"{v.why}: give the problem field a default", WORKLOAD))
            elif v.kind == "dtype":
                why = f"{v.why} (cutlass.{v.value})"
                problem.append(Field(f.dest, "str", _torch_name(v.value), why, "lit"))
            else:
                problem.append(_field(f.dest, v, v.why))
    else:
        dropped = [f.option for f in remaining]

    names = pw.tensors if pw else None
    override = pw is not None and (names is None or set(names) != set(tensors))
    if override:
        have = ", ".join(names) if names else "unknown"
        todos.append(
            Todo(
                "tensor_specs",
                f"the workload's tensors are {have}; {e.name} takes {', '.join(tensors)} "
                f"(built in {ex.run_lines}): return a TensorSpec for each",
                adapter,
            )
        )
        hint = (
            f"; upstream checks with {', '.join(ex.reference_hints)}" if ex.reference_hints else ""
        )
        todos.append(
            Todo(
                "reference",
                f"the expected outputs under {e.name}'s tensor names, in float32{hint} "
                "(and reference_lowp, or None)",
                adapter,
            )
        )
    checks = (
        f"upstream checks in {', '.join(ex.checks)}"
        if ex.checks
        else "alignment, tile divisibility, dtypes"
    )
    todos.insert(
        0,
        Todo(
            "supports",
            f"raise ShapeError for problems {e.ctor_class or e.name} cannot take ({checks}), "
            "then delete this line",
            adapter,
        ),
    )
    if pw is None:  # the workload stub's own TODOs
        hint = f"; upstream checks with {', '.join(ex.reference_hints)}" * bool(ex.reference_hints)
        todos += [
            Todo(
                "tensor_specs",
                f"one TensorSpec per tensor {e.name} takes: {', '.join(tensors)} (built in "
                f"{ex.run_lines}); outputs role='output', init='empty'",
                WORKLOAD,
            ),
            Todo(
                "reference",
                f"the expected outputs by name, in float32 with PyTorch{hint}",
                WORKLOAD,
            ),
            Todo(
                "flops_bytes",
                "(FLOPs, minimum DRAM bytes: each input read, each output written once)",
                WORKLOAD,
            ),
        ]
    return Design(config, problem, ctor, call, locals_, tensors, override, todos, dropped, clusters)
