"""The add-chain workload: two dependent elementwise adds on one stream.

    w = u + v      (the first kernel)
    y = w + x      (the second kernel: reads the first's output)

Five (M, N) row-major float32 tensors; w and y are outputs (w is the intermediate the second
kernel depends on; both are checked). A workload of its own, not a GEMM: the point of the
example it comes from (``dsl_tutorials/programmatic_dependent_launch.py``, implemented in
``cute_pdl``) is the dependency between two short kernels, which is what programmatic
dependent launch overlaps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..kernel import TensorSpec
from ..workload import Problem, ShapeError, Workload

#: Element type of every tensor (upstream: float32 only,
#: ``dsl_tutorials/programmatic_dependent_launch.py`` L255-L259).
DTYPE = "float32"
#: Tensor names in argument order: the first kernel reads u, v and writes w; the second
#: reads w, x and writes y (upstream's names, L255-L259).
ORDER = ("u", "v", "w", "x", "y")
OUTPUTS = ("w", "y")


@dataclass(frozen=True)
class AddChainProblem(Problem):
    """One pair of dependent adds over (M, N) float32 tensors (upstream's ``--M``/``--N``,
    default 256x256).

    Args:
        M: rows.
        N: columns (the contiguous mode).
    """

    M: int = 256  # upstream's flag names (--M, --N)
    N: int = 256

    def validate(self) -> None:
        for key in ("M", "N"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ShapeError(f"--{key} must be a positive integer (got {v})")


class AddChainWorkload(Workload):
    """See the module docstring. FLOPs: two adds per element; bytes: u, v, x read once and
    w, y written once (w's re-read by the second kernel may hit L2, so it is not counted):
    20 bytes per element."""

    name: ClassVar[str] = "add_chain"
    problem_type: ClassVar[type[Problem]] = AddChainProblem
    description: ClassVar[str] = "w = u + v, then y = w + x (two dependent kernels), f32"

    def tensor_specs(self, problem: AddChainProblem) -> dict[str, TensorSpec]:
        """Five (M, N) row-major f32 tensors with a dynamic layout (stride 1 in mode 1), as
        upstream's ``from_dlpack(t).mark_layout_dynamic()``, base pointers assumed aligned
        to the element size (upstream passes no ``assumed_align``)."""
        shape = (problem.M, problem.N)
        return {
            n: TensorSpec(
                shape,
                DTYPE,
                role="output" if n in OUTPUTS else "input",
                init="empty" if n in OUTPUTS else "randn",
                leading_dim=1,
                align=4,
            )
            for n in ORDER
        }

    def reference(self, problem: AddChainProblem, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """w = u + v and y = w + x in float32 (upstream checks y against u + v + x, L314)."""
        u, v, x = (inputs[n].float() for n in ("u", "v", "x"))
        w = u + v
        return {"w": w, "y": w + x}

    def flops_bytes(self, problem: AddChainProblem) -> tuple[float, float]:
        mn = float(problem.M) * float(problem.N)
        return 2.0 * mn, 5.0 * 4.0 * mn

    def compute_dtype(self, problem: AddChainProblem) -> str:
        return DTYPE

    def check_problems(self) -> list[AddChainProblem]:
        """The example's 256x256 (32 CTAs of 16x128), and a shape that is not a multiple of
        the 16x128 tile in either mode (the predicated tail must be right)."""
        return [AddChainProblem(256, 256), AddChainProblem(250, 300)]

    def profile_problems(self) -> list[AddChainProblem]:
        """The example's size (launch-bound: where PDL matters), a mid size, and a size whose
        kernels are many waves long (where the overlap is a small share of the time)."""
        return [AddChainProblem(256, 256), AddChainProblem(1024, 1024), AddChainProblem(8192, 8192)]


ADD_CHAIN = AddChainWorkload()
