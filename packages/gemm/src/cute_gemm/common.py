"""The GEMM workload shared by every kernel of the package.

C[m, n, l] = sum_k A[m, k, l] * B[n, k, l]  (batched, "TN": A and B K-major, C N-major),
the layout the CUTLASS Hopper and Blackwell examples default to. Storage is row-major
A (L, M, K), B (L, N, K), C (L, M, N); the CuTe kernels see the (M, K, L), (N, K, L), (M, N, L)
views, as the examples build them (``examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/
dense_gemm.py``, ``create_and_permute_tensor`` in its ``run``).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import KernelPlan, ShapeError, TensorSpec

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1, "float8_e5m2": 1}


class GemmPlan(KernelPlan):
    """Base of the package's plans: problem arguments, tensors, reference, FLOPs and bytes.

    Problem keys: ``m, n, k, l`` (positive ints), ``dtype`` (A and B, torch spelling),
    ``c_dtype`` (defaults to ``dtype``), and ``init`` only when not the default "randn".
    Subclasses set ``dtypes`` (what they accept) and
    ``min_alignment_bytes`` (contiguous extents must be a multiple of it).
    """

    package: ClassVar[str] = "gemm"
    dtypes: ClassVar[tuple[str, ...]] = ("float16", "bfloat16")
    #: TMA needs each contiguous extent to be a multiple of 16 bytes.
    min_alignment_bytes: ClassVar[int] = 16

    def add_problem_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("problem (C[m,n,l] = A[m,k,l] B[n,k,l]^T)")
        g.add_argument("--m", type=int, default=4096)
        g.add_argument("--n", type=int, default=4096)
        g.add_argument("--k", type=int, default=4096)
        g.add_argument("--l", type=int, default=1, help="batch count")
        g.add_argument("--dtype", default="float16", help=f"A/B dtype: {', '.join(self.dtypes)}")
        g.add_argument("--c_dtype", "--c-dtype", default=None, help="C dtype (default: dtype)")
        g.add_argument(
            "--init",
            choices=("randn", "randint"),
            default="randn",
            help="A/B values: standard normal, or integers in [-2, 2] as the CUTLASS "
            "examples use (fewer mantissa bits toggle: less power at the same work)",
        )

    def problem_from_args(self, args: argparse.Namespace) -> dict[str, Any]:
        prob = {
            "m": args.m,
            "n": args.n,
            "k": args.k,
            "l": args.l,
            "dtype": args.dtype,
            "c_dtype": args.c_dtype or args.dtype,
        }
        if args.init != "randn":
            prob["init"] = args.init
        self.validate(prob)
        return prob

    @staticmethod
    def problem(
        m: int, n: int, k: int, l: int = 1, dtype: str = "float16", c_dtype: str | None = None
    ) -> dict[str, Any]:
        return {"m": m, "n": n, "k": k, "l": l, "dtype": dtype, "c_dtype": c_dtype or dtype}

    def validate(self, problem: Mapping[str, Any]) -> None:
        """Raises ShapeError for non-positive sizes, an unsupported dtype, or an extent whose
        bytes are not a multiple of ``min_alignment_bytes``."""
        for key in ("m", "n", "k", "l"):
            v = problem[key]
            if not isinstance(v, int) or v <= 0:
                raise ShapeError(f"--{key} must be a positive integer (got {v})")
        if problem["dtype"] not in self.dtypes:
            raise ShapeError(
                f"{self.name} does not take dtype {problem['dtype']}; it takes "
                f"{', '.join(self.dtypes)}"
            )
        if problem["c_dtype"] not in DTYPE_BYTES:
            raise ShapeError(f"unsupported c_dtype {problem['c_dtype']}")
        ab = DTYPE_BYTES[problem["dtype"]]
        c = DTYPE_BYTES[problem["c_dtype"]]
        align = self.min_alignment_bytes
        for what, extent, size in (
            ("K (A and B rows)", problem["k"], ab),
            ("N (C rows)", problem["n"], c),
        ):
            if (extent * size) % align:
                step = align // size
                raise ShapeError(
                    f"{self.name} needs {what} to span a multiple of {align} bytes: "
                    f"{extent} x {size} B is not; use a multiple of {step}"
                )

    def tensor_specs(self, problem: Mapping[str, Any]) -> dict[str, TensorSpec]:
        m, n, k, l = problem["m"], problem["n"], problem["k"], problem["l"]
        dt, cdt = problem["dtype"], problem["c_dtype"]
        init = problem.get("init", "randn")
        scale = 2.0 if init == "randint" else 1.0
        return {
            "a": TensorSpec((l, m, k), dt, perm=(1, 2, 0), leading_dim=1, init=init, scale=scale),
            "b": TensorSpec((l, n, k), dt, perm=(1, 2, 0), leading_dim=1, init=init, scale=scale),
            "c": TensorSpec(
                (l, m, n), cdt, perm=(1, 2, 0), leading_dim=1, role="output", init="empty"
            ),
        }

    def reference_fn(self, problem: Mapping[str, Any], inputs: Mapping[str, Any]):
        """float32 ``torch.bmm(A, B^T)`` on the inputs' device, shape (L, M, N)."""
        import torch

        a, b = inputs["a"].float(), inputs["b"].float()
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            return {"c": torch.bmm(a, b.transpose(1, 2))}
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev

    def _algorithmic_flops_bytes(self, problem: Mapping[str, Any]) -> tuple[float, float]:
        """2*M*N*K*L FLOPs; bytes = A and B read once, C written once."""
        m, n, k, l = problem["m"], problem["n"], problem["k"], problem["l"]
        ab, c = DTYPE_BYTES[problem["dtype"]], DTYPE_BYTES[problem["c_dtype"]]
        return 2.0 * m * n * k * l, float((m * k + n * k) * l * ab + m * n * l * c)

    def check_problems(self) -> list[dict[str, Any]]:
        """A square one, a batched one (L > 1), one whose M and N are not multiples of any
        tile (the TMA bounds and the epilogue's predication must hold), and one with more
        output tiles than an H100/H200 has SMs (512 tiles of 128x256), so that every CTA of a
        persistent kernel runs several tiles and its per-tile state must be reset correctly."""
        return [
            self.problem(2048, 2048, 2048),
            self.problem(1024, 512, 768, l=3),
            self.problem(1000, 1112, 1024),
            self.problem(4096, 4096, 512),
        ]

    def profile_problems(self) -> list[dict[str, Any]]:
        return [
            self.problem(s, s, s, dtype=d)
            for d in ("float16", "bfloat16")
            for s in (4096, 8192)
            if d in self.dtypes
        ]
