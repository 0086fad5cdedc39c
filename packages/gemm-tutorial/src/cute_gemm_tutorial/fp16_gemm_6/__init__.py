"""`python -m cute_gemm_tutorial.fp16_gemm_6` runs this kernel."""

from .fp16_gemm_6 import Fp16Gemm6

__all__ = ["Fp16Gemm6"]
