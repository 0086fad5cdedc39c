"""`python -m cute_mixed_input.mixed_input_gemm` runs this kernel; see mixed_input_gemm.py."""

from .mixed_input_gemm import MixedInputGemm

__all__ = ["MixedInputGemm"]
