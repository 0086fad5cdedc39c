"""Adapter: CUTLASS CuTe DSL Blackwell tutorial GEMM ``fp16_gemm_4`` (sm_100a).

Step 4: launches with a preferred cluster (2x4) and a fallback cluster (2x1) so that SMs
left over by the large clusters still get work; the kernel is specialised for both shapes (two
code paths, each with its own TMA descriptors and scheduler parameters) and takes one
``max_active_clusters`` constant per shape.

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_4.py``,
module-level ``@cute.jit host_function``; compiled with ``cute.compile`` (never called
directly: upstream's direct call compiles and launches). Shared parts: :mod:`..common`.
"""

from __future__ import annotations

from typing import ClassVar

from ..common import TutorialGemmPlan


class Fp16Gemm4(TutorialGemmPlan):
    """See the module docstring; workload, tensors and launch constants in
    :class:`TutorialGemmPlan`."""

    name: ClassVar[str] = "fp16_gemm_4"
    source: ClassVar[str] = "cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_4.py"
    description: ClassVar[str] = (
        "tutorial step 4: + preferred (2x4) and fallback (2x1) cluster shapes"
    )
    cluster_constants: ClassVar[tuple[str, ...]] = (
        "preferred_cluster_shape_mnk",
        "fallback_cluster_shape_mnk",
    )
