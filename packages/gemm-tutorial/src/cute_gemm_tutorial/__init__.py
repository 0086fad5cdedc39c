"""cute_gemm_tutorial: the CUTLASS CuTe DSL Blackwell tutorial GEMMs, one step per kernel.

Upstream: ``examples/python/CuTeDSL/cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_*.py``
(sm_100a). Each step adds one optimisation to the previous one; the adapters share
:class:`cute_gemm_tutorial.common.TutorialGemmPlan` and hold only what differs.
``KERNELS`` maps each CLI name (``uv run gemm-tutorial <name>``) to its KernelPlan class.
"""

PACKAGE = "gemm-tutorial"

KERNELS = {
    "fp16_gemm_0": "cute_gemm_tutorial.fp16_gemm_0.fp16_gemm_0:Fp16Gemm0",
    "fp16_gemm_1": "cute_gemm_tutorial.fp16_gemm_1.fp16_gemm_1:Fp16Gemm1",
    "fp16_gemm_2": "cute_gemm_tutorial.fp16_gemm_2.fp16_gemm_2:Fp16Gemm2",
    "fp16_gemm_3": "cute_gemm_tutorial.fp16_gemm_3.fp16_gemm_3:Fp16Gemm3",
    "fp16_gemm_3_1": "cute_gemm_tutorial.fp16_gemm_3_1.fp16_gemm_3_1:Fp16Gemm3_1",
    "fp16_gemm_4": "cute_gemm_tutorial.fp16_gemm_4.fp16_gemm_4:Fp16Gemm4",
    "fp16_gemm_5": "cute_gemm_tutorial.fp16_gemm_5.fp16_gemm_5:Fp16Gemm5",
    "fp16_gemm_6": "cute_gemm_tutorial.fp16_gemm_6.fp16_gemm_6:Fp16Gemm6",
}
