"""Stage 1, names: the package and kernel names checked, and the names derived from them."""

from __future__ import annotations

import keyword
import re

from ..errors import KernelPlanError


class ScaffoldError(KernelPlanError):
    """The scaffold refuses (bad name, unknown example, existing kernel, no entry point)."""


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
_RESERVED_CLASSES = {
    "KernelPlan",
    "CuteKernel",
    "TensorSpec",
    "Const",
    "Config",
    "Problem",
    "Target",
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
    return name + "Plan" if name in _RESERVED_CLASSES else name


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
