"""Peer: PyTorch SDPA forced to its math (the eager floor) backend (``SDPBackend.MATH``); see
:mod:`cute_fmha.sdpa_common` for how the workload maps onto SDPA."""

from __future__ import annotations

from typing import ClassVar

from ..sdpa_common import SdpaPeer


class SdpaMath(SdpaPeer):
    name: ClassVar[str] = "sdpa_math"
    backend: ClassVar[str] = "MATH"
    description: ClassVar[str] = (
        "torch SDPA, math (the eager floor) backend only (sdpa_kernel([MATH]))"
    )

    def supports(self, problem) -> None:
        """The math backend materialises S and P in fp32 (several b*h*sq*sk*4-byte
        tensors); refused above 16 GiB for one of them, where it would not fit beside the
        others on a 141 GB H200."""
        from kernelplan import ShapeError

        p = problem
        one = p.b * p.h_q * p.sq * p.sk * 4
        if one > 16 << 30:
            raise ShapeError(
                f"{self.name}: one fp32 b*h*sq*sk score tensor is {one / 2**30:.0f} GiB (> 16 "
                "GiB); the math backend materialises several"
            )
