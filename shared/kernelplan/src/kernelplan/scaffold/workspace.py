"""Stage 7, the workspace: reading it (its root, the package's workload, a free devlog name) and
editing it (the root ``pyproject.toml`` and the package's ``KERNELS`` table: text edits that keep
the files' formatting, verified by re-parsing)."""

from __future__ import annotations

import ast
import importlib
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from .astutil import READ_ERRORS, aliases, parse
from .names import ScaffoldError, slug
from .render import str_literal


def find_workspace_root(start: Path | None = None) -> Path:
    start = (start or Path.cwd()).resolve()
    for d in (start, *start.parents):
        p = d / "pyproject.toml"
        if p.is_file() and "[tool.uv.workspace]" in p.read_text(encoding="utf-8"):
            return d
    raise ScaffoldError(
        f"no uv workspace (pyproject.toml with [tool.uv.workspace]) at or above {start}"
    )


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
    # (file, class, workload name, its import path, whether the class names its package)
    hits: list[tuple[Path, str, str, str, bool]] = []
    for py in sorted(src_dir.rglob("*.py")):
        try:
            tree = parse(py)
        except READ_ERRORS:
            continue
        names = aliases(tree)
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
                    full = _absolute(names.get(wname, f"{rel_mod}.{wname}"), tree, rel_mod)
                    hits.append((py, cls.name, wname, full, _declares_package(cls)))
    if not hits:
        raise ScaffoldError(
            f"{module} has no implementation with a `workload` attribute (not on the workload "
            "API yet): port one of its kernels first, or scaffold into a new package"
        )
    full = Counter(h[3] for h in hits).most_common(1)[0][0]  # the one most classes declare
    # the package's own base (it names the package too) before a base it shares with others
    py, cls, wname, _, _own = sorted((h for h in hits if h[3] == full), key=lambda h: not h[4])[0]
    tensors, fields = _workload_names(full, src_dir.parent)
    if py.name == "__init__.py" or py.parent != src_dir:  # an implementation's own class
        wmod, _, wattr = full.rpartition(".")
        return PackageWorkload(
            "KernelPlan", "from kernelplan import KernelPlan", wattr, f"from {wmod} import {wattr}",
            tensors, fields,
        )  # fmt: skip
    return PackageWorkload(cls, f"from ..{py.stem} import {cls}", None, None, tensors, fields)


def _declares_package(cls: ast.ClassDef) -> bool:
    """Whether the class body assigns ``package`` (a package's own base class does)."""
    for stmt in cls.body:
        target = getattr(stmt, "target", None) or (getattr(stmt, "targets", None) or [None])[0]
        if isinstance(target, ast.Name) and target.id == "package":
            return True
    return False


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
    fields: list[str] = []
    try:
        wl = getattr(importlib.import_module(mod), attr)
        fields = list(wl.problem_type.field_names())
        return list(wl.tensor_specs(wl.problem_type())), fields
    except Exception:  # noqa: BLE001 - a half-written workload: what it names is unknown
        return None, fields
    finally:
        if added:
            sys.path.remove(str(src_root))


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


def _row(kernel: str, target: str) -> str:
    """One ``KERNELS`` row (a long target split over lines, as ruff leaves it)."""
    return f"    {json.dumps(kernel)}: {str_literal(target, 4, 96 - 8 - len(kernel))},"


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
    row = _row(kernel, target)
    lines = text.splitlines()
    start, end = table.lineno - 1, table.end_lineno - 1  # type: ignore[operator]
    if start == end:  # one line: rewrite it as a block
        line = lines[start]
        pre, post = line[: table.col_offset], line[table.end_col_offset :]
        rows = [_row(k, v) for k, v in current.items()]
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
