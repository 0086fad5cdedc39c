"""Peer: RMSNorm as an eager PyTorch program writes it (the formula transformer code bases
use for their reference module): x upcast to float32, the mean of squares per row, times
``rsqrt(mean + eps)``, rounded back to the input dtype, then multiplied by w in that dtype.
Several kernels and float32 temporaries (M*N*4 bytes each): the unfused floor the fused
kernels are compared with. Two roundings (after the normalisation and after the product with
w), within the workload's tolerance for bf16/fp16."""

from __future__ import annotations

from typing import ClassVar

from kernelplan import NoConfig, Target, TorchKernel
from kernelplan.workloads.rmsnorm import RMSNormProblem

from ..common import NormPeer


class TorchEagerRMSNorm(NormPeer):
    name: ClassVar[str] = "torch_eager"
    description: ClassVar[str] = "eager PyTorch RMSNorm formula (fp32 statistics, unfused)"

    def plan(self, problem: RMSNormProblem, config: NoConfig, target: Target) -> TorchKernel:
        import torch

        eps = problem.eps

        def run(t):
            x = t["x"]
            xf = x.float()
            rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
            t["y"] = (xf * rstd).to(x.dtype) * t["w"]

        return TorchKernel(self.name, run)
