"""Peer: the same GEMM through PyTorch (cuBLAS / cuBLASLt), ``torch.matmul(A, B^T, out=C)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kernelplan import Config, Target, TorchKernel
from kernelplan.workloads.gemm import GemmProblem

from ..common import GemmPlan


@dataclass(frozen=True)
class TorchMatmulConfig(Config):
    """torch's reduced-precision-reduction switches, recorded with every run (the defaults
    are torch's own; they are set for the run and restored after)."""

    fp16_reduced_precision_reduction: bool = True
    bf16_reduced_precision_reduction: bool = True


class TorchMatmul(GemmPlan):
    """cuBLAS GEMM as the like-for-like peer: same tensors, same C layout, fp32 accumulate
    unless the config allows reduced-precision reductions (torch's defaults allow them for
    fp16 and bf16: recorded)."""

    name: ClassVar[str] = "torch_matmul"
    target_sm: ClassVar[tuple[str, ...]] = ()
    dtypes: ClassVar[tuple[str, ...]] = ("float16", "bfloat16", "float32")
    config_type = TorchMatmulConfig
    description: ClassVar[str] = "torch.matmul (cuBLAS) peer of the CuTe DSL GEMMs"

    def default_config(self, problem: GemmProblem) -> TorchMatmulConfig:
        import torch

        mm = torch.backends.cuda.matmul
        return TorchMatmulConfig(
            mm.allow_fp16_reduced_precision_reduction, mm.allow_bf16_reduced_precision_reduction
        )

    def plan(self, problem: GemmProblem, config: TorchMatmulConfig, target: Target) -> TorchKernel:
        import torch

        mm = torch.backends.cuda.matmul

        def run(t):
            saved = (
                mm.allow_fp16_reduced_precision_reduction,
                mm.allow_bf16_reduced_precision_reduction,
            )
            mm.allow_fp16_reduced_precision_reduction = config.fp16_reduced_precision_reduction
            mm.allow_bf16_reduced_precision_reduction = config.bf16_reduced_precision_reduction
            try:
                torch.matmul(t["a"], t["b"].transpose(-1, -2), out=t["c"])
            finally:
                (
                    mm.allow_fp16_reduced_precision_reduction,
                    mm.allow_bf16_reduced_precision_reduction,
                ) = saved

        return TorchKernel(self.name, run)
