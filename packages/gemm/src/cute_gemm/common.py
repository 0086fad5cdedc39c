"""What the package's GEMM implementations share: the workload they implement
(:data:`kernelplan.workloads.gemm.GEMM`, defined once in the core) and the alignment rule
their TMA loads impose.
"""

from __future__ import annotations

from typing import ClassVar

from kernelplan import KernelPlan, ShapeError, dtypes
from kernelplan.workloads.gemm import GEMM, GemmProblem


class GemmPlan(KernelPlan):
    """Base of the package's implementations of the GEMM workload.

    Subclasses set ``dtypes`` (A/B element types they take) and ``min_alignment_bytes``
    (contiguous extents must span a multiple of it: TMA needs 16 bytes).
    """

    package: ClassVar[str] = "gemm"
    workload = GEMM
    dtypes: ClassVar[tuple[str, ...]] = ("float16", "bfloat16")
    min_alignment_bytes: ClassVar[int] = 16
    #: the tensors are dynamic-layout views: one compile serves every M, N, K, L
    runtime_problem_fields: ClassVar[tuple[str, ...]] = ("m", "n", "k", "l", "init")

    def supports(self, problem: GemmProblem) -> None:
        """Raises ShapeError for an A/B dtype outside ``dtypes`` or an extent whose bytes are
        not a multiple of ``min_alignment_bytes``."""
        if problem.dtype not in self.dtypes:
            raise ShapeError(
                f"{self.name} does not take dtype {problem.dtype}; it takes "
                f"{', '.join(self.dtypes)}"
            )
        align = self.min_alignment_bytes
        for what, extent, dt in (
            ("K (A and B rows)", problem.k, problem.dtype),
            ("N (C rows)", problem.n, problem.c_dtype),
        ):
            size = dtypes.nbytes(dt)
            if (extent * size) % align:
                raise ShapeError(
                    f"{self.name} needs {what} to span a multiple of {align} bytes: "
                    f"{extent} x {size:g} B is not; use a multiple of {int(align // size)}"
                )
