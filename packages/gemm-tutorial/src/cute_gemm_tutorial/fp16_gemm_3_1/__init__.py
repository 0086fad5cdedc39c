"""`python -m cute_gemm_tutorial.fp16_gemm_3_1` runs this kernel."""

from .fp16_gemm_3_1 import Fp16Gemm3_1

__all__ = ["Fp16Gemm3_1"]
