"""`python -m cute_gemm_tutorial.fp16_gemm_4` runs this kernel."""

from .fp16_gemm_4 import Fp16Gemm4

__all__ = ["Fp16Gemm4"]
