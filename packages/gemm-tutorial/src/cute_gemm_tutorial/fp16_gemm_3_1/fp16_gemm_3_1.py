"""Adapter: CUTLASS CuTe DSL Blackwell tutorial GEMM ``fp16_gemm_3_1`` (sm_100a).

Step 3.1: replaces the static scheduler with ``ClcDynamicPersistentTileScheduler``:
cluster launch control hands out tiles at run time (a scheduler warp, a CLC response in SMEM
and its mbarrier pipeline), which tolerates SMs that are busy or missing.

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_3_1.py``,
module-level ``@cute.jit host_function``; compiled with ``cute.compile`` (never called
directly: upstream's direct call compiles and launches). Shared parts: :mod:`..common`.
"""

from __future__ import annotations

from typing import ClassVar

from ..common import TutorialGemmPlan


class Fp16Gemm3_1(TutorialGemmPlan):
    """See the module docstring; workload, tensors and launch constants in
    :class:`TutorialGemmPlan`."""

    name: ClassVar[str] = "fp16_gemm_3_1"
    source: ClassVar[str] = "cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_3_1.py"
    description: ClassVar[str] = "tutorial step 3.1: + the CLC dynamic persistent tile scheduler"
    cluster_constants: ClassVar[tuple[str, ...]] = ("cluster_shape_mnk",)
