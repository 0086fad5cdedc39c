"""Finding packages and their kernels.

A package (``cute_gemm``) declares ``PACKAGE = "gemm"`` and ``KERNELS``, a dict from CLI name
to ``"module:Class"`` (imported lazily, so listing needs no DSL). Installed packages are found
through the ``kernelplan.packages`` entry-point group; where nothing is installed (a GPU host
that puts the ``src/`` folders on PYTHONPATH), a module named ``cute_<package>`` is tried.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from .errors import KernelPlanError


def _entry_points() -> dict[str, str]:
    from importlib.metadata import entry_points

    try:
        eps = entry_points(group="kernelplan.packages")
    except TypeError:  # pragma: no cover - Python < 3.10 API
        eps = entry_points().get("kernelplan.packages", [])
    return {ep.name: ep.value for ep in eps}


def package_names() -> list[str]:
    """Every package: installed entry points plus importable ``cute_*`` modules."""
    names = set(_entry_points())
    for m in pkgutil.iter_modules():
        if m.name.startswith("cute_"):
            names.add(m.name[len("cute_") :].replace("_", "-"))
    return sorted(names)


def load_package(name: str) -> ModuleType:
    """The package module for CLI name ``name`` ("gemm", "gemm-tutorial").

    Raises:
        KernelPlanError: no such package (the message lists the known ones).
    """
    modname = _entry_points().get(name) or "cute_" + name.replace("-", "_")
    try:
        mod = importlib.import_module(modname)
    except ModuleNotFoundError as e:
        if e.name and modname.startswith(e.name):
            known = ", ".join(package_names()) or "none"
            raise KernelPlanError(f"unknown package {name!r} (known: {known})") from None
        raise
    if not hasattr(mod, "KERNELS"):
        raise KernelPlanError(f"{modname} has no KERNELS table: not a kernelplan package")
    return mod


def kernel_names(package: str) -> list[str]:
    return list(load_package(package).KERNELS)


def load_plan_class(package: str, kernel: str):
    """The KernelPlan subclass for ``package``/``kernel``.

    Raises:
        KernelPlanError: unknown kernel (the message lists the package's kernels).
    """
    mod = load_package(package)
    target = mod.KERNELS.get(kernel)
    if target is None:
        raise KernelPlanError(
            f"unknown {package} kernel {kernel!r}; known: {', '.join(mod.KERNELS)}"
        )
    modpath, _, clsname = target.partition(":")
    return getattr(importlib.import_module(modpath), clsname)


def implementations(workload: str) -> list[tuple[str, str]]:
    """Every registered implementation of ``workload``, as (package, kernel), over every
    package (one that does not import here is left out).

    Raises:
        KernelPlanError: no package implements it.
    """
    out = []
    for pkg in package_names():
        try:
            names = kernel_names(pkg)
        except Exception:  # a package that does not import here is not listed
            continue
        for k in names:
            try:
                cls = load_plan_class(pkg, k)
            except Exception:  # a kernel that no longer imports
                continue
            if getattr(getattr(cls, "workload", None), "name", None) == workload:
                out.append((pkg, k))
    if not out:
        raise KernelPlanError(f"no implementation of workload {workload!r} in any package")
    return out
