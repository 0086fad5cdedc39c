"""`python -m cute_blockwise.contiguous_grouped_gemm` runs this kernel; see
contiguous_grouped_gemm.py."""

from .contiguous_grouped_gemm import ContiguousGroupedGemm

__all__ = ["ContiguousGroupedGemm"]
