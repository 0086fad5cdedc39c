"""Peer: PyTorch SDPA's backward with its memory-efficient (xFormers/CUTLASS) backend
(``SDPBackend.EFFICIENT_ATTENTION``); see :mod:`cute_fmha.sdpa_bwd_common` for what is timed
and how the workload maps onto SDPA."""

from __future__ import annotations

from typing import ClassVar

from ..sdpa_bwd_common import SdpaBwdPeer


class SdpaEfficientBwd(SdpaBwdPeer):
    name: ClassVar[str] = "sdpa_efficient_bwd"
    backend: ClassVar[str] = "EFFICIENT_ATTENTION"
    description: ClassVar[str] = (
        "torch SDPA backward, memory-efficient (xFormers/CUTLASS) backend only (autograd.grad "
        "of a forward under sdpa_kernel([EFFICIENT_ATTENTION]) run at bind)"
    )
