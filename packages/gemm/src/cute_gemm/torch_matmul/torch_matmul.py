"""Peer: the same GEMM through PyTorch (cuBLAS / cuBLASLt), ``torch.bmm(A, B^T, out=C)``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import TorchKernel

from ..common import GemmPlan


class TorchMatmul(GemmPlan):
    """cuBLAS GEMM as the like-for-like peer: same tensors, same C layout, fp32 accumulate
    (``allow_fp16_reduced_precision_reduction`` is left at torch's default and recorded)."""

    name: ClassVar[str] = "torch_matmul"
    source: ClassVar[str | None] = None
    target_sm: ClassVar[tuple[str, ...]] = ()
    dtypes: ClassVar[tuple[str, ...]] = ("float16", "bfloat16", "float32")
    description: ClassVar[str] = "torch.bmm (cuBLAS) peer of the CuTe DSL GEMMs"

    def default_config(self, problem: Mapping[str, Any]) -> dict[str, Any]:
        import torch

        mm = torch.backends.cuda.matmul
        return {
            "fp16_reduced_precision_reduction": mm.allow_fp16_reduced_precision_reduction,
            "bf16_reduced_precision_reduction": mm.allow_bf16_reduced_precision_reduction,
        }

    def plan(self, problem: Mapping[str, Any], config: Mapping[str, Any]) -> TorchKernel:
        import torch

        def run(t):
            torch.bmm(t["a"], t["b"].transpose(1, 2), out=t["c"])

        return TorchKernel(self.name, run)
