"""Helpers over :mod:`ast` shared by the stages: the example is read, never imported or run."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

NO = object()  # "no value derived"
DSL_TYPES = {
    "Float16", "BFloat16", "Float32", "TFloat32", "Float64", "Float8E4M3FN", "Float8E5M2",
    "Int4", "Int8", "Uint8", "Int16", "Int32", "Int64", "Boolean", "Float4E2M1FN",
}  # fmt: skip


READ_ERRORS = (OSError, SyntaxError, UnicodeDecodeError)


def parse(path: Path) -> ast.Module:
    """The module with ``_parent`` links.

    Raises:
        OSError, SyntaxError, UnicodeDecodeError: it cannot be read (``READ_ERRORS``).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child._parent = node  # type: ignore[attr-defined]
    return tree


def dotted(node: ast.AST | None) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def literal(node: ast.AST | None) -> Any:
    """The value of a literal expression (lists as tuples), or NO."""
    if node is None:
        return NO
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NO
    return _tupled(value)


def _tupled(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        out = tuple(_tupled(x) for x in v)
        return NO if NO in out else out
    return v if v is None or isinstance(v, (bool, int, float, str)) else NO


def dsl_type(node: ast.AST | None) -> str | None:
    """``cutlass.Float16`` -> "Float16" (a DSL numeric type), else None."""
    name = dotted(node) or ""
    last = name.split(".")[-1]
    if last in DSL_TYPES and (name == last or name.split(".")[0] in ("cutlass", "cute")):
        return last
    return None


def clip(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def src(node: ast.AST, n: int = 70) -> str:
    return clip(ast.unparse(node), n).replace("`", "'")


def enclosing(node: ast.AST) -> ast.AST | None:
    """The function holding ``node``, or the ``if __name__ == "__main__"`` block, or None."""
    cur = getattr(node, "_parent", None)
    while cur is not None and not (
        isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)) or is_main(cur)
    ):
        cur = getattr(cur, "_parent", None)
    return cur


def is_main(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "__name__" in ast.unparse(node.test)


def is_jit(dec: ast.expr) -> bool:
    target = dec.func if isinstance(dec, ast.Call) else dec
    return (dotted(target) or "") in ("cute.jit", "cutlass.cute.jit", "jit")


def aliases(tree: ast.Module) -> dict[str, str]:
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


def module_files(name: str, path: Path, root: Path) -> list[Path]:
    """The files under the examples root that ``import <name>`` in ``path`` reaches, as
    :func:`kernelplan.cutlass_src.load_example` puts the example's folder, ``cute/`` and the
    root on ``sys.path``."""
    if name.split(".")[0] in ("cutlass", "cuda", "torch", "numpy"):
        return []
    rel = name.replace(".", "/")
    return [
        cand
        for base in (path.parent, root / "cute", root)
        for cand in (base / f"{rel}.py", base / rel / "__init__.py")
        if cand.is_file() and cand.resolve() != path.resolve()
    ]


def local_modules(tree: ast.Module, path: Path, root: Path) -> list[Path]:
    """Files under the examples root that the module imports (``from helpers import
    fmha_helpers``, ``from common_dense_gemm_efc import ...``)."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [f"{node.module}.{a.name}" for a in node.names] + [node.module]
    return list(dict.fromkeys(p for name in names for p in module_files(name, path, root)))
