"""Peer: ``torch.nn.functional.rms_norm(x, (N,), weight=w, eps=eps)``: PyTorch's own RMSNorm
(a fused CUDA kernel in recent releases, whatever the release dispatches to; the record's
environment names the torch version). It allocates its output; the launch stores it as
``y`` (see :mod:`cute_norm.common`)."""

from __future__ import annotations

from typing import ClassVar

from kernelplan import NoConfig, Target, TorchKernel
from kernelplan.workloads.rmsnorm import RMSNormProblem

from ..common import NormPeer


class TorchRmsNorm(NormPeer):
    name: ClassVar[str] = "torch_rms_norm"
    description: ClassVar[str] = "torch.nn.functional.rms_norm peer"

    def plan(self, problem: RMSNormProblem, config: NoConfig, target: Target) -> TorchKernel:
        import torch.nn.functional as F

        shape, eps = (problem.n,), problem.eps

        def run(t):
            t["y"] = F.rms_norm(t["x"], shape, weight=t["w"], eps=eps)

        return TorchKernel(self.name, run)
