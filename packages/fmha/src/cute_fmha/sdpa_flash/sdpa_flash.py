"""Peer: PyTorch SDPA forced to its flash-attention (FA2 in torch) backend
(``SDPBackend.FLASH_ATTENTION``); see
:mod:`cute_fmha.sdpa_common` for how the workload maps onto SDPA."""

from __future__ import annotations

from typing import ClassVar

from ..sdpa_common import SdpaPeer


class SdpaFlash(SdpaPeer):
    name: ClassVar[str] = "sdpa_flash"
    backend: ClassVar[str] = "FLASH_ATTENTION"
    description: ClassVar[str] = (
        "torch SDPA, flash-attention (FA2 in torch) backend only (sdpa_kernel([FLASH_ATTENTION]))"
    )
