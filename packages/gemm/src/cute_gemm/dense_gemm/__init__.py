"""`python -m cute_gemm.dense_gemm` runs this kernel."""

from .dense_gemm import BlackwellDenseGemm

__all__ = ["BlackwellDenseGemm"]
