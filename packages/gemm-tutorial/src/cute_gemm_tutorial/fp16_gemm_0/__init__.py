"""`python -m cute_gemm_tutorial.fp16_gemm_0` runs this kernel."""

from .fp16_gemm_0 import Fp16Gemm0

__all__ = ["Fp16Gemm0"]
