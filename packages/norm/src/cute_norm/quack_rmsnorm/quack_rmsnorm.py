"""Peer: quack's RMSNorm (Dao-AILab/quack, ``quack-kernels`` on the package registry), a CuTe
DSL kernel of its own, called through ``quack.rmsnorm.rmsnorm_fwd(x, w, eps=eps)`` (the
forward without autograd; it allocates the output and returns it first). Where a release
lacks ``rmsnorm_fwd``, the public ``quack.rmsnorm(x, w, eps=eps)`` is called instead.

Not a dependency of this workspace: on a machine without it :meth:`QuackRMSNorm.plan` says so
in one line. On the offline H200 stage ``quack-kernels`` and the dependencies the host lacks
(``apache-tvm-ffi<0.2``, ``torch-c-dlpack-ext``; see ``scripts/device/norm-fp8-acceptance.sh``).
It compiles on its first call (memoised inside quack), which the harness's warm-up absorbs;
the version is in each record's environment (``kernelplan.records`` lists quack-kernels).

Importing quack patches CuTe's tensor classes for the whole process (``quack/__init__.py``
imports ``quack.dsl``); the package's KERNELS list the CUTLASS kernels first, so a package
session compiles them before quack is imported.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kernelplan import NoConfig, ShapeError, Target, TorchKernel
from kernelplan.errors import NotInstalled
from kernelplan.workloads.rmsnorm import RMSNormProblem

from ..common import NormPeer

INSTALL = "pip install quack-kernels apache-tvm-ffi torch-c-dlpack-ext"


def quack_forward():
    """quack's forward entry: ``rmsnorm_fwd`` of the ``quack.rmsnorm`` module, or the public
    ``quack.rmsnorm`` function.

    Raises:
        KernelPlanError: quack (or a module it needs) is not installed here (one line).
    """
    import importlib

    try:
        mod = importlib.import_module("quack.rmsnorm")
    except ImportError as e:
        what = getattr(e, "name", None) or str(e)
        raise NotInstalled(
            f"quack_rmsnorm: quack-kernels is not usable here (missing {what}); on a GPU "
            f"host: {INSTALL}"
        ) from None
    fwd = getattr(mod, "rmsnorm_fwd", None)
    if fwd is not None:
        return fwd
    return importlib.import_module("quack").rmsnorm


class QuackRMSNorm(NormPeer):
    name: ClassVar[str] = "quack_rmsnorm"
    description: ClassVar[str] = "quack RMSNorm (quack-kernels, CuTe DSL) peer"

    def plan(self, problem: RMSNormProblem, config: NoConfig, target: Target) -> TorchKernel:
        fwd = quack_forward()
        eps, name = problem.eps, self.name

        def run(t: Any) -> None:
            try:
                res = fwd(t["x"], t["w"], eps=eps)
            except (AssertionError, ValueError, NotImplementedError) as e:
                msg = " ".join(str(e).split())[:200] or type(e).__name__
                raise ShapeError(f"{name}: quack refuses: {msg}") from None
            t["y"] = res[0] if isinstance(res, tuple) else res

        return TorchKernel(self.name, run)
