"""Scaffold an imported CUTLASS CuTe DSL example: ``nox -s new -- <package> <kernel> --from
<path under examples/python/CuTeDSL>`` (also ``python -m kernelplan.scaffold ...``).

The example is read with :mod:`ast`, never imported or run. What it derives:

- the target SM, from the instructions the example and the local modules it imports use;
- the entry point: a class with a ``@cute.jit`` ``__call__`` or a ``@cute.jit`` function, as the
  example compiles it, with its constructor and call parameters;
- each parameter's value, traced back through ``run()`` to the example's argparse defaults:
  a literal, a CuTe DSL type (``cutlass.Float32``) or an enum member
  (``utils.TensorMapUpdateMode.SMEM``) becomes a field of a typed Config with that default,
  converted back to what upstream passes in ``plan()``. A value upstream *computes* (in
  ``run()``, from the problem or other values) or that no default gives is a named TODO:
  ``raise NotImplementedError("TODO(<name>): <what to fill>")``, one line when run.

What it writes (never overwriting): ``<kernel>/{__init__,__main__,<kernel>}.py`` (the adapter: a
Config, ``supports()``, ``plan()``), the package's ``KERNELS`` entry, a test that compiles the
kernel for its SM with fake tensors, and a devlog stub under ``knowledge/kernels/``. Into an
existing package the adapter uses the package's workload (found from its implementations'
``workload`` attribute); into a new one the package is created with a workload stub
(``workload.py``) whose problem fields are the example's remaining flags and whose tensors,
reference and FLOPs are TODOs. The templates are in ``kernelplan/templates/``.

Refusals are one ``error:`` line, exit status 2, nothing written.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import importlib.util
import inspect
import json
import keyword
import os
import re
import shutil
import string
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import KernelPlanError

TEMPLATES = Path(__file__).with_name("templates")
EXAMPLES_PREFIXES = ("third_party/cutlass/examples/python/CuTeDSL/", "examples/python/CuTeDSL/")


class ScaffoldError(KernelPlanError):
    """The scaffold refuses (bad name, unknown example, existing kernel, no entry point)."""


# --------------------------------------------------------------------------------------------
# names
# --------------------------------------------------------------------------------------------

PACKAGE_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
KERNEL_RE = re.compile(r"^[a-z][a-z0-9_]*$")
RESERVED_KERNELS = {
    "common",
    "tests",
    "test",
    "conftest",
    "setup",
    "kernelplan",
    "main",
    "workload",
}


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
    reserved = {"KernelPlan", "CuteKernel", "TensorSpec", "Const", "Config", "Problem", "Target"}
    return name + "Plan" if name in reserved else name


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# --------------------------------------------------------------------------------------------
# ast helpers
# --------------------------------------------------------------------------------------------

_NO = object()  # "no value derived"
DSL_TYPES = {
    "Float16", "BFloat16", "Float32", "TFloat32", "Float64", "Float8E4M3FN", "Float8E5M2",
    "Int4", "Int8", "Uint8", "Int16", "Int32", "Int64", "Boolean", "Float4E2M1FN",
}  # fmt: skip


def _dotted(node: ast.AST | None) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _literal(node: ast.AST | None) -> Any:
    """The value of a literal expression (lists as tuples), or _NO."""
    if node is None:
        return _NO
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NO
    return _tupled(value)


def _tupled(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        out = tuple(_tupled(x) for x in v)
        return _NO if _NO in out else out
    return v if v is None or isinstance(v, (bool, int, float, str)) else _NO


def _dsl_type(node: ast.AST | None) -> str | None:
    """``cutlass.Float16`` -> "Float16" (a DSL numeric type), else None."""
    name = _dotted(node) or ""
    last = name.split(".")[-1]
    if last in DSL_TYPES and (name == last or name.split(".")[0] in ("cutlass", "cute")):
        return last
    return None


def _clip(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _src(node: ast.AST, n: int = 70) -> str:
    return _clip(ast.unparse(node), n).replace("`", "'")


def _set_parents(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child._parent = node  # type: ignore[attr-defined]


def _enclosing(node: ast.AST) -> ast.AST | None:
    """The function holding ``node``, or the ``if __name__ == "__main__"`` block, or None."""
    cur = getattr(node, "_parent", None)
    while cur is not None:
        if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)) or _is_main(cur):
            return cur
        cur = getattr(cur, "_parent", None)
    return None


def _is_main(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "__name__" in ast.unparse(node.test)


def _is_jit(dec: ast.expr) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    return (_dotted(target) or "") in ("cute.jit", "cutlass.cute.jit", "jit")


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> full dotted path, from the module's imports."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


# --------------------------------------------------------------------------------------------
# the target SM: the newest instruction family used by the example and its local imports
# --------------------------------------------------------------------------------------------

_TMEM = {"alloc_tmem", "dealloc_tmem", "retrieve_tmem_ptr", "relinquish_tmem_alloc_permit"}
_HOPPER_RE = re.compile(
    r"CopyBulk|(^|_)tma(_|$)|Tma[A-Z]|^TMA|setmaxregister|setmaxnreg|griddepcontrol|"
    r"^cluster_(arrive|wait)|block_in_cluster|elect_one|fence_proxy|^mapa|StMatrix"
)
_AMPERE_RE = re.compile(r"^Mma.*Op$|LdMatrix|CopyG2SOp|^cp_async")
#: family -> (rank: lower is newer, SM, what it is)
FAMILIES = {
    "tcgen05": (0, "sm_100a", "Blackwell tcgen05 MMA / TMEM (SM100 only)"),
    "wgmma": (1, "sm_90a", "Hopper warpgroup MMA (WGMMA, cute.nvgpu.warpgroup)"),
    "hopper": (2, "sm_90a", "Hopper TMA / cluster / mbarrier-async instructions, no WGMMA"),
    "ampere": (3, "sm_80", "warp-level MMA / cp.async / ldmatrix (Ampere and newer)"),
}
_FOLDER_SM = {"ampere": "sm_80", "hopper": "sm_90a", "blackwell": "sm_100a"}


def _family(chain: str) -> str | None:
    parts = chain.split(".")
    if "tcgen05" in parts or "blackwell_helpers" in parts:
        return "tcgen05"
    if any(p.startswith("Tmem") or p in _TMEM for p in parts):
        return "tcgen05"
    if "warpgroup" in parts or "hopper_helpers" in parts:
        return "wgmma"
    if _HOPPER_RE.search(parts[-1]):
        return "hopper"
    if ("warp" in parts or "cpasync" in parts) and _AMPERE_RE.search(parts[-1]):
        return "ampere"
    return None


def _instructions(tree: ast.Module, where: str) -> dict[str, list[tuple[str, str]]]:
    """family -> [(name, "file Lnn")] for one module."""
    aliases = _aliases(tree)
    found: dict[str, list[tuple[str, str]]] = {}

    def add(fam: str | None, name: str, line: int) -> None:
        if fam:
            found.setdefault(fam, []).append((name, f"{where} L{line}"))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                add(_family(a.name), a.name, node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                add(_family(f"{node.module}.{a.name}"), f"{node.module}.{a.name}", node.lineno)
        elif isinstance(node, ast.Attribute) and not isinstance(
            getattr(node, "_parent", None), ast.Attribute
        ):
            chain = _dotted(node)
            if chain:
                head, _, rest = chain.partition(".")
                full = aliases.get(head, head) + ("." + rest if rest else "")
                add(_family(full), chain, node.lineno)
        elif isinstance(node, ast.Call):
            fn = _dotted(node.func) or ""
            if fn.endswith(".launch") and any(k.arg == "cluster" for k in node.keywords):
                add("hopper", f"{fn}(..., cluster=...)", node.lineno)
        elif isinstance(node, ast.Constant) and re.fullmatch(r"sm_103[af]?", str(node.value)):
            add("sm103", node.value, node.lineno)
    return found


def local_modules(tree: ast.Module, path: Path, root: Path) -> list[Path]:
    """Files under the examples root that the module imports (``from helpers import
    fmha_helpers``, ``from common_dense_gemm_efc import ...``), as :func:`load_example` puts
    the example's folder, ``cute/`` and the root on ``sys.path``."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [f"{node.module}.{a.name}" for a in node.names] + [node.module]
    out: list[Path] = []
    for name in names:
        if name.split(".")[0] in ("cutlass", "cuda", "torch", "numpy"):
            continue
        rel = name.replace(".", "/")
        for base in (path.parent, root / "cute", root):
            for cand in (base / f"{rel}.py", base / rel / "__init__.py"):
                if cand.is_file() and cand.resolve() != path.resolve() and cand not in out:
                    out.append(cand)
    return out


def derive_sm(path: Path, relpath: str, root: Path) -> tuple[str, str, list[str], list[str]]:
    """(sm, what decided it, evidence ["`name` (file Lnn)"], notes)."""
    files, todo, found = [path], [path], {}  # type: ignore[var-annotated]
    while todo:
        p = todo.pop()
        try:
            tree = ast.parse(p.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        _set_parents(tree)
        where = p.name if p == path else p.relative_to(root).as_posix()
        for fam, hits in _instructions(tree, where).items():
            found.setdefault(fam, []).extend(hits)
        for q in local_modules(tree, p, root):
            if q not in files and len(files) < 12:
                files.append(q)
                todo.append(q)
    parts = relpath.split("/")
    folder = parts[1] if len(parts) > 2 and parts[0] in ("cute", "cute_ext") else None
    notes: list[str] = []
    if folder == "blackwell_geforce":
        ev = found.get("ampere", []) + found.get("hopper", [])
        why = "the example lives under cute/blackwell_geforce/ (SM120: warp-level MMA, no tcgen05)"
        return "sm_120a", why, _evidence(ev), notes
    for fam in sorted(FAMILIES, key=lambda f: FAMILIES[f][0]):
        hits = found.get(fam)
        if not hits:
            continue
        _, sm, what = FAMILIES[fam]
        if fam == "tcgen05" and found.get("sm103"):
            sm, what = "sm_103a", what + "; the code names sm_103 (B300)"
            hits = hits + found["sm103"][:1]
        expected = _FOLDER_SM.get(folder or "")
        if expected and expected != sm:
            notes.append(
                f"the example sits under cute/{folder}/ but uses no instruction newer than {sm}: "
                f"built for {sm}; add {expected} to target_sm to build it for that SM too"
            )
        return sm, what, _evidence(hits), notes
    why = "no tensor-core, TMA or cp.async instruction found: sm_80, the oldest SM built for"
    return "sm_80", why, [], notes


def _evidence(hits: list[tuple[str, str]], n: int = 3) -> list[str]:
    out, seen = [], set()
    for name, where in hits:
        if name.split(".")[-1] not in seen:
            seen.add(name.split(".")[-1])
            out.append(f"`{name}` ({where})")
        if len(out) == n:
            break
    return out


# --------------------------------------------------------------------------------------------
# the entry point
# --------------------------------------------------------------------------------------------


@dataclass
class Param:
    name: str
    annotation: str | None
    default: ast.expr | None
    kind: str  # positional | kwonly | vararg | varkw


@dataclass
class Entry:
    kind: str  # "class" | "function"
    name: str
    line: int
    call_params: list[Param]
    ctor_class: str | None = None
    ctor_params: list[Param] | None = None  # None: __init__ not in this file
    ctor_call: ast.Call | None = None  # where upstream constructs it
    compile_call: ast.Call | None = None  # cute.compile(...) or the direct call
    compile_args: list[ast.expr] = field(default_factory=list)  # its arguments after the fn
    object_param: str | None = None  # host-function parameter that receives the object
    how: str = ""


def _params(fn: ast.FunctionDef, drop_self: bool) -> list[Param]:
    a = fn.args
    pos = list(a.posonlyargs) + list(a.args)
    defaults: list[ast.expr | None] = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
    out = [_param(x, d, "positional") for x, d in zip(pos, defaults, strict=True)]
    if a.vararg:
        out.append(_param(a.vararg, None, "vararg"))
    out += [_param(x, d, "kwonly") for x, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg:
        out.append(_param(a.kwarg, None, "varkw"))
    return out[1:] if drop_self and out and out[0].name in ("self", "cls") else out


def _param(arg: ast.arg, default: ast.expr | None, kind: str) -> Param:
    ann = ast.unparse(arg.annotation) if arg.annotation is not None else None
    return Param(arg.arg, ann, default, kind)


def find_entry(tree: ast.Module, forced: str | None = None) -> Entry:
    """The host entry point: what the example passes to ``cute.compile`` (an object of a class
    with a ``@cute.jit`` ``__call__``, or a ``@cute.jit`` function), else a ``@cute.jit``
    function it calls directly, else ``forced``.

    Raises:
        ScaffoldError: none found, or ``forced`` names nothing here.
    """
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    jit_call = {
        name: item
        for name, cls in classes.items()
        for item in cls.body
        if isinstance(item, ast.FunctionDef)
        and item.name == "__call__"
        and any(_is_jit(d) for d in item.decorator_list)
    }
    jit_funcs = {
        n.name: n
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and any(_is_jit(d) for d in n.decorator_list)
    }

    def construction(var: str, scope: ast.AST | None) -> tuple[str, ast.Call] | None:
        """(class, call) that ``var = Class(...)`` binds in ``scope``."""
        for node in ast.walk(scope or tree):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and any(isinstance(t, ast.Name) and t.id == var for t in node.targets)
            ):
                cname = (_dotted(node.value.func) or "").split(".")[-1]
                if cname in classes:
                    return cname, node.value
        return None

    def class_entry(cname: str, call: ast.Call | None, ctor: ast.Call | None) -> Entry:
        e = Entry("class", cname, classes[cname].lineno, _params(jit_call[cname], True))
        _attach_ctor(e, classes[cname], ctor)
        e.compile_call = call
        return e

    found: list[Entry] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func.value if isinstance(node.func, ast.Subscript) else node.func
        if (_dotted(func) or "") not in ("cute.compile", "cutlass.cute.compile"):
            continue
        scope = _enclosing(node)
        first = node.args[0]
        fname = first.id if isinstance(first, ast.Name) else None
        if fname in jit_funcs:
            e = Entry("function", fname, jit_funcs[fname].lineno, _params(jit_funcs[fname], False))
            e.compile_call, e.compile_args = node, list(node.args[1:])
            for p, arg in zip(e.call_params, e.compile_args, strict=False):
                inst = construction(arg.id, scope) if isinstance(arg, ast.Name) else None
                if inst and e.object_param is None:
                    e.object_param = p.name
                    _attach_ctor(e, classes[inst[0]], inst[1])
            found.append(e)
        elif fname and (inst := construction(fname, scope)) and inst[0] in jit_call:
            e = class_entry(inst[0], node, inst[1])
            e.compile_args = list(node.args[1:])
            found.append(e)
        if found:
            found[-1].how = f"cute.compile at L{node.lineno}: `{_src(node)}`"
    if not found:  # a @cute.jit function called directly (compiles and launches in one step)
        for node in ast.walk(tree):
            callee = _dotted(node.func) if isinstance(node, ast.Call) else None
            scope = _enclosing(node)
            if (
                callee in jit_funcs
                and scope is not None
                and getattr(scope, "name", "") not in jit_funcs
            ):
                fn = jit_funcs[callee]
                e = Entry("function", callee, fn.lineno, _params(fn, False))
                e.compile_call, e.compile_args = node, list(node.args)
                e.how = f"called directly at L{node.lineno}; the adapter compiles it instead"
                found.append(e)
                break
    if forced:
        chosen = [e for e in found if e.name == forced]
        if not chosen:
            if forced in jit_call:
                chosen = [class_entry(forced, None, None)]
            elif forced in jit_funcs:
                fn = jit_funcs[forced]
                chosen = [Entry("function", forced, fn.lineno, _params(fn, False))]
            else:
                raise ScaffoldError(
                    f"--entry {forced}: no @cute.jit class or function of that name"
                )
            chosen[0].how = "chosen with --entry"
        found = chosen
    if not found:
        names = sorted(set(jit_call) | set(jit_funcs))
        if names:
            raise ScaffoldError(
                f"no call of a @cute.jit entry point found (jit classes/functions: "
                f"{', '.join(names)}): pick one with --entry NAME"
            )
        raise ScaffoldError(
            "no @cute.jit entry point in the example (no class with a @cute.jit __call__, no "
            "@cute.jit host function): it may reach one through another module"
        )
    return found[0]


def _attach_ctor(e: Entry, cls: ast.ClassDef, call: ast.Call | None) -> None:
    init = next(
        (i for i in cls.body if isinstance(i, ast.FunctionDef) and i.name == "__init__"), None
    )
    e.ctor_class = cls.name
    e.ctor_params = _params(init, True) if init is not None else (None if cls.bases else [])
    e.ctor_call = call


def _call_map(
    params: list[Param], call: ast.Call | None, args: list[ast.expr]
) -> dict[str, ast.expr]:
    """Parameter name -> the expression a call passes for it."""
    out: dict[str, ast.expr] = {}
    positional = [p for p in params if p.kind == "positional"]
    for p, a in zip(positional, args, strict=False):
        if isinstance(a, ast.Starred):
            break
        out[p.name] = a
    for kw in call.keywords if call is not None else []:
        if kw.arg:
            out[kw.arg] = kw.value
    return out


# --------------------------------------------------------------------------------------------
# the example's CLI and the values it passes
# --------------------------------------------------------------------------------------------

#: Example flags the harness replaces (tolerances, repetitions, reference skipping, cold L2).
HARNESS_FLAGS = {
    "tolerance", "atol", "rtol", "warmup_iterations", "iterations", "skip_ref_check",
    "use_cold_l2", "benchmark", "perf_test", "print_rtol_stats", "no_print_rtol_stats",
}  # fmt: skip
TUNING_RE = re.compile(
    r"tile|tiler|cluster|stage|thread|swizzle|raster|acc_dtype|2cta|tma_store|prefetch|"
    r"block_size|atom_layout|promotion|persistent|split_k|occupancy|num_warps|copy_bits|"
    r"warpgroup|pingpong"
)


@dataclass
class Flag:
    dest: str
    option: str
    line: int
    value: Value


@dataclass
class Value:
    """What the scaffold knows about one value upstream passes.

    kind: "lit" (``value`` a Python literal), "dtype" (``value`` a DSL type name), "enum"
    (``value`` the member name, ``enum`` the class expression in the example's namespace) or
    "todo" (``why`` says what upstream does instead). ``why`` cites the source line;
    ``flags`` are the example flags it comes from.
    """

    kind: str
    value: Any = None
    why: str = ""
    enum: str | None = None
    flags: list[str] = field(default_factory=list)


class Tracer:
    """Traces an expression that upstream passes back to a literal, a DSL type, an enum
    member or an argparse default; anything computed is a TODO citing its lines."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        aliases = _aliases(tree)
        self.modules = {k for k, v in aliases.items() if k == v.split(".")[-1] or "." in v}
        self.modules |= {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        self.flags: dict[str, Flag] = {}
        self._read_flags()

    # -- argparse -------------------------------------------------------------------------
    def _read_flags(self) -> None:
        calls = [
            n
            for n in ast.walk(self.tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "add_argument"
            and n.args
            and isinstance(n.args[0], ast.Constant)
            and str(n.args[0].value).startswith("-")
        ]
        for call in sorted(calls, key=lambda c: c.lineno):
            options = [a.value for a in call.args if isinstance(a, ast.Constant)]
            kw = {k.arg: k.value for k in call.keywords if k.arg}
            option = next((o for o in options if o.startswith("--")), options[0])
            dest = _literal(kw.get("dest"))
            if not isinstance(dest, str):
                dest = option.lstrip("-").replace("-", "_")
            action = _literal(kw.get("action"))
            default = kw.get("default")
            if default is None and action in ("store_true", "store_false"):
                v = Value("lit", action == "store_false")
            elif default is None:
                v = Value("lit", None)
            else:
                v = self._leaf(default)
                if v is None:
                    v = Value("todo", why=f"its default is `{_src(default, 40)}`")
            where = f"{option} default (L{call.lineno})"
            v.why = f"{where}: {v.why}" if v.kind == "todo" else where
            v.flags = [dest]
            self.flags.setdefault(dest, Flag(dest, option, call.lineno, v))

    def _leaf(self, node: ast.AST) -> Value | None:
        """A literal, a DSL type or an enum member, else None."""
        lit = _literal(node)
        if lit is not _NO:
            return Value("lit", lit)
        if (dt := _dsl_type(node)) is not None:
            return Value("dtype", dt)
        chain = _dotted(node) or ""
        parts = chain.split(".")
        if (
            len(parts) >= 2
            and parts[0] in self.modules
            and parts[-1][:1].isupper()
            and not parts[-1].startswith("Float")
        ):
            return Value("enum", parts[-1], enum=".".join(parts[:-1]))
        return None

    # -- tracing ----------------------------------------------------------------------------
    def trace(self, node: ast.expr, depth: int = 0) -> Value:
        leaf = self._leaf(node)
        if leaf is not None:
            leaf.why = f"upstream passes `{_src(node, 50)}` (L{node.lineno})"
            return leaf
        chain = _dotted(node) or ""
        if chain.startswith("args.") and chain[5:] in self.flags:
            f = self.flags[chain[5:]]
            return Value(f.value.kind, f.value.value, f.value.why, f.value.enum, [f.dest])
        scope = _enclosing(node)
        if isinstance(node, ast.Name) and scope is not None and depth < 6:
            assigns = [s for s in _bindings(scope).get(node.id, []) if s.lineno < node.lineno]
            assigns = [s for s in assigns if not _is_conversion(s, node.id)]
            if assigns:
                return self._computed(node.id, assigns, scope)
            if isinstance(scope, ast.FunctionDef):
                return self._parameter(node.id, scope, depth)
            if node.id in self.flags:
                return self.trace(ast.parse(f"args.{node.id}").body[0].value, depth + 1)
        value = self._evaluate(node, depth)
        if value is not _NO:
            flags = [
                n.attr for n in ast.walk(node) if _dotted(n) == f"args.{getattr(n, 'attr', '')}"
            ]
            detail = ", ".join(
                f"{self.flags[f].option} default {self.flags[f].value.value!r}"
                for f in flags
                if f in self.flags
            )
            why = f"upstream passes `{_src(node, 50)}` (L{node.lineno})" + (
                f", with {detail}" if detail else ""
            )
            return Value("lit", value, why, flags=flags)
        return self._todo_expr(node, scope)

    def _parameter(self, name: str, fn: ast.FunctionDef, depth: int) -> Value:
        """A parameter of ``fn``: what its caller passes, else its default."""
        params = _params(fn, drop_self=False)
        for call in ast.walk(self.tree):
            if isinstance(call, ast.Call) and _dotted(call.func) == fn.name:
                arg = _call_map(params, call, list(call.args)).get(name)
                if arg is not None:
                    return self.trace(arg, depth + 1)
        p = next((p for p in params if p.name == name), None)
        if p is not None and p.default is not None:
            v = self._leaf(p.default)
            if v is not None:
                v.why = f"default of `{fn.name}({name}=...)` (L{fn.lineno})"
                return v
        return Value(
            "todo",
            why=f"`{name}` is a parameter of `{fn.name}()` (L{fn.lineno}) that no caller here sets",
        )

    def _computed(self, name: str, stmts: list[ast.stmt], scope: ast.AST) -> Value:
        where = "the main block" if _is_main(scope) else f"`{scope.name}()`"  # type: ignore[attr-defined]
        if len(stmts) == 1 and isinstance(stmts[0], ast.Assign) and _guard(stmts[0], scope) is None:
            lit = self._leaf(stmts[0].value)
            if lit is not None:
                lit.why = f"upstream sets `{name}` at L{stmts[0].lineno}: `{_src(stmts[0], 50)}`"
                return lit
        shown = "; ".join(f"L{s.lineno} `{_stmt(s, scope)}`" for s in stmts[:3])
        more = "; ..." if len(stmts) > 3 else ""
        return Value(
            "todo",
            why=f"upstream computes `{name}` in {where}: {shown}{more}",
            flags=self._flags_read(stmts, scope),
        )

    def _todo_expr(self, node: ast.expr, scope: ast.AST | None) -> Value:
        why = f"upstream passes `{_src(node, 60)}` (L{node.lineno})"
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        stmts = [
            s
            for n in sorted(names)
            for s in (_bindings(scope).get(n, []) if scope is not None else [])
            if s.lineno < node.lineno
        ]
        if stmts:
            why += ", computed at " + ", ".join(
                f"L{s.lineno}" for s in sorted(stmts, key=lambda s: s.lineno)[:4]
            )
        return Value("todo", why=why, flags=self._flags_read(stmts, scope) if scope else [])

    def _flags_read(self, stmts: list[ast.stmt], scope: ast.AST) -> list[str]:
        """The example flags the statements read, through the scope's parameters."""
        out: list[str] = []
        seen: set[str] = set()
        todo = [n for s in stmts for n in _reads(s)]
        binds = _bindings(scope)
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            if n in self.flags and _is_main(scope):
                out.append(n)
            for s in binds.get(n, []):
                todo += _reads(s)
            if isinstance(scope, ast.FunctionDef) and n in {p.name for p in _params(scope, False)}:
                for call in ast.walk(self.tree):
                    if isinstance(call, ast.Call) and _dotted(call.func) == scope.name:
                        arg = _call_map(_params(scope, False), call, list(call.args)).get(n)
                        for a in ast.walk(arg) if arg is not None else ():
                            d = _dotted(a) or ""
                            if d.startswith("args.") and d[5:] in self.flags:
                                out.append(d[5:])
                            elif isinstance(a, ast.Name) and a.id in self.flags:
                                out.append(a.id)
        return list(dict.fromkeys(out))

    def _evaluate(self, node: ast.AST, depth: int) -> Any:
        """A simple expression over literals and flag defaults (``True if args.raster_order ==
        "along_m" else False``), else _NO."""
        if depth > 8:
            return _NO
        ev = lambda n: self._evaluate(n, depth + 1)  # noqa: E731
        if (lit := _literal(node)) is not _NO:
            return lit
        chain = _dotted(node) or ""
        if chain.startswith("args.") and chain[5:] in self.flags:
            v = self.flags[chain[5:]].value
            return v.value if v.kind == "lit" else _NO
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [ev(e) for e in node.elts]
            return _NO if _NO in items else tuple(items)
        if isinstance(node, ast.IfExp):
            test = ev(node.test)
            return _NO if test is _NO else ev(node.body if test else node.orelse)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = ev(node.operand)
            return _NO if v is _NO else not v
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            a, b = ev(node.left), ev(node.comparators[0])
            ops = {ast.Eq: "__eq__", ast.NotEq: "__ne__"}
            if a is _NO or b is _NO or type(node.ops[0]) not in ops:
                return _NO
            return getattr(a, ops[type(node.ops[0])])(b) is True
        return _NO


def _bindings(scope: ast.AST) -> dict[str, list[ast.stmt]]:
    """Name -> the statements of ``scope`` (not of nested functions) that assign it."""
    out: dict[str, list[ast.stmt]] = {}
    todo: list[ast.AST] = list(getattr(scope, "body", []))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.For)) or (
            isinstance(node, ast.AnnAssign) and node.value is not None
        ):
            targets = [node.target]
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    out.setdefault(n.id, []).append(node)  # type: ignore[arg-type]
        todo.extend(ast.iter_child_nodes(node))
    for v in out.values():
        v.sort(key=lambda s: s.lineno)
    return out


def _reads(stmt: ast.AST) -> list[str]:
    value = getattr(stmt, "value", None) or getattr(stmt, "iter", None)
    names = [n.id for n in ast.walk(value) if isinstance(n, ast.Name)] if value else []
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        names.append(stmt.target.id)
    return names


def _is_conversion(stmt: ast.stmt, name: str) -> bool:
    """``x = cutlass.dtype(x)`` / ``x = tuple(x)``: the same value in another type."""
    if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
        return False
    fn = _dotted(stmt.value.func) or ""
    args = stmt.value.args
    return (
        fn in ("tuple", "list", "int", "float", "str", "bool", "cutlass.dtype")
        and len(args) == 1
        and isinstance(args[0], ast.Name)
        and args[0].id == name
    )


def _guard(stmt: ast.stmt, scope: ast.AST) -> ast.expr | None:
    cur = getattr(stmt, "_parent", None)
    while cur is not None and cur is not scope:
        if isinstance(cur, ast.If):
            return cur.test
        cur = getattr(cur, "_parent", None)
    return None


def _stmt(stmt: ast.stmt, scope: ast.AST) -> str:
    text = ast.unparse(stmt).splitlines()[0].rstrip(":")
    guard = _guard(stmt, scope)
    return _clip((f"if {ast.unparse(guard)}: " if guard is not None else "") + text, 60).replace(
        "`", "'"
    )


# --------------------------------------------------------------------------------------------
# the example, read
# --------------------------------------------------------------------------------------------


@dataclass
class Example:
    relpath: str
    path: Path
    sm: str
    sm_why: str
    evidence: list[str]
    sm_notes: list[str]
    entry: Entry
    tracer: Tracer
    checks: list[str]  # upstream's own problem checks: "can_implement (L12)"
    reference_hints: list[str]
    run_lines: str  # "`run()` L1167-L1338": where upstream builds the tensors


_CHECK_RE = re.compile(r"^(can_implement|is_valid\w*|check_\w*support\w*)$")


def analyze_example(
    path: Path, relpath: str, entry: str | None = None, root: Path | None = None
) -> Example:
    """Read one example with :mod:`ast`.

    Raises:
        ScaffoldError: unreadable, a library module (no ``__main__`` block), or no entry point.
    """
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, UnicodeDecodeError, SyntaxError) as e:
        raise ScaffoldError(f"cannot read {relpath}: {e}") from None
    _set_parents(tree)
    if entry is None and not any(_is_main(n) for n in tree.body):
        raise ScaffoldError(
            f'{relpath} has no `if __name__ == "__main__"` block: a helper library, not an '
            "example; import an example that uses it (or name the entry with --entry NAME)"
        )
    ent = find_entry(tree, entry)
    root = root or path.parents[len(Path(relpath).parts) - 1]
    sm, why, evidence, notes = derive_sm(path, relpath, root)
    checks = [
        f"`{n.name}` (L{n.lineno})"
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and _CHECK_RE.match(n.name)
    ]
    hints = []
    for n in ast.walk(tree):
        fn = (_dotted(n.func) or "") if isinstance(n, ast.Call) else ""
        if fn.endswith("einsum") or fn.split(".")[-1] in ("assert_close", "allclose"):
            hints.append(f"`{fn.split('.')[-1]}` (L{n.lineno})")
    scope = _enclosing(ent.compile_call) if ent.compile_call is not None else None
    run_lines = (
        f"`{scope.name}()` L{scope.lineno}-L{scope.end_lineno}"
        if isinstance(scope, ast.FunctionDef)
        else "the example's run function"
    )
    return Example(
        relpath, path, sm, why, evidence, notes, ent, Tracer(tree), checks[:3],
        sorted(set(hints))[:3], run_lines,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# the package's workload
# --------------------------------------------------------------------------------------------


@dataclass
class PackageWorkload:
    """How a package's implementations reach their workload."""

    base: str  # class the adapter subclasses ("GemmPlan" or "KernelPlan")
    base_import: str  # "from ..common import GemmPlan"
    workload_expr: str | None  # "GEMM" when the adapter sets workload itself, else None
    workload_import: str | None
    tensors: list[str] | None  # the workload's tensor names for its default problem
    problem_fields: list[str]


def find_package_workload(src_dir: Path, module: str) -> PackageWorkload:
    """The workload the package's implementations declare (``workload = X`` in a class body,
    the class being a shared base or the implementation itself).

    Raises:
        ScaffoldError: no implementation declares one (the package is not on the workload API).
    """
    hits: list[tuple[Path, str, str, str]] = []  # (file, class, workload name, its import path)
    for py in sorted(src_dir.rglob("*.py")):
        try:
            tree = ast.parse(py.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        aliases = _aliases(tree)
        rel_mod = ".".join(py.relative_to(src_dir.parent).with_suffix("").parts)
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            for stmt in cls.body:
                target = (
                    getattr(stmt, "target", None) or (getattr(stmt, "targets", None) or [None])[0]
                )
                if (
                    isinstance(target, ast.Name)
                    and target.id == "workload"
                    and isinstance(stmt.value, ast.Name)
                ):
                    wname = stmt.value.id
                    full = _absolute(aliases.get(wname, f"{rel_mod}.{wname}"), tree, rel_mod)
                    hits.append((py, cls.name, wname, full))
    if not hits:
        raise ScaffoldError(
            f"{module} has no implementation with a `workload` attribute (not on the workload "
            "API yet): port one of its kernels first, or scaffold into a new package"
        )
    counts: dict[str, int] = {}
    for h in hits:
        counts[h[3]] = counts.get(h[3], 0) + 1
    full = max(counts, key=lambda k: counts[k])
    py, cls, wname, _ = next(h for h in hits if h[3] == full)
    tensors, fields = _workload_names(full, src_dir.parent)
    if py.name == "__init__.py" or py.parent != src_dir:  # an implementation's own class
        wmod, _, wattr = full.rpartition(".")
        return PackageWorkload(
            "KernelPlan", "from kernelplan import KernelPlan", wattr, f"from {wmod} import {wattr}",
            tensors, fields,
        )  # fmt: skip
    return PackageWorkload(cls, f"from ..{py.stem} import {cls}", None, None, tensors, fields)


def _absolute(name: str, tree: ast.Module, rel_mod: str) -> str:
    """``..common.X`` style names from relative imports made absolute."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            for a in node.names:
                if name == f"{node.module}.{a.name}" or name.endswith("." + (a.asname or a.name)):
                    base = rel_mod.split(".")[: -node.level]
                    return ".".join([*base, *([node.module] if node.module else []), a.name])
    return name


def _workload_names(full: str, src_root: Path) -> tuple[list[str] | None, list[str]]:
    """(tensor names of the default problem, problem field names), imported; (None, []) when
    the workload cannot say (a stub whose tensor_specs is still a TODO)."""
    mod, _, attr = full.rpartition(".")
    added = str(src_root) not in sys.path
    if added:
        sys.path.insert(0, str(src_root))
    try:
        wl = getattr(importlib.import_module(mod), attr)
        fields = wl.problem_type.field_names()
        return list(wl.tensor_specs(wl.problem_type())), fields
    except Exception:  # noqa: BLE001 - a half-written workload: its names are unknown
        try:
            return None, list(wl.problem_type.field_names())  # type: ignore[possibly-undefined]
        except Exception:  # noqa: BLE001
            return None, []
    finally:
        if added:
            sys.path.remove(str(src_root))


# --------------------------------------------------------------------------------------------
# deciding what the generated code holds
# --------------------------------------------------------------------------------------------


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


def _torch_name(dsl: str) -> str:
    from . import dtypes

    with contextlib.suppress(KernelPlanError, KeyError):
        return dtypes.storage_of(dsl)
    return dsl


def _is_tensor(p: Param) -> bool:
    ann = p.annotation or ""
    return "Tensor" in ann or (
        not ann and p.default is None and p.kind == "positional" and p.name != "stream"
    )


def design(
    ex: Example, adapter: str, pw: PackageWorkload | None, workload_file: str | None
) -> Design:
    """Every value of the entry call decided: config field, problem field, tensor, stream,
    max_active_clusters, or a named TODO."""
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
            leaf = tr._leaf(p.default) if p.default is not None else None
            v = leaf or Value("todo", why="upstream passes nothing and it has no default value")
            if leaf:
                v.why = f"its default in the signature (`{p.name}={_src(p.default, 40)}`)"
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
            if "." in ann and ann.split(".")[0] in tr.modules:
                v.why += f"; it is a member of `{ann}` (`mod.{ann}.<NAME>`)"
            t = Todo(p.name, f"{v.why}; compute it here from `problem` and `config`", adapter)
            todos.append(t)
            locals_.append((p.name, t))
            return p.name
        config.append(
            Field(p.name, "str" if v.kind != "lit" else _py_type(v.value), v.value, v.why, v.kind)
        )
        if v.kind == "dtype":
            return f"dtypes.cute_type(config.{p.name})"
        if v.kind == "enum":
            return f"mod.{v.enum}[config.{p.name}]"
        return f"config.{p.name}"

    ctor: list[tuple[str, str]] = []
    if e.ctor_class and e.ctor_params is None:
        t = Todo(
            "constructor",
            f"`{e.ctor_class}.__init__` is inherited from outside this file: pass its arguments",
            adapter,
        )
        todos.append(t)
    passed = _call_map(
        e.ctor_params or [], e.ctor_call, list(e.ctor_call.args) if e.ctor_call else []
    )
    for p in e.ctor_params or []:
        if p.kind in ("vararg", "varkw"):
            continue
        if p.name not in passed and p.default is not None and tr._leaf(p.default) is None:
            continue  # an expression default (a lambda): upstream's own
        ctor.append((p.name, value(p, passed.get(p.name))))

    passed = _call_map(e.call_params, e.compile_call, e.compile_args)
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
            config.append(
                Field(
                    dest,
                    "str" if f.value.kind != "lit" else _py_type(f.value.value),
                    f.value.value,
                    f.value.why + "; read by a TODO below",
                    f.value.kind,
                )
            )
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
                todos.append(
                    Todo(f.dest, f"{v.why}: give the problem field a default", workload_file or "")
                )
            elif v.kind == "dtype":
                problem.append(
                    Field(
                        f.dest, "str", _torch_name(v.value), f"{v.why} (cutlass.{v.value})", "lit"
                    )
                )
            else:
                problem.append(
                    Field(
                        f.dest,
                        "str" if v.kind == "enum" else _py_type(v.value),
                        v.value,
                        v.why,
                        v.kind,
                    )
                )
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
    return Design(config, problem, ctor, call, locals_, tensors, override, todos, dropped, clusters)


# --------------------------------------------------------------------------------------------
# rendering (templates in kernelplan/templates, ``$name`` placeholders)
# --------------------------------------------------------------------------------------------


def render(template: str, **values: Any) -> str:
    return string.Template((TEMPLATES / template).read_text(encoding="utf-8")).substitute(values)


def _strs(text: str, indent: int) -> str:
    """A long string as implicitly joined literals, one per line, at ``indent``."""
    parts = textwrap.wrap(text, 94 - indent, break_long_words=False, drop_whitespace=False)
    return "\n".join(" " * indent + json.dumps(p, ensure_ascii=False) for p in parts)


def _todo_line(t: Todo, indent: int) -> str:
    pad = " " * indent
    return (
        f"{pad}raise NotImplementedError(\n{_strs(f'TODO({t.name}): {t.what}', indent + 4)}\n{pad})"
    )


def _fill(text: str, indent: int = 0) -> str:
    return textwrap.fill(
        text, 96, initial_indent=" " * indent, subsequent_indent=" " * indent,
        break_long_words=False, break_on_hyphens=False,
    )  # fmt: skip


def _comment(text: str, indent: int) -> str:
    return "\n".join(
        " " * indent + "# " + ln
        for ln in textwrap.wrap(text, 96 - indent, break_long_words=False, break_on_hyphens=False)
    )


def _field_lines(fields: list[Field]) -> str:
    out = []
    for f in fields:
        out.append(
            _comment(
                f.why
                + (f" (cutlass.{f.default})" if f.kind == "dtype" else "")
                + (" (an enum member name)" if f.kind == "enum" else ""),
                4,
            )
        )
        out.append(f"    {f.name}: {f.type} = {f.default!r}")
    return "\n".join(out)


def render_adapter(
    ex: Example, d: Design, package: str, kernel: str, cls: str, pw: PackageWorkload | None
) -> str:
    e = ex.entry
    lines: list[str] = []
    for name, t in d.locals:
        lines.append(_comment(t.what.split("; compute it here")[0], 8))
        what = "compute it from problem and config: " + t.what.split("; compute it here")[0]
        lines.append(
            f"        {name} = _todo(\n            {name!r},\n{_strs(what, 12)},\n        )"
        )
    if d.clusters:
        lines.append(f"        clusters, _why = max_active_clusters({d.clusters}, target)")
    lines.append("        mod = load_example(self.source)")
    kwargs = ", ".join(f"{k}={v}" for k, v in d.ctor)
    fn = f"mod.{e.name}"
    if e.kind == "class":
        lines.append(f"        kernel = mod.{e.name}({kwargs})")
        fn = "kernel"
    elif e.object_param and e.ctor_class:
        lines.append(f"        obj = Const(mod.{e.ctor_class}({kwargs}))")
    args = ", ".join(d.call) + ("," if len(d.call) == 1 else "")
    lines.append(
        f"        return CuteKernel(self.name, {fn}, lambda t: ({args}), "
        "self.tensor_specs(problem))"
    )
    body = "\n".join(lines)

    overrides = ""
    if d.override_tensors:
        by = {t.name: t for t in d.todos}
        overrides = (
            "\n    def tensor_specs(self, problem: Problem) -> dict[str, TensorSpec]:\n"
            + _todo_line(by["tensor_specs"], 8)
            + "\n\n    def reference(self, problem: Problem, inputs: Mapping[str, Any])"
            + " -> dict[str, Any]:\n"
            + _todo_line(by["reference"], 8)
            + "\n"
        )
    supports = next(t for t in d.todos if t.name == "supports")
    config_cls = f"{cls}Config" if d.config else "NoConfig"
    config_def = ""
    if d.config:
        config_def = (
            f"\n\n@dataclass(frozen=True)\nclass {config_cls}(Config):\n"
            + _fill(
                f'"""What {e.ctor_class or e.name} is built with; the defaults are the '
                'example\'s."""',
                4,
            )
            + "\n\n"
            + _field_lines(d.config)
            + "\n"
        )
    if pw is None:
        base, base_import, wl_line = (
            "KernelPlan",
            "from kernelplan import KernelPlan",
            "    workload = WORKLOAD\n",
        )
        wl_import = "from ..workload import WORKLOAD"
        pkg_line = f"    package: ClassVar[str] = {package!r}\n"
    else:
        base, base_import = pw.base, pw.base_import
        wl_line = f"    workload = {pw.workload_expr}\n" if pw.workload_expr else ""
        wl_import = pw.workload_import or ""
        pkg_line = f"    package: ClassVar[str] = {package!r}\n" if pw.workload_expr else ""
    what = f"class ``{e.name}``" if e.kind == "class" else f"``@cute.jit`` function ``{e.name}``"
    dropped = (
        "\n"
        + _fill(
            "Example flags not offered here (no argument of the entry takes them; the workload's "
            "problem, tensors or reference must carry what they mean): "
            + ", ".join(f"``{f}``" for f in d.dropped)
            + "."
        )
        + "\n"
        if d.dropped
        else ""
    )
    imports = [
        "from kernelplan import STREAM, Config, CuteKernel, NoConfig, Problem, ShapeError",
        "from kernelplan import Target, TensorSpec, dtypes",
        "from kernelplan.cutlass_src import load_example",
        "from kernelplan.device import max_active_clusters",
        "from kernelplan.kernel import Const",
        base_import,
        wl_import,
    ]
    return render(
        "adapter.py.tmpl",
        what=what,
        relpath=ex.relpath,
        how=_fill(f"Upstream: {_clip(e.how, 200)}."),
        dropped=dropped,
        imports="\n".join(i for i in imports if i),
        config_def=config_def,
        cls=cls,
        base=base,
        doc=_fill(f"{e.name} ({ex.sm}), imported from ``{ex.relpath}``.", 4).lstrip(),
        kernel=kernel,
        pkg_line=pkg_line,
        wl_line=wl_line,
        source=ex.relpath,
        sm_comment=_comment(
            f"{ex.sm}: {ex.sm_why}"
            + (f"; e.g. {', '.join(ex.evidence)}" if ex.evidence else "")
            + "".join(f". Note: {n}" for n in ex.sm_notes),
            4,
        ),
        sm=ex.sm,
        config_cls=config_cls,
        description=f"CUTLASS CuTe DSL {e.name}, {ex.sm}",
        supports=_todo_line(supports, 8),
        overrides=overrides,
        plan_body=body,
    )


def render_workload(ex: Example, d: Design, package: str) -> str:
    name = package.replace("-", "_")
    camel = "".join(p.capitalize() for p in name.split("_"))
    sizes = [
        f.name for f in d.problem if f.type in ("int", "tuple[int, ...]") and _positive(f.default)
    ]
    todo = {
        "tensor_specs": f"one TensorSpec per tensor {ex.entry.name} takes: "
        f"{', '.join(d.tensors)} (built in {ex.run_lines}); outputs role='output', init='empty'",
        "reference": "the expected outputs by name, in float32 with PyTorch"
        + (f"; upstream checks with {', '.join(ex.reference_hints)}" * bool(ex.reference_hints)),
        "flops_bytes": "(FLOPs, minimum DRAM bytes: each input read, each output written once)",
    }
    for k, v in todo.items():
        d.todos.append(Todo(k, v, "workload.py"))
    return render(
        "workload.py.tmpl",
        package=package,
        relpath=ex.relpath,
        problem_cls=f"{camel}Problem",
        workload_cls=f"{camel}Workload",
        name=name,
        fields=_field_lines(d.problem) or "    pass",
        sizes=repr(tuple(sizes)),
        tensor_specs=_todo_line(Todo("tensor_specs", todo["tensor_specs"], ""), 8),
        reference=_todo_line(Todo("reference", todo["reference"], ""), 8),
        flops_bytes=_todo_line(Todo("flops_bytes", todo["flops_bytes"], ""), 8),
        description=f"What {ex.entry.ctor_class or ex.entry.name} computes (a scaffolded stub)",
    )


def _positive(v: Any) -> bool:
    vals = v if isinstance(v, tuple) else (v,)
    return bool(vals) and all(
        isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in vals
    )


def render_devlog(ex: Example, package: str, kernel: str, imported: str) -> str:
    ent = ("class " if ex.entry.kind == "class" else "function ") + ex.entry.name
    return render(
        "devlog.md.tmpl",
        title=f"{package}/{kernel}",
        entry=ent,
        sm=ex.sm,
        relpath=ex.relpath,
        imported=imported,
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
    """The root pyproject with ``dist`` added to ``[tool.uv.sources]`` and to ``[project]
    dependencies``; unchanged parts keep their text.

    Raises:
        ScaffoldError: the file's layout is not one this edit understands (nothing written).
    """
    before = _toml_loads(text)
    lines = text.splitlines(keepends=True)
    if dist not in (before or {}).get("tool", {}).get("uv", {}).get("sources", {}):
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
                    head = ln.rstrip("\n").rpartition("]")[0].rstrip()
                    lines[i] = f'{head}{"" if head.endswith("[") else ", "}"{dist}"]\n'
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
        want = list(deps) + [dist] if deps is not None and dist not in deps else deps
        ok = (
            after is not None
            and after.get("tool", {}).get("uv", {}).get("sources", {}).get(dist)
            == {"workspace": True}
            and after.get("project", {}).get("dependencies") == want
        )
        if not ok:
            raise ScaffoldError(
                f"could not add {dist} to the root pyproject.toml safely: add "
                f"`{dist} = {{ workspace = true }}` under [tool.uv.sources] by hand"
            )
    return out


def _kernels_node(tree: ast.Module) -> ast.Dict | None:
    for n in tree.body:
        targets = n.targets if isinstance(n, ast.Assign) else [getattr(n, "target", None)]
        if (
            isinstance(n, (ast.Assign, ast.AnnAssign))
            and isinstance(n.value, ast.Dict)
            and any(isinstance(t, ast.Name) and t.id == "KERNELS" for t in targets)
        ):
            return n.value
    return None


def add_kernel_entry(text: str, kernel: str, target: str) -> str:
    """The package ``__init__`` with ``"<kernel>": "<target>"`` added to ``KERNELS``.

    Raises:
        ScaffoldError: no literal ``KERNELS = {...}`` dict, or the kernel is in it.
    """
    table = _kernels_node(ast.parse(text))
    if table is None:
        raise ScaffoldError("the package __init__.py has no literal `KERNELS = {...}` table")
    try:
        current = ast.literal_eval(table)
    except ValueError:
        raise ScaffoldError("the package's KERNELS table is not a literal dict") from None
    if kernel in current:
        raise ScaffoldError(f"kernel {kernel!r} is already in the package's KERNELS table")
    row = f"    {kernel!r}: {target!r},".replace("'", '"')
    lines = text.splitlines()
    start, end = table.lineno - 1, table.end_lineno - 1  # type: ignore[operator]
    if start == end:  # one line: rewrite it as a block
        line = lines[start]
        pre, post = line[: table.col_offset], line[table.end_col_offset :]
        rows = [f"    {k!r}: {v!r},".replace("'", '"') for k, v in current.items()]
        lines[start : start + 1] = [pre + "{", *rows, row, "}" + post]
    else:
        if table.values:  # the last entry needs its comma (after any closing parentheses)
            last = table.values[-1]
            flat = "\n".join(lines)
            offsets = [0]
            for ln in lines:
                offsets.append(offsets[-1] + len(ln) + 1)
            pos = insert_at = offsets[last.end_lineno - 1] + last.end_col_offset  # type: ignore[operator]
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
                lines = (flat[:insert_at] + "," + flat[insert_at:]).split("\n")
        lines[end:end] = [row]
    out = "\n".join(lines) + ("\n" if text.endswith("\n") else "")
    check = _kernels_node(ast.parse(out))
    if check is None or ast.literal_eval(check) != {**current, kernel: target}:  # pragma: no cover
        raise ScaffoldError("editing KERNELS went wrong; nothing written")
    return out


# --------------------------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------------------------


def find_workspace_root(start: Path | None = None) -> Path:
    start = (start or Path.cwd()).resolve()
    for d in (start, *start.parents):
        p = d / "pyproject.toml"
        if p.is_file() and "[tool.uv.workspace]" in p.read_text(encoding="utf-8"):
            return d
    raise ScaffoldError(
        f"no uv workspace (pyproject.toml with [tool.uv.workspace]) at or above {start}"
    )


def resolve_example(root: Path, given: str) -> tuple[Path, str, Path]:
    """(absolute path, path under examples/python/CuTeDSL, the examples root).

    Raises:
        ScaffoldError: not a ``.py`` file of the sources.
    """
    from .cutlass_src import CutlassSourcesMissing, examples_dir

    rel = given.strip().replace("\\", "/")
    for prefix in EXAMPLES_PREFIXES:
        rel = rel[len(prefix) :] if rel.startswith(prefix) else rel
    local = root / "third_party" / "cutlass" / "examples" / "python" / "CuTeDSL"
    if not os.environ.get("CUTLASS_DIR") and (local / "cute").is_dir():
        base = local
    else:
        try:
            base = examples_dir()
        except CutlassSourcesMissing as e:
            raise ScaffoldError(str(e)) from None
    if Path(rel).is_absolute():
        with contextlib.suppress(ValueError):
            rel = Path(rel).resolve().relative_to(base.resolve()).as_posix()
    if not rel.endswith(".py") or Path(rel).is_absolute() or ".." in Path(rel).parts:
        raise ScaffoldError(
            f"unknown example path {given!r}: give a .py file under examples/python/CuTeDSL, "
            "e.g. cute/hopper/kernel/dense_gemm/dense_gemm.py"
        )
    if not (base / rel).is_file():
        raise ScaffoldError(f"unknown example path {given!r}: no such file under {base}")
    return base / rel, rel, base


_IMPORTED_RE = re.compile(r"^Imported:(.*)$", re.M)


def devlog_path(
    root: Path, package: str, kernel: str, imported: str
) -> tuple[Path, Path | None, list[Path]]:
    """``knowledge/kernels/<kernel-slug>.md`` when free, else ``<package>-<kernel>.md`` (then
    ``-2``, ...). A file whose ``Imported:`` line names this kernel's folder is its own and is
    kept; any other is another kernel's and never reused.

    Returns:
        (the path, the same path when it exists and is kept else None, devlogs passed over).
    """
    folder = root / "knowledge" / "kernels"
    own = imported.rstrip("/")
    base = slug(f"{package}-{kernel}")
    taken: list[Path] = []
    for name in [slug(kernel), base] + [f"{base}-{i}" for i in range(2, 100)]:
        path = folder / f"{name}.md"
        if not path.exists():
            return path, None, taken
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        names = {
            p.strip().rstrip("/")
            for m in _IMPORTED_RE.finditer(text)
            for p in re.findall(r"`([^`]+)`", m.group(1))
        }
        if own in names:
            return path, path, taken
        taken.append(path)
    raise ScaffoldError(f"no free devlog name for {package}/{kernel} under knowledge/kernels")


@dataclass
class Result:
    created: list[Path]
    edited: list[Path]
    example: Example
    design: Design
    new_package: bool
    devlog: Path
    devlog_kept: bool
    messages: list[str]


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
) -> Result:
    """Write the kernel (and the package when it is new); every check runs before the first
    file is written.

    Raises:
        ScaffoldError: a refusal (see the module docstring).
    """
    check_package_name(package)
    check_kernel_name(kernel)
    root = root.resolve()
    if not (root / "pyproject.toml").is_file():
        raise ScaffoldError(f"{root} has no pyproject.toml: not the workspace root")
    path, rel, ex_root = resolve_example(root, example)
    module, cls = module_name(package), class_name(kernel)
    pkg_dir = root / "packages" / package
    src_dir = pkg_dir / "src" / module
    kdir = src_dir / kernel
    new_package = not (pkg_dir / "pyproject.toml").exists()
    if not new_package and not (src_dir / "__init__.py").is_file():
        raise ScaffoldError(
            f"packages/{package} exists but has no src/{module}/__init__.py: "
            "not a kernelplan package"
        )
    if new_package and pkg_dir.exists() and any(pkg_dir.iterdir()):
        raise ScaffoldError(f"packages/{package} exists without a pyproject.toml: move it away")
    for p in (kdir, src_dir / f"{kernel}.py"):
        if p.exists():
            raise ScaffoldError(
                f"kernel {package}/{kernel} already exists ({p.relative_to(root)}): "
                "never overwritten; pick another name"
            )
    target = f"{module}.{kernel}.{kernel}:{cls}"
    pw = None
    if new_package:
        init_text = render("package_init.py.tmpl", module=module, package=package)
    else:
        init_text = (src_dir / "__init__.py").read_text(encoding="utf-8")
        pw = find_package_workload(src_dir, module)
    init_text = add_kernel_entry(init_text, kernel, target)
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
    ex = analyze_example(path, rel, entry, ex_root)
    adapter_rel = f"{kernel}/{kernel}.py"
    d = design(ex, adapter_rel, pw, "workload.py" if new_package else None)
    adapter = render_adapter(ex, d, package, kernel, cls, pw)
    workload = render_workload(ex, d, package) if new_package else None
    root_text = (
        register_in_root((root / "pyproject.toml").read_text(encoding="utf-8"), f"cute-{package}")
        if new_package
        else None
    )
    imported = kdir.relative_to(root).as_posix() + "/"
    devlog, kept, taken = devlog_path(root, package, kernel, imported)

    created: list[Path] = []
    edited: list[Path] = []
    messages = [
        f"{o.relative_to(root).as_posix()} is another kernel's devlog: left as it is" for o in taken
    ]

    def write(p: Path, text: str) -> None:
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "x", encoding="utf-8") as f:  # "x": never overwrite
            f.write(text)
        created.append(p)

    if new_package:
        write(
            pkg_dir / "pyproject.toml",
            render("package_pyproject.toml.tmpl", package=package, module=module),
        )
        write(src_dir / "__init__.py", init_text)
        write(
            src_dir / "__main__.py", render("package_main.py.tmpl", package=package, module=module)
        )
        write(src_dir / "workload.py", workload or "")
        (root / "pyproject.toml").write_text(root_text or "", encoding="utf-8")
        edited.append(root / "pyproject.toml")
    else:
        (src_dir / "__init__.py").write_text(init_text, encoding="utf-8")
        edited.append(src_dir / "__init__.py")
    write(
        kdir / "__init__.py", render("kernel_init.py.tmpl", kernel=kernel, cls=cls, module=module)
    )
    write(kdir / "__main__.py", render("kernel_main.py.tmpl", kernel=kernel, cls=cls))
    write(kdir / f"{kernel}.py", adapter)
    write(
        test_path,
        render("test_kernel.py.tmpl", package=package, kernel=kernel, cls=cls, module=module),
    )
    if kept is None:
        write(devlog, render_devlog(ex, package, kernel, imported))
    else:
        messages.append(f"kept the existing devlog {devlog.relative_to(root).as_posix()}")
    if fmt:
        _ruff(root, [p for p in created + edited if p.suffix == ".py"], messages)
    if new_package and lock:
        _uv_lock(root, messages)
    if catalog and kept is None and (root / "knowledge" / "cutlass-manifest.json").is_file():
        r = subprocess.run(
            [sys.executable, "-m", "kernelplan.kb", "catalog", "--root", str(root)],
            cwd=root,
            capture_output=True,
            text=True,
        )
        messages.append(
            "knowledge catalogs regenerated"
            if r.returncode == 0
            else "knowledge catalogs not regenerated: run `python -m kernelplan.kb catalog`"
        )
    return Result(created, edited, ex, d, new_package, devlog, kept is not None, messages)


def _ruff(root: Path, files: list[Path], messages: list[str]) -> None:
    """Sort imports, drop the unused ones the template offers, and format."""
    if importlib.util.find_spec("ruff") is None:
        messages.append("ruff not installed: generated files not formatted")
        return
    for args in (["check", "--fix-only", "--select", "I,F401", "--quiet"], ["format", "--quiet"]):
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
    tail = ((r.stderr or r.stdout).strip().splitlines() or ["?"])[-1]
    messages.append(
        "uv.lock updated (`uv lock`)"
        if r.returncode == 0
        else f"`uv lock` failed ({tail}): run it yourself"
    )


def report(
    res: Result, root: Path, package: str, kernel: str, log: Callable[[str], Any] = print
) -> None:
    ex, e = res.example, res.example.entry
    log(f"scaffolded {package}/{kernel} from {ex.relpath}")
    log(
        f"  target SM   {ex.sm}: {ex.sm_why}"
        + (f"; {', '.join(ex.evidence)}" if ex.evidence else "")
    )
    for n in ex.sm_notes:
        log(f"              note: {n}")
    kind = "class" if e.kind == "class" else "@cute.jit function"
    log(f"  entry       {kind} {e.name} (L{e.line})" + (f"; {e.how}" if e.how else ""))
    if res.new_package:
        log(f"  package     new: cute-{package} (script `{package}`, workload stub workload.py)")
    for p in res.created:
        log(f"  created     {p.relative_to(root).as_posix()}")
    for p in res.edited:
        log(f"  edited      {p.relative_to(root).as_posix()}")
    log(
        f"  devlog      {res.devlog.relative_to(root).as_posix()} "
        f"({'kept' if res.devlog_kept else 'new stub'})"
    )
    for f in res.design.config:
        log(f"  config      {f.name} = {f.default!r}: {f.why}")
    for f in res.design.dropped:
        log(
            f"  not offered {f} (the workload's problem covers it, or it reaches no entry argument)"
        )
    for m in res.messages:
        log(f"  note        {m}")
    for t in res.design.todos:
        log(f"  TODO({t.name}) in {t.where}: {t.what}")
    nxt = "uv sync --all-packages; " if res.new_package else ""
    log(
        f"  next        {nxt}fill the {len(res.design.todos)} TODOs; "
        f"uv run {package} {kernel} --prof_type static"
    )


def unfinished(plan_cls: type) -> list[str]:
    """Methods of a plan class whose body is still only a TODO raise (``TODO(...)``); the
    pre-workload adapters' tests call it."""
    out = []
    for name in (
        "supports",
        "tensor_specs",
        "reference",
        "reference_fn",
        "flops_bytes",
        "_algorithmic_flops_bytes",
        "plan",
    ):
        fn = getattr(plan_cls, name, None)
        try:
            node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]  # type: ignore[arg-type]
        except (OSError, TypeError, SyntaxError, IndexError):
            continue
        body = [
            s
            for s in getattr(node, "body", [])
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        ]
        if any(isinstance(s, ast.Raise) and "TODO(" in ast.unparse(s) for s in body):
            out.append(name)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m kernelplan.scaffold",
        description="Scaffold an imported CUTLASS CuTe DSL example (adapter, __main__, test, "
        "devlog stub; the package and a workload stub when the package is new).",
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
        help="the entry class or @cute.jit function, where the scaffold finds none or another",
    )
    p.add_argument("--root", help="workspace root (default: found from the current directory)")
    p.add_argument("--no-lock", action="store_true", help="do not run `uv lock`")
    p.add_argument(
        "--no-format", action="store_true", help="do not run ruff on the generated files"
    )
    p.add_argument(
        "--no-catalog", action="store_true", help="do not regenerate the knowledge catalogs"
    )
    args = p.parse_args(argv)
    try:
        root = Path(args.root).resolve() if args.root else find_workspace_root()
        res = scaffold(
            root, args.package, args.kernel, args.example, entry=args.entry,
            lock=not args.no_lock, fmt=not args.no_format, catalog=not args.no_catalog,
        )  # fmt: skip
    except KernelPlanError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    report(res, root, args.package, args.kernel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
