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

As an implementation of the GEMM workload: ``dtype`` float16 is A's (and C's) type; B is
stored as int8 (``b_quantized``) with the dequantisation factor fixed at upstream's 2.33
(:data:`DEQUANT_SCALE`, a run-time Float32 argument, not compiled in; the GEMM problem has no
field for it); the outputs are ``b_dequantized`` (fp16) and ``c``.
The static record is of the GEMM kernel (the one with the tensor-core MMAs); the dequantize
kernel is listed under ``functions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kernelplan import STREAM, ShapeError, TensorSpec
from kernelplan.workload import Problem
from kernelplan.workloads.gemm import GemmProblem

from ..common import TutorialGemmPlan

#: upstream's dequantisation factor (``run_dense_gemm``'s ``scale_factor``)
DEQUANT_SCALE = 2.33


class Fp16Gemm6(TutorialGemmPlan):
    """Dequantise int8 B then GEMM, overlapped with PDL; outputs ``b_dequantized`` and
    ``c`` (see the module docstring)."""

    name: ClassVar[str] = "fp16_gemm_6"
    source: ClassVar[str] = "cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_6.py"
    description: ClassVar[str] = "tutorial step 6: int8 dequantize kernel + GEMM overlapped by PDL"
    cluster_constants: ClassVar[tuple[str, ...]] = ("cluster_shape_mnk",)
    default_mnk: ClassVar[tuple[int, int, int]] = (256, 8192, 128)
    #: elements one dequantize CTA covers: dequant_elements_per_thread x threads_in_dequant.
    dequant_block_elems: ClassVar[int] = 128 * 64

    def problem(self, value: Problem | Mapping[str, Any] | None = None, **kw: Any) -> GemmProblem:
        """The workload's problem; a ``scale`` key (records written before the port) is
        accepted when it is :data:`DEQUANT_SCALE`, the one this implementation uses."""
        if isinstance(value, Mapping) and "scale" in value:
            value = dict(value)
            if float(value.pop("scale")) != DEQUANT_SCALE:
                raise ShapeError(f"{self.name} dequantises with {DEQUANT_SCALE} only")
        return super().problem(value, **kw)

    def supports(self, problem: GemmProblem) -> None:
        """Also: the dequantize kernel has no bounds check, so K must be a multiple of 128
        (its per-thread row chunk) and N*K a multiple of 8192 (one CTA's chunk)."""
        super().supports(problem)
        n, k = problem.n, problem.k
        if k % 128 or (n * k) % self.dequant_block_elems:
            raise ShapeError(
                f"{self.name} needs K a multiple of 128 and N*K a multiple of "
                f"{self.dequant_block_elems} (its dequantize kernel has no bounds check); "
                f"got N={n}, K={k}"
            )

    def check_problems(self) -> list[GemmProblem]:
        return [self.default_problem(), GemmProblem(1024, 2048, 512, init="randint")]

    def tensor_specs(self, problem: GemmProblem) -> dict[str, TensorSpec]:
        """A and C as in every step; B as an int8 input (integers in [0, 2]) and its fp16
        dequantised copy, an output. As upstream marks them: A and C plain (alignment =
        element size); both B tensors 32-byte aligned with K's divisibility."""
        p = problem
        scale = 2.0 if p.init == "randint" else 1.0
        k = p.k
        return {
            "a": self._operand(p.m, k, init=p.init, scale=scale),
            "b_quantized": self._operand(
                p.n, k, "int8", init="randint", scale=2.0, align=32, divisibility=k
            ),
            "b_dequantized": self._operand(
                p.n, k, role="output", init="empty", align=32, divisibility=k
            ),
            "c": self._operand(p.m, p.n, role="output", init="empty"),
        }

    def upstream_args(self, t, consts, problem):
        # the scale is a run-time Float32 argument, not compiled in
        return (t["a"], t["b_quantized"], t["b_dequantized"], t["c"], DEQUANT_SCALE, *consts,
                STREAM)  # fmt: skip

    def extra_meta(self, problem: GemmProblem) -> dict[str, Any]:
        return {"dequant_scale": DEQUANT_SCALE}

    def reference(self, problem: GemmProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """B dequantised in fp32 then rounded to fp16 (as the kernel stores it), then the
        workload's fp32 GEMM of A with it."""
        import torch

        b_deq = (inputs["b_quantized"].float() * DEQUANT_SCALE).to(torch.float16)
        c = self.workload.reference(problem, {"a": inputs["a"], "b": b_deq})["c"]
        return {"b_dequantized": b_deq.float(), "c": c}

    def reference_lowp(self, problem: GemmProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """The same, C rounded once to fp16."""
        import torch

        ref = self.reference(problem, inputs)
        return {**ref, "c": ref["c"].to(torch.float16).float()}

    def flops_bytes(self, problem: GemmProblem) -> tuple[float, float]:
        """2*M*N*K + N*K FLOPs; bytes: A (fp16) and int8 B read, fp16 B and C written."""
        m, n, k = problem.m, problem.n, problem.k
        return 2.0 * m * n * k + n * k, float(2 * m * k + n * k + 2 * n * k + 2 * m * n)
