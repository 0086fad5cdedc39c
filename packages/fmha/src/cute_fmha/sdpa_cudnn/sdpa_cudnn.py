"""Peer: PyTorch SDPA forced to its cuDNN backend (``SDPBackend.CUDNN_ATTENTION``); see
:mod:`cute_fmha.sdpa_common` for how the workload maps onto SDPA."""

from __future__ import annotations

from typing import ClassVar

from ..sdpa_common import SdpaPeer


class SdpaCudnn(SdpaPeer):
    name: ClassVar[str] = "sdpa_cudnn"
    backend: ClassVar[str] = "CUDNN_ATTENTION"
    description: ClassVar[str] = "torch SDPA, cuDNN backend only (sdpa_kernel([CUDNN_ATTENTION]))"
