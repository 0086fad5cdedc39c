"""`python -m cute_gemm_tutorial.fp16_gemm_3` runs this kernel."""

from .fp16_gemm_3 import Fp16Gemm3

__all__ = ["Fp16Gemm3"]
