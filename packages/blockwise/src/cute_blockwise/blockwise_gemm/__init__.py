"""`python -m cute_blockwise.blockwise_gemm` runs this kernel; see blockwise_gemm.py."""

from .blockwise_gemm import BlockwiseGemm

__all__ = ["BlockwiseGemm"]
