"""Peer: PyTorch SDPA's backward with its math backend (``SDPBackend.MATH``, the eager floor:
autograd through the matmuls and softmax it decomposes into); see
:mod:`cute_fmha.sdpa_bwd_common` for what is timed and how the workload maps onto SDPA. It
runs on the CPU too (the unit tests check it there against the workload's reference)."""

from __future__ import annotations

from typing import ClassVar

from kernelplan import ShapeError
from kernelplan.workloads.attention import AttentionProblem

from ..sdpa_bwd_common import SdpaBwdPeer


class SdpaMathBwd(SdpaBwdPeer):
    name: ClassVar[str] = "sdpa_math_bwd"
    backend: ClassVar[str] = "MATH"
    cpu_ok: ClassVar[bool] = True
    description: ClassVar[str] = (
        "torch SDPA backward, math (the eager floor) backend only (autograd.grad of a forward "
        "under sdpa_kernel([MATH]) run at bind)"
    )

    def supports(self, problem: AttentionProblem) -> None:
        """The retained graph holds S and P (b*h*sq*sk each) and the backward makes dP and dS
        of the same size: refused above 8 GiB for one fp32 such tensor (half the forward
        peer's bound, for the tensors the backward adds), where several would not fit on a
        141 GB H200 beside the cold-L2 copies."""
        p = problem
        one = p.b * p.h_q * p.sq * p.sk * 4
        if one > 8 << 30:
            raise ShapeError(
                f"{self.name}: one fp32 b*h*sq*sk score tensor is {one / 2**30:.0f} GiB (> 8 "
                "GiB); the math backward holds several"
            )
