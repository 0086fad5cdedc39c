"""The RMSNorm workload: ``y[m, :] = x[m, :] * rstd[m] * w``, ``rstd[m] = 1 / sqrt(mean_n
x[m, n]^2 + eps)``, over the last (contiguous) mode of an (M, N) row-major input.

x, w and y share one dtype (bfloat16 or float16), as the CUTLASS example takes them
(``examples/python/CuTeDSL/cute/blackwell/kernel/rmsnorm/rmsnorm.py``: one ``dtype`` for the
x, w and output pointers, L306-L334; its own reference ``rmsnorm_ref`` L626-L637 computes in
float32 and rounds once). The statistics are kept in float32 by every implementation here;
no implementation of this workload writes ``rstd`` (the CUTLASS example computes it in
registers only, L515-L517), so it is not one of the workload's outputs.

Implementations: ``cute_norm`` (the CUTLASS CuTe DSL RMSNorm, with ``reduce.py``'s row
reduction; the Hopper ``cta_norm`` example in its RMS mode; quack's RMSNorm;
``torch.nn.functional.rms_norm``; the eager PyTorch formula).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..kernel import TensorSpec
from ..workload import Problem, ShapeError, Workload

DTYPES = ("bfloat16", "float16")


@dataclass(frozen=True)
class RMSNormProblem(Problem):
    """One RMSNorm over the rows of an (M, N) tensor.

    Args:
        m: rows (tokens: batch x sequence).
        n: the normalised (hidden) extent, contiguous in memory.
        dtype: x, w and y element type (torch spelling): bfloat16 or float16.
        eps: added to the mean of squares before the reciprocal square root.
    """

    m: int = 4096
    n: int = 4096
    dtype: Literal["bfloat16", "float16"] = "bfloat16"
    eps: float = 1e-6

    def validate(self) -> None:
        for key in ("m", "n"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ShapeError(f"--{key} must be a positive integer (got {v})")
        if self.dtype not in DTYPES:
            raise ShapeError(f"--dtype {self.dtype}: one of {', '.join(DTYPES)}")
        eps = self.eps
        if isinstance(eps, bool) or not isinstance(eps, (int, float)):
            raise ShapeError(f"--eps must be a number (got {eps!r})")
        if not math.isfinite(eps) or eps <= 0:
            raise ShapeError(f"--eps must be a positive finite number (got {eps})")
        object.__setattr__(self, "eps", float(eps))


class RMSNormWorkload(Workload):
    """See the module docstring.

    FLOPs: 4 per element, ``4*M*N`` (the square, its accumulation, the product with rstd and
    the product with w); the per-row mean, ``+ eps`` and reciprocal square root (3*M) are
    left out (under 0.1% at N >= 4096). Minimum bytes: x read once, w read once, y written
    once: ``(2*M*N + N) * element size``.
    """

    name: ClassVar[str] = "rmsnorm"
    problem_type: ClassVar[type[Problem]] = RMSNormProblem
    description: ClassVar[str] = "y = x * rsqrt(mean(x^2, -1) + eps) * w over (M, N) rows"

    def tensor_specs(self, problem: RMSNormProblem) -> dict[str, TensorSpec]:
        """x (M, N) and y (M, N) row-major, w (N,), all in ``dtype``, with dynamic layouts
        (stride 1 in the last mode); x and w drawn from N(0, 1) as the CUTLASS example draws
        them (``create_tensors``, rmsnorm.py L619-L620)."""
        p = problem
        return {
            "x": TensorSpec((p.m, p.n), p.dtype, leading_dim=1),
            "w": TensorSpec((p.n,), p.dtype, leading_dim=0),
            "y": TensorSpec((p.m, p.n), p.dtype, role="output", init="empty", leading_dim=1),
        }

    def reference(self, problem: RMSNormProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """float32: the mean of squares per row, ``rsqrt(mean + eps)``, times x and w."""
        return {"y": rmsnorm_fp32(inputs["x"], inputs["w"], problem.eps)}

    def reference_lowp(
        self, problem: RMSNormProblem, inputs: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """The float32 result rounded once to ``dtype`` (what the example's own reference
        does, rmsnorm.py L632-L637): the baseline a kernel that keeps its statistics in
        float32 and rounds once is held to."""
        import torch

        y = self.reference(problem, inputs)["y"]
        return {"y": y.to(getattr(torch, problem.dtype)).float()}

    def flops_bytes(self, problem: RMSNormProblem) -> tuple[float, float]:
        from .. import dtypes

        p = problem
        size = dtypes.nbytes(p.dtype)
        return 4.0 * p.m * p.n, float((2 * p.m * p.n + p.n) * size)

    def compute_dtype(self, problem: RMSNormProblem) -> str:
        """float32: the arithmetic is on CUDA cores in float32 (no tensor-core peak applies;
        the kernel is memory-bound, its roofline is the HBM bandwidth)."""
        return "float32"

    def check_problems(self) -> list[RMSNormProblem]:
        """Small problems that reach every branch of the CUTLASS example's configuration
        (``RMSNormConfig``, rmsnorm.py L191-L239, on sm_90): N <= 3072 (32 threads per row,
        4 rows per CTA: an M that is not a multiple of 4 leaves the last CTA part-empty),
        N = 4096 and 8192 (one row per CTA, a block reduction over warps), an N that is
        not a multiple of the column tile (the predicated tail), and N = 32768 and 65536
        (clusters of 2 and 4 CTAs: the distributed-shared-memory reduction of
        ``reduce.py``); float16 and a larger eps in two of them."""
        return [
            RMSNormProblem(1001, 1024),
            RMSNormProblem(128, 4096),
            RMSNormProblem(257, 8192, dtype="float16"),
            RMSNormProblem(300, 1000, eps=1e-5),
            RMSNormProblem(64, 32768),
            RMSNormProblem(33, 65536, dtype="float16"),
        ]

    def profile_problems(self) -> list[RMSNormProblem]:
        """M x N in {4096, 32768} x {4096, 8192}, bfloat16 (issue 13 item 3)."""
        return [RMSNormProblem(m, n) for m in (4096, 32768) for n in (4096, 8192)]


def rmsnorm_fp32(x, w, eps: float):
    """float32 RMSNorm of the rows of ``x`` (any float dtype) with weight ``w``."""
    import torch

    xf = x.float()
    rstd = torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + eps)
    return xf * rstd * w.float()


RMSNORM = RMSNormWorkload()
