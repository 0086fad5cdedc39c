"""The GEMM workload: ``C[m, n, l] = sum_k A[m, k, l] * B[n, k, l]``.

Batched "TN" GEMM (A and B K-major, C N-major), the layout the CUTLASS Hopper and Blackwell
examples default to. Storage is row-major A (L, M, K), B (L, N, K), C (L, M, N); the CuTe
kernels see the (M, K, L), (N, K, L), (M, N, L) views, as the examples build them
(``examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm.py``,
``create_and_permute_tensor`` in its ``run``).

Implementations: ``cute_gemm`` (Hopper WGMMA and Blackwell tcgen05 examples, cuBLAS through
``torch.matmul``), ``cute_gemm_tutorial`` (the Blackwell tutorial steps: 2-D views, L = 1),
``cute_epilogue`` (a fused epilogue on top: extra operands stated in that implementation).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from .. import dtypes
from ..kernel import TensorSpec
from ..workload import Problem, ShapeError, Workload

INITS = ("randn", "randint")
#: the fp8 A/B dtype of the fp8 check and profile rows
FP8 = "float8_e4m3fn"


@dataclass(frozen=True)
class GemmProblem(Problem):
    """One GEMM.

    Args:
        m: rows of A and C.
        n: rows of B, columns of C.
        k: the reduction extent.
        l: batch count.
        dtype: A and B element type (torch spelling).
        c_dtype: C element type (default: ``dtype``).
        init: A/B values: "randn" (standard normal) or "randint" (integers in [-2, 2], as the
            CUTLASS examples draw them: fewer mantissa bits toggle, so less power at the same
            work; see ``knowledge/anti-patterns/data-dependent-power-throttling.md``).
    """

    m: int = 4096
    n: int = 4096
    k: int = 4096
    l: int = 1  # noqa: E741 - the CUTLASS name of the batch mode
    dtype: str = "float16"
    c_dtype: str | None = None
    init: Literal["randn", "randint"] = "randn"

    def validate(self) -> None:
        for key in ("m", "n", "k", "l"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ShapeError(f"--{key} must be a positive integer (got {v})")
        if self.c_dtype is None:
            object.__setattr__(self, "c_dtype", self.dtype)
        for key in ("dtype", "c_dtype"):
            name = getattr(self, key)
            if name not in dtypes.BY_TORCH or not dtypes.dtype(name).u:
                raise ShapeError(f"--{key} {name}: not a floating dtype torch stores")
        if self.init not in INITS:
            raise ShapeError(f"--init {self.init}: one of {', '.join(INITS)}")


class GemmWorkload(Workload):
    """See the module docstring. FLOPs 2*M*N*K*L; minimum bytes: A and B read once, C
    written once."""

    name: ClassVar[str] = "gemm"
    problem_type: ClassVar[type[Problem]] = GemmProblem
    description: ClassVar[str] = "C[m,n,l] = A[m,k,l] B[n,k,l]^T (TN), fp32 accumulate"

    def tensor_specs(self, problem: GemmProblem) -> dict[str, TensorSpec]:
        p = problem
        scale = 2.0 if p.init == "randint" else 1.0

        def operand(rows: int, cols: int, dt: str, **kw: Any) -> TensorSpec:
            return TensorSpec((p.l, rows, cols), dt, perm=(1, 2, 0), leading_dim=1, **kw)

        return {
            "a": operand(p.m, p.k, p.dtype, init=p.init, scale=scale),
            "b": operand(p.n, p.k, p.dtype, init=p.init, scale=scale),
            "c": operand(p.m, p.n, p.c_dtype, role="output", init="empty"),
        }

    def reference(self, problem: GemmProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """float32 ``A @ B^T`` with TF32 off, shaped like the inputs: (L, M, N) from 3-D
        operands, (M, N) from the 2-D ones some implementations take."""
        import torch

        a, b = inputs["a"].float(), inputs["b"].float()
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            return {"c": torch.matmul(a, b.transpose(-1, -2))}
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev

    def reference_lowp(self, problem: GemmProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """What a PyTorch program gets: the product in fp32 (as a tensor-core GEMM
        accumulates), rounded once to ``c_dtype``. For fp8 A and B too: their products are
        exact in fp32, so this is what ``torch._scaled_mm`` with unit scales and fp32
        accumulation gives; the check then allows the larger of the C dtype's bound and
        twice this baseline's error (:func:`kernelplan.check.compare`)."""
        import torch

        c = self.reference(problem, inputs)["c"]
        return {"c": c.to(getattr(torch, problem.c_dtype)).float()}

    def flops_bytes(self, problem: GemmProblem) -> tuple[float, float]:
        p = problem
        ab, c = dtypes.nbytes(p.dtype), dtypes.nbytes(p.c_dtype)
        return 2.0 * p.m * p.n * p.k * p.l, float(
            (p.m * p.k + p.n * p.k) * p.l * ab + p.m * p.n * p.l * c
        )

    def check_problems(self) -> list[GemmProblem]:
        """A square one, a batched one (L > 1), one whose M and N are not multiples of any
        tile (the TMA bounds and the epilogue's predication must hold), and one with more
        output tiles than an H100/H200 has SMs (512 tiles of 128x256), so that every CTA of a
        persistent kernel runs several tiles and its per-tile state must be reset.

        Then the same four with float8_e4m3fn A and B (fp16 or bf16 C; N = 1120 in the third,
        a multiple of 16 as cuBLASLt's fp8 path requires, still not a multiple of any tile),
        for the fp8 implementations; the others' ``supports`` skip them by dtype."""
        f8 = FP8
        return [
            GemmProblem(2048, 2048, 2048),
            GemmProblem(1024, 512, 768, l=3),
            GemmProblem(1000, 1112, 1024),
            GemmProblem(4096, 4096, 512),
            GemmProblem(2048, 2048, 2048, dtype=f8, c_dtype="float16"),
            GemmProblem(1024, 512, 768, l=3, dtype=f8, c_dtype="float16"),
            GemmProblem(1000, 1120, 1024, dtype=f8, c_dtype="bfloat16"),
            GemmProblem(4096, 4096, 512, dtype=f8, c_dtype="bfloat16"),
        ]

    def profile_problems(self) -> list[GemmProblem]:
        """fp16 and bf16 at 4096^3 and 8192^3; then float8_e4m3fn A and B with a bf16 C at
        the same sizes."""
        return [
            GemmProblem(s, s, s, dtype=d) for d in ("float16", "bfloat16") for s in (4096, 8192)
        ] + [GemmProblem(s, s, s, dtype=FP8, c_dtype="bfloat16") for s in (4096, 8192)]


GEMM = GemmWorkload()
