"""Peer: PyTorch SDPA forced to its memory-efficient (xFormers/CUTLASS) backend
(``SDPBackend.EFFICIENT_ATTENTION``); see
:mod:`cute_fmha.sdpa_common` for how the workload maps onto SDPA."""

from __future__ import annotations

from typing import ClassVar

from ..sdpa_common import SdpaPeer


class SdpaEfficient(SdpaPeer):
    name: ClassVar[str] = "sdpa_efficient"
    backend: ClassVar[str] = "EFFICIENT_ATTENTION"
    description: ClassVar[str] = (
        "torch SDPA, memory-efficient (xFormers/CUTLASS) backend only "
        "(sdpa_kernel([EFFICIENT_ATTENTION]))"
    )
