"""`python -m cute_mixed_input.grouped_mixed_input_gemm` runs this kernel; see
grouped_mixed_input_gemm.py."""

from .grouped_mixed_input_gemm import GroupedMixedInputGemm

__all__ = ["GroupedMixedInputGemm"]
