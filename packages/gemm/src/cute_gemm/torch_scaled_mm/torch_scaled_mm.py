"""Peer: the fp8 GEMM through PyTorch, ``torch._scaled_mm`` (cuBLASLt's fp8 path).

``torch._scaled_mm(A, B^T, scale_a, scale_b, out_dtype=C's dtype, use_fast_accum=...,
out=C)``: A the workload's (M, K) row-major fp8 operand, ``B^T`` the (N, K) row-major B seen
as a column-major (K, N) matrix (what the call requires of its second operand, no copy), unit
float32 scalar scales, C written in place. It takes float8_e4m3fn A and B here (the workload
has one A/B dtype; cuBLASLt has no e5m2 x e5m2 GEMM), C bfloat16, float16 or float32, 2-D only
(L = 1), and K and N multiples of 16 (torch's own checks: "Expected trailing dimension of
mat1 to be divisible by 16", "Expected mat_b shape to be divisible by 16"). Any other refusal
is torch's, raised at the launch as one line. Config ``use_fast_accum`` (torch's default
False: fp32 accumulation throughout; True lets the fp8 tensor-core accumulator run
unpromoted).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from kernelplan import Config, ShapeError, Target, TorchKernel
from kernelplan.workloads.gemm import GemmProblem

from ..common import GemmPlan

C_DTYPES = ("bfloat16", "float16", "float32")


@dataclass(frozen=True)
class ScaledMmConfig(Config):
    """``use_fast_accum``: torch._scaled_mm's argument of that name (recorded)."""

    use_fast_accum: bool = False


class TorchScaledMm(GemmPlan):
    """fp8 e4m3 GEMM through ``torch._scaled_mm`` with unit scales (see the module
    docstring)."""

    name: ClassVar[str] = "torch_scaled_mm"
    target_sm: ClassVar[tuple[str, ...]] = ()
    dtypes: ClassVar[tuple[str, ...]] = ("float8_e4m3fn",)
    config_type = ScaledMmConfig
    description: ClassVar[str] = "torch._scaled_mm (cuBLASLt fp8) peer, unit scales"

    def default_problem(self) -> GemmProblem:
        return GemmProblem(4096, 4096, 4096, dtype="float8_e4m3fn", c_dtype="bfloat16")

    def supports(self, problem: GemmProblem) -> None:
        super().supports(problem)
        p = problem
        if p.c_dtype not in C_DTYPES:
            raise ShapeError(
                f"{self.name} writes C as {', '.join(C_DTYPES)} (got --c_dtype {p.c_dtype})"
            )
        if p.l != 1:
            raise ShapeError(f"{self.name} is a 2-D GEMM: --l must be 1 (got {p.l})")
        if p.n % 16:
            raise ShapeError(
                f"{self.name} needs --n to be a multiple of 16 (torch: mat_b's shape must be "
                f"divisible by 16); got {p.n}"
            )

    def plan(self, problem: GemmProblem, config: ScaledMmConfig, target: Target) -> TorchKernel:
        import torch

        fast, name = config.use_fast_accum, self.name
        out_dtype = getattr(torch, problem.c_dtype)
        scales: dict[Any, Any] = {}

        def run(t):
            a, b, c = t["a"][0], t["b"][0], t["c"][0]
            one = scales.get(a.device)
            if one is None:
                one = scales[a.device] = torch.ones((), dtype=torch.float32, device=a.device)
            try:
                torch._scaled_mm(
                    a, b.t(), one, one, out_dtype=out_dtype, use_fast_accum=fast, out=c
                )
            except RuntimeError as e:
                msg = " ".join(str(e).split())[:200]
                raise ShapeError(f"{name}: torch._scaled_mm refuses: {msg}") from None

        return TorchKernel(self.name, run)
