"""An in-house CuTe DSL kernel, written here: y = alpha * x + y over a 1-D fp32 vector.

Small on purpose: it exercises the whole kernelplan path (TensorSpec -> fake or real CuTe
tensors -> CuteKernel -> cute.compile) without any CUTLASS example.
"""

from __future__ import annotations

import argparse
from typing import Any, ClassVar

import cutlass
import cutlass.cute as cute

from kernelplan import STREAM, CuteKernel, KernelPlan, ShapeError, TensorSpec

THREADS = 128


@cute.kernel
def axpby_kernel(x: cute.Tensor, y: cute.Tensor, alpha: cutlass.Float32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    i = bidx * THREADS + tidx
    if i < cute.size(x):
        y[i] = alpha * x[i] + y[i]


@cute.jit
def axpby(x: cute.Tensor, y: cute.Tensor, alpha: cutlass.Float32, stream):
    n = cute.size(x)
    axpby_kernel(x, y, alpha).launch(
        grid=((n + THREADS - 1) // THREADS, 1, 1), block=(THREADS, 1, 1), stream=stream
    )


class AxpbyPlan(KernelPlan):
    name: ClassVar[str] = "axpby"
    package: ClassVar[str] = "tests"
    target_sm: ClassVar[tuple[str, ...]] = ("sm_80",)
    ALPHA = 1.5

    def add_problem_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--n", type=int, default=1 << 20)

    def problem_from_args(self, args):
        prob = {"n": args.n, "dtype": "float32"}
        self.validate(prob)
        return prob

    def validate(self, problem):
        if problem["n"] <= 0:
            raise ShapeError(f"--n must be positive (got {problem['n']})")

    def tensor_specs(self, problem) -> dict[str, TensorSpec]:
        n = problem["n"]
        return {
            "x": TensorSpec((n,), "float32", leading_dim=0),
            "y": TensorSpec((n,), "float32", leading_dim=0, role="output", init="randn"),
        }

    def prepare_inputs(self, problem, seed, device="cuda"):
        inputs = super().prepare_inputs(problem, seed, device)
        inputs["y0"] = inputs["y"].clone()  # y is read and written: keep its input
        return inputs

    def reference_fn(self, problem, inputs) -> dict[str, Any]:
        return {"y": self.ALPHA * inputs["x"].double() + inputs["y0"].double()}

    def _algorithmic_flops_bytes(self, problem):
        return 2.0 * problem["n"], 12.0 * problem["n"]

    def compute_dtype(self, problem):
        return "float32"

    def plan(self, problem, config) -> CuteKernel:
        specs = self.tensor_specs(problem)
        return CuteKernel(
            self.name,
            axpby,
            lambda t: (t["x"], t["y"], cutlass.Float32(self.ALPHA), STREAM),
            specs,
            key=(self.name,),
        )
