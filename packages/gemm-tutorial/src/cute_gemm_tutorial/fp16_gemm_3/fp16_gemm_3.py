"""Adapter: CUTLASS CuTe DSL Blackwell tutorial GEMM ``fp16_gemm_3`` (sm_100a).

Step 3: makes the kernel persistent with ``StaticPersistentTileScheduler`` (each cluster
walks a fixed sequence of tiles; the grid is ``max_active_clusters``, a compile-time
constant) and double-buffers the TMEM accumulator (2 stages) so the epilogue of one tile
overlaps the main loop of the next.

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_3.py``,
module-level ``@cute.jit host_function``; compiled with ``cute.compile`` (never called
directly: upstream's direct call compiles and launches). Shared parts: :mod:`..common`.
"""

from __future__ import annotations

from typing import ClassVar

from ..common import TutorialGemmPlan


class Fp16Gemm3(TutorialGemmPlan):
    """See the module docstring; workload, tensors and launch constants in
    :class:`TutorialGemmPlan`."""

    name: ClassVar[str] = "fp16_gemm_3"
    source: ClassVar[str] = "cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_3.py"
    description: ClassVar[str] = (
        "tutorial step 3: + persistent CTAs, static scheduler (max_active_clusters compiled in)"
    )
    cluster_constants: ClassVar[tuple[str, ...]] = ("cluster_shape_mnk",)
