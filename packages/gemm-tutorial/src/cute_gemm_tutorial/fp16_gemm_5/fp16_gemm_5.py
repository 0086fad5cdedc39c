"""Adapter: CUTLASS CuTe DSL Blackwell tutorial GEMM ``fp16_gemm_5`` (sm_100a).

Step 5: adds TMA prefetch of A/B k-tiles into L2 ahead of the TMA loads (an initial burst
and a rolling prefetch), with a 256x64 MMA tile, a 2x2 cluster and 10 A/B stages, for the
memory-bound shapes where DRAM latency dominates.

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_5.py``,
module-level ``@cute.jit host_function``; compiled with ``cute.compile`` (never called
directly: upstream's direct call compiles and launches). Shared parts: :mod:`..common`.
"""

from __future__ import annotations

from typing import ClassVar

from ..common import TutorialGemmPlan


class Fp16Gemm5(TutorialGemmPlan):
    """See the module docstring; workload, tensors and launch constants in
    :class:`TutorialGemmPlan`."""

    name: ClassVar[str] = "fp16_gemm_5"
    source: ClassVar[str] = "cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_5.py"
    description: ClassVar[str] = (
        "tutorial step 5: + TMA prefetch into L2 (256x64 tile, 2x2 cluster, 10 stages)"
    )
    tile_mn: ClassVar[tuple[int, int]] = (256, 64)
    cluster_constants: ClassVar[tuple[str, ...]] = ("cluster_shape_mnk",)
