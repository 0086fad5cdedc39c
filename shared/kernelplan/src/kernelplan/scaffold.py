"""Scaffold a new imported CUTLASS CuTe DSL example: ``nox -s new -- <package> <kernel> --from
<path under examples/python/CuTeDSL>`` (also ``python -m kernelplan.scaffold ...``).

What it writes (never overwriting anything that exists):

- the package, when ``packages/<package>/`` has none: ``pyproject.toml`` (distribution
  ``cute-<package>``, console script ``<package>``, entry point group ``kernelplan.packages``),
  ``src/cute_<pkg>/{__init__,__main__}.py`` and ``tests/``; the root ``pyproject.toml`` gets the
  workspace source (and the root dependency, as ``cute-gemm`` has); Nox's ``check-<package>``
  session appears by itself (the noxfile lists ``packages/*``); ``uv lock`` is run when uv and
  ``uv.lock`` are there;
- the kernel sub-package ``<kernel>/{__init__,__main__,<kernel>}.py``: a KernelPlan subclass
  pre-filled with what the example's source says when read with :mod:`ast` (it is never
  imported or run here): the target SM from the instructions it uses, with the evidence; the
  entry point (a class with a ``@cute.jit`` ``__call__``, or a ``@cute.jit`` host function) and
  its signature; the constructor parameters; the example's CLI and its defaults; how upstream
  compiles it; a ``validate`` that refuses non-positive problem sizes (the integer flags).
  What only a person can write (tensor specs, the PyTorch reference, FLOPs and bytes) raises
  ``NotImplementedError("TODO(scaffold): ...")`` saying what to fill in; a config value
  upstream computes before the call (in ``run()``) is None in ``default_config``, with a
  comment citing the lines that compute it (and, when they read the problem, "mirror its
  formula");
- the kernel's row in the package's ``KERNELS`` table, a test that compiles the kernel for its
  SM on the CPU (skipped, with the reason, while anything :func:`unfinished` lists is open),
  and a devlog stub ``knowledge/kernels/<kernel-slug>.md``, or ``<package>-<kernel>.md`` when
  that name is another kernel's devlog (the request's devlog template).

It refuses, with one ``error:`` line and exit status 2: an example path that is not a file of
the sources, a module with no ``__main__`` block or no ``@cute.jit`` entry (a helper library),
a kernel that exists, a bad package or kernel name.

The module also holds the few helpers the generated adapters call at run time
(:func:`dsl_value`, :func:`int_list`, :func:`torch_dtype`, :func:`active_clusters`,
:func:`upstream_default`, :func:`unfinished`); importing them imports nothing heavy.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import inspect
import json
import keyword
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .device import max_active_clusters
from .errors import KernelPlanError

LINE = 100
TODO = "TODO(scaffold)"
EXAMPLES_PREFIXES = ("third_party/cutlass/examples/python/CuTeDSL/", "examples/python/CuTeDSL/")

# --------------------------------------------------------------------------------------------
# run-time helpers for the generated adapters
# --------------------------------------------------------------------------------------------

#: CuTe DSL type name -> torch dtype name (TensorSpec spelling).
TORCH_DTYPES = {
    "Float16": "float16",
    "BFloat16": "bfloat16",
    "Float32": "float32",
    "TFloat32": "float32",
    "Float64": "float64",
    "Float8E4M3FN": "float8_e4m3fn",
    "Float8E5M2": "float8_e5m2",
    "Int8": "int8",
    "Uint8": "uint8",
    "Int16": "int16",
    "Int32": "int32",
    "Int64": "int64",
    "Boolean": "bool",
}

#: SM count of the usual part of each target, for compile-time ``max_active_clusters`` when
#: there is no GPU to ask (override with ``config["sm_count"]``).


def dsl_value(value: Any) -> Any:
    """A JSON problem/config value as the upstream code takes it: a CuTe DSL type name
    ("Float16", "TFloat32") becomes the type, a list a tuple (recursively); else unchanged."""
    if isinstance(value, list):
        return tuple(dsl_value(v) for v in value)
    if isinstance(value, str) and value[:1].isupper():
        import cutlass

        try:
            return cutlass.dtype(value)
        except (TypeError, KeyError):
            return value
    return value


def int_list(text: str) -> list[int]:
    """argparse type: "128,256", "128x256" or "(128, 256)" -> [128, 256]."""
    parts = [p for p in re.split(r"[,x\s()\[\]]+", text.strip()) if p]
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers like 128,256, got {text!r}") from None


def torch_dtype(name: str) -> str:
    """CuTe DSL type name ("BFloat16") -> torch dtype name ("bfloat16"); torch names pass."""
    if name in TORCH_DTYPES.values():
        return name
    try:
        return TORCH_DTYPES[name]
    except KeyError:
        raise KernelPlanError(f"no torch dtype for CuTe DSL type {name!r}") from None


def active_clusters(config: Mapping[str, Any], target_sm: str) -> tuple[int, str]:
    """``max_active_clusters`` for a kernel that bakes it in
    (:func:`kernelplan.device.max_active_clusters`: HardwareInfo on a GPU of the target's
    SM, else ``config["sm_count"]`` or the target's usual part), for the cluster size given
    by the product of the first config value whose key holds "cluster". Returns (value,
    where from)."""
    size = 1
    for k, v in config.items():
        if "cluster" in k and isinstance(v, (list, tuple)) and v:
            for x in v:
                size *= int(x)
            break
    n, _sms, why = max_active_clusters(size, config, target_sm=target_sm)
    return n, why


def upstream_default(fn: Any, name: str) -> Any:
    """The default value of parameter ``name`` of the upstream callable ``fn`` (a
    ``@cute.jit`` function or bound ``__call__``), for a default that is an expression
    (``epilogue_op = lambda x: x``) followed by parameters the adapter passes."""
    target = fn
    for _ in range(4):
        try:
            param = inspect.signature(target).parameters.get(name)
        except (TypeError, ValueError):
            param = None
        if param is not None and param.default is not inspect.Parameter.empty:
            return param.default
        target = getattr(target, "__wrapped__", None) or getattr(target, "__func__", None)
        if target is None:
            break
    raise KernelPlanError(f"{getattr(fn, '__name__', fn)} has no default for {name!r}")


def unfinished(plan_cls: type) -> list[str]:
    """What a person still has to write in a scaffolded plan class: the methods whose body is
    still the scaffold's ``raise NotImplementedError("TODO(scaffold): ...")``, then each config
    value the scaffold could not derive (a key of the module's ``REQUIRED`` that
    ``default_config`` still sets to None), as ``default_config["key"]``."""
    out = []
    for name in ("tensor_specs", "reference_fn", "_algorithmic_flops_bytes", "plan"):
        fn = getattr(plan_cls, name, None)
        if fn is None:
            continue
        try:
            src = textwrap.dedent(inspect.getsource(fn))
            node = ast.parse(src).body[0]
        except (OSError, TypeError, SyntaxError, IndexError):
            continue
        body = list(getattr(node, "body", []))
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        if len(body) == 1 and _is_todo_raise(body[0]):
            out.append(name)
    return out + [f'default_config["{k}"]' for k in _unset_config(plan_cls)]


def _unset_config(plan_cls: type) -> list[str]:
    """Keys of the adapter module's ``REQUIRED`` that ``default_config`` leaves None, for the
    first check problem; when that cannot be called, those it writes as a literal None."""
    required = tuple(getattr(inspect.getmodule(plan_cls), "REQUIRED", ()) or ())
    if not required:
        return []
    try:
        plan = plan_cls()
        problems = plan.check_problems()
        config = plan.default_config(problems[0] if problems else {})
        return [k for k in required if config.get(k) is None]
    except Exception:  # a half-written adapter: read the source instead
        return _literal_none_keys(plan_cls, required)


def _literal_none_keys(plan_cls: type, required: tuple[str, ...]) -> list[str]:
    try:
        src = textwrap.dedent(inspect.getsource(plan_cls.default_config))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError):
        return list(required)
    unset = {
        k.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        for k, v in zip(node.keys, node.values, strict=True)
        if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) and v.value is None
    }
    return [k for k in required if k in unset]


def _is_todo_raise(stmt: ast.stmt) -> bool:
    if not (isinstance(stmt, ast.Raise) and isinstance(stmt.exc, ast.Call)):
        return False
    if _dotted(stmt.exc.func) != "NotImplementedError" or not stmt.exc.args:
        return False
    arg = stmt.exc.args[0]
    text = arg.value if isinstance(arg, ast.Constant) else ast.unparse(arg)
    return isinstance(text, str) and TODO in text


# --------------------------------------------------------------------------------------------
# errors and names
# --------------------------------------------------------------------------------------------


class ScaffoldError(KernelPlanError):
    """The scaffold refuses (bad name, unknown example, existing kernel, no entry point)."""


PACKAGE_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
KERNEL_RE = re.compile(r"^[a-z][a-z0-9_]*$")
RESERVED_KERNELS = {"common", "tests", "test", "conftest", "setup", "kernelplan", "main"}


def check_package_name(package: str) -> None:
    if not PACKAGE_RE.match(package) or len(package) > 30:
        raise ScaffoldError(
            f"bad package name {package!r}: lower-case letters and digits, words joined by "
            "'-', starting with a letter, at most 30 characters (e.g. gemm, gemm-tutorial)"
        )


def check_kernel_name(kernel: str) -> None:
    if (
        not KERNEL_RE.match(kernel)
        or keyword.iskeyword(kernel)
        or kernel in RESERVED_KERNELS
        or kernel.startswith("test")
        or len(kernel) > 40
    ):
        raise ScaffoldError(
            f"bad kernel name {kernel!r}: a lower-case Python identifier (letters, digits, '_'), "
            "at most 40 characters, not a keyword, not starting with 'test', not one of "
            + ", ".join(sorted(RESERVED_KERNELS))
        )


def module_name(package: str) -> str:
    return "cute_" + package.replace("-", "_")


def class_name(kernel: str) -> str:
    name = "".join(p[:1].upper() + p[1:] for p in kernel.split("_") if p)
    if name in {"KernelPlan", "CuteKernel", "TensorSpec", "Const", "Any", "Mapping", "ClassVar"}:
        name += "Plan"
    return name


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# --------------------------------------------------------------------------------------------
# reading the example (ast only; nothing is imported or run)
# --------------------------------------------------------------------------------------------

_NO = object()  # "no literal value"


@dataclass
class Param:
    name: str
    annotation: str | None
    default: Any = _NO  # literal default, or _NO
    default_src: str | None = None  # source text of any default
    kind: str = "positional"  # positional | vararg | kwonly | varkw

    def text(self) -> str:
        s = (
            self.name
            if self.kind not in ("vararg", "varkw")
            else (("*" if self.kind == "vararg" else "**") + self.name)
        )
        if self.annotation:
            s += f": {self.annotation}"
        if self.default_src is not None:
            s += f" = {self.default_src}" if self.annotation else f"={self.default_src}"
        return s

    @property
    def has_default(self) -> bool:
        return self.default_src is not None


@dataclass
class CliFlag:
    options: list[str]
    dest: str
    kwargs: dict[str, str]  # rendered keyword arguments of the generated add_argument
    default: Any
    note: str = ""
    line: int = 0


@dataclass
class Entry:
    kind: str  # "class" | "function"
    name: str
    line: int
    call_params: list[Param] | None  # None: signature unknown (no @cute.jit __call__ here)
    call_line: int | None
    ctor_params: list[Param] | None = None  # class entries (or the object a function takes)
    ctor_line: int | None = None
    ctor_class: str | None = None  # the class constructed (entry class, or object param's)
    ctor_args: dict[str, ast.expr] = field(default_factory=dict)  # param -> upstream's arg
    object_param: str | None = None  # host-function parameter that receives the object
    how: str = ""  # how upstream reaches it
    compile_args: list[ast.expr] = field(default_factory=list)
    compile_line: int | None = None
    scope: str | None = None  # function holding the compile/launch call
    scope_lines: tuple[int, int] | None = None
    others: list[str] = field(default_factory=list)


@dataclass
class Example:
    relpath: str
    path: Path
    lines: int
    sm: str
    sm_family: str
    evidence: list[tuple[str, int]]
    sm_notes: list[str]
    entry: Entry
    cli: list[CliFlag]
    harness_flags: list[str]
    clashing_flags: list[str]
    cli_line: int | None
    hardware_info_lines: list[int]
    reference_hints: list[tuple[str, int]]
    checks: list[tuple[str, int]] = field(default_factory=list)  # upstream's can_implement etc.


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _literal(node: ast.AST | None) -> Any:
    """JSON-ready literal of an expression (tuples become lists), or _NO."""
    if node is None:
        return _NO
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NO
    return _jsonable(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        out = [_jsonable(v) for v in value]
        return _NO if any(v is _NO for v in out) else out
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return _NO


def _dsl_type_name(node: ast.AST | None) -> str | None:
    """``cutlass.Float16`` / ``Float16`` (a known DSL type) -> "Float16"."""
    name = _dotted(node) if node is not None else None
    if not name:
        return None
    last = name.split(".")[-1]
    if last in TORCH_DTYPES and (name == last or name.split(".")[0] in ("cutlass", "cute")):
        return last
    return None


def _is_jit(dec: ast.expr) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    name = _dotted(target) or ""
    return name in ("cute.jit", "cutlass.cute.jit", "jit")


def _params(fn: ast.FunctionDef, drop_self: bool) -> list[Param]:
    a = fn.args
    out: list[Param] = []
    positional = list(a.posonlyargs) + list(a.args)
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(
        a.defaults
    )
    for arg, d in zip(positional, defaults, strict=True):
        out.append(_param(arg, d, "positional"))
    if a.vararg:
        out.append(_param(a.vararg, None, "vararg"))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append(_param(arg, d, "kwonly"))
    if a.kwarg:
        out.append(_param(a.kwarg, None, "varkw"))
    if drop_self and out and out[0].name in ("self", "cls"):
        out = out[1:]
    return out


def _param(arg: ast.arg, default: ast.expr | None, kind: str) -> Param:
    ann = ast.unparse(arg.annotation) if arg.annotation is not None else None
    if default is None:
        return Param(arg.arg, ann, _NO, None, kind)
    return Param(arg.arg, ann, _literal(default), ast.unparse(default), kind)


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> full module path, from the module's imports."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


# ---- target SM ------------------------------------------------------------------------------

_TMEM_CALLS = {"alloc_tmem", "dealloc_tmem", "retrieve_tmem_ptr", "relinquish_tmem_alloc_permit"}
_HOPPER_FEATURE_RE = re.compile(
    r"CopyBulk|(^|_)tma(_|$)|Tma[A-Z]|^TMA|setmaxregister|setmaxnreg|griddepcontrol|"
    r"^cluster_(arrive|wait)|block_in_cluster|elect_one|fence_proxy|^mapa|StMatrix"
)
_AMPERE_RE = re.compile(r"^Mma.*Op$|LdMatrix|CopyG2SOp|^cp_async")

#: (rank, sm, what the instruction family is)
_FAMILIES = {
    "tcgen05": (0, "sm_100a", "Blackwell tcgen05 MMA / TMEM (SM100 only)"),
    "wgmma": (1, "sm_90a", "Hopper warpgroup MMA (WGMMA, cute.nvgpu.warpgroup)"),
    "hopper": (2, "sm_90a", "Hopper TMA / cluster / mbarrier-async instructions, no WGMMA"),
    "ampere": (3, "sm_80", "warp-level MMA / cp.async / ldmatrix (Ampere and newer)"),
}
_PATH_SM = {"ampere": "sm_80", "hopper": "sm_90a", "blackwell": "sm_100a"}


def _family(chain: str) -> str | None:
    parts = chain.split(".")
    if "tcgen05" in parts or "blackwell_helpers" in parts:
        return "tcgen05"
    if any(p.startswith("Tmem") or p in _TMEM_CALLS for p in parts):
        return "tcgen05"
    if "warpgroup" in parts or "hopper_helpers" in parts:
        return "wgmma"
    last = parts[-1]
    if _HOPPER_FEATURE_RE.search(last):
        return "hopper"
    if ("warp" in parts or "cpasync" in parts) and _AMPERE_RE.search(last):
        return "ampere"
    return None


def derive_sm(tree: ast.Module, relpath: str) -> tuple[str, str, list[tuple[str, int]], list[str]]:
    """(sm, what decided it, evidence [(name, line)], notes) from the instructions used."""
    aliases = _aliases(tree)
    found: dict[str, list[tuple[str, int]]] = {}
    imports: dict[str, list[tuple[str, int]]] = {}
    sm_strings: list[tuple[str, int]] = []
    launches_cluster: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [f"{node.module}.{a.name}" for a in node.names if node.module]
            )
            for n in names:
                fam = _family(n)
                if fam:
                    imports.setdefault(fam, []).append((n, node.lineno))
        elif isinstance(node, ast.Attribute) and not isinstance(
            getattr(node, "_parent", None), ast.Attribute
        ):
            chain = _dotted(node)
            if not chain:
                continue
            head, _, rest = chain.partition(".")
            full = aliases.get(head, head) + ("." + rest if rest else "")
            fam = _family(full)
            if fam:
                found.setdefault(fam, []).append((chain, node.lineno))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if re.fullmatch(r"sm_1\d\d[af]?", node.value):
                sm_strings.append((node.value, node.lineno))
        elif isinstance(node, ast.Call):
            fn = _dotted(node.func) or ""
            if fn.endswith(".launch") and any(k.arg == "cluster" for k in node.keywords):
                launches_cluster.append((f"{fn}(..., cluster=...)", node.lineno))
    if launches_cluster:
        found.setdefault("hopper", []).extend(launches_cluster)

    notes: list[str] = []
    parts = relpath.split("/")
    folder = parts[1] if len(parts) > 2 and parts[0] in ("cute", "cute_ext") else None
    if folder == "blackwell_geforce":
        ev = _first_distinct(found.get("ampere", []) + found.get("hopper", []), 3)
        return (
            "sm_120a",
            "the example lives under cute/blackwell_geforce/ (GeForce Blackwell, SM120: "
            "warp-level MMA, no tcgen05)",
            ev,
            notes,
        )
    for fam in sorted(_FAMILIES, key=lambda f: _FAMILIES[f][0]):
        hits = found.get(fam) or imports.get(fam)
        if not hits:
            continue
        _, sm, what = _FAMILIES[fam]
        if fam == "tcgen05":
            sm103 = [s for s in sm_strings if s[0].startswith("sm_103")]
            if sm103:
                sm = "sm_103a"
                what += "; the code names sm_103 (B300)"
                hits = hits + sm103[:1]
        expected = _PATH_SM.get(folder or "")
        if expected and expected != sm:
            notes.append(
                f"the example sits under cute/{folder}/ but uses no instruction newer than "
                f"{sm}, so it is built for {sm}; add {expected} to target_sm to build and "
                "analyse it for that SM as well"
            )
        return sm, what, _first_distinct(hits, 3), notes
    return (
        "sm_80",
        "no tensor-core, TMA or cp.async instruction found (SIMT and universal copies only): "
        "sm_80 is the oldest SM the project builds for",
        [],
        notes,
    )


def _first_distinct(hits: list[tuple[str, int]], n: int) -> list[tuple[str, int]]:
    out, seen = [], set()
    for name, line in sorted(hits, key=lambda h: h[1]):
        key = name.split(".")[-1]
        if key in seen:
            continue
        seen.add(key)
        out.append((name, line))
        if len(out) == n:
            break
    return out


# ---- entry point ----------------------------------------------------------------------------


def _set_parents(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child._parent = node  # type: ignore[attr-defined]


def _enclosing_function(node: ast.AST) -> ast.FunctionDef | None:
    cur = getattr(node, "_parent", None)
    while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
        cur = getattr(cur, "_parent", None)
    return cur


def _has_main_block(tree: ast.Module) -> bool:
    for node in tree.body:
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            return True
    return False


def find_entry(tree: ast.Module, forced: str | None = None) -> Entry:
    """The example's host entry point (see the module docstring).

    Raises:
        ScaffoldError: none found, or ``forced`` names nothing in the module.
    """
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    jit_classes: dict[str, ast.FunctionDef] = {}
    for name, cls in classes.items():
        for item in cls.body:
            if (
                isinstance(item, ast.FunctionDef)
                and item.name == "__call__"
                and any(_is_jit(d) for d in item.decorator_list)
            ):
                jit_classes[name] = item
    jit_funcs = {
        n.name: n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and any(_is_jit(d) for d in n.decorator_list)
    }

    def class_named(name: str, scope: ast.AST | None) -> str | None:
        """A class of the module that ``name`` stands for (the class, or a variable or
        parameter bound to it: ``fmha_class = BlackwellFusedMultiHeadAttentionForward``)."""
        if name in classes:
            return name
        for node in ast.walk(scope if scope is not None else tree):
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                and isinstance(node.value, ast.Name)
                and node.value.id in classes
            ):
                return node.value.id
        return None

    def instantiation(cname: str) -> ast.Call | None:
        """The first call that constructs ``cname`` anywhere in the module."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                callee = (_dotted(node.func) or "").split(".")[-1]
                scope = _enclosing_function(node)
                if class_named(callee, scope) == cname:
                    return node
        return None

    def instance_of(name: str, where: ast.AST | None) -> tuple[str, ast.Call | None] | None:
        """(class, constructing call) of the object variable ``name`` in ``where``."""
        scope = where if where is not None else tree
        for node in ast.walk(scope):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
            ):
                cname = class_named((_dotted(node.value.func) or "").split(".")[-1], scope)
                if cname:
                    return cname, node.value
        if isinstance(where, ast.FunctionDef):  # a parameter annotated with the class
            for arg in where.args.args + where.args.kwonlyargs:
                ann = (_dotted(arg.annotation) or "") if arg.annotation is not None else ""
                cname = ann.split(".")[-1]
                if arg.arg == name and cname in classes:
                    return cname, instantiation(cname)
        return None

    candidates: list[Entry] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func.value if isinstance(node.func, ast.Subscript) else node.func
        if (_dotted(func) or "") not in ("cute.compile", "cutlass.cute.compile"):
            continue  # cute.compile(...) or cute.compile[options](...)
        scope = _enclosing_function(node)
        first = node.args[0]
        fname = first.id if isinstance(first, ast.Name) else None
        if fname in jit_funcs:
            e = _function_entry(jit_funcs[fname], node, scope)
            for i, arg in enumerate(node.args[1:]):
                if isinstance(arg, ast.Name) and e.call_params and i < len(e.call_params):
                    inst = instance_of(arg.id, scope)
                    if inst and e.object_param is None:
                        e.object_param = e.call_params[i].name
                        _attach_ctor(e, classes[inst[0]], inst[1])
            candidates.append(e)
        elif fname:
            inst = instance_of(fname, scope)
            if inst and inst[0] in jit_classes:
                e = _class_entry(classes[inst[0]], jit_classes[inst[0]], node, scope)
                _attach_ctor(e, classes[inst[0]], inst[1])
                candidates.append(e)
    if not candidates:
        # no cute.compile: an instantiated jit class, then a directly called jit function
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                callee = (_dotted(node.func) or "").split(".")[-1]
                scope = _enclosing_function(node)
                if scope is not None and scope.name in jit_funcs:
                    continue
                cname = class_named(callee, scope)
                if cname in jit_classes and (scope is None or scope.name != "__init__"):
                    e = _class_entry(classes[cname], jit_classes[cname], None, scope)
                    _attach_ctor(e, classes[cname], node)
                    e.how = f"instantiated at L{node.lineno} (no cute.compile in the example)"
                    candidates.append(e)
                elif callee in jit_funcs and scope is not None:
                    e = _function_entry(jit_funcs[callee], None, scope)
                    e.how = (
                        f"called directly at L{node.lineno}, which compiles and launches in one "
                        "step; the adapter compiles it with cute.compile instead"
                    )
                    e.compile_args = list(node.args)
                    e.compile_line = node.lineno
                    candidates.append(e)
    if forced:
        chosen = [c for c in candidates if c.name == forced]
        if not chosen:
            if forced in jit_classes:
                chosen = [_class_entry(classes[forced], jit_classes[forced], None, None)]
                _attach_ctor(chosen[0], classes[forced], None)
            elif forced in jit_funcs:
                chosen = [_function_entry(jit_funcs[forced], None, None)]
            elif forced in classes:
                e = Entry("class", forced, classes[forced].lineno, None, None)
                _attach_ctor(e, classes[forced], None)
                chosen = [e]
            else:
                raise ScaffoldError(f"--entry {forced}: no class or function of that name here")
            chosen[0].how = chosen[0].how or "chosen with --entry"
        candidates = chosen + [c for c in candidates if c.name != forced]
    if not candidates:
        if jit_classes or jit_funcs:
            names = sorted(set(jit_classes) | set(jit_funcs))
            raise ScaffoldError(
                "no call of a @cute.jit entry point found in the example (jit classes/functions: "
                f"{', '.join(names)}): pick one with --entry NAME"
            )
        raise ScaffoldError(
            "no @cute.jit entry point in the example (no class with a @cute.jit __call__, no "
            "@cute.jit host function): it may reach one through another module; name a class "
            "with --entry NAME"
        )
    seen, uniq = set(), []
    for c in candidates:
        if c.name not in seen:
            seen.add(c.name)
            uniq.append(c)
    entry = uniq[0]
    entry.others = [c.name for c in uniq[1:]]
    return entry


def _function_entry(fn: ast.FunctionDef, call: ast.Call | None, scope: ast.AST | None) -> Entry:
    e = Entry("function", fn.name, fn.lineno, _params(fn, drop_self=False), fn.lineno)
    if call is not None:
        e.compile_args = list(call.args[1:])
        e.compile_line = call.lineno
        e.how = f"cute.compile at L{call.lineno}: `{_clip(ast.unparse(call), 70)}`"
    _set_scope(e, scope)
    return e


def _class_entry(
    cls: ast.ClassDef, call_fn: ast.FunctionDef, call: ast.Call | None, scope: ast.AST | None
) -> Entry:
    e = Entry("class", cls.name, cls.lineno, _params(call_fn, drop_self=True), call_fn.lineno)
    if call is not None:
        e.compile_args = list(call.args[1:])
        e.compile_line = call.lineno
        e.how = f"cute.compile at L{call.lineno}: `{_clip(ast.unparse(call), 70)}`"
    _set_scope(e, scope)
    return e


def _set_scope(e: Entry, scope: ast.AST | None) -> None:
    if isinstance(scope, ast.FunctionDef):
        e.scope = scope.name
        e.scope_lines = (scope.lineno, scope.end_lineno or scope.lineno)


def _attach_ctor(e: Entry, cls: ast.ClassDef, call: ast.Call | None) -> None:
    init = next(
        (i for i in cls.body if isinstance(i, ast.FunctionDef) and i.name == "__init__"), None
    )
    e.ctor_class = cls.name
    if init is not None:
        e.ctor_params = _params(init, drop_self=True)
        e.ctor_line = init.lineno
    else:
        e.ctor_params = None if cls.bases else []
        e.ctor_line = cls.lineno
    if call is not None and e.ctor_params:
        positional = [p for p in e.ctor_params if p.kind == "positional"]
        for p, arg in zip(positional, call.args, strict=False):
            if not isinstance(arg, ast.Starred):
                e.ctor_args[p.name] = arg
        for kw in call.keywords:
            if kw.arg:
                e.ctor_args[kw.arg] = kw.value


# ---- the example's CLI ----------------------------------------------------------------------

#: Example flags the harness replaces (tolerances, repetitions, reference skipping, cold L2).
HARNESS_DESTS = {
    "tolerance",
    "atol",
    "rtol",
    "warmup_iterations",
    "iterations",
    "skip_ref_check",
    "use_cold_l2",
    "benchmark",
    "perf_test",
    "print_rtol_stats",
    "no_print_rtol_stats",
}


def harness_options() -> set[str]:
    """Option strings the kernelplan per-kernel CLI defines itself."""
    try:
        from .cli import _common_run_args

        p = argparse.ArgumentParser()
        _common_run_args(p)
        return set(p._option_string_actions)
    except Exception:  # pragma: no cover - the CLI module is part of kernelplan
        return {"-h", "--help", "--check", "--prof_type", "--config", "--seed", "--arch"}


def read_cli(tree: ast.Module) -> tuple[list[CliFlag], list[str], list[str], int | None]:
    """The example's argparse flags: (kept flags, harness flags left out, clashing, first line)."""
    taken = harness_options()
    flags: list[CliFlag] = []
    harness: list[str] = []
    clashing: list[str] = []
    first_line = None
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "add_argument"
        and n.args
        and isinstance(n.args[0], ast.Constant)
        and isinstance(n.args[0].value, str)
        and n.args[0].value.startswith("-")
    ]
    for call in sorted(calls, key=lambda c: c.lineno):
        first_line = first_line or call.lineno
        options = [a.value for a in call.args if isinstance(a, ast.Constant)]
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        longs = [o for o in options if o.startswith("--")] or options
        dest = _literal(kw.get("dest"))
        if not isinstance(dest, str):
            dest = longs[0].lstrip("-").replace("-", "_")
        if dest in HARNESS_DESTS:
            harness.append(longs[0])
            continue
        keep = [o for o in options if o not in taken]
        if not keep:
            clashing.append(longs[0])
            continue
        flags.append(_translate_flag(keep, dest, kw, call.lineno, options))
    return flags, harness, clashing, first_line


def _translate_flag(
    options: list[str], dest: str, kw: dict[str, ast.expr], line: int, upstream: list[str]
) -> CliFlag:
    out: dict[str, str] = {}
    note = ""
    action = _literal(kw.get("action"))
    default_node = kw.get("default")
    default = _literal(default_node)
    if default is _NO:
        dsl = _dsl_type_name(default_node)
        if dsl is not None:
            default = dsl
        elif default_node is not None:
            note = f"upstream default `{_clip(ast.unparse(default_node), 40)}`"
            default = None
        else:
            default = None
    if action in ("store_true", "store_false") and default is None and default_node is None:
        default = action == "store_false"
    type_node = kw.get("type")
    tname = _dotted(type_node) if type_node is not None else None
    if type_node is not None and tname is None:
        tname = _clip(ast.unparse(type_node), 30)
    if tname in ("int", "float", "str"):
        out["type"] = tname
    elif tname in ("cutlass.dtype", "dtype"):
        note = note or "a CuTe DSL type name (upstream type=cutlass.dtype)"
    elif tname is not None:
        flat_ints = isinstance(default, list) and all(
            isinstance(x, int) and not isinstance(x, bool) for x in default
        )
        if flat_ints or (default is None and "int" in tname.lower()):
            out["type"] = "int_list"
            note = note or f"comma-separated ints (upstream type={tname})"
        else:
            note = note or f"upstream type={tname}: parse it in problem_from_args"
    if action is not _NO and action is not None:
        out["action"] = _pyrepr(action)
    for name in ("choices", "nargs", "const"):
        v = _literal(kw.get(name))
        if v is not _NO and v is not None:
            out[name] = _pyrepr(v)
    first = next((o for o in options if o.startswith("--")), options[0])
    if dest != first.lstrip("-").replace("-", "_"):
        out["dest"] = _pyrepr(dest)
    if action not in ("store_true", "store_false") or default is not (action == "store_false"):
        out["default"] = _pyrepr(default)
    if options != upstream:
        note = (
            (note + "; " if note else "")
            + "renamed: "
            + ", ".join(o for o in upstream if o not in options)
            + " is a harness option"
        )
    if note:
        out["help"] = _pyrepr(note)
    return CliFlag(options, dest, out, default, note, line)


# ---- reference hints ------------------------------------------------------------------------


def _reference_hints(tree: ast.Module) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = _dotted(node.func) or ""
            if fn.endswith("einsum") and node.args and isinstance(node.args[0], ast.Constant):
                out.append((f"torch.einsum({node.args[0].value!r}, ...)", node.lineno))
            elif fn.split(".")[-1] in ("assert_close", "allclose"):
                out.append((fn.split(".")[-1], node.lineno))
            elif re.search(r"(^|_)ref(erence)?(_|$)", fn.split(".")[-1]):
                out.append((fn + "(...)", node.lineno))
    out.sort(key=lambda h: h[1])
    return out[:4]


_CHECK_RE = re.compile(r"^(can_implement|is_valid\w*|check_\w*support\w*)$")


def _upstream_checks(tree: ast.Module) -> list[tuple[str, int]]:
    """Upstream's own problem checks (``can_implement``, ``is_valid_*``): (name, line)."""
    out = [
        (n.name, n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and _CHECK_RE.match(n.name)
    ]
    return sorted(out, key=lambda h: h[1])


def analyze_example(path: Path, relpath: str, entry: str | None = None) -> Example:
    """Read one example with :mod:`ast`.

    Raises:
        ScaffoldError: unreadable, a library module, or no entry point.
    """
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError) as e:
        raise ScaffoldError(f"cannot read {relpath}: {e}") from None
    _set_parents(tree)
    if not _has_main_block(tree) and entry is None:
        raise ScaffoldError(
            f'{relpath} has no `if __name__ == "__main__"` block: a helper library, not an '
            "example; import an example that uses it (or name the entry with --entry NAME)"
        )
    ent = find_entry(tree, entry)
    sm, why, evidence, notes = derive_sm(tree, relpath)
    cli, harness, clashing, cli_line = read_cli(tree)
    hw = sorted(
        {
            n.lineno
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr == "HardwareInfo"
        }
    )
    return Example(
        relpath,
        path,
        text.count("\n") + 1,
        sm,
        why,
        evidence,
        notes,
        ent,
        cli,
        harness,
        clashing,
        cli_line,
        hw,
        _reference_hints(tree),
        _upstream_checks(tree),
    )


# --------------------------------------------------------------------------------------------
# rendering (the output follows ruff format, line length 100)
# --------------------------------------------------------------------------------------------


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _pyrepr(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_pyrepr(v) for v in value)
        return (
            f"({inner},)"
            if isinstance(value, tuple) and len(value) == 1
            else (f"({inner})" if isinstance(value, tuple) else f"[{inner}]")
        )
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_pyrepr(k)}: {_pyrepr(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no literal for {type(value).__name__}")


def _value_lines(prefix: str, value: Any, suffix: str, indent: int) -> list[str]:
    """``prefix + value + suffix`` at ``indent``, split the way ruff format splits a list."""
    one = " " * indent + prefix + _pyrepr(value) + suffix
    if len(one) <= LINE or not isinstance(value, (list, tuple)) or not value:
        return [one]
    opener, closer = ("[", "]") if isinstance(value, list) else ("(", ")")
    lines = [" " * indent + prefix + opener]
    for v in value:
        lines += _value_lines("", v, ",", indent + 4)
    lines.append(" " * indent + closer + suffix)
    return lines


def _call_lines(head: str, args: Sequence[str], indent: int, tail: str = "") -> list[str]:
    """``head(args)tail`` formatted as ruff format would (no magic trailing comma in args)."""
    pad = " " * indent
    one = f"{pad}{head}({', '.join(args)}){tail}"
    if len(one) <= LINE:
        return [one]
    hang = f"{pad}    {', '.join(args)}"
    if len(hang) <= LINE:
        return [f"{pad}{head}(", hang, f"{pad}){tail}"]
    return [f"{pad}{head}("] + [f"{pad}    {a}," for a in args] + [f"{pad}){tail}"]


def _comment(text: str, indent: int, lead: str = "# ") -> list[str]:
    width = LINE - indent - len(lead)
    return [
        " " * indent + lead + line
        for line in textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)
    ]


def _doc_safe(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"""', "'''")


def _wrap(text: str, indent: int) -> list[str]:
    return [
        " " * indent + line
        for line in textwrap.wrap(
            text, LINE - indent, break_long_words=False, break_on_hyphens=False
        )
    ]


_TUNING_RE = re.compile(
    r"tile|tiler|cluster|stage|thread|swizzle|raster|acc_dtype|2cta|tma_store|prefetch|"
    r"block_size|atom_layout|promotion|persistent|split_k|occupancy|num_warps|copy_bits|"
    r"warpgroup|pingpong|max_active_clusters"
)
_OUTPUT_RE = re.compile(r"^(m?(c|d|o|y)|out.*|output.*|result.*|dst|res|lse|amax)$", re.I)


def _is_tensor(p: Param) -> bool:
    ann = p.annotation or ""
    if "Tensor" in ann:
        return True
    return not ann and not p.has_default and p.kind == "positional" and p.name != "stream"


def _is_stream(p: Param) -> bool:
    return "CUstream" in (p.annotation or "") or p.name == "stream"


def _is_constexpr(p: Param) -> bool:
    return "Constexpr" in (p.annotation or "")


def _is_clusters(name: str) -> bool:
    return "max_active_clusters" in name or name == "max_clusters"


@dataclass
class _Plan:
    """What the generated adapter contains, decided before any text is written."""

    problem: dict[str, Any]  # CLI dest -> default (stays a problem key)
    problem_flags: list[CliFlag]
    config: dict[str, Any]  # config key -> default
    config_notes: dict[str, str]
    required: list[str]  # config keys with no value in the example (TODO)
    ctor_kwargs: list[tuple[str, str]]  # (param, value expression)
    call_args: list[str]  # argument expressions of the entry call
    tensors: list[tuple[str, str | None, bool]]  # (name, annotation, optional)
    clusters: list[str]  # values that are upstream's HardwareInfo max_active_clusters
    sizes: dict[str, str] = field(default_factory=dict)  # problem size key -> its flag


def _is_size(f: CliFlag) -> bool:
    """An integer flag (or integer list) whose default is positive: a problem size (a
    ``-1`` default, ``--window_size -1,-1``, is not one)."""
    if f.kwargs.get("type") not in ("int", "int_list") or "action" in f.kwargs:
        return False
    values = f.default if isinstance(f.default, list) else [f.default]
    return bool(values) and all(
        isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in values
    )


def _read_names(node: ast.AST | None) -> list[str]:
    """Names an expression reads (``args.x`` reads ``x``, the CLI value), in order."""
    out: list[str] = []
    for n in ast.walk(node) if node is not None else ():
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.append(n.id)
        elif (
            isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "args"
        ):
            out.append(n.attr)
    return list(dict.fromkeys(out))


def _bound_names(target: ast.AST) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _bindings(scope: ast.FunctionDef) -> dict[str, list[ast.stmt]]:
    """Name -> the statements of ``scope`` (not of functions nested in it) that assign it."""
    out: dict[str, list[ast.stmt]] = {}
    todo: list[ast.AST] = list(scope.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)) or (
            isinstance(node, ast.AnnAssign) and node.value is not None
        ):
            targets = [node.target]
        for t in targets:
            for name in _bound_names(t):
                out.setdefault(name, []).append(node)  # type: ignore[arg-type]
        todo.extend(ast.iter_child_nodes(node))
    return out


def _guarded(stmt: ast.stmt, scope: ast.AST) -> tuple[ast.expr | None, list[ast.expr]]:
    """(the condition of the innermost ``if`` of ``scope`` holding ``stmt``, negated in its
    ``else``, or None; every test above it)."""
    guard, tests = None, []
    prev, cur = stmt, getattr(stmt, "_parent", None)
    while cur is not None and cur is not scope:
        if isinstance(cur, ast.If):
            if not tests:
                guard = cur.test
                if prev in cur.orelse:
                    guard = ast.UnaryOp(op=ast.Not(), operand=cur.test)
            tests.append(cur.test)
        prev, cur = cur, getattr(cur, "_parent", None)
    return guard, tests


def _stmt_text(stmt: ast.stmt, scope: ast.AST, n: int = 70) -> str:
    """One line for a statement, with the ``if`` that guards it (``if x == 0: y = 1``)."""
    text = ast.unparse(stmt) if isinstance(stmt, (ast.Assign, ast.AugAssign)) else None
    if text is None:
        text = ast.unparse(stmt).splitlines()[0].rstrip(":")
    guard, _ = _guarded(stmt, scope)
    if guard is not None:
        text = f"if {ast.unparse(guard)}: {text}"
    return "`" + _clip(text, n).replace("`", "'") + "`"


_CONVERSIONS = {"tuple", "list", "int", "float", "str", "bool", "isinstance"}


def _is_conversion(stmt: ast.stmt, name: str, local: set[str]) -> bool:
    """``x = cutlass.dtype(x)``, ``x = getattr(cutlass, x) if isinstance(x, str) else x``,
    ``x = tuple(x)``: the same value in another type (what :func:`dsl_value` does), not a
    value computed from others."""
    value = getattr(stmt, "value", None)
    if not isinstance(stmt, ast.Assign) or value is None:
        return False
    if [n for n in _read_names(value) if n != name and n in local] or name not in _read_names(
        value
    ):
        return False
    for call in (n for n in ast.walk(value) if isinstance(n, ast.Call)):
        fn = _dotted(call.func) or ""
        if fn == "getattr":
            if not (call.args and _dotted(call.args[0]) in ("cutlass", "cute")):
                return False
        elif fn not in _CONVERSIONS and fn.split(".")[0] not in ("cutlass", "cute"):
            return False
    return True


@dataclass
class _Derivation:
    """How upstream computes a value in the function that passes it (``run()``)."""

    scope: str
    stmts: list[ast.stmt]  # the statements that assign the names it reads, before the use
    from_problem: bool  # they read a CLI value or a parameter of that function (the problem)
    node: ast.AST

    def text(self, arg: ast.expr) -> str:
        """The comment: where upstream computes the value passed as ``arg``."""
        lines = ", ".join(f"L{s.lineno}" for s in self.stmts)
        shown = "; ".join(_stmt_text(s, self.node) for s in self.stmts[:3])
        more = "; ..." if len(self.stmts) > 3 else ""
        where = f"`{self.scope}()` {lines}: {shown}{more}"
        passes = "" if isinstance(arg, ast.Name) else f"it passes `{_clip(ast.unparse(arg), 50)}`; "
        if self.from_problem:
            return f"upstream derives this from the problem: mirror its formula ({passes}{where})"
        return f"upstream computes it ({passes}{where})"


def _derivation(arg: ast.expr, cli: Mapping[str, CliFlag]) -> _Derivation | None:
    """What upstream's enclosing function does to the names ``arg`` reads before passing it:
    None when it assigns none of them there."""
    scope = _enclosing_function(arg)
    if not isinstance(scope, ast.FunctionDef):
        return None
    a = scope.args
    params = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs}
    params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    binds = _bindings(scope)
    local = set(binds) | params | set(cli)
    direct: dict[int, ast.stmt] = {}
    from_problem = False
    seen: set[str] = set()
    todo = [(name, arg.lineno, True) for name in _read_names(arg)]
    while todo:
        name, before, first = todo.pop()
        if name in params or name in cli:
            from_problem = True
        if name in seen:
            continue
        seen.add(name)
        for stmt in binds.get(name, []):
            if stmt.lineno >= before or _is_conversion(stmt, name, local):
                continue
            if first:
                direct[stmt.lineno] = stmt
            reads = _read_names(getattr(stmt, "value", None) or getattr(stmt, "iter", None))
            if isinstance(stmt, ast.AugAssign):
                reads.append(name)
            for test in _guarded(stmt, scope)[1]:
                reads += _read_names(test)
            todo += [(r, stmt.lineno, False) for r in reads]
    if not direct:
        return None
    return _Derivation(scope.name, [direct[k] for k in sorted(direct)], from_problem, scope)


def _resolve(
    name: str,
    upstream_arg: ast.expr | None,
    default: Any,
    cli: dict[str, CliFlag],
) -> tuple[str | None, Any, str]:
    """(CLI dest it comes from or None, literal default or _NO, note) for one value. A value
    that upstream computes before passing it (from the CLI values or not) has no default: the
    note says where upstream computes it."""
    if upstream_arg is not None:
        derived = _derivation(upstream_arg, cli)
        if derived is not None:
            only = derived.stmts[0] if len(derived.stmts) == 1 else None
            if (
                isinstance(only, ast.Assign)
                and isinstance(upstream_arg, ast.Name)
                and not derived.from_problem
                and _guarded(only, derived.node)[0] is None
                and _literal(only.value) is not _NO
            ):  # `scale_factor = 2.33` just before the call: that value
                lit = _literal(only.value)
                return (
                    None,
                    lit,
                    f"upstream sets `{upstream_arg.id}` to {_pyrepr(lit)} (L{only.lineno})",
                )
            return None, _NO, derived.text(upstream_arg)
        if isinstance(upstream_arg, ast.Name) and upstream_arg.id in cli:
            return upstream_arg.id, cli[upstream_arg.id].default, ""
        dotted = _dotted(upstream_arg) or ""
        if dotted.startswith("args.") and dotted[5:] in cli:
            return dotted[5:], cli[dotted[5:]].default, ""
        lit = _literal(upstream_arg)
        if lit is not _NO:
            return None, lit, f"upstream passes {_clip(ast.unparse(upstream_arg), 40)}"
        dsl = _dsl_type_name(upstream_arg)
        if dsl:
            return None, dsl, f"upstream passes {ast.unparse(upstream_arg)}"
    if name in cli:
        return name, cli[name].default, ""
    if default is not _NO:
        return None, default, ""
    if upstream_arg is not None:
        return None, _NO, f"upstream passes `{_clip(ast.unparse(upstream_arg), 50)}`"
    return None, _NO, ""


def _decide(ex: Example) -> _Plan:
    cli = {f.dest: f for f in ex.cli}
    config: dict[str, Any] = {}
    notes: dict[str, str] = {}
    required: list[str] = []
    to_config: set[str] = set()
    clusters: list[str] = []
    e = ex.entry

    def value_for(name: str, arg: ast.expr | None, default: Any, constexpr: bool) -> str:
        if _is_clusters(name):
            clusters.append(name)
            return f"v[{_pyrepr(name)}]"
        dest, dflt, note = _resolve(name, arg, default, cli)
        if dest is not None:
            if _TUNING_RE.search(dest) or constexpr:
                to_config.add(dest)
                config[dest] = dflt
            return f"v[{_pyrepr(dest)}]"
        config[name] = None if dflt is _NO else dflt
        if dflt is _NO:
            required.append(name)
            notes[name] = note or "no value in the example"
        elif note:
            notes[name] = note
        return f"v[{_pyrepr(name)}]"

    ctor_kwargs: list[tuple[str, str]] = []
    for p in e.ctor_params or []:
        if p.kind in ("vararg", "varkw"):
            continue
        ctor_kwargs.append((p.name, value_for(p.name, e.ctor_args.get(p.name), p.default, False)))

    call_args: list[str] = []
    tensors: list[tuple[str, str | None, bool]] = []
    params = [p for p in (e.call_params or []) if p.kind in ("positional", "kwonly")]
    compile_map = {
        p.name: a
        for p, a in zip(params, e.compile_args, strict=False)
        if not isinstance(a, ast.Starred)
    }
    pending: list[str] = []  # trailing defaults we may leave out
    fn = "kernel.__call__" if e.kind == "class" else f"mod.{e.name}"
    for p in params:
        if p.name == e.object_param:
            expr = "Const(obj)"
        elif _is_stream(p):
            expr = "STREAM"
        elif _is_tensor(p):
            optional = "Optional" in (p.annotation or "") or "None" in (p.annotation or "")
            tensors.append((p.name, p.annotation, optional))
            expr = f"t.get({_pyrepr(p.name)})" if optional else f"t[{_pyrepr(p.name)}]"
        elif p.has_default and p.default is _NO and p.name not in cli:
            pending.append(p.name)  # a lambda or an expression: keep upstream's default
            continue
        elif p.has_default and p.default is None and p.name not in cli:
            expr = "None"
        else:
            val = value_for(p.name, compile_map.get(p.name), p.default, _is_constexpr(p))
            expr = f"Const({val})" if _is_constexpr(p) else val
        for name in pending:  # defaults before a given parameter: upstream's own value
            ce = next(_is_constexpr(q) for q in params if q.name == name)
            val = f"upstream_default({fn}, {_pyrepr(name)})"
            call_args.append(f"Const({val})" if ce else val)
        pending = []
        call_args.append(expr)

    problem: dict[str, Any] = {}
    for f in ex.cli:  # a dest with two flags (--x / --no-x): argparse keeps the first default
        if f.dest not in to_config:
            problem.setdefault(f.dest, f.default)
    problem_flags = [f for f in ex.cli if f.dest not in to_config]
    sizes: dict[str, str] = {}
    for f in problem_flags:
        if _is_size(f) and problem.get(f.dest) == f.default:
            sizes.setdefault(
                f.dest, next((o for o in f.options if o.startswith("--")), f.options[0])
            )
    return _Plan(
        problem,
        problem_flags,
        config,
        notes,
        required,
        ctor_kwargs,
        call_args,
        tensors,
        clusters,
        sizes,
    )


def _evidence_comment(ex: Example) -> list[str]:
    ev = ", ".join(f"`{n}` (L{line})" for n, line in ex.evidence)
    text = f"{ex.sm}: {ex.sm_family}" + (f"; e.g. {ev}" if ev else "") + "."
    lines = _comment(
        "Target SM, derived by the scaffold from the instructions the example uses: " + text, 4
    )
    for n in ex.sm_notes:
        lines += _comment("Note: " + n + ".", 4)
    return lines


def _signature_doc(params: list[Param] | None, indent: int) -> list[str]:
    if params is None:
        return [" " * indent + "(not in this file)"]
    if not params:
        return [" " * indent + "(no parameters)"]
    return [" " * indent + _clip(_doc_safe(p.text()), LINE - indent) for p in params]


def _str_assign(prefix: str, value: str, indent: int) -> list[str]:
    """``prefix + "value"`` as ruff format writes it: parenthesised when only that fits."""
    pad = " " * indent
    lit = _pyrepr(value)
    if len(pad + prefix + lit) <= LINE:
        return [pad + prefix + lit]
    if len(pad + "    " + lit) <= LINE:
        return [pad + prefix + "(", pad + "    " + lit, pad + ")"]
    return [pad + prefix + lit + "  # noqa: E501"]


def _uses(body: str, name: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(name)}\b", body) is not None


def render_plan_module(ex: Example, package: str, kernel: str, cls: str) -> str:
    e = ex.entry
    d = _decide(ex)
    what = f"class ``{e.name}``" if e.kind == "class" else f"``@cute.jit`` function ``{e.name}``"
    doc: list[str] = []
    doc += _wrap(f'"""Adapter: {_doc_safe(what)} (L{e.line}) of the CUTLASS CuTe DSL example', 0)
    doc.append(f"``{ex.relpath}``.")
    doc.append("")
    doc += _wrap(
        "Scaffolded by ``kernelplan.scaffold`` from the example's source, read with ``ast`` "
        "(never run). Derived: the target SM (see ``target_sm``), the entry point and its "
        "signature, the constructor parameters, the example's CLI defaults. Still to write: "
        'every method that raises ``NotImplementedError("TODO(scaffold): ...")`` and every '
        "``default_config`` value left None (``REQUIRED``); ``kernelplan.scaffold.unfinished`` "
        "lists them.",
        0,
    )
    doc.append("")
    if e.how:
        doc += _wrap(_doc_safe(f"Upstream: {e.how}."), 0)
        doc.append("")
    if e.ctor_class:
        where = f"L{e.ctor_line}" if e.ctor_line else "?"
        doc.append(f"Constructor of ``{e.ctor_class}`` ({where})::")
        doc.append("")
        doc += _signature_doc(e.ctor_params, 4)
        doc.append("")
    if e.call_params is not None:
        label = "``__call__``" if e.kind == "class" else f"``{e.name}``"
        doc.append(f"Call {label} (L{e.call_line})::")
        doc.append("")
        doc += _signature_doc(e.call_params, 4)
        doc.append("")
    if e.others:
        doc += _wrap(f"Other entry points in the file: {', '.join(e.others)}.", 0)
        doc.append("")
    doc.append('"""')

    L: list[str] = []
    L.append(
        "#: The example's CLI defaults for the workload (its argparse"
        + (f", from L{ex.cli_line})." if ex.cli_line else ").")
    )
    if d.problem:
        L.append("PROBLEM_DEFAULTS: dict[str, Any] = {")
        for k, v in d.problem.items():
            L += _value_lines(f"{_pyrepr(k)}: ", v, ",", 4)
        L.append("}")
    else:
        L.append("PROBLEM_DEFAULTS: dict[str, Any] = {}")
    if d.sizes:
        L.append(
            "#: Problem sizes (integer flags with positive defaults) -> their flag; validate()"
        )
        L.append("#: refuses one that is not a positive integer.")
        L.append("SIZES: dict[str, str] = {")
        for k, flag in d.sizes.items():
            L.append(f"    {_pyrepr(k)}: {_pyrepr(flag)},")
        L.append("}")
    L.append("#: Config keys with no value in the example (plan() refuses while any is None).")
    L += _value_lines("REQUIRED: tuple[str, ...] = ", tuple(d.required), "", 0)
    L.append("")
    L.append("")
    L.append(f"class {cls}(KernelPlan):")
    L += _wrap(f'"""{_doc_safe(e.name)} ({ex.sm}), imported from', 4)
    L.append(f'    ``{ex.relpath}``."""')
    L.append("")
    L.append(f"    name: ClassVar[str] = {_pyrepr(kernel)}")
    L.append(f"    package: ClassVar[str] = {_pyrepr(package)}")
    src = f"    source: ClassVar[str] = {_pyrepr(ex.relpath)}"
    if len(src) > LINE:  # kb's adapter scan wants `source = "..."` on one line
        src = f"    source = {_pyrepr(ex.relpath)}"
        if len(src) > LINE:
            src += "  # noqa: E501"
    L.append(src)
    L += _evidence_comment(ex)
    L.append(f"    target_sm: ClassVar[tuple[str, ...]] = ({_pyrepr(ex.sm)},)")
    L += _str_assign("description: ClassVar[str] = ", f"CUTLASS CuTe DSL {e.name}, {ex.sm}", 4)
    L.append("")
    L.append("    # -- the workload: the example's own CLI " + "-" * 49)
    L.append("    def add_problem_arguments(self, parser: argparse.ArgumentParser) -> None:")
    if d.problem_flags:
        L.append('        g = parser.add_argument_group("problem (the example\'s CLI)")')
    for f in d.problem_flags:
        args = [_pyrepr(o) for o in f.options] + [f"{k}={v}" for k, v in f.kwargs.items()]
        L += _call_lines("g.add_argument", args, 8)
    left = []
    if ex.harness_flags:
        left.append(
            "left to the harness (--check, --warmup, --reps, --warm-l2): "
            + ", ".join(ex.harness_flags)
        )
    if ex.clashing_flags:
        left.append("left out, they clash with harness options: " + ", ".join(ex.clashing_flags))
    moved = [k for k in d.config if k not in d.problem and any(f.dest == k for f in ex.cli)]
    if moved:
        left.append(
            "that are tunables here (set them with --config key=value): " + ", ".join(moved)
        )
    for text in left:
        L += _comment("Upstream flags " + text + ".", 8)
    if not d.problem_flags:
        L.append("        return None  # the example has no workload flags")
    L.append("")
    L.append("    def problem_from_args(self, args: argparse.Namespace) -> dict[str, Any]:")
    L.append(
        "        problem = {k: _json(getattr(args, k, d)) for k, d in PROBLEM_DEFAULTS.items()}"
    )
    L.append("        self.validate(problem)")
    L.append("        return problem")
    L.append("")
    L += _validate_method(ex, d)
    L.append("")
    L.append("    def check_problems(self) -> list[dict[str, Any]]:")
    L.append(
        '        """The example\'s defaults. Add a shape that is not a multiple of the tile and,'
    )
    L.append('        where the kernel takes one, a batched one: a check must be able to fail."""')
    L.append("        return [dict(PROBLEM_DEFAULTS)]")
    L.append("")
    L.append("    # -- configs: constructor and compile-time parameters " + "-" * 35)
    L.append("    def default_config(self, problem: Mapping[str, Any]) -> dict[str, Any]:")
    if d.config:
        L.append("        return {")
        for k, v in d.config.items():
            if k in d.required:
                L += _comment(f"{TODO}: {d.config_notes.get(k, '')}; give {k} a value", 12)
            elif k in d.config_notes:
                L += _comment(d.config_notes[k], 12)
            L += _value_lines(f"{_pyrepr(k)}: ", v, ",", 12)
        L.append("        }")
    else:
        L.append("        return {}")
    L.append("")
    L += _todo_methods(ex, d)
    L.append("")
    L += _plan_method(ex, d)
    L.append("")
    L.append("")
    L.append("def _json(value: Any) -> Any:")
    L.append('    """Tuples to lists, so that a problem is the JSON a record stores."""')
    L.append("    if isinstance(value, (list, tuple)):")
    L.append("        return [_json(v) for v in value]")
    L.append("    return value")

    body = "\n".join(L)
    imports = ["from __future__ import annotations", ""]
    std = ["import argparse"]
    if _uses(body, "json"):
        std.append("import json")
    std += ["from collections.abc import Mapping", "from typing import Any, ClassVar"]
    imports += std + [""]
    core = [
        n
        for n in ("STREAM", "CuteKernel", "KernelPlan", "ShapeError", "TensorSpec")
        if _uses(body, n) and (n != "ShapeError" or d.sizes)  # else only in a comment
    ]
    imports.append(f"from kernelplan import {', '.join(core)}")
    if _uses(body, "load_example"):
        imports.append("from kernelplan.cutlass_src import load_example")
    if _uses(body, "Const"):
        imports.append("from kernelplan.kernel import Const")
    helpers = [
        n
        for n in ("active_clusters", "dsl_value", "int_list", "upstream_default")
        if _uses(body, n)
    ]
    if helpers:
        imports.append(f"from kernelplan.scaffold import {', '.join(helpers)}")
    return "\n".join(doc + [""] + imports + [""] + L) + "\n"


def _validate_method(ex: Example, d: _Plan) -> list[str]:
    L = ["    def validate(self, problem: Mapping[str, Any]) -> None:"]
    L.append('        """Refuse a problem the kernel cannot take: ShapeError, one line."""')
    if d.sizes:
        L.append("        for key, flag in SIZES.items():")
        L.append("            value = problem.get(key)")
        L.append("            values = value if isinstance(value, list) else [value]")
        L.append("            if not values or any(type(x) is not int or x <= 0 for x in values):")
        L.append("                raise ShapeError(")
        L.append(
            '                    f"{self.name}: {flag} takes positive integers (a problem size), '
            'got {value}"'
        )
        L.append("                )")
    checks = ", ".join(f"`{n}` (L{line})" for n, line in ex.checks[:3])
    L += _comment(
        "Add the kernel's own constraints here, each a ShapeError with one line saying what to "
        "pass instead: alignment (contiguous extents a multiple of 16 bytes), divisibility by "
        "the tile, supported dtypes and layouts"
        + (f"; upstream checks them in {checks}" if checks else "")
        + ".",
        8,
    )
    return L


def _todo_methods(ex: Example, d: _Plan) -> list[str]:
    e = ex.entry
    where = (
        f"`{e.scope}()` (L{e.scope_lines[0]}-L{e.scope_lines[1]})"
        if e.scope and e.scope_lines
        else "the example's run function"
    )
    L: list[str] = []
    L.append("    # -- what only a person can write " + "-" * 55)
    L.append("    def tensor_specs(self, problem: Mapping[str, Any]) -> dict[str, TensorSpec]:")
    L.append('        """Every tensor argument of the entry call, by name."""')
    names = [n for n, _, _ in d.tensors]
    if names:
        outs = [n for n in names if _OUTPUT_RE.match(n)]
        text = (
            f"return one TensorSpec per tensor argument, keyed {', '.join(names)} (plan() passes "
            f"them by these names; an Optional one may be left out); shapes, dtypes, majorness "
            f"and dynamic marks as {where} builds them before it compiles; outputs (probably "
            f"{', '.join(outs) or 'see the call'}) with role='output', init='empty'. "
            "torch_dtype() turns a problem's CuTe DSL type name into a torch dtype name."
        )
    else:
        text = (
            "the entry's tensor arguments were not recognised: return one TensorSpec per tensor "
            f"it takes (see {where}) and pass them in plan()'s args()"
        )
    L += _comment(f"{TODO}: {text}", 8)
    L.append(f'        raise NotImplementedError("{TODO}: write tensor_specs")')
    L.append("")
    L.append(
        "    def reference_fn(self, problem: Mapping[str, Any], inputs: Mapping[str, Any]) -> "
        "dict[str, Any]:"
    )
    L.append('        """The expected outputs, by name, in float32 (or wider), with PyTorch."""')
    hint = "; ".join(f"{h} at L{line}" for h, line in ex.reference_hints)
    text = (
        "compute each output from `inputs` (torch tensors on the inputs' device, in the "
        "storage shapes of tensor_specs) in float32"
        + (f"; upstream checks with {hint}" if hint else "")
    )
    L += _comment(f"{TODO}: {text}", 8)
    L.append(f'        raise NotImplementedError("{TODO}: write reference_fn")')
    L.append("")
    L.append(
        "    def _algorithmic_flops_bytes(self, problem: Mapping[str, Any]) -> tuple[float, float]:"
    )
    L.append(
        '        """(FLOPs, minimum DRAM bytes) of the workload, whatever the implementation."""'
    )
    L += _comment(
        f"{TODO}: the FLOPs the workload needs (2*M*N*K for a GEMM) and the bytes every input "
        "is read and every output written once",
        8,
    )
    L.append(f'        raise NotImplementedError("{TODO}: write _algorithmic_flops_bytes")')
    return L


def _plan_method(ex: Example, d: _Plan) -> list[str]:
    e = ex.entry
    L = ["    # -- how the upstream entry point is reached " + "-" * 44]
    L.append(
        "    def plan(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> CuteKernel:"
    )
    if e.call_params is None or (e.ctor_class and e.ctor_params is None):
        missing = (
            f"the constructor of {e.ctor_class} is inherited from a class outside this file"
            if e.ctor_params is None and e.ctor_class
            else f"{e.name} has no @cute.jit __call__ in this file"
        )
        L += _comment(
            f"{TODO}: {missing}: build the object and the argument tuple by hand "
            "(see the module docstring)",
            8,
        )
        L.append(f'        raise NotImplementedError("{TODO}: write plan")')
        return L
    L.append("        v = {k: dsl_value(x) for k, x in {**problem, **config}.items()}")
    L.append("        missing = [k for k in REQUIRED if v.get(k) is None]")
    L.append("        if missing:")
    L.append("            raise NotImplementedError(")
    L.append(
        f"                f\"{TODO}: {{self.name}} needs a value for {{', '.join(missing)}} \""
    )
    L.append('                "(default_config has none: the example gives none)"')
    L.append("            )")
    meta = "{}"
    if d.clusters:
        lines = ", ".join(f"L{n}" for n in ex.hardware_info_lines[:3])
        L += _comment(
            "Compile-time cluster counts: upstream asks cutlass.utils.HardwareInfo"
            + (f" ({lines})" if lines else "")
            + "; check the cluster size active_clusters() assumes.",
            8,
        )
        L.append("        meta: dict[str, Any] = {}")
        L.append(f"        for k in {_pyrepr(tuple(dict.fromkeys(d.clusters)))}:")
        L.append('            v[k], meta[f"{k}_from"] = active_clusters(config, self.target_sm[0])')
        L.append("            meta[k] = v[k]")
        meta = "meta"
    L.append("        mod = load_example(self.source)")
    kwargs = [f"{k}={expr}" for k, expr in d.ctor_kwargs]
    fn_expr = f"mod.{e.name}"
    if e.kind == "class":
        L += _call_lines(f"kernel = mod.{e.name}", kwargs, 8)
        fn_expr = "kernel"
    elif e.object_param and e.ctor_class:
        L += _call_lines(f"obj = mod.{e.ctor_class}", kwargs, 8)
    L.append("        specs = self.tensor_specs(problem)")
    L.append("")
    L.append("        def args(t: Mapping[str, Any]) -> tuple:")
    if len(d.call_args) == 1 and len(f"            return ({d.call_args[0]},)") <= LINE:
        L.append(f"            return ({d.call_args[0]},)")
    elif d.call_args:
        L.append("            return (")
        for a in d.call_args:
            L.append(f"                {a},")
        L.append("            )")
    else:
        L.append("            return ()")
    L.append("")
    L.append(
        "        key = (self.name, json.dumps([problem, config], sort_keys=True, default=str))"
    )
    L += _call_lines(
        "return CuteKernel",
        ["self.name", fn_expr, "args", "specs", "key=key", f"meta={meta}"],
        8,
    )
    return L


def render_kernel_init(kernel: str, cls: str, module: str) -> str:
    return (
        f'"""One imported kernel (the adapter is {kernel}.py); run it with\n'
        f"``python -m {module}.{kernel} --help``.\n"
        '"""\n'
        "\n"
        f"from .{kernel} import {cls}\n"
        "\n"
        f'__all__ = ["{cls}"]\n'
    )


def render_kernel_main(kernel: str, cls: str) -> str:
    return (
        "import sys\n"
        "\n"
        f"from .{kernel} import {cls}\n"
        "\n"
        'if __name__ == "__main__":\n'
        f"    kernel_plan = {cls}()\n"
        "    sys.exit(kernel_plan.benchmark_kernel_argparse())\n"
    )


def render_test(package: str, kernel: str, cls: str, module: str) -> str:
    head = "\n".join(
        _wrap(f'"""{package}/{kernel}: registered, and compiled for its target SM on the CPU.', 0)
    )
    return (
        head
        + f'''

The compile test is skipped, with the reason, while the adapter still has scaffold TODOs (the
methods that raise and the config values default_config leaves None) or the CUTLASS sources
are absent; once they are filled in it must pass on any machine.
"""

from __future__ import annotations

import pytest

from kernelplan.cutlass_src import have_sources
from kernelplan.scaffold import unfinished

adapter = pytest.importorskip(
    "{module}.{kernel}.{kernel}",
    reason="{module} is not installed: run `uv sync --all-packages`",
)


def test_registered():
    from {module} import KERNELS

    name = "{kernel}"
    cls_name = "{cls}"
    assert KERNELS[name] == f"{{adapter.__name__}}:{{cls_name}}"


@pytest.mark.cutlass_sources
def test_static_compile_for_target_sm():
    if not have_sources():
        pytest.skip(
            "CUTLASS sources absent: git submodule update --init third_party/cutlass "
            "(or set CUTLASS_DIR)"
        )
    todo = unfinished(adapter.{cls})
    if todo:
        pytest.skip(f"scaffold TODOs still open in {{', '.join(todo)}}: fill them in")
    plan = adapter.{cls}()
    problem = plan.check_problems()[0]
    flops, nbytes = plan._algorithmic_flops_bytes(problem)
    assert flops >= 0 and nbytes > 0
    try:
        report = plan.run_static(problem, plan.default_config(problem))
    except NotImplementedError as e:
        if "TODO(scaffold)" not in str(e):
            raise
        pytest.skip(str(e))  # a config value the example does not give
    assert report["arch"] == plan.target_sm[0]
    assert report["registers"] and report["cubin_bytes"] > 0
'''
    )


def render_devlog(ex: Example, package: str, kernel: str, imported: str) -> str:
    title = f"{package}/{kernel}"
    ent = ("class " if ex.entry.kind == "class" else "function ") + ex.entry.name
    return (
        f"# {title} (imported from CUTLASS)\n"
        "\n"
        "## Overview\n"
        f"pending: scaffolded from the example's {ent} (target {ex.sm}); say what the kernel\n"
        "does and why it was imported for study.\n"
        "\n"
        "## Source\n"
        f"Original: `{ex.relpath}`\n"
        f"Imported: `{imported}`\n"
        "\n"
        "## Performance\n"
        "| Config | Metric | Value | Context | Record |\n"
        "|---|---|---|---|---|\n"
        "| [config] | [metric] | pending | [device, clocks] | pending |\n"
        "\n"
        "## Patterns Extracted\n"
        "- pending\n"
        "\n"
        "## Insights\n"
        "- pending\n"
    )


def render_package_pyproject(package: str, module: str) -> str:
    return f'''[project]
name = "cute-{package}"
version = "0.1.0"
description = "{package}: microbenchmarks over CUTLASS CuTe DSL examples (kernelplan scaffold)."
requires-python = ">=3.10,<3.14"
dependencies = ["kernelplan"]

[project.scripts]
{package} = "{module}.__main__:main"

[project.entry-points."kernelplan.packages"]
{package} = "{module}"

[tool.uv.sources]
kernelplan = {{ workspace = true }}

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.hatch.build.targets.wheel]
packages = ["src/{module}"]
'''


def render_package_init(package: str, module: str) -> str:
    return (
        f'"""{module}: {package} microbenchmarks over CUTLASS CuTe DSL examples.\n'
        "\n"
        f"``KERNELS`` maps each CLI name (``uv run {package} <name>``) to its KernelPlan class.\n"
        '"""\n'
        "\n"
        f'PACKAGE = "{package}"\n'
        "\n"
        "KERNELS = {}\n"
    )


def render_package_main(package: str, module: str) -> str:
    return (
        f'"""``uv run {package} <kernel> [options]`` / ``python -m {module} <kernel> '
        '[options]``."""\n'
        "\n"
        "import sys\n"
        "\n"
        "from kernelplan.cli import package_main\n"
        "\n"
        "\n"
        "def main() -> int:\n"
        f'    return package_main("{package}")\n'
        "\n"
        "\n"
        'if __name__ == "__main__":\n'
        "    sys.exit(main())\n"
    )


# --------------------------------------------------------------------------------------------
# editing existing files (text edits that keep their formatting, verified by re-parsing)
# --------------------------------------------------------------------------------------------


def _toml_loads(text: str) -> dict | None:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            return None
    return tomllib.loads(text)


def register_in_root(text: str, dist: str) -> str:
    """The root pyproject with ``dist`` added to ``[tool.uv.sources]`` (``{ workspace = true
    }``) and to ``[project] dependencies``; unchanged parts keep their text.

    Raises:
        ScaffoldError: the file's layout is not one this edit understands (nothing written).
    """
    before = _toml_loads(text)
    lines = text.splitlines(keepends=True)
    sources = (before or {}).get("tool", {}).get("uv", {}).get("sources", {})
    if dist not in sources:
        idx = next((i for i, ln in enumerate(lines) if ln.strip() == "[tool.uv.sources]"), None)
        if idx is None:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            lines += ["\n", "[tool.uv.sources]\n", f"{dist} = {{ workspace = true }}\n"]
        else:
            last = idx
            for j in range(idx + 1, len(lines)):
                s = lines[j].strip()
                if s.startswith("["):
                    break
                if s and not s.startswith("#"):
                    last = j
            lines.insert(last + 1, f"{dist} = {{ workspace = true }}\n")
    deps = (before or {}).get("project", {}).get("dependencies")
    if deps is not None and dist not in deps:
        in_project = False
        for i, ln in enumerate(lines):
            s = ln.strip()
            if s.startswith("["):
                in_project = s == "[project]"
                continue
            if in_project and re.match(r"dependencies\s*=\s*\[", s):
                if s.endswith("]"):
                    head, _, _ = ln.rstrip("\n").rpartition("]")
                    sep = "" if head.rstrip().endswith("[") else ", "
                    lines[i] = f'{head.rstrip()}{sep}"{dist}"]\n'
                else:
                    j = next(k for k in range(i + 1, len(lines)) if lines[k].strip() == "]")
                    indent = re.match(r"\s*", lines[j - 1]).group(0) if j > i + 1 else "    "
                    prev = lines[j - 1].rstrip("\n")
                    if j > i + 1 and not prev.rstrip().endswith(","):
                        lines[j - 1] = prev + ",\n"
                    lines.insert(j, f'{indent}"{dist}",\n')
                break
    out = "".join(lines)
    after = _toml_loads(out)
    if before is not None:
        want_deps = list(deps) + [dist] if deps is not None and dist not in deps else deps
        ok = (
            after is not None
            and after.get("tool", {}).get("uv", {}).get("sources", {}).get(dist)
            == {"workspace": True}
            and after.get("project", {}).get("dependencies") == want_deps
        )
        if not ok:
            raise ScaffoldError(
                f"could not add {dist} to the root pyproject.toml safely: add "
                f"`{dist} = {{ workspace = true }}` under [tool.uv.sources] by hand"
            )
    return out


def _entry_lines(kernel: str, target: str) -> list[str]:
    """One KERNELS row as ruff format keeps it."""
    one = f"    {_pyrepr(kernel)}: {_pyrepr(target)},"
    if len(one) <= LINE:
        return [one]
    if 8 + len(_pyrepr(target)) <= LINE:
        return [f"    {_pyrepr(kernel)}: (", f"        {_pyrepr(target)}", "    ),"]
    mod, _, cls = target.partition(":")
    return [f"    {_pyrepr(kernel)}: (", f'        "{mod}"', f'        ":{cls}"', "    ),"]


def add_kernel_entry(text: str, kernel: str, target: str) -> str:
    """The package ``__init__`` with ``"<kernel>": "<target>"`` added to ``KERNELS``.

    Raises:
        ScaffoldError: no literal ``KERNELS = {...}`` dict, or the kernel is in it.
    """
    tree = ast.parse(text)
    node = next(
        (
            n
            for n in tree.body
            if isinstance(n, (ast.Assign, ast.AnnAssign))
            and any(
                isinstance(t, ast.Name) and t.id == "KERNELS"
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
            )
            and isinstance(n.value, ast.Dict)
        ),
        None,
    )
    if node is None:
        raise ScaffoldError("the package __init__.py has no literal `KERNELS = {...}` table")
    table = node.value
    try:
        current = ast.literal_eval(table)
    except ValueError:
        raise ScaffoldError("the package's KERNELS table is not a literal dict") from None
    if kernel in current:
        raise ScaffoldError(f"kernel {kernel!r} is already in the package's KERNELS table")
    lines = text.splitlines()
    start, end = table.lineno - 1, table.end_lineno - 1
    if start == end:  # one line: rewrite it as a block
        line = lines[start]
        pre, post = line[: table.col_offset], line[table.end_col_offset :]
        block = [pre + "{"]
        for k, v in current.items():
            block += _entry_lines(k, v)
        block += _entry_lines(kernel, target)
        block.append("}" + post)
        lines[start : start + 1] = block
    else:
        if table.values:  # the last entry needs its comma (after any closing parentheses)
            last = table.values[-1]
            offsets = [0]
            for ln in lines:
                offsets.append(offsets[-1] + len(ln) + 1)
            flat = "\n".join(lines)
            pos = offsets[last.end_lineno - 1] + last.end_col_offset
            insert_at = pos
            while pos < len(flat):
                ch = flat[pos]
                if ch == "#":
                    pos = flat.find("\n", pos)
                    pos = len(flat) if pos < 0 else pos
                elif ch == ")":
                    pos += 1
                    insert_at = pos
                elif ch.isspace():
                    pos += 1
                else:
                    break
            if pos >= len(flat) or flat[pos] != ",":
                flat = flat[:insert_at] + "," + flat[insert_at:]
                lines = flat.split("\n")
        lines[end:end] = _entry_lines(kernel, target)
    out = "\n".join(lines) + ("\n" if text.endswith("\n") else "")
    check = next(
        n.value
        for n in ast.parse(out).body
        if isinstance(n, (ast.Assign, ast.AnnAssign))
        and isinstance(n.value, ast.Dict)
        and any(
            isinstance(t, ast.Name) and t.id == "KERNELS"
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        )
    )
    if ast.literal_eval(check) != {**current, kernel: target}:  # pragma: no cover - defensive
        raise ScaffoldError("editing KERNELS went wrong; nothing written")
    return out


# --------------------------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------------------------


def find_workspace_root(start: Path | None = None) -> Path:
    """The nearest folder, from ``start`` (default: cwd) up, whose pyproject.toml declares a uv
    workspace."""
    start = (start or Path.cwd()).resolve()
    for d in (start, *start.parents):
        p = d / "pyproject.toml"
        if p.is_file() and "[tool.uv.workspace]" in p.read_text(encoding="utf-8"):
            return d
    raise ScaffoldError(
        f"no uv workspace (pyproject.toml with [tool.uv.workspace]) at or above {start}"
    )


def resolve_example(root: Path, given: str) -> tuple[Path, str]:
    """(absolute path, path under examples/python/CuTeDSL) of the example.

    Raises:
        ScaffoldError: not a ``.py`` file of the sources.
    """
    from .cutlass_src import CutlassSourcesMissing, examples_dir

    rel = given.strip().replace("\\", "/")
    for prefix in EXAMPLES_PREFIXES:
        if rel.startswith(prefix):
            rel = rel[len(prefix) :]
    local = root / "third_party" / "cutlass" / "examples" / "python" / "CuTeDSL"
    if not os.environ.get("CUTLASS_DIR") and (local / "cute").is_dir():
        base = local
    else:
        try:
            base = examples_dir()
        except CutlassSourcesMissing as e:
            raise ScaffoldError(str(e)) from None
    if Path(rel).is_absolute():
        with contextlib.suppress(ValueError):  # outside the sources: refused below
            rel = Path(rel).resolve().relative_to(base.resolve()).as_posix()
    parts = Path(rel).parts
    if not rel.endswith(".py") or Path(rel).is_absolute() or ".." in parts:
        raise ScaffoldError(
            f"unknown example path {given!r}: give a .py file under examples/python/CuTeDSL, "
            "e.g. cute/hopper/kernel/dense_gemm/dense_gemm.py"
        )
    path = base / rel
    if not path.is_file():
        raise ScaffoldError(f"unknown example path {given!r}: no such file under {base}")
    return path, rel


@dataclass
class Result:
    created: list[Path]
    edited: list[Path]
    example: Example
    new_package: bool
    devlog_kept: Path | None
    messages: list[str]
    devlog: Path | None = None  # the kernel's devlog, written or kept


_IMPORTED_RE = re.compile(r"^Imported:(.*)$", re.M)


def _devlog_imports(path: Path) -> set[str]:
    """The paths a devlog's ``Imported:`` lines name, without a trailing "/"."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return set()
    return {
        p.strip().rstrip("/")
        for m in _IMPORTED_RE.finditer(text)
        for p in re.findall(r"`([^`]+)`", m.group(1))
    }


def devlog_path(
    root: Path, package: str, kernel: str, imported: str
) -> tuple[Path, Path | None, list[Path]]:
    """The devlog of ``package/kernel``: ``knowledge/kernels/<kernel-slug>.md`` when free,
    else ``<package>-<kernel>.md`` (then ``-2``, ``-3``, ...). A file whose ``Imported:``
    line names this kernel's folder is this kernel's own and is kept; any other file is another
    kernel's and is never reused.

    Returns:
        (the path, the same path when it exists and is kept else None, other kernels' devlogs
        passed over).
    """
    folder = root / "knowledge" / "kernels"
    own = imported.rstrip("/")
    base = slug(f"{package}-{kernel}")
    names = [slug(kernel), base] + [f"{base}-{i}" for i in range(2, 100)]
    taken: list[Path] = []
    for name in names:
        path = folder / f"{name}.md"
        if not path.exists():
            return path, None, taken
        if own in _devlog_imports(path):
            return path, path, taken
        taken.append(path)
    raise ScaffoldError(f"no free devlog name for {package}/{kernel} under knowledge/kernels")


def scaffold(
    root: Path,
    package: str,
    kernel: str,
    example: str,
    *,
    entry: str | None = None,
    lock: bool = True,
    fmt: bool = True,
    catalog: bool = True,
    log: Callable[[str], Any] = print,
) -> Result:
    """Write the package (if new), the kernel sub-package, its test and devlog stub.

    Every check runs before the first file is written.

    Raises:
        ScaffoldError: a refusal (see the module docstring).
    """
    check_package_name(package)
    check_kernel_name(kernel)
    root = root.resolve()
    if not (root / "pyproject.toml").is_file():
        raise ScaffoldError(f"{root} has no pyproject.toml: not the workspace root")
    path, rel = resolve_example(root, example)
    module = module_name(package)
    cls = class_name(kernel)
    pkg_dir = root / "packages" / package
    src_dir = pkg_dir / "src" / module
    kdir = src_dir / kernel
    new_package = not (pkg_dir / "pyproject.toml").exists()
    if not new_package and not (src_dir / "__init__.py").is_file():
        raise ScaffoldError(
            f"packages/{package} exists but has no src/{module}/__init__.py: not a kernelplan "
            "package this scaffold can extend"
        )
    if new_package and pkg_dir.exists() and any(pkg_dir.iterdir()):
        raise ScaffoldError(f"packages/{package} exists without a pyproject.toml: move it away")
    for p in (kdir, src_dir / f"{kernel}.py"):
        if p.exists():
            raise ScaffoldError(
                f"kernel {package}/{kernel} already exists ({p.relative_to(root)}): "
                "never overwritten; pick another name"
            )
    init_text = None
    if not new_package:
        init_text = (src_dir / "__init__.py").read_text(encoding="utf-8")
        init_text = add_kernel_entry(init_text, kernel, f"{module}.{kernel}.{kernel}:{cls}")
    test_name = f"test_{kernel}.py"
    if any(
        (d / "tests" / test_name).exists()
        for d in (root / "packages").glob("*")
        if d.name != package
    ):
        test_name = f"test_{module[5:]}_{kernel}.py"  # pytest needs unique basenames
    test_path = pkg_dir / "tests" / test_name
    if test_path.exists():
        raise ScaffoldError(f"{test_path.relative_to(root)} already exists: never overwritten")
    ex = analyze_example(path, rel, entry)
    plan_text = render_plan_module(ex, package, kernel, cls)
    root_text = None
    if new_package:
        root_py = root / "pyproject.toml"
        root_text = register_in_root(root_py.read_text(encoding="utf-8"), f"cute-{package}")

    imported = kdir.relative_to(root).as_posix() + "/"
    devlog, kept, taken = devlog_path(root, package, kernel, imported)

    created: list[Path] = []
    edited: list[Path] = []
    messages: list[str] = []

    def write(p: Path, text: str) -> None:
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "x", encoding="utf-8") as f:  # "x": never overwrite
            f.write(text)
        created.append(p)

    if new_package:
        write(pkg_dir / "pyproject.toml", render_package_pyproject(package, module))
        init_text = add_kernel_entry(
            render_package_init(package, module), kernel, f"{module}.{kernel}.{kernel}:{cls}"
        )
        write(src_dir / "__init__.py", init_text)
        write(src_dir / "__main__.py", render_package_main(package, module))
        (root / "pyproject.toml").write_text(root_text or "", encoding="utf-8")
        edited.append(root / "pyproject.toml")
    else:
        (src_dir / "__init__.py").write_text(init_text or "", encoding="utf-8")
        edited.append(src_dir / "__init__.py")
    write(kdir / "__init__.py", render_kernel_init(kernel, cls, module))
    write(kdir / "__main__.py", render_kernel_main(kernel, cls))
    write(kdir / f"{kernel}.py", plan_text)
    write(test_path, render_test(package, kernel, cls, module))
    for other in taken:
        messages.append(
            f"{other.relative_to(root).as_posix()} is another kernel's devlog: left as it is"
        )
    if kept is not None:
        messages.append(f"kept the existing devlog {devlog.relative_to(root).as_posix()}")
    else:
        write(devlog, render_devlog(ex, package, kernel, imported))

    py_files = [p for p in created if p.suffix == ".py"]
    if fmt:
        _ruff_format(root, py_files, messages)
    if new_package and lock:
        _uv_lock(root, messages)
    if catalog and kept is None:
        _kb_catalog(root, messages)
    return Result(created, edited, ex, new_package, kept, messages, devlog)


def _ruff_format(root: Path, files: list[Path], messages: list[str]) -> None:
    """A safety net for workspaces whose ruff settings differ from this project's: sort the
    imports and format the files the scaffold created (its templates already follow ruff's
    format and this project's isort sections, so here this changes nothing)."""
    if importlib.util.find_spec("ruff") is None:
        messages.append("ruff not installed: generated files not re-formatted")
        return
    for args in (["check", "--fix-only", "--select", "I", "--quiet"], ["format", "--quiet"]):
        r = subprocess.run(
            [sys.executable, "-m", "ruff", *args, *map(str, files)],
            cwd=root,
            capture_output=True,
            text=True,
        )
        if r.returncode:
            messages.append(f"ruff {args[0]} failed: {r.stderr.strip()[:300]}")


def _uv_lock(root: Path, messages: list[str]) -> None:
    uv = shutil.which("uv")
    if not uv or not (root / "uv.lock").is_file():
        messages.append("uv.lock not updated (no uv or no uv.lock): run `uv lock`")
        return
    r = subprocess.run([uv, "lock"], cwd=root, capture_output=True, text=True)
    if r.returncode:
        tail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["?"]
        messages.append(f"`uv lock` failed ({tail[0]}): run it yourself")
    else:
        messages.append("uv.lock updated (`uv lock`)")


def _kb_catalog(root: Path, messages: list[str]) -> None:
    if not (root / "knowledge" / "cutlass-manifest.json").is_file():
        return
    r = subprocess.run(
        [sys.executable, "-m", "kernelplan.kb", "catalog", "--root", str(root)],
        cwd=root,
        capture_output=True,
        text=True,
    )
    if r.returncode:
        messages.append("knowledge catalogs not regenerated: run `python -m kernelplan.kb catalog`")
    else:
        messages.append("knowledge/CATALOG.md and EXAMPLES.md regenerated")


def _report(res: Result, root: Path, package: str, kernel: str, log: Callable) -> None:
    ex = res.example
    e = ex.entry
    rel = lambda p: p.relative_to(root).as_posix()  # noqa: E731
    ev = ", ".join(f"{n} L{line}" for n, line in ex.evidence)
    log(f"scaffolded {package}/{kernel} from {ex.relpath}")
    log(f"  target SM   {ex.sm}: {ex.sm_family}" + (f" ({ev})" if ev else ""))
    for n in ex.sm_notes:
        log(f"              note: {n}")
    kind = "class" if e.kind == "class" else "@cute.jit function"
    log(f"  entry       {kind} {e.name} (L{e.line})" + (f"; {e.how}" if e.how else ""))
    if res.new_package:
        log(f"  package     new: cute-{package} (script `{package}`, nox session check-{package})")
    for p in res.created:
        log(f"  created     {rel(p)}")
    for p in res.edited:
        log(f"  edited      {rel(p)}")
    if res.devlog is not None:
        how = "kept, this kernel's" if res.devlog_kept else "new stub"
        log(f"  devlog      {rel(res.devlog)} ({how})")
    for m in res.messages:
        log(f"  note        {m}")
    todo = ["tensor_specs", "reference_fn", "_algorithmic_flops_bytes"]
    d = _decide(ex)
    if d.required:
        todo.append("default_config values: " + ", ".join(d.required))
    if e.call_params is None or (e.ctor_class and e.ctor_params is None):
        todo.append("plan")
    log(f"  still TODO  {'; '.join(todo)} (marked {TODO})")
    nxt = "uv sync --all-packages; " if res.new_package else ""
    log(f"  next        {nxt}fill the TODOs; uv run nox -s check-{package}")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m kernelplan.scaffold",
        description="Scaffold an imported CUTLASS CuTe DSL example (KernelPlan adapter, "
        "__main__, test, devlog stub; the package too when it is new).",
    )
    p.add_argument("package", help="package CLI name, e.g. gemm or gemm-tutorial")
    p.add_argument("kernel", help="kernel CLI name, a Python identifier, e.g. fp16_gemm_0")
    p.add_argument(
        "--from",
        dest="example",
        required=True,
        metavar="PATH",
        help="the example, as a path under examples/python/CuTeDSL",
    )
    p.add_argument(
        "--entry",
        help="the entry class or @cute.jit function, where the scaffold "
        "finds none or the wrong one",
    )
    p.add_argument("--root", help="workspace root (default: found from the current directory)")
    p.add_argument("--no-lock", action="store_true", help="do not run `uv lock`")
    p.add_argument("--no-format", action="store_true", help="do not run `ruff format`")
    p.add_argument(
        "--no-catalog", action="store_true", help="do not regenerate the knowledge catalogs"
    )
    args = p.parse_args(argv)
    try:
        root = Path(args.root).resolve() if args.root else find_workspace_root()
        res = scaffold(
            root,
            args.package,
            args.kernel,
            args.example,
            entry=args.entry,
            lock=not args.no_lock,
            fmt=not args.no_format,
            catalog=not args.no_catalog,
        )
    except KernelPlanError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    _report(res, root, args.package, args.kernel, print)
    return 0


if __name__ == "__main__":
    sys.exit(main())
