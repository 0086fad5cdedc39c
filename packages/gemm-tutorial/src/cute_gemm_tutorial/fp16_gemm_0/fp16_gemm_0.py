"""Adapter: CUTLASS CuTe DSL Blackwell tutorial GEMM ``fp16_gemm_0`` (sm_100a).

Step 0: the simplest Blackwell GEMM. One CTA per 128x256 output tile, 128 threads; warp 0
issues the TMA loads and the 1-CTA tcgen05 MMAs through a 4-stage TMA->UMMA pipeline, the
accumulator lives in TMEM, and all four warps copy it TMEM -> registers -> global memory
(no TMA store). A/B/C are marked with their K/N divisibility (the cubin is specialised to it).

Upstream (under ``examples/python/CuTeDSL``):
``cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_0.py``,
module-level ``@cute.jit host_function``; compiled with ``cute.compile`` (never called
directly: upstream's direct call compiles and launches). Shared parts: :mod:`..common`.
"""

from __future__ import annotations

from typing import ClassVar

from ..common import TutorialGemmPlan


class Fp16Gemm0(TutorialGemmPlan):
    """See the module docstring; workload, tensors and launch constants in
    :class:`TutorialGemmPlan`."""

    name: ClassVar[str] = "fp16_gemm_0"
    source: ClassVar[str] = "cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_0.py"
    description: ClassVar[str] = (
        "tutorial step 0: the simplest tcgen05 GEMM (1-CTA MMA, TMA loads, no warp specialisation)"
    )
    tile_mn: ClassVar[tuple[int, int]] = (128, 256)
    operand_align: ClassVar[int] = 32
    divisibility_marks: ClassVar[bool] = True
