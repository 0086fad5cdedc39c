"""Peer: PyTorch SDPA's backward with its flash-attention (FA2 in torch) backend
(``SDPBackend.FLASH_ATTENTION``); see :mod:`cute_fmha.sdpa_bwd_common` for what is timed and
how the workload maps onto SDPA."""

from __future__ import annotations

from typing import ClassVar

from ..sdpa_bwd_common import SdpaBwdPeer


class SdpaFlashBwd(SdpaBwdPeer):
    name: ClassVar[str] = "sdpa_flash_bwd"
    backend: ClassVar[str] = "FLASH_ATTENTION"
    description: ClassVar[str] = (
        "torch SDPA backward, flash-attention (FA2 in torch) backend only (autograd.grad of a "
        "forward under sdpa_kernel([FLASH_ATTENTION]) run at bind)"
    )
