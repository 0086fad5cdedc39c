"""`python -m cute_gemm_tutorial.fp16_gemm_2` runs this kernel."""

from .fp16_gemm_2 import Fp16Gemm2

__all__ = ["Fp16Gemm2"]
