"""Stage 2, the example: its file found under ``examples/python/CuTeDSL``, then read by the
stages that follow (target SM, entry point, value tracer) into one :class:`Example`."""

from __future__ import annotations

import ast
import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .astutil import READ_ERRORS, dotted, enclosing, is_main, parse
from .entry import Entry, find_entry
from .names import ScaffoldError
from .sm import derive_sm
from .trace import Tracer

EXAMPLES_PREFIXES = ("third_party/cutlass/examples/python/CuTeDSL/", "examples/python/CuTeDSL/")
_CHECK_RE = re.compile(r"^(can_implement|is_valid\w*|check_\w*support\w*)$")


@dataclass
class Example:
    relpath: str
    sm: str
    sm_why: str
    evidence: list[str]
    sm_notes: list[str]
    entry: Entry
    tracer: Tracer
    checks: list[str]  # upstream's own problem checks: "can_implement (L12)"
    reference_hints: list[str]
    run_lines: str  # "`run()` L1167-L1338": where upstream builds the tensors


def resolve_example(root: Path, given: str) -> tuple[Path, str, Path]:
    """(absolute path, path under examples/python/CuTeDSL, the examples root).

    Raises:
        ScaffoldError: not a ``.py`` file of the sources.
    """
    from ..cutlass_src import CutlassSourcesMissing, examples_dir

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


def analyze_example(
    path: Path, relpath: str, entry: str | None = None, root: Path | None = None
) -> Example:
    """Read one example with :mod:`ast` (``root``: the examples root, for its local imports).

    Raises:
        ScaffoldError: unreadable, a library module (no ``__main__`` block), or no entry point.
    """
    try:
        tree = parse(path)
    except READ_ERRORS as e:
        raise ScaffoldError(f"cannot read {relpath}: {e}") from None
    if entry is None and not any(is_main(n) for n in tree.body):
        raise ScaffoldError(
            f'{relpath} has no `if __name__ == "__main__"` block: a helper library, not an '
            "example; import an example that uses it (or name the entry with --entry NAME)"
        )
    root = root or path.parents[len(Path(relpath).parts) - 1]
    ent = find_entry(tree, entry, path, root)
    sm, why, evidence, notes = derive_sm(path, relpath, root)
    checks = [
        f"`{n.name}` (L{n.lineno})"
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef) and _CHECK_RE.match(n.name)
    ]
    hints = set()
    for n in ast.walk(tree):
        fn = (dotted(n.func) or "") if isinstance(n, ast.Call) else ""
        if fn.endswith("einsum") or fn.split(".")[-1] in ("assert_close", "allclose"):
            hints.add(f"`{fn.split('.')[-1]}` (L{n.lineno})")
    scope = enclosing(ent.compile_call) if ent.compile_call is not None else None
    run_lines = (
        f"`{scope.name}()` L{scope.lineno}-L{scope.end_lineno}"
        if isinstance(scope, ast.FunctionDef)
        else "the example's run function"
    )
    return Example(
        relpath, sm, why, evidence, notes, ent, Tracer(tree), checks[:3], sorted(hints)[:3],
        run_lines,
    )  # fmt: skip
