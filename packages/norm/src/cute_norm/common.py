"""What the package's peers share: the workload they implement and the launch's contract.

A peer's launch writes ``y`` as the tensors' entry (``t["y"] = out``): the harness then reads
that tensor, so a peer that allocates its own output (torch's ``rms_norm``, quack's
``rmsnorm_fwd``) is timed without a copy, and one whose launch is skipped leaves the
poisoned ``y`` in place (the check fails on it).
"""

from __future__ import annotations

from typing import ClassVar

from kernelplan import KernelPlan, NoConfig, ShapeError
from kernelplan.workloads.rmsnorm import DTYPES, RMSNORM, RMSNormProblem


class NormPeer(KernelPlan):
    """Base of the peers (no target SM: they run on any CUDA GPU their library supports)."""

    package: ClassVar[str] = "norm"
    workload = RMSNORM
    target_sm: ClassVar[tuple[str, ...]] = ()
    config_type = NoConfig

    def supports(self, problem: RMSNormProblem) -> None:
        if problem.dtype not in DTYPES:
            raise ShapeError(f"{self.name} takes dtype {' or '.join(DTYPES)} (got {problem.dtype})")
