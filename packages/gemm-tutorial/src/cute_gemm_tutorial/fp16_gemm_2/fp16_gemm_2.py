"""Adapter: CUTLASS CuTe DSL Blackwell tutorial GEMM ``fp16_gemm_2`` (sm_100a).

Step 2: adds warp specialisation (a TMA warp, an MMA warp and four epilogue warps, talking
through mbarrier pipelines) and a TMA-store epilogue through staged SMEM subtiles.

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_2.py``,
module-level ``@cute.jit host_function``; compiled with ``cute.compile`` (never called
directly: upstream's direct call compiles and launches). Shared parts: :mod:`..common`.
"""

from __future__ import annotations

from typing import ClassVar

from ..common import TutorialGemmPlan


class Fp16Gemm2(TutorialGemmPlan):
    """See the module docstring; workload, tensors and launch constants in
    :class:`TutorialGemmPlan`."""

    name: ClassVar[str] = "fp16_gemm_2"
    source: ClassVar[str] = "cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_2.py"
    description: ClassVar[str] = (
        "tutorial step 2: + warp specialisation (TMA, MMA, epilogue warps) and a TMA-store epilogue"
    )
