"""Peer: PyTorch SDPA's backward with its cuDNN backend (``SDPBackend.CUDNN_ATTENTION``); see
:mod:`cute_fmha.sdpa_bwd_common` for what is timed and how the workload maps onto SDPA."""

from __future__ import annotations

from typing import ClassVar

from ..sdpa_bwd_common import SdpaBwdPeer


class SdpaCudnnBwd(SdpaBwdPeer):
    name: ClassVar[str] = "sdpa_cudnn_bwd"
    backend: ClassVar[str] = "CUDNN_ATTENTION"
    description: ClassVar[str] = (
        "torch SDPA backward, cuDNN backend only (autograd.grad of a forward under "
        "sdpa_kernel([CUDNN_ATTENTION]) run at bind)"
    )
