"""Scaffold an imported CUTLASS CuTe DSL example: ``nox -s new -- <package> <kernel> --from
<path under examples/python/CuTeDSL> [--entry NAME]`` (also ``python -m kernelplan.scaffold``).

The example is read with :mod:`ast`, never imported or run. :func:`scaffold` runs the stages in
order, each a module of this package, and checks everything before writing the first file:

1. ``names``: the package and kernel names checked; module and class names derived.
2. ``example``: the example's file found under ``examples/python/CuTeDSL``.
3. ``sm``: the target SM, from the newest instructions the example and the local modules it
   imports use (tcgen05, WGMMA, TMA/cluster, warp MMA).
4. ``entry``: the entry point, what the example passes to ``cute.compile`` (a class with a
   ``@cute.jit`` ``__call__``, or a ``@cute.jit`` function), or the one ``--entry`` names (also a
   class imported from a module beside the example), with its constructor and call parameters.
5. ``trace``: each value upstream passes, traced through ``run()`` to argparse defaults: a
   literal, a DSL type or an enum member; a value upstream computes is a TODO citing its lines.
6. ``design``: each value a Config field (with the example's default), a problem field, a
   tensor, the stream, or a named TODO; into a new package, the remaining flags become the
   workload stub's problem.
7. ``workspace``: the package's workload found; the root ``pyproject.toml`` and the package's
   ``KERNELS`` edited (text edits verified by re-parsing); a devlog name chosen.
8. ``render``: the adapter (a Config, ``supports()``, ``plan()``), ``__init__``/``__main__``, a
   test that compiles the kernel for its SM with fake tensors, the devlog stub, and for a new
   package its ``pyproject.toml`` and ``workload.py``, from ``templates/``; then ruff.

Every TODO is ``raise NotImplementedError("TODO(<name>): <what to fill>")``, one line when run.
Nothing is overwritten; a refusal is one ``error:`` line, exit status 2, nothing written.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import KernelPlanError
from .design import Design, design
from .example import Example, analyze_example, resolve_example
from .names import ScaffoldError, check_kernel_name, check_package_name, class_name, module_name
from .render import format_files, render, render_adapter, render_devlog, render_workload, unfinished
from .sm import derive_sm
from .workspace import (
    _toml_loads,
    add_kernel_entry,
    devlog_path,
    find_package_workload,
    find_workspace_root,
    register_in_root,
)

__all__ = [
    "Result", "ScaffoldError", "add_kernel_entry", "analyze_example", "derive_sm", "devlog_path",
    "main", "module_name", "register_in_root", "scaffold", "unfinished",
    "_toml_loads",  # the tests read TOML with it
]  # fmt: skip


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
    d = design(ex, f"{kernel}/{kernel}.py", pw)
    files: dict[Path, str] = {}  # the new files, in the order written
    if new_package:
        files[pkg_dir / "pyproject.toml"] = render(
            "package_pyproject.toml.tmpl", package=package, module=module
        )
        files[src_dir / "__init__.py"] = init_text
        files[src_dir / "__main__.py"] = render(
            "package_main.py.tmpl", package=package, module=module
        )
        files[src_dir / "workload.py"] = render_workload(ex, d, package)
        pyproject = root / "pyproject.toml"
        edits = {pyproject: register_in_root(pyproject.read_text("utf-8"), f"cute-{package}")}
    else:
        edits = {src_dir / "__init__.py": init_text}
    names = {"package": package, "kernel": kernel, "cls": cls, "module": module}
    files[kdir / "__init__.py"] = render("kernel_init.py.tmpl", **names)
    files[kdir / "__main__.py"] = render("kernel_main.py.tmpl", **names)
    files[kdir / f"{kernel}.py"] = render_adapter(ex, d, package, kernel, cls, pw)
    files[test_path] = render("test_kernel.py.tmpl", **names)
    imported = kdir.relative_to(root).as_posix() + "/"
    devlog, kept, taken = devlog_path(root, package, kernel, imported)
    messages = [
        f"{o.relative_to(root).as_posix()} is another kernel's devlog: left as it is" for o in taken
    ]
    if kept is None:
        files[devlog] = render_devlog(ex, package, kernel, imported)
    else:
        messages.append(f"kept the existing devlog {devlog.relative_to(root).as_posix()}")

    for p, text in files.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "x", encoding="utf-8") as f:  # "x": never overwrite
            f.write(text)
    for p, text in edits.items():
        p.write_text(text, encoding="utf-8")
    created, edited = list(files), list(edits)
    if fmt:
        format_files(root, [p for p in created + edited if p.suffix == ".py"], messages)
    if new_package and lock:
        messages.append(_uv_lock(root))
    if catalog and kept is None and (root / "knowledge" / "cutlass-manifest.json").is_file():
        cmd = [sys.executable, "-m", "kernelplan.kb", "catalog", "--root", str(root)]
        ok = subprocess.run(cmd, cwd=root, capture_output=True).returncode == 0
        messages.append(
            "knowledge catalogs regenerated"
            if ok
            else "knowledge catalogs not regenerated: run `python -m kernelplan.kb catalog`"
        )
    return Result(created, edited, ex, d, new_package, devlog, kept is not None, messages)


def _uv_lock(root: Path) -> str:
    uv = shutil.which("uv")
    if not uv or not (root / "uv.lock").is_file():
        return "uv.lock not updated (no uv or no uv.lock): run `uv lock`"
    r = subprocess.run([uv, "lock"], cwd=root, capture_output=True, text=True)
    tail = ((r.stderr or r.stdout).strip().splitlines() or ["?"])[-1]
    return (
        f"`uv lock` failed ({tail}): run it yourself"
        if r.returncode
        else "uv.lock updated (`uv lock`)"
    )


def report(res: Result, root: Path, package: str, kernel: str) -> None:
    ex, e, d = res.example, res.example.entry, res.design
    rel = lambda p: p.relative_to(root).as_posix()  # noqa: E731
    evidence = f"; {', '.join(ex.evidence)}" if ex.evidence else ""
    kind = "class" if e.kind == "class" else "@cute.jit function"
    new = f"new: cute-{package} (script `{package}`, workload stub workload.py)"
    dropped = "(the workload's problem covers it, or it reaches no entry argument)"
    lines = [
        f"scaffolded {package}/{kernel} from {ex.relpath}",
        f"  target SM   {ex.sm}: {ex.sm_why}{evidence}",
        *(f"              note: {n}" for n in ex.sm_notes),
        f"  entry       {kind} {e.name} (L{e.line})" + (f"; {e.how}" if e.how else ""),
        *([f"  package     {new}"] if res.new_package else []),
        *(f"  created     {rel(p)}" for p in res.created),
        *(f"  edited      {rel(p)}" for p in res.edited),
        f"  devlog      {rel(res.devlog)} ({'kept' if res.devlog_kept else 'new stub'})",
        *(f"  config      {f.name} = {f.default!r}: {f.why}" for f in d.config),
        *(f"  not offered {f} {dropped}" for f in d.dropped),
        *(f"  note        {m}" for m in res.messages),
        *(f"  TODO({t.name}) in {t.where}: {t.what}" for t in d.todos),
        f"  next        {'uv sync --all-packages; ' * res.new_package}fill the {len(d.todos)} "
        f"TODOs; uv run {package} {kernel} --prof_type static",
    ]
    print("\n".join(lines))


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
        help="the entry class or @cute.jit function, where the scaffold finds none or another "
        "(also a class the example imports from a module beside it)",
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
