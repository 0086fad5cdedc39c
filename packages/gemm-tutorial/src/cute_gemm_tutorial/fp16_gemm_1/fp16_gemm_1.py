"""Adapter: CUTLASS CuTe DSL Blackwell tutorial GEMM ``fp16_gemm_1`` (sm_100a).

Step 1: adds the 2-CTA tcgen05 MMA (a 256x256 MMA tile split over a 2x1 cluster: each CTA
holds half of B, so 7 A/B stages fit instead of 4) and TMA multicast of the shared operand.

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_1.py``,
module-level ``@cute.jit host_function``; compiled with ``cute.compile`` (never called
directly: upstream's direct call compiles and launches). Shared parts: :mod:`..common`.
"""

from __future__ import annotations

from typing import ClassVar

from ..common import TutorialGemmPlan


class Fp16Gemm1(TutorialGemmPlan):
    """See the module docstring; workload, tensors and launch constants in
    :class:`TutorialGemmPlan`."""

    name: ClassVar[str] = "fp16_gemm_1"
    source: ClassVar[str] = "cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_1.py"
    description: ClassVar[str] = (
        "tutorial step 1: + 2-CTA MMA (cta_group=2) and TMA multicast in a 2x1 cluster"
    )
    tile_mn: ClassVar[tuple[int, int]] = (256, 256)
    operand_align: ClassVar[int] = 32
    divisibility_marks: ClassVar[bool] = True
