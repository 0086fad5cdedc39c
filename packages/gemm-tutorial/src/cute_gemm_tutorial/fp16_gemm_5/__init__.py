"""`python -m cute_gemm_tutorial.fp16_gemm_5` runs this kernel."""

from .fp16_gemm_5 import Fp16Gemm5

__all__ = ["Fp16Gemm5"]
