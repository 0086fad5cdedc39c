"""Adapter: CUTLASS CuTe DSL Blackwell tutorial GEMM ``fp16_gemm_6`` (sm_100a).

Step 6: programmatic dependent launch (PDL). Two kernels on one stream: ``dequantize`` turns
an int8 B into fp16 (``b_dequantized = b_quantized * scale``) and signals
``griddepcontrol.launch_dependents`` early; the GEMM (step 3.1's CLC persistent kernel,
launched with ``use_pdl=True``) runs its prologue meanwhile and waits (``griddepcontrol.wait``)
before reading B. The default problem is upstream's small one-wave case, 256x8192x128.

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_6.py``,
``@cute.jit host_function(a, b_quantized, b_dequantized, c, scale_factor, max_active_clusters,
stream)``, compiled with ``cute.compile`` as upstream does. Shared parts: :mod:`..common`.
The static record is of the GEMM kernel (the one with the tensor-core MMAs); the dequantize
kernel is listed under ``functions``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import STREAM, ShapeError, TensorSpec

from ..common import TutorialGemmPlan, _matmul_nt


class Fp16Gemm6(TutorialGemmPlan):
    """Dequantise int8 B then GEMM, overlapped with PDL. Problem adds ``scale`` (the
    dequantisation factor, upstream's 2.33); outputs are ``b_dequantized`` and ``c``."""

    name: ClassVar[str] = "fp16_gemm_6"
    source: ClassVar[str] = "cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_6.py"
    description: ClassVar[str] = "tutorial step 6: int8 dequantize kernel + GEMM overlapped by PDL"
    cluster_constants: ClassVar[tuple[str, ...]] = ("cluster_shape_mnk",)
    default_mnk: ClassVar[tuple[int, int, int]] = (256, 8192, 128)
    #: elements one dequantize CTA covers: dequant_elements_per_thread x threads_in_dequant.
    dequant_block_elems: ClassVar[int] = 128 * 64

    def add_problem_arguments(self, parser: argparse.ArgumentParser) -> None:
        super().add_problem_arguments(parser)
        parser.add_argument("--scale", type=float, default=2.33, help="dequantisation factor")

    def problem_from_args(self, args: argparse.Namespace) -> dict[str, Any]:
        prob = {**self.problem(args.m, args.n, args.k, init=args.init), "scale": args.scale}
        self.validate(prob)
        return prob

    def problem(self, m: int, n: int, k: int, init: str = "randint") -> dict[str, Any]:
        return {**super().problem(m, n, k, init), "scale": 2.33}

    def validate(self, problem: Mapping[str, Any]) -> None:
        """Also: the dequantize kernel has no bounds check, so K must be a multiple of 128
        (its per-thread row chunk) and N*K a multiple of 8192 (one CTA's chunk)."""
        super().validate(problem)
        n, k = problem["n"], problem["k"]
        if k % 128 or (n * k) % self.dequant_block_elems:
            raise ShapeError(
                f"{self.name} needs K a multiple of 128 and N*K a multiple of "
                f"{self.dequant_block_elems} (its dequantize kernel has no bounds check); "
                f"got N={n}, K={k}"
            )

    def tensor_specs(self, problem: Mapping[str, Any]) -> dict[str, TensorSpec]:
        m, n, k = problem["m"], problem["n"], problem["k"]
        init = problem.get("init", "randint")
        scale = 2.0 if init == "randint" else 1.0
        # As upstream marks them: A and C plain (alignment = element size); both B tensors
        # 32-byte aligned with K's divisibility.
        return {
            "a": self._operand(m, k, init=init, scale=scale),
            "b_quantized": self._operand(
                n, k, "int8", init="randint", scale=2.0, align=32, divisibility=k
            ),
            "b_dequantized": self._operand(
                n, k, role="output", init="empty", align=32, divisibility=k
            ),
            "c": self._operand(m, n, role="output", init="empty"),
        }

    def upstream_args(self, t, consts, problem):
        scale = float(problem["scale"])  # a run-time Float32 argument, not compiled in
        return (t["a"], t["b_quantized"], t["b_dequantized"], t["c"], scale, *consts, STREAM)

    def reference_fn(self, problem: Mapping[str, Any], inputs: Mapping[str, Any]):
        """B dequantised in fp32 then rounded to fp16 (as the kernel stores it), then the
        fp32 GEMM of A with it."""
        import torch

        b_deq = (inputs["b_quantized"].float() * float(problem["scale"])).to(torch.float16)
        return {"b_dequantized": b_deq.float(), "c": _matmul_nt(inputs["a"], b_deq)}

    def _algorithmic_flops_bytes(self, problem: Mapping[str, Any]) -> tuple[float, float]:
        """2*M*N*K + N*K FLOPs; bytes: A (fp16) and int8 B read, fp16 B and C written."""
        m, n, k = problem["m"], problem["n"], problem["k"]
        return 2.0 * m * n * k + n * k, float(2 * m * k + n * k + 2 * n * k + 2 * m * n)

    def check_problems(self) -> list[dict[str, Any]]:
        return [self.problem(*self.default_mnk), self.problem(1024, 2048, 512)]
