"""An in-house workload and CuTe DSL kernel, written here: y = alpha * x + y over a 1-D fp32
vector.

Small on purpose: it exercises the whole kernelplan path (workload -> problem dataclass ->
TensorSpec -> fake or real CuTe tensors -> CuteKernel -> cute.compile) without any CUTLASS
example and without any package. ``AxpbyPlan`` is not in a package's ``KERNELS``: the core
reaches it as ``--plan tests.inhouse_axpby:AxpbyPlan``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import cutlass
import cutlass.cute as cute

from kernelplan import STREAM, Config, CuteKernel, KernelPlan, ShapeError, Target, TensorSpec
from kernelplan.workload import Problem, Workload

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


@dataclass(frozen=True)
class AxpbyProblem(Problem):
    """One axpby.

    Args:
        n: vector length.
        alpha: the scale of x.
    """

    n: int = 1 << 20
    alpha: float = 1.5

    def validate(self) -> None:
        if not isinstance(self.n, int) or isinstance(self.n, bool) or self.n <= 0:
            raise ShapeError(f"--n must be a positive integer (got {self.n})")


class AxpbyWorkload(Workload):
    """y <- alpha * x + y (fp32): 2 FLOPs and 12 bytes (x read, y read and written) per
    element."""

    name: ClassVar[str] = "axpby"
    problem_type: ClassVar[type[Problem]] = AxpbyProblem
    description: ClassVar[str] = "y = alpha x + y, fp32 (a test workload)"

    def tensor_specs(self, problem: AxpbyProblem) -> dict[str, TensorSpec]:
        n = problem.n
        return {
            "x": TensorSpec((n,), "float32", leading_dim=0),
            "y": TensorSpec((n,), "float32", leading_dim=0, role="output", init="randn"),
        }

    def prepare_inputs(self, problem, specs, seed, device="cuda"):
        inputs = super().prepare_inputs(problem, specs, seed, device)
        inputs["y0"] = inputs["y"].clone()  # y is read and written: keep its input
        return inputs

    def reference(self, problem: AxpbyProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return {"y": problem.alpha * inputs["x"].double() + inputs["y0"].double()}

    def flops_bytes(self, problem: AxpbyProblem) -> tuple[float, float]:
        return 2.0 * problem.n, 12.0 * problem.n

    def compute_dtype(self, problem: AxpbyProblem) -> str:
        return "float32"

    def check_problems(self) -> list[AxpbyProblem]:
        return [AxpbyProblem(1000), AxpbyProblem(1 << 16, alpha=-0.5)]


AXPBY = AxpbyWorkload()


@dataclass(frozen=True)
class AxpbyConfig(Config):
    """Nothing the kernel reads: a typed config for the tests of config parsing (a tuple, a
    bool, an int)."""

    tile_mn: tuple[int, int] = (128, 256)
    unroll: int = 1
    fast: bool = False

    def validate(self) -> None:
        if self.unroll <= 0:
            raise ShapeError(f"unroll must be a positive integer (got {self.unroll})")


class AxpbyPlan(KernelPlan):
    """The in-house kernel: n and alpha are runtime values (a dynamic-layout vector and a
    Float32 argument), so one compile serves every problem."""

    name: ClassVar[str] = "axpby"
    package: ClassVar[str] = "tests"
    workload = AXPBY
    target_sm: ClassVar[tuple[str, ...]] = ("sm_80",)
    config_type = AxpbyConfig
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ("n",)
    description: ClassVar[str] = "in-house axpby (tests)"

    def plan(self, problem: AxpbyProblem, config: AxpbyConfig, target: Target) -> CuteKernel:
        alpha = problem.alpha
        return CuteKernel(
            self.name,
            axpby,
            lambda t: (t["x"], t["y"], cutlass.Float32(alpha), STREAM),
            self.tensor_specs(problem),
        )
