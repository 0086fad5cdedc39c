"""`python -m cute_gemm_tutorial.fp16_gemm_1` runs this kernel."""

from .fp16_gemm_1 import Fp16Gemm1

__all__ = ["Fp16Gemm1"]
